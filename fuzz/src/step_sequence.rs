//! The `step_sequence` target: an arbitrary set of jobs (valid and invalid definitions) and an
//! arbitrary sequence of events from several processes whose wall and monotonic clocks move
//! independently (backwards, by huge jumps, to the ends of time). After every step: no panic,
//! `check_invariants()` holds, the state round-trips through serde_json to an equal state and
//! byte-identical JSON, and the reloaded state answers the same event with the same effects
//! and the same next state (a host loads the state for every transaction).

use arbitrary::{Arbitrary, Unstructured};
use duetime::{Action, Start};
use duetime::{
    Actor, Backoff, Config, Duration, Effect, Event, Fence, Held, JobDef, JobName, MissedRule, Now,
    Outcome, Overlap, ProcessId, RunId, Schedule, State, Timestamp,
};

use crate::cron_gen::CronGen;
use duetime::MAX_GRACE;

/// Bounds on one input's work, so executions stay fast.
pub const MAX_JOBS: usize = 8;
pub const MAX_STEPS: usize = 48;
const MAX_HELD: usize = 6;
/// How many `Start` effects are remembered for later events to refer to.
const MAX_STARTS: usize = 32;
const PROCESSES: u8 = 3;

#[derive(Arbitrary, Debug, Clone)]
pub struct StepInput {
    pub config: ConfigGen,
    pub start: InstantGen,
    pub jobs: Vec<DefGen>,
    pub steps: Vec<StepGen>,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum ConfigGen {
    Default,
    Tick(DurGen),
    Custom {
        tick: DurGen,
        lease_ttl: DurGen,
        grace: DurGen,
        cancel_grace: DurGen,
        manual_per_hour: u8,
        clock_jump: DurGen,
        single_owner: bool,
        max_runs_per_process: Option<u8>,
    },
}

impl ConfigGen {
    /// A config that a stored state may carry (`Config::check`): a tick of 1 s to 12 h, a
    /// grace of at most a day. A tick walks the due times within the grace one by one, so a
    /// grace of decades is refused on load rather than fuzzed.
    pub fn build(&self) -> Config {
        let span = |d: &DurGen| d.get().as_millis() % (MAX_GRACE.as_millis() + 1);
        let tick =
            |d: &DurGen| Duration::from_millis((span(d) / 2).max(duetime::MIN_TICK.as_millis()));
        match self {
            ConfigGen::Default => Config::default(),
            ConfigGen::Tick(t) => Config::with_tick(tick(t)),
            ConfigGen::Custom {
                tick: t,
                lease_ttl,
                grace,
                cancel_grace,
                manual_per_hour,
                clock_jump,
                single_owner,
                max_runs_per_process,
            } => Config {
                tick: tick(t),
                lease_ttl: lease_ttl.get(),
                grace: Duration::from_millis(span(grace)),
                cancel_grace: cancel_grace.get(),
                manual_per_hour: u32::from(*manual_per_hour % 24),
                clock_jump: clock_jump.get(),
                coordination: if *single_owner {
                    duetime::Coordination::SingleOwner
                } else {
                    duetime::Coordination::Shared
                },
                max_runs_per_process: max_runs_per_process.map(|n| u32::from(n).max(1)),
            },
        }
    }
}

/// A span, biased to the sizes that matter: zero, a millisecond, seconds to years, the max.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum DurGen {
    Zero,
    Millis(u16),
    Secs(u16),
    Mins(u16),
    Hours(u16),
    Days(u16),
    Max,
    Raw(u64),
}

impl DurGen {
    pub fn get(self) -> Duration {
        match self {
            DurGen::Zero => Duration::ZERO,
            DurGen::Millis(n) => Duration::from_millis(u64::from(n)),
            DurGen::Secs(n) => Duration::from_secs(u64::from(n)),
            DurGen::Mins(n) => Duration::from_mins(u64::from(n)),
            DurGen::Hours(n) => Duration::from_hours(u64::from(n)),
            DurGen::Days(n) => Duration::from_days(u64::from(n)),
            DurGen::Max => Duration::MAX,
            DurGen::Raw(n) => Duration::from_millis(n),
        }
    }
}

