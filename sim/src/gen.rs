//! Drawing a world from a seed: first its shape and every fault's probability (swarm
//! testing: some seeds crash a lot and never jump clocks, others the reverse), then the jobs.
//! Everything comes from one ChaCha stream, so a seed is a world.

use std::fmt;

use duetime::{DstPolicy, Duration, Fold, Gap, JobDef, JobName, MissedRule, Overlap, Schedule};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::oracle::{CronSpec, Spec};

/// How hard the world is on the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultMode {
    None,
    Light,
    Heavy,
    /// Each seed draws each fault's rate: off, up to heavy, heavy, or extreme.
    Swarm,
    /// Several times heavy: clocks days ahead and behind, long stalls, crash loops, bursts
    /// of redefinitions, drains during clock jumps.
    Extreme,
    /// Hosts slower than their tick and nothing else: a two-second tick, and spans of
    /// minutes in which each turn of a process takes longer than the tick (a slow store, a
    /// machine at full load), with now and then an aborted transaction. No crash, stall,
    /// clock jump or lost commit answer, so F1 asks that no run is lost and no due time
    /// missed as `down`.
    Overload,
}

/// How much harder than `heavy` the extreme rates are.
pub const EXTREME: f64 = 4.0;

impl std::str::FromStr for FaultMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(FaultMode::None),
            "light" => Ok(FaultMode::Light),
            "heavy" => Ok(FaultMode::Heavy),
            "swarm" => Ok(FaultMode::Swarm),
            "extreme" => Ok(FaultMode::Extreme),
            "overload" => Ok(FaultMode::Overload),
            other => Err(format!(
                "--faults: `{other}`; accepted: none, light, heavy, extreme, swarm, overload"
            )),
        }
    }
}

impl FaultMode {
    /// Whether worlds of this mode self-check every committed state (S6): the modes that
    /// hunt for bugs pay for it; the others round-trip the state now and then.
    pub fn checks_state(self) -> bool {
        matches!(self, FaultMode::Heavy | FaultMode::Extreme)
    }

    /// The name `--faults` takes.
    pub fn name(self) -> &'static str {
        match self {
            FaultMode::None => "none",
            FaultMode::Light => "light",
            FaultMode::Heavy => "heavy",
            FaultMode::Swarm => "swarm",
            FaultMode::Extreme => "extreme",
            FaultMode::Overload => "overload",
        }
    }
}

/// What the user may pin on the command line; the rest is drawn.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub processes: Option<usize>,
    pub jobs: Option<usize>,
    pub days: Option<f64>,
    pub faults: Option<FaultMode>,
    /// The store's tick in milliseconds (default 30 s), for jobs files written for
    /// another tick (`duetime sim --tick`).
    pub tick_ms: Option<i64>,
    /// Draws the world without the draws added after the seeds kept by number were found
    /// (`draw_stalls`: every job keeps the default `stall_after`; `draw_seconds`: no cron
    /// seconds field), so those seeds (`sim/tests/seeds.rs`) replay their worlds.
    pub without_late_draws: bool,
    /// Some schedules are wrapped in calendars (`calendars::draw_calendars`; issue 45, not
    /// yet in the default worlds: `--calendars`).
    pub calendars: bool,
    /// Draws no chains (`--no-chains`): by default two worlds in five make some jobs wait
    /// for others (`chains::draw_chains`).
    pub without_chains: bool,
}

/// Per-hour rates and per-event probabilities of every fault.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    pub crash_per_hour: f64,
    pub stall_per_hour: f64,
    pub jump_per_hour: f64,
    pub drain_per_hour: f64,
    pub command_per_hour: f64,
    pub abort: f64,
    pub lost_answer: f64,
    pub late_result: f64,
    pub duplicate_result: f64,
    pub orphan_delivers: f64,
    /// Whether a restarted process adopts the runs its predecessor's children still run.
    pub adopt: bool,
    pub max_skew_ms: i64,
    pub max_drift_ppm: i64,
    /// Bursts per host and hour: a crash loop, a run of redefinitions of one job while its
    /// runs are open, or a drain right after a clock jump.
    pub burst_per_hour: f64,
    /// The largest clock jump (either way) and the longest stall a world draws.
    pub max_jump_ms: i64,
    pub max_stall_ms: i64,
    /// Spans of slow turns per host and hour (`FaultMode::Overload`), and the longest turn
    /// one draws.
    pub overload_per_hour: f64,
    pub max_turn_ms: i64,
}

