//! Due times computed without the core's schedule code: cron specs are kept as plain sets
//! (never parsed by the core's parser) and evaluated minute by minute in UTC through
//! chrono-tz (a matching minute yields its matching seconds), applying cron's
//! daylight-saving rules from their definition. Slow and obviously right is the point: a
//! bug in the core's bit sets or zone tables cannot hide behind the same bug here.

use chrono::{Datelike, LocalResult, TimeZone, Timelike};
use chrono_tz::Tz;

mod calendar;

pub use calendar::{parse_span, CalendarSpec, DateSet, RollTo};

/// A cron expression as sorted sets, with the text the core is given.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CronSpec {
    /// The seconds of a matching minute that are due: `[0]` for five-field text (and in
    /// regression files written before six-field worlds).
    #[serde(default = "whole_minutes")]
    pub seconds: Vec<u32>,
    pub minutes: Vec<u32>,
    pub hours: Vec<u32>,
    pub days: Vec<u32>,
    pub months: Vec<u32>,
    pub weekdays: Vec<u32>,
    /// The day-of-month / day-of-week text begins with `*` (cron's OR rule is off).
    pub dom_star: bool,
    pub dow_star: bool,
    /// `L` in day-of-month: the month's last day matches too.
    #[serde(default)]
    pub last_day: bool,
    /// `wL` in day-of-week: the last weekday `w` of the month.
    #[serde(default)]
    pub last_weekdays: Vec<u32>,
    /// `w#n` in day-of-week: `(w, n)`, the n-th weekday `w` of the month.
    #[serde(default)]
    pub nth_weekdays: Vec<(u32, u32)>,
    #[serde(with = "tz_name")]
    pub tz: Tz,
    pub text: String,
    /// The daylight-saving rule the schedule chose explicitly; `None` is cron's default for
    /// its text (`CronSpec::dst_rule`).
    #[serde(default)]
    pub dst: Option<DstRule>,
}

/// What a cron schedule does at daylight-saving changes, as docs/schedules.md states it:
/// the oracle's own words for the rule, not the core's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DstRule {
    /// Matching local times a spring-forward gap swallows fire once, at the first instant
    /// after it (`run_at_gap_end`); else they do not fire (`skip`).
    pub gap_at_end: bool,
    /// Which passes of a local time shown twice at fall-back fire.
    pub fold: FoldPass,
}

/// The passes of a repeated local time that fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldPass {
    First,
    Last,
    Both,
}

impl DstRule {
    /// cron's rule for fixed-time schedules: a swallowed time at the gap's end, a repeated
    /// one once, at its first pass.
    pub const FIXED_TIME: DstRule = DstRule {
        gap_at_end: true,
        fold: FoldPass::First,
    };
    /// cron's rule for the others: real elapsed time.
    pub const ELAPSED: DstRule = DstRule {
        gap_at_end: false,
        fold: FoldPass::Both,
    };

    /// Whether the pass at UTC second `u` of a local time shown at `first` and `second`
    /// fires.
    fn fires(self, u: i64, first: i64, second: i64) -> bool {
        match self.fold {
            FoldPass::First => u == first,
            FoldPass::Last => u == second,
            FoldPass::Both => true,
        }
    }
}

/// What the oracle knows of a schedule.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Spec {
    /// Boxed: a cron spec is many sets, the other kinds two numbers.
    Cron(Box<CronSpec>),
    Every {
        period_ms: i64,
        offset_ms: i64,
    },
    At {
        at_ms: i64,
    },
    /// Boxed: a base spec and calendars.
    Calendar(Box<CalendarSpec>),
}

/// One due time and whether a daylight-saving rule shaped it (for coverage probes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub at: i64,
    pub gap: bool,
    pub fold: bool,
}

/// Five-field cron: second 0 of each matching minute.
fn whole_minutes() -> Vec<u32> {
    vec![0]
}

/// A cron spec's sets as bit masks (bit v set when v is in the set).
struct Masks {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// cron's OR rule: neither day field begins with `*`.
    or_days: bool,
    last_day: bool,
    last_weekdays: u64,
    /// Bit `(n - 1) * 7 + w`: the n-th weekday `w` of the month.
    nth_weekdays: u64,
}

