//! The compiled form of a cron expression: one bit set per field, searched and counted in
//! local wall-clock seconds (every local day has 86,400 of them; the zone layer in
//! `cron/mod.rs` maps them to real instants).
//!
//! Search is bit arithmetic: the next matching time of day is at most three
//! `trailing_zeros`, the next matching day of a month is one mask per month. Counting
//! multiplies per-day counts by popcounts, so ten years of a per-second schedule is a few
//! hundred mask operations, never a walk.

use crate::schedule::civil::{civil_from_days, days_from_civil, days_in_month, weekday, DAY};

/// Cron schedules yield due times in local years 1 through 9999: the range every tool
/// that prints a calendar agrees on. Before it the search starts at its beginning; after it
/// there are no due times.
pub(crate) const LOCAL_MIN: i64 = -62_135_596_800; // 0001-01-01T00:00:00 local
pub(crate) const LOCAL_END: i64 = 253_402_300_800; // 10000-01-01T00:00:00 local

/// The bit sets of the six fields, plus the flags cron's day rule needs. Opaque outside
/// the crate, and named only through the unstable `internals` feature (tests compare two
/// expressions' compiled forms).
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Fields {
    pub(crate) seconds: u64,
    pub(crate) minutes: u64,
    pub(crate) hours: u32,
    /// Bit `d` is day `d` of the month (1-31).
    pub(crate) days: u32,
    /// `L` in day-of-month: the month's last day.
    pub(crate) last_day: bool,
    /// Bit `m` is month `m` (1-12).
    pub(crate) months: u16,
    /// Bit `w` is weekday `w`, 0 = Sunday.
    pub(crate) weekdays: u8,
    /// Bit `(n - 1) * 7 + w` is `w#n`, the n-th weekday `w` of the month.
    pub(crate) nth_weekdays: u64,
    /// Bit `w` is `wL`, the last weekday `w` of the month.
    pub(crate) last_weekdays: u8,
    /// The day-of-month / day-of-week text began with `*` (cronie's DOM_STAR / DOW_STAR).
    pub(crate) dom_star: bool,
    pub(crate) dow_star: bool,
}

/// `Fields` plus what is derived once at compile time to keep the search loops short.
#[derive(Debug, Clone)]
pub(super) struct Matcher {
    pub fields: Fields,
    /// For each weekday of the 1st of a month, the days (bits 1-31) whose weekday is in the set.
    week_masks: [u32; 7],
    first_tod: u32,
    per_day: u64,
    per_hour: u64,
    seconds_count: u64,
    can_match: bool,
    dates: Dates,
    /// Whether a date matches by its month and day of month alone (day-of-week is `*`), so
    /// the search needs no weekday and no day number until it has found a day.
    days_only: bool,
}

/// The shape of the date rule, so the common ones skip calendar arithmetic entirely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dates {
    /// Every day of every month (`* * *` in the date fields).
    Every,
    /// Every month, and a day matches by its weekday alone (`* * 1-5`).
    Weekdays,
    /// Anything else: one mask per month.
    ByMonth,
}

/// Bits 1-31: every day of a month.
const ALL_DAYS: u32 = !1;
/// Bits 1-12: every month.
const ALL_MONTHS: u16 = 0x1ffe;

fn next_bit64(bits: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let rest = bits & (u64::MAX << from);
    (rest != 0).then(|| rest.trailing_zeros())
}

fn next_bit32(bits: u32, from: u32) -> Option<u32> {
    next_bit64(u64::from(bits), from)
}

