//! A calendar's text: dates and ranges as people write them (read with chrono's parser, then
//! held to years 1-9999 and minute precision), and the typed refusals of calendar input.

use std::fmt;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

use super::{LocalMinute, DAY_MINUTES};
use crate::schedule::civil;

/// Why a calendar, or a schedule's use of calendars, was refused. Each says what was found
/// and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalendarError {
    /// A date or local time that does not read (or does not exist, like `2025-02-30`).
    BadDate {
        /// The text, cut at 80 characters.
        text: String,
    },
    /// A range whose end is not after its start.
    EndBeforeStart {
        /// The range as written.
        text: String,
    },
    /// A calendar name of the wrong shape.
    BadName {
        /// The name, cut at 80 characters.
        name: String,
    },
    /// A schedule names a calendar nobody declared.
    Unknown {
        /// The name.
        name: String,
        /// The names declared, sorted.
        known: Vec<String>,
    },
    /// The same calendar named twice in one `exclude`.
    NamedTwice {
        /// The name.
        name: String,
    },
    /// `business_day` of 0 or beyond a month's weekdays.
    BusinessDay {
        /// The number given.
        found: i64,
    },
    /// A calendar schedule over another calendar schedule.
    Nested,
    /// A calendar schedule that excludes nothing and picks no business day.
    Empty,
    /// More spans than `MAX_SPANS` in one calendar.
    TooManySpans {
        /// The calendar.
        calendar: String,
        /// How many it had.
        found: usize,
    },
    /// A yearly span of 365 days or more.
    YearlyTooLong {
        /// The calendar.
        calendar: String,
        /// The span.
        span: String,
    },
}

impl fmt::Display for CalendarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalendarError::BadDate { text } => write!(
                f,
                "calendar: `{text}` is not a date; accepted: `2025-12-25`, `2025-12-24T12:00` \
                 (a local date, years 1-9999, and a time to the minute), or a range of them \
                 `2025-12-24T12:00..2025-12-27`"
            ),
            CalendarError::EndBeforeStart { text } => write!(
                f,
                "calendar: the range `{text}` ends before it starts; accepted: an end after the \
                 start (an end date includes its whole day)"
            ),
            CalendarError::BadName { name } => write!(
                f,
                "calendar: `{name}` is not a calendar name; accepted: a lower-case letter, then \
                 at most 63 of a-z, 0-9 and _"
            ),
            CalendarError::Unknown { name, known } if known.is_empty() => write!(
                f,
                "exclude: no calendar `{name}`; no calendars are declared (add [calendars.{name}])"
            ),
            CalendarError::Unknown { name, known } => write!(
                f,
                "exclude: no calendar `{name}`; accepted: {}",
                known.join(", ")
            ),
            CalendarError::NamedTwice { name } => {
                write!(f, "exclude: calendar `{name}` is named twice")
            }
            CalendarError::BusinessDay { found } => write!(
                f,
                "business_day: {found} is not a business day of a month; accepted: 1 to 23 \
                 (counted from the month's start) or -1 to -23 (from its end)"
            ),
            CalendarError::Nested => f.write_str(
                "calendar schedule: its base is itself a calendar schedule; accepted: a cron, \
                 every or at schedule",
            ),
            CalendarError::Empty => f.write_str(
                "calendar schedule: it excludes no calendar and picks no business day; accepted: \
                 at least one of `exclude` and `business_day`",
            ),
            CalendarError::TooManySpans { calendar, found } => write!(
                f,
                "calendar `{calendar}`: {found} dates; accepted: at most {}",
                super::MAX_SPANS
            ),
            CalendarError::YearlyTooLong { calendar, span } => write!(
                f,
                "calendar `{calendar}`: the yearly range `{span}` lasts a year or more; \
                 accepted: a yearly range shorter than 365 days"
            ),
        }
    }
}

impl std::error::Error for CalendarError {}

