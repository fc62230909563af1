//! duetime-sim: seeded worlds of crashes, clock jumps, stalls and racing processes run
//! against the duetime core, checked by an oracle that shares no code with the core's
//! schedules. `run_seed` is the whole of one world; the binary runs ranges of them.

pub mod bank;
pub mod calendars;
mod chains;
pub mod check;
pub mod cron_text;
pub mod cron_typing;
mod damage;
pub mod dates;
pub mod gen;
pub mod mistakes;
pub mod oracle;
pub mod parts;
pub mod record;
pub mod replay;
pub mod report;
mod rows;
pub mod user_jobs;
mod wire_def;
pub mod world;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use duetime::{Event, JobName, Now};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use check::{Horizon, Invariant, JobFacts, Probe, Probes, Violation};
pub use gen::{FaultMode, Overrides, WorldConfig};

thread_local! {
    /// Set while `quietly` runs on this thread: a panic then prints nothing and leaves its
    /// message and place here.
    static QUIET: std::cell::RefCell<Option<Option<String>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, turning a panic into `Err(message at place)` without printing anything: a
/// failing seed is reported once, by its verdict, not by a backtrace per replay (a shrink
/// replays a crashing world thousands of times). Panics elsewhere print as usual.
pub fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = QUIET.with(|q| {
                let mut q = q.borrow_mut();
                let Some(slot) = q.as_mut() else { return false };
                let msg = info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".to_string());
                let place = info
                    .location()
                    .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
                *slot = Some(format!("{msg}{place}"));
                true
            });
            if !quiet {
                default(info);
            }
        }));
    });
    let outer = QUIET.with(|q| q.borrow_mut().replace(None));
    let result = catch_unwind(AssertUnwindSafe(f));
    let caught = QUIET.with(|q| std::mem::replace(&mut *q.borrow_mut(), outer));
    result.map_err(|_| caught.flatten().unwrap_or_else(|| "a panic".to_string()))
}

/// What every step of a world keeps, beside what a load checks (S6): no open run's lease
/// lies further ahead of the store's clock than a lease TTL and a `clock_jump`. Every
/// lease is written at a judged time, which the store's clock vouches for within
/// `clock_jump`; one beyond would not lapse when its holder dies until the clock caught up
/// (L3's promise, held at the step that would break it: swarm seed 2338 did, through a
/// result's reading). A world's clock is known before any run starts, so this holds from
/// its first step; a stored state of an older build, or a fuzzer's, need not (a lease
/// written before any clock was known), so it is the simulator's check, not a load's.
pub fn leases_within_the_clock(state: &duetime::State) -> Result<(), String> {
    let Some(clock) = state.clock() else {
        return Ok(());
    };
    let config = state.config();
    let bound = clock
        .saturating_add(config.lease_ttl)
        .saturating_add(config.clock_jump);
    for (_, job) in state.records() {
        if let Some(run) = job
            .run()
            .filter(|r| r.parked().is_none() && r.lease_until() > bound)
        {
            return Err(format!(
                "{}: {}'s lease runs to {}, further ahead of the store's clock ({clock}) than a lease TTL and a clock_jump",
                job.def().name, run.id(), run.lease_until()
            ));
        }
    }
    Ok(())
}

/// S6 for one committed state: it passes the core's own load check (`State::self_check`),
/// keeps no empty activity box (idle jobs stay small: `JobRecord::tidy`) and survives a
/// serde round trip unchanged; on success `state` is the reloaded copy, so
/// the world goes on from what a host would load. `Err` says what broke.
pub fn round_trip(state: &mut duetime::State) -> Result<(), String> {
    // (Loading runs the core's own check: a state that fails it does not load.)
    leases_within_the_clock(state)?;
    let json =
        serde_json::to_vec(state).map_err(|e| format!("the state does not serialize: {e}"))?;
    // Idle jobs stay small: a job with nothing going on carries no activity box at all.
    if json.windows(13).any(|w| w == b"\"activity\":{}") {
        return Err("a job keeps an empty activity box (an idle job carries none)".to_string());
    }
    let copy: duetime::State =
        serde_json::from_slice(&json).map_err(|e| format!("the state does not load: {e}"))?;
    if copy != *state {
        return Err("the state changed in a serde round trip".to_string());
    }
    *state = copy;
    Ok(())
}

/// How one seed ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Held,
    Safety,
    Liveness,
    Crash(String),
    /// The watchdog stopped a world that made no progress (why, in words).
    Stuck(String),
}

