//! The core's whole state: jobs with their cursors and open runs, processes, counters, and
//! the indexes derived from them (rebuilt on load, never serialized).
//!
//! Jobs live in a map keyed by a creation sequence number, so every iteration and every tie
//! in the wake index is ordered by something that survives a serde round trip.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::effect::{Covers, MissCause, PausedBy, Trigger};
use crate::event::{Actor, Fence, ProcessId, RunId};
use crate::job::{JobDef, JobName, REQUIRED_BATCH};
use crate::jobs::Jobs;
use crate::schedule::Schedule;
use crate::time::{Duration, Timestamp};

/// The state format written by this build; a state from a newer build is refused.
pub const FORMAT_VERSION: u32 = 1;

/// Timing the whole scheduler shares. Defaults: a 30 s tick; leases, lateness grace and the
/// wait after a timeout's `Cancel` of two ticks each; 20 manual runs per job per hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub tick: Duration,
    pub lease_ttl: Duration,
    /// A due time started within this after it is on time; later, the missed rule applies.
    pub grace: Duration,
    /// After `Cancel { timeout }`, how long to wait for the result before settling the run
    /// as timed out without it.
    pub cancel_grace: Duration,
    pub manual_per_hour: u32,
    /// A wall clock that moves this much more than the monotonic clock between two events
    /// of one process has jumped.
    pub clock_jump: Duration,
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
pub const MAX_GRACE: Duration = Duration::from_days(1);

impl Config {
    /// What a stored state's config must satisfy to load: a tick of at least `MIN_TICK`, a
    /// grace of at most `MAX_GRACE`.
    pub fn check(&self) -> Result<(), String> {
        if self.tick < MIN_TICK {
            return Err(format!("config: tick {} is under {MIN_TICK}", self.tick));
        }
        if self.grace > MAX_GRACE {
            return Err(format!("config: grace {} is over {MAX_GRACE}", self.grace));
        }
        Ok(())
    }

    pub fn with_tick(tick: Duration) -> Config {
        let two = tick.saturating_mul(2);
        Config {
            tick,
            lease_ttl: two,
            grace: two,
            cancel_grace: two,
            manual_per_hour: 20,
            clock_jump: Duration::from_secs(60),
        }
    }
}

/// Due times found but not yet run: owed catch-ups and buffered overlaps, oldest first. A
/// segment is a contiguous run of due times of one schedule: `schedule` is the schedule
/// they came from when the job's definition has changed since (`None`: the current one),
/// so walking a segment never mixes two schedules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owed {
    pub from: Timestamp,
    pub to: Timestamp,
    pub count: u64,
    pub cause: MissCause,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Box<Schedule>>,
}

/// What a run covers, with the cause that made it late (`None`: on time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cover {
    pub covers: Covers,
    pub late: Option<MissCause>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenRun {
    pub id: RunId,
    pub fence: Fence,
    pub holder: ProcessId,
    pub lease_until: Timestamp,
    pub started: Timestamp,
    pub deadline: Timestamp,
    pub attempt: u32,
    pub trigger: Trigger,
    pub cover: Option<Cover>,
    /// When `Cancel { timeout }` went out.
    pub cancel_sent: Option<Timestamp>,
    pub stall_alerted: bool,
}

/// A failed run's due times waiting for their next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryWait {
    pub at: Timestamp,
    /// The attempt number the retry will be.
    pub attempt: u32,
    pub trigger: Trigger,
    pub cover: Cover,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    pub by: PausedBy,
    pub note: String,
    pub since: Timestamp,
}

/// How the job's latest run ended, for views.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastOutcome {
    Ok,
    Skipped,
    Failed,
    TimedOut,
    FailedOut,
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    pub run: RunId,
    pub at: Timestamp,
    pub outcome: LastOutcome,
}

