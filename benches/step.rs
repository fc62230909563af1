//! Benches for `State::step` at 1k, 100k and 1M jobs: an idle tick (nothing due), a tick
//! with 10 due times, and a full run cycle (a tick claiming one run, then `RunFinished`
//! settling it). Jobs are `every n × 100 ms` with offsets 100 ms apart, so exactly one
//! due time falls in each 100 ms and few are ever due at once.
//!
//! `cargo bench --bench step`; `STEP_BENCH_SIZES=1000,100000` picks the sizes.

use duetime::{Action, Start};
use std::time::{Duration as StdDuration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use duetime::{
    Actor, Config, Duration, Effect, Event, JobDef, JobName, Now, Outcome, ProcessId, Schedule,
    State, Timestamp,
};

const SLOT_MS: i64 = 100;
const P: ProcessId = ProcessId(1);

fn start() -> Timestamp {
    Timestamp::from_secs(1_748_854_800)
}

/// `n` jobs built through `Upsert` events, and a process that has started.
fn build(n: u64) -> State {
    let mut state = State::new(Config::default());
    let mut effects = Vec::new();
    for i in 0..n {
        let schedule = Schedule::every(
            Duration::from_millis(n * SLOT_MS as u64),
            Duration::from_millis(i * SLOT_MS as u64 + SLOT_MS as u64 / 2),
        )
        .unwrap();
        let def = JobDef::new(JobName::new(&format!("job_{i:07}")).unwrap(), schedule);
        state.step(
            Now::at(start()),
            Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("bench"),
            },
            &mut effects,
        );
        effects.clear();
    }
    state.step(
        Now::at(start()),
        Event::ProcessStarted { process: P },
        &mut effects,
    );
    assert!(effects.is_empty(), "nothing is due at the start");
    state
}

fn tick(state: &mut State, at: Timestamp, effects: &mut Vec<Effect>) {
    state.step(
        Now::at(at),
        Event::Tick {
            process: P,
            held: Vec::new(),
        },
        effects,
    );
}

/// The results a host would report for the runs `effects` started (all ok).
fn results(effects: &[Effect]) -> Vec<Event> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start {
                run, job, fence, ..
            })) => Some(Event::RunFinished {
                process: P,
                job: job.clone(),
                run: *run,
                fence: *fence,
                outcome: Outcome::Ok,
            }),
            _ => None,
        })
        .collect()
}

fn report(state: &mut State, at: Timestamp, results: Vec<Event>, effects: &mut Vec<Effect>) {
    for e in results {
        state.step(Now::at(at), e, effects);
    }
    effects.clear();
}

fn sizes() -> Vec<u64> {
    std::env::var("STEP_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000, 1_000_000])
}

fn bench_step(c: &mut Criterion) {
    for n in sizes() {
        let built = Instant::now();
        let mut state = build(n);
        eprintln!("built {n} jobs in {:.2?}", built.elapsed());
        let mut effects = Vec::with_capacity(64);
        let mut group = c.benchmark_group(format!("step/{n}_jobs"));
        group.warm_up_time(StdDuration::from_millis(500));
        group.measurement_time(StdDuration::from_secs(3));

        // The clock advances one slot per run cycle and ten per 10-due tick; between the
        // benches it stays where the last left it, so the state is always consistent.
        let mut now = start();

        group.bench_function("idle_tick", |b| {
            b.iter(|| {
                tick(&mut state, now, &mut effects);
                debug_assert!(effects.is_empty());
                effects.clear();
            })
        });

        // Timed: the tick that claims and starts the run, and the `RunFinished` step that
        // settles it. Not timed: the host building the result event between the two.
        group.bench_function("run_cycle", |b| {
            b.iter_custom(|iters| {
                let mut total = StdDuration::ZERO;
                for _ in 0..iters {
                    now = Timestamp::from_millis(now.as_millis() + SLOT_MS);
                    let t = Instant::now();
                    tick(&mut state, now, &mut effects);
                    total += t.elapsed();
                    let done = results(&effects);
                    assert_eq!(done.len(), 1, "one run per cycle");
                    effects.clear();
                    let t = Instant::now();
                    report(&mut state, now, done, &mut effects);
                    total += t.elapsed();
                }
                total
            })
        });

        group.bench_function("tick_10_due", |b| {
            b.iter_custom(|iters| {
                let mut total = StdDuration::ZERO;
                for _ in 0..iters {
                    now = Timestamp::from_millis(now.as_millis() + 10 * SLOT_MS);
                    let t = Instant::now();
                    tick(&mut state, now, &mut effects);
                    total += t.elapsed();
                    let done = results(&effects);
                    assert_eq!(done.len(), 10, "ten runs per tick");
                    effects.clear();
                    report(&mut state, now, done, &mut effects);
                }
                total
            })
        });

        // An idle tick again, now that every job has run once or more and keeps a small
        // activity record (its last outcome).
        group.bench_function("idle_tick_after_runs", |b| {
            b.iter(|| {
                tick(&mut state, now, &mut effects);
                effects.clear();
            })
        });
        group.finish();
        let dropped = Instant::now();
        drop(state);
        eprintln!("dropped {n} jobs in {:.2?}", dropped.elapsed());
    }
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
