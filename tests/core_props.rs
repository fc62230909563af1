//! Properties of the core over random histories (proptest): fault-free runs happen exactly
//! once and on time; with pauses, stalls, failures and overlaps the ledger still accounts
//! every due time exactly once; independent jobs do not see each other's interleaving; the
//! same events give the same bytes; every reachable state survives a serde round trip.
//!
//! Due times are computed by an oracle that does not use the core's schedule code: it steps
//! through every second of the history and tests each against the schedule's definition.

use duetime::{Action, Notice, Start};
use std::collections::BTreeMap;

use duetime::{
    Actor, Config, Duration, Effect, Entry, Event, Fence, Held, JobDef, JobName, LedgerEntry,
    MissedRule, Now, Outcome, Overlap, ProcessId, RunId, Schedule, State, Timestamp, Trigger,
};
use proptest::prelude::*;

const TICK_MS: i64 = 30_000;

/// Cases per property; `CORE_PROPS_SCALE=20` runs twenty times as many (for a long hunt).
fn cases(n: u32) -> u32 {
    let scale = std::env::var("CORE_PROPS_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1);
    n.saturating_mul(scale.max(1))
}
const P1: ProcessId = ProcessId(1);

/// 2025-06-02T09:00:00Z, a whole minute.
fn t0() -> Timestamp {
    Timestamp::from_secs(1_748_854_800)
}

fn ms(t: Timestamp, d: i64) -> Timestamp {
    Timestamp::from_millis(t.as_millis() + d)
}

/// A schedule the oracle understands.
#[derive(Debug, Clone, Copy)]
enum Sched {
    /// `every period + offset`, both in whole seconds.
    Every { period_s: i64, offset_s: i64 },
    /// `* * * * *`.
    Minutely,
}

impl Sched {
    fn schedule(self) -> Schedule {
        match self {
            Sched::Every { period_s, offset_s } => Schedule::every(
                Duration::from_secs(period_s as u64),
                Duration::from_secs(offset_s as u64),
            )
            .unwrap(),
            Sched::Minutely => Schedule::cron("* * * * *", None).unwrap(),
        }
    }

    fn period_ms(self) -> i64 {
        match self {
            Sched::Every { period_s, .. } => period_s * 1000,
            Sched::Minutely => 60_000,
        }
    }

    /// The oracle: every due time `d` with `after < d <= until`, by testing each whole
    /// second against the definition (all due times here fall on whole seconds).
    fn due_times(self, after: Timestamp, until: Timestamp) -> Vec<Timestamp> {
        let first = after.as_millis().div_euclid(1000) + 1;
        let last = until.as_millis().div_euclid(1000);
        (first..=last)
            .filter(|s| match self {
                Sched::Every { period_s, offset_s } => (s - offset_s).rem_euclid(period_s) == 0,
                Sched::Minutely => s.rem_euclid(60) == 0,
            })
            .map(Timestamp::from_secs)
            .filter(|t| *t > after && *t <= until)
            .collect()
    }
}

fn sched() -> impl Strategy<Value = Sched> {
    prop_oneof![
        4 => (30i64..=900).prop_flat_map(|p| (Just(p), 0..p)).prop_map(|(period_s, offset_s)| {
            Sched::Every { period_s, offset_s }
        }),
        1 => Just(Sched::Minutely),
    ]
}

fn name(i: usize) -> JobName {
    JobName::new(&format!("job_{i}")).unwrap()
}

/// A host with one process: it ticks on a grid, carries out runs for the durations it is
/// told, reports their results, and keeps every effect.
struct Host {
    state: State,
    /// Every event sent, for replays.
    log: Vec<(Now, Event)>,
    effects: Vec<(Timestamp, Effect)>,
    /// Runs each process is carrying out.
    held: BTreeMap<ProcessId, BTreeMap<RunId, Fence>>,
    /// Results to report: `(when, run) -> (process, fence, job, outcome)`.
    results: BTreeMap<(Timestamp, RunId), (ProcessId, Fence, JobName, Outcome)>,
    /// Serialize and reload the state after every step (property e).
    round_trip: bool,
}

impl Host {
    fn new(round_trip: bool) -> Host {
        Host {
            state: State::new(Config::default()),
            log: Vec::new(),
            effects: Vec::new(),
            held: BTreeMap::new(),
            results: BTreeMap::new(),
            round_trip,
        }
    }

    fn send(&mut self, at: Timestamp, event: Event) -> Vec<Effect> {
        let now = Now::at(at);
        self.log.push((now, event.clone()));
        let mut out = Vec::new();
        self.state.step(now, event, &mut out);
        if self.round_trip {
            let json = serde_json::to_string(&self.state).unwrap();
            let copy: State = serde_json::from_str(&json).unwrap();
            assert_eq!(copy, self.state, "state round-trips through serde");
            assert_eq!(
                serde_json::to_string(&copy).unwrap(),
                json,
                "byte-identical"
            );
            self.state = copy;
        }
        for e in &out {
            match e {
                Effect::Do(Action::Start(Start {
                    run,
                    fence,
                    process,
                    ..
                })) => {
                    self.held.entry(*process).or_default().insert(*run, *fence);
                }
                Effect::Do(Action::Cancel { run, process, .. }) => {
                    if let Some(h) = self.held.get_mut(process) {
                        h.remove(run);
                    }
                }
                _ => {}
            }
            self.effects.push((at, e.clone()));
        }
        out
    }

    fn tick(&mut self, at: Timestamp, process: ProcessId) -> Vec<Effect> {
        let held = self
            .held
            .get(&process)
            .map(|h| h.iter().map(|(&run, &fence)| Held { run, fence }).collect())
            .unwrap_or_default();
        self.send(at, Event::Tick { process, held })
    }

    /// The process stops: what it was running never reports.
    fn crash(&mut self, process: ProcessId) {
        self.held.remove(&process);
        self.results.retain(|_, (p, ..)| *p != process);
    }

    fn next_result_at(&self) -> Option<Timestamp> {
        self.results.keys().next().map(|(t, _)| *t)
    }

    fn report_next(&mut self) -> Vec<Effect> {
        let ((at, run), (process, fence, job, outcome)) = self.results.pop_first().unwrap();
        if let Some(h) = self.held.get_mut(&process) {
            h.remove(&run);
        }
        self.send(
            at,
            Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            },
        )
    }

    fn ledger(&self, job: &str) -> Vec<LedgerEntry> {
        self.effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Journal(r) if r.job.as_str() == job => match &r.entry {
                    Entry::Ledger(l) => Some(*l),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn starts(&self, job: &str) -> Vec<(Timestamp, Trigger, Option<duetime::Covers>)> {
        self.effects
            .iter()
            .filter_map(|(at, e)| match e {
                Effect::Do(Action::Start(Start {
                    job: j,
                    trigger,
                    covers,
                    ..
                })) if j.as_str() == job => Some((*at, *trigger, *covers)),
                _ => None,
            })
            .collect()
    }

    fn effects_json(&self) -> String {
        serde_json::to_string(&self.effects).unwrap()
    }
}

fn upsert(def: JobDef) -> Event {
    Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("prop"),
    }
}

/// Checks that `entries` account every due time in `dues` exactly once: ranges in order,
/// not overlapping, each starting and ending on a due time and counting exactly the due
/// times inside it.
fn assert_exact(job: &str, dues: &[Timestamp], entries: &[LedgerEntry]) {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| e.from);
    let mut covered = 0u64;
    let mut last_to = None;
    for e in &sorted {
        assert!(e.from <= e.to, "{job}: entry {e:?} runs backwards");
        if let Some(t) = last_to {
            assert!(e.from > t, "{job}: entry {e:?} overlaps one ending at {t}");
        }
        last_to = Some(e.to);
        assert!(
            dues.binary_search(&e.from).is_ok() && dues.binary_search(&e.to).is_ok(),
            "{job}: entry {e:?} does not start and end on due times of the schedule"
        );
        let lo = dues.partition_point(|d| *d < e.from);
        let hi = dues.partition_point(|d| *d <= e.to);
        assert_eq!(
            (hi - lo) as u64,
            e.count,
            "{job}: entry {e:?} has the wrong count"
        );
        covered += e.count;
    }
    assert_eq!(
        covered,
        dues.len() as u64,
        "{job}: {} due times, {} accounted",
        dues.len(),
        covered
    );
}

