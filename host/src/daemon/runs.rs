//! The daemon's runs: taking over what earlier incarnations left, launching a `Start`,
//! asking a run's supervisor to stop it, and reporting how runs ended.

use duetime::{CancelReason, Fence, JobName, RunId, Start};
use duetime_loop::{LeftRun, Started, Startup};
use tracing::{debug, error, info, warn};

use super::Daemon;
use crate::command::Command;
use crate::runner::{kill_grace, RunContext, RunFile, RunState, TriggerName};
use crate::store::{Store, StoreError};

impl<S: Store> Daemon<S> {
    /// Starts this incarnation in the one order of start-up (`duetime_loop::Startup`): the
    /// runs earlier incarnations left are reported if they ended and adopted if still
    /// going, then `ProcessStarted`. A run nobody knows how ended is let go (its lease
    /// lapses, and the core records it lost).
    pub(super) fn start_up(&mut self) -> Result<(), StoreError> {
        let left = self.left_runs();
        let mut startup = Startup::new(self.incarnation.process(), left);
        while let Some(event) = startup.next_event() {
            let effects = self.apply(event)?;
            match startup.committed(&effects) {
                Some(Started::Adopted { run, job, fence }) => self.adopted(run, job, fence),
                Some(Started::NotAdopted { run, job }) => {
                    // The core has settled, lost or removed it meanwhile: stop the command.
                    let _ = self.runs.request_stop(run, "no longer open");
                    let _ = self.runs.signal(run, libc::SIGTERM);
                    let _ = self.runs.mark_reported(run, "cancelled: no longer open");
                    warn!(%run, %job, "not adopted (no longer open); stopped");
                }
                Some(Started::Reported { run }) => {
                    let _ = self.runs.mark_reported(run, "reported");
                }
                Some(Started::Registered) | None => {}
            }
        }
        Ok(())
    }

    /// The runs earlier incarnations left in the runs directory, as start-up takes them:
    /// going (adopt) or ended (report). Files that name no valid job, or whose supervisor
    /// vanished without a result, are marked and left out.
    fn left_runs(&mut self) -> Vec<LeftRun> {
        let mut left = Vec::new();
        for file in self.runs.unreported() {
            if file.process == self.incarnation.process().0 {
                continue;
            }
            let (run, fence) = (file.id(), file.fence());
            let Ok(job) = JobName::new(&file.job) else {
                // Not a run file this host wrote (no job has such a name): nothing to
                // adopt or report; if the run was real, its lease lapses.
                warn!(%run, job = %file.job, "its run file names no valid job; let go");
                let _ = self.runs.mark_reported(run, "not a valid job name");
                continue;
            };
            match self.runs.state(run) {
                RunState::Running => left.push(LeftRun::Going { run, job, fence }),
                RunState::Exited(exit) => {
                    let outcome = exit.outcome(false);
                    debug!(%run, job = %file.job, %outcome, "finished");
                    left.push(LeftRun::Ended {
                        run,
                        job,
                        fence,
                        outcome,
                    });
                }
                RunState::Vanished => {
                    warn!(%run, job = %file.job, "its supervisor is gone and left no result; the lease will lapse");
                    let _ = self.runs.mark_reported(run, "vanished");
                }
            }
        }
        left
    }

    fn adopted(&mut self, run: RunId, job: JobName, fence: Fence) {
        let _ = self.runs.set_process(run, self.incarnation.process());
        info!(%run, %job, "adopted");
        self.incarnation.adopt(run, job, fence);
    }

    /// Carries out a `Start` for this process: the run's directory and its supervisor.
    pub(super) fn launch(&mut self, start: &Start) {
        let Start {
            run,
            job,
            fence,
            attempt,
            trigger,
            covers,
            late,
            deadline,
            ..
        } = start;
        let (run, fence) = (*run, *fence);
        let command = match self.command_in_force(job.as_str()) {
            Ok(c) => c,
            Err(why) => {
                error!(%run, %job, "not started: {why}");
                self.follow_ups
                    .extend(self.incarnation.not_started(run, &why));
                return;
            }
        };
        let trigger = TriggerName::of(*trigger, *late);
        let file = RunFile {
            run: run.0,
            fence: fence.0,
            job: job.to_string(),
            process: self.incarnation.process().0,
            argv: command.argv,
            workdir: command.workdir,
            env: command.env,
            env_file: command.env_file,
            user: command.user,
            group: command.group,
            deadline_ms: Some(deadline.as_millis()),
            kill_grace_ms: Some(kill_grace(self.core_tick()).as_millis() as u64),
            context: Some(RunContext::new(job, run, trigger, *attempt, *covers)),
        };
        match self.runs.start(&self.exe, &file) {
            Ok(child) => {
                self.supervisors.insert(run, child);
            }
            Err(e) => {
                error!(%run, %job, "could not start the supervisor: {e}");
                let _ = self.runs.mark_reported(run, "not started");
                let why = e.to_string();
                self.follow_ups
                    .extend(self.incarnation.not_started(run, &why));
            }
        }
    }

