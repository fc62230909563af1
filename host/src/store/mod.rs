//! The store: the core's state and journal, one transaction per event.
//!
//! A `Store` keeps the state and the journal together and runs each event as one
//! transaction: refresh what other processes changed, `step`, write what the step changed
//! and the journal lines it produced, commit, and only then hand the effects back, so a host
//! never carries out an effect whose cause is not stored. The daemon and the commands use
//! the trait, not a backend: `open` picks SQLite for a path and PostgreSQL for a
//! `postgres://` URL, and nothing above this module knows which it got.
//!
//! A store holds its jobs in one or more partitions (`duetime_loop::Partition`), each a
//! core `State` of its own with its own version and part of the journal: SQLite always
//! one, PostgreSQL the count it was made with (docs/scale-out.md). `transact` and `state`
//! are partition 0's, which is the whole store when there is one; code that serves a
//! store of several goes through `transact_in`, `state_in` and `locate`, and the helpers
//! in `parts.rs` (where a job is, where a definition goes, every partition's rows).

/// Public so the `stored_rows` fuzz target drives the loaders as they are (issue 47).
pub mod cache;
pub mod daemons;
mod metered;
pub mod parts;
pub mod postgres;
pub mod sqlite;
pub mod tls;

use std::fmt;

use duetime::{
    Config, Effect, Event, JobName, LoadError, Now, ProcessId, Record, Refusal, State, Timestamp,
};
use duetime_loop::{Lease, Member, Partition, PartitionCount};

pub use cache::Loads;
pub use daemons::DaemonInfo;
pub use metered::Metered;
pub use parts::{PartitionRow, PendingMove};
pub use postgres::{Connections, Isolation, PgPool, PostgresStore};
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
    /// How many partitions: for a new store, how many to make (`None`: on PostgreSQL
    /// `NEW_STORE_PARTITIONS`, on SQLite one); for an existing one, the count it must have (`None`:
    /// whatever it was made with). SQLite refuses any count but one.
    pub partitions: Option<PartitionCount>,
    /// PostgreSQL: the connections a daemon's seats share (`PostgresStore::pool`): a
    /// handle opened with one takes a connection for each operation and gives it back
    /// after it, rather than keeping one of its own. `None` (every other handle): its own.
    pub pool: Option<PgPool>,
}

/// The partitions of a new PostgreSQL store when none are asked for:
/// `PartitionCount::POSTGRES_DEFAULT` (64), far more than the daemons one database serves,
/// so they spread evenly over any likely number of daemons (docs/scale-out.md, "The count").
/// A daemon steps them over a few connections (`--pg-connections`, `PgPool`), so two
/// daemons on 64 partitions fit PostgreSQL's default `max_connections`. SQLite always has
/// one.
pub const NEW_STORE_PARTITIONS: PartitionCount = PartitionCount::POSTGRES_DEFAULT;