// ---------------------------------------------------------------------------------------
// (a) fault-free: every due time runs exactly once, on time, and the ledger says so.

#[derive(Debug, Clone)]
struct CleanJob {
    sched: Sched,
    /// Run durations as fractions (per mille) of the longest that cannot overlap.
    durations: Vec<u16>,
}

fn clean_job() -> impl Strategy<Value = CleanJob> {
    (sched(), prop::collection::vec(0u16..=1000, 1..8))
        .prop_map(|(sched, durations)| CleanJob { sched, durations })
}

fn run_clean(jobs: &[CleanJob], ticks: i64) -> (Host, Timestamp) {
    let mut host = Host::new(false);
    let start = t0();
    for (i, j) in jobs.iter().enumerate() {
        let mut def = JobDef::new(name(i), j.sched.schedule());
        def.timeout = Duration::from_hours(1);
        def.stall_after = Duration::from_hours(1);
        host.send(start, upsert(def));
    }
    host.send(start, Event::ProcessStarted { process: P1 });
    let mut runs_of = vec![0usize; jobs.len()];
    let end = ms(start, ticks * TICK_MS);
    let mut next_tick = ms(start, TICK_MS);
    let mut schedule_results = |host: &mut Host, effects: &[Effect], at: Timestamp| {
        for e in effects {
            if let Effect::Do(Action::Start(Start {
                run, fence, job, ..
            })) = e
            {
                let i: usize = job.as_str()[4..].parse().unwrap();
                let j = &jobs[i];
                let fraction = j.durations[runs_of[i] % j.durations.len()];
                runs_of[i] += 1;
                // Started within a tick of its due time, it must end before the tick that
                // sees the next due time: at most a period less a tick.
                let longest = j.sched.period_ms() - TICK_MS;
                let d = longest * i64::from(fraction) / 1000;
                host.results
                    .insert((ms(at, d), *run), (P1, *fence, job.clone(), Outcome::Ok));
            }
        }
    };
    let first: Vec<Effect> = host.effects.iter().map(|(_, e)| e.clone()).collect();
    schedule_results(&mut host, &first, start);
    loop {
        // Results at a tick's instant are reported before the tick.
        match host.next_result_at() {
            Some(r) if r <= next_tick || next_tick > end => {
                let eff = host.report_next();
                schedule_results(&mut host, &eff, r);
            }
            _ if next_tick <= end => {
                let eff = host.tick(next_tick, P1);
                schedule_results(&mut host, &eff, next_tick);
                next_tick = ms(next_tick, TICK_MS);
            }
            _ => break,
        }
    }
    (host, end)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    #[test]
    fn fault_free_every_due_time_runs_exactly_once_on_time_and_is_ledgered_once(
        jobs in prop::collection::vec(clean_job(), 1..5),
        ticks in 20i64..400,
    ) {
        let (host, end) = run_clean(&jobs, ticks);
        for (i, j) in jobs.iter().enumerate() {
            let job = name(i);
            let dues = j.sched.due_times(t0(), end);
            let starts = host.starts(job.as_str());
            let mut started = Vec::new();
            for (at, trigger, covers) in starts {
                prop_assert_eq!(trigger, Trigger::Schedule, "{} started late or again", job);
                let c = covers.unwrap();
                prop_assert_eq!((c.from, c.count), (c.to, 1));
                let lag = at.as_millis() - c.from.as_millis();
                prop_assert!((0..TICK_MS).contains(&lag), "{} started {}ms after {}", job, lag, c.from);
                started.push(c.from);
            }
            prop_assert_eq!(&started, &dues, "{}: started due times", job);
            let ledger = host.ledger(job.as_str());
            for e in &ledger {
                prop_assert!(
                    matches!(e.kind, duetime::LedgerKind::Ran { skipped: false, .. }) && e.count == 1,
                    "{}: {:?}", job, e
                );
            }
            assert_exact(job.as_str(), &dues, &ledger);
        }
        let noise: Vec<_> = host
            .effects
            .iter()
            .filter(|(_, e)| matches!(e, Effect::Notice(Notice::Alert(_)) | Effect::Do(Action::Cancel { .. })))
            .collect();
        prop_assert!(noise.is_empty(), "alerts or cancels in a fault-free history: {:?}", noise);
    }
}

