//! The core's whole state: jobs with their cursors and open runs, processes, counters, and
//! the indexes derived from them (rebuilt on load, never serialized).
//!
//! Jobs live in a map keyed by a creation sequence number, so every iteration and every tie
//! in the wake index is ordered by something that survives a serde round trip.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::effect::{Covers, Incident, MissCause, PausedBy, Trigger, WaitReason};
use crate::event::{Actor, Fence, ProcessId, RunId};
use crate::inconsistency::{ConfigError, Inconsistency};
use crate::job::{JobDef, JobName, REQUIRED_BATCH};
use crate::jobs::Jobs;
use crate::lanes::{LaneEntry, Lanes};
use crate::schedule::Schedule;
use crate::time::{Duration, Timestamp};

mod access;

/// The state format written by this build; a state from a newer build is refused
/// (`LoadError::NewerFormat`). Every earlier format loads unchanged. What each format added
/// is in `docs/state-format.md`; the fixtures of each are `tests/fixtures/state-v*.json`.
pub const FORMAT_VERSION: u32 = 9;

/// Timing the whole scheduler shares. Defaults: a 30 s tick; leases, lateness grace and the
/// wait after a timeout's `Cancel` of two ticks each; 20 manual runs per job per hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Config {
    /// How often each process ticks; the unit other timings default to.
    pub tick: Duration,
    /// How long a run's lease lasts without renewal; a process renews the leases it holds at
    /// every tick.
    pub lease_ttl: Duration,
    /// A due time started within this after it is on time; later, the missed rule applies.
    pub grace: Duration,
    /// After `Cancel { timeout }`, how long to wait for the result before settling the run
    /// as timed out without it.
    pub cancel_grace: Duration,
    /// Most manual runs per job in any hour.
    pub manual_per_hour: u32,
    /// A wall clock that moves this much more than the monotonic clock between two events
    /// of one process has jumped.
    pub clock_jump: Duration,
    /// Most runs one process may have open at once (unset: no cap). A due run that would
    /// go over waits (`concurrency_cap`) until a run of that process ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs_per_process: Option<u32>,
    /// Who may claim: any live process (`shared`), or only the holder of the owner lease
    /// (`single_owner`). Absent from the stored form when shared, so states written before
    /// it existed load and re-serialize unchanged.
    #[serde(default, skip_serializing_if = "Coordination::is_shared")]
    pub coordination: Coordination,
}

/// How the processes sharing a store divide the work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Coordination {
    /// Every live process that is not draining claims what is due.
    #[default]
    Shared,
    /// One process at a time holds the owner lease (`OwnerLease`) and alone visits jobs and
    /// claims; the others stand by, renewing only the runs they hold, and take the lease
    /// over when it lapses. For hosts whose runs must not interleave across machines, or
    /// that want one place to read the schedule's decisions from.
    SingleOwner,
}

impl Coordination {
    /// Whether it is `Shared` (the stored form leaves the default out).
    pub fn is_shared(&self) -> bool {
        *self == Coordination::Shared
    }
}

/// The owner lease of `single_owner` coordination. Each taking draws a fence from the
/// state's fence counter, so a later owner always holds a higher fence than any earlier
/// one; renewing keeps the fence and only ever moves `until` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OwnerLease {
    /// The process holding it.
    pub holder: ProcessId,
    /// Its fence, drawn when it was taken.
    pub fence: Fence,
    /// The lease lapses for events whose wall time is past this.
    pub until: Timestamp,
}

impl Default for Config {
    fn default() -> Self {
        Config::with_tick(Duration::from_secs(30))
    }
}

/// Bounds on a stored config. A tick looks at every due time within the grace one by one
/// (each is started or given to the overlap policy, and a skipped one is a ledger line), so
/// the grace over the densest schedule (one due time a second, or an `every` of one tick)
/// bounds a tick's work: at most a day of seconds.
pub const MIN_TICK: Duration = Duration::from_secs(1);
/// The shortest lease and grace `Config::with_tick` makes, whatever the tick: ten seconds,
/// the time a host's turn may take on a busy store before it renews its leases (see
/// `Config::with_tick`). A lease also bounds how long a crashed holder's run waits to be
/// taken over (L3), so it stays short.
pub const MIN_LEASE: Duration = Duration::from_secs(10);
/// The longest grace accepted (see `MIN_TICK`).
pub const MAX_GRACE: Duration = Duration::from_days(1);

