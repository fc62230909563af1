//! The core's whole state: jobs with their cursors and open runs, processes, counters, and
//! the indexes derived from them (rebuilt on load, never serialized).
//!
//! Jobs live in a map keyed by a creation sequence number, so every iteration and every tie
//! in the wake index is ordered by something that survives a serde round trip.

mod access;
mod activity;
mod config;
mod heard;
mod invariants;
mod load;
mod processes;
mod records;
mod wake;

#[cfg(test)]
mod touched_check_tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;

/// Public only through the unstable `internals` feature.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub use activity::Activity;
#[cfg(feature = "schema")]
pub(crate) use activity::ActivityIn;
pub(crate) use activity::{Phase, Waiting};
pub use config::{Config, Coordination, OwnerLease, MAX_GRACE, MIN_LEASE, MIN_TICK};
pub(crate) use heard::{
    is_run, told_alone_until, Downstreams, Heard, HeardOf, HeardRange, UpstreamSchedules,
    MAX_HEARD, MAX_UPSTREAM_SCHEDULES,
};
pub(crate) use invariants::{check_owed_counts_of, check_record};
pub(crate) use load::StateData;
pub use load::{Globals, LoadError, FORMAT_VERSION};
pub(crate) use processes::ClockHold;
pub use processes::ProcessRec;
#[cfg(feature = "schema")]
pub(crate) use records::OpenRunIn;
pub(crate) use records::{
    Cover, Owed, RetryWait, RunLane, RunStage, MAX_OWED_SEGMENTS, REQUIRED_RESERVE,
};
pub use records::{
    HeldDef, JobRecord, LastOutcome, LastRun, OneShotEnd, OpenRun, Pause, MAX_BACKFILL,
};
pub(crate) use wake::wake_of;

use crate::event::{ProcessId, RunId};
use crate::job::JobName;
use crate::jobs::{JobSeq, Jobs};
use crate::lanes::Lanes;
use crate::time::Timestamp;

fn is_false(b: &bool) -> bool {
    !*b
}

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
    pub(crate) by_name: BTreeMap<JobName, JobSeq>,
    pub(crate) wake: BTreeSet<(Timestamp, JobSeq)>,
    pub(crate) runs: BTreeMap<RunId, JobSeq>,
    pub(crate) lanes: Lanes,
    /// How many processes' clocks are held ahead, and how many of those wait
    /// (`step/clock.rs`): derived, so that the common case of none costs no pass over the
    /// processes.
    pub(crate) holds: HoldCounts,
    /// Which jobs wait for each upstream (`JobDef::after`).
    pub(crate) downstreams: Downstreams,
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
            downstreams: Default::default(),
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

    /// One job's record by sequence number (its name is `record.def.name`).
    pub fn record(&self, seq: JobSeq) -> Option<&JobRecord> {
        self.jobs.get(&seq)
    }

    /// Every job's record with its sequence number, in sequence order.
    pub fn records(&self) -> impl Iterator<Item = (JobSeq, &JobRecord)> {
        self.jobs.iter().map(|(&seq, job)| (seq, job))
    }

    /// The sequence number of the job with this name.
    pub fn seq_of_name(&self, name: &str) -> Option<JobSeq> {
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
    pub fn take_touched(&mut self) -> Vec<JobSeq> {
        self.jobs.take_touched()
    }

    /// Hands out the next job's sequence number from the counter, which the caller has
    /// checked is not used up (`next_seq < u64::MAX`: `Refusal::Full` otherwise).
    pub(crate) fn new_seq(&mut self) -> JobSeq {
        let seq = JobSeq(self.next_seq);
        self.next_seq += 1;
        seq
    }

    /// Recomputes a job's wake time and moves its index entries (wake, concurrency).
    pub(crate) fn reindex(&mut self, seq: JobSeq) {
        self.relane(seq);
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        self.downstreams.relist(seq, &job.def.after);
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
}
