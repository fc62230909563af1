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
    assert_eq!(
        (kind.as_str(), field.as_str()),
        ("bad_field", "config.tick")
    );
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

// Issue 48, "Other things found": each finding's request, refused (or answered) as it
// should be. Every one of these failed before the fix.

/// Finding 5: a partial config takes the defaults of its tick; an error names
/// `config.<field>` once, without the core's `config: ` prefix doubling the field.
#[test]
fn a_partial_config_takes_its_ticks_defaults_and_errors_name_the_config_field() {
    let mut core = Core::default();
    let a = ask(&mut core, json!({"op": "new", "config": {"tick": 5000}}));
    assert_eq!(a, json!({"ok": true}));
    let tick = duetime::Duration::from_secs(5);
    assert_eq!(*core.state().config(), duetime::Config::with_tick(tick));
    ask(&mut core, json!({"op": "new", "config": {}}));
    assert_eq!(*core.state().config(), duetime::Config::default());
    let a = ask(
        &mut core,
        json!({"op": "new", "config": {"coordination": "single_owner", "max_runs_per_process": 2}}),
    );
    assert_eq!(a, json!({"ok": true}));
    assert_eq!(core.state().config().max_runs_per_process, Some(2));
    for (config, field, said) in [
        (json!({"grace": 172_800_000}), "config.grace", "is over 1d"),
        (json!({"tick": 50_000_000}), "config.grace", "not given"),
        (json!({"tick": 500}), "config.tick", "under 1s"),
        (
            json!({"max_runs_per_process": 0}),
            "config.max_runs_per_process",
            "at least 1",
        ),
        (json!({"tik": 5000}), "config.tik", "`tick`"),
    ] {
        let a = ask(&mut core, json!({"op": "new", "config": config}));
        assert_eq!(refusal(&a), ("bad_field".into(), field.into()), "{a}");
        let m = a["error"]["message"].as_str().unwrap();
        assert!(m.contains(said) && !m.contains("config:"), "{m}");
    }
}

/// Finding 3: a misspelt zone is named at `tz`, not at the expression.
#[test]
fn a_bad_zone_is_named_at_its_own_field() {
    let mut core = Core::default();
    let mut def = good_def();
    def["schedule"]["tz"] = json!("America/New_Yrok");
    let a = ask(&mut core, upsert(def));
    assert_eq!(
        refusal(&a),
        ("bad_field".into(), "event.def.schedule.tz".into()),
        "{a}"
    );
    let mut def = good_def();
    def["schedule"]["dst"] = json!({"gap": "leap"});
    let a = ask(&mut core, upsert(def));
    assert_eq!(refusal(&a).1, "event.def.schedule.dst.gap", "{a}");
}

