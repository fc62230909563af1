//! `duetime sim JOBS.toml`: the simulator over the user's own jobs. The same seeded worlds
//! as `duetime-sim` (crashes, clock jumps, stalls, racing processes), the same checker and
//! the same report, but with the file's jobs instead of drawn ones, so a schedule that can
//! never keep up (a `required` job every minute whose runs take 90 s) shows up here as a
//! broken promise before it shows up in production.
//!
//! Exit codes are duetime-sim's, not the other subcommands': 0 every seed held, 1 a safety
//! violation, 2 a liveness violation, 3 a panic in the core, 64 a usage error or a file the
//! simulator cannot take (1 and 2 are verdicts here, so nothing else may use them).

use std::io::{self, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use duetime::Duration;
use duetime_sim::gen::{FaultMode, SimJob};
use duetime_sim::report;
use duetime_sim::user_jobs::{self, RunHints, Undrainable};
use duetime_sim::{run_seed, Options, Overrides};

/// The exit code of a usage error or a file the simulator cannot take.
pub const USAGE: u8 = 64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The jobs file
    #[arg(value_name = "JOBS.toml")]
    pub file: PathBuf,
    /// The seeds to run, A..B (B excluded); each seed is one world
    #[arg(long, value_name = "A..B", default_value = "0..100", value_parser = parse_seeds)]
    pub seeds: Range<u64>,
    /// Run the one seed N (instead of --seeds)
    #[arg(long, value_name = "N", conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// How hard the world is: none, light, heavy, extreme, swarm (each seed draws its own
    /// rates), or overload (turns slower than the tick, nothing else going wrong)
    #[arg(long, value_name = "MODE", value_parser = parse_faults)]
    pub faults: Option<FaultMode>,
    /// Processes racing for the jobs (default: 2 to 6, drawn per seed)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub processes: Option<u16>,
    /// Simulated days per world, the last quarter (at least 4 h) without faults
    /// (default: 0.75 to 1.5, drawn per seed)
    #[arg(long, value_name = "D", value_parser = parse_days)]
    pub days: Option<f64>,
    /// The store's tick the worlds run with, as `duetime run --tick` (an `every` must be
    /// at least a tick)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duetime_host::human::parse_tick)]
    pub tick: Duration,
    /// Threads running seeds (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// How long JOB's runs take: JOB=90s, or a range JOB=30s..2m (repeatable). Jobs
    /// without one take 1 s up to 80% of their schedule's spacing, within their timeout
    #[arg(long = "duration", value_name = "JOB=TIME", value_parser = user_jobs::parse_duration_hint)]
    pub durations: Vec<(String, (i64, i64))>,
    /// The chance that a run fails (exits 1), for every job
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_rate)]
    pub fail_rate: f64,
    /// Print the world's readable trace (with --seed N): what a failing seed's replay line runs
    #[arg(long)]
    pub trace: bool,
    /// Print the summary and failures as JSON
    #[arg(long, conflicts_with = "trace")]
    pub json: bool,
}

fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let (lo, hi) = text
        .split_once("..")
        .ok_or(format!("`{text}`; accepted: A..B, such as 0..100"))?;
    let lo: u64 = lo.parse().map_err(|_| format!("`{lo}` is not a number"))?;
    let hi: u64 = hi.parse().map_err(|_| format!("`{hi}` is not a number"))?;
    if hi <= lo {
        return Err(format!("`{text}` is empty"));
    }
    Ok(lo..hi)
}

fn parse_faults(text: &str) -> Result<FaultMode, String> {
    text.parse::<FaultMode>()
        .map_err(|_| format!("`{text}`; accepted: none, light, heavy, swarm"))
}

/// Up to a year: the world's time arithmetic stays far from overflow and a seed ends.
fn parse_days(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() && d > 0.0 && d <= 366.0 => Ok(d),
        _ => Err(format!(
            "`{text}`; accepted: a number of days above 0, up to 366"
        )),
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("`{text}`; accepted: a probability from 0 to 1")),
    }
}

pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let file = args.file.display().to_string();
    let seeds = args
        .seed
        .map_or(args.seeds.clone(), |n| n..n.saturating_add(1));
    if args.trace && seeds.end - seeds.start != 1 {
        writeln!(
            err,
            "duetime sim: --trace prints one world: give it --seed N"
        )?;
        return Ok(USAGE);
    }
    let Some(jobs) = file_jobs(args, &file, err)? else {
        return Ok(USAGE);
    };
    let jobs = Arc::new(jobs);
    let opts = options(args, &jobs);
    if args.trace {
        return trace(args, seeds.start, opts, out);
    }
    run_seeds(args, &file, seeds, &jobs, &opts, out)
}

