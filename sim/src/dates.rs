//! Dates a one-day world never reaches. A world runs about a day, so its cron jobs show
//! the matcher one or two dates; the rules that matter over months and years (`L`, `wL`,
//! `w#n`, Feb 29, the last days of months, stepped day and month ranges, both day fields
//! restricted under cron's OR rule) and zones with unusual transitions would go unchecked.
//!
//! - `draw_exotic` gives some cron jobs of a world such a day rule (and sometimes such a
//!   zone), from a stream of its own, so the rest of the world is drawn as before.
//! - `check_dates` is **Z1**: over years from a random instant, the local dates on which
//!   the core's schedule has due times are exactly the dates the oracle's day rule allows
//!   (each date the core yields matches; no date between two it yields does).

use crate::check::Invariant;
use chrono::Timelike;
use duetime::{Schedule, Timestamp};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::check::Violation;
use crate::oracle::{CronSpec, Spec};

/// Zones whose transitions are unusual: at midnight (Havana, Santiago), by 30 minutes
/// (Lord Howe), at a quarter hour offset (Chatham, Kathmandu), suspended for Ramadan
/// (Casablanca), a negative summer time (Dublin), and a whole day skipped in 2011 (Apia).
const ODD_ZONES: [&str; 8] = [
    "America/Havana",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kathmandu",
    "Africa/Casablanca",
    "Europe/Dublin",
    "Pacific/Apia",
];

/// One exotic date rule: the day-of-month, month and day-of-week texts and what they mean.
struct DateRule {
    dom: &'static str,
    month: &'static str,
    dow: &'static str,
    days: Vec<u32>,
    months: Vec<u32>,
    weekdays: Vec<u32>,
    last_day: bool,
    last_weekdays: Vec<u32>,
    nth_weekdays: Vec<(u32, u32)>,
}

fn rule(dom: &'static str, month: &'static str, dow: &'static str) -> DateRule {
    DateRule {
        dom,
        month,
        dow,
        days: Vec::new(),
        months: (1..=12).collect(),
        weekdays: Vec::new(),
        last_day: false,
        last_weekdays: Vec::new(),
        nth_weekdays: Vec::new(),
    }
}

/// The rules drawn, each with its meaning written out by hand (not parsed).
fn date_rule(k: u32) -> DateRule {
    let all_days: Vec<u32> = (1..=31).collect();
    let all_weekdays: Vec<u32> = (0..7).collect();
    match k {
        0 => DateRule {
            last_day: true,
            weekdays: all_weekdays,
            ..rule("L", "*", "*")
        },
        1 => DateRule {
            days: vec![29],
            months: vec![2],
            weekdays: all_weekdays,
            ..rule("29", "2", "*")
        },
        2 => DateRule {
            days: (28..=31).collect(),
            weekdays: all_weekdays,
            ..rule("28-31", "*", "*")
        },
        3 => DateRule {
            days: (1..=20).step_by(3).collect(),
            months: (1..=12).step_by(2).collect(),
            weekdays: all_weekdays,
            ..rule("1-20/3", "*/2", "*")
        },
        4 => DateRule {
            days: vec![13],
            weekdays: vec![5],
            ..rule("13", "*", "5")
        },
        5 => DateRule {
            days: all_days,
            last_weekdays: vec![5],
            ..rule("*", "*", "5L")
        },
        6 => DateRule {
            days: all_days,
            months: vec![1, 6, 12],
            nth_weekdays: vec![(1, 2)],
            ..rule("*", "1,6,12", "1#2")
        },
        7 => DateRule {
            last_day: true,
            nth_weekdays: vec![(1, 1), (3, 3)],
            ..rule("L", "*", "1#1,3#3")
        },
        8 => DateRule {
            days: vec![31],
            weekdays: all_weekdays,
            ..rule("31", "*", "*")
        },
        _ => DateRule {
            days: vec![1, 15],
            last_weekdays: vec![0],
            ..rule("1,15", "*", "0L")
        },
    }
}

