//! The store in a PostgreSQL database, for daemons on several machines.
//!
//! The same tables as the SQLite store (see `sqlite.rs`), in PostgreSQL's dialect, plus two
//! a network needs:
//!
//! - `commits(handle, version)`: the last version each store handle committed. A commit
//!   whose answer never arrived (the connection broke during `COMMIT`) is looked up here
//!   after reconnecting: found, the transaction counts and its effects are carried out;
//!   not found, it never happened and the event is tried again. Without it a host would
//!   have to guess, and either guess can start a run twice or never.
//! - sequences `handles` and `process_ids`: ids that never repeat, across machines.
//!
//! Transactions are kept apart by `Isolation`: by default each one first locks the
//! globals row (`SELECT ... FOR UPDATE`), so they queue behind each other as SQLite's
//! `BEGIN IMMEDIATE` does; `Serializable` runs them at that isolation level and runs the
//! body again after a serialization failure. Both were measured (benches/README.md): every
//! transaction writes the globals row (the store's version), so under `Serializable`
//! concurrent transactions always collide and all but one are thrown away and redone,
//! while the lock makes them wait instead, doing each once.
//!
//! A broken connection is reopened by the next transaction; a transaction that breaks
//! before its commit is tried again once on a new connection, so a restarted server costs
//! a daemon one retry, not an event.
//!
//! Partitions (schema version 2, docs/scale-out.md): the store holds `P` of them, fixed
//! when it is made and recorded in `meta` (`partitions`). Each is a core `State` of its
//! own: its row in `globals` (keyed by `part`: its globals, its version, and the owner,
//! epoch and lease columns partition ownership will use), its rows in `jobs` and its lines
//! in `journal` (both with a `part` column; the journal's ids stay one sequence), its
//! tokens in `commits`. A transaction locks and writes one partition's row only, so
//! transactions on different partitions do not queue behind each other. A job's name is
//! unique across partitions (a unique index), so a job is in exactly one.
//!
//! Moving a job between partitions (schema version 3, `pair.rs`): `transact_pair` holds
//! two partitions' rows in one transaction, locked in partition order; `pending_moves`
//! keeps the new definition of a job that waits for its open run to move.

use duetime::{Effect, JobSeq, Record, State, Timestamp};
use postgres::error::SqlState;
use postgres::{Client, IsolationLevel, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::tls;

use duetime_loop::{Partition, PartitionCount};

use super::cache::{parse_line, seq_key, seq_of_key, Cache, Loads, Rows, Writes};
use super::daemons::{forget_unknown, parse_daemon, to_forget};
use super::{Body, DaemonInfo, Options, PairBody, PartitionRow, PendingMove, Store, StoreError};

mod leases;
mod pair;
mod pool;
mod schema;

pub use pool::{Connections, PgPool};

use schema::migrate;
pub use schema::SCHEMA_VERSION;

/// How many times a transaction is run again after a serialization failure or deadlock,
/// waiting a little longer (and a varying amount, so racers part) each time.
const CONFLICT_RETRIES: u32 = 50;

/// How concurrent transactions on one PostgreSQL store are kept apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Read committed, and every transaction first locks the globals row: they queue.
    #[default]
    LockRow,
    /// Serializable; a transaction that loses a conflict is run again.
    Serializable,
}

/// The statements every transaction uses, prepared once per connection. A transaction
/// is at most five round trips: `BEGIN`, the lock (which also reads the globals), the job
/// rows changed since this handle last looked (only if the version moved), every write in
/// one statement, `COMMIT`. Each is a round trip made while holding the lock, so there are
/// as few as the statements allow.
struct Statements {
    lock: Statement,
    /// The lock of a held partition (`Store::hold`): checks the holder's lease and renews
    /// it in the statement that takes the row's lock (`leases.rs`).
    lock_held: Statement,
    version: Statement,
    globals: Statement,
    changed: Statement,
    job: Statement,
    all_jobs: Statement,
    write: Statement,
}

impl Statements {
    fn prepare(client: &mut Client) -> Result<Statements, postgres::Error> {
        Ok(Statements {
            lock: client.prepare("SELECT version, json FROM globals WHERE part = $1 FOR UPDATE")?,
            lock_held: client.prepare(leases::LOCK_HELD)?,
            version: client.prepare("SELECT version FROM globals WHERE part = $1")?,
            globals: client.prepare("SELECT json FROM globals WHERE part = $1")?,
            changed: client.prepare(
                "SELECT seq, json FROM jobs WHERE part = $1 AND version > $2 ORDER BY seq",
            )?,
            job: client.prepare("SELECT json FROM jobs WHERE part = $1 AND seq = $2")?,
            all_jobs: client
                .prepare("SELECT seq, json FROM jobs WHERE part = $1 AND json IS NOT NULL")?,
            // The partition's globals (with its version), the touched jobs, the journal
            // lines in the order given (the journal's ids are its order) and this handle's
            // commit token for the partition. The parts touch different tables, so running
            // them from one snapshot changes nothing.
            write: client.prepare(
                "WITH g AS (
                     UPDATE globals SET version = $1, json = $2 WHERE part = $13
                 ), j AS (
                     INSERT INTO jobs (part, seq, name, version, json)
                     SELECT $13, s, n, $1, x FROM UNNEST($3::bigint[], $4::text[], $5::text[])
                         AS t(s, n, x)
                     ON CONFLICT (part, seq) DO UPDATE
                     SET name = excluded.name, version = excluded.version, json = excluded.json
                 ), l AS (
                     INSERT INTO journal (part, at, job, kind, due_from, due_to, json)
                     SELECT $13, a, jb, k, f, t, x
                     FROM UNNEST($6::bigint[], $7::text[], $8::text[], $9::bigint[],
                                 $10::bigint[], $11::text[])
                         WITH ORDINALITY AS l(a, jb, k, f, t, x, n)
                     ORDER BY n
                 )
                 INSERT INTO commits (handle, part, version) VALUES ($12, $13, $1)
                 ON CONFLICT (handle, part) DO UPDATE SET version = excluded.version",
            )?,
        })
    }
}

