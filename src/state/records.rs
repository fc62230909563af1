//! A job's record and the pieces it is made of: what is owed, the open run and the
//! lane it holds, a retry's wait, a pause, the latest run's outcome, a one-shot's end and a
//! definition held for confirmation. A job's phase (`Activity`) is `activity.rs`.

use serde::{Deserialize, Serialize};

use crate::effect::{Covers, Incident, MissCause, PausedBy, Trigger};
use crate::event::{Fence, ProcessId, RunId};
use crate::job::{Digest, JobDef};
use crate::lanes::LaneEntry;
use crate::schedule::Schedule;
use crate::time::{Duration, Timestamp};

use super::Activity;

/// Due times found but not yet run: owed catch-ups and buffered overlaps, oldest first. A
/// segment is a contiguous run of due times of one schedule: `schedule` is the schedule
/// they came from when the job's definition has changed since (`None`: the current one),
/// so walking a segment never mixes two schedules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Owed {
    pub(crate) from: Timestamp,
    pub(crate) to: Timestamp,
    pub(crate) count: u64,
    pub(crate) cause: MissCause,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schedule: Option<Box<Schedule>>,
}

impl Owed {
    /// Whether it starts and ends on due times of `schedule` and counts exactly the due
    /// times between: what walking it in batches and merging it rely on.
    pub(crate) fn holds_exactly(&self, schedule: &Schedule) -> bool {
        const MS: Duration = Duration::from_millis(1);
        let before = self.from.saturating_sub(MS);
        let on_due = |t: Timestamp| before == t || schedule.is_due(t);
        let counted = schedule.count_in(before, self.to) + u64::from(before == self.from);
        on_due(self.from) && on_due(self.to) && counted == self.count
    }

    /// Whether `next` may join this segment: both of one schedule (`current` when
    /// untagged), `next` starting on the due time after this one's last, each holding
    /// exactly what it says (an untagged segment always does; a tagged one is checked, as
    /// a cover handed back may carry due times of a schedule since replaced), and both
    /// backfills or neither (`skip_owed` keeps a person's backfill whole).
    pub(crate) fn joins(&self, next: &Owed, current: &Schedule) -> bool {
        if self.schedule != next.schedule
            || (self.cause == MissCause::Backfill) != (next.cause == MissCause::Backfill)
        {
            return false;
        }
        let s = self.schedule.as_deref().unwrap_or(current);
        s.next_after(self.to) == Some(next.from)
            && (self.schedule.is_none() || (self.holds_exactly(s) && next.holds_exactly(s)))
    }

    /// Takes `next` (which `joins` it) in: counts stay exact, the older cause stays.
    pub(crate) fn absorb(&mut self, next: Owed) {
        self.to = next.to;
        self.count += next.count;
    }
}

/// What a run covers, with the cause that made it late (`None`: on time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Cover {
    pub(crate) covers: Covers,
    pub(crate) late: Option<MissCause>,
}

/// A job's run in progress (or parked awaiting approval): what a host needs to carry it
/// out and report it is read through its accessors.
///
/// Stored with flat fields (`OpenRunIn`), as before its stage was a type: `cancel_sent`
/// and `parked`, which no run holds at once (reading refuses both).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "OpenRunIn")]
pub struct OpenRun {
    pub(crate) id: RunId,
    pub(crate) fence: Fence,
    pub(crate) holder: ProcessId,
    pub(crate) lease_until: Timestamp,
    pub(crate) started: Timestamp,
    pub(crate) deadline: Timestamp,
    pub(crate) attempt: u32,
    pub(crate) trigger: Trigger,
    pub(crate) cover: Option<Cover>,
    pub(crate) stage: RunStage,
    pub(crate) stall_alerted: bool,
    /// The lane it started in, once its job's `concurrency_key` has changed while it was
    /// open: it still runs what it started as, on what that key guards, so it counts there
    /// until it ends (`JobRecord::run_key`). Absent: its job's key (format 8).
    pub(crate) lane: Option<RunLane>,
}

/// Where an open run stands with its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunStage {
    /// Its process carries it out; `cancel_sent`: when `Cancel { timeout }` went out.
    Running { cancel_sent: Option<Timestamp> },
    /// Parked awaiting approval until `until`: its process is done with it (no lease, no
    /// deadline, no stall, no cancel), but it keeps the job occupied and its cover
    /// unsettled.
    Parked { until: Timestamp },
}

