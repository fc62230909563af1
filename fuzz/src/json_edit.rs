//! Structured edits of a JSON document, shared by the targets whose input is JSON a program
//! wrote (a stored state, a request line, stored rows, a jobs file read as a table): a real
//! document is taken and a few nodes replaced, nudged, removed, copied or repeated, so
//! mutations reach the checks deep inside it instead of dying in the JSON syntax.

use arbitrary::Arbitrary;
use serde_json::{Map, Number, Value};

/// The words and keys an edit may write: the vocabulary of the document being edited, so an
/// edit can swap one tag or enum value for another.
pub struct Vocab {
    pub words: &'static [&'static str],
    pub keys: &'static [&'static str],
}

impl Vocab {
    fn word(&self, k: u8) -> &'static str {
        self.words[usize::from(k) % self.words.len()]
    }
    fn key(&self, k: u8) -> &'static str {
        self.keys[usize::from(k) % self.keys.len()]
    }
}

pub const MAX_EDITS: usize = 8;
const MAX_ITEMS: usize = 4;

/// Numbers where bounds live.
const NUMBERS: [i128; 16] = [
    0,
    1,
    -1,
    2,
    999,
    1000,
    1001,
    1 << 53,
    u32::MAX as i128,
    u32::MAX as i128 + 1,
    i64::MAX as i128,
    i64::MAX as i128 + 1,
    i64::MIN as i128,
    u64::MAX as i128,
    u64::MAX as i128 - 1,
    -62_135_596_800_000,
];

#[derive(Arbitrary, Debug, Clone)]
pub enum Leaf {
    Null,
    Bool(bool),
    Number(u8),
    Int(i64),
    Uint(u64),
    Float(f64),
    Word(u8),
    Text(String),
}

impl Leaf {
    pub fn value(&self, vocab: &Vocab) -> Value {
        match self {
            Leaf::Null => Value::Null,
            Leaf::Bool(b) => Value::Bool(*b),
            Leaf::Number(k) => number(NUMBERS[usize::from(*k) % NUMBERS.len()]),
            Leaf::Int(n) => Value::from(*n),
            Leaf::Uint(n) => Value::from(*n),
            Leaf::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Leaf::Word(k) => Value::from(vocab.word(*k)),
            Leaf::Text(s) => Value::from(s.chars().take(200).collect::<String>()),
        }
    }
}

pub fn number(n: i128) -> Value {
    if let Ok(u) = u64::try_from(n) {
        Value::from(u)
    } else {
        Value::from(i64::try_from(n).expect("listed numbers fit i64 or u64"))
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum NewValue {
    Leaf(Leaf),
    Array(Vec<Leaf>),
    Object(Vec<(u8, Leaf)>),
}

impl NewValue {
    pub fn value(&self, vocab: &Vocab) -> Value {
        match self {
            NewValue::Leaf(l) => l.value(vocab),
            NewValue::Array(items) => Value::Array(
                items
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|l| l.value(vocab))
                    .collect(),
            ),
            NewValue::Object(items) => {
                let mut map = Map::new();
                for (k, v) in items.iter().take(MAX_ITEMS) {
                    map.insert(vocab.key(*k).to_string(), v.value(vocab));
                }
                Value::Object(map)
            }
        }
    }
}

/// One edit; `node` picks a node of the document in depth-first order (modulo their count).
#[derive(Arbitrary, Debug, Clone)]
pub enum Edit {
    Replace {
        node: u16,
        value: NewValue,
    },
    /// A number nudged by a small amount (off-by-one at every bound).
    Nudge {
        node: u16,
        by: i8,
    },
    Remove {
        node: u16,
    },
    /// Node `to` becomes a copy of node `from` (whole records duplicated, moved, nested).
    Copy {
        from: u16,
        to: u16,
    },
    /// An array grows by a copy of its last item, `times` times.
    Repeat {
        node: u16,
        times: u8,
    },
    Insert {
        node: u16,
        key: u8,
        value: NewValue,
    },
}

pub fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(m) => m.values().map(count).sum(),
        _ => 0,
    }
}

/// One step down a document: an array index or an object key.
enum Seg {
    Index(usize),
    Key(String),
}

/// The path to the `n`-th node in depth-first pre-order (the root is 0).
fn path_to(v: &Value, n: &mut usize, path: &mut Vec<Seg>) -> bool {
    if *n == 0 {
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(a) => a.iter().enumerate().any(|(i, c)| {
            path.push(Seg::Index(i));
            path_to(c, n, path) || {
                path.pop();
                false
            }
        }),
        Value::Object(m) => m.iter().any(|(k, c)| {
            path.push(Seg::Key(k.clone()));
            path_to(c, n, path) || {
                path.pop();
                false
            }
        }),
        _ => false,
    }
}

pub fn node(doc: &mut Value, pick: u16) -> &mut Value {
    let mut n = usize::from(pick) % count(doc);
    let mut path = Vec::new();
    path_to(doc, &mut n, &mut path);
    let mut at = doc;
    for seg in path {
        at = match seg {
            Seg::Index(i) => &mut at[i],
            Seg::Key(k) => &mut at[k.as_str()],
        };
    }
    at
}

/// Removes the `n`-th node's child from its parent (the `n`-th node must not be the root).
fn remove_nth(v: &mut Value, n: &mut usize) -> bool {
    match v {
        Value::Array(a) => {
            for i in 0..a.len() {
                if *n == 0 {
                    a.remove(i);
                    return true;
                }
                *n -= 1;
                if remove_nth(&mut a[i], n) {
                    return true;
                }
            }
            false
        }
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if *n == 0 {
                    m.remove(&k);
                    return true;
                }
                *n -= 1;
                if remove_nth(m.get_mut(&k).expect("listed key"), n) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// Applies at most `MAX_EDITS` of `edits` to `doc`.
pub fn apply(doc: &mut Value, edits: &[Edit], vocab: &Vocab) {
    for edit in edits.iter().take(MAX_EDITS) {
        match edit {
            Edit::Replace { node: n, value } => *node(doc, *n) = value.value(vocab),
            Edit::Nudge { node: n, by } => {
                let target = node(doc, *n);
                let old = match &*target {
                    Value::Number(x) => x.as_i64().map(i128::from).or(x.as_u64().map(i128::from)),
                    _ => None,
                };
                if let Some(old) = old {
                    let new =
                        (old + i128::from(*by)).clamp(i128::from(i64::MIN), i128::from(u64::MAX));
                    *target = number(new);
                }
            }
            Edit::Remove { node: n } => {
                let total = count(doc);
                if total > 1 {
                    let mut k = usize::from(*n) % (total - 1);
                    remove_nth(doc, &mut k);
                }
            }
            Edit::Copy { from, to } => {
                let copy = node(doc, *from).clone();
                *node(doc, *to) = copy;
            }
            Edit::Repeat { node: n, times } => {
                if let Value::Array(a) = node(doc, *n) {
                    if let Some(last) = a.last().cloned() {
                        for _ in 0..(*times % 40) {
                            a.push(last.clone());
                        }
                    }
                }
            }
            Edit::Insert {
                node: n,
                key,
                value,
            } => {
                if let Value::Object(m) = node(doc, *n) {
                    m.insert(vocab.key(*key).to_string(), value.value(vocab));
                }
            }
        }
    }
}
