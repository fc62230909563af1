//! One request line into a JSON object, stricter than `serde_json::Value` and clearer when
//! the line is refused (issue 48):
//!
//! - a key written twice in one object is refused, naming it (`Value` keeps the last, so
//!   `{"op":"next_wake","op":"save"}` saved);
//! - `NaN` and `Infinity` (what Python's `json.dumps` writes for such floats) are not JSON;
//!   instead of a bare `bad_line`, the field holding one is named;
//! - an integer beyond 64 bits (`18446744073709551616`) is one serde reads as a float, and
//!   a field expecting an integer then said "floating point"; `integer_out_of_range` says
//!   what the line held.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::decode::{render, steps, Step};
use crate::error::{ErrorKind, WireError};

/// The line as one JSON value, every object's keys distinct.
pub(crate) fn parse_value(line: &str) -> Result<Value, WireError> {
    match serde_json::from_str::<Strict>(line) {
        Ok(Strict(value)) => Ok(value),
        Err(e) if e.is_data() => Err(duplicate(line)),
        Err(e) => Err(non_numbers(line).unwrap_or_else(|| {
            WireError::new(
                ErrorKind::BadLine,
                None,
                format!("expected one JSON object on the line: {e}"),
            )
        })),
    }
}

/// The key written twice, found again with its path (only a refused line pays for that).
fn duplicate(line: &str) -> WireError {
    let mut de = serde_json::Deserializer::from_str(line);
    let (mut path, message) = match serde_path_to_error::deserialize::<_, Strict>(&mut de) {
        Err(e) => (steps(e.path()), e.into_inner().to_string()),
        Ok(_) => (Vec::new(), String::new()),
    };
    let Some((key, _)) = message
        .strip_prefix(DUPLICATE)
        .and_then(|rest| rest.rsplit_once('`'))
    else {
        return WireError::new(
            ErrorKind::BadLine,
            None,
            format!("expected one JSON object on the line: {message}"),
        );
    };
    path.push(Step::Key(key.to_string()));
    WireError::new(
        ErrorKind::BadField,
        Some(render("", &path)),
        "this key is written twice in one object; each key may appear once (which one \
         was meant cannot be told)",
    )
}

const DUPLICATE: &str = "duplicate key `";

/// A line refused as JSON because it holds `NaN`, `Infinity` or `-Infinity`: the field
/// that holds one, found by putting a marker string in its place.
fn non_numbers(line: &str) -> Option<WireError> {
    const MARK: &str = "\u{1}not a number";
    let mut marked = String::with_capacity(line.len());
    let mut last = 0;
    let mut word = None;
    for (start, end) in bare_tokens(line) {
        let token = &line[start..end];
        if matches!(token, "NaN" | "Infinity" | "-Infinity" | "+Infinity") {
            marked.push_str(&line[last..start]);
            marked.push_str("\"\\u0001not a number\"");
            last = end;
            word.get_or_insert(token);
        }
    }
    let word = word?;
    marked.push_str(&line[last..]);
    // A line that is not one object (`Infinity` alone, `[NaN]`) is a bad line whatever
    // it holds: no field of a request holds the word.
    let Ok(Strict(value @ Value::Object(_))) = serde_json::from_str::<Strict>(&marked) else {
        return None;
    };
    let path = find(&value, &Value::from(MARK))?;
    Some(WireError::new(
        ErrorKind::BadField,
        Some(render("", &path)),
        format!(
            "`{word}` is not a JSON number (Python's json.dumps writes it for such a float); \
             accepted: an integer (times and spans are integer milliseconds)"
        ),
    ))
}

/// The path of the first value equal to `wanted`, depth first.
fn find(value: &Value, wanted: &Value) -> Option<Vec<Step>> {
    if value == wanted {
        return Some(Vec::new());
    }
    let (step, mut rest) = match value {
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| Some((Step::Key(k.clone()), find(v, wanted)?)))?,
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| Some((Step::Index(i), find(v, wanted)?)))?,
        _ => return None,
    };
    rest.insert(0, step);
    Some(rest)
}

/// The byte ranges of the bare words and numbers of `line` outside its strings.
fn bare_tokens(line: &str) -> Vec<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
        } else if b == b'"' {
            in_string = true;
            i += 1;
        } else if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.') {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'-' | b'+' | b'.'))
            {
                i += 1;
            }
            tokens.push((start, i));
        } else {
            i += 1;
        }
    }
    tokens
}

/// A message serde gave for a float where an integer was expected, said again for an
/// integer the line wrote that is past 64 bits (serde_json reads those as floats): the
/// digits as written and the range accepted. Any other message is returned as it was.
pub(crate) fn integer_out_of_range(line: &str, message: String) -> String {
    const FLOAT: &str = "invalid type: floating point `";
    let Some((float, expected)) = message
        .strip_prefix(FLOAT)
        .and_then(|rest| rest.split_once("`, expected "))
    else {
        return message;
    };
    let Ok(float) = float.parse::<f64>() else {
        return message;
    };
    let written = bare_tokens(line)
        .into_iter()
        .map(|(s, e)| &line[s..e])
        .find(|t| {
            t.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
                && t.parse::<f64>().ok() == Some(float)
        });
    let range = match expected {
        "u64" => format!("0 to {}", u64::MAX),
        "i64" => format!("{} to {}", i64::MIN, i64::MAX),
        "u32" => format!("0 to {}", u32::MAX),
        "i32" => format!("{} to {}", i32::MIN, i32::MAX),
        _ => return message,
    };
    match written {
        Some(digits) => {
            format!("the integer {digits} is out of range for {expected}; accepted: {range}")
        }
        None => message,
    }
}

/// A JSON value whose objects have distinct keys.
struct Strict(Value);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!("{DUPLICATE}{key}`")));
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
