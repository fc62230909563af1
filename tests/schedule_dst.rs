//! Daylight-saving scenarios, snapshotted for review: for a table of expressions in zones
//! with unusual changes (a 30-minute shift, changes at midnight, a whole day dropped), the
//! due times around each offset change of a year, one per line in local time with offset
//! and in UTC, with a note where the policy moved or dropped a time. Plus the worked example
//! for America/New_York 2025 that the README's section on daylight saving follows.
//!
//! Offset changes are found with chrono-tz alone; the notes are worked out by asking the
//! same schedule under other policies, so a reviewer sees what the policy changed.

use chrono::{Offset, TimeZone};
use chrono_tz::Tz;
use duetime::{CronSchedule, DstPolicy, Fold, Gap, Timestamp};

const EXPRS: [&str; 7] = [
    "30 2 * * *",
    "0,30 1-2 * * *",
    "*/15 * * * *",
    "30 * * * *",
    "@hourly",
    "0 0 * * *",
    "0 9 * * *",
];

fn offset(tz: Tz, utc: i64) -> i64 {
    let t = chrono::DateTime::from_timestamp(utc, 0).unwrap();
    i64::from(
        tz.offset_from_utc_datetime(&t.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

/// The instants (UTC seconds) in `year` where the zone's offset changes.
fn changes(tz: Tz, year: i32) -> Vec<i64> {
    let from = chrono::NaiveDate::from_ymd_opt(year, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp();
    let to = from + 366 * 86_400;
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        let next = t + 3600;
        let current = offset(tz, t);
        if offset(tz, next) != current {
            let (mut a, mut b) = (t, next);
            while b - a > 1 {
                let mid = a + (b - a) / 2;
                if offset(tz, mid) == current {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            out.push(b);
        }
        t = next;
    }
    out
}

fn local(tz: Tz, utc_ms: i64) -> chrono::DateTime<Tz> {
    tz.timestamp_millis_opt(utc_ms).unwrap()
}

fn line(tz: Tz, ms: i64) -> String {
    format!(
        "{}  = {}",
        local(tz, ms).format("%a %Y-%m-%d %H:%M:%S %:z %Z"),
        Timestamp::from_millis(ms)
    )
}

fn hms_offset(secs: i64) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let s = secs.abs();
    format!("{sign}{:02}:{:02}", s / 3600, s / 60 % 60)
}

/// "clocks go forward 02:00:00 -> 03:00:00 (-05:00 -> -04:00)".
fn describe_change(tz: Tz, change: i64) -> String {
    let (before, after) = (offset(tz, change - 1), offset(tz, change));
    let wall = |off: i64| {
        chrono::DateTime::from_timestamp(change + off, 0)
            .unwrap()
            .naive_utc()
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    };
    let dir = if after > before {
        "clocks go forward"
    } else {
        "clocks go back"
    };
    format!(
        "{} {dir}: local {} -> {} ({} -> {})",
        Timestamp::from_secs(change),
        wall(before),
        wall(after),
        hms_offset(before),
        hms_offset(after)
    )
}

fn with(c: &CronSchedule, gap: Gap, fold: Fold) -> CronSchedule {
    c.clone().with_dst(Some(DstPolicy { gap, fold }))
}

fn is_due(c: &CronSchedule, ms: i64) -> bool {
    c.next_after(Timestamp::from_millis(ms - 1)) == Some(Timestamp::from_millis(ms))
}

/// What the policy did at this due time, if anything.
fn note(c: &CronSchedule, tz: Tz, change: i64, ms: i64) -> String {
    let p = c.policy();
    let secs = ms / 1000;
    if secs == change && offset(tz, change) > offset(tz, change - 1) {
        // The first instant after a gap: due for its own local time, or for the gap's?
        if !is_due(&with(c, Gap::Skip, p.fold), ms) {
            return "  <- moved: matching local time(s) in the gap run at its end".into();
        }
    }
    let naive = local(tz, ms).naive_local();
    if let chrono::LocalResult::Ambiguous(first, last) = tz.from_local_datetime(&naive) {
        let (pass, other) = if first.timestamp_millis() == ms {
            ("first", last.timestamp_millis())
        } else {
            ("second", first.timestamp_millis())
        };
        let other_due = if is_due(c, other) {
            "also runs"
        } else {
            "does not run"
        };
        let other_pass = if pass == "first" { "second" } else { "first" };
        return format!(
            "  <- {pass} pass of a repeated local time; the {other_pass} pass ({}) {other_due}",
            Timestamp::from_millis(other)
        );
    }
    String::new()
}

/// Where the gap policy made a difference at a change, said on the change's own line.
fn gap_note(c: &CronSchedule, tz: Tz, change: i64) -> String {
    if offset(tz, change) <= offset(tz, change - 1) {
        return String::new();
    }
    let p = c.policy();
    let ms = change * 1000;
    let gap_has_match =
        is_due(&with(c, Gap::RunAtGapEnd, p.fold), ms) && !is_due(&with(c, Gap::Skip, p.fold), ms);
    match (gap_has_match, p.gap) {
        (false, _) => String::new(),
        (true, Gap::RunAtGapEnd) => "; matching times in the gap run once at its end".into(),
        (true, Gap::Skip) => "; matching times in the gap are skipped".into(),
    }
}

fn scenario(zone: &str, year: i32) -> String {
    let tz: Tz = zone.parse().unwrap();
    let changes = changes(tz, year);
    let mut out = format!("{zone}, offset changes in {year}:\n");
    for &c in &changes {
        out.push_str(&format!("  {}\n", describe_change(tz, c)));
    }
    for &change in &changes {
        out.push_str(&format!("\n=== {} ===\n", describe_change(tz, change)));
        for expr in EXPRS {
            let c = CronSchedule::parse(expr, Some(zone)).unwrap();
            let kind = if c.is_fixed_time() {
                "fixed-time"
            } else {
                "not fixed-time"
            };
            out.push_str(&format!("\n`{expr}` ({kind}; {})\n", c.policy()));
            let schedule = duetime::Schedule::Cron(c.clone());
            // The 20 due times around the change: 8 before it, 12 from it on.
            let from = Timestamp::from_secs(change - 40 * 86_400);
            let mut all: Vec<i64> = Vec::new();
            for d in schedule.iter_after(from) {
                let ms = d.as_millis();
                all.push(ms);
                if ms >= change * 1000 && all.iter().filter(|&&x| x >= change * 1000).count() >= 12
                {
                    break;
                }
            }
            let at = all.iter().position(|&x| x >= change * 1000).unwrap();
            let shown = &all[at.saturating_sub(8)..];
            for (i, &ms) in shown.iter().enumerate() {
                if i == at.min(8) {
                    out.push_str(&format!(
                        "    -------- {}{} --------\n",
                        describe_change(tz, change),
                        gap_note(&c, tz, change)
                    ));
                }
                out.push_str(&format!(
                    "    {}{}\n",
                    line(tz, ms),
                    note(&c, tz, change, ms)
                ));
            }
        }
    }
    out
}

#[test]
fn new_york_2025() {
    insta::assert_snapshot!(scenario("America/New_York", 2025));
}

#[test]
fn london_2025() {
    insta::assert_snapshot!(scenario("Europe/London", 2025));
}

/// A 30-minute shift: 02:00 -> 01:30 in April, 02:00 -> 02:30 in October.
#[test]
fn lord_howe_2025() {
    insta::assert_snapshot!(scenario("Australia/Lord_Howe", 2025));
}

/// Changes at midnight: 00:00 does not exist on the spring day, 23:00 repeats in autumn.
#[test]
fn santiago_2025() {
    insta::assert_snapshot!(scenario("America/Santiago", 2025));
}

#[test]
fn havana_2025() {
    insta::assert_snapshot!(scenario("America/Havana", 2025));
}

/// Samoa moved across the date line: Friday 2011-12-30 does not exist in Apia.
#[test]
fn apia_2011() {
    insta::assert_snapshot!(scenario("Pacific/Apia", 2011));
}

/// The worked example: New York's 2025 spring-forward and fall-back days, three expressions,
/// cron's default policy and each explicit one; the due times from 00:00 to 05:00 local.
#[test]
fn new_york_2025_worked_example() {
    let zone = "America/New_York";
    let tz: Tz = zone.parse().unwrap();
    let policies = [
        (Gap::RunAtGapEnd, Fold::First),
        (Gap::RunAtGapEnd, Fold::Last),
        (Gap::RunAtGapEnd, Fold::Both),
        (Gap::Skip, Fold::First),
        (Gap::Skip, Fold::Last),
        (Gap::Skip, Fold::Both),
    ];
    let mut out = String::new();
    for (day, what) in [
        (
            (2025, 3, 9),
            "spring forward: at 02:00 EST (-05:00) clocks jump to 03:00 EDT (-04:00); \
             local 02:00-02:59 does not exist",
        ),
        (
            (2025, 11, 2),
            "fall back: at 02:00 EDT (-04:00) clocks go back to 01:00 EST (-05:00); \
             local 01:00-01:59 happens twice",
        ),
    ] {
        let date = chrono::NaiveDate::from_ymd_opt(day.0, day.1, day.2).unwrap();
        let start = tz
            .from_local_datetime(&date.and_hms_opt(0, 0, 0).unwrap())
            .earliest()
            .unwrap();
        let end = tz
            .from_local_datetime(&date.and_hms_opt(5, 0, 0).unwrap())
            .earliest()
            .unwrap();
        out.push_str(&format!(
            "## {date}, {what}\n   due times from 00:00 to 05:00 local\n"
        ));
        for expr in ["30 2 * * *", "30 1 * * *", "30 * * * *"] {
            let c = CronSchedule::parse(expr, Some(zone)).unwrap();
            let kind = if c.is_fixed_time() {
                "fixed-time"
            } else {
                "not fixed-time"
            };
            out.push_str(&format!("\n`{expr}` ({kind})\n"));
            let rows = std::iter::once((format!("default ({})", c.policy()), c.clone())).chain(
                policies.iter().map(|&(gap, fold)| {
                    (format!("{}", DstPolicy { gap, fold }), with(&c, gap, fold))
                }),
            );
            for (label, s) in rows {
                let s = duetime::Schedule::Cron(s);
                let times: Vec<String> = s
                    .iter_after(
                        Timestamp::from_chrono(&start)
                            .saturating_sub(duetime::Duration::from_millis(1)),
                    )
                    .take_while(|d| *d < Timestamp::from_chrono(&end))
                    .map(|d| {
                        let l = local(tz, d.as_millis());
                        format!(
                            "{} ({})",
                            l.format("%H:%M %Z"),
                            d.to_chrono().unwrap().format("%H:%MZ")
                        )
                    })
                    .collect();
                let times = if times.is_empty() {
                    "(none)".to_string()
                } else {
                    times.join(", ")
                };
                out.push_str(&format!("  {label:<44} {times}\n"));
            }
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

/// A schedule's text names a policy chosen explicitly, so a journal line about a job whose
/// schedule changed only its policy shows what changed; cron's default is not spelt out,
/// and the cron part alone still reads back as the same expression.
#[test]
fn a_chosen_policy_is_named_in_the_schedules_text() {
    let cron = CronSchedule::parse("30 1 * * *", Some("America/New_York")).unwrap();
    let default = duetime::Schedule::Cron(cron.clone());
    assert_eq!(
        default.to_string(),
        "cron CRON_TZ=America/New_York 30 1 * * *"
    );
    let chosen = duetime::Schedule::Cron(with(&cron, Gap::Skip, Fold::Last));
    assert_eq!(
        chosen.to_string(),
        "cron CRON_TZ=America/New_York 30 1 * * * (dst gap: skip, fold: last)"
    );
    assert_ne!(chosen, default);
    let same_as_default = duetime::Schedule::Cron(cron.with_dst(Some(DstPolicy::FIXED_TIME)));
    assert_eq!(
        same_as_default.to_string(),
        "cron CRON_TZ=America/New_York 30 1 * * * (dst gap: run_at_gap_end, fold: first)"
    );
}

/// docs/schedules.md's seconds at a gap: the matching seconds of the minutes New York's
/// spring change swallows fire once at the gap's end (03:00:00 EDT); a matching second
/// after it is a due time of its own; a seconds field does not make a schedule elapsed.
#[test]
fn seconds_at_a_gap_fire_once_at_its_end_and_then_on_their_own() {
    let due = |expr: &str| -> Vec<String> {
        let cron = CronSchedule::parse(expr, Some("America/New_York")).unwrap();
        let from: Timestamp = "2025-03-09T06:00:00Z".parse().unwrap();
        let until: Timestamp = "2025-03-09T08:00:00Z".parse().unwrap();
        let mut out = Vec::new();
        let mut t = from;
        while let Some(n) = cron.next_after(t).filter(|n| *n <= until) {
            out.push(n.to_string());
            t = n;
        }
        out
    };
    assert_eq!(
        due("15 0,30 2-3 * * *"),
        [
            "2025-03-09T07:00:00Z",
            "2025-03-09T07:00:15Z",
            "2025-03-09T07:30:15Z"
        ]
    );
    assert_eq!(due("15,45 30 2 * * *"), ["2025-03-09T07:00:00Z"]);
    assert_eq!(
        due("0,15 0 2-3 * * *"),
        ["2025-03-09T07:00:00Z", "2025-03-09T07:00:15Z"]
    );
    let fixed = CronSchedule::parse("15 30 2 * * *", Some("America/New_York")).unwrap();
    assert!(fixed.is_fixed_time());
}
