//! Wire versions (issue 48, item 5): a line naming `"wire":2` gets a command's reply tagged
//! by `outcome`, with no Rust `Ok`/`Err` keys; a line without `wire` is version 1, answered
//! as it always was; a version this core does not answer is a typed error naming the ones
//! it does (docs/wire-format.md, "Wire versions").

use duetime_wire::{parse_line, parse_versioned_line, Core, Request, WireVersion};
use serde_json::{json, Value};

const T0: i64 = 1_750_000_000_000;

fn ask(core: &mut Core, request: &Value) -> Value {
    serde_json::from_str(&core.handle_line(&request.to_string())).expect("a JSON answer")
}

/// `request` naming wire version `wire`.
fn in_wire(request: &Value, wire: Value) -> Value {
    let mut request = request.clone();
    request["wire"] = wire;
    request
}

fn step(event: Value) -> Value {
    json!({"op": "step", "now": {"wall": T0, "mono": 0}, "event": event})
}

fn upsert(name: &str, period: u64) -> Value {
    step(json!({"event": "upsert", "actor": "alice",
        "def": {"name": name, "schedule": {"kind": "every", "period": period, "offset": 0}}}))
}

/// The one reply among an answer's effects.
fn reply(answer: &Value) -> Value {
    let effects = answer["effects"].as_array().expect("effects");
    let replies: Vec<&Value> = effects.iter().filter(|e| e["effect"] == "reply").collect();
    assert_eq!(replies.len(), 1, "{answer}");
    replies[0].clone()
}

#[test]
fn version_2_writes_a_carried_out_command_as_done_with_the_jobs_view() {
    let mut core = Core::default();
    let a = ask(&mut core, &in_wire(&upsert("hello", 60_000), json!(2)));
    let r = reply(&a);
    assert_eq!(r["outcome"], "done", "{r}");
    assert_eq!(r["job"], "hello");
    assert_eq!(r["view"]["name"], "hello");
    assert_eq!(r["view"]["status"], "no_run");
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys.len(),
        4,
        "effect, outcome, job, view and nothing else: {r}"
    );
    assert!(a.get("refused").is_none(), "{a}");
    // Its text: the two tags first, then the job, then the view.
    let text = core.handle_line(&in_wire(&upsert("other", 60_000), json!(2)).to_string());
    assert!(
        text.contains(r#"{"effect":"reply","outcome":"done","job":"other","view":{"name":"other""#),
        "{text}"
    );
}

#[test]
fn version_2_writes_a_refused_command_as_refused_with_the_refusal() {
    let mut core = Core::default();
    let a = ask(&mut core, &in_wire(&upsert("fast", 10_000), json!(2)));
    let r = reply(&a);
    assert_eq!(r["outcome"], "refused", "{r}");
    assert_eq!(r["job"], "fast");
    assert_eq!(r["refusal"]["refusal"], "invalid");
    assert_eq!(r["refusal"]["error"]["error"], "every_shorter_than_tick");
    assert!(r.get("view").is_none() && r.get("result").is_none(), "{r}");
    assert_eq!(
        a["refused"], r["refusal"],
        "the step names the refusal beside the effects"
    );
    let pause = step(json!({"event": "pause", "job": "nope", "actor": "me", "note": ""}));
    let text = core.handle_line(&in_wire(&pause, json!(2)).to_string());
    assert_eq!(
        text,
        r#"{"ok":true,"effects":[{"effect":"reply","outcome":"refused","job":null,"refusal":{"refusal":"not_found","job":"nope"}}],"refused":{"refusal":"not_found","job":"nope"}}"#
    );
}

#[test]
fn version_2_writes_a_command_about_no_one_job_as_done_with_a_null_view() {
    let mut core = Core::default();
    ask(&mut core, &upsert("hello", 60_000));
    let forget = step(json!({"event": "forget_actor", "actor": "alice"}));
    let r = reply(&ask(&mut core, &in_wire(&forget, json!(2))));
    assert_eq!(r["outcome"], "done", "{r}");
    assert_eq!(r["job"], Value::Null, "{r}");
    assert_eq!(r["view"], Value::Null, "{r}");
    assert!(
        r.as_object().unwrap().contains_key("view"),
        "always written: {r}"
    );
}

/// A line without `wire`, with `"wire":1` or with `"wire":null` is version 1: the reply is
/// serde's `Result`, byte for byte what it was before version 2.
#[test]
fn version_1_lines_are_answered_as_before() {
    let pause = step(json!({"event": "pause", "job": "nope", "actor": "me", "note": ""}));
    let before = r#"{"ok":true,"effects":[{"effect":"reply","job":null,"result":{"Err":{"refusal":"not_found","job":"nope"}}}],"refused":{"refusal":"not_found","job":"nope"}}"#;
    for request in [
        pause.clone(),
        in_wire(&pause, json!(1)),
        in_wire(&pause, Value::Null),
    ] {
        assert_eq!(
            Core::default().handle_line(&request.to_string()),
            before,
            "{request}"
        );
    }
    let mut core = Core::default();
    let r = reply(&ask(&mut core, &upsert("hello", 60_000)));
    assert_eq!(r["result"]["Ok"]["name"], "hello", "{r}");
    assert!(r.get("outcome").is_none(), "{r}");
}

