//! W2: a definition as a person writes it reads back as itself. Hosts take definitions as
//! JSON (the daemon's job files, the bindings, `wire/`), and people leave out the fields
//! they keep at their defaults. So every definition the world sends is also written that
//! way, every field at the default `docs/semantics.md` states for it left out, and read
//! back: it must be the definition meant. A default the core reads otherwise (`retries`
//! of 5 read as 0, a `timeout` of ten minutes as another), or a field that its JSON form
//! drops when it is not at its default, is a definition a host would run differently
//! from what its author wrote.

use duetime::{DstPolicy, Fold, Gap, JobDef, Schedule};
use serde_json::{json, Value};

/// The fields `docs/semantics.md` gives a default, with that default in the JSON form
/// (durations in milliseconds).
fn documented_defaults() -> [(&'static str, Value); 9] {
    [
        ("title", json!("")),
        ("missed", json!("skip")),
        ("retries", json!(5)),
        ("backoff", json!({"initial": 30_000, "max": 600_000})),
        ("timeout", json!(600_000)),
        ("safe_to_repeat", json!(false)),
        ("legal_duty", json!(false)),
        ("stall_after", json!(900_000)),
        ("requires_confirmation", json!(false)),
    ]
}

/// What is wrong when `def`, written with every default left out, is read back, or when
/// a definition made by `JobDef::new` (as hosts and the bindings make one from a name and
/// a schedule) does not hold the documented defaults; `None` when neither.
pub fn misread(def: &JobDef) -> Option<String> {
    new_off_default(def)
        .or_else(|| read_back_wrong(def))
        .or_else(|| duration_typed_wrong(def))
}

/// The first of `def`'s durations that, typed as people type one in a jobs file (its
/// compact text, `1h30m`, `250ms`: what `Duration`'s Display writes and the docs show),
/// does not read back as itself.
fn duration_typed_wrong(def: &JobDef) -> Option<String> {
    let durations = [
        ("timeout", Some(def.timeout)),
        ("stall_after", Some(def.stall_after)),
        ("backoff.initial", Some(def.backoff.initial)),
        ("backoff.max", Some(def.backoff.max)),
        ("catch_up_window", def.catch_up_window),
        ("wait_budget", def.wait_budget),
        ("alert_throttle", def.alert_throttle),
        ("jitter", def.jitter),
        ("expect_success_within", def.expect_success_within),
    ];
    durations.into_iter().find_map(|(field, d)| {
        let d = d?;
        let typed = d.to_string();
        match typed.parse::<duetime::Duration>() {
            Ok(read) if read == d => None,
            read => Some(format!(
                "its {field} typed as `{typed}` reads back as {read:?}"
            )),
        }
    })
}

/// The first documented default that `JobDef::new` does not give.
fn new_off_default(def: &JobDef) -> Option<String> {
    let made = JobDef::new(def.name.clone(), def.schedule.clone());
    let Ok(Value::Object(fields)) = serde_json::to_value(&made) else {
        return Some("JobDef::new's definition is not written as a JSON object".to_string());
    };
    documented_defaults()
        .into_iter()
        // (A field the JSON leaves out is at its default: the read-back says whether it is.)
        .find(|(field, default)| fields.get(*field).is_some_and(|v| v != default))
        .map(|(field, default)| {
            format!(
                "JobDef::new gives {field} {:?}, the docs' default is {default}",
                fields.get(field)
            )
        })
}

fn read_back_wrong(def: &JobDef) -> Option<String> {
    let mut written = match serde_json::to_value(def) {
        Ok(Value::Object(fields)) => fields,
        other => return Some(format!("it is written as {other:?}, not a JSON object")),
    };
    let mut left_out = Vec::new();
    for (field, default) in documented_defaults() {
        if written.get(field) == Some(&default) {
            written.remove(field);
            left_out.push(field);
        }
    }
    // A cron schedule's zone is UTC when none is given (`docs/wire-format.md`).
    if let Some(Value::Object(schedule)) = written.get_mut("schedule") {
        if schedule.get("tz") == Some(&json!("UTC")) {
            schedule.remove("tz");
            left_out.push("schedule's tz");
        }
    }
    let text = Value::Object(written).to_string();
    match serde_json::from_str::<JobDef>(&text) {
        Ok(read) if read == *def => None,
        Ok(read) => Some(format!(
            "written with {} left out, it reads back as another definition: {}",
            left_out.join(", "),
            first_difference(def, &read)
        )),
        Err(e) => Some(format!("written as `{text}`, it does not read back: {e}")),
    }
}

/// H2 around a definition people sent: its digest (what a person confirms) is not the
/// digest of the same definition under another daylight-saving policy, cron's default
/// included, so confirming one policy never confirms another. `None` when it is not.
pub fn digest_shared(def: &JobDef) -> Option<String> {
    let Schedule::Cron(cron) = &def.schedule else {
        return None;
    };
    let digest = def.digest();
    let mut policies = vec![None];
    for gap in [Gap::RunAtGapEnd, Gap::Skip] {
        for fold in [Fold::First, Fold::Last, Fold::Both] {
            policies.push(Some(DstPolicy { gap, fold }));
        }
    }
    policies
        .into_iter()
        .filter(|p| *p != cron.explicit_policy())
        .find(|p| {
            let mut other = def.clone();
            other.schedule = Schedule::Cron(cron.clone().with_dst(*p));
            other.digest() == digest
        })
        .map(|p| {
            let other = p.map_or("cron's default".to_string(), |p| p.to_string());
            format!(
                "its digest {digest} is also the digest of the same definition under the policy {other}"
            )
        })
}

/// The first field that differs between what was meant and what was read.
fn first_difference(meant: &JobDef, read: &JobDef) -> String {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) =
        (serde_json::to_value(meant), serde_json::to_value(read))
    else {
        return "(not comparable as JSON)".to_string();
    };
    let keys: std::collections::BTreeSet<String> = a.keys().chain(b.keys()).cloned().collect();
    let differs = keys.into_iter().find(|k| a.get(k) != b.get(k));
    differs.map_or("(the same JSON)".to_string(), |k| {
        format!("{k} meant {:?}, read {:?}", a.get(&k), b.get(&k))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{Duration, JobName, Schedule};

    #[test]
    fn a_definition_at_every_default_and_one_off_them_both_read_back() {
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        let mut def = JobDef::new(JobName::new("sync").unwrap(), hourly);
        assert_eq!(misread(&def), None);
        def.retries = 0;
        def.requires_confirmation = true;
        def.timeout = Duration::from_secs(30);
        assert_eq!(misread(&def), None);
    }
}
