//! The stores: after every transaction the store holds exactly the state the core reached
//! (reopening it gives an equal state) and every journal line; two handles on one store see
//! each other's changes; an aborted transaction leaves memory equal to the store. These
//! run on both backends (`sqlite` and `postgres` in each test's module; see
//! support/pg.rs for the server). Bad SQLite files and newer schemas are refused with
//! clear, typed errors; the PostgreSQL store's own faults are in tests/postgres.rs.

#[path = "support/pg.rs"]
mod pg;

use duetime::{Action, Start};
use std::path::Path;
use std::time::Duration as StdDuration;

use duetime::{
    Actor, Config, Duration, Effect, Event, Fence, Held, JobDef, JobName, JobSeq, Now, Outcome,
    ProcessId, Record, RunId, Schedule, State, Timestamp,
};
use duetime_host::store::{
    self, AnyStore, Options, SqliteStore, Store, StoreError, SCHEMA_VERSION,
};

/// 2025-06-02T09:00:00Z.
const T0: i64 = 1_748_854_800_000;

fn at(secs: i64) -> Now {
    Now::at(Timestamp::from_millis(T0 + secs * 1000))
}

fn options() -> Options {
    Options {
        durable: false,
        ..Options::default()
    }
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open_with(path, options()).expect("the store opens")
}

fn open_at(location: &str) -> AnyStore {
    store::open(location, options()).expect("the store opens")
}

/// Each named story, once on a new SQLite file and once on a new PostgreSQL schema.
macro_rules! on_both_stores {
    ($($story:ident),* $(,)?) => {$(
        mod $story {
            #[test]
            fn sqlite() {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("duetime.db");
                super::$story(path.to_str().unwrap());
            }

            #[test]
            fn postgres() {
                if let Some(url) = super::pg::fresh(stringify!($story)) {
                    super::$story(&url);
                }
            }
        }
    )*};
}

on_both_stores!(
    every_transaction_leaves_a_store_that_reopens_equal_to_the_state,
    two_handles_on_one_store_see_each_others_changes_and_lose_no_journal_line,
    a_removed_and_recreated_job_reaches_the_other_handle,
    an_aborted_transaction_leaves_memory_and_store_equal,
    two_daemons_registering_together_both_keep_their_rows,
);

/// Issue 42, bug 4: a daemon registers (its `daemon:` row) before its `ProcessStarted`
/// reaches the core, so another daemon registering in between must not take that row for a
/// forgotten process's and delete it (`status` then showed it `silent`, with no pid, for
/// good). A row of a process the core does not know that is old is still forgotten.
fn two_daemons_registering_together_both_keep_their_rows(location: &str) {
    use duetime_host::store::DaemonInfo;
    let mut a = open_at(location);
    let mut b = open_at(location);
    let here = Path::new(".");
    let mut gone = DaemonInfo::of_this_process(a.next_process_id().unwrap(), here, here);
    gone.started = Timestamp::from_millis(gone.started.as_millis() - 2 * 3600 * 1000);
    a.register_daemon(&gone).unwrap();
    let first = a.next_process_id().unwrap();
    let second = b.next_process_id().unwrap();
    b.register_daemon(&DaemonInfo::of_this_process(second, here, here))
        .unwrap();
    a.register_daemon(&DaemonInfo::of_this_process(first, here, here))
        .unwrap();
    let rows: Vec<ProcessId> = a.daemons().unwrap().iter().map(|d| d.process).collect();
    assert_eq!(
        rows,
        [first, second],
        "the old row forgotten, both new ones kept"
    );
    b.apply(at(0), Event::ProcessStarted { process: second })
        .unwrap();
    a.apply(at(1), Event::ProcessStarted { process: first })
        .unwrap();
    let rows: Vec<ProcessId> = b.daemons().unwrap().iter().map(|d| d.process).collect();
    assert_eq!(rows, [first, second]);
}

fn upsert(name: &str, secs: u64) -> Event {
    let mut def = JobDef::new(
        JobName::new(name).unwrap(),
        Schedule::every(Duration::from_secs(secs), Duration::ZERO).unwrap(),
    );
    def.retries = 1;
    def.backoff.initial = Duration::from_secs(10);
    Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("ann"),
    }
}

