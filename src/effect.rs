//! What the core asks of its host: start or cancel runs, append to the journal, raise
//! alerts, answer commands. Effects are the only way anything leaves the core.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::{Actor, Fence, Outcome, ProcessId, RunId};
use crate::job::{Digest, JobName};
use crate::names::snake_names;
use crate::schedule::Schedule;
use crate::time::{Duration, Timestamp};
use crate::view::JobView;

mod flat;

/// Why a run was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A due time, on time.
    Schedule,
    /// Due times found late, covered by the missed rule.
    CatchUp,
    /// Due times that arrived while the previous run was going, kept by the overlap policy.
    Buffered,
    /// The same due times again after a failure.
    Retry,
    /// The same due times again after the earlier run was recorded lost (safe to repeat only).
    Repeat,
    /// A person asked; covers no due time.
    Manual,
}

/// Due times `from..=to` of one job, `count` of them (exact, from the schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Covers {
    /// The first due time covered.
    pub from: Timestamp,
    /// The last due time covered.
    pub to: Timestamp,
    /// How many due times `from..=to` holds.
    pub count: u64,
}

/// Why due times were not started on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MissCause {
    /// No process looked at the job in time (crash, restart, stall).
    Down,
    /// The job was paused.
    Paused,
    /// The previous run was still going.
    Overlap,
    /// A process's wall clock was set forward past them (`clock_jump` in states and
    /// journals written before format 4).
    #[serde(alias = "clock_jump")]
    ClockForward,
    /// The process's machine slept past them (its monotonic clock stood still while the
    /// wall clock and the clock that counts sleep moved on).
    Asleep,
    /// The definition changed and the new schedule starts from then.
    Rescheduled,
    /// Older than the catch-up window when found.
    TooLate,
    /// The job was removed.
    Removed,
    /// A failed run asked the job to wait longer than its wait budget (a quota or rate
    /// limit), and the job was held until then.
    QuotaHold,
    /// Due on time, but the process had `max_runs_per_process` runs open: it waited, and
    /// started as a catch-up.
    ConcurrencyCap,
    /// Due on time, but its concurrency key's lane was full: it waited, and started as a
    /// catch-up when the lane let it in.
    LaneBusy,
    /// A person asked for these past due times (`Event::Backfill`): run whatever the
    /// job's missed rule says, since they asked for exactly these.
    Backfill,
    /// The job waits for upstream jobs (`JobDef::after`): due on time, it waited until
    /// every upstream had settled the same due time `ok`, and started as a catch-up; or an
    /// upstream's due time ended otherwise, and it was skipped (the `upstream_not_ok`
    /// history line before the entry names the upstream and its fate).
    Upstream,
}

/// What comparing a process's clocks between two of its events found (see `Now`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ClockGapKind {
    /// The wall clock ran ahead because the machine slept.
    Asleep,
    /// The wall clock was set forward.
    ClockForward,
    /// The wall clock was set back.
    ClockBackward,
    /// The wall clock reads further ahead of the store's clock than `clock_jump` (`by`):
    /// the process works on the store's time; a new incarnation first waits, deciding
    /// nothing, until the store's clock shows itself alive or it is alone.
    HeldAhead,
    /// The wall clock reads further behind the store's clock than `clock_jump`: the
    /// process works on the store's time.
    HeldBehind,
    /// A process held ahead has been contradicted by no one for two ticks: its clock is
    /// taken as right from now on (a restart after downtime, a lone host whose clock was
    /// set forward).
    Released,
    /// A process held behind (`by` behind) has been contradicted by no one for two ticks:
    /// its clock is taken as right and the store's clock goes back to it (a lone host whose
    /// clock was fast and has been corrected). No due time runs again: each job's frontier
    /// stays where it was, so the schedule waits until the clock reaches it.
    ReleasedBehind,
}

/// Why a job that could start is waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The claiming process holds `max_runs_per_process` open runs.
    ConcurrencyCap,
    /// The job's concurrency key has as many open runs as its lane is wide (or older
    /// waiters of the key are first in line).
    LaneBusy,
}

impl WaitReason {
    /// The cause an on-time due time that had to wait is owed with.
    pub fn cause(self) -> MissCause {
        match self {
            WaitReason::ConcurrencyCap => MissCause::ConcurrencyCap,
            WaitReason::LaneBusy => MissCause::LaneBusy,
        }
    }
}

/// What was done about due times that were missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MissAction {
    /// Recorded and not run.
    Skipped,
    /// Covered late by a catch-up (or buffered) run that ended done.
    CaughtUp {
        /// The run that covered them.
        run: RunId,
    },
}

/// The ledger: every due time ends up in exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LedgerKind {
    /// Run on time and settled done; `skipped` when the run reported it had nothing to do.
    Ran {
        /// The run that settled them.
        run: RunId,
        /// The run reported `skipped`: it had nothing to do.
        skipped: bool,
    },
    /// Not started on time: the missed rule or the overlap policy decided what was done.
    Missed {
        /// Why they were not started on time.
        cause: MissCause,
        /// What was done about them.
        action: MissAction,
    },
    /// Retries exhausted (or a failure with no retries left).
    FailedOut {
        /// The last attempt's run.
        run: RunId,
    },
    /// The run started and its result never came; not repeated because the job is not safe
    /// to repeat.
    Lost {
        /// The run whose lease lapsed.
        run: RunId,
    },
    /// The run was parked awaiting approval and nobody approved it in time; not retried
    /// (a person's silence is an answer, not a fault).
    ApprovalExpired {
        /// The parked run.
        run: RunId,
    },
}

