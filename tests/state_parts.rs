//! The parts API a store that keeps jobs one per row relies on: with change tracking on,
//! writing back after every step only the jobs `take_touched` names (and the globals) keeps
//! a copy from which `State::from_parts` rebuilds exactly the live state; `put_parts` brings
//! a second, stale copy up to date from the same changes; bad parts are refused with a
//! typed `LoadError`, and a refused `put_parts` leaves the state as it was.

use duetime::{Action, Start};
use std::collections::BTreeMap;

use duetime::{
    Actor, Config, Duration, Effect, Event, Fence, Globals, Held, JobDef, JobName, JobRecord,
    JobSeq, LoadError, MissedRule, Now, Outcome, Overlap, ProcessId, RunId, Schedule, State,
    Timestamp, FORMAT_VERSION,
};
use proptest::prelude::*;

/// 2025-06-02T09:00:00Z.
const T0: i64 = 1_748_854_800_000;

fn def(name: &str, schedule: Schedule) -> JobDef {
    JobDef::new(JobName::new(name).unwrap(), schedule)
}

fn every(secs: u64) -> Schedule {
    Schedule::every(Duration::from_secs(secs), Duration::ZERO).unwrap()
}

/// A host that keeps its "store" as a map of job rows plus the globals, written from the
/// touched set after every step, and a replica that follows the store through `put_parts`.
struct Host {
    state: State,
    rows: BTreeMap<JobSeq, JobRecord>,
    globals: Globals,
    replica: State,
    held: BTreeMap<ProcessId, BTreeMap<RunId, (Fence, JobName)>>,
    now: i64,
    steps: usize,
    touched_total: usize,
}

impl Host {
    fn new() -> Host {
        let mut state = State::new(Config::default());
        state.track_changes(true);
        let globals = state.globals();
        Host {
            replica: State::new(Config::default()),
            state,
            rows: BTreeMap::new(),
            globals,
            held: BTreeMap::new(),
            now: T0,
            steps: 0,
            touched_total: 0,
        }
    }

    fn send(&mut self, event: Event) -> Vec<Effect> {
        let mut out = Vec::new();
        self.state
            .step(Now::at(Timestamp::from_millis(self.now)), event, &mut out);
        for e in &out {
            match e {
                Effect::Do(Action::Start(Start {
                    run,
                    fence,
                    process,
                    job,
                    ..
                })) => {
                    self.held
                        .entry(*process)
                        .or_default()
                        .insert(*run, (*fence, job.clone()));
                }
                Effect::Do(Action::Cancel { run, process, .. }) => {
                    if let Some(h) = self.held.get_mut(process) {
                        h.remove(run);
                    }
                }
                _ => {}
            }
        }
        self.persist();
        out
    }

    /// Writes what the step touched, then checks the store and the replica against the
    /// live state.
    fn persist(&mut self) {
        let touched = self.state.take_touched();
        assert!(
            touched.windows(2).all(|w| w[0] < w[1]),
            "ascending, no repeats"
        );
        self.steps += 1;
        self.touched_total += touched.len();
        let mut changed = Vec::new();
        for &seq in &touched {
            match self.state.record(seq) {
                Some(job) => {
                    self.rows.insert(seq, job.clone());
                    changed.push((seq, Some(job.clone())));
                }
                None => {
                    self.rows.remove(&seq);
                    changed.push((seq, None));
                }
            }
        }
        self.globals = self.state.globals();
        let loaded = State::from_parts(self.globals.clone(), self.rows.clone())
            .expect("the stored parts load");
        assert_eq!(loaded, self.state, "the store holds the live state");
        assert_eq!(loaded.next_wake(), self.state.next_wake());
        self.replica
            .put_parts(self.globals.clone(), changed)
            .expect("the replica takes the changes");
        assert_eq!(self.replica, self.state, "the replica follows");
        assert_eq!(self.replica.next_wake(), self.state.next_wake());
        assert_eq!(self.replica.check_invariants(), Ok(()));
        assert!(
            self.replica.take_touched().is_empty(),
            "replica is untracked"
        );
        // Nothing outside the touched set changed: the rows equal the state's records.
        let live: BTreeMap<JobSeq, JobRecord> =
            self.state.records().map(|(s, j)| (s, j.clone())).collect();
        assert_eq!(live, self.rows);
    }

