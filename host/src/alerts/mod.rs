//! Alerts that reach a person. The core decides what is told (`Notice::Alert`: one
//! incident once, the job's `alert_throttle`); this module only carries it, after the
//! transaction that told it committed, to a command (the alert as JSON on stdin and in
//! `DUETIME_ALERT_*` variables) and/or a webhook (a POST of the same JSON), retried with
//! backoff on a delivery thread of its own (`deliver.rs`), so the daemon's loop never
//! waits for a person's pager.
//!
//! Configured by the jobs file's `[alerts]` table, and per job by an `alerts = { ... }`
//! table that replaces it for that job (`alerts = {}`: this job's alerts are only logged).

pub mod context;
mod deliver;

use std::fmt;

use duetime::Duration;
use toml::Value;

use crate::jobs_file::describe;

pub use context::payload;
pub use deliver::Courier;

/// The keys an alerts table accepts.
pub const ALERT_FIELDS: &[&str] = &["command", "webhook", "retries", "backoff", "timeout"];
const BACKOFF_FIELDS: &[&str] = &["initial", "max"];
/// At most this many retries after the first attempt.
pub const MAX_ALERT_RETRIES: u32 = 20;

/// A webhook's URL, checked: `http://` or `https://` with a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook(String);

impl Webhook {
    pub fn parse(text: &str) -> Result<Webhook, RouteError> {
        let bad = |why: &'static str| {
            RouteError::at(
                "webhook",
                RouteProblem::BadUrl {
                    text: crate::http::cut_text(text),
                    why,
                },
            )
        };
        let uri: ureq::http::Uri = text
            .parse()
            .map_err(|_| bad("it does not parse as a URL"))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            Some(_) => return Err(bad("its scheme is not http or https")),
            None => return Err(bad("it has no scheme")),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("it names no host"));
        }
        Ok(Webhook(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a job's alerts go, and how hard to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The program and its arguments (no shell), given the alert on stdin.
    pub command: Option<Vec<String>>,
    pub webhook: Option<Webhook>,
    /// Attempts after the first that failed.
    pub retries: u32,
    /// The wait before the first retry, doubling up to `max`.
    pub initial: Duration,
    pub max: Duration,
    /// How long one attempt may take (the command is killed after it).
    pub timeout: Duration,
}

impl Default for Route {
    fn default() -> Self {
        Route {
            command: None,
            webhook: None,
            retries: 3,
            initial: Duration::from_secs(1),
            max: Duration::from_mins(1),
            timeout: Duration::from_secs(10),
        }
    }
}

impl Route {
    /// Whether it sends anywhere (`alerts = {}` does not).
    pub fn sends(&self) -> bool {
        self.command.is_some() || self.webhook.is_some()
    }

    /// The wait before retry `n` (1-based): `initial` doubling, at most `max`.
    pub fn backoff(&self, n: u32) -> std::time::Duration {
        let ms = self
            .initial
            .as_millis()
            .saturating_mul(1u64 << (n.saturating_sub(1)).min(30))
            .min(self.max.as_millis());
        std::time::Duration::from_millis(ms)
    }
}

/// What is wrong with an alerts table: `key` is the key within it (`webhook`,
/// `backoff.initial`), empty for the table itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteError {
    pub key: String,
    pub problem: RouteProblem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteProblem {
    NotATable {
        found: &'static str,
    },
    UnknownKey {
        suggestion: Option<&'static str>,
        accepted: &'static [&'static str],
    },
    WrongType {
        found: &'static str,
        accepted: &'static str,
    },
    EmptyCommand,
    BadUrl {
        text: String,
        why: &'static str,
    },
    BadDuration {
        text: String,
    },
    OutOfRange {
        value: i64,
    },
    /// `backoff.initial` longer than `backoff.max`, or a zero duration.
    BadBackoff,
}

impl RouteError {
    fn at(key: &str, problem: RouteProblem) -> RouteError {
        RouteError {
            key: key.to_string(),
            problem,
        }
    }
}

