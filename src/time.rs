//! Instants and spans as plain integers, so the core's arithmetic is exact, cheap and
//! serializes as a number; chrono appears only at the edges (parsing and printing).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An instant in UTC, in milliseconds since the Unix epoch.
///
/// Every `i64` is a valid `Timestamp`; conversions to calendar time exist only for the
/// range chrono can print (about ±262,000 years) and say so with an `Option`.
///
/// # Examples
///
/// ```
/// use duetime::{Duration, Timestamp};
///
/// let t: Timestamp = "2025-03-09T02:30:00-05:00".parse()?; // RFC 3339, any offset
/// assert_eq!(t.to_string(), "2025-03-09T07:30:00Z"); // printed in UTC
/// assert_eq!(t.saturating_add(Duration::from_mins(90)), "2025-03-09T09:00:00Z".parse()?);
/// assert!("9 March".parse::<Timestamp>().is_err());
/// # Ok::<(), duetime::TimeParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Timestamp(i64);

/// A non-negative span of time in milliseconds. Spans that may be negative (a clock that
/// jumped back) are expressed as two `Timestamp`s, never as a negative `Duration`.
///
/// # Examples
///
/// ```
/// use duetime::Duration;
///
/// let d: Duration = "1h30m".parse()?; // units d h m s ms, largest first
/// assert_eq!(d, Duration::from_mins(90));
/// assert_eq!(d.to_string(), "1h30m");
/// assert_eq!("250ms".parse::<Duration>()?.as_millis(), 250);
/// assert!("-5m".parse::<Duration>().is_err()); // never negative
/// # Ok::<(), duetime::TimeParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Duration(u64);

impl Timestamp {
    /// The earliest instant.
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The latest instant.
    pub const MAX: Timestamp = Timestamp(i64::MAX);
    /// 1970-01-01T00:00:00Z.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// Milliseconds since the epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// Whole seconds since the epoch; saturates at the ends of the range.
    pub const fn from_secs(secs: i64) -> Self {
        Timestamp(secs.saturating_mul(1000))
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Seconds since the epoch, rounded toward the past (so -0.5 s is -1 s).
    pub const fn as_secs_floor(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// `self + d`, stopping at `MAX`.
    pub const fn saturating_add(self, d: Duration) -> Self {
        let ms = if d.0 > i64::MAX as u64 {
            i64::MAX
        } else {
            d.0 as i64
        };
        Timestamp(self.0.saturating_add(ms))
    }

    /// `self - d`, stopping at `MIN`.
    pub const fn saturating_sub(self, d: Duration) -> Self {
        let ms = if d.0 > i64::MAX as u64 {
            i64::MAX
        } else {
            d.0 as i64
        };
        Timestamp(self.0.saturating_sub(ms))
    }

    /// `self + d`, or `None` past `MAX`.
    pub fn checked_add(self, d: Duration) -> Option<Self> {
        i64::try_from(d.0)
            .ok()
            .and_then(|ms| self.0.checked_add(ms))
            .map(Timestamp)
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is not earlier.
    pub const fn saturating_since(self, earlier: Timestamp) -> Duration {
        if self.0 <= earlier.0 {
            Duration(0)
        } else {
            Duration(self.0.abs_diff(earlier.0))
        }
    }

    /// The calendar form, for printing and for the edges that speak chrono.
    pub fn to_chrono(self) -> Option<chrono::DateTime<chrono::Utc>> {
        chrono::DateTime::from_timestamp_millis(self.0)
    }

    /// The instant of a chrono date-time in any zone.
    pub fn from_chrono<Tz: chrono::TimeZone>(t: &chrono::DateTime<Tz>) -> Self {
        Timestamp(t.timestamp_millis())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// RFC 3339 in UTC (`2025-03-09T07:00:00Z`, with milliseconds only when present); an
/// instant beyond chrono's range prints as `@<ms>ms` so that printing never fails.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_chrono() {
            Some(t) if self.0.rem_euclid(1000) == 0 => {
                write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%SZ"))
            }
            Some(t) => write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%S%.3fZ")),
            None => write!(f, "@{}ms", self.0),
        }
    }
}

/// Why a text is not a `Timestamp` or a `Duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeParseError {
    /// The text refused.
    pub text: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl fmt::Display for TimeParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not {}", self.text, self.expected)
    }
}

impl std::error::Error for TimeParseError {}