/// Instants at the edges of the range and of the calendar, and ordinary ones.
const EXTREMES: [i64; 14] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MIN + 1000,
    i64::MAX,
    i64::MAX - 1,
    i64::MAX - 1000,
    -1,
    0,
    1,
    -62_135_596_800_000,         // 0001-01-01T00:00:00Z
    253_402_300_799_999,         // 9999-12-31T23:59:59.999Z
    253_402_300_800_000,         // 10000-01-01
    1_741_503_600_000 - 60_000,  // a minute before New York springs forward, 2025
    1_762_063_200_000 - 120_000, // two minutes before New York falls back, 2025
];

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum InstantGen {
    /// 2025 plus up to ~50 days.
    Recent(u32),
    Extreme(u8),
    Raw(i64),
}

impl InstantGen {
    pub fn get(self) -> Timestamp {
        Timestamp::from_millis(match self {
            InstantGen::Recent(ms) => 1_735_689_600_000 + i64::from(ms),
            InstantGen::Extreme(k) => EXTREMES[usize::from(k) % EXTREMES.len()],
            InstantGen::Raw(t) => t,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Definitions

const GOOD_NAMES: [&str; 6] = [
    "a",
    "backup",
    "job_1",
    "z9",
    "report_daily",
    "abcdefghijklmnopqrstuvwxyz0123456789_abcdefghijklmnopqrstuvwxyz0",
];
const BAD_NAMES: [&str; 8] = [
    "",
    "A",
    "9a",
    "a-b",
    "_x",
    "é",
    "a b",
    "abcdefghijklmnopqrstuvwxyz0123456789_abcdefghijklmnopqrstuvwxyz01",
];

#[derive(Arbitrary, Debug, Clone)]
pub enum NameGen {
    Good(u8),
    Bad(u8),
    Text(String),
}

impl NameGen {
    /// The name as text: what an event names a job with.
    pub fn text(&self) -> String {
        match self {
            NameGen::Good(k) => GOOD_NAMES[usize::from(*k) % GOOD_NAMES.len()].to_string(),
            NameGen::Bad(k) => BAD_NAMES[usize::from(*k) % BAD_NAMES.len()].to_string(),
            NameGen::Text(s) => s.chars().take(80).collect(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum TextGen {
    Empty,
    Short,
    /// Exactly at the limit of 200 characters, in multi-byte characters.
    AtLimit,
    /// One over the limit.
    OverLimit,
    Huge,
    Text(String),
}

impl TextGen {
    pub fn get(&self) -> String {
        match self {
            TextGen::Empty => String::new(),
            TextGen::Short => "nightly report".to_string(),
            TextGen::AtLimit => "é".repeat(200),
            TextGen::OverLimit => "x".repeat(201),
            TextGen::Huge => "ü".repeat(5000),
            TextGen::Text(s) => s.chars().take(300).collect(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum ScheduleGen {
    Cron(CronGen),
    /// Cron-like text that may not parse (a fixed schedule is used instead).
    CronText(String, u8),
    Every {
        period: DurGen,
        offset: DurGen,
    },
    At(InstantGen),
}

impl ScheduleGen {
    pub fn build(&self) -> Schedule {
        match self {
            ScheduleGen::Cron(gen) => {
                let case = gen.render();
                match Schedule::cron(&case.expr, case.tz) {
                    Ok(Schedule::Cron(c)) => Schedule::Cron(c.with_dst(case.policy)),
                    _ => fallback(),
                }
            }
            ScheduleGen::CronText(text, zone) => {
                let text: String = text.chars().take(120).collect();
                Schedule::cron(&text, Some(crate::zone(*zone))).unwrap_or_else(|_| fallback())
            }
            ScheduleGen::Every { period, offset } => {
                Schedule::every(period.get(), offset.get()).unwrap_or_else(|_| fallback())
            }
            ScheduleGen::At(t) => Schedule::at(t.get()),
        }
    }
}

fn fallback() -> Schedule {
    Schedule::cron("* * * * *", None).expect("every minute parses")
}

#[derive(Arbitrary, Debug, Clone)]
pub enum RetriesGen {
    Few(u8),
    Max,
    Over(u32),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct DefGen {
    pub name: NameGen,
    pub title: TextGen,
    pub schedule: ScheduleGen,
    pub missed: u8,
    pub catch_up_window: Option<DurGen>,
    pub overlap: Option<u8>,
    pub retries: RetriesGen,
    pub backoff: Option<(DurGen, DurGen)>,
    pub timeout: Option<DurGen>,
    pub safe_to_repeat: bool,
    pub legal_duty: bool,
    pub stall_after: Option<DurGen>,
    pub concurrency_key: Option<TextGen>,
    pub pause_after_failures: Option<u8>,
    pub concurrency_limit: Option<u8>,
    pub jitter: Option<DurGen>,
    pub requires_confirmation: bool,
}

impl DefGen {
    /// The definition, or `None` when the name is not a job name (an `Upsert` cannot carry
    /// one: `JobName` refuses it, which is the typed error for it).
    pub fn build(&self) -> Option<JobDef> {
        let name = JobName::new(&self.name.text()).ok()?;
        let mut def = JobDef::new(name, self.schedule.build());
        def.title = self.title.get();
        def.missed = match self.missed % 3 {
            0 => MissedRule::Skip,
            1 => MissedRule::CatchUpOnce,
            _ => MissedRule::Required,
        };
        def.catch_up_window = self.catch_up_window.map(DurGen::get);
        def.overlap = self.overlap.map(|o| match o % 3 {
            0 => Overlap::Skip,
            1 => Overlap::BufferOne,
            _ => Overlap::BufferAll,
        });
        def.retries = match self.retries {
            RetriesGen::Few(n) => u32::from(n % 6),
            RetriesGen::Max => duetime::MAX_RETRIES,
            RetriesGen::Over(n) => n,
        };
        if let Some((initial, max)) = self.backoff {
            def.backoff = Backoff {
                initial: initial.get(),
                max: max.get(),
            };
        }
        if let Some(t) = self.timeout {
            def.timeout = t.get();
        }
        def.safe_to_repeat = self.safe_to_repeat;
        def.legal_duty = self.legal_duty;
        if let Some(s) = self.stall_after {
            def.stall_after = s.get();
        }
        def.concurrency_key = self.concurrency_key.as_ref().map(TextGen::get);
        def.pause_after_failures = self.pause_after_failures.map(u32::from);
        def.concurrency_limit = self.concurrency_limit.map(u32::from);
        def.jitter = self.jitter.map(DurGen::get);
        def.requires_confirmation = self.requires_confirmation;
        Some(def)
    }
}

// ---------------------------------------------------------------------------------------------
// Events

/// How a process's clocks move before its event.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum DeltaGen {
    Same,
    /// Forward by up to a minute.
    Millis(u16),
    /// Forward or back by up to nine hours.
    Secs(i16),
    /// Forward or back by up to 22 days.
    Mins(i16),
    /// Forward or back by up to 89 years.
    Days(i16),
    Raw(i64),
    /// Straight to an instant (a wall clock set by hand, or by a broken NTP).
    Set(InstantGen),
}

impl DeltaGen {
    fn apply(self, t: Timestamp) -> Timestamp {
        let ms = t.as_millis();
        Timestamp::from_millis(match self {
            DeltaGen::Same => ms,
            DeltaGen::Millis(d) => ms.saturating_add(i64::from(d)),
            DeltaGen::Secs(d) => ms.saturating_add(i64::from(d) * 1000),
            DeltaGen::Mins(d) => ms.saturating_add(i64::from(d) * 60_000),
            DeltaGen::Days(d) => ms.saturating_add(i64::from(d) * 86_400_000),
            DeltaGen::Raw(d) => ms.saturating_add(d),
            DeltaGen::Set(i) => i.get().as_millis(),
        })
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum MonoGen {
    /// The monotonic clock moves as the wall clock does (no jump).
    Follows,
    /// It moves on its own (the wall clock jumped, or the process slept).
    Own(DeltaGen),
}

/// A job an event names.
#[derive(Arbitrary, Debug, Clone)]
pub enum JobRef {
    /// The i-th name defined so far (possibly removed since).
    Known(u8),
    Name(NameGen),
}

/// A run an event names.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum RunRef {
    /// The i-th remembered `Start` effect, counted from the newest.
    Real(u8),
    /// A real run with a fence one off (stale or from the future).
    StaleFence(u8, bool),
    /// A real run id with another run's fence.
    Crossed(u8, u8),
    Made(u64, u64),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum HeldGen {
    /// Every remembered run started on this process.
    Mine,
    Runs(Vec<RunRef>),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum OutcomeGen {
    Ok,
    Skipped,
    TimedOut,
    Failed {
        kind: KindGen,
        retry_after: Option<DurGen>,
    },
    /// Any ttl, absurd ones included (the core clamps them).
    AwaitingApproval(DurGen),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum KindGen {
    Exit(u8),
    Long,
    Text(String),
}

impl OutcomeGen {
    fn get(&self) -> Outcome {
        match self {
            OutcomeGen::Ok => Outcome::Ok,
            OutcomeGen::Skipped => Outcome::Skipped,
            OutcomeGen::TimedOut => Outcome::TimedOut,
            OutcomeGen::Failed { kind, retry_after } => Outcome::Failed {
                kind: match kind {
                    KindGen::Exit(n) => format!("exit {n}"),
                    KindGen::Long => "signal ".repeat(300),
                    KindGen::Text(s) => s.chars().take(300).collect(),
                },
                retry_after: retry_after.map(DurGen::get),
            },
            OutcomeGen::AwaitingApproval(ttl) => Outcome::AwaitingApproval { ttl: ttl.get() },
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum ActorGen {
    Alice,
    Bob,
    /// Over `MAX_ACTOR` characters, built raw (not truncated by `Actor::new`).
    Long,
    Forgotten,
    Text(String),
}

impl ActorGen {
    fn get(&self) -> Actor {
        match self {
            ActorGen::Alice => Actor::new("alice"),
            ActorGen::Bob => Actor::new("bob"),
            ActorGen::Long => Actor("ä".repeat(400)),
            ActorGen::Forgotten => Actor::forgotten(),
            ActorGen::Text(s) => Actor::new(s),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum EventGen {
    Upsert(Box<DefGen>, ActorGen),
    /// The i-th definition of the input again, changed a little (a redefinition).
    Redefine {
        def: u8,
        schedule: Option<ScheduleGen>,
        missed: Option<u8>,
        retries: Option<u8>,
        safe_to_repeat: bool,
    },
    Remove(JobRef, ActorGen),
    ProcessStarted,
    Tick(HeldGen),
    ProcessDraining,
    RunFinished {
        run: RunRef,
        /// `None`: the job the run belongs to.
        job: Option<JobRef>,
        /// Reported by the process that started the run, not the step's.
        own_process: bool,
        outcome: OutcomeGen,
    },
    Pause(JobRef, ActorGen, TextGen),
    Resume(JobRef, ActorGen),
    RunNow(JobRef, ActorGen),
    ForgetActor(ActorGen),
    /// The step's process takes over a run (any run, under its fence or another's).
    Adopt(RunRef),
    /// Confirms a job's definition: the digest of the i-th definition of the input (the
    /// held one, an older one, another job's), or any text.
    Confirm(JobRef, ActorGen, Result<u8, TextGen>),
    /// A person approves a run (parked or not, of its job or another's).
    ApprovalGiven {
        run: RunRef,
        /// `None`: the job the run belongs to.
        job: Option<JobRef>,
        actor: ActorGen,
    },
    /// A person asks for a past range of a job's due times (any range, valid or not).
    Backfill(JobRef, ActorGen, InstantGen, InstantGen),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct StepGen {
    pub process: u8,
    pub wall: DeltaGen,
    pub mono: MonoGen,
    /// Whether the process also reads a clock that counts sleep (`Now::boot`); it moves by
    /// the larger of what the wall and the monotonic clocks moved.
    pub boot: bool,
    pub event: EventGen,
}

/// A `Start` effect, remembered so later events can name a real run.
#[derive(Debug, Clone)]
struct Started {
    run: RunId,
    fence: Fence,
    job: JobName,
    process: ProcessId,
}

/// Everything the driver tracks between steps.
struct World {
    clocks: [Now; PROCESSES as usize],
    started: Vec<Started>,
    names: Vec<String>,
}

impl World {
    fn started(&self, i: u8) -> Option<&Started> {
        let n = self.started.len();
        (n > 0).then(|| &self.started[n - 1 - usize::from(i) % n])
    }

    fn run(&self, r: RunRef) -> Option<(RunId, Fence, Option<&Started>)> {
        match r {
            RunRef::Real(i) => self.started(i).map(|s| (s.run, s.fence, Some(s))),
            RunRef::StaleFence(i, up) => self.started(i).map(|s| {
                let fence = if up {
                    Fence(s.fence.0.wrapping_add(1))
                } else {
                    Fence(s.fence.0.wrapping_sub(1))
                };
                (s.run, fence, Some(s))
            }),
            RunRef::Crossed(i, j) => {
                let a = self.started(i)?;
                let b = self.started(j)?;
                Some((a.run, b.fence, Some(a)))
            }
            RunRef::Made(run, fence) => Some((RunId(run), Fence(fence), None)),
        }
    }

    /// The job an event names; `None` for text no job can be named (an event carries a
    /// `JobName`, so a host cannot send one: the name is refused where it is read).
    fn job(&self, r: &JobRef) -> Option<JobName> {
        let text = match r {
            JobRef::Known(i) if !self.names.is_empty() => {
                self.names[usize::from(*i) % self.names.len()].clone()
            }
            JobRef::Known(_) => "a".to_string(),
            JobRef::Name(n) => n.text(),
        };
        JobName::new(&text).ok()
    }

    fn event(&self, input: &StepInput, process: ProcessId, gen: &EventGen) -> Option<Event> {
        Some(match gen {
            EventGen::Upsert(def, actor) => Event::Upsert {
                def: Box::new(def.build()?),
                actor: actor.get(),
            },
            EventGen::Redefine {
                def,
                schedule,
                missed,
                retries,
                safe_to_repeat,
            } => {
                let gens = &input.jobs[..input.jobs.len().min(MAX_JOBS)];
                if gens.is_empty() {
                    return None;
                }
                let mut d = gens[usize::from(*def) % gens.len()].build()?;
                if let Some(s) = schedule {
                    d.schedule = s.build();
                }
                if let Some(m) = missed {
                    d.missed = [
                        MissedRule::Skip,
                        MissedRule::CatchUpOnce,
                        MissedRule::Required,
                    ][usize::from(*m) % 3];
                }
                if let Some(r) = retries {
                    d.retries = u32::from(*r % 4);
                }
                d.safe_to_repeat ^= safe_to_repeat;
                Event::Upsert {
                    def: Box::new(d),
                    actor: Actor::new("redefine"),
                }
            }
            EventGen::Remove(job, actor) => Event::Remove {
                job: self.job(job)?,
                actor: actor.get(),
            },
            EventGen::ProcessStarted => Event::ProcessStarted { process },
            EventGen::Tick(held) => Event::Tick {
                process,
                held: match held {
                    HeldGen::Mine => self
                        .started
                        .iter()
                        .filter(|s| s.process == process)
                        .rev()
                        .take(MAX_HELD)
                        .map(|s| Held {
                            run: s.run,
                            fence: s.fence,
                        })
                        .collect(),
                    HeldGen::Runs(runs) => runs
                        .iter()
                        .take(MAX_HELD)
                        .filter_map(|r| self.run(*r))
                        .map(|(run, fence, _)| Held { run, fence })
                        .collect(),
                },
            },
            EventGen::ProcessDraining => Event::ProcessDraining { process },
            EventGen::RunFinished {
                run,
                job,
                own_process,
                outcome,
            } => {
                let (id, fence, started) = self.run(*run)?;
                let job = match (job, started) {
                    (Some(j), _) => self.job(j)?,
                    (None, Some(s)) => s.job.clone(),
                    (None, None) => self.job(&JobRef::Known(0))?,
                };
                let process = match started {
                    Some(s) if *own_process => s.process,
                    _ => process,
                };
                Event::RunFinished {
                    process,
                    job,
                    run: id,
                    fence,
                    outcome: outcome.get(),
                }
            }
            EventGen::Pause(job, actor, note) => Event::Pause {
                job: self.job(job)?,
                actor: actor.get(),
                note: note.get(),
            },
            EventGen::Resume(job, actor) => Event::Resume {
                job: self.job(job)?,
                actor: actor.get(),
            },
            EventGen::RunNow(job, actor) => Event::RunNow {
                job: self.job(job)?,
                actor: actor.get(),
            },
            EventGen::ForgetActor(actor) => Event::ForgetActor { actor: actor.get() },
            EventGen::Confirm(job, actor, digest) => {
                let gens = &input.jobs[..input.jobs.len().min(MAX_JOBS)];
                let digest = match digest {
                    Ok(i) if !gens.is_empty() => gens[usize::from(*i) % gens.len()]
                        .build()
                        .map(|d| d.digest().to_string())
                        .unwrap_or_default(),
                    Ok(_) => String::new(),
                    Err(text) => text.get(),
                };
                Event::Confirm {
                    job: self.job(job)?,
                    digest,
                    actor: actor.get(),
                }
            }
            EventGen::Backfill(job, actor, from, to) => Event::Backfill {
                job: self.job(job)?,
                from: from.get(),
                to: to.get(),
                actor: actor.get(),
            },
            EventGen::ApprovalGiven { run, job, actor } => {
                let (id, _, started) = self.run(*run)?;
                let job = match (job, started) {
                    (Some(j), _) => self.job(j)?,
                    (None, Some(s)) => s.job.clone(),
                    (None, None) => self.job(&JobRef::Known(0))?,
                };
                Event::ApprovalGiven {
                    job,
                    run: id,
                    actor: actor.get(),
                }
            }
            EventGen::Adopt(run) => {
                let (run, fence, _) = self.run(*run)?;
                Event::Adopt {
                    process,
                    run,
                    fence,
                }
            }
        })
    }

    fn remember(&mut self, effects: &[Effect]) {
        for e in effects {
            if let Effect::Do(Action::Start(Start {
                run,
                job,
                fence,
                process,
                ..
            })) = e
            {
                self.started.push(Started {
                    run: *run,
                    fence: *fence,
                    job: job.clone(),
                    process: *process,
                });
            }
        }
        if self.started.len() > MAX_STARTS {
            let extra = self.started.len() - MAX_STARTS;
            self.started.drain(..extra);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The check

pub fn step_sequence(data: &[u8]) {
    if let Ok(input) = StepInput::arbitrary_take_rest(Unstructured::new(data)) {
        check_step_sequence(&input);
    }
}

/// The state after a step: its invariants hold, it serializes, loads back equal, and
/// serializes again to the same bytes. Returns the loaded copy.
pub fn check_round_trip(state: &State) -> State {
    if let Err(broken) = state.check_invariants() {
        panic!("invariant broken: {broken}");
    }
    let json = serde_json::to_vec(state).expect("a state serializes");
    let back: State = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "a state does not load back: {e}\n{}",
            String::from_utf8_lossy(&json)
        )
    });
    assert!(
        back == *state,
        "a state loads back different:\n{}",
        String::from_utf8_lossy(&json)
    );
    let again = serde_json::to_vec(&back).expect("a loaded state serializes");
    assert!(
        again == json,
        "a state serializes differently after loading:\n{}\n{}",
        String::from_utf8_lossy(&json),
        String::from_utf8_lossy(&again)
    );
    assert_eq!(back.next_wake(), state.next_wake(), "wake index after load");
    back
}

pub fn check_step_sequence(input: &StepInput) {
    drive(input, &mut |_, _| {});
}

/// Runs the input's events through `check_step` (setup upserts first), telling `observe`
/// each event before it is stepped.
pub fn drive(input: &StepInput, observe: &mut dyn FnMut(Now, &Event)) {
    let start = input.start.get();
    let mut state = State::new(input.config.build());
    let mut world = World {
        clocks: [Now::at(start); PROCESSES as usize],
        started: Vec::new(),
        names: Vec::new(),
    };
    let mut loaded = check_round_trip(&state);
    for gen in input.jobs.iter().take(MAX_JOBS) {
        let name = gen.name.text();
        if !world.names.contains(&name) {
            world.names.push(name);
        }
        if let Some(def) = gen.build() {
            let event = Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("setup"),
            };
            observe(Now::at(start), &event);
            check_step(&mut state, &mut loaded, Now::at(start), event);
        }
    }
    for step in input.steps.iter().take(MAX_STEPS) {
        let p = step.process % PROCESSES;
        let process = ProcessId(u64::from(p));
        let clock = &mut world.clocks[usize::from(p)];
        let wall = step.wall.apply(clock.wall);
        let mono = match step.mono {
            MonoGen::Follows => {
                let moved = i128::from(wall.as_millis()) - i128::from(clock.wall.as_millis());
                let m = (i128::from(clock.mono.as_millis()) + moved)
                    .clamp(i128::from(i64::MIN), i128::from(i64::MAX));
                Timestamp::from_millis(m as i64)
            }
            MonoGen::Own(d) => d.apply(clock.mono),
        };
        let ms = |t: Timestamp| i128::from(t.as_millis());
        let boot = step.boot.then(|| {
            let prev = ms(clock.boot.unwrap_or(clock.mono));
            let moved = (ms(wall) - ms(clock.wall))
                .max(ms(mono) - ms(clock.mono))
                .max(0);
            Timestamp::from_millis(
                (prev + moved).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
            )
        });
        *clock = Now { wall, mono, boot };
        let now = *clock;
        let Some(event) = world.event(input, process, &step.event) else {
            continue;
        };
        if let Event::Upsert { def, .. } = &event {
            let name = def.name.to_string();
            if !world.names.contains(&name) && world.names.len() < 16 {
                world.names.push(name);
            }
        }
        observe(now, &event);
        let effects = check_step(&mut state, &mut loaded, now, event);
        world.remember(&effects);
    }
}

/// Steps `state` and `loaded` (its copy loaded back from JSON) with one event: the same
/// effects and the same next state; then the round trip holds for the new state, and
/// `loaded` becomes its loaded copy.
pub fn check_step(state: &mut State, loaded: &mut State, now: Now, event: Event) -> Vec<Effect> {
    let mut effects = Vec::new();
    state.step(now, event.clone(), &mut effects);
    let mut again = Vec::new();
    loaded.step(now, event, &mut again);
    assert!(
        effects == again,
        "a reloaded state answered differently:\n{effects:?}\n{again:?}"
    );
    assert!(*loaded == *state, "a reloaded state stepped differently");
    *loaded = check_round_trip(state);
    effects
}

/// Prints the config and every (now, event) the input decodes to as JSON lines, the form a
/// regression test replays (`tests/fuzz_regressions.rs`), then runs the checks.
pub fn describe(data: &[u8]) -> String {
    match StepInput::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(input) => {
            let config = serde_json::to_string(&input.config.build()).expect("config serializes");
            println!("{{\"config\":{config}}}");
            drive(&input, &mut |now, event| {
                let now = serde_json::to_string(&now).expect("now serializes");
                let event = serde_json::to_string(event).expect("event serializes");
                println!("{{\"now\":{now},\"event\":{event}}}");
            });
            "(replayed clean)".to_string()
        }
        Err(e) => format!("undecodable: {e}"),
    }
}
