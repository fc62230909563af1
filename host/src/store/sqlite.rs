//! The store in one SQLite file.
//!
//! Tables (schema version 1):
//!
//! - `meta(key, value)`: `schema` is the schema version (migrations below);
//! - `globals(id = 1, version, json)`: the core's `Globals` and the store's version, a
//!   number every committed transaction raises by one;
//! - `jobs(seq, name, version, json)`: one row per job, the `JobRecord` as JSON, with the
//!   version that last wrote it. A removed job stays as a tombstone (`name` and `json`
//!   NULL) so another process learns of the removal the same way it learns of a change;
//! - `journal(id, at, job, kind, due_from, due_to, json)`: every `Effect::Journal`, append
//!   only; `json` is the record's entry, `kind` its type (`ledger.ran`, `history.started`),
//!   `due_from`/`due_to` the due times a ledger entry settles or a start covers.
//!
//! Several processes may share the file. Each transaction takes the write lock first
//! (`BEGIN IMMEDIATE`), so they serialize; a process that finds the version moved since it
//! last looked reads the job rows written after that version and the globals, and puts them
//! into its state with `State::put_parts`, paying for what changed rather than for the
//! whole state. The leases and fences in the state keep the processes honest about runs.
//!
//! One partition (`duetime_loop::Partition` p0), always: SQLite lets one writer at a time
//! in, so partitions could not commit side by side and would add nothing; a count other
//! than one asked for is refused (`StoreError::OnePartitionOnly`), and the schema stays at
//! version 1 (PostgreSQL's version 2 is its partitions).
//!
//! WAL mode, so readers (commands) do not block the writer; `synchronous = FULL` by
//! default, because a commit the disk loses after its `Start` went out would let a run
//! start twice.

use std::path::Path;

use duetime::{Config, Effect, JobSeq, Record, State, Timestamp};
use rusqlite::{
    params, Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior,
};

use super::cache::{parse_line, seq_key, seq_of_key, Cache, Loads, Rows, Writes};
use super::daemons::{parse_daemon, to_forget};
use duetime_loop::{Partition, PartitionCount};

use super::{
    Body, DaemonInfo, NoPairWhy, Options, PairBody, PartitionRow, PendingMove, Store, StoreError,
};

/// The schema this build writes; a store with a newer one is refused.
pub const SCHEMA_VERSION: i64 = 1;

/// `MIGRATIONS[v]` takes a store from schema version `v` to `v + 1`. Append only: a step
/// once released is never edited, since stores in the field have already run it.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE globals (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         version INTEGER NOT NULL,
         json TEXT NOT NULL
     );
     CREATE TABLE jobs (
         seq INTEGER PRIMARY KEY,
         name TEXT,
         version INTEGER NOT NULL,
         json TEXT
     );
     CREATE INDEX jobs_by_version ON jobs (version);
     CREATE TABLE journal (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         at INTEGER NOT NULL,
         job TEXT NOT NULL,
         kind TEXT NOT NULL,
         due_from INTEGER,
         due_to INTEGER,
         json TEXT NOT NULL
     );
     CREATE INDEX journal_by_job_due ON journal (job, due_from);
     CREATE INDEX journal_by_job_at ON journal (job, at);",
];

pub struct SqliteStore {
    conn: Connection,
    path: std::path::PathBuf,
    cache: Cache,
}

