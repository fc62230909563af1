//! Backfill: a person asks for the due times of a past range to run. They are owed as one
//! segment with cause `backfill` and run like any catch-up, whatever the missed rule. A
//! range reaching into the span the ledger accounts (from the job's definition on, moved
//! back by each accepted backfill) is refused, so no due time ever runs twice.

mod support;

use duetime::{Action, Actor, Effect, Event, JobName, MissCause, MissedRule, Outcome, Refusal};
use support::*;

fn backfill(s: &mut Story, time: &str, from: &str, to: &str) {
    let label = format!("backfill sync {from}..{to}");
    s.send(
        time,
        &label,
        Event::Backfill {
            job: JobName::new("sync").unwrap(),
            from: at(from),
            to: at(to),
            actor: Actor::new("bob"),
        },
    );
}

fn refusal(s: &Story) -> Option<Refusal> {
    s.last.iter().find_map(|e| match e {
        Effect::Reply { result, .. } => result.clone().err(),
        _ => None,
    })
}

#[test]
fn backfills_go_backward_in_time_and_run_in_one_catch_up_batch() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("09:00", job("sync", every("1h")));
    s.start("09:00:10", 1);
    backfill(&mut s, "09:01", "06:00", "08:00");
    assert_eq!(refusal(&s), None);
    s.tick("09:01:10", 1);
    s.finish("09:02", 1, Outcome::Ok);
    s.note("a second backfill overlapping the first is refused");
    backfill(&mut s, "09:03", "05:00", "07:00");
    assert_eq!(
        refusal(&s),
        Some(Refusal::AlreadyAccounted {
            from: Some(at("05:59:59.999"))
        })
    );
    s.note("an earlier one is accepted");
    backfill(&mut s, "09:04", "03:30", "05:30");
    assert_eq!(refusal(&s), None);
    s.tick("09:04:10", 1);
    s.finish("09:05", 2, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn backfills_into_accounted_time_or_holding_no_due_time_are_refused() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("09:00", job("sync", every("1h")));
    backfill(&mut s, "09:01", "07:00", "10:00");
    assert_eq!(
        refusal(&s),
        Some(Refusal::AlreadyAccounted {
            from: Some(at("09:00"))
        })
    );
    backfill(&mut s, "09:02", "07:10", "07:50");
    assert_eq!(
        refusal(&s),
        Some(Refusal::NoDueTimes {
            from: at("07:10"),
            to: at("07:50")
        })
    );
    backfill(&mut s, "09:03", "08:00", "07:00");
    assert_eq!(
        refusal(&s),
        Some(Refusal::EmptyRange {
            from: at("08:00"),
            to: at("07:00")
        })
    );
    s.send(
        "09:04",
        "backfill nope",
        Event::Backfill {
            job: JobName::new("nope").unwrap(),
            from: at("07:00"),
            to: at("08:00"),
            actor: Actor::new("bob"),
        },
    );
    assert!(matches!(refusal(&s), Some(Refusal::NotFound { .. })));
    backfill(&mut s, "09:05", "08:00", "09:00");
    assert_eq!(
        refusal(&s),
        None,
        "refusals moved nothing: up to 09:00 is accepted"
    );
    insta::assert_snapshot!(s.trace());
}

/// Why the due times of the run the last step started are late, as its `Start` says
/// (what the daemon tells a backfill's command), held to what the open run it committed
/// says; `None` when the step started nothing.
fn started_late(s: &Story) -> Option<Option<MissCause>> {
    let late = s.last.iter().find_map(|e| match e {
        Effect::Do(Action::Start(start)) => Some(start.late),
        _ => None,
    })?;
    let seq = s.state.seq_of_name("sync")?;
    let open = s.state.record(seq)?.run()?;
    assert_eq!(late, open.late(), "the start and its open run disagree");
    Some(late)
}

