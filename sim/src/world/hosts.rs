//! The world's hosts: each process's turn (its tick, slow turns, its runs' results), its
//! start-up, crashes, stalls, drains and restarts, and the runs it carries out. A process's
//! runs and drain are a `duetime_loop::Incarnation`, its start-up a
//! `duetime_loop::Startup`, its reports and tick committed together as a
//! `duetime_loop::Batch` (group commit): the daemon's own code; what is here is the world's
//! I/O.

use super::*;
use crate::check::Probe;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HostState {
    Up,
    Down,
    Stalled,
}

pub(super) struct Host {
    pub(super) state: HostState,
    /// The incarnation up (or last up): the runs it holds and whether it drains
    /// (`duetime_loop::Incarnation`, the daemon's own turn).
    pub(super) inc: Incarnation,
    pub(super) clock: Clock,
    /// Runs of crashed incarnations whose children still run: the next incarnation may
    /// adopt them.
    pub(super) orphans: BTreeMap<RunId, Holding>,
    /// Runs of crashed incarnations whose children ended and left their result where the
    /// next incarnation finds it (a host that knows how to take over, `adopt`), as the
    /// daemon's run directories do: it reports them at start-up.
    pub(super) ended: Vec<(RunId, JobName, Fence, Outcome)>,
    /// Results that came in while stalled, sent on waking.
    pub(super) queued: Vec<(RunId, JobName, Fence, Outcome)>,
    /// Results whose batch aborted or whose answer was lost: the run stays held (its lease
    /// renewed) and the report goes in the next turn's batch (`tick_action`), as the
    /// daemon's next turn does.
    pub(super) unreported: BTreeMap<RunId, (JobName, Fence, Outcome)>,
    /// Runs whose report committed with its answer lost: sent again, the report must be
    /// answered as stale (`report_batch`).
    pub(super) unheard: std::collections::BTreeSet<RunId>,
    /// Invalidates scheduled ticks of an earlier incarnation or before a stall.
    pub(super) epoch: u64,
    /// True time of this incarnation's next heartbeat: a tick sent whatever the store says,
    /// to renew its leases and show its clocks. Wakes before it only peek at the store.
    pub(super) beat_at: i64,
    /// This incarnation's start-up (`duetime_loop::Startup`, the daemon's own order) until
    /// its `ProcessStarted` commits; a step whose transaction failed is tried again at the
    /// next tick.
    pub(super) startup: Option<Startup>,
    /// True time of this process's last transaction.
    pub(super) shown_at: i64,
    /// True time of the one tick of this incarnation that counts (`epoch` names it).
    pub(super) wake_at: i64,
    /// That tick, waiting beside the queue rather than in it: `(time, order, epoch)`. A
    /// process re-plans its wake often (every commit that brings the store's next wake
    /// closer); a new plan replaces the old one here instead of leaving it in the queue to
    /// be popped and ignored.
    pub(super) tick: Option<(i64, u64, u64)>,
    /// Its turns that failed in a row (an aborted tick): the next comes after
    /// `duetime_loop::backoff` of them.
    pub(super) failures: u32,
    /// Crashes left in a crash loop: each restart is followed by a crash within seconds.
    pub(super) crash_loop: u32,
    /// True time until which its turns are slow (`FaultMode::Overload`), and until which
    /// the turn going on now lasts: it ticked at the turn's start, reports what ended at
    /// its end, and ticks again no sooner.
    pub(super) overloaded_until: i64,
    pub(super) busy_until: i64,
}

impl Host {
    /// A host whose process has not started yet.
    pub(super) fn down(clock: Clock) -> Host {
        Host {
            crash_loop: 0,
            failures: 0,
            state: HostState::Down,
            inc: Incarnation::new(ProcessId(0)),
            clock,
            orphans: BTreeMap::new(),
            ended: Vec::new(),
            queued: Vec::new(),
            unreported: BTreeMap::new(),
            unheard: std::collections::BTreeSet::new(),
            epoch: 0,
            beat_at: i64::MIN,
            startup: None,
            overloaded_until: i64::MIN,
            busy_until: i64::MIN,
            shown_at: i64::MIN,
            wake_at: i64::MAX,
            tick: None,
        }
    }
}

