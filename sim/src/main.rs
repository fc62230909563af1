//! The simulator's command line: ranges of seeds on all cores, a progress bar on a
//! terminal, a summary, and for a failing seed the broken invariant and the command that
//! replays it.

use std::io::{self, Write};
use std::process::ExitCode;

use duetime_sim::{report, run_seed, FaultMode, Options, SeedReport};

/// A world allocates and frees small maps, strings and effect vectors at every event on
/// every thread; mimalloc's per-thread free lists serve that pattern with fewer
/// instructions and no contention between the seed threads (see `benches/README.md`).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str =
    "usage: duetime-sim [--seeds A..B | --seed N] [--threads N] [--processes N] [--jobs N]
                   [--days X] [--faults MODE] [--check-determinism]
                   [--replay N [--trace]] [--save-regression DIR] [--replay-file PATH]
                   [--check-state] [--calendars] [--no-chains] [--shrink-seconds S] [--shard K/N] [--bank DIR]
       duetime-sim --partition-worlds [--seeds A..B | --seed N] [--partitions N] [--threads N]
       duetime-sim --merge-bank DIR [DIR...]
exit codes: 0 all held, 1 safety violation, 2 liveness violation, 3 a panic in the core, 64 usage";

/// `--help`: the usage, then what each flag does.
const HELP: &str = "Seeded worlds of processes racing for one store (crashes, clock jumps, stalls,
lost commit answers), each checked against an oracle: every promise of the core held.

  --seeds A..B           the seeds to run, B excluded (default 0..100)
  --seed N               just seed N
  --threads N            threads running seeds, 1 or more (default: the number of cores)
  --processes N          processes sharing the store, 1 to 64 (default: drawn, 2 to 6)
  --jobs N               jobs per world, 1 to 1000 (default: drawn, 5 to 12)
  --days X               simulated days per world, above 0 and up to 366 (default: drawn,
                         0.75 to 1.5); the last quarter, at least 4 h, has no faults
  --faults MODE          none, light, heavy, extreme, swarm (each seed draws its own rates,
                         the default), or overload (turns slower than a two-second tick,
                         nothing else going wrong: no run may be lost)
  --check-determinism    run every seed twice and compare trace hashes
  --replay N             run seed N alone and print its failure, shrunk
  --trace                with --replay: print the world event by event
  --save-regression DIR  keep each shrunk failure as DIR/seed-N.json
  --replay-file PATH     replay a kept regression file
  --check-state          self-check every committed state (S6); heavy worlds always do
  --calendars            wrap some schedules in holiday calendars, business days and
                         rolls, checked by the oracle's own calendar reading (issue 45:
                         not yet part of the default worlds)
  --no-chains            draw no jobs that wait for others (by default two worlds in five
                         have some: `after`, checked by Y1); --chains, the default, is
                         still accepted
  --shrink-seconds S     how long shrinking one failure may take (default 30)
  --shard K/N            run only shard K (1 to N) of --seeds A..B: the contiguous block
                         of seeds A+floor((K-1)(B-A)/N) .. A+floor(K(B-A)/N); the N
                         shards cover A..B exactly, without overlap
  --bank DIR             keep each failing seed as DIR/fail-seed-N.json (seed, mode,
                         verdict, invariant, first violation, replay command) and the run
                         as DIR/run-A-B.json
  --merge-bank DIR...    merge the banks of several runs (the shards of a campaign) into
                         one summary, failures by seed, each once; exit 1 if any seed
                         failed or a shard's seeds are missing
  --partition-worlds     run partition worlds instead (issue 43): daemons dividing a store
                         of 1, 2, 7 or 64 partitions with leases and epochs, crashing,
                         stalling, stopping, joining, moving jobs between partitions;
                         checked for P1..P4, D1, D2 (docs/invariants.md)
  --partitions N         with --partition-worlds: every world has N partitions (1 to 1024);
                         --faults heavy there: four times the faults, more answers lost
  -h, --help             this text
";

/// Most processes and jobs a world may be given (as `duetime sim` bounds them).
const MAX_PROCESSES: usize = 64;
const MAX_JOBS: usize = 1_000;

/// `--processes`, `--jobs`: a whole number in `low..=high`.
fn count(flag: &str, text: &str, low: usize, high: usize) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (low..=high).contains(&n) => Ok(n),
        _ => Err(format!(
            "{flag}: `{text}`; accepted: a whole number from {low} to {high}"
        )),
    }
}

