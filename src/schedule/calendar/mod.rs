//! Calendars: named sets of local dates and date ranges a schedule excludes (issue 45). A
//! calendar is plain data carried with the schedule that uses it, so the pure core never
//! looks a name up; `Calendars` resolves names where definitions are written (the jobs file).
//!
//! The local-time model: a span is `[from, until)` in local wall-clock minutes. A date alone
//! (`2025-12-25`) is that whole day; a range `A..B` starts at `A` (a date is its 00:00) and
//! ends after `B` when `B` is a date (the whole day `B` included) or at `B` when it carries a
//! time (`2025-12-24T12:00..2025-12-27T08:00` ends at 08:00, exclusive). How local minutes
//! become instants around daylight-saving changes is in `exclusions.rs`.

mod exclusions;
mod memo;
mod rule;
mod text;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub(crate) use exclusions::Exclusions;
pub use rule::{BusinessDay, CalendarSchedule, Roll, MAX_ROLL_DAYS};
pub use text::CalendarError;

use super::civil;

/// Minutes in a civil day.
const DAY_MINUTES: i64 = 24 * 60;

/// The most spans one calendar may hold: a calendar is a list people write, not a table of
/// every minute; the bound keeps each search's cost bounded.
pub const MAX_SPANS: usize = 4096;

/// A calendar's name: a lower-case letter, then at most 63 of `a-z0-9_` (a job name's shape).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "schema", schemars(with = "String"))]
pub struct CalendarName(Arc<str>);

impl CalendarName {
    /// Checks the name's shape.
    ///
    /// # Errors
    ///
    /// `CalendarError::BadName` for anything but a lower-case letter then `a-z0-9_`.
    pub fn new(name: &str) -> Result<CalendarName, CalendarError> {
        let b = name.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 64
            && b[0].is_ascii_lowercase()
            && b[1..]
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_');
        if ok {
            Ok(CalendarName(Arc::from(name)))
        } else {
            Err(CalendarError::BadName {
                name: name.chars().take(80).collect(),
            })
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for CalendarName {
    type Error = CalendarError;
    fn try_from(s: String) -> Result<Self, CalendarError> {
        CalendarName::new(&s)
    }
}

impl From<CalendarName> for String {
    fn from(n: CalendarName) -> String {
        n.0.to_string()
    }
}

impl std::borrow::Borrow<str> for CalendarName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CalendarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CalendarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A local wall-clock minute: minutes since 1970-01-01T00:00 of the local calendar.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub(crate) struct LocalMinute(pub(crate) i64);

impl LocalMinute {
    /// The local date and the minute of that day.
    fn split(self) -> (i64, i64) {
        (
            self.0.div_euclid(DAY_MINUTES),
            self.0.rem_euclid(DAY_MINUTES),
        )
    }

    /// The same wall-clock reading `years` later, or `None` when that date does not exist
    /// (29 February in a year that is not a leap year).
    fn shifted_years(self, years: i64) -> Option<LocalMinute> {
        let (day, minute) = self.split();
        let (y, m, d) = civil::civil_from_days(day);
        let y = y + years;
        if !(1..=9999).contains(&y) || d > civil::days_in_month(y, m) {
            return None;
        }
        Some(LocalMinute(
            civil::days_from_civil(y, m, d) * DAY_MINUTES + minute,
        ))
    }

    /// Its local year.
    fn year(self) -> i64 {
        civil::civil_from_days(self.split().0).0
    }
}

/// One entry of a calendar: local minutes `[from, until)`, with an optional label people see
/// (`New Year's Day`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Span {
    pub(crate) from: LocalMinute,
    pub(crate) until: LocalMinute,
    pub(crate) label: Option<Arc<str>>,
}

impl Span {
    /// Reads `2025-12-25`, `2025-12-24..2025-12-27` or `2025-12-24T12:00..2025-12-27T08:00`
    /// (see the module's doc for what each end means).
    ///
    /// # Errors
    ///
    /// `CalendarError::BadDate` naming the text and the accepted forms;
    /// `CalendarError::EndBeforeStart` when the range is empty or backwards.
    pub fn parse(text: &str, label: Option<&str>) -> Result<Span, CalendarError> {
        let (from, until) = text::parse_span(text)?;
        Ok(Span {
            from,
            until,
            label: label.map(Arc::from),
        })
    }

    /// Its label, if it has one.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }
}

/// `2025-12-25`, `2025-12-24T12:00..2025-12-28T00:00`: the span in the form it is stored.
impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&text::span_text(self.from, self.until))
    }
}

/// A named set of local dates and ranges, recurring every year when `yearly` (each span
/// shifted by whole years; a span on 29 February recurs only in leap years).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Calendar {
    pub(crate) name: CalendarName,
    pub(crate) yearly: bool,
    pub(crate) spans: Vec<Span>,
}

