//! The daemon: one incarnation of a host process. It makes the store's jobs match the jobs
//! file (upserting each definition, removing the jobs the file no longer has), says it
//! started, adopts or reports what its predecessors left running, then loops: collect
//! finished runs, tick when the tick interval or the store's next wake says so, carry out
//! the effects, log the commands people sent, prune old run directories, sleep. A turn's
//! reports and its tick commit together, as one batch (`duetime_loop::Batch`: group
//! commit, one fsync for many events); every other event is a transaction of its own, and
//! effects are carried out only after their commit.
//!
//! Signals: SIGTERM (or a first SIGINT) drains: no new claims, the incarnation exits when
//! its own runs have ended. A second SIGINT stops at once and leaves the children running,
//! for the next incarnation to adopt. SIGHUP rereads the jobs file (`reload.rs`).

mod clock;
mod partitioned;
mod people;
pub mod preflight;
mod reload;
mod runs;
mod seat;

use duetime::Notice;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::Instant;

use duetime::{Action, Actor, Alert, Effect, Entry, Event, History, ProcessId, RunId};
use duetime_loop::{Batch, Incarnation, Order, Partition, BATCH_MAX};
use tracing::{debug, info, warn};

pub use clock::{backoff, install_signal_handlers, signalled, Clock};
pub use partitioned::{partition_runs, pool_wait, Opener, Partitioned};
use seat::SeatLink;

use crate::alerts::{Courier, Route};
use crate::jobs_file::HostJob;
use crate::runner::Runs;
use crate::store::{DaemonInfo, Store, StoreError};
use crate::telemetry::Telemetry;

/// How often a daemon holding runs looks for their results; also the longest sleep, so a
/// signal or another process's change is noticed within it.
const POLL: std::time::Duration = std::time::Duration::from_millis(200);
const IDLE_POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// Who the jobs file's definitions and removals are recorded as.
pub const JOBS_FILE_ACTOR: &str = "jobs-file";
/// A measurement knob, not a setting: the most events one batch holds (1 to
/// `duetime_loop::BATCH_MAX`, the default). `DUETIME_BATCH_MAX=1` turns group commit off,
/// one event per transaction as before it, so benches/README.md can compare the two on one
/// build. Undocumented for users on purpose: nothing but a measurement has a reason to
/// commit less per fsync.
const BATCH_MAX_ENV: &str = "DUETIME_BATCH_MAX";

/// What a daemon is started with, beside its store.
#[derive(Clone)]
pub struct Setup {
    pub runs: Runs,
    /// The jobs file's jobs, in file order.
    pub jobs: Vec<HostJob>,
    /// The jobs file, as the daemon's start line and `duetime status` name it.
    pub jobs_file: PathBuf,
    /// The binary to run as each run's supervisor (this one).
    pub exe: PathBuf,
    /// How many reported run directories to keep per job.
    pub keep_runs: usize,
    /// This process's counters (`GET /metrics`).
    pub telemetry: Telemetry,
    /// The jobs file's `[alerts]`: where alerts go unless a job says otherwise.
    pub alerts: Option<Route>,
    /// The alerts' delivery thread, when one is shared: a daemon of several partitions
    /// starts one and hands it to every seat (one thread, not one per partition held).
    /// `None`: the daemon starts its own when its alerts go somewhere.
    pub courier: Option<Courier>,
}

/// Why a daemon stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    Drained,
    Interrupted,
    /// A seat's partition is held by another daemon now (its writes were fenced, or its
    /// owner found it lost): it stopped without writing, its runs left to the leases.
    Lost,
}