impl World {
    /// A host's tick: a drained incarnation exits, one never registered says its start again,
    /// one woken for nothing sleeps again, else it ticks.
    pub(super) fn tick_action(&mut self, host: usize, epoch: u64) {
        let h = &self.hosts[host];
        if h.state != HostState::Up || h.epoch != epoch {
            return;
        }
        if h.inc.is_drained() {
            // The drain is complete: this incarnation exits; its successor starts.
            *self.faults.entry("drain completed").or_default() += 1;
            self.hosts[host].state = HostState::Down;
            let t = self.t + self.rng.gen_range(1_000..120_000);
            self.at(t, Action::Restart { host });
            return;
        }
        if h.startup.is_some() {
            // A step of its start-up never committed (an aborted transaction, or its
            // answer lost): start-up goes on from there.
            self.start_up(host);
            self.schedule_tick(host);
            return;
        }
        if self.t < self.heartbeat(host) && !self.work_for(host) {
            // Woken for a due time another process has already taken (or one it
            // may not claim): like a real host after a cheap read of the store, it
            // sleeps again without a transaction.
            self.sleep(host);
            return;
        }
        // The turn's batch: the reports that did not commit before (sent again), then the
        // tick. As the daemon's turn, a batch that failed ends the turn, and the next
        // comes after a short backoff (`duetime_loop::backoff`), before anything slow.
        let unreported = &mut self.hosts[host].unreported;
        let again: Vec<_> = if unreported.is_empty() {
            Vec::new()
        } else {
            std::mem::take(unreported)
                .into_iter()
                .map(|(run, (job, fence, outcome))| (run, job, fence, outcome))
                .collect()
        };
        if self.report_batch(host, again, true) != Commit::Heard {
            return;
        }
        self.hosts[host].failures = 0;
        self.slow_turn(host);
        self.schedule_tick(host);
    }

    /// A turn of `host` that failed (its batch aborted, or its answer never came): the next
    /// comes after `duetime_loop::backoff`; a failed tick's turn then, a failed report's no
    /// later than its heartbeat.
    fn turn_failed(&mut self, host: usize, ticked: bool) {
        let h = &mut self.hosts[host];
        h.failures = h.failures.saturating_add(1);
        let retry = self.t + duetime_loop::backoff(h.failures).as_millis() as i64;
        h.beat_at = if ticked { retry } else { h.beat_at.min(retry) };
        self.sleep(host);
    }

    /// A batch of `host`'s incarnation (`Incarnation::batch`): the reports of `results` it
    /// holds, in run-id order, then its tick when `tick`, one transaction (several when
    /// more than `duetime_loop::BATCH_MAX`). Each result first meets the faults of delivery
    /// (sent late or again, a mixed-up fence before it); one for a run the incarnation no
    /// longer holds is sent alone, as a stale host would. Heard, the batch's runs are no
    /// longer held; aborted or unheard, they stay held and go in the next turn's batch.
    pub(super) fn report_batch(
        &mut self,
        host: usize,
        results: Vec<(RunId, JobName, Fence, Outcome)>,
        mut tick: bool,
    ) -> Commit {
        let process = self.hosts[host].inc.process();
        // The results of held runs, in the order they came (few: a vector, not a map).
        let mut kept: Vec<(RunId, (JobName, Fence, Outcome))> = Vec::new();
        for (run, job, fence, outcome) in results {
            if self.sent_late_or_again(Some(host), process, run, (&job, fence, &outcome)) {
                continue;
            }
            if self.streams.edges.gen_ratio(1, 32) {
                let now = self.clock_now(host);
                self.mixed_up_fence(Some(host), now, process, run, (&job, fence, &outcome));
            }
            if self.hosts[host]
                .inc
                .holding(run)
                .is_some_and(|h| h.fence == fence)
            {
                kept.push((run, (job, fence, outcome)));
            } else {
                self.send_alone(Some(host), process, run, (job, fence, outcome));
            }
        }
        loop {
            let inc = &self.hosts[host].inc;
            let ended = kept
                .iter()
                .map(|(run, (_, _, outcome))| (*run, outcome.clone()));
            let mut batch = inc.batch(ended, tick, duetime_loop::BATCH_MAX);
            if batch.is_empty() {
                return Commit::Heard;
            }
            let now = self.clock_now(host);
            let commit = self.transact_all(Some(host), now, batch.take_events());
            self.batch_probes(host, &batch, commit);
            let h = &mut self.hosts[host];
            if commit != Commit::Heard {
                if commit == Commit::Lost {
                    h.unheard
                        .extend(batch.reports().iter().map(|(run, _)| *run));
                }
                // Every result not committed, this batch's and those that did not fit in
                // it, waits for the next turn.
                h.unreported.extend(kept);
                self.turn_failed(host, tick);
                return commit;
            }
            h.inc.committed(&batch);
            if !h.unheard.is_empty() {
                for &(run, _) in batch.reports() {
                    h.unheard.remove(&run);
                }
            }
            kept.retain(|(run, _)| {
                batch
                    .reports()
                    .binary_search_by_key(run, |(r, _)| *r)
                    .is_err()
            });
            if kept.is_empty() {
                return Commit::Heard;
            }
            tick = false;
        }
    }

