//! The subcommands of `duetime`, one module each. A module holds its clap `Args` and a
//! `run` that writes to the given streams and returns the exit code, so main.rs stays a
//! dispatch table and a new subcommand is one variant there plus one module here.

pub mod check;
pub mod core;
pub mod due;
pub mod generate;
pub mod json;
pub mod lint;
pub mod next;
pub mod ops;
pub mod run;
pub mod sim;
pub mod what_if;

use duetime::Timestamp;

/// `--from` and similar: the same text `what-if` accepts (RFC 3339, or a date and time with
/// no offset read as UTC), so one time typed for one command works in the others.
pub fn parse_instant(text: &str) -> Result<Timestamp, String> {
    what_if::parse_time(text).map_err(|_| {
        format!(
            "`{}` is not an instant; accepted: {}",
            cut(text),
            what_if::TIMES
        )
    })
}

/// The longest piece of a person's input echoed back in a message.
pub const ECHO_MAX: usize = 80;

/// `text` as an error message may echo it: at most `ECHO_MAX` characters, then `…` and how
/// long it really was, so a pasted megabyte does not come back as a megabyte.
pub fn cut(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_MAX).collect();
    match chars.count() {
        0 => head,
        rest => format!("{head}… ({} characters)", ECHO_MAX + rest),
    }
}

/// The wall clock, read once per command (never by the core).
pub fn now() -> Timestamp {
    Timestamp::from_chrono(&chrono::Utc::now())
}

/// Where the store is: `--store PATH` (an SQLite file, default `./duetime.db`) or
/// `--store postgres://...` (a PostgreSQL database shared by daemons on several machines).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The store: an SQLite file, or a postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL
    #[arg(long, value_name = "PATH|URL", default_value = "duetime.db")]
    pub store: String,
    /// This machine's run directories (default: `<store>.runs` beside an SQLite file,
    /// `./duetime.runs` with PostgreSQL). Local to one machine, and to one daemon at a
    /// time: a daemon adopts the still-running runs it finds here.
    #[arg(long, value_name = "DIR")]
    pub runs: Option<std::path::PathBuf>,
}

impl StoreArgs {
    pub fn runs_dir(&self) -> std::path::PathBuf {
        if let Some(dir) = &self.runs {
            return dir.clone();
        }
        if duetime_host::store::is_url(&self.store) {
            return std::path::PathBuf::from("duetime.runs");
        }
        std::path::PathBuf::from(format!("{}.runs", self.store))
    }

    /// Opens the store for a command: never makes a new one.
    pub fn open_existing(
        &self,
    ) -> Result<duetime_host::store::AnyStore, duetime_host::store::StoreError> {
        let options = duetime_host::store::Options {
            create: false,
            ..Default::default()
        };
        duetime_host::store::open(&self.store, options)
    }
}
