//! `CalendarSchedule`: a base schedule (cron, every or at) with calendars excluded, an
//! optional business-day rule and a roll. Its due times, in the base schedule's zone (UTC
//! for `every` and `at`):
//!
//! 1. **picked**: the base's due times, or with `business_day = n` only those on the month's
//!    `n`-th business day (`-n`: counted from the month's end). A business day is Monday to
//!    Friday and not a holiday; a holiday is a local day the calendars exclude whole. A day
//!    is the instants from its 00:00 to the next day's 00:00, each turned into an instant by
//!    the boundary rule of `exclusions.rs`.
//! 2. **kept**: the picked due times not in an excluded stretch.
//! 3. **rolled** (`roll = "next"` or `"previous"`): each excluded picked due time moves to
//!    the same wall-clock reading on the nearest business day after (before) it on which that
//!    reading is not excluded, looked for up to `MAX_ROLL_DAYS` days away (beyond, it is not
//!    due); the reading becomes an instant by the same boundary rule. A rolled time equal to
//!    another due time is that one due time.
//!
//! The due times are kept ∪ rolled. Costs (all exact, none walks every due time of a range):
//! `next_after` is the base's `next_after` plus one stretch lookup per due time it looks at
//! (a lookup turns into instants only the spans within a day of it); `count_in` is the
//! base's `count_in` once, minus the base's `count_in` over each excluded stretch in the
//! range, a whole UTC year's at once once worked out (`excluded_in_year`: ten years of a
//! 30-holiday calendar cost ~300 counts the first time, then ~60 at the range's two ends
//! and ten lookups); with a business-day rule, one business-day search per month of the
//! range and then the same on that one day, a whole local year's at once once worked out
//! (`kept_in_business_year`). A roll adds,
//! to both, a visit to each excluded picked due time within `MAX_ROLL_DAYS` of the end of
//! its stretch (one a holiday for a daily schedule; for a minutely one, 1,440 a day), once
//! a stretch: the targets are kept in a memo (`memo.rs`), so later calls pay a lookup.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::exclusions::DAY_MS;
use super::memo::{Memo, Stretches};
use super::{Calendar, CalendarError, Exclusions};
use crate::schedule::{civil, Schedule, Zone};
use crate::time::Timestamp;

/// How far a due time may roll, in days: a freeze plus weekends fits; a calendar excluding
/// everything does not make a search run for years.
pub const MAX_ROLL_DAYS: i64 = 31;
/// The reach of a roll in ms, with a day to spare for daylight-saving shifts.
const ROLL_REACH: i64 = (MAX_ROLL_DAYS + 1) * DAY_MS;

/// Which business day of the month: 1 to 23 from its start, -1 to -23 from its end.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "i64", into = "i64")]
#[cfg_attr(feature = "schema", schemars(with = "i64"))]
pub struct BusinessDay(i8);

impl BusinessDay {
    /// The `n`-th business day (`-1`: the last).
    ///
    /// # Errors
    ///
    /// `CalendarError::BusinessDay` for 0 or beyond ±23 (no month has more weekdays).
    pub fn new(n: i64) -> Result<BusinessDay, CalendarError> {
        match i8::try_from(n) {
            Ok(v) if v != 0 && (-23..=23).contains(&v) => Ok(BusinessDay(v)),
            _ => Err(CalendarError::BusinessDay { found: n }),
        }
    }

    /// The number, as written.
    pub fn get(self) -> i64 {
        i64::from(self.0)
    }
}

impl TryFrom<i64> for BusinessDay {
    type Error = CalendarError;
    fn try_from(n: i64) -> Result<Self, CalendarError> {
        BusinessDay::new(n)
    }
}

impl From<BusinessDay> for i64 {
    fn from(b: BusinessDay) -> i64 {
        b.get()
    }
}

/// What becomes of a due time an exclusion covers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Roll {
    /// It is not due (the default).
    #[default]
    #[serde(rename = "none")]
    Stay,
    /// It moves to the next business day (see the module's doc).
    Next,
    /// It moves to the previous business day.
    Previous,
}

impl Roll {
    /// Its name in definitions: `none`, `next`, `previous`.
    pub fn name(self) -> &'static str {
        match self {
            Roll::Stay => "none",
            Roll::Next => "next",
            Roll::Previous => "previous",
        }
    }
}

