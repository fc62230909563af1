//! The store: the core's state and journal, one transaction per event.
//!
//! A `Store` keeps the state and the journal together and runs each event as one
//! transaction: refresh what other processes changed, `step`, write what the step changed
//! and the journal lines it produced, commit, and only then hand the effects back, so a host
//! never carries out an effect whose cause is not stored. The daemon and the commands use
//! the trait, not a backend: `open` picks SQLite for a path and PostgreSQL for a
//! `postgres://` URL, and nothing above this module knows which it got.

mod cache;
pub mod daemons;
mod metered;
pub mod postgres;
pub mod sqlite;
pub mod tls;

use std::fmt;

use duetime::{Config, Effect, Event, LoadError, Now, Record, State, Timestamp};

pub use cache::Loads;
pub use daemons::DaemonInfo;
pub use metered::Metered;
pub use postgres::{Isolation, PostgresStore};
pub use sqlite::{SqliteStore, SCHEMA_VERSION};

/// How to open a store.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long to wait for another process's transaction before `StoreError::Locked`.
    pub busy_timeout: std::time::Duration,
    /// The config a new store starts with (a store keeps its config for life).
    pub config: Config,
    /// SQLite: `synchronous = FULL` (a commit survives power loss) rather than `NORMAL`
    /// (it survives a crash of the process). PostgreSQL: `synchronous_commit` on rather
    /// than off. Only tests and measurements turn it off.
    pub durable: bool,
    /// Make a new store where there is none (the daemon does); commands that only look at
    /// or change jobs refuse to, so a mistyped `--store` is an error, not an empty store.
    pub create: bool,
    /// PostgreSQL: how concurrent transactions are kept apart (see `Isolation`).
    pub isolation: Isolation,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            busy_timeout: std::time::Duration::from_secs(5),
            config: Config::default(),
            durable: true,
            create: true,
            isolation: Isolation::default(),
        }
    }
}

/// Where a store is, as `--store` names it: a `postgres://` or `postgresql://` URL, or
/// else a file path.
pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Opens the store `location` names.
pub fn open(location: &str, options: Options) -> Result<AnyStore, StoreError> {
    if is_url(location) {
        PostgresStore::open_with(location, options).map(AnyStore::Postgres)
    } else {
        SqliteStore::open_with(std::path::Path::new(location), options).map(AnyStore::Sqlite)
    }
}

/// Either backend, for code that takes whichever `--store` named. One per process, so
/// the difference in size is not worth a box.
#[allow(clippy::large_enum_variant)]
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl AnyStore {
    fn inner(&mut self) -> &mut dyn Store {
        match self {
            AnyStore::Sqlite(s) => s,
            AnyStore::Postgres(s) => s,
        }
    }
}

impl Store for AnyStore {
    fn transact(&mut self, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError> {
        self.inner().transact(body)
    }
    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        self.inner().next_process_id()
    }
    fn state(&mut self) -> Result<&State, StoreError> {
        self.inner().state()
    }
    fn journal_for(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError> {
        self.inner().journal_for(job, since)
    }
    fn journal_all(&mut self) -> Result<Vec<Record>, StoreError> {
        self.inner().journal_all()
    }
    fn journal_after(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError> {
        self.inner().journal_after(after, kinds)
    }
    fn journal_end(&mut self) -> Result<i64, StoreError> {
        self.inner().journal_end()
    }
    fn register_daemon(&mut self, info: &DaemonInfo) -> Result<(), StoreError> {
        self.inner().register_daemon(info)
    }
    fn daemons(&mut self) -> Result<Vec<DaemonInfo>, StoreError> {
        self.inner().daemons()
    }
    fn describe(&self) -> &str {
        match self {
            AnyStore::Sqlite(s) => s.describe(),
            AnyStore::Postgres(s) => s.describe(),
        }
    }
    fn version(&mut self) -> Result<i64, StoreError> {
        self.inner().version()
    }
    fn loads(&self) -> Loads {
        match self {
            AnyStore::Sqlite(s) => s.loads(),
            AnyStore::Postgres(s) => s.loads(),
        }
    }
}

/// Why the store could not do what was asked. Every variant names the store (a path, or a
/// URL without its password), because a person reading it may have several.
#[derive(Debug)]
pub enum StoreError {
    /// There is no store there, and the caller asked not to make one.
    Missing { store: String },
    /// The database server cannot be reached, or the connection broke. Nothing this
    /// transaction did is in the store, or, when the commit itself was cut off and the
    /// handle could not find out, its effects are withheld and the state is reread whole;
    /// either way the caller may simply try again.
    Unreachable { store: String, detail: String },
    /// The file is not a database, or not a duetime store, or its contents do not parse.
    Corrupt { store: String, detail: String },
    /// Another process held the store longer than the busy timeout.
    Locked { store: String },
    /// The store was written by a newer duetime whose schema this build does not know.
    NewerSchema {
        store: String,
        found: i64,
        supported: i64,
    },
    /// The stored state parses but the core refuses it (a newer state format, or
    /// inconsistent).
    Load { store: String, error: LoadError },
    /// Anything else the database reported (permissions, a full disk, a read-only file).
    Database { store: String, detail: String },
    /// The transaction's body asked to abort; nothing was written.
    Aborted { reason: String },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Missing { store } => write!(
                f,
                "no store at {store} (start `duetime run --jobs FILE` first, or pass --store)"
            ),
            StoreError::Unreachable { store, detail } => {
                write!(f, "the store {store} cannot be reached: {detail}")
            }
            StoreError::Corrupt { store, detail } => write!(
                f,
                "the store {store} is corrupt or not a duetime store: {detail}"
            ),
            StoreError::Locked { store } => write!(
                f,
                "the store {store} is locked by another process; try again, or look for a \
                 stuck duetime"
            ),
            StoreError::NewerSchema {
                store,
                found,
                supported,
            } => write!(
                f,
                "the store {store} has schema version {found}, newer than this build of \
                 duetime knows ({supported}); use a newer duetime"
            ),
            StoreError::Load { store, error } => {
                write!(f, "the store {store} cannot be loaded: {error}")
            }
            StoreError::Database { store, detail } => write!(f, "the store {store}: {detail}"),
            StoreError::Aborted { reason } => write!(f, "transaction aborted: {reason}"),
        }
    }
}