/// The world's shape.
#[derive(Debug, Clone)]
pub struct WorldConfig {
    pub seed: u64,
    /// The fault mode the world was drawn in.
    pub mode: FaultMode,
    pub processes: usize,
    pub start_ms: i64,
    pub safety_ms: i64,
    pub liveness_ms: i64,
    pub tick_ms: i64,
    pub faults: Faults,
    /// The zone whose daylight-saving change the period starts near: half the cron jobs
    /// are drawn in it, so gaps and folds are met often, not by luck.
    pub dst_zone: &'static str,
    /// Some jobs draw a `stall_after` within their timeout (`draw_stalls`), and some cron
    /// schedules a seconds field (`draw_seconds`).
    pub late_draws: bool,
    /// Some schedules are wrapped in calendars (`Overrides::calendars`).
    pub calendars: bool,
    /// Some jobs wait for others (`Overrides::chains`).
    pub chains: bool,
    /// The store runs `single_owner` coordination (one process claims at a time) rather
    /// than shared.
    pub single_owner: bool,
    /// The state's `max_runs_per_process`, for some worlds.
    pub max_runs_per_process: Option<u32>,
    /// The store keeps one row per job and a second copy follows its rows
    /// (`sim/src/rows.rs`), as the host's stores do.
    pub rows: bool,
}

/// Whether a seed's world runs `single_owner` coordination: half of them. Drawn from a
/// stream of its own, so adding it changed no other draw of any seed's world.
fn draw_single_owner(seed: u64) -> bool {
    use rand::SeedableRng;
    let mut own = ChaCha8Rng::seed_from_u64(seed ^ 0x6f77_6e65_725f_6c65);
    own.gen_bool(0.5)
}

impl fmt::Display for WorldConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fa = &self.faults;
        let start = duetime::Timestamp::from_millis(self.start_ms);
        write!(
            f,
            "seed {} | {} processes, tick {}s, from {start}, safety {:.1}h + liveness {:.1}h | \
             per hour: crash {:.2} stall {:.2} jump {:.2} drain {:.2} command {:.2} | \
             abort {:.3} lost-answer {:.3} late {:.3} dup {:.3} orphan {:.2} adopt {} | skew ±{}s drift ±{}ppm | \
             burst {:.2} jumps to {:.1}d stalls to {:.1}h | {}{}{}{}{}",
            self.seed,
            self.processes,
            self.tick_ms / 1000,
            self.safety_ms as f64 / 3.6e6,
            self.liveness_ms as f64 / 3.6e6,
            fa.crash_per_hour,
            fa.stall_per_hour,
            fa.jump_per_hour,
            fa.drain_per_hour,
            fa.command_per_hour,
            fa.abort,
            fa.lost_answer,
            fa.late_result,
            fa.duplicate_result,
            fa.orphan_delivers,
            fa.adopt,
            fa.max_skew_ms / 1000,
            fa.max_drift_ppm,
            fa.burst_per_hour,
            fa.max_jump_ms as f64 / 86_400_000.0,
            fa.max_stall_ms as f64 / 3_600_000.0,
            if self.single_owner {
                "single_owner"
            } else {
                "shared"
            },
            match self.max_runs_per_process {
                Some(cap) => format!(" | cap {cap} runs per process"),
                None => String::new(),
            },
            if self.rows { " | rows" } else { "" },
            if self.calendars { " | calendars" } else { "" },
            if self.chains { " | chains" } else { "" }
        )
    }
}

/// How a job's runs behave in this world.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// Typical run duration, as a fraction of the job's shortest spacing.
    pub duration_ms: (i64, i64),
    pub fail: f64,
    pub fail_retry_after: f64,
    pub hang: f64,
    /// How often a run that would end ok ends `awaiting_approval` instead (a deploy that
    /// waits for a person's sign-off), and the range of its ttl.
    pub park: f64,
    pub park_ttl_ms: (i64, i64),
}