    /// What the definition in force in the store runs: a held change (the jobs file's
    /// newer command, waiting for `duetime confirm`) never runs before its confirmation.
    /// And only a command this daemon's jobs file agrees to: the file's own, or, for a job
    /// the file says requires confirmation, the confirmed one. So whoever can write the
    /// store alone cannot make this daemon run a command its file never named.
    ///
    /// The definition is read from the state the start was just committed in, which the
    /// store handle holds in memory (`Store::held_state_in`): the one in force when the
    /// core decided the start, with no second trip to the store.
    fn command_in_force(&self, job: &str) -> Result<Command, String> {
        let Some(file_job) = self.jobs.get(job) else {
            return Err("not in the jobs file of the daemon that claimed it".into());
        };
        let (own, guarded) = (&file_job.command, file_job.def.requires_confirmation);
        let state = self
            .store
            .held_state_in(self.partition)
            .map_err(|e| e.to_string())?;
        let def = state
            .seq_of_name(job)
            .and_then(|seq| state.record(seq))
            .map(|r| r.def())
            .ok_or_else(|| format!("no job named {job} in the store"))?;
        let in_force = Command::of(def).map_err(|e| e.to_string())?;
        if in_force == *own || guarded {
            return Ok(in_force);
        }
        Err(
            "the store's command for this job is not this daemon's jobs file's (every daemon \
             sharing a store must read the same file)"
                .into(),
        )
    }

    fn core_tick(&self) -> duetime::Duration {
        duetime::Duration::from_millis(self.tick.as_millis() as u64)
    }

    /// Asks the run's supervisor to stop its command. A run let go (its lease was lost)
    /// is no longer ours: its result would be stale, so it is marked reported here while
    /// the supervisor still stops it; one still held (a timeout, its job removed) is
    /// reported when its command has ended.
    pub(super) fn stop(&mut self, run: RunId, job: &JobName, reason: CancelReason, held: bool) {
        let why = reason.name();
        info!(%run, %job, reason = why, "cancel");
        let _ = self.runs.request_stop(run, why);
        // At once as well, for a supervisor of an older build that knows no cancel file.
        let _ = self.runs.signal(run, libc::SIGTERM);
        if !held {
            let _ = self.runs.mark_reported(run, "cancelled: lease lost");
            if let Some(mut child) = self.supervisors.remove(&run) {
                let _ = child.try_wait();
            }
        }
    }

    /// Reports every held run that has ended, and ticks when `tick`, in batches (group
    /// commit: `Daemon::commit`); lets go of a run whose supervisor vanished. Returns how
    /// many runs were reported.
    pub(super) fn collect(&mut self, tick: bool) -> Result<usize, StoreError> {
        let mut ended = Vec::new();
        let held: Vec<(RunId, bool)> = self
            .incarnation
            .held()
            .map(|(run, h)| (run, h.stopping == Some(CancelReason::Timeout)))
            .collect();
        for (run, timed_out) in held {
            match self.runs.state(run) {
                RunState::Running => {}
                RunState::Exited(exit) => {
                    let outcome = exit.outcome(timed_out);
                    debug!(%run, %outcome, "finished");
                    ended.push((run, outcome));
                }
                RunState::Vanished => {
                    warn!(%run, "its supervisor vanished without a result; the lease will lapse");
                    let _ = self.runs.mark_reported(run, "vanished");
                    self.incarnation.let_go(run);
                    self.supervisors.remove(&run);
                }
            }
        }
        let (mut tick, mut reported) = (tick, 0);
        loop {
            // (The runs a batch settled are no longer held: the next leaves them out.)
            let batch = self
                .incarnation
                .batch(ended.iter().cloned(), tick, self.batch_max);
            if batch.is_empty() {
                return Ok(reported);
            }
            if reported > 0 && batch.ticks() {
                info!(process = %self.incarnation.process(), runs = self.incarnation.len(), "a long turn: leases renewed between batches");
            }
            if let Err(e) = self.commit(&batch) {
                // The results stay in their exit files and the runs held: next turn.
                if !batch.reports().is_empty() {
                    warn!(runs = batch.reports().len(), "could not report yet: {e}");
                }
                return Err(e);
            }
            reported += batch.reports().len();
            tick = self.renew_due();
        }
    }
}