impl Masks {
    fn matches(&self, l: &chrono::NaiveDateTime) -> bool {
        self.minutes >> l.minute() & 1 == 1 && self.hour_matches(l)
    }

    /// Whether the local hour of `l` (its month, day and hour) can hold a match.
    fn hour_matches(&self, l: &chrono::NaiveDateTime) -> bool {
        let has = |mask: u64, v: u32| mask >> v & 1 == 1;
        has(self.hours, l.hour()) && self.date_matches(l.date())
    }

    /// Whether local date `d` can hold a due time: its month, and its day by cron's day
    /// rule (the day-of-month field with `L`, the day-of-week field with `wL` and `w#n`;
    /// AND when either field begins with `*`, else OR).
    #[inline]
    fn date_matches(&self, d: chrono::NaiveDate) -> bool {
        let has = |mask: u64, v: u32| mask >> v & 1 == 1;
        let (day, weekday) = (d.day(), d.weekday().num_days_from_sunday());
        let mut dom = has(self.days, day);
        let mut dow = has(self.weekdays, weekday);
        if self.last_day || self.last_weekdays != 0 {
            let last = last_day_of_month(d);
            dom |= self.last_day && day == last;
            dow |= has(self.last_weekdays, weekday) && day + 7 > last;
        }
        if self.nth_weekdays != 0 {
            dow |= has(self.nth_weekdays, (day - 1) / 7 * 7 + weekday);
        }
        let day_ok = if self.or_days { dom || dow } else { dom && dow };
        has(self.months, d.month()) && day_ok
    }
}

/// The first UTC day, from day `d` (days since 1970-01-01) on, whose local times can fall
/// on a date that `m` lets hold a due time. A zone's offset is less than a day either way,
/// so the local times of UTC day `d` fall on the dates `d - 1`, `d` and `d + 1`; a day none
/// of whose three dates can hold a match has no matching local minute, and no
/// daylight-saving gap within it can have swallowed one (a gap's local times are among
/// them too). Asks only the calendar, never the zone.
fn next_day_with_dates(m: &Masks, d: i64) -> i64 {
    let date = |d: i64| {
        chrono::DateTime::from_timestamp(d * 86_400, 0)
            .expect("in range")
            .date_naive()
    };
    let mut before = m.date_matches(date(d - 1));
    let mut on = m.date_matches(date(d));
    let mut day = d;
    // (A bound on the search: a spec no date matches is passed over a year at a time.)
    while day < d + 366 {
        let after = m.date_matches(date(day + 1));
        if before || on || after {
            return day;
        }
        (before, on) = (on, after);
        day += 1;
    }
    day
}

/// The last day of `d`'s month, by asking chrono which of 28-31 exist (the core's own
/// calendar arithmetic is not consulted).
fn last_day_of_month(d: chrono::NaiveDate) -> u32 {
    (28..=31)
        .rev()
        .find(|&n| d.with_day(n).is_some())
        .expect("every month has 28 days")
}

impl CronSpec {
    /// The text the core is given: the five fields, behind a seconds field (the list of
    /// `seconds`) when it yields seconds other than 0 alone.
    pub fn core_text(&self) -> String {
        if self.seconds == [0] {
            return self.text.clone();
        }
        let list: Vec<String> = self.seconds.iter().map(u32::to_string).collect();
        format!("{} {}", list.join(","), self.text)
    }

    /// cronie's "fixed-time": neither minute nor hour text begins with `*` (a seconds
    /// field does not count: `text` is the five fields after it).
    pub fn fixed_time(&self) -> bool {
        let minute_text = self.text.split_whitespace().next().unwrap_or("*");
        let hour_text = self.text.split_whitespace().nth(1).unwrap_or("*");
        !minute_text.starts_with('*') && !hour_text.starts_with('*')
    }

    /// The daylight-saving rule in force: the one chosen, else cron's for the text.
    pub fn dst_rule(&self) -> DstRule {
        self.dst.unwrap_or(if self.fixed_time() {
            DstRule::FIXED_TIME
        } else {
            DstRule::ELAPSED
        })
    }

