//! Concurrency: how many runs each process and each concurrency key has open, and who waits
//! for room, oldest first. All of it is derived from the jobs (rebuilt on load, never
//! serialized) and kept exact by `State::reindex`, which every transition calls after it
//! changes a job: a job's cached `LaneEntry` says what it added to these indexes, so moving
//! it is a diff, and no path that opens or closes a run can forget to count it.

use std::collections::{BTreeMap, BTreeSet};

use crate::effect::WaitReason;
use crate::event::ProcessId;
use crate::state::{JobRecord, State};
use crate::time::Timestamp;

/// What one job adds to the concurrency indexes: its key and lane width, the process its
/// open run is held by, and since when it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneEntry {
    key: Option<String>,
    width: u32,
    open_on: Option<ProcessId>,
    waiting: Option<Timestamp>,
}

impl LaneEntry {
    /// `None` for a job that adds nothing (no key, no open run, not waiting), so most jobs
    /// carry no entry.
    pub(crate) fn of(job: &JobRecord) -> Option<LaneEntry> {
        let open_on = job.run_holder();
        let waiting = job.act().and_then(|a| a.waiting).map(|w| w.since);
        let key = job.def.concurrency_key.as_ref();
        if key.is_none() && open_on.is_none() && waiting.is_none() {
            return None;
        }
        Some(LaneEntry {
            key: key.cloned(),
            width: job.def.lane_width(),
            open_on,
            waiting,
        })
    }

