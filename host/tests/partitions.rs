//! A store in partitions (issue 43, docs/scale-out.md): the count recorded when the store
//! is made and another refused naming both; every job in exactly one partition, where
//! `locate` finds it and its key or name routes it; transactions on two partitions not
//! queueing behind each other; a store of one state from before partitions migrated to
//! one partition, losing nothing; a damaged partition refused by name while the others
//! go on (in the library and in `list`, `status` and the commands); a key change in the
//! jobs file moving its job (partition_moves.rs: the moves themselves); SQLite keeping
//! exactly one partition. The PostgreSQL tests
//! need a server: see support/pg.rs.

#[path = "support/pg.rs"]
mod pg;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use duetime::{Actor, Duration, Effect, Event, JobDef, JobName, Now, ProcessId, Schedule};
use duetime::{State, Timestamp};
use duetime_host::store::parts::{self, partition_of, place, Placement};
use duetime_host::store::{Options, PostgresStore, SqliteStore, Store, StoreError};
use duetime_loop::{route, route_of, Partition, PartitionCount};

/// 2025-06-02T09:00:00Z.
const T0: i64 = 1_748_854_800_000;

fn at(secs: i64) -> Now {
    Now::at(Timestamp::from_millis(T0 + secs * 1000))
}

fn count(n: u64) -> PartitionCount {
    PartitionCount::new(n).unwrap()
}

fn options(partitions: Option<u64>) -> Options {
    Options {
        durable: false,
        partitions: partitions.map(count),
        ..Options::default()
    }
}

fn def(name: &str, key: Option<&str>) -> JobDef {
    let mut def = JobDef::new(
        JobName::new(name).unwrap(),
        Schedule::every(Duration::from_secs(60), Duration::ZERO).unwrap(),
    );
    def.concurrency_key = key.map(String::from);
    def
}

fn actor() -> Actor {
    Actor::new("jobs-file")
}

fn pause(name: &str) -> Event {
    Event::Pause {
        job: JobName::new(name).unwrap(),
        actor: Actor::new("ann"),
        note: "look".into(),
    }
}

fn replied_ok(effects: &[Effect]) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, Effect::Reply { result: Ok(_), .. }))
}

/// The jobs each partition's state holds, by partition number.
fn names_by_partition<S: Store>(store: &mut S) -> Vec<BTreeSet<String>> {
    store
        .partitions()
        .iter()
        .map(|p| {
            let state = store.state_in(p).expect("the partition loads");
            state
                .records()
                .map(|(_, r)| r.def().name.to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_count_is_recorded_and_another_is_refused_naming_both() {
    let Some(url) = pg::fresh("partition_count") else {
        return;
    };
    let made = PostgresStore::open_with(&url, options(Some(8))).unwrap();
    assert_eq!(made.partitions(), count(8));
    let reopened = PostgresStore::open_with(&url, options(None)).unwrap();
    assert_eq!(
        reopened.partitions(),
        count(8),
        "left out, the store's count"
    );
    let same = PostgresStore::open_with(&url, options(Some(8))).unwrap();
    assert_eq!(same.partitions(), count(8));
    let err = PostgresStore::open_with(&url, options(Some(64)))
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::PartitionsDiffer { stored, asked, .. }
            if stored == count(8) && asked == count(64)),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("has 8 partitions; --partitions 64 was asked"),
        "{text}"
    );
    assert_eq!(err.kind().name(), "partitions_differ");
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let rows: i64 = raw
        .query_one("SELECT count(*) FROM globals", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 8, "a globals row per partition");
}

/// A new PostgreSQL store left without a count has 64 partitions (issue 43: its daemons
/// step them over a few pooled connections); one asked for 1 keeps 1 when reopened without
/// a count, as every existing store keeps its own.
#[test]
fn a_new_store_has_64_partitions_unless_asked_and_an_existing_one_keeps_its_count() {
    let Some(url) = pg::fresh("default_count") else {
        return;
    };
    let made = PostgresStore::open_with(&url, options(None)).unwrap();
    assert_eq!(made.partitions(), PartitionCount::POSTGRES_DEFAULT);
    assert_eq!(made.partitions(), count(64));
    let Some(one) = pg::fresh("default_count_one") else {
        return;
    };
    PostgresStore::open_with(&one, options(Some(1))).unwrap();
    let reopened = PostgresStore::open_with(&one, options(None)).unwrap();
    assert_eq!(
        reopened.partitions(),
        PartitionCount::ONE,
        "the store's own count"
    );
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open_with(&dir.path().join("s.db"), options(None)).unwrap();
    assert_eq!(
        sqlite.partitions(),
        PartitionCount::ONE,
        "SQLite: always one"
    );
}

#[test]
fn every_job_lives_in_exactly_one_partition_where_locate_finds_it() {
    let Some(url) = pg::fresh("one_partition_each") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(8))).unwrap();
    let mut defs: Vec<JobDef> = (0..24).map(|i| def(&format!("plain_{i}"), None)).collect();
    defs.extend((0..10).map(|i| def(&format!("db_{i}"), Some("db"))));
    parts::sync(&mut store, &defs, &actor(), at(0)).unwrap();

    let by_partition = names_by_partition(&mut store);
    for d in &defs {
        let name = d.name.as_str();
        let routed = route(d, count(8));
        assert_eq!(store.locate(name).unwrap(), Some(routed), "{name}");
        let holders: Vec<usize> = (0..8).filter(|&i| by_partition[i].contains(name)).collect();
        assert_eq!(
            holders,
            [routed.0 as usize],
            "{name} is in exactly one state"
        );
    }
    let db = route_of(Some("db"), "", count(8));
    for i in 0..10 {
        let name = format!("db_{i}");
        assert_eq!(
            store.locate(&name).unwrap(),
            Some(db),
            "one key, one partition"
        );
    }
    let used = by_partition.iter().filter(|s| !s.is_empty()).count();
    assert!(
        used >= 4,
        "24 names spread over the partitions: {by_partition:?}"
    );
    assert_eq!(store.locate("nobody").unwrap(), None);

    // A command goes to the job's partition and changes only that state.
    let victim = defs
        .iter()
        .map(|d| d.name.as_str())
        .find(|n| route_of(None, n, count(8)) != Partition::FIRST)
        .unwrap();
    let p = partition_of(&mut store, victim).unwrap();
    assert_ne!(p, Partition::FIRST);
    let effects = store.apply_in(p, at(5), pause(victim)).unwrap();
    assert!(replied_ok(&effects), "{effects:?}");
    let mut other = PostgresStore::open_with(&url, options(None)).unwrap();
    let view = other.state_in(p).unwrap().job(victim, at(6).wall).unwrap();
    assert!(view.paused.is_some(), "paused where it lives");
    // The same job paused through partition 0, where it does not live, is not found.
    let effects = other
        .apply_in(Partition::FIRST, at(7), pause(victim))
        .unwrap();
    assert!(!replied_ok(&effects), "p0 has no such job: {effects:?}");
    rows_count_each_partitions_jobs(&mut other, &by_partition, defs.len());
    names_are_one_row_each(&url);
}

