//! The replayed host: one process (or none, while down), its clocks, its runs' children,
//! fed to the core event by event in a deterministic order.

use std::collections::BTreeMap;

use duetime::{
    Actor, Alert, CancelReason, Duration, Effect, Event, Fence, JobDef, JobName, Notice, Now,
    Outcome, ProcessId, Record, RunId, State, Timestamp,
};
use duetime_loop::{Incarnation, LeftRun, Order, Started, Startup, BATCH_MAX};

use super::plan::Scenario;
use super::report::utc;

/// Events stepped before the replay stops early (a one-second schedule over a year).
pub(super) const MAX_EVENTS: u64 = 5_000_000;
/// The least time between two ticks the core's wake time asks for, as the daemon's poll.
const MIN_WAKE_GAP: Duration = Duration::from_secs(1);
const ACTOR: &str = "what-if";

/// What happens at an instant, besides ticks (which are computed, not queued).
#[derive(Debug)]
enum Happening {
    Jump(i64),
    Crash,
    Start,
    Pause(JobName),
    Resume(JobName),
    RunEnds(RunId),
    /// The reports of the runs that ended at this instant, in one batch.
    Report,
}

/// A run's command as the host sees it: it goes on whether or not a process is up.
struct Child {
    job: JobName,
    fence: Fence,
    /// The incarnation that started or adopted it.
    holder: ProcessId,
    ends: Timestamp,
    outcome: Outcome,
    /// It ended while no process was up: the next incarnation reports it.
    exited: bool,
}

/// What the replay produced.
#[derive(Default)]
pub(super) struct Replay {
    pub(super) records: Vec<Record>,
    pub(super) alerts: Vec<Alert>,
    /// Refused commands and other things a reader should know.
    pub(super) notes: Vec<String>,
    pub(super) processes: Vec<(ProcessId, Timestamp)>,
    /// The state at the end, one a partition replayed.
    pub(super) states: Vec<State>,
    pub(super) stopped_early: Option<Timestamp>,
}

impl Replay {
    /// The replays of a store's partitions as one: journal lines and alerts in time order
    /// (at one instant, partition order), notes and incarnations one partition after the
    /// other, every partition's end state, and the earliest early stop.
    pub(super) fn merge(parts: Vec<Replay>) -> Replay {
        let mut all = Replay::default();
        for part in parts {
            all.records.extend(part.records);
            all.alerts.extend(part.alerts);
            all.notes.extend(part.notes);
            all.processes.extend(part.processes);
            all.states.extend(part.states);
            all.stopped_early = match (all.stopped_early, part.stopped_early) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        // Stable: within one partition, and at one instant, the order each was written in.
        all.records.sort_by_key(|r| r.at);
        all.alerts.sort_by_key(|a| a.at);
        all.processes.sort_by_key(|&(_, at)| at);
        all
    }
}

/// The replayed host: the state, its clocks, its process and its runs' children.
pub(super) struct World<'a> {
    state: State,
    scenario: &'a Scenario,
    defs: Vec<JobDef>,
    /// True time now; the wall clock reads `now + offset`, the monotonic clock `now`.
    now: Timestamp,
    offset: i64,
    /// The incarnation up, if any: the runs it holds (`duetime_loop`, the daemon's turn).
    up: Option<Incarnation>,
    next_pid: u64,
    queue: BTreeMap<(Timestamp, u64), Happening>,
    seq: u64,
    children: BTreeMap<RunId, Child>,
    /// Runs of the incarnation up whose commands ended at this instant, to report in its
    /// batch (`Happening::Report`, queued once per instant).
    ended: Vec<(RunId, Outcome)>,
    last_tick: Timestamp,
    out: Replay,
}

impl<'a> World<'a> {
    /// Replays the scenario from `state`, the file's definitions upserted at its start.
    pub(super) fn replay(state: State, defs: Vec<JobDef>, scenario: &'a Scenario) -> Replay {
        let mut w = World::new(state, defs, scenario);
        w.open_runs();
        w.upsert_all();
        w.queue_scenario();
        w.run();
        w.out.states = vec![w.state];
        w.out
    }

