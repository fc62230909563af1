//! Schedules: what yields due times. Three kinds, one interface: `next_after` (the first due
//! time strictly after an instant), `count_in` (how many in a range, by arithmetic rather
//! than walking) and `iter_after` (the due times in order).

pub(crate) mod calendar;
pub(crate) mod civil;
pub(crate) mod cron;
pub(crate) mod dst;
pub(crate) mod zone;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use self::calendar::{
    BusinessDay, Calendar, CalendarError, CalendarName, CalendarSchedule, Calendars, Roll, Span,
    MAX_ROLL_DAYS, MAX_SPANS,
};
pub use self::cron::{wide_steps, CronError, CronSchedule, Field, Problem, WideStep};
pub use dst::{DstPolicy, Fold, Gap};
pub use zone::Zone;

use crate::time::{Duration, Timestamp};

/// What yields a job's due times.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// A cron expression in an IANA zone, with a daylight-saving policy.
    Cron(
        #[serde(with = "cron_serde")]
        #[cfg_attr(feature = "schema", schemars(with = "cron::CronSpec"))]
        CronSchedule,
    ),
    /// The fixed grid `epoch + offset + k * period` in absolute time: it never drifts from a
    /// run's end and ignores time zones.
    Every {
        /// The grid's spacing (never zero).
        period: Duration,
        /// Where the grid starts, after the Unix epoch (taken modulo the period).
        offset: Duration,
    },
    /// One due time.
    At {
        /// The due time.
        instant: Timestamp,
    },
    /// A base schedule with calendars excluded and business-day rules (issue 45); boxed, so
    /// the plain kinds stay as small as they were.
    Calendar(
        #[serde(with = "calendar_serde")]
        #[cfg_attr(feature = "schema", schemars(with = "calendar::CalendarScheduleSpec"))]
        Box<CalendarSchedule>,
    ),
}

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    /// The cron expression or its zone was refused.
    Cron(CronError),
    /// An `every` schedule with a zero period, which would be due all the time.
    ZeroPeriod,
    /// A calendar, or a schedule's use of calendars, was refused.
    Calendar(CalendarError),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Cron(e) => e.fmt(f),
            ScheduleError::ZeroPeriod => f.write_str(
                "every: the period is zero; a period is at least 1ms, such as `30s` or `1h`",
            ),
            ScheduleError::Calendar(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl From<CronError> for ScheduleError {
    fn from(e: CronError) -> Self {
        ScheduleError::Cron(e)
    }
}

impl From<CalendarError> for ScheduleError {
    fn from(e: CalendarError) -> Self {
        ScheduleError::Calendar(e)
    }
}

impl Schedule {
    /// `base` with calendars excluded, a business-day rule and a roll
    /// (`CalendarSchedule::new`, whose module doc defines the due times).
    ///
    /// # Errors
    ///
    /// `ScheduleError::Calendar` with `CalendarSchedule::new`'s refusal.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{BusinessDay, Calendar, CalendarName, Roll, Schedule, Span, Timestamp};
    ///
    /// let holidays = Calendar::new(
    ///     CalendarName::new("holidays")?,
    ///     true,
    ///     vec![Span::parse("2025-12-25", Some("Christmas Day"))?],
    /// )?;
    /// let base = Schedule::cron("0 9 * * mon-fri", Some("Europe/London"))?;
    /// let s = Schedule::calendar(base, vec![holidays], None, Roll::Stay)?;
    /// let eve: Timestamp = "2025-12-24T12:00:00Z".parse()?;
    /// assert_eq!(s.next_after(eve), Some("2025-12-26T09:00:00Z".parse()?));
    /// // The last business day of each month, at 09:00.
    /// let base = Schedule::cron("0 9 * * *", Some("Europe/London"))?;
    /// let last = Schedule::calendar(base, vec![], Some(BusinessDay::new(-1)?), Roll::Stay)?;
    /// assert_eq!(last.next_after(eve), Some("2025-12-31T09:00:00Z".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn calendar(
        base: Schedule,
        exclude: Vec<Calendar>,
        business_day: Option<BusinessDay>,
        roll: Roll,
    ) -> Result<Schedule, ScheduleError> {
        let c = CalendarSchedule::new(base, exclude, business_day, roll)?;
        Ok(Schedule::Calendar(Box::new(c)))
    }

    /// The schedule under any calendar: itself for cron, every and at.
    pub fn base(&self) -> &Schedule {
        match self {
            Schedule::Calendar(c) => c.base(),
            other => other,
        }
    }

    /// A cron schedule: `expr` in the dialect of cronie (five fields, or six with seconds
    /// first, or a macro), optionally prefixed `CRON_TZ=Zone`; `tz` an IANA name or `None`
    /// for the prefix's zone or UTC.
    ///
    /// # Errors
    ///
    /// `ScheduleError::Cron` with the parser's `CronError`: which field, what text, what
    /// is accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Schedule, Timestamp};
    ///
    /// // 09:00 on weekdays in Paris (CEST, UTC+2, in June).
    /// let s = Schedule::cron("0 9 * * mon-fri", Some("Europe/Paris"))?;
    /// let friday: Timestamp = "2025-06-06T12:00:00Z".parse()?;
    /// let monday = s.next_after(friday).expect("a due time");
    /// assert_eq!(monday, "2025-06-09T07:00:00Z".parse()?);
    /// assert!(Schedule::cron("0 25 * * *", None).is_err()); // hour 25
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cron(expr: &str, tz: Option<&str>) -> Result<Schedule, ScheduleError> {
        Ok(Schedule::Cron(CronSchedule::parse(expr, tz)?))
    }

    /// A fixed grid, every `period` from `offset` after the Unix epoch, in absolute time: a
    /// cadence that does not drift with run lengths, restarts or daylight saving.
    ///
    /// # Errors
    ///
    /// `ScheduleError::ZeroPeriod` for a zero period.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Duration, Schedule, Timestamp};
    ///
    /// // Every 15 minutes, 5 minutes past the quarter: :05, :20, :35, :50.
    /// let s = Schedule::every(Duration::from_mins(15), Duration::from_mins(5))?;
    /// let t: Timestamp = "2025-06-01T10:07:00Z".parse()?;
    /// assert_eq!(s.next_after(t), Some("2025-06-01T10:20:00Z".parse()?));
    /// assert_eq!(s.count_in(t, "2025-06-01T11:00:00Z".parse()?), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn every(period: Duration, offset: Duration) -> Result<Schedule, ScheduleError> {
        if period.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        Ok(Schedule::Every { period, offset })
    }

    /// One due time at `instant` (a one-shot job): once its instant is settled the job
    /// stays, idle, until it is removed or given a new schedule.
    pub fn at(instant: Timestamp) -> Schedule {
        Schedule::At { instant }
    }

    /// The first due time strictly after `t`, or `None` when there is none (a one-shot in
    /// the past, a cron expression that can never match, the end of the representable range).
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Schedule, Timestamp};
    ///
    /// let t: Timestamp = "2025-06-01T10:00:00Z".parse()?;
    /// let once = Schedule::at(t);
    /// assert_eq!(once.next_after(t.saturating_sub("1s".parse()?)), Some(t));
    /// assert_eq!(once.next_after(t), None); // strictly after: a one-shot is due once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Cron(c) => c.next_after(t),
            Schedule::Every { period, offset } => {
                let (p, o) = grid(*period, *offset)?;
                let k = (i128::from(t.as_millis()) - o).div_euclid(p) + 1;
                i64::try_from(o + k * p).ok().map(Timestamp::from_millis)
            }
            Schedule::At { instant } => (*instant > t).then_some(*instant),
            Schedule::Calendar(c) => c.next_after(t),
        }
    }

    /// Whether `t` is one of its due times.
    pub(crate) fn is_due(&self, t: Timestamp) -> bool {
        self.next_after(t.saturating_sub(crate::time::Duration::from_millis(1))) == Some(t)
    }

    /// The number of due times `d` with `after < d <= until` (zero when `until <= after`).
    pub fn count_in(&self, after: Timestamp, until: Timestamp) -> u64 {
        if until <= after {
            return 0;
        }
        match self {
            Schedule::Cron(c) => c.count_in(after, until),
            Schedule::Every { period, offset } => {
                let Some((p, o)) = grid(*period, *offset) else {
                    return 0;
                };
                let k = |t: Timestamp| (i128::from(t.as_millis()) - o).div_euclid(p);
                (k(until) - k(after)) as u64
            }
            Schedule::At { instant } => u64::from(after < *instant && *instant <= until),
            Schedule::Calendar(c) => c.count_in(after, until),
        }
    }

    /// The due times strictly after `t`, in order.
    pub fn iter_after(&self, t: Timestamp) -> DueTimes<'_> {
        DueTimes {
            schedule: self,
            last: Some(t),
        }
    }
}

