//! The PostgreSQL store's schema: its versions, the migrations between them, and what a
//! new store is made with (its partitions). Run under an advisory lock, so two processes
//! opening one store at once do not both migrate it.

use duetime::State;
use duetime_loop::PartitionCount;
use postgres::Client;

use super::{map_err, part_key};
use crate::store::{Options, StoreError, NEW_STORE_PARTITIONS};

/// The schema this build writes on PostgreSQL. Versions 0 and 1 are SQLite's too (the same
/// tables); 2, partitions, 3, pending moves between them, and 4, the daemons' heartbeats,
/// are PostgreSQL's alone: SQLite has one writer at a time, so it keeps one partition and
/// schema 1.
pub const SCHEMA_VERSION: i64 = 4;

/// `MIGRATIONS[v]` takes a store from schema version `v` to `v + 1`. Append only: a step
/// once released is never edited, since stores in the field have already run it.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
     CREATE SEQUENCE process_ids;",
    // 1 -> 2: partitions. The one state a store held becomes partition 0 of one, with
    // every row and line it had; the globals row gains the columns partition ownership
    // will use; a job's name becomes unique across partitions.
    "ALTER TABLE globals DROP CONSTRAINT globals_id_check;
     ALTER TABLE globals RENAME COLUMN id TO part;
     UPDATE globals SET part = 0;
     ALTER TABLE globals ADD CONSTRAINT globals_part_check CHECK (part >= 0 AND part < 1024);
     ALTER TABLE globals ADD COLUMN owner BIGINT,
         ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0,
         ADD COLUMN lease_until BIGINT;
     ALTER TABLE jobs ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE jobs DROP CONSTRAINT jobs_pkey;
     ALTER TABLE jobs ADD PRIMARY KEY (part, seq);
     DROP INDEX jobs_by_version;
     CREATE INDEX jobs_by_part_version ON jobs (part, version);
     CREATE UNIQUE INDEX jobs_by_name ON jobs (name) WHERE name IS NOT NULL;
     ALTER TABLE journal ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE commits ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE commits DROP CONSTRAINT commits_pkey;
     ALTER TABLE commits ADD PRIMARY KEY (handle, part);
     INSERT INTO meta (key, value) VALUES ('partitions', '1');",
    // 2 -> 3: pending moves. A job whose concurrency key came to route it to another
    // partition while a run of it was open waits there; its new definition (JSON, as a
    // job row holds it), who asked and when are kept here until the move is carried out.
    // Only a table is added: every row of every other table stays as it was.
    "CREATE TABLE pending_moves (
         job TEXT PRIMARY KEY,
         def TEXT NOT NULL,
         actor TEXT NOT NULL,
         asked_at BIGINT NOT NULL
     );",
    // 3 -> 4: heartbeats. Each daemon of a store of several partitions beats here once a
    // round (`Store::beat`): until when it is taken for alive, by the server's clock, and
    // whether it is stopping. The partitions are divided among the live ones
    // (`duetime_loop::assign`). Only a table is added.
    "CREATE TABLE members (
         process BIGINT PRIMARY KEY,
         alive_until BIGINT NOT NULL,
         stopping BOOLEAN NOT NULL
     );",
];

/// The tables a duetime store has; a schema holding some of them but no `meta` is not
/// one this build made, and is refused rather than written into.
const OURS: &[&str] = &["globals", "jobs", "journal", "commits"];

/// Any number: the advisory lock two processes creating the schema at once queue on.
const MIGRATION_LOCK: i64 = 0x0064_7565_7469_6d65;