    /// Whether `of(job)` would give this entry, without building one.
    pub(crate) fn matches(entry: Option<&LaneEntry>, job: &JobRecord) -> bool {
        let open_on = job.run_holder();
        let waiting = job.act().and_then(|a| a.waiting).map(|w| w.since);
        let key = job.def.concurrency_key.as_deref();
        match entry {
            None => key.is_none() && open_on.is_none() && waiting.is_none(),
            Some(e) => {
                e.key.as_deref() == key
                    && e.width == job.def.lane_width()
                    && e.open_on == open_on
                    && e.waiting == waiting
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Lane {
    open: u32,
    /// How many jobs of this key ask for each width; the smallest wins.
    widths: BTreeMap<u32, u32>,
    /// Every job of this key that waits, oldest first (ties by sequence number).
    waiters: BTreeSet<(Timestamp, u64)>,
    /// The waiter this lane has put in `Lanes::ready` (its head, while the lane has room).
    head: Option<(Timestamp, u64)>,
}

impl Lane {
    fn width(&self) -> u32 {
        self.widths.first_key_value().map_or(1, |(w, _)| *w)
    }

    fn has_room(&self) -> bool {
        self.open < self.width()
    }
}

/// The derived concurrency indexes of a state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lanes {
    per_process: BTreeMap<ProcessId, u32>,
    keys: BTreeMap<String, Lane>,
    /// Waiters without a key (they wait only for the cap).
    free: BTreeSet<(Timestamp, u64)>,
    /// The head waiter of every lane with room: only the cap holds these back.
    ready: BTreeSet<(Timestamp, u64)>,
}

impl Lanes {
    fn add(&mut self, seq: u64, e: &LaneEntry, sign: bool) {
        if let Some(p) = e.open_on {
            let n = self.per_process.entry(p).or_insert(0);
            *n = if sign { *n + 1 } else { n.saturating_sub(1) };
            if *n == 0 {
                self.per_process.remove(&p);
            }
        }
        match &e.key {
            None => {
                if let Some(since) = e.waiting {
                    if sign {
                        self.free.insert((since, seq));
                    } else {
                        self.free.remove(&(since, seq));
                    }
                }
            }
            Some(key) => {
                // Looked up before inserting: most calls find the lane, and an `entry` would
                // clone the key for every one of them.
                if !self.keys.contains_key(key) {
                    self.keys.insert(key.clone(), Lane::default());
                }
                let lane = self.keys.get_mut(key).expect("inserted above");
                let w = lane.widths.entry(e.width).or_insert(0);
                *w = if sign { *w + 1 } else { w.saturating_sub(1) };
                if *w == 0 {
                    lane.widths.remove(&e.width);
                }
                if e.open_on.is_some() {
                    lane.open = if sign {
                        lane.open + 1
                    } else {
                        lane.open.saturating_sub(1)
                    };
                }
                if let Some(since) = e.waiting {
                    if sign {
                        lane.waiters.insert((since, seq));
                    } else {
                        lane.waiters.remove(&(since, seq));
                    }
                }
                let head = lane
                    .has_room()
                    .then(|| lane.waiters.first().copied())
                    .flatten();
                if head != lane.head {
                    if let Some(old) = lane.head {
                        self.ready.remove(&old);
                    }
                    if let Some(new) = head {
                        self.ready.insert(new);
                    }
                    lane.head = head;
                }
                if lane.widths.is_empty() {
                    self.keys.remove(key);
                }
            }
        }
    }

    /// The oldest waiter that only the cap holds back.
    fn first_ready(&self) -> Option<(Timestamp, u64)> {
        match (self.ready.first(), self.free.first()) {
            (Some(a), Some(b)) => Some(*a.min(b)),
            (a, b) => a.or(b).copied(),
        }
    }
}

impl State {
    /// Moves a job's contribution to the concurrency indexes to what its record says now.
    pub(crate) fn relane(&mut self, seq: u64) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        if LaneEntry::matches(job.lane.as_deref(), job) {
            return;
        }
        let new = LaneEntry::of(job);
        let job = self.jobs.get_mut(&seq).expect("looked up above");
        if let Some(old) = &job.lane {
            self.lanes.add(seq, old, false);
        }
        if let Some(new) = &new {
            self.lanes.add(seq, new, true);
        }
        job.lane = new.map(Box::new);
    }

    /// Takes a removed job's contribution out of the indexes.
    pub(crate) fn unlane(&mut self, seq: u64, job: &JobRecord) {
        if let Some(old) = &job.lane {
            self.lanes.add(seq, old, false);
        }
    }

    /// Whether the job may start a run on `process` now, or why it must wait. Its own
    /// cached entry may still count a run it no longer has (a run just settled or lost in
    /// this visit, before `reindex`), so that run is not held against it.
    pub(crate) fn gate(&self, seq: u64, process: ProcessId) -> Option<WaitReason> {
        let job = self.jobs.get(&seq)?;
        let stale = job.lane.as_deref().and_then(|e| e.open_on);
        if let Some(key) = &job.def.concurrency_key {
            if let Some(lane) = self.lanes.keys.get(key) {
                let own_key = job.lane.as_deref().and_then(|e| e.key.as_ref());
                let own = u32::from(stale.is_some() && own_key == Some(key));
                let open = lane.open.saturating_sub(own);
                let width = lane.width().min(job.def.lane_width());
                let ahead = lane.waiters.first().is_some_and(|&(_, s)| s != seq);
                if open >= width || ahead {
                    return Some(WaitReason::LaneBusy);
                }
            }
        }
        if let Some(cap) = self.config.max_runs_per_process {
            let held = self.lanes.per_process.get(&process).copied().unwrap_or(0);
            let held = held.saturating_sub(u32::from(stale == Some(process)));
            if held >= cap {
                return Some(WaitReason::ConcurrencyCap);
            }
            // Older keyless waiters go first when room opens on this process.
            if job.def.concurrency_key.is_none()
                && self.lanes.free.first().is_some_and(|&(_, s)| s != seq)
                && job.act().and_then(|a| a.waiting).is_none()
            {
                return Some(WaitReason::ConcurrencyCap);
            }
        }
        None
    }

    /// Lets waiters in, oldest first, while `process` may claim and has room under the cap:
    /// each is the head of a lane with room (or waits for no lane). Called when room may
    /// have opened (a tick, a settlement), so a freed lane never waits for a scan.
    pub(crate) fn admit(&mut self, now: Timestamp, process: ProcessId, out: &mut crate::step::Out) {
        if !self.can_claim(process, now) {
            return;
        }
        while let Some((since, seq)) = self.lanes.first_ready() {
            let room = self
                .config
                .max_runs_per_process
                .is_none_or(|cap| self.lanes.per_process.get(&process).copied().unwrap_or(0) < cap);
            if !room {
                return;
            }
            self.try_start(seq, now, process, out);
            if let Some(job) = self.jobs.get_mut(&seq) {
                job.tidy();
            }
            self.reindex(seq);
            if self.lanes.first_ready() == Some((since, seq)) {
                // It could not start after all (nothing to start); never loop on it.
                return;
            }
        }
    }

    /// Open runs held by `process` (for views and tests).
    pub fn open_runs_of(&self, process: ProcessId) -> u32 {
        self.lanes.per_process.get(&process).copied().unwrap_or(0)
    }

    /// Open runs of a concurrency key.
    pub fn open_runs_of_key(&self, key: &str) -> u32 {
        self.lanes.keys.get(key).map_or(0, |l| l.open)
    }

    /// Checks the indexes against a fresh build from the jobs.
    pub(crate) fn check_lanes(&self) -> Result<(), String> {
        let mut fresh = Lanes::default();
        for (&seq, job) in &self.jobs {
            let entry = LaneEntry::of(job);
            if job.lane.as_deref() != entry.as_ref() {
                return Err(format!("{}: concurrency entry is stale", job.def.name));
            }
            if let Some(e) = &entry {
                fresh.add(seq, e, true);
            }
        }
        // The ready heads depend on the order entries were added only through `head`,
        // which is recomputed from the lane on every add, so a fresh build must agree.
        // (Counts over a width or the cap are not broken state: a narrowed lane or an
        // adopted run may leave more open than a start would be allowed; starts wait.)
        if fresh != self.lanes {
            return Err("concurrency indexes disagree with the jobs".to_string());
        }
        Ok(())
    }
}
