//! Jobs that run after other jobs for the same due time (`JobDef::after`), as stories: a
//! downstream's run for 02:00 starts only once its upstream's 02:00 settled ok; an
//! upstream that failed out or was skipped leaves the downstream's due time skipped with
//! cause `upstream`, and a line naming the upstream and its fate; a chain settles in one
//! step; the upsert refuses an unknown upstream, another schedule and a cycle.

mod support;

use duetime::{
    Actor, Effect, Entry, Event, History, JobDef, JobName, LedgerKind, MissAction, MissCause,
    Outcome, Refusal, UpstreamFate, UpstreamProblem,
};
use support::*;

fn after(name: &str, upstreams: &[&str]) -> JobDef {
    let mut def = job(name, cron("0 2 * * *"));
    def.after = upstreams.iter().map(|u| JobName::new(u).unwrap()).collect();
    def
}

fn failing_at_once(name: &str) -> JobDef {
    let mut def = job(name, cron("0 2 * * *"));
    def.retries = 0;
    def
}

fn refusal(s: &Story) -> Option<Refusal> {
    s.last.iter().find_map(|e| match e {
        Effect::Reply { result: Err(r), .. } => Some(r.clone()),
        _ => None,
    })
}

/// The ledger entries the last step wrote for `job`.
fn entries_of(s: &Story, job: &str) -> Vec<LedgerKind> {
    s.last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) if r.job.as_str() == job => match &r.entry {
                Entry::Ledger(l) => Some(l.kind),
                Entry::History(_) => None,
            },
            _ => None,
        })
        .collect()
}

fn starts_of(s: &Story, job: &str) -> usize {
    s.last
        .iter()
        .filter(|e| matches!(e, Effect::Do(duetime::Action::Start(st)) if st.job.as_str() == job))
        .count()
}

