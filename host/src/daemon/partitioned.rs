//! The daemon of a store of several partitions (PostgreSQL, docs/scale-out.md): it makes
//! the store's jobs the file's, then loops in rounds. Each round it beats its heart in the
//! store (`Store::beat`, which reads back every lease and every live daemon), asks its
//! `duetime_loop::Ownership` what to do (the same machine the simulator's partition worlds
//! drive) and does it:
//!
//! - **claim** a partition the assignment gives it: the lease taken under a raised epoch,
//!   then a **seat** started there (`seat.rs`: a `Daemon` on a thread and a store handle
//!   of its own, every write fenced by the lease, its runs in `RUNS/p<N>/`; on PostgreSQL
//!   its connection borrowed from the daemon's pool for each transaction);
//! - **leave** one the assignment now gives another live daemon: its seat drains (no new
//!   claims; its runs end and are reported), then the lease is **released**;
//! - **lost**: the store shows another owner or epoch: the seat stops without writing.
//!
//! Before each round it renews, on its own connection, the leases of the seats that go on
//! (`renew_seats`), so a seat waiting for a pooled connection keeps its partition. Then it
//! carries out the pending moves of jobs in the partitions it holds, and logs
//! people's commands. SIGTERM: every seat drains, every partition is handed back, then it
//! exits; a second SIGINT stops every seat at once, leaving runs to the next owner.
//! SIGHUP: the jobs file is read and checked again, made the store's, and given to every
//! seat.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use duetime::{Actor, ProcessId};
use duetime_loop::{owner_round, OwnerIo, Ownership, Partition, Roster};
use tracing::{debug, info, warn};

use super::seat::Seat;
use super::{clock, preflight, Clock, Setup, Stopped, JOBS_FILE_ACTOR};
use crate::jobs_file::{self, JobsFile};
use crate::runner::Runs;
use crate::store::{parts, DaemonInfo, Holder, Store, StoreError};

/// The most partitions a daemon leaves in one round to rebalance: a daemon joining takes
/// its share a few at a time rather than stopping them all at once.
const MAX_MOVES: usize = 4;

/// How long a seat waits for one of the connections its daemon's seats share before its
/// turn fails (`StoreError::Busy`, tried again after a backoff): a sixth of a lease, at
/// most five seconds (the store's busy timeout). Short against the lease, so a seat that
/// waits and fails still stamps (`SeatLink::stamp`) well within the lease, and the owner
/// keeps renewing it.
pub fn pool_wait(lease: duetime::Duration) -> StdDuration {
    StdDuration::from_millis(lease.as_millis() / 6)
        .clamp(StdDuration::from_millis(100), StdDuration::from_secs(5))
}

/// How a daemon opens another handle on its store (one per seat).
pub type Opener<S> = Arc<dyn Fn() -> Result<S, StoreError> + Send + Sync>;

/// The owner of the partitions one daemon holds.
pub struct Partitioned<S: Store> {
    /// The owner's own handle: heartbeats, claims, releases, moves, people's commands.
    store: S,
    open: Opener<S>,
    me: ProcessId,
    own: Ownership,
    seats: BTreeMap<Partition, Seat>,
    /// Seats told their partition is lost, until their threads end.
    gone: Vec<Seat>,
    /// What each seat is started with (its runs directory is a partition's under it).
    setup: Setup,
    /// A partition's lease: the core's run lease, so a daemon that died lets go of its
    /// partitions as soon as of its runs.
    lease: duetime::Duration,
    /// Between rounds: a tick, at most a third of a lease.
    round: StdDuration,
    clock: Clock,
    journal_seen: i64,
}