fn records(effects: &[Effect]) -> impl Iterator<Item = Record> + '_ {
    effects.iter().filter_map(|e| match e {
        Effect::Journal(r) => Some(r.clone()),
        _ => None,
    })
}

/// A script of events over a few minutes: definitions, two processes, ticks, results
/// (ok and failed), a pause, a removal. Results answer the runs started so far.
struct Script {
    reference: State,
    journal: Vec<Record>,
    open: Vec<(ProcessId, JobName, RunId, Fence)>,
}

impl Script {
    fn new() -> Script {
        Script {
            reference: State::new(Config::default()),
            journal: Vec::new(),
            open: Vec::new(),
        }
    }

    /// The `i`-th event of the script, given what is open now.
    fn event(&mut self, i: usize) -> (Now, Event) {
        let secs = i as i64 * 17;
        let p = ProcessId(1 + (i as u64 / 7) % 2);
        let event = match i {
            0 => upsert("backup", 60),
            1 => upsert("report", 120),
            2 => upsert("flaky", 45),
            3 => Event::ProcessStarted { process: p },
            _ if i.is_multiple_of(11) => Event::Pause {
                job: JobName::new("report").unwrap(),
                actor: Actor::new("bob"),
                note: "n".into(),
            },
            _ if i.is_multiple_of(13) => Event::Resume {
                job: JobName::new("report").unwrap(),
                actor: Actor::new("bob"),
            },
            _ if i == 40 => Event::Remove {
                job: JobName::new("backup").unwrap(),
                actor: Actor::new("ann"),
            },
            _ if i.is_multiple_of(3) && !self.open.is_empty() => {
                let (process, job, run, fence) = self.open.remove(0);
                let outcome = if job.as_str() == "flaky" {
                    Outcome::failed("exit 1")
                } else {
                    Outcome::Ok
                };
                Event::RunFinished {
                    process,
                    job,
                    run,
                    fence,
                    outcome,
                }
            }
            _ if i.is_multiple_of(7) => Event::ProcessStarted { process: p },
            _ => {
                let held = self
                    .open
                    .iter()
                    .filter(|o| o.0 == p)
                    .map(|o| Held {
                        run: o.2,
                        fence: o.3,
                    })
                    .collect();
                Event::Tick { process: p, held }
            }
        };
        (at(secs), event)
    }

    /// Steps the reference and notes what it started; returns its effects.
    fn step(&mut self, now: Now, event: Event) -> Vec<Effect> {
        let mut out = Vec::new();
        self.reference.step(now, event, &mut out);
        self.note(&out);
        out
    }

    fn note(&mut self, effects: &[Effect]) {
        for e in effects {
            match e {
                Effect::Do(Action::Start(Start {
                    run,
                    job,
                    fence,
                    process,
                    ..
                })) => self.open.push((*process, job.clone(), *run, *fence)),
                Effect::Do(Action::Cancel { run, .. }) => self.open.retain(|o| o.2 != *run),
                _ => {}
            }
        }
        self.journal.extend(records(effects));
    }
}

fn every_transaction_leaves_a_store_that_reopens_equal_to_the_state(path: &str) {
    let mut store = open_at(path);
    let mut script = Script::new();
    for i in 0..60 {
        let (now, event) = script.event(i);
        let from_store = store.apply(now, event.clone()).unwrap();
        let from_reference = script.step(now, event);
        assert_eq!(from_store, from_reference, "event {i}: same effects");
        assert_eq!(*store.state().unwrap(), script.reference, "event {i}");
        let mut reopened = open_at(path);
        assert_eq!(
            *reopened.state().unwrap(),
            script.reference,
            "event {i}: reopened"
        );
        assert_eq!(reopened.journal_all().unwrap(), script.journal, "event {i}");
    }
    assert!(!script.journal.is_empty());
    assert_eq!(store.version().unwrap(), 60);
    // One job's lines since a time.
    let since = Timestamp::from_millis(T0 + 150_000);
    let flaky: Vec<Record> = script
        .journal
        .iter()
        .filter(|r| r.job.as_str() == "flaky" && r.at >= since)
        .cloned()
        .collect();
    assert!(!flaky.is_empty());
    assert_eq!(store.journal_for("flaky", since).unwrap(), flaky);
    assert!(store.journal_for("nobody", since).unwrap().is_empty());
}