/// A job of the world: its definition, what the oracle knows, how its runs behave.
#[derive(Debug, Clone)]
pub struct SimJob {
    pub def: JobDef,
    pub spec: Spec,
    pub behaviour: Behaviour,
    /// Other schedules people may switch it to.
    pub alternatives: Vec<(Schedule, Spec)>,
}

/// Daylight-saving days the simulated period starts near (UTC instants, 2025), and the
/// zone that changes then.
const STARTS: [(&str, &str); 6] = [
    ("2025-03-08T18:00:00Z", "America/New_York"), // spring forward
    ("2025-11-01T18:00:00Z", "America/New_York"), // fall back
    ("2025-03-29T18:00:00Z", "Europe/London"),    // spring forward
    ("2025-10-25T18:00:00Z", "Europe/London"),    // fall back
    ("2025-04-05T06:00:00Z", "Australia/Lord_Howe"), // fall back by 30 min
    ("2025-09-06T00:00:00Z", "America/Santiago"), // spring forward at midnight
];

pub(crate) const ZONES: [&str; 6] = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kolkata",
];

/// A fault's rate in `mode`, from its heavy rate. Swarm worlds draw each fault on its
/// own: off (30%), anywhere up to heavy (35%), heavy (20%) or extreme (15%), so a fair share
/// of seeds is hard on each fault and some on several at once.
fn scale(mode: FaultMode, rng: &mut ChaCha8Rng, heavy: f64) -> f64 {
    match mode {
        FaultMode::None | FaultMode::Overload => 0.0,
        FaultMode::Light => heavy * 0.1,
        FaultMode::Heavy => heavy,
        FaultMode::Extreme => heavy * EXTREME,
        FaultMode::Swarm => {
            if rng.gen_bool(0.3) {
                return 0.0;
            }
            // One draw, as always, read in three bands.
            let u = rng.gen_range(0.0..1.0f64);
            if u < 0.5 {
                heavy * u * 2.0
            } else if u < 0.786 {
                heavy
            } else {
                heavy * EXTREME
            }
        }
    }
}

/// A probability per event, drawn like a rate but never above `max`.
fn chance(mode: FaultMode, rng: &mut ChaCha8Rng, heavy: f64, max: f64) -> f64 {
    scale(mode, rng, heavy).min(max)
}

/// The parts of a world that extreme modes reach further (bursts, jumps of days, stalls of
/// a day), drawn from a stream of their own so every other draw of a seed is as it was.
fn draw_extremes(seed: u64, mode: FaultMode, mut f: Faults) -> Faults {
    let mut rng = stream_rng(seed, Stream::Extremes);
    let extreme = match mode {
        FaultMode::Extreme => true,
        FaultMode::Swarm => rng.gen_bool(0.15),
        _ => false,
    };
    f.burst_per_hour = match mode {
        FaultMode::None | FaultMode::Light | FaultMode::Overload => 0.0,
        FaultMode::Swarm if !extreme => scale(mode, &mut rng, 0.2),
        _ if extreme => 1.0,
        _ => 0.2,
    };
    if extreme {
        f.max_jump_ms = 7 * 86_400_000;
        f.max_stall_ms = 24 * 3_600_000;
    }
    f
}

/// The overload mode's world: a two-second tick (unless one is pinned), and slow turns of
/// one to two and a half ticks. Two ticks of lease would lapse in such a turn; the core's
/// floor (`duetime::MIN_LEASE`, ten seconds) is what keeps them (F1). The turns are drawn
/// from the tick, not from the store's lease, so a core with a shorter lease meets the
/// same worlds and fails them. Aborted transactions are drawn too (2%); every other fault
/// stays off (`scale` gives them 0).
fn draw_overload(mode: FaultMode, mut f: Faults, tick_ms: i64) -> (Faults, i64) {
    if mode != FaultMode::Overload {
        return (f, tick_ms);
    }
    let tick_ms = if tick_ms == 30_000 { 2_000 } else { tick_ms };
    f.overload_per_hour = 3.0;
    f.max_turn_ms = tick_ms * 5 / 2;
    f.orphan_delivers = 0.0;
    // A loaded store also aborts a transaction now and then (a serialization failure, a
    // lock timeout): the process tries again, and a run whose report aborted stays held,
    // its lease renewed, until the report commits (`duetime_loop::Incarnation`). F1 holds
    // through them.
    f.abort = 0.02;
    (f, tick_ms)
}