/// One ledger line: `count` due times from `from` to `to` of one job, and their fate.
/// A range with an exact count, so a long downtime is one entry however many due times
/// it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LedgerEntry {
    /// The first due time it covers.
    pub from: Timestamp,
    /// The last due time it covers.
    pub to: Timestamp,
    /// How many due times `from..=to` holds.
    pub count: u64,
    /// Their fate.
    #[serde(flatten)]
    pub kind: LedgerKind,
}

/// Who paused a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum PausedBy {
    /// A person's `Event::Pause`.
    Person {
        /// Who asked.
        actor: Actor,
    },
    /// The core paused it: `reason` says why.
    System {
        /// Why the core paused it.
        reason: SystemPause,
    },
}

/// Why the core paused a job by itself. A person's `Event::Resume` ends each of them.
///
/// The serialized form is the sentence `Display` prints (`"retries exhausted"`), as states
/// and journals have always stored it; anything else is refused on load, naming what is
/// accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemPause {
    /// A run failed with no retry left (`LedgerKind::FailedOut`).
    RetriesExhausted,
    /// A run's lease lapsed with no result and the job is not safe to repeat, so running
    /// its due times again could run them twice.
    RunLost,
    /// `JobDef::pause_after_failures` failed runs in a row.
    FailureStreak {
        /// How many runs failed in a row.
        failures: u32,
    },
}

impl SystemPause {
    const RETRIES_EXHAUSTED: &'static str = "retries exhausted";
    const RUN_LOST: &'static str = "a run was lost and the job is not safe to repeat";
    const STREAK_SUFFIX: &'static str = " failed runs in a row";

    /// Reads the stored sentence back; `None` for any other text.
    pub fn parse(text: &str) -> Option<SystemPause> {
        match text {
            Self::RETRIES_EXHAUSTED => Some(SystemPause::RetriesExhausted),
            Self::RUN_LOST => Some(SystemPause::RunLost),
            _ => {
                let digits = text.strip_suffix(Self::STREAK_SUFFIX)?;
                // Only the digits `Display` writes: no sign, no leading zero.
                let canonical = !digits.starts_with(['+', '0']) || digits == "0";
                let failures = digits.parse().ok().filter(|_| canonical)?;
                Some(SystemPause::FailureStreak { failures })
            }
        }
    }
}

impl fmt::Display for SystemPause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SystemPause::RetriesExhausted => f.write_str(Self::RETRIES_EXHAUSTED),
            SystemPause::RunLost => f.write_str(Self::RUN_LOST),
            SystemPause::FailureStreak { failures } => {
                write!(f, "{failures}{}", Self::STREAK_SUFFIX)
            }
        }
    }
}

impl Serialize for SystemPause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SystemPause {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SystemPause::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "unknown system pause reason {:?}; accepted: {:?}, {:?} or \"<n>{}\"",
                text.chars().take(80).collect::<String>(),
                Self::RETRIES_EXHAUSTED,
                Self::RUN_LOST,
                Self::STREAK_SUFFIX,
            ))
        })
    }
}

