//! `duetime what-if JOBS.toml --down A..B [--pause JOB@A..B]... [--clock-jump T+D]...`:
//! replays a future you describe through the core and prints, job by job, what would run
//! on time, be caught up, be skipped and why, without touching any store.
//!
//! This command exists only because the core is pure: `State::step` reads no clock and does
//! no I/O, so a host can feed it an invented future (crashes, clock jumps, pauses) with
//! invented clocks and get exactly the answers the daemon would get, in milliseconds.
//!
//! # The world it replays
//!
//! - **Start.** With `--store PATH|URL` (an existing store; it is only read, through
//!   `store::open` and `Store::state_in`), each partition's current state and config
//!   (a store of several is replayed partition by partition, `Plan::parts`, and the
//!   replays merged, `Replay::merge`); else a
//!   fresh state with `--tick` (default 30 s). Either way the file's definitions are upserted
//!   at `--from` (actor `jobs-file`), as a `duetime run` started then would, and the jobs
//!   in the store that the file lacks are removed, as such a daemon removes them.
//! - **Span.** From `--from` (default: now with a store; for a fresh state the start of the
//!   earliest window given, else now) to `--until` (default: one day after the end of the
//!   latest window, or after `--from`: a day shows every daily job once past the trouble).
//!   At most 366 days. Times are RFC 3339, or `YYYY-MM-DDTHH:MM[:SS]` read as UTC.
//! - **One host process.** It ticks every `config.tick` of its monotonic clock, and at the
//!   core's `next_wake()` (no sooner than 1 s after its previous tick), as the daemon does.
//!   During a `--down A..B` window no process exists: the one running crashes at A (no
//!   event), and at B a new incarnation with a new `ProcessId` upserts the definitions,
//!   reports the runs that ended meanwhile (`RunFinished`) and adopts those still going
//!   (`Adopt`), then sends `ProcessStarted`, the daemon's order. Overlapping windows merge.
//! - **Runs.** Every `Start` succeeds after the job's assumed duration (`--duration JOB=90s`,
//!   default 1 s): its `RunFinished` comes at that instant from the incarnation holding the
//!   run, or, if none is up, from the next one when it starts. The reports of the runs that
//!   end at one instant commit together, as the daemon's turn does (`duetime_loop::Batch`,
//!   group commit), with the tick when one falls at that instant. A run that outlives its
//!   timeout gets `Cancel { timeout }` from the core and then reports `timed_out` at once,
//!   as a killed command does; a `Cancel { lease_lost }` makes the host drop the run.
//!   Runs open in the store at `--from` are treated as an earlier incarnation's children:
//!   assumed to end their duration after they started.
//! - **Clocks.** The monotonic clock follows true time. `--clock-jump T+2h` (or `T-30m`)
//!   moves the host's wall clock at true time T; the core sees the jump at the next event
//!   of a process that saw the clock before it. A new incarnation cannot see an earlier jump.
//! - **People.** `--pause JOB@A..B` sends `Pause` at A and `Resume` at B (actor `what-if`),
//!   whether or not a process is up (people's commands write to the store directly).
//! - **Order.** A deterministic queue keyed by (true time, sequence): at one instant, clock
//!   jumps first, then crashes and starts, then pauses and resumes, then run ends, then the
//!   tick. No real clock, no randomness: the same arguments print the same report.
//!
//! # The report
//!
//! Per job, the ledger (`Effect::Journal` with `Entry::Ledger`) grouped into runs of equal
//! fate ordered by due time: ran on time, caught up (cause), skipped (cause), failed out,
//! lost; a summary line; notable history (pauses, adoptions, timeouts, losses, alerts); and
//! what is still owed or running at `--until`. Due times print in UTC, and for cron jobs in
//! another zone also in the job's local time. `--json` prints the same for machines.
//!
//! Exit codes: 0 replayed, 1 the jobs file or the store could not be read, 64 a usage error
//! (a bad window, time, jump or duration, an unknown job, a span too long).
//!
//! The module's rooms: `flags` parses the flags' values, `plan` checks them into a `Plan`
//! (the starting state, the definitions, the scenario), `world` replays it through the
//! core, `report` prints what happened job by job.

mod flags;
mod plan;
mod report;
mod world;

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::PathBuf;

use duetime::{Duration, Timestamp};
use duetime_host::human::parse_time;

use flags::{parse_job_duration, parse_jump, parse_pause, parse_window};
pub use flags::{Jump, PauseWindow, Window};
use plan::{Plan, Refusal};
use report::{utc, Report};
use world::World;

/// The exit code of a usage error.
pub const USAGE: u8 = 64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The jobs file
    #[arg(value_name = "JOBS.toml")]
    pub file: PathBuf,
    /// No host process runs from A to B: it crashes at A, a new one starts at B (repeatable)
    #[arg(long, value_name = "A..B", value_parser = parse_window)]
    pub down: Vec<Window>,
    /// Pause JOB at A and resume it at B, as actor `what-if` (repeatable)
    #[arg(long, value_name = "JOB@A..B", value_parser = parse_pause)]
    pub pause: Vec<PauseWindow>,
    /// The host's wall clock jumps at T by +D or -D, such as 2025-03-09T10:00+2h; its
    /// monotonic clock does not (repeatable)
    #[arg(long = "clock-jump", value_name = "T+D|T-D", value_parser = parse_jump)]
    pub clock_jump: Vec<Jump>,
    /// Start here (default: now with --store; else the earliest window's start, or now)
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub from: Option<Timestamp>,
    /// Stop here (default: a day after the latest window's end, or after --from)
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub until: Option<Timestamp>,
    /// Start from this existing store's state, an SQLite file or a postgres:// URL (read
    /// only; never written)
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<String>,
    /// The tick of a fresh state (a store has its own)
    #[arg(long, value_name = "DURATION", value_parser = duetime_host::human::parse_duration)]
    pub tick: Option<Duration>,
    /// How long JOB's runs take, such as backup=90s (repeatable; default 1s)
    #[arg(long = "duration", value_name = "JOB=TIME", value_parser = parse_job_duration)]
    pub durations: Vec<(String, Duration)>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// A usage error: the flag, what was wrong; exit 64.
fn usage(err: &mut dyn Write, message: &str) -> io::Result<u8> {
    writeln!(err, "duetime what-if: {message}")?;
    Ok(USAGE)
}

pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let plan = match Plan::make(args, err)? {
        Ok(plan) => plan,
        Err(Refusal::Usage(message)) => return usage(err, &message),
        Err(Refusal::Said(code)) => return Ok(code),
    };
    let existed: BTreeSet<String> = plan
        .states
        .iter()
        .flat_map(|s| s.records())
        .map(|(_, r)| r.def().name.to_string())
        .collect();
    let (store, scenario) = (plan.store.clone(), plan.scenario.clone());
    // A store of several partitions: each replayed as the daemon's seat there steps it.
    let replays = plan
        .parts()
        .into_iter()
        .map(|part| World::replay(part.state, part.defs, &part.scenario))
        .collect();
    let replay = world::Replay::merge(replays);
    let scenario = &scenario;
    let report = Report {
        file: &args.file.display().to_string(),
        store: store.as_deref(),
        scenario,
        replay: &replay,
        existed: &existed,
        years: utc(scenario.from, true)[..4] != utc(scenario.until, true)[..4],
    };
    if args.json {
        writeln!(out, "{:#}", report.json())?;
    } else {
        out.write_all(report.text().as_bytes())?;
    }
    Ok(0)
}
