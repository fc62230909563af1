//! Several daemons on one store: how many events a second they carry together, and how
//! late runs start after their due times.
//!
//! ```text
//! cargo run --release -p duetime-host --example multi_rate -- --store URL|PATH
//!     [--jobs 10000] [--daemons 3] [--events 3000] [--serializable] [--no-sync]
//!     [--batch-max N] [--latency SECS [--period SECS]]
//! ```
//!
//! Each daemon is a thread with its own store handle (its own connection), as a daemon on
//! its own machine would be. `--no-sync` turns off waiting for the disk at commit
//! (PostgreSQL's `synchronous_commit`, SQLite's `synchronous = NORMAL`): not for
//! production, but it takes the shared disk's fsync latency, the noisiest part, out of a
//! comparison. A PostgreSQL store is made afresh in the schema
//! `duetime_rate` (dropped first); an SQLite path must not exist yet.
//!
//! - Throughput (the default): simulated time. Jobs run daily at instants spread over the
//!   day; each daemon ticks as fast as it can, each tick moving a shared simulated clock
//!   by 30 s / daemons, and every run it starts ends at once. An event is a tick or a
//!   result. Each turn commits the results of the runs the previous turn started and the
//!   tick as the daemon does, in batches of at most `--batch-max` events (group commit,
//!   `duetime_loop::Batch`; default `duetime_loop::BATCH_MAX`): `--batch-max 1` is one
//!   event a transaction, the tick first, as before group commit.
//! - `--latency SECS`: real time. Jobs run every `--period` (default 60 s) at offsets
//!   spread over it (so jobs / period due times a second);
//!   each daemon ticks when the store's next wake comes (and at least every second), as
//!   the real daemon does, for SECS seconds. A start's lateness is the wall clock when its
//!   `Start` came back committed, minus the due time it runs; printed as percentiles.

use duetime::{Action, Start};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use duetime::RunId;
use duetime::{
    Actor, Duration, Effect, Event, JobDef, JobName, Now, Outcome, Schedule, State, Timestamp,
};
use duetime_host::store::{self, AnyStore, Isolation, Options, Store, StoreError};
use duetime_loop::{Batch, Incarnation, BATCH_MAX};

/// 2025-06-02T00:00:00Z.
const T0: i64 = 1_748_822_400_000;

struct Args {
    store: String,
    jobs: u64,
    daemons: u64,
    events: u64,
    isolation: Isolation,
    latency: Option<u64>,
    period: u64,
    durable: bool,
    batch_max: usize,
}

