//! Every request of the wire format answered, and every kind of bad one refused with the
//! field at fault named (docs/wire-format.md, "Errors").

use duetime_wire::Core;
use serde_json::{json, Value};

fn ask(core: &mut Core, request: Value) -> Value {
    serde_json::from_str(&core.handle_line(&request.to_string())).expect("a JSON answer")
}

/// The refusal's `(kind, field)`, after checking that it is one.
fn refusal(answer: &Value) -> (String, String) {
    assert_eq!(answer["ok"], json!(false), "{answer}");
    let e = &answer["error"];
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{answer}"
    );
    (
        e["kind"].as_str().unwrap().to_string(),
        e["field"].as_str().unwrap_or("").to_string(),
    )
}

const T0: i64 = 1_750_000_000_000;

fn upsert(def: Value) -> Value {
    json!({"op": "step", "now": {"wall": T0, "mono": 0},
           "event": {"event": "upsert", "def": def, "actor": "alice"}})
}

fn good_def() -> Value {
    json!({"name": "nightly", "schedule": {"kind": "cron", "expr": "0 3 * * *", "tz": "Europe/London"}})
}

#[test]
fn a_step_answers_the_effects_and_the_reads_answer_what_the_state_holds() {
    let mut core = Core::default();
    let a = ask(&mut core, upsert(good_def()));
    assert_eq!(a["ok"], json!(true));
    assert_eq!(
        a["effects"].as_array().unwrap().last().unwrap()["effect"],
        "reply"
    );
    let wake = ask(&mut core, json!({"op": "next_wake"}));
    assert!(wake["wake"].as_i64().is_some_and(|t| t > T0), "{wake}");
    let job = ask(
        &mut core,
        json!({"op": "job", "name": "nightly", "now": T0}),
    );
    assert_eq!(job["job"]["name"], "nightly");
    assert_eq!(job["job"]["status"], "no_run");
    let none = ask(&mut core, json!({"op": "job", "name": "other", "now": T0}));
    assert_eq!(none, json!({"ok": true, "job": null}));
    let page = ask(
        &mut core,
        json!({"op": "jobs", "now": T0, "filter": {"name_prefix": "n"}}),
    );
    assert_eq!(page["page"]["items"].as_array().unwrap().len(), 1);
    let page = ask(
        &mut core,
        json!({"op": "jobs", "now": T0, "filter": {"status": "failed"}}),
    );
    assert_eq!(page["page"]["items"], json!([]));
    let p = ask(&mut core, json!({"op": "next_wake_for", "process": 3}));
    assert_eq!(p["ok"], json!(true));
    let v = ask(&mut core, json!({"op": "version"}));
    assert_eq!(v["version"]["wire"], 1);
    assert_eq!(v["version"]["state_format"], duetime::FORMAT_VERSION);
}

#[test]
fn save_then_load_gives_back_the_same_state_and_the_same_answers() {
    let mut core = Core::default();
    ask(&mut core, upsert(good_def()));
    ask(
        &mut core,
        json!({"op": "step", "now": {"wall": T0 + 1000, "mono": 1000},
                          "event": {"event": "process_started", "process": 1}}),
    );
    let saved = ask(&mut core, json!({"op": "save"}));
    let mut other = Core::default();
    let loaded = ask(&mut other, json!({"op": "load", "state": saved["state"]}));
    assert_eq!(loaded, json!({"ok": true}));
    assert_eq!(other.state(), core.state());
    assert_eq!(ask(&mut other, json!({"op": "save"})), saved);
    // The view's instant defaults to the store's clock once a process has spoken.
    assert_eq!(
        ask(&mut other, json!({"op": "job", "name": "nightly"}))["ok"],
        json!(true)
    );
}

#[test]
fn new_starts_over_with_a_checked_config() {
    let mut core = Core::default();
    ask(&mut core, upsert(good_def()));
    let mut config = serde_json::to_value(duetime::Config::default()).unwrap();
    assert_eq!(
        ask(&mut core, json!({"op": "new", "config": config})),
        json!({"ok": true})
    );
    assert_eq!(core.state().job_count(), 0);
    config["tick"] = json!(0);
    let (kind, field) = refusal(&ask(&mut core, json!({"op": "new", "config": config})));
    assert_eq!((kind.as_str(), field.as_str()), ("bad_field", "config"));
}

#[test]
fn lines_that_are_not_one_json_object_are_bad_lines() {
    let mut core = Core::default();
    for line in [
        "",
        "not json",
        "[1,2]",
        "3",
        "{\"op\":",
        "{\"op\":\"save\"} x",
    ] {
        let a: Value = serde_json::from_str(&core.handle_line(line)).unwrap();
        assert_eq!(refusal(&a).0, "bad_line", "{line:?}");
    }
}

#[test]
fn an_unknown_op_lists_the_ones_there_are_and_a_missing_op_is_named() {
    let mut core = Core::default();
    let a = ask(&mut core, json!({"op": "stpe"}));
    assert_eq!(refusal(&a), ("unknown_op".into(), "op".into()));
    assert!(a["error"]["message"].as_str().unwrap().contains("`step`"));
    assert_eq!(
        refusal(&ask(&mut core, json!({"now": 1}))),
        ("bad_field".into(), "op".into())
    );
    assert_eq!(
        refusal(&ask(&mut core, json!({"op": 7}))),
        ("bad_field".into(), "op".into())
    );
}

