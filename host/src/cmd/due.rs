//! Due times as people read them: the local time in the schedule's zone, UTC, and a note
//! whenever a daylight-saving rule moved, dropped or doubled one.
//!
//! The notes come from the core's public API only. The zone's transition table
//! (`Zone::segment_at`) says where clocks jumped; the same cron expression compiled in UTC,
//! where no local time is missing or doubled, answers "does this wall-clock time match the
//! fields" (a wall time matches exactly when the UTC copy has a due time at that instant
//! read as UTC). chrono-tz tells which wall times happen twice.

use std::fmt::Write as _;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use duetime::CronSchedule;
use duetime::{DstPolicy, Fold, Gap, Schedule, Timestamp};
use serde::Serialize;

/// One due time with what a person should know about it.
#[derive(Debug, Clone)]
pub struct Due {
    pub at: Timestamp,
    /// The zone its local time is shown in: the cron schedule's, else UTC (`every` and
    /// `at` are absolute and have none).
    pub zone: Tz,
    pub notes: Vec<Note>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Note {
    pub kind: NoteKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// Local times in a spring-forward gap, run at the gap's end (this due time).
    Gap,
    /// Local times in a spring-forward gap since the previous due time, not run.
    GapSkipped,
    /// A local time that happens twice; says which pass runs.
    Fold,
    /// A due time of the base schedule since the previous one that a calendar excludes,
    /// with the calendar and the date's label (issue 45).
    Excluded,
}

/// Base due times looked at between two due times for excluded ones (a minutely schedule
/// over a week's holiday has thousands: the first few are named, then how many more).
const MAX_EXCLUDED_LOOKED: usize = duetime_host::views::MAX_EXCLUDED_LOOKED;

/// Segments walked between two due times before giving up on skip notes; a zone changes
/// offset at most a few times a year, so this covers centuries between due times.
const MAX_SEGMENTS: usize = 1_000;
/// Gap times listed by name in a note before "and N more".
const LISTED: usize = 4;

/// The first `count` due times of `schedule` strictly after `from`, with their notes.
pub fn upcoming(schedule: &Schedule, from: Timestamp, count: usize) -> Vec<Due> {
    let cron = match schedule.base() {
        Schedule::Cron(c) => Some(c),
        _ => None,
    };
    let calendar = match schedule {
        Schedule::Calendar(c) => Some(c.as_ref()),
        _ => None,
    };
    let zone = cron.map_or(Tz::UTC, |c| c.zone().tz());
    // The fields alone, in a zone without daylight saving.
    let wall = cron.and_then(|c| CronSchedule::parse(c.expr(), Some("UTC")).ok());
    let mut prev = from;
    let mut out = Vec::new();
    for at in schedule.iter_after(from).take(count) {
        let mut notes = Vec::new();
        if let (Some(c), Some(w)) = (cron, &wall) {
            skipped_gaps(c, w, prev, at, &mut notes);
            gap_end(c, w, at, &mut notes);
            fold(c, at, &mut notes);
        }
        if let Some(c) = calendar {
            excluded(c, zone, prev, at, &mut notes);
        }
        out.push(Due { at, zone, notes });
        prev = at;
    }
    out
}

/// The local wall-clock seconds in `[lo, hi)` that match the fields: how many, and the
/// first few.
fn wall_matches(wall: &CronSchedule, lo: i64, hi: i64) -> (u64, Vec<i64>) {
    let after = Timestamp::from_secs(lo).saturating_sub(duetime::Duration::from_millis(1));
    let until = Timestamp::from_secs(hi).saturating_sub(duetime::Duration::from_millis(1));
    let count = wall.count_in(after, until);
    let first = std::iter::successors(wall.next_after(after), |t| wall.next_after(*t))
        .take_while(|t| *t <= until)
        .take(LISTED)
        .map(|t| t.as_secs_floor())
        .collect();
    (count, first)
}

/// `02:30`, or `02:30:15` when the seconds are not zero.
fn clock(wall_secs: i64) -> String {
    match DateTime::from_timestamp(wall_secs, 0) {
        Some(t) if wall_secs.rem_euclid(60) == 0 => t.format("%H:%M").to_string(),
        Some(t) => t.format("%H:%M:%S").to_string(),
        None => format!("@{wall_secs}s"),
    }
}

/// `Sun 2025-03-09`: the date of a local wall-clock second.
fn day(wall_secs: i64) -> String {
    DateTime::from_timestamp(wall_secs, 0)
        .map(|t| t.format("%a %Y-%m-%d").to_string())
        .unwrap_or_default()
}

/// `02:30`, `02:00 and 02:30`, `02:00, 02:15, 02:30, 02:45 and 56 more`, with the verb
/// agreeing.
fn listing(count: u64, first: &[i64]) -> (String, &'static str) {
    let names: Vec<String> = first.iter().map(|s| clock(*s)).collect();
    let text = match (count as usize, names.as_slice()) {
        (_, []) => String::new(),
        (1, [one]) => one.clone(),
        (n, names) if n <= names.len() => {
            let (last, rest) = names.split_last().unwrap_or((&names[0], &[]));
            format!("{} and {last}", rest.join(", "))
        }
        (n, names) => format!("{} and {} more", names.join(", "), n - names.len()),
    };
    (text, if count == 1 { "does" } else { "do" })
}

/// A due time at the first instant after a spring-forward gap that swallowed matching
/// local times, under `gap: run_at_gap_end`.
fn gap_end(cron: &CronSchedule, wall: &CronSchedule, at: Timestamp, notes: &mut Vec<Note>) {
    if cron.policy().gap != Gap::RunAtGapEnd || at.as_millis().rem_euclid(1000) != 0 {
        return;
    }
    let zone = cron.zone();
    let s = at.as_secs_floor();
    let seg = zone.segment_at(s);
    if seg.start != s || seg.index == 0 {
        return;
    }
    let before = zone.segment(seg.index - 1);
    if seg.offset <= before.offset {
        return;
    }
    let (count, first) = wall_matches(wall, s + before.offset, s + seg.offset);
    if count == 0 {
        return;
    }
    let (times, verb) = listing(count, &first);
    let runs = if count == 1 { "runs" } else { "they run once" };
    let end = s + seg.offset;
    // Usually the missing times and the gap's end share a date; not when a whole day is
    // skipped (Apia, 30 December 2011).
    let text = if first.first().map(|t| day(*t)) == Some(day(end)) {
        format!(
            "{times} {verb} not exist on this day; {runs} at {} (gap: run at gap end)",
            clock(end)
        )
    } else {
        format!(
            "{times} on {} {verb} not exist; {runs} at {} on {} (gap: run at gap end)",
            first.first().map_or_else(String::new, |t| day(*t)),
            clock(end),
            day(end)
        )
    };
    notes.push(Note {
        kind: NoteKind::Gap,
        text,
    });
}

/// Spring-forward gaps after `prev` up to `at` whose matching local times did not run,
/// under `gap: skip`.
fn skipped_gaps(
    cron: &CronSchedule,
    wall: &CronSchedule,
    prev: Timestamp,
    at: Timestamp,
    notes: &mut Vec<Note>,
) {
    if cron.policy().gap != Gap::Skip {
        return;
    }
    let zone = cron.zone();
    let end = at.as_secs_floor();
    let mut seg = zone.segment_at(prev.as_secs_floor());
    for _ in 0..MAX_SEGMENTS {
        let Some(boundary) = seg.end.filter(|e| *e <= end) else {
            return;
        };
        let next = zone.segment(seg.index + 1);
        if next.offset > seg.offset {
            let (count, first) = wall_matches(wall, boundary + seg.offset, boundary + next.offset);
            if count > 0 {
                let (times, verb) = listing(count, &first);
                let day = day(boundary + seg.offset);
                notes.push(Note {
                    kind: NoteKind::GapSkipped,
                    text: format!("{times} on {day} {verb} not exist; skipped (gap: skip)"),
                });
            }
        }
        seg = next;
    }
}

/// The base's due times in `(prev, at)` that a calendar excludes, one note each (the first
/// `LISTED`, then how many more): `excluded: 09:00 Thu 2026-01-01: holidays (New Year's Day)`.
fn excluded(
    c: &duetime::CalendarSchedule,
    zone: Tz,
    prev: Timestamp,
    at: Timestamp,
    notes: &mut Vec<Note>,
) {
    let mut more = 0;
    let before = at.saturating_sub(duetime::Duration::from_millis(1));
    let limit = MAX_EXCLUDED_LOOKED;
    for (d, why) in duetime_host::views::BaseDueTimes::new(c, prev, before, limit) {
        let Some(reasons) = why else {
            continue;
        };
        if notes
            .iter()
            .filter(|n| n.kind == NoteKind::Excluded)
            .count()
            >= LISTED
        {
            more += 1;
            continue;
        }
        let local = d.to_chrono().map(|t| t.with_timezone(&zone));
        let when = local.map_or_else(
            || d.to_string(),
            |t| t.format("%H:%M %a %Y-%m-%d").to_string(),
        );
        notes.push(Note {
            kind: NoteKind::Excluded,
            text: format!("excluded: {when}: {reasons}"),
        });
    }
    if more > 0 {
        notes.push(Note {
            kind: NoteKind::Excluded,
            text: format!("excluded: {more} more before it"),
        });
    }
}

/// A due time whose local time happens twice (fall back).
fn fold(cron: &CronSchedule, at: Timestamp, notes: &mut Vec<Note>) {
    let tz = cron.zone().tz();
    let Some(utc) = at.to_chrono() else {
        return;
    };
    let local = utc.with_timezone(&tz);
    let naive: NaiveDateTime = local.naive_local();
    let LocalResult::Ambiguous(first, second) = tz.from_local_datetime(&naive) else {
        return;
    };
    let is_first = first.timestamp_millis() == at.as_millis();
    let time = clock(naive.and_utc().timestamp());
    let passes = format!("{}, then {}", first.format("%Z"), second.format("%Z"));
    let runs = match (cron.policy().fold, is_first) {
        (Fold::First, _) => "runs at the first (fold: first)",
        (Fold::Last, _) => "runs at the second (fold: last)",
        (Fold::Both, true) => "runs at both, this is the first (fold: both)",
        (Fold::Both, false) => "runs at both, this is the second (fold: both)",
    };
    notes.push(Note {
        kind: NoteKind::Fold,
        text: format!("{time} happens twice on this day ({passes}); {runs}"),
    });
}

/// `Sun 2025-03-09 03:00:00 EDT` (fractions of a second only when present).
pub fn local_text(d: &Due) -> String {
    match d.at.to_chrono() {
        Some(t) => t
            .with_timezone(&d.zone)
            .format("%a %Y-%m-%d %H:%M:%S%.f %Z")
            .to_string(),
        None => d.at.to_string(),
    }
}

/// RFC 3339 with the local offset, for machines.
pub fn local_rfc3339(d: &Due) -> String {
    match d.at.to_chrono() {
        Some(t) => t
            .with_timezone(&d.zone)
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        None => d.at.to_string(),
    }
}

pub fn to_json(d: &Due) -> serde_json::Value {
    serde_json::json!({
        "utc": d.at.to_string(),
        "local": local_rfc3339(d),
        "zone": d.zone.name(),
        "notes": d.notes,
    })
}

/// The daylight-saving policy in force and how it came about; `chosen` says where an
/// explicit one came from ("set with --gap/--fold").
pub fn policy_text(cron: &CronSchedule, chosen: &str) -> String {
    let p: DstPolicy = cron.policy();
    let why = match (cron.explicit_policy(), cron.is_fixed_time()) {
        (Some(_), _) => chosen,
        (None, true) => "cron's default for a fixed-time schedule",
        (None, false) => "cron's default: minute or hour begins with *, so not fixed-time",
    };
    format!("{p} ({why})")
}

/// Rows of due times as aligned text: local, UTC, then the notes (one per line), each row
/// prefixed with `indent`; continuation lines are blank in the first two columns.
pub fn write_table(out: &mut String, dues: &[Due], indent: &str, header: bool) {
    let locals: Vec<String> = dues.iter().map(local_text).collect();
    let utcs: Vec<String> = dues.iter().map(|d| d.at.to_string()).collect();
    let lw = locals.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    let uw = utcs.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    let lw = if header { lw.max(5) } else { lw };
    let uw = if header { uw.max(3) } else { uw };
    let mut line = |a: &str, b: &str, c: &str| {
        let row = format!("{indent}{a:<lw$}  {b:<uw$}  {c}");
        let _ = writeln!(out, "{}", row.trim_end());
    };
    if header {
        line("local", "UTC", "note");
    }
    for ((d, local), utc) in dues.iter().zip(&locals).zip(&utcs) {
        let mut notes = d.notes.iter();
        line(local, utc, notes.next().map_or("", |n| n.text.as_str()));
        for n in notes {
            line("", "", &n.text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(expr: &str, dst: Option<DstPolicy>, from: &str, n: usize) -> Vec<String> {
        let c = CronSchedule::parse(expr, Some("America/New_York"))
            .unwrap()
            .with_dst(dst);
        upcoming(&Schedule::Cron(c), from.parse().unwrap(), n)
            .iter()
            .map(|d| {
                let notes: Vec<&str> = d.notes.iter().map(|n| n.text.as_str()).collect();
                format!("{} {}", local_text(d), notes.join(" | "))
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn spring_forward_moves_a_fixed_time_to_the_gap_end() {
        assert_eq!(
            texts("30 2 * * *", None, "2025-03-08T12:00:00Z", 2),
            [
                "Sun 2025-03-09 03:00:00 EDT 02:30 does not exist on this day; runs at 03:00 (gap: run at gap end)",
                "Mon 2025-03-10 02:30:00 EDT",
            ]
        );
    }

    #[test]
    fn several_gap_times_collapse_and_skips_are_told() {
        let v = texts("*/15 * * * *", None, "2025-03-09T06:40:00Z", 2);
        assert_eq!(
            v,
            [
                "Sun 2025-03-09 01:45:00 EST",
                "Sun 2025-03-09 03:00:00 EDT 02:00, 02:15, 02:30 and 02:45 on Sun 2025-03-09 do not exist; skipped (gap: skip)",
            ]
        );
        let run_at_end = Some(DstPolicy {
            gap: Gap::RunAtGapEnd,
            fold: Fold::Both,
        });
        let v = texts("*/15 * * * *", run_at_end, "2025-03-09T06:40:00Z", 2);
        assert_eq!(
            v[1],
            "Sun 2025-03-09 03:00:00 EDT 02:00, 02:15, 02:30 and 02:45 do not exist on this day; they run once at 03:00 (gap: run at gap end)"
        );
    }

    #[test]
    fn fall_back_says_which_pass_runs() {
        assert_eq!(
            texts("30 1 * * *", None, "2025-11-01T12:00:00Z", 2),
            [
                "Sun 2025-11-02 01:30:00 EDT 01:30 happens twice on this day (EDT, then EST); runs at the first (fold: first)",
                "Mon 2025-11-03 01:30:00 EST",
            ]
        );
        let v = texts("30 * * * *", None, "2025-11-02T05:00:00Z", 2);
        assert!(
            v[0].ends_with("runs at both, this is the first (fold: both)"),
            "{v:?}"
        );
        assert!(
            v[1].ends_with("runs at both, this is the second (fold: both)"),
            "{v:?}"
        );
    }
}