/// Bits strictly below `n`.
fn below64(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

impl Matcher {
    pub(super) fn new(fields: Fields) -> Self {
        let mut week_masks = [0u32; 7];
        for (first, mask) in week_masks.iter_mut().enumerate() {
            for day in 1..=31u32 {
                let wd = (first as u32 + day - 1) % 7;
                if fields.weekdays & (1 << wd) != 0 {
                    *mask |= 1 << day;
                }
            }
        }
        let first_tod = match (
            next_bit64(fields.seconds, 0),
            next_bit64(fields.minutes, 0),
            next_bit32(fields.hours, 0),
        ) {
            (Some(s), Some(m), Some(h)) => h * 3600 + m * 60 + s,
            _ => 0,
        };
        let seconds_count = u64::from(fields.seconds.count_ones());
        let per_hour = u64::from(fields.minutes.count_ones()) * seconds_count;
        let per_day = u64::from(fields.hours.count_ones()) * per_hour;
        let all_days = fields.days & ALL_DAYS == ALL_DAYS;
        let plain_dow = fields.nth_weekdays == 0 && fields.last_weekdays == 0;
        let all_weekdays = plain_dow && fields.weekdays == 0x7f;
        // cron's day rule: AND when either field text is star-like, else OR.
        let and_rule = fields.dom_star || fields.dow_star;
        let every_day = if and_rule {
            all_days && all_weekdays
        } else {
            all_days || all_weekdays
        };
        let dates = match (fields.months & ALL_MONTHS == ALL_MONTHS, every_day) {
            (true, true) => Dates::Every,
            (true, false) if and_rule && all_days && plain_dow => Dates::Weekdays,
            _ => Dates::ByMonth,
        };
        let mut m = Matcher {
            fields,
            week_masks,
            first_tod,
            per_day,
            per_hour,
            seconds_count,
            can_match: true,
            dates,
            days_only: and_rule && all_weekdays,
        };
        m.can_match = per_day > 0 && m.some_day_can_match();
        m
    }

    /// Whether any date at all matches. Cheap for ordinary expressions; an unusual one
    /// (`0 0 30 2 *`, `0 0 * 2 5#5` with `L` and `#` mixed) is settled by looking at one
    /// full 400-year Gregorian cycle, after which the calendar repeats.
    fn some_day_can_match(&self) -> bool {
        let f = &self.fields;
        if f.months == 0 {
            return false;
        }
        let plain_dow = f.nth_weekdays == 0 && f.last_weekdays == 0;
        if f.dow_star && plain_dow && f.weekdays == 0x7f {
            let max_day = (1..=12u32)
                .filter(|m| f.months & (1 << m) != 0)
                .map(|m| days_in_month(2000, m))
                .max()
                .unwrap_or(0);
            return f.last_day || (f.days & below64(max_day + 1) as u32) != 0;
        }
        let start = days_from_civil(2000, 1, 1);
        self.next_date(start, start + 146_097).is_some()
    }

    /// The days of `year`-`month` that match, as bits 1-31; `month_start` is the day number
    /// of its 1st.
    fn day_mask(&self, year: i64, month: u32, month_start: i64) -> u32 {
        let f = &self.fields;
        let dim = days_in_month(year, month);
        let valid = (below64(dim + 1) as u32) & !1;
        let first_weekday = weekday(month_start);
        let mut dom = f.days;
        if f.last_day {
            dom |= 1 << dim;
        }
        let mut dow = self.week_masks[first_weekday as usize];
        if f.nth_weekdays != 0 {
            let mut bits = f.nth_weekdays;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let (wd, n) = (b % 7, b / 7);
                let day = 1 + (wd + 7 - first_weekday) % 7 + 7 * n;
                if day <= dim {
                    dow |= 1 << day;
                }
            }
        }
        if f.last_weekdays != 0 {
            let last_weekday = (first_weekday + dim - 1) % 7;
            let mut bits = u32::from(f.last_weekdays);
            while bits != 0 {
                let wd = bits.trailing_zeros();
                bits &= bits - 1;
                dow |= 1 << (dim - (last_weekday + 7 - wd) % 7);
            }
        }
        let days = if f.dom_star || f.dow_star {
            dom & dow
        } else {
            dom | dow
        };
        days & valid
    }

    /// `day_mask` for a rule that ignores weekdays (`days_only`).
    fn dom_mask(&self, year: i64, month: u32) -> u32 {
        let f = &self.fields;
        let dim = days_in_month(year, month);
        let mut dom = f.days;
        if f.last_day {
            dom |= 1 << dim;
        }
        dom & (below64(dim + 1) as u32) & !1
    }

    fn month_in_set(&self, month: u32) -> bool {
        self.fields.months & (1 << month) != 0
    }

    /// The first matching day number in `[from, until)`.
    fn next_date(&self, from: i64, until: i64) -> Option<i64> {
        let found = match self.dates {
            Dates::Every => Some(from),
            Dates::Weekdays => {
                let wd = weekday(from);
                let week = u32::from(self.fields.weekdays) * 0x81; // two weeks, so no wrap
                let ahead = (week >> wd).trailing_zeros();
                (ahead < 7).then(|| from + i64::from(ahead))
            }
            Dates::ByMonth => return self.next_date_by_month(from, until),
        };
        found.filter(|&d| d < until)
    }

    /// `next_date` one month at a time, jumping straight to the months in the set.
    fn next_date_by_month(&self, from: i64, until: i64) -> Option<i64> {
        let months = u32::from(self.fields.months);
        let first_month = next_bit32(months, 1)?;
        let (mut year, mut month, mut min_day) = civil_from_days(from);
        // `until` lies no later than this year (every year has at least 365 days).
        let last_year = year + (until - from) / 365 + 1;
        loop {
            match next_bit32(months, month) {
                Some(m) if m == month => {}
                Some(m) if m <= 12 => (month, min_day) = (m, 1),
                _ => (year, month, min_day) = (year + 1, first_month, 1),
            }
            if year > last_year {
                return None;
            }
            let (mask, month_start) = if self.days_only {
                (self.dom_mask(year, month), None)
            } else {
                let start = days_from_civil(year, month, 1);
                if start >= until {
                    return None;
                }
                (self.day_mask(year, month, start), Some(start))
            };
            let mask = mask & !(below64(min_day) as u32);
            if mask != 0 {
                let month_start = month_start.unwrap_or_else(|| days_from_civil(year, month, 1));
                let day = month_start + i64::from(mask.trailing_zeros()) - 1;
                return (day < until).then_some(day);
            }
            min_day = 1;
            month += 1;
            if month > 12 {
                month = 1;
                year += 1;
            }
        }
    }

    fn date_matches(&self, day: i64) -> bool {
        match self.dates {
            Dates::Every => true,
            Dates::Weekdays => self.fields.weekdays & (1 << weekday(day)) != 0,
            Dates::ByMonth => {
                let (y, m, d) = civil_from_days(day);
                self.month_in_set(m) && self.day_mask(y, m, day - i64::from(d) + 1) & (1 << d) != 0
            }
        }
    }

    /// The first matching second of the day at or after `sod` (seconds of day).
    fn next_tod(&self, sod: u32) -> Option<u32> {
        let f = &self.fields;
        let (h, m, s) = (sod / 3600, sod / 60 % 60, sod % 60);
        let first_second = self.first_tod % 60;
        if f.hours & (1 << h) != 0 {
            if f.minutes & (1 << m) != 0 {
                if let Some(s2) = next_bit64(f.seconds, s) {
                    return Some(h * 3600 + m * 60 + s2);
                }
            }
            if let Some(m2) = next_bit64(f.minutes, m + 1) {
                return Some(h * 3600 + m2 * 60 + first_second);
            }
        }
        let h2 = next_bit32(f.hours, h + 1)?;
        Some(h2 * 3600 + (self.first_tod / 60 % 60) * 60 + first_second)
    }

    /// How many matching times of day lie strictly before `sod`.
    fn tod_count_before(&self, sod: u32) -> u64 {
        let f = &self.fields;
        let (h, m, s) = (sod / 3600, sod / 60 % 60, sod % 60);
        let mut n = u64::from((f.hours & below64(h) as u32).count_ones()) * self.per_hour;
        if f.hours & (1 << h) != 0 {
            n += u64::from((f.minutes & below64(m)).count_ones()) * self.seconds_count;
            if f.minutes & (1 << m) != 0 {
                n += u64::from((f.seconds & below64(s)).count_ones());
            }
        }
        n
    }

    /// The first matching local second at or after `local`, if any before year 10000.
    pub(super) fn next_local(&self, local: i64) -> Option<i64> {
        if !self.can_match || local >= LOCAL_END {
            return None;
        }
        let local = local.max(LOCAL_MIN);
        let day = local.div_euclid(DAY);
        let sod = local.rem_euclid(DAY) as u32;
        if self.date_matches(day) {
            if let Some(tod) = self.next_tod(sod) {
                return Some(day * DAY + i64::from(tod));
            }
        }
        let next = self.next_date(day + 1, LOCAL_END / DAY)?;
        Some(next * DAY + i64::from(self.first_tod))
    }

    /// Whether the local second `local` itself matches.
    pub(super) fn matches(&self, local: i64) -> bool {
        self.next_local(local) == Some(local)
    }

    /// The number of matching local seconds in `[lo, hi)`.
    pub(super) fn count_local(&self, lo: i64, hi: i64) -> u64 {
        let (lo, hi) = (lo.max(LOCAL_MIN), hi.min(LOCAL_END));
        if !self.can_match || lo >= hi {
            return 0;
        }
        let (d0, s0) = (lo.div_euclid(DAY), lo.rem_euclid(DAY) as u32);
        let (d1, s1) = (hi.div_euclid(DAY), hi.rem_euclid(DAY) as u32);
        if d0 == d1 {
            return if self.date_matches(d0) {
                self.tod_count_before(s1) - self.tod_count_before(s0)
            } else {
                0
            };
        }
        let mut n = 0;
        if self.date_matches(d0) {
            n += self.per_day - self.tod_count_before(s0);
        }
        n += self.count_dates(d0 + 1, d1) * self.per_day;
        if s1 > 0 && self.date_matches(d1) {
            n += self.tod_count_before(s1);
        }
        n
    }

    /// The number of matching day numbers in `[from, until)`, one mask per month.
    fn count_dates(&self, from: i64, until: i64) -> u64 {
        if from >= until {
            return 0;
        }
        match self.dates {
            Dates::Every => return (until - from) as u64,
            Dates::Weekdays => {
                let days = until - from;
                let per_week = u64::from(self.fields.weekdays.count_ones());
                let rest = (from + days / 7 * 7..until)
                    .filter(|&d| self.date_matches(d))
                    .count() as u64;
                return (days / 7) as u64 * per_week + rest;
            }
            Dates::ByMonth => {}
        }
        let (mut year, mut month, first_day) = civil_from_days(from);
        let mut min_day = first_day;
        let mut n = 0u64;
        loop {
            let month_start = days_from_civil(year, month, 1);
            if month_start >= until {
                return n;
            }
            if self.month_in_set(month) {
                let mut mask = self.day_mask(year, month, month_start) & !(below64(min_day) as u32);
                let end_day = until - month_start + 1; // first excluded day of this month
                if end_day <= 31 {
                    mask &= below64(end_day as u32) as u32;
                }
                n += u64::from(mask.count_ones());
            }
            min_day = 1;
            month += 1;
            if month > 12 {
                month = 1;
                year += 1;
            }
        }
    }
}
