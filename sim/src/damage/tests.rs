//! Every damage of the catalogue, made from the rows of a real state (built by stepping
//! the core) and offered to it: each must be answered as the catalogue says, and a
//! refusal must leave the copy as it was. What the worlds rely on, checked without one.

use std::collections::{BTreeMap, BTreeSet};

use super::{offer, Damager, Maker, Site, CATALOGUE};
use duetime::{
    Action, Actor, Config, Coordination, Duration, Effect, Event, Held, JobDef, JobName,
    MissedRule, Now, ProcessId, Schedule, Start, State, Timestamp,
};

/// 2025-06-02T09:00:00Z.
const T0: i64 = 1_748_854_800_000;

fn every(name: &str, secs: u64) -> JobDef {
    let s = Schedule::every(Duration::from_secs(secs), Duration::ZERO).unwrap();
    JobDef::new(JobName::new(name).unwrap(), s)
}

/// A store with a `required` job running and owing what came due meanwhile, a `skip` job
/// running, a one-shot not yet due and a job under the dead-man's switch.
fn store(coordination: Coordination) -> State {
    let config = Config {
        coordination,
        ..Config::default()
    };
    let mut state = State::new(config);
    let mut required = every("ledger", 60);
    required.missed = MissedRule::Required;
    let at = Timestamp::from_millis(T0 + 86_400_000);
    let once = JobDef::new(JobName::new("once").unwrap(), Schedule::At { instant: at });
    let mut watched = every("watched", 300);
    watched.expect_success_within = Some(Duration::from_secs(3_600));
    let mut out = Vec::new();
    for def in [required, every("sync", 120), once, watched] {
        let actor = Actor::new("ana");
        let event = Event::Upsert {
            def: Box::new(def),
            actor,
        };
        state.step(Now::at(Timestamp::from_millis(T0)), event, &mut out);
    }
    let process = ProcessId(1);
    let at = |mins: i64| Now::at(Timestamp::from_millis(T0 + mins * 60_000));
    state.step(at(5), Event::ProcessStarted { process }, &mut out);
    let held: Vec<Held> = out
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start { run, fence, .. })) => Some(Held {
                run: *run,
                fence: *fence,
            }),
            _ => None,
        })
        .collect();
    assert!(held.len() >= 2, "runs started: {out:?}");
    state.step(at(9), Event::Tick { process, held }, &mut out);
    state
}

#[test]
fn every_damage_is_answered_as_the_catalogue_says() {
    let mut answered: BTreeSet<&str> = BTreeSet::new();
    for coordination in [Coordination::Shared, Coordination::SingleOwner] {
        let state = store(coordination);
        let rows: BTreeMap<_, _> = state.records().map(|(s, r)| (s, r.clone())).collect();
        let owes = rows.values().any(|r| r.owed() > 0);
        assert!(
            owes && rows.values().any(|r| r.run().is_some()),
            "the store owes and runs"
        );
        let globals = state.globals();
        // The rows offered with no others, then as if the step had written them all.
        let all: BTreeMap<_, _> = rows.iter().map(|(s, r)| (*s, Some(r.clone()))).collect();
        for changed in [BTreeMap::new(), all] {
            let site = Site {
                globals: &globals,
                rows: &rows,
                changed: &changed,
            };
            let mut damager = Damager::new(0);
            for _ in 0..8 {
                for maker in CATALOGUE {
                    let made = match *maker {
                        Maker::Globals(make) => vec![make(&site, &mut damager.rng).unwrap()],
                        Maker::Row(make) => rows
                            .iter()
                            .map(|(&seq, rec)| {
                                let row = super::Row::new(seq, rec);
                                make(&site, &row, &mut damager.rng).unwrap()
                            })
                            .collect(),
                    };
                    for mut made in made.into_iter().flatten() {
                        let mut copy = state.clone();
                        made.whole = true;
                        offer(&mut copy, &made, &site).unwrap_or_else(|e| panic!("{e}"));
                        answered.insert(made.probe.name());
                    }
                }
            }
        }
    }
    // Every kind of damage but the counters moved back under the owner's fence (which
    // the draws of `counters_behind` may miss: it is `owner_fence_ahead`'s answer).
    assert!(
        answered.len() >= 51,
        "{} answered: {answered:#?}",
        answered.len()
    );
}

#[test]
fn damages_come_about_once_in_two_hundred_steps() {
    let state = store(Coordination::Shared);
    let rows: BTreeMap<_, _> = state.records().map(|(s, r)| (s, r.clone())).collect();
    let globals = state.globals();
    let changed = BTreeMap::new();
    let site = Site {
        globals: &globals,
        rows: &rows,
        changed: &changed,
    };
    let mut damager = Damager::new(1);
    let made = (0..20_000)
        .filter(|&step| damager.draw(step, &site).unwrap().is_some())
        .count();
    assert!((70..=130).contains(&made), "{made} damages in 20,000 steps");
}