    /// The probes of a batch: several events in one commit, and a report sent again after
    /// its batch's answer was lost (which must have been answered as stale: S2 and S3
    /// hold it to settling nothing twice).
    fn batch_probes(&mut self, host: usize, batch: &duetime_loop::Batch, commit: Commit) {
        if commit == Commit::Heard && batch.reports().len() > 1 {
            self.probes.add(Probe::SeveralReportsCommittedInOneBatch, 1);
        }
        if commit == Commit::Lost && !batch.reports().is_empty() {
            self.probes
                .add(Probe::ABatchsAnswerLostItsReportsHeldToBeSentAgain, 1);
        }
        let h = &self.hosts[host];
        if batch
            .reports()
            .iter()
            .any(|(run, _)| h.unheard.contains(run))
        {
            self.probes
                .add(Probe::AReportSentAgainAfterItsBatchsAnswerWasLost, 1);
        }
    }

    /// A span of slow turns begins: for one to ten minutes, each turn of the host's
    /// process takes from a tick to `max_turn_ms` (`slow_turn`).
    pub(super) fn overload(&mut self, host: usize) {
        *self.faults.entry("overload").or_default() += 1;
        let span = self.streams.turns.gen_range(60_000..600_000);
        self.hosts[host].overloaded_until = self.t + span;
    }

    /// After a tick of an overloaded host: its turn goes on past the tick. Here the tick
    /// commits at the turn's start (renewing its leases before anything slow), and what
    /// ended meanwhile waits for the turn's end, reported there in one batch; so does the
    /// next tick.
    pub(super) fn slow_turn(&mut self, host: usize) {
        if self.t >= self.hosts[host].overloaded_until || self.healed {
            return;
        }
        let (lo, hi) = (
            self.cfg.tick_ms,
            self.cfg.faults.max_turn_ms.max(self.cfg.tick_ms + 1),
        );
        let turn = self.streams.turns.gen_range(lo..hi);
        self.hosts[host].busy_until = self.t + turn;
        self.probes.add(Probe::TurnSlowerThanTheTick, 1);
        if let Some(trace) = &mut self.trace {
            trace.push(format!("  (host {host}'s turn takes {turn} ms)"));
        }
        self.at(self.t + turn, Action::TurnEnds { host });
    }

    /// A slow turn ends: the results its process collected are reported.
    pub(super) fn turn_ends(&mut self, host: usize) {
        let h = &self.hosts[host];
        if h.state != HostState::Up || self.t < h.busy_until || h.queued.is_empty() {
            return;
        }
        self.probes.add(Probe::ResultsReportedAtASlowTurnsEnd, 1);
        let queued = std::mem::take(&mut self.hosts[host].queued);
        self.report_batch(host, queued, false);
    }

    /// A run's child finished: its result is sent by the incarnation holding it, queued while
    /// that one stalls, or, for an orphan, sometimes written by the child itself.
    pub(super) fn run_done(
        &mut self,
        host: usize,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    ) {
        let h = &mut self.hosts[host];
        // Held by the current incarnation: it started the run, or adopted it. It stays
        // held (its lease renewed) until its report commits.
        let ours = h.state != HostState::Down && h.inc.holding(run).is_some();
        if ours && h.state == HostState::Up && self.t >= h.busy_until {
            self.report_batch(host, vec![(run, job, fence, outcome)], false);
        } else if ours {
            if let Some(trace) = &mut self.trace {
                trace.push(format!(
                    "  ({run} ended while its process was busy or stalled)"
                ));
            }
            h.queued.push((run, job, fence, outcome));
        } else if h.orphans.remove(&run).is_some() || h.inc.process() != process {
            // Its process crashed and nobody adopted it; the child may still
            // write its result.
            if self
                .rng
                .gen_bool(self.cfg.faults.orphan_delivers.clamp(0.0, 1.0))
            {
                *self.faults.entry("orphan result delivered").or_default() += 1;
                self.send_orphan_result(process, run, job, fence, outcome);
            } else if self.cfg.faults.adopt && h.state == HostState::Down {
                // Left in its run directory for the next incarnation to report.
                h.ended.push((run, job, fence, outcome));
            }
        }
    }