/// Creates the schema or brings it up to date; refuses a newer one, and a schema that
/// holds some of duetime's tables but no `meta`. With `create` off, a schema without a
/// store is `Missing`. A new store gets the partitions `options` asks for (or
/// `NEW_STORE_PARTITIONS`); an existing one keeps its own, and a different count asked for
/// is refused (`PartitionsDiffer`). Returns the store's count.
pub(super) fn migrate(
    client: &mut Client,
    store: &str,
    options: &Options,
) -> Result<PartitionCount, StoreError> {
    let err = |e| map_err(store, e);
    let mut tx = client.transaction().map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(err)?;
    let found = found_version(&mut tx, store)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            store: store.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == 0 && !options.create {
        return Err(StoreError::Missing {
            store: store.to_string(),
        });
    }
    if found < SCHEMA_VERSION {
        let globals = new_globals(store, options)?;
        for (v, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.batch_execute(sql).map_err(err)?;
            if v == 0 {
                tx.execute(
                    "INSERT INTO globals (id, version, json) VALUES (1, 0, $1)",
                    &[&globals],
                )
                .map_err(err)?;
            }
        }
        if found == 0 {
            let count = options.partitions.unwrap_or(NEW_STORE_PARTITIONS);
            make_partitions(&mut tx, store, count, &globals)?;
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&SCHEMA_VERSION.to_string()],
        )
        .map_err(err)?;
    }
    let count = stored_partitions(&mut tx, store)?;
    tx.commit().map_err(err)?;
    match options.partitions {
        Some(asked) if asked != count => Err(StoreError::PartitionsDiffer {
            store: store.to_string(),
            stored: count,
            asked,
        }),
        _ => Ok(count),
    }
}

/// The schema version a store has: `meta`'s, or 0 where there is no store (and a schema
/// with some of duetime's tables but no `meta` is refused).
fn found_version(tx: &mut postgres::Transaction<'_>, store: &str) -> Result<i64, StoreError> {
    let err = |e| map_err(store, e);
    let corrupt = |detail: String| StoreError::Corrupt {
        store: store.to_string(),
        detail,
    };
    let has_meta: bool = tx
        .query_one("SELECT to_regclass('meta') IS NOT NULL", &[])
        .map_err(err)?
        .get(0);
    if has_meta {
        let value: Option<String> = tx
            .query_opt("SELECT value FROM meta WHERE key = 'schema'", &[])
            .map_err(err)?
            .map(|r| r.get(0));
        let value = value.ok_or_else(|| corrupt("no schema version in `meta`".to_string()))?;
        return value
            .parse()
            .map_err(|_| corrupt(format!("schema version {value:?} is not a number")));
    }
    for table in OURS {
        let exists: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[table])
            .map_err(err)?
            .get(0);
        if exists {
            return Err(corrupt(format!(
                "a table `{table}` but no `meta`: not a duetime store; give duetime \
                 its own database or schema"
            )));
        }
    }
    Ok(0)
}

/// A new state's globals as JSON: what every partition of a new store starts from.
fn new_globals(store: &str, options: &Options) -> Result<String, StoreError> {
    let globals = State::new(options.config).globals();
    serde_json::to_string(&globals).map_err(|e| StoreError::Database {
        store: store.to_string(),
        detail: format!("cannot serialize: {e}"),
    })
}

/// A new store's partitions past the first (which the migrations made): a globals row
/// each, and the count in `meta`.
fn make_partitions(
    tx: &mut postgres::Transaction<'_>,
    store: &str,
    count: PartitionCount,
    globals: &str,
) -> Result<(), StoreError> {
    let err = |e| map_err(store, e);
    let parts: Vec<i32> = count
        .iter()
        .skip(1)
        .map(|p| part_key(p.0 as usize))
        .collect();
    tx.execute(
        "INSERT INTO globals (part, version, json) SELECT p, 0, $2 FROM UNNEST($1::int[]) AS p",
        &[&parts, &globals],
    )
    .map_err(err)?;
    tx.execute(
        "UPDATE meta SET value = $1 WHERE key = 'partitions'",
        &[&count.to_string()],
    )
    .map_err(err)?;
    Ok(())
}

/// The partition count `meta` records.
fn stored_partitions(
    tx: &mut postgres::Transaction<'_>,
    store: &str,
) -> Result<PartitionCount, StoreError> {
    let value: Option<String> = tx
        .query_opt("SELECT value FROM meta WHERE key = 'partitions'", &[])
        .map_err(|e| map_err(store, e))?
        .map(|r| r.get(0));
    let corrupt = |detail: String| StoreError::Corrupt {
        store: store.to_string(),
        detail,
    };
    let value = value.ok_or_else(|| corrupt("no partition count in `meta`".to_string()))?;
    value
        .parse()
        .map_err(|e| corrupt(format!("the partition count in `meta`, {value:?}: {e}")))
}
