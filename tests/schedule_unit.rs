//! Schedules at their edges: `every` grids (offsets, negative instants, the ends of `i64`),
//! one-shots, iterators, `count_in` over the whole range, the first and last due times cron
//! can yield, expressions that can never match, and regressions for bugs found in review.

use std::time::Instant;

use duetime::{CronSchedule, DstPolicy, Duration, Fold, Gap, Schedule, Timestamp};

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn cron(expr: &str, tz: &str) -> Schedule {
    Schedule::cron(expr, Some(tz)).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn ms(v: i64) -> Timestamp {
    Timestamp::from_millis(v)
}

// ------------------------------------------------------------------------------- every

#[test]
fn every_is_a_fixed_grid_from_the_epoch_plus_offset() {
    let s = Schedule::every(Duration::from_hours(1), Duration::from_mins(15)).unwrap();
    assert_eq!(s.next_after(ms(0)), Some(ms(15 * 60_000)));
    assert_eq!(s.next_after(ms(15 * 60_000 - 1)), Some(ms(15 * 60_000)));
    assert_eq!(s.next_after(ms(15 * 60_000)), Some(ms(75 * 60_000)));
    // Before the epoch the grid continues backwards.
    assert_eq!(s.next_after(ms(-1)), Some(ms(15 * 60_000)));
    assert_eq!(s.next_after(ms(-45 * 60_000 - 1)), Some(ms(-45 * 60_000)));
    assert_eq!(s.next_after(ms(-45 * 60_000)), Some(ms(15 * 60_000)));
    // An offset longer than the period is the same grid.
    let long = Schedule::every(Duration::from_hours(1), Duration::from_mins(135)).unwrap();
    for t in [-7_200_001, -1, 0, 1, 900_000, 1_741_503_600_123] {
        assert_eq!(long.next_after(ms(t)), s.next_after(ms(t)), "at {t}");
    }
    assert_eq!(s.count_in(ms(0), ms(3_600_000 * 24)), 24);
    assert_eq!(s.count_in(ms(-3_600_000 * 24), ms(0)), 24);
    assert_eq!(s.count_in(ms(0), ms(0)), 0);
    assert_eq!(s.count_in(ms(10), ms(5)), 0);
    assert_eq!(s.to_string(), "every 1h + 15m");
    assert_eq!(
        Schedule::every(Duration::from_secs(30), Duration::ZERO)
            .unwrap()
            .to_string(),
        "every 30s"
    );
}

#[test]
fn every_never_panics_at_the_ends_of_time() {
    let periods = [
        Duration::from_millis(1),
        Duration::from_millis(7),
        Duration::from_hours(1),
        Duration::from_days(365_000),
        Duration::from_millis(i64::MAX as u64),
        Duration::from_millis(i64::MAX as u64 + 1),
        Duration::MAX,
    ];
    let offsets = [Duration::ZERO, Duration::from_millis(3), Duration::MAX];
    let instants = [
        Timestamp::MIN,
        ms(i64::MIN + 1),
        ms(-1),
        Timestamp::EPOCH,
        ms(i64::MAX - 1),
        Timestamp::MAX,
    ];
    for p in periods {
        for o in offsets {
            let s = Schedule::every(p, o).unwrap();
            for &t in &instants {
                if let Some(n) = s.next_after(t) {
                    assert!(n > t, "every {p} + {o} after {t}: {n}");
                    // The grid point before `n` is at or before `t`.
                    assert_eq!(s.count_in(t, n), 1, "every {p} + {o} in ({t}, {n}]");
                }
                for &u in &instants {
                    let _ = s.count_in(t, u);
                }
            }
            assert_eq!(s.next_after(Timestamp::MAX), None);
        }
    }
    let every_ms = Schedule::every(Duration::from_millis(1), Duration::ZERO).unwrap();
    assert_eq!(every_ms.next_after(Timestamp::MIN), Some(ms(i64::MIN + 1)));
    assert_eq!(every_ms.next_after(ms(i64::MAX - 1)), Some(Timestamp::MAX));
    assert_eq!(every_ms.count_in(Timestamp::MIN, Timestamp::MAX), u64::MAX);
    let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
    assert_eq!(
        hourly.count_in(Timestamp::MIN, Timestamp::MAX),
        // Grid points in (MIN, MAX]: from -2562047788 h to 2562047788 h.
        2 * (i64::MAX / 3_600_000) as u64 + 1
    );
    assert!(Schedule::every(Duration::ZERO, Duration::from_secs(5)).is_err());
}

#[test]
fn every_iterates_in_order_and_agrees_with_count_in() {
    let s = Schedule::every(Duration::from_millis(250), Duration::from_millis(100)).unwrap();
    let from = ms(-1_000);
    let got: Vec<i64> = s.iter_after(from).take(9).map(|t| t.as_millis()).collect();
    assert_eq!(got, [-900, -650, -400, -150, 100, 350, 600, 850, 1_100]);
    assert_eq!(s.count_in(from, ms(1_100)), 9);
    // The iterator ends where the range of instants does.
    let tail: Vec<Timestamp> = s.iter_after(ms(i64::MAX - 600)).collect();
    assert!(tail.len() <= 3 && tail.windows(2).all(|w| w[0] < w[1]));
}

// ---------------------------------------------------------------------------------- at

#[test]
fn at_is_one_due_time() {
    let t = ts("2025-03-09T07:00:00Z");
    let s = Schedule::at(t);
    assert_eq!(s.next_after(ms(t.as_millis() - 1)), Some(t));
    assert_eq!(s.next_after(t), None);
    assert_eq!(s.next_after(Timestamp::MIN), Some(t));
    assert_eq!(s.next_after(Timestamp::MAX), None);
    assert_eq!(s.iter_after(Timestamp::MIN).collect::<Vec<_>>(), vec![t]);
    assert_eq!(s.count_in(Timestamp::MIN, Timestamp::MAX), 1);
    assert_eq!(s.count_in(t, Timestamp::MAX), 0);
    assert_eq!(s.count_in(Timestamp::MIN, t), 1);
    assert_eq!(s.to_string(), "at 2025-03-09T07:00:00Z");
    let edge = Schedule::at(Timestamp::MAX);
    assert_eq!(edge.next_after(ms(i64::MAX - 1)), Some(Timestamp::MAX));
    assert_eq!(
        Schedule::at(Timestamp::MIN).next_after(Timestamp::MIN),
        None
    );
}

// -------------------------------------------------------------------------------- cron

#[test]
fn cron_at_the_ends_of_time() {
    for zone in [
        "UTC",
        "America/New_York",
        "Pacific/Kiritimati",
        "Pacific/Apia",
    ] {
        for expr in ["0 0 1 1 *", "* * * * * *", "30 2 * * *", "0 12 * * 1"] {
            let s = cron(expr, zone);
            assert_eq!(s.next_after(Timestamp::MAX), None, "{expr} in {zone}");
            let first = s.next_after(Timestamp::MIN).unwrap();
            // The first due time is in local year 1.
            let tz: chrono_tz::Tz = zone.parse().unwrap();
            let local = first.to_chrono().unwrap().with_timezone(&tz);
            use chrono::Datelike;
            assert_eq!(local.year(), 1, "{expr} in {zone}: {first}");
            // Counted from the start of time too, even where local year 1 began before
            // UTC's (Apia's local mean time was 12:33 ahead of UTC).
            assert_eq!(s.count_in(Timestamp::MIN, first), 1, "{expr} in {zone}");
            assert!(s.count_in(Timestamp::MIN, Timestamp::MAX) > 0);
            assert_eq!(s.count_in(Timestamp::MAX, Timestamp::MIN), 0);
        }
    }
    let new_year = cron("0 0 1 1 *", "UTC");
    assert_eq!(
        new_year.next_after(Timestamp::MIN),
        Some(ts("0001-01-01T00:00:00Z"))
    );
    // Years 1 through 9999, one each.
    assert_eq!(new_year.count_in(Timestamp::MIN, Timestamp::MAX), 9999);
    // New York's local mean time before 1883 was UTC-4:56:02.
    assert_eq!(
        cron("0 0 1 1 *", "America/New_York").next_after(Timestamp::MIN),
        Some(ts("0001-01-01T04:56:02Z"))
    );
    // Every second of years 1-9999.
    let every_second = cron("* * * * * *", "UTC");
    assert_eq!(
        every_second.count_in(Timestamp::MIN, Timestamp::MAX),
        253_402_300_800u64 + 62_135_596_800
    );
    // The last due time of all, then nothing.
    let last = cron("59 59 23 31 12 *", "UTC");
    let end = ts("9999-12-31T23:59:59Z");
    assert_eq!(last.next_after(ms(end.as_millis() - 1)), Some(end));
    assert_eq!(last.next_after(end), None);
    assert_eq!(last.iter_after(ts("9999-01-01T00:00:00Z")).count(), 1);
}

#[test]
fn expressions_that_can_never_match_return_none_fast() {
    let started = Instant::now();
    for expr in [
        "0 0 30 2 *",
        "0 0 31 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 30,31 feb *",
        "0 0 0 30 2 *",
    ] {
        for zone in ["UTC", "America/New_York"] {
            let s = cron(expr, zone);
            assert_eq!(s.next_after(Timestamp::MIN), None, "{expr}");
            assert_eq!(s.next_after(ts("2025-01-01T00:00:00Z")), None, "{expr}");
            assert_eq!(s.count_in(Timestamp::MIN, Timestamp::MAX), 0, "{expr}");
            assert_eq!(s.iter_after(Timestamp::MIN).next(), None);
        }
    }
    // Debug build, generous: the search gives up without walking the calendar.
    assert!(
        started.elapsed().as_millis() < 500,
        "{:?}",
        started.elapsed()
    );
    // With day-of-week restricted too, cron's OR rule makes Feb 30 mean "Mondays in Feb".
    let or_rule = cron("0 0 30 2 mon", "UTC");
    assert_eq!(
        or_rule.next_after(ts("2025-01-01T00:00:00Z")),
        Some(ts("2025-02-03T00:00:00Z"))
    );
}

#[test]
fn rare_days_are_found_across_years() {
    let cases = [
        ("0 0 29 2 *", "2025-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
        ("0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"),
        (
            "15 10 L * *",
            "2025-02-01T00:00:00Z",
            "2025-02-28T10:15:00Z",
        ),
        (
            "15 10 L * *",
            "2024-02-01T00:00:00Z",
            "2024-02-29T10:15:00Z",
        ),
        ("0 0 * * 5L", "2025-05-01T00:00:00Z", "2025-05-30T00:00:00Z"),
        (
            "0 0 * * 1#1",
            "2025-09-02T00:00:00Z",
            "2025-10-06T00:00:00Z",
        ),
        ("0 0 * * 7", "2025-01-01T00:00:00Z", "2025-01-05T00:00:00Z"),
        // Friday the 13th or any Friday? Both restricted: either.
        ("0 0 13 * 5", "2025-06-01T00:00:00Z", "2025-06-06T00:00:00Z"),
        // `*/2` begins with `*`: both must match (odd days that are Fridays).
        (
            "0 0 */2 * 5",
            "2025-06-01T00:00:00Z",
            "2025-06-13T00:00:00Z",
        ),
        // A fifth Friday in February: leap years whose Feb 1 is a Friday.
        (
            "0 0 ? 2 5#5",
            "2025-01-01T00:00:00Z",
            "2036-02-29T00:00:00Z",
        ),
        ("@yearly", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
    ];
    for (expr, after, want) in cases {
        assert_eq!(
            cron(expr, "UTC").next_after(ts(after)),
            Some(ts(want)),
            "{expr} after {after}"
        );
    }
}

#[test]
fn count_in_ten_years_of_seconds_is_arithmetic() {
    let s = cron("* * * * * *", "America/New_York");
    let (a, b) = (ts("2020-01-01T00:00:00Z"), ts("2030-01-01T00:00:00Z"));
    let started = Instant::now();
    let n = s.count_in(a, b);
    let took = started.elapsed();
    // Real elapsed seconds: every second is due once (folds run twice, gaps not at all).
    assert_eq!(n, ((b.as_millis() - a.as_millis()) / 1000) as u64);
    assert!(took.as_millis() < 50, "{took:?} in a debug build");
    // Fixed-time in New York over ten years: 3653 days, one run each (a gap's run moves,
    // a fold's second pass is dropped).
    let daily = cron("30 1 * * *", "America/New_York");
    assert_eq!(
        daily.count_in(ts("2020-01-01T12:00:00Z"), ts("2030-01-01T12:00:00Z")),
        3653
    );
    let daily_both = match daily {
        Schedule::Cron(c) => Schedule::Cron(c.with_dst(Some(DstPolicy {
            gap: Gap::Skip,
            fold: Fold::Both,
        }))),
        _ => unreachable!(),
    };
    // Both passes of 01:30 on each of the ten fall-back days.
    assert_eq!(
        daily_both.count_in(ts("2020-01-01T12:00:00Z"), ts("2030-01-01T12:00:00Z")),
        3663
    );
}

#[test]
fn weekday_schedules_count_exactly_from_the_days_around_the_unix_epoch() {
    // 1970-01-01 was a Thursday. Weekdays are counted a whole week at a time plus the days
    // left over, from day numbers (days since the epoch) that are -1, 0 and 1 here.
    let weekdays = cron("0 9 * * 1-5", "UTC");
    // Four whole weeks from Thursday 1 January: 20 weekday mornings.
    assert_eq!(
        weekdays.count_in(ts("1970-01-01T00:00:00Z"), ts("1970-01-29T00:00:00Z")),
        20
    );
    // Wednesday 31 December 1969, then January 1970's 22 weekdays.
    assert_eq!(
        weekdays.count_in(ts("1969-12-31T00:00:00Z"), ts("1970-02-01T00:00:00Z")),
        23
    );
    // Tuesday 30 December 1969 too.
    assert_eq!(
        weekdays.count_in(ts("1969-12-30T00:00:00Z"), ts("1970-02-01T00:00:00Z")),
        24
    );
    // And from every day of those weeks, as many as walking the due times finds.
    let until = ts("1970-03-01T00:00:00Z");
    for day in -10..10 {
        let after = ms(day * 86_400_000);
        let walked = weekdays
            .iter_after(after)
            .take_while(|&t| t <= until)
            .count() as u64;
        assert_eq!(weekdays.count_in(after, until), walked, "from {after}");
    }
}

#[test]
fn sub_second_instants() {
    let s = cron("* * * * * *", "UTC");
    assert_eq!(s.next_after(ms(1_500)), Some(ms(2_000)));
    assert_eq!(s.next_after(ms(-1)), Some(ms(0)));
    assert_eq!(s.next_after(ms(-1_001)), Some(ms(-1_000)));
    assert_eq!(s.count_in(ms(-1), ms(999)), 1);
    assert_eq!(s.count_in(ms(0), ms(999)), 0);
}

/// Cron yields due times in local years 1 to 9999 only: year 10000 would be a leap year,
/// but no search finds its 29 February.
#[test]
fn no_due_time_after_year_9999() {
    let leap_day = cron("0 0 29 2 *", "UTC");
    assert_eq!(
        leap_day.next_after(ts("9996-03-01T00:00:00Z")),
        None,
        "9996 had the last 29 February before year 10000"
    );
    assert_eq!(
        leap_day.next_after(ts("9995-03-01T00:00:00Z")),
        Some(ts("9996-02-29T00:00:00Z"))
    );
    assert_eq!(
        leap_day.count_in(ts("9996-03-01T00:00:00Z"), Timestamp::MAX),
        0
    );
}

/// A text that is not an instant or a duration is refused saying what was given and what
/// is accepted, as the host prints it to the person who typed it.
#[test]
fn a_bad_instant_or_duration_is_told_with_what_is_accepted() {
    let instant = "2025-13-01T00:00:00Z"
        .parse::<Timestamp>()
        .expect_err("no month 13");
    assert_eq!(
        instant.to_string(),
        "`2025-13-01T00:00:00Z` is not an RFC 3339 instant such as `2025-03-09T07:00:00Z`"
    );
    let duration = "ten minutes"
        .parse::<duetime::Duration>()
        .expect_err("not a duration");
    assert_eq!(
        duration.to_string(),
        "`ten minutes` is not a duration such as `30s`, `10m`, `1h30m`, `2d` or `250ms`"
    );
}

// -------------------------------------------------------------------- regressions

/// Found in review: a search starting exactly at the first instant after a spring-forward gap
/// (`t` one second, or a few milliseconds, before it) missed the gap's own due time, because
/// the walk began in the segment after the seam it must check.
#[test]
fn a_search_starting_right_before_a_gap_end_sees_the_gap() {
    let s = cron("30 2 * * *", "America/New_York");
    let gap_end = ts("2025-03-09T07:00:00Z");
    for before in [
        "2025-03-09T06:59:58Z",
        "2025-03-09T06:59:59Z",
        "2025-03-09T06:59:59.999Z",
    ] {
        assert_eq!(s.next_after(ts(before)), Some(gap_end), "after {before}");
        assert_eq!(s.count_in(ts(before), gap_end), 1, "from {before}");
    }
    assert_eq!(s.next_after(gap_end), Some(ts("2025-03-10T06:30:00Z")));
    assert_eq!(s.count_in(gap_end, ts("2025-03-10T06:30:00Z")), 1);
}

/// Found in review: `jul` (July) was refused as a misplaced `L`.
#[test]
fn july_is_a_month_not_a_misplaced_l() {
    let s = cron("0 0 1 jul *", "UTC");
    assert_eq!(
        s.next_after(ts("2025-01-01T00:00:00Z")),
        Some(ts("2025-07-01T00:00:00Z"))
    );
    assert_eq!(
        Schedule::cron("0 0 1 jun-JUL *", None).unwrap(),
        Schedule::cron("0 0 1 6-7 *", None).unwrap()
    );
    assert!(Schedule::cron("0 0 1 L *", None).is_err());
}

/// Found in review: a first word of 8+ bytes with a multi-byte character at byte 8
/// (`cron_tzé`) panicked in the `CRON_TZ=` check.
#[test]
fn a_multibyte_first_word_is_refused_not_a_panic() {
    assert!(Schedule::cron("cron_tzé 0 0 * * *", None).is_err());
    assert!(Schedule::cron("abcdefgé", None).is_err());
    assert!(Schedule::cron("CRON_TZ=Europe/Zürich 0 0 * * *", None).is_err());
}

/// Found in review: equality ignored cronie's fixed-time flag, so `0-59 0-23 * * *` (fixed-time:
/// a repeated hour runs once) compared equal to `* * * * *` (elapsed time: it runs twice),
/// although their due times differ on a fall-back day.
#[test]
fn schedules_with_different_dst_defaults_are_not_equal() {
    let fixed = cron("0-59 0-23 * * *", "America/New_York");
    let elapsed = cron("* * * * *", "America/New_York");
    // Fall back: local 01:00-01:59 happens twice; fixed-time runs only its first pass.
    let (a, b) = (ts("2025-11-02T04:00:00Z"), ts("2025-11-02T08:00:00Z"));
    assert_eq!(elapsed.count_in(a, b), 240);
    assert_eq!(fixed.count_in(a, b), 180);
    let fixed_daily = cron("30 2 * * *", "America/New_York");
    let elapsed_daily = cron("30 2 * * *", "America/New_York");
    assert_eq!(fixed_daily, elapsed_daily);
    assert_ne!(fixed, elapsed);
    // Spelling alone does not matter.
    assert_eq!(cron("@daily", "UTC"), cron("0 0 * * *", "UTC"));
    assert_eq!(cron("0 0 * * 7", "UTC"), cron("0 0 * * sun", "UTC"));
}

// --------------------------------------------------------------------- representation

#[test]
fn schedules_serialize_and_print() {
    let c = CronSchedule::parse("CRON_TZ=Europe/London 0 9 * * MON-fri", None)
        .unwrap()
        .with_dst(Some(DstPolicy {
            gap: Gap::Skip,
            fold: Fold::Last,
        }));
    assert_eq!(c.to_string(), "CRON_TZ=Europe/London 0 9 * * mon-fri");
    assert_eq!(
        format!("{c:?}"),
        "Cron(CRON_TZ=Europe/London 0 9 * * mon-fri, gap: skip, fold: last)"
    );
    for s in [
        Schedule::Cron(c),
        Schedule::cron("@hourly", None).unwrap(),
        Schedule::every(Duration::from_mins(5), Duration::from_secs(30)).unwrap(),
        Schedule::at(ts("2025-03-09T07:00:00.250Z")),
    ] {
        let json = serde_json::to_string(&s).unwrap();
        let back: Schedule = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s, "{json}");
    }
    assert_eq!(
        serde_json::to_string(&Schedule::cron("0 9 * * *", Some("Europe/London")).unwrap())
            .unwrap(),
        r#"{"kind":"cron","expr":"0 9 * * *","tz":"Europe/London"}"#
    );
    // A stored expression that no longer parses is a load error, not a panic.
    let bad = r#"{"kind":"cron","expr":"0 9 * * 8","tz":"UTC"}"#;
    assert!(serde_json::from_str::<Schedule>(bad).is_err());
}

/// The first `n` due times after `from`, as text.
fn firsts(s: &Schedule, from: &str, n: usize) -> Vec<String> {
    s.iter_after(ts(from))
        .take(n)
        .map(|t| t.to_string())
        .collect()
}

#[test]
fn a_step_past_its_fields_end_matches_only_the_first_value_as_in_cronie() {
    // `*/30` in the hour field is hour 0 alone; `*/100` in day-of-month is day 1 alone.
    let s = cron("0 */30 * * *", "UTC");
    assert_eq!(
        firsts(&s, "2025-03-01T00:00:00Z", 2),
        ["2025-03-02T00:00:00Z", "2025-03-03T00:00:00Z"]
    );
    assert_eq!(
        s.next_after(ts("2025-03-01T00:00:00Z")),
        cron("0 0 * * *", "UTC").next_after(ts("2025-03-01T00:00:00Z"))
    );
    let s = cron("1 1 */100 * *", "UTC");
    assert_eq!(
        firsts(&s, "2025-03-01T00:00:00Z", 2),
        ["2025-03-01T01:01:00Z", "2025-04-01T01:01:00Z"]
    );
    let notes: Vec<String> = duetime::wide_steps("0 */30 * * *")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        notes,
        ["hour: `*/30` steps past the end of its range, so it matches only 0 (as in cronie)"]
    );
    // A step that fits its range is no note; nor is a step of a range that it fits.
    assert!(duetime::wide_steps("*/15 */12 * * *").is_empty());
    assert_eq!(duetime::wide_steps("0 9 1-5/10 * *").len(), 1);
}

/// The notes `wide_steps` gives for `expr`, as text.
fn wide_notes(expr: &str) -> Vec<String> {
    duetime::wide_steps(expr)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_step_that_lands_on_its_ranges_last_value_is_not_a_wide_step() {
    // `*/59` in minutes is 0 and 59, `1-13/12` in hours 1 and 13, `*/6` in day-of-week
    // Sunday and Saturday: each step reaches its range's last value, so none is noted.
    for expr in ["*/59 * * * *", "0 1-13/12 * * *", "0 9 * * */6"] {
        assert_eq!(wide_notes(expr), Vec::<String>::new(), "{expr}");
    }
    assert_eq!(
        firsts(&cron("*/59 * * * *", "UTC"), "2025-03-01T00:00:00Z", 3),
        [
            "2025-03-01T00:59:00Z",
            "2025-03-01T01:00:00Z",
            "2025-03-01T01:59:00Z"
        ]
    );
    assert_eq!(
        firsts(&cron("0 1-13/12 * * *", "UTC"), "2025-03-01T00:00:00Z", 3),
        [
            "2025-03-01T01:00:00Z",
            "2025-03-01T13:00:00Z",
            "2025-03-02T01:00:00Z"
        ]
    );
    // Saturday 1 March 2025, then Sunday.
    assert_eq!(
        firsts(&cron("0 9 * * */6", "UTC"), "2025-03-01T00:00:00Z", 3),
        [
            "2025-03-01T09:00:00Z",
            "2025-03-02T09:00:00Z",
            "2025-03-08T09:00:00Z"
        ]
    );
    // One more and the step passes the end.
    assert_eq!(
        wide_notes("0 1-13/13 * * *"),
        ["hour: `1-13/13` steps past the end of its range, so it matches only 1 (as in cronie)"]
    );
}

#[test]
fn a_day_of_week_steps_range_ends_at_sunday_as_7_only_when_written_0_or_sun() {
    // `mon-sun/4` runs 1-7, as the parser reads it: Monday and Friday, so no note.
    for expr in ["0 9 * * mon-sun/4", "0 9 * * 1-0/4"] {
        assert_eq!(wide_notes(expr), Vec::<String>::new(), "{expr}");
        assert_eq!(
            firsts(&cron(expr, "UTC"), "2025-03-01T00:00:00Z", 3),
            [
                "2025-03-03T09:00:00Z",
                "2025-03-07T09:00:00Z",
                "2025-03-10T09:00:00Z"
            ],
            "{expr}"
        );
    }
    // A range ending on another day keeps its end: `mon-wed/5` is Monday alone.
    assert_eq!(
        wide_notes("0 9 * * mon-wed/5"),
        [
            "day-of-week: `mon-wed/5` steps past the end of its range, so it matches only 1 \
             (as in cronie)"
        ]
    );
    assert_eq!(
        firsts(&cron("0 9 * * mon-wed/5", "UTC"), "2025-03-01T00:00:00Z", 2),
        ["2025-03-03T09:00:00Z", "2025-03-10T09:00:00Z"]
    );
}

#[test]
fn a_day_of_week_range_ending_at_sunday_written_0_or_sun_runs_through_sunday() {
    let from = "2025-03-01T00:00:00Z";
    let through = cron("0 9 * * 1-7", "UTC");
    for spelling in [
        "0 9 * * mon-sun",
        "0 9 * * mon-0",
        "0 9 * * 1-0",
        "0 9 * * MON-SUN",
    ] {
        assert_eq!(
            firsts(&cron(spelling, "UTC"), from, 14),
            firsts(&through, from, 14),
            "{spelling}"
        );
    }
    assert_eq!(
        firsts(&cron("0 9 * * fri-0", "UTC"), from, 6),
        firsts(&cron("0 9 * * fri,sat,sun", "UTC"), from, 6)
    );
    // Ranges that really run backwards stay refused.
    for backwards in ["0 9 * * thu-tue", "0 9 * * sat-fri"] {
        assert!(Schedule::cron(backwards, None).is_err(), "{backwards}");
    }
}

// ------------------------------------------------------------------------------ debug

/// A schedule's `Debug` is short and says what it is (traces and panics print it): the
/// grid's period and offset, the instant, the cron expression with its zone.
#[test]
fn a_schedule_debugs_as_what_it_is() {
    let every = Schedule::every(Duration::from_hours(1), Duration::from_mins(15)).unwrap();
    let at = Schedule::at(ts("2025-03-09T07:00:00Z"));
    let daily = cron("30 1 * * *", "Europe/Berlin");
    let shown = [every, at, daily].map(|s| format!("{s:?}"));
    assert_eq!(
        shown,
        [
            "Every(1h + 15m)",
            "At(2025-03-09T07:00:00Z)",
            "Cron(CRON_TZ=Europe/Berlin 30 1 * * *)"
        ]
    );
}

/// A zone is equal only to itself: a schedule moved to another zone is a changed schedule
/// (its due times move), however alike the two texts are.
#[test]
fn the_same_cron_text_in_another_zone_is_another_schedule() {
    let berlin = cron("30 1 * * *", "Europe/Berlin");
    assert_eq!(berlin, cron("30 1 * * *", "Europe/Berlin"));
    assert_ne!(berlin, cron("30 1 * * *", "America/New_York"));
    let zone = |s: &Schedule| match s {
        Schedule::Cron(c) => c.zone().clone(),
        _ => unreachable!("a cron schedule"),
    };
    assert_ne!(zone(&berlin), zone(&cron("30 1 * * *", "UTC")));
}
