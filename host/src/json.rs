//! The one schema of every `--json` output (README, "JSON output"): a single object on
//! stdout, `"ok": true` with the command's fields or `"ok": false` with `"kind"` (a
//! snake_case name) and `"error"` (the text a person would read); instants as RFC 3339
//! strings, durations as duetime durations (`"1h30m"`), run ids `"r12"`, processes `"p3"`,
//! fences `"f14"`, and no Rust `Debug` text anywhere.
//!
//! The core serializes its own types compactly (instants as epoch milliseconds, ids as
//! numbers), which is right for its state and wrong for people: `entry` rewrites a journal
//! entry field by field, knowing which fields hold what.

use duetime::{Duration, Entry, History, JobView, PausedBy, Record, Timestamp};
use serde_json::{json, Map, Value};

use crate::store::StoreError;

/// Declares `ErrorKind` from one table: each variant, the name `--json` prints for it, and
/// why it is printed, so `ALL` and `name` cannot drift apart.
macro_rules! error_kinds {
    ($($variant:ident => $name:literal: $doc:literal,)*) => {
        /// What a `--json` failure names in `"kind"` when the host fails or refuses (a
        /// refusal of the core's keeps the core's own name, `Refusal`'s). One table, so the
        /// docs-drift test reads every name the host can print from here.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum ErrorKind {
            $(#[doc = $doc] $variant,)*
        }

        impl ErrorKind {
            /// Every kind, in the table's order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),*];

            /// The snake_case name `--json` prints.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)*
                }
            }
        }
    };
}

error_kinds! {
    Usage => "usage": "A flag or argument clap refused, or a page's query parameter.",
    NotFound => "not_found": "No job of that name.",
    WrongDigest => "wrong_digest": "A confirmation named another digest than the one held.",
    NothingParked => "nothing_parked": "An approval for a job none of whose runs is parked.",
    NoAnswer => "no_answer": "The core answered a command with no reply (a host bug).",
    Invalid => "invalid": "`check`: the jobs file has errors.",
    InvalidExpression => "invalid_expression": "`next`: the cron expression does not parse.",
    NoStore => "no_store": "No store at that path or address.",
    Unreachable => "unreachable": "The database could not be reached.",
    Corrupt => "corrupt": "The store holds what no duetime wrote.",
    Locked => "locked": "Another process holds the store's lock.",
    Busy => "busy": "Every connection a daemon's partitions share stayed in use past the wait (a daemon's own, retried).",
    NewerSchema => "newer_schema": "The store was written by a newer duetime.",
    Load => "load": "The stored state failed the core's load checks.",
    Database => "database": "The database refused a statement.",
    Aborted => "aborted": "The transaction was aborted (it may be retried).",
    PartitionsDiffer => "partitions_differ": "`--partitions` asked for another count than the store was made with.",
    OnePartitionOnly => "one_partition_only": "`--partitions` other than 1 on an SQLite store.",
    NoSuchPartition => "no_such_partition": "A partition the store does not have.",
    NoPair => "no_pair": "A transaction over two partitions asked for one twice, or on a store of one (a host bug).",
    Fenced => "fenced": "A daemon wrote to a partition it no longer holds (another claimed it, or its lease ran out); nothing was written.",
    NotPartitioned => "not_partitioned": "Partition ownership was asked of a store of one partition, which no daemon divides (a host bug).",
    MoveRefused => "move_refused": "A job's move to the partition its new concurrency key routes it to was refused by a state; nothing changed.",
}

/// A failure as every `--json` output spells it.
pub fn error(kind: ErrorKind, text: &str) -> Value {
    refusal(kind.name(), text)
}

/// A refusal named by the core's own name for it (`Refusal`'s) or a host's `ErrorKind`.
pub fn refusal(kind: &str, text: &str) -> Value {
    json!({"ok": false, "kind": kind, "error": text})
}

/// The kind of a store error, for `error`.
pub fn store_kind(e: &StoreError) -> ErrorKind {
    e.kind()
}

pub fn time(t: Timestamp) -> Value {
    Value::String(t.to_string())
}

