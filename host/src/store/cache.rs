//! What a store handle knows of the store, and how it keeps that in step: the part of a
//! store that does not depend on the database.
//!
//! A backend opens a transaction and hands it over as `Rows`, the few reads and writes the
//! tables allow; `Cache` decides what to read (all jobs the first time, afterwards only the
//! rows written since the version it last saw) and what to write (the jobs the step
//! touched, the globals, one journal line per `Effect::Journal`). So both backends share
//! one answer to "is memory equal to the store?", and a fix to it lands in both.

use std::collections::BTreeSet;

use duetime::{
    Effect, Entry, Globals, History, JobRecord, JobSeq, LedgerKind, Record, State, Timestamp,
};

use super::StoreError;

/// One journal line as the tables keep it.
pub struct Line<'a> {
    pub at: i64,
    pub job: &'a str,
    /// The entry's type and variant (`ledger.ran`, `history.started`), for queries by kind.
    pub kind: &'static str,
    /// The due times a ledger entry settles or a start covers.
    pub due_from: Option<i64>,
    pub due_to: Option<i64>,
    pub json: String,
}

/// The reads and writes one open transaction offers. JSON travels as text, so parsing
/// (and its error messages) stays here, the same for every backend.
pub trait Rows {
    /// The store's version: how many transactions have committed.
    fn version(&mut self) -> Result<i64, StoreError>;
    fn globals(&mut self) -> Result<String, StoreError>;
    /// Job rows written after version `seen`, by sequence number; `None` is a tombstone.
    fn changed_since(&mut self, seen: i64) -> Result<Vec<(JobSeq, Option<String>)>, StoreError>;
    /// One job row; `None` when it is missing or a tombstone.
    fn job(&mut self, seq: JobSeq) -> Result<Option<String>, StoreError>;
    /// Every live job row.
    fn all_jobs(&mut self) -> Result<Vec<(JobSeq, String)>, StoreError>;
    /// Everything one transaction writes, at once (one round trip where the database
    /// allows it).
    fn write(&mut self, w: &Writes<'_>) -> Result<(), StoreError>;
}

/// What one transaction writes.
pub struct Writes<'a> {
    /// The version this transaction makes.
    pub version: i64,
    pub globals: String,
    /// Job rows to upsert: `(seq, Some((name, json)))`, or `None` for a tombstone.
    pub jobs: Vec<(JobSeq, Option<(&'a str, String)>)>,
    /// Journal lines, in order.
    pub lines: Vec<Line<'a>>,
}

/// How a handle has brought its state up to date, for tests and for a daemon's status:
/// `partial` loads read only what other processes changed; `whole` loads read every job
/// (the first, and any after a failure or a change pieces cannot carry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loads {
    pub whole: u64,
    pub partial: u64,
}

/// The state as this handle last read or wrote it.
pub struct Cache {
    /// Where the store is, for error messages.
    pub store: String,
    /// Tracks changes, so a transaction writes only the jobs it touched.
    pub state: State,
    /// The store version `state` reflects; `None`: load it whole before use.
    seen: Option<i64>,
    /// Jobs a failed transaction changed in memory only: read back at the next sync
    /// (with the globals), whether or not the version moved.
    dirty: BTreeSet<JobSeq>,
    globals_dirty: bool,
    pub loads: Loads,
}

impl Cache {
    pub fn new(store: String, mut state: State) -> Cache {
        state.track_changes(true);
        Cache {
            store,
            state,
            seen: None,
            dirty: BTreeSet::new(),
            globals_dirty: false,
            loads: Loads::default(),
        }
    }

