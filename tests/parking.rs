//! Stories of approval parking (a run that ends `awaiting_approval` keeps its job occupied
//! until a person approves it, its process reports again, or its time runs out) and of
//! one-shot (`at`) jobs completing or expiring. Each trace is snapshotted by insta; the
//! assertions beside it name what the story is about, so a changed snapshot is not the only
//! thing that would catch a broken behaviour.

mod support;

use duetime::{Action, Notice, Start};
use duetime::{
    Actor, AlertKind, Duration, Effect, Entry, Event, History, JobName, LedgerKind, MissAction,
    MissCause, OneShotEnd, Outcome, Refusal, RunId, Schedule, MAX_APPROVAL_TTL,
};
use support::*;

fn awaiting(ttl: &str) -> Outcome {
    Outcome::AwaitingApproval {
        ttl: ttl.parse().unwrap(),
    }
}

fn approve(job: &str, run: u64, actor: &str) -> Event {
    Event::ApprovalGiven {
        job: JobName::new(job).unwrap(),
        run: RunId(run),
        actor: Actor::new(actor),
    }
}

/// The open run of job `name`, as a host reads it from the job's record.
fn open_run<'a>(s: &'a Story, name: &str) -> &'a duetime::OpenRun {
    let seq = s.state.seq_of_name(name).expect("the job exists");
    s.state
        .record(seq)
        .and_then(|r| r.run())
        .expect("it has a run open")
}

fn ledger_kinds(effects: &[Effect]) -> Vec<LedgerKind> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                Entry::Ledger(l) => Some(l.kind),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn refusal(effects: &[Effect]) -> Option<Refusal> {
    effects.iter().find_map(|e| match e {
        Effect::Reply { result: Err(r), .. } => Some(r.clone()),
        _ => None,
    })
}

