//! Concurrency: how many runs each process and each concurrency key has open, and who waits
//! for room, oldest first. All of it is derived from the jobs (rebuilt on load, never
//! serialized) and kept exact by `State::reindex`, which every transition calls after it
//! changes a job: a job's cached `LaneEntry` says what it added to these indexes, so moving
//! it is a diff, and no path that opens or closes a run can forget to count it.

use std::collections::{BTreeMap, BTreeSet};

use crate::effect::WaitReason;
use crate::event::ProcessId;
use crate::jobs::JobSeq;
use crate::state::{Activity, JobRecord, RunLane, State};
use crate::time::Timestamp;

/// What one job adds to the concurrency indexes: its key, and what it counts there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaneEntry {
    key: Option<String>,
    /// The lane its open run started in, when the job has moved to another key since
    /// (`OpenRun::lane`): the run counts there, the job's width and wait under `key`.
    moved: Option<RunLane>,
    slot: Slot,
}

/// What a job counts, under its key or without one: its lane width, the process its open
/// run is held by, and since when it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    width: u32,
    open_on: Option<ProcessId>,
    waiting: Option<Timestamp>,
}

/// A job's entry as borrowed from its record or its cached `LaneEntry`, so comparing and
/// moving one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seat<'a> {
    key: Option<&'a str>,
    /// The key its open run counts under: `key`, unless the job moved while it ran (and
    /// `key` when it has no open run, so seats of one job compare by what they count).
    run_key: Option<&'a str>,
    slot: Slot,
}

impl LaneEntry {
    /// The entry the job's record asks for now; `None` for a job that adds nothing (no key,
    /// no open run, not waiting), so most jobs carry no entry.
    fn seat_of(job: &JobRecord) -> Option<Seat<'_>> {
        let open_on = job.run_holder();
        let waiting = job.act().and_then(Activity::waiting).map(|w| w.since);
        let key = job.def.concurrency_key.as_deref();
        if key.is_none() && open_on.is_none() && waiting.is_none() {
            return None;
        }
        Some(Seat {
            key,
            run_key: if open_on.is_some() {
                job.run_key()
            } else {
                key
            },
            slot: Slot {
                width: job.def.lane_width(),
                open_on,
                waiting,
            },
        })
    }

    fn seat(&self) -> Seat<'_> {
        let key = self.key.as_deref();
        // (`moved` is set only while the run is open on a process: `moved_lane`.)
        let run_key = match &self.moved {
            Some(lane) => lane.key(),
            None => key,
        };
        Seat {
            key,
            run_key,
            slot: self.slot,
        }
    }

    /// Whether this entry counts in the indexes what the job's record asks for now (key, run
    /// key and slot), without building an entry: what `relane` moves by, and the entry's
    /// check.
    pub(crate) fn matches(entry: Option<&LaneEntry>, job: &JobRecord) -> bool {
        entry.map(LaneEntry::seat) == LaneEntry::seat_of(job)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Lane {
    open: u32,
    /// How many jobs of this key ask for each width; the smallest wins.
    widths: BTreeMap<u32, u32>,
    /// Every job of this key that waits, oldest first (ties by sequence number).
    waiters: BTreeSet<(Timestamp, JobSeq)>,
    /// The waiter this lane has put in `Lanes::ready` (its head, while the lane has room).
    head: Option<(Timestamp, JobSeq)>,
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
    per_process: RunsPerProcess,
    keys: BTreeMap<String, Lane>,
    /// Waiters without a key (they wait only for the cap).
    free: BTreeSet<(Timestamp, JobSeq)>,
    /// The head waiter of every lane with room: only the cap holds these back.
    ready: BTreeSet<(Timestamp, JobSeq)>,
}

/// Open runs per process, sorted by process, without zero counts: few processes hold runs
/// at once, and a map that frees its node when its last count drops to zero would allocate
/// again on every run an idle process opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct RunsPerProcess(Vec<(ProcessId, u32)>);

impl RunsPerProcess {
    fn get(&self, p: ProcessId) -> u32 {
        self.0
            .binary_search_by_key(&p, |&(q, _)| q)
            .map_or(0, |i| self.0[i].1)
    }

    fn bump(&mut self, p: ProcessId, up: bool) {
        match self.0.binary_search_by_key(&p, |&(q, _)| q) {
            Ok(i) if up => self.0[i].1 += 1,
            Ok(i) if self.0[i].1 <= 1 => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].1 -= 1,
            Err(i) if up => self.0.insert(i, (p, 1)),
            Err(_) => {}
        }
    }
}