    /// Brings the state to the store's `version` (read in the open transaction): whole if
    /// it was never loaded or cannot be trusted, else the rows written since the version
    /// last seen plus the rows a failed transaction left dirty. Any failure leaves the
    /// state marked for a whole load.
    pub fn sync(&mut self, rows: &mut dyn Rows, version: i64) -> Result<(), StoreError> {
        let Some(seen) = self.seen else {
            return self.load_whole(rows, version);
        };
        if seen == version && self.dirty.is_empty() && !self.globals_dirty {
            return Ok(());
        }
        self.seen = None;
        let globals = self.parse_globals(&rows.globals()?)?;
        let mut changed = Vec::new();
        for (seq, json) in rows.changed_since(seen)? {
            let job = json.map(|j| self.parse_job(seq, &j)).transpose()?;
            changed.push((seq, job));
        }
        let dirty = std::mem::take(&mut self.dirty);
        for seq in dirty {
            if changed.binary_search_by_key(&seq, |(c, _)| *c).is_err() {
                let job = rows
                    .job(seq)?
                    .map(|j| self.parse_job(seq, &j))
                    .transpose()?;
                changed.push((seq, job));
            }
        }
        self.globals_dirty = false;
        match self.state.put_parts(globals, changed) {
            Ok(()) => {
                self.seen = Some(version);
                self.loads.partial += 1;
                Ok(())
            }
            // Not taken in pieces (a changed config, a rename the pieces cannot show):
            // load the whole state, which reports what is really wrong, if anything.
            Err(_) => self.load_whole(rows, version),
        }
    }

    fn load_whole(&mut self, rows: &mut dyn Rows, version: i64) -> Result<(), StoreError> {
        self.seen = None;
        let globals = self.parse_globals(&rows.globals()?)?;
        let mut jobs = Vec::new();
        for (seq, json) in rows.all_jobs()? {
            jobs.push((seq, self.parse_job(seq, &json)?));
        }
        let mut state = State::from_parts(globals, jobs).map_err(|error| StoreError::Load {
            store: self.store.clone(),
            error,
        })?;
        state.track_changes(true);
        self.state = state;
        self.seen = Some(version);
        self.dirty.clear();
        self.globals_dirty = false;
        self.loads.whole += 1;
        Ok(())
    }

    /// After a transaction that did not commit: what the body changed is read back from
    /// the store at the next sync, so memory equals the store again before anyone looks.
    pub fn forget(&mut self, touched: &[JobSeq]) {
        self.dirty.extend(touched.iter().copied());
        self.globals_dirty = true;
    }

    /// After a commit whose outcome is unknown, or a failure that may have left memory
    /// anywhere: load it whole next time.
    pub fn distrust(&mut self) {
        self.seen = None;
    }

    /// The transaction at version `next` committed.
    pub fn committed(&mut self, next: i64) {
        self.seen = Some(next);
    }

    /// Writes the globals, the touched jobs and the journal lines at version `next`.
    pub fn write(
        &self,
        rows: &mut dyn Rows,
        next: i64,
        touched: &[JobSeq],
        effects: &[Effect],
    ) -> Result<(), StoreError> {
        let globals = self.to_json(&self.state.globals())?;
        let mut jobs = Vec::with_capacity(touched.len());
        for &seq in touched {
            let row = match self.state.record(seq) {
                Some(job) => Some((job.def().name.as_str(), self.to_json(job)?)),
                None => None,
            };
            jobs.push((seq, row));
        }
        let mut lines = Vec::new();
        for e in effects {
            let Effect::Journal(r) = e else { continue };
            let (from, to) = due_range(&r.entry).unzip();
            lines.push(Line {
                at: r.at.as_millis(),
                job: r.job.as_str(),
                kind: kind_of(&r.entry),
                due_from: from.map(Timestamp::as_millis),
                due_to: to.map(Timestamp::as_millis),
                json: self.to_json(&r.entry)?,
            });
        }
        rows.write(&Writes {
            version: next,
            globals,
            jobs,
            lines,
        })
    }

    fn to_json<T: serde::Serialize>(&self, v: &T) -> Result<String, StoreError> {
        serde_json::to_string(v).map_err(|e| StoreError::Database {
            store: self.store.clone(),
            detail: format!("cannot serialize: {e}"),
        })
    }

