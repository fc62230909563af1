//! What the JSON crossing costs: a step as a Rust call (`State::step`) against the same
//! step as a wire request line answered by `duetime_wire::Core` (what the stdio core, the
//! Node package and the Python package do per call, less their own runtime's JSON). Two
//! steps, at 1,000 jobs: a tick with nothing due, and a run cycle (a tick that starts one
//! run, then its `run_finished`). benches/bindings/ measure the same through Node and
//! Python; benches/README.md has the ratios.
//!
//! `cargo bench -p duetime-wire --bench crossing`

use criterion::{criterion_group, criterion_main, Criterion};
use duetime::{Action, Start};
use duetime::{Effect, Event, Fence, JobName, Now, Outcome, ProcessId, RunId, Timestamp};
use duetime_wire::Core;
use serde_json::{json, Value};

/// 2025-06-02T09:00:00Z; job i is due every 100 s at `START + i * 100 ms + 50 ms`, so the
/// cycle k ticks at `START + k * 100 ms + 60 ms` and finds exactly job k mod 1000 due.
const START: i64 = 1_748_854_800_000;
const JOBS: i64 = 1000;

/// The wire lines that build the scene: 1,000 jobs and process 1 started.
fn scene() -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..JOBS {
        let def = json!({"name": format!("job_{i:04}"),
            "schedule": {"kind": "every", "period": JOBS * 100, "offset": i * 100 + 50}});
        lines.push(step_line(
            START,
            json!({"event": "upsert", "def": def, "actor": "bench"}),
        ));
    }
    lines.push(step_line(
        START,
        json!({"event": "process_started", "process": 1}),
    ));
    lines
}

fn step_line(t: i64, event: Value) -> String {
    json!({"op": "step", "now": {"wall": t, "mono": t - START}, "event": event}).to_string()
}

fn built() -> Core {
    let mut core = Core::default();
    for line in scene() {
        assert!(core.handle_line(&line).starts_with(r#"{"ok":true"#));
    }
    core
}

fn now(t: i64) -> Now {
    Now::new(Timestamp::from_millis(t), Timestamp::from_millis(t - START))
}

fn tick() -> Event {
    Event::Tick {
        process: ProcessId(1),
        held: vec![],
    }
}

fn idle(c: &mut Criterion) {
    let mut g = c.benchmark_group("tick_nothing_due");
    let mut state = built().state().clone();
    let mut effects: Vec<Effect> = Vec::new();
    g.bench_function("rust", |b| {
        b.iter(|| {
            effects.clear();
            state.step(now(START + 10), tick(), &mut effects);
        })
    });
    let mut core = built();
    let line = step_line(
        START + 10,
        json!({"event": "tick", "process": 1, "held": []}),
    );
    g.bench_function("wire", |b| b.iter(|| core.handle_line(&line)));
    g.finish();
}

fn cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("run_cycle");
    let mut state = built().state().clone();
    let (mut k, mut effects) = (-1i64, Vec::new());
    g.bench_function("rust", |b| {
        b.iter(|| {
            k += 1;
            let t = START + k * 100 + 60;
            effects.clear();
            state.step(now(t), tick(), &mut effects);
            let Some((run, fence, job)) = started(&effects) else {
                panic!("k {k}: {effects:?}")
            };
            let outcome = Outcome::Ok;
            let finished = Event::RunFinished {
                process: ProcessId(1),
                job,
                run,
                fence,
                outcome,
            };
            state.step(now(t), finished, &mut effects);
        })
    });
    let (mut core, mut k) = (built(), -1i64);
    g.bench_function("wire", |b| {
        b.iter(|| {
            k += 1;
            let t = START + k * 100 + 60;
            let answer = core.handle_line(&step_line(
                t,
                json!({"event": "tick", "process": 1, "held": []}),
            ));
            let answer: Value = serde_json::from_str(&answer).unwrap();
            let start = answer["effects"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["effect"] == "start")
                .unwrap();
            let finished = json!({"event": "run_finished", "process": 1, "job": start["job"],
                "run": start["run"], "fence": start["fence"], "outcome": {"outcome": "ok"}});
            core.handle_line(&step_line(t, finished))
        })
    });
    g.finish();
}

fn started(effects: &[Effect]) -> Option<(RunId, Fence, JobName)> {
    effects.iter().find_map(|e| match e {
        Effect::Do(Action::Start(Start {
            run, fence, job, ..
        })) => Some((*run, *fence, job.clone())),
        _ => None,
    })
}

criterion_group!(benches, idle, cycle);
criterion_main!(benches);