impl Default for Options {
    fn default() -> Self {
        Options {
            busy_timeout: std::time::Duration::from_secs(5),
            config: Config::default(),
            durable: true,
            create: true,
            isolation: Isolation::default(),
            partitions: None,
            pool: None,
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
    fn partitions(&self) -> PartitionCount {
        match self {
            AnyStore::Sqlite(s) => s.partitions(),
            AnyStore::Postgres(s) => s.partitions(),
        }
    }
    fn transact_in(
        &mut self,
        p: Partition,
        body: &mut Body<'_>,
    ) -> Result<Vec<Effect>, StoreError> {
        self.inner().transact_in(p, body)
    }
    fn transact_pair(
        &mut self,
        a: Partition,
        b: Partition,
        body: &mut PairBody<'_>,
    ) -> Result<(Vec<Effect>, Vec<Effect>), StoreError> {
        self.inner().transact_pair(a, b, body)
    }
    fn pending_moves(&mut self) -> Result<Vec<PendingMove>, StoreError> {
        self.inner().pending_moves()
    }
    fn set_pending_move(&mut self, pending: &PendingMove) -> Result<(), StoreError> {
        self.inner().set_pending_move(pending)
    }
    fn clear_pending_move(&mut self, job: &str) -> Result<bool, StoreError> {
        self.inner().clear_pending_move(job)
    }
    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        self.inner().next_process_id()
    }
    fn state_in(&mut self, p: Partition) -> Result<&State, StoreError> {
        self.inner().state_in(p)
    }
    fn held_state_in(&self, p: Partition) -> Result<&State, StoreError> {
        match self {
            AnyStore::Sqlite(s) => s.held_state_in(p),
            AnyStore::Postgres(s) => s.held_state_in(p),
        }
    }
    fn locate(&mut self, job: &str) -> Result<Option<Partition>, StoreError> {
        self.inner().locate(job)
    }
    fn partition_rows(&mut self) -> Result<Vec<PartitionRow>, StoreError> {
        self.inner().partition_rows()
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
    fn beat(
        &mut self,
        me: ProcessId,
        stopping: bool,
        ttl: duetime::Duration,
    ) -> Result<Roster, StoreError> {
        self.inner().beat(me, stopping, ttl)
    }
    fn claim(
        &mut self,
        p: Partition,
        me: ProcessId,
        seen: u64,
        ttl: duetime::Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.inner().claim(p, me, seen, ttl)
    }
    fn release(&mut self, p: Partition, me: ProcessId, epoch: u64) -> Result<bool, StoreError> {
        self.inner().release(p, me, epoch)
    }
    fn renew(
        &mut self,
        me: ProcessId,
        held: &[(Partition, u64)],
        ttl: duetime::Duration,
    ) -> Result<Vec<Partition>, StoreError> {
        self.inner().renew(me, held, ttl)
    }
    fn members(&mut self) -> Result<Vec<Member>, StoreError> {
        self.inner().members()
    }
    fn hold(&mut self, p: Partition, holder: Holder) -> Result<(), StoreError> {
        self.inner().hold(p, holder)
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
    /// Every connection of the daemon's pool (`PgPool`: `connections` of them, shared by
    /// its partitions' seats) stayed in use for `waited`: nothing was done; the seat tries
    /// again after a backoff (the owner renews its lease meanwhile).
    Busy {
        store: String,
        connections: u32,
        waited: std::time::Duration,
    },
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
    /// The store was made with `stored` partitions and `asked` were asked for: a store
    /// keeps its count for life (every job's place depends on it).
    PartitionsDiffer {
        store: String,
        stored: PartitionCount,
        asked: PartitionCount,
    },
    /// An SQLite store was asked for more than one partition.
    OnePartitionOnly {
        store: String,
        asked: PartitionCount,
    },
    /// A partition the store does not have.
    NoSuchPartition {
        store: String,
        partition: Partition,
        count: PartitionCount,
    },
    /// What went wrong in one partition of a store of several: the others are untouched
    /// and go on.
    InPartition {
        partition: Partition,
        error: Box<StoreError>,
    },
    /// `transact_pair` asked for two partitions it cannot hold together: the same one
    /// twice, or any on a store of one partition (SQLite), where no job ever moves.
    NoPair {
        store: String,
        a: Partition,
        b: Partition,
        why: NoPairWhy,
    },
    /// A transaction of a daemon on a partition it no longer holds (`Store::hold`): the
    /// lease the store has is another's, under a newer epoch, or ended. Checked in the
    /// same transaction as the write, so nothing was written.
    Fenced {
        store: String,
        partition: Partition,
        holder: Holder,
        found: Lease,
    },
    /// Partition ownership (`beat`, `claim`, `release`, `hold`) asked of a store of one
    /// partition, where no daemon divides anything (the daemon steps it unfenced).
    NotPartitioned { store: String },
    /// Moving `job` from `from` to `to` was refused by a state (`Relocated::Refused`: its
    /// record or its new definition not taken there); the transaction was aborted, so
    /// nothing of the move was written and the job is where it was, as it was.
    MoveRefused {
        job: JobName,
        from: Partition,
        to: Partition,
        refusal: Refusal,
    },
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
            StoreError::Busy {
                store,
                connections,
                waited,
            } => write!(
                f,
                "the store {store}: all {connections} connections this daemon's partitions \
                 share stayed in use for {:.1}s; tried again shortly (a daemon holding many \
                 partitions on a slow server may want more: `duetime run --pg-connections`, \
                 now {})",
                waited.as_secs_f64(),
                connections + 1
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
            StoreError::PartitionsDiffer { .. }
            | StoreError::OnePartitionOnly { .. }
            | StoreError::NoSuchPartition { .. }
            | StoreError::InPartition { .. }
            | StoreError::NoPair { .. }
            | StoreError::Fenced { .. }
            | StoreError::NotPartitioned { .. }
            | StoreError::MoveRefused { .. } => self.fmt_partitions(f),
        }
    }
}

impl StoreError {
    /// The messages of the partition variants (`fmt` covers the others).
    fn fmt_partitions(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::PartitionsDiffer {
                store,
                stored,
                asked,
            } => write!(
                f,
                "the store {store} has {}; --partitions {asked} was asked (a store keeps the \
                 count it was made with; leave --partitions out to use it)",
                partitions_text(*stored)
            ),
            StoreError::OnePartitionOnly { store, asked } => write!(
                f,
                "the store {store} is SQLite, which has exactly one partition (one writer at \
                 a time, so more would add nothing); --partitions {asked} was asked: leave it \
                 out, or use PostgreSQL"
            ),
            StoreError::NoSuchPartition {
                store,
                partition,
                count,
            } => write!(
                f,
                "the store {store} has {count} partition(s), p0 to p{}; there is no {partition}",
                count.get() - 1
            ),
            StoreError::InPartition { partition, error } => {
                write!(f, "partition {partition}: {error}")
            }
            StoreError::NoPair {
                store,
                a,
                b,
                why: NoPairWhy::Same,
            } => write!(
                f,
                "the store {store}: a transaction over two partitions was asked for {a} and \
                 {b}, the same one (a host bug: a job moves between two partitions)"
            ),
            StoreError::NoPair {
                store,
                a,
                b,
                why: NoPairWhy::OnePartition,
            } => write!(
                f,
                "the store {store} has exactly one partition, so no job moves between \
                 partitions there (a host bug asked to, with {a} and {b})"
            ),
            StoreError::Fenced {
                store,
                partition,
                holder,
                found,
            } => write!(
                f,
                "the store {store}: {partition} is no longer held by process {} under epoch \
                 {} (the store has {}); nothing was written, and this daemon lets the \
                 partition go",
                holder.owner,
                holder.epoch,
                lease_text(found)
            ),
            StoreError::NotPartitioned { store } => write!(
                f,
                "the store {store} has one partition, which no daemon divides (a host bug \
                 asked for partition ownership there)"
            ),
            StoreError::MoveRefused {
                job,
                from,
                to,
                refusal,
            } => write!(
                f,
                "job {job} could not move from partition {from} to {to} (its concurrency key \
                 now puts it there): {refusal}; nothing was changed, it stays in {from} under \
                 the definition it had"
            ),
            // The others are `fmt`'s, which never sends them here.
            _ => Ok(()),
        }
    }
}

/// Why `transact_pair` refused its partitions (`StoreError::NoPair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoPairWhy {
    /// Both were the same partition.
    Same,
    /// The store has one partition (SQLite always).
    OnePartition,
}

