//! The world: one store holding the core's state (one transaction per event), hosts whose
//! processes tick, run jobs, crash, restart, stall and drain under skewed, drifting and
//! jumping wall clocks, people sending commands, and a queue of timed actions. Idle time
//! costs nothing: the world jumps from one action to the next.
//!
//! By concern:
//! - here: the world's state, its making (`World::new`), the loop (`World::run`) and what
//!   each timed action does (`World::handle`);
//! - `queue.rs`: the timed actions and their queue;
//! - `hosts.rs`: each host's process: its turn, start-up, crashes, stalls, drains and the
//!   runs it carries out, over `duetime_loop`'s `Startup` and `Incarnation` (the daemon's
//!   own code; what is here is the world's I/O);
//! - `clocks.rs`: the hosts' clocks, their jumps and settings, and what the core told of
//!   them (J2);
//! - `people.rs`: people's commands, mistakes, backfills, bursts of trouble, and healing;
//! - `store.rs`: the store's transaction (aborted, or its answer lost), what each effect
//!   means for the processes that hear it, and what the checker is told.
//!
//! The world's random streams are named (`gen::Stream`): each feature draws from its own.

mod clocks;
mod hosts;
mod people;
mod queue;
mod store;

use crate::check::Probe;
use clocks::{Clock, MonoUnit};
use hosts::{Host, HostState};
use queue::{Action, Queue};
use store::Commit;

