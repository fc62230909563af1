//! Why a state is not sane: the typed answer of `State::check_invariants`, of loading
//! (`LoadError::Inconsistent`) and of `Config::check`. Each variant names what broke and
//! carries what a person needs to find it; `Display` says it in one line.

use std::fmt;

use crate::effect::{Covers, Incident};
use crate::event::{Fence, ProcessId, RunId};
use crate::job::JobName;
use crate::jobs::JobSeq;
use crate::state::{OneShotEnd, MAX_GRACE, MIN_TICK};
use crate::time::{Duration, Timestamp};

/// A config a state may not carry (`Config::check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// The tick is under `MIN_TICK` (one second).
    TickTooShort {
        /// The tick asked for.
        tick: Duration,
    },
    /// The grace is over `MAX_GRACE` (one day): a tick looks at every due time within it.
    GraceTooLong {
        /// The grace asked for.
        grace: Duration,
    },
    /// `max_runs_per_process` is 0, which would start nothing.
    NoRunsPerProcess,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::TickTooShort { tick } => {
                write!(f, "config: tick {tick} is under {MIN_TICK}")
            }
            ConfigError::GraceTooLong { grace } => {
                write!(f, "config: grace {grace} is over {MAX_GRACE}")
            }
            ConfigError::NoRunsPerProcess => f.write_str(
                "config: max_runs_per_process 0 would start nothing; accepted: at least 1, or unset",
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A broken invariant of a state, or of parts given to `State::from_parts` and
/// `State::put_parts`. On load it is bad input (`LoadError::Inconsistent`); after a step it
/// is a bug in the core.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inconsistency {
    /// The config is out of bounds.
    Config(ConfigError),
    /// `put_parts` was given another config than the state's (a store's config is fixed
    /// for its life; load the whole state instead).
    ConfigChanged,
    /// An owner lease under `shared` coordination.
    OwnerUnderShared {
        /// The lease's holder.
        holder: ProcessId,
        /// The lease's fence.
        fence: Fence,
    },
    /// The owner lease's fence was never handed out by the fence counter.
    OwnerFenceAhead {
        /// The lease's fence.
        fence: Fence,
    },
    /// The owner lease is held by a process the state does not know.
    OwnerHolderUnknown {
        /// The lease's holder.
        holder: ProcessId,
    },
    /// The owner lease is held by a draining process (a drain gives it up).
    OwnerHolderDraining {
        /// The lease's holder.
        holder: ProcessId,
    },
    /// One job sequence number is given twice.
    SequenceTwice {
        /// The sequence number.
        seq: JobSeq,
    },
    /// A job's sequence number is at or beyond the counter.
    SequenceBeyondCounter {
        /// The job.
        job: JobName,
        /// Its sequence number.
        seq: JobSeq,
    },
    /// Two jobs have one name.
    NameTwice {
        /// The name.
        job: JobName,
    },
    /// Two jobs hold one open run.
    RunOpenTwice {
        /// The run.
        run: RunId,
    },
    /// `put_parts` moved the counters back behind a job it leaves as it is.
    CountersBehind {
        /// That job.
        job: JobName,
    },
    /// A job lists one incident twice.
    IncidentRepeated {
        /// The job.
        job: JobName,
        /// The incident.
        incident: Incident,
    },
    /// A job counts a silence for the dead-man's switch without `expect_success_within`,
    /// or has the switch set and counts none.
    WatchOutOfStep {
        /// The job.
        job: JobName,
    },
    /// A job that is not a one-shot is marked ended.
    EndedNotOneShot {
        /// The job.
        job: JobName,
        /// How it is marked ended.
        end: OneShotEnd,
    },
    /// A one-shot is marked ended while its instant is not looked at or still covered.
    EndedUnsettled {
        /// The job.
        job: JobName,
        /// How it is marked ended.
        end: OneShotEnd,
        /// Its instant.
        instant: Timestamp,
    },
    /// More owed segments than `MAX_OWED_SEGMENTS`.
    TooManyOwedSegments {
        /// The job.
        job: JobName,
        /// How many it owes.
        count: usize,
    },
    /// The index of which jobs wait for which (`JobDef::after`) does not list the job as
    /// its definition says.
    AfterIndexStale {
        /// The job.
        job: JobName,
    },
    /// More heard upstream ranges than a downstream keeps (`JobDef::after`).
    TooManyHeard {
        /// The job.
        job: JobName,
        /// How many it keeps.
        count: usize,
    },
    /// More schedules of its upstreams than a downstream keeps (`JobDef::after`).
    TooManyUpstreamSchedules {
        /// The job.
        job: JobName,
        /// How many it keeps.
        count: usize,
    },
    /// More manual runs in the last hour than the config's `manual_per_hour`.
    ManualHistoryOverCap {
        /// The job.
        job: JobName,
    },
    /// More than a day of hourly missed counts.
    MissedHistoryOverDay {
        /// The job.
        job: JobName,
    },
    /// Owed segments that are empty, reversed or not oldest first.
    OwedOutOfOrder {
        /// The job.
        job: JobName,
    },
    /// An owed due time after the job's frontier.
    OwedBeyondFrontier {
        /// The job.
        job: JobName,
    },
    /// An unconfirmed job that owes due times (its schedule has not begun). (A run and a
    /// retry at once, a wait for room while running, or an unconfirmed job without its
    /// definition or with a run cannot be held by a job's phase: reading the state
    /// refuses them.)
    UnconfirmedNotClean {
        /// The job.
        job: JobName,
    },
    /// A job holds a definition for confirmation that names another job.
    HoldsOtherDefinition {
        /// The job.
        job: JobName,
        /// The name in the held definition.
        held: JobName,
    },
    /// A run or retry covering no due time, or a reversed range.
    EmptyCover {
        /// The job.
        job: JobName,
        /// What it covers.
        covers: Covers,
    },
    /// An open run whose id or fence the counters never handed out.
    RunAheadOfCounters {
        /// The job.
        job: JobName,
        /// The run.
        run: RunId,
    },
    /// An owed segment that does not hold exactly the due times it counts.
    OwedCountWrong {
        /// The job.
        job: JobName,
        /// The segment's first due time.
        from: Timestamp,
        /// Its last.
        to: Timestamp,
        /// How many it says it holds.
        count: u64,
    },
    /// The name index does not point at the job.
    NameIndexStale {
        /// The job.
        job: JobName,
    },
    /// The cached next due time is not the schedule's.
    NextDueStale {
        /// The job.
        job: JobName,
    },
    /// The cached wake time is not what the job needs.
    WakeStale {
        /// The job.
        job: JobName,
    },
    /// The job's wake time is not in the wake index.
    MissingFromWakeIndex {
        /// The job.
        job: JobName,
    },
    /// The job's open run is not in the run index.
    MissingFromRunIndex {
        /// The job.
        job: JobName,
        /// The run.
        run: RunId,
    },
    /// The run index holds runs no job holds.
    RunIndexExtra,
    /// The indexes are larger than the job table.
    IndexSizes,
    /// The count of held clocks does not match the processes.
    HeldClockCountStale,
    /// The job's cached concurrency entry is not what it holds.
    LaneEntryStale {
        /// The job.
        job: JobName,
    },
    /// The concurrency indexes do not match a fresh build from the jobs.
    LanesDisagree,
}

