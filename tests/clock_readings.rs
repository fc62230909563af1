//! Clock readings that cannot be true (issue 48): a monotonic clock read in the wrong unit
//! (nanoseconds, as Python's `time.monotonic_ns()` gives it, where the core takes
//! milliseconds) or at the end of time. Trusted, one such tick carried the store's clock
//! 694 days ahead: a ledger line "missed, count 999998" per job and a run for a due time
//! two years on, and no sane tick afterwards brought the jobs back. The core judges such a
//! measure as a clock gap (told `clock_backward`: the wall clock moved far less than the
//! monotonic one) and carries nothing by it, so the store's clock, the ledger and the
//! schedule stay where true time has them.

use duetime::{
    Action, Actor, ClockGapKind, Config, Effect, Entry, Event, JobDef, JobName, LedgerEntry,
    Notice, Now, Outcome, ProcessId, Schedule, Start, State, Timestamp,
};

const T0: i64 = 1_750_000_020_000; // on the minute
const MINUTE: i64 = 60_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

/// A state with one every-minute job and process 1 started at `T0` (monotonic 0).
fn one_job() -> (State, Vec<Effect>) {
    let mut state = State::new(Config::default());
    let mut effects = Vec::new();
    let every = Schedule::every("1m".parse().unwrap(), "0s".parse().unwrap()).unwrap();
    let def = JobDef::new(JobName::new("hello").unwrap(), every);
    let actor = Actor::new("me");
    let upsert = Event::Upsert {
        def: Box::new(def),
        actor,
    };
    state.step(Now::new(at(T0), at(0)), upsert, &mut effects);
    let started = Event::ProcessStarted {
        process: ProcessId(1),
    };
    state.step(Now::new(at(T0), at(0)), started, &mut effects);
    (state, effects)
}

/// Steps `event`; the effects; every run it starts is finished ok at once.
fn step(state: &mut State, now: Now, event: Event) -> Vec<Effect> {
    let mut effects = Vec::new();
    state.step(now, event, &mut effects);
    let starts: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start {
                run, fence, job, ..
            })) => Some((*run, *fence, job.clone())),
            _ => None,
        })
        .collect();
    for (run, fence, job) in starts {
        let done = Event::RunFinished {
            process: ProcessId(1),
            job,
            run,
            fence,
            outcome: Outcome::Ok,
        };
        state.step(now, done, &mut effects);
    }
    effects
}

fn tick() -> Event {
    Event::Tick {
        process: ProcessId(1),
        held: Vec::new(),
    }
}

/// The largest count of any ledger line among `effects`.
fn largest_count(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(j) => match &j.entry {
                Entry::Ledger(LedgerEntry { count, .. }) => Some(*count),
                _ => None,
            },
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn started_due(effects: &[Effect]) -> Vec<Timestamp> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start { covers, .. })) => covers.as_ref().map(|c| c.to),
            _ => None,
        })
        .collect()
}

/// Ten minutes of sane ticks, from `from` (wall) with the monotonic clock `mono` at it:
/// every due time among them runs, on its minute.
fn sane_ticks_run_every_minute(state: &mut State, from: i64, mono: i64) {
    for k in 1..=10 {
        let now = Now::new(at(from + k * MINUTE), at(mono + k * MINUTE));
        let effects = step(state, now, tick());
        assert_eq!(started_due(&effects), [at(from + k * MINUTE)], "tick {k}");
    }
    let view = state.job("hello", at(from + 10 * MINUTE)).unwrap();
    assert_eq!(view.next_due, Some(at(from + 11 * MINUTE)));
    assert_eq!(view.missed_24h, 0);
}

/// Steps up to four ticks, each read by `next` from the state before it, until one releases
/// the held process: that tick's number (from 1) and its wall clock, or `None`.
fn released_within_four_ticks(
    state: &mut State,
    mut next: impl FnMut(&State) -> Now,
) -> Option<(usize, Timestamp)> {
    for k in 1..=4 {
        let now = next(state);
        let effects = step(state, now, tick());
        if gaps(&effects).contains(&ClockGapKind::Released) {
            return Some((k, now.wall));
        }
    }
    None
}