#[test]
fn a_start_says_why_its_due_times_are_late() {
    let mut s = Story::new();
    let mut def = job("sync", every("1h"));
    def.missed = MissedRule::CatchUpOnce;
    s.define("09:00", def);
    s.start("09:00:10", 1);
    s.tick("10:00:05", 1);
    assert_eq!(started_late(&s), Some(None), "10:00 runs on time");
    s.finish("10:01", 1, Outcome::Ok);
    backfill(&mut s, "10:02", "06:00", "08:00");
    s.tick("10:02:10", 1);
    assert_eq!(
        started_late(&s),
        Some(Some(MissCause::Backfill)),
        "the backfill's run says it is one"
    );
    s.finish("10:03", 2, Outcome::Ok);
    s.note("p1 crashes; 11:00 and 12:00 pass with no process up, and 12:00 is caught up");
    s.crash("10:04", 1);
    // Its tick two ticks on, when p2's clock is released, starts the catch-up.
    s.start_alone("12:30", 2);
    assert_eq!(
        started_late(&s),
        Some(Some(MissCause::Down)),
        "the catch-up says no process was up"
    );
}

#[test]
fn a_failing_backfill_run_is_retried_then_failed_out() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.retries = 1;
    s.define("09:00", def);
    s.start("09:00:10", 1);
    backfill(&mut s, "09:01", "07:00", "08:00");
    s.tick("09:01:10", 1);
    let failed = || Outcome::Failed {
        kind: "exit 1".into(),
        retry_after: None,
    };
    s.finish("09:02", 1, failed());
    s.tick("09:05", 1);
    s.tick("09:30", 1);
    s.finish("09:31", 2, failed());
    insta::assert_snapshot!(s.trace());
}

/// Found by the simulator (seed 11 with `--faults heavy`): a run's cover handed back to the
/// owed line by a pause went to its front, before a backfill of earlier due times accepted
/// while the run was out, so the line was out of order (the state refused to load). It
/// goes in order now: the backfill first, then the cover.
#[test]
fn a_cover_handed_back_while_a_backfill_waits_keeps_the_owed_line_in_order() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.missed = duetime::MissedRule::Required;
    def.retries = 1;
    s.define("09:00", def);
    s.start("09:00:10", 1);
    s.tick("10:00:10", 1);
    backfill(&mut s, "10:01", "06:00", "08:00");
    assert_eq!(refusal(&s), None);
    s.send(
        "10:02",
        "pause sync",
        Event::Pause {
            job: JobName::new("sync").unwrap(),
            actor: Actor::new("bob"),
            note: String::new(),
        },
    );
    s.note("r1 fails while the job is paused: its cover goes back in line, after the backfill");
    s.finish(
        "10:03",
        1,
        Outcome::Failed {
            kind: "exit 1".into(),
            retry_after: None,
        },
    );
    s.send(
        "10:04",
        "resume sync",
        Event::Resume {
            job: JobName::new("sync").unwrap(),
            actor: Actor::new("bob"),
        },
    );
    s.tick("10:04:10", 1);
    s.finish("10:05", 2, Outcome::Ok);
    s.tick("10:05:10", 1);
    s.finish("10:06", 3, Outcome::Ok);
    let ledger = s.ledger();
    let backfilled = ledger
        .find("[06:00:00 .. 08:00:00 ×3]: missed (backfill) caught up by r2")
        .expect(&ledger);
    let handed_back = ledger
        .find("[10:00:00]: missed (paused) caught up by r3")
        .expect(&ledger);
    assert!(backfilled < handed_back, "{ledger}");
}