impl From<ConfigError> for Inconsistency {
    fn from(e: ConfigError) -> Inconsistency {
        Inconsistency::Config(e)
    }
}

impl fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Inconsistency as I;
        match self {
            I::Config(e) => e.fmt(f),
            I::ConfigChanged => f.write_str("the config changed; load the whole state"),
            I::OwnerUnderShared { holder, fence } => write!(
                f,
                "an owner lease ({holder} {fence}) under shared coordination; only single_owner has one"
            ),
            I::OwnerFenceAhead { fence } => {
                write!(f, "the owner lease's fence {fence} is ahead of the counter")
            }
            I::OwnerHolderUnknown { holder } => {
                write!(f, "the owner lease is held by {holder}, an unknown process")
            }
            I::OwnerHolderDraining { holder } => {
                write!(f, "the owner lease is held by {holder}, which is draining")
            }
            I::SequenceTwice { seq } => write!(f, "job sequence {seq} appears twice"),
            I::SequenceBeyondCounter { job, seq } => {
                write!(f, "job {job} has sequence {seq} beyond the counter")
            }
            I::NameTwice { job } => write!(f, "job {job} appears twice"),
            I::RunOpenTwice { run } => write!(f, "run {run} is open twice"),
            I::CountersBehind { job } => write!(f, "the counters moved back behind job {job}"),
            other => fmt_job(other, f),
        }
    }
}

