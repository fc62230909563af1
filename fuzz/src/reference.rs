//! Slow references, independent of duetime's internals: cron due times found by walking UTC
//! seconds and asking chrono-tz for each one's local time, and `every` grids by plain
//! arithmetic. They only have to be obviously right on a short window.

use chrono::{
    DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike,
};
use chrono_tz::Tz;
use duetime::{DstPolicy, Fold, Gap};

use crate::cron_gen::FieldSet;

/// Local years 1 through 9999 (the core's documented range for cron due times), as local
/// seconds since 1970-01-01T00:00:00.
pub const LOCAL_MIN: i64 = -62_135_596_800;
pub const LOCAL_END: i64 = 253_402_300_800;
const DAY: i64 = 86_400;

/// A cron expression as plain sets, read from the generator's items rather than the text.
#[derive(Debug, Clone)]
pub struct RefCron {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    last_day: bool,
    months: u64,
    /// Bits 0-6, Sunday = 0 (7 folded onto 0).
    weekdays: u64,
    last_weekdays: u8,
    nth: Vec<(u32, u32)>,
    /// cronie: when either day field's text begins with `*` or `?`, a day must match both
    /// fields; otherwise either suffices.
    either_day: bool,
    /// cronie's "fixed-time": neither the minute nor the hour text begins with `*`.
    pub fixed_time: bool,
}

impl RefCron {
    pub fn new(
        seconds: u64,
        minutes: &FieldSet,
        hours: &FieldSet,
        dom: (&str, &FieldSet),
        months: &FieldSet,
        dow: (&str, &FieldSet),
        fixed_time: bool,
    ) -> RefCron {
        let starlike = |t: &str| t.starts_with('*') || t.starts_with('?');
        let mut weekdays = dow.1.values & 0x7f;
        if dow.1.values & (1 << 7) != 0 {
            weekdays |= 1;
        }
        RefCron {
            seconds,
            minutes: minutes.values,
            hours: hours.values,
            days: dom.1.values,
            last_day: dom.1.last,
            months: months.values,
            weekdays,
            last_weekdays: dow.1.last_weekdays,
            nth: dow.1.nth.clone(),
            either_day: !starlike(dom.0) && !starlike(dow.0),
            fixed_time,
        }
    }

    /// Exactly one second of the minute matches (so the walk may go minute by minute).
    pub fn single_second(&self) -> Option<i64> {
        (self.seconds.count_ones() == 1).then(|| i64::from(self.seconds.trailing_zeros()))
    }