/// Everything about a job beyond its definition and cursor; absent for a job that has
/// never needed any of it, which keeps idle jobs small.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub pending: VecDeque<Owed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<OpenRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryWait>,
    /// A queued manual run and who asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<Actor>,
    /// When manual runs were asked for in the last hour (for the hourly cap).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub manual_recent: VecDeque<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Pause>,
    /// Missed due times per hour over the last day: `(hour start, count)`.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub missed_recent: VecDeque<(Timestamp, u64)>,
}

/// Most owed segments a job keeps; beyond it two that follow one another merge (counts
/// stay exact, the newer cause is folded into the older one), and only a line of disjoint
/// debts gives up its oldest (see `owe`).
pub const MAX_OWED_SEGMENTS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub def: JobDef,
    /// Every due time at or before `frontier` has been looked at: it is in the ledger, or
    /// covered by the open run or the retry, or owed. Only moves forward.
    pub frontier: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Box<Activity>>,
    /// How the latest run ended. Kept beside the definition, not in `activity`, so a job
    /// that has run and is idle again carries no activity box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastRun>,
    /// `def.schedule.next_after(frontier)`, cached.
    #[serde(skip)]
    pub next_due: Option<Timestamp>,
    /// This job's key in the wake index.
    #[serde(skip)]
    pub wake: Option<Timestamp>,
}

impl JobRecord {
    pub fn new(def: JobDef, from: Timestamp) -> JobRecord {
        let next_due = def.schedule.next_after(from);
        JobRecord {
            def,
            frontier: from,
            activity: None,
            last: None,
            next_due,
            wake: None,
        }
    }

    pub fn act(&self) -> Option<&Activity> {
        self.activity.as_deref()
    }

    pub fn act_mut(&mut self) -> &mut Activity {
        self.activity.get_or_insert_with(Default::default)
    }

    pub fn run(&self) -> Option<&OpenRun> {
        self.act().and_then(|a| a.run.as_ref())
    }

    pub fn paused(&self) -> Option<&Pause> {
        self.act().and_then(|a| a.paused.as_ref())
    }

    /// The first due time not yet settled in the ledger (what views call the cursor is the
    /// instant before it).
    pub fn first_unsettled(&self) -> Option<Timestamp> {
        let a = self.act()?;
        let run = a.run.as_ref().and_then(|r| r.cover).map(|c| c.covers.from);
        let retry = a.retry.map(|r| r.cover.covers.from);
        let owed = a.pending.front().map(|o| o.from);
        [run, retry, owed].into_iter().flatten().min()
    }

