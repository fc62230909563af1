//! The world: one store holding the core's state (one transaction per event), hosts whose
//! processes tick, run jobs, crash, restart, stall and drain under skewed, drifting and
//! jumping wall clocks, people sending commands, and a queue of timed actions. Idle time
//! costs nothing: the world jumps from one action to the next.

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

use crate::check::Checker;
use crate::consensus::Verdict;
use crate::gen::{stream_rng, SimJob, Stream, WorldConfig};

/// A wall clock: true time, skewed, drifting and jumped; the monotonic clock only freezes
/// while its machine sleeps (it never runs backward).
#[derive(Debug, Clone, Default)]
struct Clock {
    skew: i64,
    drift_ppm: i64,
    jumped: i64,
    /// Time slept in sleeps that have ended.
    slept: i64,
    /// When the sleep going on now began (true time), if one is.
    asleep_since: Option<i64>,
}

impl Clock {
    fn now(&self, t: i64, t0: i64) -> Now {
        // Worlds last days and drift is at most a few hundred ppm: no overflow in i64.
        let drift = (t - t0).saturating_mul(self.drift_ppm) / 1_000_000;
        let sleeping = self.asleep_since.map_or(0, |since| (t - since).max(0));
        // The boot clock counts true time, sleep included (no world jumps or skews it).
        Now::with_boot(
            Timestamp::from_millis(t + self.skew + drift + self.jumped),
            Timestamp::from_millis(t - self.slept - sleeping),
            Timestamp::from_millis(t),
        )
    }

    /// The machine wakes: the sleep joins the time slept.
    fn wake(&mut self, t: i64) {
        if let Some(since) = self.asleep_since.take() {
            self.slept += (t - since).max(0);
        }
    }

    /// The machine falls asleep at `t` (a sleep already going on goes on: its time so far
    /// is kept, so the monotonic clock never leaps ahead of true time).
    fn fall_asleep(&mut self, t: i64) {
        self.wake(t);
        self.asleep_since = Some(t);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostState {
    Up,
    Down,
    Stalled,
}

struct Host {
    state: HostState,
    /// The incarnation up (or last up): the runs it holds and whether it drains
    /// (`duetime_loop::Incarnation`, the daemon's own turn).
    inc: Incarnation,
    clock: Clock,
    /// Runs of crashed incarnations whose children still run: the next incarnation may
    /// adopt them.
    orphans: BTreeMap<RunId, Holding>,
    /// Runs of crashed incarnations whose children ended and left their result where the
    /// next incarnation finds it (a host that knows how to take over, `adopt`), as the
    /// daemon's run directories do: it reports them at start-up.
    ended: Vec<(RunId, JobName, Fence, Outcome)>,
    /// Results that came in while stalled, sent on waking.
    queued: Vec<(RunId, JobName, Fence, Outcome)>,
    /// Results whose report's transaction aborted: the run stays held (its lease renewed)
    /// and the report is sent again (`Action::Deliver`), as the daemon's next turn does.
    unreported: BTreeMap<RunId, (JobName, Fence, Outcome)>,
    /// Invalidates scheduled ticks of an earlier incarnation or before a stall.
    epoch: u64,
    /// True time of this incarnation's next heartbeat: a tick sent whatever the store says,
    /// to renew its leases and show its clocks. Wakes before it only peek at the store.
    beat_at: i64,
    /// This incarnation's start-up (`duetime_loop::Startup`, the daemon's own order) until
    /// its `ProcessStarted` commits; a step whose transaction failed is tried again at the
    /// next tick.
    startup: Option<Startup>,
    /// True time of this process's last transaction.
    shown_at: i64,
    /// True time of the one tick of this incarnation that counts (`epoch` names it).
    wake_at: i64,
    /// That tick, waiting beside the queue rather than in it: `(time, order, epoch)`. A
    /// process re-plans its wake often (every commit that brings the store's next wake
    /// closer); a new plan replaces the old one here instead of leaving it in the queue to
    /// be popped and ignored.
    tick: Option<(i64, u64, u64)>,
    /// Its turns that failed in a row (an aborted tick): the next comes after
    /// `duetime_loop::backoff` of them.
    failures: u32,
    /// Crashes left in a crash loop: each restart is followed by a crash within seconds.
    crash_loop: u32,
    /// True time until which its turns are slow (`FaultMode::Overload`), and until which
    /// the turn going on now lasts: it ticked at the turn's start, reports what ended at
    /// its end, and ticks again no sooner.
    overloaded_until: i64,
    busy_until: i64,
}

#[derive(Debug, Clone)]
enum Action {
    Tick {
        host: usize,
        epoch: u64,
    },
    RunDone {
        host: usize,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    },
    /// A result reaching the store on its own (a child that outlived its process, a late or
    /// duplicated delivery), sent as from `process`.
    Deliver {
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    },
    Crash {
        host: usize,
    },
    Restart {
        host: usize,
    },
    Stall {
        host: usize,
    },
    Wake {
        host: usize,
    },
    Jump {
        host: usize,
    },
    /// A span of slow turns begins on a host (`FaultMode::Overload`).
    Overload {
        host: usize,
    },
    /// A slow turn of a host ends: what its process collected is reported.
    TurnEnds {
        host: usize,
    },
    /// Every host's wall clock set to true time plus `off` (`World::set_clocks`).
    SetClocks {
        off: i64,
    },
    Drain {
        host: usize,
    },
    /// A burst (see `Faults::burst_per_hour`).
    Burst {
        host: usize,
    },
    /// A crash of a crash loop (it schedules no further crash of its own).
    LoopCrash {
        host: usize,
    },
    /// One redefinition of a burst: job `job` moves to one of its other schedules.
    Redefine {
        job: usize,
    },
    /// A drain right after a clock jump (it schedules no further drain of its own).
    DrainNow {
        host: usize,
    },
    /// The same drain asked again by a process already draining (its answer was lost, or
    /// a person sent the signal twice).
    DrainAgain {
        host: usize,
        process: ProcessId,
    },
    /// A person pauses a job while its failed run waits for its retry (the pause clears
    /// the retry and hands its due times to the missed rule), or resumes it later.
    PauseWaiting {
        job: JobName,
        resume: bool,
    },
    Command,
    /// A person approves a parked run (in time, too late, or twice).
    Approve {
        job: JobName,
        run: RunId,
    },
    /// A person asks to run a job now while its run awaits approval (not knowing it does).
    RunNow {
        job: JobName,
    },
    Heal,
}

impl Action {
    /// Whether it is a fault or a person's act drawn in advance: none happens once the
    /// world has healed.
    fn is_fault(&self) -> bool {
        matches!(
            self,
            Action::Crash { .. }
                | Action::LoopCrash { .. }
                | Action::Stall { .. }
                | Action::Jump { .. }
                | Action::Overload { .. }
                | Action::SetClocks { .. }
                | Action::Drain { .. }
                | Action::DrainNow { .. }
                | Action::DrainAgain { .. }
                | Action::PauseWaiting { .. }
                | Action::Burst { .. }
                | Action::Redefine { .. }
                | Action::Command
                | Action::RunNow { .. }
        )
    }
}

/// The queue of timed actions, ordered by time, then by the order they were queued in.
/// The heap holds only `(time, order, slot)`; the actions wait in slots beside it, so
/// sifting moves 24 bytes rather than a whole action.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(i64, u64, u32)>>,
    slots: Vec<Option<Action>>,
    free: Vec<u32>,
    seq: u64,
}

impl Queue {
    /// The next place in the order of things queued at one time.
    fn order(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The time and order of the first queued action.
    fn peek(&self) -> Option<(i64, u64)> {
        self.heap.peek().map(|Reverse((t, seq, _))| (*t, *seq))
    }

    fn push(&mut self, t: i64, action: Action) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(action);
                i
            }
            None => {
                self.slots.push(Some(action));
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((t, self.seq, slot)));
    }

    fn pop(&mut self) -> Option<(i64, Action)> {
        let Reverse((t, _, slot)) = self.heap.pop()?;
        let action = self.slots[slot as usize]
            .take()
            .expect("a queued slot is full");
        self.free.push(slot);
        Some((t, action))
    }
}

/// Counts by kind, for the summary.
pub type Counts = BTreeMap<&'static str, u64>;