/// The journal's other lines: what happened to the job, for people and for the checker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum History {
    /// The job's schedule from `from` on (exclusive): the checker derives due times from it.
    /// Boxed: a compiled schedule is large and definitions are rare, while every journal
    /// line is as big as the largest variant.
    Defined {
        /// The schedule in force.
        schedule: Box<Schedule>,
        /// Its due times count after this instant.
        from: Timestamp,
        /// Who defined it.
        actor: Actor,
    },
    /// The job was removed; its journal ends here.
    Removed {
        /// Who removed it.
        actor: Actor,
    },
    /// The job's record left this state for another (`Event::MoveOut`): its journal
    /// goes on there, from where it stopped here.
    MovedOut {
        /// Who moved it.
        actor: Actor,
    },
    /// The job's record came in from another state (`Event::MoveIn`), frontier, owed line
    /// and all: its journal goes on here.
    MovedIn {
        /// Who moved it.
        actor: Actor,
    },
    /// A person asked for the `count` due times from `from` to `to` (past, before the
    /// accounted span) to be run: they are owed with cause `backfill`.
    Backfill {
        /// The first due time asked for.
        from: Timestamp,
        /// The last due time asked for.
        to: Timestamp,
        /// How many due times the range holds.
        count: u64,
        /// Who asked.
        actor: Actor,
    },
    /// A definition change that kept the schedule.
    Updated {
        /// Who changed it.
        actor: Actor,
    },
    /// A run started (the `Start` effect told the host to run it).
    Started {
        /// The run.
        run: RunId,
        /// The fence its result must carry.
        fence: Fence,
        /// Its attempt number (1 for a first run).
        attempt: u32,
        /// Why it started.
        trigger: Trigger,
        /// The due times it covers (`None`: a manual run).
        covers: Option<Covers>,
        /// The process that runs it.
        process: ProcessId,
        /// How long the job waited for a lane or the cap before this start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited: Option<Duration>,
    },
    /// The job could start but must wait (written once, when the wait begins).
    Waiting {
        /// Why it waits.
        reason: WaitReason,
    },
    /// A definition with this digest is held until a person confirms it; the one before it
    /// (if any) keeps running.
    PendingConfirmation {
        /// The held definition's digest, what a person confirms.
        digest: Digest,
    },
    /// A person confirmed the held definition; it applies from now.
    Confirmed {
        /// The digest confirmed.
        digest: Digest,
        /// Who confirmed it.
        actor: Actor,
    },
    /// A run's result was taken.
    Settled {
        /// The run.
        run: RunId,
        /// Its attempt number.
        attempt: u32,
        /// How it ended.
        outcome: Outcome,
    },
    /// A failed run will be tried again.
    RetryAt {
        /// The run that failed.
        run: RunId,
        /// When the retry starts.
        at: Timestamp,
    },
    /// `run` failed asking to wait `asked`, beyond the job's wait budget: nothing of the
    /// job starts before `until`.
    QuotaHold {
        /// The run that asked to wait.
        run: RunId,
        /// How long it asked to wait.
        asked: Duration,
        /// Nothing of the job starts before this.
        until: Timestamp,
    },
    /// The hold ending at `until` was lifted (at or after it, by the lifting process's
    /// wall clock).
    QuotaHoldEnded {
        /// When the hold was to end.
        until: Timestamp,
    },
    /// An upstream job (`JobDef::after`) did not settle the due times of the ledger
    /// entry that follows `ok`: they are skipped with cause `upstream`.
    UpstreamNotOk {
        /// The upstream job.
        upstream: JobName,
        /// What became of its due time.
        fate: UpstreamFate,
    },
    /// The run's lease lapsed with no result.
    Lost {
        /// The run.
        run: RunId,
    },
    /// A later incarnation took over the run (its child outlived the process that
    /// started it).
    Adopted {
        /// The run.
        run: RunId,
        /// The process that held it.
        from: ProcessId,
        /// The process that holds it now.
        process: ProcessId,
    },
    /// A result that named a run that is not open, or an older fence: it changed nothing.
    StaleResult {
        /// The run the result named.
        run: RunId,
        /// The fence the result carried.
        fence: Fence,
    },
    /// The job was paused.
    Paused {
        /// Who paused it.
        by: PausedBy,
        /// What they said about it.
        note: String,
    },
    /// A person resumed the job.
    Resumed {
        /// Who resumed it.
        actor: Actor,
    },
    /// A person asked for a manual run; it starts at the next tick.
    ManualQueued {
        /// Who asked.
        actor: Actor,
    },
    /// A person's name was wiped from the job's state (`Event::ForgetActor`).
    ActorForgotten,
    /// An alert held back by the job's `alert_throttle`: told here instead of to a person.
    AlertHeld {
        /// The alert held back.
        alert: AlertKind,
    },
    /// The host was told to cancel a run.
    CancelSent {
        /// The run.
        run: RunId,
        /// Why.
        reason: CancelReason,
    },
    /// The run reported `awaiting_approval`: the job stays occupied until `until`.
    Parked {
        /// The run.
        run: RunId,
        /// Its attempt number.
        attempt: u32,
        /// Until when it waits for approval.
        until: Timestamp,
    },
    /// A person approved the parked run: it settled done.
    Approved {
        /// The run.
        run: RunId,
        /// Who approved it.
        actor: Actor,
    },
    /// Nobody approved the parked run before its `until`.
    ApprovalExpired {
        /// The run.
        run: RunId,
    },
    /// A one-shot (`at`) job's instant was settled by `run`: it will not run on schedule
    /// again until it is given a new instant.
    Completed {
        /// The run that settled it.
        run: RunId,
    },
    /// A one-shot job's instant passed without a run (`cause` says why).
    Expired {
        /// Why it was missed.
        cause: MissCause,
    },
}

/// What a journal line holds: a ledger entry or a history line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The fate of due times.
    Ledger(LedgerEntry),
    /// Anything else that happened to the job.
    History(History),
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Record {
    /// The wall time of the event that wrote it.
    pub at: Timestamp,
    /// The job it is about.
    pub job: JobName,
    /// What it says.
    pub entry: Entry,
}

/// Why the host is asked to cancel a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The run passed its deadline (`JobDef::timeout`).
    Timeout,
    /// The process no longer holds the run's lease: its result would be stale.
    LeaseLost,
    /// The job was removed while the run was going.
    Stopping,
}