/// `--days`: above 0, up to a year.
fn days(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() && d > 0.0 && d <= 366.0 => Ok(d),
        _ => Err(format!(
            "--days: `{text}`; accepted: a number of days above 0, up to 366"
        )),
    }
}

struct Args {
    seeds: std::ops::Range<u64>,
    threads: usize,
    opts: Options,
    check_determinism: bool,
    replay: Option<u64>,
    trace: bool,
    save_regression: Option<String>,
    replay_file: Option<String>,
    /// `--shard K/N`: (K, N), 1-based.
    shard: Option<(u64, u64)>,
    bank: Option<String>,
    merge_bank: Option<Vec<String>>,
    /// `--partition-worlds`: run partition worlds (issue 43) instead.
    parts: bool,
    /// `--partitions N`: their partition count (default: drawn from 1, 2, 7, 64).
    partitions: Option<duetime_loop::PartitionCount>,
}

/// The arguments, or `None` for `--help`.
fn parse_args() -> Result<Option<Args>, String> {
    let mut a = Args {
        seeds: 0..100,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        opts: Options::default(),
        check_determinism: false,
        replay: None,
        trace: false,
        save_regression: None,
        replay_file: None,
        shard: None,
        bank: None,
        merge_bank: None,
        parts: false,
        partitions: None,
    };
    let mut it = std::env::args().skip(1).peekable();
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
            "--threads" => a.threads = count("--threads", &value()?, 1, 1024)?,
            "--processes" => {
                a.opts.overrides.processes =
                    Some(count("--processes", &value()?, 1, MAX_PROCESSES)?)
            }
            "--jobs" => a.opts.overrides.jobs = Some(count("--jobs", &value()?, 1, MAX_JOBS)?),
            "--days" => a.opts.overrides.days = Some(days(&value()?)?),
            "--faults" => a.opts.overrides.faults = Some(value()?.parse::<FaultMode>()?),
            "--check-determinism" => a.check_determinism = true,
            "--replay" => a.replay = Some(value()?.parse().map_err(|_| "--replay needs a seed")?),
            "--trace" => a.trace = true,
            "--save-regression" => a.save_regression = Some(value()?),
            "--replay-file" => a.replay_file = Some(value()?),
            "--check-state" => a.opts.check_state = true,
            "--calendars" => a.opts.overrides.calendars = true,
            // Chains are drawn by default (issue 45); the flag is kept for older commands.
            "--chains" => a.opts.overrides.without_chains = false,
            "--no-chains" => a.opts.overrides.without_chains = true,
            "--shard" => a.shard = Some(duetime_sim::bank::parse_shard(&value()?)?),
            "--bank" => a.bank = Some(value()?),
            "--merge-bank" => {
                let mut dirs = Vec::new();
                while let Some(dir) = it.next_if(|d| !d.starts_with('-')) {
                    dirs.push(dir);
                }
                if dirs.is_empty() {
                    return Err("--merge-bank needs one or more bank directories".to_string());
                }
                a.merge_bank.get_or_insert_with(Vec::new).extend(dirs);
            }
            "--shrink-seconds" => {
                let secs: f64 = value()?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or("--shrink-seconds needs a number of seconds (0 or more)")?;
                a.opts.shrink_budget = std::time::Duration::from_secs_f64(secs);
            }
            "--partition-worlds" => a.parts = true,
            "--partitions" => {
                let v = value()?;
                let n = v
                    .parse::<duetime_loop::PartitionCount>()
                    .map_err(|e| format!("--partitions: {e}"))?;
                a.partitions = Some(n);
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    a.threads = a.threads.max(1);
    Ok(Some(a))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            let mut out = io::stdout().lock();
            let _ = writeln!(out, "{USAGE}\n\n{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("duetime-sim: {e}");
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    if let Some(dirs) = &args.merge_bank {
        return merge_bank(dirs);
    }
    if let Some(path) = &args.replay_file {
        return replay_file(path);
    }
    if args.parts {
        return partition_worlds(&args);
    }
    if let Some(seed) = args.replay {
        return replay(seed, &args);
    }
    run_range(&args).unwrap_or_else(io_error)
}

/// `--partition-worlds`: the seeds' partition worlds, their summary; exit 1 if any failed.
fn partition_worlds(args: &Args) -> ExitCode {
    let opts = duetime_sim::parts::PartsOptions {
        partitions: args.partitions,
        heavy: args.opts.overrides.faults == Some(FaultMode::Heavy),
    };
    if args.trace {
        let report = duetime_sim::parts::run_traced(args.seeds.start, opts, true);
        for line in &report.trace {
            println!("{line}");
        }
        for v in &report.violations {
            println!("VIOLATION {v}");
        }
        return ExitCode::SUCCESS;
    }
    let summary = duetime_sim::parts::run_range(args.seeds.clone(), args.threads, opts);
    print!("{}", summary.render());
    if summary.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A closed stdout (`duetime-sim | head`) ends the run quietly; other write errors exit 1.
fn io_error(e: io::Error) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    eprintln!("duetime-sim: {e}");
    ExitCode::from(1)
}

fn replay(seed: u64, args: &Args) -> ExitCode {
    let mut opts = args.opts.clone();
    opts.readable_trace = args.trace;
    let r = run_seed(seed, &opts);
    println!("{}", r.config);
    for line in r.trace.iter().flatten() {
        println!("{line}");
    }
    if let Err(e) = print_failure(&r, args) {
        return io_error(e);
    }
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
    for line in duetime_sim::replay::readable(reg.config(), &reg.inputs) {
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

/// Saves a shrunk trace as a regression file when asked.
fn save_shrunk(
    out: &mut dyn Write,
    seed: u64,
    shrunk: &report::Shrink,
    args: &Args,
) -> io::Result<()> {
    let (Some(dir), report::Shrink::Shrunk { regression, .. }) = (&args.save_regression, shrunk)
    else {
        return Ok(());
    };
    let path = format!("{dir}/seed-{seed}.json");
    match serde_json::to_string_pretty(regression).map(|json| std::fs::write(&path, json)) {
        Ok(Ok(())) => writeln!(out, "saved {path}")?,
        Ok(Err(e)) => eprintln!("duetime-sim: cannot write {path}: {e}"),
        Err(e) => eprintln!("duetime-sim: cannot encode the regression: {e}"),
    }
    Ok(())
}

fn replay_command(seed: u64, args: &Args) -> String {
    format!(
        "cargo run --release -p duetime-sim -- --replay {seed}{} --trace",
        flags(args)
    )
}

fn print_failure(r: &SeedReport, args: &Args) -> io::Result<()> {
    report::write_failure(&mut io::stdout().lock(), r, &replay_command(r.seed, args))
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

/// The fault mode asked for, as `--faults` spells it (`swarm` when none was).
fn mode(args: &Args) -> String {
    args.opts
        .overrides
        .faults
        .map_or("swarm".to_string(), |f| format!("{f:?}").to_lowercase())
}

/// `--merge-bank DIR...`: the banks' failures as one summary; exit 1 if any seed failed or
/// a shard's seeds are missing, 64 if a bank cannot be read.
fn merge_bank(dirs: &[String]) -> ExitCode {
    let dirs: Vec<std::path::PathBuf> = dirs.iter().map(Into::into).collect();
    let merged = match duetime_sim::bank::read_banks(&dirs) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("duetime-sim: {e}");
            return ExitCode::from(64);
        }
    };
    if let Err(e) = duetime_sim::bank::write_merged(&mut io::stdout().lock(), &merged) {
        return io_error(e);
    }
    ExitCode::from(merged.exit_code() as u8)
}

fn run_range(args: &Args) -> io::Result<ExitCode> {
    let seeds = match args.shard {
        Some((k, n)) => duetime_sim::bank::shard(&args.seeds, k, n).unwrap_or(0..0),
        None => args.seeds.clone(),
    };
    let t = report::run_seeds(seeds, args.threads, &args.opts, args.check_determinism);
    let mut out = io::stdout().lock();
    report::write_summary(&mut out, "duetime-sim summary", &t)?;
    let mut bank_lost = false;
    if let Some(dir) = &args.bank {
        let shard = args.shard.map(|(k, n)| (k, n, args.seeds.clone()));
        match duetime_sim::bank::write_bank(
            std::path::Path::new(dir),
            &t,
            &mode(args),
            shard,
            &|seed| replay_command(seed, args),
        ) {
            Ok(paths) => writeln!(out, "  bank: {} files written to {dir}", paths.len())?,
            Err(e) => {
                // The run's failures are still printed below; the exit code says the bank
                // is incomplete.
                eprintln!("duetime-sim: cannot write the bank {dir}: {e}");
                bank_lost = true;
            }
        }
    }
    let code = report::write_failures(
        &mut out,
        &t,
        &args.opts,
        &|seed| replay_command(seed, args),
        &mut |out, seed, shrunk| save_shrunk(out, seed, shrunk, args),
    )?;
    let code = if bank_lost { code.max(1) } else { code };
    Ok(ExitCode::from(code as u8))
}