    /// Whether local second `l` (seconds since 1970-01-01T00:00:00 local) matches the fields.
    pub fn matches(&self, l: i64) -> bool {
        if !(LOCAL_MIN..LOCAL_END).contains(&l) || self.seconds & (1 << l.rem_euclid(60)) == 0 {
            return false;
        }
        let t = naive(l);
        let bit = |set: u64, v: u32| set & (1 << v) != 0;
        if !bit(self.minutes, t.minute())
            || !bit(self.hours, t.hour())
            || !bit(self.months, t.month())
        {
            return false;
        }
        let day = t.day();
        let dim = days_in_month(t.date());
        let wd = t.weekday().num_days_from_sunday();
        let dom = bit(self.days, day) || (self.last_day && day == dim);
        let dow = bit(self.weekdays, wd)
            || (self.last_weekdays & (1 << wd) != 0 && day + 7 > dim)
            || self.nth.contains(&(wd, (day - 1) / 7 + 1));
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// cronie's default policy for this expression.
    pub fn default_policy(&self) -> DstPolicy {
        if self.fixed_time {
            DstPolicy {
                gap: Gap::RunAtGapEnd,
                fold: Fold::First,
            }
        } else {
            DstPolicy {
                gap: Gap::Skip,
                fold: Fold::Both,
            }
        }
    }
}

fn naive(l: i64) -> NaiveDateTime {
    DateTime::from_timestamp(l, 0)
        .expect("local second in years 1-9999")
        .naive_utc()
}

fn days_in_month(d: NaiveDate) -> u32 {
    let (y, m) = (d.year(), d.month());
    let next = if m == 12 {
        NaiveDate::from_ymd_opt(y + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(y, m + 1, 1)
    };
    next.expect("in range").pred_opt().expect("in range").day()
}

/// chrono-tz's offset (local minus UTC, seconds) at UTC second `u`.
pub fn offset(tz: Tz, u: i64) -> i64 {
    let t = DateTime::from_timestamp(u, 0).expect("UTC second in chrono's range");
    i64::from(
        tz.offset_from_utc_datetime(&t.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

/// The UTC seconds at which chrono-tz says local second `l` happens.
fn instants_of_local(tz: Tz, l: i64) -> Vec<i64> {
    match tz.from_local_datetime(&naive(l)) {
        LocalResult::Single(a) => vec![a.timestamp()],
        LocalResult::Ambiguous(a, b) => vec![a.timestamp(), b.timestamp()],
        LocalResult::None => vec![],
    }
}

/// chrono-tz's offsets over UTC seconds `[from, until)` as `(start, offset)` pieces: sampled
/// every hour, each change located to the second by bisection. (Zones change offset weeks
/// apart, so an hourly sample cannot step over a change and back.)
pub fn offsets_in(tz: Tz, from: i64, until: i64) -> Vec<(i64, i64)> {
    let mut pieces = vec![(from, offset(tz, from))];
    let mut t = from;
    while t < until {
        let next = (t + 3600).min(until);
        let current = pieces.last().expect("non-empty").1;
        let off = offset(tz, next);
        if off != current {
            let (mut lo, mut hi) = (t, next);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if offset(tz, mid) == current {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            pieces.push((hi, offset(tz, hi)));
        }
        t = next;
    }
    pieces
}

/// The due seconds `u` in `[from, until)` by the rule in the crate docs: `u`'s local time
/// matches and the fold policy admits this pass of it, or `u` ends a spring-forward gap, the
/// gap policy is run_at_gap_end and some local time inside the gap matches.
pub fn cron_due_in(c: &RefCron, tz: Tz, policy: DstPolicy, from: i64, until: i64) -> Vec<i64> {
    // Outside these bounds no local time is in years 1-9999 (offsets are under a day).
    let from = from.max(LOCAL_MIN - 2 * DAY);
    let until = until.min(LOCAL_END + 2 * DAY);
    let mut due = Vec::new();
    if from >= until {
        return due;
    }
    // One second before the window too, so a gap ending at `from` is seen.
    let pieces = offsets_in(tz, from - 1, until);
    let mut i = 0;
    let mut u = from;
    while u < until {
        while i + 1 < pieces.len() && pieces[i + 1].0 <= u {
            i += 1;
        }
        let off = pieces[i].1;
        let l = u + off;
        let before = if pieces[i].0 == u {
            pieces[i - 1].1
        } else {
            off
        };
        if cron_due_at(c, tz, policy, u, off, before) {
            due.push(u);
        }
        // Minute by minute when one second of the minute matches, but never past an offset
        // change (the second it happens is always visited).
        let step = match c.single_second() {
            Some(s) => match (s - l.rem_euclid(60)).rem_euclid(60) {
                0 => 60,
                d => d,
            },
            None => 1,
        };
        let change = pieces.get(i + 1).map_or(i64::MAX, |p| p.0);
        u = (u + step).min(change);
    }
    due
}

/// Whether UTC second `u` (offset `off`, and `before` one second earlier) is due.
fn cron_due_at(c: &RefCron, tz: Tz, policy: DstPolicy, u: i64, off: i64, before: i64) -> bool {
    let l = u + off;
    if c.matches(l) {
        let admitted = match policy.fold {
            Fold::Both => true,
            Fold::First => instants_of_local(tz, l).iter().all(|&p| p >= u),
            Fold::Last => instants_of_local(tz, l).iter().all(|&p| p <= u),
        };
        if admitted {
            return true;
        }
    }
    // Local times [u - 1 + before + 1, u + off) never happen.
    policy.gap == Gap::RunAtGapEnd && off > before && (u + before..l).any(|g| c.matches(g))
}

/// The first point of the grid `offset + k * period` (k any integer) strictly after `t`, if it
/// is representable.
pub fn every_next(period: u64, offset: u64, t: i64) -> Option<i64> {
    let (p, o, t) = (i128::from(period), i128::from(offset), i128::from(t));
    let mut k = (t - o) / p;
    while o + k * p > t {
        k -= 1;
    }
    while o + (k + 1) * p <= t {
        k += 1;
    }
    i64::try_from(o + (k + 1) * p).ok()
}