/// One connection to the server, with what was set up on it.
pub(super) struct Connection {
    client: Client,
    statements: Statements,
    /// The session's `idle_in_transaction_session_timeout`, in ms (`idle_limit_ms`).
    idle_limit: u64,
    /// Found broken (or possibly so): closed rather than used again.
    broken: bool,
}

/// The connection a handle is using: its own, or one of its daemon's pool
/// (`pool.rs`), given back at the end of each operation.
enum Held {
    Own(Connection),
    Pooled(r2d2::PooledConnection<pool::Manager>),
}

impl Held {
    fn get(&mut self) -> &mut Connection {
        match self {
            Held::Own(c) => c,
            Held::Pooled(c) => c,
        }
    }
}

/// The connection `connection()` has just made sure of.
fn live(conn: &mut Option<Held>) -> &mut Connection {
    conn.as_mut().expect("connected above").get()
}

/// The idle-in-transaction limit of a handle that holds no partition (`idle_limit_ms`).
const IDLE_LIMIT_MS: u64 = 60_000;

/// A new connection to the server at `config`: its session settings (`idle_limit` ms, or
/// `IDLE_LIMIT_MS`) and its statements.
fn connect(
    config: &postgres::Config,
    tls: &MakeRustlsConnect,
    options: &Options,
    store: &str,
    idle_limit: Option<u64>,
) -> Result<Connection, StoreError> {
    let idle_limit = idle_limit.unwrap_or(IDLE_LIMIT_MS);
    let mut config = config.clone();
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(5));
    }
    config.keepalives(true);
    // So an operator reading `pg_stat_activity` knows the scheduler's connections (a URL's
    // own `application_name` wins).
    if config.get_application_name().is_none() {
        config.application_name("duetime");
    }
    let mut client = config.connect(tls.clone()).map_err(|e| {
        // A refused certificate is no outage: waiting would not mend it.
        match tls::failure(&e) {
            Some(detail) => StoreError::Database {
                store: store.to_string(),
                detail,
            },
            None => unreachable(store, &e),
        }
    })?;
    // A lock held past the busy timeout is `Locked`; a transaction left open by a host that
    // hung (not one that died: the server sees that socket close) is ended by the server,
    // releasing the globals row for everyone else: after a minute, or, on a handle that
    // holds partitions, after the shortest of their leases (`idle_limit_ms`).
    let settings = format!(
        "SET lock_timeout = {}; SET idle_in_transaction_session_timeout = {idle_limit}; \
         SET synchronous_commit = {}",
        options.busy_timeout.as_millis().max(1),
        if options.durable { "on" } else { "off" },
    );
    client
        .batch_execute(&settings)
        .map_err(|e| map_err(store, e))?;
    // The statements need the tables: on a store not yet made (or made by an older build,
    // without partitions), prepare them after migrating.
    let statements = match Statements::prepare(&mut client) {
        Ok(s) => s,
        Err(e)
            if e.code() == Some(&SqlState::UNDEFINED_TABLE)
                || e.code() == Some(&SqlState::UNDEFINED_COLUMN) =>
        {
            migrate(&mut client, store, options)?;
            Statements::prepare(&mut client).map_err(|e| map_err(store, e))?
        }
        Err(e) => return Err(map_err(store, e)),
    };
    Ok(Connection {
        client,
        statements,
        idle_limit,
        broken: false,
    })
}

pub struct PostgresStore {
    /// rustls, configured by the URL's `sslmode` and `sslrootcert` (`tls.rs`).
    tls: MakeRustlsConnect,
    config: postgres::Config,
    /// With `options.pool`, the handle takes a connection of its daemon's pool for each
    /// operation and gives it back after it; without, it keeps one of its own.
    options: Options,
    conn: Option<Held>,
    /// This handle's rows in `commits`.
    handle: i64,
    /// Where the store is, as messages name it.
    label: String,
    /// How many partitions the store has, read from `meta` when it was opened.
    count: PartitionCount,
    /// Each partition's state as this handle last read or wrote it, by partition number.
    caches: Vec<Cache>,
    /// Transactions this handle ran again after losing a conflict.
    conflicts: u64,
    /// The partitions this handle writes to as their lease holder (`Store::hold`), by
    /// partition number: each transaction there is fenced by the lease.
    holders: Vec<Option<super::Holder>>,
}