/// What an alert is about: each is something a person should know now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "alert", rename_all = "snake_case")]
pub enum AlertKind {
    /// A run failed with no retry left.
    FailedOut {
        /// The last attempt's run.
        run: RunId,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The core paused the job (a failure streak; other system pauses are told by the
    /// alert that caused them).
    PausedBySystem {
        /// Why it paused the job.
        reason: SystemPause,
    },
    /// `paused`: the job was not safe to repeat, so the system paused it.
    RunLost {
        /// The run whose lease lapsed.
        run: RunId,
        /// Whether the job was paused because of it.
        paused: bool,
    },
    /// A run has been going longer than `JobDef::stall_after`; told once per run.
    Stalled {
        /// The run.
        run: RunId,
        /// How long it has been going.
        running_for: Duration,
    },
    /// A definition change waits for a person's `Confirm` with this digest.
    PendingConfirmation {
        /// The held definition's digest.
        digest: Digest,
    },
    /// A parked run was not approved before its `until`.
    ApprovalExpired {
        /// The parked run.
        run: RunId,
    },
    /// The dead-man's switch (`JobDef::expect_success_within`): no run of the job has
    /// succeeded for `within`, counted from `since` (its latest success, or when the
    /// switch was set if it has none since).
    NoSuccess {
        /// Where the silence is counted from.
        since: Timestamp,
        /// The job's `expect_success_within`.
        within: Duration,
    },
}

/// An alert, for the host to deliver to a person (after commit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Alert {
    /// The wall time of the event that raised it.
    pub at: Timestamp,
    /// The job it is about.
    pub job: JobName,
    /// What it is about.
    pub kind: AlertKind,
}

/// Why a command was not carried out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "refusal", rename_all = "snake_case")]
pub enum Refusal {
    /// No job has that name.
    NotFound {
        /// The name asked for.
        job: String,
    },
    /// Already in the state asked for (paused, not paused, queued).
    Already,
    /// A run of the job is going.
    InFlight {
        /// The run going.
        run: RunId,
    },
    /// A manual run would repeat work the job says is not safe to repeat.
    NotSafe,
    /// The hourly cap of manual runs (`Config::manual_per_hour`) is reached.
    RateLimited {
        /// When the next one is allowed.
        until: Timestamp,
    },
    /// The definition does not validate.
    Invalid {
        /// What is wrong with it.
        error: crate::job::DefError,
    },
    /// A note longer than the core keeps.
    NoteTooLong {
        /// Its length in characters.
        len: usize,
        /// The most accepted.
        max: usize,
    },
    /// No job can be added: the state's job numbers are used up.
    Full,
    /// `Confirm` named another digest than the held definition's. The expected digest is
    /// not told: a refusal that hands it out lets anyone confirm without reading what is
    /// held (the host shows what the held definition changes instead).
    WrongDigest {
        /// The digest given.
        given: String,
    },
    /// `Confirm`, but no definition of the job is held; `current` is the digest in force.
    NothingToConfirm {
        /// The digest of the definition in force.
        current: Digest,
    },
    /// `ApprovalGiven` named a run that is not this job's parked run (unknown, still
    /// running, settled already or expired).
    NotAwaitingApproval {
        /// The run named.
        run: RunId,
    },
    /// A run of the job is parked awaiting approval until `until`; it must be approved,
    /// finished or expire first.
    AwaitingApproval {
        /// The parked run.
        run: RunId,
        /// Until when it waits.
        until: Timestamp,
    },
    /// A backfill whose `to` is before its `from`.
    EmptyRange {
        /// The range's start.
        from: Timestamp,
        /// The range's end, before its start.
        to: Timestamp,
    },
    /// A backfill reaching into time the job's ledger accounts already (`from: None`: a
    /// job loaded from an older state, whose accounted start is not known).
    AlreadyAccounted {
        /// The instant a backfill must end at or before.
        from: Option<Timestamp>,
    },
    /// A backfill range holding none of the schedule's due times.
    NoDueTimes {
        /// The range's start.
        from: Timestamp,
        /// The range's end.
        to: Timestamp,
    },
    /// A backfill range holding more due times than one backfill may ask for.
    TooManyDueTimes {
        /// How many due times the range holds.
        count: u64,
        /// The most one backfill may ask for (`MAX_BACKFILL`).
        max: u64,
    },
    /// The job's line of owed due times is full; a backfill waits until it drains.
    OwedLineFull {
        /// The most owed segments a job keeps.
        max: usize,
    },
    /// `MoveIn` of a job whose name a job of this state has already.
    NameTaken {
        /// The name.
        job: JobName,
    },
    /// `MoveIn` of a record this state could not have made (a broken record, not one
    /// `MoveOut` handed over).
    NotMovable {
        /// What is wrong with it.
        why: String,
    },
    /// A definition's `after` names an upstream job this state cannot wait for.
    Upstream {
        /// The upstream job named.
        upstream: JobName,
        /// What is wrong with it.
        problem: UpstreamProblem,
    },
}

/// Why an upstream job (`JobDef::after`) was refused (`Refusal::Upstream`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum UpstreamProblem {
    /// No job of that name is defined here (define the upstream first; under partitions,
    /// in the same partition).
    Unknown,
    /// The upstream's schedule is not this job's: a downstream runs for its upstreams' due
    /// times, so the two must be the same schedule.
    ScheduleDiffers,
    /// Waiting for it would make a cycle: `through` is the shortest chain from the
    /// upstream back to the job defined (of chains as short, the one following each job's
    /// upstreams in their order).
    Cycle {
        /// The jobs of the chain, in order.
        through: Vec<JobName>,
    },
}

/// What became of an upstream's due time, as a downstream heard it (`JobDef::after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum UpstreamFate {
    /// Run and settled done (on time or caught up): the downstream may run.
    Ok,
    /// Its retries ran out.
    FailedOut,
    /// Its run was lost.
    Lost,
    /// Its run waited for an approval that never came.
    ApprovalExpired,
    /// It was skipped (the missed rule or the overlap policy).
    Skipped {
        /// Why.
        cause: MissCause,
    },
    /// The upstream is no longer defined here.
    Gone,
    /// The upstream's schedule changed and no longer has this due time.
    NotDue,
    /// The upstream holds no such due time, and none of its ledger entries for it was
    /// heard: it was before the upstream's definition (and not backfilled), or it was
    /// settled before this job waited for it (a backfill of a downstream reaching before
    /// its own definition).
    Unheard,
    /// Its fate may have been heard, but was forgotten: the downstream keeps the last
    /// `MAX_HEARD` (256) ranges of fates heard, and more changes of fate were heard since
    /// (a downstream paused for long behind an upstream whose due times end one way, then
    /// another).
    Forgotten,
}

impl UpstreamFate {
    /// The fate a ledger entry of the upstream gives its due times.
    pub fn of(kind: LedgerKind) -> UpstreamFate {
        match kind {
            LedgerKind::Ran { .. }
            | LedgerKind::Missed {
                action: MissAction::CaughtUp { .. },
                ..
            } => UpstreamFate::Ok,
            LedgerKind::Missed {
                cause,
                action: MissAction::Skipped,
            } => UpstreamFate::Skipped { cause },
            LedgerKind::FailedOut { .. } => UpstreamFate::FailedOut,
            LedgerKind::Lost { .. } => UpstreamFate::Lost,
            LedgerKind::ApprovalExpired { .. } => UpstreamFate::ApprovalExpired,
        }
    }
}

