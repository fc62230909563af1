//! Partition worlds (issue 43): several daemons share a store of P partitions (1, 2, 7 or
//! 64), each partition a core `State` of its own, and divide them with the daemon's own
//! `duetime_loop::Ownership` (leases with epochs in the store, timed by the store's clock),
//! stepping each partition they hold with the daemon's own `Startup` and `Incarnation`, and
//! moving a job whose concurrency key changed with the daemon's own `relocate`.
//!
//! The world draws crashes, stalls (a daemon frozen past its leases, which on waking writes
//! before it reads again: a process that keeps writing after losing a partition), clean
//! stops (SIGTERM: every partition left, drained, released), daemons joining, commit
//! answers lost, and people changing jobs' concurrency keys (moves, also while runs are
//! open and due times owed).
//!
//! By concern:
//! - here: the world, its making and its loop;
//! - `daemon.rs`: a daemon's round (heartbeat, ownership steps, a turn on each partition
//!   held, the moves it owes) and its faults;
//! - `store.rs`: the store's transactions, each checked against the partition's lease in
//!   the same transaction, and people's commands;
//! - `check.rs`: what the world checks (X1..X8: docs/invariants.md), and
//!   `chain_check.rs` its chains' part (X8).

mod chain_check;
mod check;
mod daemon;
mod runner;
mod store;

pub use runner::{run_range, PartsSummary};

use std::collections::BTreeMap;

use duetime::{
    Actor, Config, Duration, Event, JobDef, JobName, MissedRule, Now, Outcome, Overlap, ProcessId,
    RunId, Schedule, State, Timestamp,
};
use duetime_loop::{
    chain_routes, route, upsert_order, Chains, Lease, Member, Partition, PartitionCount,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use check::PartsCheck;
use daemon::Daemon;

/// The partition counts the worlds draw from.
pub const COUNTS: [u32; 4] = [1, 2, 7, 64];

const HOUR: i64 = 3_600_000;

/// Partitions a daemon leaves a round for rebalancing (`Ownership::new`'s `max_moves`).
const MAX_MOVES: usize = 4;

/// Most daemons a world grows to by joins.
const MAX_DAEMONS: usize = 6;

/// A partition world's shape and fault rates, drawn from its seed.
#[derive(Debug, Clone)]
pub struct PartsConfig {
    pub seed: u64,
    pub partitions: PartitionCount,
    /// Daemons at the start (more may join).
    pub daemons: usize,
    pub jobs: usize,
    pub tick_ms: i64,
    /// The partition leases' time to live.
    pub ttl_ms: i64,
    /// Faults happen in the safety phase; the liveness phase after it is healed.
    pub safety_ms: i64,
    pub liveness_ms: i64,
    pub crash_per_hour: f64,
    pub stall_per_hour: f64,
    pub stop_per_hour: f64,
    pub join_per_hour: f64,
    pub rekey_per_hour: f64,
    /// The chance that a committed transaction's answer is lost on its way back.
    pub lost_answer: f64,
}

impl PartsConfig {
    /// The world of `seed`; `partitions` overrides the drawn count.
    pub fn draw(seed: u64, opts: PartsOptions) -> PartsConfig {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7061_7274_0000_0000);
        let drawn = COUNTS[rng.gen_range(0..COUNTS.len())];
        let partitions = opts
            .partitions
            .unwrap_or_else(|| PartitionCount::new(u64::from(drawn)).expect("a listed count"));
        let tick_ms = rng.gen_range(5..=15) * 1000;
        let cfg = PartsConfig {
            seed,
            partitions,
            daemons: rng.gen_range(1..=4),
            jobs: rng.gen_range(6..=40),
            tick_ms,
            ttl_ms: (3 * tick_ms).max(15_000),
            safety_ms: 6 * HOUR,
            liveness_ms: 3 * HOUR,
            crash_per_hour: rng.gen_range(0.0..1.5),
            stall_per_hour: rng.gen_range(0.0..1.0),
            stop_per_hour: rng.gen_range(0.0..1.0),
            join_per_hour: rng.gen_range(0.0..0.5),
            rekey_per_hour: rng.gen_range(0.0..8.0),
            lost_answer: rng.gen_range(0.0..0.05),
        };
        if opts.heavy {
            cfg.heavier()
        } else {
            cfg
        }
    }

    /// Four times the faults, and up to one answer in five lost.
    fn heavier(self) -> PartsConfig {
        PartsConfig {
            crash_per_hour: self.crash_per_hour * 4.0,
            stall_per_hour: self.stall_per_hour * 4.0,
            stop_per_hour: self.stop_per_hour * 4.0,
            join_per_hour: self.join_per_hour * 4.0,
            rekey_per_hour: self.rekey_per_hour * 4.0,
            lost_answer: self.lost_answer * 4.0,
            ..self
        }
    }
}

