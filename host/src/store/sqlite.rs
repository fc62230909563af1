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
//! - `journal(id, at, job, kind, due_from, due_to, json)`: every `Effect::Record`, append
//!   only; `json` is the record's entry, `kind` its type (`ledger.ran`, `history.started`),
//!   `due_from`/`due_to` the due times a ledger entry settles or a start covers.
//!
//! Several processes may share the file. Each transaction takes the write lock first
//! (`BEGIN IMMEDIATE`), so they serialize; a process that finds the version moved since it
//! last looked reads the job rows written after that version and the globals, and puts them
//! into its state with `State::put_parts`, paying for what changed rather than for the
//! whole state. The leases and fences in the state keep the processes honest about runs.
//!
//! WAL mode, so readers (commands) do not block the writer; `synchronous = FULL` by
//! default, because a commit the disk loses after its `Start` went out would let a run
//! start twice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use duetime::{
    Config, Effect, Entry, Globals, History, JobName, JobRecord, LedgerKind, Record, State,
    Timestamp,
};
use rusqlite::{
    params, Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior,
};

use super::{Body, Store, StoreError};

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

/// How to open a store.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long to wait for another process's transaction before `StoreError::Locked`.
    pub busy_timeout: std::time::Duration,
    /// The config a new store starts with (a store keeps its config for life).
    pub config: Config,
    /// `synchronous = FULL` (a commit survives power loss) rather than `NORMAL` (it
    /// survives a crash of the process). Only tests and measurements turn it off.
    pub durable: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            busy_timeout: std::time::Duration::from_secs(5),
            config: Config::default(),
            durable: true,
        }
    }
}

/// What this process knows of the store.
struct Memory {
    path: PathBuf,
    /// Tracks changes, so a transaction writes only the jobs it touched.
    state: State,
    /// The store version `state` reflects; `None`: load it whole before use.
    seen: Option<i64>,
    loads: Loads,
}

/// How this handle has brought its state up to date, for tests and for a daemon's status:
/// `partial` loads read only what other processes changed; `whole` loads read every job
/// (the first, and any after a failure or a change pieces cannot carry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loads {
    pub whole: u64,
    pub partial: u64,
}

pub struct SqliteStore {
    conn: Connection,
    mem: Memory,
}

