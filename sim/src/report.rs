//! Running ranges of seeds and reporting them: the summary, each failing seed's broken
//! invariants and replay command, and the shrunk trace. Shared by `duetime-sim` (drawn
//! jobs) and `duetime sim` (the user's jobs), so both print the same report and a user
//! reading one can read the other; each binary passes only its own name and replay line.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::{replay, run_seed, Options, SeedReport, Verdict};

/// How many failing seeds get shrunk: shrinking replays the core thousands of times.
pub const SHRINK_FIRST: usize = 3;

/// Sums over a range of seeds, with the failing seeds' reports.
#[derive(Debug, Default)]
pub struct Totals {
    pub seeds: u64,
    pub events: u64,
    pub schedules: u64,
    pub processes: u64,
    pub sim_ms: i64,
    pub faults: BTreeMap<&'static str, u64>,
    pub probes: BTreeMap<&'static str, u64>,
    /// In seed order.
    pub failures: Vec<SeedReport>,
    pub nondeterministic: Vec<u64>,
    pub range: Range<u64>,
    pub threads: usize,
    /// Wall-clock seconds the range took.
    pub secs: f64,
    pub check_determinism: bool,
}

impl Totals {
    /// The exit code: the worst verdict (0 held, 1 safety, 2 liveness, 3 crash), and at
    /// least 1 when a seed replayed differently.
    pub fn exit_code(&self) -> i32 {
        let mut code = self
            .failures
            .iter()
            .map(|r| r.verdict.exit_code())
            .max()
            .unwrap_or(0);
        if !self.nondeterministic.is_empty() {
            code = code.max(1);
        }
        code
    }
}

/// Runs `seeds` on `threads` threads (a progress bar on a terminal's stderr); with
/// `check_determinism` every seed runs twice and must hash its trace the same. A monitor
/// thread watches what the worlds' own watchdog cannot see (`monitor`).
pub fn run_seeds(
    seeds: Range<u64>,
    threads: usize,
    opts: &Options,
    check_determinism: bool,
) -> Totals {
    let threads = threads.max(1);
    let next = AtomicU64::new(seeds.start);
    let totals = Mutex::new(Totals::default());
    let bar = progress_bar(seeds.end.saturating_sub(seeds.start));
    let started = Instant::now();
    let mut opts = opts.clone();
    opts.hash_trace = check_determinism;
    let opts = &opts;
    let in_flight: Mutex<Vec<Option<(u64, Instant)>>> = Mutex::new(vec![None; threads]);
    let running = AtomicU64::new(threads as u64);
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| monitor(&in_flight, &running, opts));
        for slot in 0..threads {
            let (next, totals, bar, in_flight, running, failed) =
                (&next, &totals, &bar, &in_flight, &running, &failed);
            scope.spawn(move || {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= seeds.end || (opts.stop_at_first && failed.load(Ordering::Relaxed)) {
                        break;
                    }
                    lock(in_flight)[slot] = Some((seed, Instant::now()));
                    let r = run_seed(seed, opts);
                    let deterministic =
                        !check_determinism || run_seed(seed, opts).trace_hash == r.trace_hash;
                    lock(in_flight)[slot] = None;
                    if r.verdict != Verdict::Held || !deterministic {
                        failed.store(true, Ordering::Relaxed);
                    }
                    lock(totals).add(r, deterministic);
                    if let Some(b) = bar {
                        b.inc(1);
                    }
                }
                running.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut t = totals.into_inner().unwrap_or_else(|p| p.into_inner());
    t.failures.sort_by_key(|r| r.seed);
    t.nondeterministic.sort_unstable();
    t.secs = started.elapsed().as_secs_f64().max(1e-9);
    t.range = seeds;
    t.threads = threads;
    t.check_determinism = check_determinism;
    t
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds, {per_sec}, eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}

/// What a world's own watchdog (`World::watchdog_bites`, between events) cannot see: a
/// seed stuck inside one step of the core, or the process growing past `opts.max_rss`.
/// Either ends the run at once with exit code 4, naming the seeds then running (a core that
/// loops inside a step cannot be stopped any other way).
fn monitor(in_flight: &Mutex<Vec<Option<(u64, Instant)>>>, running: &AtomicU64, opts: &Options) {
    let grace = opts.seed_budget + opts.step_grace;
    while running.load(Ordering::Relaxed) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let flying: Vec<(u64, Instant)> = lock(in_flight).iter().flatten().copied().collect();
        let seeds: Vec<u64> = flying.iter().map(|(s, _)| *s).collect();
        if let Some((seed, since)) = flying.iter().find(|(_, since)| since.elapsed() > grace) {
            eprintln!(
                "duetime-sim: STUCK, the core made no progress: seed {seed} has run {:.0} s inside one step (its world's watchdog got no turn); replay it with --replay {seed}",
                since.elapsed().as_secs_f64()
            );
            std::process::exit(4);
        }
        if let Some(rss) = resident_bytes().filter(|&b| b > opts.max_rss) {
            eprintln!(
                "duetime-sim: STUCK, the simulator holds {} MB, over the bound of {} MB, while running seeds {seeds:?}; replay each with --replay N",
                rss >> 20,
                opts.max_rss >> 20
            );
            std::process::exit(4);
        }
    }
}

