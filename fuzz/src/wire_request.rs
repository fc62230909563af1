//! The `wire_request` target: lines a binding sends (`duetime core --stdio`, the Node and
//! Python packages) into `duetime_wire::Core`, one after another on one core. Every line is
//! answered with one JSON line and never a panic. A refused line gets a typed error (a
//! known kind, a message, a field path when one is named) and leaves the state byte for byte
//! as it was; an accepted one answers what the Rust call it stands for answers (`step`'s
//! effects and next state, `next_wake`, `job`, `jobs`, `save`, `load`, `new`).
//!
//! Lines come raw (the whole input, split at newlines, so seeds are request files as
//! tests/wire/ keeps them) or as structured edits of the conformance traces' real lines
//! (`json_edit`), which reach the decoder's field-blaming search and the core's checks
//! instead of dying in the JSON syntax. The core starts from a state the first lines of a
//! conformance trace built, so `step`, `job` and `jobs` meet real jobs and runs.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use duetime::{Effect, Filter, State};
use duetime_wire::{
    error_line, parse_versioned_line, Core, Request, StepEffects, Versions, WireVersion,
    DEFAULT_PAGE,
};
use serde_json::Value;

use crate::json_edit::{self, Edit, Vocab};

/// The conformance traces' request lines (tests/wire/), the structured mode's templates.
const TRACES: [&str; 4] = [
    include_str!("../../tests/wire/seed-0.requests.jsonl"),
    include_str!("../../tests/wire/seed-1.requests.jsonl"),
    include_str!("../../tests/wire/seed-3.requests.jsonl"),
    include_str!("../../tests/wire/seed-5.requests.jsonl"),
];

/// Lines of a trace replayed to build a starting state: jobs defined, processes started,
/// runs open.
const SETUP_LINES: usize = 120;

/// Most lines one input sends, so executions stay fast.
const MAX_LINES: usize = 24;

const WORDS: [&str; 37] = [
    "version",
    "wire",
    "new",
    "load",
    "save",
    "step",
    "next_wake",
    "next_wake_for",
    "job",
    "jobs",
    "upsert",
    "remove",
    "tick",
    "process_started",
    "run_finished",
    "pause",
    "resume",
    "run_now",
    "cron",
    "every",
    "at",
    "required",
    "skip",
    "catch_up_once",
    "ok",
    "failed",
    "single_owner",
    "shared",
    "needs_attention",
    "Europe/London",
    "Mars/Olympus",
    "*/15 * * * *",
    "0 0 30 2 *",
    "job0",
    "job1",
    "",
    "\u{1}",
];

const KEYS: [&str; 24] = [
    "op", "now", "event", "def", "name", "schedule", "kind", "expr", "tz", "period", "offset",
    "wall", "mono", "process", "held", "run", "fence", "outcome", "config", "state", "filter",
    "after", "limit", "actor",
];

const VOCAB: Vocab = Vocab {
    words: &WORDS,
    keys: &KEYS,
};

/// Every request line of the traces.
fn templates() -> &'static [&'static str] {
    static LINES: OnceLock<Vec<&'static str>> = OnceLock::new();
    LINES.get_or_init(|| {
        TRACES
            .iter()
            .flat_map(|t| t.lines())
            .filter(|l| !l.trim().is_empty())
            .collect()
    })
}

/// Starting cores: empty, and after the first `SETUP_LINES` lines of two traces.
fn bases() -> &'static [Core] {
    static BASES: OnceLock<Vec<Core>> = OnceLock::new();
    BASES.get_or_init(|| {
        let built = |trace: &str| {
            let mut core = Core::default();
            for line in trace.lines().take(SETUP_LINES) {
                core.handle_line(line);
            }
            core
        };
        vec![Core::default(), built(TRACES[0]), built(TRACES[2])]
    })
}

/// One line of the structured mode.
#[derive(Arbitrary, Debug, Clone)]
pub enum LineGen {
    /// A trace's line, edited.
    Edited { template: u16, edits: Vec<Edit> },
    /// Any text.
    Raw(String),
    /// The core's own `save`, edited, given back through `Core::load_text` (the bindings'
    /// `load` from a stored state's text).
    Stored { edits: Vec<Edit> },
}

#[derive(Arbitrary, Debug, Clone)]
pub struct WireInput {
    pub base: u8,
    pub lines: Vec<LineGen>,
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is `WireInput`);
/// anything else is request lines as a host writes them, sent to the core built from the
/// first trace.
pub fn wire_request(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(input) = WireInput::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                check_structured(&input);
            }
        }
        _ => {
            let mut core = bases()[1].clone();
            let mut bytes = state_bytes(core.state());
            let text = String::from_utf8_lossy(data);
            for line in text.split('\n').take(MAX_LINES) {
                check_line(
                    &mut core,
                    &mut bytes,
                    line.strip_suffix('\r').unwrap_or(line),
                );
            }
        }
    }
}