impl SqliteStore {
    /// Opens (creating or migrating) the store at `path` with the default options.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Options::default())
    }

    pub fn open_with(path: &Path, options: Options) -> Result<SqliteStore, StoreError> {
        let path = path.to_path_buf();
        let err = |e: rusqlite::Error| map_err(&path, e);
        let conn = Connection::open(&path).map_err(err)?;
        conn.busy_timeout(options.busy_timeout).map_err(err)?;
        // Switching a new file to WAL, and creating its schema, can meet another process
        // doing the same: SQLite answers "busy" at once there, without waiting, so the
        // waiting is done here, up to the same timeout.
        let deadline = std::time::Instant::now() + options.busy_timeout;
        loop {
            let opened = (|| {
                // The first statement reads the file: garbage shows up here as NotADatabase.
                let _mode: String = conn
                    .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                    .map_err(err)?;
                let sync = if options.durable { "FULL" } else { "NORMAL" };
                conn.pragma_update(None, "synchronous", sync).map_err(err)?;
                migrate(&conn, &path, &options.config)
            })();
            match opened {
                Err(StoreError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        }
        let mut state = State::new(options.config);
        state.track_changes(true);
        let mut store = SqliteStore {
            conn,
            mem: Memory {
                path,
                state,
                seen: None,
                loads: Loads::default(),
            },
        };
        store.state()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.mem.path
    }

    pub fn loads(&self) -> Loads {
        self.mem.loads
    }

    /// The store's version: how many transactions have committed.
    pub fn version(&self) -> Result<i64, StoreError> {
        read_version(&self.conn, &self.mem.path)
    }

    fn read_journal(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<Record>, StoreError> {
        let path = &self.mem.path;
        let err = |e| map_err(path, e);
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
            let corrupt = |detail: String| StoreError::Corrupt {
                path: path.clone(),
                detail: format!("journal line {id}: {detail}"),
            };
            let job = JobName::new(&job).map_err(|e| corrupt(e.to_string()))?;
            let entry: Entry = serde_json::from_str(&json).map_err(|e| corrupt(e.to_string()))?;
            out.push(Record {
                at: Timestamp::from_millis(at),
                job,
                entry,
            });
        }
        Ok(out)
    }
}

impl Store for SqliteStore {
    fn transact(&mut self, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError> {
        let mem = &mut self.mem;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| map_err(&mem.path, e))?;
        let version = read_version(&tx, &mem.path)?;
        mem.sync(&tx, version, &BTreeSet::new(), false)?;
        let mut effects = Vec::new();
        let result = body(&mut mem.state, &mut effects);
        let touched = mem.state.take_touched();
        let next = version + 1;
        let written = result
            .and_then(|()| mem.write(&tx, next, &touched, &effects))
            .and_then(|()| tx.commit().map_err(|e| map_err(&mem.path, e)));
        match written {
            Ok(()) => {
                mem.seen = Some(next);
                Ok(effects)
            }
            Err(e) => {
                // The transaction rolled back when it was dropped (or its commit failed):
                // put back what the body changed, from the store.
                mem.restore(&self.conn, &touched);
                Err(e)
            }
        }
    }

    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        // In `meta`, outside the core's state: taking an id is not an event.
        let path = &self.mem.path;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| map_err(path, e))?;
        let last: Option<String> = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'last_process'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| map_err(path, e))?;
        let last: u64 = match last {
            None => 0,
            Some(text) => text.parse().map_err(|_| StoreError::Corrupt {
                path: path.clone(),
                detail: format!("meta last_process is {text:?}, not a number"),
            })?,
        };
        let next = last.checked_add(1).ok_or_else(|| StoreError::Corrupt {
            path: path.clone(),
            detail: "process ids are used up".into(),
        })?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('last_process', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![next.to_string()],
        )
        .map_err(|e| map_err(path, e))?;
        tx.commit().map_err(|e| map_err(path, e))?;
        Ok(duetime::ProcessId(next))
    }

    fn state(&mut self) -> Result<&State, StoreError> {
        let mem = &mut self.mem;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(|e| map_err(&mem.path, e))?;
        let version = read_version(&tx, &mem.path)?;
        mem.sync(&tx, version, &BTreeSet::new(), false)?;
        tx.commit().map_err(|e| map_err(&mem.path, e))?;
        Ok(&mem.state)
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
}

impl Memory {
    /// Brings the state to the store's `version` (read in the open transaction `tx`): whole
    /// if it was never loaded or cannot be trusted, else the job rows written since the
    /// version last seen plus the `extra` jobs, and the globals (also when `force`, even if
    /// the version has not moved). Any failure leaves the state marked for a whole load.
    fn sync(
        &mut self,
        tx: &Connection,
        version: i64,
        extra: &BTreeSet<u64>,
        force: bool,
    ) -> Result<(), StoreError> {
        let Some(seen) = self.seen else {
            return self.load_whole(tx, version);
        };
        if seen == version && extra.is_empty() && !force {
            return Ok(());
        }
        self.seen = None;
        let globals = read_globals(tx, &self.path)?;
        let mut changed = read_changed(tx, &self.path, seen)?;
        let missing: Vec<u64> = extra
            .iter()
            .copied()
            .filter(|s| changed.binary_search_by_key(s, |(c, _)| *c).is_err())
            .collect();
        for seq in missing {
            changed.push((seq, read_job(tx, &self.path, seq)?));
        }
        match self.state.put_parts(globals, changed) {
            Ok(()) => {
                self.seen = Some(version);
                self.loads.partial += 1;
                Ok(())
            }
            // Not taken in pieces (a changed config, a rename the pieces cannot show):
            // load the whole state, which reports what is really wrong, if anything.
            Err(_) => self.load_whole(tx, version),
        }
    }