    fn advance(&mut self, secs: i64) {
        self.now += secs * 1000;
    }

    fn tick(&mut self, p: u64) -> Vec<Effect> {
        let process = ProcessId(p);
        let held = self
            .held
            .get(&process)
            .map(|h| {
                h.iter()
                    .map(|(&run, &(fence, _))| Held { run, fence })
                    .collect()
            })
            .unwrap_or_default();
        self.send(Event::Tick { process, held })
    }

    /// Reports the `k`-th run held by anyone (if any).
    fn finish(&mut self, k: usize, outcome: Outcome) -> Vec<Effect> {
        let all: Vec<(ProcessId, RunId, Fence, JobName)> = self
            .held
            .iter()
            .flat_map(|(p, h)| h.iter().map(|(r, (f, j))| (*p, *r, *f, j.clone())))
            .collect();
        if all.is_empty() {
            return Vec::new();
        }
        let (process, run, fence, job) = all[k % all.len()].clone();
        if let Some(h) = self.held.get_mut(&process) {
            h.remove(&run);
        }
        self.send(Event::RunFinished {
            process,
            job,
            run,
            fence,
            outcome,
        })
    }
}

fn upsert(def: JobDef) -> Event {
    Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("ann"),
    }
}

#[test]
fn a_story_persisted_by_touched_jobs_reloads_equal_after_every_step() {
    let mut h = Host::new();
    h.send(upsert(def("backup", every(60))));
    h.send(upsert(def("report", every(300))));
    let mut flaky = def("flaky", every(120));
    flaky.retries = 2;
    flaky.backoff.initial = Duration::from_secs(10);
    h.send(upsert(flaky));
    h.send(Event::ProcessStarted {
        process: ProcessId(1),
    });
    for _ in 0..6 {
        h.advance(30);
        h.tick(1);
        h.advance(5);
        h.finish(0, Outcome::Ok);
    }
    h.advance(30);
    h.tick(1);
    // A failure with retries, from the flaky job if it is running.
    let flaky_run = h
        .held
        .values()
        .flat_map(|r| r.iter())
        .position(|(_, (_, j))| j.as_str() == "flaky");
    h.finish(flaky_run.unwrap_or(0), Outcome::failed("exit 1"));
    h.send(Event::Pause {
        job: JobName::new("report").unwrap(),
        actor: Actor::new("bob"),
        note: "maintenance".into(),
    });
    h.advance(400);
    h.tick(1);
    // A second process takes over while the first is silent.
    h.send(Event::ProcessStarted {
        process: ProcessId(2),
    });
    h.advance(200);
    h.tick(2);
    h.send(Event::RunNow {
        job: JobName::new("backup").unwrap(),
        actor: Actor::new("bob"),
    });
    h.send(Event::ForgetActor {
        actor: Actor::new("bob"),
    });
    h.send(Event::Resume {
        job: JobName::new("report").unwrap(),
        actor: Actor::new("ann"),
    });
    h.advance(30);
    h.tick(2);
    h.send(Event::ProcessDraining {
        process: ProcessId(2),
    });
    h.send(Event::Remove {
        job: JobName::new("flaky").unwrap(),
        actor: Actor::new("ann"),
    });
    h.send(upsert(def("flaky", every(90))));
    h.advance(120);
    h.tick(1);
    assert_eq!(h.state.job_count(), 3);
    assert!(h.steps > 25);
}

#[test]
fn a_tick_with_nothing_due_touches_no_job_and_commands_touch_only_their_job() {
    let mut h = Host::new();
    h.send(upsert(def("a", every(3600))));
    h.send(upsert(def("b", every(3600))));
    h.send(Event::ProcessStarted {
        process: ProcessId(1),
    });
    h.advance(30);
    let before = h.touched_total;
    h.tick(1);
    assert_eq!(h.touched_total, before, "an idle tick writes no job");
    let mut out = Vec::new();
    h.state.step(
        Now::at(Timestamp::from_millis(h.now)),
        Event::Pause {
            job: JobName::new("b").unwrap(),
            actor: Actor::new("ann"),
            note: String::new(),
        },
        &mut out,
    );
    let b = h.state.seq_of_name("b").unwrap();
    assert_eq!(h.state.take_touched(), vec![b]);
    assert!(h.state.take_touched().is_empty(), "taken once");
}