/// Each partition's row counts its jobs (`by_partition`), adding up to `total`, with no
/// owner yet.
fn rows_count_each_partitions_jobs(
    store: &mut PostgresStore,
    by_partition: &[BTreeSet<String>],
    total: usize,
) {
    let rows = store.partition_rows().unwrap();
    assert_eq!(rows.len(), by_partition.len());
    let sum: u64 = rows.iter().map(|r| r.jobs).sum();
    assert_eq!(sum, total as u64);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.jobs, by_partition[i].len() as u64, "{r:?}");
        assert_eq!((r.owner, r.epoch, r.lease_until), (None, 0, None));
    }
}

/// No name has two rows in `jobs`, across partitions.
fn names_are_one_row_each(url: &str) {
    let mut raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let dup: i64 = raw
        .query_one(
            "SELECT count(*) FROM (SELECT name FROM jobs WHERE name IS NOT NULL
             GROUP BY name HAVING count(*) > 1) d",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(dup, 0, "no name in two rows");
}

/// The store holds a name to one row across partitions, whatever a host asks: a job
/// upserted straight into another partition than the one it lives in is refused by the
/// database and nothing of that transaction is written.
#[test]
fn the_store_refuses_a_second_row_of_one_name() {
    let Some(url) = pg::fresh("unique_names") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(4))).unwrap();
    let d = def("solo", None);
    let home = route(&d, count(4));
    let elsewhere = Partition((home.0 + 1) % 4);
    let upsert = |d: &JobDef| Event::Upsert {
        def: Box::new(d.clone()),
        actor: actor(),
    };
    store.apply_in(home, at(0), upsert(&d)).unwrap();
    let err = store.apply_in(elsewhere, at(1), upsert(&d)).err().unwrap();
    assert!(
        matches!(&err, StoreError::InPartition { partition, error }
            if *partition == elsewhere && matches!(**error, StoreError::Database { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("partition {elsewhere}: ")),
        "{err}"
    );
    assert_eq!(
        store.state_in(elsewhere).unwrap().job_count(),
        0,
        "memory put back"
    );
    assert_eq!(store.locate("solo").unwrap(), Some(home));
}

#[test]
fn transactions_on_two_partitions_do_not_queue_behind_each_other() {
    let Some(url) = pg::fresh("partitions_apart") else {
        return;
    };
    let mut opts = options(Some(2));
    opts.busy_timeout = std::time::Duration::from_millis(300);
    PostgresStore::open_with(&url, opts.clone()).unwrap();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let (url, opts) = (url.clone(), opts.clone());
        std::thread::spawn(move || {
            let mut a = PostgresStore::open_with(&url, opts).unwrap();
            a.transact_in(Partition(0), &mut |_, _| {
                held_tx.send(()).ok();
                done_rx.recv().ok();
                Ok(())
            })
            .unwrap();
        })
    };
    held_rx.recv().unwrap();
    let mut b = PostgresStore::open_with(&url, opts).unwrap();
    let effects = b
        .apply_in(
            Partition(1),
            at(0),
            Event::Upsert {
                def: Box::new(def("other", None)),
                actor: actor(),
            },
        )
        .expect("partition 1 commits while partition 0 is held");
    assert!(replied_ok(&effects));
    let err = b.apply_in(Partition(0), at(1), pause("x")).err().unwrap();
    assert!(
        matches!(&err, StoreError::InPartition { partition: Partition(0), error }
            if matches!(**error, StoreError::Locked { .. })),
        "partition 0 itself waits for its holder: {err:?}"
    );
    done_tx.send(()).unwrap();
    holder.join().unwrap();
}