pub fn draw_world(seed: u64, rng: &mut ChaCha8Rng, o: &Overrides) -> WorldConfig {
    let mode = o.faults.unwrap_or(FaultMode::Swarm);
    let processes = o
        .processes
        .unwrap_or_else(|| rng.gen_range(2..=6))
        .clamp(1, 64);
    let (start, dst_zone) = STARTS[rng.gen_range(0..STARTS.len())];
    let start_ms = start
        .parse::<duetime::Timestamp>()
        .expect("constant")
        .as_millis();
    let days = o.days.unwrap_or_else(|| rng.gen_range(0.75..1.5));
    // Overload worlds tick every two seconds: a quarter of the days costs about the same.
    let days = match (mode, o.days) {
        (FaultMode::Overload, None) => days / 4.0,
        _ => days,
    };
    let total_ms = (days * 86_400_000.0) as i64;
    let liveness_ms = (total_ms / 4).max(4 * 3_600_000);
    let safety_ms = (total_ms - liveness_ms).max(3_600_000);
    let faults = Faults {
        crash_per_hour: scale(mode, rng, 1.5),
        stall_per_hour: scale(mode, rng, 1.5),
        jump_per_hour: scale(mode, rng, 0.5),
        drain_per_hour: scale(mode, rng, 0.3),
        command_per_hour: scale(mode, rng, 3.0),
        abort: chance(mode, rng, 0.03, 0.2),
        lost_answer: chance(mode, rng, 0.03, 0.2),
        late_result: chance(mode, rng, 0.1, 0.4),
        duplicate_result: chance(mode, rng, 0.1, 0.4),
        orphan_delivers: rng.gen_range(0.0..1.0),
        adopt: rng.gen_bool(0.5),
        max_skew_ms: (scale(mode, rng, 1.0) * 180_000.0) as i64,
        max_drift_ppm: (scale(mode, rng, 1.0) * 300.0) as i64,
        burst_per_hour: 0.0,
        max_jump_ms: 2 * 86_400_000,
        max_stall_ms: 6 * 3_600_000,
        overload_per_hour: 0.0,
        max_turn_ms: 0,
    };
    let faults = draw_extremes(seed, mode, faults);
    let (faults, tick_ms) = draw_overload(mode, faults, o.tick_ms.unwrap_or(30_000).max(1_000));
    // Drawn from a stream of its own, so adding it left every other draw of a seed as it
    // was.
    let mut extra = stream_rng(seed, Stream::Extra);
    let max_runs_per_process = extra.gen_bool(0.3).then(|| extra.gen_range(1..=3));
    let rows = stream_rng(seed, Stream::Features).gen_bool(0.35);
    WorldConfig {
        seed,
        mode,
        processes,
        start_ms,
        safety_ms,
        liveness_ms,
        tick_ms,
        faults,
        dst_zone,
        late_draws: !o.without_late_draws,
        calendars: o.calendars,
        chains: !o.without_chains,
        single_owner: draw_single_owner(seed),
        max_runs_per_process,
        rows,
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())]
}