    /// The world at the scenario's start, nothing queued.
    fn new(state: State, defs: Vec<JobDef>, scenario: &'a Scenario) -> World<'a> {
        let from = scenario.from;
        // Process ids above every one the state knows, so none is reused.
        let max_pid = state
            .globals()
            .processes()
            .keys()
            .map(|p| p.0)
            .chain(
                state
                    .records()
                    .filter_map(|(_, r)| r.run())
                    .map(|r| r.holder().0),
            )
            .max()
            .unwrap_or(0);
        World {
            state,
            scenario,
            defs,
            now: from,
            offset: 0,
            up: None,
            next_pid: max_pid.saturating_add(1),
            queue: BTreeMap::new(),
            seq: 0,
            children: BTreeMap::new(),
            ended: Vec::new(),
            last_tick: from,
            out: Replay::default(),
        }
    }

    /// Runs the store holds open: an earlier incarnation's children, each ending its
    /// assumed duration after it started.
    fn open_runs(&mut self) {
        let open: Vec<(RunId, JobName, Fence, ProcessId, Timestamp)> = self
            .state
            .records()
            .filter_map(|(_, r)| {
                let run = r.run()?;
                Some((
                    run.id(),
                    r.def().name.clone(),
                    run.fence(),
                    run.holder(),
                    run.started(),
                ))
            })
            .collect();
        for (run, job, fence, holder, started) in open {
            self.child(run, job, fence, holder, started);
        }
    }

    /// The flags' happenings: clock jumps, crashes and starts, pauses and resumes.
    fn queue_scenario(&mut self) {
        let scenario = self.scenario;
        let from = scenario.from;
        for j in &scenario.jumps {
            self.push(j.at, Happening::Jump(j.by_ms));
        }
        let down_at_start = scenario.down.iter().any(|d| d.from <= from && from < d.to);
        if !down_at_start {
            self.push(from, Happening::Start);
        }
        for d in &scenario.down {
            if d.from > from {
                self.push(d.from, Happening::Crash);
            }
            self.push(d.to, Happening::Start);
        }
        for p in &scenario.pauses {
            self.push(p.window.from, Happening::Pause(p.job.clone()));
            self.push(p.window.to, Happening::Resume(p.job.clone()));
        }
    }

    fn push(&mut self, at: Timestamp, h: Happening) {
        self.seq += 1;
        self.queue.insert((at, self.seq), h);
    }

    fn now(&self) -> Now {
        let wall = Timestamp::from_millis(self.now.as_millis().saturating_add(self.offset));
        Now::new(wall, self.now)
    }

    fn run(&mut self) {
        let mut events = 0u64;
        loop {
            let next_event = self.queue.first_key_value().map(|(k, _)| k.0);
            let next_tick = self.up.as_ref().map(|_| self.next_tick());
            let (at, tick) = match (next_event, next_tick) {
                (Some(e), Some(t)) if t < e => (t, true),
                (Some(e), _) => (e, false),
                (None, Some(t)) => (t, true),
                (None, None) => break,
            };
            if at > self.scenario.until {
                break;
            }
            events += 1;
            if events > MAX_EVENTS {
                self.out.stopped_early = Some(at);
                break;
            }
            self.now = at;
            if tick {
                self.tick();
            } else if let Some((_, h)) = self.queue.pop_first() {
                self.happen(h);
            }
        }
    }

    /// Every tick of the monotonic clock, and at the core's wake time (read on the wall
    /// clock) but not within a second of the previous tick.
    fn next_tick(&self) -> Timestamp {
        let periodic = self.last_tick.saturating_add(self.state.config().tick);
        let soonest = self.last_tick.saturating_add(MIN_WAKE_GAP);
        let wake = self.state.next_wake().map(|w| {
            Timestamp::from_millis(w.as_millis().saturating_sub(self.offset)).max(soonest)
        });
        wake.map_or(periodic, |w| w.min(periodic)).max(self.now)
    }

    fn step(&mut self, event: Event) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.state.step(self.now(), event, &mut effects);
        self.carry_out(&effects);
        effects
    }

