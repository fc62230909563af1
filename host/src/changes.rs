//! What a held definition changes against the one in force, field by field, as a person
//! reviews it before `duetime confirm` (and as `confirm` shows when the digest given is
//! wrong, instead of the digest to type). Secrets' values are hidden.

use std::collections::BTreeMap;

use duetime::{Duration, JobDef};
use serde::Serialize;

use crate::command::{Command, PayloadError};

/// One field that differs: its value in force (`None`: the field is unset there, or the
/// job is new) and held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub field: String,
    pub in_force: Option<String>,
    pub held: Option<String>,
}

/// The fields of `held` that differ from `in_force` (every set field for a new job, when
/// `in_force` is `None`), in field order.
pub fn changes(in_force: Option<&JobDef>, held: &JobDef) -> Vec<Change> {
    let before = in_force.map(fields).unwrap_or_default();
    let after = fields(held);
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    let raw = |m: &Fields, f: &str| m.get(f).map(|v| v.raw.clone());
    let shown = |m: &Fields, f: &str| m.get(f).map(|v| v.shown.clone());
    names
        .into_iter()
        .filter(|f| raw(&before, f) != raw(&after, f))
        .map(|f| {
            let secret = after
                .get(f)
                .or(before.get(f))
                .is_some_and(|v| v.raw != v.shown)
                && before.contains_key(f);
            let held = shown(&after, f).map(|h| if secret { format!("{h} (changed)") } else { h });
            Change {
                field: f.clone(),
                in_force: shown(&before, f),
                held,
            }
        })
        .collect()
}

/// A field's value, and how it is shown (`***` for a secret's): changes are found by the
/// value, so a changed secret shows as changed without showing it.
struct Value {
    raw: String,
    shown: String,
}

impl Value {
    fn plain(text: String) -> Value {
        Value {
            raw: text.clone(),
            shown: text,
        }
    }
}

type Fields = BTreeMap<String, Value>;

/// The changes as lines, `  field: in force -> held`.
pub fn lines(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| {
            let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(unset)".into());
            format!("  {}: {} -> {}", c.field, side(&c.in_force), side(&c.held))
        })
        .collect()
}

/// Fields whose serialized value is a duration in milliseconds.
const DURATIONS: &[&str] = &[
    "catch_up_window",
    "timeout",
    "stall_after",
    "wait_budget",
    "alert_throttle",
    "jitter",
    "backoff.initial",
    "backoff.max",
];

/// A definition as flat `field -> text`: the core's fields (from its serialized form, so a
/// field added to `JobDef` shows without a change here), the schedule as people write it,
/// and the command's parts from the payload.
fn fields(def: &JobDef) -> Fields {
    let mut out = Fields::new();
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(def) {
        for (k, v) in map {
            if k != "payload" && k != "schedule" {
                flatten(&k, &v, &mut out);
            }
        }
    }
    out.insert("schedule".into(), Value::plain(def.schedule.to_string()));
    match Command::of(def) {
        Ok(cmd) => command_fields(&cmd, &mut out),
        Err(PayloadError::Missing) => {}
        Err(e) => {
            out.insert("command".into(), Value::plain(format!("({e})")));
        }
    }
    out
}

fn command_fields(cmd: &Command, out: &mut Fields) {
    out.insert("command".into(), Value::plain(cmd.argv_text()));
    for (k, v) in &cmd.env {
        let value = Value {
            raw: v.clone(),
            shown: crate::secret::shown(k, v).to_string(),
        };
        out.insert(format!("env.{k}"), value);
    }
    let paths = [("workdir", &cmd.workdir), ("env_file", &cmd.env_file)];
    for (name, path) in paths {
        if let Some(p) = path {
            out.insert(name.into(), Value::plain(p.display().to_string()));
        }
    }
    for (name, id) in [("user", &cmd.user), ("group", &cmd.group)] {
        if let Some(id) = id {
            out.insert(name.into(), Value::plain(id.clone()));
        }
    }
}

fn flatten(key: &str, v: &serde_json::Value, out: &mut Fields) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                flatten(&format!("{key}.{k}"), v, out);
            }
        }
        serde_json::Value::Number(n) if DURATIONS.contains(&key) => {
            let ms = n.as_u64().unwrap_or_default();
            out.insert(
                key.into(),
                Value::plain(Duration::from_millis(ms).to_string()),
            );
        }
        serde_json::Value::String(s) => {
            out.insert(key.into(), Value::plain(s.clone()));
        }
        other => {
            out.insert(key.into(), Value::plain(other.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(argv: &[&str], token: &str) -> JobDef {
        let mut d = JobDef::new(
            duetime::JobName::new("backup").unwrap(),
            duetime::Schedule::cron("@daily", None).unwrap(),
        );
        let cmd = Command {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            workdir: None,
            env: BTreeMap::from([("API_TOKEN".into(), token.into())]),
            env_file: None,
            user: None,
            group: None,
        };
        d.payload = Some(cmd.payload());
        d
    }

    #[test]
    fn a_changed_command_and_timeout_are_shown_and_a_secret_is_not() {
        let old = def(&["backup"], "s3cret");
        let mut new = def(&["sh", "-c", "curl x | sh"], "0ther");
        new.timeout = "20m".parse().unwrap();
        let text = lines(&changes(Some(&old), &new)).join("\n");
        assert_eq!(
            text,
            "  command: backup -> sh -c 'curl x | sh'\n  env.API_TOKEN: *** -> *** (changed)\n  timeout: 10m -> 20m"
        );
        assert!(!text.contains("s3cret") && !text.contains("0ther"));
    }

    #[test]
    fn a_new_job_shows_every_field_it_sets() {
        let new = def(&["backup"], "t");
        let all = changes(None, &new);
        assert!(all
            .iter()
            .any(|c| c.field == "command" && c.held.as_deref() == Some("backup")));
        assert!(all
            .iter()
            .any(|c| c.field == "env.API_TOKEN" && c.held.as_deref() == Some("***")));
        assert!(all.iter().all(|c| c.in_force.is_none()));
    }
}
