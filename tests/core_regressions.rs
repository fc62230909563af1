//! Regression tests for core bugs found by the scenario stories, one per fix, asserting the
//! exact behaviour rather than snapshotting a trace.

mod support;

use duetime::{Action, Notice, Start};
use duetime::{Covers, Effect, JobName, MissedRule, Outcome, Overlap, Trigger};
use support::*;

fn started(effects: &[Effect]) -> Vec<(u64, Trigger, Option<Covers>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start {
                run,
                trigger,
                covers,
                ..
            })) => Some((run.0, *trigger, *covers)),
            _ => None,
        })
        .collect()
}

/// Two overlapped due times buffered under `buffer_all` merge into one owed segment of two;
/// starting the first of them used to compute the batch end with `batch - 2` on a batch of
/// one, which overflowed (a panic in debug builds, a runaway iterator in release).
#[test]
fn buffer_all_starts_two_merged_overlapped_due_times_one_at_a_time() {
    for (rule, overlap) in [
        (MissedRule::Skip, Some(Overlap::BufferAll)),
        (MissedRule::Required, None),
    ] {
        let mut s = Story::new();
        let mut def = job("sync", every("1m"));
        def.missed = rule;
        def.overlap = overlap;
        s.define("08:59", def);
        s.start("08:59:30", 1);
        s.tick_through("09:00:05", "09:02:35", "30s", 1);
        s.finish("09:02:40", 1, Outcome::Ok);
        let one = |t: &str| Covers {
            from: at(t),
            to: at(t),
            count: 1,
        };
        assert_eq!(
            started(&s.last),
            vec![(2, Trigger::Buffered, Some(one("09:01")))]
        );
        s.finish("09:02:45", 2, Outcome::Ok);
        assert_eq!(
            started(&s.last),
            vec![(3, Trigger::Buffered, Some(one("09:02")))]
        );
        s.finish("09:02:50", 3, Outcome::Ok);
        assert_eq!(started(&s.last), vec![]);
        assert_eq!(s.state.job("sync", at("09:02:50")).unwrap().owed, 0);
    }
}

/// The wake index did not include a run's stall time, so while its holder kept renewing
/// the lease no tick visited the job and the stall alert waited for the deadline (or never
/// came when the run finished first).
#[test]
fn a_renewed_run_is_alerted_stalled_at_its_stall_time_once() {
    let mut s = Story::new();
    let mut def = job("backup", every("1h"));
    def.timeout = "45m".parse().unwrap();
    def.stall_after = "15m".parse().unwrap();
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    let stalled = |effects: &[Effect]| {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Notice(Notice::Alert(_))))
            .count()
    };
    let mut alerts = Vec::new();
    let mut t = at("09:00:40");
    while t <= at("09:20:40") {
        if alerts.is_empty() {
            assert!(s.state.next_wake() <= Some(at("09:15:10")));
        }
        let clock = t.to_string()[11..19].to_string();
        s.tick(&clock, 1);
        if stalled(&s.last) > 0 {
            alerts.push(clock);
        }
        t = t.saturating_add("30s".parse().unwrap());
    }
    assert_eq!(alerts, vec!["09:15:10".to_string()]);
}

/// A run that failed (or was lost) while its job was paused left a retry waiting in the
/// paused job; a manual run then started beside it ("a run and a retry at once", an
/// invariant panic in debug builds). A pause keeps no retry: the due time goes to the
/// missed rule as `paused`, as when a pause finds a retry already waiting.
#[test]
fn a_failure_or_loss_while_paused_hands_the_due_time_to_the_missed_rule() {
    use duetime::{Actor, Event, LedgerKind, MissAction, MissCause};
    let paused_skip = LedgerKind::Missed {
        cause: MissCause::Paused,
        action: MissAction::Skipped,
    };
    let ledger = |effects: &[Effect]| -> Vec<LedgerKind> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Journal(duetime::Record {
                    entry: duetime::Entry::Ledger(l),
                    ..
                }) => Some(l.kind),
                _ => None,
            })
            .collect()
    };
    for lost in [false, true] {
        let mut s = Story::new();
        let mut def = job("rebuild_index", every("1h"));
        def.safe_to_repeat = true;
        def.retries = 3;
        s.define("08:59", def);
        s.start("08:59:30", 1);
        s.start("08:59:31", 2);
        s.tick("09:00:10", 1);
        s.command(
            "09:00:20",
            "pause",
            Event::Pause {
                job: JobName::new("rebuild_index").unwrap(),
                actor: Actor::new("alice"),
                note: String::new(),
            },
        );
        if lost {
            s.crash("09:00:30", 1);
            s.tick("09:01:20", 2);
        } else {
            s.finish("09:00:30", 1, Outcome::failed("exit 1"));
        }
        assert_eq!(ledger(&s.last), vec![paused_skip], "lost: {lost}");
        s.command(
            "09:01:25",
            "run now",
            Event::RunNow {
                job: JobName::new("rebuild_index").unwrap(),
                actor: Actor::new("alice"),
            },
        );
        s.tick("09:01:30", 2);
        assert_eq!(
            started(&s.last),
            vec![(2, Trigger::Manual, None)],
            "lost: {lost}"
        );
    }
}

/// A due time owed under the old schedule, alone in its segment, used to stay untagged when
/// the schedule changed, and then merged with the new schedule's next overlapped due time
/// into one segment of two schedules: its count no longer matched its range, and the state
/// no longer loaded. Found by the simulator (seeds 12 and 190 with `--faults heavy`).
#[test]
fn an_owed_due_time_of_an_old_schedule_never_merges_with_the_new_schedules() {
    let mut s = Story::new();
    let mut def = job("ledger_close", every("1m"));
    def.missed = MissedRule::Required;
    s.define("08:59", def.clone());
    s.start("08:59:30", 1);
    s.tick("09:00:05", 1);
    s.tick("09:01:05", 1); // 09:01 overlaps run 1: owed alone
    def.schedule = every("2m");
    s.define("09:01:30", def);
    s.tick("09:02:05", 1); // 09:02 (new schedule) overlaps too: owed in a segment of its own
    let pending: Vec<(String, u64)> = s
        .state
        .job("ledger_close", at("09:02:05"))
        .map(|v| vec![("owed".to_string(), v.owed)])
        .unwrap();
    assert_eq!(pending, vec![("owed".to_string(), 2)]);
    s.finish("09:02:30", 1, Outcome::Ok);
    let next = started(&s.last);
    assert_eq!(
        next.len(),
        1,
        "the settling process starts the older owed due time"
    );
    assert_eq!(next[0].2.map(|c| (c.from, c.count)), Some((at("09:01"), 1)));
    s.finish("09:02:40", 2, Outcome::Ok);
    let next = started(&s.last);
    assert_eq!(next[0].2.map(|c| (c.from, c.count)), Some((at("09:02"), 1)));
}