/// Period and offset of an `every` grid in `i128` milliseconds, so grid arithmetic cannot
/// overflow; `None` for a zero period (which yields nothing).
fn grid(period: Duration, offset: Duration) -> Option<(i128, i128)> {
    let p = i128::from(period.as_millis());
    (p > 0).then(|| (p, i128::from(offset.as_millis()) % p))
}

/// The due times of a schedule after an instant, in increasing order.
pub struct DueTimes<'a> {
    schedule: &'a Schedule,
    last: Option<Timestamp>,
}

impl Iterator for DueTimes<'_> {
    type Item = Timestamp;
    fn next(&mut self) -> Option<Timestamp> {
        let next = self.schedule.next_after(self.last?);
        self.last = next;
        next
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Cron(c) => c.fmt(f),
            Schedule::Every { period, offset } => write!(f, "Every({period} + {offset})"),
            Schedule::At { instant } => write!(f, "At({instant})"),
            Schedule::Calendar(c) => write!(f, "Calendar({c})"),
        }
    }
}

/// `cron: <expr>` / `every <period> [+ <offset>]` / `at <instant>`: for traces and listings.
/// `cron <text>` (with cronie's `CRON_TZ=` prefix for its zone, and a daylight-saving
/// policy chosen explicitly in brackets: `cron 30 1 * * * (dst gap: skip, fold: last)`,
/// since schedules that differ only in their policy yield different due times and a
/// journal naming them must tell them apart), `every <period>[ + <offset>]`, `at <instant>`.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Cron(c) => match c.explicit_policy() {
                Some(policy) => write!(f, "cron {c} (dst {policy})"),
                None => write!(f, "cron {c}"),
            },
            Schedule::Every { period, offset } if offset.is_zero() => write!(f, "every {period}"),
            Schedule::Every { period, offset } => write!(f, "every {period} + {offset}"),
            Schedule::At { instant } => write!(f, "at {instant}"),
            Schedule::Calendar(c) => c.fmt(f),
        }
    }
}

mod cron_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::cron::{CronSchedule, CronSpec};

    pub(super) fn serialize<S: Serializer>(c: &CronSchedule, s: S) -> Result<S::Ok, S::Error> {
        CronSpec::from(c.clone()).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CronSchedule, D::Error> {
        let spec = CronSpec::deserialize(d)?;
        CronSchedule::try_from(spec).map_err(serde::de::Error::custom)
    }
}

mod calendar_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::calendar::{CalendarSchedule, CalendarScheduleSpec};

    pub(super) fn serialize<S: Serializer>(c: &CalendarSchedule, s: S) -> Result<S::Ok, S::Error> {
        CalendarScheduleSpec::from(c).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Box<CalendarSchedule>, D::Error> {
        let spec = CalendarScheduleSpec::deserialize(d)?;
        CalendarSchedule::try_from(spec)
            .map(Box::new)
            .map_err(serde::de::Error::custom)
    }
}