pub struct Daemon<S: Store> {
    store: S,
    /// The partition it steps: 0 in a store of one; in a store of several, the seat's
    /// (`Partitioned` runs one `Daemon` per partition it holds, each on a thread and a
    /// store handle of its own, every write fenced by the partition's lease).
    partition: Partition,
    /// How its owner tells a seat to leave or that its partition is lost; `None` for the
    /// daemon of a store of one, which answers signals itself.
    seat: Option<SeatLink>,
    runs: Runs,
    /// The jobs file's jobs by name: what this daemon agrees to run (`runs.rs`).
    jobs: BTreeMap<String, HostJob>,
    /// The jobs file, reread on SIGHUP (`reload.rs`).
    jobs_file: PathBuf,
    clock: Clock,
    /// The runs this incarnation holds and whether it drains (`duetime_loop`, the turn
    /// every host shares).
    incarnation: Incarnation,
    /// The supervisors this incarnation started, to reap them (an adopted run's
    /// supervisor is not its child).
    supervisors: BTreeMap<RunId, Child>,
    exe: PathBuf,
    last_tick: Option<Instant>,
    tick: std::time::Duration,
    /// The store's lease: a tick renews this process's runs at least every third of it.
    lease: std::time::Duration,
    keep_runs: usize,
    /// The last journal line looked at for people's commands (`people.rs`).
    journal_seen: i64,
    /// Events that effects asked for (a run that could not even start reports at once).
    follow_ups: Vec<Event>,
    /// The most events one batch holds (`BATCH_MAX_ENV`).
    batch_max: usize,
    telemetry: Telemetry,
    /// The jobs file's `[alerts]`.
    alert_route: Option<Route>,
    /// The delivery thread's queue, when any job's alerts go anywhere.
    courier: Option<Courier>,
}

impl<S: Store> Daemon<S> {
    /// Makes the store's jobs those of the file, starts a new incarnation and takes over
    /// what earlier ones left behind.
    pub fn start(mut store: S, setup: Setup) -> Result<Daemon<S>, StoreError> {
        let clock = Clock::default();
        let effects = sync_jobs(&mut store, &setup.jobs, &clock)?;
        log_sync(&effects);
        warn_unknown_commands(&mut store, Partition::FIRST)?;
        let process = store.next_process_id()?;
        let journal_seen = store.journal_end()?;
        let info = DaemonInfo::of_this_process(process, &setup.jobs_file, setup.runs.root());
        store.register_daemon(&info)?;
        let tick = store.state()?.config().tick;
        info!(
            process = %process,
            pid = info.pid,
            store = store.describe(),
            tick = %tick,
            runs = %setup.runs.root().display(),
            jobs = setup.jobs.len(),
            jobs_file = %setup.jobs_file.display(),
            keep_runs = setup.keep_runs,
            "started"
        );
        let mut daemon = Daemon::assemble(store, setup, Partition::FIRST, process, None)?;
        daemon.journal_seen = journal_seen;
        daemon.telemetry.set_process(process);
        daemon.begin()?;
        Ok(daemon)
    }

    /// A seat: the incarnation `process` in partition `partition` of a store of several,
    /// which `Partitioned` has claimed (and whose lease `store` holds, so every write is
    /// fenced). The jobs file was made the store's by the owner; a seat only starts up
    /// there (adopting what earlier incarnations of this machine left in the partition's
    /// runs directory) and steps it.
    fn seated(
        store: S,
        setup: Setup,
        partition: Partition,
        process: ProcessId,
        link: SeatLink,
    ) -> Result<Daemon<S>, StoreError> {
        let mut daemon = Daemon::assemble(store, setup, partition, process, Some(link))?;
        // Ticks renew the partition's lease: at least three a lease.
        daemon.tick = daemon.tick.min(daemon.lease / 3);
        info!(%partition, process = %process, "seat started");
        daemon.begin()?;
        Ok(daemon)
    }

    /// The daemon's parts, nothing stored yet.
    fn assemble(
        mut store: S,
        setup: Setup,
        partition: Partition,
        process: ProcessId,
        seat: Option<SeatLink>,
    ) -> Result<Daemon<S>, StoreError> {
        let (tick, lease) = {
            let config = store.state_in(partition)?.config();
            (config.tick, config.lease_ttl)
        };
        let courier = courier_for(&setup);
        Ok(Daemon {
            store,
            partition,
            seat,
            runs: setup.runs,
            jobs: setup
                .jobs
                .into_iter()
                .map(|j| (j.def.name.to_string(), j))
                .collect(),
            jobs_file: setup.jobs_file.clone(),
            clock: Clock::default(),
            incarnation: Incarnation::new(process),
            supervisors: BTreeMap::new(),
            exe: setup.exe,
            last_tick: None,
            tick: std::time::Duration::from_millis(tick.as_millis()),
            lease: std::time::Duration::from_millis(lease.as_millis()),
            keep_runs: setup.keep_runs,
            journal_seen: 0,
            follow_ups: Vec::new(),
            batch_max: batch_max(),
            telemetry: setup.telemetry,
            alert_route: setup.alerts,
            courier,
        })
    }