/// The field each broken request names.
#[test]
fn a_bad_field_is_named_by_its_path_however_deep() {
    let tick = |event: Value| json!({"op": "step", "now": {"wall": T0, "mono": 0}, "event": event});
    let mut bad_cron = good_def();
    bad_cron["schedule"]["expr"] = json!("61 * * * *");
    let mut bad_retries = good_def();
    bad_retries["retries"] = json!("five");
    let mut bad_missed = good_def();
    bad_missed["missed"] = json!("skipp");
    let mut bad_name = good_def();
    bad_name["name"] = json!("Nightly");
    let mut bad_kind = good_def();
    bad_kind["schedule"]["kind"] = json!("hourly");
    let cases = [
        (
            tick(json!({"event": "tick", "process": "p1", "held": []})),
            "event.process",
        ),
        (
            tick(json!({"event": "tick", "process": 1, "held": [{"run": 1, "fence": "f"}]})),
            "event.held[0].fence",
        ),
        (tick(json!({"event": "tick", "process": 1})), "event.held"),
        (
            tick(json!({"event": "tik", "process": 1, "held": []})),
            "event.event",
        ),
        (upsert(bad_cron), "event.def.schedule.expr"),
        (upsert(bad_retries), "event.def.retries"),
        (upsert(bad_missed), "event.def.missed"),
        (upsert(bad_name), "event.def.name"),
        (upsert(bad_kind), "event.def.schedule.kind"),
        (
            json!({"op": "step", "now": {"wall": T0}, "event": {}}),
            "now.mono",
        ),
        (
            json!({"op": "step", "now": {"wall": "2025-01-01", "mono": 0}, "event": {}}),
            "now.wall",
        ),
        (json!({"op": "step", "event": {"event": "tick"}}), "now"),
        (
            json!({"op": "step", "now": {"wall": T0, "mono": 0}}),
            "event",
        ),
        (json!({"op": "next_wake_for", "process": -1}), "process"),
        (
            json!({"op": "jobs", "now": T0, "filter": {"status": "broken"}}),
            "filter.status",
        ),
        (
            json!({"op": "jobs", "now": T0, "filter": {"prefix": "a"}}),
            "filter.prefix",
        ),
        (json!({"op": "jobs", "now": T0, "limit": "ten"}), "limit"),
        (json!({"op": "save", "nwo": 1}), "nwo"),
        (json!({"op": "job", "name": "nightly"}), "now"),
    ];
    let mut core = Core::default();
    for (request, field) in cases {
        let a = ask(&mut core, request.clone());
        assert_eq!(
            refusal(&a),
            ("bad_field".into(), field.into()),
            "{request} -> {a}"
        );
    }
    assert_eq!(
        core.state().job_count(),
        0,
        "no refused request changed the state"
    );
}

#[test]
fn messages_say_what_is_accepted() {
    let mut core = Core::default();
    let a = ask(
        &mut core,
        json!({"op": "step", "now": {"wall": T0, "mono": 0},
                                  "event": {"event": "tik"}}),
    );
    let m = a["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("unknown variant `tik`") && m.contains("`tick`"),
        "{m}"
    );
    let mut def = good_def();
    def["schedule"]["expr"] = json!("61 * * * *");
    let a = ask(&mut core, upsert(def));
    let m = a["error"]["message"].as_str().unwrap();
    assert!(m.contains("minute") && m.contains("61"), "{m}");
}

#[test]
fn a_state_from_a_newer_duetime_or_one_that_breaks_the_rules_is_a_typed_load_error() {
    let mut core = Core::default();
    ask(&mut core, upsert(good_def()));
    let saved = ask(&mut core, json!({"op": "save"}))["state"].clone();
    let mut newer = saved.clone();
    newer["format"] = json!(duetime::FORMAT_VERSION + 1);
    let a = ask(&mut core, json!({"op": "load", "state": newer}));
    assert_eq!(refusal(&a), ("newer_format".into(), "state".into()));
    let mut broken = saved.clone();
    broken["next_seq"] = json!(0);
    let a = ask(&mut core, json!({"op": "load", "state": broken}));
    assert_eq!(refusal(&a), ("inconsistent_state".into(), "state".into()));
    let mut wrong = saved.clone();
    wrong["jobs"]["0"]["def"]["retries"] = json!(-1);
    let a = ask(&mut core, json!({"op": "load", "state": wrong}));
    assert_eq!(
        refusal(&a),
        ("bad_field".into(), "state.jobs.0.def.retries".into())
    );
    let a = ask(&mut core, json!({"op": "load"}));
    assert_eq!(refusal(&a), ("bad_field".into(), "state".into()));
    assert_eq!(
        core.state().job_count(),
        1,
        "a refused load leaves the state as it was"
    );
}

/// Cut anywhere, a valid line is answered (ok or refused), never a panic.
#[test]
fn every_prefix_of_valid_lines_is_answered() {
    let mut core = Core::default();
    let lines = [
        upsert(good_def()).to_string(),
        json!({"op": "step", "now": {"wall": T0, "mono": 5, "boot": 9},
               "event": {"event": "tick", "process": 1, "held": [{"run": 1, "fence": 2}]}})
        .to_string(),
        json!({"op": "jobs", "now": T0, "filter": {"status": "ok"}, "limit": 3}).to_string(),
    ];
    for line in &lines {
        for cut in 0..=line.len() {
            let a: Value = serde_json::from_str(&core.handle_line(&line[..cut])).unwrap();
            assert!(a["ok"].is_boolean());
        }
    }
}