impl SqliteStore {
    /// Opens (creating or migrating) the store at `path` with the default options.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Options::default())
    }

    /// Opens the store at `path`. Only a path where nothing exists is made into a new
    /// store (with `options.create`), and atomically: the schema is built in a file of its
    /// own beside it and linked into place, so no reader ever sees a store half made. An
    /// existing file that is not a duetime store (an empty file, a truncated one, another
    /// program's database) is refused as corrupt and left exactly as it was.
    pub fn open_with(path: &Path, options: Options) -> Result<SqliteStore, StoreError> {
        let store = path.display().to_string();
        if let Some(asked) = options.partitions.filter(|&n| n != PartitionCount::ONE) {
            return Err(StoreError::OnePartitionOnly { store, asked });
        }
        if !path.exists() {
            if !options.create {
                return Err(StoreError::Missing { store });
            }
            create_new(path, &store, &options)?;
        }
        refuse_empty(path, &store)?;
        let err = |e: rusqlite::Error| map_err(&store, e);
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(options.busy_timeout).map_err(err)?;
        // Read before anything is written: garbage shows up here as NotADatabase, and a
        // database without duetime's tables is refused untouched.
        if schema_version(&conn, &store)? == 0 {
            return Err(StoreError::Corrupt {
                store,
                detail: "an SQLite database without duetime's tables; a store is made only \
                         by `duetime run` where no file exists"
                    .to_string(),
            });
        }
        // Switching to WAL can meet another process doing the same: SQLite answers "busy"
        // at once there, without waiting, so the waiting is done here, up to the timeout.
        let deadline = std::time::Instant::now() + options.busy_timeout;
        loop {
            let opened = (|| {
                let _mode: String = conn
                    .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                    .map_err(err)?;
                let sync = if options.durable { "FULL" } else { "NORMAL" };
                conn.pragma_update(None, "synchronous", sync).map_err(err)?;
                migrate(&conn, &store, &options.config)
            })();
            match opened {
                Err(StoreError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        }
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
            cache: Cache::new(store, State::new(options.config)),
        };
        store.state()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_journal(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<Record>, StoreError> {
        let store = &self.cache.store;
        let err = |e| map_err(store, e);
        let mut stmt = self.conn.prepare_cached(sql).map_err(err)?;
        let rows = stmt
            .query_map(params, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, at, job, json) = row.map_err(err)?;
            out.push(parse_line(store, id, at, &job, &json)?);
        }
        Ok(out)
    }
}

impl SqliteStore {
    /// Partition `p` is p0, the only one, or an error naming what there is.
    fn only(&self, p: Partition) -> Result<(), StoreError> {
        match p == Partition::FIRST {
            true => Ok(()),
            false => Err(StoreError::NoSuchPartition {
                store: self.cache.store.clone(),
                partition: p,
                count: PartitionCount::ONE,
            }),
        }
    }
}

impl Store for SqliteStore {
    fn partitions(&self) -> PartitionCount {
        PartitionCount::ONE
    }

    fn transact_in(
        &mut self,
        p: Partition,
        body: &mut Body<'_>,
    ) -> Result<Vec<Effect>, StoreError> {
        self.only(p)?;
        let cache = &mut self.cache;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| map_err(&cache.store, e))?;
        let store = cache.store.clone();
        let mut rows = SqlRows {
            conn: &tx,
            store: &store,
        };
        let version = rows.version()?;
        cache.sync(&mut rows, version)?;
        let mut effects = Vec::new();
        let result = body(&mut cache.state, &mut effects);
        let touched = cache.state.take_touched();
        let next = version + 1;
        let written = result
            .and_then(|()| cache.write(&mut rows, next, &touched, &effects))
            .and_then(|()| tx.commit().map_err(|e| map_err(&store, e)));
        match written {
            Ok(()) => {
                cache.committed(next);
                Ok(effects)
            }
            Err(e) => {
                // The transaction rolled back when it was dropped (or its commit failed):
                // what the body changed is read back before the state is used again.
                cache.forget(&touched);
                Err(e)
            }
        }
    }

    /// SQLite has one partition: no job moves between partitions, so no transaction
    /// ever spans two.
    fn transact_pair(
        &mut self,
        a: Partition,
        b: Partition,
        _body: &mut PairBody<'_>,
    ) -> Result<(Vec<Effect>, Vec<Effect>), StoreError> {
        Err(StoreError::NoPair {
            store: self.cache.store.clone(),
            a,
            b,
            why: NoPairWhy::OnePartition,
        })
    }

    fn pending_moves(&mut self) -> Result<Vec<PendingMove>, StoreError> {
        Ok(Vec::new())
    }

    fn set_pending_move(&mut self, pending: &PendingMove) -> Result<(), StoreError> {
        Err(StoreError::NoPair {
            store: self.cache.store.clone(),
            a: Partition::FIRST,
            b: duetime_loop::route(&pending.def, PartitionCount::ONE),
            why: NoPairWhy::OnePartition,
        })
    }

    fn clear_pending_move(&mut self, _job: &str) -> Result<bool, StoreError> {
        Ok(false)
    }

    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        // In `meta`, outside the core's state: taking an id is not an event.
        let store = &self.cache.store;
        let err = |e| map_err(store, e);
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let last: Option<String> = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'last_process'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        let last: u64 = match last {
            None => 0,
            Some(text) => text.parse().map_err(|_| StoreError::Corrupt {
                store: store.clone(),
                detail: format!("meta last_process is {text:?}, not a number"),
            })?,
        };
        let next = last.checked_add(1).ok_or_else(|| StoreError::Corrupt {
            store: store.clone(),
            detail: "process ids are used up".into(),
        })?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('last_process', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![next.to_string()],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(duetime::ProcessId(next))
    }

    fn state_in(&mut self, p: Partition) -> Result<&State, StoreError> {
        self.only(p)?;
        let cache = &mut self.cache;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(|e| map_err(&cache.store, e))?;
        let store = cache.store.clone();
        let mut rows = SqlRows {
            conn: &tx,
            store: &store,
        };
        let version = rows.version()?;
        cache.sync(&mut rows, version)?;
        tx.commit().map_err(|e| map_err(&store, e))?;
        Ok(&cache.state)
    }

    fn held_state_in(&self, p: Partition) -> Result<&State, StoreError> {
        self.only(p)?;
        Ok(&self.cache.state)
    }

    fn locate(&mut self, job: &str) -> Result<Option<Partition>, StoreError> {
        let found: Option<i64> = self
            .conn
            .prepare_cached("SELECT seq FROM jobs WHERE name = ?1")
            .and_then(|mut s| s.query_row([job], |r| r.get(0)).optional())
            .map_err(|e| map_err(&self.cache.store, e))?;
        Ok(found.map(|_| Partition::FIRST))
    }

    fn partition_rows(&mut self) -> Result<Vec<PartitionRow>, StoreError> {
        let err = |e| map_err(&self.cache.store, e);
        let (version, jobs): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT version FROM globals WHERE id = 1),
                        (SELECT count(*) FROM jobs WHERE json IS NOT NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?;
        Ok(vec![PartitionRow {
            partition: Partition::FIRST,
            version,
            jobs: jobs.unsigned_abs(),
            owner: None,
            epoch: 0,
            lease_until: None,
        }])
    }

    fn journal_for(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError> {
        self.read_journal(
            "SELECT id, at, job, json FROM journal WHERE job = ?1 AND at >= ?2 ORDER BY id",
            params![job, since.as_millis()],
        )
    }

    fn journal_all(&mut self) -> Result<Vec<Record>, StoreError> {
        self.read_journal("SELECT id, at, job, json FROM journal ORDER BY id", [])
    }

    fn journal_after(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError> {
        let kinds = serde_json::to_string(kinds).unwrap_or_else(|_| "[]".into());
        let store = &self.cache.store;
        let err = |e| map_err(store, e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, at, job, json FROM journal
                 WHERE id > ?1 AND kind IN (SELECT value FROM json_each(?2)) ORDER BY id",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![after, kinds], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, at, job, json) = row.map_err(err)?;
            out.push((id, parse_line(store, id, at, &job, &json)?));
        }
        Ok(out)
    }

    fn journal_end(&mut self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(id), 0) FROM journal", [], |r| r.get(0))
            .map_err(|e| map_err(&self.cache.store, e))
    }

    fn register_daemon(&mut self, info: &DaemonInfo) -> Result<(), StoreError> {
        let store = self.cache.store.clone();
        let err = |e| map_err(&store, e);
        let json = serde_json::to_string(info).map_err(|e| StoreError::Database {
            store: store.clone(),
            detail: format!("cannot serialize: {e}"),
        })?;
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        // The state and the rows read under the write lock: what another daemon wrote a
        // moment ago is seen, and nobody writes until the commit.
        let mut rows = SqlRows {
            conn: &tx,
            store: &store,
        };
        let version = rows.version()?;
        self.cache.sync(&mut rows, version)?;
        let forget = to_forget(&self.cache.state, &read_daemons(&tx, &store)?, info);
        tx.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![info.key(), json],
        )
        .map_err(err)?;
        for key in forget {
            tx.execute("DELETE FROM meta WHERE key = ?1", params![key])
                .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    fn daemons(&mut self) -> Result<Vec<DaemonInfo>, StoreError> {
        read_daemons(&self.conn, &self.cache.store)
    }

    fn describe(&self) -> &str {
        &self.cache.store
    }

    fn version(&mut self) -> Result<i64, StoreError> {
        SqlRows {
            conn: &self.conn,
            store: &self.cache.store,
        }
        .version()
    }

    fn loads(&self) -> Loads {
        self.cache.loads
    }
}

/// The tables, read and written through one connection (inside its open transaction).
struct SqlRows<'a> {
    conn: &'a Connection,
    store: &'a str,
}

impl SqlRows<'_> {
    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| map_err(self.store, e)
    }
}