/// The stored form of `OpenRun`, field for field as written before its stage was a type.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(
        rename = "OpenRun",
        description = "A job's run in progress (or parked awaiting approval): what a host needs to carry it\nout and report it is read through its accessors."
    )
)]
pub(crate) struct OpenRunIn {
    id: RunId,
    fence: Fence,
    holder: ProcessId,
    lease_until: Timestamp,
    started: Timestamp,
    deadline: Timestamp,
    attempt: u32,
    trigger: Trigger,
    cover: Option<Cover>,
    /// When `Cancel { timeout }` went out.
    cancel_sent: Option<Timestamp>,
    stall_alerted: bool,
    /// Parked awaiting approval until then: its process is done with it (no lease, no
    /// deadline, no stall), but it keeps the job occupied and its cover unsettled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parked: Option<Timestamp>,
    /// The lane it started in, once its job's `concurrency_key` has changed while it was
    /// open: it still runs what it started as, on what that key guards, so it counts there
    /// until it ends (`JobRecord::run_key`). Absent: its job's key (format 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lane: Option<RunLane>,
}

/// `OpenRunIn` borrowed from a run: what `Serialize for OpenRun` writes.
#[derive(Serialize)]
struct OpenRunOut<'a> {
    id: RunId,
    fence: Fence,
    holder: ProcessId,
    lease_until: Timestamp,
    started: Timestamp,
    deadline: Timestamp,
    attempt: u32,
    trigger: Trigger,
    cover: &'a Option<Cover>,
    cancel_sent: Option<Timestamp>,
    stall_alerted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parked: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: &'a Option<RunLane>,
}

impl Serialize for OpenRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        OpenRunOut {
            id: self.id,
            fence: self.fence,
            holder: self.holder,
            lease_until: self.lease_until,
            started: self.started,
            deadline: self.deadline,
            attempt: self.attempt,
            trigger: self.trigger,
            cover: &self.cover,
            cancel_sent: self.cancel_sent(),
            stall_alerted: self.stall_alerted,
            parked: self.parked(),
            lane: &self.lane,
        }
        .serialize(s)
    }
}

/// A stored run both parked and with a cancel sent (parking ends the process's part, so
/// no cancel can be pending for it).
#[derive(Debug)]
pub(crate) struct ParkedWithCancel;

impl std::fmt::Display for ParkedWithCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "an open run is parked and has a cancel sent (a parked run's process is done with \
             it: it has `parked` or `cancel_sent`, never both)",
        )
    }
}

impl TryFrom<OpenRunIn> for OpenRun {
    type Error = ParkedWithCancel;
    fn try_from(r: OpenRunIn) -> Result<OpenRun, ParkedWithCancel> {
        let stage = match (r.parked, r.cancel_sent) {
            (Some(_), Some(_)) => return Err(ParkedWithCancel),
            (Some(until), None) => RunStage::Parked { until },
            (None, cancel_sent) => RunStage::Running { cancel_sent },
        };
        Ok(OpenRun {
            id: r.id,
            fence: r.fence,
            holder: r.holder,
            lease_until: r.lease_until,
            started: r.started,
            deadline: r.deadline,
            attempt: r.attempt,
            trigger: r.trigger,
            cover: r.cover,
            stage,
            stall_alerted: r.stall_alerted,
            lane: r.lane,
        })
    }
}

/// The lane of a run whose job moved to another concurrency key while it was open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunLane {
    /// It started under this key.
    Key(String),
    /// It started without a key.
    NoKey,
}

impl RunLane {
    /// The key it names, if any.
    pub(crate) fn key(&self) -> Option<&str> {
        match self {
            RunLane::Key(k) => Some(k),
            RunLane::NoKey => None,
        }
    }

    /// The lane a run that started under `key` keeps, if that is not `now`, its job's
    /// key after a change: `None` once the job is back where the run started.
    pub(crate) fn kept(started: Option<&str>, now: Option<&str>) -> Option<RunLane> {
        (started != now).then(|| started.map_or(RunLane::NoKey, |k| RunLane::Key(k.to_string())))
    }
}

/// A failed run's due times waiting for their next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct RetryWait {
    pub(crate) at: Timestamp,
    /// The attempt number the retry will be.
    pub(crate) attempt: u32,
    pub(crate) trigger: Trigger,
    pub(crate) cover: Cover,
}

/// Why and since when a job is paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pause {
    /// Who paused it.
    pub by: PausedBy,
    /// What they said.
    pub note: String,
    /// When.
    pub since: Timestamp,
}

/// How the job's latest run ended, for views.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LastOutcome {
    /// Settled done.
    Ok,
    /// Settled done, having found nothing to do.
    Skipped,
    /// Failed; a retry may follow.
    Failed,
    /// Stopped at its deadline; a retry may follow.
    TimedOut,
    /// Failed with no retry left.
    FailedOut,
    /// Its lease lapsed with no result.
    Lost,
    /// Parked awaiting approval and not approved in time.
    ApprovalExpired,
}