fn args() -> Args {
    let mut a = Args {
        store: String::new(),
        jobs: 10_000,
        daemons: 3,
        events: 3_000,
        isolation: Isolation::LockRow,
        latency: None,
        period: 60,
        durable: true,
        batch_max: BATCH_MAX,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--store" => a.store = value(),
            "--jobs" => a.jobs = value().parse().expect("a number"),
            "--daemons" => a.daemons = value().parse().expect("a number"),
            "--events" => a.events = value().parse().expect("a number"),
            "--latency" => a.latency = Some(value().parse().expect("seconds")),
            "--period" => a.period = value().parse().expect("seconds"),
            "--no-sync" => a.durable = false,
            "--batch-max" => a.batch_max = value().parse().expect("a number"),
            "--serializable" => a.isolation = Isolation::Serializable,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!a.store.is_empty(), "--store URL|PATH is required");
    a
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// A fresh store at `location`.
fn fresh(location: &str) -> String {
    if store::is_url(location) {
        let mut admin = postgres::Client::connect(location, postgres::NoTls).expect("connects");
        admin
            .batch_execute("DROP SCHEMA IF EXISTS duetime_rate CASCADE; CREATE SCHEMA duetime_rate")
            .expect("a fresh schema");
        let sep = if location.contains('?') { '&' } else { '?' };
        format!("{location}{sep}options=-csearch_path%3Dduetime_rate")
    } else {
        assert!(
            !std::path::Path::new(location).exists(),
            "{location} exists; name a new file"
        );
        location.to_string()
    }
}

fn open(location: &str, isolation: Isolation, durable: bool) -> AnyStore {
    let options = Options {
        isolation,
        durable,
        busy_timeout: std::time::Duration::from_secs(30),
        ..Options::default()
    };
    store::open(location, options).expect("the store opens")
}

fn define(store: &mut AnyStore, jobs: u64, period: Duration, at: i64) {
    let slot = period.as_millis() / jobs.max(1);
    store
        .transact(&mut |state: &mut State, effects: &mut Vec<Effect>| {
            for i in 0..jobs {
                // Whole seconds: schedules are kept to the second.
                let offset = Duration::from_millis((i * slot) / 1000 * 1000);
                let schedule = Schedule::every(period, offset).expect("a schedule");
                let name = JobName::new(&format!("job_{i}")).expect("a name");
                let event = Event::Upsert {
                    def: Box::new(JobDef::new(name, schedule)),
                    actor: Actor::new("rate"),
                };
                state.step(Now::at(Timestamp::from_millis(at)), event, effects);
            }
            Ok(())
        })
        .expect("the jobs are defined");
}

/// One event, sent again after the store gave up on it (under `--serializable`, a
/// transaction can lose every retry to the other daemons; a real daemon tries again on its
/// next turn). Counts the give-ups.
fn apply(store: &mut AnyStore, now: Now, event: Event, gave_up: &AtomicU64) -> Vec<Effect> {
    loop {
        match store.apply(now, event.clone()) {
            Ok(effects) => return effects,
            Err(StoreError::Locked { .. }) => {
                gave_up.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => panic!("{event:?}: {e}"),
        }
    }
}

/// One batch, one transaction (sent again after the store gave up on it, as `apply`).
fn commit(store: &mut AnyStore, now: Now, batch: &Batch, gave_up: &AtomicU64) -> Vec<Effect> {
    loop {
        let result = store.transact(&mut |state: &mut State, effects: &mut Vec<Effect>| {
            for e in batch.events() {
                state.step(now, e.clone(), effects);
            }
            Ok(())
        });
        match result {
            Ok(effects) => return effects,
            Err(StoreError::Locked { .. }) => {
                gave_up.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => panic!("a batch of {}: {e}", batch.len()),
        }
    }
}

/// Holds every `Start` for this process, as its run, which ends at once (its result goes
/// in the next turn's batch); returns how many started, noting each one's lateness.
fn take_starts(
    inc: &mut Incarnation,
    effects: &[Effect],
    returned_at: i64,
    ended: &mut Vec<(RunId, Outcome)>,
    late: &mut Vec<i64>,
) -> u64 {
    let mut started = 0;
    for e in effects {
        if inc.take(e).is_none() {
            continue;
        }
        if let Effect::Do(Action::Start(Start { run, covers, .. })) = e {
            if let Some(c) = covers {
                late.push(returned_at - c.to.as_millis());
            }
            ended.push((*run, Outcome::Ok));
            started += 1;
        }
    }
    started
}

/// What the daemon threads count together.
#[derive(Default)]
struct Counts {
    events: AtomicU64,
    started: AtomicU64,
    transactions: AtomicU64,
}

fn main() {
    let a = args();
    let location = fresh(&a.store);
    let mut first = open(&location, a.isolation, a.durable);
    let real = a.latency.is_some();
    let start_at = if real { wall_ms() } else { T0 };
    let period = if real {
        Duration::from_secs(a.period)
    } else {
        Duration::from_days(1)
    };
    let began = Instant::now();
    define(&mut first, a.jobs, period, start_at);
    println!(
        "{}: defined {} jobs in {:.2} s; {} daemons, {:?}",
        first.describe(),
        a.jobs,
        began.elapsed().as_secs_f64(),
        a.daemons,
        a.isolation
    );
    drop(first);

    let clock = Arc::new(AtomicI64::new(start_at));
    let counts = Arc::new(Counts::default());
    let gave_up = Arc::new(AtomicU64::new(0));
    let retried = Arc::new(AtomicU64::new(0));
    let late = Arc::new(Mutex::new(Vec::new()));
    let began = Instant::now();
    let until = a.latency.map(|s| began + std::time::Duration::from_secs(s));
    let threads: Vec<_> = (0..a.daemons)
        .map(|d| {
            let (location, clock, counts, late, gave_up, retried) = (
                location.clone(),
                Arc::clone(&clock),
                Arc::clone(&counts),
                Arc::clone(&late),
                Arc::clone(&gave_up),
                Arc::clone(&retried),
            );
            let (isolation, target, step, durable, batch_max) = (
                a.isolation,
                a.events,
                30_000 / a.daemons as i64,
                a.durable,
                a.batch_max,
            );
            std::thread::spawn(move || {
                let mut store = open(&location, isolation, durable);
                let process = store.next_process_id().expect("an id");
                let now = |clock: &AtomicI64| {
                    let ms = if real {
                        wall_ms()
                    } else {
                        clock.fetch_add(step, Ordering::SeqCst) + step
                    };
                    Now::at(Timestamp::from_millis(ms))
                };
                let mut mine = Vec::new();
                let mut inc = Incarnation::new(process);
                let mut ended = Vec::new();
                let effects = apply(
                    &mut store,
                    now(&clock),
                    Event::ProcessStarted { process },
                    &gave_up,
                );
                take_starts(&mut inc, &effects, wall_ms(), &mut ended, &mut mine);
                let mut last_tick = Instant::now();
                loop {
                    if let Some(until) = until {
                        if Instant::now() >= until {
                            break;
                        }
                        let wake = store.state().expect("state").next_wake();
                        let due = wake.is_some_and(|w| w.as_millis() <= wall_ms());
                        if !due && last_tick.elapsed() < std::time::Duration::from_secs(1) {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                            continue;
                        }
                    } else if counts.events.load(Ordering::SeqCst) >= target {
                        break;
                    }
                    // The turn: the results collected since the last one, then the tick, in
                    // batches; what this turn starts ends at once and waits for the next.
                    let at = now(&clock);
                    let ready = std::mem::take(&mut ended);
                    let mut tick = true;
                    loop {
                        let batch = inc.batch(ready.iter().cloned(), tick, batch_max);
                        if batch.is_empty() {
                            break;
                        }
                        let effects = commit(&mut store, at, &batch, &gave_up);
                        inc.committed(&batch);
                        if batch.ticks() {
                            last_tick = Instant::now();
                        }
                        let started =
                            take_starts(&mut inc, &effects, wall_ms(), &mut ended, &mut mine);
                        counts.started.fetch_add(started, Ordering::SeqCst);
                        counts
                            .events
                            .fetch_add(batch.len() as u64, Ordering::SeqCst);
                        counts.transactions.fetch_add(1, Ordering::SeqCst);
                        tick = false;
                    }
                }
                late.lock().expect("not poisoned").extend(mine);
                if let AnyStore::Postgres(pg) = &store {
                    retried.fetch_add(pg.conflicts(), Ordering::SeqCst);
                }
                let _ = d;
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a daemon thread");
    }
    let secs = began.elapsed().as_secs_f64();
    let events = counts.events.load(Ordering::SeqCst);
    let started = counts.started.load(Ordering::SeqCst);
    let transactions = counts.transactions.load(Ordering::SeqCst);
    println!(
        "{events} events in {secs:.2} s: {:.0} events/s, {:.0} runs started/s, {:.0} transactions/s ({:.1} events a transaction, batches of at most {}); {} run again after a conflict, {} gave up after every retry (and were sent again)",
        events as f64 / secs,
        started as f64 / secs,
        transactions as f64 / secs,
        events as f64 / transactions.max(1) as f64,
        a.batch_max,
        retried.load(Ordering::SeqCst),
        gave_up.load(Ordering::SeqCst)
    );
    let mut late = late.lock().expect("not poisoned").clone();
    if !late.is_empty() && real {
        late.sort_unstable();
        let pct = |p: f64| late[((late.len() - 1) as f64 * p).round() as usize];
        println!(
            "{} starts; due to start: p50 {} ms, p99 {} ms, max {} ms",
            late.len(),
            pct(0.50),
            pct(0.99),
            late[late.len() - 1]
        );
    }
}
