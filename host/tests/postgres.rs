//! The PostgreSQL store under what a network does to it: handles racing on one store (both
//! isolation modes), a connection killed in the middle of a transaction, a commit whose
//! answer never arrives, a commit that never arrives, and servers that are missing, foreign
//! or newer. Needs a server: see support/pg.rs.

#[path = "support/pg.rs"]
mod pg;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use duetime::{
    Actor, Config, Duration, Effect, Event, JobDef, JobName, Now, ProcessId, Record, Schedule,
    State, Timestamp,
};
use duetime_host::store::{Isolation, Options, PostgresStore, Store, StoreError};

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

fn upsert(name: &str, secs: u64) -> Event {
    let def = JobDef::new(
        JobName::new(name).unwrap(),
        Schedule::every(Duration::from_secs(secs), Duration::ZERO).unwrap(),
    );
    Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("ann"),
    }
}

fn records(effects: &[Effect]) -> Vec<Record> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn racing_handles_queue_and_lose_nothing(isolation: Isolation, test: &str) {
    let Some(url) = pg::fresh(test) else { return };
    let opts = Options {
        isolation,
        ..options()
    };
    PostgresStore::open_with(&url, opts.clone()).expect("the store opens");
    const HANDLES: u64 = 3;
    const EACH: u64 = 60;
    let threads: Vec<_> = (0..HANDLES)
        .map(|h| {
            let (url, opts) = (url.clone(), opts.clone());
            std::thread::spawn(move || {
                let mut store = PostgresStore::open_with(&url, opts).expect("opens");
                let mut lines = 0;
                for i in 0..EACH {
                    let event = if i % 3 == 0 {
                        upsert(&format!("job_{h}_{}", i % 7), 30 + i)
                    } else {
                        Event::ProcessStarted {
                            process: ProcessId(h * 1000 + i),
                        }
                    };
                    let effects = store
                        .apply(at((i * HANDLES + h) as i64), event)
                        .expect("every transaction commits, after waiting or retrying");
                    lines += records(&effects).len();
                }
                (lines, store.state().unwrap().clone())
            })
        })
        .collect();
    let mut lines = 0;
    let mut states = Vec::new();
    for t in threads {
        let (l, s) = t.join().expect("no panic");
        lines += l;
        states.push(s);
    }
    let mut fresh = PostgresStore::open_with(&url, opts).unwrap();
    assert_eq!(fresh.version().unwrap(), (HANDLES * EACH) as i64);
    assert_eq!(
        fresh.journal_all().unwrap().len(),
        lines,
        "every line, once"
    );
    let fresh_state = fresh.state().unwrap().clone();
    assert_eq!(fresh_state.job_count(), (HANDLES * 7) as usize);
    // A handle's last view may be older than the end; refreshed, all agree.
    for s in states {
        assert!(s.job_count() <= fresh_state.job_count());
    }
}

#[test]
fn racing_handles_queue_on_the_lock_row_and_lose_nothing() {
    racing_handles_queue_and_lose_nothing(Isolation::LockRow, "race_lock_row");
}

#[test]
fn racing_handles_retry_serialization_failures_and_lose_nothing() {
    racing_handles_queue_and_lose_nothing(Isolation::Serializable, "race_serializable");
}

#[test]
fn a_connection_killed_mid_transaction_is_run_again_on_a_new_one() {
    let Some(url) = pg::fresh("killed_mid_transaction") else {
        return;
    };
    let url = format!("{url}&application_name=victim");
    let mut store = PostgresStore::open_with(&url, options()).unwrap();
    let mut reference = State::new(Config::default());
    let mut expected = Vec::new();
    reference.step(at(0), upsert("a", 60), &mut expected);
    store.apply(at(0), upsert("a", 60)).unwrap();

    let mut admin = postgres::Client::connect(&pg::server("admin").unwrap(), postgres::NoTls)
        .expect("an admin connection");
    let mut calls = 0;
    let effects = store
        .transact(&mut |state, effects| {
            calls += 1;
            state.step(at(1), upsert("b", 30), effects);
            if calls == 1 {
                // The server drops this transaction's connection under it.
                admin
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = 'victim'",
                        &[],
                    )
                    .unwrap();
            }
            Ok(())
        })
        .expect("run again on a new connection");
    assert_eq!(
        calls, 2,
        "the body ran twice, from the store's state each time"
    );
    let mut want = Vec::new();
    reference.step(at(1), upsert("b", 30), &mut want);
    assert_eq!(effects, want);
    assert_eq!(*store.state().unwrap(), reference);
    assert_eq!(store.version().unwrap(), 2, "one commit each");
    let journal = store.journal_all().unwrap();
    assert_eq!(
        journal.len(),
        records(&expected).len() + records(&want).len()
    );
}

/// What the proxy does when it sees the client send `COMMIT`.
const PASS: u8 = 0;
/// Send it on, let the server commit, then cut both sides before the answer comes back.
const LOSE_ANSWER: u8 = 1;
/// Cut both sides instead of sending it on: the server rolls back.
const LOSE_COMMIT: u8 = 2;

/// A TCP proxy in front of the test server that can cut a connection at its `COMMIT`.
struct Proxy {
    port: u16,
    mode: Arc<AtomicU8>,
}

