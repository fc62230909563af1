//! Calendar schedules in the worlds (issue 45): some jobs' schedules get holidays, half
//! days and freezes around the world's own days (which start near a daylight-saving
//! change, so a holiday sits next to one and a half day's edge may fall in its gap or
//! fold), a business-day rule naming a day the world reaches, and a roll; and some get an
//! alternative with one calendar changed under the same name, so people switch a job to a
//! changed calendar while its due times are owed.
//!
//! The core's calendars are built from the same text the oracle reads with its own parser
//! (`oracle::parse_span`). Drawn from a stream of its own (`Stream::Calendars`), so the rest
//! of a world is drawn as before.
//!
//! **Z3** (`check_calendars`): over weeks around the world's days, the core's `next_after`
//! chain and `count_in` of each calendar schedule agree with the oracle's due times.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Weekday};
use chrono_tz::Tz;
use duetime::{
    BusinessDay, Calendar, CalendarName, CalendarSchedule, Roll, Schedule, Span, Timestamp,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::check::{Invariant, Violation};
use crate::dates::{core_due_times, first_difference, DateReport};
use crate::gen::{stream_rng, SimJob, Stream, WorldConfig, ZONES};
use crate::oracle::{CalendarSpec, DateSet, RollTo, Spec};

const DAY_MS: i64 = 86_400_000;

/// Wraps about a quarter of the cron and `every` schedules (each job's own and those people
/// may switch it to) in calendars drawn around the world's days.
pub(crate) fn draw_calendars(cfg: &WorldConfig, jobs: &mut [SimJob]) {
    let mut rng = stream_rng(cfg.seed, Stream::Calendars);
    for job in jobs {
        let mut changed = None;
        if let Some(drawn) = wrap(&mut rng, cfg, &job.def.schedule, &job.spec) {
            if rng.gen_bool(0.4) {
                changed = changed_calendar(&mut rng, cfg, &job.def.schedule, &drawn.1);
            }
            (job.def.schedule, job.spec) = drawn;
        }
        for (schedule, spec) in &mut job.alternatives {
            if let Some(drawn) = wrap(&mut rng, cfg, schedule, spec) {
                (*schedule, *spec) = drawn;
            }
        }
        job.alternatives.extend(changed);
    }
}

/// The local zone a schedule's calendars are read in, and the oracle's base.
fn zone_of(spec: &Spec) -> Option<Tz> {
    match spec {
        Spec::Cron(c) => Some(c.tz),
        Spec::Every { .. } => Some(Tz::UTC),
        _ => None,
    }
}

fn wrap(
    rng: &mut ChaCha8Rng,
    cfg: &WorldConfig,
    schedule: &Schedule,
    spec: &Spec,
) -> Option<(Schedule, Spec)> {
    let tz = zone_of(spec)?;
    if !rng.gen_bool(0.25) {
        return None;
    }
    let first = tz
        .timestamp_millis_opt(cfg.start_ms)
        .single()?
        .naive_local();
    let count = rng.gen_range(0..=2);
    let calendars: Vec<DateSet> = (0..count)
        .map(|i| draw_set(rng, first, format!("cal{i}")))
        .collect();
    let business_day =
        (calendars.is_empty() || rng.gen_bool(0.3)).then(|| business_day_near(rng, first.date()));
    let roll = match rng.gen_range(0..10) {
        0..=4 => RollTo::Stay,
        5..=7 => RollTo::Next,
        _ => RollTo::Previous,
    };
    let oracle = CalendarSpec::new(spec.clone(), tz, calendars, business_day, roll);
    let core = core_schedule(schedule, &oracle)?;
    Some((core, Spec::Calendar(Box::new(oracle))))
}

/// The same schedule with its first calendar changed under the same name (a day added to
/// it, or its last span dropped), as people edit a holiday list.
fn changed_calendar(
    rng: &mut ChaCha8Rng,
    cfg: &WorldConfig,
    base: &Schedule,
    spec: &Spec,
) -> Option<(Schedule, Spec)> {
    let Spec::Calendar(c) = spec else {
        return None;
    };
    let mut calendars = c.calendars.clone();
    let first = calendars.first_mut()?;
    if first.spans.len() > 1 && rng.gen_bool(0.5) {
        first.spans.pop();
    } else {
        let day = Tz::UTC
            .timestamp_millis_opt(cfg.start_ms + rng.gen_range(0..2) * DAY_MS)
            .single()?
            .date_naive();
        first.spans.push(day.format("%Y-%m-%d").to_string());
    }
    let oracle = CalendarSpec::new(c.base.clone(), c.tz, calendars, c.business_day, c.roll);
    Some((
        core_schedule(base, &oracle)?,
        Spec::Calendar(Box::new(oracle)),
    ))
}

/// One calendar: whole days among the world's first three local days, a half day inside
/// them (its edges sometimes at the daylight-saving change's local times), or a freeze of
/// several days the world starts in. Yearly about a third of the time, written in an
/// earlier year so the core shifts it.
fn draw_set(rng: &mut ChaCha8Rng, first: NaiveDateTime, name: String) -> DateSet {
    let day = |k: i64| first.date() + Duration::days(k);
    let (yearly, written) = Written::draw(rng);
    let spans = match rng.gen_range(0..4) {
        0 | 1 => {
            let mut days: Vec<i64> = (0..rng.gen_range(1..=2))
                .map(|_| rng.gen_range(-1..=2))
                .collect();
            days.sort_unstable();
            days.dedup();
            days.into_iter().map(|k| written.date(day(k))).collect()
        }
        2 => {
            let quarter = rng.gen_range(0..4 * 24 * 3);
            let from = first.date().and_hms_opt(0, 0, 0).expect("midnight")
                + Duration::minutes(15 * quarter);
            let until = from + Duration::minutes(15 * rng.gen_range(1..=40));
            vec![format!("{}..{}", written.time(from), written.time(until))]
        }
        _ => {
            let from = day(rng.gen_range(-4..=0));
            let until = day(rng.gen_range(0..=2));
            vec![format!("{}..{}", written.date(from), written.date(until))]
        }
    };
    DateSet {
        name,
        yearly,
        spans,
    }
}

/// How a drawn calendar writes its dates: as they are, or, for a yearly calendar, one to
/// four years earlier, so the core shifts it into the year asked about (a date that year
/// lacks, 29 February, is written as it is).
struct Written {
    back: i32,
}

impl Written {
    /// Whether the calendar is yearly (a third of them), and how its dates are written.
    fn draw(rng: &mut ChaCha8Rng) -> (bool, Written) {
        let yearly = rng.gen_bool(0.3);
        let back = if yearly { rng.gen_range(1..=4) } else { 0 };
        (yearly, Written { back })
    }

    /// `2025-03-09`, shifted.
    fn date(&self, d: NaiveDate) -> String {
        d.with_year(d.year() - self.back)
            .unwrap_or(d)
            .format("%Y-%m-%d")
            .to_string()
    }

    /// `2025-03-09T02:30`, shifted.
    fn time(&self, t: NaiveDateTime) -> String {
        format!("{}T{:02}:{:02}", self.date(t.date()), t.hour(), t.minute())
    }
}

/// A business-day number whose day is the first weekday on or after `date` (so the world
/// may reach it): counted from the month's start or, half the time, from its end, as if
/// no day were a holiday (a calendar may shift which day it names: the oracle knows).
fn business_day_near(rng: &mut ChaCha8Rng, date: NaiveDate) -> i32 {
    let mut d = date;
    while matches!(d.weekday(), Weekday::Sat | Weekday::Sun) {
        d = d.succ_opt().unwrap_or(d);
    }
    let weekday = |x: &NaiveDate| !matches!(x.weekday(), Weekday::Sat | Weekday::Sun);
    let month: Vec<NaiveDate> = NaiveDate::from_ymd_opt(d.year(), d.month(), 1)
        .expect("a month's first day")
        .iter_days()
        .take_while(|x| x.month() == d.month())
        .filter(weekday)
        .collect();
    let i = month.iter().position(|x| *x == d).unwrap_or(0) as i32;
    match rng.gen_bool(0.5) {
        true => i + 1,
        false => i - month.len() as i32,
    }
}

/// The core's calendar schedule over `base` for the oracle's `spec`, built from the same
/// span texts.
pub(crate) fn core_schedule(base: &Schedule, spec: &CalendarSpec) -> Option<Schedule> {
    let calendars: Option<Vec<Calendar>> = spec
        .calendars
        .iter()
        .map(|c| {
            let spans: Option<Vec<Span>> =
                c.spans.iter().map(|s| Span::parse(s, None).ok()).collect();
            Calendar::new(CalendarName::new(&c.name).ok()?, c.yearly, spans?).ok()
        })
        .collect();
    let business_day = match spec.business_day {
        Some(n) => Some(BusinessDay::new(i64::from(n)).ok()?),
        None => None,
    };
    let roll = match spec.roll {
        RollTo::Stay => Roll::Stay,
        RollTo::Next => Roll::Next,
        RollTo::Previous => Roll::Previous,
    };
    CalendarSchedule::new(base.clone(), calendars?, business_day, roll)
        .ok()
        .map(|c| Schedule::Calendar(Box::new(c)))
}

/// What the world's calendar jobs meet within its first two days, by the oracle: base due
/// times a calendar or a business-day rule leaves out, and due times a roll brings that
/// the base does not have (the probes that show calendar worlds reach what Z3 and the
/// checks are for).
pub fn reach(start_ms: i64, jobs: &[SimJob]) -> (u64, u64) {
    let (mut left_out, mut rolled) = (0, 0);
    let end = start_ms + 2 * DAY_MS;
    for job in jobs {
        let Spec::Calendar(spec) = &job.spec else {
            continue;
        };
        let base: std::collections::BTreeSet<i64> = spec
            .base
            .due_in(start_ms, end)
            .iter()
            .map(|d| d.at)
            .collect();
        let mut due = Vec::new();
        spec.due_in(start_ms, end, &mut due);
        let kept = due.iter().filter(|d| base.contains(&d.at)).count();
        left_out += (base.len() - kept) as u64;
        rolled += (due.len() - kept) as u64;
    }
    (left_out, rolled)
}

/// How far Z3 looks: this many due times, or this many days.
const Z3_DUES: usize = 120;
const Z3_DAYS: i64 = 45;

/// Z3 for each job's calendar schedule: from three weeks before the world's start, in a
/// year drawn from this one to three later (so yearly calendars shift).
pub fn check_calendars(seed: u64, start_ms: i64, jobs: &[SimJob]) -> DateReport {
    let mut rng = stream_rng(seed, Stream::CalendarChecks);
    let mut out = DateReport {
        checked: 0,
        violations: Vec::new(),
    };
    for job in jobs {
        let Spec::Calendar(spec) = &job.spec else {
            continue;
        };
        let years = rng.gen_range(0..=3);
        let from = start_ms - 21 * DAY_MS + years * 365 * DAY_MS + rng.gen_range(0..DAY_MS);
        out.checked += 1;
        if let Err(detail) = agree(&job.def.schedule, spec, from) {
            out.violations.push(Violation {
                invariant: Invariant::Z3,
                job: job.def.name.to_string(),
                detail,
                liveness: true,
            });
        }
    }
    out
}

/// The core's due times after `from` (a `next_after` chain) are the oracle's, and
/// `count_in` over the same range and its halves counts them.
pub fn agree(schedule: &Schedule, spec: &CalendarSpec, from: i64) -> Result<(), String> {
    let (core, until) = core_due_times(schedule, from, from + Z3_DAYS * DAY_MS, Z3_DUES);
    let mut due = Vec::new();
    spec.due_in(from, until, &mut due);
    let oracle: Vec<i64> = due.iter().map(|d| d.at).collect();
    if core != oracle {
        let at = first_difference(&core, &oracle);
        let show = |v: &[i64]| {
            v.iter()
                .skip(at)
                .take(3)
                .map(|&ms| Timestamp::from_millis(ms).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "`{schedule}` after {}: the core's due times from the {at}th are [{}], the \
             oracle's [{}] ({} and {} in all)",
            Timestamp::from_millis(from),
            show(&core),
            show(&oracle),
            core.len(),
            oracle.len()
        ));
    }
    let mid = from + (until - from) / 2;
    for (a, b) in [(from, until), (from, mid), (mid, until)] {
        let n = schedule.count_in(Timestamp::from_millis(a), Timestamp::from_millis(b));
        let want = oracle.iter().filter(|&&d| a < d && d <= b).count() as u64;
        if n != want {
            return Err(format!(
                "`{schedule}`: count_in from {} to {} is {n}; the oracle has {want}",
                Timestamp::from_millis(a),
                Timestamp::from_millis(b)
            ));
        }
    }
    Ok(())
}

/// How many of Z3's own calendar schedules each seed checks.
pub const Z3_DRAWN: usize = 2;

/// Zones for Z3's own schedules besides the worlds' (`gen::ZONES`): changes at midnight
/// and a day skipped.
const Z3_MORE_ZONES: [&str; 2] = ["America/Havana", "Pacific/Apia"];

/// Z3's own calendar schedules, apart from the worlds': a cron base sparse by date (a day
/// of the month, weekdays, Fridays, the first half of each month, a few times a weekday)
/// so a rolled due time lands where the base is not due and shows, and calendars made of
/// the base's own due dates (whole days, the day after too, a half day over a due time, a
/// freeze), yearly a third of the time, with a business-day rule and a roll drawn.
/// `count` of them per seed, each compared with the oracle by `agree`.
pub fn check_drawn(seed: u64, count: usize) -> DateReport {
    let mut rng = stream_rng(seed, Stream::CalendarRules);
    let mut out = DateReport {
        checked: 0,
        violations: Vec::new(),
    };
    for k in 0..count {
        let Some((schedule, spec, from)) = draw_rule(&mut rng) else {
            continue;
        };
        out.checked += 1;
        if let Err(detail) = agree(&schedule, &spec, from) {
            out.violations.push(Violation {
                invariant: Invariant::Z3,
                job: format!("drawn calendar schedule {k}"),
                detail,
                liveness: true,
            });
        }
    }
    out
}

/// One of Z3's own schedules and the instant it is compared from.
fn draw_rule(rng: &mut ChaCha8Rng) -> Option<(Schedule, CalendarSpec, i64)> {
    let zones = || ZONES.iter().chain(&Z3_MORE_ZONES);
    let zone = *zones().nth(rng.gen_range(0..zones().count()))?;
    let (m, h) = (rng.gen_range(0..60), rng.gen_range(0..24));
    let text = match rng.gen_range(0..6) {
        0 => format!("{m} {h} {} * *", rng.gen_range(1..=28)),
        1 => format!("{m} {h} * * 1-5"),
        2 => format!("{m} {h} * * *"),
        3 => format!("{m} {h} 1-15 * *"),
        4 => format!("{m} {h} * * 5"),
        _ => format!("*/30 {h}-{} * * 1-5", (h + 2).min(23)),
    };
    let base = Schedule::cron(&text, Some(zone)).ok()?;
    let cron = crate::cron_text::expand(&text, Some(zone)).ok()?;
    let tz = cron.tz;
    let base_spec = Spec::Cron(Box::new(cron));
    let from = rng.gen_range(1_704_067_200_000i64..1_956_528_000_000); // 2024..2032
    let dates: Vec<NaiveDate> = base_spec
        .due_in(from, from + Z3_DAYS * DAY_MS)
        .iter()
        .filter_map(|d| tz.timestamp_millis_opt(d.at).single())
        .map(|t| t.date_naive())
        .collect();
    let calendars = (0..rng.gen_range(1..=2))
        .map(|i| drawn_set(rng, &dates, format!("z3_{i}")))
        .collect();
    let business_day = rng.gen_bool(0.4).then(|| {
        let n: i32 = rng.gen_range(1..=6);
        if rng.gen_bool(0.5) {
            n
        } else {
            -n
        }
    });
    let roll = [RollTo::Stay, RollTo::Next, RollTo::Previous][rng.gen_range(0..3)];
    let spec = CalendarSpec::new(base_spec, tz, calendars, business_day, roll);
    Some((core_schedule(&base, &spec)?, spec, from))
}

/// A calendar of the base's own due dates (`dates`, ascending, repeats allowed).
fn drawn_set(rng: &mut ChaCha8Rng, dates: &[NaiveDate], name: String) -> DateSet {
    let (yearly, written) = Written::draw(rng);
    let mut spans = Vec::new();
    for _ in 0..rng.gen_range(1..=6) {
        let Some(&d) = dates.get(rng.gen_range(0..dates.len().max(1))) else {
            break;
        };
        let next = d.succ_opt().unwrap_or(d);
        spans.push(match rng.gen_range(0..4) {
            0 => format!("{}..{}", written.date(d), written.date(next)),
            1 => {
                let (a, b) = (rng.gen_range(0..24), rng.gen_range(1..=12));
                let from = d.and_hms_opt(a, 0, 0).expect("an hour");
                let until = from + Duration::hours(b);
                format!("{}..{}", written.time(from), written.time(until))
            }
            2 => format!(
                "{}..{}",
                written.date(d),
                written.date(d + Duration::days(rng.gen_range(2..10)))
            ),
            _ => written.date(d),
        });
    }
    DateSet {
        name,
        yearly,
        spans,
    }
}
