//! A seat: the daemon's incarnation in one partition it holds, on a store of several
//! (`partitioned.rs`). Each seat is a `Daemon` of its own (the same turn, batches, runs and
//! start-up as the daemon of a store of one), on a thread of its own and a store handle of
//! its own that holds the partition's lease (`Store::hold`), so every write it makes is
//! fenced by the lease in the same transaction, and seats step their partitions side by
//! side. On PostgreSQL the handles borrow their connections from the daemon's pool, one
//! a transaction (`PgPool`, `--pg-connections`): threads are cheap, connections are what
//! the server counts. A seat stamps its link as it goes on, and its owner renews the lease
//! of every seat that does (`Partitioned::renew_seats`), so waiting for a connection
//! never costs a seat its partition.
//!
//! The owner talks to a seat through its `SeatLink`: leave (drain, then stop: the
//! partition is handed to another daemon), lost (stop at once without writing: another
//! daemon holds it now), and a reloaded jobs file to take.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use duetime::ProcessId;
use duetime_loop::Partition;
use tracing::{error, warn};

use super::{Daemon, Setup, Stopped};
use crate::alerts::Courier;
use crate::jobs_file::JobsFile;
use crate::store::{Holder, Store, StoreError};

/// What the owner and a seat share.
#[derive(Clone, Default)]
pub(super) struct SeatLink(Arc<Shared>);

#[derive(Default)]
struct Shared {
    leave: AtomicBool,
    lost: AtomicBool,
    jobs: Mutex<Option<(JobsFile, Option<Courier>)>>,
    /// When the seat last showed it goes on (`stamp`), in ms after `STARTED`.
    stamped: AtomicU64,
}

/// What a seat's stamps count from: the first use, in this process.
static STARTED: OnceLock<Instant> = OnceLock::new();

fn since_started() -> u64 {
    let started = STARTED.get_or_init(Instant::now);
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl SeatLink {
    /// Whether the seat is to drain and stop (its partition goes to another daemon).
    pub(super) fn is_leaving(&self) -> bool {
        self.0.leave.load(Ordering::SeqCst)
    }

    pub(super) fn leave(&self) {
        self.0.leave.store(true, Ordering::SeqCst);
    }

    /// Whether the seat is to stop without writing (another daemon holds the partition).
    pub(super) fn is_lost(&self) -> bool {
        self.0.lost.load(Ordering::SeqCst)
    }

    pub(super) fn lose(&self) {
        self.0.lost.store(true, Ordering::SeqCst);
    }

    /// A reloaded jobs file for the seat to take at its next turn (the owner has made the
    /// store's jobs match it), with the owner's delivery thread for alerts, if it has one.
    pub(super) fn send_jobs(&self, file: JobsFile, courier: Option<Courier>) {
        if let Ok(mut slot) = self.0.jobs.lock() {
            *slot = Some((file, courier));
        }
    }

    pub(super) fn take_jobs(&self) -> Option<(JobsFile, Option<Courier>)> {
        self.0.jobs.lock().ok().and_then(|mut slot| slot.take())
    }

    /// The seat goes on: at each turn and after each commit. The owner renews the lease of
    /// a seat that stamped within a lease (`Partitioned::renew_seats`), so a seat waiting
    /// for one of the connections the seats share keeps its partition, while a seat stuck
    /// for good stops being renewed, loses its lease, and is replaced (claimed again).
    pub(super) fn stamp(&self) {
        self.0.stamped.store(since_started(), Ordering::SeqCst);
    }

    /// Whether the seat stamped within `limit`.
    pub(super) fn stamped_within(&self, limit: Duration) -> bool {
        let age = since_started().saturating_sub(self.0.stamped.load(Ordering::SeqCst));
        u128::from(age) < limit.as_millis()
    }
}

impl<S: Store> Daemon<S> {
    /// A seat says it goes on (`SeatLink::stamp`); the daemon of a store of one has no
    /// owner to tell.
    pub(super) fn stamp(&self) {
        if let Some(link) = &self.seat {
            link.stamp();
        }
    }

    /// Stops a seat whose partition another daemon holds now, writing nothing: its
    /// commands go on (their supervisors are not its children to stop), their results
    /// reach no one here, and the core's leases decide what becomes of their runs.
    pub(super) fn lost(&mut self) -> Stopped {
        warn!(
            partition = %self.partition,
            process = %self.incarnation.process(),
            runs = self.incarnation.len(),
            "partition lost to another daemon: stopped without writing; its runs are left to their leases"
        );
        Stopped::Lost
    }
}

/// A seat as its owner keeps it: the link, and the thread (joined once it has ended).
pub(super) struct Seat {
    pub(super) link: SeatLink,
    thread: Option<JoinHandle<Stopped>>,
    ended: Option<Stopped>,
}

impl Seat {
    /// Starts the seat's thread: opens its store handle (`open`), holds the partition
    /// under `holder` (the owner's lease), starts the incarnation `process` there and
    /// runs until drained, lost or interrupted. A seat
    /// that cannot start (the store unreachable, the lease already lost) ends at once, and
    /// its owner hands the partition back or finds it lost.
    pub(super) fn spawn<S, F>(
        open: F,
        setup: Setup,
        partition: Partition,
        process: ProcessId,
        holder: Holder,
    ) -> std::io::Result<Seat>
    where
        S: Store + 'static,
        F: FnOnce() -> Result<S, StoreError> + Send + 'static,
    {
        let link = SeatLink::default();
        link.stamp();
        let theirs = link.clone();
        let thread = std::thread::Builder::new()
            .name(format!("seat-{partition}"))
            .spawn(move || {
                let started = open().and_then(|mut store| {
                    store.hold(partition, holder)?;
                    Daemon::seated(store, setup, partition, process, theirs)
                });
                match started {
                    Ok(mut daemon) => daemon.run(),
                    Err(e) if e.is_fenced() => {
                        warn!(%partition, "partition lost to another daemon before its seat had started: stopped without writing");
                        Stopped::Lost
                    }
                    Err(e) => {
                        error!(%partition, "the seat did not start: {e}");
                        Stopped::Lost
                    }
                }
            })?;
        Ok(Seat {
            link,
            thread: Some(thread),
            ended: None,
        })
    }

    /// Whether the owner should renew the seat's lease: it runs, and it stamped within
    /// `limit`.
    pub(super) fn goes_on(&self, limit: Duration) -> bool {
        self.ended.is_none()
            && self.thread.as_ref().is_some_and(|t| !t.is_finished())
            && self.link.stamped_within(limit)
    }

    /// How the seat ended, once it has (its thread joined); `None` while it runs.
    pub(super) fn ended(&mut self) -> Option<&Stopped> {
        if self.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            self.join();
        }
        self.ended.as_ref()
    }

    /// Waits for the seat's thread to end; how it ended (a thread that panicked counts as
    /// lost: it wrote nothing after the panic).
    pub(super) fn join(&mut self) -> &Stopped {
        if let Some(thread) = self.thread.take() {
            self.ended = Some(thread.join().unwrap_or(Stopped::Lost));
        }
        self.ended.get_or_insert(Stopped::Lost)
    }
}