    fn load_whole(&mut self, tx: &Connection, version: i64) -> Result<(), StoreError> {
        self.seen = None;
        let globals = read_globals(tx, &self.path)?;
        let jobs = read_all_jobs(tx, &self.path)?;
        let mut state = State::from_parts(globals, jobs).map_err(|error| StoreError::Load {
            path: self.path.clone(),
            error,
        })?;
        state.track_changes(true);
        self.state = state;
        self.seen = Some(version);
        self.loads.whole += 1;
        Ok(())
    }

    /// After an aborted transaction: reads back the jobs the body touched and the globals,
    /// so memory equals the store again. If even that fails, the next use loads it whole.
    fn restore(&mut self, conn: &Connection, touched: &[u64]) {
        let extra: BTreeSet<u64> = touched.iter().copied().collect();
        let mut restore = || {
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Deferred)
                .map_err(|e| map_err(&self.path, e))?;
            let version = read_version(&tx, &self.path)?;
            self.sync(&tx, version, &extra, true)?;
            tx.commit().map_err(|e| map_err(&self.path, e))
        };
        if restore().is_err() {
            self.seen = None;
        }
    }

    /// Writes the globals, the touched jobs and the journal lines at version `next`.
    fn write(
        &self,
        tx: &Connection,
        next: i64,
        touched: &[u64],
        effects: &[Effect],
    ) -> Result<(), StoreError> {
        let err = |e| map_err(&self.path, e);
        let path = &self.path;
        let globals = to_json(path, &self.state.globals())?;
        tx.prepare_cached("UPDATE globals SET version = ?1, json = ?2 WHERE id = 1")
            .and_then(|mut s| s.execute(params![next, globals]))
            .map_err(err)?;
        let mut put = tx
            .prepare_cached(
                "INSERT INTO jobs (seq, name, version, json) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (seq) DO UPDATE
                 SET name = excluded.name, version = excluded.version, json = excluded.json",
            )
            .map_err(err)?;
        for &seq in touched {
            let (name, body) = match self.state.record(seq) {
                Some(job) => (Some(job.def.name.as_str()), Some(to_json(path, job)?)),
                None => (None, None),
            };
            put.execute(params![seq_key(seq), name, next, body])
                .map_err(err)?;
        }
        let mut line = tx
            .prepare_cached(
                "INSERT INTO journal (at, job, kind, due_from, due_to, json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(err)?;
        for e in effects {
            let Effect::Record(r) = e else { continue };
            let (from, to) = due_range(&r.entry).unzip();
            line.execute(params![
                r.at.as_millis(),
                r.job.as_str(),
                kind_of(&r.entry),
                from.map(Timestamp::as_millis),
                to.map(Timestamp::as_millis),
                to_json(path, &r.entry)?,
            ])
            .map_err(err)?;
        }
        Ok(())
    }
}

fn to_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Database {
        path: path.to_path_buf(),
        detail: format!("cannot serialize: {e}"),
    })
}

/// Sequence numbers are `u64`; SQLite integers are `i64`. The bits are kept as they are
/// (the order of numbers past `i64::MAX` differs, which nothing here relies on).
fn seq_key(seq: u64) -> i64 {
    seq as i64
}

fn seq_of_key(key: i64) -> u64 {
    key as u64
}

/// The journal's `kind` column: the entry's type and variant. A match, not the serde tag,
/// so a new variant is a compile error here rather than an unnamed kind.
fn kind_of(entry: &Entry) -> &'static str {
    match entry {
        Entry::Ledger(l) => match l.kind {
            LedgerKind::Ran { .. } => "ledger.ran",
            LedgerKind::Missed { .. } => "ledger.missed",
            LedgerKind::FailedOut { .. } => "ledger.failed_out",
            LedgerKind::Lost { .. } => "ledger.lost",
        },
        Entry::History(h) => match h {
            History::Defined { .. } => "history.defined",
            History::Removed { .. } => "history.removed",
            History::Updated { .. } => "history.updated",
            History::Started { .. } => "history.started",
            History::Settled { .. } => "history.settled",
            History::RetryAt { .. } => "history.retry_at",
            History::Lost { .. } => "history.lost",
            History::Adopted { .. } => "history.adopted",
            History::StaleResult { .. } => "history.stale_result",
            History::Paused { .. } => "history.paused",
            History::Resumed { .. } => "history.resumed",
            History::ManualQueued { .. } => "history.manual_queued",
            History::ActorForgotten => "history.actor_forgotten",
            History::CancelSent { .. } => "history.cancel_sent",
        },
    }
}

