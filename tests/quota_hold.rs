//! Quota holds: a failed run that asks the job to wait longer than its wait budget holds
//! the job. Nothing of it starts before the hold ends (not its retry, not owed due times,
//! not a person's manual run), and the due times the hold passes meet the missed rule with
//! cause `quota_hold`.

mod support;

use duetime::{Actor, Duration, Event, JobName, MissedRule, Outcome};
use support::*;

fn quota(retry_after: &str) -> Outcome {
    Outcome::Failed {
        kind: "http 429".into(),
        retry_after: Some(retry_after.parse().unwrap()),
    }
}

#[test]
fn a_failure_asking_to_wait_an_hour_holds_the_job_and_its_due_times_meet_the_missed_rule() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("15m"));
    def.missed = MissedRule::CatchUpOnce;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.note("the API says: come back in an hour (the wait budget is the backoff's 10m)");
    s.finish("09:01", 1, quota("1h"));
    let view = s.state.job("sync", at("09:02")).unwrap();
    assert_eq!(view.held_until, Some(at("10:01")));
    let just_before = duetime::Timestamp::from_millis(at("10:01").as_millis() - 1);
    assert_eq!(
        s.state.job("sync", just_before).unwrap().held_until,
        Some(at("10:01"))
    );
    assert_eq!(
        s.state.job("sync", at("10:01")).unwrap().held_until,
        None,
        "a hold ends at its until: the view no longer shows it then"
    );
    s.tick_through("09:15:10", "10:00:10", "15m", 1);
    s.tick("10:01:10", 1);
    s.finish("10:02", 2, Outcome::Ok);
    s.finish("10:03", 3, Outcome::Ok);
    assert_eq!(s.state.job("sync", at("10:04")).unwrap().held_until, None);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_wait_within_the_budget_is_an_ordinary_retry() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("15m"));
    def.wait_budget = Some(Duration::from_hours(2));
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, quota("1h"));
    assert_eq!(s.state.job("sync", at("09:02")).unwrap().held_until, None);
    s.note("no hold: the 09:15 due time meets the overlap policy (skip), as with any retry");
    s.tick("09:15:10", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_pause_a_resume_and_a_manual_run_during_a_hold_start_nothing_before_it_ends() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("export", every("1h"));
    def.missed = MissedRule::Required;
    def.safe_to_repeat = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, quota("2h"));
    s.command(
        "09:30",
        "alice pauses export",
        Event::Pause {
            job: JobName::new("export").unwrap(),
            actor: Actor::new("alice"),
            note: "looking".into(),
        },
    );
    s.command(
        "09:40",
        "alice resumes export",
        Event::Resume {
            job: JobName::new("export").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.tick("09:40:30", 1);
    s.command(
        "09:50",
        "alice asks for a run now",
        Event::RunNow {
            job: JobName::new("export").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.tick("09:50:30", 1);
    s.tick("10:00:10", 1);
    s.note("the hold ends at 11:01");
    s.tick("11:00:30", 1);
    s.tick("11:01:10", 1);
    s.finish("11:02", 2, Outcome::Ok);
    s.finish("11:03", 3, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}