pub fn time_opt(t: Option<Timestamp>) -> Value {
    t.map_or(Value::Null, time)
}

/// A job's view: what `list` prints per job and what commands answer with.
pub fn view(v: &JobView) -> Value {
    json!({
        "name": v.name.as_str(),
        "title": v.title,
        "status": v.status.name(),
        "schedule": v.schedule,
        "next_due": time_opt(v.next_due),
        "settled_through": time(v.settled_through),
        "last": v.last.as_ref().map(|l| json!({
            "run": l.run.to_string(),
            "at": time(l.at),
            "outcome": serde_json::to_value(l.outcome).unwrap_or(Value::Null),
        })),
        "missed_24h": v.missed_24h,
        "owed": v.owed,
        "paused": v.paused.as_ref().map(|p| json!({
            "by": match &p.by { PausedBy::Person { .. } => "person", PausedBy::System { .. } => "system" },
            "actor": match &p.by { PausedBy::Person { actor } => Value::from(actor.0.clone()), PausedBy::System { .. } => Value::Null },
            "reason": match &p.by { PausedBy::System { reason } => Value::from(reason.to_string()), PausedBy::Person { .. } => Value::Null },
            "note": p.note,
            "since": time(p.since),
        })),
        "running": v.running.map(|r| r.to_string()),
        "awaiting_approval": time_opt(v.awaiting_approval),
        "held_until": time_opt(v.held_until),
        "pending_confirmation": v.pending_confirmation,
    })
}

/// One journal line: when, which job, its type and kind, the line as `show` prints it,
/// and the entry's fields.
pub fn record(r: &Record) -> Value {
    let (kind_type, mut entry) = match &r.entry {
        Entry::Ledger(l) => ("ledger", serde_json::to_value(l).unwrap_or(Value::Null)),
        Entry::History(h) => ("history", serde_json::to_value(h).unwrap_or(Value::Null)),
    };
    let adopted = matches!(r.entry, Entry::History(History::Adopted { .. }));
    if let (Entry::History(History::Defined { schedule, .. }), Value::Object(m)) =
        (&r.entry, &mut entry)
    {
        m.insert("schedule".into(), Value::String(schedule.to_string()));
    }
    rewrite(&mut entry, adopted);
    let kind = entry
        .get(if kind_type == "ledger" {
            "kind"
        } else {
            "what"
        })
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "at": time(r.at),
        "job": r.job.as_str(),
        "type": kind_type,
        "kind": kind,
        "text": duetime::Effect::Journal(r.clone()).to_string(),
        "entry": entry,
    })
}

/// Which core field names hold instants, durations and ids (see `record`).
const INSTANTS: &[&str] = &["at", "until", "to", "from", "since", "instant"];
const DURATIONS: &[&str] = &["waited", "asked", "running_for", "retry_after", "ttl"];

/// Rewrites the core's compact numbers in place. `adopted`: in `History::Adopted`, `from`
/// is the process the run came from, not an instant.
fn rewrite(v: &mut Value, adopted: bool) {
    match v {
        Value::Object(m) => rewrite_fields(m, adopted),
        Value::Array(items) => items.iter_mut().for_each(|i| rewrite(i, adopted)),
        _ => {}
    }
}