#[test]
fn tracking_is_off_by_default_and_not_part_of_the_value() {
    let mut s = State::new(Config::default());
    assert!(!s.tracks_changes());
    let mut out = Vec::new();
    s.step(
        Now::at(Timestamp::from_millis(T0)),
        upsert(def("a", every(60))),
        &mut out,
    );
    assert!(s.take_touched().is_empty());
    let mut t = s.clone();
    t.track_changes(true);
    assert_eq!(s, t);
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        serde_json::to_string(&t).unwrap()
    );
    t.step(
        Now::at(Timestamp::from_millis(T0)),
        upsert(def("b", every(60))),
        &mut out,
    );
    assert_eq!(t.take_touched(), vec![JobSeq(1)]);
    t.track_changes(false);
    assert!(!t.tracks_changes());
}

#[test]
fn from_parts_agrees_with_serde_and_refuses_bad_parts() {
    let mut h = Host::new();
    h.send(upsert(def("a", every(60))));
    h.send(upsert(def("b", every(60))));
    h.send(Event::ProcessStarted {
        process: ProcessId(1),
    });
    h.advance(61);
    h.tick(1);
    let json = serde_json::to_string(&h.state).unwrap();
    let from_serde: State = serde_json::from_str(&json).unwrap();
    let parts = State::from_parts(h.state.globals(), h.rows.clone()).unwrap();
    assert_eq!(parts, from_serde);
    assert_eq!(serde_json::to_string(&parts).unwrap(), json);

    let g = h.state.globals();
    let a = h.rows[&JobSeq(0)].clone();
    let b = h.rows[&JobSeq(1)].clone();
    let inconsistent =
        |r: Result<State, LoadError>| matches!(r, Err(LoadError::Inconsistent { .. }));
    // The same sequence number twice.
    assert!(inconsistent(State::from_parts(
        g.clone(),
        [(JobSeq(0), a.clone()), (JobSeq(0), a.clone())]
    )));
    // A sequence number beyond the counter.
    assert!(inconsistent(State::from_parts(
        g.clone(),
        [(JobSeq(7), a.clone())]
    )));
    // One name under two numbers.
    assert!(inconsistent(State::from_parts(
        g.clone(),
        [(JobSeq(0), a.clone()), (JobSeq(1), a.clone())]
    )));
    // An open run held by two jobs.
    let mut b_with_a_run = b.clone();
    b_with_a_run.set_activity(a.activity().cloned());
    if a.run().is_some() {
        assert!(inconsistent(State::from_parts(
            g.clone(),
            [(JobSeq(0), a.clone()), (JobSeq(1), b_with_a_run)]
        )));
    }
    // Counters behind an open run.
    let mut behind = g.clone();
    behind.set_next_run(0);
    behind.set_next_fence(0);
    if a.run().is_some() {
        assert!(inconsistent(State::from_parts(
            behind,
            [(JobSeq(0), a.clone())]
        )));
    }
    // A newer format; a bad config.
    let mut newer = g.clone();
    newer.set_format(FORMAT_VERSION + 1);
    assert_eq!(
        State::from_parts(newer, [(JobSeq(0), a.clone())]).unwrap_err(),
        LoadError::NewerFormat {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION
        }
    );
    let mut bad = g.clone();
    bad.config_mut().tick = Duration::ZERO;
    assert!(inconsistent(State::from_parts(
        bad,
        [(JobSeq(0), a.clone())]
    )));
    // Records carrying stale derived fields from a live state load the same.
    let stale = h.state.records().map(|(s, j)| {
        let mut j = j.clone();
        j.set_wake(Some(Timestamp::from_millis(1)));
        (s, j)
    });
    assert_eq!(State::from_parts(g, stale).unwrap(), h.state);
}