// ---------------------------------------------------------------------------------------
// (b) with pauses, resumes, manual runs, stalls, failures and overlaps, every due time
// between registration and the end is in exactly one ledger entry.

#[derive(Debug, Clone)]
struct RoughJob {
    sched: Sched,
    missed: MissedRule,
    /// 0: the rule's default, 1: skip, 2: buffer_one, 3: buffer_all (not for `required`).
    overlap: u8,
    window_min: Option<u64>,
    retries: u32,
    safe: bool,
    /// `(duration per mille of two periods, outcome: 0-6 ok, 7 skipped, 8-9 failed)`.
    runs: Vec<(u16, u8)>,
}

fn rough_job() -> impl Strategy<Value = RoughJob> {
    (
        sched(),
        prop_oneof![
            Just(MissedRule::Skip),
            Just(MissedRule::CatchUpOnce),
            Just(MissedRule::Required)
        ],
        0u8..4,
        prop::option::of(1u64..120),
        0u32..3,
        any::<bool>(),
        prop::collection::vec((0u16..=1000, 0u8..10), 1..10),
    )
        .prop_map(
            |(sched, missed, overlap, window_min, retries, safe, runs)| RoughJob {
                sched,
                missed,
                overlap,
                window_min,
                retries,
                safe,
                runs,
            },
        )
}