impl<S: Store + 'static> Partitioned<S> {
    /// Makes the store's jobs those of the file (each in its partition), says who this
    /// daemon is, and is ready for its first round. `open` makes the seats' handles.
    pub fn start(mut store: S, mut setup: Setup, open: Opener<S>) -> Result<Self, StoreError> {
        let clock = Clock::default();
        let effects = super::sync_jobs(&mut store, &setup.jobs, &clock)?;
        super::log_sync(&effects);
        for p in store.partitions().iter() {
            super::warn_unknown_commands(&mut store, p)?;
        }
        let me = store.next_process_id()?;
        let journal_seen = store.journal_end()?;
        let info = DaemonInfo::of_this_process(me, &setup.jobs_file, setup.runs.root());
        store.register_daemon(&info)?;
        let config = *store.state_in(Partition::FIRST)?.config();
        let (tick, lease) = (config.tick, config.lease_ttl);
        let round = StdDuration::from_millis(tick.as_millis().min(lease.as_millis() / 3));
        info!(
            process = %me,
            pid = info.pid,
            store = store.describe(),
            partitions = store.partitions().get(),
            tick = %tick,
            lease = %lease,
            runs = %setup.runs.root().display(),
            jobs = setup.jobs.len(),
            jobs_file = %setup.jobs_file.display(),
            "started"
        );
        setup.telemetry.set_process(me);
        // One delivery thread for every seat's alerts (a thread a partition held was 64
        // threads at 64 partitions).
        setup.courier = super::courier_for(&setup);
        Ok(Partitioned {
            own: Ownership::new(me, store.partitions(), MAX_MOVES),
            store,
            open,
            me,
            seats: BTreeMap::new(),
            gone: Vec::new(),
            setup,
            lease,
            round,
            clock,
            journal_seen,
        })
    }

    /// Rounds until every partition is handed back after SIGTERM, or a second SIGINT.
    pub fn run(&mut self) -> Stopped {
        let mut failures = 0u32;
        loop {
            if clock::ints() >= 2 {
                return self.interrupted();
            }
            if super::signalled() && !self.own.is_stopping() {
                info!(process = %self.me, partitions = self.seats.len(), "stopping: every partition drains, then is handed back");
                self.own.stop();
            }
            self.reload_if_asked();
            let sleep = match self.turn() {
                Ok(()) => {
                    if failures > 0 {
                        info!(failures, "store reachable again");
                    }
                    failures = 0;
                    self.round
                }
                Err(e) => {
                    if failures.is_multiple_of(10) {
                        warn!(failures, "store: {e}; retrying (the seats go on meanwhile)");
                    }
                    failures += 1;
                    super::backoff(failures).min(self.round)
                }
            };
            if self.own.is_done() {
                for seat in &mut self.gone {
                    seat.join();
                }
                info!(process = %self.me, "drained: every partition handed back");
                return Stopped::Drained;
            }
            std::thread::sleep(sleep);
        }
    }

    /// A second SIGINT: every seat stops at once (each sees the signal itself).
    fn interrupted(&mut self) -> Stopped {
        for seat in self.seats.values_mut().chain(self.gone.iter_mut()) {
            seat.join();
        }
        info!(process = %self.me, "interrupted: partitions left to their leases");
        Stopped::Interrupted
    }

    /// One round: the owner's round (`duetime_loop::owner_round`: the heartbeat, seats that
    /// ended unasked handed back, the steps ownership asks for), then the moves owed and
    /// people's commands.
    fn turn(&mut self) -> Result<(), StoreError> {
        self.gone.retain_mut(|s| s.ended().is_none());
        self.renew_seats();
        let mut io = Owner {
            store: &mut self.store,
            open: &self.open,
            me: self.me,
            lease: self.lease,
            setup: &self.setup,
            seats: &mut self.seats,
            gone: &mut self.gone,
        };
        owner_round(&mut self.own, &mut io)?;
        self.carry_out_moves();
        super::people::log_people_in(&mut self.store, &mut self.journal_seen)
    }

    /// Renews, on the owner's own connection, the lease of every partition whose seat goes
    /// on (it runs and stamped within a lease: `Seat::goes_on`). A seat renews its lease
    /// with each write, but writes only once it has one of the connections the seats share
    /// (`PgPool`); this keeps a seat waiting for one from losing its partition, however
    /// many seats wait. A seat stuck for good stamps no more, so it is renewed for at most
    /// a lease after its last stamp, its lease ends at most two leases after it, and the
    /// partition is found lost and claimed again with a new seat, as before. A
    /// renewal that fails is tried next round (the seats' own writes renew meanwhile).
    fn renew_seats(&mut self) {
        let limit = StdDuration::from_millis(self.lease.as_millis());
        let held: Vec<(Partition, u64)> = self
            .own
            .held()
            .filter(|(p, _, _)| self.seats.get(p).is_some_and(|s| s.goes_on(limit)))
            .map(|(p, e, _)| (p, e))
            .collect();
        if held.is_empty() {
            return;
        }
        match self.store.renew(self.me, &held, self.lease) {
            Ok(renewed) => debug!(
                held = held.len(),
                renewed = renewed.len(),
                "renewed the leases of the seats that go on (the others were being written)"
            ),
            Err(e) => warn!("renewing the seats' leases: {e}; tried again next round"),
        }
    }

    /// The partitions this daemon steps (not those it is leaving), with their epochs.
    fn stepping(&self) -> Vec<(Partition, u64)> {
        self.own
            .held()
            .filter(|&(_, _, phase)| phase == duetime_loop::Phase::Stepping)
            .map(|(p, e, _)| (p, e))
            .collect()
    }

    /// The pending moves of jobs in partitions this daemon steps, now that their runs may
    /// have settled (`parts::carry_out_pending`). A move that fails is tried next round.
    fn carry_out_moves(&mut self) {
        // One read of the (nearly always empty) table a round, rather than one for each
        // partition held.
        match self.store.pending_moves() {
            Ok(pending) if pending.is_empty() => return,
            Ok(_) => {}
            Err(e) => {
                warn!("pending moves: {e}; tried again next round");
                return;
            }
        }
        let now = self.clock.now();
        for (p, _) in self.stepping() {
            match parts::carry_out_pending(&mut self.store, p, now) {
                Ok(carried) => {
                    for c in carried {
                        info!(partition = %p, "pending move: {c:?}");
                    }
                }
                Err(e) => warn!(partition = %p, "pending moves: {e}; tried again next round"),
            }
        }
    }

    /// SIGHUP: the file read and checked again, made the store's (each job in its
    /// partition), then given to every seat. A file with an error changes nothing.
    fn reload_if_asked(&mut self) {
        if !clock::take_hup() {
            return;
        }
        info!(jobs_file = %self.setup.jobs_file.display(), "SIGHUP: reloading the jobs file");
        match self.reload() {
            Ok(jobs) => {
                self.setup.jobs = jobs.jobs.clone();
                self.setup.alerts = jobs.alerts.clone();
                if self.setup.courier.is_none() {
                    self.setup.courier = super::courier_for(&self.setup);
                }
                for seat in self.seats.values() {
                    seat.link
                        .send_jobs(jobs.clone(), self.setup.courier.clone());
                }
                info!(jobs = jobs.jobs.len(), "reloaded the jobs file");
            }
            Err(errors) => {
                for e in &errors {
                    warn!("reload: {e}");
                }
                warn!("reload refused: the definitions in force are kept; fix the file and send HUP again");
            }
        }
    }

    fn reload(&mut self) -> Result<JobsFile, Vec<String>> {
        let one = |e: StoreError| vec![e.to_string()];
        let config = *self.store.state_in(Partition::FIRST).map_err(one)?.config();
        let file = jobs_file::load_with(&self.setup.jobs_file, &config)
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let refusals =
            preflight::refusals(&self.setup.jobs_file, &file, self.setup.runs.root(), None);
        if !refusals.is_empty() {
            return Err(refusals);
        }
        let defs: Vec<duetime::JobDef> = file.jobs.iter().map(|j| j.def.clone()).collect();
        let actor = Actor::new(JOBS_FILE_ACTOR);
        let effects = parts::sync(&mut self.store, &defs, &actor, self.clock.now()).map_err(one)?;
        super::log_sync(&effects);
        Ok(file)
    }
}