/// A cron spec from a small menu of shapes people write, in a random zone.
fn draw_cron(rng: &mut ChaCha8Rng, dst_zone: &'static str) -> CronSpec {
    let tz_name = if rng.gen_bool(0.5) {
        dst_zone
    } else {
        pick(rng, &ZONES)
    };
    let all = |lo: u32, hi: u32| (lo..=hi).collect::<Vec<_>>();
    let (text_min, minutes, text_hour, hours) = match rng.gen_range(0..6) {
        0 => ("*".to_string(), all(0, 59), "*".to_string(), all(0, 23)),
        1 => {
            let step = pick(rng, &[2u32, 5, 10, 15, 20, 30]);
            (
                format!("*/{step}"),
                (0..60).step_by(step as usize).collect(),
                "*".to_string(),
                all(0, 23),
            )
        }
        2 => {
            let m = rng.gen_range(0..60);
            (m.to_string(), vec![m], "*".to_string(), all(0, 23))
        }
        3 => {
            // A fixed time of night, where daylight-saving changes happen.
            let m = pick(rng, &[0u32, 15, 30, 45]);
            let h = pick(rng, &[0u32, 1, 2, 3]);
            (m.to_string(), vec![m], h.to_string(), vec![h])
        }
        4 => (
            "0,30".to_string(),
            vec![0, 30],
            "1-3".to_string(),
            vec![1, 2, 3],
        ),
        _ => {
            let m = rng.gen_range(0..60);
            let h = rng.gen_range(0..24);
            (m.to_string(), vec![m], h.to_string(), vec![h])
        }
    };
    let (text_dom, days, text_dow, weekdays) = match rng.gen_range(0..5) {
        0 => ("1-15".to_string(), all(1, 15), "1-5".to_string(), all(1, 5)),
        1 => ("*".to_string(), all(1, 31), "1-5".to_string(), all(1, 5)),
        _ => ("*".to_string(), all(1, 31), "*".to_string(), all(0, 6)),
    };
    let text = format!("{text_min} {text_hour} {text_dom} * {text_dow}");
    CronSpec {
        seconds: vec![0],
        minutes,
        hours,
        days,
        months: all(1, 12),
        dom_star: text_dom.starts_with('*'),
        dow_star: text_dow.starts_with('*'),
        last_day: false,
        last_weekdays: Vec::new(),
        nth_weekdays: Vec::new(),
        weekdays,
        dst: None,
        tz: tz_name.parse().expect("known zone"),
        text,
    }
}

fn draw_schedule(
    rng: &mut ChaCha8Rng,
    start_ms: i64,
    span_ms: i64,
    dst_zone: &'static str,
) -> (Schedule, Spec, i64) {
    match rng.gen_range(0..10) {
        0..=5 => {
            let c = draw_cron(rng, dst_zone);
            let schedule = Schedule::cron(&c.text, Some(c.tz.name()))
                .expect("the generator writes valid cron");
            let spacing = if c.minutes.len() > 1 || c.hours.len() > 1 {
                60_000 * 60 / c.minutes.len().max(1) as i64
            } else {
                3_600_000
            };
            (schedule, Spec::Cron(Box::new(c)), spacing.min(3_600_000))
        }
        6..=8 => {
            let period = pick(
                rng,
                &[30_000i64, 60_000, 90_000, 300_000, 900_000, 3_600_000],
            );
            let offset = rng.gen_range(0..period);
            let schedule = Schedule::every(
                Duration::from_millis(period as u64),
                Duration::from_millis(offset as u64),
            )
            .expect("positive period");
            (
                schedule,
                Spec::Every {
                    period_ms: period,
                    offset_ms: offset,
                },
                period,
            )
        }
        _ => {
            let at = start_ms + rng.gen_range(0..span_ms.max(1)) / 1000 * 1000;
            (
                Schedule::at(duetime::Timestamp::from_millis(at)),
                Spec::At { at_ms: at },
                3_600_000,
            )
        }
    }
}