impl Config {
    /// What a stored state's config must satisfy to load: a tick of at least `MIN_TICK`, a
    /// grace of at most `MAX_GRACE`.
    ///
    /// # Errors
    ///
    /// The first bound broken, as a `ConfigError`.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.tick < MIN_TICK {
            return Err(ConfigError::TickTooShort { tick: self.tick });
        }
        if self.grace > MAX_GRACE {
            return Err(ConfigError::GraceTooLong { grace: self.grace });
        }
        if self.max_runs_per_process == Some(0) {
            return Err(ConfigError::NoRunsPerProcess);
        }
        Ok(())
    }

    /// The defaults scaled to a tick: lease and grace of two ticks each but never under
    /// `MIN_LEASE`, a cancel grace of two ticks, 20 manual runs an hour, a clock jump of a
    /// minute, shared coordination.
    ///
    /// The floor is for short ticks: a host whose turn takes longer than the tick (a busy
    /// store, a machine at full load) must start its runs late, not lose them. Two ticks of
    /// one second would lapse a lease during a three-second turn (the run recorded lost, a
    /// job not safe to repeat paused) and make its due times late, recorded missed.
    pub fn with_tick(tick: Duration) -> Config {
        let two = tick.saturating_mul(2);
        let lease = two.max(MIN_LEASE);
        Config {
            tick,
            lease_ttl: lease,
            grace: lease,
            cancel_grace: two,
            manual_per_hour: 20,
            clock_jump: Duration::from_secs(60),
            coordination: Coordination::Shared,
            max_runs_per_process: None,
        }
    }
}

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
        let on_due =
            |t: Timestamp| before == t || schedule.next_after(t.saturating_sub(MS)) == Some(t);
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// When `Cancel { timeout }` went out.
    pub(crate) cancel_sent: Option<Timestamp>,
    pub(crate) stall_alerted: bool,
    /// Parked awaiting approval until then: its process is done with it (no lease, no
    /// deadline, no stall), but it keeps the job occupied and its cover unsettled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parked: Option<Timestamp>,
    /// The lane it started in, once its job's `concurrency_key` has changed while it was
    /// open: it still runs what it started as, on what that key guards, so it counts there
    /// until it ends (`JobRecord::run_key`). Absent: its job's key (format 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lane: Option<RunLane>,
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
    digest: String,
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
    pub fn digest(&self) -> &str {
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

/// Everything about a job beyond its definition and cursor; absent for a job that has
/// never needed any of it, which keeps idle jobs small.
///
/// Opaque outside the crate, and named only through the unstable `internals` feature.
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Activity {
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub(crate) pending: VecDeque<Owed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run: Option<OpenRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retry: Option<RetryWait>,
    /// A queued manual run and who asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) manual: Option<Actor>,
    /// When manual runs were asked for in the last hour (for the hourly cap).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub(crate) manual_recent: VecDeque<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paused: Option<Pause>,
    /// Missed due times per hour over the last day: `(hour start, count)`.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub(crate) missed_recent: VecDeque<(Timestamp, u64)>,
    /// Until when a quota hold keeps the job from starting anything (see
    /// `JobDef::wait_budget`); cleared by the first visit at or after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) quota_hold: Option<Timestamp>,
    /// Set while the job could start but a lane or the cap holds it back; `since` orders
    /// the waiters and gives the wait's length when it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waiting: Option<Waiting>,
    /// A changed definition waiting for a person's `Confirm` of its digest; `def` keeps
    /// running meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) held: Option<Box<HeldDef>>,
    /// A new job whose definition was never confirmed: no schedule runs, nothing is
    /// accounted, until `Confirm` (the definition is `held` too).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) unconfirmed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A job waiting for room (see `Activity::waiting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Waiting {
    pub(crate) since: Timestamp,
    pub(crate) reason: WaitReason,
}

impl Activity {
    /// Owes a segment out of turn (a backfill, a run's cover handed back) where it belongs
    /// in the oldest-first line: before the first segment that starts after it ends. A
    /// line over its bound then merges two segments that follow one another
    /// (`make_room`), the new one with its neighbours included: in place, it keeps apart
    /// the pair around it. False when nothing merged and the line is over its bound
    /// (`State::owe_out_of_turn` then makes room as `owe` does).
    pub(crate) fn owe_in_order(&mut self, owed: Owed, current: &Schedule) -> bool {
        let at = self
            .pending
            .iter()
            .position(|o| o.from > owed.to)
            .unwrap_or(self.pending.len());
        self.pending.insert(at, owed);
        self.pending.len() <= MAX_OWED_SEGMENTS || self.make_room(current, None)
    }

    /// Merges the newest two segments that follow one another (`Owed::joins`), keeping
    /// every count exact; false when no two do. Causes alternate (overlap, downtime,
    /// clock) far more often than debts are disjoint, and a schedule change tags what is
    /// owed without making it disjoint, so this nearly always finds a pair.
    ///
    /// `apart`: the range of a segment about to go in out of turn (a backfill, a cover
    /// handed back). Two due times of one schedule that follow one another may have
    /// another schedule's due times between them; a pair around `apart` is not merged,
    /// or the merged segment would straddle it and the line would fall out of order.
    pub(crate) fn make_room(
        &mut self,
        current: &Schedule,
        apart: Option<(Timestamp, Timestamp)>,
    ) -> bool {
        let pending = &mut self.pending;
        let around = |i: usize| {
            apart.is_some_and(|(from, to)| pending[i - 1].to < from && to < pending[i].from)
        };
        let pair = (1..pending.len())
            .rev()
            .find(|&i| !around(i) && pending[i - 1].joins(&pending[i], current));
        let Some(i) = pair else { return false };
        let newer = pending.remove(i).expect("in range");
        pending[i - 1].absorb(newer);
        true
    }

    /// Whether it equals `Activity::default()` (every field empty), without building one
    /// to compare with: `tidy` asks after every visit and every settlement.
    pub(crate) fn is_empty(&self) -> bool {
        // Named field by field, so a new field cannot be left out.
        let Activity {
            pending,
            run,
            retry,
            manual,
            manual_recent,
            paused,
            missed_recent,
            quota_hold,
            waiting,
            held,
            unconfirmed,
        } = self;
        pending.is_empty()
            && run.is_none()
            && retry.is_none()
            && manual.is_none()
            && manual_recent.is_empty()
            && paused.is_none()
            && missed_recent.is_empty()
            && quota_hold.is_none()
            && waiting.is_none()
            && held.is_none()
            && !*unconfirmed
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
/// `State::owe_out_of_turn`) and a retry's cover a pause hands back (one: a run's cover is
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
            next_due,
            wake: None,
            lane: None,
        }
    }

    /// A new job held for confirmation: nothing runs or is accounted until `Confirm`.
    pub fn is_unconfirmed(&self) -> bool {
        self.act().is_some_and(|a| a.unconfirmed)
    }

    pub(crate) fn act(&self) -> Option<&Activity> {
        self.activity.as_deref()
    }

    pub(crate) fn act_mut(&mut self) -> &mut Activity {
        self.activity.get_or_insert_with(Default::default)
    }

    /// Its open run (going, or parked awaiting approval).
    pub fn run(&self) -> Option<&OpenRun> {
        self.act().and_then(|a| a.run.as_ref())
    }

    /// The process the job's open run occupies: none while the run is parked awaiting
    /// approval (its command ended), so a parked run counts for no process's cap, lane,
    /// drain or record. The one rule for all of them.
    pub fn run_holder(&self) -> Option<ProcessId> {
        self.run().filter(|r| r.parked.is_none()).map(|r| r.holder)
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
        let run = a.run.as_ref().and_then(|r| r.cover).map(|c| c.covers.from);
        let retry = a.retry.map(|r| r.cover.covers.from);
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
            let run = a.run.as_ref().and_then(|r| r.cover).map(|c| c.covers);
            let retry = a.retry.map(|r| r.cover.covers);
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

/// What the state knows of one process (one incarnation of a host): its last clock
/// readings, whether it drains, whether its clock is held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProcessRec {
    pub(crate) last_wall: Timestamp,
    pub(crate) last_mono: Timestamp,
    #[serde(default)]
    pub(crate) draining: bool,
    /// The clock that counts sleep, when the host reads one (`Now::boot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_boot: Option<Timestamp>,
    /// The store's time at this process's last event (`step/clock.rs`): its wall clock
    /// when that was sane, else what the store vouched for then. Absent in states written
    /// before format 5 (read as `last_wall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base: Option<Timestamp>,
    /// Set while its wall clock is held ahead of the store's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hold: Option<ClockHold>,
}

/// A process whose wall clock reads further from the store's than `clock_jump`, ahead or
/// behind (see `step/clock.rs`): it works on the store's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct ClockHold {
    /// Its monotonic reading when it last found itself alone (no process with a sane clock
    /// has contradicted it since). Two ticks of that release it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) alone_since: Option<Timestamp>,
    /// How far its wall clock read from the store's at its last event, in ms (negative:
    /// behind): what a process contradicting it differs from, and how its wakes map to its
    /// own clock.
    pub(crate) lead: i64,
    /// A new incarnation held ahead before the store could measure it: it decides nothing
    /// until it is released or a process the store knows shows the store's clock is alive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) waiting: bool,
    /// The store has not heard from it for longer than a lease (`State::holder_silent`):
    /// it is most likely gone (a held incarnation that crashed), so it is left out of
    /// `State::holds`. No one contradicts it and no one wakes once a tick for it while it
    /// is silent (a dead incarnation held behind would otherwise make every process tick
    /// every tick for a day), and when it speaks again its solitude starts afresh: no one
    /// was looking while it was silent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dormant: bool,
    /// Its measure since its previous event could not be true and was bounded
    /// (`step/clock.rs`, `believed`: a monotonic clock read in a wrong unit): it is asked
    /// to wake once a tick (`State::next_wake_for`), so that its wall clock's advance is
    /// believed whole. Asleep to its next due time by the store's clock, half an hour, a
    /// host reading nanoseconds carried the store's clock by the bound only, its lead grew
    /// past `clock_jump` at every event (each a new jump: its solitude started again), and
    /// it stayed held for hours, the store's clock hours behind clocks that all agreed
    /// (light seeds 10313, 12205: J4).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) bounded: bool,
}

impl ProcessRec {
    /// A process first heard from at `now`.
    pub(crate) fn new(now: crate::event::Now) -> ProcessRec {
        ProcessRec {
            last_wall: now.wall,
            last_mono: now.mono,
            draining: false,
            last_boot: now.boot,
            base: None,
            hold: None,
        }
    }

    /// The store's time at its last event (see `base`).
    pub(crate) fn base(&self) -> Timestamp {
        self.base.unwrap_or(self.last_wall)
    }

