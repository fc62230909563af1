//! The per-job alert throttle: a job with `alert_throttle` tells a person at most one alert
//! per that much time; a further alert in between (a new incident: one incident is told
//! once anyway) goes to the journal instead, and is told if it happens again later.

mod support;

use duetime::Notice;
use duetime::{Actor, Duration, Event, History, JobName};
use support::*;

#[test]
fn a_second_incident_within_the_throttle_goes_to_the_journal_and_a_later_one_is_told() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("report", every("1h"));
    def.stall_after = Duration::from_mins(5);
    def.alert_throttle = Some(Duration::from_hours(1));
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.tick("09:05:30", 1);
    s.crash("09:06", 1);
    s.note("p2 finds r1's lease lapsed: a new incident, 25 minutes after the stall alert");
    s.start_alone("09:30", 2);
    let held = s.last.iter().any(|e| {
        matches!(e, duetime::Effect::Journal(r)
            if matches!(r.entry, duetime::Entry::History(History::AlertHeld { .. })))
    });
    assert!(held, "the lost-run alert is held by the throttle");
    assert!(!s
        .last
        .iter()
        .any(|e| matches!(e, duetime::Effect::Notice(Notice::Alert(_)))));
    s.command(
        "09:40",
        "alice resumes report",
        Event::Resume {
            job: JobName::new("report").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.tick("10:00:10", 2);
    s.note("an hour after the last alert told, the next one is told");
    s.tick("10:05:30", 2);
    assert!(s
        .last
        .iter()
        .any(|e| matches!(e, duetime::Effect::Notice(Notice::Alert(_)))));
    insta::assert_snapshot!(s.trace());
}
