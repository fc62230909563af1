//! The daemon: one incarnation of a host process. It upserts the jobs file's definitions,
//! says it started, adopts or reports what its predecessors left running, then loops:
//! collect finished runs, tick when the tick interval or the store's next wake says so,
//! carry out the effects, sleep. Every event is one store transaction, and effects are
//! carried out only after the commit.
//!
//! Signals: SIGTERM (or a first SIGINT) drains: no new claims, the incarnation exits when
//! its own runs have ended. A second SIGINT stops at once and leaves the children running,
//! for the next incarnation to adopt.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use duetime::{
    Actor, CancelReason, Effect, Entry, Event, Fence, Held, History, JobName, Now, Outcome,
    ProcessId, RunId, Timestamp,
};
use tracing::{error, info, warn};

use crate::jobs_file::HostJob;
use crate::runner::{RunFile, RunState, Runs};
use crate::store::{Store, StoreError};

/// How long a cancelled run gets after SIGTERM before SIGKILL.
const KILL_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// How often a daemon holding runs looks for their results; also the longest sleep, so a
/// signal or another process's change is noticed within it.
const POLL: std::time::Duration = std::time::Duration::from_millis(200);
const IDLE_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The wall clock and a monotonic clock, read together for every event.
pub struct Clock {
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            start: Instant::now(),
        }
    }
}

impl Clock {
    pub fn now(&self) -> Now {
        let wall = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
        };
        // CLOCK_MONOTONIC (what `Instant` reads on Linux): it stands still while the machine
        // sleeps; CLOCK_BOOTTIME counts the sleep. Together they tell the core a machine that
        // slept from a wall clock that was set forward (see `duetime::Now`).
        let mono = i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (wall, mono) = (Timestamp::from_millis(wall), Timestamp::from_millis(mono));
        match boot_millis() {
            Some(boot) => Now::with_boot(wall, mono, Timestamp::from_millis(boot)),
            None => Now::new(wall, mono),
        }
    }
}

/// CLOCK_BOOTTIME in milliseconds, where the system has it.
#[cfg(target_os = "linux")]
fn boot_millis() -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    (rc == 0).then(|| ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000)
}

#[cfg(not(target_os = "linux"))]
fn boot_millis() -> Option<i64> {
    None
}

/// Signals received, counted by the handler (the only thing it does).
static TERMS: AtomicUsize = AtomicUsize::new(0);
static INTS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_term(_: libc::c_int) {
    TERMS.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn on_int(_: libc::c_int) {
    INTS.fetch_add(1, Ordering::SeqCst);
}

/// Whether SIGTERM or SIGINT has arrived.
pub fn signalled() -> bool {
    TERMS.load(Ordering::SeqCst) > 0 || INTS.load(Ordering::SeqCst) > 0
}

/// How long to wait after `failures` failures in a row to reach the store: from the poll
/// interval, doubling, up to 5 s, so an outage is neither hammered nor slept through.
pub fn backoff(failures: u32) -> std::time::Duration {
    POLL.saturating_mul(1 << failures.min(5))
        .min(std::time::Duration::from_secs(5))
}

/// Installs the SIGTERM and SIGINT handlers.
pub fn install_signal_handlers() {
    // SAFETY: the handlers only touch atomics, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_term as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGINT,
            on_int as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
    }
}

/// A run this incarnation carries out.
struct Holding {
    job: String,
    fence: Fence,
    /// The supervisor, when this incarnation started it (to reap it).
    supervisor: Option<Child>,
    cancel: Option<Cancelling>,
}

struct Cancelling {
    reason: CancelReason,
    since: Instant,
    killed: bool,
}

/// Why a daemon stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    Drained,
    Interrupted,
}

pub struct Daemon<S: Store> {
    store: S,
    runs: Runs,
    jobs: BTreeMap<String, HostJob>,
    process: ProcessId,
    clock: Clock,
    held: BTreeMap<RunId, Holding>,
    /// The binary to run as each run's supervisor (this one).
    exe: PathBuf,
    draining: bool,
    last_tick: Option<Instant>,
    tick: std::time::Duration,
    /// Events that effects asked for (a run that could not even start reports at once).
    follow_ups: Vec<Event>,
}