    /// Whether its clock is held (ahead of the store's or behind it) now.
    pub(crate) fn held(&self) -> bool {
        self.hold.is_some()
    }

    /// Whether its clock is held ahead of the store's now.
    pub(crate) fn held_ahead(&self) -> bool {
        self.hold.is_some_and(|h| h.lead > 0)
    }

    /// Whether it is a new incarnation held before its time could be measured: it decides
    /// nothing yet.
    pub(crate) fn waiting(&self) -> bool {
        self.hold.is_some_and(|h| h.waiting)
    }
}

/// The serialized form: what a host stores. `Globals` and the jobs are the same data cut
/// in two, for a store that keeps each job apart (`State::from_parts`); this form keeps the
/// field order the format has always had.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct StateData {
    format: u32,
    config: Config,
    next_seq: u64,
    next_run: u64,
    next_fence: u64,
    jobs: Jobs,
    processes: BTreeMap<ProcessId, ProcessRec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<OwnerLease>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clock: Option<Timestamp>,
}

/// `StateData` borrowed from a state: what `Serialize for State` writes, field for field
/// as `StateData`. Written from borrows, a save costs the text alone; `into = "StateData"`
/// cloned the whole state first on every save (issue 48: 257 ms for 100,000 jobs from
/// Node, most of it the copy and its drop).
#[derive(Serialize)]
struct StateDataRef<'a> {
    format: u32,
    config: &'a Config,
    next_seq: u64,
    next_run: u64,
    next_fence: u64,
    jobs: &'a Jobs,
    processes: &'a BTreeMap<ProcessId, ProcessRec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: &'a Option<OwnerLease>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clock: &'a Option<Timestamp>,
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StateDataRef {
            format: FORMAT_VERSION,
            config: &self.config,
            next_seq: self.next_seq,
            next_run: self.next_run,
            next_fence: self.next_fence,
            jobs: &self.jobs,
            processes: &self.processes,
            owner: &self.owner,
            clock: &self.clock,
        }
        .serialize(s)
    }
}

/// Everything in the state but the jobs: the format version, the config, the counters and
/// the processes. A store that keeps jobs one per row keeps this beside them and writes it
/// with every step (it is small: the processes seen in the last day).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Globals {
    /// The state format the parts were written in; `FORMAT_VERSION` when taken from a state.
    pub(crate) format: u32,
    pub(crate) config: Config,
    /// The next job's sequence number; every job's is below it.
    pub(crate) next_seq: u64,
    pub(crate) next_run: u64,
    pub(crate) next_fence: u64,
    pub(crate) processes: BTreeMap<ProcessId, ProcessRec>,
    /// The owner lease (`single_owner` coordination only); absent when none is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<OwnerLease>,
    /// The store's clock (`State::clock`); absent before any process has spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clock: Option<Timestamp>,
}

/// Why a stored state could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Written by a newer build, in a format this one does not know.
    NewerFormat {
        /// The stored state's format.
        found: u32,
        /// The newest this build reads (`FORMAT_VERSION`).
        supported: u32,
    },
    /// The state breaks an invariant: `what` says which.
    Inconsistent {
        /// The invariant broken.
        what: Inconsistency,
    },
}

impl From<Inconsistency> for LoadError {
    fn from(what: Inconsistency) -> LoadError {
        LoadError::Inconsistent { what }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NewerFormat { found, supported } => write!(
                f,
                "the state was written in format {found}, newer than this build's {supported}; upgrade duetime"
            ),
            LoadError::Inconsistent { what } => write!(f, "the state is inconsistent: {what}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// The scheduler's state. Mutated only by `step`; everything else reads.
#[derive(Clone, Deserialize)]
#[serde(try_from = "StateData")]
pub struct State {
    pub(crate) config: Config,
    pub(crate) next_seq: u64,
    pub(crate) next_run: u64,
    pub(crate) next_fence: u64,
    pub(crate) jobs: Jobs,
    pub(crate) processes: BTreeMap<ProcessId, ProcessRec>,
    pub(crate) owner: Option<OwnerLease>,
    /// The store's clock: the latest time it can vouch for, carried forward by what the
    /// processes measure between their events, never by a wall clock's jump
    /// (`step/clock.rs`). `None` until a process has spoken.
    pub(crate) clock: Option<Timestamp>,
    // Derived, rebuilt on load.
    pub(crate) by_name: BTreeMap<JobName, u64>,
    pub(crate) wake: BTreeSet<(Timestamp, u64)>,
    pub(crate) runs: BTreeMap<RunId, u64>,
    pub(crate) lanes: Lanes,
    /// How many processes' clocks are held ahead, and how many of those wait
    /// (`step/clock.rs`): derived, so that the common case of none costs no pass over the
    /// processes.
    pub(crate) holds: HoldCounts,
}

/// See `State::holds`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HoldCounts {
    /// The processes held ahead (the ones a contradiction concerns), in process order, and
    /// how many of them wait. Dormant holds (`ClockHold::dormant`) are left out of all three.
    pub ahead: Vec<ProcessId>,
    pub waiting: usize,
    /// The processes held behind, in process order: a sane clock contradicts them too.
    pub behind: Vec<ProcessId>,
}

impl HoldCounts {
    pub(crate) fn of(processes: &BTreeMap<ProcessId, ProcessRec>) -> HoldCounts {
        let mut c = HoldCounts::default();
        let present = |rec: &ProcessRec| rec.hold.is_some_and(|h| !h.dormant);
        for (&p, rec) in processes.iter().filter(|(_, r)| present(r)) {
            if rec.held_ahead() {
                c.ahead.push(p);
                c.waiting += usize::from(rec.waiting());
            } else {
                c.behind.push(p);
            }
        }
        c
    }
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.next_seq == other.next_seq
            && self.next_run == other.next_run
            && self.next_fence == other.next_fence
            && self.jobs == other.jobs
            && self.processes == other.processes
            && self.owner == other.owner
            && self.clock == other.clock
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("jobs", &self.jobs.len())
            .field("next_run", &self.next_run)
            .field("next_fence", &self.next_fence)
            .finish()
    }
}

impl Default for State {
    fn default() -> Self {
        State::new(Config::default())
    }
}

impl TryFrom<StateData> for State {
    type Error = LoadError;
    fn try_from(d: StateData) -> Result<State, LoadError> {
        let globals = Globals {
            format: d.format,
            config: d.config,
            next_seq: d.next_seq,
            next_run: d.next_run,
            next_fence: d.next_fence,
            processes: d.processes,
            owner: d.owner,
            clock: d.clock,
        };
        State::assemble(globals, d.jobs)
    }
}

/// What the globals must satisfy on their own: a format this build reads, a sane config.
fn check_globals(g: &Globals) -> Result<(), LoadError> {
    if g.format > FORMAT_VERSION {
        return Err(LoadError::NewerFormat {
            found: g.format,
            supported: FORMAT_VERSION,
        });
    }
    g.config.check().map_err(Inconsistency::Config)?;
    check_owner(&g.config, g.owner, &g.processes, g.next_fence)?;
    Ok(())
}

/// The owner lease must belong to the coordination that has one, be held by a known
/// process that is not draining (a drain gives it up), and carry a fence the counter has
/// handed out.
fn check_owner(
    config: &Config,
    owner: Option<OwnerLease>,
    processes: &BTreeMap<ProcessId, ProcessRec>,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let Some(o) = owner else { return Ok(()) };
    if config.coordination != Coordination::SingleOwner {
        return Err(Inconsistency::OwnerUnderShared {
            holder: o.holder,
            fence: o.fence,
        });
    }
    if o.fence.0 >= next_fence {
        return Err(Inconsistency::OwnerFenceAhead { fence: o.fence });
    }
    match processes.get(&o.holder) {
        None => Err(Inconsistency::OwnerHolderUnknown { holder: o.holder }),
        Some(p) if p.draining => Err(Inconsistency::OwnerHolderDraining { holder: o.holder }),
        Some(_) => Ok(()),
    }
}

impl State {
    /// An empty state: no jobs, no processes; counters at their start.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Config, Duration, State};
    ///
    /// let state = State::new(Config::with_tick(Duration::from_secs(10)));
    /// assert_eq!(state.job_count(), 0);
    /// assert_eq!(state.next_wake(), None); // nothing is scheduled yet
    /// ```
    pub fn new(config: Config) -> State {
        State {
            config,
            next_seq: 0,
            next_run: 1,
            next_fence: 1,
            jobs: Jobs::default(),
            processes: BTreeMap::new(),
            owner: None,
            clock: None,
            by_name: BTreeMap::new(),
            wake: BTreeSet::new(),
            runs: BTreeMap::new(),
            lanes: Lanes::default(),
            holds: HoldCounts::default(),
        }
    }