/// How a range of partition worlds is drawn.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartsOptions {
    /// Every world with this many partitions (else drawn from `COUNTS`).
    pub partitions: Option<PartitionCount>,
    /// Heavy faults (`--faults heavy`): four times the rates, up to one answer in five lost.
    pub heavy: bool,
}

/// What happens next in a world.
#[derive(Debug, Clone)]
enum Act {
    /// A daemon's round; `gen` names the plan it belongs to (a stall or crash cancels it).
    Round {
        d: usize,
        gen: u64,
    },
    /// A daemon collects the runs that ended since its last turn and reports them (with a
    /// tick) in one transaction per partition, as the daemon's poll does between ticks.
    Collect {
        d: usize,
        gen: u64,
    },
    /// A run's command ended; `life` names the daemon incarnation that ran it.
    RunDone {
        d: usize,
        life: u64,
        part: Partition,
        process: ProcessId,
        run: RunId,
        outcome: Outcome,
    },
    Crash {
        d: usize,
    },
    Restart {
        d: usize,
    },
    Stall {
        d: usize,
    },
    Wake {
        d: usize,
    },
    Stop {
        d: usize,
    },
    Join,
    Rekey,
    /// A person resumes a job the system paused (it failed out).
    Resume {
        job: JobName,
    },
    Heal,
}

impl Act {
    fn is_fault(&self) -> bool {
        matches!(
            self,
            Act::Crash { .. } | Act::Stall { .. } | Act::Stop { .. } | Act::Join | Act::Rekey
        )
    }
}

/// One partition as the store holds it.
struct Part {
    state: State,
    lease: Lease,
}

/// A world of daemons over a partitioned store.
pub struct PartsWorld {
    cfg: PartsConfig,
    rng: ChaCha8Rng,
    t: i64,
    end: i64,
    healed: bool,
    parts: Vec<Part>,
    /// The store's daemons table: each daemon incarnation's heartbeat.
    members: Vec<Member>,
    daemons: Vec<Daemon>,
    queue: BTreeMap<(i64, u64), Act>,
    order: u64,
    next_process: u64,
    /// Each job's definition as people last set it.
    defs: BTreeMap<JobName, JobDef>,
    /// The concurrency keys and each one's width.
    keys: Vec<(String, u32)>,
    /// Definitions whose job must move first (a run of it was open): the store's pending
    /// moves, carried out by the owner of the job's partition once the run has settled.
    pending: BTreeMap<JobName, JobDef>,
    /// Whether some job runs after another (its route is then its chain's).
    chained: bool,
    check: PartsCheck,
    pub events: u64,
    pub probes: BTreeMap<&'static str, u64>,
    /// A readable trace, when asked for (`--trace`).
    trace: Option<Vec<String>>,
}

/// What one partition world found.
#[derive(Debug, Clone)]
pub struct PartsReport {
    pub seed: u64,
    pub partitions: u32,
    pub events: u64,
    pub violations: Vec<String>,
    pub probes: BTreeMap<&'static str, u64>,
    /// The readable trace, when one was asked for.
    pub trace: Vec<String>,
}

/// Runs the partition world of `seed`.
pub fn run_parts(seed: u64, opts: PartsOptions) -> PartsReport {
    run_traced(seed, opts, false)
}