/// A base schedule with calendars excluded, a business-day rule and a roll (the module's
/// doc defines its due times).
#[derive(Clone)]
pub struct CalendarSchedule {
    pub(crate) base: Schedule,
    pub(crate) exclude: Vec<Calendar>,
    pub(crate) business_day: Option<BusinessDay>,
    pub(crate) roll: Roll,
    /// Derived from the above: the excluded instants in the base's zone.
    ex: Exclusions,
    /// Where each whole excluded stretch's due times roll that are not picked due times
    /// already (`fresh_targets`), worked out once a stretch.
    rolls: Memo<(i64, i64), Arc<[i64]>>,
    /// Each local month's chosen business day (`chosen_day`), by (year, month).
    chosen: Memo<(i64, u32), Option<(i64, i64)>>,
    /// Business-day searches' answers, by the instant searched from (`picked_next`).
    picks: Stretches,
    /// Stretches known to hold no excluded instant (`kept_next`).
    gaps: Stretches,
    /// Each UTC year's count of the base's due times its excluded stretches hold, by year
    /// (`excluded_count` subtracts a whole year's at once).
    excluded_in_year: Memo<i64, u64>,
    /// Each local year's count of kept due times on its months' chosen business days
    /// (`kept_count_on_business_days` adds a whole year's at once).
    kept_in_business_year: Memo<i64, u64>,
    /// Each local month's count of kept due times on its chosen business day, by (year,
    /// month), for a month whose chosen day lies whole in a count's range.
    kept_in_business_month: Memo<(i64, u32), u64>,
}

impl PartialEq for CalendarSchedule {
    fn eq(&self, o: &Self) -> bool {
        self.base == o.base
            && self.exclude == o.exclude
            && self.business_day == o.business_day
            && self.roll == o.roll
    }
}

impl Eq for CalendarSchedule {}

impl fmt::Debug for CalendarSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// `<base> excluding holidays, freeze; business day -1; roll next`.
impl fmt::Display for CalendarSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.base)?;
        let mut sep = " [";
        if !self.exclude.is_empty() {
            let names: Vec<&str> = self.exclude.iter().map(|c| c.name.as_str()).collect();
            write!(f, "{sep}excluding {}", names.join(", "))?;
            sep = "; ";
        }
        if let Some(b) = self.business_day {
            write!(f, "{sep}business day {}", b.get())?;
            sep = "; ";
        }
        if self.roll != Roll::Stay {
            write!(f, "{sep}roll {}", self.roll.name())?;
        }
        f.write_str("]")
    }
}

impl CalendarSchedule {
    /// `base` with `exclude` excluded, only its due times on the `business_day`-th business
    /// day of each month when given, excluded due times moved by `roll`.
    ///
    /// # Errors
    ///
    /// `CalendarError::Nested` when `base` is itself a calendar schedule,
    /// `CalendarError::NamedTwice` for a calendar given twice, `CalendarError::Empty` for no
    /// calendar and no business-day rule.
    pub fn new(
        base: Schedule,
        exclude: Vec<Calendar>,
        business_day: Option<BusinessDay>,
        roll: Roll,
    ) -> Result<CalendarSchedule, CalendarError> {
        if matches!(base, Schedule::Calendar(_)) {
            return Err(CalendarError::Nested);
        }
        if exclude.is_empty() && business_day.is_none() {
            return Err(CalendarError::Empty);
        }
        for (i, c) in exclude.iter().enumerate() {
            if exclude[..i].iter().any(|d| d.name == c.name) {
                return Err(CalendarError::NamedTwice {
                    name: c.name.to_string(),
                });
            }
        }
        let zone = match &base {
            Schedule::Cron(c) => c.zone().clone(),
            _ => Zone::utc(),
        };
        let ex = Exclusions::new(zone, &exclude);
        Ok(CalendarSchedule {
            base,
            exclude,
            business_day,
            roll,
            ex,
            rolls: Memo::default(),
            chosen: Memo::default(),
            picks: Stretches::default(),
            gaps: Stretches::default(),
            excluded_in_year: Memo::default(),
            kept_in_business_year: Memo::default(),
            kept_in_business_month: Memo::default(),
        })
    }

    /// The base schedule.
    pub fn base(&self) -> &Schedule {
        &self.base
    }

    /// The calendars excluded, in the order named.
    pub fn exclude(&self) -> &[Calendar] {
        &self.exclude
    }