    /// The config, fixed for a store's life.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The store's clock: the latest time it can vouch for, carried by what the processes
    /// measure between their events (`None` until a process has spoken). A host's view of
    /// "now" for its store, whatever one machine's wall clock says.
    pub fn clock(&self) -> Option<Timestamp> {
        self.clock
    }

    /// What the store keeps of process `id` (when it last heard from it, whether it
    /// drains, whether it waits for its clock), if the store has heard from it.
    pub fn process(&self, id: ProcessId) -> Option<&ProcessRec> {
        self.processes.get(&id)
    }

    /// How many jobs it holds.
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The oldest due time any job waits on (`JobRecord::waiting_since`): `now` less this,
    /// when positive, is how far the state is behind, which a state nobody steps shows by
    /// growing (a store's partition whose owner died). `None` when no job waits on one.
    pub fn oldest_waiting(&self) -> Option<Timestamp> {
        self.records().filter_map(|(_, r)| r.waiting_since()).min()
    }

    /// Builds a state from its parts, as a store that keeps jobs apart has them, with the
    /// same checks as loading the serialized form: a newer format is `NewerFormat`; a bad
    /// config, a sequence number given twice or beyond the counter, a name or an open run
    /// held twice, or a record that breaks an invariant is `Inconsistent`. Never panics.
    ///
    /// # Errors
    ///
    /// `LoadError::NewerFormat` or `LoadError::Inconsistent` (with the `Inconsistency`), as
    /// above.
    pub fn from_parts(
        globals: Globals,
        jobs: impl IntoIterator<Item = (u64, JobRecord)>,
    ) -> Result<State, LoadError> {
        let mut table = Jobs::default();
        for (seq, job) in jobs {
            if table.insert(seq, job).is_some() {
                return Err(Inconsistency::SequenceTwice { seq }.into());
            }
        }
        State::assemble(globals, table)
    }

    /// The shared path of `from_parts` and deserialization.
    fn assemble(globals: Globals, jobs: Jobs) -> Result<State, LoadError> {
        check_globals(&globals)?;
        let mut s = State {
            config: globals.config,
            next_seq: globals.next_seq,
            next_run: globals.next_run,
            next_fence: globals.next_fence,
            jobs,
            processes: globals.processes,
            owner: globals.owner,
            clock: globals.clock,
            by_name: BTreeMap::new(),
            wake: BTreeSet::new(),
            runs: BTreeMap::new(),
            lanes: Lanes::default(),
            holds: HoldCounts::default(),
        };
        s.holds = HoldCounts::of(&s.processes);
        s.rebuild_indexes()?;
        s.self_check()?;
        Ok(s)
    }

    /// Deserializes a stored state, keeping a refusal typed: the outer error is the
    /// format's own (bad syntax, an unknown name such as a miss cause or an incident, a
    /// missing field), the inner one a `LoadError` (a newer format, a broken invariant).
    /// `serde::Deserialize for State` does the same but folds a `LoadError` into the
    /// format's error as text.
    ///
    /// # Errors
    ///
    /// `Err(e)` when the input does not decode as a state; `Ok(Err(LoadError))` when it
    /// decodes but may not be loaded.
    pub fn load<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Result<State, LoadError>, D::Error> {
        let data = StateData::deserialize(d)?;
        Ok(State::try_from(data))
    }

    /// The state without its jobs (see `Globals`).
    pub fn globals(&self) -> Globals {
        Globals {
            format: FORMAT_VERSION,
            config: self.config,
            next_seq: self.next_seq,
            next_run: self.next_run,
            next_fence: self.next_fence,
            processes: self.processes.clone(),
            owner: self.owner,
            clock: self.clock,
        }
    }

    /// One job's record by sequence number (its name is `record.def.name`).
    pub fn record(&self, seq: u64) -> Option<&JobRecord> {
        self.jobs.get(&seq)
    }

    /// Every job's record with its sequence number, in sequence order.
    pub fn records(&self) -> impl Iterator<Item = (u64, &JobRecord)> {
        self.jobs.iter().map(|(&seq, job)| (seq, job))
    }

    /// The sequence number of the job with this name.
    pub fn seq_of_name(&self, name: &str) -> Option<u64> {
        self.seq_of(name)
    }

    /// Starts or stops noting which jobs change, for a store that writes back only those
    /// (`take_touched`). Off by default, so hosts that keep the whole state (the simulator,
    /// the benches) pay nothing; stopping forgets what was noted. Not part of the state's
    /// value: equality and the serialized form ignore it.
    pub fn track_changes(&mut self, on: bool) {
        self.jobs.track(on);
    }

    /// Whether it notes changed jobs (`track_changes`).
    pub fn tracks_changes(&self) -> bool {
        self.jobs.tracking()
    }

    /// The sequence numbers of the jobs whose record may have changed, been added or been
    /// removed since the last call (or since tracking started), ascending and without
    /// repeats; empty when not tracking. A superset: a job looked at for mutation and left
    /// as it was is included. What is not a job (config, counters, processes) is in
    /// `globals()`, which a store writes whole.
    pub fn take_touched(&mut self) -> Vec<u64> {
        self.jobs.take_touched()
    }

