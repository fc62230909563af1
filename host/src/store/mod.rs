//! The store: the core's state and journal, one transaction per event.
//!
//! A `Store` keeps the state and the journal together and runs each event as one
//! transaction: refresh what other processes changed, `step`, write what the step changed
//! and the journal lines it produced, commit, and only then hand the effects back, so a host
//! never carries out an effect whose cause is not stored. The daemon and the commands use
//! the trait, not a backend, so a later backend (PostgreSQL) slots in beside `sqlite`.

pub mod sqlite;

use std::fmt;
use std::path::PathBuf;

use duetime::{Effect, Event, LoadError, Now, Record, State, Timestamp};

pub use sqlite::{Loads, Options, SqliteStore, SCHEMA_VERSION};

/// Why the store could not do what was asked. Every variant names the store, because a
/// person reading it may have several.
#[derive(Debug)]
pub enum StoreError {
    /// The file is not a database, or not a duetime store, or its contents do not parse.
    Corrupt { path: PathBuf, detail: String },
    /// Another process held the store longer than the busy timeout.
    Locked { path: PathBuf },
    /// The store was written by a newer duetime whose schema this build does not know.
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// The stored state parses but the core refuses it (a newer state format, or
    /// inconsistent).
    Load { path: PathBuf, error: LoadError },
    /// Anything else the database reported (permissions, a full disk, a read-only file).
    Database { path: PathBuf, detail: String },
    /// The transaction's body asked to abort; nothing was written.
    Aborted { reason: String },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Corrupt { path, detail } => write!(
                f,
                "the store {} is corrupt or not a duetime store: {detail}",
                path.display()
            ),
            StoreError::Locked { path } => write!(
                f,
                "the store {} is locked by another process; try again, or look for a stuck duetime",
                path.display()
            ),
            StoreError::NewerSchema {
                path,
                found,
                supported,
            } => write!(
                f,
                "the store {} has schema version {found}, newer than this build of duetime \
                 knows ({supported}); use a newer duetime",
                path.display()
            ),
            StoreError::Load { path, error } => {
                write!(f, "the store {} cannot be loaded: {error}", path.display())
            }
            StoreError::Database { path, detail } => {
                write!(f, "the store {}: {detail}", path.display())
            }
            StoreError::Aborted { reason } => write!(f, "transaction aborted: {reason}"),
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
/// is put back to what the store holds).
pub type Body<'a> = dyn FnMut(&mut State, &mut Vec<Effect>) -> Result<(), StoreError> + 'a;

/// The state and the journal, kept together.
pub trait Store {
    /// One transaction: bring the state up to date with the store, run `body`, write the
    /// jobs it changed, the globals and every `Effect::Record` it produced, commit. The
    /// effects come back only after the commit; on any error nothing was stored and the
    /// state in memory equals the store's.
    fn transact(&mut self, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError>;

    /// One event as one transaction.
    fn apply(&mut self, now: Now, event: Event) -> Result<Vec<Effect>, StoreError> {
        let mut event = Some(event);
        self.transact(&mut |state, effects| {
            if let Some(event) = event.take() {
                state.step(now, event, effects);
            }
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
}
