//! The `state_bytes` target: arbitrary bytes into `serde_json::from_slice::<State>`, and
//! structured edits of a real state's JSON (so mutations reach the checks deep inside a
//! job's record instead of dying in the JSON syntax). A load is a typed error or a state that
//! passes `check_invariants()` and round-trips; never a panic, never an allocation bomb
//! (libFuzzer's `-malloc_limit_mb` catches one). A state that loads can be stepped: a `Tick`
//! at its next wake time and at the end of time, and views, must not panic either.

use arbitrary::{Arbitrary, Unstructured};
use duetime::{Event, Filter, Now, ProcessId, State, Timestamp};
use serde_json::Value;

use crate::json_edit::{self, Edit, Vocab};

use crate::step_sequence::{check_round_trip, check_step};

/// States the structured mode edits: the committed format fixture (every kind of activity)
/// and a small one.
const BASES: [&str; 2] = [
    include_str!("../../tests/fixtures/state-v1.json"),
    r#"{"format":1,"config":{"tick":30000,"lease_ttl":60000,"grace":60000,"cancel_grace":60000,"manual_per_hour":20,"clock_jump":60000},"next_seq":1,"next_run":2,"next_fence":2,"jobs":{"0":{"def":{"name":"a","title":"","schedule":{"kind":"every","period":60000,"offset":0},"missed":"required","retries":5,"backoff":{"initial":30000,"max":600000},"timeout":600000,"safe_to_repeat":true,"legal_duty":false,"stall_after":900000},"frontier":120000,"activity":{"pending":[{"from":60000,"to":60000,"count":1,"cause":"down"}],"run":null}}},"processes":{"1":{"last_wall":120000,"last_mono":5}}}"#,
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

/// The state's vocabulary for `json_edit`.
const VOCAB: Vocab = Vocab {
    words: &WORDS,
    keys: &KEYS,
};

#[derive(Arbitrary, Debug, Clone)]
pub struct Edits {
    pub base: u8,
    pub edits: Vec<Edit>,
}

impl Edits {
    pub fn render(&self) -> Vec<u8> {
        let mut doc: Value =
            serde_json::from_str(BASES[usize::from(self.base) % BASES.len()]).expect("bases load");
        json_edit::apply(&mut doc, &self.edits, &VOCAB);
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