    /// The sets as bit masks, for the minute-by-minute walk.
    fn masks(&self) -> Masks {
        let mask = |set: &[u32]| set.iter().fold(0u64, |m, &v| m | 1u64 << (v & 63));
        Masks {
            seconds: mask(&self.seconds),
            minutes: mask(&self.minutes),
            hours: mask(&self.hours),
            days: mask(&self.days),
            months: mask(&self.months),
            weekdays: mask(&self.weekdays),
            or_days: !(self.dom_star || self.dow_star),
            last_day: self.last_day,
            last_weekdays: mask(&self.last_weekdays),
            nth_weekdays: self
                .nth_weekdays
                .iter()
                .fold(0u64, |m, &(w, n)| m | 1u64 << ((n - 1) * 7 + w)),
        }
    }

    /// Whether a local date can hold a due time (see `Masks::date_matches`), the sets made
    /// into masks once for the many dates asked about.
    pub fn date_rule(&self) -> impl Fn(chrono::NaiveDate) -> bool {
        let masks = self.masks();
        move |d| masks.date_matches(d)
    }

    /// The local time at UTC second `utc_s`.
    pub(crate) fn local(&self, utc_s: i64) -> chrono::NaiveDateTime {
        let t = chrono::DateTime::from_timestamp(utc_s, 0).expect("in range");
        self.tz.from_utc_datetime(&t.naive_utc()).naive_local()
    }

    fn offset(&self, utc_s: i64) -> i64 {
        let local = self.local(utc_s);
        local.and_utc().timestamp() - utc_s
    }

    /// The offset throughout UTC hour `h` if it has one, asking chrono-tz once per hour:
    /// zones change offset at most a few times a year, never twice within an hour, so an
    /// hour that starts and ends on one offset has it throughout.
    fn uniform_offset(&self, h: i64, hour: &mut Option<(i64, Option<i64>)>) -> Option<i64> {
        match *hour {
            Some((cached, uniform)) if cached == h => uniform,
            _ => {
                let (a, b) = (self.offset(h * 3600), self.offset(h * 3600 + 3599));
                let uniform = (a == b).then_some(a);
                *hour = Some((h, uniform));
                uniform
            }
        }
    }

    /// The local time at `utc_s` (see `uniform_offset`); the date of the local day asked
    /// about last is kept in `day`, as within a day only the time of day changes.
    fn local_fast(
        &self,
        utc_s: i64,
        hour: &mut Option<(i64, Option<i64>)>,
        day: &mut Option<(i64, chrono::NaiveDate)>,
    ) -> chrono::NaiveDateTime {
        match self.uniform_offset(utc_s.div_euclid(3600), hour) {
            Some(offset) => {
                let s = utc_s + offset;
                let (d, time_of_day) = (s.div_euclid(86_400), s.rem_euclid(86_400) as u32);
                let date = match *day {
                    Some((cached, date)) if cached == d => date,
                    _ => {
                        let date = chrono::DateTime::from_timestamp(d * 86_400, 0)
                            .expect("in range")
                            .date_naive();
                        *day = Some((d, date));
                        date
                    }
                };
                date.and_time(
                    chrono::NaiveTime::from_num_seconds_from_midnight_opt(time_of_day, 0)
                        .expect("within a day"),
                )
            }
            None => self.local(utc_s),
        }
    }

    /// The local time at `utc_s` (see `uniform_offset`): the walk before it kept dates.
    #[cfg(test)]
    fn local_cached(
        &self,
        utc_s: i64,
        hour: &mut Option<(i64, Option<i64>)>,
    ) -> chrono::NaiveDateTime {
        match self.uniform_offset(utc_s.div_euclid(3600), hour) {
            Some(offset) => chrono::DateTime::from_timestamp(utc_s + offset, 0)
                .expect("in range")
                .naive_utc(),
            None => self.local(utc_s),
        }
    }