    /// A new incarnation on a host that is down: it registers, adopts what it may, and ticks
    /// (again and again in a crash loop).
    pub(super) fn restart(&mut self, host: usize) {
        if self.hosts[host].state != HostState::Down {
            return;
        }
        let process = ProcessId(self.next_process);
        self.next_process += 1;
        let h = &mut self.hosts[host];
        // A process starts on a machine awake (one that crashed while its machine
        // slept would otherwise tick on a monotonic clock standing still).
        h.clock.wake(self.t);
        // A new incarnation reads its monotonic clock right (its host was fixed).
        h.clock.mono_unit = MonoUnit::Millis;
        h.state = HostState::Up;
        h.inc = Incarnation::new(process);
        h.failures = 0;
        h.epoch += 1;
        h.busy_until = i64::MIN;
        let left = self.left_runs(host);
        self.hosts[host].startup = Some(Startup::new(process, left));
        self.start_up(host);
        self.schedule_tick(host);
        if self.hosts[host].crash_loop > 0 {
            self.hosts[host].crash_loop -= 1;
            let t = self.t + self.rng.gen_range(1_000..20_000);
            self.at(t, Action::LoopCrash { host });
        }
    }

    /// A host stalls for seconds to minutes, or sleeps for longer (its monotonic clock
    /// standing still), and the next stall is drawn.
    pub(super) fn stall(&mut self, host: usize) {
        if self.hosts[host].state == HostState::Up {
            *self.faults.entry("stall").or_default() += 1;
            let long = self.rng.gen_bool(0.3);
            let d = if long {
                self.rng
                    .gen_range(60_000..self.cfg.faults.max_stall_ms.max(60_001))
            } else {
                self.rng.gen_range(1_000..120_000)
            };
            let h = &mut self.hosts[host];
            h.state = HostState::Stalled;
            h.epoch += 1;
            if long {
                // A laptop asleep: the monotonic clock stands still until it wakes.
                h.clock.fall_asleep(self.t);
            }
            self.at(self.t + d, Action::Wake { host });
        }
        self.again(self.cfg.faults.stall_per_hour, Action::Stall { host });
    }

    /// A stalled host wakes: what it queued is sent, and it sleeps until its next work.
    pub(super) fn wake(&mut self, host: usize) {
        if self.hosts[host].state != HostState::Stalled {
            return;
        }
        self.hosts[host].state = HostState::Up;
        let t = self.t;
        self.hosts[host].clock.wake(t);
        let queued = std::mem::take(&mut self.hosts[host].queued);
        self.report_batch(host, queued, false);
        self.hosts[host].beat_at = self.t;
        self.hosts[host].shown_at = i64::MIN;
        self.sleep(host);
    }

    /// What a new incarnation finds its predecessors left (when this world's hosts know
    /// how to take over: `adopt`): children still running, to adopt, and children that
    /// ended, to report.
    pub(super) fn left_runs(&mut self, host: usize) -> Vec<LeftRun> {
        if !self.cfg.faults.adopt {
            return Vec::new();
        }
        let h = &mut self.hosts[host];
        let going = h.orphans.iter().map(|(&run, held)| LeftRun::Going {
            run,
            job: held.job.clone(),
            fence: held.fence,
        });
        let ended = h
            .ended
            .drain(..)
            .map(|(run, job, fence, outcome)| LeftRun::Ended {
                run,
                job,
                fence,
                outcome,
            });
        going.chain(ended).collect()
    }

    /// Sends this incarnation's start-up, step by step in the daemon's order
    /// (`duetime_loop::Startup`), until `ProcessStarted` commits or a transaction fails
    /// (tried again at the next tick). An adopted run is held from then on; one the core
    /// no longer has open is answered with a cancel, and its child is left to its fate.
    pub(super) fn start_up(&mut self, host: usize) {
        while let Some(event) = self.hosts[host]
            .startup
            .as_ref()
            .and_then(Startup::next_event)
        {
            let now = self.clock_now(host);
            if let Event::Adopt {
                process,
                run,
                fence,
            } = event
            {
                self.adopt_wrong_fence(host, process, run, fence, now);
            }
            self.heard = Some(Vec::new());
            let committed = self.transact(Some(host), now, event);
            let heard = self.heard.take().filter(|_| committed && !self.lost_last);
            let Some(heard) = heard else {
                self.start_over(host);
                return;
            };
            let startup = self.hosts[host].startup.as_mut().expect("found above");
            let told = startup.committed(&heard);
            let h = &mut self.hosts[host];
            match told {
                Some(Started::Adopted { run, job, fence }) => {
                    h.orphans.remove(&run);
                    h.inc.adopt(run, job, fence);
                }
                Some(Started::Registered) => h.startup = None,
                Some(Started::NotAdopted { .. }) => {
                    self.probes.add(Probe::LeftRunNoLongerOpenAtStartUp, 1);
                }
                Some(Started::Reported { .. }) => {
                    self.probes.add(Probe::LeftRunReportedAtStartUp, 1);
                }
                None => {}
            }
        }
    }