    /// Brings a loaded state up to date with a store another process wrote to: `globals`
    /// as the store now holds them, and for each job that changed there, its record
    /// (`None`: removed). Only those jobs and their index entries are touched, so a host
    /// that reloads what changed pays for what changed. Records put here are not reported
    /// by `take_touched` (they are what the store already holds).
    ///
    /// The counters may move backward, which is how a host puts back what an aborted
    /// transaction did (the changes then name every job that transaction touched, with its
    /// stored record or `None`).
    ///
    /// Refused with the state left as it was (a typed `LoadError`, never a panic): a newer
    /// format, a bad or changed config (the config is fixed for a store's life; a host that
    /// meets a changed one loads the whole state), counters behind a job left as it is, a
    /// sequence number given twice or beyond the counter, a name or open run that another
    /// job holds, a record that breaks an invariant.
    ///
    /// # Errors
    ///
    /// A `LoadError` as above; the state is then as it was.
    pub fn put_parts(
        &mut self,
        globals: Globals,
        changed: impl IntoIterator<Item = (u64, Option<JobRecord>)>,
    ) -> Result<(), LoadError> {
        check_globals(&globals)?;
        if globals.config != self.config {
            return Err(Inconsistency::ConfigChanged.into());
        }
        let mut changes: BTreeMap<u64, Option<JobRecord>> = BTreeMap::new();
        for (seq, job) in changed {
            if changes.insert(seq, job).is_some() {
                return Err(Inconsistency::SequenceTwice { seq }.into());
            }
        }
        // Check everything before changing anything, so a refusal leaves the state whole.
        let mut names: BTreeMap<&JobName, u64> = BTreeMap::new();
        let mut runs: BTreeMap<RunId, u64> = BTreeMap::new();
        for (&seq, job) in changes.iter().filter_map(|(s, j)| Some((s, j.as_ref()?))) {
            let name = &job.def.name;
            if seq >= globals.next_seq {
                return Err(Inconsistency::SequenceBeyondCounter {
                    job: name.clone(),
                    seq,
                }
                .into());
            }
            check_record(job, &globals.config, globals.next_run, globals.next_fence)?;
            check_owed_counts_of(job)?;
            let held_elsewhere = |by: Option<&u64>| by.is_some_and(|s| !changes.contains_key(s));
            if names.insert(name, seq).is_some() || held_elsewhere(self.by_name.get(name)) {
                return Err(Inconsistency::NameTwice { job: name.clone() }.into());
            }
            if let Some(run) = job.run() {
                if runs.insert(run.id, seq).is_some() || held_elsewhere(self.runs.get(&run.id)) {
                    return Err(Inconsistency::RunOpenTwice { run: run.id }.into());
                }
            }
        }
        // Counters move backward only when a host puts back what an aborted transaction
        // did: then every job left as it is must still be below them (O(jobs), but rare).
        if globals.next_seq < self.next_seq
            || globals.next_run < self.next_run
            || globals.next_fence < self.next_fence
        {
            for (&seq, job) in self.jobs.iter() {
                if changes.contains_key(&seq) {
                    continue;
                }
                let run_ahead = job
                    .run()
                    .is_some_and(|r| r.id.0 >= globals.next_run || r.fence.0 >= globals.next_fence);
                if seq >= globals.next_seq || run_ahead {
                    return Err(Inconsistency::CountersBehind {
                        job: job.def.name.clone(),
                    }
                    .into());
                }
            }
        }
        let tracking = self.jobs.suspend_tracking();
        self.next_seq = globals.next_seq;
        self.next_run = globals.next_run;
        self.next_fence = globals.next_fence;
        self.processes = globals.processes;
        self.holds = HoldCounts::of(&self.processes);
        self.owner = globals.owner;
        self.clock = globals.clock;
        for &seq in changes.keys() {
            if let Some(old) = self.jobs.remove(&seq) {
                self.by_name.remove(&old.def.name);
                if let Some(w) = old.wake {
                    self.wake.remove(&(w, seq));
                }
                if let Some(run) = old.run() {
                    self.runs.remove(&run.id);
                }
                self.unlane(seq, &old);
            }
        }
        for (seq, job) in changes {
            let Some(mut job) = job else { continue };
            job.next_due = job.def.schedule.next_after(job.frontier);
            job.wake = None;
            job.lane = None;
            self.by_name.insert(job.def.name.clone(), seq);
            if let Some(run) = job.run() {
                self.runs.insert(run.id, seq);
            }
            self.jobs.insert(seq, job);
            self.reindex(seq);
        }
        self.jobs.resume_tracking(tracking);
        debug_assert_eq!(self.check_invariants(), Ok(()));
        Ok(())
    }

    fn rebuild_indexes(&mut self) -> Result<(), LoadError> {
        let mut seqs = Vec::with_capacity(self.jobs.len());
        for (&seq, job) in self.jobs.iter_mut() {
            // Parts may come from a live state's records, whose wake times would make
            // `reindex` skip them; the index is built from nothing here.
            job.wake = None;
            job.lane = None;
            if seq >= self.next_seq {
                return Err(Inconsistency::SequenceBeyondCounter {
                    job: job.def.name.clone(),
                    seq,
                }
                .into());
            }
            if self.by_name.insert(job.def.name.clone(), seq).is_some() {
                return Err(Inconsistency::NameTwice {
                    job: job.def.name.clone(),
                }
                .into());
            }
            job.next_due = job.def.schedule.next_after(job.frontier);
            if let Some(run) = job.run() {
                if self.runs.insert(run.id, seq).is_some() {
                    return Err(Inconsistency::RunOpenTwice { run: run.id }.into());
                }
            }
            seqs.push(seq);
        }
        for seq in seqs {
            self.reindex(seq);
        }
        Ok(())
    }

    /// Recomputes a job's wake time and moves its index entries (wake, concurrency).
    pub(crate) fn reindex(&mut self, seq: u64) {
        self.relane(seq);
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let new = wake_of(job, &self.config);
        if job.wake != new {
            if let Some(old) = job.wake {
                self.wake.remove(&(old, seq));
            }
            if let Some(new) = new {
                self.wake.insert((new, seq));
            }
            job.wake = new;
        }
    }

    /// The earliest instant a `Tick` can change anything; `None` when nothing is scheduled.
    pub fn next_wake(&self) -> Option<Timestamp> {
        self.wake.first().map(|(t, _)| *t)
    }

    /// The earliest instant a `Tick` from `process` can change anything, by that process's
    /// wall clock; `None` when it has nothing to wait for (it is draining: it claims
    /// nothing, and only its heartbeats for the runs it holds matter). Under shared
    /// coordination that is `next_wake` (read by the process's own clock: off by its lead
    /// when its clock is held); a new incarnation waiting for its clock to be judged wakes
    /// two ticks after its last event, to be released if it is alone, and while one waits
    /// every other wakes within a tick to show that it is not. Under `single_owner` the owner wakes for the jobs
    /// and to renew its lease halfway through it; a standby only when the lease can lapse
    /// (a tick before then does nothing but renew its runs), and at once when none is held.
    ///
    /// A host sleeps until then (or its heartbeat, whichever is sooner: its leases need
    /// renewing every tick while it holds runs), so an idle scheduler costs nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Actor, Config, Event, JobDef, JobName, Now, ProcessId, Schedule, State};
    ///
    /// let mut state = State::new(Config::default());
    /// let t0 = "2025-06-01T08:00:00Z".parse()?;
    /// let def = JobDef::new(JobName::new("digest")?, Schedule::cron("30 9 * * *", None)?);
    /// state.step(Now::at(t0), Event::Upsert { def: Box::new(def), actor: Actor::new("ana") }, &mut Vec::new());
    /// let process = ProcessId(7);
    /// state.step(Now::at(t0), Event::ProcessStarted { process }, &mut Vec::new());
    /// assert_eq!(state.next_wake_for(process), Some("2025-06-01T09:30:00Z".parse()?));
    ///
    /// // A draining process claims nothing, so it has nothing to wake for.
    /// state.step(Now::at(t0), Event::ProcessDraining { process }, &mut Vec::new());
    /// assert_eq!(state.next_wake_for(process), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_wake_for(&self, process: ProcessId) -> Option<Timestamp> {
        let rec = self.processes.get(&process);
        if rec.is_some_and(|p| p.draining) {
            return None;
        }
        let hold = rec.and_then(|p| p.hold);
        if let Some(rec) = rec.filter(|p| p.waiting()) {
            // Waiting (`step/clock.rs`): it decides nothing, so only its release matters,
            // by its own clock.
            return Some(
                rec.last_wall
                    .saturating_add(crate::step::solitude(&self.config)),
            );
        }
        // A held process works on the store's time: its wakes, read by its own clock, are
        // off by its lead.
        let lead = hold.map_or(0, |h| h.lead);
        let shift = |t: Timestamp| Timestamp::from_millis(t.as_millis().saturating_add(lead));
        let wake = self.next_wake_for_work(process).map(shift);
        // While a new incarnation waits or a clock is held behind, every process shows
        // itself once a tick, so that a held one is released only when it really is alone
        // (and one held behind, which runs early by its own clock, is released promptly).
        // A held process whose measure could not be true shows itself once a tick too, and
        // once a `clock_jump` (`ClockHold::bounded`): so near, its wall clock's advance is
        // believed whole (`step/clock.rs`, `believed`).
        let bounded = rec.and_then(|r| r.hold).is_some_and(|h| h.bounded);
        let witness = rec
            .filter(|_| bounded || self.holds.waiting > 0 || !self.holds.behind.is_empty())
            .map(|r| {
                let every = if bounded {
                    self.config.tick.min(self.config.clock_jump)
                } else {
                    self.config.tick
                };
                r.last_wall.saturating_add(every)
            });
        match (wake, witness) {
            (Some(w), Some(v)) => Some(w.min(v)),
            (w, v) => w.or(v),
        }
    }