pub struct World {
    pub cfg: WorldConfig,
    rng: ChaCha8Rng,
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
    /// J3 (`gaps.rs`): each process's clock readings at its latest judged event.
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
    pub probes: Counts,
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
    /// The processes that could contradict a held clock (J2, `witness.rs`).
    witnesses: crate::witness::Witnesses,
    /// Whether the hosts' clocks agree, and since when (J4, `consensus.rs`).
    consensus: crate::consensus::Consensus,
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

impl World {
    pub fn new(
        cfg: WorldConfig,
        rng: ChaCha8Rng,
        jobs: Vec<SimJob>,
        record_inputs: bool,
        hash_trace: bool,
    ) -> World {
        let mut config = duetime::Config::with_tick(Duration::from_millis(cfg.tick_ms as u64));
        if cfg.single_owner {
            config.coordination = duetime::Coordination::SingleOwner;
        }
        config.max_runs_per_process = cfg.max_runs_per_process;
        let mut checker = Checker::new(crate::facts_of(&jobs));
        if cfg.single_owner {
            checker.hold_single_owner(config.lease_ttl.as_millis() as i64);
        }
        checker.set_cap(cfg.max_runs_per_process);
        checker.hold_journal_time(config.clock_jump.as_millis() as i64);
        checker.hold_leases(&config);
        checker.hold_timeouts(&config);
        checker.hold_replies(&config);
        if cfg.mode == crate::gen::FaultMode::Overload {
            checker.hold_live_hosts();
        }
        let (witness_hosts, witness_tick) = (cfg.processes, cfg.tick_ms);
        let prev_digests = vec![None; jobs.len()];
        let removed = vec![false; jobs.len()];
        let seen_names = jobs.iter().map(|j| j.def.name.clone()).collect();
        let lane_keys = jobs
            .iter()
            .filter_map(|j| Some((j.def.concurrency_key.clone()?, j.def.concurrency_limit)))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let mut w = World {
            slips: stream_rng(cfg.seed, Stream::Slips),
            moves: stream_rng(cfg.seed, Stream::Moves),
            slow: stream_rng(cfg.seed, Stream::Slow),
            bursts: stream_rng(cfg.seed, Stream::Bursts),
            edges: stream_rng(cfg.seed, Stream::Edges),
            again: stream_rng(cfg.seed, Stream::Again),
            waits: stream_rng(cfg.seed, Stream::Waits),
            turns: stream_rng(cfg.seed, Stream::Turns),
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
            probes: Counts::new(),
            inputs: record_inputs.then(Vec::new),
            trace_hash: 0xcbf2_9ce4_8422_2325,
            hash_trace,
            trace: None,
            keep_durations: false,
            check_state: false,
            broken: false,
            stuck: None,
            started: std::time::Instant::now(),
            seed_budget: std::time::Duration::from_secs(120),
            max_events_per_hour: MAX_EVENTS_PER_HOUR,
            t0: 0,
            manual_in_drain: Vec::new(),
            deposed: Vec::new(),
            rows: None,
            witnesses: crate::witness::Witnesses::new(
                witness_hosts,
                witness_tick,
                config.clock_jump.as_millis() as i64,
            ),
            consensus: crate::consensus::Consensus::new(
                witness_hosts,
                witness_tick,
                config.clock_jump.as_millis() as i64,
            ),
        };
        if w.cfg.rows {
            w.rows = Some(crate::rows::Rows::new(&mut w.state, w.cfg.seed));
        }
        let skew = w.cfg.faults.max_skew_ms;
        let drift = w.cfg.faults.max_drift_ppm;
        for _ in 0..w.cfg.processes {
            let clock = Clock {
                skew: if skew > 0 {
                    w.rng.gen_range(-skew..=skew)
                } else {
                    0
                },
                drift_ppm: if drift > 0 {
                    w.rng.gen_range(-drift..=drift)
                } else {
                    0
                },
                ..Clock::default()
            };
            w.hosts.push(Host {
                crash_loop: 0,
                failures: 0,
                state: HostState::Down,
                inc: Incarnation::new(ProcessId(0)),
                clock,
                orphans: BTreeMap::new(),
                ended: Vec::new(),
                queued: Vec::new(),
                unreported: BTreeMap::new(),
                epoch: 0,
                beat_at: i64::MIN,
                startup: None,
                overloaded_until: i64::MIN,
                busy_until: i64::MIN,
                shown_at: i64::MIN,
                wake_at: i64::MAX,
                tick: None,
            });
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
        *self
            .probes
            .entry("liveness extended for a backlog")
            .or_default() += 1;
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
            } => {
                let now = Now::at(Timestamp::from_millis(self.t));
                let event = Event::RunFinished {
                    process,
                    job: job.clone(),
                    run,
                    fence,
                    outcome: outcome.clone(),
                };
                // Sent by its process while that one is up (a retried or late report, a
                // parked run finished another way), it hears the answer, as the daemon
                // does, and carries out what the result starts; from a process gone, or a
                // child on its own, nobody does.
                let sender = self
                    .hosts
                    .iter()
                    .position(|h| h.inc.process() == process && h.state == HostState::Up);
                let committed = self.transact(sender, now, event);
                if let Some(h) = sender {
                    self.report_settled(h, run, committed, (job, fence, outcome));
                }
            }
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
            Action::DrainAgain { host, process } => self.drain_again(host, process),
            Action::PauseWaiting { job, resume } => self.pause_waiting(job, resume),
            Action::Burst { host } => {
                self.burst(host);
                self.again(self.cfg.faults.burst_per_hour, Action::Burst { host });
            }
            Action::Redefine { job } => {
                if let Some(event) = self.redefinition(job, Actor::new("bo")) {
                    let now = Now::at(Timestamp::from_millis(self.t));
                    self.transact(None, now, event);
                }
            }
            Action::Command => {
                self.command();
                self.again(self.cfg.faults.command_per_hour, Action::Command);
            }
            Action::Approve { job, run } => {
                let now = Now::at(Timestamp::from_millis(self.t));
                let actor = Actor::new(["ana", "bo", "cy"][self.rng.gen_range(0..3)]);
                self.transact(None, now, Event::ApprovalGiven { job, run, actor });
            }
            Action::RunNow { job } => {
                let now = Now::at(Timestamp::from_millis(self.t));
                let actor = Actor::new(["ana", "bo", "cy"][self.slips.gen_range(0..3)]);
                *self.faults.entry("command").or_default() += 1;
                self.transact(None, now, Event::RunNow { job, actor });
            }
            Action::Heal => self.heal(),
        }
    }

    /// A host's tick: a drained incarnation exits, one never registered says its start again,
    /// one woken for nothing sleeps again, else it ticks.
    fn tick_action(&mut self, host: usize, epoch: u64) {
        let h = &self.hosts[host];
        if h.state != HostState::Up || h.epoch != epoch {
            return;
        }
        if h.inc.is_drained() {
            // The drain is complete: this incarnation exits; its successor starts.
            *self.faults.entry("drain completed").or_default() += 1;
            self.hosts[host].state = HostState::Down;
            let t = self.t + self.rng.gen_range(1_000..120_000);
            self.at(t, Action::Restart { host });
            return;
        }
        if h.startup.is_some() {
            // A step of its start-up never committed (an aborted transaction, or its
            // answer lost): start-up goes on from there.
            self.start_up(host);
            self.schedule_tick(host);
            return;
        }
        if self.t < self.heartbeat(host) && !self.work_for(host) {
            // Woken for a due time another process has already taken (or one it
            // may not claim): like a real host after a cheap read of the store, it
            // sleeps again without a transaction.
            self.sleep(host);
            return;
        }
        let tick = h.inc.tick();
        let now = self.clock_now(host);
        if !self.transact(Some(host), now, tick) {
            // As the daemon's turn: a tick that failed ends the turn, and the next comes
            // after a short backoff (`duetime_loop::backoff`), before anything slow.
            let h = &mut self.hosts[host];
            h.failures = h.failures.saturating_add(1);
            h.beat_at = self.t + duetime_loop::backoff(h.failures).as_millis() as i64;
            self.sleep(host);
            return;
        }
        self.hosts[host].failures = 0;
        self.slow_turn(host);
        self.schedule_tick(host);
    }

    /// A span of slow turns begins: for one to ten minutes, each turn of the host's
    /// process takes from a tick to `max_turn_ms` (`slow_turn`).
    fn overload(&mut self, host: usize) {
        *self.faults.entry("overload").or_default() += 1;
        let span = self.turns.gen_range(60_000..600_000);
        self.hosts[host].overloaded_until = self.t + span;
    }

    /// After a tick of an overloaded host: its turn goes on past the tick. The daemon's
    /// turn ticks first (renewing its leases before anything slow), then reports what
    /// ended, one transaction each; here the reports wait for the turn's end, and so does
    /// the next tick.
    fn slow_turn(&mut self, host: usize) {
        if self.t >= self.hosts[host].overloaded_until || self.healed {
            return;
        }
        let (lo, hi) = (
            self.cfg.tick_ms,
            self.cfg.faults.max_turn_ms.max(self.cfg.tick_ms + 1),
        );
        let turn = self.turns.gen_range(lo..hi);
        self.hosts[host].busy_until = self.t + turn;
        *self.probes.entry("turn slower than the tick").or_default() += 1;
        if let Some(trace) = &mut self.trace {
            trace.push(format!("  (host {host}'s turn takes {turn} ms)"));
        }
        self.at(self.t + turn, Action::TurnEnds { host });
    }

    /// A slow turn ends: the results its process collected are reported.
    fn turn_ends(&mut self, host: usize) {
        let h = &self.hosts[host];
        if h.state != HostState::Up || self.t < h.busy_until || h.queued.is_empty() {
            return;
        }
        *self
            .probes
            .entry("results reported at a slow turn's end")
            .or_default() += 1;
        let process = h.inc.process();
        let queued = std::mem::take(&mut self.hosts[host].queued);
        for (run, job, fence, outcome) in queued {
            self.send_result(Some(host), process, run, job, fence, outcome);
        }
    }

    /// A run's child finished: its result is sent by the incarnation holding it, queued while
    /// that one stalls, or, for an orphan, sometimes written by the child itself.
    fn run_done(
        &mut self,
        host: usize,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    ) {
        let h = &mut self.hosts[host];
        // Held by the current incarnation: it started the run, or adopted it. It stays
        // held (its lease renewed) until its report commits.
        let ours = h.state != HostState::Down && h.inc.holding(run).is_some();
        if ours && h.state == HostState::Up && self.t >= h.busy_until {
            let current = h.inc.process();
            self.send_result(Some(host), current, run, job, fence, outcome);
        } else if ours {
            if let Some(trace) = &mut self.trace {
                trace.push(format!(
                    "  ({run} ended while its process was busy or stalled)"
                ));
            }
            h.queued.push((run, job, fence, outcome));
        } else if h.orphans.remove(&run).is_some() || h.inc.process() != process {
            // Its process crashed and nobody adopted it; the child may still
            // write its result.
            if self
                .rng
                .gen_bool(self.cfg.faults.orphan_delivers.clamp(0.0, 1.0))
            {
                *self.faults.entry("orphan result delivered").or_default() += 1;
                self.send_result(None, process, run, job, fence, outcome);
            } else if self.cfg.faults.adopt && h.state == HostState::Down {
                // Left in its run directory for the next incarnation to report.
                h.ended.push((run, job, fence, outcome));
            }
        }
    }

    /// A new incarnation on a host that is down: it registers, adopts what it may, and ticks
    /// (again and again in a crash loop).
    fn restart(&mut self, host: usize) {
        if self.hosts[host].state != HostState::Down {
            return;
        }
        let process = ProcessId(self.next_process);
        self.next_process += 1;
        let h = &mut self.hosts[host];
        // A process starts on a machine awake (one that crashed while its machine
        // slept would otherwise tick on a monotonic clock standing still).
        h.clock.wake(self.t);
        h.state = HostState::Up;
        h.inc = Incarnation::new(process);
        h.failures = 0;
        h.epoch += 1;
        h.busy_until = i64::MIN;
        let left = self.left_runs(host);
        self.hosts[host].startup = Some(Startup::new(process, left));
        self.start_up(host);
        self.schedule_tick(host);
        if self.hosts[host].crash_loop > 0 {
            self.hosts[host].crash_loop -= 1;
            let t = self.t + self.rng.gen_range(1_000..20_000);
            self.at(t, Action::LoopCrash { host });
        }
    }

    /// A host stalls for seconds to minutes, or sleeps for longer (its monotonic clock
    /// standing still), and the next stall is drawn.
    fn stall(&mut self, host: usize) {
        if self.hosts[host].state == HostState::Up {
            *self.faults.entry("stall").or_default() += 1;
            let long = self.rng.gen_bool(0.3);
            let d = if long {
                self.rng
                    .gen_range(60_000..self.cfg.faults.max_stall_ms.max(60_001))
            } else {
                self.rng.gen_range(1_000..120_000)
            };
            let h = &mut self.hosts[host];
            h.state = HostState::Stalled;
            h.epoch += 1;
            if long {
                // A laptop asleep: the monotonic clock stands still until it wakes.
                h.clock.fall_asleep(self.t);
            }
            self.at(self.t + d, Action::Wake { host });
        }
        self.again(self.cfg.faults.stall_per_hour, Action::Stall { host });
    }

