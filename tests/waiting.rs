//! How late a state is (issue 43: a partition's lag in `duetime status` and `/metrics`):
//! `JobRecord::waiting_since` is the oldest due time of a job neither started nor settled,
//! and `State::oldest_waiting` the oldest of them. A state nobody steps falls behind by the
//! time since it; one that is stepped is never behind by more than a tick; a job whose runs
//! overlap waits on its oldest buffered due time; a paused job waits on nothing.

use duetime::{
    Action, Actor, Config, Effect, Event, Held, JobDef, JobName, Now, Overlap, ProcessId, Schedule,
    State, Timestamp,
};

const T0: i64 = 1_750_000_020_000; // on the minute
const MINUTE: i64 = 60_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn now(ms: i64) -> Now {
    Now::new(at(ms), at(ms - T0))
}

/// A state with one every-minute job (`overlap` as given) and process 1, at `T0`.
fn every_minute(overlap: Option<Overlap>) -> State {
    let mut state = State::new(Config::default());
    let every = Schedule::every("1m".parse().unwrap(), "0s".parse().unwrap()).unwrap();
    let mut def = JobDef::new(JobName::new("hello").unwrap(), every);
    def.overlap = overlap;
    let upsert = Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("me"),
    };
    state.step(now(T0), upsert, &mut Vec::new());
    let started = Event::ProcessStarted {
        process: ProcessId(1),
    };
    state.step(now(T0), started, &mut Vec::new());
    state
}

/// A tick of process 1, carrying the runs in `held` (their leases renewed).
fn tick_holding(state: &mut State, ms: i64, held: &[Held]) -> Vec<Effect> {
    let mut effects = Vec::new();
    let tick = Event::Tick {
        process: ProcessId(1),
        held: held.to_vec(),
    };
    state.step(now(ms), tick, &mut effects);
    effects
}

fn tick(state: &mut State, ms: i64) -> Vec<Effect> {
    tick_holding(state, ms, &[])
}

/// The runs the effects start.
fn started(effects: &[Effect]) -> Vec<Held> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start { run, fence, .. }) => Some(Held {
                run: *run,
                fence: *fence,
            }),
            _ => None,
        })
        .collect()
}

fn starts(effects: &[Effect]) -> usize {
    started(effects).len()
}

fn waiting(state: &State) -> Option<i64> {
    state.oldest_waiting().map(|t| t.as_millis())
}

#[test]
fn a_state_nobody_steps_waits_on_its_first_due_time_and_a_tick_catches_it_up() {
    let mut state = every_minute(None);
    // Nobody has ticked: five minutes on, the first due time (T0 + 1m) is four minutes old.
    assert_eq!(waiting(&state), Some(T0 + MINUTE));
    // A tick five minutes on starts the latest and settles the rest: the job now waits on
    // its next due time, ahead of now.
    let effects = tick(&mut state, T0 + 5 * MINUTE);
    assert_eq!(starts(&effects), 1);
    assert_eq!(waiting(&state), Some(T0 + 6 * MINUTE));
}

#[test]
fn buffered_due_times_behind_a_long_run_are_waited_on_oldest_first() {
    let mut state = every_minute(Some(Overlap::BufferAll));
    let going = started(&tick(&mut state, T0 + MINUTE));
    assert_eq!(going.len(), 1);
    // The run goes on (each tick carries it); the next two due times are buffered behind
    // it, not started.
    assert_eq!(
        starts(&tick_holding(&mut state, T0 + 2 * MINUTE, &going)),
        0
    );
    assert_eq!(
        starts(&tick_holding(&mut state, T0 + 3 * MINUTE, &going)),
        0
    );
    let job = state.record(state.seq_of_name("hello").unwrap()).unwrap();
    assert_eq!(job.owed(), 2);
    assert_eq!(
        job.waiting_since().map(|t| t.as_millis()),
        Some(T0 + 2 * MINUTE)
    );
    assert_eq!(waiting(&state), Some(T0 + 2 * MINUTE));
}

#[test]
fn a_paused_job_waits_on_nothing() {
    let mut state = every_minute(None);
    let pause = Event::Pause {
        job: JobName::new("hello").unwrap(),
        actor: Actor::new("me"),
        note: "maintenance".to_string(),
    };
    state.step(now(T0 + 10_000), pause, &mut Vec::new());
    assert_eq!(waiting(&state), None);
    assert_eq!(starts(&tick(&mut state, T0 + 5 * MINUTE)), 0);
    assert_eq!(waiting(&state), None);
}
