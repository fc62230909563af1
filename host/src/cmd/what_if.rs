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
//!   `store::open` and `Store::state`), the store's current state and config; else a
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

use duetime::Notice;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use chrono_tz::Tz;
use duetime::{
    Actor, Alert, CancelReason, Config, Duration, Effect, Entry, Event, Fence, History, JobDef,
    JobName, LedgerEntry, LedgerKind, MissAction, MissCause, Now, Outcome, ProcessId, Record,
    RunId, Schedule, State, Timestamp,
};
use duetime_host::human::{parse_time, TIMES};
use duetime_host::store::{self, Store};
use duetime_loop::{Incarnation, LeftRun, Order, Started, Startup, BATCH_MAX};
use serde_json::{json, Value};

/// The exit code of a usage error.
pub const USAGE: u8 = 64;
/// The longest span replayed: ticks are stepped one by one.
const MAX_SPAN: Duration = Duration::from_days(366);
/// The largest clock jump accepted.
const MAX_JUMP: Duration = Duration::from_days(366);
/// How long a run takes unless `--duration` says otherwise.
const DEFAULT_DURATION: Duration = Duration::from_secs(1);
/// Events stepped before the replay stops early (a one-second schedule over a year).
const MAX_EVENTS: u64 = 5_000_000;
/// The least time between two ticks the core's wake time asks for, as the daemon's poll.
const MIN_WAKE_GAP: Duration = Duration::from_secs(1);
const ACTOR: &str = "what-if";

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

/// `A..B`, A before B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseWindow {
    pub job: JobName,
    pub window: Window,
}

/// The wall clock moves by `by_ms` (negative: back) at true time `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jump {
    pub at: Timestamp,
    pub by_ms: i64,
}

fn parse_window(text: &str) -> Result<Window, String> {
    let (a, b) = text.split_once("..").ok_or_else(|| {
        format!(
            "`{text}` has no `..`; accepted: START..END such as \
             2025-03-09T01:00..2025-03-09T09:00, each time {TIMES}"
        )
    })?;
    let from = parse_time(a)?;
    let to = parse_time(b)?;
    if to <= from {
        let how = if to == from { "when" } else { "before" };
        return Err(format!(
            "`{text}` ends {how} it starts; the end must come after the start"
        ));
    }
    Ok(Window { from, to })
}

fn parse_pause(text: &str) -> Result<PauseWindow, String> {
    let (job, window) = text.split_once('@').ok_or_else(|| {
        format!("`{text}` has no `@`; accepted: JOB@START..END such as backup@2025-03-09T01:00..2025-03-09T05:00")
    })?;
    if job.trim().is_empty() {
        return Err(format!("`{text}` names no job before the `@`"));
    }
    let job = JobName::new(job.trim()).map_err(|e| format!("`{text}`: {e}"))?;
    Ok(PauseWindow {
        job,
        window: parse_window(window)?,
    })
}

/// `T+D` or `T-D`: the last `+` or `-` whose two sides read as a time and a duration (a
/// time has `-` in its date and maybe in its offset).
fn parse_jump(text: &str) -> Result<Jump, String> {
    for (i, c) in text.char_indices().rev() {
        if c != '+' && c != '-' {
            continue;
        }
        let (Ok(at), Ok(by)) = (parse_time(&text[..i]), text[i + 1..].parse::<Duration>()) else {
            continue;
        };
        if by.is_zero() || by > MAX_JUMP {
            return Err(format!(
                "`{text}`: a jump is more than 0s and at most {MAX_JUMP}"
            ));
        }
        // At most MAX_JUMP, so it fits.
        let ms = by.as_millis() as i64;
        return Ok(Jump {
            at,
            by_ms: if c == '-' { -ms } else { ms },
        });
    }
    Err(format!(
        "`{text}` is not a jump; accepted: TIME+DURATION or TIME-DURATION, such as \
         2025-03-09T10:00+2h or 2025-03-09T10:00-30m (durations like 30s, 10m, 1h30m)"
    ))
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    text.parse::<Duration>().map_err(|e| e.to_string())
}