    /// A stalled host wakes: what it queued is sent, and it sleeps until its next work.
    fn wake(&mut self, host: usize) {
        if self.hosts[host].state != HostState::Stalled {
            return;
        }
        self.hosts[host].state = HostState::Up;
        let t = self.t;
        self.hosts[host].clock.wake(t);
        let process = self.hosts[host].inc.process();
        let queued = std::mem::take(&mut self.hosts[host].queued);
        for (run, job, fence, outcome) in queued {
            self.send_result(Some(host), process, run, job, fence, outcome);
        }
        self.hosts[host].beat_at = self.t;
        self.hosts[host].shown_at = i64::MIN;
        self.sleep(host);
    }

    /// A run parked awaiting approval: a person may approve it (sometimes after its ttl,
    /// sometimes twice), or its host may finish it another way with a result under its
    /// fence; else it expires. Now and then someone asks to run the job meanwhile (refused
    /// `awaiting_approval`: R3).
    fn parked(&mut self, job: &JobName, run: RunId, until: Timestamp, wall: Timestamp) {
        let ttl = until
            .as_millis()
            .saturating_sub(wall.as_millis())
            .max(1_000);
        if self.slips.gen_bool(0.2) {
            // Someone who has not seen that it waits for a sign-off asks to run it now.
            let t = self.t + self.slips.gen_range(0..ttl);
            self.at(t, Action::RunNow { job: job.clone() });
        }
        let roll: f64 = self.rng.gen_range(0.0..1.0);
        if roll < 0.55 {
            let t = self.t + self.rng.gen_range(0..ttl + ttl / 3);
            let job = job.clone();
            self.at(
                t,
                Action::Approve {
                    job: job.clone(),
                    run,
                },
            );
            if self.rng.gen_bool(0.2) {
                // A second person approves it too: refused, it is settled already.
                let t2 = t + self.rng.gen_range(1_000..600_000);
                self.at(t2, Action::Approve { job, run });
            }
        } else if roll < 0.7 {
            let fence = self
                .state
                .seq_of_name(job.as_str())
                .and_then(|seq| self.state.record(seq))
                .and_then(|r| r.run())
                .filter(|r| r.id() == run)
                .map(|r| (r.fence(), r.holder()));
            if let Some((fence, process)) = fence {
                let outcome = if self.rng.gen_bool(0.7) {
                    Outcome::Ok
                } else {
                    Outcome::failed("rejected")
                };
                let t = self.t + self.rng.gen_range(0..ttl);
                let job = job.clone();
                self.at(
                    t,
                    Action::Deliver {
                        process,
                        run,
                        job,
                        fence,
                        outcome,
                    },
                );
            }
        }
    }

    /// What a new incarnation finds its predecessors left (when this world's hosts know
    /// how to take over: `adopt`): children still running, to adopt, and children that
    /// ended, to report.
    fn left_runs(&mut self, host: usize) -> Vec<LeftRun> {
        if !self.cfg.faults.adopt {
            return Vec::new();
        }
        let h = &mut self.hosts[host];
        let going = h.orphans.iter().map(|(&run, held)| LeftRun::Going {
            run,
            job: held.job.clone(),
            fence: held.fence,
        });
        let ended = h
            .ended
            .drain(..)
            .map(|(run, job, fence, outcome)| LeftRun::Ended {
                run,
                job,
                fence,
                outcome,
            });
        going.chain(ended).collect()
    }

    /// Sends this incarnation's start-up, step by step in the daemon's order
    /// (`duetime_loop::Startup`), until `ProcessStarted` commits or a transaction fails
    /// (tried again at the next tick). An adopted run is held from then on; one the core
    /// no longer has open is answered with a cancel, and its child is left to its fate.
    fn start_up(&mut self, host: usize) {
        while let Some(event) = self.hosts[host]
            .startup
            .as_ref()
            .and_then(Startup::next_event)
        {
            let now = self.clock_now(host);
            if let Event::Adopt {
                process,
                run,
                fence,
            } = event
            {
                self.adopt_wrong_fence(host, process, run, fence, now);
            }
            self.heard = Some(Vec::new());
            let committed = self.transact(Some(host), now, event);
            let heard = self.heard.take().filter(|_| committed && !self.lost_last);
            let Some(heard) = heard else {
                self.start_over(host);
                return;
            };
            let startup = self.hosts[host].startup.as_mut().expect("found above");
            let told = startup.committed(&heard);
            let h = &mut self.hosts[host];
            match told {
                Some(Started::Adopted { run, job, fence }) => {
                    h.orphans.remove(&run);
                    h.inc.adopt(run, job, fence);
                }
                Some(Started::Registered) => h.startup = None,
                Some(Started::NotAdopted { .. }) => {
                    *self
                        .probes
                        .entry("left run no longer open at start-up")
                        .or_default() += 1;
                }
                Some(Started::Reported { .. }) => {
                    *self
                        .probes
                        .entry("left run reported at start-up")
                        .or_default() += 1;
                }
                None => {}
            }
        }
    }

    /// A start-up step failed (aborted, or its answer lost): as the daemon does, this
    /// incarnation gives up and a new one, with a fresh process id, starts up at the next
    /// tick from what is left. The runs it adopted go back among the orphans (their run
    /// directories name it, not the new one); the old id, if the store heard of it, falls
    /// silent and is forgotten after a day.
    fn start_over(&mut self, host: usize) {
        *self
            .probes
            .entry("start-up begun again as a new incarnation")
            .or_default() += 1;
        let process = ProcessId(self.next_process);
        self.next_process += 1;
        let h = &mut self.hosts[host];
        let Some(old) = h.startup.take() else { return };
        h.orphans.extend(h.inc.take_all());
        h.inc = Incarnation::new(process);
        let ended = old
            .into_left()
            .into_iter()
            .filter(|l| matches!(l, LeftRun::Ended { .. }));
        let mut left: Vec<LeftRun> = ended.collect();
        left.extend(self.left_runs(host));
        self.hosts[host].startup = Some(Startup::new(process, left));
    }

    /// A host that mixed up its children (now and then): a run's id with a fence it never
    /// held, just before the real one (K1: it adopts nothing, and is told to cancel).
    fn adopt_wrong_fence(
        &mut self,
        host: usize,
        process: ProcessId,
        run: RunId,
        fence: Fence,
        now: Now,
    ) {
        if !self.edges.gen_ratio(1, 8) {
            return;
        }
        *self
            .faults
            .entry("adoption under a wrong fence")
            .or_default() += 1;
        let wrong = Fence(fence.0 ^ 1);
        let event = Event::Adopt {
            process,
            run,
            fence: wrong,
        };
        self.transact(Some(host), now, event);
    }

    /// A crash: the host's process stops talking; its children go on as orphans. A
    /// supervisor restarts it within seconds, or a person within the hour (within seconds
    /// in a crash loop).
    fn crash(&mut self, host: usize) {
        if self.hosts[host].state == HostState::Down {
            return;
        }
        *self.faults.entry("crash").or_default() += 1;
        let looping = self.hosts[host].crash_loop > 0;
        let h = &mut self.hosts[host];
        h.state = HostState::Down;
        // Children outlive their process (a timed-out one was being killed); the results
        // queued while it stalled, or not yet reported, are in their run directories
        // (`take_over`'s hosts).
        let mut queued = std::mem::take(&mut h.queued);
        let unreported = std::mem::take(&mut h.unreported);
        queued.extend(
            unreported
                .into_iter()
                .map(|(run, (job, fence, outcome))| (run, job, fence, outcome)),
        );
        for (run, ..) in &queued {
            h.inc.let_go(*run);
        }
        h.orphans.extend(h.inc.take_all());
        if self.cfg.faults.adopt {
            h.ended.extend(queued);
        }
        let down = if looping || self.rng.gen_bool(0.5) {
            self.rng.gen_range(1_000..30_000)
        } else {
            self.rng.gen_range(30_000..3_600_000)
        };
        let t = self.t + down;
        self.at(t, Action::Restart { host });
    }

    /// The host's wall clock jumps, forward or back: by seconds, hours, or days (up to the
    /// world's `max_jump_ms`).
    fn jump(&mut self, host: usize) {
        *self.faults.entry("clock jump").or_default() += 1;
        let max = self.cfg.faults.max_jump_ms.max(6 * 3_600_000 + 1);
        let magnitude = match self.rng.gen_range(0..3) {
            0 => self.rng.gen_range(1_000..120_000),
            1 => self.rng.gen_range(120_000..6 * 3_600_000),
            _ => self.rng.gen_range(6 * 3_600_000..max),
        };
        let sign = if self.rng.gen_bool(0.5) { 1 } else { -1 };
        self.hosts[host].clock.jumped += sign * magnitude;
        self.consensus.moved();
    }

    /// In a third of the worlds of late draws, every host's wall clock is set at once, one
    /// to three times in the safety phase, from one source: to true time (a time server
    /// back after an outage), or all together minutes to a day off it either way (a
    /// cluster restored from a snapshot, a time server wrong for everyone). No clock is
    /// right then but all agree, so the store's clock must follow them (J4,
    /// `consensus.rs`); set back together, held processes must not contradict each other.
    /// From a stream of its own.
    fn schedule_clock_sets(&mut self, t0: i64) {
        let mut sets = stream_rng(self.cfg.seed, Stream::ClockSets);
        if !sets.gen_ratio(1, 3) {
            return;
        }
        for _ in 0..sets.gen_range(1..=3) {
            let t = t0 + sets.gen_range(0..self.cfg.safety_ms.max(1));
            let off = match sets.gen_range(0..4) {
                0 => 0,
                1 => -sets.gen_range(5 * 60_000..6 * 3_600_000),
                2 => sets.gen_range(5 * 60_000..6 * 3_600_000),
                _ => sets.gen_range(-86_400_000..86_400_000),
            };
            self.at(t, Action::SetClocks { off });
        }
    }

    /// Every host's wall clock is set to true time plus `off` (see `schedule_clock_sets`).
    fn set_clocks(&mut self, off: i64) {
        *self.faults.entry("every clock set at once").or_default() += 1;
        let (t, t0) = (self.t, self.cfg.start_ms);
        for h in &mut self.hosts {
            let wall = h.clock.now(t, t0).wall.as_millis();
            h.clock.jumped += t + off - wall;
        }
        self.consensus.moved();
    }

