//! The file's `[calendars.NAME]` tables (issue 45): named sets of local dates a job's
//! `exclude` names. Each is read here into the core's `Calendar`, so a job's schedule
//! carries the calendar's data, not its name.
//!
//! ```toml
//! [calendars.holidays]
//! yearly = true
//! dates = ["2025-12-25", { date = "2026-01-01", label = "New Year's Day" },
//!          "2025-12-24T12:00..2025-12-27"]
//! file = "holidays.txt"   # a date (or range) a line, then an optional label; `#` comments
//! ics = "bank-holidays.ics"   # the all-day events of an iCalendar file
//! ```

use std::path::{Path, PathBuf};

use chrono::{Days, NaiveDate};
use duetime::{Calendar, CalendarError, CalendarName, Calendars, Span};
use icalendar::{Component, DatePerhapsTime};
use toml::Value;

use super::errors::TopProblem;
use super::reader::describe;

/// The keys a calendar's table accepts.
pub(crate) const CALENDAR_KEYS: &[&str] = &["yearly", "dates", "file", "ics"];
const DATE_FORMS: &str = "a string such as \"2025-12-25\" or \"2025-12-24T12:00..2025-12-27\", \
                          or a table { date = \"2026-01-01\", label = \"New Year's Day\" }";

/// One refusal: the key (`calendars.holidays.dates`) and what was wrong.
pub(super) type Refusal = (String, TopProblem);

/// Reads the `calendars` table; `file` is the jobs file's path (a calendar's `file` is read
/// relative to its directory). Every refusal is returned, not only the first.
pub(super) fn read(v: &Value, file: &str) -> (Calendars, Vec<Refusal>) {
    let mut out = Calendars::new();
    let mut errors = Vec::new();
    let Value::Table(t) = v else {
        let problem = TopProblem::CalendarValue {
            found: describe(v),
            accepted: "a table of calendars, one [calendars.NAME] each",
        };
        return (out, vec![("calendars".to_string(), problem)]);
    };
    for (name, body) in t {
        let key = format!("calendars.{name}");
        match one(name, body, file, &key) {
            Ok(c) => out.insert(c),
            Err(mut e) => errors.append(&mut e),
        }
    }
    (out, errors)
}

/// One calendar.
fn one(name: &str, body: &Value, file: &str, key: &str) -> Result<Calendar, Vec<Refusal>> {
    let calendar = |e: CalendarError| vec![(key.to_string(), TopProblem::Calendar(e))];
    let name = CalendarName::new(name).map_err(calendar)?;
    let Value::Table(t) = body else {
        let found = describe(body);
        let accepted = "a table with `dates`, `file`, `ics` and `yearly`";
        return Err(vec![(
            key.to_string(),
            TopProblem::CalendarValue { found, accepted },
        )]);
    };
    let mut errors = Vec::new();
    for k in t.keys().filter(|k| !CALENDAR_KEYS.contains(&k.as_str())) {
        let problem = TopProblem::UnknownCalendarKey {
            accepted: CALENDAR_KEYS,
        };
        errors.push((format!("{key}.{k}"), problem));
    }
    let yearly = match t.get("yearly") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(v) => {
            let problem = TopProblem::CalendarValue {
                found: describe(v),
                accepted: "true or false",
            };
            errors.push((format!("{key}.yearly"), problem));
            false
        }
    };
    let mut spans = Vec::new();
    if let Some(v) = t.get("dates") {
        spans.extend(dates(v, &format!("{key}.dates"), &mut errors));
    }
    if let Some(v) = t.get("file") {
        spans.extend(dates_file(v, file, &format!("{key}.file"), &mut errors));
    }
    if let Some(v) = t.get("ics") {
        spans.extend(ics_file(v, file, &format!("{key}.ics"), &mut errors));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Calendar::new(name, yearly, spans).map_err(calendar)
}

/// `dates = [...]`.
fn dates(v: &Value, key: &str, errors: &mut Vec<Refusal>) -> Vec<Span> {
    let wrong = |found| TopProblem::CalendarValue {
        found,
        accepted: DATE_FORMS,
    };
    let Value::Array(items) = v else {
        errors.push((key.to_string(), wrong(describe(v))));
        return Vec::new();
    };
    let mut spans = Vec::new();
    for item in items {
        let (text, label) = match item {
            Value::String(s) => (s.as_str(), None),
            Value::Table(t) => match (t.get("date"), t.get("label")) {
                (Some(Value::String(d)), None) => (d.as_str(), None),
                (Some(Value::String(d)), Some(Value::String(l))) => (d.as_str(), Some(l.as_str())),
                _ => {
                    errors.push((key.to_string(), wrong("a table without a string `date`")));
                    continue;
                }
            },
            other => {
                errors.push((key.to_string(), wrong(describe(other))));
                continue;
            }
        };
        match Span::parse(text, label) {
            Ok(s) => spans.push(s),
            Err(e) => errors.push((key.to_string(), TopProblem::Calendar(e))),
        }
    }
    spans
}