fn gaps(effects: &[Effect]) -> Vec<ClockGapKind> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::ClockGap { kind, .. }) => Some(*kind),
            _ => None,
        })
        .collect()
}

#[test]
fn a_tick_with_its_monotonic_clock_in_nanoseconds_moves_nothing_ahead() {
    let (mut state, _) = one_job();
    let bad = Now::new(at(T0 + MINUTE), at(60_000_000_000));
    let effects = step(&mut state, bad, tick());
    assert!(largest_count(&effects) <= 1, "{effects:?}");
    assert_eq!(
        gaps(&effects),
        [ClockGapKind::ClockBackward],
        "told as a gap"
    );
    assert!(started_due(&effects).iter().all(|d| *d <= at(T0 + MINUTE)));
    assert!(state.clock().unwrap() <= at(T0 + MINUTE));
    // The host keeps sending nanoseconds: each reading is judged alike, and the schedule
    // goes on by the wall clock, every minute run once, none missed.
    for k in 2..=5 {
        let now = Now::new(at(T0 + k * MINUTE), at(k * MINUTE * 1_000_000));
        let effects = step(&mut state, now, tick());
        assert_eq!(started_due(&effects), [at(T0 + k * MINUTE)], "tick {k}");
    }
    // Sane readings again (the host fixed its unit): every job comes back.
    sane_ticks_run_every_minute(&mut state, T0 + 5 * MINUTE, 5 * MINUTE);
}

#[test]
fn a_monotonic_reading_at_the_end_of_time_moves_nothing_ahead() {
    let (mut state, _) = one_job();
    let end = Now::new(at(T0 + MINUTE), Timestamp::MAX);
    let effects = step(&mut state, end, tick());
    assert!(largest_count(&effects) <= 1, "{effects:?}");
    let view = state.job("hello", at(T0 + MINUTE)).unwrap();
    assert!(view.next_due.is_some_and(|d| d <= at(T0 + 2 * MINUTE)));
    assert!(view.missed_24h == 0, "{view:?}");
    // Back to a sane monotonic clock (read behind its last reading: it starts again).
    sane_ticks_run_every_minute(&mut state, T0 + MINUTE, MINUTE);
}

#[test]
fn a_restart_with_sane_clocks_after_a_nanosecond_tick_runs_every_job() {
    let (mut state, _) = one_job();
    let bad = Now::new(at(T0 + MINUTE), at(60_000_000_000));
    step(&mut state, bad, tick());
    // A new incarnation, clocks right, a minute later; then ten minutes of ticks.
    let p2 = Now::new(at(T0 + 2 * MINUTE), at(0));
    let restarted = Event::ProcessStarted {
        process: ProcessId(1),
    };
    step(&mut state, p2, restarted);
    // (Process 1 again, the harder case: its last readings were the bad ones.)
    sane_ticks_run_every_minute(&mut state, T0 + 2 * MINUTE, 0);
}

/// A process held ahead while it read nanoseconds is released as any other once it reads
/// milliseconds again: its solitude was marked on the nanosecond readings, which the
/// millisecond ones never reach (light seed 1371: held for good, the store's clock minutes
/// behind every clock, J4). Here the store's clock is left behind by a freeze the measure
/// cannot vouch for; the next readings are the only witness, and release it.
#[test]
fn a_clock_held_while_it_read_nanoseconds_is_released_once_it_reads_milliseconds() {
    let (mut state, _) = one_job();
    let ns = |ms: i64| at(ms * 1_000_000);
    step(&mut state, Now::new(at(T0 + 30_000), ns(30_000)), tick());
    // Frozen ten minutes: the nanosecond measure is believed for two minutes at most.
    let frozen = Now::new(at(T0 + 630_000), ns(630_000));
    let effects = step(&mut state, frozen, tick());
    assert!(
        gaps(&effects).contains(&ClockGapKind::HeldAhead),
        "{effects:?}"
    );
    // Milliseconds again (the monotonic clock reads behind its last reading), ticks 30 s
    // apart: released within two ticks of solitude, and the store's clock is the wall's.
    let mut released = None;
    for k in 1..=4 {
        let wall = T0 + 630_000 + k * 30_000;
        let effects = step(&mut state, Now::new(at(wall), at(k * 30_000)), tick());
        if gaps(&effects).contains(&ClockGapKind::Released) {
            released = Some(k);
            assert_eq!(state.clock(), Some(at(wall)));
            break;
        }
    }
    assert!(
        released.is_some_and(|k| k <= 3),
        "released at tick {released:?}"
    );
}

