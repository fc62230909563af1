//! Decoding one part of a request into a core type, with the field at fault named.
//!
//! `serde_path_to_error` follows the path while serde walks ordinary structs, maps and
//! sequences. Inside an internally tagged enum (every `Event`, `Schedule`, `Outcome`) serde
//! first buffers the object and then decodes it from the buffer, out of the wrapper's
//! sight, so the path stops at the enum. `narrow` finds the rest by trial: the key whose
//! removal makes the error go away (or change) is the one to blame, and the search goes
//! on inside it. Only a failing request pays for it, within `NARROW_BUDGET` trials.

use std::fmt::Write;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ErrorKind, WireError};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// Most trial decodings one error may cost (each decodes the whole value again): enough to
/// reach the bottom of any event or definition, bounded for a large stored state.
const NARROW_BUDGET: usize = 96;

/// A value no variant is named: setting a key to it tells an enum's tag from its fields.
const NOT_A_VARIANT: &str = "\u{1}";

/// Decodes `value` as a `T`. On failure the error is `bad_field`, its `field` the path to
/// the culprit below `prefix` (the request's name for `value`, such as `event`).
pub fn decode<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, WireError> {
    let (reached, message) = match attempt::<T>(value) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let mut budget = NARROW_BUDGET;
    let path = match missing_field(&message) {
        // "missing field `x`" is the fault of the object lacking `x`; `x` is the field a
        // person must add.
        Some(x) => {
            let mut path = lacking::<T>(value, reached, x, &message, &mut budget);
            path.push(Step::Key(x.to_string()));
            path
        }
        None => {
            let mut path = reached;
            while let Some(child) = blamed_child::<T>(value, &path, &message, &mut budget) {
                path.push(child);
            }
            path
        }
    };
    Err(WireError::new(
        ErrorKind::BadField,
        Some(render(prefix, &path)),
        message,
    ))
}

/// The object at or below `from` whose lack of `x` the error is about: the first (in
/// document order) where giving it an `x` changes the error.
fn lacking<T: DeserializeOwned>(
    root: &Value,
    from: Vec<Step>,
    x: &str,
    message: &str,
    budget: &mut usize,
) -> Vec<Step> {
    let mut queue = std::collections::VecDeque::from([from.clone()]);
    while let Some(path) = queue.pop_front() {
        let Some(node) = at(root, &path) else {
            continue;
        };
        let children: Vec<Step> = match node {
            Value::Object(map) if !map.contains_key(x) && *budget > 0 => {
                *budget -= 1;
                let mut trial = root.clone();
                take(
                    &mut trial,
                    &path,
                    &Step::Key(x.to_string()),
                    Some(Value::Null),
                );
                if !matches!(attempt::<T>(&trial), Err((_, m)) if m == message) {
                    return path;
                }
                map.keys().cloned().map(Step::Key).collect()
            }
            Value::Object(map) => map.keys().cloned().map(Step::Key).collect(),
            Value::Array(items) => (0..items.len()).map(Step::Index).collect(),
            _ => Vec::new(),
        };
        for child in children {
            let mut next = path.clone();
            next.push(child);
            queue.push_back(next);
        }
    }
    from
}

/// One decoding, with the path serde reached and its message on failure.
fn attempt<T: DeserializeOwned>(value: &Value) -> Result<T, (Vec<Step>, String)> {
    serde_path_to_error::deserialize::<_, T>(value)
        .map_err(|e| (steps(e.path()), e.into_inner().to_string()))
}