impl StoreError {
    /// Its snake_case name, as `--json` errors and the metrics' `kind` label spell it.
    pub fn kind(&self) -> crate::json::ErrorKind {
        use crate::json::ErrorKind;
        match self {
            StoreError::Missing { .. } => ErrorKind::NoStore,
            StoreError::Unreachable { .. } => ErrorKind::Unreachable,
            StoreError::Corrupt { .. } => ErrorKind::Corrupt,
            StoreError::Locked { .. } => ErrorKind::Locked,
            StoreError::NewerSchema { .. } => ErrorKind::NewerSchema,
            StoreError::Load { .. } => ErrorKind::Load,
            StoreError::Database { .. } => ErrorKind::Database,
            StoreError::Aborted { .. } => ErrorKind::Aborted,
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Load { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The body of a transaction: it may `step` the state any number of times, appending the
/// effects; an `Err` aborts the transaction (nothing is written, and the state in memory
/// is put back to what the store holds). A backend may run the body more than once (after
/// a serialization conflict, on a fresh copy of the state each time), so it must do its
/// whole work on every call.
pub type Body<'a> = dyn FnMut(&mut State, &mut Vec<Effect>) -> Result<(), StoreError> + 'a;

/// The state and the journal, kept together.
pub trait Store {
    /// One transaction: bring the state up to date with the store, run `body`, write the
    /// jobs it changed, the globals and every `Effect::Journal` it produced, commit. The
    /// effects come back only after the commit; on any error nothing was stored and the
    /// state in memory equals the store's.
    fn transact(&mut self, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError>;

    /// One event as one transaction.
    fn apply(&mut self, now: Now, event: Event) -> Result<Vec<Effect>, StoreError> {
        self.transact(&mut |state, effects| {
            state.step(now, event.clone(), effects);
            Ok(())
        })
    }

    /// A process id no incarnation of any host on this store has used: each daemon start
    /// takes one, so ids never repeat, even across restarts and machines.
    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError>;

    /// The current state, refreshed from the store.
    fn state(&mut self) -> Result<&State, StoreError>;

    /// One job's journal lines written at or after `since`, oldest first.
    fn journal_for(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError>;

    /// The whole journal, oldest first (the simulator's checker reads it).
    fn journal_all(&mut self) -> Result<Vec<Record>, StoreError>;

    /// The journal lines after line `after` (by the journal's own order) whose kind
    /// (`history.paused`, ...) is one of `kinds`, with their line numbers.
    fn journal_after(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError>;

    /// The number of the journal's last line (0 when it is empty).
    fn journal_end(&mut self) -> Result<i64, StoreError>;

    /// Writes who a daemon incarnation is (`duetime status`), and forgets the records of
    /// incarnations the core no longer knows.
    fn register_daemon(&mut self, info: &DaemonInfo) -> Result<(), StoreError>;

    /// Every daemon record, in process order.
    fn daemons(&mut self) -> Result<Vec<DaemonInfo>, StoreError>;

    /// Where the store is, as error messages name it.
    fn describe(&self) -> &str;

    /// The store's version: how many transactions have committed.
    fn version(&mut self) -> Result<i64, StoreError>;

    /// How this handle has kept its state up to date.
    fn loads(&self) -> Loads;
}