impl fmt::Display for UpstreamFate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamFate::Ok => f.write_str("ok"),
            UpstreamFate::FailedOut => f.write_str("failed out"),
            UpstreamFate::Lost => f.write_str("lost"),
            UpstreamFate::ApprovalExpired => f.write_str("approval expired"),
            UpstreamFate::Skipped { cause } => write!(f, "skipped ({})", cause.name()),
            UpstreamFate::Gone => f.write_str("removed"),
            UpstreamFate::NotDue => f.write_str("not a due time of its schedule any more"),
            UpstreamFate::Unheard => f.write_str("no settlement of it heard"),
            UpstreamFate::Forgotten => f.write_str(
                "its fate was forgotten (a downstream keeps the last 256 ranges of fates heard)",
            ),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotFound { job } => write!(f, "no job named `{job}`"),
            Refusal::Already => f.write_str("already so; nothing changed"),
            Refusal::InFlight { run } => write!(f, "run {run} of this job is in flight"),
            Refusal::NotSafe => f.write_str(
                "the job is not safe to repeat, so it cannot be run by hand; mark it safe_to_repeat first",
            ),
            Refusal::RateLimited { until } => {
                write!(f, "too many manual runs in the last hour; the next is allowed at {until}")
            }
            Refusal::Invalid { error } => write!(f, "invalid definition: {error}"),
            Refusal::NoteTooLong { len, max } => {
                write!(f, "the note has {len} characters; at most {max} are accepted")
            }
            Refusal::Full => f.write_str("no job can be added: the job numbers are used up"),
            Refusal::WrongDigest { given } => write!(
                f,
                "digest {given} is not the held definition's; read what is held and confirm the digest shown with it"
            ),
            Refusal::NothingToConfirm { current } => write!(
                f,
                "no definition is held for confirmation; the one in force has digest {current}"
            ),
            Refusal::NotAwaitingApproval { run } => write!(
                f,
                "{run} is not awaiting approval in this job (unknown, running, settled or expired)"
            ),
            Refusal::AwaitingApproval { run, until } => write!(
                f,
                "{run} of this job awaits approval until {until}; approve it or let it expire first"
            ),
            Refusal::EmptyRange { from, to } => write!(
                f,
                "the range ends ({to}) before it begins ({from}); a backfill needs from <= to"
            ),
            Refusal::AlreadyAccounted { from: Some(from) } => write!(
                f,
                "a backfill must end at or before {from}; due times after it are in the ledger already"
            ),
            Refusal::AlreadyAccounted { from: None } => f.write_str(
                "the job was defined before backfills were kept track of; redefine it to backfill",
            ),
            Refusal::NoDueTimes { from, to } => write!(
                f,
                "the schedule has no due time from {from} to {to}; give a range holding at least one"
            ),
            Refusal::TooManyDueTimes { count, max } => write!(
                f,
                "the range holds {count} due times; a backfill may ask for at most {max}"
            ),
            Refusal::NameTaken { job } => write!(
                f,
                "a job named `{job}` is here already; remove it, or move the record under another name"
            ),
            Refusal::Upstream { upstream, problem } => match problem {
                UpstreamProblem::Unknown => write!(
                    f,
                    "after: no job named `{upstream}` is defined here; define the upstream first (under partitions, in the same partition)"
                ),
                UpstreamProblem::ScheduleDiffers => write!(
                    f,
                    "after: `{upstream}` has another schedule; a job runs for its upstreams' due times, so give it the same schedule"
                ),
                UpstreamProblem::Cycle { through } => {
                    let chain: Vec<&str> = through.iter().map(JobName::as_str).collect();
                    write!(
                        f,
                        "after: waiting for `{upstream}` makes a cycle ({}); a chain of jobs must end",
                        chain.join(" -> ")
                    )
                }
            },
            Refusal::NotMovable { why } => write!(
                f,
                "the record cannot be taken in: {why}; move in only what `move_out` handed over"
            ),
            Refusal::OwedLineFull { max } => write!(
                f,
                "the job's owed due times already fill its line of {max} separate ranges (a `required` job keeps two free for its own late due times), and none can be dropped to make room; try again once some have run"
            ),
        }
    }
}

/// What the core asks of its host, in order. Records go into the store in the step's
/// transaction; everything else is carried out only after that transaction commits
/// (`State::step` gives the whole host loop).
///
/// Grouped by what the host must do, in one ordered stream: `Journal` inside the
/// transaction, `Do` and `Notice` after the commit, `Reply` to whoever sent the command.
/// The serialized form is flat and internally tagged (`{"effect": "start", ...}`), as the
/// wire format has always had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "flat::FlatEffect", from = "flat::FlatEffect")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The schema describes the flat wire form (`flat::FlatEffect`), whatever this type's own
// doc says about the grouping.
#[cfg_attr(
    feature = "schema",
    schemars(
        description = "What the core asks of its host, in order. Records go into the store in the step's\ntransaction; everything else is carried out only after that transaction commits\n(`State::step` gives the whole host loop)."
    )
)]
pub enum Effect {
    /// A journal line: write it in the same transaction as the state, in order.
    Journal(Record),
    /// Carry it out after the commit: start or cancel a run.
    Do(Action),
    /// After the commit, log it or deliver it (to a person, a log, a monitor).
    Notice(Notice),
    /// The answer to a command: the job's new view (none for commands about no one job).
    Reply {
        /// The job the command was about, if one.
        job: Option<JobName>,
        /// The job's view after the command, or why it was refused.
        result: Result<Option<Box<JobView>>, Refusal>,
    },
    /// A job's whole record, taken out by `Event::MoveOut`: put it into the other state
    /// with `Event::MoveIn` in the same transaction (or the job is gone from both).
    Handover(Box<crate::state::JobRecord>),
}

