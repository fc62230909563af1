//! `State::self_check_touched` against `State::self_check`: each way the record or index
//! entries of a job a step touched can be broken is found by both, with the same answer, and
//! the whole-state parts are found whatever was touched. What only the whole check finds is
//! written down by a test too.

use crate::inconsistency::Inconsistency;
use crate::jobs::JobSeq;
use crate::{Actor, Duration, Event, JobDef, JobName, Now, Schedule, State, Timestamp};

/// `lanes::tests::a_busy_lane` (two jobs of one key, one running and one waiting for the
/// lane) and a third job without a key, idle: the name, wake, run and lane indexes all in
/// use.
fn a_busy_state() -> State {
    let mut state = crate::lanes::tests::a_busy_lane();
    let hour = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
    let def = Box::new(JobDef::new(job("tidy"), hour));
    let now = Now::at(Timestamp::from_millis(3_620_000));
    let actor = Actor::new("ana");
    state.step(now, Event::Upsert { def, actor }, &mut Vec::new());
    assert_eq!(state.self_check(), Ok(()));
    state
}

fn seq(state: &State, name: &str) -> JobSeq {
    state.seq_of_name(name).unwrap()
}

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

/// `breaks` applied to a busy state, the job `touched` named as touched: both checks give
/// `expected`.
fn both_find(touched: &str, breaks: impl Fn(&mut State), expected: &Inconsistency) {
    let mut state = a_busy_state();
    let touched = [seq(&state, touched)];
    breaks(&mut state);
    assert_eq!(
        state.self_check().as_ref(),
        Err(expected),
        "the whole check"
    );
    assert_eq!(
        state.self_check_touched(&touched).as_ref(),
        Err(expected),
        "the touched check"
    );
}

#[test]
fn a_busy_state_passes_both_checks_whatever_was_touched() {
    let state = a_busy_state();
    let all: Vec<JobSeq> = ["write_a", "write_b", "tidy"]
        .iter()
        .map(|n| seq(&state, n))
        .collect();
    assert_eq!(state.self_check_touched(&all), Ok(()));
    assert_eq!(state.self_check_touched(&[]), Ok(()));
    // A removed job's sequence number is passed over: the sizes hold its entries.
    assert_eq!(state.self_check_touched(&[JobSeq(999)]), Ok(()));
}

#[test]
fn a_touched_jobs_record_and_index_entries_are_checked_as_the_whole_check_does() {
    let name_gone = |s: &mut State| {
        s.by_name.remove(&job("tidy"));
        s.by_name.insert(job("ghost"), JobSeq(77));
    };
    both_find(
        "tidy",
        name_gone,
        &Inconsistency::NameIndexStale { job: job("tidy") },
    );
    let next_due_moved = |s: &mut State| {
        let seq = seq(s, "tidy");
        let rec = s.jobs.get_mut(&seq).unwrap();
        rec.next_due = rec
            .next_due
            .map(|t| t.saturating_add(Duration::from_secs(1)));
    };
    let stale = Inconsistency::NextDueStale { job: job("tidy") };
    both_find("tidy", next_due_moved, &stale);
    let wake_gone = |s: &mut State| {
        let seq = seq(s, "tidy");
        let wake = s.jobs.get(&seq).unwrap().wake.unwrap();
        s.wake.remove(&(wake, seq));
    };
    let missing = Inconsistency::MissingFromWakeIndex { job: job("tidy") };
    both_find("tidy", wake_gone, &missing);
}

#[test]
fn a_touched_jobs_run_and_lane_entries_are_checked_as_the_whole_check_does() {
    let state = a_busy_state();
    let running = ["write_a", "write_b"]
        .into_iter()
        .find(|n| state.record(seq(&state, n)).unwrap().run().is_some())
        .unwrap();
    let waiting = if running == "write_a" {
        "write_b"
    } else {
        "write_a"
    };
    let run = state
        .record(seq(&state, running))
        .unwrap()
        .run()
        .unwrap()
        .id;
    let run_gone = |s: &mut State| {
        s.runs.clear();
    };
    let missing = Inconsistency::MissingFromRunIndex {
        job: job(running),
        run,
    };
    both_find(running, run_gone, &missing);
    let lane_gone = |s: &mut State| {
        let seq = seq(s, waiting);
        s.jobs.get_mut(&seq).unwrap().lane = None;
    };
    let stale = Inconsistency::LaneEntryStale { job: job(waiting) };
    both_find(waiting, lane_gone, &stale);
}

#[test]
fn the_whole_state_parts_are_checked_whatever_was_touched() {
    let mut state = a_busy_state();
    let (tidy, run) = (seq(&state, "tidy"), crate::RunId(4242));
    state.runs.insert(run, tidy);
    assert_eq!(state.self_check(), Err(Inconsistency::RunIndexExtra));
    assert_eq!(
        state.self_check_touched(&[]),
        Err(Inconsistency::RunIndexExtra)
    );

    let mut state = a_busy_state();
    state.holds.waiting += 1;
    let stale = Err(Inconsistency::HeldClockCountStale);
    assert_eq!(state.self_check(), stale);
    assert_eq!(state.self_check_touched(&[]), stale);

    let mut state = a_busy_state();
    state.by_name.insert(job("ghost"), JobSeq(77));
    assert_eq!(state.self_check(), Err(Inconsistency::IndexSizes));
    assert_eq!(
        state.self_check_touched(&[]),
        Err(Inconsistency::IndexSizes)
    );
}

/// The limit `self_check_touched` documents: the lanes rebuilt from every job, and the
/// index entries of untouched jobs, are the whole check's (the simulator runs it every 16
/// committed steps and at a world's end).
#[test]
fn only_the_whole_check_rebuilds_the_lanes_and_looks_at_untouched_jobs() {
    let mut state = a_busy_state();
    state.lanes = crate::lanes::Lanes::default();
    assert_eq!(state.self_check(), Err(Inconsistency::LanesDisagree));
    assert_eq!(state.self_check_touched(&[seq(&state, "tidy")]), Ok(()));

    let mut state = a_busy_state();
    let tidy = seq(&state, "tidy");
    let wake = state.jobs.get(&tidy).unwrap().wake.unwrap();
    state.wake.remove(&(wake, tidy));
    let missing = Err(Inconsistency::MissingFromWakeIndex { job: job("tidy") });
    assert_eq!(state.self_check(), missing);
    assert_eq!(state.self_check_touched(&[seq(&state, "write_a")]), Ok(()));
}