#[test]
fn a_refused_put_parts_leaves_the_state_as_it_was() {
    let mut h = Host::new();
    h.send(upsert(def("a", every(60))));
    h.send(upsert(def("b", every(60))));
    h.send(Event::ProcessStarted {
        process: ProcessId(1),
    });
    h.advance(61);
    h.tick(1);
    let before = h.replica.clone();
    let g = h.state.globals();
    let a = h.rows[&JobSeq(0)].clone();
    let refused = |replica: &mut State, g: Globals, changes: Vec<(JobSeq, Option<JobRecord>)>| {
        let r = replica.put_parts(g, changes);
        assert!(r.is_err(), "refused");
        assert_eq!(*replica, before);
        assert_eq!(replica.check_invariants(), Ok(()));
    };
    // Job a's name under job b's number, while a keeps it.
    refused(
        &mut h.replica,
        g.clone(),
        vec![(JobSeq(1), Some(a.clone()))],
    );
    // Counters backward.
    let mut back = g.clone();
    back.set_next_seq(1);
    refused(&mut h.replica, back, vec![]);
    // A changed config.
    let mut cfg = g.clone();
    cfg.config_mut().manual_per_hour = 3;
    refused(&mut h.replica, cfg, vec![]);
    // Beyond the counter; twice in one batch.
    refused(
        &mut h.replica,
        g.clone(),
        vec![(JobSeq(9), Some(a.clone()))],
    );
    refused(
        &mut h.replica,
        g.clone(),
        vec![(JobSeq(0), None), (JobSeq(0), None)],
    );
    // Counters back to before job b, with b put back to nothing: undoing its creation.
    let mut undo = h.replica.clone();
    let mut g1 = g.clone();
    g1.set_next_seq(1);
    undo.put_parts(g1, vec![(JobSeq(1), None)]).unwrap();
    assert_eq!(undo.job_count(), 1);
    assert_eq!(undo.check_invariants(), Ok(()));
    // A rename through removal in the same batch is fine: a's number dropped, its name
    // under b's number.
    let mut r = h.replica.clone();
    let mut g2 = g.clone();
    g2.set_next_seq(3);
    let mut a2 = a.clone();
    a2.set_activity(None);
    r.put_parts(g2, vec![(JobSeq(0), None), (JobSeq(2), Some(a2))])
        .unwrap();
    assert_eq!(r.seq_of_name("a"), Some(JobSeq(2)));
    assert_eq!(r.check_invariants(), Ok(()));
}

// ---------------------------------------------------------------------------------------
// Random histories.

#[derive(Debug, Clone)]
enum Op {
    Upsert {
        job: u8,
        period: u8,
        missed: u8,
        overlap: u8,
        retries: u8,
        safe: bool,
    },
    Remove(u8),
    Pause(u8),
    Resume(u8),
    RunNow(u8),
    Tick(u8),
    Started(u8),
    Draining(u8),
    Finish(u8, u8),
    Crash(u8),
    Forget(u8),
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..4, 0u8..4, 0u8..3, 0u8..4, 0u8..3, any::<bool>()).prop_map(
            |(job, period, missed, overlap, retries, safe)| Op::Upsert {
                job,
                period,
                missed,
                overlap,
                retries,
                safe
            }
        ),
        1 => (0u8..4).prop_map(Op::Remove),
        1 => (0u8..4).prop_map(Op::Pause),
        1 => (0u8..4).prop_map(Op::Resume),
        1 => (0u8..4).prop_map(Op::RunNow),
        8 => (1u8..4).prop_map(Op::Tick),
        1 => (1u8..4).prop_map(Op::Started),
        1 => (1u8..4).prop_map(Op::Draining),
        5 => (any::<u8>(), 0u8..10).prop_map(|(k, o)| Op::Finish(k, o)),
        1 => (1u8..4).prop_map(Op::Crash),
        1 => (0u8..2).prop_map(Op::Forget),
        6 => (1u16..600).prop_map(Op::Wait),
    ]
}

const NAMES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
const ACTORS: [&str; 2] = ["ann", "bob"];