    fn parse_globals(&self, json: &str) -> Result<Globals, StoreError> {
        serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
            store: self.store.clone(),
            detail: format!("globals: {e}"),
        })
    }

    fn parse_job(&self, seq: JobSeq, json: &str) -> Result<JobRecord, StoreError> {
        serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
            store: self.store.clone(),
            detail: format!("job {seq}: {e}"),
        })
    }
}

/// A journal row read back: `(id, at, job, json)`.
pub fn parse_line(
    store: &str,
    id: i64,
    at: i64,
    job: &str,
    json: &str,
) -> Result<Record, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        store: store.to_string(),
        detail: format!("journal line {id}: {detail}"),
    };
    let job = duetime::JobName::new(job).map_err(|e| corrupt(e.to_string()))?;
    let entry: Entry = serde_json::from_str(json).map_err(|e| corrupt(e.to_string()))?;
    Ok(Record {
        at: Timestamp::from_millis(at),
        job,
        entry,
    })
}

/// A job's sequence number as a row's key: sequence numbers are `u64` (`JobSeq`), the
/// databases' integers `i64`. The bits are kept as they are (the order of numbers past
/// `i64::MAX` differs, which nothing here relies on).
pub fn seq_key(seq: JobSeq) -> i64 {
    seq.0 as i64
}

/// The sequence number a row's key holds (`seq_key` back).
pub fn seq_of_key(key: i64) -> JobSeq {
    JobSeq(key as u64)
}

/// The journal's `kind` column: the entry's type and variant. A match, not the serde tag,
/// so a new variant is a compile error here rather than an unnamed kind.
fn kind_of(entry: &Entry) -> &'static str {
    match entry {
        Entry::Ledger(l) => match l.kind {
            LedgerKind::Ran { .. } => "ledger.ran",
            LedgerKind::Missed { .. } => "ledger.missed",
            LedgerKind::FailedOut { .. } => "ledger.failed_out",
            LedgerKind::Lost { .. } => "ledger.lost",
            LedgerKind::ApprovalExpired { .. } => "ledger.approval_expired",
        },
        Entry::History(h) => match h {
            History::Defined { .. } => "history.defined",
            History::Removed { .. } => "history.removed",
            History::MovedOut { .. } => "history.moved_out",
            History::MovedIn { .. } => "history.moved_in",
            History::Backfill { .. } => "history.backfill",
            History::Updated { .. } => "history.updated",
            History::Started { .. } => "history.started",
            History::Settled { .. } => "history.settled",
            History::RetryAt { .. } => "history.retry_at",
            History::QuotaHold { .. } => "history.quota_hold",
            History::QuotaHoldEnded { .. } => "history.quota_hold_ended",
            History::UpstreamNotOk { .. } => "history.upstream_not_ok",
            History::Lost { .. } => "history.lost",
            History::Adopted { .. } => "history.adopted",
            History::StaleResult { .. } => "history.stale_result",
            History::Paused { .. } => "history.paused",
            History::Resumed { .. } => "history.resumed",
            History::ManualQueued { .. } => "history.manual_queued",
            History::ActorForgotten => "history.actor_forgotten",
            History::AlertHeld { .. } => "history.alert_held",
            History::CancelSent { .. } => "history.cancel_sent",
            History::Waiting { .. } => "history.waiting",
            History::PendingConfirmation { .. } => "history.pending_confirmation",
            History::Confirmed { .. } => "history.confirmed",
            History::Parked { .. } => "history.parked",
            History::Approved { .. } => "history.approved",
            History::ApprovalExpired { .. } => "history.approval_expired",
            History::Completed { .. } => "history.completed",
            History::Expired { .. } => "history.expired",
        },
    }
}

/// The due times a line is about: what a ledger entry settles, what a start covers.
fn due_range(entry: &Entry) -> Option<(Timestamp, Timestamp)> {
    match entry {
        Entry::Ledger(l) => Some((l.from, l.to)),
        Entry::History(History::Started {
            covers: Some(c), ..
        }) => Some((c.from, c.to)),
        Entry::History(_) => None,
    }
}