    /// The host's process starts draining (an aborted transaction: it keeps working and
    /// drains later).
    fn drain(&mut self, host: usize) {
        let h = &self.hosts[host];
        let Some(drain) = h.inc.drain().filter(|_| h.state == HostState::Up) else {
            return;
        };
        *self.faults.entry("drain").or_default() += 1;
        let process = h.inc.process();
        let now = self.clock_now(host);
        if self.transact(Some(host), now, drain) {
            self.hosts[host].inc.drain_committed();
            if self.cfg.late_draws && self.again.gen_ratio(1, 3) {
                let t = self.t + self.again.gen_range(1_000..600_000);
                self.at(t, Action::DrainAgain { host, process });
            }
        }
    }

    /// In a third of the worlds of late draws, someone runs one job by hand again and again:
    /// 40 presses of "run now", 30 s to 2 min apart, from a time in the safety phase, on
    /// the job safe to repeat whose runs are shortest. Enough of them are queued (not in
    /// flight) to meet `manual_per_hour`, and R3 holds each answer to the cap. From a
    /// stream of its own.
    fn schedule_presses(&mut self, t0: i64) {
        let mut presses = stream_rng(self.cfg.seed, Stream::Presses);
        if !presses.gen_ratio(1, 3) {
            return;
        }
        let Some(job) = self
            .jobs
            .iter()
            .filter(|j| j.def.safe_to_repeat && !j.def.requires_confirmation)
            .min_by_key(|j| j.behaviour.duration_ms.1)
            .map(|j| j.def.name.clone())
        else {
            return;
        };
        let mut t = t0 + presses.gen_range(0..self.cfg.safety_ms.max(1));
        for _ in 0..40 {
            self.at(t, Action::RunNow { job: job.clone() });
            t += presses.gen_range(30_000..120_000);
        }
    }

    /// A failed run waits `wait` ms for its retry: in the worlds of late draws, a person
    /// pauses the job meanwhile one time in four (most often late in the wait, when the
    /// due times it covers are oldest), and resumes it minutes later.
    fn retry_waits(&mut self, job: JobName, wait: i64) {
        if !self.cfg.late_draws || wait < 2 || !self.waits.gen_ratio(1, 4) {
            return;
        }
        let t = self.t + self.waits.gen_range(wait / 2..wait);
        self.at(
            t,
            Action::PauseWaiting {
                job: job.clone(),
                resume: false,
            },
        );
        let back = t + self.waits.gen_range(1_000..3_600_000);
        self.at(back, Action::PauseWaiting { job, resume: true });
    }

    /// A person pauses (or resumes) `job`, reading the true time.
    fn pause_waiting(&mut self, job: JobName, resume: bool) {
        let actor = Actor::new("dee");
        let event = if resume {
            Event::Resume { job, actor }
        } else {
            *self.probes.entry("paused while a retry waits").or_default() += 1;
            Event::Pause {
                job,
                actor,
                note: "retry on hold".into(),
            }
        };
        self.transact(None, Now::at(Timestamp::from_millis(self.t)), event);
    }

    /// A process already draining asks to drain again: the store changes nothing and
    /// tells no second `drained` (D1).
    fn drain_again(&mut self, host: usize, process: ProcessId) {
        let h = &self.hosts[host];
        if h.state == HostState::Up && h.inc.is_draining() && h.inc.process() == process {
            *self.probes.entry("drain asked again").or_default() += 1;
            let now = self.clock_now(host);
            self.transact(Some(host), now, Event::ProcessDraining { process });
        }
    }

    /// A burst of trouble around one host: a crash loop (three to six crashes, each within
    /// seconds of the restart before, often in the middle of a catch-up), a run of three to
    /// five redefinitions of one job within minutes while its runs are out, or a drain
    /// seconds after a clock jump.
    fn burst(&mut self, host: usize) {
        match self.rng.gen_range(0..3) {
            0 => {
                *self.faults.entry("burst: crash loop").or_default() += 1;
                self.hosts[host].crash_loop = self.rng.gen_range(2..=5);
                self.crash(host);
            }
            1 => {
                let i = self.rng.gen_range(0..self.jobs.len());
                if self.jobs[i].alternatives.is_empty() || self.removed[i] {
                    return;
                }
                *self.faults.entry("burst: redefinitions").or_default() += 1;
                let mut t = self.t;
                for _ in 0..self.rng.gen_range(3..=5) {
                    t += self.rng.gen_range(1_000..90_000);
                    self.at(t, Action::Redefine { job: i });
                }
            }
            _ => {
                *self
                    .faults
                    .entry("burst: drain during a clock jump")
                    .or_default() += 1;
                self.jump(host);
                let t = self.t + self.rng.gen_range(1_000..10_000);
                self.at(t, Action::DrainNow { host });
            }
        }
    }

    /// Job `i`'s definition is about to change: a person may later confirm the digest
    /// they read before (a stale confirmation). Only a job that requires confirmation is
    /// ever confirmed, and a digest is a SHA-256 over the whole definition, so only those
    /// note it.
    fn note_prev_digest(&mut self, i: usize) {
        if self.jobs[i].def.requires_confirmation {
            self.prev_digests[i] = Some(self.jobs[i].def.digest());
        }
    }

    /// Job `i` moves to one of its other schedules: the `Upsert` a person sends (none when
    /// it has no other schedule).
    fn redefinition(&mut self, i: usize, actor: Actor) -> Option<Event> {
        if self.jobs[i].alternatives.is_empty() {
            return None;
        }
        let alt = self.rng.gen_range(0..self.jobs[i].alternatives.len());
        let (schedule, spec) = self.jobs[i].alternatives[alt].clone();
        self.note_prev_digest(i);
        let old = (self.jobs[i].def.schedule.clone(), self.jobs[i].spec.clone());
        self.jobs[i].alternatives[alt] = old;
        self.jobs[i].def.schedule = schedule;
        self.jobs[i].spec = spec;
        *self.faults.entry("schedule change").or_default() += 1;
        self.move_lane(i);
        Some(Event::Upsert {
            def: Box::new(self.jobs[i].def.clone()),
            actor,
        })
    }

    /// One schedule change in three also moves the job to another concurrency key of the
    /// world (or off keys, or onto one), with that key's width, whether or not its run is
    /// open: the run keeps counting where it started (C1, V1's counts), its wait and what
    /// it starts next follow the key in force (C3, C4).
    fn move_lane(&mut self, i: usize) {
        if self.lane_keys.is_empty() || !self.moves.gen_ratio(1, 3) {
            return;
        }
        let pick = self.moves.gen_range(0..=self.lane_keys.len());
        let (key, width) = self.lane_keys.get(pick).cloned().unzip();
        let def = &mut self.jobs[i].def;
        if def.concurrency_key == key {
            return;
        }
        def.concurrency_key = key;
        def.concurrency_limit = width.flatten();
        *self.faults.entry("concurrency key change").or_default() += 1;
    }

    /// The clock a person's command carries: true time, but one in eight from a machine
    /// read exactly `clock_jump` behind the store's clock (taken as it reads), a millisecond
    /// further (dated on the store's clock) or hours slow (J1 holds each to the rule).
    fn person_now(&mut self) -> Now {
        let true_now = Now::at(Timestamp::from_millis(self.t));
        let Some(store) = self.state.clock() else {
            return true_now;
        };
        if !self.slow.gen_ratio(1, 8) {
            return true_now;
        }
        let jump = self.state.config().clock_jump.as_millis() as i64;
        let behind = match self.slow.gen_range(0..3) {
            0 => jump,
            1 => jump + 1,
            _ => self.slow.gen_range(1..=6) * 3_600_000,
        };
        *self.faults.entry("person's clock slow").or_default() += 1;
        Now::at(Timestamp::from_millis(store.as_millis() - behind))
    }

    /// D1 for what a host's status shows: a process known to the store that was asked to
    /// drain shows as draining (`ProcessRec::draining`) once that step is committed.
    fn drain_shown(&mut self, p: ProcessId) {
        let shown = self.state.process(p).map(duetime::ProcessRec::draining);
        if shown == Some(false) {
            let detail = format!("{p} was asked to drain, yet the store shows it not draining");
            self.checker.world_saw("D1", detail);
        }
    }

    /// A change of what the host runs (a new command) to job `i`, nothing else: held for a
    /// job that requires confirmation like any other change (H1).
    fn command_changed(&mut self, i: usize, actor: Actor) -> Event {
        self.note_prev_digest(i);
        self.commands_changed += 1;
        self.jobs[i].def.payload = Some(format!("command v{}", self.commands_changed));
        *self.faults.entry("command change").or_default() += 1;
        Event::Upsert {
            def: Box::new(self.jobs[i].def.clone()),
            actor,
        }
    }

    /// A person confirms what they were shown of job `i`: mostly the latest definition,
    /// sometimes one they read before it was changed again (stale).
    fn confirmation(&mut self, i: usize, job: JobName, actor: Actor) -> Event {
        let stale = self.prev_digests[i]
            .clone()
            .filter(|_| self.rng.gen_bool(0.3));
        let digest = stale.unwrap_or_else(|| self.jobs[i].def.digest());
        *self.faults.entry("confirm").or_default() += 1;
        Event::Confirm { job, digest, actor }
    }

    /// A person does something to a random job.
    fn command(&mut self) {
        let i = self.rng.gen_range(0..self.jobs.len());
        let name = self.jobs[i].def.name.clone();
        let actor = Actor::new(["ana", "bo", "cy"][self.rng.gen_range(0..3)]);
        let now = self.person_now();
        let kind = self.rng.gen_range(0..16);
        if matches!(kind, 8 | 9 | 11) && self.slips.gen_ratio(1, 8) {
            // One definition change in eight is a mistake.
            *self.faults.entry("command").or_default() += 1;
            self.mistake(i, actor);
            return;
        }
        let event = match kind {
            0..=2 => Event::Pause {
                job: name,
                actor,
                note: self.pause_note(),
            },
            3..=5 => Event::Resume { job: name, actor },
            6 | 7 => Event::RunNow { job: name, actor },
            8 | 9 if !self.jobs[i].alternatives.is_empty() => {
                self.redefinition(i, actor).expect("it has alternatives")
            }
            11 => self.command_changed(i, actor),
            10 if !self.removed[i] && self.rng.gen_bool(0.2) => {
                self.removed[i] = true;
                *self.faults.entry("job removed").or_default() += 1;
                Event::Remove { job: name, actor }
            }
            12 | 13 if self.jobs[i].def.requires_confirmation => self.confirmation(i, name, actor),
            14 | 15 if self.bursts.gen_ratio(1, 6) => {
                self.backfill_burst(i, actor, now);
                return;
            }
            14 | 15 => {
                let (from, to) = self.backfill_range(i);
                let from = self.or_from_the_beginning(i, from);
                *self.probes.entry("backfill asked").or_default() += 1;
                Event::Backfill {
                    job: name,
                    from: Timestamp::from_millis(from),
                    to: Timestamp::from_millis(to),
                    actor,
                }
            }
            _ => Event::ForgetActor { actor },
        };
        *self.faults.entry("command").or_default() += 1;
        self.transact(None, now, event);
    }