/// Accepts RFC 3339 with an offset (`2025-03-09T02:30:00-05:00`, `...Z`).
impl FromStr for Timestamp {
    type Err = TimeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        chrono::DateTime::parse_from_rfc3339(s.trim())
            .map(|t| Timestamp::from_chrono(&t))
            .map_err(|_| TimeParseError {
                text: s.to_string(),
                expected: "an RFC 3339 instant such as `2025-03-09T07:00:00Z`",
            })
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// Milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms)
    }
    /// Seconds (saturating).
    pub const fn from_secs(s: u64) -> Self {
        Duration(s.saturating_mul(1000))
    }
    /// Minutes (saturating).
    pub const fn from_mins(m: u64) -> Self {
        Duration(m.saturating_mul(60_000))
    }
    /// Hours (saturating).
    pub const fn from_hours(h: u64) -> Self {
        Duration(h.saturating_mul(3_600_000))
    }
    /// Days of 24 hours (saturating).
    pub const fn from_days(d: u64) -> Self {
        Duration(d.saturating_mul(86_400_000))
    }
    /// In milliseconds.
    pub const fn as_millis(self) -> u64 {
        self.0
    }
    /// Whether it is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self + o`, stopping at `MAX`.
    pub const fn saturating_add(self, o: Duration) -> Self {
        Duration(self.0.saturating_add(o.0))
    }
    /// `self - o`, stopping at zero.
    pub const fn saturating_sub(self, o: Duration) -> Self {
        Duration(self.0.saturating_sub(o.0))
    }
    /// `self * k`, stopping at `MAX`.
    pub const fn saturating_mul(self, k: u64) -> Self {
        Duration(self.0.saturating_mul(k))
    }
}

impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Compact human form, largest units first: `1h30m`, `90ms`, `0s`.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let mut rest = self.0;
        for (unit, ms) in UNITS {
            if rest >= ms {
                write!(f, "{}{}", rest / ms, unit)?;
                rest %= ms;
            }
        }
        Ok(())
    }
}

/// Accepts what `Display` prints: one or more `<number><unit>` pairs with units `d h m s ms`
/// (`30s`, `10m`, `1h30m`, `250ms`).
impl FromStr for Duration {
    type Err = TimeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || TimeParseError {
            text: s.to_string(),
            expected: "a duration such as `30s`, `10m`, `1h30m`, `2d` or `250ms`",
        };
        let text = s.trim();
        if text.is_empty() {
            return Err(err());
        }
        let mut total: u64 = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(err());
            }
            let n: u64 = rest[..digits].parse().map_err(|_| err())?;
            rest = &rest[digits..];
            let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            let unit = &rest[..unit_len];
            rest = &rest[unit_len..];
            let ms = UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map(|(_, ms)| *ms)
                .ok_or_else(err)?;
            total = n
                .checked_mul(ms)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(err)?;
        }
        Ok(Duration(total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_and_parse_back() {
        for text in ["0s", "250ms", "30s", "10m", "1h30m", "2d", "1d2h3m4s5ms"] {
            let d: Duration = text.parse().unwrap();
            assert_eq!(d.to_string(), text);
        }
        assert_eq!("90s".parse::<Duration>().unwrap(), Duration::from_secs(90));
        assert!("".parse::<Duration>().is_err());
        assert!("10".parse::<Duration>().is_err());
        assert!("10y".parse::<Duration>().is_err());
        assert!("-5s".parse::<Duration>().is_err());
        assert!("99999999999999999999d".parse::<Duration>().is_err());
    }

    #[test]
    fn timestamps_print_in_utc_and_saturate_at_the_edges() {
        let t: Timestamp = "2025-03-09T02:30:00-05:00".parse().unwrap();
        assert_eq!(t.to_string(), "2025-03-09T07:30:00Z");
        assert_eq!(
            Timestamp::from_millis(1).to_string(),
            "1970-01-01T00:00:00.001Z"
        );
        assert_eq!(Timestamp::MAX.saturating_add(Duration::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::MIN.saturating_sub(Duration::MAX), Timestamp::MIN);
        assert!(Timestamp::MAX.to_string().starts_with('@'));
        assert_eq!(Timestamp::from_millis(-1).as_secs_floor(), -1);
        assert_eq!(
            Timestamp::from_secs(10).saturating_since(Timestamp::from_secs(20)),
            Duration::ZERO
        );
    }

    #[test]
    fn a_checked_sum_is_none_only_past_the_end() {
        let t = Timestamp::from_secs(10);
        assert_eq!(
            t.checked_add(Duration::from_secs(5)),
            Some(Timestamp::from_secs(15))
        );
        let last_ms = Timestamp::from_millis(i64::MAX - 1);
        assert_eq!(
            last_ms.checked_add(Duration::from_millis(1)),
            Some(Timestamp::MAX)
        );
        assert_eq!(last_ms.checked_add(Duration::from_millis(2)), None);
        assert_eq!(t.checked_add(Duration::MAX), None, "more than i64 holds");
    }
}