/// A run to start: what `Action::Start` asks of the host, and the wire's `start` effect
/// (the doc comments here are the schema's descriptions).
///
/// A struct, not a variant's nine fields, because a host passes it around whole: the
/// daemon's runner takes one and launches its command from it, and a simulator's host can
/// hand one on without taking it apart. `run` and `fence` come back in
/// `Event::RunFinished`. It carries what a host tells the command (`trigger`, `covers`,
/// `late`), so a host need not read the state back after the commit to learn it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// Inline in the schema, as the fields were before they had a struct of their own: the
// `start` effect's schema stays one object, not a `$ref` beside the tag.
#[cfg_attr(feature = "schema", schemars(inline))]
pub struct Start {
    /// The run's id, which `RunFinished` must carry.
    pub run: RunId,
    /// The job to run.
    pub job: JobName,
    /// The fence, which `RunFinished` must carry too.
    pub fence: Fence,
    /// Its attempt number (1 for a first run).
    pub attempt: u32,
    /// Why it starts.
    pub trigger: Trigger,
    /// The due times it covers (`None`: a manual run), for the command to know.
    pub covers: Option<Covers>,
    /// Why the due times it covers were late (`None`: on time, or a manual run).
    /// The cause they were owed with: `backfill` when a person asked for them
    /// (`Event::Backfill`), so a host can tell its command a backfill from a catch-up after
    /// downtime. A retry or repeat keeps its cover's cause. Left out of the wire form when
    /// `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<MissCause>,
    /// When it must end: past this the core asks to cancel it.
    pub deadline: Timestamp,
    /// The process that must run it.
    pub process: ProcessId,
}

/// What the host must carry out after the commit (never before: a start carried out for a
/// claim that never committed could run a job twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start a run on `process`. The host must feed back `RunFinished` with this run and fence.
    Start(Start),
    /// Stop a run on `process` (signal it; its result, if any, still comes back).
    /// `job` is `None` when the run is not known at all (a process holding a run the
    /// state never had, or one long settled).
    Cancel {
        /// The run.
        run: RunId,
        /// Its job, when known.
        job: Option<JobName>,
        /// The process that holds it.
        process: ProcessId,
        /// Why.
        reason: CancelReason,
    },
}

/// What the host logs or delivers after the commit: alerts for people, clock findings,
/// coordination news.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Tell a person: deliver it, or log it.
    Alert(Alert),
    /// A process's wall clock moved `by` more (forward) or less (backward) than its
    /// monotonic clock between two of its events, beyond `config.clock_jump`. Not a journal
    /// line (the journal is per job): hosts log it. The due times a forward gap passed are
    /// recorded in the journal with the gap's cause (`asleep`, `clock_forward`).
    ClockGap {
        /// The wall time of the event that found it.
        at: Timestamp,
        /// The process whose clocks disagreed.
        process: ProcessId,
        /// What was found.
        kind: ClockGapKind,
        /// How far the wall clock moved beyond the monotonic clock.
        by: Duration,
    },
    /// `single_owner`: `process` took the owner lease with `fence`, a fence higher than any
    /// owner's before; from now on only it claims. `from` is the earlier holder whose lease
    /// lapsed (`None`: the lease was free). Renewals are not told.
    Owner {
        /// The new owner.
        process: ProcessId,
        /// Its fence.
        fence: Fence,
        /// When its lease lapses unless renewed.
        until: Timestamp,
        /// The earlier holder, if its lease lapsed.
        from: Option<ProcessId>,
    },
    /// `single_owner`: the draining `process` gave up the owner lease, so a standby takes
    /// it at its next tick instead of waiting for it to lapse.
    OwnerReleased {
        /// The process that released it.
        process: ProcessId,
        /// The lease's fence.
        fence: Fence,
    },
    /// The draining `process` holds no open run any more: its drain is complete and it may
    /// exit. Told once per process.
    Drained {
        /// The process whose drain is complete.
        process: ProcessId,
    },
}

// One-line renderings for traces and logs: stable, greppable, and what insta snapshots show.

impl fmt::Display for Covers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 1 && self.from == self.to {
            write!(f, "[{}]", self.from)
        } else {
            write!(f, "[{} .. {} ×{}]", self.from, self.to, self.count)
        }
    }
}

// The snake_case names the serde forms use (for one-line renderings, views and docs).

snake_names!(Trigger {
    Schedule => "schedule",
    CatchUp => "catch_up",
    Buffered => "buffered",
    Retry => "retry",
    Repeat => "repeat",
    Manual => "manual",
});

snake_names!(MissCause {
    Down => "down",
    Paused => "paused",
    Overlap => "overlap",
    ClockForward => "clock_forward",
    Asleep => "asleep",
    Rescheduled => "rescheduled",
    TooLate => "too_late",
    Removed => "removed",
    QuotaHold => "quota_hold",
    ConcurrencyCap => "concurrency_cap",
    LaneBusy => "lane_busy",
    Backfill => "backfill",
    Upstream => "upstream",
});

snake_names!(ClockGapKind {
    Asleep => "asleep",
    ClockForward => "clock_forward",
    ClockBackward => "clock_backward",
    HeldAhead => "held_ahead",
    HeldBehind => "held_behind",
    Released => "released",
    ReleasedBehind => "released_behind",
});

snake_names!(WaitReason {
    ConcurrencyCap => "concurrency_cap",
    LaneBusy => "lane_busy",
});

snake_names!(CancelReason {
    Timeout => "timeout",
    LeaseLost => "lease_lost",
    Stopping => "stopping",
});