    /// A pause's note: mostly a word, one in eight a note of exactly `MAX_TITLE`
    /// characters (accepted) or one more (refused `note_too_long`), each character two
    /// bytes, so a length counted in bytes shows.
    fn pause_note(&mut self) -> String {
        if !self.slips.gen_ratio(1, 8) {
            return "maintenance".into();
        }
        let len = crate::mistakes::MAX_TITLE + usize::from(self.slips.gen_bool(0.5));
        *self
            .probes
            .entry("pause note at or over its bound")
            .or_default() += 1;
        std::iter::repeat_n('é', len).collect()
    }

    /// A person gets a definition wrong: one change from the table of `crate::mistakes`,
    /// either breaking one rule (refused `invalid`, the job keeps its definition: R3) or
    /// putting one field exactly at its bound (accepted), which the person then sets back
    /// at once, sent until it commits: the world's jobs keep the definitions the checker's
    /// facts describe, and nothing runs in between. (A removed job gets only the former:
    /// a definition it accepted would bring the job back.)
    fn mistake(&mut self, i: usize, actor: Actor) {
        use crate::mistakes::RULES;
        let tick = Duration::from_millis(self.cfg.tick_ms as u64);
        let rule = &RULES[self.slips.gen_range(0..RULES.len())];
        let at_bound = !rule.at_bound.is_empty() && !self.removed[i] && self.slips.gen_bool(0.5);
        let changes = if at_bound { rule.at_bound } else { rule.wrong };
        let change = changes[self.slips.gen_range(0..changes.len())];
        let mut def = self.jobs[i].def.clone();
        if !change(&mut def, tick) {
            return;
        }
        let probe = if at_bound {
            "definition at a bound sent"
        } else {
            "definition breaking a rule sent"
        };
        *self.probes.entry(probe).or_default() += 1;
        let now = Now::at(Timestamp::from_millis(self.t));
        let event = Event::Upsert {
            def: Box::new(def),
            actor: actor.clone(),
        };
        if !self.transact(None, now, event) || !at_bound {
            return;
        }
        loop {
            let def = Box::new(self.jobs[i].def.clone());
            let actor = actor.clone();
            if self.transact(None, now, Event::Upsert { def, actor }) {
                break;
            }
        }
    }

    /// A person's burst of backfills of one job, all at once: up to 36 ranges, newest
    /// first, each of one to three due times of its schedule (the oracle's) before the
    /// job's accounted start, most one or two due times apart (debts the core cannot
    /// merge), one in five right against the range after it (a pair it can). That fills the
    /// owed line of `MAX_OWED_SEGMENTS`, so R3 sees backfills refused `owed_line_full`
    /// exactly when no merge makes room, N1 a line that never needs more, M1 a catch-up
    /// window that never gives a backfill up. Half the time the person then changes the
    /// job: a new schedule (which a `required` job's full line must refuse, and any other's
    /// must take) or a new command (taken whatever the line holds).
    fn backfill_burst(&mut self, i: usize, actor: Actor, now: Now) {
        const RANGES: usize = BURST_RANGES;
        let due = self.due_before_accounted(i, RANGES * 5);
        if due.len() < 8 {
            return;
        }
        *self.probes.entry("backfill burst").or_default() += 1;
        let ranges = self.bursts.gen_range(BURST_RANGES_FEWEST..=RANGES);
        let mut newest = due.len();
        for _ in 0..ranges {
            let take = self.bursts.gen_range(1..=3).min(newest);
            if take == 0 {
                break;
            }
            let (from, to) = (due[newest - take], due[newest - 1]);
            let apart = if self.bursts.gen_ratio(1, 5) {
                0
            } else {
                self.bursts.gen_range(1..=2)
            };
            newest = newest.saturating_sub(take + apart);
            let event = Event::Backfill {
                job: self.jobs[i].def.name.clone(),
                from: Timestamp::from_millis(from),
                to: Timestamp::from_millis(to),
                actor: actor.clone(),
            };
            self.transact(None, now, event);
        }
        if self.bursts.gen_bool(0.5) {
            self.change_after_burst(i, actor, now);
        }
    }

    /// Up to `want` due times of job `i`'s schedule before its accounted start (where a
    /// backfill must end), ascending: looked for over an hour back, then twice as far,
    /// up to a year.
    fn due_before_accounted(&self, i: usize, want: usize) -> Vec<i64> {
        const HOUR: i64 = 3_600_000;
        let Some(accounted) = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .and_then(|r| r.accounted_from())
            .map(|t| t.as_millis())
        else {
            return Vec::new();
        };
        let mut back = HOUR;
        loop {
            let due: Vec<i64> = self.jobs[i]
                .spec
                .due_in(accounted - back, accounted)
                .iter()
                .map(|d| d.at)
                .collect();
            if due.len() >= want || back > 366 * 24 * HOUR {
                let skip = due.len().saturating_sub(want);
                return due[skip..].to_vec();
            }
            back *= 2;
        }
    }

    /// After a burst, the same person changes the job: a new schedule (when it has another)
    /// or a new command. A change the core did not take (refused: a `required` job's line
    /// with no room for it; or aborted) is taken back, so the world's job stays the one in
    /// force.
    fn change_after_burst(&mut self, i: usize, actor: Actor, now: Now) {
        let before = (self.jobs[i].clone(), self.prev_digests[i].clone());
        let event = if self.bursts.gen_bool(0.5) {
            self.redefinition(i, actor.clone())
        } else {
            None
        };
        let event = event.unwrap_or_else(|| {
            self.note_prev_digest(i);
            self.commands_changed += 1;
            self.jobs[i].def.payload = Some(format!("command v{}", self.commands_changed));
            Event::Upsert {
                def: Box::new(self.jobs[i].def.clone()),
                actor: actor.clone(),
            }
        });
        *self
            .probes
            .entry("change after a backfill burst")
            .or_default() += 1;
        self.transact(None, now, event);
        let name = self.jobs[i].def.name.as_str();
        let record = self
            .state
            .seq_of_name(name)
            .and_then(|seq| self.state.record(seq));
        let sent = &self.jobs[i].def;
        let taken =
            record.is_some_and(|r| r.def() == sent || r.held().is_some_and(|h| h.def() == sent));
        if !taken {
            *self
                .probes
                .entry("change after a backfill burst not taken")
                .or_default() += 1;
            (self.jobs[i], self.prev_digests[i]) = before;
        }
    }

    /// The range a person asks to backfill, knowing the job's accounted start (where a
    /// backfill must end; the state's `accounted_from`, which an `already_accounted` refusal
    /// names): mostly a range ending there or a little before, sometimes one reaching into
    /// accounted time, an empty one, a short one months back or all of the months since
    /// (refused as too many for frequent schedules), or the accounted start alone.
    fn backfill_range(&mut self, i: usize) -> (i64, i64) {
        const MINUTE: i64 = 60_000;
        const HOUR: i64 = 60 * MINUTE;
        const DAY: i64 = 24 * HOUR;
        let accounted = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .and_then(|r| r.accounted_from())
            .map_or(self.t, |t| t.as_millis());
        let span = [10 * MINUTE, HOUR, 3 * HOUR, 8 * HOUR, DAY][self.rng.gen_range(0..5)];
        match self.rng.gen_range(0..20) {
            0..=11 => {
                let to = if self.rng.gen_bool(0.3) {
                    accounted
                } else {
                    accounted - self.rng.gen_range(0..2 * HOUR)
                };
                (to - span, to)
            }
            12..=14 => {
                let to = accounted + self.rng.gen_range(1_000..6 * HOUR);
                (to - span, to)
            }
            15 => {
                let from = accounted - self.rng.gen_range(0..HOUR);
                (from, from - self.rng.gen_range(1..HOUR))
            }
            16 | 17 => {
                let from = accounted - self.rng.gen_range(30 * DAY..400 * DAY);
                if self.rng.gen_bool(0.5) {
                    (from, from + span)
                } else {
                    (from, accounted)
                }
            }
            _ => (accounted, accounted),
        }
    }

    /// One backfill in eight of a job on a grid or a one-shot asks from the earliest
    /// instant there is (`Timestamp::MIN`, "from the beginning"): a grid's whole past is
    /// refused `too_many_due_times` with its exact count, a one-shot's instant before the
    /// range's end is taken (R3). (Not a cron job's: the checker's oracle would walk its
    /// whole past to count it. The schedule in force is the core's: a held definition's
    /// waits for its confirmation.)
    fn or_from_the_beginning(&mut self, i: usize, from: i64) -> i64 {
        let cron = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .is_none_or(|r| matches!(r.def().schedule, duetime::Schedule::Cron(_)));
        if cron || !self.edges.gen_ratio(1, 8) {
            return from;
        }
        *self
            .probes
            .entry("backfill from the beginning")
            .or_default() += 1;
        i64::MIN
    }