    /// The business-day rule, if any.
    pub fn business_day(&self) -> Option<BusinessDay> {
        self.business_day
    }

    /// The roll.
    pub fn roll(&self) -> Roll {
        self.roll
    }

    /// The zone its calendars are read in: the base's (UTC for `every` and `at`).
    pub fn zone(&self) -> &Zone {
        self.ex.zone()
    }

    /// Why instant `t` is excluded: each calendar and the label of the span covering its
    /// local time, or empty when `t` is not excluded. Kept due times are never excluded; a
    /// host asks this of the base's due times to show what was left out.
    pub fn excluded_by(&self, t: Timestamp) -> Vec<(&Calendar, Option<&str>)> {
        if self.ex.containing(t.as_millis()).is_none() {
            return Vec::new();
        }
        let minute = self.ex.local_ms(t.as_millis()).div_euclid(60_000);
        let mut why = Vec::new();
        for c in &self.exclude {
            if let Some(s) = c.spans_at(minute).next() {
                why.push((c, s.label()));
            }
        }
        why
    }

    /// The first due time strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let t = t.as_millis();
        let kept = self.kept_next(t);
        let best = match self.roll {
            Roll::Stay => kept,
            Roll::Next => self.rolled_next_forward(t, kept),
            Roll::Previous => self.rolled_next_backward(t, kept),
        };
        best.map(Timestamp::from_millis)
    }

    /// The number of due times `d` with `after < d <= until`.
    pub fn count_in(&self, after: Timestamp, until: Timestamp) -> u64 {
        let (a, u) = (after.as_millis(), until.as_millis());
        if u <= a {
            return 0;
        }
        let mut n = match self.business_day {
            None => self.kept_count(a, u),
            Some(b) => self.kept_count_on_business_days(a, u, b),
        };
        if self.roll != Roll::Stay {
            n += self.rolled_in(a, u);
        }
        n
    }

    /// The base's due times in `(a, u]` outside every excluded stretch: the base's count,
    /// less its count over the excluded stretches in the range.
    fn kept_count(&self, a: i64, u: i64) -> u64 {
        if u <= a {
            return 0;
        }
        let all = self
            .base
            .count_in(Timestamp::from_millis(a), Timestamp::from_millis(u));
        all - self.excluded_count(a.saturating_add(1), u.saturating_add(1))
    }

    /// The base's due times in the instants `[lo, hi)` that excluded stretches hold: the
    /// whole UTC years inside from `excluded_in_year`, the ends stretch by stretch. (The
    /// excluded instants of `[lo, hi)` cut at year starts are those of each piece, so the
    /// counts add up.)
    fn excluded_count(&self, lo: i64, hi: i64) -> u64 {
        let year_start = |y: i64| civil::days_from_civil(y, 1, 1) * DAY_MS;
        let year_of = |ms: i64| civil::civil_from_days(ms.div_euclid(DAY_MS)).0;
        let (first, last) = (year_of(lo) + 1, year_of(hi));
        if first >= last || !(1..=10_000).contains(&first) || !(1..=10_000).contains(&last) {
            return self.excluded_between(lo, hi);
        }
        let mut n = self.excluded_between(lo, year_start(first));
        for y in first..last {
            n += self.excluded_in_year.get_or(y, || {
                self.excluded_between(year_start(y), year_start(y + 1))
            });
        }
        n + self.excluded_between(year_start(last), hi)
    }

    /// `excluded_count` stretch by stretch: the base's count over each stretch of the
    /// window, cut at `[lo, hi)`.
    fn excluded_between(&self, lo: i64, hi: i64) -> u64 {
        let count = |from: i64, to: i64| {
            self.base.count_in(
                Timestamp::from_millis(from - 1),
                Timestamp::from_millis(to - 1),
            )
        };
        self.ex
            .window(lo, hi)
            .into_iter()
            .map(|(s, e)| count(s.max(lo), e.min(hi)))
            .sum()
    }

    /// `kept_count` with a business-day rule: month by month, on the chosen day only; a
    /// local year with a whole month to spare on either side of the range's ends, whose
    /// chosen days all lie inside it, from `kept_in_business_year`.
    fn kept_count_on_business_days(&self, a: i64, u: i64, n: BusinessDay) -> u64 {
        let (mut year, mut month) = self.month_before(a);
        let last = self.month_of(u);
        let (a_year, a_month) = self.month_of(a);
        let after_a = next_month(a_year, a_month);
        let mut total = 0;
        while (year, month) <= last {
            if month == 1 && (year, 1) > after_a && (year + 1, 1) < last {
                total += self.kept_in_business_year.get_or(year, || {
                    (1..=12)
                        .map(|m| self.kept_in_whole_month(year, m, n).unwrap_or(0))
                        .sum()
                });
                year += 1;
                continue;
            }
            match self.chosen_day(year, month, n) {
                Some((s, e)) if a < s && e - 1 <= u => {
                    total += self.kept_in_whole_month(year, month, n).unwrap_or(0);
                }
                Some((s, e)) => total += self.kept_count(a.max(s - 1), u.min(e - 1)),
                None => {}
            }
            (year, month) = next_month(year, month);
        }
        total
    }

    /// The kept due times on month's chosen business day, all of them (`None`: the month
    /// has no such day), kept once worked out.
    fn kept_in_whole_month(&self, year: i64, month: u32, n: BusinessDay) -> Option<u64> {
        let (s, e) = self.chosen_day(year, month, n)?;
        Some(
            self.kept_in_business_month
                .get_or((year, month), || self.kept_count(s - 1, e - 1)),
        )
    }

    /// The first picked due time after `t` that no stretch excludes. A due time found
    /// kept keeps the stretch from it to the next excluded one (`gaps`), so the next
    /// question about a time in it is answered without a look at the stretches.
    fn kept_next(&self, mut t: i64) -> Option<i64> {
        loop {
            let d = self.picked_next(t)?;
            if self.gaps.holding(d).is_some() {
                return Some(d);
            }
            match self.ex.containing(d) {
                Some((_, e)) => t = e - 1,
                None => {
                    let end = self.ex.next_from(d).map(|(s, _)| s);
                    self.gaps.keep(d, end);
                    return Some(d);
                }
            }
        }
    }

    /// The first picked (base, business-day rule applied) due time after `t`.
    fn picked_next(&self, t: i64) -> Option<i64> {
        let Some(n) = self.business_day else {
            return self
                .base
                .next_after(Timestamp::from_millis(t))
                .map(|d| d.as_millis());
        };
        if let Some(answer) = self.picks.holding(t) {
            return answer;
        }
        let answer = self.picked_next_on_business_days(t, n);
        self.picks.keep(t, answer);
        answer
    }

    /// `picked_next` with a business-day rule: month by month, from the month of the
    /// base's next due time whenever that is later (the months between hold none).
    fn picked_next_on_business_days(&self, t: i64, n: BusinessDay) -> Option<i64> {
        let (mut year, mut month) = self.month_before(t);
        let last = self.month_of(self.search_horizon(t));
        while year <= 9999 && (year, month) <= last {
            let mut after = t;
            if let Some((s, e)) = self.chosen_day(year, month, n) {
                if e > t.saturating_add(1) {
                    let from = Timestamp::from_millis(t.max(s - 1));
                    match self.base.next_after(from).map(|d| d.as_millis()) {
                        Some(d) if d < e => return Some(d),
                        None => return None,
                        Some(d) => after = d,
                    }
                }
            }
            (year, month) = next_month(year, month).max(self.month_before(after));
        }
        None
    }

    /// How far a business-day search from `t` need look. Once every ingredient repeats
    /// with the Gregorian calendar's 400 years (146,097 days, a whole number of weeks) —
    /// past `t`, the last calendar span that does not recur, the zones' last offset change
    /// (`zone::CONSTANT_FROM`) and an `at`'s instant, for a cron base or an `every` whose
    /// period divides the cycle — the picked due times repeat every cycle: none within one
    /// cycle after that point means none ever. Otherwise, the end of year 9999.
    fn search_horizon(&self, t: i64) -> i64 {
        const CYCLE_MS: i64 = 146_097 * DAY_MS;
        let repeats = match &self.base {
            Schedule::Cron(_) | Schedule::At { .. } => true,
            Schedule::Every { period, .. } => {
                u64::try_from(CYCLE_MS).is_ok_and(|c| c % period.as_millis().max(1) == 0)
            }
            Schedule::Calendar(_) => false,
        };
        if !repeats {
            return i64::MAX;
        }
        let at = match &self.base {
            Schedule::At { instant } => instant.as_millis(),
            _ => i64::MIN,
        };
        t.max(self.ex.fixed_end())
            .max(crate::schedule::zone::CONSTANT_FROM * 1000)
            .max(at)
            .saturating_add(CYCLE_MS + 62 * DAY_MS)
    }

    /// The local (year, month) of instant `t`.
    /// Clamped to years 0-10000: calendars and business days live in years 1-9999.
    fn month_of(&self, t: i64) -> (i64, u32) {
        let day = self.ex.local_ms(t).div_euclid(DAY_MS);
        match civil::civil_from_days(day) {
            (y, _, _) if y < 0 => (0, 1),
            (y, _, _) if y > 10_000 => (10_000, 1),
            (y, m, _) => (y, m),
        }
    }

    /// The month before `t`'s: a day's instants may begin before its local date's month
    /// does (a fold at midnight), so searches start one month early.
    fn month_before(&self, t: i64) -> (i64, u32) {
        match self.month_of(t) {
            (y, 1) => (y - 1, 12),
            (y, m) => (y, m - 1),
        }
    }

    /// The instants `[start, end)` of local day number `day`.
    pub(crate) fn day_bounds(&self, day: i64) -> (i64, i64) {
        let b = |d: i64| self.ex.boundary_ms(d.saturating_mul(DAY_MS));
        (b(day), b(day + 1))
    }

    /// Whether local day `day` is a business day, against stretches `ex` that cover it.
    fn is_business(&self, day: i64, ex: &[(i64, i64)]) -> bool {
        if !(1..=5).contains(&civil::weekday(day)) {
            return false;
        }
        let (s, e) = self.day_bounds(day);
        s < e && !ex.iter().any(|&(xs, xe)| xs <= s && e <= xe)
    }

    /// The instants of the `n`-th business day of a local month, if it has one.
    fn chosen_day(&self, year: i64, month: u32, n: BusinessDay) -> Option<(i64, i64)> {
        if !(1..=9999).contains(&year) {
            return None;
        }
        self.chosen
            .get_or((year, month), || self.chosen_day_worked_out(year, month, n))
    }

    fn chosen_day_worked_out(&self, year: i64, month: u32, n: BusinessDay) -> Option<(i64, i64)> {
        let first = civil::days_from_civil(year, month, 1);
        let len = i64::from(civil::days_in_month(year, month));
        let (lo, hi) = (self.day_bounds(first).0, self.day_bounds(first + len).0);
        let ex = self.ex.window(lo, hi);
        if ex.is_empty() && !self.ex.skips_a_day(lo, hi) {
            // Nothing excluded and no day empty: its business days are its weekdays.
            let weekdays = (first..first + len).filter(|&d| (1..=5).contains(&civil::weekday(d)));
            let want = usize::try_from(n.get().unsigned_abs() - 1).ok()?;
            let day = match n.get() > 0 {
                true => weekdays.clone().nth(want),
                false => weekdays.rev().nth(want),
            }?;
            return Some(self.day_bounds(day));
        }
        let mut days: Box<dyn Iterator<Item = i64>> = if n.get() > 0 {
            Box::new(first..first + len)
        } else {
            Box::new((first..first + len).rev())
        };
        let want = n.get().unsigned_abs();
        let day = days
            .by_ref()
            .filter(|&d| self.is_business(d, &ex))
            .nth(usize::try_from(want - 1).ok()?)?;
        Some(self.day_bounds(day))
    }

    /// Where an excluded due time `d` rolls to, if anywhere.
    fn roll_target(&self, d: i64) -> Option<i64> {
        let local = self.ex.local_ms(d);
        let (day, time) = (local.div_euclid(DAY_MS), local.rem_euclid(DAY_MS));
        let step = if self.roll == Roll::Previous { -1 } else { 1 };
        (1..=MAX_ROLL_DAYS).find_map(|k| {
            let target_day = day + step * k;
            let (s, e) = self.day_bounds(target_day);
            let ex = self.ex.window(s, e.max(s + 1));
            if !self.is_business(target_day, &ex) {
                return None;
            }
            let r = self.ex.boundary_ms(target_day * DAY_MS + time);
            self.ex.containing(r).is_none().then_some(r)
        })
    }

    /// The targets of whole excluded stretch `stretch` that are not picked due times (those
    /// are kept due times already, or excluded: never new), sorted. Only sources within
    /// `ROLL_REACH` of its end (its start, rolling back) can land outside it.
    fn fresh_targets(&self, stretch: (i64, i64)) -> Arc<[i64]> {
        self.rolls
            .get_or(stretch, || self.fresh_targets_worked_out(stretch))
    }

    fn fresh_targets_worked_out(&self, stretch: (i64, i64)) -> Arc<[i64]> {
        let (s, e) = stretch;
        let (from, to) = match self.roll {
            Roll::Previous => (s, e.min(s.saturating_add(ROLL_REACH))),
            _ => (s.max(e.saturating_sub(ROLL_REACH)), e),
        };
        let mut targets = BTreeSet::new();
        let mut cursor = from - 1;
        while let Some(d) = self.picked_next(cursor).filter(|&d| d < to) {
            targets.extend(self.roll_target(d));
            cursor = d;
        }
        let kept = |r: i64| self.picked_next(r - 1) == Some(r);
        targets.into_iter().filter(|&r| !kept(r)).collect()
    }

    /// The first of `fresh_targets(stretch)` after `t`, if earlier than `best`.
    fn better_target(&self, stretch: (i64, i64), t: i64, best: Option<i64>) -> Option<i64> {
        let targets = self.fresh_targets(stretch);
        let first = targets.get(targets.partition_point(|&r| r <= t)).copied();
        match (first, best) {
            (Some(r), Some(b)) => Some(r.min(b)),
            (r, b) => r.or(b),
        }
    }

    /// `next_after` with `roll = "next"`: the earliest of `kept` and the targets of the
    /// stretches whose sources lie from `ROLL_REACH` before `t` on (a target lies less than
    /// that after its source), stretch by stretch until their sources pass the best.
    fn rolled_next_forward(&self, t: i64, kept: Option<i64>) -> Option<i64> {
        let mut best = kept;
        let mut cursor = t.saturating_sub(ROLL_REACH);
        while let Some(d) = self.picked_next(cursor) {
            if best.is_some_and(|b| d >= b) {
                break;
            }
            match self.ex.containing(d) {
                None => match self.ex.next_from(d) {
                    Some((s, e)) => cursor = s.max(e - ROLL_REACH) - 1,
                    None => break,
                },
                Some((_, e)) if d < e - ROLL_REACH => cursor = e - ROLL_REACH - 1,
                Some(stretch) => {
                    best = self.better_target(stretch, t, best);
                    cursor = stretch.1 - 1;
                }
            }
        }
        best
    }

    /// `next_after` with `roll = "previous"`: targets lie before their sources, so the
    /// stretches with sources after `t` up to `ROLL_REACH` past the best found so far.
    fn rolled_next_backward(&self, t: i64, kept: Option<i64>) -> Option<i64> {
        let mut best = kept;
        let mut cursor = t;
        while let Some(d) = self.picked_next(cursor) {
            if best.is_some_and(|b| d >= b.saturating_add(ROLL_REACH)) {
                break;
            }
            match self.ex.containing(d) {
                None => match self.ex.next_from(d) {
                    Some((s, _)) => cursor = s - 1,
                    None => break,
                },
                Some((s, e)) if d >= s + ROLL_REACH => cursor = e - 1,
                Some(stretch) => {
                    best = self.better_target(stretch, t, best);
                    cursor = stretch.1 - 1;
                }
            }
        }
        best
    }

    /// How many rolled targets in `(after, until]` are not kept due times already (each
    /// counted once, though two stretches' sources may roll to one time).
    fn rolled_in(&self, after: i64, until: i64) -> u64 {
        let mut targets: BTreeSet<i64> = BTreeSet::new();
        let lo = after.saturating_sub(ROLL_REACH);
        let hi = until.saturating_add(ROLL_REACH);
        for (s, e) in self.ex.window(lo, hi) {
            let whole = self.ex.containing(s).unwrap_or((s, e));
            let fresh = self.fresh_targets(whole);
            let first = fresh.partition_point(|&r| r <= after);
            targets.extend(fresh[first..].iter().take_while(|&&r| r <= until));
        }
        targets.len() as u64
    }
}

/// The month after `(year, month)`.
fn next_month(year: i64, month: u32) -> (i64, u32) {
    if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}
