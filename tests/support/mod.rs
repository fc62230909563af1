//! A story-telling harness for scenario tests: send events at wall-clock times of one day,
//! keep what each process holds, and render the whole exchange as a readable trace for
//! insta. After every step the state makes a serde round trip and the story continues from
//! the copy, so every scenario also proves S6.
#![allow(dead_code)]

use duetime::{Action, Start};
use std::collections::BTreeMap;
use std::fmt::Write;

use duetime::{
    Actor, Config, Duration, Effect, Entry, Event, Fence, Held, History, JobDef, JobName, Now,
    Outcome, ProcessId, Record, RunId, Schedule, State, Timestamp,
};

pub const DAY: &str = "2025-06-02";

/// `"09:00"`, `"09:00:30"`, or with a date: `"2025-06-03 09:00"`.
pub fn at(time: &str) -> Timestamp {
    let (date, clock) = match time.split_once(' ') {
        Some((d, c)) => (d, c),
        None => (DAY, time),
    };
    let clock = if clock.len() == 5 {
        format!("{clock}:00")
    } else {
        clock.to_string()
    };
    format!("{date}T{clock}Z").parse().expect("a test time")
}

pub fn job(name: &str, schedule: Schedule) -> JobDef {
    JobDef::new(JobName::new(name).unwrap(), schedule)
}

pub fn every(d: &str) -> Schedule {
    Schedule::every(d.parse().unwrap(), Duration::ZERO).unwrap()
}

pub fn cron(expr: &str) -> Schedule {
    Schedule::cron(expr, None).unwrap()
}

pub struct Story {
    pub state: State,
    trace: String,
    /// Runs each process is carrying out, with their fences: what its ticks report.
    held: BTreeMap<ProcessId, BTreeMap<RunId, Fence>>,
    fences: BTreeMap<RunId, (ProcessId, Fence)>,
    jobs: BTreeMap<RunId, JobName>,
    /// Show `history` lines in the trace (the journal's non-ledger lines).
    pub show_history: bool,
    pub last: Vec<Effect>,
    /// How far each process's monotonic and boot clocks lag behind its wall clock, in ms.
    /// A process not listed reads a monotonic clock that follows its wall clock, and no
    /// boot clock.
    clocks: BTreeMap<ProcessId, (i64, Option<i64>)>,
}

impl Story {
    pub fn new() -> Story {
        Story::with_config(Config::default())
    }

    pub fn with_config(config: Config) -> Story {
        Story {
            state: State::new(config),
            trace: String::new(),
            held: BTreeMap::new(),
            fences: BTreeMap::new(),
            jobs: BTreeMap::new(),
            show_history: false,
            last: Vec::new(),
            clocks: BTreeMap::new(),
        }
    }

    /// What process `p` reads when its wall clock says `time`.
    pub fn now_of(&self, p: ProcessId, time: &str) -> Now {
        let wall = at(time);
        let behind = |lag: i64| Timestamp::from_millis(wall.as_millis() - lag);
        match self.clocks.get(&p) {
            None => Now::at(wall),
            Some(&(mono, None)) => Now::new(wall, behind(mono)),
            Some(&(mono, Some(boot))) => Now::with_boot(wall, behind(mono), behind(boot)),
        }
    }

    /// From now on process `p` also reads a clock that counts sleep (`Now::boot`).
    pub fn reads_boot(&mut self, p: u64) {
        self.clocks.entry(ProcessId(p)).or_insert((0, None)).1 = Some(0);
    }

    /// Process `p`'s wall clock is set forward (or back, for a negative `by`); its other
    /// clocks go on as they were.
    pub fn wall_set(&mut self, p: u64, by: &str, back: bool) {
        let d = by.parse::<Duration>().unwrap().as_millis() as i64;
        let d = if back { -d } else { d };
        let c = self.clocks.entry(ProcessId(p)).or_insert((0, None));
        c.0 += d;
        if let Some(b) = &mut c.1 {
            *b += d;
        }
        let dir = if back { "back" } else { "forward" };
        self.note(&format!("p{p}'s wall clock is set {dir} {by}"));
    }