/// The lane an open run of `job` keeps apart from the job's key (`OpenRun::lane`), if
/// it is open there.
fn moved_lane(job: &JobRecord) -> Option<RunLane> {
    job.run_holder()?;
    job.run().and_then(|r| r.lane.clone())
}

/// What one job adds to the lane of one key: its width and wait where it is a member (its
/// key), its open run where that counts (its run's key; the same lane but for a job
/// moved while it ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    width: Option<u32>,
    open: bool,
    waiting: Option<Timestamp>,
}

impl<'a> Seat<'a> {
    /// What this seat adds to the lane of `key`, if anything.
    fn part_in(self, key: &str) -> Option<Part> {
        let member = self.key == Some(key);
        let open = self.run_key == Some(key) && self.slot.open_on.is_some();
        (member || open).then_some(Part {
            width: member.then_some(self.slot.width),
            open,
            waiting: self.slot.waiting.filter(|_| member),
        })
    }

    /// The keys this seat counts under: its key and its run's, each once.
    fn keys(self) -> [Option<&'a str>; 2] {
        let run_key = self.run_key.filter(|_| self.run_key != self.key);
        [self.key, run_key]
    }
}

/// Since when a job without a key waits (it waits only for the cap).
fn free_wait(e: Option<Seat>) -> Option<Timestamp> {
    e.filter(|e| e.key.is_none()).and_then(|e| e.slot.waiting)
}

/// Moves a count in a map of counts, dropping a count that reaches zero so that maps built
/// in different orders compare equal.
fn count<K: Ord + Copy>(map: &mut BTreeMap<K, u32>, k: K, up: bool) {
    let n = map.entry(k).or_insert(0);
    *n = if up { *n + 1 } else { n.saturating_sub(1) };
    if *n == 0 {
        map.remove(&k);
    }
}

fn reseat(
    set: &mut BTreeSet<(Timestamp, JobSeq)>,
    seq: JobSeq,
    old: Option<Timestamp>,
    new: Option<Timestamp>,
) {
    if old != new {
        if let Some(t) = old {
            set.remove(&(t, seq));
        }
        if let Some(t) = new {
            set.insert((t, seq));
        }
    }
}

impl Lanes {
    /// Moves one job's contribution from `old` to `new`, touching only what differs: most
    /// changes are a run opening or closing under the same key, and taking the job out of
    /// its lane and putting it back would drop and rebuild the lane (its key's `String`
    /// included) every time.
    fn shift(&mut self, seq: JobSeq, old: Option<Seat>, new: Option<Seat>) {
        let holder = |e: Option<Seat>| e.and_then(|e| e.slot.open_on);
        if holder(old) != holder(new) {
            if let Some(p) = holder(old) {
                self.per_process.bump(p, false);
            }
            if let Some(p) = holder(new) {
                self.per_process.bump(p, true);
            }
        }
        reseat(&mut self.free, seq, free_wait(old), free_wait(new));
        let part = |e: Option<Seat>, k: &str| e.and_then(|e| e.part_in(k));
        let was = old.map_or([None, None], Seat::keys);
        let is = new.map_or([None, None], Seat::keys);
        // Every key either seat counts under, each once (at most four, mostly one).
        for (i, k) in was.iter().chain(&is).enumerate() {
            let Some(k) = *k else { continue };
            if was.iter().chain(&is).take(i).any(|&seen| seen == Some(k)) {
                continue;
            }
            self.retune(seq, k, part(old, k), part(new, k));
        }
    }