/// A `required` job never drops a due time to the bound on its owed line: its backfills
/// leave two of the 32 segments free (`REQUIRED_RESERVE`) for the debts no command can
/// refuse. With 30 disjoint backfills owed (the job paused, so none runs), a 31st backfill
/// and a new schedule are refused, typed, and the line is left whole; the due times passed
/// while paused take a segment of the reserve at the resume, and every one of them, and
/// every backfilled due time, runs. (Before the reserve, 32 backfills filled the line and
/// the resume recorded the oldest backfill skipped.)
#[test]
fn a_required_job_whose_owed_line_is_full_refuses_a_new_schedule_rather_than_drop_a_debt() {
    let mut s = Story::new();
    let mut def = job("sync", every("1h"));
    def.missed = duetime::MissedRule::Required;
    s.define("2025-06-04 00:00", def.clone());
    s.send("2025-06-04 00:01", "pause sync by bob", {
        Event::Pause {
            job: JobName::new("sync").unwrap(),
            actor: Actor::new("bob"),
            note: String::new(),
        }
    });
    // Every other hour of the days before, going back: 30 ranges with gaps between them.
    for k in 0..30u32 {
        let hour = 2 + 2 * i64::from(k);
        let t = at("2025-06-04 00:00").as_millis() - hour * 3_600_000;
        let when = duetime::Timestamp::from_millis(t).to_string();
        let asked = format!("2025-06-04 00:{:02}", k + 2);
        s.send(&asked, &format!("backfill {when}"), {
            Event::Backfill {
                job: JobName::new("sync").unwrap(),
                from: duetime::Timestamp::from_millis(t),
                to: duetime::Timestamp::from_millis(t),
                actor: Actor::new("bob"),
            }
        });
        assert_eq!(refusal(&s), None, "backfill {k} is accepted");
    }
    assert_eq!(
        s.state.job("sync", at("2025-06-04 00:40")).unwrap().owed,
        30
    );
    let full = Some(Refusal::OwedLineFull { max: 32 });
    backfill(
        &mut s,
        "2025-06-04 00:41",
        "2025-06-01 00:00",
        "2025-06-01 00:00",
    );
    assert_eq!(refusal(&s), full, "a 31st range would eat into the reserve");
    let mut moved = def.clone();
    moved.schedule = every("2h");
    s.send("2025-06-04 00:42", "sync moves to every 2h", {
        Event::Upsert {
            def: Box::new(moved),
            actor: Actor::new("alice"),
        }
    });
    assert_eq!(
        refusal(&s),
        full,
        "a new schedule would need room of its own"
    );
    assert_eq!(
        s.state.job("sync", at("2025-06-04 00:42")).unwrap().owed,
        30
    );
    let mut longer = def.clone();
    longer.timeout = duetime::Duration::from_secs(7200);
    s.send(
        "2025-06-04 00:42",
        "sync gets a longer timeout, same schedule",
        {
            Event::Upsert {
                def: Box::new(longer),
                actor: Actor::new("alice"),
            }
        },
    );
    assert_eq!(
        refusal(&s),
        None,
        "a change that keeps the schedule owes nothing new: the full line does not stand in its way"
    );
    s.send("2025-06-04 02:43", "resume sync by bob", {
        Event::Resume {
            job: JobName::new("sync").unwrap(),
            actor: Actor::new("bob"),
        }
    });
    assert_eq!(
        s.state.job("sync", at("2025-06-04 02:43")).unwrap().owed,
        32,
        "01:00 and 02:00, passed while paused, are owed beside the 30 backfilled"
    );
    s.start("2025-06-04 02:44", 1);
    for run in 1..=31 {
        s.finish("2025-06-04 02:45", run, Outcome::Ok);
    }
    let ledger = s.ledger();
    assert_eq!(ledger.matches("missed (backfill) caught up").count(), 30);
    assert_eq!(ledger.matches("missed (paused) caught up").count(), 1);
    assert!(!ledger.contains("skipped"), "{ledger}");
}

