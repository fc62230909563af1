//! Calendar schedules as docs/schedules.md defines them, evaluated apart from the core's
//! `schedule/calendar` on purpose: the oracle reads each span's text with its own parser,
//! turns local times into instants through chrono-tz, and finds business days by walking a
//! month's days. Slow and plain; what it computes once (a year's excluded stretches, a
//! month's chosen business day) it keeps, so a checker asking window after window pays for
//! each year and month once.
//!
//! The rules, in the oracle's words:
//! - A span is `[from, until)` in local wall-clock time: `2025-12-25` is that whole day,
//!   `A..B` runs from `A` (a date is its 00:00) to after the whole day `B`, or to `B` when
//!   `B` carries a time. A yearly calendar's spans recur in every year from 1 to 9999 where
//!   both ends exist.
//! - A local time `L` becomes the first instant at which the zone's clock reads `L` or later
//!   (the end of a spring-forward gap; the first pass of a fall-back fold).
//! - A due time is excluded when it lies in a span's instants.
//! - A day is the instants from its 00:00 to the next day's 00:00; a business day is Monday
//!   to Friday, not empty, and not inside the excluded instants whole.
//! - With `business_day = n`, only base due times on the month's `n`-th business day (`-n`
//!   from the end) are picked; the picked times not excluded are kept.
//! - With a roll, each excluded picked time moves to its wall-clock reading on the nearest
//!   business day after (before) its local date where that reading is not excluded, at most
//!   31 days away; a moved time equal to another due time is that one due time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Weekday};
use chrono_tz::Tz;

use super::{Due, Spec};

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;
/// How far a due time may roll (docs/schedules.md): 31 days.
const ROLL_DAYS: i64 = 31;
/// How far before (after) a window an excluded due time may lie and still roll into it.
const ROLL_REACH_MS: i64 = (ROLL_DAYS + 2) * DAY_MS;

/// Where an excluded due time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollTo {
    /// Nowhere: it is not due.
    Stay,
    Next,
    Previous,
}

/// A named set of local spans, as written (`2025-12-25`, `2025-12-24T12:00..2025-12-27`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DateSet {
    pub name: String,
    pub yearly: bool,
    pub spans: Vec<String>,
}

/// A base schedule with calendars excluded, a business-day rule and a roll.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct CalendarSpec {
    pub base: Spec,
    /// The zone local times are read in: the base cron's, UTC for `every` and `at`.
    #[serde(with = "super::tz_name")]
    pub tz: Tz,
    pub calendars: Vec<DateSet>,
    pub business_day: Option<i32>,
    pub roll: RollTo,
    #[serde(skip)]
    memo: Arc<Mutex<Memo>>,
}

impl std::fmt::Debug for CalendarSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalendarSpec")
            .field("base", &self.base)
            .field("tz", &self.tz)
            .field("calendars", &self.calendars)
            .field("business_day", &self.business_day)
            .field("roll", &self.roll)
            .finish()
    }
}

impl Clone for CalendarSpec {
    fn clone(&self) -> Self {
        CalendarSpec::new(
            self.base.clone(),
            self.tz,
            self.calendars.clone(),
            self.business_day,
            self.roll,
        )
    }
}

/// What the oracle worked out once: the spans as local times, each UTC year's excluded
/// stretches, each local day's instants and whether it is a business day, each local
/// month's chosen business day, and the times each stretch's due times roll to.
#[derive(Debug, Default)]
struct Memo {
    spans: Option<Vec<(bool, NaiveDateTime, NaiveDateTime)>>,
    years: BTreeMap<i32, Arc<Vec<(i64, i64)>>>,
    days: BTreeMap<NaiveDate, (i64, i64)>,
    business: BTreeMap<NaiveDate, bool>,
    chosen: BTreeMap<(i32, u32), Option<NaiveDate>>,
    targets: BTreeMap<(i64, i64), Arc<Vec<i64>>>,
}

/// Why a span's text does not read.
pub fn parse_span(text: &str) -> Result<(NaiveDateTime, NaiveDateTime), String> {
    let date = |t: &str| NaiveDate::parse_from_str(t, "%Y-%m-%d").ok();
    let time = |t: &str| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M").ok();
    let bad = || format!("`{text}` is not a date, a date range or a local-time range");
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight exists");
    let (from, until) = match text.split_once("..") {
        None => {
            let d = date(text).ok_or_else(bad)?;
            (midnight(d), midnight(d.succ_opt().ok_or_else(bad)?))
        }
        Some((a, b)) => {
            let from = date(a).map(midnight).or_else(|| time(a)).ok_or_else(bad)?;
            let until = match date(b) {
                Some(d) => midnight(d.succ_opt().ok_or_else(bad)?),
                None => time(b).ok_or_else(bad)?,
            };
            (from, until)
        }
    };
    match from < until {
        true => Ok((from, until)),
        false => Err(format!("`{text}` ends before it starts")),
    }
}

