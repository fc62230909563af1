//! The wire format's JSON Schema, generated from the types (feature `schema`):
//! `docs/wire-format.schema.json` is this, checked in, and `wire/schema`'s test holds the
//! two equal.

use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

use crate::{Request, Response, Versions, WIRE_VERSION};

/// The whole format: a request line is a `Request`, a response line a `Response`; every
/// type they name is under `$defs`. Draft 2020-12.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let request = generator.subschema_for::<Request>();
    let response = generator.subschema_for::<Response<'_>>();
    let defs: serde_json::Map<String, Value> = generator.take_definitions(true);
    let versions = Versions::current();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("duetime wire format {WIRE_VERSION} (state format {})", versions.state_format),
        "description": "One JSON object a line. A request line is `request`; the core answers each with one `response` line. See docs/wire-format.md.",
        "x-wire-version": WIRE_VERSION,
        "x-state-format": versions.state_format,
        "properties": {
            "request": request.to_value(),
            "response": response.to_value(),
        },
        "$defs": defs,
    })
}
