//! The simulator's command line: ranges of seeds on all cores, a progress bar on a
//! terminal, a summary, and for a failing seed the broken invariant and the command that
//! replays it.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use duetime_sim::{run_seed, FaultMode, Options, SeedReport, Verdict};

const USAGE: &str =
    "usage: duetime-sim [--seeds A..B | --seed N] [--threads N] [--processes N] [--jobs N]
                   [--days X] [--faults none|light|heavy|swarm] [--check-determinism]
                   [--replay N [--trace]] [--save-regression DIR] [--replay-file PATH]
exit codes: 0 all held, 1 safety violation, 2 liveness violation, 3 a panic in the core, 64 usage";

struct Args {
    seeds: std::ops::Range<u64>,
    threads: usize,
    opts: Options,
    check_determinism: bool,
    replay: Option<u64>,
    trace: bool,
    save_regression: Option<String>,
    replay_file: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        seeds: 0..100,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        opts: Options::default(),
        check_determinism: false,
        replay: None,
        trace: false,
        save_regression: None,
        replay_file: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--seeds" => {
                let v = value()?;
                let (lo, hi) = v
                    .split_once("..")
                    .ok_or(format!("--seeds: `{v}`; accepted: A..B"))?;
                let lo: u64 = lo
                    .parse()
                    .map_err(|_| format!("--seeds: `{lo}` is not a number"))?;
                let hi: u64 = hi
                    .parse()
                    .map_err(|_| format!("--seeds: `{hi}` is not a number"))?;
                if hi <= lo {
                    return Err(format!("--seeds: `{v}` is empty"));
                }
                a.seeds = lo..hi;
            }
            "--seed" => {
                let n: u64 = value()?
                    .parse()
                    .map_err(|_| "--seed needs a number".to_string())?;
                a.seeds = n..n + 1;
            }
            "--threads" => a.threads = value()?.parse().map_err(|_| "--threads needs a number")?,
            "--processes" => {
                a.opts.overrides.processes =
                    Some(value()?.parse().map_err(|_| "--processes needs a number")?)
            }
            "--jobs" => {
                a.opts.overrides.jobs = Some(value()?.parse().map_err(|_| "--jobs needs a number")?)
            }
            "--days" => {
                a.opts.overrides.days = Some(value()?.parse().map_err(|_| "--days needs a number")?)
            }
            "--faults" => a.opts.overrides.faults = Some(value()?.parse::<FaultMode>()?),
            "--check-determinism" => a.check_determinism = true,
            "--replay" => a.replay = Some(value()?.parse().map_err(|_| "--replay needs a seed")?),
            "--trace" => a.trace = true,
            "--save-regression" => a.save_regression = Some(value()?),
            "--replay-file" => a.replay_file = Some(value()?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    a.threads = a.threads.max(1);
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("duetime-sim: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    if let Some(path) = &args.replay_file {
        return replay_file(path);
    }
    if let Some(seed) = args.replay {
        return replay(seed, &args);
    }
    run_range(&args)
}

fn replay(seed: u64, args: &Args) -> ExitCode {
    let mut opts = args.opts.clone();
    opts.readable_trace = args.trace;
    let r = run_seed(seed, &opts);
    println!("{}", r.config);
    for line in r.trace.iter().flatten() {
        println!("{line}");
    }
    print_failure(&r, args);
    ExitCode::from(r.verdict.exit_code() as u8)
}

fn replay_file(path: &str) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("duetime-sim: cannot read {path}: {e}");
            return ExitCode::from(64);
        }
    };
    let reg: duetime_sim::replay::Regression = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("duetime-sim: {path} is not a regression file: {e}");
            return ExitCode::from(64);
        }
    };
    for line in duetime_sim::replay::readable(reg.tick_ms, &reg.inputs) {
        println!("{line}");
    }
    match reg.replay() {
        duetime_sim::replay::Finding::Held => {
            println!("{path}: all invariants held");
            ExitCode::SUCCESS
        }
        duetime_sim::replay::Finding::Crash(msg) => {
            println!("{path}: CRASH: {msg}");
            ExitCode::from(3)
        }
        duetime_sim::replay::Finding::Broken(v) => {
            for v in &v {
                println!("{path}: {v}");
            }
            ExitCode::from(if v.iter().any(|v| !v.is_liveness()) {
                1
            } else {
                2
            })
        }
    }
}

/// Reruns a failing seed recording its inputs, shrinks them, prints the shrunk trace, and
/// saves it as a regression file when asked.
fn shrink_and_show(seed: u64, args: &Args) {
    let mut opts = args.opts.clone();
    opts.record_inputs = true;
    let r = run_seed(seed, &opts);
    let Some(mut reg) = r.regression() else {
        return;
    };
    if reg.invariant.starts_with('L') {
        println!("(liveness failures are not shrunk: dropping events only makes more of them)");
        return;
    }
    // A shrunk trace keeps the safety failure; its truncated world says nothing of liveness.
    reg.horizon.check_liveness = false;
    let before = reg.inputs.len();
    reg.shrink(4_000);
    println!(
        "shrunk trace: {} of {} events still break {} for {}:",
        reg.inputs.len(),
        before,
        reg.invariant,
        reg.job
    );
    for line in duetime_sim::replay::readable(reg.tick_ms, &reg.inputs) {
        println!("  {line}");
    }
    if let Some(dir) = &args.save_regression {
        let path = format!("{dir}/seed-{seed}.json");
        match serde_json::to_string_pretty(&reg).map(|json| std::fs::write(&path, json)) {
            Ok(Ok(())) => println!("saved {path}"),
            Ok(Err(e)) => eprintln!("duetime-sim: cannot write {path}: {e}"),
            Err(e) => eprintln!("duetime-sim: cannot encode the regression: {e}"),
        }
    }
}