    /// `next_wake_for` of a process whose clock is not held: when it next has work.
    fn next_wake_for_work(&self, process: ProcessId) -> Option<Timestamp> {
        if self.config.coordination == Coordination::Shared {
            return self.next_wake();
        }
        match self.owner {
            None => Some(Timestamp::MIN),
            Some(o) if o.holder == process => {
                let half = Duration::from_millis(self.config.lease_ttl.as_millis() / 2);
                let renew = o.until.saturating_sub(half);
                Some(self.next_wake().map_or(renew, |w| w.min(renew)))
            }
            Some(o) => {
                // It can lapse at `until`, or sooner when the store stops hearing from its
                // holder (a lease written under a clock far ahead: `step/clock.rs`).
                let silent_from = self.processes.get(&o.holder).map(|h| {
                    h.base()
                        .saturating_add(self.config.lease_ttl)
                        .saturating_add(self.config.clock_jump)
                });
                let lapse = silent_from.map_or(o.until, |s| s.min(o.until));
                Some(lapse.saturating_add(Duration::from_millis(1)))
            }
        }
    }

    /// Everything loading checks of a state whose indexes are built: `check_invariants`
    /// and the owed segments' counts. What a host or simulator asks of a state before it
    /// commits it, so that nothing is stored that would not load.
    ///
    /// # Errors
    ///
    /// The first invariant broken.
    pub fn self_check(&self) -> Result<(), Inconsistency> {
        self.check_invariants()?;
        self.jobs
            .iter()
            .try_for_each(|(_, job)| check_owed_counts_of(job))
    }

    /// `self_check` of what a step can have changed, for a host or simulator that checks
    /// every step and cannot pay for the whole check each time: the records of the jobs
    /// the step handed out for change (`take_touched`'s list, removed jobs included) with
    /// their index entries and owed counts, and the whole-state checks that cost little
    /// (the indexes' sizes, every open run's index entry, the owner lease, the held
    /// clocks). A record the step did not hand out is as the last whole check found it
    /// (`track_changes` names every job a step can change, which the simulator's store of
    /// rows holds the core to). Left to `self_check`: the concurrency indexes rebuilt from
    /// every job, and an untouched job's entry in the name or wake index that a step
    /// overwrote; so a caller runs `self_check` now and then as well (the simulator: every
    /// 16 committed steps), and `Err` here is always an `Err` of `self_check` too.
    ///
    /// # Errors
    ///
    /// The first invariant broken among those it checks.
    pub fn self_check_touched(&self, touched: &[u64]) -> Result<(), Inconsistency> {
        for &seq in touched {
            // A removed job: the sizes below hold its index entries to the table's.
            let Some(job) = self.jobs.get(&seq) else {
                continue;
            };
            self.check_indexed(seq, job)?;
            check_owed_counts_of(job)?;
            if !crate::lanes::LaneEntry::matches(job.lane.as_deref(), job) {
                let job = job.def.name.clone();
                return Err(Inconsistency::LaneEntryStale { job });
            }
        }
        // Each touched job's open run is in the run index (above); each entry of the index
        // names a job whose open run it is: so the index holds exactly the open runs.
        let stray = |(id, seq): (&RunId, &u64)| {
            self.jobs.get(seq).and_then(JobRecord::run).map(|r| r.id) != Some(*id)
        };
        if self.runs.iter().any(stray) {
            return Err(Inconsistency::RunIndexExtra);
        }
        self.check_whole_state()
    }

    /// Checks what must always hold; `Err` names the first broken invariant. Run after every
    /// step in debug builds; on load always.
    ///
    /// # Errors
    ///
    /// The first invariant broken.
    pub fn check_invariants(&self) -> Result<(), Inconsistency> {
        // The job table in sequence order once for both walks (it is a hash map: each
        // ordered walk sorts).
        let jobs: Vec<_> = self.jobs.iter().collect();
        let mut runs = 0;
        for &(&seq, job) in &jobs {
            self.check_indexed(seq, job)?;
            runs += usize::from(job.run().is_some());
        }
        if runs != self.runs.len() {
            return Err(Inconsistency::RunIndexExtra);
        }
        self.check_whole_state()?;
        self.check_lanes_of(&jobs)
    }

    /// One job's record, on its own and against the counters and config, and its entries
    /// in the name, wake and run indexes.
    fn check_indexed(&self, seq: u64, job: &JobRecord) -> Result<(), Inconsistency> {
        let name = || job.def.name.clone();
        if self.by_name.get(&job.def.name) != Some(&seq) {
            return Err(Inconsistency::NameIndexStale { job: name() });
        }
        if job.next_due != job.def.schedule.next_after(job.frontier) {
            return Err(Inconsistency::NextDueStale { job: name() });
        }
        if wake_of(job, &self.config) != job.wake {
            return Err(Inconsistency::WakeStale { job: name() });
        }
        if job.wake.is_some_and(|w| !self.wake.contains(&(w, seq))) {
            return Err(Inconsistency::MissingFromWakeIndex { job: name() });
        }
        check_record(job, &self.config, self.next_run, self.next_fence)?;
        match job.run() {
            Some(run) if self.runs.get(&run.id) != Some(&seq) => {
                Err(Inconsistency::MissingFromRunIndex {
                    job: name(),
                    run: run.id,
                })
            }
            _ => Ok(()),
        }
    }

    /// The checks of the state as a whole that cost little: the indexes' sizes against
    /// the table's, the owner lease, the held clocks' count.
    fn check_whole_state(&self) -> Result<(), Inconsistency> {
        if self.by_name.len() != self.jobs.len() || self.wake.len() > self.jobs.len() {
            return Err(Inconsistency::IndexSizes);
        }
        check_owner(&self.config, self.owner, &self.processes, self.next_fence)?;
        if self.holds != HoldCounts::of(&self.processes) {
            return Err(Inconsistency::HeldClockCountStale);
        }
        Ok(())
    }
}

