//! Memory per idle job, measured with a counting global allocator. Run in release:
//! `cargo test --release --test core_memory -- --ignored --nocapture`.

use duetime::{Action, Start};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use duetime::{
    Actor, Config, Duration, Effect, Event, JobDef, JobName, Now, Outcome, ProcessId, Schedule,
    State, Timestamp,
};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Builds `n` idle jobs (`every n × 100 ms`, offsets 100 ms apart) through `Upsert` events,
/// then one tick that finds nothing due.
fn build(n: u64) -> State {
    let start = Timestamp::from_secs(1_748_854_800);
    let mut state = State::new(Config::default());
    let mut effects = Vec::new();
    for i in 0..n {
        let schedule = Schedule::every(
            Duration::from_millis(n * 100),
            Duration::from_millis(i * 100 + 50),
        )
        .unwrap();
        let def = JobDef::new(JobName::new(&format!("job_{i:07}")).unwrap(), schedule);
        state.step(
            Now::at(start),
            Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("bench"),
            },
            &mut effects,
        );
        effects.clear();
    }
    state.step(
        Now::at(start),
        Event::ProcessStarted {
            process: ProcessId(1),
        },
        &mut effects,
    );
    assert!(effects.is_empty());
    state
}

/// Runs every job once (a tick per 100 ms slot claims one, its result settles it), so each
/// keeps what a job that has run keeps (its last outcome).
fn run_each_once(state: &mut State, n: u64) {
    let mut effects = Vec::new();
    let mut now = Timestamp::from_secs(1_748_854_800);
    for _ in 0..n {
        now = Timestamp::from_millis(now.as_millis() + 100);
        state.step(
            Now::at(now),
            Event::Tick {
                process: ProcessId(1),
                held: Vec::new(),
            },
            &mut effects,
        );
        let finished: Vec<Event> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Do(Action::Start(Start {
                    run, job, fence, ..
                })) => Some(Event::RunFinished {
                    process: ProcessId(1),
                    job: job.clone(),
                    run: *run,
                    fence: *fence,
                    outcome: Outcome::Ok,
                }),
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 1);
        effects.clear();
        for e in finished {
            state.step(Now::at(now), e, &mut effects);
        }
        effects.clear();
    }
}

#[test]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
fn memory_per_idle_job() {
    for n in [1_000u64, 100_000] {
        let before = LIVE.load(Ordering::Relaxed);
        let mut state = build(n);
        let after = LIVE.load(Ordering::Relaxed);
        let per_job = (after - before) as f64 / n as f64;
        println!("{n} idle jobs, never run: {per_job:.0} bytes per job");
        assert_eq!(state.job_count() as u64, n);
        run_each_once(&mut state, n);
        let ran = LIVE.load(Ordering::Relaxed);
        let per_job = (ran - before) as f64 / n as f64;
        println!("{n} idle jobs, each run once: {per_job:.0} bytes per job");
        drop(state);
    }
    println!(
        "size_of: JobRecord {} JobDef {} Schedule {}",
        std::mem::size_of::<duetime::JobRecord>(),
        std::mem::size_of::<JobDef>(),
        std::mem::size_of::<Schedule>()
    );
}