/// The random streams a world draws apart from its first one, each keyed by the seed and
/// its purpose. A feature added to the worlds draws from a stream of its own, so every
/// other draw of a seed stays as it was and the seeds kept by number replay the worlds of
/// their day. The numbers are those the streams were first drawn with: never renumber one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Stream {
    /// The cap on runs per process (`draw_world`).
    Extra = 1,
    /// Lanes, jitter, confirmation (`draw_features`), and whether the world keeps a store
    /// of rows.
    Features = 2,
    /// The extreme mode's rates (`draw_extremes`), and the jobs' one-shot dates.
    Extremes = 3,
    /// The dates a seed's schedules are checked at (`dates.rs`).
    DateChecks = 4,
    /// Jobs switched between schedules (`draw_switches`).
    Switches = 5,
    /// People's mistakes and who they are (`World::slips`).
    Slips = 6,
    /// Damage done to stored rows (`damage.rs`).
    Damage = 7,
    /// Cron expressions typed by people (`cron_typing.rs`).
    CronTyping = 8,
    /// Daylight-saving policies (`draw_dst_policies`).
    DstPolicies = 9,
    /// Jobs moved between concurrency keys (`World::move_lane`).
    Moves = 10,
    /// Slow runs (`World::slow`).
    Slow = 11,
    /// Bursts of trouble (`World::burst`).
    Bursts = 12,
    /// The edges: wrong fences, budgets met exactly, skipped successes (`World::edges`).
    Edges = 13,
    /// Jobs whose runs stall (`draw_stalls`).
    Stalls = 14,
    /// Schedules with a seconds field (`draw_seconds`).
    Seconds = 15,
    /// Things asked again: drains, approvals (`World::again`).
    Again = 16,
    /// Retry waits (`World::waits`).
    Waits = 17,
    /// A person pressing "run now" again and again (`World::schedule_presses`).
    Presses = 18,
    /// Every clock set at once (`World::schedule_clock_sets`).
    ClockSets = 19,
    /// Slow turns of overloaded hosts (`World::turns`).
    Turns = 20,
    /// Monotonic clocks read in a wrong unit (`World::schedule_mono_units`).
    MonoUnits = 21,
    /// Calendars around schedules (`calendars::draw_calendars`).
    Calendars = 22,
    /// The instants Z3 checks calendar schedules from (`calendars::check_calendars`).
    CalendarChecks = 23,
    /// Z3's own calendar schedules (`calendars::check_drawn`).
    CalendarRules = 24,
    /// Jobs that wait for other jobs (`chains::draw_chains`).
    Chains = 25,
}

/// The random stream `stream` of world `seed`.
pub(crate) fn stream_rng(seed: u64, stream: Stream) -> ChaCha8Rng {
    use rand::SeedableRng;
    ChaCha8Rng::seed_from_u64(seed ^ (0x6c61_6e65_0000_0000 | stream as u64))
}

/// Concurrency keys (several jobs per key, each key one width), jitter and confirmation
/// for some jobs of the world.
fn draw_features(cfg: &WorldConfig, jobs: &mut [SimJob], tightest: &[i64]) {
    let mut rng = stream_rng(cfg.seed, Stream::Features);
    let keys = rng.gen_range(1..=3);
    let widths: Vec<u32> = (0..keys).map(|_| rng.gen_range(1..=2)).collect();
    let keyed = rng.gen_range(0.0..0.8);
    for (job, &tight) in jobs.iter_mut().zip(tightest) {
        if rng.gen_bool(keyed) {
            let k = rng.gen_range(0..keys);
            job.def.concurrency_key = Some(format!("/data/folder{k}"));
            if widths[k] > 1 {
                job.def.concurrency_limit = Some(widths[k]);
            }
        }
        if rng.gen_bool(0.25) {
            // At most half the tightest spacing of its schedules (and an hour): a valid
            // definition whichever schedule people switch it to.
            let max = (tight.min(3_600_000) / 2).max(1_000);
            job.def.jitter = Some(Duration::from_millis(rng.gen_range(1_000..=max) as u64));
        }
        job.def.requires_confirmation = rng.gen_bool(0.2);
    }
}

/// An explicit daylight-saving policy for about a third of the cron schedules (each job's
/// own and those people may switch it to), so the rules people choose (`skip`,
/// `run_at_gap_end`; `first`, `last`, `both`) meet the changes the worlds start near, not
/// only cron's defaults. The oracle is told the rule as data (`CronSpec::dst`). From a
/// stream of its own, so the worlds drawn before are otherwise the same.
fn draw_dst_policies(cfg: &WorldConfig, jobs: &mut [SimJob]) {
    let mut rng = stream_rng(cfg.seed, Stream::DstPolicies);
    for job in jobs {
        choose_dst_policy(&mut rng, &mut job.def.schedule, &mut job.spec);
        for (schedule, spec) in &mut job.alternatives {
            choose_dst_policy(&mut rng, schedule, spec);
        }
    }
}