fn check_structured(input: &WireInput) {
    let bases = bases();
    let mut core = bases[usize::from(input.base) % bases.len()].clone();
    let mut bytes = state_bytes(core.state());
    for gen in input.lines.iter().take(MAX_LINES) {
        match gen {
            LineGen::Stored { edits } => {
                let mut doc: Value = serde_json::from_slice(&bytes).expect("a state is JSON");
                json_edit::apply(&mut doc, edits, &VOCAB);
                check_load_text(&mut core, &mut bytes, &doc.to_string());
            }
            other => check_line(&mut core, &mut bytes, &render(other)),
        }
    }
}

/// The line a `LineGen` stands for (`Stored` has none: it is not a request line).
pub fn render(gen: &LineGen) -> String {
    match gen {
        LineGen::Edited { template, edits } => {
            let lines = templates();
            let line = lines[usize::from(*template) % lines.len()];
            let mut doc: Value = serde_json::from_str(line).expect("trace lines are JSON");
            json_edit::apply(&mut doc, edits, &VOCAB);
            doc.to_string()
        }
        LineGen::Raw(text) => text.clone(),
        LineGen::Stored { .. } => String::new(),
    }
}

/// What the input decodes to, one line a request.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => match WireInput::arbitrary_take_rest(Unstructured::new(&data[1..]))
        {
            Ok(input) => {
                let mut out = format!("base {}\n", usize::from(input.base) % 3);
                for gen in input.lines.iter().take(MAX_LINES) {
                    match gen {
                        LineGen::Stored { edits } => {
                            out.push_str(&format!("load_text of the saved state, {edits:?}\n"))
                        }
                        other => out.push_str(&format!("{}\n", render(other))),
                    }
                }
                out
            }
            Err(e) => format!("undecodable: {e}"),
        },
        _ => format!("base 1\n{}", String::from_utf8_lossy(data)),
    }
}

fn state_bytes(state: &State) -> Vec<u8> {
    serde_json::to_vec(state).expect("a state serializes")
}

/// What the Rust call a decoded request stands for answers, worked out on the state
/// before the line: the answer's one field beside `ok`, and the state's bytes after it.
struct Expected {
    field: &'static str,
    /// `None`: the answer's value is not worked out here (the state parts, whose Rust
    /// call is the wire crate's own).
    value: Option<Value>,
    state: Option<Vec<u8>>,
    /// The state after it is not worked out here (parts loaded or put): it must pass its
    /// self-check.
    any_state: bool,
}

fn expect(state: &State, wire: WireVersion, request: &Request) -> Option<Expected> {
    let answer = |field, value| Expected {
        field,
        value: Some(value),
        state: None,
        any_state: false,
    };
    let unpredicted = |field, any_state| Expected {
        field,
        value: None,
        state: None,
        any_state,
    };
    let at = |now: &Option<duetime::Timestamp>| now.or(state.clock());
    Some(match request {
        Request::Version {} => answer("version", json(&Versions::of(wire))),
        Request::New { config } => Expected {
            state: Some(state_bytes(&State::new(
                config.unwrap_or_default().config(),
            ))),
            ..answer("ok", Value::Bool(true))
        },
        Request::Load { state: loaded } => Expected {
            state: Some(state_bytes(loaded)),
            ..answer("ok", Value::Bool(true))
        },
        Request::Save {} => answer("state", json(state)),
        Request::Step { now, event } => {
            let mut next = state.clone();
            let mut effects: Vec<Effect> = Vec::new();
            next.step(*now, (**event).clone(), &mut effects);
            Expected {
                state: Some(state_bytes(&next)),
                ..answer(
                    "effects",
                    json(&StepEffects {
                        wire,
                        effects: &effects,
                    }),
                )
            }
        }
        Request::NextWake {} => answer("wake", json(&state.next_wake())),
        Request::NextWakeFor { process } => answer("wake", json(&state.next_wake_for(*process))),
        Request::Job { name, now } => answer("job", json(&state.job(name, at(now)?))),
        Request::Jobs {
            filter,
            after,
            limit,
            now,
        } => {
            let filter = filter.clone().unwrap_or_default();
            let filter = Filter {
                status: filter.status,
                name_prefix: filter.name_prefix,
            };
            let limit = limit.unwrap_or(DEFAULT_PAGE) as usize;
            let page = state.jobs(&filter, after.as_deref(), limit, at(now)?);
            let mut out = serde_json::json!({ "items": json(&page.items) });
            if let Some(next) = page.next {
                out["next"] = Value::from(next);
            }
            answer("page", out)
        }
        // The state parts (issue 48): their answers are the wire crate's own (checked
        // against the Rust API by wire/tests/parts.rs); here, that they answer one JSON
        // line, refuse with a typed error and nothing changed, leave the state as it was
        // (tracking and taking are not stored) or, loaded or put, one that passes its
        // self-check.
        Request::TrackChanges { .. } => answer("ok", Value::Bool(true)),
        Request::TakeParts {} | Request::SaveParts {} => unpredicted("parts", false),
        Request::LoadParts { .. } | Request::PutParts { .. } => unpredicted("ok", true),
    })
}