/// The first instant (ms) at which `tz`'s clock reads `local` or later.
fn boundary(tz: &Tz, local: NaiveDateTime) -> i64 {
    if let Some(t) = tz.from_local_datetime(&local).earliest() {
        return t.timestamp_millis();
    }
    // In a gap: the clock first reads `local` or later where the gap ends, the first whole
    // minute after it that exists.
    let minute = local
        .with_nanosecond(0)
        .and_then(|t| t.with_second(0))
        .unwrap_or(local);
    (1..=3 * 24 * 60)
        .find_map(|k| {
            tz.from_local_datetime(&(minute + Duration::minutes(k)))
                .earliest()
        })
        .map_or(i64::MAX, |t| t.timestamp_millis())
}

/// The local reading of instant `ms`.
fn reading(tz: &Tz, ms: i64) -> NaiveDateTime {
    tz.timestamp_millis_opt(ms)
        .single()
        .expect("an instant has one reading")
        .naive_local()
}

fn midnight(d: NaiveDate) -> NaiveDateTime {
    d.and_hms_opt(0, 0, 0).expect("midnight exists")
}

/// The same local time `years` later, if that date exists in years 1 to 9999 (where
/// schedules' due times live).
fn shifted(t: NaiveDateTime, years: i32) -> Option<NaiveDateTime> {
    let year = t.year() + years;
    if !(1..=9999).contains(&year) {
        return None;
    }
    t.date().with_year(year).map(|d| d.and_time(t.time()))
}

