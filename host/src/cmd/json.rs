//! The one schema of every `--json` output lives in the library (`duetime_host::json`), so
//! the daemon's HTTP API answers with the same code; this module keeps the commands'
//! `json::` paths.

pub use duetime_host::json::*;