fn two_handles_on_one_store_see_each_others_changes_and_lose_no_journal_line(path: &str) {
    let mut a = open_at(path);
    let mut b = open_at(path);
    let mut script = Script::new();
    for i in 0..60 {
        let (now, event) = script.event(i);
        // Runs of three events on one handle, then the other, so each finds the version
        // moved and reloads only what changed.
        let store = if (i / 3) % 2 == 0 { &mut a } else { &mut b };
        let effects = store.apply(now, event.clone()).unwrap();
        assert_eq!(effects, script.step(now, event), "event {i}");
        assert_eq!(*store.state().unwrap(), script.reference, "event {i}");
    }
    assert_eq!(*a.state().unwrap(), script.reference);
    assert_eq!(*b.state().unwrap(), script.reference);
    assert_eq!(a.journal_all().unwrap(), script.journal);
    assert_eq!(b.version().unwrap(), 60);
    // Each handle loaded whole once, at open; after that only what the other wrote.
    for store in [&a, &b] {
        let loads = Store::loads(store);
        assert_eq!(loads.whole, 1, "{loads:?}");
        assert!(loads.partial >= 9, "{loads:?}");
    }
}

fn a_removed_and_recreated_job_reaches_the_other_handle(path: &str) {
    let mut a = open_at(path);
    let mut b = open_at(path);
    a.apply(at(0), upsert("x", 60)).unwrap();
    assert_eq!(b.state().unwrap().seq_of_name("x"), Some(JobSeq(0)));
    a.apply(
        at(1),
        Event::Remove {
            job: JobName::new("x").unwrap(),
            actor: Actor::new("ann"),
        },
    )
    .unwrap();
    a.apply(at(2), upsert("x", 30)).unwrap();
    let a_state = a.state().unwrap().clone();
    let b_state = b.state().unwrap();
    assert_eq!(*b_state, a_state);
    assert_eq!(b_state.seq_of_name("x"), Some(JobSeq(1)));
    assert_eq!(b_state.job_count(), 1);
    assert_eq!(b.loads().whole, 1);
}

fn an_aborted_transaction_leaves_memory_and_store_equal(path: &str) {
    let mut store = open_at(path);
    let mut script = Script::new();
    for i in 0..12 {
        let (now, event) = script.event(i);
        store.apply(now, event.clone()).unwrap();
        script.step(now, event);
    }
    let before = store.state().unwrap().clone();
    let version = store.version().unwrap();
    // The body steps several events (touching jobs, counters and processes), then fails.
    let err = store
        .transact(&mut |state, effects| {
            state.step(at(500), upsert("extra", 10), effects);
            state.step(
                at(501),
                Event::ProcessStarted {
                    process: ProcessId(9),
                },
                effects,
            );
            state.step(
                at(502),
                Event::Remove {
                    job: JobName::new("flaky").unwrap(),
                    actor: Actor::new("ann"),
                },
                effects,
            );
            Err(StoreError::Aborted {
                reason: "the test said so".into(),
            })
        })
        .unwrap_err();
    assert!(err.to_string().contains("the test said so"), "{err}");
    assert_eq!(store.version().unwrap(), version, "nothing committed");
    // The version did not move, so this reads memory as restored, not a fresh load.
    assert_eq!(*store.state().unwrap(), before);
    assert_eq!(store.state().unwrap().seq_of_name("extra"), None);
    assert_eq!(store.loads().whole, 1, "restored in pieces");
    assert_eq!(*open_at(path).state().unwrap(), before);
    assert_eq!(store.journal_all().unwrap(), script.journal);
    // And the store carries on.
    let (now, event) = script.event(12);
    assert_eq!(
        store.apply(now, event.clone()).unwrap(),
        script.step(now, event)
    );
    assert_eq!(*store.state().unwrap(), script.reference);
}