    /// What a daemon does as it starts: the file's definitions upserted, the jobs the file
    /// lacks removed.
    fn upsert_all(&mut self) {
        let defs = self.defs.clone();
        let gone: Vec<JobName> = self
            .state
            .records()
            .map(|(_, r)| r.def().name.clone())
            .filter(|name| !defs.iter().any(|d| d.name == *name))
            .collect();
        let order = duetime_host::jobs_file::upsert_order(&defs);
        for def in order.into_iter().map(|i| defs[i].clone()) {
            self.step(Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("jobs-file"),
            });
        }
        for job in gone {
            self.step(Event::Remove {
                job,
                actor: Actor::new("jobs-file"),
            });
        }
    }

    fn tick(&mut self) {
        let Some(tick) = self.up.as_ref().map(Incarnation::tick) else {
            return;
        };
        self.step(tick);
        self.last_tick = self.now;
    }

    fn happen(&mut self, h: Happening) {
        match h {
            Happening::Jump(by) => self.offset = self.offset.saturating_add(by),
            Happening::Crash => {
                // Its children go on; what ended and was not reported yet is theirs to
                // report to the next incarnation.
                for (run, _) in std::mem::take(&mut self.ended) {
                    if let Some(c) = self.children.get_mut(&run) {
                        c.exited = true;
                    }
                }
                self.up = None;
            }
            Happening::Start => self.start(),
            Happening::Pause(job) => {
                self.step(Event::Pause {
                    job,
                    actor: Actor::new(ACTOR),
                    note: "what-if --pause".to_string(),
                });
            }
            Happening::Resume(job) => {
                self.step(Event::Resume {
                    job,
                    actor: Actor::new(ACTOR),
                });
            }
            Happening::RunEnds(run) => self.run_ends(run),
            Happening::Report => self.report(),
        }
    }

    /// A new incarnation, as the daemon starts: definitions, then the one order of
    /// start-up (`duetime_loop::Startup`: the runs earlier ones left reported if ended and
    /// adopted if going, then `ProcessStarted`).
    fn start(&mut self) {
        if self.up.is_some() {
            return;
        }
        let process = ProcessId(self.next_pid);
        self.next_pid = self.next_pid.saturating_add(1);
        self.out.processes.push((process, self.now));
        self.up = Some(Incarnation::new(process));
        self.upsert_all();
        let left = self.children.iter().map(|(&run, c)| {
            let (job, fence) = (c.job.clone(), c.fence);
            if c.exited {
                let outcome = c.outcome.clone();
                LeftRun::Ended {
                    run,
                    job,
                    fence,
                    outcome,
                }
            } else {
                LeftRun::Going { run, job, fence }
            }
        });
        let mut startup = Startup::new(process, left.collect::<Vec<_>>());
        while let Some(event) = startup.next_event() {
            let effects = self.step(event);
            match startup.committed(&effects) {
                Some(Started::Adopted { run, job, fence }) => {
                    if let Some(c) = self.children.get_mut(&run) {
                        c.holder = process;
                    }
                    if let Some(up) = &mut self.up {
                        up.adopt(run, job, fence);
                    }
                }
                Some(Started::NotAdopted { run, .. } | Started::Reported { run }) => {
                    self.children.remove(&run);
                }
                Some(Started::Registered) | None => {}
            }
        }
        self.last_tick = self.now;
    }

    /// A run's command ends: the incarnation holding it reports it in this instant's batch
    /// (`report`); with none up, it waits for the next one.
    fn run_ends(&mut self, run: RunId) {
        let Some(c) = self.children.get_mut(&run) else {
            return;
        };
        if c.ends != self.now || c.exited {
            // An earlier end replaced by a cancel.
            return;
        }
        let held = self
            .up
            .as_ref()
            .filter(|up| up.process() == c.holder)
            .is_some_and(|up| up.holding(run).is_some());
        if !held {
            c.exited = true;
            return;
        }
        let outcome = c.outcome.clone();
        if self.ended.is_empty() {
            self.push(self.now, Happening::Report);
        }
        self.ended.push((run, outcome));
    }

    /// The batch of this instant: the reports of the runs that ended, then the tick if it
    /// falls now (stepped at once: a replay's transactions always commit); every effect
    /// carried out after the last step, as after a commit.
    fn report(&mut self) {
        let mut ended = std::mem::take(&mut self.ended);
        let tick = self.next_tick() == self.now;
        let Some(batch) = self
            .up
            .as_ref()
            .map(|up| up.batch(ended.iter().cloned(), tick, BATCH_MAX))
        else {
            return;
        };
        let now = self.now();
        let mut effects = Vec::new();
        for e in batch.events() {
            self.state.step(now, e.clone(), &mut effects);
        }
        for &(run, _) in batch.reports() {
            self.children.remove(&run);
        }
        if let Some(up) = &mut self.up {
            up.committed(&batch);
        }
        if batch.ticks() {
            self.last_tick = self.now;
        }
        // More ended than a batch holds: the rest go in the next batch, at this instant.
        let up = self.up.as_ref();
        ended.retain(|(run, _)| up.is_some_and(|up| up.holding(*run).is_some()));
        if !ended.is_empty() {
            self.push(self.now, Happening::Report);
            self.ended = ended;
        }
        self.carry_out(&effects);
    }

    fn carry_out(&mut self, effects: &[Effect]) {
        for e in effects {
            match self.up.as_mut().and_then(|up| up.take(e)) {
                Some(Order::Launch {
                    run, job, fence, ..
                }) => self.launch(run, job, fence),
                Some(Order::Stop { run, reason, .. }) => self.stop(run, reason),
                None => self.note(e),
            }
        }
    }

    /// A run's command, started at `started` and held by `holder`: it ends the scenario's
    /// duration for its job later (already, for a run open in the store since long ago).
    fn child(
        &mut self,
        run: RunId,
        job: JobName,
        fence: Fence,
        holder: ProcessId,
        started: Timestamp,
    ) {
        let ends = started.saturating_add(self.scenario.duration_of(job.as_str()));
        let exited = ends <= self.now;
        let child = Child {
            job,
            fence,
            holder,
            ends,
            outcome: Outcome::Ok,
            exited,
        };
        self.children.insert(run, child);
        if !exited {
            self.push(ends, Happening::RunEnds(run));
        }
    }

    /// A run's command starts, to end after the scenario's duration for its job.
    fn launch(&mut self, run: RunId, job: JobName, fence: Fence) {
        let holder = self.up.as_ref().map_or(ProcessId(0), Incarnation::process);
        self.child(run, job, fence, holder, self.now);
    }

    /// The core asked to stop a run: dropped when its lease was lost (the incarnation let
    /// it go: its result would be stale), else ended now by SIGTERM, as a timeout or a
    /// signal, and reported.
    fn stop(&mut self, run: RunId, reason: CancelReason) {
        let now = self.now;
        if reason == CancelReason::LeaseLost {
            self.children.remove(&run);
            return;
        }
        let Some(c) = self.children.get_mut(&run) else {
            return;
        };
        c.outcome = if reason == CancelReason::Timeout {
            Outcome::TimedOut
        } else {
            Outcome::failed("signal TERM")
        };
        c.ends = now;
        self.push(now, Happening::RunEnds(run));
    }

    /// What the replay's reader sees of an effect: journal lines, alerts, refusals.
    fn note(&mut self, e: &Effect) {
        match e {
            Effect::Journal(r) => self.out.records.push(r.clone()),
            Effect::Notice(Notice::Alert(a)) => self.out.alerts.push(a.clone()),
            Effect::Reply {
                job,
                result: Err(refusal),
            } => {
                let job = job.as_ref().map_or("-", |j| j.as_str());
                self.out.notes.push(format!(
                    "{}: {job}: refused: {refusal}",
                    utc(self.now, true)
                ));
            }
            _ => {}
        }
    }
}