impl Verdict {
    /// Exit codes: 0 all held, 1 safety, 2 liveness, 3 a panic in the core, 4 no progress.
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Held => 0,
            Verdict::Safety => 1,
            Verdict::Liveness => 2,
            Verdict::Crash(_) => 3,
            Verdict::Stuck(_) => 4,
        }
    }
}

/// Everything one seed produced.
#[derive(Debug, Clone)]
pub struct SeedReport {
    pub seed: u64,
    pub config: String,
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
    pub events: u64,
    pub jobs: usize,
    pub processes: usize,
    pub sim_ms: i64,
    pub faults: BTreeMap<&'static str, u64>,
    pub probes: BTreeMap<&'static str, u64>,
    pub trace_hash: u64,
    /// The core's inputs, when asked for (replay files, shrinking).
    pub inputs: Option<Vec<(Now, Event)>>,
    pub trace: Option<Vec<String>>,
    pub tick_ms: u64,
    /// The store ran `single_owner` coordination.
    pub single_owner: bool,
    pub max_runs_per_process: Option<u32>,
    pub facts: BTreeMap<JobName, JobFacts>,
    pub horizon: Option<Horizon>,
}

impl SeedReport {
    /// The failure as a regression (the seed must have been run with `record_inputs`).
    pub fn regression(&self) -> Option<replay::Regression> {
        let (invariant, job, liveness) = match &self.verdict {
            Verdict::Held => return None,
            Verdict::Crash(_) => ("crash".to_string(), String::new(), false),
            Verdict::Stuck(_) => return None,
            _ => {
                // A forbidden act first: it is what shrinking keeps.
                let v = self
                    .violations
                    .iter()
                    .find(|v| !v.is_liveness())
                    .or(self.violations.first())?;
                (v.invariant.to_string(), v.job.clone(), v.is_liveness())
            }
        };
        Some(replay::Regression {
            origin: self.config.clone(),
            invariant,
            liveness,
            job,
            tick_ms: self.tick_ms,
            single_owner: self.single_owner,
            max_runs_per_process: self.max_runs_per_process,
            horizon: self.horizon?,
            facts: self.facts.clone(),
            inputs: self.inputs.clone()?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub overrides: Overrides,
    pub record_inputs: bool,
    pub hash_trace: bool,
    pub readable_trace: bool,
    /// A fixed job set (the user's own definitions, with their oracle specs) instead of
    /// drawing one per seed; the seed still draws the world and its faults.
    pub jobs: Option<std::sync::Arc<Vec<gen::SimJob>>>,
    /// Keep run durations in the liveness phase (for the user's own jobs: a job that cannot
    /// keep up must show it, not be rescued by runs made quick).
    pub keep_durations: bool,
    /// Self-check every committed state (S6), whatever the fault mode (heavy and extreme
    /// worlds always do).
    pub check_state: bool,
    /// How long shrinking one failure may take; the shortest trace found by then is kept.
    pub shrink_budget: std::time::Duration,
    /// How long one seed may run by the real clock before the watchdog calls it stuck.
    pub seed_budget: std::time::Duration,
    /// Most resident memory a run of seeds may hold before the watchdog stops it.
    pub max_rss: u64,
    /// Most events a world may spend per simulated hour before the watchdog calls it stuck.
    pub max_events_per_hour: f64,
    /// How much longer than `seed_budget` one seed may run before the monitor calls it
    /// stuck inside one step of the core (the world's own watchdog gets no turn there).
    pub step_grace: std::time::Duration,
    /// Stop taking new seeds once one has failed (the mutation judge: one failure is the
    /// verdict, and the rest of the range would only cost time).
    pub stop_at_first: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            overrides: Overrides::default(),
            record_inputs: false,
            hash_trace: false,
            readable_trace: false,
            jobs: None,
            keep_durations: false,
            check_state: false,
            shrink_budget: std::time::Duration::from_secs(30),
            seed_budget: std::time::Duration::from_secs(120),
            max_rss: 8 << 30,
            max_events_per_hour: world::MAX_EVENTS_PER_HOUR,
            step_grace: std::time::Duration::from_secs(30),
            stop_at_first: false,
        }
    }
}

/// The liveness bounds: due times older than this at the end must be accounted; runs older
/// than this must be settled or lost. Generous on purpose: the liveness phase lasts hours.
const SETTLE_BOUND_MS: i64 = 2 * 3_600_000;
const RUN_BOUND_MS: i64 = 3_600_000;

/// The liveness bounds for these jobs: the constants above, and, where runs keep their
/// durations to the end (the user's own jobs, `keep_durations`), the constants plus the
/// longest a run may take (its drawn duration, cut at its timeout). A backup whose runs
/// take two hours is not stuck when one started an hour and a half before the end.
fn liveness_bounds(jobs: &[gen::SimJob], keep_durations: bool) -> (i64, i64) {
    if !keep_durations {
        return (SETTLE_BOUND_MS, RUN_BOUND_MS);
    }
    let longest = jobs
        .iter()
        .map(|j| {
            let timeout = i64::try_from(j.def.timeout.as_millis()).unwrap_or(i64::MAX);
            j.behaviour.duration_ms.1.min(timeout)
        })
        .max()
        .unwrap_or(0);
    (
        SETTLE_BOUND_MS.saturating_add(longest),
        RUN_BOUND_MS.saturating_add(longest),
    )
}

/// Draws and runs one world, then checks its journal: the world drawn, the checks its
/// schedules need no world for, the world run, and its verdict.
pub fn run_seed(seed: u64, opts: &Options) -> SeedReport {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cfg = gen::draw_world(seed, &mut rng, &opts.overrides);
    let jobs = match &opts.jobs {
        Some(fixed) => fixed.as_ref().clone(),
        None => gen::draw_jobs(&mut rng, &cfg, opts.overrides.jobs),
    };
    let mut report = SeedReport::drawn(seed, &cfg, jobs.len());
    let start_ms = cfg.start_ms;
    let beside = Beside::check(seed, start_ms, &jobs, opts.overrides.calendars);
    let (settle_bound, run_bound) = liveness_bounds(&jobs, opts.keep_durations);
    let mut world = world_of(cfg, rng, jobs, opts);
    let outcome = quietly(|| world.run());
    let horizon = Horizon {
        end: world.now_ms(),
        settle_bound,
        run_bound,
        check_liveness: true,
    };
    report.ran(&mut world, start_ms, horizon);
    if let Err(msg) = outcome {
        report.verdict = Verdict::Crash(msg);
        return report;
    }
    if let Some(why) = world.stuck.take() {
        report.verdict = Verdict::Stuck(format!(
            "the core made no progress: seed {seed} spent {why}"
        ));
        return report;
    }
    // The checker has followed the journal as it was written; what is left needs the end.
    let checker = std::mem::replace(&mut world.checker, check::Checker::new(BTreeMap::new()));
    let mut violations = checker.finish(horizon, &mut report.probes);
    beside.judged(seed, &mut report.probes, &mut violations);
    report.verdict = if violations.iter().any(|v| !v.is_liveness()) {
        Verdict::Safety
    } else if !violations.is_empty() {
        Verdict::Liveness
    } else {
        Verdict::Held
    };
    report.violations = violations;
    report
}

/// The world of a seed, set up as `opts` ask (its trace, its durations, its checks of the
/// state and its watchdog's bounds).
fn world_of(
    cfg: WorldConfig,
    rng: ChaCha8Rng,
    jobs: Vec<gen::SimJob>,
    opts: &Options,
) -> world::World {
    let checks_state = cfg.mode.checks_state();
    let mut world = world::World::new(cfg, rng, jobs, opts.record_inputs, opts.hash_trace);
    if opts.readable_trace {
        world.trace = Some(Vec::new());
    }
    world.keep_durations = opts.keep_durations;
    world.check_state = opts.check_state || checks_state;
    world.seed_budget = opts.seed_budget;
    world.max_events_per_hour = opts.max_events_per_hour;
    world
}

impl SeedReport {
    /// The report of a world just drawn: what its drawing says, nothing run yet.
    fn drawn(seed: u64, cfg: &WorldConfig, jobs: usize) -> SeedReport {
        SeedReport {
            seed,
            config: cfg.to_string(),
            verdict: Verdict::Held,
            violations: Vec::new(),
            events: 0,
            jobs,
            processes: cfg.processes,
            sim_ms: 0,
            faults: BTreeMap::new(),
            probes: BTreeMap::new(),
            trace_hash: 0,
            inputs: None,
            trace: None,
            tick_ms: cfg.tick_ms as u64,
            single_owner: cfg.single_owner,
            max_runs_per_process: cfg.max_runs_per_process,
            facts: BTreeMap::new(),
            horizon: None,
        }
    }