/// What one job's record must satisfy on its own and against the counters and config,
/// whatever the indexes say: part of `check_invariants`, and what `put_parts` checks of a
/// record before taking it in.
pub(crate) fn check_record(
    job: &JobRecord,
    config: &Config,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let name = || job.def.name.clone();
    if job.watched_since.is_some() != job.def.expect_success_within.is_some() {
        return Err(Inconsistency::WatchOutOfStep { job: name() });
    }
    for (i, &incident) in job.incidents.iter().enumerate() {
        if job.incidents[..i].contains(&incident) {
            return Err(Inconsistency::IncidentRepeated {
                job: name(),
                incident,
            });
        }
    }
    if let Some(end) = job.ended {
        // Only a one-shot ends, and only once its instant is looked at and nothing still
        // covers it.
        let Schedule::At { instant } = job.def.schedule else {
            return Err(Inconsistency::EndedNotOneShot { job: name(), end });
        };
        if !job.one_shot_settled(instant) {
            return Err(Inconsistency::EndedUnsettled {
                job: name(),
                end,
                instant,
            });
        }
    }
    match job.act() {
        Some(a) => check_activity(&job.def.name, a, job.frontier, config, next_run, next_fence),
        None => Ok(()),
    }
}

/// `check_record` of a job's activity: bounded histories, owed segments in order and
/// behind the frontier, one run or one retry, a consistent confirmation and run.
fn check_activity(
    name: &JobName,
    a: &Activity,
    frontier: Timestamp,
    config: &Config,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let job = || name.clone();
    if a.pending.len() > MAX_OWED_SEGMENTS {
        let count = a.pending.len();
        return Err(Inconsistency::TooManyOwedSegments { job: job(), count });
    }
    if a.manual_recent.len() > config.manual_per_hour as usize {
        return Err(Inconsistency::ManualHistoryOverCap { job: job() });
    }
    if a.missed_recent.len() > 25 {
        return Err(Inconsistency::MissedHistoryOverDay { job: job() });
    }
    let mut last_to = None;
    for o in &a.pending {
        if o.count == 0 || o.from > o.to || last_to.is_some_and(|t| o.from <= t) {
            return Err(Inconsistency::OwedOutOfOrder { job: job() });
        }
        if o.to > frontier {
            return Err(Inconsistency::OwedBeyondFrontier { job: job() });
        }
        last_to = Some(o.to);
    }
    if a.run.is_some() && a.retry.is_some() {
        return Err(Inconsistency::RunAndRetry { job: job() });
    }
    if a.waiting.is_some() && (a.run.is_some() || a.unconfirmed) {
        return Err(Inconsistency::WaitsWhileBusy { job: job() });
    }
    if a.unconfirmed && (a.held.is_none() || a.run.is_some() || !a.pending.is_empty()) {
        return Err(Inconsistency::UnconfirmedNotClean { job: job() });
    }
    if let Some(held) = a
        .held
        .as_deref()
        .map(HeldDef::def)
        .filter(|h| h.name != *name)
    {
        let held = held.name.clone();
        return Err(Inconsistency::HoldsOtherDefinition { job: job(), held });
    }
    check_open_run(name, a, next_run, next_fence)
}

/// `check_activity` of what a run or retry covers and of the open run.
fn check_open_run(
    name: &JobName,
    a: &Activity,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let job = || name.clone();
    // What a run or a retry covers is settled as one ledger entry, which needs at
    // least one due time in order.
    let run_cover = a.run.as_ref().and_then(|r| r.cover);
    let retry_cover = a.retry.map(|r| r.cover);
    if let Some(c) = run_cover
        .into_iter()
        .chain(retry_cover)
        .find(|c| c.covers.count == 0 || c.covers.from > c.covers.to)
    {
        let covers = c.covers;
        return Err(Inconsistency::EmptyCover { job: job(), covers });
    }
    let Some(run) = &a.run else { return Ok(()) };
    if run.fence.0 >= next_fence || run.id.0 >= next_run {
        return Err(Inconsistency::RunAheadOfCounters {
            job: job(),
            run: run.id,
        });
    }
    if run.parked.is_some() && run.cancel_sent.is_some() {
        // Parking ends the process's part: no timeout can be pending for it.
        return Err(Inconsistency::ParkedWithCancel {
            job: job(),
            run: run.id,
        });
    }
    Ok(())
}

/// On load, beyond `check_invariants` (too costly for every step): an owed segment of the
/// job's that will be started in pieces (a `required` catch-up over `REQUIRED_BATCH`,
/// buffered overlaps one by one) starts and ends on a due time of its schedule and counts
/// exactly the due times between, which walking it relies on. Smaller segments are started
/// whole and may hold a failed run's due times from a schedule since replaced, so they are
/// not held to the current one.
pub(crate) fn check_owed_counts_of(job: &JobRecord) -> Result<(), Inconsistency> {
    let Some(a) = job.act() else { return Ok(()) };
    for o in &a.pending {
        // Walked in pieces, or open to merging (an untagged segment is the current
        // schedule's and the next owed due time may join it): it must hold exactly
        // the due times it says. A tagged segment of at most one batch is started
        // whole, and merged only once it is found exact (`Activity::make_room`), so
        // its instants are all that matter.
        let walked = o.count > REQUIRED_BATCH || (o.cause == MissCause::Overlap && o.count > 1);
        if !walked && o.schedule.is_some() {
            continue;
        }
        if !o.holds_exactly(o.schedule.as_deref().unwrap_or(&job.def.schedule)) {
            return Err(Inconsistency::OwedCountWrong {
                job: job.def.name.clone(),
                from: o.from,
                to: o.to,
                count: o.count,
            });
        }
    }
    Ok(())
}