/// Gives about a quarter of the cron jobs an exotic date rule (keeping their minutes and
/// hours), half of those in an unusual zone. Drawn from `rng`, a stream apart from the
/// world's, so a world whose jobs draw none is the world it was.
pub fn draw_exotic(rng: &mut ChaCha8Rng, schedule: &mut Schedule, spec: &mut Spec) {
    let Spec::Cron(c) = spec else { return };
    if !rng.gen_bool(0.25) {
        return;
    }
    let r = date_rule(rng.gen_range(0..10));
    if rng.gen_bool(0.5) {
        c.tz = ODD_ZONES[rng.gen_range(0..ODD_ZONES.len())]
            .parse()
            .expect("a known zone");
    }
    apply(c, r);
    *schedule =
        Schedule::cron(&c.core_text(), Some(c.tz.name())).expect("the exotic rules are valid cron");
}

/// `c` with rule `r`'s date fields, its minutes and hours kept.
fn apply(c: &mut CronSpec, r: DateRule) {
    let mut fields = c.text.split_whitespace();
    let (minute, hour) = (fields.next().unwrap_or("0"), fields.next().unwrap_or("0"));
    c.text = format!("{minute} {hour} {} {} {}", r.dom, r.month, r.dow);
    c.days = r.days;
    c.months = r.months;
    c.weekdays = r.weekdays;
    c.dom_star = r.dom.starts_with('*');
    c.dow_star = r.dow.starts_with('*');
    c.last_day = r.last_day;
    c.last_weekdays = r.last_weekdays;
    c.nth_weekdays = r.nth_weekdays;
}

/// Z1 over a world's cron jobs (their first schedules), each from an instant drawn in
/// 2024-2032 by a stream of the seed's own.
pub struct DateReport {
    pub checked: u64,
    pub violations: Vec<Violation>,
}

/// The core's first `most` due times after `from_ms`, none past `end_ms`, and the end of
/// the range they cover (the last of them when there are `most`, else `end_ms`): what Z2
/// and Z3 ask the oracle for over that same range.
pub(crate) fn core_due_times(
    schedule: &Schedule,
    from_ms: i64,
    end_ms: i64,
    most: usize,
) -> (Vec<i64>, i64) {
    let core: Vec<i64> = schedule
        .iter_after(Timestamp::from_millis(from_ms))
        .map(|t| t.as_millis())
        .take_while(|&t| t <= end_ms)
        .take(most)
        .collect();
    let until = match core.len() == most {
        true => core[most - 1],
        false => end_ms,
    };
    (core, until)
}