impl fmt::Display for RouteProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteProblem::NotATable { found } => write!(
                f,
                "is {found}; accepted: a table such as {{ command = [\"/usr/local/bin/page-me\"], webhook = \"https://hooks.example/duetime\" }}"
            ),
            RouteProblem::UnknownKey { suggestion, accepted } => {
                f.write_str("is not accepted")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean \"{s}\"?)")?;
                }
                write!(f, "; accepted: {}", accepted.join(", "))
            }
            RouteProblem::WrongType { found, accepted } => write!(f, "is {found}; accepted: {accepted}"),
            RouteProblem::EmptyCommand => f.write_str(
                "is an empty list (or its program is empty); accepted: the program then its arguments, such as [\"/usr/local/bin/page-me\", \"--urgent\"]",
            ),
            RouteProblem::BadUrl { text, why } => write!(
                f,
                "\"{text}\" is not a webhook URL: {why}; accepted: an http:// or https:// URL with a host, such as \"https://hooks.example/duetime\""
            ),
            RouteProblem::BadDuration { text } => write!(
                f,
                "\"{text}\" is not a duration; accepted: numbers each followed by a unit d, h, m, s or ms, such as \"1s\", \"30s\", \"1m\""
            ),
            RouteProblem::OutOfRange { value } => {
                write!(f, "{value} is out of range; accepted: an integer from 0 to {MAX_ALERT_RETRIES}")
            }
            RouteProblem::BadBackoff => f.write_str(
                "initial is zero or longer than max; accepted: 1ms <= initial <= max, such as { initial = \"1s\", max = \"1m\" }",
            ),
        }
    }
}

/// Reads an alerts table, every error at once.
pub fn parse(v: &Value) -> Result<Route, Vec<RouteError>> {
    let Value::Table(t) = v else {
        return Err(vec![RouteError::at(
            "",
            RouteProblem::NotATable { found: describe(v) },
        )]);
    };
    let mut errors = Vec::new();
    for key in t.keys().filter(|k| !ALERT_FIELDS.contains(&k.as_str())) {
        let suggestion =
            crate::hints::nearest(&key.to_ascii_lowercase(), ALERT_FIELDS.iter().copied(), 2);
        errors.push(RouteError::at(
            key,
            RouteProblem::UnknownKey {
                suggestion,
                accepted: ALERT_FIELDS,
            },
        ));
    }
    let command = t.get("command").and_then(|v| command(v, &mut errors));
    let webhook = match t.get("webhook") {
        None => None,
        Some(Value::String(s)) => Webhook::parse(s).map_err(|e| errors.push(e)).ok(),
        Some(v) => {
            errors.push(RouteError::at(
                "webhook",
                RouteProblem::WrongType {
                    found: describe(v),
                    accepted: "a string holding an http:// or https:// URL",
                },
            ));
            None
        }
    };
    let mut route = Route {
        command,
        webhook,
        ..Route::default()
    };
    retries(t.get("retries"), &mut route, &mut errors);
    if let Some(d) = t
        .get("timeout")
        .and_then(|v| duration("timeout", v, &mut errors))
    {
        route.timeout = d;
    }
    if let Some(b) = t.get("backoff") {
        backoff(b, &mut route, &mut errors);
    }
    if errors.is_empty() {
        Ok(route)
    } else {
        Err(errors)
    }
}

fn retries(v: Option<&Value>, route: &mut Route, errors: &mut Vec<RouteError>) {
    match v {
        None => {}
        Some(Value::Integer(n)) => match u32::try_from(*n).ok().filter(|n| *n <= MAX_ALERT_RETRIES)
        {
            Some(n) => route.retries = n,
            None => errors.push(RouteError::at(
                "retries",
                RouteProblem::OutOfRange { value: *n },
            )),
        },
        Some(v) => errors.push(RouteError::at(
            "retries",
            RouteProblem::WrongType {
                found: describe(v),
                accepted: "an integer from 0 to 20",
            },
        )),
    }
}

fn command(v: &Value, errors: &mut Vec<RouteError>) -> Option<Vec<String>> {
    let accepted = "a list of strings, the program then its arguments (no shell)";
    let Value::Array(items) = v else {
        errors.push(RouteError::at(
            "command",
            RouteProblem::WrongType {
                found: describe(v),
                accepted,
            },
        ));
        return None;
    };
    let argv: Option<Vec<String>> = items
        .iter()
        .map(|i| match i {
            Value::String(s) if !s.contains('\0') => Some(s.clone()),
            _ => None,
        })
        .collect();
    match argv {
        None => {
            errors.push(RouteError::at(
                "command",
                RouteProblem::WrongType {
                    found: "a list holding something other than text",
                    accepted,
                },
            ));
            None
        }
        Some(a) if a.first().is_none_or(String::is_empty) => {
            errors.push(RouteError::at("command", RouteProblem::EmptyCommand));
            None
        }
        Some(a) => Some(a),
    }
}