    /// Process `p`'s machine sleeps for `d`: its monotonic clock stands still meanwhile.
    pub fn sleeps(&mut self, p: u64, d: &str) {
        let ms = d.parse::<Duration>().unwrap().as_millis() as i64;
        self.clocks.entry(ProcessId(p)).or_insert((0, None)).0 += ms;
        self.note(&format!(
            "p{p}'s machine sleeps {d}: its monotonic clock stands still"
        ));
    }

    /// Sends one event at `time` (monotonic clock following the wall clock).
    pub fn send(&mut self, time: &str, label: &str, event: Event) -> &[Effect] {
        self.send_now(Now::at(at(time)), time, label, event)
    }

    pub fn send_now(&mut self, now: Now, time: &str, label: &str, event: Event) -> &[Effect] {
        let mut effects = Vec::new();
        self.state.step(now, event, &mut effects);
        let json = serde_json::to_string(&self.state).expect("state serializes");
        let copy: State = serde_json::from_str(&json).expect("state deserializes");
        assert_eq!(copy, self.state, "state round-trips through serde");
        assert_eq!(
            serde_json::to_string(&copy).unwrap(),
            json,
            "round trip is byte-identical"
        );
        self.state = copy;
        writeln!(self.trace, "{time:>8}  {label}").unwrap();
        for e in &effects {
            match e {
                Effect::Do(Action::Start(Start {
                    run,
                    fence,
                    process,
                    job,
                    ..
                })) => {
                    self.jobs.insert(*run, job.clone());
                    self.held.entry(*process).or_default().insert(*run, *fence);
                    self.fences.insert(*run, (*process, *fence));
                }
                Effect::Do(Action::Cancel { run, process, .. }) => {
                    if let Some(h) = self.held.get_mut(process) {
                        h.remove(run);
                    }
                }
                Effect::Journal(Record {
                    entry: Entry::History(History::Adopted { run, process, .. }),
                    ..
                }) => {
                    // The adopting process holds the run from now on, under its old fence.
                    if let Some(&(_, fence)) = self.fences.get(run) {
                        self.held.entry(*process).or_default().insert(*run, fence);
                        self.fences.insert(*run, (*process, fence));
                    }
                }
                _ => {}
            }
            let show = match e {
                Effect::Journal(r) => match &r.entry {
                    Entry::Ledger(_) => true,
                    Entry::History(History::Started { .. }) => false,
                    Entry::History(History::StaleResult { .. }) => true,
                    Entry::History(_) => self.show_history,
                },
                _ => true,
            };
            if show {
                writeln!(self.trace, "          {}", shorten(&e.to_string())).unwrap();
            }
        }
        self.last = effects;
        &self.last
    }

    pub fn note(&mut self, text: &str) {
        writeln!(self.trace, "          -- {text}").unwrap();
    }