/// The tables of schema version 1, as every duetime before partitions made them
/// (`MIGRATIONS[0]` of store/postgres/schema.rs): a store to migrate is built from them here, not
/// from today's code.
const SCHEMA_1: &str = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE globals (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         version BIGINT NOT NULL,
         json TEXT NOT NULL
     );
     CREATE TABLE jobs (
         seq BIGINT PRIMARY KEY,
         name TEXT,
         version BIGINT NOT NULL,
         json TEXT
     );
     CREATE INDEX jobs_by_version ON jobs (version);
     CREATE TABLE journal (
         id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         at BIGINT NOT NULL,
         job TEXT NOT NULL,
         kind TEXT NOT NULL,
         due_from BIGINT,
         due_to BIGINT,
         json TEXT NOT NULL
     );
     CREATE INDEX journal_by_job_due ON journal (job, due_from);
     CREATE INDEX journal_by_job_at ON journal (job, at);
     CREATE TABLE commits (handle BIGINT PRIMARY KEY, version BIGINT NOT NULL);
     CREATE SEQUENCE handles;
     CREATE SEQUENCE process_ids;
     INSERT INTO meta (key, value) VALUES ('schema', '1');";

/// A history on an SQLite store (schema 1, the same tables): jobs, a process, ticks that
/// start runs, a pause, a removal.
fn history(path: &std::path::Path) -> SqliteStore {
    let mut store = SqliteStore::open_with(path, options(None)).unwrap();
    for (i, name) in ["backup", "report", "gone"].iter().enumerate() {
        let effects = store
            .apply(
                at(i as i64),
                Event::Upsert {
                    def: Box::new(def(name, (i == 1).then_some("lane"))),
                    actor: actor(),
                },
            )
            .unwrap();
        assert!(replied_ok(&effects));
    }
    let p = ProcessId(1);
    store
        .apply(at(5), Event::ProcessStarted { process: p })
        .unwrap();
    for t in [60, 90, 120, 185] {
        store
            .apply(
                at(t),
                Event::Tick {
                    process: p,
                    held: Vec::new(),
                },
            )
            .unwrap();
    }
    store.apply(at(200), pause("report")).unwrap();
    store
        .apply(
            at(210),
            Event::Remove {
                job: JobName::new("gone").unwrap(),
                actor: actor(),
            },
        )
        .unwrap();
    store
}

/// Copies an SQLite store's rows into a PostgreSQL schema of version 1.
fn copy_to_schema_1(sqlite: &std::path::Path, raw: &mut postgres::Client) {
    raw.batch_execute(SCHEMA_1).unwrap();
    let lite = rusqlite::Connection::open(sqlite).unwrap();
    let (version, globals): (i64, String) = lite
        .query_row("SELECT version, json FROM globals", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    raw.execute(
        "INSERT INTO globals (id, version, json) VALUES (1, $1, $2)",
        &[&version, &globals],
    )
    .unwrap();
    let mut jobs = lite
        .prepare("SELECT seq, name, version, json FROM jobs")
        .unwrap();
    let jobs = jobs
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap();
    for j in jobs {
        let (seq, name, version, json) = j.unwrap();
        raw.execute(
            "INSERT INTO jobs (seq, name, version, json) VALUES ($1, $2, $3, $4)",
            &[&seq, &name, &version, &json],
        )
        .unwrap();
    }
    let mut lines = lite
        .prepare("SELECT at, job, kind, due_from, due_to, json FROM journal ORDER BY id")
        .unwrap();
    let lines = lines
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, String>(5)?,
            ))
        })
        .unwrap();
    for l in lines {
        let (at, job, kind, from, to, json) = l.unwrap();
        raw.execute(
            "INSERT INTO journal (at, job, kind, due_from, due_to, json)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[&at, &job, &kind, &from, &to, &json],
        )
        .unwrap();
    }
}

