//! The page at scale: `GET /` over 1,000 jobs (the core's ranked views, then the HTML),
//! and one job's page over a week of hourly history (the timeline built from its journal
//! lines, then the SVG). Figures in benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion};
use duetime::{Actor, Config, Duration, Event, JobDef, JobName, Now, Schedule, State, Timestamp};
use duetime_host::http::page;
use duetime_host::views;

#[path = "../tests/support/week.rs"]
mod week;

/// 1,000 jobs of every kind of schedule, each with a title to escape.
fn state(now: Timestamp) -> State {
    let mut state = State::new(Config::default());
    let mut effects = Vec::new();
    for i in 0..1000 {
        let schedule = match i % 3 {
            0 => Schedule::cron("*/5 * * * *", Some("Europe/London")).unwrap(),
            1 => Schedule::every(Duration::from_mins(1 + i % 60), Duration::from_secs(0)).unwrap(),
            _ => Schedule::cron("30 2 * * *", Some("America/New_York")).unwrap(),
        };
        let mut def = JobDef::new(JobName::new(&format!("job_{i:04}")).unwrap(), schedule);
        def.title = format!("Job <{i}> & friends");
        state.step(
            Now::at(now),
            Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("bench"),
            },
            &mut effects,
        );
    }
    state
}

fn bench(c: &mut Criterion) {
    let now: Timestamp = "2025-03-09T12:00:00Z".parse().unwrap();
    let state = state(now);
    c.bench_function("page/list 1000 jobs (views + html)", |b| {
        b.iter(|| page::list(&views::rows(&state, now), now).len())
    });
    let rows = views::rows(&state, now);
    c.bench_function("page/list 1000 jobs (html only)", |b| {
        b.iter(|| page::list(&rows, now).len())
    });
    c.bench_function("page/job a week hourly (timeline + svg)", |b| {
        b.iter(|| page::job(&week::timeline()).len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