/// When a tick next has something to do for this job.
pub(crate) fn wake_of(job: &JobRecord, config: &Config) -> Option<Timestamp> {
    let a = job.act();
    if a.is_some_and(|a| a.unconfirmed) {
        return None;
    }
    let paused = a.is_some_and(|a| a.paused.is_some());
    // A waiter is let in by `admit` when room opens, not by the wake index: waking it on
    // every tick would make a tick scan all the waiters.
    let waiting = a.is_some_and(|a| a.waiting.is_some());
    let mut wake = None::<Timestamp>;
    let mut consider = |t: Option<Timestamp>| {
        if let Some(t) = t {
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
    };
    if let Some(a) = a {
        if let Some(until) = a.run.as_ref().and_then(|r| r.parked) {
            // A parked run has no lease, deadline or stall to watch: only its expiry.
            consider(Some(until));
        } else if let Some(run) = &a.run {
            consider(Some(
                run.lease_until.saturating_add(Duration::from_millis(1)),
            ));
            if !run.stall_alerted {
                // A holder that keeps renewing never lets the lease lapse, so the stall
                // alert needs its own wake time.
                consider(Some(run.started.saturating_add(job.def.stall_after)));
            }
            match run.cancel_sent {
                None => consider(Some(run.deadline)),
                Some(sent) => consider(Some(sent.saturating_add(config.cancel_grace))),
            }
        } else if !paused && !waiting {
            consider(a.retry.map(|r| r.at));
            if a.retry.is_none() && !a.pending.is_empty() {
                // Owed due times start on the next tick, or when a quota hold ends.
                consider(Some(a.quota_hold.unwrap_or(Timestamp::MIN)));
            }
        }
        // A manual run starts on the next tick (or when a quota hold ends), unless a waiting
        // retry goes first (it starts only while paused then): that retry's time is already
        // considered.
        if a.run.is_none() && !waiting && a.manual.is_some() && (paused || a.retry.is_none()) {
            consider(Some(a.quota_hold.unwrap_or(Timestamp::MIN)));
        }
        // The visit at the hold's end clears it.
        consider(a.quota_hold);
    }
    // The dead-man's switch watches a paused job too.
    consider(job.silence_alarm());
    if !paused {
        // A jittered due time is looked at when its start comes.
        consider(
            job.next_due
                .map(|d| d.saturating_add(job.def.jitter_delay(d))),
        );
    }
    wake
}

#[cfg(test)]
#[path = "state/touched_check_tests.rs"]
mod touched_check_tests;

#[cfg(test)]
mod activity_tests {
    use super::Activity;
    use crate::event::Actor;
    use crate::time::Timestamp;

    /// `is_empty` answers what comparing with `Activity::default()` answered.
    #[test]
    fn empty_is_the_default() {
        let mut cases = vec![Activity::default()];
        cases.push(Activity {
            manual: Some(Actor::new("ana")),
            ..Activity::default()
        });
        let mut a = Activity::default();
        a.manual_recent.push_back(Timestamp::from_millis(1));
        cases.push(a);
        let mut a = Activity::default();
        a.missed_recent.push_back((Timestamp::from_millis(0), 1));
        cases.push(a);
        cases.push(Activity {
            waiting: Some(super::Waiting {
                since: Timestamp::from_millis(1),
                reason: crate::effect::WaitReason::LaneBusy,
            }),
            ..Activity::default()
        });
        cases.push(Activity {
            unconfirmed: true,
            ..Activity::default()
        });
        for a in &cases {
            assert_eq!(a.is_empty(), *a == Activity::default(), "{a:?}");
        }
        assert!(cases[0].is_empty());
    }

    /// Two held definitions are equal when the definitions are (the digest is derived), so a
    /// state compared after a round trip tells a changed held definition from the same one.
    #[test]
    fn held_definitions_compare_by_their_definition() {
        use super::HeldDef;
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        use crate::time::Duration;
        let def = |minutes| {
            let every = Schedule::every(Duration::from_mins(minutes), Duration::ZERO).unwrap();
            JobDef::new(JobName::new("sync").unwrap(), every)
        };
        assert_eq!(HeldDef::new(def(5)), HeldDef::new(def(5)));
        assert_ne!(HeldDef::new(def(5)), HeldDef::new(def(10)));
        assert_eq!(HeldDef::new(def(5)).digest(), def(5).digest());
    }

    /// Two tagged segments join only when both hold exactly what they say: a cover handed
    /// back may carry an older schedule's due times under the current one's tag, and a
    /// segment merged with it would be walked in batches by the wrong due times.
    #[test]
    fn a_tagged_segment_not_holding_exactly_joins_nothing() {
        use super::Owed;
        use crate::effect::MissCause;
        use crate::schedule::Schedule;
        use crate::time::Duration;
        const HOUR: i64 = 3_600_000;
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        let segment = |from: i64, to: i64, count: u64, tagged: bool| Owed {
            from: Timestamp::from_millis(from * HOUR),
            to: Timestamp::from_millis(to * HOUR),
            count,
            cause: MissCause::Paused,
            schedule: tagged.then(|| Box::new(hourly.clone())),
        };
        let current = Schedule::every(Duration::from_mins(7), Duration::ZERO).unwrap();
        // 10:00 holds exactly one hourly due time; 8:00..=9:00 holds two, not the one it says.
        let (exact, short) = (segment(10, 10, 1, true), segment(8, 9, 1, true));
        assert!(exact.holds_exactly(&hourly) && !short.holds_exactly(&hourly));
        // 10:30..=11:30 counts its one due time (11:00) right, yet starts and ends off them.
        let off_grid = Owed {
            from: Timestamp::from_millis(10 * HOUR + HOUR / 2),
            to: Timestamp::from_millis(11 * HOUR + HOUR / 2),
            ..segment(0, 0, 1, true)
        };
        assert!(!off_grid.holds_exactly(&hourly));
        assert!(
            exact.joins(&segment(11, 12, 2, true), &current),
            "both exact, in a row"
        );
        let says_one_of_two = segment(11, 12, 1, true);
        assert!(
            !exact.joins(&says_one_of_two, &current),
            "the newer one is not exact"
        );
        assert!(!short.joins(&exact, &current), "the older one is not exact");
        // Untagged, they are the current schedule's own, exact by construction.
        let (untagged, seven) = (segment(0, 0, 1, false), Timestamp::from_millis(7 * 60_000));
        let after = Owed {
            from: seven,
            to: seven,
            ..untagged.clone()
        };
        assert!(untagged.joins(&after, &current));
    }

    /// A segment from the first instant of time (a grid that holds `Timestamp::MIN`, owed
    /// by a backfill from the beginning) counts that instant too: the one due time no
    /// `next_after` can find, since none is before it.
    #[test]
    fn a_segment_from_the_first_instant_of_time_holds_exactly() {
        use super::Owed;
        use crate::effect::MissCause;
        use crate::schedule::Schedule;
        use crate::time::Duration;
        // i64::MIN ms is 192 ms past a whole second: this grid holds it.
        let grid = Schedule::every(Duration::from_secs(1), Duration::from_millis(192)).unwrap();
        let first_three = |count: u64| Owed {
            from: Timestamp::MIN,
            to: Timestamp::from_millis(i64::MIN + 2_000),
            count,
            cause: MissCause::Backfill,
            schedule: Some(Box::new(grid.clone())),
        };
        assert!(first_three(3).holds_exactly(&grid));
        assert!(!first_three(2).holds_exactly(&grid));
    }

    /// A one-shot's instant is settled once looked at and held by nothing of its own: a
    /// retry waiting to run it holds it; an owed segment of an older schedule (tagged,
    /// kept from before the redefinition) is not about it, even when its range holds it.
    #[test]
    fn a_one_shot_is_settled_only_when_nothing_of_its_own_holds_its_instant() {
        use super::{Cover, JobRecord, Owed, RetryWait};
        use crate::effect::{Covers, MissCause, Trigger};
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        use crate::time::Duration;
        let instant = Timestamp::from_millis(7_200_000);
        let def = JobDef::new(JobName::new("once").unwrap(), Schedule::at(instant));
        let mut record = JobRecord::new(def, Timestamp::from_millis(0));
        record.frontier = instant;
        assert!(
            record.one_shot_settled(instant),
            "looked at, nothing holds it"
        );
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        record.act_mut().pending.push_back(Owed {
            from: Timestamp::from_millis(3_600_000),
            to: Timestamp::from_millis(10_800_000),
            count: 3,
            cause: MissCause::Down,
            schedule: Some(Box::new(hourly)),
        });
        assert!(
            record.one_shot_settled(instant),
            "an older schedule's owed segment is not about the instant"
        );
        record.act_mut().retry = Some(RetryWait {
            at: Timestamp::from_millis(7_300_000),
            attempt: 2,
            trigger: Trigger::Schedule,
            cover: Cover {
                covers: Covers {
                    from: instant,
                    to: instant,
                    count: 1,
                },
                late: None,
            },
        });
        assert!(
            !record.one_shot_settled(instant),
            "a retry waiting to run it holds it"
        );
    }

    /// The accounted start itself is not accounted: a due time at or before the instant a
    /// schedule was defined was never due under it (a one-shot defined at its own instant
    /// never runs, and no earlier schedule's entry holding that instant ends it).
    #[test]
    fn the_accounted_start_is_not_accounted() {
        use super::JobRecord;
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        let at = Timestamp::from_millis(1_000_000);
        let def = JobDef::new(JobName::new("once").unwrap(), Schedule::at(at));
        let mut record = JobRecord::new(def, at);
        record.accounted_from = Some(at);
        assert!(!record.accounts(at));
        assert!(!record.accounts(Timestamp::from_millis(999_999)));
        assert!(record.accounts(Timestamp::from_millis(1_000_001)));
        record.accounted_from = None;
        assert!(
            record.accounts(at),
            "a state older than the field accounts everything"
        );
    }
}