    /// The liveness phase: faults stop, clocks are set right, every host comes up, paused
    /// jobs are resumed, runs stop failing.
    fn heal(&mut self) {
        self.healed = true;
        for job in &mut self.jobs {
            if !self.keep_durations {
                // Healed runs of drawn jobs are quick (a second or two), so backlogs built
                // up under faults can drain even in a world that runs one thing at a time
                // (`single_owner` with a cap of one run): the liveness phase asks whether
                // the core catches up, not whether the drawn jobs fit their machines. A
                // user's own jobs keep their durations: whether they can keep up at all is
                // the question being asked.
                let (lo, hi) = job.behaviour.duration_ms;
                let lo = lo.min(1_000);
                job.behaviour.duration_ms = (lo, (hi / 5).clamp(lo, 2_000));
            }
            job.behaviour.fail = 0.0;
            job.behaviour.fail_retry_after = 0.0;
            job.behaviour.hang = 0.0;
            // Runs parked before healing still expire or are approved; no new ones park,
            // so every due time can be accounted within the liveness bound.
            job.behaviour.park = 0.0;
        }
        self.cfg.faults.late_result = 0.0;
        self.cfg.faults.duplicate_result = 0.0;
        self.cfg.faults.abort = 0.0;
        self.cfg.faults.lost_answer = 0.0;
        for host in 0..self.hosts.len() {
            let h = &mut self.hosts[host];
            h.clock.wake(self.t);
            h.clock = Clock {
                slept: h.clock.slept,
                ..Clock::default()
            };
            h.overloaded_until = i64::MIN;
            match h.state {
                HostState::Down => self.at(self.t, Action::Restart { host }),
                HostState::Stalled => self.at(self.t, Action::Wake { host }),
                HostState::Up => {}
            }
        }
        // Every clock is set right at once: any agreement J4 measured starts again.
        self.consensus.moved();
        for i in 0..self.jobs.len() {
            if !self.removed[i] && self.jobs[i].def.requires_confirmation {
                // What is held is confirmed, so every job runs its latest definition.
                let now = Now::at(Timestamp::from_millis(self.t));
                self.transact(
                    None,
                    now,
                    Event::Confirm {
                        job: self.jobs[i].def.name.clone(),
                        digest: self.jobs[i].def.digest(),
                        actor: Actor::new("healer"),
                    },
                );
            }
            if !self.removed[i] {
                let job = self.jobs[i].def.name.clone();
                let now = Now::at(Timestamp::from_millis(self.t));
                self.transact(
                    None,
                    now,
                    Event::Resume {
                        job,
                        actor: Actor::new("healer"),
                    },
                );
            }
        }
    }

    /// J3: the gap the rule tells for a judged event of `judged`, when the store's record
    /// of it is the one its previous judged event left (`None` inside: no gap).
    fn gap_expected(
        &self,
        event: &Event,
        judged: Option<duetime::ProcessId>,
        now: Now,
    ) -> Option<Option<ClockGapKind>> {
        let p = judged.filter(|_| !matches!(event, Event::ProcessStarted { .. }))?;
        let prev = *self.last_read.get(&p)?;
        let recorded = self.state.process(p).map(|r| r.last_wall());
        let jump = self.state.config().clock_jump.as_millis() as i64;
        (recorded == Some(prev.wall)).then(|| crate::gaps::expected(prev, now, jump))
    }