    /// Drops an empty activity box so idle jobs stay small.
    pub fn tidy(&mut self) {
        if self
            .activity
            .as_deref()
            .is_some_and(|a| *a == Activity::default())
        {
            self.activity = None;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRec {
    pub last_wall: Timestamp,
    pub last_mono: Timestamp,
    #[serde(default)]
    pub draining: bool,
}

/// The serialized form: what a host stores.
#[derive(Serialize, Deserialize)]
struct StateData {
    format: u32,
    config: Config,
    next_seq: u64,
    next_run: u64,
    next_fence: u64,
    jobs: Jobs,
    processes: BTreeMap<ProcessId, ProcessRec>,
}

/// Why a stored state could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    NewerFormat { found: u32, supported: u32 },
    Inconsistent { what: String },
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
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "StateData", into = "StateData")]
pub struct State {
    pub(crate) config: Config,
    pub(crate) next_seq: u64,
    pub(crate) next_run: u64,
    pub(crate) next_fence: u64,
    pub(crate) jobs: Jobs,
    pub(crate) processes: BTreeMap<ProcessId, ProcessRec>,
    // Derived, rebuilt on load.
    pub(crate) by_name: BTreeMap<JobName, u64>,
    pub(crate) wake: BTreeSet<(Timestamp, u64)>,
    pub(crate) runs: BTreeMap<RunId, u64>,
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.next_seq == other.next_seq
            && self.next_run == other.next_run
            && self.next_fence == other.next_fence
            && self.jobs == other.jobs
            && self.processes == other.processes
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

impl From<State> for StateData {
    fn from(s: State) -> StateData {
        StateData {
            format: FORMAT_VERSION,
            config: s.config,
            next_seq: s.next_seq,
            next_run: s.next_run,
            next_fence: s.next_fence,
            jobs: s.jobs,
            processes: s.processes,
        }
    }
}

impl TryFrom<StateData> for State {
    type Error = LoadError;
    fn try_from(d: StateData) -> Result<State, LoadError> {
        if d.format > FORMAT_VERSION {
            return Err(LoadError::NewerFormat {
                found: d.format,
                supported: FORMAT_VERSION,
            });
        }
        d.config
            .check()
            .map_err(|what| LoadError::Inconsistent { what })?;
        let mut s = State {
            config: d.config,
            next_seq: d.next_seq,
            next_run: d.next_run,
            next_fence: d.next_fence,
            jobs: d.jobs,
            processes: d.processes,
            by_name: BTreeMap::new(),
            wake: BTreeSet::new(),
            runs: BTreeMap::new(),
        };
        s.rebuild_indexes()?;
        s.check_invariants()
            .and_then(|()| s.check_owed_counts())
            .map_err(|what| LoadError::Inconsistent { what })?;
        Ok(s)
    }
}

impl State {
    pub fn new(config: Config) -> State {
        State {
            config,
            next_seq: 0,
            next_run: 1,
            next_fence: 1,
            jobs: Jobs::default(),
            processes: BTreeMap::new(),
            by_name: BTreeMap::new(),
            wake: BTreeSet::new(),
            runs: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    fn rebuild_indexes(&mut self) -> Result<(), LoadError> {
        let mut seqs = Vec::with_capacity(self.jobs.len());
        for (&seq, job) in self.jobs.iter_mut() {
            if seq >= self.next_seq {
                return Err(LoadError::Inconsistent {
                    what: format!("job {} has sequence {seq} beyond the counter", job.def.name),
                });
            }
            if self.by_name.insert(job.def.name.clone(), seq).is_some() {
                return Err(LoadError::Inconsistent {
                    what: format!("job {} appears twice", job.def.name),
                });
            }
            job.next_due = job.def.schedule.next_after(job.frontier);
            if let Some(run) = job.run() {
                if self.runs.insert(run.id, seq).is_some() {
                    return Err(LoadError::Inconsistent {
                        what: format!("run {} is open twice", run.id),
                    });
                }
            }
            seqs.push(seq);
        }
        for seq in seqs {
            self.reindex(seq);
        }
        Ok(())
    }

    /// Recomputes a job's wake time and moves its index entry.
    pub(crate) fn reindex(&mut self, seq: u64) {
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

    /// On load, beyond `check_invariants` (too costly for every step): an owed segment that
    /// will be started in pieces (a `required` catch-up over `REQUIRED_BATCH`, buffered
    /// overlaps one by one) starts and ends on a due time of its schedule and counts exactly
    /// the due times between, which walking it relies on. Smaller segments are started whole
    /// and may hold a failed run's due times from a schedule since replaced, so they are not
    /// held to the current one.
    pub(crate) fn check_owed_counts(&self) -> Result<(), String> {
        const MS: Duration = Duration::from_millis(1);
        for job in self.jobs.iter().map(|(_, j)| j) {
            let Some(a) = job.act() else { continue };
            for o in &a.pending {
                // Walked in pieces, or open to merging (an untagged segment is the current
                // schedule's and the next owed due time may join it): it must hold exactly
                // the due times it says. A tagged segment of at most one batch is started
                // whole and never merged, so its instants are all that matter.
                let walked =
                    o.count > REQUIRED_BATCH || (o.cause == MissCause::Overlap && o.count > 1);
                if !walked && o.schedule.is_some() {
                    continue;
                }
                let s = o.schedule.as_deref().unwrap_or(&job.def.schedule);
                let before = o.from.saturating_sub(MS);
                let on_due =
                    |t: Timestamp| before == t || s.next_after(t.saturating_sub(MS)) == Some(t);
                let counted = s.count_in(before, o.to) + u64::from(before == o.from);
                if !on_due(o.from) || !on_due(o.to) || counted != o.count {
                    return Err(format!(
                        "{}: owed segment {}..{} does not hold {} due times",
                        job.def.name, o.from, o.to, o.count
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what must always hold; `Err` names the first broken invariant. Run after every
    /// step in debug builds; on load always.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut runs = 0;
        for (&seq, job) in &self.jobs {
            let name = &job.def.name;
            if self.by_name.get(name) != Some(&seq) {
                return Err(format!("{name}: name index is stale"));
            }
            if wake_of(job, &self.config) != job.wake {
                return Err(format!("{name}: wake time is stale"));
            }
            if let Some(w) = job.wake {
                if !self.wake.contains(&(w, seq)) {
                    return Err(format!("{name}: missing from the wake index"));
                }
            }
            let Some(a) = job.act() else { continue };
            if a.pending.len() > MAX_OWED_SEGMENTS {
                return Err(format!("{name}: {} owed segments", a.pending.len()));
            }
            if a.manual_recent.len() > self.config.manual_per_hour as usize {
                return Err(format!("{name}: manual history over the cap"));
            }
            if a.missed_recent.len() > 25 {
                return Err(format!("{name}: missed history over a day"));
            }
            let mut last_to = None;
            for o in &a.pending {
                if o.count == 0 || o.from > o.to || last_to.is_some_and(|t| o.from <= t) {
                    return Err(format!("{name}: owed segments out of order"));
                }
                if o.to > job.frontier {
                    return Err(format!("{name}: owes a due time beyond its frontier"));
                }
                last_to = Some(o.to);
            }
            if a.run.is_some() && a.retry.is_some() {
                return Err(format!("{name}: a run and a retry at once"));
            }
            // What a run or a retry covers is settled as one ledger entry, which needs at
            // least one due time in order.
            let run_cover = a.run.as_ref().and_then(|r| r.cover);
            let retry_cover = a.retry.map(|r| r.cover);
            if let Some(c) = run_cover
                .into_iter()
                .chain(retry_cover)
                .find(|c| c.covers.count == 0 || c.covers.from > c.covers.to)
            {
                return Err(format!("{name}: covers an empty range {}", c.covers));
            }
            if let Some(run) = &a.run {
                runs += 1;
                if run.fence.0 >= self.next_fence || run.id.0 >= self.next_run {
                    return Err(format!("{name}: run {} is ahead of the counters", run.id));
                }
                if self.runs.get(&run.id) != Some(&seq) {
                    return Err(format!("{name}: run {} missing from the run index", run.id));
                }
            }
        }
        if runs != self.runs.len() {
            return Err("run index has runs no job holds".to_string());
        }
        if self.by_name.len() != self.jobs.len() || self.wake.len() > self.jobs.len() {
            return Err("index sizes disagree with the jobs".to_string());
        }
        Ok(())
    }
}

/// When a tick next has something to do for this job.
pub(crate) fn wake_of(job: &JobRecord, config: &Config) -> Option<Timestamp> {
    let a = job.act();
    let paused = a.is_some_and(|a| a.paused.is_some());
    let mut wake = None::<Timestamp>;
    let mut consider = |t: Option<Timestamp>| {
        if let Some(t) = t {
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
    };
    if let Some(a) = a {
        if let Some(run) = &a.run {
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
        } else if !paused {
            consider(a.retry.map(|r| r.at));
            if a.retry.is_none() && !a.pending.is_empty() {
                consider(Some(Timestamp::MIN));
            }
        }
        // A manual run starts on the next tick, unless a waiting retry goes first (it
        // starts only while paused then): that retry's time is already considered.
        if a.run.is_none() && a.manual.is_some() && (paused || a.retry.is_none()) {
            consider(Some(Timestamp::MIN));
        }
    }
    if !paused {
        consider(job.next_due);
    }
    wake
}