fn choose_dst_policy(rng: &mut ChaCha8Rng, schedule: &mut Schedule, spec: &mut Spec) {
    let (Schedule::Cron(cron), Spec::Cron(oracle)) = (schedule, spec) else {
        return;
    };
    if !rng.gen_bool(0.3) {
        return;
    }
    let policy = DstPolicy {
        gap: pick(rng, &[Gap::RunAtGapEnd, Gap::Skip]),
        fold: pick(rng, &[Fold::First, Fold::Last, Fold::Both]),
    };
    *cron = cron.clone().with_dst(Some(policy));
    oracle.dst = Some(crate::cron_text::dst_rule(policy));
}

/// A seconds field for about a fifth of the cron schedules drawn (`drawn`: a schedule,
/// its oracle's spec and its tightest spacing): one second of the minute, two, or every
/// twentieth, so the core's matcher finds seconds past a matching minute's first and the
/// oracle yields them (`CronSpec::seconds`). The spacing narrows to the seconds' own.
/// From a stream of its own (`Stream::Seconds`), so the rest of a world is drawn
/// as before.
fn draw_seconds(rng: &mut ChaCha8Rng, drawn: (Schedule, Spec, i64)) -> (Schedule, Spec, i64) {
    let (schedule, Spec::Cron(mut c), spacing) = drawn else {
        return drawn;
    };
    if !rng.gen_bool(0.2) {
        return (schedule, Spec::Cron(c), spacing);
    }
    c.seconds = match rng.gen_range(0..4) {
        0 => vec![rng.gen_range(1..60)],
        1 => vec![0, 30],
        2 => {
            let first = rng.gen_range(0..30);
            vec![first, first + rng.gen_range(5..30)]
        }
        _ => vec![0, 20, 40],
    };
    let schedule =
        Schedule::cron(&c.core_text(), Some(c.tz.name())).expect("the generator writes valid cron");
    // The closest two in a row, the last of one minute and the first of the next among them.
    let across = c.seconds[0] + 60 - c.seconds[c.seconds.len() - 1];
    let closest = c
        .seconds
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(across, u32::min);
    let spacing = spacing.min(i64::from(closest) * 1000);
    (schedule, Spec::Cron(c), spacing)
}

/// The dead-man's switch for about a third of the jobs (E1): half of them a few of the
/// job's tightest spacings (told when failures, pauses, lost runs or a down world keep it
/// from succeeding), half from ten minutes to six hours whatever the schedule (told often,
/// for a job due rarely or a one-shot long done). From their own stream, so the worlds
/// drawn before the switch existed are otherwise the same.
fn draw_switches(cfg: &WorldConfig, jobs: &mut [SimJob], tightest: &[i64]) {
    let mut rng = stream_rng(cfg.seed, Stream::Switches);
    for (job, &tight) in jobs.iter_mut().zip(tightest) {
        if !rng.gen_bool(0.3) {
            continue;
        }
        let ms = if rng.gen_bool(0.5) {
            let lo = tight.clamp(cfg.tick_ms, 86_400_000);
            rng.gen_range(lo..=lo * 4)
        } else {
            rng.gen_range(600_000..=21_600_000)
        };
        job.def.expect_success_within = Some(Duration::from_millis(ms.max(cfg.tick_ms) as u64));
    }
}