    /// What the world did, however its run ended (a crash or a stuck world too).
    fn ran(&mut self, world: &mut world::World, start_ms: i64, horizon: Horizon) {
        self.events = world.events;
        // What the world actually ran: healing extends the liveness phase past the latest
        // wall time any clock showed, so a jumped clock makes a longer world.
        self.sim_ms = world.now_ms() - start_ms;
        self.faults = world.faults.clone();
        self.probes = world.probes.names();
        self.trace_hash = world.trace_hash;
        self.inputs = world.inputs.take();
        self.trace = world.trace.take();
        self.facts = world.checker.facts().clone();
        self.horizon = Some(horizon);
    }
}

/// The checks of a seed's schedules that need no world, made before it runs: Z1 (its cron
/// jobs' dates over years) and Z3 (its calendars over weeks, and Z3's own schedules in
/// calendar worlds); what the calendars left out of the world or rolled into it.
struct Beside {
    dates: dates::DateReport,
    calendars: dates::DateReport,
    left_out: u64,
    rolled: u64,
}

impl Beside {
    fn check(seed: u64, start_ms: i64, jobs: &[gen::SimJob], calendar_world: bool) -> Beside {
        let dates = dates::check_jobs(seed, jobs);
        let mut calendars = calendars::check_calendars(seed, start_ms, jobs);
        let (left_out, rolled) = calendars::reach(start_ms, jobs);
        // Z3's own schedules cost about a world each (a search for a seldom due time walks
        // months): calendar worlds only, until they are cheaper.
        let drawn_rules = if calendar_world {
            calendars::Z3_DRAWN
        } else {
            0
        };
        let drawn = calendars::check_drawn(seed, drawn_rules);
        calendars.checked += drawn.checked;
        calendars.violations.extend(drawn.violations);
        Beside {
            dates,
            calendars,
            left_out,
            rolled,
        }
    }