impl Proxy {
    fn start(server_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let shared = Arc::clone(&mode);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(("127.0.0.1", server_port)).unwrap();
                let cut = Arc::new(AtomicBool::new(false));
                // Server to client: stops forwarding once the connection is being cut.
                let (mut from, mut to, c) = (
                    server.try_clone().unwrap(),
                    client.try_clone().unwrap(),
                    Arc::clone(&cut),
                );
                std::thread::spawn(move || {
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || c.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
                let mode = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let (mut from, mut to) = (client, server);
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buf[..n];
                        let commit = chunk.windows(7).any(|w| w == b"COMMIT\0");
                        let m = mode.load(Ordering::SeqCst);
                        if commit && m != PASS {
                            mode.store(PASS, Ordering::SeqCst);
                            cut.store(true, Ordering::SeqCst);
                            if m == LOSE_ANSWER {
                                to.write_all(chunk).unwrap();
                                std::thread::sleep(std::time::Duration::from_millis(300));
                            }
                            let _ = from.shutdown(Shutdown::Both);
                            let _ = to.shutdown(Shutdown::Both);
                            return;
                        }
                        if to.write_all(chunk).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Proxy { port, mode }
    }
}

/// A fresh schema reached through a proxy; the admin URL goes straight to the server.
fn behind_proxy(test: &str) -> Option<(Proxy, String)> {
    let direct = pg::fresh(test)?;
    let config: postgres::Config = direct.parse().unwrap();
    let port = config.get_ports()[0];
    let proxy = Proxy::start(port);
    let url = direct.replacen(&format!(":{port}/"), &format!(":{}/", proxy.port), 1);
    assert_ne!(url, direct, "the URL names the port");
    Some((proxy, format!("{url}&sslmode=disable")))
}

#[test]
fn a_commit_whose_answer_is_lost_counts_once_and_its_effects_come_back() {
    let Some((proxy, url)) = behind_proxy("answer_lost") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options()).unwrap();
    store.apply(at(0), upsert("a", 60)).unwrap();
    let before = store.journal_all().unwrap().len();
    proxy.mode.store(LOSE_ANSWER, Ordering::SeqCst);
    let effects = store
        .apply(at(1), upsert("b", 30))
        .expect("the store found its commit and hands back the effects");
    assert_eq!(proxy.mode.load(Ordering::SeqCst), PASS, "the cut happened");
    assert!(!records(&effects).is_empty());
    assert_eq!(store.version().unwrap(), 2);
    assert_eq!(
        store.journal_all().unwrap().len(),
        before + records(&effects).len(),
        "its lines, once"
    );
    let mut other = PostgresStore::open_with(&url, options()).unwrap();
    assert_eq!(*other.state().unwrap(), *store.state().unwrap());
}

#[test]
fn a_commit_that_never_arrives_is_an_error_and_the_retry_is_the_only_copy() {
    let Some((proxy, url)) = behind_proxy("commit_lost") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options()).unwrap();
    store.apply(at(0), upsert("a", 60)).unwrap();
    let before = store.state().unwrap().clone();
    proxy.mode.store(LOSE_COMMIT, Ordering::SeqCst);
    let err = store.apply(at(1), upsert("b", 30)).unwrap_err();
    // A new store has several partitions, so the error names its partition.
    let inner = match &err {
        StoreError::InPartition { error, .. } => error.as_ref(),
        other => other,
    };
    assert!(
        matches!(inner, StoreError::Unreachable { detail, .. } if detail.contains("did not commit")),
        "{err}"
    );
    assert_eq!(store.version().unwrap(), 1, "nothing committed");
    assert_eq!(*store.state().unwrap(), before, "memory put back");
    // The host tries the event again: now it is there, once.
    let effects = store.apply(at(1), upsert("b", 30)).unwrap();
    assert_eq!(store.version().unwrap(), 2);
    let defined = store
        .journal_all()
        .unwrap()
        .iter()
        .filter(|r| r.job.as_str() == "b")
        .count();
    assert_eq!(defined, records(&effects).len());
}

#[test]
fn a_server_that_is_not_there_is_unreachable_not_a_panic() {
    if pg::server("unreachable").is_none() {
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://ann:secret@127.0.0.1:{port}/nowhere?connect_timeout=2");
    let err = PostgresStore::open(&url).err().expect("refused");
    let text = err.to_string();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{text}");
    assert!(
        text.contains(&format!("postgres://ann@127.0.0.1:{port}/nowhere")),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
    let err = PostgresStore::open("postgres://ann:secret@host:notaport/db")
        .err()
        .unwrap();
    assert!(
        matches!(&err, StoreError::Database { detail, .. } if detail.contains("expected postgres://")),
        "{err}"
    );
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[test]
fn a_schema_without_a_store_is_missing_when_asked_not_to_create_one() {
    let Some(url) = pg::fresh("missing") else {
        return;
    };
    let err = PostgresStore::open_with(
        &url,
        Options {
            create: false,
            ..options()
        },
    )
    .err()
    .unwrap();
    assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("no store at postgres://"), "{err}");
}

#[test]
fn foreign_tables_and_newer_schemas_are_refused() {
    let Some(url) = pg::fresh("foreign") else {
        return;
    };
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute("CREATE TABLE jobs (id INT)").unwrap();
    let err = PostgresStore::open_with(&url, options()).err().unwrap();
    assert!(
        matches!(&err, StoreError::Corrupt { detail, .. } if detail.contains("`jobs`")),
        "{err}"
    );

    let Some(url) = pg::fresh("newer") else {
        return;
    };
    PostgresStore::open_with(&url, options()).unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
        .unwrap();
    let err = PostgresStore::open_with(&url, options()).err().unwrap();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
}

#[test]
fn process_ids_never_repeat_across_handles() {
    let Some(url) = pg::fresh("process_ids") else {
        return;
    };
    let mut a = PostgresStore::open_with(&url, options()).unwrap();
    let mut b = PostgresStore::open_with(&url, options()).unwrap();
    let ids = [
        a.next_process_id().unwrap(),
        b.next_process_id().unwrap(),
        a.next_process_id().unwrap(),
    ];
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
}