fn print_failure(r: &SeedReport, args: &Args) {
    match &r.verdict {
        Verdict::Held => println!("seed {}: all invariants held ({} events)", r.seed, r.events),
        Verdict::Crash(msg) => println!("seed {}: CRASH, the core panicked: {msg}", r.seed),
        _ => {
            for v in r.violations.iter().take(10) {
                println!("seed {}: {v}", r.seed);
            }
        }
    }
    if r.verdict != Verdict::Held {
        println!(
            "replay: cargo run --release -p duetime-sim -- --replay {}{} --trace",
            r.seed,
            flags(args)
        );
    }
}

fn flags(args: &Args) -> String {
    let o = &args.opts.overrides;
    let mut s = String::new();
    if let Some(p) = o.processes {
        s += &format!(" --processes {p}");
    }
    if let Some(j) = o.jobs {
        s += &format!(" --jobs {j}");
    }
    if let Some(d) = o.days {
        s += &format!(" --days {d}");
    }
    if let Some(f) = o.faults {
        s += &format!(" --faults {}", format!("{f:?}").to_lowercase());
    }
    s
}

#[derive(Default)]
struct Totals {
    seeds: u64,
    events: u64,
    schedules: u64,
    processes: u64,
    sim_ms: i64,
    faults: BTreeMap<&'static str, u64>,
    probes: BTreeMap<&'static str, u64>,
    failures: Vec<SeedReport>,
    nondeterministic: Vec<u64>,
}

fn run_range(args: &Args) -> ExitCode {
    let total = args.seeds.end - args.seeds.start;
    let next = AtomicU64::new(args.seeds.start);
    let totals = Mutex::new(Totals::default());
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} seeds, {per_sec}, eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let started = Instant::now();
    let mut opts = args.opts.clone();
    opts.hash_trace = args.check_determinism;
    std::thread::scope(|scope| {
        for _ in 0..args.threads {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= args.seeds.end {
                    break;
                }
                let r = run_seed(seed, &opts);
                let deterministic =
                    !args.check_determinism || run_seed(seed, &opts).trace_hash == r.trace_hash;
                let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
                t.seeds += 1;
                t.events += r.events;
                t.schedules += r.jobs as u64;
                t.processes += r.processes as u64;
                t.sim_ms += r.sim_ms;
                for (k, v) in &r.faults {
                    *t.faults.entry(k).or_default() += v;
                }
                for (k, v) in &r.probes {
                    *t.probes.entry(k).or_default() += v;
                }
                if !deterministic {
                    t.nondeterministic.push(seed);
                }
                if r.verdict != Verdict::Held {
                    t.failures.push(r);
                }
                drop(t);
                if let Some(b) = &bar {
                    b.inc(1);
                }
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let mut t = totals.into_inner().unwrap_or_else(|p| p.into_inner());
    t.failures.sort_by_key(|r| r.seed);
    let n = t.seeds.max(1) as f64;
    println!("duetime-sim summary");
    println!(
        "  seeds {} ({}..{}), {} threads, {:.1} s",
        t.seeds, args.seeds.start, args.seeds.end, args.threads, secs
    );
    println!(
        "  world averages: {:.1} processes, {:.1} jobs, {:.2} simulated days, {:.0} events per seed",
        t.processes as f64 / n,
        t.schedules as f64 / n,
        t.sim_ms as f64 / 86_400_000.0 / n,
        t.events as f64 / n
    );
    println!(
        "  speed: {:.0} events/s, {:.1} seeds/s, {:.0} schedules/s",
        t.events as f64 / secs,
        t.seeds as f64 / secs,
        t.schedules as f64 / secs
    );
    println!("  faults injected:");
    for (k, v) in &t.faults {
        println!("    {k:<32} {v}");
    }
    println!("  probes (rare situations reached):");
    for (k, v) in &t.probes {
        println!("    {k:<40} {v}");
    }
    if args.check_determinism {
        println!(
            "  determinism: {} of {} seeds replayed with a different trace",
            t.nondeterministic.len(),
            t.seeds
        );
    }
    let mut code = 0;
    for (i, r) in t.failures.iter().enumerate() {
        println!();
        println!("{}", r.config);
        print_failure(r, args);
        if i < 3 {
            shrink_and_show(r.seed, args);
        }
        code = code.max(r.verdict.exit_code());
    }
    if !t.nondeterministic.is_empty() {
        println!("nondeterministic seeds: {:?}", t.nondeterministic);
        code = code.max(1);
    }
    println!();
    println!("{} seeds, {} failed", t.seeds, t.failures.len());
    ExitCode::from(code as u8)
}