#[test]
fn a_store_of_one_state_migrates_to_one_partition_losing_nothing() {
    let Some(url) = pg::fresh("migrate_to_partitions") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("before.db");
    let mut before = history(&path);
    let state: State = before.state().unwrap().clone();
    let journal = before.journal_all().unwrap();
    assert!(journal.len() > 8, "a history worth keeping: {journal:?}");
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    copy_to_schema_1(&path, &mut raw);

    let mut after = PostgresStore::open_with(&url, options(None)).unwrap();
    assert_eq!(after.partitions(), PartitionCount::ONE);
    assert_eq!(*after.state().unwrap(), state, "the state, whole");
    assert_eq!(
        after.journal_all().unwrap(),
        journal,
        "every journal line, in order"
    );
    assert_eq!(after.locate("backup").unwrap(), Some(Partition::FIRST));
    assert_eq!(
        after.locate("gone").unwrap(),
        None,
        "a tombstone names no job"
    );
    let meta = |key: &str, raw: &mut postgres::Client| -> String {
        raw.query_one("SELECT value FROM meta WHERE key = $1", &[&key])
            .unwrap()
            .get(0)
    };
    assert_eq!(meta("schema", &mut raw), "4");
    assert_eq!(meta("partitions", &mut raw), "1");
    // It goes on: a transaction commits, and another handle reads it back equal.
    let effects = after
        .apply(
            at(300),
            Event::Resume {
                job: JobName::new("report").unwrap(),
                actor: Actor::new("ann"),
            },
        )
        .unwrap();
    assert!(replied_ok(&effects), "{effects:?}");
    let mut second = PostgresStore::open_with(&url, options(None)).unwrap();
    let a = after.state().unwrap().clone();
    assert_eq!(*second.state().unwrap(), a);
    assert_eq!(
        second.journal_all().unwrap().len(),
        after.journal_all().unwrap().len()
    );
    let err = PostgresStore::open_with(&url, options(Some(8)))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("has 1 partition; --partitions 8 was asked"),
        "{err}"
    );
}

/// A store of four partitions with jobs in at least two; the partition of `victim`.
fn four_partitions(url: &str) -> (Vec<JobDef>, Partition) {
    let mut store = PostgresStore::open_with(url, options(Some(4))).unwrap();
    let defs: Vec<JobDef> = (0..12).map(|i| def(&format!("job_{i}"), None)).collect();
    parts::sync(&mut store, &defs, &actor(), at(0)).unwrap();
    let victim = route(&defs[0], count(4));
    (defs, victim)
}

#[test]
fn a_damaged_partition_is_refused_by_name_and_the_others_go_on() {
    let Some((url, bad, victim, _)) = damaged("damaged_partition") else {
        return;
    };
    let defs: Vec<JobDef> = (0..12).map(|i| def(&format!("job_{i}"), None)).collect();
    let mut store = PostgresStore::open_with(&url, options(None)).expect("the store opens");
    let err = store.state_in(bad).err().unwrap();
    assert!(
        matches!(&err, StoreError::InPartition { partition, error }
            if *partition == bad && matches!(**error, StoreError::Corrupt { .. })),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("partition {bad}: the store ")),
        "{text}"
    );
    assert!(text.contains("globals"), "{text}");
    assert_eq!(err.kind().name(), "corrupt");
    let good: Vec<&JobDef> = defs.iter().filter(|d| route(d, count(4)) != bad).collect();
    assert!(!good.is_empty());
    for d in &good {
        let p = route(d, count(4));
        assert!(store
            .state_in(p)
            .unwrap()
            .job(d.name.as_str(), at(1).wall)
            .is_some());
    }
    let name = good[0].name.as_str();
    let p = partition_of(&mut store, name).unwrap();
    assert!(
        replied_ok(&store.apply_in(p, at(2), pause(name)).unwrap()),
        "the others go on"
    );
    let err = store.apply_in(bad, at(3), pause(&victim)).err().unwrap();
    assert!(
        err.to_string().starts_with(&format!("partition {bad}: ")),
        "{err}"
    );

    let merged = duetime_host::views::all_rows(&mut store, at(4).wall).unwrap();
    assert_eq!(
        merged.rows.len(),
        good.len(),
        "every job of the good partitions"
    );
    assert_eq!(merged.refused.len(), 1);
    let health = parts::health(&mut store).unwrap();
    assert_eq!(health.len(), 4);
    for h in &health {
        assert_eq!(h.refused.is_some(), h.row.partition == bad, "{h:?}");
    }
}