/// Where two lists of due times first differ: the shorter's length when it is the other's
/// start.
pub(crate) fn first_difference(a: &[i64], b: &[i64]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

pub fn check_jobs(seed: u64, jobs: &[crate::gen::SimJob]) -> DateReport {
    let mut rng = crate::gen::stream_rng(seed, crate::gen::Stream::DateChecks);
    let mut report = DateReport {
        checked: 0,
        violations: Vec::new(),
    };
    for job in jobs {
        let Spec::Cron(spec) = &job.spec else {
            continue;
        };
        // One in eight far off: near and past 2100, where the core's zone tables end (a
        // schedule far ahead, a one-shot decades out) and it asks chrono-tz's rules
        // directly; or just before 2000-02-29, the leap day that ends a 400-year era of
        // the civil calendar's arithmetic (`civil_from_days`).
        let from = if rng.gen_ratio(1, 8) {
            if rng.gen_bool(0.5) {
                rng.gen_range(3_786_912_000_000i64..4_417_977_600_000) // 2090..2110
            } else {
                rng.gen_range(949_363_200_000i64..951_782_400_000) // 2000-02-01..2000-02-29
            }
        } else {
            rng.gen_range(1_704_067_200_000i64..1_956_528_000_000) // 2024..2032
        };
        report.checked += 1;
        let checked = check_dates(&job.def.schedule, spec, from)
            .and_then(|()| count_across_change(&job.def.schedule, spec, from));
        if let Err(detail) = checked {
            report.violations.push(Violation {
                invariant: Invariant::Z1,
                job: job.def.name.to_string(),
                detail,
                // Nothing to shrink: it does not depend on the world's events.
                liveness: true,
            });
        }
    }
    report
}

/// How far Z1 looks: this many dates the schedule yields, or this many years.
const Z1_DATES: usize = 24;
const Z1_YEARS: i64 = 9;

/// Z1 over the dates of `schedule` after `from_ms`: `Err` names the first date the core
/// yields that the oracle's day rule does not allow, or the first allowed date it passed.
pub fn check_dates(schedule: &Schedule, spec: &CronSpec, from_ms: i64) -> Result<(), String> {
    let allows = spec.date_rule();
    let local = |ms: i64| spec.local(ms.div_euclid(1000));
    let end = from_ms + Z1_YEARS * 366 * 86_400_000;
    let mut t = Timestamp::from_millis(from_ms);
    let mut after = local(from_ms).date();
    for _ in 0..Z1_DATES {
        let Some(next) = schedule.next_after(t).filter(|n| n.as_millis() <= end) else {
            // No due time within the span: no date in it may match either.
            return skipped(spec, &allows, after, local(end).date(), "the span's end");
        };
        let at = local(next.as_millis());
        zone_told(schedule, spec, next)?;
        let date = at.date();
        if !allows(date) {
            return Err(format!(
                "due at {next} ({date} in {}), a date `{}` does not allow",
                spec.tz, spec.text
            ));
        }
        skipped(spec, &allows, after, date, &next.to_string())?;
        // On to the next local date (a DST hour early at worst: the date is then seen
        // again; late at worst: the search starts within the next date, which is then
        // not judged).
        let ms_of_day =
            i64::from(at.num_seconds_from_midnight()) * 1000 + next.as_millis().rem_euclid(1000);
        t = Timestamp::from_millis(next.as_millis() + 86_400_000 - ms_of_day - 1);
        after = date.max(local(t.as_millis()).date());
    }
    Ok(())
}

/// The first date strictly between `after` and `until` the day rule allows, as an error.
fn skipped(
    spec: &CronSpec,
    allows: &impl Fn(chrono::NaiveDate) -> bool,
    after: chrono::NaiveDate,
    until: chrono::NaiveDate,
    next: &str,
) -> Result<(), String> {
    let mut d = after.succ_opt();
    while let Some(day) = d.filter(|d| *d < until) {
        if allows(day) && has_due_on(spec, day) {
            return Err(format!(
                "{day} is a date `{}` allows (in {}), but the schedule's next due time after \
                 {after} is {next}",
                spec.text, spec.tz
            ));
        }
        d = day.succ_opt();
    }
    Ok(())
}

/// `count_in` across the zone's first offset change within a year of `from_ms` (found
/// with chrono-tz alone, to the second), from the very second before it, and up to its
/// last millisecond: the core's counts of due times in `(change - 1 s, change + 2 h]` and
/// `(change - 2 h, change - 1 ms]` are the oracle's. A range whose first second is the
/// change is where a gap's due time at the change's instant is easy to lose, and one
/// ending just before it where that due time is easy to count too soon.
fn count_across_change(schedule: &Schedule, spec: &CronSpec, from_ms: i64) -> Result<(), String> {
    let offset = |utc: i64| spec.local(utc).and_utc().timestamp() - utc;
    let start = from_ms.div_euclid(1000);
    let Some(day) = (1..=366).find(|d| offset(start + d * 86_400) != offset(start)) else {
        return Ok(());
    };
    let (mut lo, mut hi) = (start + (day - 1) * 86_400, start + day * 86_400);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if offset(mid) == offset(lo) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Across the change, and up to its last millisecond before: a gap's due time at the
    // change's instant is past that range, however close.
    let ranges = [
        ((hi - 1) * 1000, (hi + 7_200) * 1000),
        ((hi - 7_200) * 1000, hi * 1000 - 1),
    ];
    for (after, until) in ranges {
        let oracle = Spec::Cron(Box::new(spec.clone()))
            .due_in(after, until)
            .len() as u64;
        let core = schedule.count_in(Timestamp::from_millis(after), Timestamp::from_millis(until));
        if core != oracle {
            return Err(format!(
                "count_in from {} to {} (the change at {}) is {core}; the oracle has {oracle}",
                Timestamp::from_millis(after),
                Timestamp::from_millis(until),
                Timestamp::from_millis(hi * 1000)
            ));
        }
    }
    Ok(())
}

/// What the schedule's zone tells a host that prints local times (`Zone::tz`,
/// `offset_at`, `segment_at`) at a due time, against chrono-tz asked directly.
fn zone_told(schedule: &Schedule, spec: &CronSpec, due: Timestamp) -> Result<(), String> {
    let Schedule::Cron(cron) = schedule else {
        return Ok(());
    };
    let zone = cron.zone();
    let utc = due.as_millis().div_euclid(1000);
    let offset = spec.local(utc).and_utc().timestamp() - utc;
    let told = (zone.tz(), zone.offset_at(utc), zone.segment_at(utc).offset);
    if told != (spec.tz, offset, offset) {
        return Err(format!(
            "at {due} the zone tells (zone, offset, segment's offset) {told:?}; chrono-tz says {} at offset {offset}",
            spec.tz
        ));
    }
    Ok(())
}

/// Whether the oracle has a due time on local date `day`: a date the day rule allows has
/// none when every matching local time on it falls in a spring-forward gap that the
/// schedule's policy skips (`15 2 * * *` in Lord Howe on the first Sunday of October).
/// Asked only of dates the core passed over, so the minute walk over three days is rare.
fn has_due_on(spec: &CronSpec, day: chrono::NaiveDate) -> bool {
    let noon_utc = day.and_hms_opt(12, 0, 0).expect("noon exists").and_utc();
    let around = noon_utc.timestamp_millis();
    Spec::Cron(Box::new(spec.clone()))
        .due_in(around - 2 * 86_400_000, around + 2 * 86_400_000)
        .iter()
        .any(|d| spec.local(d.at.div_euclid(1000)).date() == day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(k: u32, zone: &str) -> (Schedule, CronSpec) {
        let mut c = CronSpec {
            seconds: vec![0],
            minutes: vec![30],
            hours: vec![0],
            days: (1..=31).collect(),
            months: (1..=12).collect(),
            weekdays: (0..7).collect(),
            dom_star: true,
            dow_star: true,
            last_day: false,
            last_weekdays: Vec::new(),
            nth_weekdays: Vec::new(),
            dst: None,
            tz: zone.parse().unwrap(),
            text: "30 0 * * *".into(),
        };
        apply(&mut c, date_rule(k));
        (Schedule::cron(&c.text, Some(zone)).unwrap(), c)
    }

    #[test]
    fn every_exotic_rule_holds_z1_in_every_odd_zone() {
        let from = 1_735_689_600_000; // 2025-01-01
        for k in 0..10 {
            for zone in ODD_ZONES.iter().chain(&["UTC"]) {
                let (schedule, spec) = spec_of(k, zone);
                check_dates(&schedule, &spec, from)
                    .unwrap_or_else(|e| panic!("rule {k} in {zone}: {e}"));
            }
        }
    }

    #[test]
    fn z1_names_a_date_the_schedule_passes_over() {
        let from = 1_735_689_600_000; // 2025-01-01
        let (_, spec) = spec_of(1, "UTC"); // Feb 29
        let every_day = Schedule::cron("30 0 * * *", Some("UTC")).unwrap();
        let e = check_dates(&every_day, &spec, from).expect_err("daily is not Feb 29");
        assert!(e.contains("does not allow"), "{e}");
        let (_, last) = spec_of(0, "UTC"); // L
        let the_28th = Schedule::cron("30 0 28 * *", Some("UTC")).unwrap();
        let e = check_dates(&the_28th, &last, from).expect_err("the 28th is not L");
        assert!(e.contains("2025-01-28") || e.contains("2025-01-31"), "{e}");
    }

    #[test]
    fn the_feb_29_rule_reaches_the_next_leap_day() {
        let (schedule, spec) = spec_of(1, "UTC");
        let next = schedule
            .next_after(Timestamp::from_millis(1_735_689_600_000))
            .unwrap();
        assert_eq!(next.to_string(), "2028-02-29T00:30:00Z");
        assert!(spec.date_rule()(
            chrono::NaiveDate::from_ymd_opt(2028, 2, 29).unwrap()
        ));
    }
}
