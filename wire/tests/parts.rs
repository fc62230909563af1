//! State parts on the wire (issue 48, item 2): change tracking, the touched jobs and the
//! globals after a step, a state made from parts, and parts another process wrote put into
//! a loaded state; as request lines and as the text the packages hand to hosts, each with
//! the typed errors of a load.

use duetime_wire::Core;
use serde_json::{json, Value};

fn ask(core: &mut Core, request: Value) -> Value {
    serde_json::from_str(&core.handle_line(&request.to_string())).expect("a JSON answer")
}

fn ok(core: &mut Core, request: Value) -> Value {
    let a = ask(core, request);
    assert_eq!(a["ok"], json!(true), "{a}");
    a
}

const T0: i64 = 1_750_000_020_000;
const MINUTE: i64 = 60_000;

fn step(core: &mut Core, at: i64, event: Value) -> Value {
    ok(
        core,
        json!({"op": "step", "now": {"wall": at, "mono": at - T0}, "event": event}),
    )
}

fn define(core: &mut Core, name: &str) {
    let def = json!({"name": name, "schedule": {"kind": "every", "period": MINUTE, "offset": 0}});
    step(
        core,
        T0,
        json!({"event": "upsert", "def": def, "actor": "me"}),
    );
}

/// Three jobs, process 1 started, change tracking on and what it noted taken.
fn three_jobs() -> Core {
    let mut core = Core::default();
    for name in ["a", "b", "c"] {
        define(&mut core, name);
    }
    step(
        &mut core,
        T0 + 1_000,
        json!({"event": "process_started", "process": 1}),
    );
    ok(&mut core, json!({"op": "track_changes", "on": true}));
    core
}

fn save(core: &mut Core) -> Value {
    ok(core, json!({"op": "save"}))["state"].clone()
}

#[test]
fn a_step_touches_what_it_changed_and_parts_rebuild_the_same_state() {
    let mut core = three_jobs();
    let whole = ok(&mut core, json!({"op": "save_parts"}))["parts"].clone();
    assert_eq!(whole["jobs"].as_object().unwrap().len(), 3);
    assert_eq!(whole["globals"]["next_seq"], 3, "{whole}");
    // Nothing changed since: no job touched.
    let none = ok(&mut core, json!({"op": "take_parts"}));
    assert_eq!(none["parts"]["jobs"], json!({}));
    // A tick at a due time starts each job's run: all three touched; a removal is null.
    let tick = json!({"event": "tick", "process": 1, "held": []});
    step(&mut core, T0 + MINUTE, tick);
    let taken = ok(&mut core, json!({"op": "take_parts"}))["parts"].clone();
    assert_eq!(taken["jobs"].as_object().unwrap().len(), 3, "{taken}");
    let remove = json!({"event": "remove", "job": "b", "actor": "me"});
    step(&mut core, T0 + MINUTE, remove);
    let taken = ok(&mut core, json!({"op": "take_parts"}))["parts"].clone();
    assert_eq!(taken["jobs"], json!({"1": null}), "{taken}");
    // Parts saved whole make the same state again.
    let all = ok(&mut core, json!({"op": "save_parts"}))["parts"].clone();
    let mut again = Core::default();
    ok(&mut again, json!({"op": "load_parts", "parts": all}));
    assert_eq!(save(&mut again), save(&mut core));
}

#[test]
fn parts_another_process_wrote_bring_a_loaded_state_up_to_date() {
    let mut writer = three_jobs();
    let all = ok(&mut writer, json!({"op": "save_parts"}))["parts"].clone();
    let mut reader = Core::default();
    ok(&mut reader, json!({"op": "load_parts", "parts": all}));
    let tick = json!({"event": "tick", "process": 1, "held": []});
    step(&mut writer, T0 + MINUTE, tick);
    define(&mut writer, "d");
    let changed = ok(&mut writer, json!({"op": "take_parts"}))["parts"].clone();
    ok(&mut reader, json!({"op": "put_parts", "parts": changed}));
    assert_eq!(save(&mut reader), save(&mut writer));
}

#[test]
fn taking_parts_untracked_is_refused_rather_than_answered_empty() {
    let mut core = Core::default();
    define(&mut core, "a");
    let a = ask(&mut core, json!({"op": "take_parts"}));
    assert_eq!(a["error"]["kind"], "bad_field", "{a}");
    assert_eq!(a["error"]["field"], "op");
    assert!(a["error"]["message"]
        .as_str()
        .unwrap()
        .contains("track_changes"));
}

#[test]
fn bad_parts_are_refused_with_the_typed_errors_of_a_load() {
    let mut core = three_jobs();
    let all = ok(&mut core, json!({"op": "save_parts"}))["parts"].clone();
    let mut other = Core::default();
    let refused = |other: &mut Core, parts: Value| {
        let a = ask(other, json!({"op": "load_parts", "parts": parts}));
        assert_eq!(a["ok"], json!(false), "{a}");
        (
            a["error"]["kind"].as_str().unwrap().to_string(),
            a["error"]["field"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut null = all.clone();
    null["jobs"]["1"] = Value::Null;
    assert_eq!(
        refused(&mut other, null),
        ("bad_field".into(), "parts.jobs.1".into())
    );
    let mut newer = all.clone();
    newer["globals"]["format"] = json!(10_000);
    assert_eq!(
        refused(&mut other, newer),
        ("newer_format".into(), "parts".into())
    );
    let mut twice = all.clone();
    twice["globals"]["next_seq"] = json!(1);
    assert_eq!(refused(&mut other, twice).0, "inconsistent_state");
    let mut wrong = all.clone();
    wrong["globals"]["next_run"] = json!("many");
    assert_eq!(
        refused(&mut other, wrong),
        ("bad_field".into(), "parts.globals.next_run".into())
    );
    // Nothing of it was taken: the core still holds its empty state.
    assert_eq!(save(&mut other)["jobs"], json!({}));
}

#[test]
fn the_text_of_parts_is_what_the_lines_answer() {
    let mut core = three_jobs();
    let tick = json!({"event": "tick", "process": 1, "held": []});
    step(&mut core, T0 + MINUTE, tick.clone());
    let mut twin = three_jobs();
    step(&mut twin, T0 + MINUTE, tick);
    let line = ok(&mut core, json!({"op": "take_parts"}))["parts"].clone();
    let text = twin.take_parts_text().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text.globals).unwrap(),
        line["globals"]
    );
    assert_eq!(text.jobs.len(), 3);
    for (seq, record) in &text.jobs {
        let record: Value = serde_json::from_str(record.as_deref().unwrap()).unwrap();
        assert_eq!(record, line["jobs"][seq.to_string()]);
    }
    // Loaded from texts, the same state; a bad text is named with its place.
    let all = twin.save_parts_text().unwrap();
    let jobs: Vec<(duetime::JobSeq, String)> = all
        .jobs
        .iter()
        .map(|(s, t)| (*s, t.clone().unwrap()))
        .collect();
    let mut again = Core::default();
    again.load_parts_text(&all.globals, jobs.clone()).unwrap();
    assert_eq!(save(&mut again), save(&mut twin));
    let mut broken = jobs;
    broken[1].1.truncate(10);
    let e = again.load_parts_text(&all.globals, broken).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("parts.jobs.1"), "{e}");
    assert!(e.message.contains("column"), "{e}");
    let e = again.put_parts_text("{", vec![]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("parts.globals"), "{e}");
}
