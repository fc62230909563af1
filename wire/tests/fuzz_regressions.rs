//! Inputs the `wire_request` fuzz target (fuzz/) keeps under
//! fuzz/regressions/wire_request/, replayed by `cargo test` without nightly: each plain input
//! (request lines, one a line, as a host writes them) goes line by line into one `Core`,
//! and every line is answered with one JSON line; a refusal is typed and leaves the state's
//! bytes as they were. The target's full checks (answers against the Rust calls) replay with
//! `cd fuzz && cargo test`; a finding also gets a test of its own here.

use std::path::Path;

use duetime_wire::Core;
use serde_json::Value;

/// Every plain input kept for `target` (a structured one starts with a byte below 0x10
/// and replays only in fuzz/).
fn kept(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.expect("a readable directory").path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read(&p).expect("readable"),
            )
        })
        .filter(|(_, data)| data.first().is_none_or(|&b| b >= 0x10))
        .collect();
    out.sort();
    out
}

/// One line: a JSON answer with a boolean `ok`; a refusal changes nothing.
fn send(core: &mut Core, line: &str) -> Value {
    let before = serde_json::to_vec(core.state()).unwrap();
    let answer = core.handle_line(line);
    let reply: Value = serde_json::from_str(&answer).expect("an answer is JSON");
    match reply["ok"] {
        Value::Bool(true) => {}
        Value::Bool(false) => {
            assert!(reply["error"]["kind"].is_string(), "{line:?}: {answer}");
            assert!(reply["error"]["message"].is_string(), "{line:?}: {answer}");
            assert_eq!(
                serde_json::to_vec(core.state()).unwrap(),
                before,
                "{line:?}"
            );
        }
        _ => panic!("{line:?}: {answer}"),
    }
    reply
}

/// The core the target's plain inputs start from: after the first 120 lines of a trace.
fn base() -> Core {
    let mut core = Core::default();
    let trace = include_str!("../../tests/wire/seed-0.requests.jsonl");
    for line in trace.lines().take(120) {
        core.handle_line(line);
    }
    core
}

#[test]
fn kept_wire_request_inputs_replay() {
    for (name, data) in kept("wire_request") {
        let mut core = base();
        for line in String::from_utf8_lossy(&data).split('\n') {
            let reply = send(&mut core, line.strip_suffix('\r').unwrap_or(line));
            assert!(reply.is_object(), "{name}");
        }
    }
}