#[test]
fn the_load_runs_only_after_the_extract_of_the_same_night_succeeded() {
    let mut s = nightly_extract_and_load();
    s.tick("02:00:05", 1);
    s.note("extract starts at 02:00; load's 02:00 waits in line for extract's");
    assert_eq!(starts_of(&s, "extract"), 1);
    assert_eq!(starts_of(&s, "load"), 0);
    let load = s.state.seq_of_name("load").unwrap();
    assert_eq!(
        s.state.next_wake().map(|w| w > at("02:00:05")),
        Some(true),
        "a load waiting for its upstream gives the host no wake of now"
    );
    assert!(s.state.record(load).is_some());
    s.tick("02:09:50", 1);
    s.finish("02:10", 1, Outcome::Ok);
    s.note("extract's 02:00 settles ok: load's 02:00 starts in the same step");
    assert_eq!(starts_of(&s, "load"), 1);
    s.tick("02:19:50", 1);
    s.finish("02:20", 2, Outcome::Ok);
    assert_eq!(
        entries_of(&s, "load"),
        vec![LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::CaughtUp {
                run: duetime::RunId(2)
            }
        }],
        "load's 02:00 is settled by its own run, which waited for its upstream"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn an_extract_that_failed_out_leaves_the_load_skipped_with_its_upstream_named() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("01:00", failing_at_once("extract"));
    s.define("01:00", after("load", &["extract"]));
    s.define("01:00", after("report", &["load"]));
    s.start("01:30", 1);
    s.tick("02:00:05", 1);
    s.finish("02:10", 1, Outcome::failed("disk full"));
    s.note("extract failed out: load's 02:00 is skipped, and so report's, in the same step");
    let skipped = LedgerKind::Missed {
        cause: MissCause::Upstream,
        action: MissAction::Skipped,
    };
    assert_eq!(entries_of(&s, "load"), vec![skipped]);
    assert_eq!(entries_of(&s, "report"), vec![skipped]);
    let told: Vec<(String, UpstreamFate)> = s
        .last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                Entry::History(History::UpstreamNotOk { upstream, fate }) => {
                    Some((upstream.to_string(), *fate))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        vec![
            ("extract".to_string(), UpstreamFate::FailedOut),
            (
                "load".to_string(),
                UpstreamFate::Skipped {
                    cause: MissCause::Upstream
                }
            )
        ]
    );
    assert_eq!(starts_of(&s, "load") + starts_of(&s, "report"), 0);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn after_a_night_down_the_chain_catches_up_in_order() {
    let mut s = Story::new();
    let mut extract = job("extract", cron("0 * * * *"));
    extract.missed = duetime::MissedRule::Required;
    let mut load = job("load", cron("0 * * * *"));
    load.missed = duetime::MissedRule::Required;
    load.after = vec![JobName::new("extract").unwrap()];
    s.define("01:00", extract);
    s.define("01:00", load);
    s.start("01:30", 1);
    s.crash("01:40", 1);
    s.note("no process runs from 01:40 to 05:30: 02:00 to 05:00 are late for both");
    let back = s.start_alone("05:30", 2);
    s.note(&format!("p2 is released at {back}"));
    s.note("extract catches up 02:00..05:00 in one run; load waits for it");
    assert_eq!(starts_of(&s, "load"), 0);
    s.tick("05:44:50", 2);
    s.finish("05:45", 1, Outcome::Ok);
    s.note("extract's four settled ok: load catches them up in one run too");
    assert_eq!(starts_of(&s, "load"), 1);
    let load_start = s.last.iter().find_map(|e| match e {
        Effect::Do(duetime::Action::Start(st)) if st.job.as_str() == "load" => st.covers,
        _ => None,
    });
    assert_eq!(load_start.map(|c| c.count), Some(4));
    s.tick("05:49:50", 2);
    s.finish("05:50", 2, Outcome::Ok);
    insta::assert_snapshot!(s.ledger());
}

#[test]
fn the_upsert_refuses_an_unknown_upstream_another_schedule_and_a_cycle() {
    let mut s = Story::new();
    s.define("01:00", after("load", &["extract"]));
    assert_eq!(
        refusal(&s),
        Some(Refusal::Upstream {
            upstream: JobName::new("extract").unwrap(),
            problem: UpstreamProblem::Unknown
        })
    );
    s.define("01:00", job("extract", cron("30 2 * * *")));
    s.define("01:00", after("load", &["extract"]));
    assert_eq!(
        refusal(&s),
        Some(Refusal::Upstream {
            upstream: JobName::new("extract").unwrap(),
            problem: UpstreamProblem::ScheduleDiffers
        })
    );
    s.define("01:00", job("extract", cron("0 2 * * *")));
    s.define("01:00", after("load", &["extract"]));
    assert_eq!(refusal(&s), None);
    s.define("01:00", after("report", &["load"]));
    s.define("01:00", after("extract", &["report"]));
    let Some(Refusal::Upstream {
        upstream,
        problem: UpstreamProblem::Cycle { through },
    }) = refusal(&s)
    else {
        panic!("a cycle is refused: {:?}", refusal(&s));
    };
    assert_eq!(upstream.as_str(), "report");
    let chain: Vec<&str> = through.iter().map(JobName::as_str).collect();
    assert_eq!(chain, ["report", "load", "extract"]);
    let text = Refusal::Upstream {
        upstream,
        problem: UpstreamProblem::Cycle { through },
    }
    .to_string();
    assert_eq!(
        text,
        "after: waiting for `report` makes a cycle (report -> load -> extract); a chain of jobs must end"
    );
}

#[test]
fn a_definition_naming_itself_or_an_upstream_twice_is_invalid() {
    let config = duetime::Config::default();
    let def = after("load", &["load"]);
    assert!(def.validate(&config).is_err());
    let def = after("load", &["extract", "extract"]);
    let err = def.validate(&config).unwrap_err();
    assert_eq!(
        err.to_string(),
        "after: `extract` is the job itself or is named twice; accepted: other jobs, each once"
    );
    let many: Vec<String> = (0..9).map(|i| format!("up{i}")).collect();
    let names: Vec<&str> = many.iter().map(String::as_str).collect();
    let err = after("load", &names).validate(&config).unwrap_err();
    assert_eq!(
        err.to_string(),
        "after: 9 upstream jobs; accepted: at most 8"
    );
}

#[test]
fn a_removed_upstream_leaves_the_waiting_due_time_skipped_not_stuck() {
    let mut s = nightly_extract_and_load();
    s.tick("02:00:05", 1);
    s.command(
        "02:05",
        "remove extract",
        Event::Remove {
            job: JobName::new("extract").unwrap(),
            actor: Actor::new("alice"),
        },
    );
    assert_eq!(
        entries_of(&s, "load"),
        vec![LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::Skipped
        }],
        "load's 02:00 waited for an upstream that is gone: skipped at once"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn an_upstream_still_waiting_for_its_confirmation_leaves_the_due_time_skipped_not_stuck() {
    let mut s = Story::new();
    s.show_history = true;
    let mut extract = job("extract", cron("0 2 * * *"));
    extract.requires_confirmation = true;
    s.define("01:00", extract);
    s.define("01:00", after("load", &["extract"]));
    s.start("01:30", 1);
    s.tick("02:00:05", 1);
    s.note("extract is new and unconfirmed: its schedule begins at its confirmation, so 02:00 is none of its due times");
    assert_eq!(
        entries_of(&s, "load"),
        vec![LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::Skipped
        }],
        "load's 02:00 waited for an upstream that can never settle it: skipped at once"
    );
    let told = s.last.iter().any(|e| {
        matches!(e, Effect::Journal(r) if matches!(
            &r.entry,
            Entry::History(History::UpstreamNotOk { fate: UpstreamFate::Unheard, .. })
        ))
    });
    assert!(
        told,
        "the line names the upstream and its fate: no settlement heard"
    );
    assert_eq!(starts_of(&s, "load"), 0);
}

fn hourly_after(name: &str, upstreams: &[&str], schedule: &str) -> JobDef {
    let mut def = job(name, cron(schedule));
    def.after = upstreams.iter().map(|u| JobName::new(u).unwrap()).collect();
    def
}

fn backfill(s: &mut Story, time: &str, job: &str, from: &str, to: &str) {
    let label = format!("backfill {job} {from}..{to}");
    s.send(
        time,
        &label,
        Event::Backfill {
            job: JobName::new(job).unwrap(),
            from: at(from),
            to: at(to),
            actor: Actor::new("bob"),
        },
    );
}

/// A nightly extract and a load after it, defined at 01:00, with p1 started at 01:30.
fn nightly_extract_and_load() -> Story {
    let mut s = Story::new();
    s.show_history = true;
    s.define("01:00", job("extract", cron("0 2 * * *")));
    s.define("01:00", after("load", &["extract"]));
    s.start("01:30", 1);
    s
}

/// An hourly extract and a load after it, defined at 01:00, with p1 started at 01:30.
fn hourly_extract_and_load() -> Story {
    let mut s = Story::new();
    s.show_history = true;
    s.define("01:00", job("extract", cron("0 * * * *")));
    s.define("01:00", hourly_after("load", &["extract"], "0 * * * *"));
    s.start("01:30", 1);
    s
}

/// The fates each line of the last step told of an upstream, in order.
fn told_fates(s: &Story) -> Vec<UpstreamFate> {
    s.last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                Entry::History(History::UpstreamNotOk { fate, .. }) => Some(*fate),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn an_upstream_given_another_schedule_leaves_the_waiting_due_time_skipped_as_not_due() {
    let mut s = nightly_extract_and_load();
    s.tick("02:00:05", 1);
    s.note("extract runs its 02:00; load's 02:00 waits for it");
    assert_eq!(starts_of(&s, "load"), 0);
    s.define("02:05", job("extract", cron("30 2 * * *")));
    s.note("extract now runs at 02:30: load's 02:00 is none of its due times any more");
    assert_eq!(
        entries_of(&s, "load"),
        vec![LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::Skipped
        }],
        "load's 02:00 is skipped at once, not left waiting for a run that may never settle it"
    );
    assert_eq!(told_fates(&s), vec![UpstreamFate::NotDue]);
}

#[test]
fn a_backfill_after_a_change_of_schedule_runs_the_instants_the_upstream_ran_before_it() {
    let mut s = hourly_extract_and_load();
    for (hour, run) in [("02", 1), ("03", 3)] {
        s.tick(&format!("{hour}:00:05"), 1);
        s.tick(&format!("{hour}:09:50"), 1);
        s.finish(&format!("{hour}:10"), run, Outcome::Ok);
        s.tick(&format!("{hour}:19:50"), 1);
        s.finish(&format!("{hour}:20"), run + 1, Outcome::Ok);
    }
    s.note("extract and load ran 02:00 and 03:00; both are given half-hourly schedules");
    s.define("03:40", job("extract", cron("0,30 * * * *")));
    s.define("03:41", hourly_after("load", &["extract"], "0,30 * * * *"));
    backfill(&mut s, "03:45", "load", "02:00", "03:00");
    s.note("load's 02:00 and 03:00 are instants extract ran ok (under its hourly schedule); its 02:30 was never one of extract's due times");
    assert_eq!(
        told_fates(&s),
        Vec::<UpstreamFate>::new(),
        "02:00 is first: it waits for nothing"
    );
    s.tick("03:45:10", 1);
    assert_eq!(
        starts_of(&s, "load"),
        1,
        "load runs 02:00, which extract settled ok"
    );
    s.finish("03:46", 5, Outcome::Ok);
    assert_eq!(
        told_fates(&s),
        vec![UpstreamFate::Unheard],
        "02:30 is skipped: extract settled no such instant"
    );
    assert_eq!(
        starts_of(&s, "load"),
        1,
        "03:00 runs: extract settled it ok"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_downstream_whose_process_cannot_claim_still_decides_a_front_no_fate_will_come_for() {
    let mut s = hourly_extract_and_load();
    backfill(&mut s, "01:31", "extract", "00:00", "00:00");
    s.tick("01:31:10", 1);
    s.finish("01:32", 1, Outcome::Ok);
    s.note("extract's backfilled 00:00 settled ok; extract was defined at 01:00, so its 01:00 is no due time of it");
    backfill(&mut s, "01:33", "load", "00:00", "01:00");
    s.tick("01:33:10", 1);
    assert_eq!(starts_of(&s, "load"), 1, "load runs 00:00");
    s.send(
        "01:34",
        "p1 draining",
        Event::ProcessDraining {
            process: duetime::ProcessId(1),
        },
    );
    s.finish("01:35", 2, Outcome::Ok);
    s.note(
        "the draining process cannot start load's next due time; its 01:00 has no fate to wait for",
    );
    assert_eq!(
        told_fates(&s),
        vec![UpstreamFate::Unheard],
        "load's 01:00 is decided in the same step (skipped), not left with no wake"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn an_upstream_run_that_settles_after_both_jobs_changed_schedule_tells_the_instants_it_ran() {
    let mut s = hourly_extract_and_load();
    backfill(&mut s, "01:31", "extract", "00:00", "01:00");
    s.tick("01:31:10", 1);
    s.note(
        "extract's backfilled 00:00 and 01:00 run as one batch; meanwhile both jobs go half-hourly",
    );
    s.define("01:35", job("extract", cron("0,30 * * * *")));
    s.define("01:36", hourly_after("load", &["extract"], "0,30 * * * *"));
    s.tick("01:37", 1);
    s.finish("01:38", 1, Outcome::Ok);
    s.note("the batch settles: 00:00 and 01:00 ran ok under extract's hourly schedule, which neither job has now");
    backfill(&mut s, "01:40", "load", "00:00", "01:00");
    s.tick("01:40:10", 1);
    assert_eq!(
        starts_of(&s, "load"),
        1,
        "load runs 00:00: extract ran that instant ok"
    );
    s.finish("01:41", 2, Outcome::Ok);
    assert_eq!(
        told_fates(&s),
        vec![UpstreamFate::Unheard],
        "00:30 was never one of extract's due times"
    );
    assert_eq!(starts_of(&s, "load"), 1, "01:00 runs: extract ran it ok");
    insta::assert_snapshot!(s.trace());
}

/// An upstream's entry of several due times under a schedule neither job has any more is
/// read, by a downstream still owing due times under that schedule, as holding exactly
/// that schedule's instants, also for the downstream's segments of a third schedule.
///
/// extract and load run hourly, both paused, due times required. load is given a
/// half-hourly schedule at 01:20 (its 01:00 stays owed under the hourly one), then at
/// 03:08 a quarter-hourly one and `after = ["extract"]`, extract having been given the
/// same at 03:05 (its 01:00..03:00 stay owed under the hourly one). Resumed, extract
/// catches the three up in one run, one entry of hourly due times, which load names by
/// the hourly segment it still owes (its upstream no longer has that schedule, and load
/// began waiting after extract left it). So load's 02:00 and 03:00, owed half-hourly, run
/// after extract's; its 01:30 and 02:30 were never extract's due times, and are skipped
/// unheard. (Read as a run of no known schedule, the entry would tell only an hourly
/// segment: 02:00 and 03:00 would be skipped unheard too.)
#[test]
fn an_upstreams_range_of_a_schedule_only_the_downstream_still_owes_tells_its_instants() {
    let mut s = Story::new();
    s.show_history = true;
    let mut extract = job("extract", cron("0 * * * *"));
    extract.missed = duetime::MissedRule::Required;
    let mut load = extract.clone();
    load.name = JobName::new("load").unwrap();
    s.define("00:10", extract.clone());
    s.define("00:10", load.clone());
    s.start("00:20", 1);
    for name in ["extract", "load"] {
        let pause = Event::Pause {
            job: JobName::new(name).unwrap(),
            actor: Actor::new("ops"),
            note: String::new(),
        };
        s.command("00:25", "pause", pause);
    }
    s.tick_through("00:30", "01:15", "1m", 1);
    load.schedule = cron("0,30 * * * *");
    s.define("01:20", load.clone());
    s.tick_through("01:21", "03:04", "1m", 1);
    let quarterly = cron("*/15 * * * *");
    extract.schedule = quarterly.clone();
    s.define("03:05", extract);
    load.schedule = quarterly;
    load.after = vec![JobName::new("extract").unwrap()];
    s.define("03:08", load);
    let resume = |job: &str| Event::Resume {
        job: JobName::new(job).unwrap(),
        actor: Actor::new("ops"),
    };
    s.command("03:09", "resume extract", resume("extract"));
    s.tick("03:09:30", 1);
    s.finish("03:09:40", 1, Outcome::Ok);
    s.note("extract's hourly 01:00..03:00 caught up in one entry; load, paused, hears it");
    s.command("03:09:50", "resume load", resume("load"));
    let (mut ran, mut fates) = (Vec::new(), Vec::new());
    s.tick("03:10:00", 1);
    ran.extend(load_starts(&s));
    // Each of load's runs ends ok; its end lets the next due time through the gate.
    for run in 2..=4 {
        if ran.len() + 1 < run as usize {
            break;
        }
        s.finish(&format!("03:10:{}0", run - 1), run, Outcome::Ok);
        fates.extend(told_fates(&s));
        ran.extend(load_starts(&s));
    }
    assert_eq!(ran, ["01:00:00", "02:00:00", "03:00:00"], "{}", s.trace());
    assert_eq!(fates, [UpstreamFate::Unheard, UpstreamFate::Unheard]);
    insta::assert_snapshot!(s.ledger());
}

/// The first due time each of the last step's starts of `load` covers (runs 2, 3, 4 of
/// the story above, one at a time).
fn load_starts(s: &Story) -> Vec<String> {
    s.last
        .iter()
        .filter_map(|e| match e {
            Effect::Do(duetime::Action::Start(st)) if st.job.as_str() == "load" => {
                st.covers.map(|c| label_of(c.from))
            }
            _ => None,
        })
        .collect()
}