/// The versions differ in a step's replies and nothing else: the same steps on two cores,
/// one in each version, answer the same once each v1 reply is written as v2's.
#[test]
fn the_versions_differ_only_in_replies() {
    let (mut one, mut two) = (Core::default(), Core::default());
    let events = [
        upsert("a", 60_000),
        upsert("fast", 10_000),
        step(json!({"event": "process_started", "process": 1})),
        step(json!({"event": "run_now", "job": "a", "actor": "me"})),
        step(json!({"event": "forget_actor", "actor": "me"})),
        step(json!({"event": "pause", "job": "a", "actor": "me", "note": "x"})),
        step(json!({"event": "remove", "job": "a", "actor": "me"})),
        json!({"op": "jobs", "now": T0}),
        json!({"op": "next_wake"}),
        json!({"op": "save"}),
    ];
    for request in events {
        let (a1, a2) = (
            ask(&mut one, &request),
            ask(&mut two, &in_wire(&request, json!(2))),
        );
        assert_eq!(a2["ok"], true, "{request}: {a2}");
        assert_eq!(as_v2(a1), a2, "{request}");
    }
    assert_eq!(one.state(), two.state());
}

/// A version 1 answer with its replies written as version 2 writes them.
fn as_v2(mut answer: Value) -> Value {
    let effects = answer.get_mut("effects").and_then(Value::as_array_mut);
    for effect in effects.into_iter().flatten() {
        let Some(result) = effect.as_object_mut().and_then(|e| e.remove("result")) else {
            continue;
        };
        if let Some(view) = result.get("Ok") {
            effect["outcome"] = "done".into();
            effect["view"] = view.clone();
        } else {
            effect["outcome"] = "refused".into();
            effect["refusal"] = result["Err"].clone();
        }
    }
    answer
}

#[test]
fn an_unknown_wire_version_is_a_typed_error_naming_the_versions_answered() {
    let mut core = Core::default();
    ask(&mut core, &upsert("hello", 60_000));
    let saved = core.handle_line(r#"{"op":"save"}"#);
    for wire in [
        json!(3),
        json!(0),
        json!(-1),
        json!(2.5),
        json!("2"),
        json!(true),
        json!([2]),
    ] {
        for request in [
            upsert("other", 60_000),
            json!({"op": "save"}),
            json!({"op": "nope"}),
        ] {
            let a = ask(&mut core, &in_wire(&request, wire.clone()));
            assert_eq!(a["ok"], false, "{wire}: {a}");
            assert_eq!(a["error"]["kind"], "unknown_wire_version", "{wire}: {a}");
            assert_eq!(a["error"]["field"], "wire", "{a}");
            let message = a["error"]["message"].as_str().unwrap();
            assert!(message.contains("accepted: 1, 2"), "{message}");
        }
    }
    assert_eq!(
        core.handle_line(r#"{"op":"save"}"#),
        saved,
        "nothing changed"
    );
    let a = ask(&mut core, &json!({"wire": 9}));
    assert_eq!(
        a["error"]["kind"], "unknown_wire_version",
        "before the missing op: {a}"
    );
}

#[test]
fn version_says_which_versions_are_answered() {
    let mut core = Core::default();
    let format = duetime::FORMAT_VERSION;
    assert_eq!(
        core.handle_line(r#"{"op":"version"}"#),
        format!(
            r#"{{"ok":true,"version":{{"wire":1,"state_format":{format},"wire_versions":[1,2]}}}}"#
        )
    );
    assert_eq!(
        core.handle_line(r#"{"op":"version","wire":2}"#),
        format!(
            r#"{{"ok":true,"version":{{"wire":2,"state_format":{format},"wire_versions":[1,2]}}}}"#
        )
    );
    assert_eq!(duetime_wire::WIRE_VERSION, 2);
}

/// Errors are written alike in both versions: a bad line naming version 2 is refused as
/// the same line without it is.
#[test]
fn errors_are_the_same_in_both_versions() {
    for request in [
        json!({"op": "step", "now": {"wall": "soon", "mono": 0}, "event": {"event": "tick", "process": 1, "held": []}}),
        json!({"op": "nope"}),
        json!({"op": "save", "nwo": 1}),
    ] {
        let one = Core::default().handle_line(&request.to_string());
        let two = Core::default().handle_line(&in_wire(&request, json!(2)).to_string());
        assert!(one.starts_with(r#"{"ok":false"#), "{one}");
        assert_eq!(one, two, "{request}");
    }
}

#[test]
fn parse_versioned_line_keeps_the_version_and_parse_line_drops_it() {
    let parsed = parse_versioned_line(r#"{"op":"save","wire":2}"#).unwrap();
    assert_eq!(parsed, (WireVersion::V2, Request::Save {}));
    let parsed = parse_versioned_line(r#"{"op":"save"}"#).unwrap();
    assert_eq!(parsed, (WireVersion::V1, Request::Save {}));
    assert_eq!(
        parse_line(r#"{"wire":2,"op":"save"}"#).unwrap(),
        Request::Save {}
    );
    assert!(parse_line(r#"{"op":"save","wire":3}"#).is_err());
}