/// The due times a line is about: what a ledger entry settles, what a start covers.
fn due_range(entry: &Entry) -> Option<(Timestamp, Timestamp)> {
    match entry {
        Entry::Ledger(l) => Some((l.from, l.to)),
        Entry::History(History::Started {
            covers: Some(c), ..
        }) => Some((c.from, c.to)),
        Entry::History(_) => None,
    }
}

/// Creates the schema or brings it up to date; refuses a newer one.
fn migrate(conn: &Connection, path: &Path, config: &Config) -> Result<(), StoreError> {
    let err = |e| map_err(path, e);
    if schema_version(conn, path)? == SCHEMA_VERSION {
        return Ok(());
    }
    // Under the write lock, so two processes opening a new file do not both create it.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(err)?;
    let found = schema_version(&tx, path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(sql).map_err(err)?;
        if v == 0 {
            let globals = State::new(*config).globals();
            let json = to_json(path, &globals)?;
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
fn schema_version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let err = |e| map_err(path, e);
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_path_buf(),
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

fn read_version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    conn.prepare_cached("SELECT version FROM globals WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
        .map_err(|e| map_err(path, e))?
        .ok_or_else(|| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: "the globals row is missing".to_string(),
        })
}

fn read_globals(conn: &Connection, path: &Path) -> Result<Globals, StoreError> {
    let json: String = conn
        .prepare_cached("SELECT json FROM globals WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(|e| map_err(path, e))?;
    serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("globals: {e}"),
    })
}

fn parse_job(path: &Path, seq: u64, json: &str) -> Result<JobRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("job {seq}: {e}"),
    })
}

/// Rows written after version `seen`: `None` for a tombstone.
fn read_changed(
    conn: &Connection,
    path: &Path,
    seen: i64,
) -> Result<Vec<(u64, Option<JobRecord>)>, StoreError> {
    let err = |e| map_err(path, e);
    let mut stmt = conn
        .prepare_cached("SELECT seq, json FROM jobs WHERE version > ?1 ORDER BY seq")
        .map_err(err)?;
    let rows = stmt
        .query_map([seen], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(err)?;
    let mut out = Vec::new();
    for row in rows {
        let (key, json) = row.map_err(err)?;
        let seq = seq_of_key(key);
        let job = json.map(|j| parse_job(path, seq, &j)).transpose()?;
        out.push((seq, job));
    }
    Ok(out)
}

fn read_job(conn: &Connection, path: &Path, seq: u64) -> Result<Option<JobRecord>, StoreError> {
    let json: Option<Option<String>> = conn
        .prepare_cached("SELECT json FROM jobs WHERE seq = ?1")
        .and_then(|mut s| s.query_row([seq_key(seq)], |r| r.get(0)).optional())
        .map_err(|e| map_err(path, e))?;
    json.flatten().map(|j| parse_job(path, seq, &j)).transpose()
}

fn read_all_jobs(conn: &Connection, path: &Path) -> Result<Vec<(u64, JobRecord)>, StoreError> {
    let err = |e| map_err(path, e);
    let mut stmt = conn
        .prepare_cached("SELECT seq, json FROM jobs WHERE json IS NOT NULL")
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(err)?;
    let mut out = Vec::new();
    for row in rows {
        let (key, json) = row.map_err(err)?;
        let seq = seq_of_key(key);
        out.push((seq, parse_job(path, seq, &json)?));
    }
    Ok(out)
}

/// Sorts SQLite's errors into what a person can act on.
fn map_err(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { path },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path,
            detail: e.to_string(),
        },
        _ => StoreError::Database {
            path,
            detail: e.to_string(),
        },
    }
}