/// Where the runs of partition `p` are kept under a daemon's runs directory.
pub fn partition_runs(root: &std::path::Path, p: Partition) -> std::path::PathBuf {
    root.join(format!("p{}", p.0))
}

/// The daemon's side of its owner round: its own store handle for the heartbeat, claims
/// and releases, and a seat (a thread with a store handle of its own) per partition.
struct Owner<'a, S: Store> {
    store: &'a mut S,
    open: &'a Opener<S>,
    me: ProcessId,
    lease: duetime::Duration,
    setup: &'a Setup,
    seats: &'a mut BTreeMap<Partition, Seat>,
    gone: &'a mut Vec<Seat>,
}

impl<S: Store + 'static> OwnerIo for Owner<'_, S> {
    type Error = StoreError;

    fn beat(&mut self, stopping: bool) -> Result<Roster, StoreError> {
        self.store.beat(self.me, stopping, self.lease)
    }

    fn ended_unasked(&mut self, partition: Partition) -> bool {
        let unasked = self
            .seats
            .get_mut(&partition)
            .and_then(|s| s.ended().map(|e| *e != Stopped::Drained))
            .unwrap_or(false);
        if unasked {
            warn!(%partition, "its seat ended unasked: handing the partition back");
        }
        unasked
    }

    fn drained(&mut self, partition: Partition) -> bool {
        self.seats
            .get_mut(&partition)
            .is_none_or(|s| matches!(s.ended(), Some(Stopped::Drained)))
    }