/// `Display` of the variants about one job's record or its index entries.
fn fmt_job(i: &Inconsistency, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use Inconsistency as I;
    match i {
        I::IncidentRepeated { job, incident } => {
            write!(f, "{job}: incident {incident} is repeated")
        }
        I::WatchOutOfStep { job } => write!(
            f,
            "{job}: watched_since is set exactly when expect_success_within is, and here it is not"
        ),
        I::EndedNotOneShot { job, end } => write!(f, "{job}: ended ({end:?}) but not a one-shot"),
        I::EndedUnsettled { job, end, instant } => write!(
            f,
            "{job}: ended ({end:?}) while its instant {instant} is not settled"
        ),
        I::TooManyOwedSegments { job, count } => write!(f, "{job}: {count} owed segments"),
        I::AfterIndexStale { job } => {
            write!(f, "{job}: the index of upstreams does not list its `after`")
        }
        I::TooManyHeard { job, count } => write!(
            f,
            "{job}: {count} heard upstream ranges; a job keeps at most {}",
            crate::state::MAX_HEARD
        ),
        I::TooManyUpstreamSchedules { job, count } => write!(
            f,
            "{job}: {count} schedules of its upstreams kept; a job keeps at most {}",
            crate::state::MAX_UPSTREAM_SCHEDULES
        ),
        I::ManualHistoryOverCap { job } => write!(f, "{job}: manual history over the cap"),
        I::MissedHistoryOverDay { job } => write!(f, "{job}: missed history over a day"),
        I::OwedOutOfOrder { job } => write!(f, "{job}: owed segments out of order"),
        I::OwedBeyondFrontier { job } => write!(f, "{job}: owes a due time beyond its frontier"),
        I::UnconfirmedNotClean { job } => write!(
            f,
            "{job}: an unconfirmed job owes due times (its schedule begins at its confirmation)"
        ),
        I::HoldsOtherDefinition { job, held } => {
            write!(f, "{job}: holds a definition of {held}")
        }
        I::EmptyCover { job, covers } => write!(f, "{job}: covers an empty range {covers}"),
        I::RunAheadOfCounters { job, run } => {
            write!(f, "{job}: run {run} is ahead of the counters")
        }
        I::OwedCountWrong {
            job,
            from,
            to,
            count,
        } => write!(
            f,
            "{job}: owed segment {from}..{to} does not hold {count} due times"
        ),
        other => fmt_index(other, f),
    }
}

/// `Display` of the variants about the derived indexes.
fn fmt_index(i: &Inconsistency, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use Inconsistency as I;
    match i {
        I::NameIndexStale { job } => write!(f, "{job}: name index is stale"),
        I::NextDueStale { job } => write!(f, "{job}: next due time is stale"),
        I::WakeStale { job } => write!(f, "{job}: wake time is stale"),
        I::MissingFromWakeIndex { job } => write!(f, "{job}: missing from the wake index"),
        I::MissingFromRunIndex { job, run } => {
            write!(f, "{job}: run {run} missing from the run index")
        }
        I::RunIndexExtra => f.write_str("run index has runs no job holds"),
        I::IndexSizes => f.write_str("index sizes disagree with the jobs"),
        I::HeldClockCountStale => f.write_str("the count of held clocks is stale"),
        I::LaneEntryStale { job } => write!(f, "{job}: concurrency entry is stale"),
        I::LanesDisagree => f.write_str("concurrency indexes disagree with the jobs"),
        // `Display for Inconsistency` and `fmt_job` take the others.
        other => write!(f, "{other:?}"),
    }
}

impl std::error::Error for Inconsistency {}

#[cfg(test)]
mod tests {
    use super::Inconsistency;
    use crate::{JobName, RunId};

    /// What a refused load says of a stale index names the job and the index (a person
    /// reads it to know which part of a stored state is wrong).
    #[test]
    fn an_index_inconsistency_names_the_job_and_the_index() {
        let job = JobName::new("sync").unwrap();
        let wake = Inconsistency::WakeStale { job: job.clone() };
        assert_eq!(wake.to_string(), "sync: wake time is stale");
        let run = Inconsistency::MissingFromRunIndex { job, run: RunId(7) };
        assert_eq!(run.to_string(), "sync: run r7 missing from the run index");
        assert_eq!(
            Inconsistency::RunIndexExtra.to_string(),
            "run index has runs no job holds"
        );
    }
}
