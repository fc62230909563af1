//! What people type on the command line: instants (`2025-03-09T01:00`, RFC 3339 with or
//! without an offset) and durations (`90m`, `1h30m`), checked into the core's types with a
//! message that echoes the text (cut) and says what is accepted.
//!
//! In the library rather than beside the subcommands so that one copy serves every flag
//! and the `human_input` fuzz target (fuzz/) reaches exactly what the binary runs.

use chrono::TimeZone;
use duetime::{Duration, Timestamp};

/// The forms of a time the flags accept, for messages.
pub const TIMES: &str = "2025-03-09T01:00 or 2025-03-09T01:00:00 (UTC), or RFC 3339 with an \
                     offset such as 2025-03-09T01:00:00-05:00";

/// The longest piece of a person's input echoed back in a message.
pub const ECHO_MAX: usize = 80;

/// `text` as an error message may echo it: at most `ECHO_MAX` characters, then `…` and how
/// long it really was, so a pasted megabyte does not come back as a megabyte.
pub fn cut(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_MAX).collect();
    match chars.count() {
        0 => head,
        rest => format!("{head}… ({} characters)", ECHO_MAX + rest),
    }
}

/// A time as the flags take it: RFC 3339, or `YYYY-MM-DDTHH:MM[:SS[.fff]]` with an optional
/// `Z` or `±HH:MM` (no offset: UTC), since typing seconds and offsets for a scenario is noise.
pub fn parse_time(text: &str) -> Result<Timestamp, String> {
    let t = text.trim();
    if let Ok(ts) = t.parse::<Timestamp>() {
        return Ok(ts);
    }
    let err = || format!("`{text}` is not a time; accepted: {TIMES}");
    let (local, offset_secs) = if let Some(rest) = t.strip_suffix(['Z', 'z']) {
        (rest, 0i64)
    } else if t.len() > 16 && t.is_char_boundary(t.len() - 6) {
        let (head, tail) = t.split_at(t.len() - 6);
        let b = tail.as_bytes();
        let sign = match b[0] {
            b'+' => 1,
            b'-' => -1,
            _ => 0,
        };
        let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
        if sign != 0 && b[3] == b':' && digits(&tail[1..3]) && digits(&tail[4..]) {
            let h: i64 = tail[1..3].parse().map_err(|_| err())?;
            let m: i64 = tail[4..].parse().map_err(|_| err())?;
            if h > 23 || m > 59 {
                return Err(err());
            }
            (head, sign * (h * 3600 + m * 60))
        } else {
            (t, 0)
        }
    } else {
        (t, 0)
    };
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(local, f).ok())
        .ok_or_else(err)?;
    let utc = chrono::Utc.from_utc_datetime(&naive);
    let ms = utc
        .timestamp_millis()
        .checked_sub(offset_secs * 1000)
        .ok_or_else(err)?;
    Ok(Timestamp::from_millis(ms))
}

/// `--from` and similar: the same text `what-if` accepts (`parse_time`), so one time typed
/// for one command works in the others; the message echoes the text cut.
pub fn parse_instant(text: &str) -> Result<Timestamp, String> {
    parse_time(text).map_err(|_| format!("`{}` is not an instant; accepted: {TIMES}", cut(text)))
}

/// A duration flag (`--for 90m`): the core's form, the text echoed cut when refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    text.parse::<Duration>().map_err(|_| {
        format!(
            "`{}` is not a duration; accepted: such as 30s, 1m, 1h30m",
            cut(text)
        )
    })
}

/// A tick (`--tick` of `check`, `sim` and `what-if`): a duration the core's config check
/// takes as one. The one tick parser of the command line.
pub fn parse_tick(text: &str) -> Result<Duration, String> {
    check_tick(parse_duration(text)?)
}

/// A duration the core's config check takes as a tick, else why not (`what-if` checks its
/// `--tick` only without `--store`, whose tick it is not).
pub fn check_tick(d: Duration) -> Result<Duration, String> {
    duetime::Config::with_tick(d)
        .check()
        .map(|()| d)
        .map_err(|e| e.to_string())
}
