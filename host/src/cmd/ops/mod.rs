//! People's commands on the store: `list`, `show`, `status`, `logs`, `pause`, `resume`,
//! `run-now`, `confirm`, `approve`, `backfill`, `remove`. Each reads or applies its event in
//! one transaction, so they work whether or not a daemon runs.

mod commands;
mod list;
mod logs;
mod show;
mod status;

pub use commands::{
    approve, backfill, confirm, pause, remove, resume, run_now, ApproveArgs, BackfillArgs,
    ConfirmArgs, PauseArgs, RemoveArgs, ResumeArgs, RunNowArgs,
};
pub use list::{list, ListArgs};
pub use logs::{logs, LogsArgs};
pub use show::{show, ShowArgs};
pub use status::{status, StatusArgs};

use std::io::{self, Write};

use duetime::{PausedBy, RunId};
use duetime_host::store::{AnyStore, StoreError};

use super::{json, StoreArgs};

/// `--run r7` or `--run 7`.
fn parse_run(text: &str) -> Result<RunId, String> {
    let digits = text.strip_prefix('r').unwrap_or(text);
    digits
        .parse::<u64>()
        .map(RunId)
        .map_err(|_| format!("{:?} is not a run id; accepted: r7 or 7", super::cut(text)))
}

fn whoami() -> String {
    std::env::var("USER").unwrap_or_else(|_| "someone".into())
}

/// What the job's held definition changes against the one in force (`None`: no such job
/// or nothing held); every field of a new job's.
fn held_changes(store: &mut AnyStore, job: &str) -> Option<Vec<duetime_host::changes::Change>> {
    use duetime_host::store::Store;
    let p = duetime_host::store::parts::partition_of(store, job).ok()?;
    duetime_host::views::held_changes(store.state_in(p).ok()?, job)
}

/// A store error: a line on stderr, or the JSON error object on stdout. Exit 1.
fn store_failed(
    e: &StoreError,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if as_json {
        writeln!(
            out,
            "{:#}",
            json::error(json::store_kind(e), &e.to_string())
        )?;
    } else {
        writeln!(err, "duetime: {e}")?;
    }
    Ok(1)
}

/// Opens the store for a command (never makes one); on failure says why and returns the
/// exit code.
fn open(
    args: &StoreArgs,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Result<AnyStore, u8>> {
    match args.open_existing() {
        Ok(s) => Ok(Ok(s)),
        Err(e) => store_failed(&e, as_json, out, err).map(Err),
    }
}

pub use duetime_host::views::{relative, view_json, Shown};

/// Who paused a job, in words.
fn paused_text(by: &PausedBy) -> String {
    match by {
        PausedBy::Person { actor } => format!("by {actor}"),
        PausedBy::System { reason } => format!("by the system: {reason}"),
    }
}