    /// Whether no local time of the uniform UTC hour `h` (offset `offset`) occurs twice.
    /// A repeated stretch of local time follows a change back; an hour on one offset that
    /// holds part of one holds its last minute (the change comes after it) or its first
    /// (the change came before), so asking chrono-tz about those two minutes answers for
    /// the hour.
    fn fold_free(&self, h: i64, offset: i64) -> bool {
        let single = |utc_s: i64| {
            let l = chrono::DateTime::from_timestamp(utc_s + offset, 0)
                .expect("in range")
                .naive_utc();
            matches!(self.tz.from_local_datetime(&l), LocalResult::Single(_))
        };
        single(h * 3600) && single(h * 3600 + 3540)
    }

    /// Whether the matching local minute `l` (at UTC minute `u`) fires under `rule`: `None`
    /// when it is a pass of a repeated local time the rule leaves out, else whether it is
    /// a pass of a repeated one at all.
    fn pass_fires(&self, rule: DstRule, u: i64, l: &chrono::NaiveDateTime) -> Option<bool> {
        match self.tz.from_local_datetime(l) {
            LocalResult::Ambiguous(first, second) => rule
                .fires(u, first.timestamp(), second.timestamp())
                .then_some(true),
            _ => Some(false),
        }
    }

    /// The due times of UTC minute `u` (local minute `l`) within `window` (`(after,
    /// until]`, milliseconds): its matching seconds when the minute fires (`fires`, as
    /// `pass_fires` answers), and before them, when a spring-forward gap has just ended
    /// (`offset_grew`) and swallowed a matching minute, the gap's own due time at the
    /// minute's first second, under a rule that runs it there; unless second 0 is due
    /// anyway, which the gap's due time is then one with.
    fn push_minute(
        &self,
        m: &Masks,
        (u, l): (i64, chrono::NaiveDateTime),
        offset_grew: bool,
        fires: Option<bool>,
        (after, until): (i64, i64),
        out: &mut Vec<Due>,
    ) {
        let mut push = |at: i64, gap: bool, fold: bool| {
            if after < at && at <= until {
                out.push(Due { at, gap, fold });
            }
        };
        let second_zero_due = fires.is_some() && m.seconds & 1 == 1;
        if !second_zero_due && offset_grew && self.dst_rule().gap_at_end {
            // Matching local times inside the gap all fire now, once.
            let mut gl = self.local(u - 60) + chrono::Duration::minutes(1);
            while gl < l {
                if m.matches(&gl) {
                    push(u * 1000, true, false);
                    break;
                }
                gl += chrono::Duration::minutes(1);
            }
        }
        let Some(fold) = fires else { return };
        let mut seconds = m.seconds;
        while seconds != 0 {
            let s = i64::from(seconds.trailing_zeros());
            seconds &= seconds - 1;
            push((u + s) * 1000, false, fold);
        }
    }