impl<S: Store> Daemon<S> {
    /// Upserts the definitions, starts a new incarnation and takes over what earlier ones
    /// left behind.
    pub fn start(
        mut store: S,
        runs: Runs,
        jobs: Vec<HostJob>,
        exe: PathBuf,
    ) -> Result<Daemon<S>, StoreError> {
        let clock = Clock::default();
        let tick_ms = store.state()?.config().tick.as_millis();
        let mut defs: Vec<Event> = jobs
            .iter()
            .map(|j| Event::Upsert {
                def: Box::new(j.def.clone()),
                actor: Actor::new("jobs-file"),
            })
            .collect();
        let now = clock.now();
        let effects = store.transact(&mut |state, effects| {
            for e in defs.drain(..) {
                state.step(now, e, effects);
            }
            Ok(())
        })?;
        for e in &effects {
            if let Effect::Reply { result: Err(_), .. } = e {
                warn!("definition refused: {e}");
            }
        }
        let in_file: std::collections::BTreeSet<&str> =
            jobs.iter().map(|j| j.def.name.as_str()).collect();
        let known: Vec<String> = store
            .state()?
            .records()
            .map(|(_, r)| r.def.name.to_string())
            .filter(|name| !in_file.contains(name.as_str()))
            .collect();
        for name in known {
            warn!(job = %name, "in the store but not in the jobs file: this daemon cannot run it");
        }
        let process = store.next_process_id()?;
        let mut daemon = Daemon {
            store,
            runs,
            jobs: jobs
                .into_iter()
                .map(|j| (j.def.name.to_string(), j))
                .collect(),
            process,
            clock,
            held: BTreeMap::new(),
            exe,
            draining: false,
            last_tick: None,
            tick: std::time::Duration::from_millis(tick_ms),
            follow_ups: Vec::new(),
        };
        info!(process = %process, "started");
        // Before `ProcessStarted`: its tick would find the runs' leases lapsed (nobody
        // renewed them while no daemon ran) and record them lost.
        daemon.take_over()?;
        daemon.apply(Event::ProcessStarted { process })?;
        daemon.last_tick = Some(Instant::now());
        Ok(daemon)
    }

    pub fn process(&self) -> ProcessId {
        self.process
    }

    /// Runs of earlier incarnations: adopted if still going, reported if they ended, let go
    /// (their lease lapses, the core records them lost) if nobody knows how they ended.
    fn take_over(&mut self) -> Result<(), StoreError> {
        for file in self.runs.unreported() {
            if file.process == self.process.0 {
                continue;
            }
            let (run, fence) = (file.id(), file.fence());
            match self.runs.state(run) {
                RunState::Running => {
                    let effects = self.apply(Event::Adopt {
                        process: self.process,
                        run,
                        fence,
                    })?;
                    let refused = effects
                        .iter()
                        .any(|e| matches!(e, Effect::Cancel { run: r, .. } if *r == run));
                    if refused {
                        // The core has settled or lost it meanwhile: stop the command.
                        let _ = self.runs.signal(run, libc::SIGTERM);
                        let _ = self.runs.mark_reported(run, "cancelled: no longer open");
                        warn!(%run, job = %file.job, "not adopted (no longer open); stopped");
                    } else {
                        let _ = self.runs.set_process(run, self.process);
                        info!(%run, job = %file.job, "adopted");
                        self.held.insert(
                            run,
                            Holding {
                                job: file.job.clone(),
                                fence,
                                supervisor: None,
                                cancel: None,
                            },
                        );
                    }
                }
                RunState::Exited(exit) => {
                    let outcome = exit.outcome(false);
                    self.report(&file, outcome)?;
                }
                RunState::Vanished => {
                    warn!(%run, job = %file.job, "its supervisor is gone and left no result; the lease will lapse");
                    let _ = self.runs.mark_reported(run, "vanished");
                }
            }
        }
        Ok(())
    }