/// The job's latest run and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LastRun {
    /// The run.
    pub run: RunId,
    /// When it ended.
    pub at: Timestamp,
    /// How it ended.
    pub outcome: LastOutcome,
}

/// How a one-shot (`at`) job's instant ended; the job stays, idle, until it is removed or
/// given a new schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum OneShotEnd {
    /// A run settled the instant (done, failed out, lost or approval expired).
    Completed {
        /// The run that settled it.
        run: RunId,
        /// When it was settled.
        at: Timestamp,
    },
    /// The instant was recorded missed without a run.
    Expired {
        /// Why it was missed.
        cause: MissCause,
        /// When it was recorded missed.
        at: Timestamp,
    },
}

/// A changed definition held for a person's `Confirm`, with its digest. The digest
/// (SHA-256 over every field, `JobDef::digest`: some 30,000 instructions) is computed once,
/// when the definition is held or loaded, because every view of the job reports it and a
/// confirmation is compared with it. Stored as the bare definition: the digest is derived,
/// never read from a store.
#[derive(Debug, Clone)]
pub struct HeldDef {
    def: JobDef,
    digest: Digest,
}

impl HeldDef {
    pub(crate) fn new(def: JobDef) -> HeldDef {
        let digest = def.digest();
        HeldDef { def, digest }
    }

    /// The held definition.
    pub fn def(&self) -> &JobDef {
        &self.def
    }

    /// Its digest, what a person confirms (`JobDef::digest`).
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    pub(crate) fn into_def(self) -> JobDef {
        self.def
    }
}

impl PartialEq for HeldDef {
    fn eq(&self, other: &Self) -> bool {
        self.def == other.def
    }
}

impl Eq for HeldDef {}

impl Serialize for HeldDef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.def.serialize(s)
    }
}

impl<'de> Deserialize<'de> for HeldDef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        JobDef::deserialize(d).map(HeldDef::new)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Most owed segments a job keeps; beyond it two that follow one another merge (counts
/// stay exact, the newer cause is folded into the older one), and only a line of disjoint
/// debts gives up its oldest (see `owe`).
pub(crate) const MAX_OWED_SEGMENTS: usize = 32;

/// Segments of a `required` job's owed line its backfills and schedule changes leave
/// free, for the debts no command can refuse and `required` never drops: the schedule's
/// own due times found late or passed while paused (one segment: while anything is owed
/// nothing starts on time, so they follow one another, unless the catch-up window let
/// some go between them, and then the older ones are past the window and give way:
/// `JobRecord::owe_out_of_turn`) and a retry's cover a pause hands back (one: a run's cover is
/// handed back only where the run took it from the line, or when the line was empty as it
/// started on time).
pub(crate) const REQUIRED_RESERVE: usize = 2;

/// The most due times one `Backfill` may ask for: a bound on the work one event can make.
pub const MAX_BACKFILL: u64 = 100_000;

/// One job in the state: its definition, its frontier, what it is doing and what it has
/// alerted. Read-only outside the core (`State::record`, `State::records`): only `step`
/// changes a record, which keeps the cached indexes true; a store that keeps jobs apart
/// serializes records as they are and hands them back to `State::from_parts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobRecord {
    pub(crate) def: JobDef,
    /// Every due time at or before `frontier` has been looked at: it is in the ledger, or
    /// covered by the open run or the retry, or owed. Only moves forward.
    pub(crate) frontier: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) activity: Option<Box<Activity>>,
    /// How the latest run ended. Kept beside the definition, not in `activity`, so a job
    /// that has run and is idle again carries no activity box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last: Option<LastRun>,
    /// Failed runs since the last success (for `pause_after_failures`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) failures_in_a_row: u32,
    /// The incidents this job has alerted (`AlertKind::incident`, in the order told) and
    /// not yet seen end: an alert of one of these kinds is held back until a success or a
    /// person's resume clears them, so a job lost or stalled again and again tells it once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) incidents: Vec<Incident>,
    /// When the job last alerted, kept only for a job with an `alert_throttle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_alert: Option<Timestamp>,
    /// A one-shot whose instant is settled: kept so views and a re-sent identical
    /// definition see it done rather than silently idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<OneShotEnd>,
    /// The instant from which the job's ledger accounts its current schedule's due times
    /// (its definition, moved back by each backfill): a backfill must end at or before it,
    /// so no due time is run twice. `None` for a job from an older state: its accounted
    /// start is unknown, so backfills are refused until it is redefined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) accounted_from: Option<Timestamp>,
    /// Where the dead-man's switch counts from (`JobDef::expect_success_within`): the
    /// latest success, or when the switch was first set. Kept only while it is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) watched_since: Option<Timestamp>,
    /// What a job with `after` has heard of its upstreams' due times (`heard.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) heard: Option<Box<crate::state::Heard>>,
    /// The schedules its upstreams have had while it waited for them (`heard.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upstream_schedules: Option<Box<crate::state::UpstreamSchedules>>,
    /// `def.schedule.next_after(frontier)`, cached.
    #[serde(skip)]
    pub(crate) next_due: Option<Timestamp>,
    /// This job's key in the wake index.
    #[serde(skip)]
    pub(crate) wake: Option<Timestamp>,
    /// What this job adds to the concurrency indexes (`lanes.rs`).
    #[serde(skip)]
    pub(crate) lane: Option<Box<LaneEntry>>,
}