/// Finding 7: a key written twice is refused by its path, not taken last-wins.
#[test]
fn a_key_written_twice_is_refused_by_name() {
    let mut core = Core::default();
    let answer = |core: &mut Core, line: &str| -> Value {
        serde_json::from_str(&core.handle_line(line)).unwrap()
    };
    let a = answer(&mut core, r#"{"op":"next_wake","op":"save"}"#);
    assert_eq!(refusal(&a), ("bad_field".into(), "op".into()), "{a}");
    let line = upsert(good_def())
        .to_string()
        .replace(r#""name":"nightly""#, r#""name":"nightly","name":"daily""#);
    let a = answer(&mut core, &line);
    assert_eq!(
        refusal(&a),
        ("bad_field".into(), "event.def.name".into()),
        "{a}"
    );
    assert!(a["error"]["message"].as_str().unwrap().contains("twice"));
    assert_eq!(core.state().job_count(), 0);
}

/// Found by the `wire_request` fuzz target's first hour
/// (fuzz/regressions/wire_request/an-empty-key-names-no-field): an unknown key that is empty
/// was named by an empty path, which reads as no field at all. A key that is not a plain
/// name is named as its JSON text in brackets, wherever it stands.
#[test]
fn a_key_that_is_no_plain_name_is_named_in_brackets() {
    let mut core = Core::default();
    let cases = [
        (r#"{"op":"next_wake","":1}"#, r#"[""]"#),
        (r#"{"op":"next_wake","a.b":1}"#, r#"["a.b"]"#),
        (r#"{"op":"next_wake","a b":1}"#, r#"["a b"]"#),
        (r#"{"op":"next_wake","nwo":1}"#, "nwo"),
    ];
    for (line, field) in cases {
        let a: Value = serde_json::from_str(&core.handle_line(line)).unwrap();
        assert_eq!(
            refusal(&a),
            ("bad_field".into(), field.into()),
            "{line}: {a}"
        );
    }
    let mut def = good_def();
    def["schedule"][""] = json!(1);
    let a = ask(&mut core, upsert(def));
    assert_eq!(
        refusal(&a),
        ("bad_field".into(), r#"event.def.schedule[""]"#.into()),
        "{a}"
    );
    assert_eq!(core.state().job_count(), 0);
}

/// Found by the `wire_request` fuzz target's first hour
/// (fuzz/regressions/wire_request/infinity-alone-names-no-field): `Infinity` alone on a line
/// was refused as a bad field with an empty path. A line that is not one object is a bad
/// line, whatever word it holds.
#[test]
fn a_non_number_outside_any_object_is_a_bad_line() {
    let mut core = Core::default();
    for line in ["Infinity", "NaN", "-Infinity", "[NaN]", "[1, Infinity]"] {
        let a: Value = serde_json::from_str(&core.handle_line(line)).unwrap();
        assert_eq!(
            refusal(&a),
            ("bad_line".into(), String::new()),
            "{line}: {a}"
        );
        assert!(a["error"].get("field").is_none(), "{line}: {a}");
    }
}

/// Finding 7: `NaN` (Python's json.dumps of a float NaN) is named where it stands.
#[test]
fn nan_and_infinity_name_their_field() {
    let mut core = Core::default();
    for (line, field) in [
        (
            r#"{"op":"step","now":{"wall":NaN,"mono":0},"event":{"event":"process_started","process":1}}"#,
            "now.wall",
        ),
        (
            r#"{"op":"step","now":{"wall":1,"mono":-Infinity},"event":{"event":"process_started","process":1}}"#,
            "now.mono",
        ),
        (r#"{"op":"job","name":"NaN","now":Infinity}"#, "now"),
    ] {
        let a: Value = serde_json::from_str(&core.handle_line(line)).unwrap();
        assert_eq!(
            refusal(&a),
            ("bad_field".into(), field.into()),
            "{line} -> {a}"
        );
    }
}

/// Finding 7: an integer past 64 bits is said as the integer it is, not as a float.
#[test]
fn an_integer_past_64_bits_is_said_as_written() {
    let mut core = Core::default();
    let line = r#"{"op":"next_wake_for","process":18446744073709551616}"#;
    let a: Value = serde_json::from_str(&core.handle_line(line)).unwrap();
    assert_eq!(refusal(&a), ("bad_field".into(), "process".into()));
    let m = a["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("18446744073709551616") && m.contains("out of range") && !m.contains("floating"),
        "{m}"
    );
    let a: Value =
        serde_json::from_str(&core.handle_line(r#"{"op":"next_wake_for","process":1.5}"#)).unwrap();
    assert!(a["error"]["message"]
        .as_str()
        .unwrap()
        .contains("floating point"));
}

/// Finding 7: a misspelt optional field is refused, naming it and what is accepted.
#[test]
fn an_unknown_field_inside_a_request_is_refused_with_the_fields_accepted() {
    let mut core = Core::default();
    let mut def = good_def();
    def["missd"] = json!("catch_up_once");
    let a = ask(&mut core, upsert(def));
    assert_eq!(
        refusal(&a),
        ("bad_field".into(), "event.def.missd".into()),
        "{a}"
    );
    let m = a["error"]["message"].as_str().unwrap();
    assert!(m.contains("`missed`") && m.contains("`payload`"), "{m}");
    let mut def = good_def();
    def["schedule"]["zone"] = json!("UTC");
    let a = ask(&mut core, upsert(def));
    assert_eq!(refusal(&a).1, "event.def.schedule.zone", "{a}");
    let a = ask(
        &mut core,
        json!({"op": "step", "now": {"wall": T0, "mono": 0, "bot": 1},
               "event": {"event": "process_started", "process": 1}}),
    );
    assert_eq!(refusal(&a).1, "now.bot", "{a}");
    let a = ask(
        &mut core,
        json!({"op": "step", "now": {"wall": T0, "mono": 0},
               "event": {"event": "tick", "process": 1, "held": [{"run": 1, "fence": 1, "x": 0}]}}),
    );
    assert_eq!(refusal(&a).1, "event.held[0].x", "{a}");
    assert_eq!(core.state().job_count(), 0);
    // Every field given, defaults included, is known.
    let mut full =
        serde_json::to_value(serde_json::from_value::<duetime::JobDef>(good_def()).unwrap())
            .unwrap();
    full["overlap"] = json!("skip");
    full["payload"] = json!("x");
    full["requires_confirmation"] = json!(false);
    assert_eq!(ask(&mut core, upsert(full))["ok"], json!(true));
}

/// Finding 7: a schedule that never comes due is refused, saying why.
#[test]
fn a_schedule_that_never_comes_due_is_refused() {
    let mut core = Core::default();
    let mut feb30 = good_def();
    feb30["schedule"] = json!({"kind": "cron", "expr": "0 0 30 2 *"});
    let mut huge = good_def();
    huge["schedule"] = json!({"kind": "every", "period": 1u64 << 63, "offset": 0});
    for def in [feb30, huge] {
        let a = ask(&mut core, upsert(def.clone()));
        assert_eq!(
            refusal(&a),
            ("bad_field".into(), "event.def.schedule".into()),
            "{def} -> {a}"
        );
        assert!(a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no due time"));
    }
    let mut leap = good_def();
    leap["schedule"] = json!({"kind": "cron", "expr": "0 0 29 2 *"});
    assert_eq!(ask(&mut core, upsert(leap))["ok"], json!(true));
}

/// Finding 7: a stored state that is not JSON, loaded by its text, is placed in that text.
#[test]
fn load_text_places_errors_in_the_states_own_text() {
    let mut core = Core::default();
    ask(&mut core, upsert(good_def()));
    let saved = ask(&mut core, json!({"op": "save"}))["state"].to_string();
    let mut other = Core::default();
    assert_eq!(other.load_text(&saved), r#"{"ok":true}"#);
    assert_eq!(other.state(), core.state());
    let a: Value = serde_json::from_str(&other.load_text("")).unwrap();
    assert_eq!(refusal(&a), ("bad_field".into(), "state".into()));
    let m = a["error"]["message"].as_str().unwrap();
    assert!(m.contains("line 1 column 0"), "{m}");
    let a: Value = serde_json::from_str(&other.load_text("{\"format\":")).unwrap();
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("column 10"),
        "{a}"
    );
    assert_eq!(
        other.state(),
        core.state(),
        "a refused load changes nothing"
    );
}

/// Finding 8, as docs/wire-format.md tells a host to read it: a refused command is an
/// `"ok":true` step whose `reply` effect holds `{"Err": Refusal}`.
#[test]
fn a_refused_upsert_is_an_ok_step_whose_reply_holds_err() {
    let mut core = Core::default();
    let fast =
        json!({"name": "fast", "schedule": {"kind": "every", "period": 10_000, "offset": 0}});
    let a = ask(&mut core, upsert(fast));
    assert_eq!(a["ok"], json!(true), "{a}");
    let effects = a["effects"].as_array().unwrap();
    let reply = effects
        .iter()
        .find(|e| e["effect"] == "reply")
        .expect("a reply");
    assert_eq!(reply["job"], "fast");
    let err = &reply["result"]["Err"];
    assert_eq!(err["refusal"], "invalid", "{reply}");
    assert_eq!(err["error"]["error"], "every_shorter_than_tick", "{reply}");
    assert!(reply["result"].get("Ok").is_none());
    assert_eq!(core.state().job_count(), 0, "the job was not defined");
}

/// Finding 8: a host that reads no reply lost a refused upsert without a word. The step's
/// answer says so beside its effects (`refused`, the reply's `Err`), and says nothing of
/// the kind when the command was carried out.
#[test]
fn a_refused_command_is_named_in_the_step_answer_itself() {
    let mut core = Core::default();
    let fast =
        json!({"name": "fast", "schedule": {"kind": "every", "period": 10_000, "offset": 0}});
    let a = ask(&mut core, upsert(fast));
    assert_eq!(a["refused"]["refusal"], "invalid", "{a}");
    assert_eq!(
        a["refused"]["error"]["error"], "every_shorter_than_tick",
        "{a}"
    );
    let a = ask(&mut core, upsert(good_def()));
    assert!(a.get("refused").is_none(), "{a}");
    let tick = json!({"op": "step", "now": {"wall": T0, "mono": 0},
        "event": {"event": "tick", "process": 1, "held": []}});
    assert!(ask(&mut core, tick).get("refused").is_none());
}

/// Finding 4, its wire half: `limit: 0` answered one job; it is refused.
#[test]
fn a_page_of_zero_jobs_is_refused() {
    let mut core = Core::default();
    ask(&mut core, upsert(good_def()));
    let a = ask(&mut core, json!({"op": "jobs", "now": T0, "limit": 0}));
    assert_eq!(refusal(&a), ("bad_field".into(), "limit".into()), "{a}");
    let a = ask(&mut core, json!({"op": "jobs", "now": T0, "limit": 1}));
    assert_eq!(a["page"]["items"].as_array().unwrap().len(), 1);
}
