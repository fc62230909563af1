//! The metrics the journal holds: every due time's fate, every start and settlement, the
//! alerts the throttle held. Read incrementally (`journal_after` the last line seen), so a
//! scrape costs the lines written since the previous one, and the first scrape of a new
//! incarnation reads the journal from its start: these counters survive restarts because
//! they are the journal, not this process's memory.

use std::collections::BTreeMap;

use duetime::Timestamp;
use duetime::{
    Entry, History, LedgerEntry, LedgerKind, MissAction, MissCause, Outcome, Record, RunId,
};

use super::expo::Histogram;
use crate::store::{Store, StoreError};

/// The journal kinds the tally reads (`store/cache.rs` names them).
pub const KINDS: &[&str] = &[
    "ledger.ran",
    "ledger.missed",
    "ledger.failed_out",
    "ledger.lost",
    "ledger.approval_expired",
    "history.started",
    "history.settled",
    "history.lost",
    "history.approved",
    "history.alert_held",
];

/// Lateness of a first start after the newest due time it covers, in seconds: on-time
/// starts land in the first buckets (a tick is 30 s), catch-ups after an outage in the last.
pub const LATENESS_BOUNDS: &[f64] = &[
    0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
];
/// Run durations, in seconds: from a second to a day.
pub const DURATION_BOUNDS: &[f64] = &[
    1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 43200.0, 86400.0,
];

/// One job's counters, as its journal lines add up.
#[derive(Debug, Clone)]
pub struct JobTally {
    /// Due times by (fate, cause): `ran`, `skipped`, `caught_up`, `failed_out`, `lost`,
    /// `approval_expired`; the cause is the missed rule's for `skipped` and `caught_up`
    /// and `none` otherwise.
    pub due: BTreeMap<(&'static str, &'static str), u64>,
    pub started: BTreeMap<&'static str, u64>,
    pub finished: BTreeMap<String, u64>,
    pub lateness: Histogram,
    pub duration: Histogram,
    pub last_success: Option<Timestamp>,
    pub alerts_held: BTreeMap<String, u64>,
}

impl Default for JobTally {
    fn default() -> Self {
        JobTally {
            due: BTreeMap::new(),
            started: BTreeMap::new(),
            finished: BTreeMap::new(),
            lateness: Histogram::new(LATENESS_BOUNDS),
            duration: Histogram::new(DURATION_BOUNDS),
            last_success: None,
            alerts_held: BTreeMap::new(),
        }
    }
}

/// Every job's counters and the journal line they are counted through.
#[derive(Debug, Default)]
pub struct Tally {
    seen: i64,
    pub jobs: BTreeMap<String, JobTally>,
    /// Runs started and not yet settled, for their duration.
    open: BTreeMap<RunId, Timestamp>,
}

impl Tally {
    /// Counts the journal lines written since the last call.
    pub fn catch_up<S: Store + ?Sized>(&mut self, store: &mut S) -> Result<(), StoreError> {
        for (id, record) in store.journal_after(self.seen, KINDS)? {
            self.add(&record);
            self.seen = id;
        }
        Ok(())
    }

    /// Counts one journal line.
    pub fn add(&mut self, r: &Record) {
        let job = self.jobs.entry(r.job.to_string()).or_default();
        match &r.entry {
            Entry::Ledger(l) => {
                *job.due.entry(fate(l)).or_default() += l.count;
            }
            Entry::History(History::Started {
                run,
                trigger,
                covers,
                attempt,
                ..
            }) => {
                *job.started.entry(trigger.name()).or_default() += 1;
                if let (Some(c), 1) = (covers, attempt) {
                    let late = r.at.as_millis().saturating_sub(c.to.as_millis()).max(0);
                    job.lateness.observe(late as f64 / 1000.0);
                }
                self.open.insert(*run, r.at);
            }
            Entry::History(History::Settled { run, outcome, .. }) => {
                *job.finished.entry(outcome_name(outcome)).or_default() += 1;
                if let Some(start) = self.open.remove(run) {
                    let took = r.at.as_millis().saturating_sub(start.as_millis()).max(0);
                    job.duration.observe(took as f64 / 1000.0);
                }
                if matches!(outcome, Outcome::Ok | Outcome::Skipped) {
                    job.last_success = job.last_success.max(Some(r.at));
                }
            }
            Entry::History(History::Lost { run }) => {
                *job.finished.entry("lost".into()).or_default() += 1;
                self.open.remove(run);
            }
            Entry::History(History::Approved { .. }) => {
                job.last_success = job.last_success.max(Some(r.at));
            }
            Entry::History(History::AlertHeld { alert }) => {
                *job.alerts_held.entry(tag_of(alert, "alert")).or_default() += 1;
            }
            Entry::History(_) => {}
        }
    }
}

/// Every `outcome` label `duetime_runs_finished_total` may carry: the core's outcomes'
/// tags and `lost` (a `tag_of` name outside these, from a newer core, is still counted).
pub const OUTCOMES: &[&str] = &[
    "ok",
    "skipped",
    "failed",
    "timed_out",
    "awaiting_approval",
    "lost",
];

/// Every (fate, cause) pair `fate` may return: the missed fates with each cause, the
/// others with `none`.
pub fn fate_labels() -> Vec<(&'static str, &'static str)> {
    let mut all: Vec<(&'static str, &'static str)> =
        ["ran", "failed_out", "lost", "approval_expired"]
            .into_iter()
            .map(|f| (f, "none"))
            .collect();
    for fate in ["skipped", "caught_up"] {
        all.extend(MissCause::ALL.iter().map(|c| (fate, c.name())));
    }
    all
}

/// A ledger entry's (fate, cause) labels.
pub fn fate(l: &LedgerEntry) -> (&'static str, &'static str) {
    match l.kind {
        LedgerKind::Ran { .. } => ("ran", "none"),
        LedgerKind::Missed {
            cause,
            action: MissAction::Skipped,
        } => ("skipped", cause.name()),
        LedgerKind::Missed {
            cause,
            action: MissAction::CaughtUp { .. },
        } => ("caught_up", cause.name()),
        LedgerKind::FailedOut { .. } => ("failed_out", "none"),
        LedgerKind::Lost { .. } => ("lost", "none"),
        LedgerKind::ApprovalExpired { .. } => ("approval_expired", "none"),
    }
}

/// An outcome's serde tag (`ok`, `failed`, `timed_out`, ...).
fn outcome_name(o: &Outcome) -> String {
    tag_of(o, "outcome")
}

/// The serde tag `key` of a value serialized as an internally tagged enum: its snake_case
/// name, without matching on its variants (so a variant the core adds later is counted
/// under its own name rather than failing to compile or being lost).
pub fn tag_of<T: serde::Serialize>(v: &T, key: &str) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| j.get(key).and_then(|t| t.as_str()).map(String::from))
        .unwrap_or_else(|| "unknown".into())
}