pub fn draw_jobs(rng: &mut ChaCha8Rng, cfg: &WorldConfig, count: Option<usize>) -> Vec<SimJob> {
    // At least one job: the world picks among them (a range of none cannot be drawn from).
    let n = count.unwrap_or_else(|| rng.gen_range(5..=12)).max(1);
    let span = cfg.safety_ms + cfg.liveness_ms;
    let mut tightest_of = Vec::with_capacity(n);
    let mut seconds = stream_rng(cfg.seed, Stream::Seconds);
    let mut with_seconds = |drawn: (Schedule, Spec, i64)| match cfg.late_draws {
        true => draw_seconds(&mut seconds, drawn),
        false => drawn,
    };
    let mut jobs: Vec<SimJob> = (0..n)
        .map(|i| {
            let (schedule, spec, spacing) =
                with_seconds(draw_schedule(rng, cfg.start_ms, span, cfg.dst_zone));
            let name = JobName::new(&format!("job{i}")).expect("valid");
            let mut def = JobDef::new(name, schedule);
            def.missed = pick(
                rng,
                &[
                    MissedRule::Skip,
                    MissedRule::CatchUpOnce,
                    MissedRule::Required,
                ],
            );
            if def.missed != MissedRule::Required {
                def.overlap = Some(pick(
                    rng,
                    &[Overlap::Skip, Overlap::BufferOne, Overlap::BufferAll],
                ));
            } else {
                def.legal_duty = rng.gen_bool(0.3);
            }
            if !def.legal_duty && def.missed != MissedRule::Skip && rng.gen_bool(0.3) {
                def.catch_up_window = Some(Duration::from_mins(rng.gen_range(5..180)));
            }
            def.retries = rng.gen_range(0..=5);
            if rng.gen_bool(0.3) {
                def.pause_after_failures = Some(rng.gen_range(1..=4));
            }
            if rng.gen_bool(0.3) {
                def.wait_budget = Some(Duration::from_mins(rng.gen_range(1..=60)));
            }
            if rng.gen_bool(0.3) {
                def.alert_throttle = Some(Duration::from_mins(rng.gen_range(1..=240)));
            }
            def.safe_to_repeat = rng.gen_bool(0.4);
            def.timeout = Duration::from_millis(rng.gen_range(60_000..=600_000));
            // People may switch the job to one of these; its runs fit the tightest of them.
            let mut tightest = spacing;
            let alternatives = (0..2)
                .map(|_| {
                    let (s, sp, alt_spacing) =
                        with_seconds(draw_schedule(rng, cfg.start_ms, span, cfg.dst_zone));
                    tightest = tightest.min(alt_spacing);
                    (s, sp)
                })
                .collect();
            tightest_of.push(tightest);
            let max_run = (tightest * 8 / 10).min(def.timeout.as_millis() as i64);
            let behaviour = Behaviour {
                duration_ms: (1_000, max_run.max(2_000)),
                fail: rng.gen_range(0.0..0.2),
                fail_retry_after: rng.gen_range(0.0..0.05),
                hang: rng.gen_range(0.0..0.05),
                park: if rng.gen_bool(0.3) {
                    rng.gen_range(0.1..0.6)
                } else {
                    0.0
                },
                // Shorter than a spacing or many times longer: parked runs that block the
                // next due time and ones that are settled before it.
                park_ttl_ms: pick(rng, &[(10_000, 600_000), (60_000, 2 * 3_600_000)]),
            };
            SimJob {
                def,
                spec,
                behaviour,
                alternatives,
            }
        })
        .collect();
    draw_features(cfg, &mut jobs, &tightest_of);
    let mut dates = stream_rng(cfg.seed, Stream::Extremes);
    for job in &mut jobs {
        crate::dates::draw_exotic(&mut dates, &mut job.def.schedule, &mut job.spec);
    }
    draw_dst_policies(cfg, &mut jobs);
    draw_switches(cfg, &mut jobs, &tightest_of);
    if cfg.late_draws {
        draw_stalls(cfg, &mut jobs);
    }
    if cfg.calendars {
        crate::calendars::draw_calendars(cfg, &mut jobs);
    }
    if cfg.chains {
        crate::chains::draw_chains(cfg, &mut jobs);
    }
    jobs
}

/// A stall alert within reach for about a third of the jobs (A2, A1): `stall_after` from
/// 30 s to the job's timeout, so its long and hanging runs are told stalled before they
/// time out (the default, 15 min, is past every drawn timeout: no run ever stalled). From
/// a stream of its own, so the worlds drawn before are otherwise the same.
fn draw_stalls(cfg: &WorldConfig, jobs: &mut [SimJob]) {
    let mut rng = stream_rng(cfg.seed, Stream::Stalls);
    for job in jobs {
        if rng.gen_bool(0.3) {
            let timeout = job.def.timeout.as_millis().max(30_000);
            job.def.stall_after = Duration::from_millis(rng.gen_range(30_000..=timeout));
        }
    }
}