impl Rows for SqlRows<'_> {
    fn version(&mut self) -> Result<i64, StoreError> {
        self.conn
            .prepare_cached("SELECT version FROM globals WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
            .map_err(self.err())?
            .ok_or_else(|| StoreError::Corrupt {
                store: self.store.to_string(),
                detail: "the globals row is missing".to_string(),
            })
    }

    fn globals(&mut self) -> Result<String, StoreError> {
        self.conn
            .prepare_cached("SELECT json FROM globals WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(self.err())
    }

    fn changed_since(&mut self, seen: i64) -> Result<Vec<(JobSeq, Option<String>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, json FROM jobs WHERE version > ?1 ORDER BY seq")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([seen], |r| {
                Ok((seq_of_key(r.get(0)?), r.get::<_, Option<String>>(1)?))
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    fn job(&mut self, seq: JobSeq) -> Result<Option<String>, StoreError> {
        let json: Option<Option<String>> = self
            .conn
            .prepare_cached("SELECT json FROM jobs WHERE seq = ?1")
            .and_then(|mut s| s.query_row([seq_key(seq)], |r| r.get(0)).optional())
            .map_err(self.err())?;
        Ok(json.flatten())
    }

    fn all_jobs(&mut self) -> Result<Vec<(JobSeq, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, json FROM jobs WHERE json IS NOT NULL")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((seq_of_key(r.get(0)?), r.get::<_, String>(1)?)))
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    fn write(&mut self, w: &Writes<'_>) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE globals SET version = ?1, json = ?2 WHERE id = 1")
            .and_then(|mut s| s.execute(params![w.version, w.globals]))
            .map_err(self.err())?;
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT INTO jobs (seq, name, version, json) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (seq) DO UPDATE
                 SET name = excluded.name, version = excluded.version, json = excluded.json",
            )
            .map_err(self.err())?;
        for (seq, row) in &w.jobs {
            let (name, json) = row.as_ref().map(|(n, j)| (*n, j.as_str())).unzip();
            put.execute(params![seq_key(*seq), name, w.version, json])
                .map_err(self.err())?;
        }
        let mut put = self
            .conn
            .prepare_cached(
                "INSERT INTO journal (at, job, kind, due_from, due_to, json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(self.err())?;
        for l in &w.lines {
            put.execute(params![l.at, l.job, l.kind, l.due_from, l.due_to, l.json])
                .map_err(self.err())?;
        }
        Ok(())
    }
}

/// An empty file is no store: SQLite would take it for a new database and write one.
fn refuse_empty(path: &Path, store: &str) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() == 0 => Err(StoreError::Corrupt {
            store: store.to_string(),
            detail: "the file is empty (0 bytes), so it holds no store; a store is made \
                     only by `duetime run` where no file exists (remove the empty file to \
                     start a new one)"
                .to_string(),
        }),
        _ => Ok(()),
    }
}

/// Makes a new store at `path`, which did not exist: the schema is built in a temporary
/// file beside it (rollback journal, so the file is whole once closed), then hard-linked
/// to `path`, which fails if another process got there first (its store is then used).
fn create_new(path: &Path, store: &str, options: &Options) -> Result<(), StoreError> {
    let name = path
        .file_name()
        .map_or("store".into(), |n| n.to_string_lossy());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = path.with_file_name(format!(".{name}.new-{}-{nanos}", std::process::id()));
    let made = (|| {
        let conn = Connection::open(&temp).map_err(|e| map_err(store, e))?;
        // Private before anything is in it; SQLite makes the WAL and SHM files with the
        // store's own mode, so they are private too.
        private(&temp, store)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| map_err(store, e))?;
        migrate(&conn, store, &options.config)?;
        conn.close().map_err(|(_, e)| map_err(store, e))
    })();
    let linked = made.and_then(|()| match std::fs::hard_link(&temp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Database {
            store: store.to_string(),
            detail: format!("cannot create the store: {e}"),
        }),
    });
    let _ = std::fs::remove_file(&temp);
    let _ = std::fs::remove_file(format!("{}-journal", temp.display()));
    linked
}

