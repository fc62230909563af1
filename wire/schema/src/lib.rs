//! The wire format's schema and the table of enum tags docs/wire-format.md shows, both
//! generated from the types so neither can drift from them.

use serde_json::Value;

pub use duetime_wire::schema::schema;

/// The schema as checked in: pretty JSON with a final newline.
pub fn schema_text() -> String {
    serde_json::to_string_pretty(&schema()).unwrap_or_default() + "\n"
}

/// A markdown table: each enum of the format, the field that carries its tag (`-` for
/// one written as a plain string), and every tag it has.
pub fn tag_table() -> String {
    let schema = schema();
    let mut out = String::from("| type | tag field | tags |\n|---|---|---|\n");
    let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
        return out;
    };
    for (name, def) in defs {
        let (field, tags) = tags_of(def);
        if !tags.is_empty() {
            let tags: Vec<String> = tags.iter().map(|t| format!("`{t}`")).collect();
            out += &format!("| `{name}` | {field} | {} |\n", tags.join(", "));
        }
    }
    out
}

/// The tag field and the tags of one definition, in declaration order.
fn tags_of(def: &Value) -> (String, Vec<String>) {
    let mut field = "-".to_string();
    let mut tags = Vec::new();
    let plain = |v: &Value| v.as_str().map(str::to_string);
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        return (field, values.iter().filter_map(plain).collect());
    }
    let alternatives = def.get("oneOf").and_then(Value::as_array);
    for alt in alternatives.into_iter().flatten() {
        if let Some(values) = alt.get("enum").and_then(Value::as_array) {
            tags.extend(values.iter().filter_map(plain));
        } else if let Some(c) = alt.get("const").and_then(plain) {
            tags.push(c);
        }
        let props = alt.get("properties").and_then(Value::as_object);
        for (key, prop) in props.into_iter().flatten() {
            if let Some(c) = prop.get("const").and_then(plain) {
                field = format!("`{key}`");
                tags.push(c);
            }
        }
    }
    (field, tags)
}
