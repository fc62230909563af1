//! Checks of the fuzz harness itself: the reference gets known daylight-saving cases right,
//! the checks accept them, and every kept regression input replays clean.

use chrono_tz::Tz;
use duetime::{DstPolicy, Fold, Gap};
use duetime_fuzz::cron_gen::{CronGen, FieldGen, Item};
use duetime_fuzz::reference::cron_due_in;
use duetime_fuzz::targets::{check_schedule_next, InstantGen, NextInput, ScheduleGen};

fn field(first: Item) -> FieldGen {
    FieldGen {
        first,
        more: Vec::new(),
    }
}

/// `minute hour * * *` in zone `zone` (an index into `ZONES`), default policy unless given.
fn daily(minute: Item, hour: Item, zone: u8, policy: Option<(bool, u8)>) -> CronGen {
    CronGen {
        minute: field(minute),
        hour: field(hour),
        day_of_month: field(Item::Star),
        month: field(Item::Star),
        day_of_week: field(Item::Star),
        second: None,
        macro_pick: 255,
        zone,
        zone_place: 0,
        policy,
        upper: false,
    }
}

const NY: u8 = 1;
// 2025-03-09 07:00:00Z: New York springs from 02:00 EST to 03:00 EDT.
const SPRING: i64 = 1_741_503_600;
// 2025-11-02 06:00:00Z: New York falls back from 02:00 EDT to 01:00 EST.
const FALL: i64 = 1_762_063_200;

fn due(gen: &CronGen, from: i64, until: i64) -> Vec<i64> {
    let case = gen.render();
    let tz: Tz = case.zone.parse().unwrap();
    let policy = case.policy.unwrap_or(case.reference.default_policy());
    cron_due_in(&case.reference, tz, policy, from, until)
}

#[test]
fn reference_follows_cronie_in_new_york() {
    // 30 2 * * * is fixed-time: the missing 02:30 runs at the gap's end, 03:00 EDT.
    let fixed = daily(Item::Value(30), Item::Value(2), NY, None);
    assert_eq!(fixed.render().expr, "30 2 * * *");
    assert_eq!(due(&fixed, SPRING - 3 * 3600, SPRING + 3600), vec![SPRING]);
    // ... also when the window starts exactly at the gap's end.
    assert_eq!(due(&fixed, SPRING, SPRING + 60), vec![SPRING]);
    // 30 1 * * * runs once in the repeated hour, at its first pass (05:30Z, EDT).
    let fold = daily(Item::Value(30), Item::Value(1), NY, None);
    assert_eq!(
        due(&fold, FALL - 2 * 3600, FALL + 2 * 3600),
        vec![FALL - 1800]
    );
    // With fold: last, at the second pass (06:30Z, EST); with both, twice.
    let last = daily(Item::Value(30), Item::Value(1), NY, Some((true, 1)));
    assert_eq!(
        due(&last, FALL - 2 * 3600, FALL + 2 * 3600),
        vec![FALL + 1800]
    );
    let both = daily(Item::Value(30), Item::Value(1), NY, Some((true, 2)));
    assert_eq!(
        due(&both, FALL - 2 * 3600, FALL + 2 * 3600),
        vec![FALL - 1800, FALL + 1800]
    );
    // */30 * * * * is not fixed-time: real elapsed time, nothing in the gap, both passes.
    let elapsed = daily(Item::StarStep(29), Item::Star, NY, None);
    assert_eq!(elapsed.render().expr, "*/30 * * * *");
    assert_eq!(
        due(&elapsed, SPRING - 3600, SPRING + 1),
        vec![SPRING - 3600, SPRING - 1800, SPRING]
    );
    assert_eq!(
        due(&elapsed, FALL - 3600, FALL + 3600).len(),
        4,
        "01:00, 01:30 EDT then 01:00, 01:30 EST"
    );
    // Explicit skip drops the gap's 02:30.
    let skip = daily(Item::Value(30), Item::Value(2), NY, Some((false, 0)));
    assert!(due(&skip, SPRING - 3 * 3600, SPRING + 3600).is_empty());
    assert_eq!(
        skip.render().policy,
        Some(DstPolicy {
            gap: Gap::Skip,
            fold: Fold::First
        })
    );
}

fn next_input(gen: CronGen, t_ms: i64) -> NextInput {
    NextInput {
        schedule: ScheduleGen::Cron(gen),
        instant: InstantGen::Raw(t_ms),
    }
}

/// The gap's due time is the first second after it; asked from just before that second, the
/// search must still see the gap.
#[test]
fn gap_end_due_time_is_found_from_just_before_it() {
    for t in [
        SPRING * 1000 - 1,
        SPRING * 1000 - 500,
        SPRING * 1000 - 1000,
        SPRING * 1000 - 3_600_000,
    ] {
        check_schedule_next(&next_input(
            daily(Item::Value(30), Item::Value(2), NY, None),
            t,
        ));
    }
}

#[test]
fn fold_cases_pass_the_checks() {
    for fold in 0..3 {
        for t in [FALL - 7200, FALL - 1800, FALL - 1, FALL, FALL + 1800] {
            let gen = daily(Item::Value(30), Item::Value(1), NY, Some((true, fold)));
            check_schedule_next(&next_input(gen, t * 1000));
        }
    }
}

/// Every file under fuzz/regressions/<target>/ replays through its target's checks.
#[test]
fn regressions_replay_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    for target in duetime_fuzz::targets::TARGETS {
        let Ok(dir) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in dir {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            duetime_fuzz::targets::run(target, &data);
        }
    }
}

/// The committed seeds of the door targets (issue 47) pass their checks: a seed that fails
/// would make every run of the target fail at once.
#[test]
fn door_target_seeds_replay_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for target in [
        "wire_request",
        "jobs_file",
        "stored_rows",
        "http_query",
        "human_input",
    ] {
        let mut seeds: Vec<_> = std::fs::read_dir(root.join(target))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("seed-")
            })
            .collect();
        seeds.sort();
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for path in seeds {
            duetime_fuzz::targets::run(target, &std::fs::read(&path).unwrap());
        }
    }
}
