//! The `state_bytes` target: arbitrary bytes into `serde_json::from_slice::<State>`, and
//! structured edits of a real state's JSON (so mutations reach the checks deep inside a
//! job's record instead of dying in the JSON syntax). A load is a typed error or a state that
//! passes `check_invariants()` and round-trips; never a panic, never an allocation bomb
//! (libFuzzer's `-malloc_limit_mb` catches one). A state that loads can be stepped: a `Tick`
//! at its next wake time and at the end of time, and views, must not panic either.

use arbitrary::{Arbitrary, Unstructured};
use duetime::{Event, Filter, Now, ProcessId, State, Timestamp};
use serde_json::{Map, Number, Value};

use crate::step_sequence::{check_round_trip, check_step};

/// States the structured mode edits: the committed format fixture (every kind of activity)
/// and a small one.
const BASES: [&str; 2] = [
    include_str!("../../tests/fixtures/state-v1.json"),
    r#"{"format":1,"config":{"tick":30000,"lease_ttl":60000,"grace":60000,"cancel_grace":60000,"manual_per_hour":20,"clock_jump":60000},"next_seq":1,"next_run":2,"next_fence":2,"jobs":{"0":{"def":{"name":"a","title":"","schedule":{"kind":"every","period":60000,"offset":0},"missed":"required","retries":5,"backoff":{"initial":30000,"max":600000},"timeout":600000,"safe_to_repeat":true,"legal_duty":false,"stall_after":900000},"frontier":120000,"activity":{"pending":[{"from":60000,"to":60000,"count":1,"cause":"down"}],"run":null}}},"processes":{"1":{"last_wall":120000,"last_mono":5}}}"#,
];

const MAX_EDITS: usize = 8;
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

/// Words the state's JSON uses, so an edit can swap one tag or enum value for another.
const WORDS: [&str; 40] = [
    "cron",
    "every",
    "at",
    "skip",
    "catch_up_once",
    "required",
    "buffer_one",
    "buffer_all",
    "down",
    "paused",
    "overlap",
    "clock_jump",
    "asleep",
    "rescheduled",
    "too_late",
    "removed",
    "schedule",
    "catch_up",
    "buffered",
    "retry",
    "repeat",
    "manual",
    "ok",
    "skipped",
    "failed",
    "timed_out",
    "failed_out",
    "lost",
    "person",
    "system",
    "UTC",
    "America/New_York",
    "Mars/Olympus",
    "*/15 * * * *",
    "0 30 2 * * *",
    "@hourly",
    "59 23 31 2 *",
    "0-59/0 * * * *",
    "* * * * * * *",
    "a",
];

const KEYS: [&str; 24] = [
    "format",
    "next_seq",
    "next_run",
    "next_fence",
    "jobs",
    "def",
    "frontier",
    "activity",
    "pending",
    "run",
    "retry",
    "manual",
    "manual_recent",
    "paused",
    "last",
    "missed_recent",
    "from",
    "to",
    "count",
    "cause",
    "schedule",
    "attempt",
    "cover",
    "covers",
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
    fn value(&self) -> Value {
        match self {
            Leaf::Null => Value::Null,
            Leaf::Bool(b) => Value::Bool(*b),
            Leaf::Number(k) => number(NUMBERS[usize::from(*k) % NUMBERS.len()]),
            Leaf::Int(n) => Value::from(*n),
            Leaf::Uint(n) => Value::from(*n),
            Leaf::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Leaf::Word(k) => Value::from(WORDS[usize::from(*k) % WORDS.len()]),
            Leaf::Text(s) => Value::from(s.chars().take(200).collect::<String>()),
        }
    }
}

