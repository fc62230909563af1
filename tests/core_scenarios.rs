//! Scenario tests for the core, each a story: define jobs, tick, crash, restart, and the
//! trace (effects and ledger) snapshotted by insta. Named after the behaviour and the fault.

mod support;

use duetime::{Action, Start};
use duetime::{Actor, Event, JobName, MissedRule, Outcome};
use support::*;

#[test]
fn on_time_runs_are_recorded_ran_at_their_due_time() {
    let mut s = Story::new();
    s.define("08:59", job("report", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:02", 1, Outcome::Ok);
    s.tick("09:30", 1);
    s.tick("10:00:20", 1);
    s.finish("10:05", 2, Outcome::Skipped);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn crash_then_restart_skips_what_passed_under_the_skip_rule() {
    let mut s = Story::new();
    s.define("08:59", job("report", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, Outcome::Ok);
    s.crash("09:30", 1);
    s.start_alone("12:30", 2);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn crash_then_restart_catches_up_once_with_the_newest() {
    let mut s = Story::new();
    let mut def = job("report", every("1h"));
    def.missed = MissedRule::CatchUpOnce;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.crash("09:30", 1);
    s.start_alone("12:30", 2);
    s.finish("12:31:10", 1, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn required_job_covers_a_two_day_outage_in_batches_oldest_first() {
    let mut s = Story::new();
    let mut def = job("ledger_close", every("1m"));
    def.missed = MissedRule::Required;
    s.define("08:59:30", def);
    s.start("08:59:40", 1);
    s.crash("08:59:50", 1);
    s.start_alone("2025-06-04 09:00:30", 2);
    // p2 ticks while each batch runs, as a live host does (a process the store has not
    // heard from for longer than a lease claims nothing: a result is no tick).
    s.tick("2025-06-04 09:04:50", 2);
    s.finish("2025-06-04 09:05", 1, Outcome::Ok);
    s.tick("2025-06-04 09:09:50", 2);
    s.finish("2025-06-04 09:10", 2, Outcome::Ok);
    s.tick("2025-06-04 09:14:50", 2);
    s.finish("2025-06-04 09:15", 3, Outcome::Ok);
    s.tick("2025-06-04 09:15:10", 2);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn overlapping_due_times_are_recorded_skipped_never_silent() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1m")));
    s.start("08:59:30", 1);
    s.tick_through("09:00:05", "09:03:05", "30s", 1);
    s.finish("09:03:10", 1, Outcome::Ok);
    s.tick("09:04:05", 1);
    insta::assert_snapshot!(s.ledger());
}

#[test]
fn a_failed_run_retries_the_original_due_time_with_backoff() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", job("export", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, Outcome::failed("exit 1"));
    s.tick("09:01:30", 1);
    s.tick("09:01:31", 1);
    s.finish("09:02", 2, Outcome::failed("exit 1"));
    s.tick("09:03:01", 1);
    s.finish("09:04", 3, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn exhausted_retries_record_failed_out_pause_and_alert() {
    let mut s = Story::new();
    let mut def = job("export", every("1h"));
    def.retries = 1;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, Outcome::failed("exit 2"));
    s.tick("09:01:31", 1);
    s.finish("09:02", 2, Outcome::failed("exit 2"));
    s.tick("10:00:10", 1);
    s.command(
        "10:30",
        "bob resumes export",
        Event::Resume {
            job: JobName::new("export").unwrap(),
            actor: Actor::new("bob"),
        },
    );
    s.tick("11:00:10", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_lost_run_of_a_job_not_safe_to_repeat_pauses_it_and_never_starts_it_twice() {
    let mut s = Story::new();
    s.define("08:59", job("charge_cards", every("1h")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:10", 1);
    s.crash("09:00:20", 1);
    s.tick("09:00:40", 2);
    s.tick("09:01:11", 2);
    s.finish_as("09:05", 1, 1, 1, Outcome::Ok);
    s.tick("10:00:10", 2);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_lost_run_of_a_safe_job_runs_again_and_the_stale_result_changes_nothing() {
    let mut s = Story::new();
    let mut def = job("rebuild_index", every("1h"));
    def.safe_to_repeat = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:10", 1);
    s.crash("09:00:20", 1);
    s.tick("09:01:11", 2);
    s.finish_as("09:02", 1, 1, 1, Outcome::Ok);
    s.finish("09:03", 2, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_run_past_its_deadline_is_cancelled_then_settled_timed_out_by_the_core() {
    let mut s = Story::new();
    let mut def = job("backup", every("1h"));
    def.timeout = "5m".parse().unwrap();
    def.retries = 0;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.tick_through("09:04:40", "09:06:40", "30s", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn pause_then_resume_records_what_passed_as_paused() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("digest", every("1h"));
    def.missed = MissedRule::CatchUpOnce;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.command(
        "09:30",
        "alice pauses digest",
        Event::Pause {
            job: JobName::new("digest").unwrap(),
            actor: Actor::new("alice"),
            note: "db migration".into(),
        },
    );
    s.tick("10:00:10", 1);
    s.command(
        "12:30",
        "alice resumes digest",
        Event::Resume {
            job: JobName::new("digest").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.tick("12:30:10", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn run_now_is_refused_when_not_safe_in_flight_queued_or_over_the_hourly_cap() {
    let mut s = Story::new();
    s.define("08:00", job("unsafe", every("1h")));
    let mut def = job("safe", every("1d"));
    def.safe_to_repeat = true;
    s.define("08:00", def);
    s.start("08:00:01", 1);
    let run_now = |job: &str| Event::RunNow {
        job: JobName::new(job).unwrap(),
        actor: Actor::new("carol"),
    };
    s.command("08:01", "carol: run unsafe now", run_now("unsafe"));
    s.command("08:02", "carol: run nosuch now", run_now("nosuch"));
    s.command("08:03", "carol: run safe now", run_now("safe"));
    s.command("08:04", "carol: run safe now again", run_now("safe"));
    s.tick("08:05", 1);
    s.command(
        "08:06",
        "carol: run safe now while it runs",
        run_now("safe"),
    );
    s.finish("08:07", 1, Outcome::Ok);
    for minute in 8..29 {
        let time = format!("08:{minute:02}");
        s.command(&time, "carol: run safe now", run_now("safe"));
        s.tick(&format!("{time}:10"), 1);
        let run = s.last.iter().find_map(|e| match e {
            duetime::Effect::Do(Action::Start(Start { run, .. })) => Some(run.0),
            _ => None,
        });
        if let Some(run) = run {
            s.finish(&format!("{time}:20"), run, Outcome::Ok);
        }
    }
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_changed_schedule_records_passed_due_times_as_rescheduled() {
    let mut s = Story::new();
    s.define("08:59", job("poll", every("1h")));
    s.start("08:59:30", 1);
    s.crash("08:59:40", 1);
    s.define("11:30", job("poll", every("2h")));
    s.start("11:30:10", 2);
    s.tick("12:00:10", 2);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn removing_a_job_closes_its_ledger_and_cancels_its_run() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", job("poll", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.command(
        "09:10",
        "alice removes poll",
        Event::Remove {
            job: JobName::new("poll").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.finish("09:11", 1, Outcome::Ok);
    s.command(
        "09:12",
        "alice removes poll again",
        Event::Remove {
            job: JobName::new("poll").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_job_lost_again_and_again_alerts_once_until_a_success_or_a_resume() {
    let mut s = Story::new();
    let mut def = job("ping", every("1h"));
    def.safe_to_repeat = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.crash("09:00:20", 1);
    s.note("r1's lease lapses: lost, alerted; r2 starts over the same due time");
    s.start_alone("09:02", 2);
    s.crash("09:03:10", 2);
    s.note("r2 lost too: the same incident, not told again");
    s.start_alone("09:05", 3);
    s.finish("09:06:30", 3, Outcome::Ok);
    s.note("a success ended the incident: the next loss is told");
    s.tick("10:00:10", 3);
    s.crash("10:00:20", 3);
    s.start_alone("10:02", 4);
    s.command(
        "10:02:30",
        "pause",
        Event::Pause {
            job: JobName::new("ping").unwrap(),
            actor: Actor::new("ana"),
            note: "looking".into(),
        },
    );
    s.command(
        "10:03",
        "resume",
        Event::Resume {
            job: JobName::new("ping").unwrap(),
            actor: Actor::new("ana"),
        },
    );
    s.crash("10:03:10", 4);
    s.note("a person's resume also ends it: the next loss is told");
    s.start_alone("10:05", 5);
    let trace = s.trace();
    assert_eq!(trace.matches("ALERT").count(), 3, "{trace}");
    insta::assert_snapshot!(trace);
}
