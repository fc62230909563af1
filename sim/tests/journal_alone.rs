//! The checker fed a journal alone, as the host's end-to-end tests feed it the store's
//! journal: it never sees the events that made the journal, so a check that compares a
//! record with its event must not read "no event" as a wrong one.

use std::collections::BTreeMap;

use duetime::{
    Action, Actor, Config, Effect, Event, Fence, Held, JobDef, JobName, Now, Outcome, ProcessId,
    RunId, Schedule, Start, State, Timestamp,
};
use duetime_sim::check::{self, Horizon, JobFacts, Reported};
use duetime_sim::oracle::Spec;

const HOUR: i64 = 3_600_000;
const T0: i64 = 1_748_854_800_000; // 2025-06-02T09:00:00Z

fn now(ms: i64) -> Now {
    Now::at(Timestamp::from_millis(ms))
}

fn facts(def: &JobDef) -> BTreeMap<JobName, JobFacts> {
    let mut specs = BTreeMap::new();
    let spec = Spec::Every {
        period_ms: HOUR,
        offset_ms: 0,
    };
    specs.insert(def.schedule.to_string(), spec);
    let json = serde_json::json!({
        "safe_to_repeat": def.safe_to_repeat,
        "missed": def.missed,
        "specs": specs,
    });
    let facts: JobFacts = serde_json::from_value(json).expect("facts from their stored form");
    BTreeMap::from([(def.name.clone(), facts)])
}

/// Steps `event` and keeps its journal lines; answers the run and fence it started, if any.
fn step(
    state: &mut State,
    at: i64,
    event: Event,
    journal: &mut Vec<duetime::Record>,
) -> Option<(RunId, Fence)> {
    let mut effects = Vec::new();
    state.step(now(at), event, &mut effects);
    let mut started = None;
    for e in effects {
        match e {
            Effect::Journal(r) => journal.push(r),
            Effect::Do(Action::Start(Start { run, fence, .. })) => started = Some((run, fence)),
            _ => {}
        }
    }
    started
}

#[test]
fn an_adoption_under_the_runs_own_fence_is_no_violation_in_a_journal_alone() {
    // p1 starts the hourly run and dies; p2, its next incarnation, adopts the run under
    // the fence it was started with and reports it ok. Nothing here is wrong, and the
    // checker, shown only the journal, must say so (CI for 9549f89 failed the host's kill -9
    // test on "adopted under None", the fence of an event the checker never saw).
    let def = JobDef::new(
        JobName::new("backup").unwrap(),
        Schedule::every("1h".parse().unwrap(), duetime::Duration::ZERO).unwrap(),
    );
    let mut state = State::new(Config::default());
    let mut journal = Vec::new();
    let (p1, p2) = (ProcessId(1), ProcessId(2));
    let upsert = Event::Upsert {
        def: Box::new(def.clone()),
        actor: Actor::new("config"),
    };
    step(&mut state, T0 - 60_000, upsert, &mut journal);
    step(
        &mut state,
        T0 - 30_000,
        Event::ProcessStarted { process: p1 },
        &mut journal,
    );
    let tick = Event::Tick {
        process: p1,
        held: Vec::new(),
    };
    let (run, fence) = step(&mut state, T0 + 10_000, tick, &mut journal).expect("the 09:00 run");
    step(
        &mut state,
        T0 + 50_000,
        Event::ProcessStarted { process: p2 },
        &mut journal,
    );
    let adopt = Event::Adopt {
        process: p2,
        run,
        fence,
    };
    step(&mut state, T0 + 55_000, adopt, &mut journal);
    let tick = Event::Tick {
        process: p2,
        held: vec![Held { run, fence }],
    };
    step(&mut state, T0 + 60_000, tick, &mut journal);
    let finished = Event::RunFinished {
        process: p2,
        job: def.name.clone(),
        run,
        fence,
        outcome: Outcome::Ok,
    };
    step(&mut state, T0 + 90_000, finished, &mut journal);
    let adopted = journal.iter().any(|r| {
        matches!(
            &r.entry,
            duetime::Entry::History(duetime::History::Adopted { .. })
        )
    });
    assert!(adopted, "the story adopts the run: {journal:#?}");

    let reported: Reported = BTreeMap::from([(run, vec![Outcome::Ok])]);
    let horizon = Horizon {
        end: T0 + 120_000,
        settle_bound: 5_000,
        run_bound: 15_000,
        check_liveness: false,
    };
    let mut probes = BTreeMap::new();
    let violations = check::check(&journal, &facts(&def), &reported, horizon, &mut probes);
    assert!(violations.is_empty(), "{violations:#?}");
}