fn alerts(effects: &[Effect]) -> Vec<AlertKind> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::Alert(a)) => Some(a.kind.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_parked_run_holds_the_job_until_approved_and_overlaps_are_skipped() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("deploy", every("1h"));
    def.safe_to_repeat = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:05", 1, awaiting("3h"));
    let view = s.state.job("deploy", at("09:05")).unwrap();
    assert_eq!(view.running, Some(RunId(1)));
    assert_eq!(view.awaiting_approval, Some(at("12:05")));
    s.note("the process is done with r1: its ticks hold nothing, and the run is not lost");
    s.tick_through("09:30", "09:59:30", "30m", 1);
    s.tick("10:00:10", 1);
    assert_eq!(
        ledger_kinds(&s.last),
        vec![LedgerKind::Missed {
            cause: MissCause::Overlap,
            action: MissAction::Skipped
        }],
        "the 10:00 due time meets the overlap policy while r1 is parked"
    );
    s.command("10:20", "run-now by bob", {
        Event::RunNow {
            job: JobName::new("deploy").unwrap(),
            actor: Actor::new("bob"),
        }
    });
    assert!(matches!(
        refusal(&s.last),
        Some(Refusal::AwaitingApproval { run: RunId(1), .. })
    ));
    s.note("a duplicate of the parking result does not push the expiry out");
    s.finish_as("10:25", 1, 1, 1, awaiting("3h"));
    assert_eq!(
        s.state
            .job("deploy", at("10:25"))
            .unwrap()
            .awaiting_approval,
        Some(at("12:05"))
    );
    s.command(
        "10:30",
        "approve r7 (no such run) by carol",
        approve("deploy", 7, "carol"),
    );
    assert_eq!(
        refusal(&s.last),
        Some(Refusal::NotAwaitingApproval { run: RunId(7) })
    );
    s.command(
        "10:31",
        "approve r1 by carol",
        approve("deploy", 1, "carol"),
    );
    assert_eq!(
        ledger_kinds(&s.last),
        vec![LedgerKind::Ran {
            run: RunId(1),
            skipped: false
        }]
    );
    s.command(
        "10:32",
        "approve r1 again by dave",
        approve("deploy", 1, "dave"),
    );
    assert_eq!(
        refusal(&s.last),
        Some(Refusal::NotAwaitingApproval { run: RunId(1) })
    );
    s.note("a result for the approved run is stale");
    s.finish_as("10:40", 1, 1, 1, Outcome::Ok);
    s.tick("11:00:10", 1);
    s.finish("11:02", 2, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_parked_run_expires_once_recorded_and_alerted_once_then_the_next_due_time_runs() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("payout", every("1h"));
    def.missed = duetime::MissedRule::CatchUpOnce;
    def.overlap = Some(duetime::Overlap::BufferOne);
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:04", 1, awaiting("90m"));
    s.tick("10:00:10", 1);
    s.note("10:00 is buffered behind the parked run");
    s.tick("10:33:59", 1);
    assert!(ledger_kinds(&s.last).is_empty(), "not yet: until is 10:34");
    s.tick("10:34:00", 1);
    assert_eq!(
        ledger_kinds(&s.last),
        vec![LedgerKind::ApprovalExpired { run: RunId(1) }]
    );
    assert_eq!(
        alerts(&s.last),
        vec![AlertKind::ApprovalExpired { run: RunId(1) }]
    );
    assert!(
        s.last
            .iter()
            .any(|e| matches!(e, Effect::Do(Action::Start(Start { run: RunId(2), .. })))),
        "the buffered 10:00 starts as soon as the job is free"
    );
    s.command(
        "10:35",
        "approve r1 too late by carol",
        approve("payout", 1, "carol"),
    );
    assert_eq!(
        refusal(&s.last),
        Some(Refusal::NotAwaitingApproval { run: RunId(1) })
    );
    s.finish("10:36", 2, awaiting("10m"));
    s.tick("10:46:10", 1);
    assert_eq!(
        ledger_kinds(&s.last),
        vec![LedgerKind::ApprovalExpired { run: RunId(2) }]
    );
    assert!(
        alerts(&s.last).is_empty(),
        "the same incident is told once until a success"
    );
    s.tick("11:00:10", 1);
    s.finish("11:01", 3, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_parked_run_is_settled_by_a_later_result_with_its_fence() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("review", every("1h"));
    def.retries = 1;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:03", 1, awaiting("2h"));
    s.note("the host finished it another way: a result with the run's fence");
    s.finish_as("09:20", 1, 1, 1, Outcome::failed("rejected"));
    assert!(s
        .state
        .job("review", at("09:20"))
        .unwrap()
        .running
        .is_none());
    s.finish_as("09:21", 1, 1, 9, Outcome::Ok);
    s.tick("09:25", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn an_absurd_ttl_is_clamped_to_thirty_days() {
    let mut s = Story::new();
    s.define("08:59", job("slow", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, Outcome::AwaitingApproval { ttl: Duration::MAX });
    let until = s.state.job("slow", at("09:01")).unwrap().awaiting_approval;
    assert_eq!(until, Some(at("09:01").saturating_add(MAX_APPROVAL_TTL)));
    assert_eq!(s.state.next_wake(), Some(at("10:00")));
    let run = open_run(&s, "slow");
    assert_eq!(
        run.parked(),
        until,
        "a host reads the same bound from the run itself"
    );
}

#[test]
fn a_run_whose_command_runs_is_not_parked() {
    let mut s = Story::new();
    s.define("08:59", job("slow", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    let run = open_run(&s, "slow");
    assert_eq!(run.parked(), None);
}

#[test]
fn a_one_shot_completes_after_its_run_and_never_runs_again() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("migrate", Schedule::at(at("09:00")));
    def.safe_to_repeat = true;
    s.define("08:50", def.clone());
    s.start("08:59:30", 1);
    s.command("08:59:40", "run-now by bob", {
        Event::RunNow {
            job: JobName::new("migrate").unwrap(),
            actor: Actor::new("bob"),
        }
    });
    s.tick("08:59:50", 1);
    s.finish("08:59:55", 1, Outcome::Ok);
    assert_eq!(
        s.state.job("migrate", at("09:00")).unwrap().ended,
        None,
        "a manual run does not complete a one-shot"
    );
    s.tick("09:00:10", 1);
    s.finish("09:10", 2, Outcome::Ok);
    assert_eq!(
        s.state.job("migrate", at("09:10")).unwrap().ended,
        Some(OneShotEnd::Completed {
            run: RunId(2),
            at: at("09:10")
        })
    );
    assert_eq!(
        s.state.next_wake(),
        None,
        "a completed one-shot never wakes"
    );
    s.tick("10:00", 1);
    s.command("10:05", "the same definition again", {
        Event::Upsert {
            def: Box::new(def.clone()),
            actor: Actor::new("alice"),
        }
    });
    assert!(s.state.job("migrate", at("10:05")).unwrap().ended.is_some());
    let mut later = def.clone();
    later.schedule = Schedule::at(at("11:00"));
    s.command("10:10", "a new instant, 11:00", {
        Event::Upsert {
            def: Box::new(later),
            actor: Actor::new("alice"),
        }
    });
    assert_eq!(s.state.job("migrate", at("10:10")).unwrap().ended, None);
    s.tick("11:00:10", 1);
    s.finish("11:01", 3, Outcome::Ok);
    s.tick("12:00", 1);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_one_shot_whose_instant_passes_while_every_process_is_down_expires() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:50", job("notify", Schedule::at(at("09:00"))));
    s.start("08:55", 1);
    s.crash("08:58", 1);
    s.start_alone("10:30", 2);
    let expired: Vec<&History> = s
        .last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                Entry::History(h @ History::Expired { .. }) => Some(h),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        expired,
        vec![&History::Expired {
            cause: MissCause::Down
        }]
    );
    s.tick("11:00", 2);
    s.note("a late catch-up outside its window also expires the instant");
    let mut def = job("remind", Schedule::at(at("12:00")));
    def.missed = duetime::MissedRule::CatchUpOnce;
    def.catch_up_window = Some("30m".parse().unwrap());
    s.define("11:10", def);
    let then = s.start_alone("13:00", 3);
    assert!(matches!(
        s.state.job("remind", at(&then)).unwrap().ended,
        Some(OneShotEnd::Expired {
            cause: MissCause::TooLate,
            ..
        })
    ));
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_one_shot_settled_by_an_expired_approval_completes_with_that_run() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:50", job("signoff", Schedule::at(at("09:00"))));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:01", 1, awaiting("30m"));
    s.tick("09:31:10", 1);
    assert_eq!(
        s.state.job("signoff", at("09:32")).unwrap().ended,
        Some(OneShotEnd::Completed {
            run: RunId(1),
            at: at("09:31:10")
        })
    );
    insta::assert_snapshot!(s.trace());
}

/// An instant before the one-shot's definition is not its due time: an earlier schedule's
/// catch-up whose range holds it does not end the one-shot, and a backfill of it later runs
/// it and ends it. (Found by the simulator: the catch-up "completed" the one-shot, the
/// backfill then started its instant again, and the state failed its own load check.)
#[test]
fn an_earlier_schedules_catch_up_over_a_one_shots_past_instant_does_not_end_it() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("report", every("10m"));
    def.missed = duetime::MissedRule::Required;
    s.define("08:55", def.clone());
    s.start("08:59:30", 1);
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.crash("09:01", 1);
    s.start_alone("10:59:05", 2);
    s.note("r2 catches up 09:10..10:50 under the old schedule; 11:00 waits behind it");
    let mut once = def.clone();
    once.schedule = Schedule::at(at("10:15"));
    s.command(
        "11:01",
        "report becomes a one-shot at 10:15 (already past)",
        {
            Event::Upsert {
                def: Box::new(once),
                actor: Actor::new("alice"),
            }
        },
    );
    s.finish("11:02", 2, Outcome::Ok);
    assert_eq!(
        s.state.job("report", at("11:02")).unwrap().ended,
        None,
        "the old schedule's catch-up is not about 10:15"
    );
    s.command("11:03", "backfill report 10:00..10:30 by bob", {
        Event::Backfill {
            job: JobName::new("report").unwrap(),
            from: at("10:00"),
            to: at("10:30"),
            actor: Actor::new("bob"),
        }
    });
    s.note("r3 runs the old schedule's 11:00, owed while r2 ran; then r4 the backfill");
    // A live host ticks while its runs go on (a process the store has not heard from for
    // longer than a lease claims nothing: a result is no tick).
    s.tick("11:03:30", 2);
    s.finish("11:04", 3, Outcome::Ok);
    s.finish("11:05", 4, Outcome::Ok);
    assert_eq!(
        s.state.job("report", at("11:05")).unwrap().ended,
        Some(OneShotEnd::Completed {
            run: RunId(4),
            at: at("11:05")
        })
    );
    insta::assert_snapshot!(s.trace());
}

/// A one-shot defined before any process ever ran, whose instant passed before the first
/// one started: that start's very first effect is the entry settling the instant, and the
/// `expired` line follows it. (Found by a mutant looking for a new definition one effect
/// before that entry, which at the step's first effect reads before the step began.)
#[test]
fn a_one_shot_whose_instant_passed_before_any_process_started_expires_at_the_first_start() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:50", job("notify", Schedule::at(at("09:00"))));
    s.start("10:30", 1);
    let first_two: Vec<&Entry> = s
        .last
        .iter()
        .take(2)
        .filter_map(|e| match e {
            Effect::Journal(r) => Some(&r.entry),
            _ => None,
        })
        .collect();
    assert!(
        matches!(
            first_two.as_slice(),
            [
                Entry::Ledger(_),
                Entry::History(History::Expired {
                    cause: MissCause::Down
                })
            ]
        ),
        "{}",
        s.trace()
    );
    insta::assert_snapshot!(s.trace());
}
