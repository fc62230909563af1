//! The stdio core is the Rust core: the recorded inputs of a few hundred simulator worlds
//! (`duetime_sim::record`) replayed through one `duetime core --stdio` give every effect,
//! every read and the final state byte for byte as `State::step` and `serde_json` give
//! them in this process. And the fixture files the Node and Python packages replay
//! (`tests/wire/`) hold what the Rust core answers today, in wire version 1 (`seed-N.*`)
//! and in version 2 (`seed-N.v2.*`: the same lines naming `"wire":2`).
//!
//! `DUETIME_CONFORMANCE_SEEDS=N` runs N worlds instead of the default;
//! `DUETIME_BLESS=1` writes the fixtures' answers anew after a change to the core.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use duetime::{Effect, Filter, JobSeq, ProcessId, State, Timestamp};
use duetime_sim::gen::Overrides;
use duetime_sim::record::{record, Recording};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_duetime");

/// Worlds replayed by default: a few hundred of 86 simulated minutes each (every fault
/// mode; a world's faults are drawn per hour), so the whole runs in well under a minute on
/// two cores in a debug build, where the core checks its invariants after every step.
const SEEDS: u64 = 200;

/// The request lines that replay `rec` and what the Rust core answers to each: a `new`
/// with its config, every step, a `save` halfway, and the reads at the end. `v2`: every
/// line names wire version 2, and is answered in it.
fn script(rec: &Recording, v2: bool) -> Vec<(String, String)> {
    let lines = script_v1(rec, v2);
    if !v2 {
        return lines;
    }
    let named = |request: String| format!(r#"{},"wire":2}}"#, &request[..request.len() - 1]);
    lines.into_iter().map(|(r, a)| (named(r), a)).collect()
}

/// `script`'s lines as version 1 writes the requests; the answers' effects as version 2
/// writes them when `v2`.
fn script_v1(rec: &Recording, v2: bool) -> Vec<(String, String)> {
    let mut state = State::new(rec.config);
    let mut lines = vec![(
        json!({"op": "new", "config": rec.config}).to_string(),
        r#"{"ok":true}"#.to_string(),
    )];
    state.track_changes(true);
    lines.push(track_changes());
    let mut effects: Vec<Effect> = Vec::new();
    let half = rec.inputs.len() / 2;
    for (i, (now, event)) in rec.inputs.iter().enumerate() {
        let request = json!({"op": "step", "now": now, "event": event}).to_string();
        effects.clear();
        state.step(*now, event.clone(), &mut effects);
        // A refused command is named beside the effects too (its reply's `Err`).
        let refused = effects
            .iter()
            .find_map(|e| match e {
                Effect::Reply {
                    result: Err(refusal),
                    ..
                } => Some(serde_json::to_string(refusal).unwrap()),
                _ => None,
            })
            .map_or(String::new(), |r| format!(r#","refused":{r}"#));
        let effects = effects_text(&effects, v2);
        lines.push((
            request,
            format!(r#"{{"ok":true,"effects":{effects}{refused}}}"#),
        ));
        // A store keeping a row per job writes what its steps touched (issue 48): taken
        // every eighth step (and before the halfway save), so the fixtures stay small and
        // a take holds the touches of several steps.
        if i % 8 == 7 || i == half || i + 1 == rec.inputs.len() {
            let touched = state.take_touched();
            lines.push((
                r#"{"op":"take_parts"}"#.to_string(),
                parts(&state, &touched),
            ));
        }
        if i == half {
            lines.push(save(&state));
            // The whole as parts, loaded back (tracking starts again after a load).
            let all: Vec<JobSeq> = state.records().map(|(seq, _)| seq).collect();
            let whole = parts(&state, &all);
            let stored: serde_json::Value = serde_json::from_str(&whole).unwrap();
            lines.push((r#"{"op":"save_parts"}"#.to_string(), whole));
            let load = json!({"op": "load_parts", "parts": stored["parts"]}).to_string();
            lines.push((load, r#"{"ok":true}"#.to_string()));
            lines.push(track_changes());
        }
    }
    lines.extend(reads(&state, rec));
    lines.push(save(&state));
    lines
}

/// A step's effects as a wire version writes them. Version 2's reply is spelt out here by
/// hand, as docs/wire-format.md gives it, not through the wire crate, so the fixtures
/// check the crate: `{"effect":"reply","outcome":"done","job":..,"view":..}` or
/// `{"effect":"reply","outcome":"refused","job":..,"refusal":..}`; every other effect as
/// version 1 writes it.
fn effects_text(effects: &[Effect], v2: bool) -> String {
    if !v2 {
        return serde_json::to_string(effects).unwrap();
    }
    let each: Vec<String> = effects
        .iter()
        .map(|effect| match effect {
            Effect::Reply { job, result } => match result {
                Ok(view) => format!(
                    r#"{{"effect":"reply","outcome":"done","job":{},"view":{}}}"#,
                    text(job),
                    text(view)
                ),
                Err(refusal) => format!(
                    r#"{{"effect":"reply","outcome":"refused","job":{},"refusal":{}}}"#,
                    text(job),
                    text(refusal)
                ),
            },
            other => text(other),
        })
        .collect();
    format!("[{}]", each.join(","))
}

fn text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

fn track_changes() -> (String, String) {
    (
        r#"{"op":"track_changes","on":true}"#.to_string(),
        r#"{"ok":true}"#.to_string(),
    )
}

/// What `take_parts` or `save_parts` answers for the jobs `seqs`: the globals and each
/// record by sequence number, in number order (`null`: removed).
fn parts(state: &State, seqs: &[JobSeq]) -> String {
    let jobs: Vec<String> = seqs
        .iter()
        .map(|seq| {
            let record = serde_json::to_string(&state.record(*seq)).unwrap();
            format!(r#""{seq}":{record}"#)
        })
        .collect();
    let globals = serde_json::to_string(&state.globals()).unwrap();
    format!(
        r#"{{"ok":true,"parts":{{"globals":{globals},"jobs":{{{}}}}}}}"#,
        jobs.join(",")
    )
}

fn save(state: &State) -> (String, String) {
    let state = serde_json::to_string(state).unwrap();
    (
        r#"{"op":"save"}"#.to_string(),
        format!(r#"{{"ok":true,"state":{state}}}"#),
    )
}

/// `next_wake`, `next_wake_for` each process, and the first page of `jobs` and `job` of
/// its first item, all as of the last step's wall clock.
fn reads(state: &State, rec: &Recording) -> Vec<(String, String)> {
    let now = rec.inputs.last().map_or(Timestamp::EPOCH, |(n, _)| n.wall);
    let wake = |w: Option<Timestamp>| format!(r#"{{"ok":true,"wake":{}}}"#, json!(w));
    let mut lines = vec![(r#"{"op":"next_wake"}"#.to_string(), wake(state.next_wake()))];
    for p in 1..=3 {
        let request = json!({"op": "next_wake_for", "process": p}).to_string();
        lines.push((request, wake(state.next_wake_for(ProcessId(p)))));
    }
    let page = state.jobs(&Filter::default(), None, 5, now);
    let items = serde_json::to_string(&page.items).unwrap();
    let next = page
        .next
        .as_ref()
        .map_or(String::new(), |n| format!(r#","next":{}"#, json!(n)));
    let request = json!({"op": "jobs", "limit": 5, "now": now}).to_string();
    lines.push((
        request,
        format!(r#"{{"ok":true,"page":{{"items":{items}{next}}}}}"#),
    ));
    if let Some(first) = page.items.first() {
        let request = json!({"op": "job", "name": first.name, "now": now}).to_string();
        let view = serde_json::to_string(&state.job(first.name.as_str(), now)).unwrap();
        lines.push((request, format!(r#"{{"ok":true,"job":{view}}}"#)));
    }
    lines
}

fn overrides() -> Overrides {
    Overrides {
        days: Some(0.06),
        ..Overrides::default()
    }
}

/// Each shard is one `duetime core --stdio` fed by its own recording thread: two, so the
/// recording and the child's answering fill both cores.
const SHARDS: u64 = 2;

#[test]
fn the_stdio_core_answers_a_few_hundred_worlds_byte_for_byte_as_the_rust_core() {
    let seeds: u64 = std::env::var("DUETIME_CONFORMANCE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEEDS);
    let started = Instant::now();
    let shards: Vec<(u64, Vec<String>)> = std::thread::scope(|scope| {
        let running: Vec<_> = (0..SHARDS)
            .map(|shard| scope.spawn(move || replay_shard((shard..seeds).step_by(SHARDS as usize))))
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let lines: u64 = shards.iter().map(|(n, _)| n).sum();
    let differences: Vec<String> = shards.into_iter().flat_map(|(_, d)| d).collect();
    eprintln!(
        "{seeds} worlds, {lines} lines, {} differences, {:.1} s",
        differences.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        lines > seeds * 20,
        "the worlds were replayed ({lines} lines)"
    );
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Replays `seeds` through one stdio core: the lines answered and the differences (the
/// first three in full).
fn replay_shard(seeds: impl Iterator<Item = u64> + Send + 'static) -> (u64, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(["core", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary starts");
    let mut stdin = std::io::BufWriter::new(child.stdin.take().unwrap());
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (expect_tx, expect_rx) = mpsc::sync_channel::<(u64, String, String)>(4096);
    // Record and replay here while the child answers: the writer never waits for it.
    let writer = std::thread::spawn(move || {
        for seed in seeds {
            let rec = record(seed, &overrides());
            // Every world in wire version 1, every fourth in version 2 as well.
            let versions: &[bool] = if seed % 4 == 0 {
                &[false, true]
            } else {
                &[false]
            };
            for (request, expected) in versions.iter().flat_map(|v2| script(&rec, *v2)) {
                stdin.write_all(request.as_bytes()).unwrap();
                stdin.write_all(b"\n").unwrap();
                expect_tx.send((seed, request, expected)).unwrap();
            }
        }
    });
    let (mut lines, mut differences) = (0u64, Vec::new());
    for (answer, (seed, request, expected)) in stdout.lines().zip(expect_rx.iter()) {
        lines += 1;
        let answer = answer.unwrap();
        if answer != expected {
            differences.push(if differences.len() < 3 {
                format!("seed {seed}: {request}\n  stdio: {answer}\n  rust:  {expected}")
            } else {
                format!("seed {seed}")
            });
        }
    }
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    (lines, differences)
}

/// The worlds kept as fixture files for the Node and Python packages' conformance tests.
const FIXTURE_SEEDS: [u64; 4] = [0, 1, 3, 5];

fn fixture_path(seed: u64, what: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/wire");
    root.join(format!("seed-{seed}.{what}.jsonl"))
}

/// A fixture's requests read back into the recording they replay.
fn recording_of(seed: u64, requests: &str) -> Recording {
    let mut lines = requests
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let config = serde_json::from_value(lines.next().unwrap()["config"].clone()).unwrap();
    let inputs = lines
        .filter(|l| l["op"] == "step")
        .map(|l| {
            let now = serde_json::from_value(l["now"].clone()).unwrap();
            (now, serde_json::from_value(l["event"].clone()).unwrap())
        })
        .collect();
    Recording {
        seed,
        config,
        inputs,
    }
}

fn joined(lines: impl Iterator<Item = String>) -> String {
    lines.map(|l| l + "\n").collect()
}

/// `tests/wire/seed-N.requests.jsonl` are kept inputs (they stay when the simulator's
/// generator changes); `seed-N.answers.jsonl` must be what the Rust core answers to them
/// now, and `seed-N.v2.requests.jsonl` / `seed-N.v2.answers.jsonl` the same lines naming
/// wire version 2 and their answers in it. `DUETIME_BLESS=1` records the seeds afresh and
/// writes all four.
#[test]
fn the_fixture_files_hold_what_the_rust_core_answers() {
    let bless = std::env::var_os("DUETIME_BLESS").is_some();
    for seed in FIXTURE_SEEDS {
        let rec = if bless {
            record(seed, &overrides())
        } else {
            let text = std::fs::read_to_string(fixture_path(seed, "requests")).unwrap();
            recording_of(seed, &text)
        };
        for (v2, prefix) in [(false, ""), (true, "v2.")] {
            let lines = script(&rec, v2);
            let requests = joined(lines.iter().map(|(r, _)| r.clone()));
            let answers = joined(lines.into_iter().map(|(_, a)| a));
            let path = |what| fixture_path(seed, &format!("{prefix}{what}"));
            if bless {
                std::fs::create_dir_all(path("x").parent().unwrap()).unwrap();
                std::fs::write(path("requests"), &requests).unwrap();
                std::fs::write(path("answers"), &answers).unwrap();
            }
            let kept = |what| std::fs::read_to_string(path(what)).unwrap();
            assert!(
                kept("requests") == requests,
                "seed {seed}: tests/wire/seed-{seed}.{prefix}requests.jsonl do not read back"
            );
            assert!(
                kept("answers") == answers,
                "seed {seed}: tests/wire/seed-{seed}.{prefix}answers.jsonl is not what the core \
                 answers now; after a deliberate change: DUETIME_BLESS=1 cargo test -p \
                 duetime-host --test core_conformance"
            );
        }
    }
}