    /// Moves a job's part in the lane of `key` from `old` to `new` (`None`: not in it),
    /// then the lane's head in `ready`; a lane no job names any more is dropped.
    fn retune(&mut self, seq: JobSeq, key: &str, old: Option<Part>, new: Option<Part>) {
        if !self.keys.contains_key(key) {
            if new.is_none() {
                return;
            }
            self.keys.insert(key.to_string(), Lane::default());
        }
        let Some(lane) = self.keys.get_mut(key) else {
            return;
        };
        let width = |p: Option<Part>| p.and_then(|p| p.width);
        if width(old) != width(new) {
            if let Some(w) = width(old) {
                count(&mut lane.widths, w, false);
            }
            if let Some(w) = width(new) {
                count(&mut lane.widths, w, true);
            }
        }
        let open = |p: Option<Part>| p.is_some_and(|p| p.open);
        match (open(old), open(new)) {
            (false, true) => lane.open += 1,
            (true, false) => lane.open = lane.open.saturating_sub(1),
            _ => {}
        }
        let waiting = |p: Option<Part>| p.and_then(|p| p.waiting);
        reseat(&mut lane.waiters, seq, waiting(old), waiting(new));
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
        if lane.widths.is_empty() && lane.open == 0 {
            self.keys.remove(key);
        }
    }

    /// The processes holding open runs, in process order.
    pub(crate) fn holders(&self) -> impl Iterator<Item = ProcessId> + '_ {
        self.per_process.0.iter().map(|&(p, _)| p)
    }

    /// The oldest waiter that only the cap holds back.
    fn first_ready(&self) -> Option<(Timestamp, JobSeq)> {
        match (self.ready.first(), self.free.first()) {
            (Some(a), Some(b)) => Some(*a.min(b)),
            (a, b) => a.or(b).copied(),
        }
    }
}