fn duration(key: &str, v: &Value, errors: &mut Vec<RouteError>) -> Option<Duration> {
    match v {
        Value::String(s) => match s.parse::<Duration>() {
            Ok(d) if !d.is_zero() => Some(d),
            _ => {
                errors.push(RouteError::at(
                    key,
                    RouteProblem::BadDuration {
                        text: crate::http::cut_text(s),
                    },
                ));
                None
            }
        },
        v => {
            errors.push(RouteError::at(
                key,
                RouteProblem::WrongType {
                    found: describe(v),
                    accepted: "a string holding a duration such as \"10s\"",
                },
            ));
            None
        }
    }
}

fn backoff(v: &Value, route: &mut Route, errors: &mut Vec<RouteError>) {
    let Value::Table(b) = v else {
        errors.push(RouteError::at(
            "backoff",
            RouteProblem::WrongType {
                found: describe(v),
                accepted: "a table such as { initial = \"1s\", max = \"1m\" }",
            },
        ));
        return;
    };
    for key in b.keys().filter(|k| !BACKOFF_FIELDS.contains(&k.as_str())) {
        errors.push(RouteError::at(
            &format!("backoff.{key}"),
            RouteProblem::UnknownKey {
                suggestion: None,
                accepted: BACKOFF_FIELDS,
            },
        ));
    }
    let before = errors.len();
    let initial = b
        .get("initial")
        .and_then(|v| duration("backoff.initial", v, errors));
    let max = b
        .get("max")
        .and_then(|v| duration("backoff.max", v, errors));
    route.initial = initial.unwrap_or(route.initial);
    route.max = max.unwrap_or(route.max.max(route.initial));
    if errors.len() == before && route.initial > route.max {
        errors.push(RouteError::at("backoff", RouteProblem::BadBackoff));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Value {
        Value::Table(toml::from_str(text).unwrap())
    }

    #[test]
    fn a_full_table_reads_and_bad_ones_say_what_is_accepted() {
        let r = parse(&table(
            "command = [\"page\", \"-u\"]\nwebhook = \"http://127.0.0.1:9/x\"\nretries = 2\nbackoff = { initial = \"100ms\", max = \"1s\" }\ntimeout = \"5s\"",
        ))
        .unwrap();
        assert_eq!(
            r.command.as_deref(),
            Some(&["page".to_string(), "-u".to_string()][..])
        );
        assert_eq!(
            r.webhook.as_ref().map(Webhook::as_str),
            Some("http://127.0.0.1:9/x")
        );
        assert_eq!(
            (r.retries, r.backoff(1), r.backoff(2), r.backoff(9)),
            (
                2,
                std::time::Duration::from_millis(100),
                std::time::Duration::from_millis(200),
                std::time::Duration::from_secs(1)
            )
        );
        let errors = parse(&table(
            "webhook = \"ftp://x\"\ncommand = []\nretries = 99\nwebhok = 1\ntimeout = \"soon\"",
        ))
        .unwrap_err();
        let text: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.key, e.problem))
            .collect();
        let all = text.join("\n");
        assert!(all.contains("webhook: \"ftp://x\" is not a webhook URL: its scheme is not http or https; accepted: an http:// or https://"), "{all}");
        assert!(all.contains("command: is an empty list"), "{all}");
        assert!(all.contains("retries: 99 is out of range"), "{all}");
        assert!(
            all.contains("webhok: is not accepted (did you mean \"webhook\"?)"),
            "{all}"
        );
        assert!(all.contains("timeout: \"soon\" is not a duration"), "{all}");
        assert!(parse(&Value::Integer(3)).unwrap_err()[0]
            .problem
            .to_string()
            .contains("accepted: a table"));
        assert!(Webhook::parse("http://").is_err());
        assert!(Webhook::parse("not a url").is_err());
        assert!(parse(&table("")).is_ok_and(|r| !r.sends()));
    }
}