    /// A start-up step failed (aborted, or its answer lost): as the daemon does, this
    /// incarnation gives up and a new one, with a fresh process id, starts up at the next
    /// tick from what is left. The runs it adopted go back among the orphans (their run
    /// directories name it, not the new one); the old id, if the store heard of it, falls
    /// silent and is forgotten after a day.
    pub(super) fn start_over(&mut self, host: usize) {
        self.probes
            .add(Probe::StartUpBegunAgainAsANewIncarnation, 1);
        let process = ProcessId(self.next_process);
        self.next_process += 1;
        let h = &mut self.hosts[host];
        let Some(old) = h.startup.take() else { return };
        h.orphans.extend(h.inc.take_all());
        h.inc = Incarnation::new(process);
        let ended = old
            .into_left()
            .into_iter()
            .filter(|l| matches!(l, LeftRun::Ended { .. }));
        let mut left: Vec<LeftRun> = ended.collect();
        left.extend(self.left_runs(host));
        self.hosts[host].startup = Some(Startup::new(process, left));
    }

    /// A host that mixed up its children (now and then): a run's id with a fence it never
    /// held, just before the real one (K1: it adopts nothing, and is told to cancel).
    pub(super) fn adopt_wrong_fence(
        &mut self,
        host: usize,
        process: ProcessId,
        run: RunId,
        fence: Fence,
        now: Now,
    ) {
        if !self.streams.edges.gen_ratio(1, 8) {
            return;
        }
        *self
            .faults
            .entry("adoption under a wrong fence")
            .or_default() += 1;
        let wrong = Fence(fence.0 ^ 1);
        let event = Event::Adopt {
            process,
            run,
            fence: wrong,
        };
        self.transact(Some(host), now, event);
    }

    /// A crash: the host's process stops talking; its children go on as orphans. A
    /// supervisor restarts it within seconds, or a person within the hour (within seconds
    /// in a crash loop).
    pub(super) fn crash(&mut self, host: usize) {
        if self.hosts[host].state == HostState::Down {
            return;
        }
        *self.faults.entry("crash").or_default() += 1;
        let looping = self.hosts[host].crash_loop > 0;
        let h = &mut self.hosts[host];
        h.state = HostState::Down;
        // Children outlive their process (a timed-out one was being killed); the results
        // queued while it stalled, or not yet reported, are in their run directories
        // (`take_over`'s hosts).
        let mut queued = std::mem::take(&mut h.queued);
        let unreported = std::mem::take(&mut h.unreported);
        h.unheard.clear();
        queued.extend(
            unreported
                .into_iter()
                .map(|(run, (job, fence, outcome))| (run, job, fence, outcome)),
        );
        for (run, ..) in &queued {
            h.inc.let_go(*run);
        }
        h.orphans.extend(h.inc.take_all());
        if self.cfg.faults.adopt {
            h.ended.extend(queued);
        }
        let down = if looping || self.rng.gen_bool(0.5) {
            self.rng.gen_range(1_000..30_000)
        } else {
            self.rng.gen_range(30_000..3_600_000)
        };
        let t = self.t + down;
        self.at(t, Action::Restart { host });
    }

    /// The host's process starts draining (an aborted transaction: it keeps working and
    /// drains later).
    pub(super) fn drain(&mut self, host: usize) {
        let h = &self.hosts[host];
        let Some(drain) = h.inc.drain().filter(|_| h.state == HostState::Up) else {
            return;
        };
        *self.faults.entry("drain").or_default() += 1;
        let process = h.inc.process();
        let now = self.clock_now(host);
        if self.transact(Some(host), now, drain) {
            self.hosts[host].inc.drain_committed();
            if self.cfg.late_draws && self.streams.again.gen_ratio(1, 3) {
                let t = self.t + self.streams.again.gen_range(1_000..600_000);
                self.at(t, Action::DrainAgain { host, process });
            }
        }
    }