    /// Z1, Z2 (cron text typed near its bounds, drawn now) and Z3 added to a world's
    /// verdict: their counts to its probes (the three always named, even at nought), their
    /// violations after the checker's, in that order.
    fn judged(self, seed: u64, probes: &mut Probes, violations: &mut Vec<Violation>) {
        let mut count = |probe: Probe, n: u64| *probes.entry(probe.name()).or_default() += n;
        count(Probe::CronDatesCheckedOverYearsZ1, self.dates.checked);
        violations.extend(self.dates.violations);
        let (typed, typed_wrong) = cron_typing::check_seed(seed);
        count(Probe::CronTextTypedNearItsBoundsZ2, typed);
        violations.extend(typed_wrong);
        count(
            Probe::CalendarSchedulesCheckedOverWeeksZ3,
            self.calendars.checked,
        );
        for (probe, n) in [
            (Probe::CalendarLeftOutABaseDueTimeInTheWorld, self.left_out),
            (Probe::CalendarRolledADueTimeIntoTheWorld, self.rolled),
        ] {
            if n > 0 {
                count(probe, n);
            }
        }
        violations.extend(self.calendars.violations);
    }
}

/// What the checker may know besides the journal: each job's oracle specs (every schedule
/// the world ever gave it) and its rules.
pub(crate) fn facts_of(jobs: &[gen::SimJob]) -> BTreeMap<JobName, JobFacts> {
    let ms = |d: duetime::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    jobs.iter()
        .map(|j| {
            let mut specs = BTreeMap::new();
            specs.insert(cron_text::schedule_key(&j.def.schedule), j.spec.clone());
            for (s, spec) in &j.alternatives {
                specs.insert(cron_text::schedule_key(s), spec.clone());
            }
            let facts = JobFacts {
                safe_to_repeat: j.def.safe_to_repeat,
                missed: j.def.missed,
                pause_after_failures: j.def.pause_after_failures,
                alert_throttle: j.def.alert_throttle.map(|d| d.as_millis() as i64),
                specs,
                concurrency_key: j.def.concurrency_key.clone(),
                concurrency_limit: j.def.concurrency_limit,
                jitter_ms: j.def.jitter.map(|d| d.as_millis()),
                requires_confirmation: j.def.requires_confirmation,
                expect_success_within: j.def.expect_success_within.map(|d| d.as_millis() as i64),
                stall_after: Some(j.def.stall_after.as_millis() as i64),
                overlap: Some(j.def.overlap_policy()),
                retries: Some(j.def.retries),
                backoff_ms: Some((ms(j.def.backoff.initial), ms(j.def.backoff.max))),
                // The default, as docs/semantics.md gives it: the backoff's max.
                wait_budget_ms: Some(ms(j.def.wait_budget.unwrap_or(j.def.backoff.max))),
                catch_up_window_ms: j.def.catch_up_window.map(ms),
                after: j.def.after.clone(),
            };
            (j.def.name.clone(), facts)
        })
        .collect()
}
