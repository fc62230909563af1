//! The connections a daemon of several partitions shares among its seats (issue 43).
//!
//! Each seat is a store handle of its own (its own cached state, commit token and lease),
//! but a handle with a pool holds a connection only while it runs one operation: it takes
//! one at the operation's start and gives it back at its end (`PostgresStore::give_back`).
//! So a daemon holding 64 partitions uses at most the pool's size, not 64 connections, and
//! two daemons fit PostgreSQL's default `max_connections` of 100 with room to spare.
//!
//! The pool is r2d2's: the host's client is the synchronous `postgres` crate, which r2d2
//! serves as it is (deadpool-postgres wants the async client and a runtime the daemon does
//! not have). r2d2_postgres's manager hands out a bare `Client`; the store needs its own
//! `Connection` (the client, the statements prepared on it, the session settings, the
//! handle's idle-in-transaction limit), so `Manager` makes those with the store's own
//! `connect`, which also keeps its typed errors (a refused certificate is no outage).
//!
//! Nothing a transaction relies on lives in the connection: the cached state, the commit
//! token (`commits` by handle) and the fence (`Store::hold`, checked by the statement that
//! locks the partition's row, in the transaction) are the handle's, so a transaction runs
//! the same on whichever connection it is given.

use std::fmt;
use std::time::Duration;

use tokio_postgres_rustls::MakeRustlsConnect;

use super::{connect, Connection};
use crate::store::{Options, StoreError};

/// The fewest connections a daemon may be given: its owner's own, and one its seats share.
pub const MIN_CONNECTIONS: u32 = 2;
/// The most: far past what one database serves, so a typo is caught.
pub const MAX_CONNECTIONS: u32 = 1000;
/// `duetime run --pg-connections` left out: enough for a handful of seats to commit side by
/// side (a commit is mostly an fsync), few enough for several daemons on one server.
pub const DEFAULT_CONNECTIONS: u32 = 8;

/// How many connections one daemon opens to PostgreSQL (`--pg-connections`): one is its
/// owner's own (heartbeats, claims, lease renewals: never queued behind a seat), the rest
/// are shared by its seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections(u32);

impl Connections {
    pub const DEFAULT: Connections = Connections(DEFAULT_CONNECTIONS);

    /// `n` connections, or why not (the range accepted).
    pub fn new(n: u32) -> Result<Connections, String> {
        match (MIN_CONNECTIONS..=MAX_CONNECTIONS).contains(&n) {
            true => Ok(Connections(n)),
            false => Err(format!(
                "{n} connections: a daemon needs {MIN_CONNECTIONS} to {MAX_CONNECTIONS} (its \
                 owner's own and at least one its partitions share)"
            )),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// The pool's share: every connection but the owner's.
    pub fn shared(self) -> u32 {
        self.0 - 1
    }
}

impl std::str::FromStr for Connections {
    type Err = String;

    fn from_str(s: &str) -> Result<Connections, String> {
        let n = s.trim().parse::<u32>().map_err(|_| {
            format!("{s:?} is not a number of connections ({MIN_CONNECTIONS} to {MAX_CONNECTIONS})")
        })?;
        Connections::new(n)
    }
}

impl fmt::Display for Connections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Opens the pool's connections: the store's `connect`, with the handle's options.
pub(super) struct Manager {
    pub(super) config: postgres::Config,
    pub(super) tls: MakeRustlsConnect,
    /// The options of the handles (no pool of their own: a pool does not nest).
    pub(super) options: Options,
    pub(super) label: String,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = StoreError;

    fn connect(&self) -> Result<Connection, StoreError> {
        connect(&self.config, &self.tls, &self.options, &self.label, None)
    }

    /// Only what is known without a round trip: a transaction on a connection that broke
    /// since is run again on another (`PostgresStore::retrying`).
    fn is_valid(&self, conn: &mut Connection) -> Result<(), StoreError> {
        match conn.client.is_closed() {
            true => Err(StoreError::Unreachable {
                store: self.label.clone(),
                detail: "the connection was closed".to_string(),
            }),
            false => Ok(()),
        }
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// A daemon's shared connections (cloned into each seat's `Options`).
#[derive(Clone)]
pub struct PgPool {
    inner: r2d2::Pool<Manager>,
    /// How long a handle waits for a connection before `StoreError::Busy`.
    wait: Duration,
}

impl fmt::Debug for PgPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state();
        f.debug_struct("PgPool")
            .field("size", &self.inner.max_size())
            .field("open", &state.connections)
            .field("idle", &state.idle_connections)
            .field("wait", &self.wait)
            .finish()
    }
}

impl PgPool {
    /// A pool of at most `size` connections made by `manager`, none opened yet; a handle
    /// waits at most `wait` for one.
    pub(super) fn new(manager: Manager, size: u32, wait: Duration) -> PgPool {
        let inner = r2d2::Pool::builder()
            .max_size(size.max(1))
            // Opened when first wanted, not all at once at the start.
            .min_idle(Some(0))
            .connection_timeout(wait)
            // A failed connect is the waiting handle's error (`get`), not a log line of
            // r2d2's (its `log` lines reach no subscriber here).
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build_unchecked(manager);
        PgPool { inner, wait }
    }

    /// How many connections it may open.
    pub fn size(&self) -> u32 {
        self.inner.max_size()
    }

    /// How many it has open now (in use or idle).
    pub fn open(&self) -> u32 {
        self.inner.state().connections
    }

    /// A connection, waiting at most the pool's `wait`: `Busy` when every one stayed in
    /// use that long, `Unreachable` when one could not be opened.
    pub(super) fn get(&self, store: &str) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        self.inner.get_timeout(self.wait).map_err(|e| {
            let state = self.inner.state();
            match state.connections >= self.inner.max_size() {
                true => StoreError::Busy {
                    store: store.to_string(),
                    connections: self.inner.max_size(),
                    waited: self.wait,
                },
                false => StoreError::Unreachable {
                    store: store.to_string(),
                    detail: e.to_string(),
                },
            }
        })
    }
}