    /// Due times in `(after, until]` (milliseconds), by walking UTC minutes. Within a UTC
    /// hour on one offset, the minutes after the first are passed over when neither local
    /// hour they fall in (its month, day and hour) can match, and otherwise up to the next
    /// one whose local minute is in the set: none of those passed over could match, and
    /// the offset does not change among them, so no daylight-saving gap ends there either.
    fn due_in(&self, after: i64, until: i64, out: &mut Vec<Due>) {
        let rule = self.dst_rule();
        let m = self.masks();
        // The minute holding `after`: its later seconds may be due.
        let mut u = after.div_euclid(60_000) * 60;
        let end = until.div_euclid(1000);
        let window = (after, until);
        let mut prev_offset = self.offset(u - 60);
        let mut hour = None;
        // The uniform hour last asked about folds, and the answer.
        let mut folds: Option<(i64, bool)> = None;
        let mut looked_ahead = i64::MIN;
        let mut day = None;
        let mut dates_looked = i64::MIN;
        while u <= end {
            let d = u.div_euclid(86_400);
            if d != dates_looked {
                dates_looked = d;
                let next = next_day_with_dates(&m, d);
                if next > d {
                    // No local minute of these UTC days can match, nor end a gap that
                    // swallowed a match: on to the next day that might.
                    dates_looked = next;
                    u = next * 86_400;
                    if u > end {
                        break;
                    }
                    prev_offset = self.offset(u - 60);
                }
            }
            let l = self.local_fast(u, &mut hour, &mut day);
            let offset = l.and_utc().timestamp() - u;
            let h = u.div_euclid(3600);
            let uniform = matches!(hour, Some((c, Some(_))) if c == h);
            // Whether this minute's matching seconds fire, and if so whether they are a
            // pass of a repeated local time.
            let mut fires = None;
            if m.matches(&l) {
                let fold_free = uniform
                    && match folds {
                        Some((c, free)) if c == h => free,
                        _ => {
                            let free = self.fold_free(h, offset);
                            folds = Some((h, free));
                            free
                        }
                    };
                fires = if fold_free {
                    Some(false)
                } else {
                    self.pass_fires(rule, u, &l)
                };
            }
            self.push_minute(&m, (u, l), offset > prev_offset, fires, window, out);
            prev_offset = offset;
            u += 60;
            if uniform && looked_ahead != h && u < (h + 1) * 3600 {
                // The rest of this hour: from `u` to its last minute, under an hour of
                // local time, so within at most two local hours.
                looked_ahead = h;
                let local = |utc_s: i64| {
                    chrono::DateTime::from_timestamp(utc_s + offset, 0)
                        .expect("in range")
                        .naive_utc()
                };
                if !m.hour_matches(&local(u)) && !m.hour_matches(&local(h * 3600 + 3540)) {
                    u = (h + 1) * 3600;
                }
            }
            if uniform && u < (h + 1) * 3600 {
                // Within the hour, on to the next minute whose local minute is in the
                // set: those before it cannot match, and no gap ends among them.
                let minute = (u + offset).div_euclid(60).rem_euclid(60) as u32;
                let wait = match m.minutes >> minute {
                    0 => 60 - minute + m.minutes.trailing_zeros(),
                    ahead => ahead.trailing_zeros(),
                };
                u = (u + i64::from(wait) * 60).min((h + 1) * 3600);
            }
        }
    }

    /// The walk before it passed over hours (every minute, a zone lookup for every match),
    /// kept to check the faster walk against.
    #[cfg(test)]
    pub(crate) fn due_in_every_minute(&self, after: i64, until: i64) -> Vec<Due> {
        let mut out = Vec::new();
        let rule = self.dst_rule();
        let m = self.masks();
        // The minute holding `after`: its later seconds may be due.
        let mut u = after.div_euclid(60_000) * 60;
        let end = until.div_euclid(1000);
        let window = (after, until);
        let mut prev_offset = self.offset(u - 60);
        let mut hour = None;
        while u <= end {
            let l = self.local_cached(u, &mut hour);
            let offset = l.and_utc().timestamp() - u;
            let fires = if m.matches(&l) {
                self.pass_fires(rule, u, &l)
            } else {
                None
            };
            self.push_minute(&m, (u, l), offset > prev_offset, fires, window, &mut out);
            prev_offset = offset;
            u += 60;
        }
        out
    }
}

impl Spec {
    /// Due times in `(after, until]`, ascending.
    pub fn due_in(&self, after: i64, until: i64) -> Vec<Due> {
        let mut out = Vec::new();
        if until <= after {
            return out;
        }
        match self {
            Spec::Cron(c) => c.due_in(after, until, &mut out),
            Spec::Every {
                period_ms,
                offset_ms,
            } => {
                let (p, o) = (*period_ms, offset_ms.rem_euclid(*period_ms));
                let mut k = (after - o).div_euclid(p) + 1;
                while o + k * p <= until {
                    out.push(Due {
                        at: o + k * p,
                        gap: false,
                        fold: false,
                    });
                    k += 1;
                }
            }
            Spec::Calendar(c) => c.due_in(after, until, &mut out),
            Spec::At { at_ms } => {
                if after < *at_ms && *at_ms <= until {
                    out.push(Due {
                        at: *at_ms,
                        gap: false,
                        fold: false,
                    });
                }
            }
        }
        out
    }
}

/// Zones travel in regression files by IANA name.
mod tz_name {
    use chrono_tz::Tz;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(tz: &Tz, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(tz.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Tz, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|_| serde::de::Error::custom(format!("unknown zone `{name}`")))
    }
}