/// Makes the new store's file readable and writable by its owner only.
fn private(path: &Path, store: &str) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::Permissions::from_mode(crate::private::FILE_MODE);
    std::fs::set_permissions(path, mode).map_err(|e| StoreError::Database {
        store: store.to_string(),
        detail: format!("cannot make the store private: {e}"),
    })
}

/// Creates the schema or brings it up to date; refuses a newer one.
fn migrate(conn: &Connection, store: &str, config: &Config) -> Result<(), StoreError> {
    let err = |e| map_err(store, e);
    if schema_version(conn, store)? == SCHEMA_VERSION {
        return Ok(());
    }
    // Under the write lock, so two processes opening a new file do not both create it.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(err)?;
    let found = schema_version(&tx, store)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            store: store.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(sql).map_err(err)?;
        if v == 0 {
            let globals = State::new(*config).globals();
            let json = serde_json::to_string(&globals).map_err(|e| StoreError::Database {
                store: store.to_string(),
                detail: format!("cannot serialize: {e}"),
            })?;
            tx.execute(
                "INSERT INTO globals (id, version, json) VALUES (1, 0, ?1)",
                params![json],
            )
            .map_err(err)?;
        }
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('schema', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![SCHEMA_VERSION.to_string()],
    )
    .map_err(err)?;
    tx.commit().map_err(err)
}