/// A lease as an error message says it.
fn lease_text(lease: &Lease) -> String {
    match lease.owner {
        Some(owner) => format!(
            "owner {owner}, epoch {}, until {}",
            lease.epoch, lease.until
        ),
        None => format!("no owner, epoch {}", lease.epoch),
    }
}

/// `1 partition`, `8 partitions`.
pub fn partitions_text(n: PartitionCount) -> String {
    match n.get() {
        1 => "1 partition".to_string(),
        n => format!("{n} partitions"),
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
            StoreError::Busy { .. } => ErrorKind::Busy,
            StoreError::NewerSchema { .. } => ErrorKind::NewerSchema,
            StoreError::Load { .. } => ErrorKind::Load,
            StoreError::Database { .. } => ErrorKind::Database,
            StoreError::Aborted { .. } => ErrorKind::Aborted,
            StoreError::PartitionsDiffer { .. } => ErrorKind::PartitionsDiffer,
            StoreError::OnePartitionOnly { .. } => ErrorKind::OnePartitionOnly,
            StoreError::NoSuchPartition { .. } => ErrorKind::NoSuchPartition,
            StoreError::InPartition { error, .. } => error.kind(),
            StoreError::NoPair { .. } => ErrorKind::NoPair,
            StoreError::Fenced { .. } => ErrorKind::Fenced,
            StoreError::NotPartitioned { .. } => ErrorKind::NotPartitioned,
            StoreError::MoveRefused { .. } => ErrorKind::MoveRefused,
        }
    }
}