/// A path as `serde_path_to_error` tracked it.
pub(crate) fn steps(path: &serde_path_to_error::Path) -> Vec<Step> {
    path.iter()
        .filter_map(|seg| match seg {
            serde_path_to_error::Segment::Seq { index } => Some(Step::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(Step::Key(key.clone())),
            _ => None,
        })
        .collect()
}

/// The child of the value at `path` to blame for `message`, if one is.
///
/// A child whose removal makes the error go away (or turn into another error) is to blame
/// outright. A required child whose removal only makes serde miss it is to blame only if
/// no other child is: a bad zone (`tz`) fails the same `CronSchedule::try_from` as a bad
/// `expr`, and removing `expr` merely makes it missing, while removing `tz` (UTC by
/// default) makes the error go away (issue 48 named `expr` for a misspelt zone).
fn blamed_child<T: DeserializeOwned>(
    root: &Value,
    path: &[Step],
    message: &str,
    budget: &mut usize,
) -> Option<Step> {
    let children: Vec<Step> = match at(root, path)? {
        Value::Object(map) => map.keys().cloned().map(Step::Key).collect(),
        Value::Array(items) => (0..items.len()).map(Step::Index).collect(),
        _ => return None,
    };
    let mut only_missed = Vec::new();
    for child in children {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let mut trial = root.clone();
        take(&mut trial, path, &child, None);
        match attempt::<T>(&trial) {
            Err((_, m)) if m == message => {}
            Err((_, m)) if missing_field(&m).is_some_and(|f| Step::Key(f.into()) == child) => {
                only_missed.push(child);
            }
            _ => return Some(child),
        }
    }
    only_missed
        .into_iter()
        .find(|child| !is_tag::<T>(root, path, child, message, budget))
}

/// Whether the required key `child` is an enum's tag rather than the culprit: named
/// nothing, it makes serde list variants other than the ones `message` lists (if any).
fn is_tag<T: DeserializeOwned>(
    root: &Value,
    path: &[Step],
    child: &Step,
    message: &str,
    budget: &mut usize,
) -> bool {
    if *budget == 0 {
        return true;
    }
    *budget -= 1;
    let mut trial = root.clone();
    take(&mut trial, path, child, Some(Value::from(NOT_A_VARIANT)));
    match attempt::<T>(&trial) {
        Err((_, m)) => {
            m.starts_with("unknown variant") && expected_part(&m) != expected_part(message)
        }
        Ok(_) => false,
    }
}

/// The value at `path`, if there is one.
fn at<'v>(root: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, step| match step {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(i),
    })
}

/// Removes `child` of the value at `path` from `root`, or puts `with` in its place.
fn take(root: &mut Value, path: &[Step], child: &Step, with: Option<Value>) {
    let mut v = root;
    for step in path {
        let next = match step {
            Step::Key(k) => v.get_mut(k),
            Step::Index(i) => v.get_mut(i),
        };
        match next {
            Some(n) => v = n,
            None => return,
        }
    }
    match (v, child, with) {
        (Value::Object(m), Step::Key(k), None) => drop(m.remove(k)),
        (Value::Object(m), Step::Key(k), Some(w)) => drop(m.insert(k.clone(), w)),
        (Value::Array(a), Step::Index(i), None) if *i < a.len() => drop(a.remove(*i)),
        (Value::Array(a), Step::Index(i), Some(w)) if *i < a.len() => a[*i] = w,
        _ => {}
    }
}

/// `x` of serde's "missing field `x`".
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// The "expected ..." half of a serde message.
fn expected_part(message: &str) -> Option<&str> {
    message.split_once(", expected ").map(|(_, e)| e)
}

/// `event.def.schedule.expr`, `event.held[0].fence`.
/// Whether a key can stand in a path as it is. An empty key, or one holding `.`, a
/// bracket, a quote, a space or a control character, would make the path ambiguous or
/// unreadable.
pub(crate) fn is_plain_name(key: &str) -> bool {
    !key.is_empty()
        && !key
            .chars()
            .any(|c| matches!(c, '.' | '[' | ']' | '"') || c.is_whitespace() || c.is_control())
}

/// A key that is not a plain name, as a path step: its JSON text in brackets (`[""]`,
/// `["a.b"]`), cut to 80 characters as every echoed text is.
pub(crate) fn quoted_key(key: &str) -> String {
    let cut = match key.char_indices().nth(80) {
        Some((i, _)) => &key[..i],
        None => key,
    };
    format!("[{}]", serde_json::Value::from(cut))
}

pub(crate) fn render(prefix: &str, path: &[Step]) -> String {
    let mut out = prefix.to_string();
    for step in path {
        match step {
            Step::Key(k) if is_plain_name(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Key(k) => out.push_str(&quoted_key(k)),
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}
