//! The few query parameters the pages take (`from`, `to`, `days`), percent-decoded and
//! checked; a bad one is refused with what is accepted, never guessed at.

use duetime::{Duration, Timestamp};

use super::timeline::Window;

/// The longest window a job page draws: a quarter, so a page stays a page.
pub const MAX_WINDOW: Duration = Duration::from_days(92);

/// `%XX` decoded (a `+` stays a `+`: RFC 3339 offsets use it); bytes that are not UTF-8
/// become U+FFFD, and a `%` not followed by two hex digits stays as it is.
pub fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Text from a request as a message may echo it: at most 80 characters.
pub fn cut(text: &str) -> String {
    let mut s: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        s.push('…');
    }
    s
}

fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k) == key).then(|| decode(v))
    })
}

/// `?days=N` of `/api/jobs/NAME` (as `show --days`, default 3).
pub fn days(query: &str) -> Result<u64, String> {
    match param(query, "days") {
        None => Ok(3),
        Some(v) => v.parse::<u64>().ok().filter(|d| *d <= 3660).ok_or_else(|| {
            format!(
                "days={}: accepted: a whole number of days from 0 to 3660",
                cut(&v)
            )
        }),
    }
}

/// `?from=T&to=T` of `/jobs/NAME`: RFC 3339 instants; each by default `fitted`'s (the
/// window fitted to the job's period: `Window::fitted`).
pub fn window(query: &str, fitted: Window) -> Result<Window, String> {
    let instant = |key: &str, default: Timestamp| match param(query, key) {
        None => Ok(default),
        Some(v) => v.parse::<Timestamp>().map_err(|_| {
            format!(
                "{key}={}: not an instant; accepted: RFC 3339 such as 2025-03-09T07:00:00Z",
                cut(&v)
            )
        }),
    };
    let from = instant("from", fitted.from)?;
    let to = instant("to", fitted.to)?;
    if to <= from {
        return Err("the window ends before it starts: `to` must come after `from`".into());
    }
    if to.as_millis() - from.as_millis() > MAX_WINDOW.as_millis() as i64 {
        return Err(format!("the window is longer than {MAX_WINDOW}; accepted: at most {MAX_WINDOW} from `from` to `to`"));
    }
    Ok(Window { from, to })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_default_and_refuse_with_what_is_accepted() {
        let now: Timestamp = "2025-03-09T12:00:00Z".parse().unwrap();
        let fitted = Window::fitted(None, now);
        let w = window("", fitted).unwrap();
        assert_eq!(w.from.to_string(), "2025-03-06T12:00:00Z");
        assert_eq!(w.to.to_string(), "2025-03-10T12:00:00Z");
        let now = fitted;
        let w = window("from=2025-03-01T00%3A00%3A00Z&to=2025-03-02T00:00:00Z", now).unwrap();
        assert_eq!(w.from.to_string(), "2025-03-01T00:00:00Z");
        assert!(window("from=yesterday", now)
            .unwrap_err()
            .contains("RFC 3339"));
        assert!(window("from=2025-03-02T00:00:00Z&to=2025-03-01T00:00:00Z", now).is_err());
        assert!(window("from=2024-01-01T00:00:00Z", now)
            .unwrap_err()
            .contains("at most"));
        assert_eq!(days("days=7"), Ok(7));
        assert!(days("days=-1").is_err());
        assert_eq!(decode("%3Cb%3E%zz"), "<b>%zz");
    }
}