    fn report(&mut self, file: &RunFile, outcome: Outcome) -> Result<(), StoreError> {
        let run = file.id();
        info!(%run, job = %file.job, %outcome, "finished");
        self.apply(Event::RunFinished {
            process: self.process,
            job: file.job.clone(),
            run,
            fence: file.fence(),
            outcome,
        })?;
        let _ = self.runs.mark_reported(run, "reported");
        Ok(())
    }

    /// One event, one transaction; then its effects.
    fn apply(&mut self, event: Event) -> Result<Vec<Effect>, StoreError> {
        let now = self.clock.now();
        let effects = self.store.apply(now, event)?;
        self.carry_out(&effects);
        while let Some(e) = self.follow_ups.pop() {
            let now = self.clock.now();
            let more = self.store.apply(now, e)?;
            self.carry_out(&more);
        }
        Ok(effects)
    }

    fn carry_out(&mut self, effects: &[Effect]) {
        for e in effects {
            match e {
                Effect::Start {
                    run,
                    job,
                    fence,
                    process,
                    ..
                } if *process == self.process => {
                    info!(%run, %job, "{e}");
                    self.launch(*run, job, *fence);
                }
                Effect::Cancel {
                    run,
                    process,
                    reason,
                    ..
                } if *process == self.process => self.cancel(*run, *reason),
                Effect::Record(r)
                    if !matches!(r.entry, Entry::History(History::Started { .. })) =>
                {
                    info!(job = %r.job, "{e}");
                }
                Effect::Alert(a) => warn!(job = %a.job, "{e}"),
                Effect::ClockGap { process, .. } if *process == self.process => warn!("{e}"),
                // Who owns the store (single_owner) and drains: a line each, so a log shows
                // which incarnation was deciding when.
                Effect::Owner { .. } | Effect::OwnerReleased { .. } => info!("{e}"),
                // The daemon exits when its own runs have ended (`run`), which it knows first
                // hand; the core's word is logged beside it.
                Effect::Drained { process } if *process == self.process => info!("{e}"),
                _ => {}
            }
        }
    }

    fn launch(&mut self, run: RunId, job: &JobName, fence: Fence) {
        let Some(host_job) = self.jobs.get(job.as_str()) else {
            error!(%run, %job, "no command for this job in the jobs file; reported failed");
            self.follow_ups.push(Event::RunFinished {
                process: self.process,
                job: job.to_string(),
                run,
                fence,
                outcome: Outcome::failed("no command in this daemon's jobs file"),
            });
            return;
        };
        let file = RunFile {
            run: run.0,
            fence: fence.0,
            job: job.to_string(),
            process: self.process.0,
            argv: host_job.command.argv.clone(),
            workdir: host_job.command.workdir.clone(),
            env: host_job.command.env.clone(),
        };
        match self.runs.start(&self.exe, &file) {
            Ok(child) => {
                self.held.insert(
                    run,
                    Holding {
                        job: job.to_string(),
                        fence,
                        supervisor: Some(child),
                        cancel: None,
                    },
                );
            }
            Err(e) => {
                error!(%run, %job, "could not start the supervisor: {e}");
                let _ = self.runs.mark_reported(run, "not started");
                self.follow_ups.push(Event::RunFinished {
                    process: self.process,
                    job: job.to_string(),
                    run,
                    fence,
                    outcome: Outcome::failed(&format!("not started: {e}")),
                });
            }
        }
    }

    fn cancel(&mut self, run: RunId, reason: CancelReason) {
        let Some(h) = self.held.get_mut(&run) else {
            return;
        };
        info!(%run, job = %h.job, ?reason, "cancel");
        let _ = self.runs.signal(run, libc::SIGTERM);
        if reason == CancelReason::LeaseLost {
            // The run is no longer ours (lost, or taken over): its result would be stale.
            let _ = self.runs.mark_reported(run, "cancelled: lease lost");
            if let Some(mut h) = self.held.remove(&run) {
                if let Some(child) = h.supervisor.as_mut() {
                    let _ = child.try_wait();
                }
            }
            return;
        }
        h.cancel = Some(Cancelling {
            reason,
            since: Instant::now(),
            killed: false,
        });
    }