/// The file's jobs as the simulator draws them, or `None` after saying why not (every
/// error of the file, or what the simulator cannot take).
fn file_jobs(args: &Args, file: &str, err: &mut dyn Write) -> io::Result<Option<Vec<SimJob>>> {
    let config = duetime::Config::with_tick(args.tick);
    let Some(defs) = super::job_defs(&args.file, &config, err)? else {
        return Ok(None);
    };
    // Upstreams first, as the daemon upserts them: the core refuses a downstream whose
    // upstream it does not know yet.
    let order = duetime_host::jobs_file::upsert_order(&defs);
    let defs: Vec<duetime::JobDef> = order.into_iter().map(|i| defs[i].clone()).collect();
    let hints = RunHints {
        durations: args.durations.iter().cloned().collect(),
        fail_rate: args.fail_rate,
    };
    match user_jobs::sim_jobs(&defs, &hints) {
        Ok(jobs) => Ok(Some(jobs)),
        Err(errors) => {
            for e in &errors {
                writeln!(err, "{file}: {e}")?;
            }
            writeln!(err, "{file}: cannot be simulated")?;
            Ok(None)
        }
    }
}

/// The worlds' options: the file's jobs, and the flags' overrides.
fn options(args: &Args, jobs: &Arc<Vec<SimJob>>) -> Options {
    Options {
        overrides: Overrides {
            processes: args.processes.map(usize::from),
            jobs: None,
            days: args.days,
            faults: args.faults,
            tick_ms: Some(args.tick.as_millis() as i64),
            without_late_draws: false,
            // The file's own jobs are simulated as written: calendars and chains are theirs.
            calendars: false,
            without_chains: true,
        },
        jobs: Some(Arc::clone(jobs)),
        keep_durations: true,
        ..Options::default()
    }
}

/// `--trace`: one world, every event of it.
fn trace(args: &Args, seed: u64, mut opts: Options, out: &mut dyn Write) -> io::Result<u8> {
    opts.readable_trace = true;
    let r = run_seed(seed, &opts);
    writeln!(out, "{}", r.config)?;
    for line in r.trace.iter().flatten() {
        writeln!(out, "{line}")?;
    }
    report::write_failure(out, &r, &replay_command(args, r.seed))?;
    Ok(r.verdict.exit_code() as u8)
}

/// Every seed of the range, then the summary, the seeds set apart by design and the
/// failures, as text or JSON.
fn run_seeds(
    args: &Args,
    file: &str,
    seeds: Range<u64>,
    jobs: &[SimJob],
    opts: &Options,
    out: &mut dyn Write,
) -> io::Result<u8> {
    let replay = |seed: u64| replay_command(args, seed);
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let title = format!("duetime sim summary ({file})");
    if !args.json {
        write_assumptions(out, file, jobs, args)?;
        writeln!(out)?;
    }
    let mut totals = report::run_seeds(seeds, threads, opts, false);
    let by_design = set_apart_by_design(&mut totals, jobs, &opts.overrides);
    if args.json {
        let mut v = report::to_json(&title, &totals, opts, &replay);
        v["by_design"] = by_design_json(&by_design);
        writeln!(out, "{v:#}")?;
        return Ok(totals.exit_code() as u8);
    }
    report::write_summary(out, &title, &totals)?;
    write_by_design(out, &by_design, &replay)?;
    let code = report::write_failures(out, &totals, opts, &replay, &mut |_, _, _| Ok(()))?;
    Ok(code as u8)
}

/// A seed that failed only in a way the file's settings cannot survive by design, and
/// why (`user_jobs::undrainable_backfills`).
struct ByDesign {
    seed: u64,
    jobs: Vec<Undrainable>,
}

/// Takes out of `totals.failures` the seeds whose every broken promise is a backfill the
/// file's `required` jobs cannot drain by design, so the verdict (and the exit code) is
/// about the user's jobs; they are listed apart, with what to change, never dropped.
fn set_apart_by_design(
    totals: &mut report::Totals,
    jobs: &[SimJob],
    overrides: &Overrides,
) -> Vec<ByDesign> {
    let mut apart = Vec::new();
    totals.failures.retain(
        |r| match user_jobs::undrainable_backfills(r, jobs, overrides) {
            Some(found) => {
                apart.push(ByDesign {
                    seed: r.seed,
                    jobs: found,
                });
                false
            }
            None => true,
        },
    );
    apart
}