fn parse_job_duration(text: &str) -> Result<(String, Duration), String> {
    let (job, d) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` has no `=`; accepted: JOB=TIME such as backup=90s"))?;
    let d = parse_duration(d)?;
    if d.is_zero() {
        return Err(format!("`{text}`: a run takes at least 1ms"));
    }
    Ok((job.trim().to_string(), d))
}

/// The state of the store at `path` (read only) and its name, or the exit code after
/// saying why not (1). A store of several partitions is refused: what-if replays one
/// state, and partition 0 alone would be a part of the store passed off as the whole.
fn read_store(path: &str, err: &mut dyn Write) -> io::Result<Result<(State, String), u8>> {
    let options = store::Options {
        create: false,
        ..Default::default()
    };
    let read = store::open(path, options).and_then(|mut s| {
        let name = s.describe().to_string();
        let count = s.partitions();
        s.state().cloned().map(|state| (state, name, count))
    });
    match read {
        Ok((_, name, count)) if count != duetime_loop::PartitionCount::ONE => {
            writeln!(
                err,
                "duetime what-if: the store {name} has {}; what-if replays a store of one \
                 partition only, for now (docs/scale-out.md)",
                store::partitions_text(count)
            )?;
            Ok(Err(1))
        }
        Ok((mut s, name, _)) => {
            s.track_changes(false);
            Ok(Ok((s, name)))
        }
        Err(e) => {
            writeln!(err, "duetime what-if: {e}")?;
            Ok(Err(1))
        }
    }
}

/// A usage error: the flag, what was wrong; exit 64.
fn usage(err: &mut dyn Write, message: &str) -> io::Result<u8> {
    writeln!(err, "duetime what-if: {message}")?;
    Ok(USAGE)
}

pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    // The starting state: the store's (read only), or a fresh one.
    let (state, store_name) = match &args.store {
        Some(path) => {
            if !store::is_url(path) && !std::path::Path::new(path).is_file() {
                return usage(
                    err,
                    &format!(
                        "--store {path}: no such store (what-if never creates one); leave \
                         --store out to start from a fresh state"
                    ),
                );
            }
            if let Some(t) = args.tick {
                return usage(
                    err,
                    &format!(
                        "--tick {t}: a store keeps its own tick; leave --tick out with --store"
                    ),
                );
            }
            match read_store(path, err)? {
                Ok((s, name)) => (s, Some(name)),
                Err(code) => return Ok(code),
            }
        }
        None => {
            let tick = args.tick.unwrap_or(Duration::from_secs(30));
            if let Err(why) = duetime_host::human::check_tick(tick) {
                return usage(
                    err,
                    &format!(
                        "--tick {tick}: {why}; accepted: a duration of at least 1s, such as 30s"
                    ),
                );
            }
            (State::new(Config::with_tick(tick)), None)
        }
    };
    let config = *state.config();
    let file = args.file.display().to_string();
    let Some(defs) = super::job_defs(&args.file, &config, err)? else {
        return Ok(1);
    };

    // Every job named by a flag must exist in the file or the store.
    let mut known: BTreeSet<String> = defs.iter().map(|d| d.name.to_string()).collect();
    known.extend(state.records().map(|(_, r)| r.def().name.to_string()));
    let known_list = || known.iter().cloned().collect::<Vec<_>>().join(", ");
    for p in &args.pause {
        if !known.contains(p.job.as_str()) {
            return usage(
                err,
                &format!(
                    "--pause {}@…: no job named `{}`; the jobs are: {}",
                    p.job,
                    p.job,
                    known_list()
                ),
            );
        }
    }
    for (job, _) in &args.durations {
        if !known.contains(job) {
            return usage(
                err,
                &format!(
                    "--duration {job}=…: no job named `{job}`; the jobs are: {}",
                    known_list()
                ),
            );
        }
    }
    let mut by_job: BTreeMap<&str, Vec<Window>> = BTreeMap::new();
    for p in &args.pause {
        let ws = by_job.entry(p.job.as_str()).or_default();
        if ws
            .iter()
            .any(|w| w.from < p.window.to && p.window.from < w.to)
        {
            return usage(
                err,
                &format!(
                    "--pause {}: two pauses of one job overlap; give each its own time",
                    p.job
                ),
            );
        }
        ws.push(p.window);
    }

    // The span.
    let starts = args
        .down
        .iter()
        .map(|w| w.from)
        .chain(args.pause.iter().map(|p| p.window.from))
        .chain(args.clock_jump.iter().map(|j| j.at));
    let ends = args
        .down
        .iter()
        .map(|w| w.to)
        .chain(args.pause.iter().map(|p| p.window.to))
        .chain(args.clock_jump.iter().map(|j| j.at));
    let from = match (args.from, store_name.is_some()) {
        (Some(t), _) => t,
        (None, true) => super::now(),
        (None, false) => starts.min().unwrap_or_else(super::now),
    };
    let until = match args.until {
        Some(t) => t,
        None => ends
            .max()
            .unwrap_or(from)
            .max(from)
            .saturating_add(Duration::from_days(1)),
    };
    if until <= from {
        return usage(
            err,
            &format!("--until {until} is not after --from {from}; the replay needs a span"),
        );
    }
    if until.saturating_since(from) > MAX_SPAN {
        return usage(
            err,
            &format!("--from {from} to --until {until} is over {MAX_SPAN}; replay at most a year"),
        );
    }
    let outside = |t: Timestamp| t < from || t > until;
    for w in &args.down {
        if outside(w.from) || outside(w.to) {
            return usage(
                err,
                &format!(
                    "--down {}..{}: outside the replayed span {from} .. {until}; move it or \
                     change --from/--until",
                    w.from, w.to
                ),
            );
        }
    }
    for p in &args.pause {
        if outside(p.window.from) || outside(p.window.to) {
            return usage(
                err,
                &format!(
                    "--pause {}@{}..{}: outside the replayed span {from} .. {until}; move it or \
                     change --from/--until",
                    p.job, p.window.from, p.window.to
                ),
            );
        }
    }
    for j in &args.clock_jump {
        if outside(j.at) {
            return usage(
                err,
                &format!(
                    "--clock-jump at {}: outside the replayed span {from} .. {until}; move it or \
                     change --from/--until",
                    j.at
                ),
            );
        }
    }

    let durations: BTreeMap<String, Duration> = args.durations.iter().cloned().collect();
    let scenario = Scenario {
        from,
        until,
        down: merge(&args.down),
        pauses: args.pause.clone(),
        jumps: args.clock_jump.clone(),
        durations,
    };
    let existed: BTreeSet<String> = state
        .records()
        .map(|(_, r)| r.def().name.to_string())
        .collect();
    let replay = World::replay(state, defs, &scenario);
    let report = Report {
        file: &file,
        store: store_name.as_deref(),
        scenario: &scenario,
        replay: &replay,
        existed: &existed,
        years: utc(from, true)[..4] != utc(until, true)[..4],
    };
    if args.json {
        writeln!(out, "{:#}", report.json())?;
    } else {
        out.write_all(report.text().as_bytes())?;
    }
    Ok(0)
}

/// Down windows sorted, overlapping or touching ones merged.
fn merge(windows: &[Window]) -> Vec<Window> {
    let mut ws = windows.to_vec();
    ws.sort_by_key(|w| (w.from, w.to));
    let mut out: Vec<Window> = Vec::new();
    for w in ws {
        match out.last_mut() {
            Some(last) if w.from <= last.to => last.to = last.to.max(w.to),
            _ => out.push(w),
        }
    }
    out
}

/// What the flags describe, checked.
struct Scenario {
    from: Timestamp,
    until: Timestamp,
    down: Vec<Window>,
    pauses: Vec<PauseWindow>,
    jumps: Vec<Jump>,
    durations: BTreeMap<String, Duration>,
}

impl Scenario {
    fn duration_of(&self, job: &str) -> Duration {
        self.durations.get(job).copied().unwrap_or(DEFAULT_DURATION)
    }
}

/// What happens at an instant, besides ticks (which are computed, not queued).
#[derive(Debug)]
enum Happening {
    Jump(i64),
    Crash,
    Start,
    Pause(JobName),
    Resume(JobName),
    RunEnds(RunId),
    /// The reports of the runs that ended at this instant, in one batch.
    Report,
}

/// A run's command as the host sees it: it goes on whether or not a process is up.
struct Child {
    job: JobName,
    fence: Fence,
    /// The incarnation that started or adopted it.
    holder: ProcessId,
    ends: Timestamp,
    outcome: Outcome,
    /// It ended while no process was up: the next incarnation reports it.
    exited: bool,
}

/// What the replay produced.
struct Replay {
    records: Vec<Record>,
    alerts: Vec<Alert>,
    /// Refused commands and other things a reader should know.
    notes: Vec<String>,
    processes: Vec<(ProcessId, Timestamp)>,
    state: State,
    stopped_early: Option<Timestamp>,
}

/// The replayed host: the state, its clocks, its process and its runs' children.
struct World<'a> {
    state: State,
    scenario: &'a Scenario,
    defs: Vec<JobDef>,
    /// True time now; the wall clock reads `now + offset`, the monotonic clock `now`.
    now: Timestamp,
    offset: i64,
    /// The incarnation up, if any: the runs it holds (`duetime_loop`, the daemon's turn).
    up: Option<Incarnation>,
    next_pid: u64,
    queue: BTreeMap<(Timestamp, u64), Happening>,
    seq: u64,
    children: BTreeMap<RunId, Child>,
    /// Runs of the incarnation up whose commands ended at this instant, to report in its
    /// batch (`Happening::Report`, queued once per instant).
    ended: Vec<(RunId, Outcome)>,
    last_tick: Timestamp,
    out: Replay,
}

impl<'a> World<'a> {
    fn replay(state: State, defs: Vec<JobDef>, scenario: &'a Scenario) -> Replay {
        let from = scenario.from;
        // Process ids above every one the state knows, so none is reused.
        let max_pid = state
            .globals()
            .processes()
            .keys()
            .map(|p| p.0)
            .chain(
                state
                    .records()
                    .filter_map(|(_, r)| r.run())
                    .map(|r| r.holder().0),
            )
            .max()
            .unwrap_or(0);
        let mut w = World {
            state,
            scenario,
            defs,
            now: from,
            offset: 0,
            up: None,
            next_pid: max_pid.saturating_add(1),
            queue: BTreeMap::new(),
            seq: 0,
            children: BTreeMap::new(),
            ended: Vec::new(),
            last_tick: from,
            out: Replay {
                records: Vec::new(),
                alerts: Vec::new(),
                notes: Vec::new(),
                processes: Vec::new(),
                state: State::default(),
                stopped_early: None,
            },
        };
        // Runs the store holds open: an earlier incarnation's children.
        let open: Vec<(RunId, JobName, Fence, ProcessId, Timestamp)> = w
            .state
            .records()
            .filter_map(|(_, r)| {
                let run = r.run()?;
                Some((
                    run.id(),
                    r.def().name.clone(),
                    run.fence(),
                    run.holder(),
                    run.started(),
                ))
            })
            .collect();
        for (run, job, fence, holder, started) in open {
            let ends = started.saturating_add(scenario.duration_of(job.as_str()));
            w.children.insert(
                run,
                Child {
                    job,
                    fence,
                    holder,
                    ends,
                    outcome: Outcome::Ok,
                    exited: ends <= from,
                },
            );
            if ends > from {
                w.push(ends, Happening::RunEnds(run));
            }
        }
        w.upsert_all();
        for j in &scenario.jumps {
            w.push(j.at, Happening::Jump(j.by_ms));
        }
        let down_at_start = scenario.down.iter().any(|d| d.from <= from && from < d.to);
        if !down_at_start {
            w.push(from, Happening::Start);
        }
        for d in &scenario.down {
            if d.from > from {
                w.push(d.from, Happening::Crash);
            }
            w.push(d.to, Happening::Start);
        }
        for p in &scenario.pauses {
            w.push(p.window.from, Happening::Pause(p.job.clone()));
            w.push(p.window.to, Happening::Resume(p.job.clone()));
        }
        w.run();
        w.out.state = w.state;
        w.out
    }

    fn push(&mut self, at: Timestamp, h: Happening) {
        self.seq += 1;
        self.queue.insert((at, self.seq), h);
    }

    fn now(&self) -> Now {
        let wall = Timestamp::from_millis(self.now.as_millis().saturating_add(self.offset));
        Now::new(wall, self.now)
    }

    fn run(&mut self) {
        let mut events = 0u64;
        loop {
            let next_event = self.queue.first_key_value().map(|(k, _)| k.0);
            let next_tick = self.up.as_ref().map(|_| self.next_tick());
            let (at, tick) = match (next_event, next_tick) {
                (Some(e), Some(t)) if t < e => (t, true),
                (Some(e), _) => (e, false),
                (None, Some(t)) => (t, true),
                (None, None) => break,
            };
            if at > self.scenario.until {
                break;
            }
            events += 1;
            if events > MAX_EVENTS {
                self.out.stopped_early = Some(at);
                break;
            }
            self.now = at;
            if tick {
                self.tick();
            } else if let Some((_, h)) = self.queue.pop_first() {
                self.happen(h);
            }
        }
    }

    /// Every tick of the monotonic clock, and at the core's wake time (read on the wall
    /// clock) but not within a second of the previous tick.
    fn next_tick(&self) -> Timestamp {
        let periodic = self.last_tick.saturating_add(self.state.config().tick);
        let soonest = self.last_tick.saturating_add(MIN_WAKE_GAP);
        let wake = self.state.next_wake().map(|w| {
            Timestamp::from_millis(w.as_millis().saturating_sub(self.offset)).max(soonest)
        });
        wake.map_or(periodic, |w| w.min(periodic)).max(self.now)
    }

    fn step(&mut self, event: Event) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.state.step(self.now(), event, &mut effects);
        self.carry_out(&effects);
        effects
    }

    /// What a daemon does as it starts: the file's definitions upserted, the jobs the file
    /// lacks removed.
    fn upsert_all(&mut self) {
        let defs = self.defs.clone();
        let gone: Vec<JobName> = self
            .state
            .records()
            .map(|(_, r)| r.def().name.clone())
            .filter(|name| !defs.iter().any(|d| d.name == *name))
            .collect();
        for def in defs {
            self.step(Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("jobs-file"),
            });
        }
        for job in gone {
            self.step(Event::Remove {
                job,
                actor: Actor::new("jobs-file"),
            });
        }
    }

    fn tick(&mut self) {
        let Some(tick) = self.up.as_ref().map(Incarnation::tick) else {
            return;
        };
        self.step(tick);
        self.last_tick = self.now;
    }

    fn happen(&mut self, h: Happening) {
        match h {
            Happening::Jump(by) => self.offset = self.offset.saturating_add(by),
            Happening::Crash => {
                // Its children go on; what ended and was not reported yet is theirs to
                // report to the next incarnation.
                for (run, _) in std::mem::take(&mut self.ended) {
                    if let Some(c) = self.children.get_mut(&run) {
                        c.exited = true;
                    }
                }
                self.up = None;
            }
            Happening::Start => self.start(),
            Happening::Pause(job) => {
                self.step(Event::Pause {
                    job,
                    actor: Actor::new(ACTOR),
                    note: "what-if --pause".to_string(),
                });
            }
            Happening::Resume(job) => {
                self.step(Event::Resume {
                    job,
                    actor: Actor::new(ACTOR),
                });
            }
            Happening::RunEnds(run) => self.run_ends(run),
            Happening::Report => self.report(),
        }
    }

    /// A new incarnation, as the daemon starts: definitions, then the one order of
    /// start-up (`duetime_loop::Startup`: the runs earlier ones left reported if ended and
    /// adopted if going, then `ProcessStarted`).
    fn start(&mut self) {
        if self.up.is_some() {
            return;
        }
        let process = ProcessId(self.next_pid);
        self.next_pid = self.next_pid.saturating_add(1);
        self.out.processes.push((process, self.now));
        self.up = Some(Incarnation::new(process));
        self.upsert_all();
        let left = self.children.iter().map(|(&run, c)| {
            let (job, fence) = (c.job.clone(), c.fence);
            if c.exited {
                let outcome = c.outcome.clone();
                LeftRun::Ended {
                    run,
                    job,
                    fence,
                    outcome,
                }
            } else {
                LeftRun::Going { run, job, fence }
            }
        });
        let mut startup = Startup::new(process, left.collect::<Vec<_>>());
        while let Some(event) = startup.next_event() {
            let effects = self.step(event);
            match startup.committed(&effects) {
                Some(Started::Adopted { run, job, fence }) => {
                    if let Some(c) = self.children.get_mut(&run) {
                        c.holder = process;
                    }
                    if let Some(up) = &mut self.up {
                        up.adopt(run, job, fence);
                    }
                }
                Some(Started::NotAdopted { run, .. } | Started::Reported { run }) => {
                    self.children.remove(&run);
                }
                Some(Started::Registered) | None => {}
            }
        }
        self.last_tick = self.now;
    }

    /// A run's command ends: the incarnation holding it reports it in this instant's batch
    /// (`report`); with none up, it waits for the next one.
    fn run_ends(&mut self, run: RunId) {
        let Some(c) = self.children.get_mut(&run) else {
            return;
        };
        if c.ends != self.now || c.exited {
            // An earlier end replaced by a cancel.
            return;
        }
        let held = self
            .up
            .as_ref()
            .filter(|up| up.process() == c.holder)
            .is_some_and(|up| up.holding(run).is_some());
        if !held {
            c.exited = true;
            return;
        }
        let outcome = c.outcome.clone();
        if self.ended.is_empty() {
            self.push(self.now, Happening::Report);
        }
        self.ended.push((run, outcome));
    }

    /// The batch of this instant: the reports of the runs that ended, then the tick if it
    /// falls now (stepped at once: a replay's transactions always commit); every effect
    /// carried out after the last step, as after a commit.
    fn report(&mut self) {
        let mut ended = std::mem::take(&mut self.ended);
        let tick = self.next_tick() == self.now;
        let Some(batch) = self
            .up
            .as_ref()
            .map(|up| up.batch(ended.iter().cloned(), tick, BATCH_MAX))
        else {
            return;
        };
        let now = self.now();
        let mut effects = Vec::new();
        for e in batch.events() {
            self.state.step(now, e.clone(), &mut effects);
        }
        for &(run, _) in batch.reports() {
            self.children.remove(&run);
        }
        if let Some(up) = &mut self.up {
            up.committed(&batch);
        }
        if batch.ticks() {
            self.last_tick = self.now;
        }
        // More ended than a batch holds: the rest go in the next batch, at this instant.
        let up = self.up.as_ref();
        ended.retain(|(run, _)| up.is_some_and(|up| up.holding(*run).is_some()));
        if !ended.is_empty() {
            self.push(self.now, Happening::Report);
            self.ended = ended;
        }
        self.carry_out(&effects);
    }

    fn carry_out(&mut self, effects: &[Effect]) {
        for e in effects {
            match self.up.as_mut().and_then(|up| up.take(e)) {
                Some(Order::Launch {
                    run, job, fence, ..
                }) => self.launch(run, job, fence),
                Some(Order::Stop { run, reason, .. }) => self.stop(run, reason),
                None => self.note(e),
            }
        }
    }

    /// A run's command starts, to end after the scenario's duration for its job.
    fn launch(&mut self, run: RunId, job: JobName, fence: Fence) {
        let ends = self
            .now
            .saturating_add(self.scenario.duration_of(job.as_str()));
        let holder = self.up.as_ref().map_or(ProcessId(0), Incarnation::process);
        self.children.insert(
            run,
            Child {
                job,
                fence,
                holder,
                ends,
                outcome: Outcome::Ok,
                exited: false,
            },
        );
        self.push(ends, Happening::RunEnds(run));
    }

    /// The core asked to stop a run: dropped when its lease was lost (the incarnation let
    /// it go: its result would be stale), else ended now by SIGTERM, as a timeout or a
    /// signal, and reported.
    fn stop(&mut self, run: RunId, reason: CancelReason) {
        let now = self.now;
        if reason == CancelReason::LeaseLost {
            self.children.remove(&run);
            return;
        }
        let Some(c) = self.children.get_mut(&run) else {
            return;
        };
        c.outcome = if reason == CancelReason::Timeout {
            Outcome::TimedOut
        } else {
            Outcome::failed("signal TERM")
        };
        c.ends = now;
        self.push(now, Happening::RunEnds(run));
    }

    /// What the replay's reader sees of an effect: journal lines, alerts, refusals.
    fn note(&mut self, e: &Effect) {
        match e {
            Effect::Journal(r) => self.out.records.push(r.clone()),
            Effect::Notice(Notice::Alert(a)) => self.out.alerts.push(a.clone()),
            Effect::Reply {
                job,
                result: Err(refusal),
            } => {
                let job = job.as_ref().map_or("-", |j| j.as_str());
                self.out.notes.push(format!(
                    "{}: {job}: refused: {refusal}",
                    utc(self.now, true)
                ));
            }
            _ => {}
        }
    }
}

/// How one group of ledger entries ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Ran,
    CaughtUp(MissCause),
    Skipped(MissCause),
    FailedOut,
    Lost,
    ApprovalExpired,
}

impl Fate {
    fn of(kind: &LedgerKind) -> (Fate, Option<RunId>) {
        match *kind {
            LedgerKind::Ran { run, .. } => (Fate::Ran, Some(run)),
            LedgerKind::Missed {
                cause,
                action: MissAction::Skipped,
            } => (Fate::Skipped(cause), None),
            LedgerKind::Missed {
                cause,
                action: MissAction::CaughtUp { run },
            } => (Fate::CaughtUp(cause), Some(run)),
            LedgerKind::FailedOut { run } => (Fate::FailedOut, Some(run)),
            LedgerKind::Lost { run } => (Fate::Lost, Some(run)),
            LedgerKind::ApprovalExpired { run } => (Fate::ApprovalExpired, Some(run)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Fate::Ran => "ran",
            Fate::CaughtUp(_) => "caught_up",
            Fate::Skipped(_) => "skipped",
            Fate::FailedOut => "failed_out",
            Fate::Lost => "lost",
            Fate::ApprovalExpired => "approval_expired",
        }
    }

    fn cause(self) -> Option<MissCause> {
        match self {
            Fate::CaughtUp(c) | Fate::Skipped(c) => Some(c),
            _ => None,
        }
    }
}

fn cause_name(c: MissCause) -> &'static str {
    c.name()
}

/// Consecutive ledger entries (by due time) of one fate.
struct Group {
    from: Timestamp,
    to: Timestamp,
    count: u64,
    fate: Fate,
    runs: Vec<RunId>,
}

/// One job's part of the report.
struct JobReport {
    def: JobDef,
    ledger: Vec<(Timestamp, LedgerEntry)>,
    groups: Vec<Group>,
    notes: Vec<(Timestamp, String)>,
    /// Run → the wall time it started.
    started: BTreeMap<RunId, Timestamp>,
    owed: u64,
    running: Option<RunId>,
    paused: bool,
}

impl JobReport {
    fn zone(&self) -> Option<Tz> {
        match &self.def.schedule {
            Schedule::Cron(c) if !c.zone().is_utc() => Some(c.zone().tz()),
            _ => None,
        }
    }

    fn total(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }

    fn count(&self, pick: impl Fn(Fate) -> bool) -> u64 {
        self.groups
            .iter()
            .filter(|g| pick(g.fate))
            .map(|g| g.count)
            .sum()
    }

    /// Counts per cause among the fates `pick` keeps (caught up or skipped).
    fn by_cause(&self, pick: impl Fn(Fate) -> bool) -> BTreeMap<MissCause, u64> {
        let mut m = BTreeMap::new();
        for g in self.groups.iter().filter(|g| pick(g.fate)) {
            if let Some(c) = g.fate.cause() {
                *m.entry(c).or_default() += g.count;
            }
        }
        m
    }
}

struct Report<'a> {
    file: &'a str,
    store: Option<&'a str>,
    scenario: &'a Scenario,
    replay: &'a Replay,
    existed: &'a BTreeSet<String>,
    /// Print years in due times: the span crosses a new year, so month-day is ambiguous.
    years: bool,
}

impl Report<'_> {
    fn jobs(&self) -> Vec<JobReport> {
        let state = &self.replay.state;
        let mut out = Vec::new();
        for (_, rec) in state.records() {
            let name = rec.def().name.as_str();
            let mut ledger = Vec::new();
            let mut notes = Vec::new();
            let mut started = BTreeMap::new();
            let mut first_defined = !self.existed.contains(name);
            for r in self
                .replay
                .records
                .iter()
                .filter(|r| r.job.as_str() == name)
            {
                match &r.entry {
                    Entry::Ledger(e) => ledger.push((r.at, *e)),
                    Entry::History(h) => {
                        if let History::Started { run, .. } = h {
                            started.insert(*run, r.at);
                        }
                        let notable = match h {
                            History::Defined { .. } if first_defined => {
                                first_defined = false;
                                false
                            }
                            History::Started { .. } | History::ManualQueued { .. } => false,
                            History::Settled { outcome, .. } => !outcome.is_success(),
                            _ => true,
                        };
                        if notable {
                            notes.push((r.at, h.to_string()));
                        }
                    }
                }
            }
            for a in self.replay.alerts.iter().filter(|a| a.job.as_str() == name) {
                notes.push((a.at, format!("ALERT {}", a.kind)));
            }
            notes.sort_by_key(|n| n.0);
            ledger.sort_by_key(|(_, e)| (e.from, e.to));
            let mut groups: Vec<Group> = Vec::new();
            for (_, e) in &ledger {
                let (fate, run) = Fate::of(&e.kind);
                match groups.last_mut() {
                    Some(g) if g.fate == fate => {
                        g.to = g.to.max(e.to);
                        g.count += e.count;
                        g.runs.extend(run);
                    }
                    _ => groups.push(Group {
                        from: e.from,
                        to: e.to,
                        count: e.count,
                        fate,
                        runs: run.into_iter().collect(),
                    }),
                }
            }
            out.push(JobReport {
                def: rec.def().clone(),
                ledger,
                groups,
                notes,
                started,
                owed: rec.owed(),
                running: rec.run().map(|r| r.id()),
                paused: rec.paused().is_some(),
            });
        }
        out
    }

    fn duration_text(&self, job: &str) -> String {
        let d = self.scenario.duration_of(job);
        if self.scenario.durations.contains_key(job) {
            format!("{d} (--duration)")
        } else {
            format!("{d} (assumed)")
        }
    }

    fn text(&self) -> String {
        let s = self.scenario;
        let mut o = String::new();
        let start = match self.store {
            Some(p) => format!("the state of the store {p} (read only)"),
            None => "a fresh state".to_string(),
        };
        let _ = writeln!(o, "duetime what-if {}", self.file);
        let _ = writeln!(
            o,
            "  from {} until {} (UTC), starting from {start}",
            utc(s.from, true),
            utc(s.until, true)
        );
        let tick = self.replay.state.config().tick;
        let _ = writeln!(
            o,
            "  one host process ticking every {tick}; every run succeeds after its duration"
        );
        for d in &s.down {
            let _ = writeln!(
                o,
                "  down        {} .. {}  (no process; a new one starts at the end)",
                utc(d.from, true),
                utc(d.to, true)
            );
        }
        for p in &s.pauses {
            let _ = writeln!(
                o,
                "  pause       {} .. {}  {}",
                utc(p.window.from, true),
                utc(p.window.to, true),
                p.job
            );
        }
        for j in &s.jumps {
            let _ = writeln!(
                o,
                "  clock jump  {}  wall clock {}",
                utc(j.at, true),
                signed(j.by_ms)
            );
        }
        let procs: Vec<String> = self
            .replay
            .processes
            .iter()
            .map(|(p, at)| format!("{p} at {}", utc(*at, true)))
            .collect();
        if !procs.is_empty() {
            let _ = writeln!(o, "  processes   {}", procs.join(", "));
        }
        for job in &self.jobs() {
            o.push('\n');
            self.job_text(&mut o, job);
        }
        if !self.replay.notes.is_empty() {
            let _ = writeln!(o, "\nnotes:");
            for n in &self.replay.notes {
                let _ = writeln!(o, "  {n}");
            }
        }
        if let Some(at) = self.replay.stopped_early {
            let _ = writeln!(
                o,
                "\nstopped early at {}: over {MAX_EVENTS} events; shorten the span",
                utc(at, true)
            );
        }
        o
    }

    fn job_text(&self, o: &mut String, job: &JobReport) {
        let name = job.def.name.as_str();
        let _ = writeln!(
            o,
            "{name}: {}, missed = {}, runs take {}",
            job.def.schedule,
            snake(&job.def.missed),
            self.duration_text(name)
        );
        let zone = job.zone();
        let rows: Vec<(String, String, String, String)> = job
            .groups
            .iter()
            .map(|g| {
                let due = range(g.from, g.to, |t| utc(t, self.years));
                let local = zone.map_or(String::new(), |z| {
                    range(g.from, g.to, |t| local(t, z, self.years))
                });
                (due, local, g.count.to_string(), self.fate_text(job, g))
            })
            .collect();
        let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(9);
        let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
        let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0).max(5);
        if rows.is_empty() {
            let _ = writeln!(o, "  no due time settled in the span");
        } else if zone.is_some() {
            let _ = writeln!(
                o,
                "  {:<w0$}  {:<w1$}  {:>w2$}  what happened",
                "due (UTC)", "local", "count"
            );
        } else {
            let _ = writeln!(o, "  {:<w0$}  {:>w2$}  what happened", "due (UTC)", "count");
        }
        for (due, local, count, what) in &rows {
            if zone.is_some() {
                let pad = w1 - local.chars().count();
                let _ = writeln!(
                    o,
                    "  {due:<w0$}  {local}{}  {count:>w2$}  {what}",
                    " ".repeat(pad)
                );
            } else {
                let _ = writeln!(o, "  {due:<w0$}  {count:>w2$}  {what}");
            }
        }
        let _ = writeln!(o, "  summary: {}", summary(job));
        let mut end = Vec::new();
        if job.owed > 0 {
            end.push(format!("{} due times still owed", job.owed));
        }
        if let Some(r) = job.running {
            end.push(format!("{r} still running"));
        }
        if job.paused {
            end.push("paused".to_string());
        }
        if !end.is_empty() {
            let _ = writeln!(o, "  at --until: {}", end.join(", "));
        }
        for (at, text) in &job.notes {
            let _ = writeln!(o, "  ! {}  {text}", utc(*at, self.years));
        }
    }

    fn fate_text(&self, job: &JobReport, g: &Group) -> String {
        let runs = runs_text(&g.runs);
        let started = g
            .runs
            .first()
            .and_then(|r| job.started.get(r))
            .map(|t| utc(*t, self.years));
        match g.fate {
            Fate::Ran => format!("ran on time ({runs})"),
            Fate::CaughtUp(c) => {
                let at = started.map_or(String::new(), |t| format!(", started {t}"));
                format!("caught up ({}) by {runs}{at}", cause_name(c))
            }
            Fate::Skipped(c) => format!("skipped ({})", cause_name(c)),
            Fate::FailedOut => format!("failed out ({runs})"),
            Fate::Lost => format!("lost ({runs})"),
            Fate::ApprovalExpired => format!("approval expired ({runs})"),
        }
    }

    fn json(&self) -> Value {
        let s = self.scenario;
        let jobs: Vec<Value> = self
            .jobs()
            .iter()
            .map(|j| {
                let name = j.def.name.as_str();
                let causes = |m: BTreeMap<MissCause, u64>| {
                    m.into_iter()
                        .map(|(c, n)| (cause_name(c).to_string(), json!(n)))
                        .collect::<serde_json::Map<_, _>>()
                };
                json!({
                    "name": name,
                    "schedule": j.def.schedule.to_string(),
                    "zone": j.zone().map(|z| z.name().to_string()),
                    "missed": snake(&j.def.missed),
                    "run_duration": s.duration_of(name).to_string(),
                    "summary": {
                        "due": j.total(),
                        "ran_on_time": j.count(|f| f == Fate::Ran),
                        "caught_up": causes(j.by_cause(|f| matches!(f, Fate::CaughtUp(_)))),
                        "skipped": causes(j.by_cause(|f| matches!(f, Fate::Skipped(_)))),
                        "failed_out": j.count(|f| f == Fate::FailedOut),
                        "lost": j.count(|f| f == Fate::Lost),
                    },
                    "groups": j.groups.iter().map(|g| json!({
                        "from": g.from.to_string(),
                        "to": g.to.to_string(),
                        "count": g.count,
                        "fate": g.fate.name(),
                        "cause": g.fate.cause().map(cause_name),
                        "runs": g.runs.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "ledger": j.ledger.iter().map(|(at, e)| {
                        let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
                        if let Value::Object(m) = &mut v {
                            m.insert("at".to_string(), json!(at));
                        }
                        v
                    }).collect::<Vec<_>>(),
                    "history": j.notes.iter().map(|(at, text)| json!({
                        "at": at.to_string(),
                        "text": text,
                    })).collect::<Vec<_>>(),
                    "at_until": {
                        "owed": j.owed,
                        "running": j.running.map(|r| r.to_string()),
                        "paused": j.paused,
                    },
                })
            })
            .collect();
        json!({
            "file": self.file,
            "store": self.store,
            "from": s.from.to_string(),
            "until": s.until.to_string(),
            "tick": self.replay.state.config().tick.to_string(),
            "scenario": {
                "down": s.down.iter().map(|w| json!({
                    "from": w.from.to_string(), "to": w.to.to_string()
                })).collect::<Vec<_>>(),
                "pause": s.pauses.iter().map(|p| json!({
                    "job": p.job, "from": p.window.from.to_string(), "to": p.window.to.to_string()
                })).collect::<Vec<_>>(),
                "clock_jump": s.jumps.iter().map(|j| json!({
                    "at": j.at.to_string(), "by_ms": j.by_ms
                })).collect::<Vec<_>>(),
            },
            "processes": self.replay.processes.iter().map(|(p, at)| json!({
                "process": p.to_string(), "started": at.to_string()
            })).collect::<Vec<_>>(),
            "jobs": jobs,
            "notes": self.replay.notes,
            "stopped_early": self.replay.stopped_early.map(|t| t.to_string()),
        })
    }
}

/// The summary line: every fate with its causes.
fn summary(job: &JobReport) -> String {
    let with_causes = |n: u64, what: &str, m: BTreeMap<MissCause, u64>| {
        if m.is_empty() {
            format!("{n} {what}")
        } else {
            let parts: Vec<String> = m
                .iter()
                .map(|(c, k)| format!("{} {k}", cause_name(*c)))
                .collect();
            format!("{n} {what} ({})", parts.join(", "))
        }
    };
    let caught = job.by_cause(|f| matches!(f, Fate::CaughtUp(_)));
    let skipped = job.by_cause(|f| matches!(f, Fate::Skipped(_)));
    format!(
        "{} due: {} ran on time, {}, {}, {} failed out, {} lost",
        job.total(),
        job.count(|f| f == Fate::Ran),
        with_causes(
            job.count(|f| matches!(f, Fate::CaughtUp(_))),
            "caught up",
            caught
        ),
        with_causes(
            job.count(|f| matches!(f, Fate::Skipped(_))),
            "skipped",
            skipped
        ),
        job.count(|f| f == Fate::FailedOut),
        job.count(|f| f == Fate::Lost),
    )
}

/// `r5`, or `r5..r9` for a run of runs.
fn runs_text(runs: &[RunId]) -> String {
    match (runs.first(), runs.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => "-".to_string(),
    }
}

/// `A .. B`, or `A` when they are the same instant.
fn range(a: Timestamp, b: Timestamp, f: impl Fn(Timestamp) -> String) -> String {
    if a == b {
        f(a)
    } else {
        format!("{} .. {}", f(a), f(b))
    }
}

/// `2025-03-09 07:00` (seconds only when present); with `year` false, `03-09 07:00`.
fn utc(t: Timestamp, year: bool) -> String {
    let Some(c) = t.to_chrono() else {
        return t.to_string();
    };
    let date = if year { "%Y-%m-%d" } else { "%m-%d" };
    let time = if t.as_millis().rem_euclid(60_000) == 0 {
        "%H:%M"
    } else {
        "%H:%M:%S"
    };
    c.format(&format!("{date} {time}")).to_string()
}

/// The local time in `zone`, with its abbreviation: `03-09 03:00 EDT`.
fn local(t: Timestamp, zone: Tz, year: bool) -> String {
    let Some(c) = t.to_chrono() else {
        return t.to_string();
    };
    let date = if year { "%Y-%m-%d" } else { "%m-%d" };
    let time = if t.as_millis().rem_euclid(60_000) == 0 {
        "%H:%M %Z"
    } else {
        "%H:%M:%S %Z"
    };
    c.with_timezone(&zone)
        .format(&format!("{date} {time}"))
        .to_string()
}

/// `+2h`, `-30m`.
fn signed(ms: i64) -> String {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms < 0 {
        format!("-{d}")
    } else {
        format!("+{d}")
    }
}

/// A serde enum's snake_case name (`required`, `catch_up_once`).
fn snake<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}