    /// J3 after the step: the gap notices of `p` against what the rule tells.
    fn gap_told(
        &mut self,
        p: duetime::ProcessId,
        expected: Option<Option<ClockGapKind>>,
        effects: &[Effect],
        now: Now,
    ) {
        let prev = self.last_read.insert(p, now);
        let Some(expected) = expected else {
            return;
        };
        let told: Vec<ClockGapKind> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Notice(Notice::ClockGap { process, kind, .. })
                    if *process == p && crate::gaps::judged(*kind) =>
                {
                    Some(*kind)
                }
                _ => None,
            })
            .collect();
        if told.as_slice() == expected.as_slice() {
            if expected.is_some() {
                *self.probes.entry("clock gap told as it was").or_default() += 1;
            }
            return;
        }
        let prev = prev.map_or(String::new(), |r| format!("{r:?}"));
        self.checker.world_saw(
            "J3",
            format!(
                "{p}'s clocks from {prev} to {now:?}: the rule tells {expected:?}, the core told {told:?}"
            ),
        );
    }

    /// J2 (`witness.rs`): `process`, the stepping `host`'s, was released; `before` is
    /// what the world read before the step.
    fn judge_release(
        &mut self,
        host: Option<usize>,
        process: ProcessId,
        kind: ClockGapKind,
        before: Option<crate::witness::Before>,
    ) {
        let (Some(h), Some(before)) = (host, before) else {
            return;
        };
        if self.hosts[h].inc.process() != process {
            return;
        }
        if let Some(detail) = self.witnesses.released(h, process, kind, self.t, before) {
            self.checker.world_saw("J2", detail);
        } else {
            *self.probes.entry("release its rule allows").or_default() += 1;
        }
    }

    /// J4 (`consensus.rs`): every host's wall clock, read before a judged event.
    fn read_clocks(&mut self) {
        let (t, t0) = (self.t, self.cfg.start_ms);
        let walls = self
            .hosts
            .iter()
            .map(|h| h.clock.now(t, t0).wall.as_millis());
        self.consensus.read(t, walls);
    }

    /// J4 after host `h`'s `process` was judged at `now`: when every clock agrees, the
    /// store's clock has followed them.
    fn clocks_followed(&mut self, h: usize, process: ProcessId, now: Now) {
        let store = self.state.clock().map(|c| c.as_millis());
        let read = (now.wall.as_millis(), now.mono.as_millis());
        let probe = match self.consensus.judged(h, process, read, store) {
            Verdict::Stuck(detail) => return self.checker.world_saw("J4", detail),
            Verdict::Near { after_away: true } => "store's clock came to clocks that agree",
            Verdict::Away => "store's clock away from clocks that agree",
            _ => return,
        };
        *self.probes.entry(probe).or_default() += 1;
    }

    fn clock_now(&self, host: usize) -> Now {
        self.hosts[host].clock.now(self.t, self.cfg.start_ms)
    }

    /// After a tick: the next heartbeat is one interval away, and the process wakes sooner
    /// if the store says a tick can do something before then.
    fn schedule_tick(&mut self, host: usize) {
        self.hosts[host].beat_at = self.t + self.cfg.tick_ms;
        self.sleep(host);
    }

    /// When this process must tick whatever the store says: every interval while it holds
    /// runs (their leases need renewing), and now and then when it holds none, so the core
    /// keeps seeing its clocks. Between heartbeats it sleeps until the store's next wake.
    fn heartbeat(&self, host: usize) -> i64 {
        let h = &self.hosts[host];
        if h.inc.is_empty() && h.startup.is_none() && !h.inc.is_draining() {
            h.shown_at.saturating_add(SHOW_EVERY_MS)
        } else {
            h.beat_at
        }
    }

    /// When this process wakes next: its heartbeat or the store's next wake for it by its
    /// own wall clock, whichever comes first, at least a second away. A draining process
    /// claims nothing, so only its heartbeat matters; under `single_owner` a standby waits
    /// for the owner lease to lapse, and the owner also wakes to renew it.
    fn wake_time(&self, host: usize) -> i64 {
        let mut t = self.heartbeat(host);
        if !self.hosts[host].inc.is_draining() {
            if let Some(w) = self.state.next_wake_for(self.hosts[host].inc.process()) {
                let wall = self.clock_now(host).wall.as_millis();
                let soon = w.as_millis().saturating_sub(wall).max(1_000);
                t = t.min(self.t.saturating_add(soon));
            }
        }
        t.max(self.t + 1).max(self.hosts[host].busy_until)
    }

    /// Sleeps until `wake_time`; a tick queued earlier for this process no longer counts.
    fn sleep(&mut self, host: usize) {
        let t = self.wake_time(host);
        let h = &mut self.hosts[host];
        h.epoch += 1;
        h.wake_at = t;
        let epoch = h.epoch;
        let order = self.queue.order();
        self.hosts[host].tick = Some((t, order, epoch));
    }

    /// After a commit: a process asleep past the store's (new) next wake, or past a
    /// heartbeat it now owes, wakes sooner, as if it had read the store at its next poll.
    /// Idle processes thus cost nothing until something is due.
    fn rouse(&mut self) {
        for host in 0..self.hosts.len() {
            if self.hosts[host].state == HostState::Up
                && self.wake_time(host) < self.hosts[host].wake_at
            {
                self.sleep(host);
            }
        }
    }

    /// Whether, by the store's next wake, a tick from this process now has anything to do.
    #[inline]
    fn work_for(&self, host: usize) -> bool {
        let h = &self.hosts[host];
        // (A draining process claims nothing: no need to read the store's next wake.)
        !h.inc.is_draining()
            && h.inc.work_due(
                self.state.next_wake_for(h.inc.process()),
                self.clock_now(host).wall,
            )
    }

    fn send_result(
        &mut self,
        host: Option<usize>,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    ) {
        let f = self.cfg.faults;
        if f.duplicate_result > 0.0 && self.rng.gen_bool(f.duplicate_result.min(1.0)) {
            *self.faults.entry("duplicate result").or_default() += 1;
            let t = self.t + self.rng.gen_range(1_000..600_000);
            self.at(
                t,
                Action::Deliver {
                    process,
                    run,
                    job: job.clone(),
                    fence,
                    outcome: outcome.clone(),
                },
            );
        }
        if f.late_result > 0.0 && self.rng.gen_bool(f.late_result.min(1.0)) {
            *self.faults.entry("late result").or_default() += 1;
            // The process lost track of the run (its lease lapses); the result arrives
            // late, from wherever it was kept.
            if let Some(h) = host {
                self.hosts[h].inc.let_go(run);
            }
            let t = self.t + self.rng.gen_range(1_000..1_800_000);
            self.at(
                t,
                Action::Deliver {
                    process,
                    run,
                    job,
                    fence,
                    outcome,
                },
            );
            return;
        }
        let now = match host {
            Some(h) => self.clock_now(h),
            None => Now::at(Timestamp::from_millis(self.t)),
        };
        if self.edges.gen_ratio(1, 32) {
            // A host that mixed up its runs: this run's id with a fence it never held,
            // just before the real result (S3: it settles nothing).
            *self.faults.entry("result with a wrong fence").or_default() += 1;
            let wrong = Fence(fence.0 ^ 1);
            let event = Event::RunFinished {
                process,
                job: job.clone(),
                run,
                fence: wrong,
                outcome: outcome.clone(),
            };
            self.transact(host, now, event);
        }
        // The incarnation holding the run reports it (`Incarnation::ended`); a child on
        // its own writes the same line.
        let held = host.and_then(|h| self.hosts[h].inc.ended(run, outcome.clone()));
        let event = held.unwrap_or(Event::RunFinished {
            process,
            job: job.clone(),
            run,
            fence,
            outcome: outcome.clone(),
        });
        let committed = self.transact(host, now, event);
        if let Some(h) = host {
            self.report_settled(h, run, committed, (job, fence, outcome));
        }
    }

    /// After a host's report of `run`: committed, the run is no longer held; aborted, it
    /// stays held (its lease renewed) until the report sent again commits.
    fn report_settled(
        &mut self,
        host: usize,
        run: RunId,
        committed: bool,
        result: (JobName, Fence, Outcome),
    ) {
        let h = &mut self.hosts[host];
        if committed {
            h.inc.reported(run);
            h.unreported.remove(&run);
        } else if h.inc.holding(run).is_some() {
            h.unreported.insert(run, result);
        }
    }

    /// One store transaction: it may abort (nothing happens), or commit with its answer
    /// lost (the journal is written, the process never hears of its effects).
    /// Returns whether it committed (an aborted transaction changed nothing).
    fn transact(&mut self, host: Option<usize>, now: Now, event: Event) -> bool {
        if self.transaction_aborted(&event) {
            return false;
        }
        self.note_input(host, now, &event);
        let mut effects = std::mem::take(&mut self.effects);
        let wake_before = self.state.next_wake();
        let owner_before = self.state.owner_lease().map(|o| (o.holder, o.fence));
        let ticked = match &event {
            Event::Tick { process, .. } => Some(*process),
            _ => None,
        };
        // J2 (`witness.rs`): the events the store judges by their clock, as read before.
        let judged = match &event {
            Event::ProcessStarted { process }
            | Event::Tick { process, .. }
            | Event::ProcessDraining { process }
            | Event::Adopt { process, .. } => Some(*process),
            _ => None,
        };
        let before = judged.map(|p| crate::witness::Before {
            wall: now.wall.as_millis(),
            store: self.state.clock().map(|c| c.as_millis()),
            heard_at: self.state.process(p).map(|r| r.heard_at().as_millis()),
        });
        let gap_expected = self.gap_expected(&event, judged, now);
        if host.is_some() && judged.is_some() {
            self.read_clocks();
        }
        let drain_of = match event {
            Event::ProcessDraining { process } => Some(process),
            _ => None,
        };
        let backfill = matches!(event, Event::Backfill { .. });
        self.state.step(now, event, &mut effects);
        self.events += 1;
        if let Some(p) = drain_of {
            self.drain_shown(p);
        }
        self.check_committed(now);
        if let Some(p) = judged {
            self.gap_told(p, gap_expected, &effects, now);
        }
        let f = self.cfg.faults;
        let lost = f.lost_answer > 0.0 && self.rng.gen_bool(f.lost_answer.min(1.0));
        if lost {
            *self.faults.entry("commit answer lost").or_default() += 1;
        }
        self.lost_last = lost;
        let seen = StepSeen {
            host,
            lost,
            draining: drain_of.is_some(),
            backfill,
            before,
        };
        let mut left = StepLeft::default();
        for e in effects.drain(..) {
            self.take_effect(e, &seen, &mut left);
        }
        self.effects = effects;
        if let (Some(h), Some(p), Some(before)) = (host, judged, before) {
            let heard_at = self.state.process(p).map(|r| r.heard_at().as_millis());
            self.witnesses.spoke(h, p, self.t, before, heard_at);
            self.clocks_followed(h, p, now);
        }
        self.checker.step_done();
        self.checker.after_step(&self.state, now.wall);
        self.after_transact(ticked, owner_before, wake_before, left);
        true
    }

    /// Whether the store aborts the transaction carrying `event` (a fault): nothing is
    /// stepped, and a process retries its report later.
    fn transaction_aborted(&mut self, event: &Event) -> bool {
        let f = self.cfg.faults;
        if f.abort <= 0.0 || !self.rng.gen_bool(f.abort.min(1.0)) {
            return false;
        }
        *self.faults.entry("transaction aborted").or_default() += 1;
        if let Event::RunFinished {
            process,
            job,
            run,
            fence,
            outcome,
        } = event
        {
            let t = self.t + self.rng.gen_range(1_000..30_000);
            let deliver = Action::Deliver {
                process: *process,
                run: *run,
                job: job.clone(),
                fence: *fence,
                outcome: outcome.clone(),
            };
            self.at(t, deliver);
        }
        true
    }

    /// Before a step: the input kept for a regression file, the trace's line, and what
    /// the checker knows of the event before the core sees it.
    fn note_input(&mut self, host: Option<usize>, now: Now, event: &Event) {
        if let Some(inputs) = &mut self.inputs {
            inputs.push((now, event.clone()));
        }
        if let Some(trace) = &mut self.trace {
            // The store's clock before the step, where it differs from true time by more
            // than a minute: what the core judges held clocks by.
            let store = self
                .state
                .clock()
                .filter(|c| (c.as_millis() - self.t).abs() > 60_000)
                .map_or(String::new(), |c| format!(", store {c}"));
            trace.push(format!(
                "{} (true {}{store}) {}",
                now.wall,
                Timestamp::from_millis(self.t),
                event
            ));
        }
        if let Some(h) = host {
            self.hosts[h].shown_at = self.t;
        }
        if let Event::RunFinished {
            run,
            outcome,
            fence,
            ..
        } = event
        {
            // The checker's ground truth: every result a process reported.
            self.checker.reported(*run, outcome);
            self.checker.delivered(*run, *fence, outcome);
        }
        self.checker.stepping(event, &self.state, now);
        self.checker.logged_event(event);
        if let Event::Upsert { def, .. } = event {
            if let Some(detail) = crate::wire_def::misread(def) {
                self.checker.definition_misread(&def.name, detail);
            }
            if let Some(detail) = crate::wire_def::digest_shared(def) {
                self.checker.digest_shared(&def.name, detail);
            }
        }
    }

    /// S6: what was committed must load. Every step under `check_state`; a full round trip
    /// now and then always (the world goes on from the reloaded copy).
    fn check_committed(&mut self, now: Now) {
        let rows = match &mut self.rows {
            Some(rows) => rows.write(&mut self.state, &mut self.faults, &mut self.probes),
            None => Ok(()),
        };
        let checked = if rows.is_err() {
            rows
        } else if self.rng.gen_ratio(1, 1024) {
            *self.probes.entry("state round trip").or_default() += 1;
            let trip = crate::round_trip(&mut self.state);
            if self.rows.is_some() {
                crate::rows::Rows::follow(&mut self.state);
            }
            trip
        } else if self.check_state {
            self.state
                .self_check()
                .map_err(|e| format!("the state fails its own load check: {e}"))
                .and_then(|()| crate::leases_within_the_clock(&self.state))
        } else {
            Ok(())
        };
        if let Err(what) = checked {
            self.checker
                .state_broken(format!("after the event at {}: {what}", now.wall));
            self.broken = true;
        }
    }

    /// One effect of a step: traced, hashed, told to the checker, and carried out as the
    /// world's processes would (a start or a cancel whose commit answer was lost is not).
    fn take_effect(&mut self, e: Effect, seen: &StepSeen, left: &mut StepLeft) {
        let lost = seen.lost;
        if let (Some(heard), false) = (&mut self.heard, lost) {
            heard.push(e.clone());
        }
        self.trace_effect(&e, lost);
        if self.hash_trace {
            self.hash(&e);
        }
        self.coordination_probes(&e, seen.draining);
        self.checker.logged(&e);
        self.checker.action(&e);
        if let Effect::Reply { job, result } = &e {
            self.checker.replied(job.as_ref(), result);
        }
        match e {
            Effect::Journal(r) => self.take_record(r, left),
            // Written with the state even when the commit's answer is lost.
            Effect::Notice(Notice::Owner { .. })
            | Effect::Notice(Notice::OwnerReleased { .. })
            | Effect::Notice(Notice::Drained { .. }) => self.checker.coordination(&e),
            Effect::Reply {
                result: Err(refusal),
                ..
            } if seen.backfill => {
                *self.probes.entry(backfill_refused(&refusal)).or_default() += 1;
            }
            Effect::Reply {
                result: Err(duetime::Refusal::NotAwaitingApproval { .. }),
                ..
            } => {
                *self.probes.entry("stale approval refused").or_default() += 1;
            }
            // Told by the core even when the commit's answer is lost on the way.
            Effect::Notice(Notice::Alert(a)) => self.checker.alert(&a),
            Effect::Notice(Notice::ClockGap { kind, process, .. }) => {
                // (A clock released behind moves the store's clock back: O2 measures on
                // it.)
                self.checker.coordination(&e);
                left.held |= self.clock_gap_seen(kind, process, seen);
            }
            Effect::Reply {
                result: Err(duetime::Refusal::WrongDigest { .. }),
                ..
            } => {
                *self.probes.entry("stale confirm refused").or_default() += 1;
            }
            // Carried out by the process that heard the commit: a start by the one whose
            // step it was, a cancel by its process wherever it is up (it polls the store).
            Effect::Do(duetime::Action::Start { process, .. }) if !lost => {
                let host = seen
                    .host
                    .filter(|&h| self.hosts[h].inc.process() == process);
                if let Some(host) = host {
                    let order = self.hosts[host].inc.take(&e);
                    self.carry_out(host, order);
                }
            }
            Effect::Do(duetime::Action::Cancel { process, .. }) if !lost => {
                let host = self
                    .hosts
                    .iter()
                    .position(|h| h.inc.process() == process && h.state != HostState::Down);
                if let Some(host) = host {
                    let order = self.hosts[host].inc.take(&e);
                    self.carry_out(host, order);
                }
            }
            _ => {}
        }
    }

    /// The trace's line for an effect (marked where the commit's answer was lost).
    fn trace_effect(&mut self, e: &Effect, lost: bool) {
        if let Some(trace) = &mut self.trace {
            trace.push(format!(
                "      {e}{}",
                if lost
                    && matches!(
                        e,
                        Effect::Do(duetime::Action::Start { .. })
                            | Effect::Do(duetime::Action::Cancel { .. })
                    )
                {
                    " [answer lost]"
                } else {
                    ""
                }
            ));
        }
    }

    /// A journal record of a step: an adoption, a parked run and a retry's wait are kept
    /// for after it; the checker reads every record.
    fn take_record(&mut self, r: duetime::Record, left: &mut StepLeft) {
        match &r.entry {
            Entry::History(duetime::History::Parked { run, until, .. }) => {
                left.parked.push((r.job.clone(), *run, *until, r.at));
            }
            Entry::History(duetime::History::RetryAt { at, .. }) => {
                left.retrying
                    .push((r.job.clone(), at.as_millis() - r.at.as_millis()));
            }
            _ => {}
        }
        self.checker.record(&r);
    }

    /// A clock gap the core told: a release judged (J2), counted by kind; whether it holds
    /// a clock newly (ahead or behind).
    fn clock_gap_seen(&mut self, kind: ClockGapKind, process: ProcessId, seen: &StepSeen) -> bool {
        if matches!(kind, ClockGapKind::Released | ClockGapKind::ReleasedBehind) {
            self.judge_release(seen.host, process, kind, seen.before);
        }
        let probe = match kind {
            ClockGapKind::Asleep => "clock gap: asleep",
            ClockGapKind::ClockForward => "clock gap: set forward",
            ClockGapKind::ClockBackward => "clock gap: set back",
            ClockGapKind::HeldAhead => "clock held ahead of the store's",
            ClockGapKind::HeldBehind => "clock held behind the store's",
            ClockGapKind::Released => "clock held ahead released (alone)",
            ClockGapKind::ReleasedBehind => "clock held behind released (alone)",
        };
        *self.probes.entry(probe).or_default() += 1;
        matches!(kind, ClockGapKind::HeldAhead | ClockGapKind::HeldBehind)
    }

    /// After a step's effects: a standby's tick counted, parked runs and retries
    /// scheduled, and the sleepers roused when their wake may have come closer.
    fn after_transact(
        &mut self,
        ticked: Option<ProcessId>,
        owner_before: Option<(ProcessId, Fence)>,
        wake_before: Option<Timestamp>,
        left: StepLeft,
    ) {
        let owner_after = self.state.owner_lease().map(|o| (o.holder, o.fence));
        if let (Some(p), Some((holder, _))) = (ticked, owner_after) {
            if holder != p {
                // O1 holds it to starting nothing.
                *self
                    .probes
                    .entry("standby ticked while the owner lived")
                    .or_default() += 1;
            }
        }
        for (job, run, until, wall) in left.parked {
            self.parked(&job, run, until, wall);
        }
        for (job, wait) in left.retrying {
            self.retry_waits(job, wait);
        }
        // Sleepers chose their wake from the store's next wake; only one that came closer
        // can make any of them wake sooner (a run started for a process re-plans that
        // process in `start`). Under `single_owner` a new or released owner lease changes
        // every process's wake.
        let closer = match (self.state.next_wake(), wake_before) {
            (Some(after), Some(before)) => after < before,
            (Some(_), None) => true,
            (None, _) => false,
        };
        // A clock newly held (a new incarnation waiting, or one held behind) brings every
        // other process's wake within a tick of its last event (`State::next_wake_for`: the
        // witnesses), which the store's next wake does not show; a host that polls the
        // store sees it at its next poll. (Only in the worlds of late draws, so the seeds
        // kept by number replay the worlds of their day, where sleepers missed it and a
        // held clock could look alone.)
        let held = left.held && self.cfg.late_draws;
        if closer || held || owner_after != owner_before {
            self.rouse();
        }
    }

    /// Counts the coordination situations an effect shows (`draining`: the step was a
    /// `ProcessDraining`).
    fn coordination_probes(&mut self, e: &Effect, draining: bool) {
        let probe = match e {
            Effect::Notice(Notice::Drained { .. }) if draining => "drain completed at once",
            Effect::Notice(Notice::Drained { .. }) => "drain completed after its last run",
            Effect::Notice(Notice::Owner {
                process,
                from: Some(from),
                ..
            }) if from != process => {
                self.deposed.push(*from);
                return;
            }
            Effect::Do(duetime::Action::Cancel {
                process,
                reason: CancelReason::LeaseLost,
                ..
            }) if self.deposed.contains(process) => "deposed owner told to cancel a run",
            Effect::Journal(r) => match &r.entry {
                Entry::History(duetime::History::ManualQueued { .. }) if self.cfg.single_owner => {
                    let drainers: Vec<ProcessId> = self
                        .hosts
                        .iter()
                        .filter(|h| h.state != HostState::Down && h.inc.is_draining())
                        .map(|h| h.inc.process())
                        .collect();
                    if !drainers.is_empty() {
                        self.manual_in_drain.push((r.job.to_string(), drainers));
                    }
                    return;
                }
                Entry::History(duetime::History::Started {
                    trigger: duetime::Trigger::Manual,
                    process,
                    ..
                }) => {
                    let Some(i) = self
                        .manual_in_drain
                        .iter()
                        .position(|(job, _)| job == r.job.as_str())
                    else {
                        return;
                    };
                    let (_, drainers) = self.manual_in_drain.swap_remove(i);
                    if drainers.contains(process) {
                        return;
                    }
                    "manual run asked during a drain started by the next owner"
                }
                _ => return,
            },
            _ => return,
        };
        *self.probes.entry(probe).or_default() += 1;
    }

    fn hash(&mut self, e: &Effect) {
        let text = serde_json::to_string(e).expect("effects serialize");
        for b in text.bytes() {
            self.trace_hash ^= u64::from(b);
            self.trace_hash = self.trace_hash.wrapping_mul(0x100_0000_01b3);
        }
    }

    /// The delay a failure asks for: as drawn, but one time in four exactly its job's wait
    /// budget, or a millisecond either side (a quota hold only past the budget: R4).
    fn asked_delay(&mut self, drawn: Duration, budget: Duration) -> Duration {
        let ms = budget.as_millis();
        match self.edges.gen_range(0..12u32) {
            0 => budget,
            1 => Duration::from_millis(ms.saturating_sub(1)),
            2 => Duration::from_millis(ms.saturating_add(1)),
            _ => drawn,
        }
    }

    /// How job `i`'s run goes, by its behaviour: how long it takes and what it reports
    /// (a hang takes three times `timeout`, the time left to the run's deadline by its
    /// host's clock).
    fn draw_run(&mut self, i: usize, timeout: i64) -> (i64, Outcome) {
        let sim = &self.jobs[i];
        let b = sim.behaviour.clone();
        let budget = sim.def.wait_budget();
        let roll: f64 = self.rng.gen_range(0.0..1.0);
        if roll < b.hang {
            (timeout.max(1_000) * 3, Outcome::Ok)
        } else if roll < b.hang + b.fail {
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::failed("exit 1"),
            )
        } else if roll < b.hang + b.fail + b.fail_retry_after {
            let drawn = Duration::from_secs(self.rng.gen_range(1..3_600));
            let after = self.asked_delay(drawn, budget);
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::Failed {
                    kind: "quota".into(),
                    retry_after: Some(after),
                },
            )
        } else if b.park > 0.0 && self.rng.gen_bool(b.park.min(1.0)) {
            let ttl = self.rng.gen_range(b.park_ttl_ms.0..=b.park_ttl_ms.1);
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::AwaitingApproval {
                    ttl: Duration::from_millis(ttl as u64),
                },
            )
        } else {
            // One success in eight found nothing to do and says so.
            let done = if self.edges.gen_ratio(1, 8) {
                Outcome::Skipped
            } else {
                Outcome::Ok
            };
            (self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1), done)
        }
    }

    /// What a committed effect asked of a host's incarnation (`Incarnation::take`): a
    /// run's child started, or stopped.
    fn carry_out(&mut self, host: usize, order: Option<Order>) {
        match order {
            Some(Order::Launch {
                run,
                job,
                fence,
                deadline,
            }) => self.start(host, run, job, fence, deadline),
            Some(Order::Stop {
                run,
                job,
                reason,
                held: true,
            }) => self.stop(host, run, job, reason),
            // A lost lease: the incarnation let the run go; its child is left to its fate.
            Some(Order::Stop { held: false, .. }) | None => {}
        }
    }

    /// A run's child starts, held by `host`'s incarnation: its duration and outcome drawn.
    fn start(&mut self, host: usize, run: RunId, job: JobName, fence: Fence, deadline: Timestamp) {
        let Some(i) = self.job_index(&job) else {
            self.hosts[host].inc.let_go(run);
            return;
        };
        let timeout = deadline.as_millis() - self.clock_now(host).wall.as_millis();
        let (duration, outcome) = self.draw_run(i, timeout);
        let process = self.hosts[host].inc.process();
        if self.hosts[host].state == HostState::Up
            && self.wake_time(host) < self.hosts[host].wake_at
        {
            // Holding a run, it owes heartbeats for its lease.
            self.sleep(host);
        }
        self.at(
            self.t + duration,
            Action::RunDone {
                host,
                process,
                run,
                job,
                fence,
                outcome,
            },
        );
    }

    /// The world's job named `name`: by address among the names seen last, else by text
    /// (a deserialized state holds new copies of the names).
    fn job_index(&mut self, name: &JobName) -> Option<usize> {
        let by_address = self
            .seen_names
            .iter()
            .position(|n| std::ptr::eq(n.as_str(), name.as_str()));
        if by_address.is_some() {
            return by_address;
        }
        let i = self.jobs.iter().position(|j| j.def.name == *name)?;
        self.seen_names[i] = name.clone();
        Some(i)
    }

    /// The core asked to stop a run the host still holds (a timeout, or its job removed):
    /// the child is killed and its exit reported soon, as a timeout or a signal; the run
    /// stays held until then (its original finish, if later, finds it gone and is
    /// ignored).
    fn stop(&mut self, host: usize, run: RunId, job: JobName, reason: CancelReason) {
        let Some(fence) = self.hosts[host].inc.holding(run).map(|h| h.fence) else {
            return;
        };
        let process = self.hosts[host].inc.process();
        let outcome = if reason == CancelReason::Timeout {
            Outcome::TimedOut
        } else {
            Outcome::failed("signal TERM")
        };
        let t = self.t + self.rng.gen_range(100..5_000);
        self.at(
            t,
            Action::RunDone {
                host,
                process,
                run,
                job,
                fence,
                outcome,
            },
        );
    }
}