impl RoughJob {
    fn def(&self, i: usize) -> JobDef {
        let mut def = JobDef::new(name(i), self.sched.schedule());
        def.missed = self.missed;
        def.overlap = match (self.overlap, self.missed) {
            (_, MissedRule::Required) => None,
            (1, _) => Some(Overlap::Skip),
            (2, _) => Some(Overlap::BufferOne),
            (3, _) => Some(Overlap::BufferAll),
            _ => None,
        };
        def.catch_up_window = self.window_min.map(Duration::from_mins);
        def.retries = self.retries;
        def.backoff.initial = Duration::from_secs(20);
        def.safe_to_repeat = self.safe;
        def
    }
}

#[derive(Debug, Clone, Copy)]
enum Cmd {
    Pause,
    Resume,
    RunNow,
}

/// A stretch of the history where the main process is silent.
#[derive(Debug, Clone, Copy)]
enum Stall {
    /// A GC pause or a laptop asleep: it comes back with its runs and stale leases.
    Pause,
    /// As `Pause`, while a second process ticks and takes lapsed leases over.
    TakenOver,
    /// It crashes (its runs never report) and a new incarnation starts at the end.
    Crash,
}

#[derive(Debug, Clone)]
struct Rough {
    jobs: Vec<RoughJob>,
    ticks: i64,
    /// `(at tick, job, command)`; sent a few seconds after that tick.
    commands: Vec<(i64, usize, Cmd)>,
    /// `(from tick, length, kind)`.
    stalls: Vec<(i64, i64, Stall)>,
}

fn rough() -> impl Strategy<Value = Rough> {
    (prop::collection::vec(rough_job(), 1..4), 40i64..300).prop_flat_map(|(jobs, ticks)| {
        let n = jobs.len();
        let cmd = prop_oneof![Just(Cmd::Pause), Just(Cmd::Resume), Just(Cmd::RunNow)];
        let stall = prop_oneof![
            Just(Stall::Pause),
            Just(Stall::TakenOver),
            Just(Stall::Crash)
        ];
        (
            Just(jobs),
            Just(ticks),
            prop::collection::vec((0..ticks, 0..n, cmd), 0..12),
            prop::collection::vec((1..ticks, 1i64..200, stall), 0..3),
        )
            .prop_map(|(jobs, ticks, commands, stalls)| Rough {
                jobs,
                ticks,
                commands,
                stalls,
            })
    })
}

const P2: ProcessId = ProcessId(2);