/// A store of four partitions whose `victim` partition's globals do not parse: its URL,
/// that partition, a job in it and a job in another.
fn damaged(test: &str) -> Option<(String, Partition, String, String)> {
    let url = pg::fresh(test)?;
    let (defs, bad) = four_partitions(&url);
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.execute(
        "UPDATE globals SET json = '{\"format\": 1' WHERE part = $1",
        &[&(bad.0 as i32)],
    )
    .unwrap();
    let good = defs.iter().find(|d| route(d, count(4)) != bad).unwrap();
    Some((url, bad, defs[0].name.to_string(), good.name.to_string()))
}

#[test]
fn a_damaged_partition_is_named_by_list_status_and_the_commands() {
    let Some((url, bad, victim, name)) = damaged("damaged_partition_cli") else {
        return;
    };
    let name = name.as_str();
    // The commands, `list` and `status` say the same to a person.
    let cli = |args: &[&str]| duetime(&url, args);
    let (code, out, err) = cli(&["list"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains(&format!("partition {bad}: ")), "{err}");
    assert!(out.contains(name), "{out}");
    let (code, out, _) = cli(&["list", "--json"]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["refused"][0]["partition"], bad.to_string(), "{out}");
    assert_eq!(v["refused"][0]["kind"], "corrupt", "{out}");
    let (code, out, _) = cli(&["status"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("4 partitions"), "{out}");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{bad} ")))
        .unwrap_or_else(|| panic!("a line for {bad}: {out}"));
    assert!(line.contains("refused: the store "), "{line}");
    let (code, out, err) = cli(&["pause", name]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli(&["pause", &victim]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("partition {bad}: ")), "{err}");
}

/// `duetime ARGS --store URL`: exit code, stdout, stderr.
fn duetime(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_duetime"))
        .args(args)
        .args(["--store", url])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_and_views_reach_every_partition() {
    let Some(url) = pg::fresh("commands_route") else {
        return;
    };
    let (defs, _) = four_partitions(&url);
    let cli = |args: &[&str]| duetime(&url, args);
    let (code, out, err) = cli(&["list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed: BTreeSet<String> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap().to_string())
        .collect();
    let all: BTreeSet<String> = defs.iter().map(|d| d.name.to_string()).collect();
    assert_eq!(listed, all, "every partition's jobs");
    assert!(v.get("refused").is_none());
    for d in &defs {
        let name = d.name.as_str();
        let (code, out, err) = cli(&["pause", name, "--note", "n"]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let (code, out, err) = cli(&["show", name, "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["job"]["status"], "paused", "{out}");
    }
    let (code, out, _) = cli(&["status", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs: u64 = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["jobs"].as_u64().unwrap())
        .sum();
    assert_eq!(jobs, defs.len() as u64, "{out}");
}

/// A key change in the jobs file moves the job (`sync`: the move in a transaction of its
/// own over both partitions, before the partitions' upserts); the same key, or another
/// routing to the same partition, is no move. The moves themselves: partition_moves.rs.
#[test]
fn a_key_change_in_the_jobs_file_moves_the_job() {
    let Some(url) = pg::fresh("key_change") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(8))).unwrap();
    let before = def("nightly", None);
    let home = route(&before, count(8));
    parts::sync(&mut store, std::slice::from_ref(&before), &actor(), at(0)).unwrap();
    let key = (0..)
        .map(|i| format!("key_{i}"))
        .find(|k| route_of(Some(k), "", count(8)) != home)
        .unwrap();
    let moved = def("nightly", Some(&key));
    let target = route(&moved, count(8));
    let others = def("other", None);
    let synced = parts::sync_placed(&mut store, &[others, moved.clone()], &actor(), at(1)).unwrap();
    assert_eq!(
        synced.moves,
        [Placement::Moved {
            job: JobName::new("nightly").unwrap(),
            from: home,
            to: target,
            along: vec![]
        }]
    );
    assert_eq!(store.locate("nightly").unwrap(), Some(target));
    assert!(store.locate("other").unwrap().is_some());
    let state = store.state_in(target).unwrap();
    let rec = state.record(state.seq_of_name("nightly").unwrap()).unwrap();
    assert_eq!(rec.def(), &moved);
    names_are_one_row_each(&url);
    // The same key, or one routing to the same partition, is no move.
    let kept = (0..)
        .map(|i| format!("same_{i}"))
        .find(|k| route_of(Some(k), "", count(8)) == target)
        .unwrap();
    let placed = place(&mut store, &def("nightly", Some(&kept)), &actor(), at(2)).unwrap();
    assert_eq!(
        placed.placement,
        Placement::Here {
            job: JobName::new("nightly").unwrap(),
            partition: target
        }
    );
    assert!(placed.effects.is_empty());
}

#[test]
fn sqlite_has_exactly_one_partition() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.db");
    let err = SqliteStore::open_with(&path, options(Some(8)))
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::OnePartitionOnly { asked, .. } if asked == count(8)),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("exactly one partition") && text.contains("--partitions 8 was asked"),
        "{text}"
    );
    assert!(!path.exists(), "refused before anything was made");
    let mut store = SqliteStore::open_with(&path, options(Some(1))).unwrap();
    assert_eq!(store.partitions(), PartitionCount::ONE);
    let err = store.state_in(Partition(1)).err().unwrap();
    assert!(matches!(err, StoreError::NoSuchPartition { .. }), "{err:?}");
    assert!(err.to_string().contains("there is no p1"), "{err}");
    store
        .apply(
            at(0),
            Event::Upsert {
                def: Box::new(def("a", Some("k"))),
                actor: actor(),
            },
        )
        .unwrap();
    assert_eq!(store.locate("a").unwrap(), Some(Partition::FIRST));
    assert_eq!(store.partition_rows().unwrap()[0].jobs, 1);
}

/// `duetime run --jobs FILE ARGS --store STORE` in a directory of its own: exit code and
/// stderr (every case here is refused before the daemon starts).
fn run_daemon(store: &str, args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.toml");
    std::fs::write(
        &jobs,
        "[[job]]\nname = \"a\"\nevery = \"1h\"\ncommand = [\"true\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_duetime"))
        .arg("run")
        .arg("--jobs")
        .arg(&jobs)
        .arg("--runs")
        .arg(dir.path().join("runs"))
        .args(["--store", store])
        .args(args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_daemon_refuses_what_it_cannot_run_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.db");
    let (code, err) = run_daemon(path.to_str().unwrap(), &["--partitions", "8"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("exactly one partition"), "{err}");
    assert!(!path.exists(), "no store made");
    let (code, err) = run_daemon(path.to_str().unwrap(), &["--partitions", "0"]);
    assert_eq!(code, 2, "clap refuses the value: {err}");
    assert!(
        err.contains("accepted: a whole number from 1 to 1024"),
        "{err}"
    );

    // (A store of several partitions on PostgreSQL runs: host/tests/scale_out.rs.)
    let Some(url) = pg::fresh("daemon_refuses") else {
        return;
    };
    PostgresStore::open_with(&url, options(Some(4))).unwrap();
    let (code, err) = run_daemon(&url, &["--partitions", "1"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("has 4 partitions; --partitions 1 was asked"),
        "{err}"
    );
}

/// Damage `part`'s globals row with `change` made to its JSON.
fn damage(url: &str, part: Partition, change: impl FnOnce(&mut serde_json::Value)) {
    let mut raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let key = part.0 as i32;
    let json: String = raw
        .query_one("SELECT json FROM globals WHERE part = $1", &[&key])
        .unwrap()
        .get(0);
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    change(&mut v);
    raw.execute(
        "UPDATE globals SET json = $2 WHERE part = $1",
        &[&key, &v.to_string()],
    )
    .unwrap();
}

/// Globals that parse but that the core refuses (a job numbered at or past `next_seq`)
/// are refused by name as well, as a load error, and the others go on.
#[test]
fn a_partition_the_core_refuses_is_refused_by_name_too() {
    let Some(url) = pg::fresh("inconsistent_partition") else {
        return;
    };
    let (defs, bad) = four_partitions(&url);
    damage(&url, bad, |v| v["next_seq"] = 0.into());
    let mut store = PostgresStore::open_with(&url, options(None)).unwrap();
    let err = store.state_in(bad).err().unwrap();
    assert!(
        matches!(&err, StoreError::InPartition { partition, error }
            if *partition == bad && matches!(**error, StoreError::Load { .. })),
        "{err:?}"
    );
    assert_eq!(err.kind().name(), "load");
    assert!(
        err.to_string().starts_with(&format!("partition {bad}: ")),
        "{err}"
    );
    let good = defs.iter().find(|d| route(d, count(4)) != bad).unwrap();
    let p = route(good, count(4));
    assert!(store
        .state_in(p)
        .unwrap()
        .job(good.name.as_str(), at(1).wall)
        .is_some());
}

/// The daemons are partition 0's processes: with partition 0 refused, `status` still
/// shows every partition and says why it shows no daemons.
#[test]
fn status_shows_the_partitions_when_partition_0_is_refused() {
    let Some(url) = pg::fresh("status_without_p0") else {
        return;
    };
    four_partitions(&url);
    damage(&url, Partition::FIRST, |v| v["format"] = "x".into());
    let (code, out, err) = duetime(&url, &["status"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(": 4 partitions"), "{out}");
    let line = |p: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{p} ")))
            .unwrap_or_else(|| panic!("no line for {p}: {out}"))
            .to_string()
    };
    assert!(line("p0").contains("refused: "), "{out}");
    assert!(!line("p1").contains("refused"), "{out}");
    assert!(
        err.contains("the daemons are not shown: partition p0: "),
        "{err}"
    );
    let (code, out, _) = duetime(&url, &["status", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["daemons"].is_null(), "{out}");
    assert!(v["partitions"][0]["refused"].is_string(), "{out}");
    assert!(v["partitions"][3]["refused"].is_null(), "{out}");
}

/// `what-if --store URL --json` over the twelve jobs of `four_partitions`, through an
/// outage: the report's JSON.
fn what_if_json(url: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.toml");
    let text: String = (0..12)
        .map(|i| format!("[[job]]\nname = \"job_{i}\"\nevery = \"1m\"\ncommand = [\"true\"]\n\n"))
        .collect();
    std::fs::write(&jobs, text).unwrap();
    let from = Timestamp::from_millis(T0).to_string();
    let until = Timestamp::from_millis(T0 + 3_600_000).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_duetime"))
        .arg("what-if")
        .arg(&jobs)
        .args(["--store", url, "--from", &from, "--until", &until])
        .args(["--down", "2025-06-02T09:10..2025-06-02T09:20", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each job's fate in a what-if report: its counts and its runs of equal fate (run ids
/// left out: each partition counts its own).
fn fates(report: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let mut groups = j["groups"].clone();
            for g in groups.as_array_mut().unwrap() {
                g.as_object_mut().unwrap().remove("runs");
            }
            let fate = serde_json::json!({
                "summary": j["summary"], "groups": groups, "owed": j["at_until"]["owed"],
            });
            (j["name"].as_str().unwrap().to_string(), fate)
        })
        .collect()
}

/// `what-if --store` on a store of four partitions replays each as the daemon's seat there
/// would: every job is in the report, and each job's fate through an outage is the one it
/// has in a store of one partition holding the same jobs (jobs without a key are
/// independent, wherever they live).
#[test]
fn what_if_replays_every_partition_of_a_store() {
    let (Some(four), Some(one)) = (pg::fresh("what_if_four"), pg::fresh("what_if_one")) else {
        return;
    };
    four_partitions(&four);
    let mut store = PostgresStore::open_with(&one, options(Some(1))).unwrap();
    let defs: Vec<JobDef> = (0..12).map(|i| def(&format!("job_{i}"), None)).collect();
    parts::sync(&mut store, &defs, &actor(), at(0)).unwrap();
    drop(store);
    let (a, b) = (what_if_json(&four), what_if_json(&one));
    let (a, b) = (fates(&a), fates(&b));
    assert_eq!(a.len(), 12, "{a:?}");
    // An outage of ten minutes: every job has due times it did not run on time.
    assert!(
        a.values()
            .all(|f| f["summary"]["ran_on_time"].as_u64() < f["summary"]["due"].as_u64()),
        "{a:?}"
    );
    assert_eq!(a, b);
}

/// `status` says how far each partition is behind: nobody steps this store, so every
/// partition's jobs wait on their first due time (a minute after `T0`, long past), and a
/// partition whose jobs are all paused waits on nothing.
#[test]
fn status_shows_how_far_each_partition_is_behind() {
    let Some(url) = pg::fresh("partition_lag") else {
        return;
    };
    let (defs, victim) = four_partitions(&url);
    let cli = |args: &[&str]| duetime(&url, args);
    for d in defs.iter().filter(|d| route(d, count(4)) == victim) {
        let (code, out, err) = cli(&["pause", d.name.as_str(), "--note", "n"]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, out, _) = cli(&["status", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first_due = Timestamp::from_millis(T0 + 60_000).to_string();
    let a_year_ms = 365 * 24 * 3_600_000_i64;
    for p in v["partitions"].as_array().unwrap() {
        if p["partition"] == victim.to_string() || p["jobs"] == 0 {
            assert!(p["oldest_waiting"].is_null(), "{p}");
            assert_eq!(p["lag_ms"], 0, "{p}");
        } else {
            assert_eq!(p["oldest_waiting"], first_due.as_str(), "{p}");
            assert!(p["lag_ms"].as_i64().unwrap() > a_year_ms, "{p}");
        }
    }
    let (code, out, _) = cli(&["status"]);
    assert_eq!(code, 0, "{out}");
    let line = |p: Partition| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{p} ")))
            .unwrap_or_else(|| panic!("a line for {p}: {out}"))
            .to_string()
    };
    assert!(!line(victim).contains("behind"), "{out}");
    let behind = (0..4)
        .map(Partition)
        .filter(|p| line(*p).contains(&format!("(waits on {first_due})")))
        .count();
    let with_jobs = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["jobs"] != 0 && p["partition"] != victim.to_string())
        .count();
    assert_eq!(behind, with_jobs, "{out}");
}

/// `def` running after `upstreams` (issue 45), on the same schedule as `def` gives.
fn after(name: &str, upstreams: &[&str], key: Option<&str>) -> JobDef {
    let mut d = def(name, key);
    d.after = upstreams.iter().map(|u| JobName::new(u).unwrap()).collect();
    d
}

/// Names whose own routes differ among 8 partitions from `root`'s, so a test of chains
/// shows them co-located by the chain and not by chance.
fn names_routed_away_from(root: &str, n: usize) -> Vec<String> {
    let home = route_of(None, root, count(8));
    (0..)
        .map(|i| format!("job_{i}"))
        .filter(|name| route_of(None, name, count(8)) != home)
        .take(n)
        .collect()
}

/// A job that runs after others lives with its chain, where the chain's anchor routes (its
/// first root by name, a keyed root first), by its key or name; a job without `after` routes as
/// before; a downstream whose own key would put its lane elsewhere is refused by name.
#[test]
fn a_chain_routes_with_its_root_and_a_job_without_after_as_before() {
    let away = names_routed_away_from("extract", 2);
    let (load, report) = (away[0].as_str(), away[1].as_str());
    let defs = vec![
        after(report, &[load], None),
        after(load, &["extract"], None),
        def("extract", None),
        def("plain", None),
    ];
    let routes = parts::routes(&defs, count(8));
    let home = route_of(None, "extract", count(8));
    assert_eq!(routes[..3], [home, home, home]);
    assert_eq!(routes[3], route_of(None, "plain", count(8)), "unchanged");
    assert_eq!(parts::routes(&defs, count(1)), [Partition::FIRST; 4]);

    // A root with a key takes its chain along: they all go by the key.
    let mut keyed = defs.clone();
    keyed[2].concurrency_key = Some("db".into());
    let db = route_of(Some("db"), "", count(8));
    assert_eq!(parts::routes(&keyed, count(8))[..3], [db, db, db]);

    // A downstream's own key must route its lane where its chain lives.
    let mut laned = defs.clone();
    let other = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| route_of(Some(k), "", count(8)) != home)
        .unwrap();
    laned[1].concurrency_key = Some(other.clone());
    let routes = parts::routes(&laned, count(8));
    let split = parts::split_lanes(&laned, &routes, count(8));
    assert_eq!(split.len(), 1, "{split:?}");
    assert!(
        split[0].contains(&format!("job {load:?} is in a chain"))
            && split[0].contains("where its first root \"extract\" routes")
            && split[0].contains(&format!("concurrency_key {other:?}")),
        "{split:?}"
    );
    assert!(parts::split_lanes(&keyed, &parts::routes(&keyed, count(8)), count(8)).is_empty());

    // A job after two roots joins their chains: all of it in the first root's partition,
    // where the core knows both upstreams.
    let mut joined = defs.clone();
    let audit = names_routed_away_from("extract", 3)[2].clone();
    joined.push(def(&audit, None));
    joined.push(after("join", &[report, &audit], None));
    let routes = parts::routes(&joined, count(8));
    let first = route_of(None, audit.as_str().min("extract"), count(8));
    assert!(
        routes
            .iter()
            .enumerate()
            .all(|(i, r)| i == 3 || *r == first),
        "{routes:?}"
    );
}

/// On a store of eight partitions: a chain written downstream first is upserted whole in
/// its root's partition (the core refuses none: each upstream is known there first), and
/// a key given to the root later moves the whole chain, upstreams first.
#[test]
fn a_chain_lives_in_one_partition_and_moves_as_its_root_does() {
    let Some(url) = pg::fresh("chain_partition") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(8))).unwrap();
    let away = names_routed_away_from("extract", 2);
    let (load, report) = (away[0].as_str(), away[1].as_str());
    let mut defs = vec![
        after(report, &[load], None),
        after(load, &["extract"], None),
        def("extract", None),
    ];
    let effects = parts::sync(&mut store, &defs, &actor(), at(0)).unwrap();
    let refused: Vec<&Effect> = effects
        .iter()
        .filter(|e| matches!(e, Effect::Reply { result: Err(_), .. }))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    let home = route_of(None, "extract", count(8));
    for name in ["extract", load, report] {
        assert_eq!(store.locate(name).unwrap(), Some(home), "{name}");
    }

    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| route_of(Some(k), "", count(8)) != home)
        .unwrap();
    defs[2].concurrency_key = Some(key.clone());
    let synced = parts::sync_placed(&mut store, &defs, &actor(), at(60)).unwrap();
    let target = route_of(Some(&key), "", count(8));
    for name in ["extract", load, report] {
        assert_eq!(
            store.locate(name).unwrap(),
            Some(target),
            "{name}: {synced:?}"
        );
    }
    let state = store.state_in(target).unwrap();
    let (_, r) = state
        .records()
        .find(|(_, r)| r.def().name.as_str() == report)
        .unwrap();
    assert_eq!(r.def().after[0].as_str(), load);
}
