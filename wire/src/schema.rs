//! The wire format's JSON Schema, generated from the types (feature `schema`):
//! `docs/wire-format.schema.json` is this, checked in, and `wire/schema`'s test holds the
//! two equal.

use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use crate::{EffectV2, Request, Response, Versions, WireVersion, WIRE_VERSION, WIRE_VERSIONS};

/// The whole format: a request line is a `Request`, a response line a `Response` (wire
/// version 1) or a `ResponseV2` (version 2); every type they name is under `$defs`.
/// Draft 2020-12.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let request = generator.subschema_for::<Request>();
    let response = generator.subschema_for::<Response<'_>>();
    generator.subschema_for::<EffectV2<'_>>();
    let wire = generator.subschema_for::<WireVersion>().to_value();
    let mut defs: Map<String, Value> = generator.take_definitions(true);
    add_wire_field(&mut defs, &wire);
    every_reply_field_required(&mut defs);
    add_response_v2(&mut defs);
    let versions = Versions::of(WireVersion::NEWEST);
    let numbers: Vec<u32> = WIRE_VERSIONS.iter().map(|v| v.number()).collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("duetime wire format {WIRE_VERSION} (state format {})", versions.state_format),
        "description": "One JSON object a line. A request line is `request`; the core answers each with one line: `response` for a line of wire version 1 (no `wire` field), `response_v2` for one naming `\"wire\": 2`. See docs/wire-format.md.",
        "x-wire-version": WIRE_VERSION,
        "x-wire-versions": numbers,
        "x-state-format": versions.state_format,
        "properties": {
            "request": request.to_value(),
            "response": response.to_value(),
            "response_v2": {"$ref": "#/$defs/ResponseV2"},
        },
        "$defs": defs,
    })
}

/// Every request may name the wire version of its answer. The field is read before the
/// request is decoded (`version::wire_of`), not a field of `Request`'s variants, so it is
/// added to each of their schemas here.
fn add_wire_field(defs: &mut Map<String, Value>, wire: &Value) {
    let mut field = wire.clone();
    field["description"] =
        "The wire version to answer in (absent or null: 1; see `WireVersion`).".into();
    let alternatives = defs
        .get_mut("Request")
        .and_then(|r| r.get_mut("oneOf"))
        .and_then(Value::as_array_mut);
    for alternative in alternatives.into_iter().flatten() {
        if let Some(properties) = alternative
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            properties.insert("wire".to_string(), field.clone());
        }
    }
}

/// A reply of version 2 writes every field, `null` when none (`job`, `view`), so a host
/// may read them without a check. schemars leaves an `Option` out of `required` (and
/// `#[schemars(required)]` drops its `null`); the schema says both here.
fn every_reply_field_required(defs: &mut Map<String, Value>) {
    let alternatives = defs
        .get_mut("Reply")
        .and_then(|r| r.get_mut("oneOf"))
        .and_then(Value::as_array_mut);
    for alternative in alternatives.into_iter().flatten() {
        let names: Vec<Value> = alternative
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| Value::from(k.as_str())).collect())
            .unwrap_or_default();
        alternative["required"] = Value::Array(names);
    }
}

/// `ResponseV2`: `Response` with a step's effects as version 2 writes them (`EffectV2`);
/// every other answer is written alike in both versions.
fn add_response_v2(defs: &mut Map<String, Value>) {
    let Some(mut v2) = defs.get("Response").cloned() else {
        return;
    };
    replace_ref(&mut v2, "#/$defs/Effect", "#/$defs/EffectV2");
    v2["description"] = "An answer of wire version 2 (a request line naming `\"wire\": 2`): as `Response`, a step's effects as `EffectV2`.".into();
    defs.insert("ResponseV2".to_string(), v2);
}

/// Every `$ref` to `from` under `value`, made one to `to`.
fn replace_ref(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(from) {
                map.insert("$ref".to_string(), to.into());
            }
            map.values_mut().for_each(|v| replace_ref(v, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_ref(v, from, to)),
        _ => {}
    }
}