impl State {
    /// Moves a job's contribution to the concurrency indexes to what its record says now,
    /// updating its cached entry in place (its key is copied only when it changed).
    pub(crate) fn relane(&mut self, seq: JobSeq) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        if LaneEntry::matches(job.lane.as_deref(), job) {
            return;
        }
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let new = LaneEntry::seat_of(job);
        let old = job.lane.as_deref().map(LaneEntry::seat);
        self.lanes.shift(seq, old, new);
        let same_key = old.map(|o| o.key) == new.map(|n| n.key);
        let moved = moved_lane(job);
        match (new.map(|n| n.slot), &mut job.lane) {
            (None, lane) => *lane = None,
            (Some(slot), Some(e)) if same_key => {
                e.slot = slot;
                e.moved = moved;
            }
            (Some(slot), lane) => {
                *lane = Some(Box::new(LaneEntry {
                    key: job.def.concurrency_key.clone(),
                    moved,
                    slot,
                }))
            }
        }
    }

    /// Takes a removed job's contribution out of the indexes.
    pub(crate) fn unlane(&mut self, seq: JobSeq, job: &JobRecord) {
        self.lanes
            .shift(seq, job.lane.as_deref().map(LaneEntry::seat), None);
    }

    /// Whether the job may start a run on `process` now, or why it must wait. Its own
    /// cached entry may still count a run it no longer has (a run just settled or lost in
    /// this visit, before `reindex`), so that run is not held against it.
    pub(crate) fn gate(&self, seq: JobSeq, process: ProcessId) -> Option<WaitReason> {
        let job = self.jobs.get(&seq)?;
        let stale = job.lane.as_deref().and_then(|e| e.slot.open_on);
        if let Some(key) = &job.def.concurrency_key {
            if let Some(lane) = self.lanes.keys.get(key) {
                let own_key = job.lane.as_deref().and_then(|e| e.seat().run_key);
                let own = u32::from(stale.is_some() && own_key == Some(key.as_str()));
                let open = lane.open.saturating_sub(own);
                let width = lane.width().min(job.def.lane_width());
                let ahead = lane.waiters.first().is_some_and(|&(_, s)| s != seq);
                if open >= width || ahead {
                    return Some(WaitReason::LaneBusy);
                }
            }
        }
        if let Some(cap) = self.config.max_runs_per_process {
            let held = self.lanes.per_process.get(process);
            let held = held.saturating_sub(u32::from(stale == Some(process)));
            if held >= cap {
                return Some(WaitReason::ConcurrencyCap);
            }
            // Older keyless waiters go first when room opens on this process.
            if job.def.concurrency_key.is_none()
                && self.lanes.free.first().is_some_and(|&(_, s)| s != seq)
                && job.act().and_then(Activity::waiting).is_none()
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
                .is_none_or(|cap| self.lanes.per_process.get(process) < cap);
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
        self.lanes.per_process.get(process)
    }

    /// Open runs of a concurrency key.
    pub fn open_runs_of_key(&self, key: &str) -> u32 {
        self.lanes.keys.get(key).map_or(0, |l| l.open)
    }

    /// Checks the indexes against a fresh build from the jobs.
    #[cfg(test)]
    pub(crate) fn check_lanes(&self) -> Result<(), crate::inconsistency::Inconsistency> {
        let jobs: Vec<_> = self.jobs.iter().collect();
        self.check_lanes_of(&jobs)
    }

    /// `check_lanes` over `jobs`, the job table in sequence order.
    pub(crate) fn check_lanes_of(
        &self,
        jobs: &[(&JobSeq, &JobRecord)],
    ) -> Result<(), crate::inconsistency::Inconsistency> {
        let mut fresh = Lanes::default();
        for &(&seq, job) in jobs {
            // Compared as borrowed seats: building each job's entry cloned its key.
            if !LaneEntry::matches(job.lane.as_deref(), job) {
                return Err(crate::inconsistency::Inconsistency::LaneEntryStale {
                    job: job.def.name.clone(),
                });
            }
            fresh.shift(seq, None, job.lane.as_deref().map(LaneEntry::seat));
        }
        // The ready heads depend on the order entries were added only through `head`,
        // which is recomputed from the lane on every add, so a fresh build must agree.
        // (Counts over a width or the cap are not broken state: a narrowed lane or an
        // adopted run may leave more open than a start would be allowed; starts wait.)
        if fresh != self.lanes {
            return Err(crate::inconsistency::Inconsistency::LanesDisagree);
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::inconsistency::Inconsistency;
    use crate::{
        Actor, Config, Duration, Event, JobDef, JobName, Now, ProcessId, Schedule, State, Timestamp,
    };

    /// Two jobs of one key, one running and one waiting for the lane: every index in use.
    /// (Also the start of `state::touched_check_tests`' busy state.)
    pub(crate) fn a_busy_lane() -> State {
        let mut state = State::new(Config::default());
        let mut out = Vec::new();
        let hour = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        let t = |s: i64| Now::at(Timestamp::from_millis(s * 1000));
        for name in ["write_a", "write_b"] {
            let mut def = JobDef::new(JobName::new(name).unwrap(), hour.clone());
            def.concurrency_key = Some("/srv".into());
            let actor = Actor::new("ana");
            let def = Box::new(def);
            state.step(t(3000), Event::Upsert { def, actor }, &mut out);
        }
        let process = ProcessId(1);
        state.step(t(3500), Event::ProcessStarted { process }, &mut out);
        let held = Vec::new();
        state.step(t(3610), Event::Tick { process, held }, &mut out);
        assert_eq!(state.open_runs_of_key("/srv"), 1);
        assert_eq!(state.check_lanes(), Ok(()));
        state
    }

    #[test]
    fn the_self_check_finds_a_lane_index_that_disagrees_with_the_jobs() {
        let mut state = a_busy_lane();
        state.lanes.keys.clear();
        assert_eq!(state.check_lanes(), Err(Inconsistency::LanesDisagree));
        let mut state = a_busy_lane();
        state.lanes.per_process.0.clear();
        assert_eq!(state.check_lanes(), Err(Inconsistency::LanesDisagree));
    }

    #[test]
    fn the_self_check_finds_a_jobs_stale_lane_entry() {
        let mut state = a_busy_lane();
        let seq = state.seq_of_name("write_b").unwrap();
        state.jobs.get_mut(&seq).unwrap().lane = None;
        let job = JobName::new("write_b").unwrap();
        assert_eq!(
            state.check_lanes(),
            Err(Inconsistency::LaneEntryStale { job })
        );
    }
}