/// A lone host that always reads nanoseconds and sleeps half an hour to its next due time:
/// its measure is bounded, so the store's clock moves by the bound only and the host is
/// held ahead. Held, it is asked to wake within a tick (`next_wake_for`), and a tick apart
/// its wall clock's advance is believed whole: its lead holds still, no one contradicts it,
/// and it is released after two ticks of solitude, the store's clock its wall clock's again
/// (light seeds 10313 and 12205: it slept to its due time by the store's clock, its lead
/// grew at every event, each taken as a new jump, and it stayed held for hours, J4).
#[test]
fn a_lone_host_reading_nanoseconds_through_long_sleeps_is_released() {
    let (mut state, _) = one_job();
    let ns = |ms: i64| at(ms * 1_000_000);
    let p1 = ProcessId(1);
    step(&mut state, Now::new(at(T0 + 30_000), ns(30_000)), tick());
    let mut wall = T0 + 30 * MINUTE;
    let effects = step(&mut state, Now::new(at(wall), ns(wall - T0)), tick());
    assert!(
        gaps(&effects).contains(&ClockGapKind::HeldAhead),
        "{effects:?}"
    );
    // It ticks when the store asks it to, by its own clock: within a tick.
    let released = released_within_four_ticks(&mut state, |state| {
        let wake = state.next_wake_for(p1).expect("a held process wakes");
        assert!(wake.as_millis() <= wall + 30_000, "wakes at {wake:?}");
        wall = wake.as_millis().max(wall + 1);
        Now::new(at(wall), ns(wall - T0))
    });
    assert!(
        released.is_some_and(|(k, _)| k <= 3),
        "released at tick {released:?}"
    );
    assert_eq!(state.clock(), released.map(|(_, wall)| wall));
}

/// A held host reading nanoseconds whose wall clock is set two and a half minutes on
/// between two ticks half a minute apart: its measure cannot tell the jump from time
/// passing, so no more than `clock_jump` of its wall clock's advance is believed, its lead
/// moves by more than `clock_jump`, and its solitude starts again: it is not released by
/// that event (swarm seed 26663: believing up to a lease plus `clock_jump`, its lead held
/// still and the jump released it at once, J2). Ticks half a minute apart then release it.
#[test]
fn a_jump_of_a_held_host_reading_nanoseconds_is_no_solitude() {
    let (mut state, _) = one_job();
    let ns = |ms: i64| at(ms * 1_000_000);
    step(&mut state, Now::new(at(T0 + 30_000), ns(30_000)), tick());
    let asleep = 30 * MINUTE;
    let effects = step(&mut state, Now::new(at(T0 + asleep), ns(asleep)), tick());
    assert!(gaps(&effects).contains(&ClockGapKind::HeldAhead));
    // Half a minute on by its monotonic clock, three by its wall clock (set on 2m30s).
    let (mut wall, mut mono) = (T0 + asleep + 180_000, asleep + 30_000);
    let effects = step(&mut state, Now::new(at(wall), ns(mono)), tick());
    assert!(
        !gaps(&effects).contains(&ClockGapKind::Released),
        "released by the jump: {effects:?}"
    );
    let released = released_within_four_ticks(&mut state, |_| {
        (wall, mono) = (wall + 30_000, mono + 30_000);
        Now::new(at(wall), ns(mono))
    });
    assert!(
        released.is_some_and(|(k, _)| k <= 3),
        "released at tick {released:?}"
    );
    assert_eq!(state.clock(), released.map(|(_, wall)| wall));
}