    /// A process already draining asks to drain again: the store changes nothing and
    /// tells no second `drained` (D1).
    pub(super) fn drain_again(&mut self, host: usize, process: ProcessId) {
        let h = &self.hosts[host];
        if h.state == HostState::Up && h.inc.is_draining() && h.inc.process() == process {
            self.probes.add(Probe::DrainAskedAgain, 1);
            let now = self.clock_now(host);
            self.transact(Some(host), now, Event::ProcessDraining { process });
        }
    }

    /// After a tick: the next heartbeat is one interval away, and the process wakes sooner
    /// if the store says a tick can do something before then.
    pub(super) fn schedule_tick(&mut self, host: usize) {
        self.hosts[host].beat_at = self.t + self.cfg.tick_ms;
        self.sleep(host);
    }

    /// When this process must tick whatever the store says: every interval while it holds
    /// runs (their leases need renewing), and now and then when it holds none, so the core
    /// keeps seeing its clocks. Between heartbeats it sleeps until the store's next wake.
    pub(super) fn heartbeat(&self, host: usize) -> i64 {
        let h = &self.hosts[host];
        if h.inc.is_empty() && h.startup.is_none() && !h.inc.is_draining() {
            h.shown_at.saturating_add(SHOW_EVERY_MS)
        } else {
            h.beat_at
        }
    }

    /// When this process wakes next: its heartbeat or the store's next wake for it by its
    /// own wall clock, whichever comes first, at least a second away. A draining process
    /// claims nothing, so only its heartbeat matters; under `single_owner` a standby waits
    /// for the owner lease to lapse, and the owner also wakes to renew it.
    pub(super) fn wake_time(&self, host: usize) -> i64 {
        let mut t = self.heartbeat(host);
        if !self.hosts[host].inc.is_draining() {
            if let Some(w) = self.state.next_wake_for(self.hosts[host].inc.process()) {
                let wall = self.clock_now(host).wall.as_millis();
                let soon = w.as_millis().saturating_sub(wall).max(1_000);
                t = t.min(self.t.saturating_add(soon));
            }
        }
        t.max(self.t + 1).max(self.hosts[host].busy_until)
    }

    /// Sleeps until `wake_time`; a tick queued earlier for this process no longer counts.
    pub(super) fn sleep(&mut self, host: usize) {
        let t = self.wake_time(host);
        let h = &mut self.hosts[host];
        h.epoch += 1;
        h.wake_at = t;
        let epoch = h.epoch;
        let order = self.queue.order();
        self.hosts[host].tick = Some((t, order, epoch));
    }

    /// After a commit: a process asleep past the store's (new) next wake, or past a
    /// heartbeat it now owes, wakes sooner, as if it had read the store at its next poll.
    /// Idle processes thus cost nothing until something is due.
    pub(super) fn rouse(&mut self) {
        for host in 0..self.hosts.len() {
            if self.hosts[host].state == HostState::Up
                && self.wake_time(host) < self.hosts[host].wake_at
            {
                self.sleep(host);
            }
        }
    }

    /// Whether, by the store's next wake, a tick from this process now has anything to do.
    #[inline]
    pub(super) fn work_for(&self, host: usize) -> bool {
        let h = &self.hosts[host];
        // (A draining process claims nothing: no need to read the store's next wake.)
        !h.inc.is_draining()
            && h.inc.work_due(
                self.state.next_wake_for(h.inc.process()),
                self.clock_now(host).wall,
            )
    }

    /// A result written by a child on its own (its process gone): the faults of delivery,
    /// then its line alone.
    pub(super) fn send_orphan_result(
        &mut self,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    ) {
        if self.sent_late_or_again(None, process, run, (&job, fence, &outcome)) {
            return;
        }
        if self.streams.edges.gen_ratio(1, 32) {
            let now = Now::at(Timestamp::from_millis(self.t));
            self.mixed_up_fence(None, now, process, run, (&job, fence, &outcome));
        }
        self.send_alone(None, process, run, (job, fence, outcome));
    }

    /// A result in a transaction of its own: a child's on its own, or a host's for a run
    /// its incarnation no longer holds (a stale report, which settles nothing).
    fn send_alone(
        &mut self,
        host: Option<usize>,
        process: ProcessId,
        run: RunId,
        (job, fence, outcome): (JobName, Fence, Outcome),
    ) {
        let now = match host {
            Some(h) => self.clock_now(h),
            None => Now::at(Timestamp::from_millis(self.t)),
        };
        let event = Event::RunFinished {
            process,
            job: job.clone(),
            run,
            fence,
            outcome: outcome.clone(),
        };
        let committed = self.transact(host, now, event) && !self.lost_last;
        if let Some(h) = host {
            self.report_settled(h, run, committed, (job, fence, outcome));
        }
    }

