//! How late a state is (issue 43: a partition's lag in `duetime status` and `/metrics`):
//! `JobRecord::waiting_since` is the oldest due time of a job neither started nor settled,
//! and `State::oldest_waiting` the oldest of them. A state nobody steps falls behind by the
//! time since it; one that is stepped is never behind by more than a tick; a job whose runs
//! overlap waits on its oldest buffered due time; a paused job waits on nothing.

mod support;

use duetime::{Action, Actor, Effect, Event, JobName, Overlap, Timestamp};
use support::*;

/// A story with one every-minute job (`overlap` as given), defined at 09:00, and process
/// 1 started then.
fn every_minute(overlap: Option<Overlap>) -> Story {
    let mut story = Story::new();
    let mut def = job("hello", every("1m"));
    def.overlap = overlap;
    story.define("09:00", def);
    story.start("09:00", 1);
    story
}

/// How many runs the last step started.
fn starts(story: &Story) -> usize {
    story
        .last
        .iter()
        .filter(|e| matches!(e, Effect::Do(Action::Start(_))))
        .count()
}

fn waiting(story: &Story) -> Option<Timestamp> {
    story.state.oldest_waiting()
}

#[test]
fn a_state_nobody_steps_waits_on_its_first_due_time_and_a_tick_catches_it_up() {
    let mut story = every_minute(None);
    // Nobody has ticked: five minutes on, the first due time (09:01) is four minutes old.
    assert_eq!(waiting(&story), Some(at("09:01")));
    // A tick five minutes on starts the latest and settles the rest: the job now waits on
    // its next due time, ahead of now.
    story.tick("09:05", 1);
    assert_eq!(starts(&story), 1);
    assert_eq!(waiting(&story), Some(at("09:06")));
}

#[test]
fn buffered_due_times_behind_a_long_run_are_waited_on_oldest_first() {
    let mut story = every_minute(Some(Overlap::BufferAll));
    story.tick("09:01", 1);
    assert_eq!(starts(&story), 1);
    // The run goes on (each tick carries it); the next two due times are buffered behind
    // it, not started.
    story.tick("09:02", 1);
    assert_eq!(starts(&story), 0);
    story.tick("09:03", 1);
    assert_eq!(starts(&story), 0);
    let job = story
        .state
        .record(story.state.seq_of_name("hello").unwrap())
        .unwrap();
    assert_eq!(job.owed(), 2);
    assert_eq!(job.waiting_since(), Some(at("09:02")));
    assert_eq!(waiting(&story), Some(at("09:02")));
}

#[test]
fn a_paused_job_waits_on_nothing() {
    let mut story = every_minute(None);
    let pause = Event::Pause {
        job: JobName::new("hello").unwrap(),
        actor: Actor::new("me"),
        note: "maintenance".to_string(),
    };
    story.send("09:00:10", "pause hello", pause);
    assert_eq!(waiting(&story), None);
    story.tick("09:05", 1);
    assert_eq!(starts(&story), 0);
    assert_eq!(waiting(&story), None);
}
