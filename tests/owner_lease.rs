//! Single-owner coordination and drains: stories of an owner lease taken, renewed, lapsed
//! and taken over, of a drain handing it on, and a property that only the owner of the
//! moment ever starts a run.

mod support;

use duetime::{Action, Notice, Start};
use duetime::{
    Actor, Config, Coordination, Effect, Event, Fence, Held, Inconsistency, JobName, LoadError,
    Now, Outcome, ProcessId, RunId, State, Timestamp,
};
use proptest::prelude::*;
use support::*;

fn single_owner() -> Config {
    Config {
        coordination: Coordination::SingleOwner,
        ..Config::default()
    }
}

fn starts(effects: &[Effect]) -> Vec<(RunId, ProcessId)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start { run, process, .. })) => Some((*run, *process)),
            _ => None,
        })
        .collect()
}

fn owners(effects: &[Effect]) -> Vec<(ProcessId, Fence)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::Owner { process, fence, .. }) => Some((*process, *fence)),
            _ => None,
        })
        .collect()
}

fn drained(effects: &[Effect]) -> Vec<ProcessId> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::Drained { process }) => Some(*process),
            _ => None,
        })
        .collect()
}

#[test]
fn a_standby_takes_over_a_lapsed_owner_lease_and_the_old_owner_claims_nothing_more() {
    let mut s = Story::with_config(single_owner());
    let mut def = job("report", every("1m"));
    def.safe_to_repeat = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    assert_eq!(owners(&s.last), vec![(ProcessId(1), Fence(1))]);
    s.start("08:59:40", 2);
    assert!(
        owners(&s.last).is_empty(),
        "p1's lease is live: p2 stands by"
    );
    s.tick("09:00:05", 1);
    assert_eq!(starts(&s.last), vec![(RunId(1), ProcessId(1))]);
    s.tick("09:00:20", 2);
    assert!(
        s.last.is_empty(),
        "a standby visits no job and claims nothing"
    );
    s.tick("09:00:35", 1);
    s.note("p1 stalls (a long GC pause); its owner lease runs to 09:01:35");
    s.tick("09:01:20", 2);
    assert!(owners(&s.last).is_empty(), "not lapsed yet");
    s.tick("09:01:40", 2);
    let taken = owners(&s.last);
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].0, ProcessId(2));
    assert!(taken[0].1 > Fence(1), "a takeover carries a higher fence");
    assert!(
        starts(&s.last).iter().all(|(_, p)| *p == ProcessId(2)),
        "the new owner claims, nobody else"
    );
    s.note("p1 wakes with its stale run and lease");
    s.tick("09:01:45", 1);
    assert!(
        starts(&s.last).is_empty(),
        "a fenced-out owner claims nothing"
    );
    assert!(owners(&s.last).is_empty(), "nor takes a live lease back");
    assert!(
        s.last.iter().any(|e| matches!(
            e,
            Effect::Do(Action::Cancel {
                run: RunId(1),
                process: ProcessId(1),
                ..
            })
        )),
        "its lost run is cancelled"
    );
    s.finish_as("09:01:50", 1, 1, 2, Outcome::Ok);
    assert!(starts(&s.last).is_empty());
    s.tick("09:02:05", 2);
    assert!(starts(&s.last).iter().all(|(_, p)| *p == ProcessId(2)));
    assert_eq!(
        s.state.owner(at("09:02:05")).map(|o| o.holder),
        Some(ProcessId(2))
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_drain_hands_the_lease_over_and_a_manual_run_asked_meanwhile_runs_under_the_next_owner() {
    let mut s = Story::with_config(single_owner());
    s.show_history = true;
    s.define("08:59", job("export", every("1h")));
    let mut adhoc = job("adhoc", every("1d"));
    adhoc.safe_to_repeat = true;
    s.define("08:59", adhoc);
    s.start("08:59:30", 1);
    s.start("08:59:40", 2);
    s.tick("09:00:05", 1);
    assert_eq!(starts(&s.last), vec![(RunId(1), ProcessId(1))]);
    s.send(
        "09:00:30",
        "p1 draining (an upgrade)",
        Event::ProcessDraining {
            process: ProcessId(1),
        },
    );
    assert!(
        s.last.iter().any(|e| matches!(
            e,
            Effect::Notice(Notice::OwnerReleased {
                process: ProcessId(1),
                ..
            })
        )),
        "the owner gives its lease up at once"
    );
    assert!(drained(&s.last).is_empty(), "p1 still holds r1");
    s.command(
        "09:00:40",
        "run-now adhoc by ana",
        Event::RunNow {
            job: JobName::new("adhoc").unwrap(),
            actor: Actor::new("ana"),
        },
    );
    s.tick("09:00:50", 1);
    assert!(
        starts(&s.last).is_empty(),
        "a draining process claims nothing"
    );
    assert!(owners(&s.last).is_empty(), "nor takes the free lease");
    s.tick("09:01:00", 2);
    assert_eq!(owners(&s.last).len(), 1, "the standby takes the free lease");
    assert_eq!(
        starts(&s.last),
        vec![(RunId(2), ProcessId(2))],
        "the manual run queued during the drain starts under the new owner"
    );
    s.finish("09:02:00", 1, Outcome::Ok);
    assert_eq!(drained(&s.last), vec![ProcessId(1)], "its last run ended");
    s.tick("09:02:10", 1);
    s.finish("09:03:00", 2, Outcome::Ok);
    assert!(drained(&s.last).is_empty(), "told once");
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_drain_completes_when_its_last_run_is_lost_at_another_process_tick() {
    // Shared coordination: drains work the same, without an owner lease.
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1h")));
    s.start("08:59:30", 1);
    s.start("08:59:40", 2);
    s.tick("09:00:05", 1);
    s.send(
        "09:00:10",
        "p1 draining",
        Event::ProcessDraining {
            process: ProcessId(1),
        },
    );
    assert!(drained(&s.last).is_empty());
    s.crash("09:00:20", 1);
    s.tick("09:00:40", 2);
    assert!(drained(&s.last).is_empty(), "r1's lease runs to 09:01:05");
    s.tick("09:01:10", 2);
    assert_eq!(
        drained(&s.last),
        vec![ProcessId(1)],
        "r1 was lost: nothing left"
    );
    s.send(
        "09:01:20",
        "p2 draining",
        Event::ProcessDraining {
            process: ProcessId(2),
        },
    );
    assert_eq!(
        drained(&s.last),
        vec![ProcessId(2)],
        "no run: drained at once"
    );
    s.tick("09:01:30", 2);
    assert!(drained(&s.last).is_empty(), "told once");
    assert!(
        s.state.owner_lease().is_none(),
        "shared coordination has none"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_wall_clock_gone_back_never_makes_the_owner_lease_younger() {
    let mut s = Story::with_config(single_owner());
    s.start("09:00:00", 1);
    s.start("09:00:01", 2);
    let until = s.state.owner_lease().unwrap().until;
    assert_eq!(until, at("09:01:00"));
    s.tick("08:30:00", 1);
    assert_eq!(
        s.state.owner_lease().unwrap().until,
        at("09:01:01"),
        "p1's clock, half an hour behind the store's, is held to the store's time: its \
         renewal counts there, and the lease is never made younger"
    );
    s.tick("09:01:00.500", 2);
    assert!(
        owners(&s.last).is_empty(),
        "judged by the store's time: not lapsed"
    );
    s.tick("09:01:01.001", 2);
    assert_eq!(owners(&s.last), vec![(ProcessId(2), Fence(2))]);
    assert_eq!(
        s.state.next_wake_for(ProcessId(1)),
        Some(at("08:30:30")),
        "p1, held behind, wakes a tick after its last event by its own clock (before the \
         new lease can lapse, at 08:32:00.002 by it): while a clock is held behind every \
         process shows itself once a tick, so it is contradicted, or released, in time"
    );
    assert_eq!(
        s.state.next_wake_for(ProcessId(2)),
        Some(at("09:01:31.001")),
        "the owner wakes halfway through its lease to renew it"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn the_default_config_and_no_lease_leave_the_stored_form_as_it_was() {
    let state = State::new(Config::default());
    let json = serde_json::to_string(&state).unwrap();
    assert!(
        !json.contains("coordination") && !json.contains("owner"),
        "{json}"
    );
    let mut s = State::new(single_owner());
    let mut effects = Vec::new();
    let now = Now::at(at("09:00"));
    s.step(
        now,
        Event::ProcessStarted {
            process: ProcessId(7),
        },
        &mut effects,
    );
    let json = serde_json::to_string(&s).unwrap();
    assert!(json.contains(r#""coordination":"single_owner""#), "{json}");
    assert!(json.contains(r#""owner":{"holder":7,"fence":1"#), "{json}");
    let back: State = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    // An owner lease under shared coordination is refused on load, saying why.
    let shared = json.replace(r#","coordination":"single_owner""#, "");
    let load = |json: &str| {
        let mut de = serde_json::Deserializer::from_str(json);
        State::load(&mut de).expect("decodes").map(|_| ())
    };
    assert_eq!(
        load(&shared),
        Err(LoadError::Inconsistent {
            what: Inconsistency::OwnerUnderShared {
                holder: ProcessId(7),
                fence: Fence(1),
            }
        })
    );
    // So is a lease held by a process the state does not know.
    let stranger = json.replace(r#""holder":7"#, r#""holder":8"#);
    assert_eq!(
        load(&stranger),
        Err(LoadError::Inconsistent {
            what: Inconsistency::OwnerHolderUnknown {
                holder: ProcessId(8)
            }
        })
    );
}

#[derive(Debug, Clone)]
enum Op {
    /// Time passes (seconds).
    Wait(u16),
    Start(u8),
    Tick(u8),
    Drain(u8),
    /// The process reports the oldest run it holds.
    Finish(u8),
    RunNow(u8),
    /// The process forgets its runs and falls silent (a new incarnation may start later).
    Crash(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u16..200).prop_map(Op::Wait),
        1 => (0u8..3).prop_map(Op::Start),
        5 => (0u8..3).prop_map(Op::Tick),
        1 => (0u8..3).prop_map(Op::Drain),
        2 => (0u8..3).prop_map(Op::Finish),
        1 => (0u8..2).prop_map(Op::RunNow),
        1 => (0u8..3).prop_map(Op::Crash),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Whatever the processes do, by the store's order of steps: every `Start` goes to the
    /// process holding the owner lease after that step, unlapsed; owner fences only grow;
    /// a drained process is told once and holds no run then.
    #[test]
    fn only_the_owner_of_the_moment_starts_runs(ops in prop::collection::vec(op(), 1..120)) {
        let mut state = State::new(single_owner());
        let mut t = at("08:59");
        let mut effects = Vec::new();
        for (i, name) in ["alpha", "beta"].iter().enumerate() {
            let mut def = job(name, every(if i == 0 { "1m" } else { "5m" }));
            def.safe_to_repeat = true;
            state.step(Now::at(t), Event::Upsert { def: Box::new(def), actor: Actor::new("t") }, &mut effects);
        }
        // Slot -> (current incarnation, the runs it holds).
        let mut procs: Vec<Option<(ProcessId, Vec<Held>)>> = vec![None, None, None];
        let mut next_process = 1u64;
        let mut last_fence = Fence(0);
        let mut told: Vec<ProcessId> = Vec::new();
        let mut jobs_of: std::collections::BTreeMap<RunId, JobName> = Default::default();
        for op in ops {
            let event = match op {
                Op::Wait(secs) => {
                    t = Timestamp::from_millis(t.as_millis() + i64::from(secs) * 1000);
                    continue;
                }
                Op::Start(slot) => {
                    if procs[slot as usize].is_some() { continue; }
                    let p = ProcessId(next_process);
                    next_process += 1;
                    procs[slot as usize] = Some((p, Vec::new()));
                    Event::ProcessStarted { process: p }
                }
                Op::Tick(slot) => match &procs[slot as usize] {
                    Some((p, held)) => Event::Tick { process: *p, held: held.clone() },
                    None => continue,
                },
                Op::Drain(slot) => match &procs[slot as usize] {
                    Some((p, _)) => Event::ProcessDraining { process: *p },
                    None => continue,
                },
                Op::Finish(slot) => match &mut procs[slot as usize] {
                    Some((p, held)) if !held.is_empty() => {
                        let h = held.remove(0);
                        Event::RunFinished {
                            process: *p,
                            job: jobs_of
                                .get(&h.run)
                                .cloned()
                                .unwrap_or_else(|| JobName::new("unknown").unwrap()),
                            run: h.run,
                            fence: h.fence,
                            outcome: Outcome::Ok,
                        }
                    }
                    _ => continue,
                },
                Op::RunNow(j) => Event::RunNow {
                    job: JobName::new(["alpha", "beta"][j as usize]).unwrap(),
                    actor: Actor::new("ana"),
                },
                Op::Crash(slot) => {
                    procs[slot as usize] = None;
                    continue;
                }
            };
            effects.clear();
            state.step(Now::at(t), event, &mut effects);
            let lease = state.owner_lease();
            // The time the core acted on: the wall clock, or the store's clock when it held
            // that wall clock ahead (`step/clock.rs`), as every record of the step says.
            let acted = effects.iter().find_map(|e| match e {
                Effect::Journal(r) => Some(r.at),
                _ => None,
            });
            for e in &effects {
                match e {
                    Effect::Do(Action::Start(Start { run, fence, process, job, .. })) => {
                        let o = lease.expect("a start with no owner");
                        prop_assert_eq!(o.holder, *process, "a start by a non-owner");
                        let acted = acted.expect("a start is recorded");
                        prop_assert!(acted <= t, "the core acted ahead of the wall clock");
                        prop_assert!(acted <= o.until, "a start under a lapsed lease");
                        jobs_of.insert(*run, job.clone());
                        if let Some((_, held)) = procs.iter_mut().flatten().find(|(p, _)| p == process) {
                            held.push(Held { run: *run, fence: *fence });
                        }
                    }
                    Effect::Notice(Notice::Owner { fence, .. }) => {
                        prop_assert!(*fence > last_fence, "owner fences only grow");
                        last_fence = *fence;
                    }
                    Effect::Do(Action::Cancel { run, process, .. }) => {
                        if let Some((_, held)) = procs.iter_mut().flatten().find(|(p, _)| p == process) {
                            held.retain(|h| h.run != *run);
                        }
                    }
                    Effect::Notice(Notice::Drained { process }) => {
                        prop_assert!(!told.contains(process), "drained told twice");
                        told.push(*process);
                        let holds = state.records().any(|(_, r)| r.run().is_some_and(|r| r.holder() == *process));
                        prop_assert!(!holds, "drained while holding a run");
                    }
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn a_store_that_keeps_jobs_apart_carries_the_owner_lease_in_its_globals() {
    let mut s = State::new(single_owner());
    let mut effects = Vec::new();
    s.step(
        Now::at(at("09:00")),
        Event::ProcessStarted {
            process: ProcessId(1),
        },
        &mut effects,
    );
    let globals = s.globals();
    assert_eq!(globals.owner().map(|o| o.holder), Some(ProcessId(1)));
    let rebuilt = State::from_parts(globals.clone(), Vec::new()).unwrap();
    assert_eq!(rebuilt, s);
    // Another process took the lease in the store (started after p1 went quiet, so held
    // for two ticks first): putting its globals moves it here.
    let mut other = rebuilt.clone();
    other.step(
        Now::at(at("09:05")),
        Event::ProcessStarted {
            process: ProcessId(2),
        },
        &mut effects,
    );
    other.step(
        Now::at(at("09:06")),
        Event::Tick {
            process: ProcessId(2),
            held: Vec::new(),
        },
        &mut effects,
    );
    let mut here = s.clone();
    here.put_parts(other.globals(), Vec::new()).unwrap();
    assert_eq!(here.owner_lease().map(|o| o.holder), Some(ProcessId(2)));
    // A lease whose fence the counter never handed out is refused, the state left whole.
    let mut bad = other.globals();
    let next_fence = bad.next_fence();
    if let Some(o) = bad.owner_mut() {
        o.fence = Fence(next_fence);
    }
    let before = here.clone();
    let err = here.put_parts(bad, Vec::new()).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::Inconsistent {
                what: Inconsistency::OwnerFenceAhead { .. }
            }
        ),
        "{err:?}"
    );
    assert_eq!(here, before);
}