impl JobRecord {
    pub(crate) fn new(def: JobDef, from: Timestamp) -> JobRecord {
        let next_due = def.schedule.next_after(from);
        JobRecord {
            watched_since: def.expect_success_within.map(|_| from),
            def,
            frontier: from,
            activity: None,
            last: None,
            failures_in_a_row: 0,
            incidents: Vec::new(),
            last_alert: None,
            ended: None,
            accounted_from: None,
            heard: None,
            upstream_schedules: None,
            next_due,
            wake: None,
            lane: None,
        }
    }

    /// A new job held for confirmation: nothing runs or is accounted until `Confirm`.
    pub fn is_unconfirmed(&self) -> bool {
        self.act().is_some_and(Activity::is_unconfirmed)
    }

    pub(crate) fn act(&self) -> Option<&Activity> {
        self.activity.as_deref()
    }

    pub(crate) fn act_mut(&mut self) -> &mut Activity {
        self.activity.get_or_insert_with(Default::default)
    }

    /// Its open run (going, or parked awaiting approval).
    pub fn run(&self) -> Option<&OpenRun> {
        self.act().and_then(Activity::run)
    }

    /// The process the job's open run occupies: none while the run is parked awaiting
    /// approval (its command ended), so a parked run counts for no process's cap, lane,
    /// drain or record. The one rule for all of them.
    pub fn run_holder(&self) -> Option<ProcessId> {
        self.run()
            .filter(|r| r.parked().is_none())
            .map(|r| r.holder)
    }

    /// The concurrency key its open run counts under: the one it started under
    /// (`OpenRun::lane`) when the job has moved since, else the job's.
    pub fn run_key(&self) -> Option<&str> {
        match self.run().and_then(|r| r.lane.as_ref()) {
            Some(lane) => lane.key(),
            None => self.def.concurrency_key.as_deref(),
        }
    }

    /// Why and since when it is paused, if it is.
    pub fn paused(&self) -> Option<&Pause> {
        self.act().and_then(|a| a.paused.as_ref())
    }

    /// The first due time not yet settled in the ledger (what views call the cursor is the
    /// instant before it).
    pub(crate) fn first_unsettled(&self) -> Option<Timestamp> {
        let a = self.act()?;
        let run = a.run().and_then(|r| r.cover).map(|c| c.covers.from);
        let retry = a.retry().map(|r| r.cover.covers.from);
        let owed = a.pending.front().map(|o| o.from);
        [run, retry, owed].into_iter().flatten().min()
    }

    /// Whether `instant` lies in the span this job's current schedule accounts: after
    /// `accounted_from` (its definition, moved back by each backfill). An instant at or
    /// before it was never due under this schedule, whatever an earlier schedule's
    /// entries covering it say. A job from a state older than `accounted_from` accounts
    /// everything (its start is unknown).
    pub(crate) fn accounts(&self, instant: Timestamp) -> bool {
        self.accounted_from.is_none_or(|from| instant > from)
    }

    /// Whether a one-shot's `instant` is looked at and nothing still covers it: a run, a
    /// retry or an owed segment of this schedule holding it. (An owed segment of an older
    /// schedule, kept from before a redefinition, is not about the instant: it was owed
    /// before the one-shot existed.) Only then may the one-shot end.
    pub(crate) fn one_shot_settled(&self, instant: Timestamp) -> bool {
        let holds = |from: Timestamp, to: Timestamp| from <= instant && instant <= to;
        let covered = self.act().is_some_and(|a| {
            let run = a.run().and_then(|r| r.cover).map(|c| c.covers);
            let retry = a.retry().map(|r| r.cover.covers);
            run.into_iter().chain(retry).any(|c| holds(c.from, c.to))
                || a.pending
                    .iter()
                    .any(|o| o.schedule.is_none() && holds(o.from, o.to))
        });
        self.frontier >= instant && !covered
    }

    /// Drops an empty activity box so idle jobs stay small.
    pub(crate) fn tidy(&mut self) {
        if self.activity.as_deref().is_some_and(Activity::is_empty) {
            self.activity = None;
        }
    }
}