/// Runs the partition world of `seed`, keeping a readable trace when `trace`.
pub fn run_traced(seed: u64, opts: PartsOptions, trace: bool) -> PartsReport {
    let cfg = PartsConfig::draw(seed, opts);
    let mut world = PartsWorld::new(cfg);
    world.trace = trace.then(Vec::new);
    world.run();
    world.finish()
}

fn ts(t: i64) -> Timestamp {
    Timestamp::from_millis(t)
}

impl PartsWorld {
    fn new(cfg: PartsConfig) -> PartsWorld {
        let config = Config::with_tick(Duration::from_millis(cfg.tick_ms as u64));
        let parts = cfg
            .partitions
            .iter()
            .map(|_| Part {
                state: State::new(config),
                lease: Lease::FREE,
            })
            .collect();
        let t0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        let check = PartsCheck::new(&cfg, t0);
        let mut world = PartsWorld {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            t: t0,
            end: t0 + cfg.safety_ms + cfg.liveness_ms,
            healed: false,
            parts,
            members: Vec::new(),
            daemons: Vec::new(),
            queue: BTreeMap::new(),
            order: 0,
            next_process: 1,
            defs: BTreeMap::new(),
            keys: Vec::new(),
            pending: BTreeMap::new(),
            chained: false,
            check,
            events: 0,
            probes: BTreeMap::new(),
            trace: None,
            cfg,
        };
        world.draw_jobs();
        world
    }

    /// The world's jobs: schedules every 30 s to 5 min, a third under one of a few
    /// concurrency keys, every missed rule; all safe to repeat, so a lost run is run again
    /// rather than pausing its job (a pause would stop the accounting the world checks).
    fn draw_jobs(&mut self) {
        let keys = self.rng.gen_range(1..=5);
        self.keys = (0..keys)
            .map(|k| (format!("k{k}"), self.rng.gen_range(1..=2)))
            .collect();
        for i in 0..self.cfg.jobs {
            let period = [30, 60, 120, 300][self.rng.gen_range(0..4)];
            let every = Duration::from_secs(period);
            let schedule = Schedule::every(every, Duration::from_secs(0)).expect("a period");
            let mut def = JobDef::new(JobName::new(&format!("j{i}")).expect("a name"), schedule);
            def.safe_to_repeat = true;
            def.timeout = Duration::from_mins(10);
            def.retries = self.rng.gen_range(0..=2);
            (def.missed, def.overlap) = match self.rng.gen_range(0..4) {
                0 | 1 => (MissedRule::Required, Some(Overlap::BufferAll)),
                2 => (MissedRule::CatchUpOnce, Some(Overlap::BufferOne)),
                _ => (MissedRule::Skip, Some(Overlap::Skip)),
            };
            if self.rng.gen_bool(0.5) {
                let k = self.rng.gen_range(0..self.keys.len());
                let k = Some(k).filter(|&k| self.lane_room(k, &def));
                Self::set_key(&self.keys, &mut def, k);
            }
            self.defs.insert(def.name.clone(), def);
        }
        self.draw_chains();
    }

