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

// What people type (instants, durations) is parsed in the library (`duetime_host::human`),
// where the `human_input` fuzz target reaches it; the subcommands name it from here.
pub use duetime_host::human::{cut, parse_instant};

/// The definitions of the jobs file at `path` under `config`, or `None` after printing
/// every error as `check` does (`sim` and `what-if`: one run shows everything to fix).
pub fn job_defs(
    path: &std::path::Path,
    config: &duetime::Config,
    err: &mut dyn std::io::Write,
) -> std::io::Result<Option<Vec<duetime::JobDef>>> {
    match duetime_host::jobs_file::load_with(path, config) {
        Ok(f) => Ok(Some(f.jobs.into_iter().map(|j| j.def).collect())),
        Err(errors) => {
            let file = path.display().to_string();
            duetime_host::jobs_file::write_refusal(err, &file, &errors)?;
            Ok(None)
        }
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