    /// Collects finished runs, escalates cancels, ticks when due. Returns how long to
    /// sleep before the next turn.
    pub fn turn(&mut self) -> Result<std::time::Duration, StoreError> {
        if TERMS.load(Ordering::SeqCst) > 0 || INTS.load(Ordering::SeqCst) > 0 {
            self.drain()?;
        }
        let ids: Vec<RunId> = self.held.keys().copied().collect();
        for run in ids {
            match self.runs.state(run) {
                RunState::Running => {
                    let h = self.held.get_mut(&run).expect("listed above");
                    if let Some(c) = &mut h.cancel {
                        if !c.killed && c.since.elapsed() >= KILL_AFTER {
                            let _ = self.runs.signal(run, libc::SIGKILL);
                            c.killed = true;
                        }
                    }
                }
                RunState::Exited(exit) => {
                    let mut h = self.held.remove(&run).expect("listed above");
                    if let Some(child) = h.supervisor.as_mut() {
                        let _ = child.wait();
                    }
                    let timed_out = h
                        .cancel
                        .as_ref()
                        .is_some_and(|c| c.reason == CancelReason::Timeout);
                    let file = RunFile {
                        run: run.0,
                        fence: h.fence.0,
                        job: h.job.clone(),
                        process: self.process.0,
                        argv: Vec::new(),
                        workdir: None,
                        env: BTreeMap::new(),
                    };
                    if let Err(e) = self.report(&file, exit.outcome(timed_out)) {
                        // The result stays in its exit file: try again next turn.
                        warn!(%run, "could not report yet: {e}");
                        self.held.insert(run, h);
                    }
                }
                RunState::Vanished => {
                    warn!(%run, "its supervisor vanished without a result; the lease will lapse");
                    let _ = self.runs.mark_reported(run, "vanished");
                    self.held.remove(&run);
                }
            }
        }
        let now = self.clock.now();
        let wake = self.store.state()?.next_wake_for(self.process);
        let tick_due = self.last_tick.is_none_or(|t| t.elapsed() >= self.tick);
        let wake_due = !self.draining && wake.is_some_and(|w| w <= now.wall);
        if tick_due || wake_due {
            let held: Vec<Held> = self
                .held
                .iter()
                .map(|(&run, h)| Held {
                    run,
                    fence: h.fence,
                })
                .collect();
            self.apply(Event::Tick {
                process: self.process,
                held,
            })?;
            self.last_tick = Some(Instant::now());
        }
        let until_tick = self
            .tick
            .saturating_sub(self.last_tick.map_or(self.tick, |t| t.elapsed()));
        let until_wake = match self.store.state()?.next_wake_for(self.process) {
            Some(w) if !self.draining => {
                let ms = w
                    .as_millis()
                    .saturating_sub(self.clock.now().wall.as_millis());
                std::time::Duration::from_millis(ms.max(0) as u64)
            }
            _ => until_tick,
        };
        let poll = if self.held.is_empty() {
            IDLE_POLL
        } else {
            POLL
        };
        Ok(until_tick.min(until_wake).min(poll))
    }

    fn drain(&mut self) -> Result<(), StoreError> {
        if !self.draining {
            info!(process = %self.process, runs = self.held.len(), "draining");
            self.apply(Event::ProcessDraining {
                process: self.process,
            })?;
            self.draining = true;
        }
        Ok(())
    }

    /// Runs until drained (every own run ended) or interrupted twice.
    pub fn run(&mut self) -> Stopped {
        let mut failures = 0u32;
        loop {
            if INTS.load(Ordering::SeqCst) >= 2 {
                info!(process = %self.process, runs = self.held.len(), "interrupted: leaving runs to the next incarnation");
                return Stopped::Interrupted;
            }
            let sleep = match self.turn() {
                Ok(d) => {
                    if failures > 0 {
                        info!(failures, "store reachable again");
                        failures = 0;
                    }
                    d
                }
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
            if self.draining && self.held.is_empty() {
                info!(process = %self.process, "drained");
                return Stopped::Drained;
            }
            std::thread::sleep(sleep.max(std::time::Duration::from_millis(10)));
        }
    }
}