fn run_rough(r: &Rough, round_trip: bool) -> (Host, Timestamp) {
    let mut host = Host::new(round_trip);
    let start = t0();
    for (i, j) in r.jobs.iter().enumerate() {
        host.send(start, upsert(j.def(i)));
    }
    let mut runs_of = vec![0usize; r.jobs.len()];
    let schedule_results = |host: &mut Host, runs_of: &mut Vec<usize>, new: &[Effect], at| {
        for e in new {
            if let Effect::Do(Action::Start(Start {
                run,
                fence,
                job,
                process,
                ..
            })) = e
            {
                let i: usize = job.as_str()[4..].parse().unwrap();
                let j = &r.jobs[i];
                let (fraction, outcome) = j.runs[runs_of[i] % j.runs.len()];
                runs_of[i] += 1;
                let d = 2 * j.sched.period_ms() * i64::from(fraction) / 1000;
                let outcome = match outcome {
                    0..=6 => Outcome::Ok,
                    7 => Outcome::Skipped,
                    _ => Outcome::failed("exit 1"),
                };
                host.results.insert(
                    (ms(at, d.max(1)), *run),
                    (*process, *fence, job.clone(), outcome),
                );
            }
        }
    };
    let mut main = P1;
    let new = host.send(start, Event::ProcessStarted { process: main });
    schedule_results(&mut host, &mut runs_of, &new, start);
    let end = ms(start, r.ticks * TICK_MS);
    let stall_at = |k: i64| {
        r.stalls
            .iter()
            .find(|&&(from, len, _)| k >= from && k < from + len)
            .map(|&(from, len, kind)| (from, len, kind))
    };
    let mut commands: Vec<(Timestamp, usize, Cmd)> = r
        .commands
        .iter()
        .map(|&(k, j, c)| (ms(start, k * TICK_MS + 7_000), j, c))
        .collect();
    commands.sort_by_key(|c| c.0);
    let mut commands = commands.into_iter().peekable();
    let mut k = 1;
    let mut incarnation = 10;
    loop {
        let next_tick = (k <= r.ticks).then(|| ms(start, k * TICK_MS));
        let next_result = host.next_result_at().filter(|t| *t <= end);
        let next_cmd = commands.peek().map(|c| c.0);
        let first = [next_result, next_cmd, next_tick]
            .into_iter()
            .flatten()
            .min();
        let Some(at) = first else { break };
        let new = if next_result == Some(at) {
            host.report_next()
        } else if next_cmd == Some(at) {
            let (at, j, c) = commands.next().unwrap();
            let job = name(j);
            let actor = Actor::new("prop");
            let event = match c {
                Cmd::Pause => Event::Pause {
                    job,
                    actor,
                    note: String::new(),
                },
                Cmd::Resume => Event::Resume { job, actor },
                Cmd::RunNow => Event::RunNow { job, actor },
            };
            host.send(at, event)
        } else {
            let tick = k;
            k += 1;
            match stall_at(tick) {
                None if stall_at(tick - 1)
                    .is_some_and(|(.., kind)| matches!(kind, Stall::Crash)) =>
                {
                    // The crashed process's successor starts.
                    incarnation += 1;
                    main = ProcessId(incarnation);
                    host.send(at, Event::ProcessStarted { process: main })
                }
                None => host.tick(at, main),
                Some((from, _, Stall::Crash)) => {
                    if from == tick {
                        host.crash(main);
                    }
                    continue;
                }
                Some((from, _, Stall::TakenOver)) => {
                    if from == tick {
                        host.send(at, Event::ProcessStarted { process: P2 })
                    } else {
                        host.tick(at, P2)
                    }
                }
                Some((_, _, Stall::Pause)) => continue,
            }
        };
        schedule_results(&mut host, &mut runs_of, &new, at);
    }
    // The end: removing each job closes its ledger, so every due time up to now is in it.
    for i in 0..r.jobs.len() {
        host.send(
            end,
            Event::Remove {
                job: name(i),
                actor: Actor::new("prop"),
            },
        );
    }
    (host, end)
}