fn run_ops(ops: &[Op]) -> Host {
    let mut h = Host::new();
    for op in ops {
        match *op {
            Op::Upsert {
                job,
                period,
                missed,
                overlap,
                retries,
                safe,
            } => {
                let secs = [30, 60, 90, 300][period as usize];
                let mut d = def(NAMES[job as usize], every(secs));
                d.missed = [
                    MissedRule::Skip,
                    MissedRule::CatchUpOnce,
                    MissedRule::Required,
                ][missed as usize];
                d.overlap = match (overlap, d.missed) {
                    (_, MissedRule::Required) => None,
                    (1, _) => Some(Overlap::Skip),
                    (2, _) => Some(Overlap::BufferOne),
                    (3, _) => Some(Overlap::BufferAll),
                    _ => None,
                };
                d.retries = u32::from(retries);
                d.backoff.initial = Duration::from_secs(20);
                d.safe_to_repeat = safe;
                d.timeout = Duration::from_secs(400);
                h.send(Event::Upsert {
                    def: Box::new(d),
                    actor: Actor::new(ACTORS[(job % 2) as usize]),
                });
            }
            Op::Remove(j) => {
                h.send(Event::Remove {
                    job: JobName::new(NAMES[j as usize]).unwrap(),
                    actor: Actor::new("ann"),
                });
            }
            Op::Pause(j) => {
                h.send(Event::Pause {
                    job: JobName::new(NAMES[j as usize]).unwrap(),
                    actor: Actor::new(ACTORS[(j % 2) as usize]),
                    note: "x".into(),
                });
            }
            Op::Resume(j) => {
                h.send(Event::Resume {
                    job: JobName::new(NAMES[j as usize]).unwrap(),
                    actor: Actor::new("ann"),
                });
            }
            Op::RunNow(j) => {
                h.send(Event::RunNow {
                    job: JobName::new(NAMES[j as usize]).unwrap(),
                    actor: Actor::new(ACTORS[(j % 2) as usize]),
                });
            }
            Op::Tick(p) => {
                h.tick(u64::from(p));
            }
            Op::Started(p) => {
                h.send(Event::ProcessStarted {
                    process: ProcessId(u64::from(p)),
                });
            }
            Op::Draining(p) => {
                h.send(Event::ProcessDraining {
                    process: ProcessId(u64::from(p)),
                });
            }
            Op::Finish(k, o) => {
                let outcome = match o {
                    0..=5 => Outcome::Ok,
                    6 => Outcome::Skipped,
                    7 => Outcome::TimedOut,
                    _ => Outcome::failed("exit 1"),
                };
                h.finish(usize::from(k), outcome);
            }
            Op::Crash(p) => {
                h.held.remove(&ProcessId(u64::from(p)));
            }
            Op::Forget(a) => {
                h.send(Event::ForgetActor {
                    actor: Actor::new(ACTORS[a as usize]),
                });
            }
            Op::Wait(s) => h.advance(i64::from(s)),
        }
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// `Host::persist` asserts after every step that the stored parts load equal to the
    /// live state and that the replica kept up through `put_parts`.
    #[test]
    fn persisting_the_touched_jobs_keeps_the_store_equal_to_the_state(
        ops in prop::collection::vec(op(), 1..120)
    ) {
        run_ops(&ops);
    }
}

/// The minimal input CI's run of the property above found (before the fix): a
/// catch-up-once job with a retry waiting, rescheduled, then paused. The pause handed the
/// retry's due time (of the old schedule) to the missed rule untagged, and the state no
/// longer loaded. Kept as it was shrunk.
#[test]
fn a_pause_after_a_reschedule_with_a_retry_waiting_keeps_the_state_loadable() {
    let up = |job, period, missed, retries| Op::Upsert {
        job,
        period,
        missed,
        overlap: 0,
        retries,
        safe: false,
    };
    run_ops(&[
        up(0, 0, 0, 0),
        Op::Finish(0, 0),
        up(0, 0, 0, 0),
        up(0, 0, 0, 0),
        Op::Wait(259),
        up(3, 0, 0, 0),
        Op::Tick(1),
        Op::Wait(282),
        Op::Tick(2),
        Op::Tick(1),
        up(3, 1, 1, 1),
        up(0, 0, 0, 0),
        Op::Finish(0, 7),
        Op::Pause(3),
    ]);
}
