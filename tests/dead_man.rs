//! The dead-man's switch (`expect_success_within`): a job that has had no successful run for
//! that long alerts `no_success`, once, whatever kept it from succeeding (failures, a pause,
//! no host running), counted from its latest success or from its definition. A success ends
//! the incident and starts the silence again; a person's resume does not.

mod support;

use duetime::Notice;
use duetime::{Actor, AlertKind, Config, DefError, Duration, Effect, Event, JobName, Outcome};
use support::*;

fn failed() -> Outcome {
    Outcome::Failed {
        kind: "exit 1".into(),
        retry_after: None,
    }
}

fn watched(name: &str, schedule: duetime::Schedule, within: &str) -> duetime::JobDef {
    let mut def = job(name, schedule);
    def.retries = 0;
    def.expect_success_within = Some(within.parse().unwrap());
    def
}

/// The `no_success` alerts among the effects of the story's last step.
fn silences(s: &Story) -> Vec<AlertKind> {
    s.last
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::Alert(a)) if matches!(a.kind, AlertKind::NoSuccess { .. }) => {
                Some(a.kind.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_job_failing_past_its_window_is_told_once_and_a_success_starts_the_silence_again() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", watched("backup", every("1h"), "2h30m"));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, failed());
    s.tick("10:00:10", 1);
    s.tick("11:00:10", 1);
    s.tick("11:28:50", 1);
    assert!(
        silences(&s).is_empty(),
        "the window ends at 11:29, not before"
    );
    s.note("two and a half hours since the definition at 08:59, and no success");
    s.tick("11:29:10", 1);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("08:59"),
            within: "2h30m".parse().unwrap(),
        }]
    );
    s.tick("11:45:10", 1);
    assert!(silences(&s).is_empty(), "one incident is told once");
    s.command(
        "11:50",
        "alice resumes backup",
        Event::Resume {
            job: JobName::new("backup").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    s.tick("12:00:10", 1);
    s.finish("12:01", 2, Outcome::Ok);
    s.note("the success ends the incident: the silence now counts from 12:01");
    s.tick("13:00:10", 1);
    s.finish("13:01", 3, failed());
    s.tick("14:30:50", 1);
    assert!(silences(&s).is_empty(), "the new window ends at 14:31");
    s.tick("14:31:10", 1);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("12:01"),
            within: "2h30m".parse().unwrap(),
        }]
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_paused_job_whose_hosts_were_all_down_is_told_at_the_first_tick_back_and_a_resume_is_no_success(
) {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", watched("report", cron("0 9 * * *"), "26h"));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, Outcome::Ok);
    let name = JobName::new("report").unwrap();
    s.command(
        "12:00",
        "alice pauses report",
        Event::Pause {
            job: name.clone(),
            actor: Actor::new("alice"),
            note: String::new(),
        },
    );
    s.crash("13:00", 1);
    s.note("no host runs until the next day at noon: the window ended at 11:01");
    let back = s.start_alone("2025-06-03 12:00", 2);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("09:01"),
            within: Duration::from_hours(26),
        }],
        "told at {back}, the first tick that decides anything"
    );
    s.command(
        "2025-06-03 12:05",
        "alice resumes report",
        Event::Resume {
            job: name,
            actor: Actor::new("alice"),
        },
    );
    s.tick("2025-06-03 12:10", 2);
    assert!(
        silences(&s).is_empty(),
        "a resume is not a success: the told silence stays told"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_window_shorter_than_the_tick_is_refused_with_what_is_accepted() {
    let config = Config::default();
    let def = watched("backup", every("1h"), "10s");
    let err = def.validate(&config).unwrap_err();
    assert_eq!(
        err,
        DefError::ExpectSuccessTooSoon {
            within: "10s".parse().unwrap(),
            tick: config.tick,
        }
    );
    assert!(err.to_string().contains("accepted: at least the tick"));
    assert!(watched("backup", every("1h"), "30s")
        .validate(&config)
        .is_ok());
}

#[test]
fn the_switch_changes_the_digest_only_of_definitions_that_set_it() {
    let plain = job("backup", every("1h"));
    let mut same = plain.clone();
    same.expect_success_within = None;
    assert_eq!(plain.digest(), same.digest());
    let set = watched("backup", every("1h"), "26h");
    let mut unset = set.clone();
    unset.expect_success_within = None;
    assert_ne!(set.digest(), unset.digest());
    let mut longer = set.clone();
    longer.expect_success_within = Some(Duration::from_hours(27));
    assert_ne!(set.digest(), longer.digest());
}

#[test]
fn dropping_the_switch_forgets_its_silence_and_setting_it_again_counts_from_then() {
    let mut s = Story::new();
    s.define("08:59", watched("backup", every("1h"), "1h"));
    s.start("08:59:30", 1);
    s.tick("10:00:10", 1);
    assert_eq!(silences(&s).len(), 1, "told at the first tick past 09:59");
    s.define("10:10", job("backup", every("1h")));
    s.define("10:20", watched("backup", every("1h"), "1h"));
    s.tick("11:10:10", 1);
    assert!(silences(&s).is_empty(), "the new window ends at 11:20");
    s.tick("11:20:10", 1);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("10:20"),
            within: Duration::from_hours(1),
        }]
    );
}

#[test]
fn the_silence_is_told_at_the_very_instant_it_ends() {
    let mut s = Story::new();
    s.define("08:59", watched("backup", every("1h"), "1h"));
    s.start("08:59:30", 1);
    s.tick("09:58:59", 1);
    assert!(silences(&s).is_empty());
    s.tick("09:59:00", 1);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("08:59"),
            within: Duration::from_hours(1),
        }],
        "an hour after 08:59 is 09:59:00 itself"
    );
}

#[test]
fn under_a_throttle_the_silence_waits_for_the_throttle_instead_of_being_held_at_every_visit() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = watched("backup", every("10m"), "30m");
    def.alert_throttle = Some(Duration::from_hours(1));
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, failed());
    s.note("failed out at 09:01 and told: the throttle holds further alerts until 10:01");
    s.tick_through("09:10:10", "10:00:10", "10m", 1);
    assert!(
        !s.trace().contains("alert held by the throttle"),
        "the switch's alarm waits for the throttle: nothing is held and retold\n{}",
        s.trace()
    );
    s.tick("10:01:10", 1);
    assert_eq!(
        silences(&s),
        [AlertKind::NoSuccess {
            since: at("08:59"),
            within: Duration::from_mins(30),
        }]
    );
    insta::assert_snapshot!(s.trace());
}

/// A new job held for its first confirmation is not watched yet (`watched_since` shows
/// nothing): nothing can succeed before a person confirms it, and its silence counts from
/// the confirmation.
#[test]
fn a_new_job_waiting_for_confirmation_is_watched_from_the_confirmation() {
    let mut s = Story::new();
    let mut def = watched("report", every("1h"), "1h");
    def.requires_confirmation = true;
    let digest = def.digest();
    s.define("08:00", def);
    let watched_since = |s: &Story| {
        let seq = s.state.seq_of_name("report").expect("known");
        s.state.record(seq).expect("kept").watched_since()
    };
    assert_eq!(watched_since(&s), None, "held: not watched yet");
    s.command(
        "08:40",
        "confirm",
        Event::Confirm {
            job: JobName::new("report").unwrap(),
            digest: digest.to_string(),
            actor: Actor::new("bob"),
        },
    );
    assert_eq!(watched_since(&s), Some(at("08:40")));
}