    /// Start-up (adoption, then `ProcessStarted`), the first tick's clock, the first prune.
    fn begin(&mut self) -> Result<(), StoreError> {
        self.start_up()?;
        self.last_tick = Some(Instant::now());
        self.prune();
        Ok(())
    }

    pub fn process(&self) -> ProcessId {
        self.incarnation.process()
    }

    /// One event, one transaction; then its effects.
    fn apply(&mut self, event: Event) -> Result<Vec<Effect>, StoreError> {
        let now = self.clock.now();
        let effects = self.store.apply_in(self.partition, now, event)?;
        self.stamp();
        self.telemetry.events_committed(1);
        self.carry_out(&effects);
        self.follow_up()?;
        Ok(effects)
    }

    /// The reports of runs that could not even start (`launch`), each a transaction of its
    /// own, and what they in turn ask.
    fn follow_up(&mut self) -> Result<(), StoreError> {
        while let Some(e) = self.follow_ups.pop() {
            let now = self.clock.now();
            let more = self.store.apply_in(self.partition, now, e)?;
            self.stamp();
            self.telemetry.events_committed(1);
            self.carry_out(&more);
        }
        Ok(())
    }

    /// One batch, one transaction (group commit): every event stepped on one reading of the
    /// clocks, so a body the store runs again does the same work. Only after the commit are
    /// its reports settled here (`Incarnation::committed`) and its effects carried out, in
    /// order; a batch that failed changed nothing, and its reports go in next turn's batch.
    fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
        let now = self.clock.now();
        let events = batch.events();
        let effects = self
            .store
            .transact_in(self.partition, &mut |state, effects| {
                for e in events {
                    state.step(now, e.clone(), effects);
                }
                Ok(())
            })?;
        self.stamp();
        self.telemetry.events_committed(events.len() as u64);
        if batch.ticks() {
            self.last_tick = Some(Instant::now());
        }
        self.incarnation.committed(batch);
        for &(run, _) in batch.reports() {
            if let Some(mut child) = self.supervisors.remove(&run) {
                let _ = child.wait();
            }
            let _ = self.runs.mark_reported(run, "reported");
        }
        self.carry_out(&effects);
        self.follow_up()
    }

    fn carry_out(&mut self, effects: &[Effect]) {
        for e in effects {
            match self.incarnation.take(e) {
                Some(Order::Launch { run, job, .. }) => {
                    info!(%run, %job, "{e}");
                    if let Effect::Do(Action::Start(start)) = e {
                        self.launch(start);
                    }
                    continue;
                }
                Some(Order::Stop {
                    run,
                    job,
                    reason,
                    held,
                }) => {
                    self.stop(run, &job, reason, held);
                    continue;
                }
                None => {}
            }
            match e {
                // A run logs two lines at INFO: its START and its settling (`history …
                // settled … ok`); its start's history line and its `ran` ledger line say
                // the same again, at DEBUG.
                Effect::Journal(r)
                    if matches!(
                        r.entry,
                        Entry::History(History::Started { .. })
                            | Entry::Ledger(duetime::LedgerEntry {
                                kind: duetime::LedgerKind::Ran { .. },
                                ..
                            })
                    ) =>
                {
                    debug!(job = %r.job, "{e}");
                }
                Effect::Journal(r) => info!(job = %r.job, "{e}"),
                Effect::Notice(Notice::Alert(a)) => self.alert(a, e),
                Effect::Notice(Notice::ClockGap { process, .. })
                    if *process == self.incarnation.process() =>
                {
                    warn!("{e}")
                }
                // Who owns the store (single_owner) and drains: a line each, so a log shows
                // which incarnation was deciding when.
                Effect::Notice(Notice::Owner { .. })
                | Effect::Notice(Notice::OwnerReleased { .. }) => info!("{e}"),
                // The daemon exits when its own runs have ended (`run`), which it knows first
                // hand; the core's word is logged beside it.
                Effect::Notice(Notice::Drained { process })
                    if *process == self.incarnation.process() =>
                {
                    info!("{e}")
                }
                _ => {}
            }
        }
    }

    /// An alert the core decided to tell, after its transaction committed: logged,
    /// counted, and handed to the delivery thread (which never blocks this loop).
    fn alert(&mut self, alert: &Alert, effect: &Effect) {
        warn!(job = %alert.job, "{effect}");
        let kind = crate::http::tally::tag_of(&alert.kind, "alert");
        self.telemetry.alert_told(alert.job.as_str(), &kind);
        let route = match self.jobs.get(alert.job.as_str()) {
            Some(job) => job.route(self.alert_route.as_ref()),
            None => self.alert_route.as_ref(),
        };
        if let (Some(courier), Some(route)) = (&self.courier, route.filter(|r| r.sends())) {
            courier.send(alert, route);
        }
    }

    /// Commits the turn's batches (the reports of the runs that ended, and the tick when
    /// the interval or `next_wake` says so), then logs people's commands, prunes.
    /// Returns how long to sleep before the next turn.
    ///
    /// A batch is one transaction of at most `batch_max` events, its tick last; a turn
    /// with more reports than fit commits several, and each after the first ticks again
    /// when a third of a lease has passed since the last tick (`renew_due`), so reporting
    /// many results on a slow store never outlasts the leases of the runs still going. A
    /// batch that failed ends the turn (nothing it held committed; the next turn, after a
    /// short backoff, sends it again).
    pub fn turn(&mut self) -> Result<std::time::Duration, StoreError> {
        if signalled() || self.seat.as_ref().is_some_and(SeatLink::is_leaving) {
            self.drain()?;
        }
        let now = self.clock.now();
        let wake = self
            .store
            .state_in(self.partition)?
            .next_wake_for(self.incarnation.process());
        let tick_due = self.last_tick.is_none_or(|t| t.elapsed() >= self.tick);
        let wake_due = self.incarnation.work_due(wake, now.wall);
        if self.collect(tick_due || wake_due)? > 0 {
            self.prune();
        }
        // People's commands are logged once per daemon, by the owner of a store of
        // several partitions rather than by each seat.
        if self.seat.is_none() {
            self.log_people()?;
        }
        self.sleep_time()
    }

    /// Whether the leases of the runs held want a tick before the next batch commits: a
    /// third of a lease since the last tick.
    fn renew_due(&self) -> bool {
        let since = self
            .last_tick
            .map_or(std::time::Duration::ZERO, |t| t.elapsed());
        let since = duetime::Duration::from_millis(since.as_millis() as u64);
        let lease = duetime::Duration::from_millis(self.lease.as_millis() as u64);
        self.incarnation.renew_due(since, lease)
    }

    /// Until the next tick or wake, at most a poll.
    fn sleep_time(&mut self) -> Result<std::time::Duration, StoreError> {
        let until_tick = self
            .tick
            .saturating_sub(self.last_tick.map_or(self.tick, |t| t.elapsed()));
        let until_wake = match self
            .store
            .state_in(self.partition)?
            .next_wake_for(self.incarnation.process())
        {
            Some(w) if !self.incarnation.is_draining() => {
                let ms = w
                    .as_millis()
                    .saturating_sub(self.clock.now().wall.as_millis());
                std::time::Duration::from_millis(ms.max(0) as u64)
            }
            _ => until_tick,
        };
        let poll = if self.incarnation.is_empty() {
            IDLE_POLL
        } else {
            POLL
        };
        Ok(until_tick.min(until_wake).min(poll))
    }

    /// Removes the run directories beyond the newest `keep_runs` of each job (never one
    /// not yet reported): at start and whenever runs were reported, so the directories
    /// read stay few. Routine (after nearly every run), so its line is debug.
    fn prune(&mut self) {
        let removed = self.runs.prune(self.keep_runs);
        if removed > 0 {
            tracing::debug!(removed, keep = self.keep_runs, "pruned old run directories");
        }
    }

    fn drain(&mut self) -> Result<(), StoreError> {
        if let Some(drain) = self.incarnation.drain() {
            info!(process = %self.incarnation.process(), runs = self.incarnation.len(), "draining");
            self.apply(drain)?;
            self.incarnation.drain_committed();
        }
        Ok(())
    }

    /// Runs until drained (every own run ended) or interrupted twice.
    pub fn run(&mut self) -> Stopped {
        let mut failures = 0u32;
        loop {
            if clock::ints() >= 2 {
                info!(process = %self.incarnation.process(), runs = self.incarnation.len(), "interrupted: leaving runs to the next incarnation");
                return Stopped::Interrupted;
            }
            self.stamp();
            match &self.seat {
                None => self.reload_if_asked(),
                Some(link) if link.is_lost() => return self.lost(),
                Some(link) => {
                    if let Some((file, courier)) = link.take_jobs() {
                        // The owner's delivery thread, if alerts now go somewhere: taken
                        // before the file, so the seat starts no thread of its own.
                        if self.courier.is_none() {
                            self.courier = courier;
                        }
                        self.take_jobs(file);
                    }
                }
            }
            let sleep = match self.turn() {
                Ok(d) => {
                    self.telemetry.turned();
                    if failures > 0 {
                        info!(failures, "store reachable again");
                        failures = 0;
                    }
                    d
                }
                Err(e) if e.is_fenced() => return self.lost(),
                Err(e) => {
                    // A locked or unreachable store: nothing was changed; try again,
                    // less often the longer it lasts. Runs go on meanwhile; their leases
                    // lapse if it lasts past them, and the core accounts for that.
                    if failures.is_multiple_of(10) {
                        warn!(failures, "store: {e}; retrying");
                    }
                    failures += 1;
                    backoff(failures)
                }
            };
            if self.incarnation.is_drained() {
                info!(process = %self.incarnation.process(), "drained");
                return Stopped::Drained;
            }
            std::thread::sleep(sleep.max(std::time::Duration::from_millis(10)));
        }
    }
}