/// One line into `core`, checked against the decoder and the Rust call it stands for.
/// `bytes` are the state's bytes before the line, and after it on return.
pub fn check_line(core: &mut Core, bytes: &mut Vec<u8>, line: &str) {
    let parsed = parse_versioned_line(line);
    let expected = parsed
        .as_ref()
        .ok()
        .map(|(wire, r)| expect(core.state(), *wire, r));
    let parsed = parsed.map(|(_, request)| request);
    let answer = core.handle_line(line);
    let reply: Value = serde_json::from_str(&answer).unwrap_or_else(|e| {
        panic!("{line:?} answered with a line that is not JSON ({e}): {answer}")
    });
    assert!(!answer.contains('\n'), "{line:?}: a multi-line answer");
    let after = state_bytes(core.state());
    match (reply.get("ok"), parsed, expected) {
        (Some(Value::Bool(false)), parsed, expected) => {
            check_refusal(line, &reply);
            assert!(
                after == *bytes,
                "{line:?} was refused ({answer}) but changed the state"
            );
            match parsed {
                // Refused by the decoder: the answer is that error.
                Err(e) => assert_eq!(answer, error_line(&e), "{line:?}"),
                // Decoded, refused when carried out: a view with no instant to take it at
                // (no `now` given, no clock in the store), or a config the core's check
                // refuses, naming the field.
                Ok(request) => {
                    let field = reply["error"]["field"].as_str().unwrap_or_default();
                    let fair = match &request {
                        Request::New { config } => {
                            config.unwrap_or_default().config().check().is_err()
                                && field.starts_with("config.")
                        }
                        // Taking parts while not tracking, or parts that do not load.
                        Request::TakeParts {} => !core.state().tracks_changes(),
                        Request::LoadParts { .. } | Request::PutParts { .. } => {
                            field.starts_with("parts")
                        }
                        _ => matches!(expected, Some(None)) && field == "now",
                    };
                    assert!(
                        fair,
                        "{line:?} decoded to {request:?} yet was refused: {answer}"
                    );
                }
            }
        }
        (Some(Value::Bool(true)), Ok(request), Some(expected)) => {
            let expected = expected.unwrap_or_else(|| {
                panic!("{line:?} ({request:?}) was answered with no instant to view at")
            });
            match &expected.value {
                Some(value) => assert_eq!(
                    reply.get(expected.field),
                    Some(value),
                    "{line:?} ({request:?}) answered otherwise than the Rust call: {answer}"
                ),
                None => assert!(
                    reply.get(expected.field).is_some(),
                    "{line:?} ({request:?}) answered without `{}`: {answer}",
                    expected.field
                ),
            }
            if !expected.any_state {
                let want = expected.state.as_ref().unwrap_or(bytes);
                assert!(after == *want, "{line:?} ({request:?}) left another state");
            }
            if expected.any_state || matches!(request, Request::Load { .. } | Request::Step { .. })
            {
                if let Err(broken) = core.state().self_check() {
                    panic!("{line:?}: the state fails its self-check: {broken}");
                }
            }
        }
        (Some(Value::Bool(true)), Err(e), _) => {
            panic!("{line:?} was carried out, yet decodes to {e}")
        }
        _ => panic!("{line:?}: the answer has no boolean `ok`: {answer}"),
    }
    *bytes = after;
}

/// A refusal is typed: a kind of this wire version, a message, and a field path (when
/// given) that is not empty.
fn check_refusal(line: &str, reply: &Value) {
    let error = &reply["error"];
    let kind = error["kind"].as_str().unwrap_or_default();
    assert!(
        [
            "bad_line",
            "unknown_op",
            "unknown_wire_version",
            "bad_field",
            "newer_format",
            "inconsistent_state"
        ]
        .contains(&kind),
        "{line:?}: unknown error kind in {reply}"
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(!message.trim().is_empty(), "{line:?}: no message: {reply}");
    if let Some(field) = error.get("field") {
        assert!(
            field.as_str().is_some_and(|f| !f.is_empty()),
            "{line:?}: an empty field path: {reply}"
        );
    }
    let keys: Vec<&String> = reply
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["error", "ok"], "{line:?}: {reply}");
}

/// `Core::load_text`: a refusal leaves the state as it was; an acceptance loads the very
/// state the text holds.
pub fn check_load_text(core: &mut Core, bytes: &mut Vec<u8>, text: &str) {
    let answer = core.load_text(text);
    let reply: Value = serde_json::from_str(&answer).expect("load_text answers JSON");
    match reply["ok"] {
        Value::Bool(true) => {
            let direct: State = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("load_text took a state serde refuses ({e}): {text}"));
            assert!(*core.state() == direct, "load_text loaded another state");
            core.state()
                .self_check()
                .expect("a loaded state passes its self-check");
            *bytes = state_bytes(core.state());
        }
        _ => {
            check_refusal(text, &reply);
            assert!(
                state_bytes(core.state()) == *bytes,
                "load_text refused ({answer}) but changed the state"
            );
            assert!(
                serde_json::from_str::<State>(text).is_err(),
                "load_text refused a state serde loads: {answer}"
            );
        }
    }
}

/// A value of the core as the wire writes it.
fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("the core's types serialize")
}