    fn claim(&mut self, partition: Partition, seen: u64) -> Result<Option<u64>, StoreError> {
        self.store.claim(partition, self.me, seen, self.lease)
    }

    /// A seat under the new epoch, with a fresh process id of the store's.
    fn seat(&mut self, partition: Partition, epoch: u64) -> bool {
        let holder = Holder {
            owner: self.me,
            epoch,
            ttl: self.lease,
        };
        let spawned = self
            .store
            .next_process_id()
            .map_err(|e| e.to_string())
            .and_then(|process| {
                let setup = seat_setup(self.setup, partition).map_err(|e| e.to_string())?;
                let open = Arc::clone(self.open);
                Seat::spawn(move || open(), setup, partition, process, holder)
                    .map(|seat| (process, seat))
                    .map_err(|e| e.to_string())
            });
        match spawned {
            Ok((process, seat)) => {
                info!(%partition, epoch, seat = %process, "claimed");
                self.seats.insert(partition, seat);
                true
            }
            Err(e) => {
                warn!(%partition, "claimed, but its seat did not start ({e}): handed back");
                false
            }
        }
    }

    fn release(&mut self, partition: Partition, epoch: u64) -> Result<bool, StoreError> {
        let released = self.store.release(partition, self.me, epoch)?;
        if released {
            info!(%partition, epoch, "handed back");
        }
        Ok(released)
    }

    fn leave(&mut self, partition: Partition) {
        info!(%partition, "leaving: the partition goes to another daemon once its runs end");
        if let Some(seat) = self.seats.get(&partition) {
            seat.link.leave();
        }
    }

    fn unseat(&mut self, partition: Partition) {
        if let Some(mut seat) = self.seats.remove(&partition) {
            seat.join();
        }
    }

    fn lost(&mut self, partition: Partition) {
        warn!(%partition, "lost: the store shows another owner or epoch");
        if let Some(seat) = self.seats.remove(&partition) {
            seat.link.lose();
            self.gone.push(seat);
        }
    }
}

/// A seat's setup: this daemon's, with the partition's own runs directory (run ids are a
/// partition's counters, so each partition keeps its runs apart).
fn seat_setup(setup: &Setup, partition: Partition) -> std::io::Result<Setup> {
    let mut setup = setup.clone();
    setup.runs = Runs::open(partition_runs(setup.runs.root(), partition))?;
    Ok(setup)
}