use duetime::Notice;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use duetime::{
    Actor, CancelReason, ClockGapKind, Duration, Effect, Entry, Event, Fence, JobName, Now,
    Outcome, ProcessId, RunId, State, Timestamp,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use duetime_loop::{Holding, Incarnation, LeftRun, Order, Started, Startup};

use crate::check::consensus::Verdict;
use crate::check::{Checker, Invariant, Observation};
use crate::gen::{stream_rng, SimJob, Stream, WorldConfig};

/// The world's random streams beside its first one (`rng`), each drawn from a stream of
/// its own (`gen::Stream`), so a feature added to the worlds moves no other draw of a seed.
struct Streams {
    /// People's mistakes (`mistake`, `pause_note`): drawn from a stream of their own, so
    /// adding them moved the world's other draws only by the steps they add.
    slips: ChaCha8Rng,
    /// Jobs moved between concurrency keys (`move_lane`): a stream of their own too.
    moves: ChaCha8Rng,
    /// People's slow machines (`person_now`): a stream of their own as well.
    slow: ChaCha8Rng,
    /// People's bursts of backfills (`backfill_burst`): and one more.
    bursts: ChaCha8Rng,
    /// Delays a failure asks for at the very edge of its job's wait budget
    /// (`asked_delay`), and successes that found nothing to do: one more.
    edges: ChaCha8Rng,
    /// A drain asked again (`drain_again`): from a stream of its own, drawn only in the
    /// worlds of late draws, so seeds kept by number meet the worlds of their day.
    again: ChaCha8Rng,
    /// Pauses while a retry waits (`pause_waiting`): a stream of its own, drawn only in
    /// the worlds of late draws, like `again`.
    waits: ChaCha8Rng,
    /// Slow turns (`overload`, `slow_turn`): a stream of their own, drawn only in the
    /// overload worlds.
    turns: ChaCha8Rng,
}

impl Streams {
    fn new(seed: u64) -> Streams {
        Streams {
            slips: stream_rng(seed, Stream::Slips),
            moves: stream_rng(seed, Stream::Moves),
            slow: stream_rng(seed, Stream::Slow),
            bursts: stream_rng(seed, Stream::Bursts),
            edges: stream_rng(seed, Stream::Edges),
            again: stream_rng(seed, Stream::Again),
            waits: stream_rng(seed, Stream::Waits),
            turns: stream_rng(seed, Stream::Turns),
        }
    }
}

/// Counts by kind, for the summary.
pub type Counts = BTreeMap<&'static str, u64>;

pub struct World {
    pub cfg: WorldConfig,
    rng: ChaCha8Rng,
    /// The world's other random streams, each of its own (`Streams`).
    streams: Streams,
    /// The world's concurrency keys and each one's width, as its jobs were drawn: a job
    /// moved to a key takes that key's width, so a lane's width stays what C1 knows.
    lane_keys: Vec<(String, Option<u32>)>,
    t: i64,
    queue: Queue,
    /// Reused for every step's effects.
    effects: Vec<Effect>,
    pub state: State,
    /// The checker, fed each journal record and each reported result as they happen: no
    /// journal is kept.
    pub checker: Checker,
    /// The effects of the step being taken that its process heard (its answer not lost),
    /// while a start-up step wants them (`start_up`).
    heard: Option<Vec<Effect>>,
    /// Whether the last transaction's answer was lost on its way to the process.
    lost_last: bool,
    /// J3 (`check/gaps.rs`): each process's clock readings at its latest judged event.
    last_read: BTreeMap<duetime::ProcessId, Now>,
    hosts: Vec<Host>,
    next_process: u64,
    pub jobs: Vec<SimJob>,
    /// The name each job was last seen under in an effect (clones, so their addresses stay
    /// theirs): effects carry the state's copy of a name, found here by address.
    seen_names: Vec<JobName>,
    removed: Vec<bool>,
    /// Per job, the digest of the definition before its latest change (a stale confirm).
    prev_digests: Vec<Option<String>>,
    /// How many times people changed a job's command (each new command is told apart by it).
    commands_changed: u64,
    healed: bool,
    /// What the jobs owed when the liveness phase was last extended (`extend_for_backlog`),
    /// and how far it has been extended.
    backlog: Option<u64>,
    extended_ms: i64,
    /// When the run ends: the liveness phase after healing. (A store whose clock ran
    /// ahead of true time keeps its processes on its time, see the core's
    /// `step/clock.rs`, so nothing waits for true time to catch up.)
    end: i64,
    pub events: u64,
    pub faults: Counts,
    pub probes: crate::check::ProbeCounts,
    /// Every core input, for replay files.
    pub inputs: Option<Vec<(Now, Event)>>,
    pub trace_hash: u64,
    hash_trace: bool,
    /// A readable trace (event, then its effects), when asked for.
    pub trace: Option<Vec<String>>,
    /// Runs keep their durations when the world heals (see `heal`).
    pub keep_durations: bool,
    /// Every committed state passes the core's self-check (S6), not only those round
    /// tripped now and then.
    pub check_state: bool,
    /// Committed states checked under `check_state` (`World::self_check_committed`).
    states_checked: u64,
    /// A committed state failed S6: the world stops there.
    broken: bool,
    /// The watchdog found the world making no progress (see `watchdog_bites`): why.
    pub stuck: Option<String>,
    /// When the world began, by the real clock, and how long a seed may take by it.
    started: std::time::Instant,
    pub seed_budget: std::time::Duration,
    pub max_events_per_hour: f64,
    /// The true time the world began at.
    t0: i64,
    /// Manual runs queued while a process drained under `single_owner`: the job, and the
    /// draining processes then (the probe wants the run started by another).
    manual_in_drain: Vec<(String, Vec<ProcessId>)>,
    /// Owners whose lease another process took over after it lapsed.
    deposed: Vec<ProcessId>,
    /// A store of one row per job, and a copy following its rows (`rows.rs`).
    rows: Option<crate::rows::Rows>,
    /// The jobs the last committed step touched (`State::take_touched`) in a world without
    /// rows (the rows take them in one with: `Rows::touched`).
    touched: Vec<duetime::JobSeq>,
    /// Whether the state the checker is told of after a step is the one the last step left
    /// with every change since the one before marked touched: not after the live state was
    /// replaced (a round trip, the rows' copy taking over), whose records the checker then
    /// reads whole (`World::touched_for_checker`).
    touched_known: bool,
    /// The processes that could contradict a held clock (J2, `check/witness.rs`).
    witnesses: crate::check::witness::Witnesses,
    /// Whether the hosts' clocks agree, and since when (J4, `check/consensus.rs`).
    consensus: crate::check::consensus::Consensus,
    /// The definitions sent so far whose own checks ran (`World::definition_read`).
    definitions_read: Vec<duetime::JobDef>,
}

const HOUR: f64 = 3_600_000.0;

/// The watchdog's bounds (see `World::watchdog_bites`). Worlds spend a few hundred events
/// an hour, a few thousand in a catch-up; a hundred thousand is a core or world that loops.
pub const MAX_EVENTS_PER_HOUR: f64 = 100_000.0;
const MAX_QUEUE: usize = 1_000_000;

/// The most ranges a person's backfill burst asks for (`World::backfill_burst`), and the
/// fewest; one in five is right against the next (a pair the core merges).
pub(crate) const BURST_RANGES: usize = 36;
pub(crate) const BURST_RANGES_FEWEST: usize = BURST_RANGES - 8;

/// A process holding no runs still sends a heartbeat tick at least this often.
const SHOW_EVERY_MS: i64 = 3_600_000;

/// The core's configuration for a world: its tick (the lease and grace from it, within
/// `duetime::MIN_LEASE`), its coordination, its cap on runs per process.
fn core_config(cfg: &WorldConfig) -> duetime::Config {
    let mut config = duetime::Config::with_tick(Duration::from_millis(cfg.tick_ms as u64));
    if cfg.single_owner {
        config.coordination = duetime::Coordination::SingleOwner;
    }
    config.max_runs_per_process = cfg.max_runs_per_process;
    config
}

/// The world's concurrency keys and each one's width, as its jobs were drawn.
fn lane_keys(jobs: &[SimJob]) -> Vec<(String, Option<u32>)> {
    jobs.iter()
        .filter_map(|j| Some((j.def.concurrency_key.clone()?, j.def.concurrency_limit)))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

/// The checker of a world: the promises its store's configuration asks for held (the same
/// as its replays', `Checker::for_store`), and F1 in an overload world, whose processes
/// stay live.
fn checker_for(cfg: &WorldConfig, config: &duetime::Config, jobs: &[SimJob]) -> Checker {
    let mut checker = Checker::for_store(crate::facts_of(jobs), config);
    if cfg.mode == crate::gen::FaultMode::Overload {
        checker.hold_live_hosts();
    }
    checker
}

impl World {
    pub fn new(
        cfg: WorldConfig,
        rng: ChaCha8Rng,
        jobs: Vec<SimJob>,
        record_inputs: bool,
        hash_trace: bool,
    ) -> World {
        let config = core_config(&cfg);
        let checker = checker_for(&cfg, &config, &jobs);
        let (hosts, tick, jump) = (cfg.processes, cfg.tick_ms, config.clock_jump.as_millis());
        let prev_digests = vec![None; jobs.len()];
        let removed = vec![false; jobs.len()];
        let seen_names = jobs.iter().map(|j| j.def.name.clone()).collect();
        let lane_keys = lane_keys(&jobs);
        let mut w = World {
            streams: Streams::new(cfg.seed),
            lane_keys,
            t: cfg.start_ms,
            cfg,
            rng,
            queue: Queue::default(),
            effects: Vec::new(),
            state: State::new(config),
            checker,
            prev_digests,
            commands_changed: 0,
            heard: None,
            lost_last: false,
            last_read: BTreeMap::new(),
            hosts: Vec::new(),
            next_process: 1,
            jobs,
            seen_names,
            removed,
            healed: false,
            backlog: None,
            extended_ms: 0,
            end: i64::MAX,
            events: 0,
            faults: Counts::new(),
            probes: Default::default(),
            inputs: record_inputs.then(Vec::new),
            trace_hash: 0xcbf2_9ce4_8422_2325,
            hash_trace,
            trace: None,
            keep_durations: false,
            check_state: false,
            states_checked: 0,
            broken: false,
            stuck: None,
            started: std::time::Instant::now(),
            seed_budget: std::time::Duration::from_secs(120),
            max_events_per_hour: MAX_EVENTS_PER_HOUR,
            t0: 0,
            manual_in_drain: Vec::new(),
            deposed: Vec::new(),
            rows: None,
            touched: Vec::new(),
            touched_known: false,
            witnesses: crate::check::witness::Witnesses::new(hosts, tick, jump as i64),
            consensus: crate::check::consensus::Consensus::new(hosts, tick, jump as i64),
            definitions_read: Vec::new(),
        };
        if w.cfg.rows {
            w.rows = Some(crate::rows::Rows::new(&mut w.state, w.cfg.seed));
        }
        for _ in 0..w.cfg.processes {
            let clock = Clock::drawn(&mut w.rng, &w.cfg.faults);
            w.hosts.push(Host::down(clock));
        }
        w
    }

    fn at(&mut self, t: i64, action: Action) {
        self.queue.push(t, action);
    }

    /// An exponential wait for a rate per hour, or never.
    fn after_rate(&mut self, per_hour: f64) -> Option<i64> {
        if per_hour <= 0.0 || self.healed {
            return None;
        }
        let u: f64 = self.rng.gen_range(1e-9..1.0);
        Some(self.t + (-u.ln() / per_hour * HOUR) as i64 + 1)
    }

    /// Puts `action` on the queue again after an exponential wait for `per_hour` (never
    /// once healed).
    fn again(&mut self, per_hour: f64, action: Action) {
        if let Some(t) = self.after_rate(per_hour) {
            self.at(t, action);
        }
    }

    fn schedule_faults(&mut self, host: usize) {
        let f = self.cfg.faults;
        for (rate, make) in [
            (f.crash_per_hour, Action::Crash { host }),
            (f.stall_per_hour, Action::Stall { host }),
            (f.jump_per_hour, Action::Jump { host }),
            (f.drain_per_hour, Action::Drain { host }),
            (f.burst_per_hour, Action::Burst { host }),
            (f.overload_per_hour, Action::Overload { host }),
        ] {
            self.again(rate, make);
        }
    }

    /// Runs the world: definitions, processes, faults until the safety phase ends, then a
    /// healed liveness phase.
    pub fn run(&mut self) {
        let t0 = self.t;
        self.t0 = t0;
        // What each step touched, for the state's own check of it (`self_check_committed`)
        // and for the checker's C4, which follows the jobs waiting for room by it.
        self.state.track_changes(true);
        self.started = std::time::Instant::now();
        for i in 0..self.jobs.len() {
            let def = self.jobs[i].def.clone();
            self.transact(
                None,
                Now::at(Timestamp::from_millis(t0)),
                Event::Upsert {
                    def: Box::new(def),
                    actor: Actor::new("setup"),
                },
            );
        }
        for host in 0..self.hosts.len() {
            let delay = self.rng.gen_range(0..self.cfg.tick_ms);
            self.at(t0 + delay, Action::Restart { host });
            self.schedule_faults(host);
        }
        self.again(self.cfg.faults.command_per_hour, Action::Command);
        if self.cfg.late_draws {
            self.schedule_presses(t0);
            if self.cfg.mode != crate::gen::FaultMode::Overload {
                self.schedule_clock_sets(t0);
                self.schedule_mono_units(t0);
            }
        }
        let heal_at = t0 + self.cfg.safety_ms;
        self.end = heal_at + self.cfg.liveness_ms;
        self.at(heal_at, Action::Heal);
        loop {
            // The first of the queue and the processes' ticks, by time, then by the order
            // they were planned in.
            let tick = self
                .hosts
                .iter()
                .enumerate()
                .filter_map(|(i, h)| h.tick.map(|(t, seq, _)| (t, seq, i)))
                .min();
            let queued = self.queue.peek();
            let host = match (tick, queued) {
                (Some((t, seq, i)), Some(q)) if (t, seq) < q => Some(i),
                (Some((_, _, i)), None) => Some(i),
                (_, None) => break,
                _ => None,
            };
            let (t, action) = match host {
                Some(host) => {
                    let (t, _, epoch) = self.hosts[host].tick.take().expect("found above");
                    (t, Action::Tick { host, epoch })
                }
                None => self.queue.pop().expect("peeked"),
            };
            // (A broken state is not worth running on: its S6 finding is the story.)
            if self.broken || (t > self.end && !self.extend_for_backlog(t)) {
                break;
            }
            self.t = t;
            self.handle(action);
            if self.events & 1023 == 0 && self.watchdog_bites() {
                break;
            }
        }
        self.t = self.end;
        self.check_at_end();
    }

    /// Under `check_state`, the state the world ends with passes the core's whole load
    /// check (the steps between two whole checks were checked for what they touched).
    fn check_at_end(&mut self) {
        if !self.check_state || self.broken {
            return;
        }
        if let Err(e) = self.state.self_check() {
            let detail = format!("at the world's end: the state fails its own load check: {e}");
            self.checker.observe(Observation::StateBroken(detail));
            self.broken = true;
        }
    }

    /// At the liveness phase's end, while the jobs still owe due times and owe fewer than
    /// at the last look, the phase goes on an hour more (up to its own length again), so
    /// that `t` is inside it: L1 asks that every due time is accounted eventually, and a
    /// backlog drains at the rate the core promises. Buffered overlaps run one at a time
    /// (`docs/semantics.md`), so a `required` job every 30 s that a parked or stalled run
    /// kept busy for days owes thousands of single runs, more than a fixed quarter of the
    /// world can fit (extreme seed 1449116576: 18,000, draining 2,400 an hour). A backlog
    /// that does not shrink ends the world, and L1 names it.
    fn extend_for_backlog(&mut self, t: i64) -> bool {
        let hour = HOUR as i64;
        if !self.healed || self.extended_ms >= self.cfg.liveness_ms || t > self.end + hour {
            return false;
        }
        let owed: u64 = self
            .jobs
            .iter()
            .filter_map(|j| self.state.seq_of_name(j.def.name.as_str()))
            .filter_map(|seq| self.state.record(seq))
            .map(|r| r.owed())
            .sum();
        if owed == 0 || self.backlog.is_some_and(|before| owed >= before) {
            return false;
        }
        self.backlog = Some(owed);
        self.end += hour;
        self.extended_ms += hour;
        self.probes.add(Probe::LivenessExtendedForABacklog, 1);
        true
    }

    /// Whether the world has stopped making progress: more events than `MAX_EVENTS_PER_HOUR`
    /// per simulated hour (a core that loops, or a world that spins on it), a queue past
    /// `MAX_QUEUE`, or a seed past its wall-clock budget. Asked every 1,024 events; what
    /// it found is in `stuck`.
    fn watchdog_bites(&mut self) -> bool {
        let hours = (self.t - self.t0).max(0) as f64 / HOUR;
        let events = self.events as f64;
        let budget = self.max_events_per_hour * hours.max(1.0);
        self.stuck = if events > budget {
            Some(format!(
                "{} events in {hours:.2} simulated hours, over the bound of {} an hour",
                self.events, self.max_events_per_hour
            ))
        } else if self.queue.heap.len() > MAX_QUEUE {
            Some(format!(
                "the world's queue holds {} actions, over the bound of {MAX_QUEUE}",
                self.queue.heap.len()
            ))
        } else if self.started.elapsed() > self.seed_budget {
            Some(format!(
                "{:.1} s of wall-clock time ({} events, {hours:.2} simulated hours), over the budget of {:.0} s a seed",
                self.started.elapsed().as_secs_f64(),
                self.events,
                self.seed_budget.as_secs_f64()
            ))
        } else {
            None
        };
        self.stuck.is_some()
    }

    pub fn now_ms(&self) -> i64 {
        self.t
    }

    // Called from one place, the loop in `run`; kept inline there.
    #[inline(always)]
    fn handle(&mut self, action: Action) {
        if action.is_fault() && self.healed {
            // Faults drawn before healing that come due after it do not happen.
            return;
        }
        match action {
            Action::Tick { host, epoch } => self.tick_action(host, epoch),
            Action::RunDone {
                host,
                process,
                run,
                job,
                fence,
                outcome,
            } => self.run_done(host, process, run, job, fence, outcome),
            Action::Deliver {
                process,
                run,
                job,
                fence,
                outcome,
            } => self.deliver(process, run, (job, fence, outcome)),
            Action::Crash { host } => {
                self.crash(host);
                self.again(self.cfg.faults.crash_per_hour, Action::Crash { host });
            }
            Action::LoopCrash { host } => self.crash(host),
            Action::Restart { host } => self.restart(host),
            Action::Stall { host } => self.stall(host),
            Action::Wake { host } => self.wake(host),
            Action::Jump { host } => {
                self.jump(host);
                self.again(self.cfg.faults.jump_per_hour, Action::Jump { host });
            }
            Action::Drain { host } => {
                self.drain(host);
                self.again(self.cfg.faults.drain_per_hour, Action::Drain { host });
            }
            Action::DrainNow { host } => self.drain(host),
            Action::Overload { host } => {
                self.overload(host);
                self.again(self.cfg.faults.overload_per_hour, Action::Overload { host });
            }
            Action::TurnEnds { host } => self.turn_ends(host),
            Action::SetClocks { off } => self.set_clocks(off),
            Action::MonoUnit { host, unit } => self.mono_unit(host, unit),
            Action::DrainAgain { host, process } => self.drain_again(host, process),
            Action::PauseWaiting { job, resume } => self.pause_waiting(job, resume),
            Action::Burst { host } => {
                self.burst(host);
                self.again(self.cfg.faults.burst_per_hour, Action::Burst { host });
            }
            Action::Redefine { job } => self.redefine(job),
            Action::Command => {
                self.command();
                self.again(self.cfg.faults.command_per_hour, Action::Command);
            }
            Action::Approve { job, run } => self.approve(job, run),
            Action::RunNow { job } => self.run_now(job),
            Action::Heal => self.heal(),
        }
    }
}