fn check_rough(r: &Rough, host: &Host, end: Timestamp) -> Result<(), TestCaseError> {
    for (i, j) in r.jobs.iter().enumerate() {
        let job = name(i);
        let dues = j.sched.due_times(t0(), end);
        assert_exact(job.as_str(), &dues, &host.ledger(job.as_str()));
        // S2: a job not safe to repeat starts a due time again only after the run that
        // covered it before was settled as failed or timed out (a retry, or a pause that
        // handed the failure to the missed rule); never after a loss, never beside a run.
        if !j.safe {
            let mut settled: BTreeMap<RunId, bool> = BTreeMap::new();
            let mut covered: Vec<(Timestamp, Timestamp, RunId)> = Vec::new();
            for (at, e) in &host.effects {
                match e {
                    Effect::Journal(rec) if rec.job == job => {
                        if let Entry::History(duetime::History::Settled { run, outcome, .. }) =
                            &rec.entry
                        {
                            settled.insert(*run, !outcome.is_success());
                        }
                    }
                    Effect::Do(Action::Start(Start {
                        job: jn,
                        run,
                        trigger,
                        covers: Some(c),
                        ..
                    })) if *jn == job => {
                        prop_assert!(*trigger != Trigger::Repeat, "{} repeated at {}", job, at);
                        for &(from, to, earlier) in &covered {
                            if from <= c.to && c.from <= to {
                                prop_assert_eq!(
                                    settled.get(&earlier),
                                    Some(&true),
                                    "{} started {:?} at {} over {} that did not fail",
                                    job,
                                    c,
                                    at,
                                    earlier
                                );
                            }
                        }
                        covered.push((c.from, c.to, *run));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    #[test]
    fn with_pauses_stalls_failures_and_overlaps_every_due_time_is_ledgered_exactly_once(
        r in rough()
    ) {
        let (host, end) = run_rough(&r, false);
        check_rough(&r, &host, end)?;
    }
}

// ---------------------------------------------------------------------------------------
// (c) two independent jobs: the interleaving of their events does not change either job's
// journal (run ids and fences come from shared counters, so they are renumbered per job).

#[derive(Debug, Clone, Copy)]
enum Act {
    Pause,
    Resume,
    RunNow,
    /// Report the job's open run (if any) with outcome 0 ok, 1 skipped, 2 failed.
    Finish(u8),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        1 => Just(Act::Pause),
        1 => Just(Act::Resume),
        1 => Just(Act::RunNow),
        4 => (0u8..3).prop_map(Act::Finish),
    ]
}

/// Per tick, per job: the actions sent after that tick, each at its own offset (ms).
type Script = Vec<Vec<(u32, Act)>>;

fn script(ticks: usize) -> impl Strategy<Value = Script> {
    prop::collection::vec(
        prop::collection::vec((0u32..TICK_MS as u32, act()), 0..3),
        ticks,
    )
}

#[derive(Debug, Clone)]
struct Pair {
    jobs: [RoughJob; 2],
    scripts: [Script; 2],
    /// How to merge each tick's two action lists: `true` takes from job 1 first.
    merges: Vec<Vec<bool>>,
}

fn pair() -> impl Strategy<Value = Pair> {
    let ticks = 60usize;
    (
        rough_job(),
        rough_job(),
        script(ticks),
        script(ticks),
        prop::collection::vec(prop::collection::vec(any::<bool>(), 6), ticks + 1),
    )
        .prop_map(|(a, b, sa, sb, merges)| Pair {
            jobs: [a, b],
            scripts: [sa, sb],
            merges,
        })
}

/// Runs the pair with each tick's actions merged by `merge(tick)`; returns each job's
/// effects, renumbered.
fn run_pair(p: &Pair, interleave: bool) -> [Vec<serde_json::Value>; 2] {
    let mut host = Host::new(false);
    let start = t0();
    // Definitions first, in an order the merge chooses too.
    let order: [usize; 2] = if interleave && p.merges[0][0] {
        [1, 0]
    } else {
        [0, 1]
    };
    for i in order {
        host.send(start, upsert(p.jobs[i].def(i)));
    }
    host.send(start, Event::ProcessStarted { process: P1 });
    // The job's open run as its Start effects said, for `Finish`.
    let open = |host: &Host, job: &str| -> Option<(RunId, Fence)> {
        let view = host.state.job(job, start)?;
        let run = view.running?;
        let fence = host.effects.iter().rev().find_map(|(_, e)| match e {
            Effect::Do(Action::Start(Start { run: r, fence, .. })) if *r == run => Some(*fence),
            _ => None,
        })?;
        Some((run, fence))
    };
    for k in 0..p.scripts[0].len() {
        let tick_at = ms(start, (k as i64 + 1) * TICK_MS);
        host.tick(tick_at, P1);
        let (a, b) = (&p.scripts[0][k], &p.scripts[1][k]);
        let mut merged = Vec::new();
        let (mut ia, mut ib) = (0, 0);
        let mut choice = p.merges[k + 1].iter().cycle();
        while ia < a.len() || ib < b.len() {
            let take_b = if ia == a.len() {
                true
            } else if ib == b.len() {
                false
            } else {
                interleave && *choice.next().unwrap()
            };
            if take_b {
                merged.push((1usize, b[ib]));
                ib += 1;
            } else {
                merged.push((0usize, a[ia]));
                ia += 1;
            }
        }
        for (i, (offset, act)) in merged {
            let at = ms(tick_at, i64::from(offset));
            let job = name(i);
            let actor = Actor::new("prop");
            let event = match act {
                Act::Pause => Event::Pause {
                    job,
                    actor,
                    note: String::new(),
                },
                Act::Resume => Event::Resume { job, actor },
                Act::RunNow => Event::RunNow { job, actor },
                Act::Finish(o) => {
                    let Some((run, fence)) = open(&host, job.as_str()) else {
                        continue;
                    };
                    host.held.entry(P1).or_default().remove(&run);
                    Event::RunFinished {
                        process: P1,
                        job,
                        run,
                        fence,
                        outcome: match o {
                            0 => Outcome::Ok,
                            1 => Outcome::Skipped,
                            _ => Outcome::failed("exit 1"),
                        },
                    }
                }
            };
            host.send(at, event);
        }
    }
    [0, 1].map(|i| journal_of(&host, name(i).as_str()))
}

/// The effects about `job`, as JSON, with run ids and fences renumbered in order of first
/// appearance.
fn journal_of(host: &Host, job: &str) -> Vec<serde_json::Value> {
    let mut runs = BTreeMap::new();
    let mut fences = BTreeMap::new();
    let mut out = Vec::new();
    for (at, e) in &host.effects {
        let about = match e {
            Effect::Do(Action::Start(Start { job: j, .. })) => j.as_str() == job,
            Effect::Do(Action::Cancel { job: j, .. }) => {
                j.as_ref().is_some_and(|j| j.as_str() == job)
            }
            Effect::Journal(r) => r.job.as_str() == job,
            Effect::Notice(Notice::Alert(a)) => a.job.as_str() == job,
            Effect::Reply { job: j, .. } => j.as_ref().is_some_and(|j| j.as_str() == job),
            Effect::Handover(r) => r.def().name.as_str() == job,
            // About processes, not jobs.
            Effect::Notice(Notice::ClockGap { .. })
            | Effect::Notice(Notice::Owner { .. })
            | Effect::Notice(Notice::OwnerReleased { .. })
            | Effect::Notice(Notice::Drained { .. }) => false,
        };
        if about {
            let mut v = serde_json::to_value(e).unwrap();
            renumber(&mut v, &mut runs, &mut fences);
            out.push(serde_json::json!({ "at": at, "effect": v }));
        }
    }
    out
}

fn renumber(
    v: &mut serde_json::Value,
    runs: &mut BTreeMap<u64, u64>,
    fences: &mut BTreeMap<u64, u64>,
) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                let table = match k.as_str() {
                    "run" | "running" => Some(&mut *runs),
                    "fence" => Some(&mut *fences),
                    _ => None,
                };
                match (table, val.as_u64()) {
                    (Some(t), Some(n)) => {
                        let next = t.len() as u64 + 1;
                        *val = (*t.entry(n).or_insert(next)).into();
                    }
                    _ => renumber(val, runs, fences),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                renumber(item, runs, fences);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    #[test]
    fn the_interleaving_of_two_independent_jobs_does_not_change_either_journal(p in pair()) {
        let apart = run_pair(&p, false);
        let mixed = run_pair(&p, true);
        for i in 0..2 {
            prop_assert_eq!(apart[i].len(), mixed[i].len(), "{} journal lengths", name(i));
            for (x, y) in apart[i].iter().zip(&mixed[i]) {
                prop_assert_eq!(x, y, "{}", name(i));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// (d) determinism and (e) serde round trips of every reachable state.

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(32), ..ProptestConfig::default() })]

    #[test]
    fn the_same_events_give_byte_identical_effects(r in rough()) {
        let (first, _) = run_rough(&r, false);
        let mut again = State::new(Config::default());
        let mut effects = Vec::new();
        for (now, event) in first.log.iter().cloned() {
            let mut out = Vec::new();
            again.step(now, event, &mut out);
            effects.extend(out.into_iter().map(|e| (now.wall, e)));
        }
        prop_assert!(serde_json::to_string(&effects).unwrap() == first.effects_json());
        prop_assert!(serde_json::to_string(&again).unwrap() == serde_json::to_string(&first.state).unwrap());
    }

    #[test]
    fn every_reachable_state_round_trips_through_serde_exactly(r in rough()) {
        // The host reloads the state from its JSON after every step and carries on from
        // the copy; the history must still be exact.
        let (host, end) = run_rough(&r, true);
        check_rough(&r, &host, end)?;
    }
}