impl fmt::Display for LedgerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerKind::Ran {
                run,
                skipped: false,
            } => write!(f, "ran {run}"),
            LedgerKind::Ran { run, skipped: true } => write!(f, "ran {run} (nothing to do)"),
            LedgerKind::Missed {
                cause,
                action: MissAction::Skipped,
            } => {
                write!(f, "missed ({}) skipped", cause.name())
            }
            LedgerKind::Missed {
                cause,
                action: MissAction::CaughtUp { run },
            } => {
                write!(f, "missed ({}) caught up by {run}", cause.name())
            }
            LedgerKind::FailedOut { run } => write!(f, "failed out in {run}"),
            LedgerKind::Lost { run } => write!(f, "lost with {run}"),
            LedgerKind::ApprovalExpired { run } => write!(f, "approval for {run} expired"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Skipped => f.write_str("skipped"),
            Outcome::Failed {
                kind,
                retry_after: None,
            } => write!(f, "failed ({kind})"),
            Outcome::Failed {
                kind,
                retry_after: Some(d),
            } => {
                write!(f, "failed ({kind}, retry after {d})")
            }
            Outcome::TimedOut => f.write_str("timed out"),
            Outcome::AwaitingApproval { ttl } => write!(f, "awaiting approval (ttl {ttl})"),
        }
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            History::Defined {
                schedule,
                from,
                actor,
            } => {
                write!(f, "defined {schedule} from {from} by {actor}")
            }
            History::Removed { actor } => write!(f, "removed by {actor}"),
            History::MovedOut { actor } => write!(f, "moved out by {actor}"),
            History::MovedIn { actor } => write!(f, "moved in by {actor}"),
            History::Backfill {
                from,
                to,
                count,
                actor,
            } => write!(
                f,
                "backfill of {count} due times from {from} to {to} asked by {actor}"
            ),
            History::Updated { actor } => write!(f, "updated by {actor}"),
            History::Started { .. } => self.fmt_started(f),
            History::Waiting { reason } => write!(f, "waiting ({})", reason.name()),
            History::PendingConfirmation { digest } => {
                write!(f, "definition {digest} held for confirmation")
            }
            History::Confirmed { digest, actor } => {
                write!(f, "definition {digest} confirmed by {actor}")
            }
            History::Settled {
                run,
                attempt,
                outcome,
            } => {
                write!(f, "settled {run} attempt {attempt}: {outcome}")
            }
            History::RetryAt { run, at } => write!(f, "retry of {run} at {at}"),
            History::QuotaHold { run, asked, until } => {
                write!(f, "held until {until}: {run} asked to wait {asked}")
            }
            History::QuotaHoldEnded { until } => write!(f, "hold until {until} lifted"),
            History::UpstreamNotOk { upstream, fate } => {
                write!(f, "upstream {upstream} did not settle ok: {fate}")
            }
            History::Lost { run } => write!(f, "{run} lost (lease lapsed)"),
            History::Adopted { run, from, process } => {
                write!(f, "{run} adopted by {process} from {from}")
            }
            History::StaleResult { run, fence } => {
                write!(f, "stale result for {run} {fence} ignored")
            }
            History::Paused {
                by: PausedBy::Person { actor },
                note,
            } => {
                write!(f, "paused by {actor}: {note:?}")
            }
            History::Paused {
                by: PausedBy::System { reason },
                ..
            } => {
                write!(f, "paused by the system: {reason}")
            }
            History::Resumed { actor } => write!(f, "resumed by {actor}"),
            History::ManualQueued { actor } => write!(f, "manual run queued by {actor}"),
            History::ActorForgotten => f.write_str("actor forgotten"),
            History::AlertHeld { alert } => write!(f, "alert held by the throttle: {alert}"),
            History::CancelSent { run, reason } => {
                write!(f, "cancel sent to {run} ({})", reason.name())
            }
            History::Parked {
                run,
                attempt,
                until,
            } => write!(
                f,
                "{run} attempt {attempt} parked awaiting approval until {until}"
            ),
            History::Approved { run, actor } => write!(f, "{run} approved by {actor}"),
            History::ApprovalExpired { run } => write!(f, "approval for {run} expired"),
            History::Completed { run } => write!(f, "one-shot completed by {run}"),
            History::Expired { cause } => {
                write!(f, "one-shot expired ({}) without a run", cause.name())
            }
        }
    }
}

impl History {
    /// A `started` line: run, fence, attempt, trigger and process, then its cover and its
    /// wait when it has them.
    fn fmt_started(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let History::Started {
            run,
            fence,
            attempt,
            trigger,
            covers,
            process,
            waited,
        } = self
        else {
            return Ok(());
        };
        write!(
            f,
            "started {run} {fence} attempt {attempt} {} on {process}",
            trigger.name()
        )?;
        if let Some(c) = covers {
            write!(f, " covering {c}")?;
        }
        if let Some(w) = waited {
            write!(f, " after waiting {w}")?;
        }
        Ok(())
    }
}

impl AlertKind {
    /// What makes two alerts one incident: their kind. A job tells an incident once; it is
    /// told again only after a success or a person's resume ends it (`JobRecord::incidents`).
    pub fn incident(&self) -> Incident {
        match self {
            AlertKind::FailedOut { .. } => Incident::FailedOut,
            AlertKind::PausedBySystem { .. } => Incident::PausedBySystem,
            AlertKind::RunLost { .. } => Incident::RunLost,
            AlertKind::Stalled { .. } => Incident::Stalled,
            AlertKind::PendingConfirmation { .. } => Incident::PendingConfirmation,
            AlertKind::ApprovalExpired { .. } => Incident::ApprovalExpired,
            AlertKind::NoSuccess { .. } => Incident::NoSuccess,
        }
    }
}