/// The process's resident memory, where the system tells it (Linux's `/proc`).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

impl Totals {
    /// One seed's report into the totals.
    fn add(&mut self, r: SeedReport, deterministic: bool) {
        self.seeds += 1;
        self.events += r.events;
        self.schedules += r.jobs as u64;
        self.processes += r.processes as u64;
        self.sim_ms += r.sim_ms;
        for (k, v) in &r.faults {
            *self.faults.entry(k).or_default() += v;
        }
        for (k, v) in &r.probes {
            *self.probes.entry(k).or_default() += v;
        }
        if !deterministic {
            self.nondeterministic.push(r.seed);
        }
        if r.verdict != Verdict::Held {
            self.failures.push(r);
        }
    }
}

/// The summary block, headed by `title` (`duetime-sim summary`).
pub fn write_summary(out: &mut dyn Write, title: &str, t: &Totals) -> io::Result<()> {
    let secs = t.secs.max(1e-9);
    let n = t.seeds.max(1) as f64;
    writeln!(out, "{title}")?;
    writeln!(
        out,
        "  seeds {} ({}..{}), {} threads, {:.1} s",
        t.seeds, t.range.start, t.range.end, t.threads, secs
    )?;
    writeln!(
        out,
        "  world averages: {:.1} processes, {:.1} jobs, {:.2} simulated days, {:.0} events per seed",
        t.processes as f64 / n,
        t.schedules as f64 / n,
        t.sim_ms as f64 / 86_400_000.0 / n,
        t.events as f64 / n
    )?;
    writeln!(
        out,
        "  speed: {:.0} events/s, {:.1} seeds/s, {:.0} schedules/s",
        t.events as f64 / secs,
        t.seeds as f64 / secs,
        t.schedules as f64 / secs
    )?;
    writeln!(out, "  faults injected:")?;
    for (k, v) in &t.faults {
        writeln!(out, "    {k:<32} {v}")?;
    }
    writeln!(out, "  probes (rare situations reached):")?;
    for (k, v) in &t.probes {
        writeln!(out, "    {k:<40} {v}")?;
    }
    if t.check_determinism {
        writeln!(
            out,
            "  determinism: {} of {} seeds replayed with a different trace",
            t.nondeterministic.len(),
            t.seeds
        )?;
    }
    Ok(())
}

/// One seed's verdict: its broken invariants (the first ten) or the panic, and for a
/// failure the command that replays it.
pub fn write_failure(out: &mut dyn Write, r: &SeedReport, replay_command: &str) -> io::Result<()> {
    match &r.verdict {
        Verdict::Held => writeln!(
            out,
            "seed {}: all invariants held ({} events)",
            r.seed, r.events
        )?,
        Verdict::Crash(msg) => writeln!(out, "seed {}: CRASH, the core panicked: {msg}", r.seed)?,
        Verdict::Stuck(msg) => writeln!(out, "seed {}: STUCK, {msg}", r.seed)?,
        _ => {
            for v in r.violations.iter().take(10) {
                writeln!(out, "seed {}: {v}", r.seed)?;
            }
        }
    }
    if r.verdict != Verdict::Held {
        writeln!(out, "replay: {replay_command}")?;
    }
    Ok(())
}

/// What shrinking a failing seed gave.
#[derive(Debug)]
pub enum Shrink {
    /// The seed held when run again (or crashed before a regression could be built).
    Nothing,
    /// Liveness failures are not shrunk: dropping events only makes more of them.
    Liveness,
    Shrunk {
        before: usize,
        regression: Box<replay::Regression>,
        /// False when the time budget ran out first: the trace is the shortest found.
        finished: bool,
    },
}

/// Reruns a failing seed recording its inputs and shrinks them to the fewest events that
/// still break the same safety invariant.
pub fn shrink(seed: u64, opts: &Options) -> Shrink {
    let mut opts = opts.clone();
    opts.record_inputs = true;
    let r = run_seed(seed, &opts);
    let Some(mut reg) = r.regression() else {
        return Shrink::Nothing;
    };
    if reg.liveness {
        return Shrink::Liveness;
    }
    // A shrunk trace keeps the safety failure; its truncated world says nothing of liveness.
    reg.horizon.check_liveness = false;
    let before = reg.inputs.len();
    let finished = reg.shrink(std::time::Instant::now() + opts.shrink_budget);
    Shrink::Shrunk {
        before,
        regression: Box::new(reg),
        finished,
    }
}

