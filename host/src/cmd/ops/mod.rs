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

use duetime::{JobRecord, JobView, PausedBy, RunId, Status, Timestamp};
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
    let state = store.state().ok()?;
    let record = state.seq_of_name(job).and_then(|seq| state.record(seq))?;
    let held = record.act().and_then(|a| a.held.as_deref())?.def();
    let in_force = (!record.is_unconfirmed()).then_some(&record.def);
    Some(duetime_host::changes::changes(in_force, held))
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

/// How a job is shown to people: the core's status, except where it would mislead. A
/// job the system paused is `paused` (still ranked first, as the core's `failed`), a
/// parked run awaits approval rather than runs, a new job held for confirmation has not
/// run for a reason, and a run whose lease lapsed has lost its daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Core(Status),
    Paused,
    AwaitingApproval,
    AwaitingConfirmation,
    /// Its daemon stopped renewing its lease: the next daemon to tick records it lost (or
    /// adopts it, on the same machine).
    Orphaned,
}

impl Shown {
    pub fn of(view: &JobView, record: Option<&JobRecord>, now: Timestamp) -> Shown {
        let open = record.and_then(|r| r.run());
        if view.paused.is_some() {
            return Shown::Paused;
        }
        if record.is_some_and(|r| r.is_unconfirmed()) {
            return Shown::AwaitingConfirmation;
        }
        if view.awaiting_approval.is_some() {
            return Shown::AwaitingApproval;
        }
        if open.is_some_and(|r| r.parked.is_none() && r.lease_until < now) {
            return Shown::Orphaned;
        }
        Shown::Core(view.status)
    }

    pub fn name(self) -> &'static str {
        match self {
            Shown::Core(s) => s.name(),
            Shown::Paused => "paused",
            Shown::AwaitingApproval => "awaiting_approval",
            Shown::AwaitingConfirmation => "awaiting_confirmation",
            Shown::Orphaned => "orphaned",
        }
    }

    /// Whether the job's next due times will run as things stand.
    pub fn will_run(self) -> bool {
        !matches!(self, Shown::Paused | Shown::AwaitingConfirmation)
    }
}

/// Who paused a job, in words.
fn paused_text(by: &PausedBy) -> String {
    match by {
        PausedBy::Person { actor } => format!("by {actor}"),
        PausedBy::System { reason } => format!("by the system: {reason}"),
    }
}

/// `in 12m`, `3h ago`, `now`: how far `t` is from `now`, in the largest whole unit.
pub fn relative(now: Timestamp, t: Timestamp) -> String {
    let ms = t.as_millis().saturating_sub(now.as_millis());
    let secs = ms.unsigned_abs() / 1000;
    let text = match secs {
        0 => return "now".to_string(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if ms > 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// The job's view with the shown status, as JSON.
fn view_json(view: &JobView, shown: Shown) -> serde_json::Value {
    let mut v = json::view(view);
    v["status"] = shown.name().into();
    if !shown.will_run() {
        v["next_due"] = serde_json::Value::Null;
    }
    v
}