impl Calendar {
    /// A calendar of `spans`, sorted by start (the order they are written in does not matter).
    ///
    /// # Errors
    ///
    /// `CalendarError::TooManySpans` beyond `MAX_SPANS`; `CalendarError::YearlyTooLong` for a
    /// yearly span of a year or more (it would overlap its own next year).
    pub fn new(
        name: CalendarName,
        yearly: bool,
        mut spans: Vec<Span>,
    ) -> Result<Calendar, CalendarError> {
        if spans.len() > MAX_SPANS {
            return Err(CalendarError::TooManySpans {
                calendar: name.to_string(),
                found: spans.len(),
            });
        }
        if yearly {
            if let Some(s) = spans
                .iter()
                .find(|s| s.until.0 - s.from.0 >= 365 * DAY_MINUTES)
            {
                return Err(CalendarError::YearlyTooLong {
                    calendar: name.to_string(),
                    span: s.to_string(),
                });
            }
        }
        spans.sort_by_key(|s| (s.from, s.until));
        Ok(Calendar {
            name,
            yearly,
            spans,
        })
    }

    /// Its name.
    pub fn name(&self) -> &CalendarName {
        &self.name
    }

    /// Whether its spans recur every year.
    pub fn yearly(&self) -> bool {
        self.yearly
    }

    /// Its spans, sorted by start.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The spans (shifted to their year when yearly) that cover local minute `m`, with the
    /// calendar's name: why a due time there is excluded.
    pub fn spans_at(&self, m: i64) -> impl Iterator<Item = &Span> + '_ {
        let at = LocalMinute(m);
        let year = at.year();
        self.spans.iter().filter(move |s| {
            if !self.yearly {
                return s.from <= at && at < s.until;
            }
            (year - 1..=year).any(|y| {
                let k = y - s.from.year();
                matches!((s.from.shifted_years(k), s.until.shifted_years(k)),
                    (Some(f), Some(u)) if f <= at && at < u)
            })
        })
    }
}

/// Calendars by name, as a jobs file declares them: where a definition's `exclude` names are
/// resolved into the data the schedule carries.
#[derive(Clone, Default, Debug)]
pub struct Calendars(BTreeMap<CalendarName, Calendar>);

impl Calendars {
    /// No calendars.
    pub fn new() -> Calendars {
        Calendars::default()
    }

    /// Adds (or replaces) a calendar.
    pub fn insert(&mut self, calendar: Calendar) {
        self.0.insert(calendar.name.clone(), calendar);
    }

    /// The named calendars, in the order named.
    ///
    /// # Errors
    ///
    /// `CalendarError::Unknown` naming the first unknown name and the names declared.
    pub fn resolve(&self, names: &[&str]) -> Result<Vec<Calendar>, CalendarError> {
        names
            .iter()
            .map(|n| {
                self.0
                    .get(*n)
                    .cloned()
                    .ok_or_else(|| CalendarError::Unknown {
                        name: n.chars().take(80).collect(),
                        known: self.0.keys().map(|k| k.to_string()).collect(),
                    })
            })
            .collect()
    }
}

/// The stored form of a calendar: `{"name", "yearly", "dates": [{"span", "label"}]}`.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct CalendarSpec {
    name: CalendarName,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    yearly: bool,
    dates: Vec<SpanSpec>,
}

/// A span's stored form: its text (`2025-12-24T12:00..2025-12-28T00:00`) and label.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct SpanSpec {
    span: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

impl TryFrom<CalendarSpec> for Calendar {
    type Error = CalendarError;
    fn try_from(spec: CalendarSpec) -> Result<Calendar, CalendarError> {
        let spans = spec
            .dates
            .iter()
            .map(|d| Span::parse(&d.span, d.label.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        Calendar::new(spec.name, spec.yearly, spans)
    }
}

impl From<&Calendar> for CalendarSpec {
    fn from(c: &Calendar) -> CalendarSpec {
        CalendarSpec {
            name: c.name.clone(),
            yearly: c.yearly,
            dates: c
                .spans
                .iter()
                .map(|s| SpanSpec {
                    span: s.to_string(),
                    label: s.label.as_deref().map(str::to_string),
                })
                .collect(),
        }
    }
}

/// The stored form of a calendar schedule, inside `{"kind": "calendar", ...}`: its base
/// schedule, the calendars' data (not only their names: the core looks nothing up), the
/// business-day rule and the roll, the last three absent when unused.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct CalendarScheduleSpec {
    base: Box<crate::schedule::Schedule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<CalendarSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    business_day: Option<BusinessDay>,
    #[serde(default, skip_serializing_if = "is_stay")]
    roll: Roll,
}

fn is_stay(r: &Roll) -> bool {
    *r == Roll::Stay
}

impl TryFrom<CalendarScheduleSpec> for CalendarSchedule {
    type Error = CalendarError;
    fn try_from(spec: CalendarScheduleSpec) -> Result<CalendarSchedule, CalendarError> {
        let exclude = spec
            .exclude
            .into_iter()
            .map(Calendar::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        CalendarSchedule::new(*spec.base, exclude, spec.business_day, spec.roll)
    }
}

impl From<&CalendarSchedule> for CalendarScheduleSpec {
    fn from(c: &CalendarSchedule) -> CalendarScheduleSpec {
        CalendarScheduleSpec {
            base: Box::new(c.base.clone()),
            exclude: c.exclude.iter().map(CalendarSpec::from).collect(),
            business_day: c.business_day,
            roll: c.roll,
        }
    }
}