    /// Faults of delivery: the result is also delivered again later (a duplicate), or only
    /// late (the process lost track of the run: its lease lapses; the result arrives from
    /// wherever it was kept). Returns whether it is sent late, and so not now.
    fn sent_late_or_again(
        &mut self,
        host: Option<usize>,
        process: ProcessId,
        run: RunId,
        (job, fence, outcome): (&JobName, Fence, &Outcome),
    ) -> bool {
        let f = self.cfg.faults;
        let deliver = || Action::Deliver {
            process,
            run,
            job: job.clone(),
            fence,
            outcome: outcome.clone(),
        };
        if f.duplicate_result > 0.0 && self.rng.gen_bool(f.duplicate_result.min(1.0)) {
            *self.faults.entry("duplicate result").or_default() += 1;
            let t = self.t + self.rng.gen_range(1_000..600_000);
            self.at(t, deliver());
        }
        if f.late_result <= 0.0 || !self.rng.gen_bool(f.late_result.min(1.0)) {
            return false;
        }
        *self.faults.entry("late result").or_default() += 1;
        if let Some(h) = host {
            self.hosts[h].inc.let_go(run);
        }
        let t = self.t + self.rng.gen_range(1_000..1_800_000);
        self.at(t, deliver());
        true
    }

    /// A host that mixed up its runs: this run's id with a fence it never held, just
    /// before the real result (S3: it settles nothing, nor, for its holder, the run).
    fn mixed_up_fence(
        &mut self,
        host: Option<usize>,
        now: Now,
        process: ProcessId,
        run: RunId,
        (job, fence, outcome): (&JobName, Fence, &Outcome),
    ) {
        *self.faults.entry("result with a wrong fence").or_default() += 1;
        let event = Event::RunFinished {
            process,
            job: job.clone(),
            run,
            fence: Fence(fence.0 ^ 1),
            outcome: outcome.clone(),
        };
        self.transact(host, now, event);
    }

    /// A result sent again or late (`Action::Deliver`). Sent by its process while that
    /// one is up (a retried or late report, a parked run finished another way), it hears
    /// the answer, as the daemon does, and carries out what the result starts; from a
    /// process gone, or a child on its own, nobody does.
    pub(super) fn deliver(
        &mut self,
        process: ProcessId,
        run: RunId,
        (job, fence, outcome): (JobName, Fence, Outcome),
    ) {
        let now = Now::at(Timestamp::from_millis(self.t));
        let event = Event::RunFinished {
            process,
            job: job.clone(),
            run,
            fence,
            outcome: outcome.clone(),
        };
        let sender = self
            .hosts
            .iter()
            .position(|h| h.inc.process() == process && h.state == HostState::Up);
        let committed = self.transact(sender, now, event) && !self.lost_last;
        if let Some(h) = sender {
            self.report_settled(h, run, committed, (job, fence, outcome));
        }
    }

    /// After a host's report of `run` sent alone: committed and heard under the fence it
    /// holds the run by, the run is no longer held (a mixed-up fence settles nothing);
    /// aborted or unheard, it stays held (its lease renewed) and goes in the next turn's
    /// batch.
    pub(super) fn report_settled(
        &mut self,
        host: usize,
        run: RunId,
        committed: bool,
        result: (JobName, Fence, Outcome),
    ) {
        let h = &mut self.hosts[host];
        let fence = result.1;
        if committed {
            h.inc.reported(run, fence);
            if h.inc.holding(run).is_none() {
                h.unreported.remove(&run);
            }
        } else if h.inc.holding(run).is_some_and(|held| held.fence == fence) {
            h.unreported.insert(run, result);
        }
    }

    /// The delay a failure asks for: as drawn, but one time in four exactly its job's wait
    /// budget, or a millisecond either side (a quota hold only past the budget: R4).
    pub(super) fn asked_delay(&mut self, drawn: Duration, budget: Duration) -> Duration {
        let ms = budget.as_millis();
        match self.streams.edges.gen_range(0..12u32) {
            0 => budget,
            1 => Duration::from_millis(ms.saturating_sub(1)),
            2 => Duration::from_millis(ms.saturating_add(1)),
            _ => drawn,
        }
    }