/// One end of a range: a date (`whole_day`) or a date and time.
fn parse_mark(text: &str, whole: &str) -> Result<(LocalMinute, bool), CalendarError> {
    let bad = || CalendarError::BadDate {
        text: whole.chars().take(80).collect(),
    };
    let t = text.trim();
    // chrono's `%Y` takes any number of digits and a sign; a calendar date has four.
    if t.len() < 10 || !t.as_bytes()[..4].iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let (date, minute, whole_day) = if t.len() == 10 {
        let d = NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| bad())?;
        (d, 0, true)
    } else {
        let dt = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M").map_err(|_| bad())?;
        (dt.date(), i64::from(dt.hour() * 60 + dt.minute()), false)
    };
    if !(1..=9999).contains(&date.year()) {
        return Err(bad());
    }
    let day = civil::days_from_civil(i64::from(date.year()), date.month(), date.day());
    Ok((LocalMinute(day * DAY_MINUTES + minute), whole_day))
}

/// `[from, until)` of a date or a range (the module doc of `calendar` says what ends mean).
pub(super) fn parse_span(text: &str) -> Result<(LocalMinute, LocalMinute), CalendarError> {
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    };
    let (from, whole_day) = parse_mark(a, text)?;
    let until = match b {
        None if !whole_day => {
            return Err(CalendarError::BadDate {
                text: text.chars().take(80).collect(),
            })
        }
        None => LocalMinute(from.0 + DAY_MINUTES),
        Some(b) => match parse_mark(b, text)? {
            (m, true) => LocalMinute(m.0 + DAY_MINUTES),
            (m, false) => m,
        },
    };
    if until <= from {
        return Err(CalendarError::EndBeforeStart {
            text: text.chars().take(80).collect(),
        });
    }
    Ok((from, until))
}

/// A minute as `2025-12-24T12:00`.
fn mark_text(m: LocalMinute) -> String {
    let (day, minute) = m.split();
    let (y, mo, d) = civil::civil_from_days(day);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}",
        minute / 60,
        minute % 60
    )
}

/// The stored text of `[from, until)`: `2025-12-25` for one whole day, else the range with
/// both ends as minutes (`until` exclusive), which reads back to the same span.
pub(super) fn span_text(from: LocalMinute, until: LocalMinute) -> String {
    let (day, minute) = from.split();
    if minute == 0 && until.0 == from.0 + DAY_MINUTES {
        let (y, m, d) = civil::civil_from_days(day);
        return format!("{y:04}-{m:02}-{d:02}");
    }
    format!("{}..{}", mark_text(from), mark_text(until))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(t: &str) -> String {
        let (a, b) = parse_span(t).unwrap();
        span_text(a, b)
    }

    #[test]
    fn dates_and_ranges_read_and_print_back() {
        assert_eq!(span("2025-12-25"), "2025-12-25");
        assert_eq!(span("2025-12-24..2025-12-24"), "2025-12-24");
        assert_eq!(
            span("2025-12-24T12:00..2025-12-27"),
            "2025-12-24T12:00..2025-12-28T00:00"
        );
        assert_eq!(span("2024-02-29"), "2024-02-29");
        for t in ["2025-12-25", "2025-12-24T12:00..2025-12-27T08:00"] {
            assert_eq!(span(&span(t)), span(t));
        }
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        for t in [
            "2025-02-30",
            "2025-13-01",
            "25-12-25",
            "+2025-12-25",
            "2025-12-25T25:00..2025-12-26",
            "0000-01-01",
            "",
            "2025-12-25..",
            "2025-12-25T12:00",
        ] {
            assert!(parse_span(t).is_err(), "{t}");
        }
        assert!(matches!(
            parse_span("2025-12-27..2025-12-24"),
            Err(CalendarError::EndBeforeStart { .. })
        ));
        assert!(matches!(
            parse_span("2025-12-24T12:00..2025-12-24T12:00"),
            Err(CalendarError::EndBeforeStart { .. })
        ));
    }
}
