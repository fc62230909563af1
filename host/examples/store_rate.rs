//! How many events a second the SQLite store carries at a given number of jobs.
//!
//! `cargo run --release -p duetime-host --example store_rate -- [JOBS] [EVENTS] [--normal]`
//! (defaults 1000 and 2000). The jobs run daily at instants spread over the day, so a
//! 30 s tick starts about JOBS/2880 runs; each start is answered by a `RunFinished` of its
//! own, so the events are ticks and results, each one transaction. `--normal` uses
//! `synchronous = NORMAL` (no fsync per commit) instead of the default `FULL`.

use duetime::{Action, Start};
use std::time::Instant;

use duetime::{Actor, Duration, Effect, Event, JobDef, JobName, Now, Outcome, ProcessId, Schedule};
use duetime::{State, Timestamp};
use duetime_host::store::{Options, SqliteStore, Store};

/// 2025-06-02T00:00:00Z.
const T0: i64 = 1_748_822_400_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let jobs = numbers.first().copied().unwrap_or(1000);
    let events = numbers.get(1).copied().unwrap_or(2000);
    let durable = !args.iter().any(|a| a == "--normal");

    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("rate.db");
    let options = Options {
        durable,
        ..Options::default()
    };
    let mut store = SqliteStore::open_with(&path, options).expect("the store opens");

    let started = Instant::now();
    let day = 86_400_000 / jobs.max(1);
    store
        .transact(&mut |state: &mut State, effects: &mut Vec<Effect>| {
            for i in 0..jobs {
                let offset = Duration::from_millis((i * day) / 1000 * 1000);
                let schedule = Schedule::every(Duration::from_days(1), offset).expect("daily");
                let def = JobDef::new(JobName::new(&format!("job_{i}")).expect("a name"), schedule);
                let event = Event::Upsert {
                    def: Box::new(def),
                    actor: Actor::new("rate"),
                };
                state.step(Now::at(Timestamp::from_millis(T0)), event, effects);
            }
            Ok(())
        })
        .expect("the jobs are defined");
    println!(
        "defined {jobs} jobs in one transaction: {:.2} s",
        started.elapsed().as_secs_f64()
    );

    let process = ProcessId(1);
    let mut now = T0;
    store
        .apply(
            Now::at(Timestamp::from_millis(now)),
            Event::ProcessStarted { process },
        )
        .expect("started");
    let mut done = 0u64;
    let mut starts = 0u64;
    let started = Instant::now();
    while done < events {
        now += 30_000;
        let at = Now::at(Timestamp::from_millis(now));
        let effects = store
            .apply(
                at,
                Event::Tick {
                    process,
                    held: Vec::new(),
                },
            )
            .expect("a tick");
        done += 1;
        for e in effects {
            if let Effect::Do(Action::Start(Start {
                run, job, fence, ..
            })) = e
            {
                starts += 1;
                let finished = Event::RunFinished {
                    process,
                    job: job.clone(),
                    run,
                    fence,
                    outcome: Outcome::Ok,
                };
                store.apply(at, finished).expect("a result");
                done += 1;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let journal = store.journal_all().expect("the journal").len();
    println!(
        "{done} events ({starts} runs) at {jobs} jobs, synchronous {}: {:.2} s, {:.0} events/s; {journal} journal lines",
        if durable { "FULL" } else { "NORMAL" },
        secs,
        done as f64 / secs
    );
}