#[test]
fn a_store_held_by_another_process_past_the_timeout_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let mut store = SqliteStore::open_with(
        &path,
        Options {
            busy_timeout: StdDuration::from_millis(50),
            ..options()
        },
    )
    .unwrap();
    store.apply(at(0), upsert("a", 60)).unwrap();
    let before = store.state().unwrap().clone();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store.apply(at(1), upsert("b", 60)).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("locked"), "{err}");
    other.execute_batch("ROLLBACK").unwrap();
    assert_eq!(*store.state().unwrap(), before);
    store.apply(at(2), upsert("b", 60)).unwrap();
    assert_eq!(store.state().unwrap().job_count(), 2);
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    drop(open(&path));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'", [])
        .unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&path, options()).err().unwrap();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, supported, .. } if supported == SCHEMA_VERSION),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("99") && msg.contains(&format!("({SCHEMA_VERSION})")),
        "{msg}"
    );
    assert!(msg.contains("newer.db"), "{msg}");
}

#[test]
fn garbage_or_a_foreign_database_is_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database at all, just bytes. ".repeat(200),
    )
    .unwrap();
    let err = SqliteStore::open_with(&garbage, options()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("garbage.db"), "{err}");

    let foreign = dir.path().join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&foreign, options()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");

    // A job row that does not parse.
    let bad_row = dir.path().join("bad_row.db");
    let mut store = open(&bad_row);
    store.apply(at(0), upsert("a", 60)).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&bad_row).unwrap();
    conn.execute("UPDATE jobs SET json = '{\"def\": 3}'", [])
        .unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&bad_row, options()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("job 0"), "{err}");
}

#[test]
fn an_empty_file_or_an_empty_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.db");
    std::fs::write(&zero, b"").unwrap();
    for create in [false, true] {
        let options = Options {
            create,
            ..options()
        };
        let err = SqliteStore::open_with(&zero, options).err().unwrap();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("empty (0 bytes)"), "{err}");
        assert_eq!(std::fs::metadata(&zero).unwrap().len(), 0, "it was written");
    }
    // An SQLite database with no tables at all is no store either.
    let bare = dir.path().join("bare.db");
    let conn = rusqlite::Connection::open(&bare).unwrap();
    conn.execute_batch("PRAGMA user_version = 1").unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&bare, options()).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string().contains("without duetime's tables"),
        "{err}"
    );
}

#[test]
fn a_new_store_is_made_whole_and_only_where_nothing_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    // Handles racing to make the same new store: each ends up with the one store.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = SqliteStore::open_with(&path, options()).unwrap();
                store.apply(at(i), upsert(&format!("j{i}"), 60)).unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(open(&path).state().unwrap().job_count(), 4);
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".new-"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn an_inconsistent_stored_state_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inconsistent.db");
    let mut store = open(&path);
    store.apply(at(0), upsert("a", 60)).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The job's sequence number beyond the counter.
    conn.execute("UPDATE jobs SET seq = 5", []).unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&path, options()).err().unwrap();
    assert!(matches!(err, StoreError::Load { .. }), "{err:?}");
    assert!(err.to_string().contains("beyond the counter"), "{err}");
}

/// `cargo test --release -p duetime-host --test store -- --ignored --nocapture` for a
/// quick number; `cargo run --release -p duetime-host --example store_rate` for more.
#[test]
#[ignore]
fn rate_of_ticks_at_1k_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rate.db");
    let mut store = open(&path);
    store
        .transact(&mut |state, effects| {
            for i in 0..1000 {
                state.step(at(0), upsert(&format!("job_{i}"), 3600), effects);
            }
            Ok(())
        })
        .unwrap();
    let n = 2000;
    let started = std::time::Instant::now();
    for i in 0..n {
        store
            .apply(
                at(1 + i),
                Event::Tick {
                    process: ProcessId(1),
                    held: Vec::new(),
                },
            )
            .unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{n} ticks at 1000 jobs: {:.0} events/s", n as f64 / secs);
}