/// The delivery thread, when any of the jobs' alerts (or the file's) go anywhere: the
/// shared one `setup` carries, else one started here.
fn courier_for(setup: &Setup) -> Option<Courier> {
    if let Some(shared) = &setup.courier {
        return Some(shared.clone());
    }
    let sends = setup.alerts.as_ref().is_some_and(Route::sends)
        || setup
            .jobs
            .iter()
            .any(|j| j.alerts.as_ref().is_some_and(Route::sends));
    match sends.then(|| Courier::start(setup.telemetry.clone())) {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            warn!("alerts: the delivery thread did not start ({e}); alerts are only logged");
            None
        }
        None => None,
    }
}

/// The most events one batch holds: `BATCH_MAX_ENV` when it is a number from 1 to
/// `BATCH_MAX`, else `BATCH_MAX` (a value it cannot take is warned about and left out).
fn batch_max() -> usize {
    let Ok(text) = std::env::var(BATCH_MAX_ENV) else {
        return BATCH_MAX;
    };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=BATCH_MAX).contains(&n) => {
            info!(batch_max = n, "{BATCH_MAX_ENV}: a measurement knob");
            n
        }
        _ => {
            warn!("{BATCH_MAX_ENV}={text}: not a number from 1 to {BATCH_MAX}; left out");
            BATCH_MAX
        }
    }
}