    /// Chains (issue 45) in three worlds in five, from their own stream of the seed (the
    /// rest of the world is drawn as without them): each job after the first runs, one
    /// time in three, after an earlier job (taking its schedule), and one such in four
    /// after a second earlier job of the same schedule too (a join of two chains). Only a
    /// chain's anchor keeps a concurrency key (a lane lives in one partition, and so does
    /// a chain), and a chain's jobs retry a failed run at least once.
    fn draw_chains(&mut self) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.cfg.seed ^ 0x6166_7465_7200_0000);
        if !rng.gen_bool(0.6) {
            return;
        }
        let names: Vec<JobName> = (0..self.cfg.jobs)
            .map(|i| JobName::new(&format!("j{i}")).expect("a name"))
            .collect();
        for i in 1..names.len() {
            if !rng.gen_bool(1.0 / 3.0) {
                continue;
            }
            let first = names[rng.gen_range(0..i)].clone();
            let schedule = self.defs[&first].schedule.clone();
            let same: Vec<JobName> = names[..i]
                .iter()
                .filter(|n| **n != first && self.defs[*n].schedule == schedule)
                .cloned()
                .collect();
            let def = self.defs.get_mut(&names[i]).expect("drawn");
            def.schedule = schedule;
            def.after = vec![first];
            if !same.is_empty() && rng.gen_bool(0.25) {
                def.after.push(same[rng.gen_range(0..same.len())].clone());
            }
        }
        let defs: Vec<JobDef> = self.defs.values().cloned().collect();
        let chains = Chains::new(&defs);
        for (i, d) in defs.iter().enumerate() {
            if chains.members(i).len() < 2 {
                continue;
            }
            let def = self.defs.get_mut(&d.name).expect("drawn");
            if d.concurrency_key.is_some() && chains.anchor(i) != i {
                Self::set_key(&self.keys, def, None);
            }
            // A chain keeps up only if its jobs rarely fail out: one run in ten fails,
            // each failing out pauses its job (and holds its downstreams) for up to ten
            // minutes, and a downstream of two upstreams every 30 s under `required`
            // fell further behind with each pause when none was retried (seeds 5533,
            // 8896: X7 at the end, the job mix's doing, not the store's).
            def.retries = def.retries.max(1);
        }
        self.chained = defs.iter().any(|d| !d.after.is_empty());
        self.check.chains(&self.defs);
    }

    /// Whether key `k`'s lane can take `def`'s runs and still keep up: runs of a lane last
    /// at most three seconds (`drawn_run`) and are collected within one, so a lane takes at
    /// most eight runs a minute per unit of width, about half its time; a job due more often
    /// than once a minute never joins one (buffered overlaps run one at a time). A world
    /// whose lane cannot keep up would owe more and more by design, which is the job mix's
    /// doing, not the store's.
    fn lane_room(&self, k: usize, def: &JobDef) -> bool {
        let per_minute = |d: &JobDef| match &d.schedule {
            Schedule::Every { period, .. } => 60_000.0 / period.as_millis() as f64,
            _ => 1.0,
        };
        let (key, width) = (&self.keys[k].0, self.keys[k].1);
        let load: f64 = self
            .defs
            .values()
            .filter(|d| d.name != def.name && d.concurrency_key.as_ref() == Some(key))
            .map(per_minute)
            .sum();
        per_minute(def) <= 1.0 && load + per_minute(def) <= 8.0 * f64::from(width)
    }

    /// Puts `def` under key number `k` (with the key's width), or under none.
    fn set_key(keys: &[(String, u32)], def: &mut JobDef, k: Option<usize>) {
        match k {
            Some(k) => {
                def.concurrency_key = Some(keys[k].0.clone());
                def.concurrency_limit = Some(keys[k].1);
            }
            None => {
                def.concurrency_key = None;
                def.concurrency_limit = None;
            }
        }
    }

    fn at(&mut self, t: i64, act: Act) {
        self.order += 1;
        self.queue.insert((t, self.order), act);
    }

    /// After an exponential wait for `per_hour`, unless healed.
    fn again(&mut self, per_hour: f64, act: Act) {
        if per_hour <= 0.0 || self.healed {
            return;
        }
        let u: f64 = self.rng.gen_range(1e-9..1.0);
        let t = self.t + (-u.ln() / per_hour * HOUR as f64) as i64 + 1;
        self.at(t, act);
    }

    /// A line of the readable trace, built only when one is kept.
    fn note(&mut self, line: impl FnOnce() -> String) {
        let t = self.t;
        if let Some(trace) = &mut self.trace {
            trace.push(format!("{} {}", ts(t), line()));
        }
    }

    fn probe(&mut self, what: &'static str) {
        *self.probes.entry(what).or_default() += 1;
    }

    fn run(&mut self) {
        let defs: Vec<JobDef> = self.defs.values().cloned().collect();
        // Upstreams first: the core refuses a downstream whose upstream it does not know.
        for def in upsert_order(&defs).into_iter().map(|i| defs[i].clone()) {
            self.person(Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("setup"),
            });
        }
        for _ in 0..self.cfg.daemons {
            self.daemons.push(Daemon::down(self.cfg.partitions));
            let d = self.daemons.len() - 1;
            let t = self.t + self.rng.gen_range(0..self.cfg.tick_ms);
            self.at(t, Act::Restart { d });
            self.schedule_faults(d);
        }
        self.again(self.cfg.join_per_hour, Act::Join);
        self.again(self.cfg.rekey_per_hour, Act::Rekey);
        self.at(self.t + self.cfg.safety_ms, Act::Heal);
        while let Some(((t, _), act)) = self.queue.pop_first() {
            if t > self.end {
                break;
            }
            self.t = t;
            self.events += 1;
            if act.is_fault() && self.healed {
                continue;
            }
            if !matches!(act, Act::Round { .. } | Act::Collect { .. }) {
                self.note(|| format!("{act:?}"));
            }
            self.handle(act);
        }
        self.t = self.end;
    }

    fn schedule_faults(&mut self, d: usize) {
        let f = &self.cfg;
        let rates = [
            (f.crash_per_hour, Act::Crash { d }),
            (f.stall_per_hour, Act::Stall { d }),
            (f.stop_per_hour, Act::Stop { d }),
        ];
        for (rate, act) in rates {
            self.again(rate, act);
        }
    }

    fn handle(&mut self, act: Act) {
        match act {
            Act::Round { d, gen } => self.round(d, gen),
            Act::Collect { d, gen } => self.collect(d, gen),
            Act::RunDone {
                d,
                life,
                part,
                process,
                run,
                outcome,
            } => self.run_done(d, life, part, process, run, outcome),
            Act::Crash { d } => {
                self.crash(d);
                self.again(self.cfg.crash_per_hour, Act::Crash { d });
            }
            Act::Restart { d } => self.restart(d),
            Act::Stall { d } => {
                self.stall(d);
                self.again(self.cfg.stall_per_hour, Act::Stall { d });
            }
            Act::Wake { d } => self.wake(d),
            Act::Stop { d } => {
                self.stop(d);
                self.again(self.cfg.stop_per_hour, Act::Stop { d });
            }
            Act::Join => {
                self.join();
                self.again(self.cfg.join_per_hour, Act::Join);
            }
            Act::Rekey => {
                self.rekey();
                self.again(self.cfg.rekey_per_hour, Act::Rekey);
            }
            Act::Resume { job } => self.person(Event::Resume {
                job,
                actor: Actor::new("ops"),
            }),
            Act::Heal => self.heal(),
        }
    }

    /// The end of the safety phase: no more faults; every daemon down comes back.
    fn heal(&mut self) {
        self.healed = true;
        for d in 0..self.daemons.len() {
            if !self.daemons[d].up {
                self.at(self.t + 1_000, Act::Restart { d });
            }
        }
    }

    /// A daemon joins, up to `MAX_DAEMONS`.
    fn join(&mut self) {
        if self.daemons.len() >= MAX_DAEMONS {
            return;
        }
        self.daemons.push(Daemon::down(self.cfg.partitions));
        let d = self.daemons.len() - 1;
        self.probe("daemon joined");
        self.restart(d);
        self.schedule_faults(d);
    }

    /// A person changes a job's concurrency key: in place when its partition stays, else
    /// moved (now, or once its open run has settled) with its chain. Only a job that runs
    /// after none, in a chain where no other job has a key, takes one (else its lane and
    /// its chain could not share a partition: the host refuses that file).
    fn rekey(&mut self) {
        let i = self.rng.gen_range(0..self.defs.len());
        let Some(mut def) = self.defs.values().nth(i).cloned() else {
            return;
        };
        let k = self.rng.gen_range(0..=self.keys.len());
        let k = Some(k)
            .filter(|&k| k < self.keys.len() && self.lane_room(k, &def))
            .filter(|_| self.may_take_a_key(&def));
        Self::set_key(&self.keys, &mut def, k);
        self.defs.insert(def.name.clone(), def.clone());
        self.probe("concurrency key changed");
        self.place(def);
    }

    fn finish(mut self) -> PartsReport {
        if self.trace.is_some() {
            self.trace_jobs();
        }
        let states: Vec<&State> = self.parts.iter().map(|p| &p.state).collect();
        self.check.finish(self.t, &states, &self.defs);
        let holders: Vec<Option<ProcessId>> = self
            .parts
            .iter()
            .map(|p| p.lease.owner.filter(|_| p.lease.is_held(ts(self.t))))
            .collect();
        self.check.converged(&holders, &self.members, self.t);
        for (what, n) in self.check.chain_counts() {
            if n > 0 {
                *self.probes.entry(what).or_default() += n;
            }
        }
        PartsReport {
            seed: self.cfg.seed,
            partitions: self.cfg.partitions.get(),
            events: self.events,
            violations: self.check.violations,
            probes: self.probes,
            trace: self.trace.unwrap_or_default(),
        }
    }

    /// Where each job ended and what its record holds, for the readable trace.
    fn trace_jobs(&mut self) {
        let names: Vec<JobName> = self.defs.keys().cloned().collect();
        for name in names {
            let line = match self.where_is(&name) {
                Some(p) => {
                    let state = &self.parts[p.0 as usize].state;
                    let record = state
                        .seq_of_name(name.as_str())
                        .and_then(|s| state.record(s))
                        .map(|r| serde_json::to_string(r).unwrap_or_default());
                    format!("end: {name} in {p}: {}", record.unwrap_or_default())
                }
                None => format!("end: {name} in no partition"),
            };
            self.note(|| line);
        }
    }

    /// The partition job `name` is in now, if any.
    fn where_is(&self, name: &JobName) -> Option<Partition> {
        self.cfg.partitions.iter().find(|p| {
            self.parts[p.0 as usize]
                .state
                .seq_of_name(name.as_str())
                .is_some()
        })
    }

    /// Whether `def`'s job may have a concurrency key: it runs after no job, and no other
    /// job of its chain has one.
    fn may_take_a_key(&self, def: &JobDef) -> bool {
        if !def.after.is_empty() {
            return false;
        }
        let (defs, i) = self.defs_with(def);
        let chains = Chains::new(&defs);
        chains
            .members(i)
            .iter()
            .all(|&m| m == i || defs[m].concurrency_key.is_none())
    }

    /// Every job's definition as people last set it, `def` in place of its job's, and
    /// where `def` is among them.
    fn defs_with(&self, def: &JobDef) -> (Vec<JobDef>, usize) {
        let mut defs: Vec<JobDef> = self.defs.values().cloned().collect();
        let i = match defs.iter().position(|d| d.name == def.name) {
            Some(i) => i,
            None => {
                defs.push(def.clone());
                defs.len() - 1
            }
        };
        defs[i] = def.clone();
        (defs, i)
    }

    /// Where `def` belongs: with its chain (`duetime_loop::chain_routes`, as the host
    /// routes a jobs file).
    fn home(&self, def: &JobDef) -> Partition {
        if !self.chained {
            return route(def, self.cfg.partitions);
        }
        let (defs, i) = self.defs_with(def);
        chain_routes(&defs, self.cfg.partitions)[i]
    }

    /// The jobs that move with `def`'s (itself among them): its chain's jobs that live in
    /// `from`, upstreams first, each under the definition people last set.
    fn chain_in(&self, def: &JobDef, from: Partition) -> Vec<JobDef> {
        if !self.chained {
            return vec![def.clone()];
        }
        let (defs, i) = self.defs_with(def);
        let chains = Chains::new(&defs);
        chains
            .members(i)
            .iter()
            .filter(|&&m| m == i || self.where_is(&defs[m].name) == Some(from))
            .map(|&m| defs[m].clone())
            .collect()
    }

    fn now(&self) -> Now {
        Now::at(ts(self.t))
    }
}
