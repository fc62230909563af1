//! The jobs file (TOML): definitions and the commands they run.