/// How a step was taken, for reading its effects (`World::take_effect`).
struct StepSeen {
    host: Option<usize>,
    /// The commit's answer was lost: the processes carry out none of its starts or
    /// cancels.
    lost: bool,
    /// The step was a `ProcessDraining`.
    draining: bool,
    /// The step was a `Backfill`.
    backfill: bool,
    /// J2: the judged process's clocks as read before the step.
    before: Option<crate::witness::Before>,
}

/// What a step's effects leave for after it (`World::after_transact`).
#[derive(Default)]
struct StepLeft {
    /// Runs parked for approval: job, run, until, and when.
    parked: Vec<(JobName, RunId, Timestamp, Timestamp)>,
    /// Retries scheduled: job, and the wait in milliseconds.
    retrying: Vec<(JobName, i64)>,
    /// A clock newly held (ahead or behind).
    held: bool,
}

/// The probe a refused backfill counts under.
fn backfill_refused(refusal: &duetime::Refusal) -> &'static str {
    use duetime::Refusal as R;
    match refusal {
        R::AlreadyAccounted { .. } => "backfill refused: already accounted",
        R::EmptyRange { .. } => "backfill refused: empty range",
        R::NoDueTimes { .. } => "backfill refused: no due times",
        R::TooManyDueTimes { .. } => "backfill refused: too many due times",
        R::OwedLineFull { .. } => "backfill refused: owed line full",
        R::NotFound { .. } => "backfill refused: no such job",
        _ => "backfill refused: other",
    }
}