/// `file = "holidays.txt"`: read next to the jobs file; a date or range a line, then an
/// optional label after whitespace; blank lines and `#` comments skipped. A bad line is
/// named by its number in that file.
fn dates_file(v: &Value, jobs_file: &str, key: &str, errors: &mut Vec<Refusal>) -> Vec<Span> {
    let accepted = "a string: a file of dates, next to the jobs file";
    let Some((path, text)) = read_beside(v, jobs_file, key, accepted, errors) else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (date, label) = match line.split_once(char::is_whitespace) {
            Some((d, l)) => (d, Some(l.trim())),
            None => (line, None),
        };
        match Span::parse(date, label) {
            Ok(s) => spans.push(s),
            Err(e) => {
                let message = format!("{} line {}: {e}", path.display(), i + 1);
                errors.push((key.to_string(), TopProblem::CalendarFile { message }));
            }
        }
    }
    spans
}

/// The text of the file `v` names, read next to the jobs file; a refusal (not a string,
/// not readable) is pushed to `errors`.
fn read_beside(
    v: &Value,
    jobs_file: &str,
    key: &str,
    accepted: &'static str,
    errors: &mut Vec<Refusal>,
) -> Option<(PathBuf, String)> {
    let Value::String(name) = v else {
        let found = describe(v);
        errors.push((
            key.to_string(),
            TopProblem::CalendarValue { found, accepted },
        ));
        return None;
    };
    let path = Path::new(jobs_file)
        .parent()
        .unwrap_or(Path::new(""))
        .join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some((path, text)),
        Err(e) => {
            let message = format!("{}: {e}", path.display());
            errors.push((key.to_string(), TopProblem::CalendarFile { message }));
            None
        }
    }
}

/// `ics = "bank-holidays.ics"`: the all-day events of an iCalendar file next to the jobs
/// file, read with the `icalendar` crate. An event whose `DTSTART` is a date is the span
/// from that date through the day before its `DTEND` (exclusive in RFC 5545; one day
/// without it), labelled by its `SUMMARY`; a cancelled event (`STATUS:CANCELLED`) is left
/// out. An event with a time of day, or a recurrence (`RRULE`, `RDATE`), is refused by
/// name: its times are in the file's zone where a calendar's dates are the schedule's, and
/// a recurrence is written `yearly = true` or date by date.
fn ics_file(v: &Value, jobs_file: &str, key: &str, errors: &mut Vec<Refusal>) -> Vec<Span> {
    let accepted = "a string: an iCalendar file (.ics), next to the jobs file";
    let Some((path, text)) = read_beside(v, jobs_file, key, accepted, errors) else {
        return Vec::new();
    };
    let mut refuse = |what: String| {
        let message = format!("{}: {what}", path.display());
        errors.push((key.to_string(), TopProblem::CalendarFile { message }));
    };
    let ics: icalendar::Calendar = match text.parse() {
        Ok(c) => c,
        Err(e) => {
            refuse(format!("not an iCalendar file: {}", e.trim()));
            return Vec::new();
        }
    };
    let mut spans = Vec::new();
    for (i, event) in ics.events().enumerate() {
        if event.property_value("STATUS") == Some("CANCELLED") {
            continue;
        }
        let name = event
            .get_summary()
            .or(event.get_uid())
            .map_or_else(|| format!("event {}", i + 1), |s| format!("event `{s}`"));
        match all_day_span(event) {
            Ok(text) => match Span::parse(&text, event.get_summary()) {
                Ok(s) => spans.push(s),
                Err(e) => refuse(format!("{name}: {e}")),
            },
            Err(why) => refuse(format!("{name}: {why}")),
        }
    }
    spans
}

/// An all-day event's dates as a calendar's span text (`2025-12-25`,
/// `2025-12-24..2025-12-26`), or why it is not one.
fn all_day_span(event: &icalendar::Event) -> Result<String, &'static str> {
    const ONLY: &str = "only all-day events are read (DTSTART;VALUE=DATE:20251225)";
    if event.property_value("RRULE").is_some() || event.property_value("RDATE").is_some() {
        return Err("a recurring event (RRULE or RDATE) is not read: write `yearly = true`, or list each date");
    }
    let first = match event.get_start() {
        Some(DatePerhapsTime::Date(d)) => d,
        Some(DatePerhapsTime::DateTime(_)) => return Err(ONLY),
        None => return Err("it has no DTSTART"),
    };
    let last = match event.get_end() {
        None => first,
        Some(DatePerhapsTime::Date(end)) if end > first => {
            end.checked_sub_days(Days::new(1)).unwrap_or(first)
        }
        Some(DatePerhapsTime::Date(_)) => return Err("its DTEND is not after its DTSTART"),
        Some(DatePerhapsTime::DateTime(_)) => return Err(ONLY),
    };
    let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    Ok(if last == first {
        day(first)
    } else {
        format!("{}..{}", day(first), day(last))
    })
}