fn write_by_design(
    out: &mut dyn Write,
    apart: &[ByDesign],
    replay: &dyn Fn(u64) -> String,
) -> io::Result<()> {
    let Some(first) = apart.first() else {
        return Ok(());
    };
    // The first few seeds name the rest: a long range may set a hundred apart.
    let mut seeds: Vec<String> = apart.iter().take(20).map(|b| b.seed.to_string()).collect();
    if apart.len() > seeds.len() {
        seeds.push("...".to_string());
    }
    writeln!(
        out,
        "{} seed(s) ({}) broke no promise but a backfill the file's settings cannot drain by \
         design; not counted as failures:",
        apart.len(),
        seeds.join(", ")
    )?;
    // The same jobs fail the same way in each; the first seed's words say it.
    for job in &first.jobs {
        writeln!(out, "  {job}")?;
    }
    writeln!(out, "  replay: {}", replay(first.seed))
}

fn by_design_json(apart: &[ByDesign]) -> serde_json::Value {
    let seeds: Vec<serde_json::Value> = apart
        .iter()
        .map(|b| {
            let jobs: Vec<serde_json::Value> = b
                .jobs
                .iter()
                .map(|j| serde_json::json!({"job": j.job, "owed": j.owed, "why": j.to_string()}))
                .collect();
            serde_json::json!({"seed": b.seed, "jobs": jobs})
        })
        .collect();
    serde_json::Value::Array(seeds)
}

/// What the worlds assume about the runs, which the file cannot say: a verdict is only as
/// good as these, so they come first.
fn write_assumptions(
    out: &mut dyn Write,
    file: &str,
    jobs: &[SimJob],
    args: &Args,
) -> io::Result<()> {
    let n = jobs.len();
    writeln!(
        out,
        "{file}: {n} job{}; how long their runs take (--duration JOB=TIME sets it; the default \
         is 1s up to 80% of the schedule's spacing, within the timeout):",
        if n == 1 { "" } else { "s" }
    )?;
    let name_width = jobs
        .iter()
        .map(|j| j.def.name.as_str().len())
        .max()
        .unwrap_or(0);
    let rows: Vec<(&str, String, bool)> = jobs
        .iter()
        .map(|j| {
            let name = j.def.name.as_str();
            let (lo, hi) = j.behaviour.duration_ms;
            let hinted = args.durations.iter().any(|(n, _)| n == name);
            (name, range_text(lo, hi), hinted)
        })
        .collect();
    let time_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for (job, (name, time, hinted)) in jobs.iter().zip(&rows) {
        let source = if *hinted { "--duration" } else { "default" };
        writeln!(
            out,
            "  {name:<name_width$}  {time:<time_width$}  {source:<10}  {}",
            job.def.schedule
        )?;
    }
    if args.fail_rate > 0.0 {
        writeln!(out, "  every run fails with probability {}", args.fail_rate)?;
    }
    Ok(())
}

/// `90s` or `30s..2m`, as `--duration` reads it back.
fn range_text(lo: i64, hi: i64) -> String {
    let d = |ms: i64| Duration::from_millis(ms.max(0) as u64).to_string();
    if lo == hi {
        d(lo)
    } else {
        format!("{}..{}", d(lo), d(hi))
    }
}

/// The command that runs one seed again with its trace: every flag that shapes the world.
fn replay_command(args: &Args, seed: u64) -> String {
    let mut s = format!(
        "duetime sim {} --seed {seed} --trace",
        shell_word(&args.file.display().to_string())
    );
    if let Some(f) = args.faults {
        s += &format!(" --faults {}", format!("{f:?}").to_lowercase());
    }
    if let Some(p) = args.processes {
        s += &format!(" --processes {p}");
    }
    if let Some(d) = args.days {
        s += &format!(" --days {d}");
    }
    if args.tick != Duration::from_secs(30) {
        s += &format!(" --tick {}", args.tick);
    }
    for (job, (lo, hi)) in &args.durations {
        let value = format!("{job}={}", range_text(*lo, *hi));
        s += &format!(" --duration {}", shell_word(&value));
    }
    if args.fail_rate > 0.0 {
        s += &format!(" --fail-rate {}", args.fail_rate);
    }
    s
}

/// An argument as a POSIX shell reads it back as one word.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