/// The kind of an alert, which is what makes two alerts one incident (`AlertKind::incident`).
/// A job keeps the incidents it has told and not yet seen end (`JobRecord::incidents`), so
/// each is told once. Stored by its snake_case name (`"failed_out"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Incident {
    /// `AlertKind::FailedOut`.
    FailedOut,
    /// `AlertKind::PausedBySystem`.
    PausedBySystem,
    /// `AlertKind::RunLost`.
    RunLost,
    /// `AlertKind::Stalled`.
    Stalled,
    /// `AlertKind::PendingConfirmation`.
    PendingConfirmation,
    /// `AlertKind::ApprovalExpired`.
    ApprovalExpired,
    /// `AlertKind::NoSuccess`: ended only by a success (a person's resume does not make
    /// the job succeed, so it does not end this incident).
    NoSuccess,
}

snake_names!(Incident {
    FailedOut => "failed_out",
    PausedBySystem => "paused_by_system",
    RunLost => "run_lost",
    Stalled => "stalled",
    PendingConfirmation => "pending_confirmation",
    ApprovalExpired => "approval_expired",
    NoSuccess => "no_success",
});

impl fmt::Display for Incident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlertKind::FailedOut { run, attempts } => {
                write!(
                    f,
                    "failed out: {run} was attempt {attempts}; the job is paused"
                )
            }
            AlertKind::PausedBySystem { reason } => write!(f, "paused by the system: {reason}"),
            AlertKind::RunLost { run, paused: false } => write!(f, "{run} lost; running it again"),
            AlertKind::RunLost { run, paused: true } => {
                write!(
                    f,
                    "{run} lost; the job is not safe to repeat, so it is paused"
                )
            }
            AlertKind::Stalled { run, running_for } => {
                write!(f, "{run} stalled, running for {running_for}")
            }
            AlertKind::PendingConfirmation { digest } => {
                write!(f, "definition {digest} waits for confirmation")
            }
            AlertKind::ApprovalExpired { run } => {
                write!(
                    f,
                    "{run} was not approved in time; its due times are closed"
                )
            }
            AlertKind::NoSuccess { since, within } => {
                write!(f, "no success in {within}, since {since}")
            }
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::Journal(r) => r.fmt(f),
            Effect::Do(a) => a.fmt(f),
            Effect::Notice(n) => n.fmt(f),
            Effect::Handover(record) => write!(f, "handover {}", record.def().name),
            Effect::Reply { job, result } => {
                let job = job.as_ref().map_or("-", |j| j.as_str());
                match result {
                    Ok(Some(v)) => write!(f, "reply {job}: ok, {}", v.status.name()),
                    Ok(None) => write!(f, "reply {job}: ok"),
                    Err(r) => write!(f, "reply {job}: refused: {r}"),
                }
            }
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Start(start) => start.fmt(f),
            Action::Cancel {
                run,
                job,
                process,
                reason,
            } => {
                let job = job.as_ref().map_or("(unknown job)", |j| j.as_str());
                write!(f, "CANCEL {job} {run} on {process}: {}", reason.name())
            }
        }
    }
}

impl fmt::Display for Start {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Start {
            run,
            job,
            fence,
            attempt,
            trigger,
            covers,
            // Not on the line: the ledger line that settles the cover names its cause
            // (`missed (backfill) caught up by r7`), and the START line stays as logs and
            // the stories have always read it.
            late: _,
            deadline,
            process,
        } = self;
        write!(
            f,
            "START {job} {run} {fence} on {process}: {} attempt {attempt}",
            trigger.name()
        )?;
        if let Some(c) = covers {
            write!(f, " covering {c}")?;
        }
        write!(f, ", deadline {deadline}")
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Record {
                job,
                entry: Entry::Ledger(e),
                ..
            } => {
                write!(
                    f,
                    "LEDGER {job} {}: {}",
                    Covers {
                        from: e.from,
                        to: e.to,
                        count: e.count
                    },
                    e.kind
                )
            }
            Record {
                job,
                entry: Entry::History(h),
                ..
            } => write!(f, "history {job}: {h}"),
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Alert(a) => write!(f, "ALERT {}: {}", a.job, a.kind),
            Notice::ClockGap {
                process, kind, by, ..
            } => match kind {
                ClockGapKind::HeldBehind => write!(
                    f,
                    "CLOCK {process}: held_behind, {by} behind the store's clock (over clock_jump): held to the store's time"
                ),
                ClockGapKind::HeldAhead => write!(
                    f,
                    "CLOCK {process}: held_ahead, {by} ahead of the store's clock (over clock_jump): held to the store's time"
                ),
                ClockGapKind::Released => write!(
                    f,
                    "CLOCK {process}: released, no one contradicted it for two ticks: its clock is taken as right"
                ),
                ClockGapKind::ReleasedBehind => write!(
                    f,
                    "CLOCK {process}: released_behind, no one contradicted it for two ticks: its clock is taken as right, {by} behind the store's (no due time runs again)"
                ),
                _ => write!(f, "CLOCK {process}: {} by {by}", kind.name()),
            },
            Notice::Owner {
                process,
                fence,
                until,
                from,
            } => {
                write!(f, "OWNER {process} {fence} until {until}")?;
                match from {
                    Some(p) => write!(f, " (the lease of {p} lapsed)"),
                    None => f.write_str(" (the lease was free)"),
                }
            }
            Notice::OwnerReleased { process, fence } => {
                write!(f, "OWNER released by {process} {fence} (draining)")
            }
            Notice::Drained { process } => write!(f, "DRAINED {process}: no run left"),
        }
    }
}
