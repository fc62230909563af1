//! The values of `what-if`'s flags: windows, pauses, clock jumps and run durations.

use duetime::{Duration, JobName, Timestamp};
use duetime_host::human::{parse_time, TIMES};

/// The largest clock jump accepted.
const MAX_JUMP: Duration = Duration::from_days(366);

/// `A..B`, A before B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseWindow {
    pub job: JobName,
    pub window: Window,
}

/// The wall clock moves by `by_ms` (negative: back) at true time `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jump {
    pub at: Timestamp,
    pub by_ms: i64,
}

pub(super) fn parse_window(text: &str) -> Result<Window, String> {
    let (a, b) = text.split_once("..").ok_or_else(|| {
        format!(
            "`{text}` has no `..`; accepted: START..END such as \
             2025-03-09T01:00..2025-03-09T09:00, each time {TIMES}"
        )
    })?;
    let from = parse_time(a)?;
    let to = parse_time(b)?;
    if to <= from {
        let how = if to == from { "when" } else { "before" };
        return Err(format!(
            "`{text}` ends {how} it starts; the end must come after the start"
        ));
    }
    Ok(Window { from, to })
}

pub(super) fn parse_pause(text: &str) -> Result<PauseWindow, String> {
    let (job, window) = text.split_once('@').ok_or_else(|| {
        format!("`{text}` has no `@`; accepted: JOB@START..END such as backup@2025-03-09T01:00..2025-03-09T05:00")
    })?;
    if job.trim().is_empty() {
        return Err(format!("`{text}` names no job before the `@`"));
    }
    let job = JobName::new(job.trim()).map_err(|e| format!("`{text}`: {e}"))?;
    Ok(PauseWindow {
        job,
        window: parse_window(window)?,
    })
}

/// `T+D` or `T-D`: the last `+` or `-` whose two sides read as a time and a duration (a
/// time has `-` in its date and maybe in its offset).
pub(super) fn parse_jump(text: &str) -> Result<Jump, String> {
    for (i, c) in text.char_indices().rev() {
        if c != '+' && c != '-' {
            continue;
        }
        let (Ok(at), Ok(by)) = (parse_time(&text[..i]), text[i + 1..].parse::<Duration>()) else {
            continue;
        };
        if by.is_zero() || by > MAX_JUMP {
            return Err(format!(
                "`{text}`: a jump is more than 0s and at most {MAX_JUMP}"
            ));
        }
        // At most MAX_JUMP, so it fits.
        let ms = by.as_millis() as i64;
        return Ok(Jump {
            at,
            by_ms: if c == '-' { -ms } else { ms },
        });
    }
    Err(format!(
        "`{text}` is not a jump; accepted: TIME+DURATION or TIME-DURATION, such as \
         2025-03-09T10:00+2h or 2025-03-09T10:00-30m (durations like 30s, 10m, 1h30m)"
    ))
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    text.parse::<Duration>().map_err(|e| e.to_string())
}

pub(super) fn parse_job_duration(text: &str) -> Result<(String, Duration), String> {
    let (job, d) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` has no `=`; accepted: JOB=TIME such as backup=90s"))?;
    let d = parse_duration(d)?;
    if d.is_zero() {
        return Err(format!("`{text}`: a run takes at least 1ms"));
    }
    Ok((job.trim().to_string(), d))
}