/// Backfills that follow one another in the schedule (no due time between them) stay apart
/// while the line has room: each runs as its own catch-up. Only a full line merges them
/// (`Activity::make_room`).
#[test]
fn backfills_that_follow_one_another_run_apart_while_the_line_has_room() {
    let mut s = Story::new();
    s.define("09:00", job("sync", every("1h")));
    s.note("three backfills, each right against the one before it");
    backfill(&mut s, "09:01", "07:00", "08:00");
    backfill(&mut s, "09:02", "05:00", "06:00");
    backfill(&mut s, "09:03", "03:00", "04:00");
    assert_eq!(refusal(&s), None);
    s.tick("09:03:10", 1);
    s.finish("09:04", 1, Outcome::Ok);
    s.tick("09:04:10", 1);
    s.finish("09:05", 2, Outcome::Ok);
    s.tick("09:05:10", 1);
    s.finish("09:06", 3, Outcome::Ok);
    let ledger = s.ledger();
    for (range, run) in [
        ("[03:00:00 .. 04:00:00 ×2]", "r1"),
        ("[05:00:00 .. 06:00:00 ×2]", "r2"),
        ("[07:00:00 .. 08:00:00 ×2]", "r3"),
    ] {
        let line = format!("{range}: missed (backfill) caught up by {run}");
        assert!(ledger.contains(&line), "{line} not in\n{ledger}");
    }
}

#[test]
fn a_backfill_from_the_beginning_takes_every_due_time_up_to_its_end() {
    let mut s = Story::new();
    s.show_history = true;
    s.note("a one-shot defined after its instant: the ledger starts at its definition");
    s.define("09:00", job("sync", duetime::Schedule::at(at("08:00"))));
    s.tick("09:00:10", 1);
    s.note("from the earliest instant there is, its one due time is found and run");
    backfill_from_the_beginning(&mut s, "09:01", "09:00");
    assert_eq!(refusal(&s), None);
    s.tick("09:01:10", 1);
    s.finish("09:02", 1, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_backfill_from_the_beginning_of_a_dense_schedule_is_refused_with_its_count() {
    let mut s = Story::new();
    s.define("09:00", job("sync", every("1h")));
    backfill_from_the_beginning(&mut s, "09:01", "08:00");
    let Some(Refusal::TooManyDueTimes { count, max }) = refusal(&s) else {
        panic!("expected too_many_due_times, got {:?}", refusal(&s));
    };
    // Every hour from the earliest instant (292 million years back) to 08:00.
    assert_eq!(
        count,
        every("1h").count_in(duetime::Timestamp::MIN, at("08:00"))
    );
    assert!(count > 2_000_000_000_000, "{count}");
    assert_eq!(max, duetime::MAX_BACKFILL);
}

fn backfill_from_the_beginning(s: &mut Story, time: &str, to: &str) {
    s.send(
        time,
        &format!("backfill sync from the beginning to {to}"),
        Event::Backfill {
            job: JobName::new("sync").unwrap(),
            from: duetime::Timestamp::MIN,
            to: at(to),
            actor: Actor::new("bob"),
        },
    );
}

#[test]
fn a_backfill_of_exactly_the_bound_is_taken_and_one_more_is_refused() {
    let mut s = Story::new();
    s.define("09:00", job("sync", every("1m")));
    let to = at("08:59");
    let ask = |s: &mut Story, time: &str, from: duetime::Timestamp| {
        s.send(
            time,
            "backfill sync",
            Event::Backfill {
                job: JobName::new("sync").unwrap(),
                from,
                to,
                actor: Actor::new("bob"),
            },
        );
    };
    let minutes = |n: u64| duetime::Duration::from_mins(n);
    ask(
        &mut s,
        "09:01",
        to.saturating_sub(minutes(duetime::MAX_BACKFILL)),
    );
    assert_eq!(
        refusal(&s),
        Some(Refusal::TooManyDueTimes {
            count: duetime::MAX_BACKFILL + 1,
            max: duetime::MAX_BACKFILL
        })
    );
    ask(
        &mut s,
        "09:02",
        to.saturating_sub(minutes(duetime::MAX_BACKFILL - 1)),
    );
    assert_eq!(
        refusal(&s),
        None,
        "exactly MAX_BACKFILL due times are taken"
    );
}
