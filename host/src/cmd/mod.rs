//! The subcommands of `duetime`, one module each. A module holds its clap `Args` and a
//! `run` that writes to the given streams and returns the exit code, so main.rs stays a
//! dispatch table and a new subcommand is one variant there plus one module here.

pub mod check;
pub mod due;
pub mod next;
pub mod ops;
pub mod run;
pub mod sim;
pub mod what_if;

use duetime::Timestamp;

/// `--from` and similar: an RFC 3339 instant, as the core parses it.
pub fn parse_instant(text: &str) -> Result<Timestamp, String> {
    text.parse::<Timestamp>().map_err(|e| e.to_string())
}

/// The wall clock, read once per command (never by the core).
pub fn now() -> Timestamp {
    Timestamp::from_chrono(&chrono::Utc::now())
}

/// Where the store is: `--store PATH` (default `./duetime.db`); the runs' directories sit
/// beside it in `<store>.runs/`.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The SQLite store
    #[arg(long, value_name = "PATH", default_value = "duetime.db")]
    pub store: std::path::PathBuf,
}

impl StoreArgs {
    pub fn runs_dir(&self) -> std::path::PathBuf {
        let mut name = self.store.as_os_str().to_owned();
        name.push(".runs");
        std::path::PathBuf::from(name)
    }
}