impl StoreError {
    /// Whether it is `Fenced`, alone or in its partition's `InPartition`.
    pub fn is_fenced(&self) -> bool {
        match self {
            StoreError::Fenced { .. } => true,
            StoreError::InPartition { error, .. } => error.is_fenced(),
            _ => false,
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Load { error, .. } => Some(error),
            StoreError::InPartition { error, .. } => Some(error.as_ref()),
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

/// The body of a transaction over two partitions (`Store::transact_pair`): the states of
/// `a` and `b`, in the order asked (whatever order they were locked in), and the effects
/// of each. The same contract as `Body`: an `Err` aborts both, and it may be run again.
pub type PairBody<'a> = dyn FnMut(&mut State, &mut State, &mut Vec<Effect>, &mut Vec<Effect>) -> Result<(), StoreError>
    + 'a;

/// A daemon's hold on a partition (`Store::hold`): its process, the epoch its claim
/// raised, and how long each write renews the lease for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub owner: ProcessId,
    pub epoch: u64,
    pub ttl: duetime::Duration,
}

/// What one heartbeat reads back (`Store::beat`): the shared loop's type, which its owner
/// round takes.
pub use duetime_loop::Roster;

/// The state and the journal, kept together.
pub trait Store {
    /// How many partitions the store has (fixed when it was made).
    fn partitions(&self) -> PartitionCount;

    /// One transaction on partition `p`: bring its state up to date with the store, run
    /// `body`, write the jobs it changed, the partition's globals and every
    /// `Effect::Journal` it produced, commit. The effects come back only after the commit;
    /// on any error nothing was stored and the state in memory equals the store's. In a
    /// store of several partitions an error names the partition (`InPartition`).
    fn transact_in(&mut self, p: Partition, body: &mut Body<'_>)
        -> Result<Vec<Effect>, StoreError>;

    /// One transaction over two partitions, for moving a job from `a` to `b`
    /// (`parts::place`): both partitions' globals rows are locked **in partition order**,
    /// whichever is `a` (so two moves the other way round queue rather than deadlock),
    /// both states brought up to date, `body` run, then `a`'s changed jobs, globals and
    /// journal lines written before `b`'s (so a job moved from `a` to `b` gives up its name
    /// in `a` before it takes it in `b`: a name is one row across partitions), each line
    /// with its own partition, and one commit. The effects of `a` and of `b` come back only
    /// after the commit; on any error nothing was stored and both states in memory equal
    /// the store's.
    ///
    /// # Errors
    ///
    /// `NoPair` when `a` is `b`, or on a store of one partition (SQLite); `NoSuchPartition`;
    /// the body's error; the store's, as `transact_in`'s.
    fn transact_pair(
        &mut self,
        a: Partition,
        b: Partition,
        body: &mut PairBody<'_>,
    ) -> Result<(Vec<Effect>, Vec<Effect>), StoreError>;

    /// Every pending move (`parts::place`: a job whose run was open when its definition
    /// came to route it elsewhere), oldest first. A store of one partition has none.
    fn pending_moves(&mut self) -> Result<Vec<PendingMove>, StoreError>;

    /// Keeps `pending` as its job's pending move, replacing any the job had.
    ///
    /// # Errors
    ///
    /// `NoPair` on a store of one partition (no job moves there); the store's.
    fn set_pending_move(&mut self, pending: &PendingMove) -> Result<(), StoreError>;

    /// Forgets `job`'s pending move; whether it had one.
    fn clear_pending_move(&mut self, job: &str) -> Result<bool, StoreError>;

    /// `transact_in` partition 0: the whole store when it has one partition.
    fn transact(&mut self, body: &mut Body<'_>) -> Result<Vec<Effect>, StoreError> {
        self.transact_in(Partition::FIRST, body)
    }

    /// One event as one transaction on partition 0.
    fn apply(&mut self, now: Now, event: Event) -> Result<Vec<Effect>, StoreError> {
        self.apply_in(Partition::FIRST, now, event)
    }

    /// One event as one transaction on partition `p`.
    fn apply_in(
        &mut self,
        p: Partition,
        now: Now,
        event: Event,
    ) -> Result<Vec<Effect>, StoreError> {
        self.transact_in(p, &mut |state, effects| {
            state.step(now, event.clone(), effects);
            Ok(())
        })
    }

    /// A process id no incarnation of any host on this store has used: each daemon start
    /// takes one, so ids never repeat, even across restarts and machines.
    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError>;

    /// Partition `p`'s current state, refreshed from the store.
    fn state_in(&mut self, p: Partition) -> Result<&State, StoreError>;

    /// Partition `p`'s state as this handle holds it in memory, without asking the store
    /// anything: after `transact_in` returns its effects, the very state they were stepped
    /// on and committed. The daemon reads a `Start`'s definition in force from it as it
    /// launches the run, rather than `state_in`, which would ask the store again (a read
    /// transaction, a connection taken from a daemon's pool) for the state it has just
    /// written. Another process's later changes are not in it, and before this handle's
    /// first transaction or `state_in` it may hold nothing yet.
    fn held_state_in(&self, p: Partition) -> Result<&State, StoreError>;

    /// Partition 0's current state: the whole store's when it has one partition.
    fn state(&mut self) -> Result<&State, StoreError> {
        self.state_in(Partition::FIRST)
    }

    /// The partition job `job` lives in, read from the store's rows (a name lives in at
    /// most one: the store holds it to that); `None` when no job has that name.
    fn locate(&mut self, job: &str) -> Result<Option<Partition>, StoreError>;

    /// Each partition's row, in order: its version, its jobs, its owner columns.
    fn partition_rows(&mut self) -> Result<Vec<PartitionRow>, StoreError>;

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

    /// Partition 0's version: how many transactions have committed on it.
    fn version(&mut self) -> Result<i64, StoreError>;

    /// How this handle has kept its state up to date.
    fn loads(&self) -> Loads;

    /// One heartbeat of daemon `me` (docs/scale-out.md): its row in `members` written
    /// alive for `ttl` by the store's clock (and whether it is `stopping`), the rows of
    /// daemons gone for a `ttl` forgotten, then every lease and member read back, all in
    /// one transaction.
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; the store's.
    fn beat(
        &mut self,
        _me: ProcessId,
        _stopping: bool,
        _ttl: duetime::Duration,
    ) -> Result<Roster, StoreError> {
        Err(self.not_partitioned())
    }

    /// Claims partition `p` for `me`, which found its epoch `seen` and no live lease (or
    /// its own): the new epoch, or `None` when another came first (the epoch moved, or a
    /// live lease is another's). Checked and written in one statement, by the store's
    /// clock.
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; the store's.
    fn claim(
        &mut self,
        _p: Partition,
        _me: ProcessId,
        _seen: u64,
        _ttl: duetime::Duration,
    ) -> Result<Option<u64>, StoreError> {
        Err(self.not_partitioned())
    }

    /// Renews the leases `me` holds on `held` (each partition with the epoch its claim
    /// raised) for `ttl` by the store's clock, each only while it is still `me`'s under
    /// that epoch and not yet ended, so a renewal never revives a lease another may have
    /// claimed. A partition whose row a transaction has locked is skipped rather than
    /// waited for: that is its own seat's transaction, which renews it as it commits. The
    /// partitions renewed.
    ///
    /// The owner of a daemon renews its seats' leases so, on a connection of its own, so
    /// a seat waiting for one of the connections its daemon's seats share (`PgPool`) keeps
    /// its partition.
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; the store's.
    fn renew(
        &mut self,
        _me: ProcessId,
        _held: &[(Partition, u64)],
        _ttl: duetime::Duration,
    ) -> Result<Vec<Partition>, StoreError> {
        Err(self.not_partitioned())
    }

    /// The daemons' heartbeats (`members`) as they stand, without beating (`duetime
    /// status`).
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; the store's.
    fn members(&mut self) -> Result<Vec<Member>, StoreError> {
        Err(self.not_partitioned())
    }

    /// Hands partition `p` back (its owner cleared, its epoch kept) if `me` still holds it
    /// under `epoch`; whether it did.
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; the store's.
    fn release(&mut self, _p: Partition, _me: ProcessId, _epoch: u64) -> Result<bool, StoreError> {
        Err(self.not_partitioned())
    }

    /// From now on, every transaction of this handle on partition `p` checks, in the same
    /// transaction and before its body runs, that `holder` still holds it (its owner, its
    /// epoch, its lease not ended by the store's clock), and renews the lease by
    /// `holder.ttl` as it writes; one that does not is `Fenced` and writes nothing.
    ///
    /// # Errors
    ///
    /// `NotPartitioned` on a store of one partition; `NoSuchPartition`.
    fn hold(&mut self, _p: Partition, _holder: Holder) -> Result<(), StoreError> {
        Err(self.not_partitioned())
    }

    /// `NotPartitioned`, naming this store.
    fn not_partitioned(&self) -> StoreError {
        StoreError::NotPartitioned {
            store: self.describe().to_string(),
        }
    }
}