/// Sorted stretches with touching and overlapping ones joined.
fn merged(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.retain(|(s, e)| s < e);
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

impl CalendarSpec {
    /// The spec; `check` says whether its spans read.
    pub fn new(
        base: Spec,
        tz: Tz,
        calendars: Vec<DateSet>,
        business_day: Option<i32>,
        roll: RollTo,
    ) -> CalendarSpec {
        CalendarSpec {
            base,
            tz,
            calendars,
            business_day,
            roll,
            memo: Arc::default(),
        }
    }

    /// Every span's text reads.
    pub fn check(&self) -> Result<(), String> {
        for c in &self.calendars {
            for s in &c.spans {
                parse_span(s)?;
            }
        }
        Ok(())
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The spans as local times, with whether each recurs yearly.
    fn spans(&self) -> Vec<(bool, NaiveDateTime, NaiveDateTime)> {
        let mut memo = self.memo();
        memo.spans
            .get_or_insert_with(|| {
                self.calendars
                    .iter()
                    .flat_map(|c| {
                        c.spans
                            .iter()
                            .filter_map(move |s| parse_span(s).ok().map(|(f, u)| (c.yearly, f, u)))
                    })
                    .collect()
            })
            .clone()
    }

    /// The excluded stretches reaching into UTC year `year` (and 40 days either side).
    fn year(&self, year: i32) -> Arc<Vec<(i64, i64)>> {
        if let Some(y) = self.memo().years.get(&year) {
            return y.clone();
        }
        let edge = |y: i32| {
            NaiveDate::from_ymd_opt(y, 1, 1)
                .map_or(i64::MAX, |d| midnight(d).and_utc().timestamp_millis())
        };
        let (lo, hi) = (edge(year) - 40 * DAY_MS, edge(year + 1) + 40 * DAY_MS);
        let mut v = Vec::new();
        for (yearly, from, until) in self.spans() {
            let shifts: Vec<i32> = match yearly {
                false => vec![0],
                true => (year - 2..=year + 1).map(|y| y - from.year()).collect(),
            };
            for k in shifts {
                if let (Some(f), Some(u)) = (shifted(from, k), shifted(until, k)) {
                    let (s, e) = (boundary(&self.tz, f), boundary(&self.tz, u));
                    if s < hi && e > lo {
                        v.push((s, e));
                    }
                }
            }
        }
        let v = Arc::new(merged(v));
        self.memo().years.insert(year, v.clone());
        v
    }

    /// The excluded stretch holding instant `t`.
    fn stretch_at(&self, t: i64) -> Option<(i64, i64)> {
        let year = chrono::DateTime::from_timestamp_millis(t).map_or(0, |d| d.year());
        let v = self.year(year);
        let i = v.partition_point(|&(s, _)| s <= t);
        i.checked_sub(1).map(|i| v[i]).filter(|&(_, e)| t < e)
    }

    /// The instants `[start, end)` of local day `d`.
    fn day(&self, d: NaiveDate) -> (i64, i64) {
        if let Some(b) = self.memo().days.get(&d) {
            return *b;
        }
        let next = d.succ_opt().unwrap_or(d);
        let b = (
            boundary(&self.tz, midnight(d)),
            boundary(&self.tz, midnight(next)),
        );
        self.memo().days.insert(d, b);
        b
    }

    /// The local day whose instants hold `t`.
    fn day_of(&self, t: i64) -> NaiveDate {
        let mut d = reading(&self.tz, t).date();
        while let Some(next) = d.succ_opt().filter(|&n| t >= self.day(n).0) {
            d = next;
        }
        d
    }

    fn is_business(&self, d: NaiveDate) -> bool {
        if matches!(d.weekday(), Weekday::Sat | Weekday::Sun) {
            return false;
        }
        if let Some(b) = self.memo().business.get(&d) {
            return *b;
        }
        let (s, e) = self.day(d);
        let b = s < e && self.stretch_at(s).is_none_or(|(_, xe)| e > xe);
        self.memo().business.insert(d, b);
        b
    }

    /// The month's `n`-th business day (`-n`: from the end), if it has one.
    fn chosen(&self, year: i32, month: u32, n: i32) -> Option<NaiveDate> {
        if let Some(c) = self.memo().chosen.get(&(year, month)) {
            return *c;
        }
        let first = NaiveDate::from_ymd_opt(year, month, 1)?;
        let days: Vec<NaiveDate> = first
            .iter_days()
            .take_while(|d| d.month() == month)
            .filter(|&d| self.is_business(d))
            .collect();
        let want = usize::try_from(n.unsigned_abs()).ok()?;
        let c = match n > 0 {
            true => days.get(want - 1).copied(),
            false => days.len().checked_sub(want).map(|i| days[i]),
        };
        self.memo().chosen.insert((year, month), c);
        c
    }

    /// Whether base due time `t` is picked: always, or on its month's chosen business day.
    fn picked(&self, t: i64) -> bool {
        let Some(n) = self.business_day else {
            return true;
        };
        let d = self.day_of(t);
        self.chosen(d.year(), d.month(), n) == Some(d)
    }

    /// Where excluded picked time `t` rolls to, if anywhere.
    fn target(&self, t: i64) -> Option<i64> {
        let r = reading(&self.tz, t);
        let step = if self.roll == RollTo::Previous { -1 } else { 1 };
        (1..=ROLL_DAYS).find_map(|k| {
            let d = r.date().checked_add_signed(Duration::days(step * k))?;
            if !self.is_business(d) {
                return None;
            }
            let at = boundary(&self.tz, d.and_time(r.time()));
            self.stretch_at(at).is_none().then_some(at)
        })
    }

    /// Excluded stretches overlapping `(lo, hi]`.
    fn stretches_in(&self, lo: i64, hi: i64) -> Vec<(i64, i64)> {
        let year = |t: i64| chrono::DateTime::from_timestamp_millis(t).map_or(0, |d| d.year());
        let mut v = Vec::new();
        for y in year(lo)..=year(hi) {
            v.extend(self.year(y).iter().filter(|&&(s, e)| s <= hi && e > lo + 1));
        }
        merged(v)
    }

    /// Where the picked due times of excluded stretch `[s, e)` roll to, sorted. Only those
    /// within a roll's reach of the stretch's end (start, rolling back) can land outside it.
    fn targets(&self, (s, e): (i64, i64)) -> Arc<Vec<i64>> {
        if let Some(t) = self.memo().targets.get(&(s, e)) {
            return t.clone();
        }
        let (from, to) = match self.roll {
            RollTo::Previous => (s, e.min(s.saturating_add(ROLL_REACH_MS))),
            _ => (s.max(e.saturating_sub(ROLL_REACH_MS)), e),
        };
        let mut t: Vec<i64> = self
            .base
            .due_in(from - 1, to - 1)
            .iter()
            .filter(|d| self.picked(d.at))
            .filter_map(|d| self.target(d.at))
            .collect();
        t.sort_unstable();
        let t = Arc::new(t);
        self.memo().targets.insert((s, e), t.clone());
        t
    }

    /// Due times in `(after, until]`, ascending.
    pub fn due_in(&self, after: i64, until: i64, out: &mut Vec<Due>) {
        for d in self.base.due_in(after, until) {
            if self.picked(d.at) && self.stretch_at(d.at).is_none() {
                out.push(d);
            }
        }
        let (lo, hi) = match self.roll {
            RollTo::Stay => return,
            RollTo::Next => (after.saturating_sub(ROLL_REACH_MS), until),
            RollTo::Previous => (after, until.saturating_add(ROLL_REACH_MS)),
        };
        for stretch in self.stretches_in(lo, hi) {
            let targets = self.targets(stretch);
            let first = targets.partition_point(|&r| r <= after);
            for &r in targets[first..].iter().take_while(|&&r| r <= until) {
                out.push(Due {
                    at: r,
                    gap: false,
                    fold: false,
                });
            }
        }
        out.sort_by_key(|d| d.at);
        out.dedup_by_key(|d| d.at);
    }
}