/// The shrunk trace as text (nothing for a seed with nothing to shrink).
pub fn write_shrink(out: &mut dyn Write, s: &Shrink) -> io::Result<()> {
    match s {
        Shrink::Nothing => Ok(()),
        Shrink::Liveness => writeln!(
            out,
            "(liveness failures are not shrunk: dropping events only makes more of them)"
        ),
        Shrink::Shrunk {
            before,
            regression,
            finished,
        } => {
            writeln!(
                out,
                "shrunk trace{}: {} of {} events still break {} for {}:",
                if *finished {
                    ""
                } else {
                    " (the shrink budget ran out; the shortest found)"
                },
                regression.inputs.len(),
                before,
                regression.invariant,
                regression.job
            )?;
            for line in replay::readable(regression.config(), &regression.inputs) {
                writeln!(out, "  {line}")?;
            }
            Ok(())
        }
    }
}

/// Everything after the summary: each failing seed (the first `SHRINK_FIRST` shrunk, each
/// shrink handed to `on_shrunk` too, e.g. to save it), nondeterministic seeds, the count.
/// Returns the exit code.
pub fn write_failures(
    out: &mut dyn Write,
    t: &Totals,
    opts: &Options,
    replay_command: &dyn Fn(u64) -> String,
    on_shrunk: &mut dyn FnMut(&mut dyn Write, u64, &Shrink) -> io::Result<()>,
) -> io::Result<i32> {
    for (i, r) in t.failures.iter().enumerate() {
        writeln!(out)?;
        writeln!(out, "{}", r.config)?;
        write_failure(out, r, &replay_command(r.seed))?;
        if i < SHRINK_FIRST {
            let s = shrink(r.seed, opts);
            write_shrink(out, &s)?;
            on_shrunk(out, r.seed, &s)?;
        }
    }
    if !t.nondeterministic.is_empty() {
        writeln!(out, "nondeterministic seeds: {:?}", t.nondeterministic)?;
    }
    writeln!(out)?;
    writeln!(out, "{} seeds, {} failed", t.seeds, t.failures.len())?;
    Ok(t.exit_code())
}

/// The summary and failures as one JSON document (the first `SHRINK_FIRST` safety
/// failures with their shrunk traces), for scripts and CI.
pub fn to_json(
    title: &str,
    t: &Totals,
    opts: &Options,
    replay_command: &dyn Fn(u64) -> String,
) -> serde_json::Value {
    let failures: Vec<serde_json::Value> = t
        .failures
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (verdict, crash) = match &r.verdict {
                Verdict::Held => ("held", None),
                Verdict::Safety => ("safety", None),
                Verdict::Liveness => ("liveness", None),
                Verdict::Crash(msg) => ("crash", Some(msg.clone())),
                Verdict::Stuck(msg) => ("stuck", Some(msg.clone())),
            };
            let shrunk = if i < SHRINK_FIRST {
                match shrink(r.seed, opts) {
                    Shrink::Shrunk {
                        before,
                        regression,
                        finished,
                    } => serde_json::json!({
                        "events_before": before,
                        "finished": finished,
                        "events": regression.inputs.len(),
                        "invariant": regression.invariant,
                        "job": regression.job,
                        "trace": replay::readable(regression.config(), &regression.inputs),
                    }),
                    _ => serde_json::Value::Null,
                }
            } else {
                serde_json::Value::Null
            };
            serde_json::json!({
                "seed": r.seed,
                "world": r.config,
                "verdict": verdict,
                "crash": crash,
                "violations": r.violations.iter().map(|v| serde_json::json!({
                    "invariant": v.invariant.name(),
                    "job": v.job,
                    "detail": v.detail,
                    "liveness": v.is_liveness(),
                })).collect::<Vec<_>>(),
                "replay": replay_command(r.seed),
                "shrunk": shrunk,
            })
        })
        .collect();
    let n = t.seeds.max(1) as f64;
    serde_json::json!({
        "title": title,
        "seeds": { "count": t.seeds, "from": t.range.start, "to": t.range.end },
        "threads": t.threads,
        "seconds": t.secs,
        "averages": {
            "processes": t.processes as f64 / n,
            "jobs": t.schedules as f64 / n,
            "simulated_days": t.sim_ms as f64 / 86_400_000.0 / n,
            "events": t.events as f64 / n,
        },
        "faults": t.faults,
        "probes": t.probes,
        "nondeterministic": t.nondeterministic,
        "failed": t.failures.len(),
        "failures": failures,
        "exit_code": t.exit_code(),
    })
}