impl PostgresStore {
    /// Opens (creating or migrating) the store at `url` with the default options.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::open_with(url, Options::default())
    }

    pub fn open_with(url: &str, options: Options) -> Result<PostgresStore, StoreError> {
        let refused = |detail: String| StoreError::Database {
            store: redact(url),
            detail,
        };
        let (url, settings) = tls::split_url(url).map_err(|e| refused(e.to_string()))?;
        let mut config: postgres::Config = url.parse().map_err(|e| {
            refused(format!(
                "not a PostgreSQL URL ({e}); expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
            ))
        })?;
        config.ssl_mode(settings.mode.postgres_mode());
        let tls = settings.connector().map_err(|e| refused(e.to_string()))?;
        let label = label_of(&config);
        let mut store = PostgresStore {
            tls,
            config,
            options: options.clone(),
            conn: None,
            handle: 0,
            label: label.clone(),
            count: PartitionCount::ONE,
            caches: Vec::new(),
            conflicts: 0,
            holders: Vec::new(),
        };
        let (count, handle) = store.pooled(|s| {
            let conn = s.connection()?;
            let count = migrate(&mut conn.client, &label, &options)?;
            let handle: i64 = conn
                .client
                .query_one("SELECT nextval('handles')", &[])
                .map_err(|e| map_err(&label, e))?
                .get(0);
            Ok::<_, StoreError>((count, handle))
        })?;
        store.handle = handle;
        store.count = count;
        store.caches = count
            .iter()
            .map(|_| Cache::new(label.clone(), State::new(options.config)))
            .collect();
        store.holders = vec![None; store.caches.len()];
        // A store of one is loaded now, so a store that cannot be loaded is refused at
        // once, as always; in a store of several each partition is loaded when first
        // used, so a damaged one does not keep the others from being served.
        if count == PartitionCount::ONE {
            store.state()?;
        }
        Ok(store)
    }

    /// A pool of `connections.shared()` connections to this handle's store for the seats of
    /// a daemon (its owner keeps this handle's own): handles opened with it in
    /// `Options::pool` take one for each operation and give it back after it, waiting at
    /// most `wait` for one (`StoreError::Busy`).
    pub fn pool(&self, connections: Connections, wait: std::time::Duration) -> PgPool {
        let manager = pool::Manager {
            config: self.config.clone(),
            tls: self.tls.clone(),
            options: Options {
                pool: None,
                ..self.options.clone()
            },
            label: self.label.clone(),
        };
        PgPool::new(manager, connections.shared(), wait)
    }

    /// Partition `p`'s index into `caches`, or why there is none.
    fn index(&self, p: Partition) -> Result<usize, StoreError> {
        match self.count.holds(p) {
            true => Ok(p.0 as usize),
            false => Err(StoreError::NoSuchPartition {
                store: self.label.clone(),
                partition: p,
                count: self.count,
            }),
        }
    }

    /// An error of partition `p`, named by it in a store of several.
    fn in_partition(&self, p: Partition, error: StoreError) -> StoreError {
        match self.count == PartitionCount::ONE {
            true => error,
            false => StoreError::InPartition {
                partition: p,
                error: Box::new(error),
            },
        }
    }

    /// How many transactions this handle has run again after losing a serialization
    /// conflict or a deadlock (under `Isolation::LockRow`, deadlocks only: none expected).
    pub fn conflicts(&self) -> u64 {
        self.conflicts
    }

    /// The open connection, or one taken from the daemon's pool, or a new one of its own
    /// (with its session settings and statements); its idle-in-transaction limit set to
    /// this handle's (`idle_limit_ms`) if a pooled connection had another.
    fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        if self
            .conn
            .as_mut()
            .is_some_and(|c| c.get().client.is_closed())
        {
            self.discard();
        }
        let limit = self.idle_limit_ms();
        if self.conn.is_none() {
            self.conn = Some(match &self.options.pool {
                Some(pool) => Held::Pooled(pool.get(&self.label)?),
                None => Held::Own(connect(
                    &self.config,
                    &self.tls,
                    &self.options,
                    &self.label,
                    Some(limit),
                )?),
            });
        }
        let conn = live(&mut self.conn);
        if conn.idle_limit != limit {
            let set = format!("SET idle_in_transaction_session_timeout = {limit}");
            if let Err(e) = conn.client.batch_execute(&set) {
                conn.broken = true;
                return Err(map_err(&self.label, e));
            }
            conn.idle_limit = limit;
        }
        Ok(live(&mut self.conn))
    }

    /// Lets go of the connection, which is broken (or may be): a pool's is not given back
    /// to the pool but closed.
    fn discard(&mut self) {
        if let Some(mut held) = self.conn.take() {
            held.get().broken = true;
        }
    }

    /// Gives a pooled connection back to the daemon's pool at the end of an operation, so
    /// another seat may use it; a connection of the handle's own is kept.
    fn give_back(&mut self) {
        if matches!(self.conn, Some(Held::Pooled(_))) {
            self.conn = None;
        }
    }

    /// Runs `op` and gives a pooled connection back after it, whatever it answered.
    fn pooled<T>(&mut self, op: impl FnOnce(&mut Self) -> T) -> T {
        let out = op(self);
        self.give_back();
        out
    }

    /// One attempt at a transaction on the partition of index `i` into `caches`.
    fn attempt(
        &mut self,
        i: usize,
        body: &mut Body<'_>,
    ) -> Result<Vec<Effect>, Failure<Vec<Effect>>> {
        let isolation = self.options.isolation;
        let handle = self.handle;
        self.connection().map_err(Failure::Before)?;
        let conn = live(&mut self.conn);
        let store = self.label.clone();
        let level = match isolation {
            Isolation::LockRow => IsolationLevel::ReadCommitted,
            Isolation::Serializable => IsolationLevel::Serializable,
        };
        let Connection {
            client, statements, ..
        } = conn;
        let mut tx = client
            .build_transaction()
            .isolation_level(level)
            .start()
            .map_err(|e| Failure::classify(&store, e))?;
        let cache = &mut self.caches[i];
        let mut rows = PgRows::new(&mut tx, statements, &store, handle, part_key(i));
        // A held partition is always locked: its lease is checked and renewed under the
        // row's lock, whatever the isolation.
        let read = match (self.holders[i], isolation) {
            (Some(holder), _) => rows.lock_held(&holder),
            (None, Isolation::LockRow) => rows.lock(),
            (None, Isolation::Serializable) => rows.version(),
        };
        let version = match read.and_then(|v| cache.sync(&mut rows, v).map(|()| v)) {
            Ok(v) => v,
            Err(e) => return Err(rows.failed(e)),
        };
        let mut effects = Vec::new();
        let result = body(&mut cache.state, &mut effects);
        let touched = cache.state.take_touched();
        let next = version + 1;
        let written = result.and_then(|()| cache.write(&mut rows, next, &touched, &effects));
        if let Err(e) = written {
            let failure = rows.failed(e);
            cache.forget(&touched);
            return Err(failure);
        }
        match tx.commit() {
            Ok(()) => {
                cache.committed(next);
                Ok(effects)
            }
            // The server answered, and not by going away: it did not commit (a
            // serialization failure at commit).
            Err(e) if !is_broken(&e) => {
                cache.forget(&touched);
                Err(Failure::classify(&store, e))
            }
            // No answer, or the server going down as it answered: it may or may not have
            // committed.
            Err(e) => Err(Failure::Unknown(Unknown {
                detail: e.to_string(),
                parts: vec![Unsure {
                    part: i,
                    next,
                    touched,
                }],
                effects,
            })),
        }
    }

    /// After a commit with no answer: reconnects and asks `commits` whether it happened
    /// (by the first partition's token: a transaction over two wrote both or neither).
    fn settle_unknown<T>(&mut self, unknown: Unknown<T>) -> Result<T, StoreError> {
        let Unknown {
            detail,
            parts,
            effects,
        } = unknown;
        self.discard();
        let deadline = std::time::Instant::now() + self.options.busy_timeout;
        let Some(first) = parts.first() else {
            return Ok(effects);
        };
        let (key, next) = (part_key(first.part), first.next);
        loop {
            let handle = self.handle;
            let asked = self.connection().and_then(|c| {
                c.client
                    .query_opt(
                        "SELECT version FROM commits WHERE handle = $1 AND part = $2",
                        &[&handle, &key],
                    )
                    .map_err(|e| map_err("", e))
            });
            match asked {
                Ok(row) => {
                    let committed = row.is_some_and(|r| r.get::<_, i64>(0) >= next);
                    for u in &parts {
                        match committed {
                            true => self.caches[u.part].committed(u.next),
                            false => self.caches[u.part].forget(&u.touched),
                        }
                    }
                    return if committed {
                        Ok(effects)
                    } else {
                        Err(StoreError::Unreachable {
                            store: self.label.clone(),
                            detail: format!("{detail} (the transaction did not commit)"),
                        })
                    };
                }
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(_) => {
                    // Cannot tell: withhold the effects and trust nothing in memory. If it
                    // did commit, its runs were recorded started by this process and never
                    // started; the core accounts them lost when their leases lapse.
                    self.discard();
                    for u in &parts {
                        self.caches[u.part].distrust();
                    }
                    return Err(StoreError::Unreachable {
                        store: self.label.clone(),
                        detail: format!(
                            "{detail} (whether the last transaction committed is unknown)"
                        ),
                    });
                }
            }
        }
    }

    fn read_journal(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Record>, StoreError> {
        let store = self.label.clone();
        let conn = self.connection()?;
        let rows = conn
            .client
            .query(sql, params)
            .map_err(|e| map_err(&store, e))?;
        rows.iter()
            .map(|r| parse_line(&store, r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }
}

/// Why an attempt failed, and so what to do next; `T` is what a committed attempt gives
/// back (one partition's effects, or a pair's).
enum Failure<T> {
    /// Before anything was sent, or a plain error: return it.
    Before(StoreError),
    /// Lost to a concurrent transaction: run it again.
    Conflict(StoreError),
    /// The connection broke before `COMMIT`: nothing happened; run it again on a new one.
    Broken(StoreError),
    /// The connection broke during `COMMIT`.
    Unknown(Unknown<T>),
}

/// A commit whose answer never came: what `settle_unknown` needs to find out.
struct Unknown<T> {
    detail: String,
    /// Each partition the transaction wrote (one, or a pair).
    parts: Vec<Unsure>,
    effects: T,
}

/// One partition's part in a commit whose answer never came.
struct Unsure {
    /// The partition's index into `caches`.
    part: usize,
    next: i64,
    touched: Vec<JobSeq>,
}

impl<T> Failure<T> {
    fn classify(store: &str, e: postgres::Error) -> Failure<T> {
        match kind_of(&e) {
            Kind::Conflict => Failure::Conflict(map_err(store, e)),
            Kind::Broken => Failure::Broken(map_err(store, e)),
            Kind::Other => Failure::Before(map_err(store, e)),
        }
    }
}

impl PostgresStore {
    /// Partition `i`'s state brought up to date in one read-only snapshot (the version,
    /// the globals and the rows agree), once more if the idle connection had broken.
    fn refresh(&mut self, i: usize) -> Result<(), StoreError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let store = self.label.clone();
            self.connection()?;
            let Connection {
                client, statements, ..
            } = live(&mut self.conn);
            let cache = &mut self.caches[i];
            let read = (|| {
                let mut tx = client
                    .build_transaction()
                    .isolation_level(IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start()
                    .map_err(|e| map_err(&store, e))?;
                let mut rows = PgRows::new(&mut tx, statements, &store, 0, part_key(i));
                let version = rows.version()?;
                cache.sync(&mut rows, version)?;
                tx.commit().map_err(|e| map_err(&store, e))
            })();
            match read {
                Ok(()) => return Ok(()),
                // A connection that broke while idle (a restarted server): once more (or once
                // for each a pool may hold).
                Err(StoreError::Unreachable { .. }) if tries <= self.broken_retries() => {
                    self.discard()
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// How long the server lets this handle's connection sit idle inside a transaction
    /// before ending it: a minute, or the shortest lease of the partitions it holds. A
    /// daemon frozen in the middle of a transaction (a stopped process, a suspended
    /// machine) holds its partition's row lock, and the next owner's claim waits on that
    /// lock: past the lease, the partition is no longer the frozen daemon's to hold up.
    fn idle_limit_ms(&self) -> u64 {
        self.holders
            .iter()
            .flatten()
            .map(|h| h.ttl.as_millis())
            .min()
            .unwrap_or(60_000)
            .clamp(1_000, 60_000)
    }

    /// How many times a transaction whose connection broke is run again on another: once
    /// on a connection of its own; with a pool, once for each connection the pool may hold,
    /// since after a server restart every idle one in it is broken and each is found so
    /// only by using it (and closed then).
    fn broken_retries(&self) -> u32 {
        self.options.pool.as_ref().map_or(1, PgPool::size)
    }

    /// `transact_in` for partition index `i`, its errors not yet named by partition.
    fn transact_index(&mut self, i: usize, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError> {
        self.retrying(&mut |s| s.attempt(i, body))
    }

    /// Runs `attempt` until it commits, or fails in a way another try would not mend:
    /// again after a conflict (up to `CONFLICT_RETRIES`, backing off) or once after a
    /// broken connection; a commit with no answer is settled through `commits`.
    fn retrying<T>(
        &mut self,
        attempt: &mut dyn FnMut(&mut Self) -> Result<T, Failure<T>>,
    ) -> Result<T, StoreError> {
        let mut conflicts = 0;
        let mut broken = 0;
        loop {
            match attempt(self) {
                Ok(done) => return Ok(done),
                Err(Failure::Before(e)) => return Err(e),
                Err(Failure::Conflict(e)) => {
                    conflicts += 1;
                    self.conflicts += 1;
                    if conflicts > CONFLICT_RETRIES {
                        return Err(e);
                    }
                    std::thread::sleep(backoff(conflicts));
                }
                Err(Failure::Broken(e)) => {
                    self.discard();
                    broken += 1;
                    if broken > self.broken_retries() {
                        return Err(e);
                    }
                }
                Err(Failure::Unknown(unknown)) => return self.settle_unknown(unknown),
            }
        }
    }
}

/// The operations of `Store` that take a connection, each run by `pooled` (so a handle of
/// a daemon's pool gives its connection back after it).
impl PostgresStore {
    fn next_process_id_now(&mut self) -> Result<duetime::ProcessId, StoreError> {
        let store = self.label.clone();
        let conn = self.connection()?;
        let id: i64 = conn
            .client
            .query_one("SELECT nextval('process_ids')", &[])
            .map_err(|e| map_err(&store, e))?
            .get(0);
        Ok(duetime::ProcessId(id as u64))
    }

    fn locate_now(&mut self, job: &str) -> Result<Option<Partition>, StoreError> {
        let store = self.label.clone();
        let row = self
            .connection()?
            .client
            .query_opt("SELECT part FROM jobs WHERE name = $1", &[&job])
            .map_err(|e| map_err(&store, e))?;
        Ok(row.map(|r| Partition(r.get::<_, i32>(0).unsigned_abs())))
    }

    fn partition_rows_now(&mut self) -> Result<Vec<PartitionRow>, StoreError> {
        let store = self.label.clone();
        let rows = self
            .connection()?
            .client
            .query(
                "SELECT g.part, g.version, g.owner, g.epoch, g.lease_until,
                     (SELECT count(*) FROM jobs j WHERE j.part = g.part AND j.json IS NOT NULL)
                 FROM globals g ORDER BY g.part",
                &[],
            )
            .map_err(|e| map_err(&store, e))?;
        Ok(rows
            .iter()
            .map(|r| PartitionRow {
                partition: Partition(r.get::<_, i32>(0).unsigned_abs()),
                version: r.get(1),
                jobs: r.get::<_, i64>(5).unsigned_abs(),
                owner: r.get(2),
                epoch: r.get(3),
                lease_until: r.get::<_, Option<i64>>(4).map(Timestamp::from_millis),
            })
            .collect())
    }

    fn journal_for_now(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError> {
        self.read_journal(
            "SELECT id, at, job, json FROM journal WHERE job = $1 AND at >= $2 ORDER BY id",
            &[&job, &since.as_millis()],
        )
    }

    fn journal_all_now(&mut self) -> Result<Vec<Record>, StoreError> {
        self.read_journal("SELECT id, at, job, json FROM journal ORDER BY id", &[])
    }

    fn journal_after_now(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError> {
        let store = self.label.clone();
        let kinds: Vec<&str> = kinds.to_vec();
        let conn = self.connection()?;
        let rows = conn
            .client
            .query(
                "SELECT id, at, job, json FROM journal WHERE id > $1 AND kind = ANY($2) \
                 ORDER BY id",
                &[&after, &kinds],
            )
            .map_err(|e| map_err(&store, e))?;
        rows.iter()
            .map(|r| {
                let id: i64 = r.get(0);
                parse_line(&store, id, r.get(1), r.get(2), r.get(3)).map(|l| (id, l))
            })
            .collect()
    }

    fn journal_end_now(&mut self) -> Result<i64, StoreError> {
        let store = self.label.clone();
        self.connection()?
            .client
            .query_one("SELECT COALESCE(MAX(id), 0) FROM journal", &[])
            .map(|r| r.get(0))
            .map_err(|e| map_err(&store, e))
    }

    /// Daemons register in partition 0, whose state knows the processes (a daemon steps
    /// partition 0 only until the multi-partition daemon of issue 43 lands).
    fn register_daemon_now(&mut self, info: &DaemonInfo) -> Result<(), StoreError> {
        let store = self.label.clone();
        let json = serde_json::to_string(info).map_err(|e| StoreError::Database {
            store: store.clone(),
            detail: format!("cannot serialize: {e}"),
        })?;
        let err = |e| map_err(&store, e);
        self.connection()?;
        let Connection {
            client, statements, ..
        } = live(&mut self.conn);
        // One snapshot, as `state` reads: the version, the globals and the rows agree.
        let mut tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .start()
            .map_err(err)?;
        // The state and the rows read in this transaction, not from a cache: a daemon
        // that started a moment ago is seen (its row was written before its start
        // reached the core, which `to_forget` allows for).
        let mut rows = PgRows::new(&mut tx, statements, &store, 0, 0);
        let version = rows.version()?;
        let cache = &mut self.caches[0];
        cache.sync(&mut rows, version)?;
        let daemons = tx
            .query("SELECT key, value FROM meta WHERE key LIKE 'daemon:%'", &[])
            .map_err(err)?
            .iter()
            .map(|r| parse_daemon(&store, r.get(0), r.get(1)))
            .collect::<Result<Vec<_>, _>>()?;
        let forget = match self.count.get() {
            1 => to_forget(&cache.state, &daemons, info),
            _ => {
                let members: Vec<i64> = tx
                    .query("SELECT process FROM members", &[])
                    .map_err(err)?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                forget_unknown(|p| members.contains(&(p.0 as i64)), &daemons, info)
            }
        };
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&info.key(), &json],
        )
        .map_err(err)?;
        for key in &forget {
            tx.execute("DELETE FROM meta WHERE key = $1", &[key])
                .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    fn daemons_now(&mut self) -> Result<Vec<DaemonInfo>, StoreError> {
        let store = self.label.clone();
        let rows = self
            .connection()?
            .client
            .query("SELECT key, value FROM meta WHERE key LIKE 'daemon:%'", &[])
            .map_err(|e| map_err(&store, e))?;
        let mut out = rows
            .iter()
            .map(|r| parse_daemon(&store, r.get(0), r.get(1)))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by_key(|d| d.process);
        Ok(out)
    }

    fn version_now(&mut self) -> Result<i64, StoreError> {
        let store = self.label.clone();
        self.connection()?
            .client
            .query_one("SELECT version FROM globals WHERE part = 0", &[])
            .map(|r| r.get(0))
            .map_err(|e| map_err(&store, e))
    }
}

impl Store for PostgresStore {
    fn partitions(&self) -> PartitionCount {
        self.count
    }

    fn transact_in(
        &mut self,
        p: Partition,
        body: &mut Body<'_>,
    ) -> Result<Vec<Effect>, StoreError> {
        let i = self.index(p)?;
        self.pooled(|s| s.transact_index(i, body))
            .map_err(|e| self.in_partition(p, e))
    }

    fn transact_pair(
        &mut self,
        a: Partition,
        b: Partition,
        body: &mut PairBody<'_>,
    ) -> Result<(Vec<Effect>, Vec<Effect>), StoreError> {
        self.pooled(|s| s.pair(a, b, body))
    }

    fn pending_moves(&mut self) -> Result<Vec<PendingMove>, StoreError> {
        self.pooled(Self::read_pending)
    }

    fn set_pending_move(&mut self, pending: &PendingMove) -> Result<(), StoreError> {
        self.pooled(|s| s.write_pending(pending))
    }

    fn clear_pending_move(&mut self, job: &str) -> Result<bool, StoreError> {
        self.pooled(|s| s.delete_pending(job))
    }

    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        self.pooled(|s| s.next_process_id_now())
    }

    fn state_in(&mut self, p: Partition) -> Result<&State, StoreError> {
        let i = self.index(p)?;
        match self.pooled(|s| s.refresh(i)) {
            Ok(()) => Ok(&self.caches[i].state),
            Err(e) => Err(self.in_partition(p, e)),
        }
    }

    fn held_state_in(&self, p: Partition) -> Result<&State, StoreError> {
        Ok(&self.caches[self.index(p)?].state)
    }

    fn locate(&mut self, job: &str) -> Result<Option<Partition>, StoreError> {
        self.pooled(|s| s.locate_now(job))
    }

    fn partition_rows(&mut self) -> Result<Vec<PartitionRow>, StoreError> {
        self.pooled(|s| s.partition_rows_now())
    }

    fn journal_for(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError> {
        self.pooled(|s| s.journal_for_now(job, since))
    }

    fn journal_all(&mut self) -> Result<Vec<Record>, StoreError> {
        self.pooled(|s| s.journal_all_now())
    }

    fn journal_after(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError> {
        self.pooled(|s| s.journal_after_now(after, kinds))
    }

    fn journal_end(&mut self) -> Result<i64, StoreError> {
        self.pooled(|s| s.journal_end_now())
    }

    /// Daemons register in partition 0, whose state knows the processes (a daemon steps
    /// partition 0 only until the multi-partition daemon of issue 43 lands).
    fn register_daemon(&mut self, info: &DaemonInfo) -> Result<(), StoreError> {
        self.pooled(|s| s.register_daemon_now(info))
    }

    fn daemons(&mut self) -> Result<Vec<DaemonInfo>, StoreError> {
        self.pooled(|s| s.daemons_now())
    }

    fn describe(&self) -> &str {
        &self.label
    }

    fn version(&mut self) -> Result<i64, StoreError> {
        self.pooled(|s| s.version_now())
    }

    fn beat(
        &mut self,
        me: duetime::ProcessId,
        stopping: bool,
        ttl: duetime::Duration,
    ) -> Result<super::Roster, StoreError> {
        self.pooled(|s| s.beat_now(me, stopping, ttl))
    }

    fn claim(
        &mut self,
        p: Partition,
        me: duetime::ProcessId,
        seen: u64,
        ttl: duetime::Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.pooled(|s| s.claim_now(p, me, seen, ttl))
    }

    fn release(
        &mut self,
        p: Partition,
        me: duetime::ProcessId,
        epoch: u64,
    ) -> Result<bool, StoreError> {
        self.pooled(|s| s.release_now(p, me, epoch))
    }

    fn renew(
        &mut self,
        me: duetime::ProcessId,
        held: &[(Partition, u64)],
        ttl: duetime::Duration,
    ) -> Result<Vec<Partition>, StoreError> {
        self.pooled(|s| s.renew_now(me, held, ttl))
    }

    fn hold(&mut self, p: Partition, holder: super::Holder) -> Result<(), StoreError> {
        self.hold_now(p, holder)
    }

    fn members(&mut self) -> Result<Vec<duetime_loop::Member>, StoreError> {
        self.pooled(Self::read_members)
    }

    fn loads(&self) -> Loads {
        let mut all = Loads::default();
        for c in &self.caches {
            all.whole += c.loads.whole;
            all.partial += c.loads.partial;
        }
        all
    }
}

/// A partition's number as the `part` columns hold it (`INTEGER`). Partitions number
/// below `PartitionCount::MAX`, so it always fits.
pub(super) fn part_key(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// The tables, read and written inside one open transaction.
struct PgRows<'a, 'c> {
    tx: &'a mut postgres::Transaction<'c>,
    st: &'a Statements,
    store: &'a str,
    /// What the first database error was: whether the transaction is worth running again
    /// depends on it.
    failure: Option<Kind>,
    /// The globals as the lock read them, so the sync need not read them again.
    globals: Option<String>,
    /// This handle's row in `commits`.
    handle: i64,
    /// The partition read and written.
    part: i32,
}

impl<'a, 'c> PgRows<'a, 'c> {
    /// Rows of `part` read and written in `tx` for `handle`, nothing read or failed yet.
    fn new(
        tx: &'a mut postgres::Transaction<'c>,
        st: &'a Statements,
        store: &'a str,
        handle: i64,
        part: i32,
    ) -> PgRows<'a, 'c> {
        PgRows {
            tx,
            st,
            store,
            failure: None,
            globals: None,
            handle,
            part,
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Conflict,
    Broken,
    Other,
}

fn kind_of(e: &postgres::Error) -> Kind {
    if is_conflict(e) {
        Kind::Conflict
    } else if is_broken(e) {
        Kind::Broken
    } else {
        Kind::Other
    }
}

/// The connection is gone (or going): no answer, a closed socket, or the server saying it
/// is shutting down or restarting (class 57P: an administrator's or a crash's restart;
/// class 08: connection exceptions).
fn is_broken(e: &postgres::Error) -> bool {
    e.is_closed()
        || match e.as_db_error() {
            None => true,
            Some(db) => {
                let code = db.code().code();
                code.starts_with("57P") || code.starts_with("08")
            }
        }
}

type Params<'p> = [&'p (dyn postgres::types::ToSql + Sync)];

impl PgRows<'_, '_> {
    fn fail(&mut self, e: postgres::Error) -> StoreError {
        self.failure.get_or_insert(kind_of(&e));
        map_err(self.store, e)
    }

    /// The `Failure` an error inside the transaction amounts to.
    fn failed<T>(&mut self, e: StoreError) -> Failure<T> {
        match self.failure.take() {
            Some(Kind::Conflict) => Failure::Conflict(e),
            Some(Kind::Broken) => Failure::Broken(e),
            Some(Kind::Other) | None => Failure::Before(e),
        }
    }

    fn query(
        &mut self,
        which: fn(&Statements) -> &Statement,
        params: &Params<'_>,
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let st = which(self.st);
        self.tx.query(st, params).map_err(|e| self.fail(e))
    }

    fn exec(
        &mut self,
        which: fn(&Statements) -> &Statement,
        params: &Params<'_>,
    ) -> Result<u64, StoreError> {
        let st = which(self.st);
        self.tx.execute(st, params).map_err(|e| self.fail(e))
    }

    /// Takes the globals row's lock; the version, and the globals kept for the sync.
    fn lock(&mut self) -> Result<i64, StoreError> {
        let part = self.part;
        let rows = self.query(|s| &s.lock, &[&part])?;
        let row = rows.first().ok_or_else(|| StoreError::Corrupt {
            store: self.store.to_string(),
            detail: "the globals row is missing".to_string(),
        })?;
        self.globals = Some(row.get(1));
        Ok(row.get(0))
    }

    fn one_i64(
        &mut self,
        which: fn(&Statements) -> &Statement,
        params: &Params<'_>,
    ) -> Result<i64, StoreError> {
        let rows = self.query(which, params)?;
        rows.first()
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::Corrupt {
                store: self.store.to_string(),
                detail: "the globals row is missing".to_string(),
            })
    }
}

impl Rows for PgRows<'_, '_> {
    fn version(&mut self) -> Result<i64, StoreError> {
        let part = self.part;
        self.one_i64(|s| &s.version, &[&part])
    }

    fn globals(&mut self) -> Result<String, StoreError> {
        if let Some(json) = self.globals.take() {
            return Ok(json);
        }
        let part = self.part;
        let rows = self.query(|s| &s.globals, &[&part])?;
        rows.first()
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::Corrupt {
                store: self.store.to_string(),
                detail: "the globals row is missing".to_string(),
            })
    }

    fn changed_since(&mut self, seen: i64) -> Result<Vec<(JobSeq, Option<String>)>, StoreError> {
        let part = self.part;
        let rows = self.query(|s| &s.changed, &[&part, &seen])?;
        Ok(rows
            .iter()
            .map(|r| (seq_of_key(r.get(0)), r.get(1)))
            .collect())
    }

    fn job(&mut self, seq: JobSeq) -> Result<Option<String>, StoreError> {
        let part = self.part;
        let rows = self.query(|s| &s.job, &[&part, &seq_key(seq)])?;
        Ok(rows.first().and_then(|r| r.get(0)))
    }

    fn all_jobs(&mut self) -> Result<Vec<(JobSeq, String)>, StoreError> {
        let part = self.part;
        let rows = self.query(|s| &s.all_jobs, &[&part])?;
        Ok(rows
            .iter()
            .map(|r| (seq_of_key(r.get(0)), r.get(1)))
            .collect())
    }

    fn write(&mut self, w: &Writes<'_>) -> Result<(), StoreError> {
        let seqs: Vec<i64> = w.jobs.iter().map(|(s, _)| seq_key(*s)).collect();
        let names: Vec<Option<&str>> = w
            .jobs
            .iter()
            .map(|(_, r)| r.as_ref().map(|r| r.0))
            .collect();
        let bodies: Vec<Option<&str>> = w
            .jobs
            .iter()
            .map(|(_, r)| r.as_ref().map(|r| r.1.as_str()))
            .collect();
        let at: Vec<i64> = w.lines.iter().map(|l| l.at).collect();
        let job: Vec<&str> = w.lines.iter().map(|l| l.job).collect();
        let kind: Vec<&str> = w.lines.iter().map(|l| l.kind).collect();
        let from: Vec<Option<i64>> = w.lines.iter().map(|l| l.due_from).collect();
        let to: Vec<Option<i64>> = w.lines.iter().map(|l| l.due_to).collect();
        let json: Vec<&str> = w.lines.iter().map(|l| l.json.as_str()).collect();
        let (handle, part) = (self.handle, self.part);
        self.exec(
            |s| &s.write,
            &[
                &w.version, &w.globals, &seqs, &names, &bodies, &at, &job, &kind, &from, &to,
                &json, &handle, &part,
            ],
        )
        .map(|_| ())
    }
}

/// Up to 2^n hundred microseconds (capped at 50 ms), scattered by the clock's nanoseconds:
/// the host may be random where the core may not.
fn backoff(attempt: u32) -> std::time::Duration {
    let cap = (100u64 << attempt.min(9)).min(50_000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    std::time::Duration::from_micros(nanos % cap + 1)
}

fn is_conflict(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE | &SqlState::T_R_DEADLOCK_DETECTED)
    )
}

fn unreachable(store: &str, e: &postgres::Error) -> StoreError {
    if let Some(what) = unfixable_by_waiting(e) {
        return StoreError::Database {
            store: store.to_string(),
            detail: format!("{} ({what}: retrying would not mend it)", error_text(e)),
        };
    }
    StoreError::Unreachable {
        store: store.to_string(),
        detail: error_text(e),
    }
}

/// What a refused connection says that retrying cannot fix: the server answered, and the
/// database or role named does not exist (SQLSTATE 3D000, 28000) or the password is wrong
/// (28P01). A daemon waiting on these as on an outage would wait forever; refused
/// certificates are `tls::failure`'s.
fn unfixable_by_waiting(e: &postgres::Error) -> Option<&'static str> {
    let code = e.as_db_error()?.code().code();
    match code {
        "3D000" => Some("no such database"),
        "28000" => Some("no such role, or not allowed to connect"),
        "28P01" => Some("authentication failed"),
        _ => None,
    }
}

/// The error's own message and its cause (the crate's `Display` alone can be as short as
/// "db error" or "error connecting to server").
fn error_text(e: &postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => db.to_string(),
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

/// Sorts PostgreSQL's errors into what a person can act on.
pub(super) fn map_err(store: &str, e: postgres::Error) -> StoreError {
    let store = store.to_string();
    if is_broken(&e) {
        return StoreError::Unreachable {
            store,
            detail: error_text(&e),
        };
    }
    if is_conflict(&e) {
        // Only after the retries: as good as a lock held too long.
        return StoreError::Locked { store };
    }
    match e.code() {
        Some(&SqlState::LOCK_NOT_AVAILABLE | &SqlState::QUERY_CANCELED) => {
            StoreError::Locked { store }
        }
        _ => StoreError::Database {
            store,
            detail: error_text(&e),
        },
    }
}

/// The URL as messages show it: user, hosts, ports and database, never the password.
fn label_of(config: &postgres::Config) -> String {
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    let db = config.get_dbname().unwrap_or("");
    // A schema chosen by `options=-csearch_path=...` is part of where the store is.
    let options = config
        .get_options()
        .map(|o| format!("?options={o}"))
        .unwrap_or_default();
    format!("postgres://{user}{}/{db}{options}", hosts.join(","))
}

/// A URL that did not parse, with anything between `:` and `@` after the scheme hidden.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let auth = &url[scheme + 3..at];
            match auth.find(':') {
                Some(colon) => {
                    format!("{}{}:***{}", &url[..scheme + 3], &auth[..colon], &url[at..])
                }
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_never_show_the_password() {
        let config: postgres::Config = "postgres://ann:secret@db.example:5433/sched"
            .parse()
            .unwrap();
        assert_eq!(label_of(&config), "postgres://ann@db.example:5433/sched");
        let config: postgres::Config =
            "postgres://ann:secret@db/sched?options=-csearch_path%3Dduetime"
                .parse()
                .unwrap();
        assert_eq!(
            label_of(&config),
            "postgres://ann@db:5432/sched?options=-csearch_path=duetime"
        );
        assert_eq!(
            redact("postgres://ann:secret@db.example:bad/sched"),
            "postgres://ann:***@db.example:bad/sched"
        );
    }
}