fn number(n: i128) -> Value {
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
    fn value(&self) -> Value {
        match self {
            NewValue::Leaf(l) => l.value(),
            NewValue::Array(items) => {
                Value::Array(items.iter().take(MAX_ITEMS).map(Leaf::value).collect())
            }
            NewValue::Object(items) => {
                let mut map = Map::new();
                for (k, v) in items.iter().take(MAX_ITEMS) {
                    map.insert(KEYS[usize::from(*k) % KEYS.len()].to_string(), v.value());
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

#[derive(Arbitrary, Debug, Clone)]
pub struct Edits {
    pub base: u8,
    pub edits: Vec<Edit>,
}

fn count(v: &Value) -> usize {
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

fn node(doc: &mut Value, pick: u16) -> &mut Value {
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

impl Edits {
    pub fn render(&self) -> Vec<u8> {
        let mut doc: Value =
            serde_json::from_str(BASES[usize::from(self.base) % BASES.len()]).expect("bases load");
        for edit in self.edits.iter().take(MAX_EDITS) {
            match edit {
                Edit::Replace { node: n, value } => *node(&mut doc, *n) = value.value(),
                Edit::Nudge { node: n, by } => {
                    let target = node(&mut doc, *n);
                    let old = match &*target {
                        Value::Number(x) => {
                            x.as_i64().map(i128::from).or(x.as_u64().map(i128::from))
                        }
                        _ => None,
                    };
                    if let Some(old) = old {
                        let new = (old + i128::from(*by))
                            .clamp(i128::from(i64::MIN), i128::from(u64::MAX));
                        *target = number(new);
                    }
                }
                Edit::Remove { node: n } => {
                    let total = count(&doc);
                    if total > 1 {
                        let mut k = usize::from(*n) % (total - 1);
                        remove_nth(&mut doc, &mut k);
                    }
                }
                Edit::Copy { from, to } => {
                    let copy = node(&mut doc, *from).clone();
                    *node(&mut doc, *to) = copy;
                }
                Edit::Repeat { node: n, times } => {
                    if let Value::Array(a) = node(&mut doc, *n) {
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
                    if let Value::Object(m) = node(&mut doc, *n) {
                        m.insert(
                            KEYS[usize::from(*key) % KEYS.len()].to_string(),
                            value.value(),
                        );
                    }
                }
            }
        }
        serde_json::to_vec(&doc).expect("a JSON value serializes")
    }
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is `Edits`);
/// anything else is the bytes as they are (so seeds are plain JSON states).
pub fn state_bytes(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(edits) = Edits::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                check_state_bytes(&edits.render());
            }
        }
        _ => check_state_bytes(data),
    }
}

/// What the input decodes to.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => match Edits::arbitrary_take_rest(Unstructured::new(&data[1..])) {
            Ok(edits) => format!(
                "{edits:?}\nJSON: {}",
                String::from_utf8_lossy(&edits.render())
            ),
            Err(e) => format!("undecodable: {e}"),
        },
        _ => format!("JSON: {}", String::from_utf8_lossy(data)),
    }
}

/// Loading `json` gives a typed error or a sound state; a sound state round-trips, shows its
/// views and takes a tick (at its next wake time, at the end of time) and a restart.
pub fn check_state_bytes(json: &[u8]) {
    let Ok(state) = serde_json::from_slice::<State>(json) else {
        return;
    };
    let loaded = check_round_trip(&state);
    let wake = state.next_wake().unwrap_or(Timestamp::EPOCH);
    let _ = state.jobs(&Filter::default(), None, 50, wake);
    for (t, event) in [
        (
            wake,
            Event::Tick {
                process: ProcessId(1),
                held: Vec::new(),
            },
        ),
        (
            Timestamp::MAX,
            Event::Tick {
                process: ProcessId(7),
                held: Vec::new(),
            },
        ),
        (
            wake,
            Event::ProcessStarted {
                process: ProcessId(9),
            },
        ),
    ] {
        let (mut s, mut l) = (state.clone(), loaded.clone());
        check_step(&mut s, &mut l, Now::at(t), event);
        let _ = s.jobs(&Filter::default(), None, 50, t);
    }
}