    /// How job `i`'s run goes, by its behaviour: how long it takes and what it reports
    /// (a hang takes three times `timeout`, the time left to the run's deadline by its
    /// host's clock).
    pub(super) fn draw_run(&mut self, i: usize, timeout: i64) -> (i64, Outcome) {
        let sim = &self.jobs[i];
        let b = sim.behaviour.clone();
        let budget = sim.def.wait_budget();
        let roll: f64 = self.rng.gen_range(0.0..1.0);
        if roll < b.hang {
            (timeout.max(1_000) * 3, Outcome::Ok)
        } else if roll < b.hang + b.fail {
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::failed("exit 1"),
            )
        } else if roll < b.hang + b.fail + b.fail_retry_after {
            let drawn = Duration::from_secs(self.rng.gen_range(1..3_600));
            let after = self.asked_delay(drawn, budget);
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::Failed {
                    kind: "quota".into(),
                    retry_after: Some(after),
                },
            )
        } else if b.park > 0.0 && self.rng.gen_bool(b.park.min(1.0)) {
            let ttl = self.rng.gen_range(b.park_ttl_ms.0..=b.park_ttl_ms.1);
            (
                self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1),
                Outcome::AwaitingApproval {
                    ttl: Duration::from_millis(ttl as u64),
                },
            )
        } else {
            // One success in eight found nothing to do and says so.
            let done = if self.streams.edges.gen_ratio(1, 8) {
                Outcome::Skipped
            } else {
                Outcome::Ok
            };
            (self.rng.gen_range(b.duration_ms.0..=b.duration_ms.1), done)
        }
    }

    /// What a committed effect asked of a host's incarnation (`Incarnation::take`): a
    /// run's child started, or stopped.
    pub(super) fn carry_out(&mut self, host: usize, order: Option<Order>) {
        match order {
            Some(Order::Launch {
                run,
                job,
                fence,
                deadline,
            }) => self.start(host, run, job, fence, deadline),
            Some(Order::Stop {
                run,
                job,
                reason,
                held: true,
            }) => self.stop(host, run, job, reason),
            // A lost lease: the incarnation let the run go; its child is left to its fate.
            Some(Order::Stop { held: false, .. }) | None => {}
        }
    }

    /// A run's child starts, held by `host`'s incarnation: its duration and outcome drawn.
    pub(super) fn start(
        &mut self,
        host: usize,
        run: RunId,
        job: JobName,
        fence: Fence,
        deadline: Timestamp,
    ) {
        let Some(i) = self.job_index(&job) else {
            self.hosts[host].inc.let_go(run);
            return;
        };
        let timeout = deadline.as_millis() - self.clock_now(host).wall.as_millis();
        let (duration, outcome) = self.draw_run(i, timeout);
        let process = self.hosts[host].inc.process();
        if self.hosts[host].state == HostState::Up
            && self.wake_time(host) < self.hosts[host].wake_at
        {
            // Holding a run, it owes heartbeats for its lease.
            self.sleep(host);
        }
        self.child_ends(self.t + duration, host, process, run, (job, fence, outcome));
    }

    /// A run's child ends at `t` with `outcome` (`Action::RunDone`).
    fn child_ends(
        &mut self,
        t: i64,
        host: usize,
        process: ProcessId,
        run: RunId,
        (job, fence, outcome): (JobName, Fence, Outcome),
    ) {
        let done = Action::RunDone {
            host,
            process,
            run,
            job,
            fence,
            outcome,
        };
        self.at(t, done);
    }

    /// The world's job named `name`: by address among the names seen last, else by text
    /// (a deserialized state holds new copies of the names).
    pub(super) fn job_index(&mut self, name: &JobName) -> Option<usize> {
        let by_address = self
            .seen_names
            .iter()
            .position(|n| std::ptr::eq(n.as_str(), name.as_str()));
        if by_address.is_some() {
            return by_address;
        }
        let i = self.jobs.iter().position(|j| j.def.name == *name)?;
        self.seen_names[i] = name.clone();
        Some(i)
    }

    /// The core asked to stop a run the host still holds (a timeout, or its job removed):
    /// the child is killed and its exit reported soon, as a timeout or a signal; the run
    /// stays held until then (its original finish, if later, finds it gone and is
    /// ignored).
    pub(super) fn stop(&mut self, host: usize, run: RunId, job: JobName, reason: CancelReason) {
        let Some(fence) = self.hosts[host].inc.holding(run).map(|h| h.fence) else {
            return;
        };
        let process = self.hosts[host].inc.process();
        let outcome = if reason == CancelReason::Timeout {
            Outcome::TimedOut
        } else {
            Outcome::failed("signal TERM")
        };
        let t = self.t + self.rng.gen_range(100..5_000);
        self.child_ends(t, host, process, run, (job, fence, outcome));
    }
}