/// 0 for an empty file; refuses a database with tables but no `meta`.
fn schema_version(conn: &Connection, store: &str) -> Result<i64, StoreError> {
    let err = |e| map_err(store, e);
    let corrupt = |detail: String| StoreError::Corrupt {
        store: store.to_string(),
        detail,
    };
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if !has_meta {
        return if tables == 0 {
            Ok(0)
        } else {
            Err(corrupt(
                "an SQLite database with tables but no `meta` table".to_string(),
            ))
        };
    }
    let value: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(err)?;
    let value = value.ok_or_else(|| corrupt("no schema version in `meta`".to_string()))?;
    value
        .parse()
        .map_err(|_| corrupt(format!("schema version {value:?} is not a number")))
}

/// Sorts SQLite's errors into what a person can act on.
fn map_err(store: &str, e: rusqlite::Error) -> StoreError {
    let store = store.to_string();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { store },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            store,
            detail: e.to_string(),
        },
        _ => StoreError::Database {
            store,
            detail: e.to_string(),
        },
    }
}

/// Every daemon's row, in process order.
fn read_daemons(conn: &Connection, store: &str) -> Result<Vec<DaemonInfo>, StoreError> {
    let err = |e| map_err(store, e);
    let mut stmt = conn
        .prepare_cached("SELECT key, value FROM meta WHERE key LIKE 'daemon:%'")
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(err)?;
    let mut out = Vec::new();
    for row in rows {
        let (key, value) = row.map_err(err)?;
        out.push(parse_daemon(store, &key, &value)?);
    }
    out.sort_by_key(|d| d.process);
    Ok(out)
}