/// Makes the store's jobs the file's: every definition upserted, every job the file no
/// longer has removed (its owed and unsettled due times recorded `missed (removed)`), both
/// as `jobs-file`, each in its job's partition (`parts::sync`: one transaction in a store
/// of one). The file is the truth for the store: a job left out of it would otherwise be
/// claimed by daemons that have no command for it.
fn sync_jobs<S: Store>(
    store: &mut S,
    jobs: &[HostJob],
    clock: &Clock,
) -> Result<Vec<Effect>, StoreError> {
    let defs: Vec<duetime::JobDef> = jobs.iter().map(|j| j.def.clone()).collect();
    let actor = Actor::new(JOBS_FILE_ACTOR);
    crate::store::parts::sync(store, &defs, &actor, clock.now())
}

/// A warning for each job whose definition in force names no command: confirmed before
/// confirmations covered what runs (a store from before), its runs fail (`not started`)
/// until a person confirms the held definition, which names one. Running the jobs file's
/// command instead would run what nobody confirmed.
fn warn_unknown_commands<S: Store>(store: &mut S, p: Partition) -> Result<(), StoreError> {
    for (_, record) in store.state_in(p)?.records() {
        if record.def().payload.is_none() {
            warn!(
                job = %record.def().name,
                "the definition in force was confirmed before confirmations covered the command; \
                 its runs fail until `duetime confirm` of the held definition (`duetime show` prints it)"
            );
        }
    }
    Ok(())
}

/// A warning for each definition the core refused and each job removed.
fn log_sync(effects: &[Effect]) {
    for e in effects {
        match e {
            Effect::Reply { result: Err(_), .. } => warn!("definition refused: {e}"),
            Effect::Journal(r) if matches!(r.entry, Entry::History(History::Removed { .. })) => {
                warn!(job = %r.job, "not in the jobs file: removed from the store");
            }
            _ => {}
        }
    }
}
