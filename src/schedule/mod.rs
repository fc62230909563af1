//! Schedules: what yields due times. Three kinds, one interface: `next_after` (the first due
//! time strictly after an instant), `count_in` (how many in a range, by arithmetic rather
//! than walking) and `iter_after` (the due times in order).

pub mod civil;
pub mod cron;
pub mod dst;
pub mod zone;

use std::fmt;

use serde::{Deserialize, Serialize};

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
    Every { period: Duration, offset: Duration },
    /// One due time.
    At { instant: Timestamp },
}

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    Cron(CronError),
    ZeroPeriod,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Cron(e) => e.fmt(f),
            ScheduleError::ZeroPeriod => f.write_str(
                "every: the period is zero; a period is at least 1ms, such as `30s` or `1h`",
            ),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl From<CronError> for ScheduleError {
    fn from(e: CronError) -> Self {
        ScheduleError::Cron(e)
    }
}

impl Schedule {
    /// A cron schedule: `expr` in the dialect of cronie (five fields, or six with seconds
    /// first, or a macro), optionally prefixed `CRON_TZ=Zone`; `tz` an IANA name or `None`
    /// for the prefix's zone or UTC.
    pub fn cron(expr: &str, tz: Option<&str>) -> Result<Schedule, ScheduleError> {
        Ok(Schedule::Cron(CronSchedule::parse(expr, tz)?))
    }

    pub fn every(period: Duration, offset: Duration) -> Result<Schedule, ScheduleError> {
        if period.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        Ok(Schedule::Every { period, offset })
    }

    pub fn at(instant: Timestamp) -> Schedule {
        Schedule::At { instant }
    }

    /// The first due time strictly after `t`, or `None` when there is none (a one-shot in
    /// the past, a cron expression that can never match, the end of the representable range).
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Cron(c) => c.next_after(t),
            Schedule::Every { period, offset } => {
                let (p, o) = grid(*period, *offset)?;
                let k = (i128::from(t.as_millis()) - o).div_euclid(p) + 1;
                i64::try_from(o + k * p).ok().map(Timestamp::from_millis)
            }
            Schedule::At { instant } => (*instant > t).then_some(*instant),
        }
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
        }
    }
}

/// `cron: <expr>` / `every <period> [+ <offset>]` / `at <instant>`: for traces and listings.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Cron(c) => write!(f, "cron {c}"),
            Schedule::Every { period, offset } if offset.is_zero() => write!(f, "every {period}"),
            Schedule::Every { period, offset } => write!(f, "every {period} + {offset}"),
            Schedule::At { instant } => write!(f, "at {instant}"),
        }
    }
}

mod cron_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::cron::{CronSchedule, CronSpec};

    pub fn serialize<S: Serializer>(c: &CronSchedule, s: S) -> Result<S::Ok, S::Error> {
        CronSpec::from(c.clone()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CronSchedule, D::Error> {
        let spec = CronSpec::deserialize(d)?;
        CronSchedule::try_from(spec).map_err(serde::de::Error::custom)
    }
}