fn rewrite_fields(m: &mut Map<String, Value>, adopted: bool) {
    for (key, value) in m.iter_mut() {
        let Some(n) = value.as_i64() else {
            rewrite(value, adopted);
            continue;
        };
        let k = key.as_str();
        *value = match k {
            "run" => Value::String(format!("r{n}")),
            "fence" => Value::String(format!("f{n}")),
            "process" => Value::String(format!("p{n}")),
            "from" if adopted => Value::String(format!("p{n}")),
            _ if INSTANTS.contains(&k) => time(Timestamp::from_millis(n)),
            _ if DURATIONS.contains(&k) => {
                Value::String(Duration::from_millis(n.max(0) as u64).to_string())
            }
            _ => continue,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{
        Actor, Covers, Fence, JobName, LedgerEntry, LedgerKind, MissAction, MissCause, Outcome,
        ProcessId, RunId, Trigger,
    };

    /// The docs cannot drift from what `--json` prints: every kind of the host's own
    /// failures is named in docs/cli.md (written as code), read from `ErrorKind`'s table.
    /// (The core's refusal names are held to docs/ by the core's `tests/docs_drift.rs`.)
    #[test]
    fn every_failure_kind_json_can_print_is_in_the_cli_manual() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md");
        let manual = std::fs::read_to_string(path).expect("docs/cli.md");
        let missing: Vec<&str> = ErrorKind::ALL
            .iter()
            .map(|k| k.name())
            .filter(|name| !manual.contains(&format!("`{name}`")))
            .collect();
        assert!(missing.is_empty(), "docs/cli.md never names {missing:?}");
    }

    #[test]
    fn error_kinds_have_distinct_snake_case_names() {
        let names: std::collections::BTreeSet<&str> =
            ErrorKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        assert!(names
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
    }

    fn rec(entry: Entry) -> Value {
        record(&Record {
            at: Timestamp::from_secs(1_741_503_600),
            job: JobName::new("backup").unwrap(),
            entry,
        })
    }

    /// No number is left where a person expects a time, an id or a duration.
    fn only_counts(v: &Value, path: &str) {
        match v {
            Value::Object(m) => m
                .iter()
                .for_each(|(k, v)| only_counts(v, &format!("{path}.{k}"))),
            Value::Array(a) => a.iter().for_each(|v| only_counts(v, path)),
            Value::Number(_) => assert!(
                ["count", "attempt", "attempts"]
                    .iter()
                    .any(|k| path.ends_with(k)),
                "{path} is a bare number"
            ),
            _ => {}
        }
    }

    #[test]
    fn journal_lines_use_rfc_3339_and_spelled_ids() {
        let started = rec(Entry::History(History::Started {
            run: RunId(12),
            fence: Fence(3),
            attempt: 1,
            trigger: Trigger::CatchUp,
            covers: Some(Covers {
                from: Timestamp::from_secs(1_741_500_000),
                to: Timestamp::from_secs(1_741_503_600),
                count: 2,
            }),
            process: ProcessId(4),
            waited: Some(Duration::from_secs(90)),
        }));
        assert_eq!(started["at"], "2025-03-09T07:00:00Z");
        assert_eq!(started["kind"], "started");
        assert_eq!(started["entry"]["run"], "r12");
        assert_eq!(started["entry"]["fence"], "f3");
        assert_eq!(started["entry"]["process"], "p4");
        assert_eq!(started["entry"]["trigger"], "catch_up");
        assert_eq!(started["entry"]["covers"]["to"], "2025-03-09T07:00:00Z");
        assert_eq!(started["entry"]["waited"], "1m30s");
        only_counts(&started, "");
        let adopted = rec(Entry::History(History::Adopted {
            run: RunId(1),
            from: ProcessId(2),
            process: ProcessId(3),
        }));
        assert_eq!(adopted["entry"]["from"], "p2");
        let ledger = rec(Entry::Ledger(LedgerEntry {
            from: Timestamp::from_secs(0),
            to: Timestamp::from_secs(60),
            count: 2,
            kind: LedgerKind::Missed {
                cause: MissCause::Down,
                action: MissAction::CaughtUp { run: RunId(5) },
            },
        }));
        assert_eq!(ledger["type"], "ledger");
        assert_eq!(ledger["entry"]["action"]["run"], "r5");
        only_counts(&ledger, "");
        let settled = rec(Entry::History(History::Settled {
            run: RunId(5),
            attempt: 2,
            outcome: Outcome::AwaitingApproval {
                ttl: Duration::from_hours(4),
            },
        }));
        assert_eq!(settled["entry"]["outcome"]["ttl"], "4h");
        only_counts(&settled, "");
        let defined = rec(Entry::History(History::Defined {
            schedule: Box::new(duetime::Schedule::cron("30 2 * * *", None).unwrap()),
            from: Timestamp::from_secs(0),
            actor: Actor::new("jobs-file"),
        }));
        assert_eq!(defined["entry"]["schedule"], "cron 30 2 * * *");
        only_counts(&defined, "");
    }
}