    pub fn define(&mut self, time: &str, def: JobDef) {
        let label = format!("define {} ({})", def.name, def.schedule);
        self.send(
            time,
            &label,
            Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("alice"),
            },
        );
    }

    pub fn start(&mut self, time: &str, p: u64) {
        self.held.insert(ProcessId(p), BTreeMap::new());
        self.send_now(
            self.now_of(ProcessId(p), time),
            time,
            &format!("p{p} starts"),
            Event::ProcessStarted {
                process: ProcessId(p),
            },
        );
    }

    /// Process `p` starts after every other process has gone quiet (a restart after
    /// downtime): its clock is further ahead of what the store last heard than
    /// `clock_jump`, so it is held (it decides nothing) until it has heard from no one for
    /// two ticks, then ticks once more and is released, its clock taken as right. Returns
    /// the time of that tick.
    pub fn start_alone(&mut self, time: &str, p: u64) -> String {
        self.start(time, p);
        let solitude = self.state.config().tick.saturating_mul(2);
        let then = label_of(at(time).saturating_add(solitude));
        self.tick(&then, p);
        then
    }

    pub fn tick(&mut self, time: &str, p: u64) {
        let process = ProcessId(p);
        let held = self.held_by(process);
        let now = self.now_of(process, time);
        self.send_now(
            now,
            time,
            &format!("p{p} ticks"),
            Event::Tick { process, held },
        );
    }

    /// Ticks every `step` from `from` through `to` (inclusive) on process `p`.
    pub fn tick_through(&mut self, from: &str, to: &str, step: &str, p: u64) {
        let (mut t, end) = (at(from), at(to));
        let step: Duration = step.parse().unwrap();
        while t <= end {
            self.tick(&label_of(t), p);
            t = t.saturating_add(step);
        }
    }

    pub fn held_by(&self, process: ProcessId) -> Vec<Held> {
        self.held
            .get(&process)
            .map(|h| h.iter().map(|(&run, &fence)| Held { run, fence }).collect())
            .unwrap_or_default()
    }

    /// The process forgets everything (a crash is not an event: only the trace says so).
    pub fn crash(&mut self, time: &str, p: u64) {
        self.held.remove(&ProcessId(p));
        writeln!(self.trace, "{time:>8}  p{p} crashes (no event)").unwrap();
    }

    /// Reports run `run` finished with `outcome`, from the process that holds it, with the
    /// fence it was started with.
    pub fn finish(&mut self, time: &str, run: u64, outcome: Outcome) {
        let run = RunId(run);
        let (process, fence) = self.fences[&run];
        self.finish_as(time, process.0, run.0, fence.0, outcome);
    }

    pub fn finish_as(&mut self, time: &str, p: u64, run: u64, fence: u64, outcome: Outcome) {
        let (process, run, fence) = (ProcessId(p), RunId(run), Fence(fence));
        if let Some(h) = self.held.get_mut(&process) {
            h.remove(&run);
        }
        let label = format!("p{p} reports {run} {fence}: {outcome}");
        // A run the story never saw started names a job no story defines.
        let job = self
            .jobs
            .get(&run)
            .cloned()
            .unwrap_or_else(|| JobName::new("unknown").unwrap());
        self.send_now(
            self.now_of(process, time),
            time,
            &label,
            Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            },
        );
    }

    /// Process `p` adopts `run` under `fence` (a run an earlier incarnation left running).
    pub fn adopt(&mut self, time: &str, p: u64, run: u64, fence: u64) {
        let (process, run, fence) = (ProcessId(p), RunId(run), Fence(fence));
        self.send_now(
            self.now_of(process, time),
            time,
            &format!("p{p} adopts {run} {fence}"),
            Event::Adopt {
                process,
                run,
                fence,
            },
        );
    }

    pub fn command(&mut self, time: &str, label: &str, event: Event) {
        self.send(time, label, event);
    }

    pub fn trace(&self) -> String {
        self.trace.clone()
    }

    /// Only the ledger lines, for stories about accounting.
    pub fn ledger(&self) -> String {
        self.trace
            .lines()
            .filter(|l| l.contains("LEDGER"))
            .map(|l| format!("{}\n", l.trim()))
            .collect()
    }
}

impl Default for Story {
    fn default() -> Self {
        Story::new()
    }
}

/// An instant as the stories write it: `"09:00:30"` on the story's day, else with its date.
pub fn label_of(t: Timestamp) -> String {
    let label = t.to_string();
    let clock = label[11..19].to_string();
    if label.starts_with(DAY) {
        clock
    } else {
        format!("{} {}", &label[..10], clock)
    }
}

/// Drops the story's date and the `Z` from instants so traces read as times of day.
fn shorten(line: &str) -> String {
    line.replace(&format!("{DAY}T"), "").replace('Z', "")
}
