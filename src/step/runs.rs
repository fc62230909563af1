//! Runs in flight: claiming (a fresh fence, a lease, a `Start`), renewing leases for the
//! process that holds them, and watching deadlines, stalls and lapsed leases.

use crate::effect::{Action, Start};
use crate::effect::{
    AlertKind, CancelReason, Covers, Effect, History, LedgerKind, MissCause, PausedBy, SystemPause,
    Trigger, WaitReason,
};
use crate::event::{Fence, Held, ProcessId, RunId};
use crate::job::REQUIRED_BATCH;
use crate::jobs::JobSeq;
use crate::state::{
    Activity, Cover, LastOutcome, LastRun, OpenRun, Pause, RetryWait, RunStage, State, Waiting,
};
use crate::time::Timestamp;

use super::after::Front;
use super::Out;

impl State {
    /// Renews the leases of the runs `process` says it holds; tells it to stop any run whose
    /// lease it no longer has.
    pub(crate) fn renew(
        &mut self,
        now: Timestamp,
        process: ProcessId,
        held: &[Held],
        out: &mut Out,
    ) {
        let ttl = self.config.lease_ttl;
        for h in held {
            let seq = self.runs.get(&h.run).copied();
            let job = seq.and_then(|seq| self.jobs.get_mut(&seq));
            let name = job.as_ref().map(|j| j.def.name.clone());
            let run = job
                .and_then(|j| j.activity.as_deref_mut())
                .and_then(Activity::run_mut);
            match run {
                // A parked run's process is done with it: nobody holds it any more.
                Some(run)
                    if run.fence == h.fence && run.holder == process && run.parked().is_none() =>
                {
                    // A wall clock that went back never makes a lease younger.
                    run.lease_until = run.lease_until.max(now.saturating_add(ttl));
                    if let Some(seq) = seq {
                        self.reindex(seq);
                    }
                }
                _ => out.effects.push(Effect::Do(Action::Cancel {
                    run: h.run,
                    job: name,
                    process,
                    reason: CancelReason::LeaseLost,
                })),
            }
        }
    }

    /// `Adopt`: the run moves to `process` if it is still open under `fence` (the state,
    /// not the clock, says whether it is: a lease that lapsed unnoticed is still the run's).
    /// Anything else is a run this process must not keep going: it is told to cancel.
    pub(crate) fn adopt(
        &mut self,
        now: Timestamp,
        process: ProcessId,
        run: RunId,
        fence: Fence,
        out: &mut Out,
    ) {
        let ttl = self.config.lease_ttl;
        let seq = self.runs.get(&run).copied();
        let job = seq.and_then(|seq| self.jobs.get_mut(&seq));
        let name = job.as_ref().map(|j| j.def.name.clone());
        let open = job
            .and_then(|j| j.activity.as_deref_mut())
            .and_then(Activity::run_mut)
            .filter(|r| r.id == run && r.fence == fence && r.parked().is_none());
        match (open, name, seq) {
            (Some(open), Some(name), Some(seq)) => {
                let from = open.holder;
                open.holder = process;
                open.lease_until = open.lease_until.max(now.saturating_add(ttl));
                if from != process {
                    out.history(&name, History::Adopted { run, from, process });
                }
                self.reindex(seq);
            }
            (_, name, _) => out.effects.push(Effect::Do(Action::Cancel {
                run,
                job: name,
                process,
                reason: CancelReason::LeaseLost,
            })),
        }
    }

    /// Checks the job's open run: a lapsed lease means the run is lost; a passed deadline
    /// sends `Cancel`, and a `Cancel` unanswered past its grace settles the run timed out.
    pub(crate) fn watch_run(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        let grace = self.config.cancel_grace;
        let silent = self
            .jobs
            .get(&seq)
            .and_then(|j| j.run_holder())
            .is_some_and(|h| self.holder_silent(h));
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let name = job.def.name.clone();
        let stall_after = job.def.stall_after;
        let Some(run) = job.activity.as_deref_mut().and_then(Activity::run_mut) else {
            return;
        };
        if let Some(until) = run.parked() {
            if now >= until {
                self.expire_approval(seq, now, out);
            }
            return;
        }
        if now > run.lease_until || silent {
            self.lose_run(seq, now, out);
            return;
        }
        if !run.stall_alerted && now >= run.started.saturating_add(stall_after) {
            run.stall_alerted = true;
            let kind = AlertKind::Stalled {
                run: run.id,
                running_for: now.saturating_since(run.started),
            };
            out.alert(job.alert_log(), kind);
        }
        // (Taken again: the alert above borrowed the whole record.)
        let Some(run) = job.activity.as_deref_mut().and_then(Activity::run_mut) else {
            return;
        };
        match run.cancel_sent() {
            None if now >= run.deadline => {
                run.stage = RunStage::Running {
                    cancel_sent: Some(now),
                };
                let (id, holder) = (run.id, run.holder);
                out.effects.push(Effect::Do(Action::Cancel {
                    run: id,
                    job: Some(name.clone()),
                    process: holder,
                    reason: CancelReason::Timeout,
                }));
                out.history(
                    &name,
                    History::CancelSent {
                        run: id,
                        reason: CancelReason::Timeout,
                    },
                );
            }
            Some(sent) if now >= sent.saturating_add(grace) => {
                let (id, fence) = (run.id, run.fence);
                self.settle(seq, id, fence, crate::event::Outcome::TimedOut, out);
            }
            _ => {}
        }
    }

    /// Nobody approved the parked run in time: its due times are closed as
    /// `approval_expired` (one ledger entry, no retry: a person's silence is not a fault to
    /// try again), alerted once. The job is free again, so the next due time runs.
    fn expire_approval(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(run) = job.activity.as_deref_mut().and_then(Activity::take_run) else {
            return;
        };
        self.runs.remove(&run.id);
        let name = job.def.name.clone();
        out.history(&name, History::ApprovalExpired { run: run.id });
        if let Some(c) = run.cover.map(|c| c.covers) {
            out.ledger(
                &name,
                c.from,
                c.to,
                c.count,
                LedgerKind::ApprovalExpired { run: run.id },
            );
        }
        job.last = Some(LastRun {
            run: run.id,
            at: now,
            outcome: LastOutcome::ApprovalExpired,
        });
        out.alert(job.alert_log(), AlertKind::ApprovalExpired { run: run.id });
    }

    /// The lease lapsed with no result: the run is recorded lost. A job safe to repeat runs
    /// the same due times again; any other job is paused by the system, its due times
    /// recorded lost, because running them twice is worse than not knowing.
    fn lose_run(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(run) = job.activity.as_deref_mut().and_then(Activity::take_run) else {
            return;
        };
        self.runs.remove(&run.id);
        let name = job.def.name.clone();
        out.history(&name, History::Lost { run: run.id });
        let safe = job.def.safe_to_repeat;
        let kind = AlertKind::RunLost {
            run: run.id,
            paused: !safe && run.cover.is_some(),
        };
        out.alert(job.alert_log(), kind);
        job.last = Some(LastRun {
            run: run.id,
            at: now,
            outcome: LastOutcome::Lost,
        });
        let act = job.act_mut();
        let Some(cover) = run.cover else { return };
        if safe && act.paused.is_some() {
            // Paused: no retry waits (see `unretry`); the missed rule takes the due times.
            job.unretry(cover.covers, out);
        } else if safe {
            act.set_retry(RetryWait {
                at: now,
                attempt: run.attempt,
                trigger: Trigger::Repeat,
                cover,
            });
        } else {
            let c = cover.covers;
            out.ledger(
                &name,
                c.from,
                c.to,
                c.count,
                LedgerKind::Lost { run: run.id },
            );
            self.pause_by_system(seq, SystemPause::RunLost, false, out);
        }
    }

    /// Pauses the job until a person resumes it; `alert` is false when the incident that
    /// caused it was alerted already.
    pub(crate) fn pause_by_system(
        &mut self,
        seq: JobSeq,
        reason: SystemPause,
        alert: bool,
        out: &mut Out,
    ) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let act = job.act_mut();
        if act.paused.is_some() {
            return;
        }
        let by = PausedBy::System { reason };
        act.paused = Some(Pause {
            by: by.clone(),
            note: String::new(),
            since: out.now,
        });
        let name = job.def.name.clone();
        out.history(
            &name,
            History::Paused {
                by,
                note: String::new(),
            },
        );
        if !alert {
            return;
        }
        let kind = AlertKind::PausedBySystem { reason };
        out.alert(job.alert_log(), kind);
    }

    /// Starts what waits in line, in order: a retry whose time has come, owed due times
    /// (unless paused), a manual run (even when paused: a person asked for it).
    pub(crate) fn try_start(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        process: ProcessId,
        out: &mut Out,
    ) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let Some(act) = job.act() else {
            return;
        };
        if act.run().is_some() || act.is_unconfirmed() {
            return;
        }
        // A job waiting for upstreams lets its line's front through their gate first.
        let front = if act.paused.is_some() || act.retry().is_some() {
            Front::Empty
        } else {
            self.open_front(seq, out)
        };
        let Some(act) = self.jobs.get(&seq).and_then(crate::state::JobRecord::act) else {
            return;
        };
        let through = match front {
            Front::Open { through } => Some(through),
            Front::Empty | Front::Shut => None,
        };
        let startable = if act.paused.is_some() {
            act.manual.is_some()
        } else {
            match act.retry() {
                Some(r) => r.at <= now,
                None => through.is_some() || act.manual.is_some(),
            }
        };
        // A quota hold keeps everything back, a retry and a person's manual run included;
        // held so, the job could not take room in its lane, so it stands in no line (the
        // head of a lane that cannot start would hold back every job behind it).
        if !startable || self.quota_held(seq, now, out) {
            self.stop_waiting(seq);
            return;
        }
        if let Some(reason) = self.gate(seq, process) {
            self.wait(seq, reason, out);
            return;
        }
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        // Disjoint borrows: the definition is read while the activity changes, so the
        // schedule is never cloned on this path (every visit of a busy job passes here).
        let crate::state::JobRecord { def, activity, .. } = job;
        let Some(act) = activity.as_deref_mut() else {
            return;
        };
        if act.run().is_some() {
            return;
        }
        let paused = act.paused.is_some();
        if !paused {
            if let Some(retry) = act.retry() {
                if retry.at <= now {
                    act.take_retry();
                    self.start_run(
                        seq,
                        now,
                        process,
                        retry.trigger,
                        retry.attempt,
                        Some(retry.cover),
                        out,
                    );
                }
                return;
            }
            let batch = through.and_then(|t| front_batch(&mut act.pending, &def.schedule, t));
            if let Some((trigger, cover)) = batch {
                self.start_run(seq, now, process, trigger, 1, Some(cover), out);
                return;
            }
        }
        if act.manual.take().is_some() {
            self.start_run(seq, now, process, Trigger::Manual, 1, None, out);
        }
    }

    /// Claims the job for `process`: a new run id and fence from the counters, a lease, a
    /// deadline, and the `Start` the host carries out.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_run(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        process: ProcessId,
        trigger: Trigger,
        attempt: u32,
        cover: Option<Cover>,
        out: &mut Out,
    ) {
        let ttl = self.config.lease_ttl;
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        if self.next_run == u64::MAX || self.next_fence == u64::MAX {
            // The counters are used up (only a stored state can get here): nothing starts,
            // and what the run would have covered waits as a retry, still accounted.
            if let Some(cover) = cover {
                job.act_mut().set_retry(RetryWait {
                    at: now,
                    attempt,
                    trigger,
                    cover,
                });
            }
            return;
        }
        let id = RunId(self.next_run);
        let fence = Fence(self.next_fence);
        self.next_run += 1;
        self.next_fence += 1;
        let deadline = now.saturating_add(job.def.timeout);
        let name = job.def.name.clone();
        let waited = job
            .act_mut()
            .take_waiting()
            .map(|w| now.saturating_since(w.since));
        job.act_mut().open_run(OpenRun {
            id,
            fence,
            holder: process,
            lease_until: now.saturating_add(ttl),
            started: now,
            deadline,
            attempt,
            trigger,
            cover,
            stage: RunStage::Running { cancel_sent: None },
            stall_alerted: false,
            lane: None,
        });
        self.runs.insert(id, seq);
        let covers = cover.map(|c| c.covers);
        out.effects.push(Effect::Do(Action::Start(Start {
            run: id,
            job: name.clone(),
            fence,
            attempt,
            trigger,
            covers,
            late: cover.and_then(|c| c.late),
            deadline,
            process,
        })));
        out.history(
            &name,
            History::Started {
                run: id,
                fence,
                attempt,
                trigger,
                covers,
                process,
                waited,
            },
        );
    }

    /// The job could start but the lane or the cap holds it back: it waits, recorded once
    /// when the wait begins; `admit` lets it in when room opens.
    /// The job no longer waits for room (it has nothing it could start now); its caller
    /// reindexes it, which takes it out of its line.
    fn stop_waiting(&mut self, seq: JobSeq) {
        if let Some(act) = self
            .jobs
            .get_mut(&seq)
            .and_then(|j| j.activity.as_deref_mut())
        {
            act.take_waiting();
        }
    }

    pub(crate) fn wait(&mut self, seq: JobSeq, reason: WaitReason, out: &mut Out) {
        let now = out.now;
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let name = job.def.name.clone();
        // (A job with its run open, or unconfirmed, never waits: `try_start` asks first.)
        let Some(slot) = job.act_mut().waiting_slot() else {
            return;
        };
        match slot {
            Some(w) => w.reason = reason,
            None => {
                *slot = Some(Waiting { since: now, reason });
                out.history(&name, History::Waiting { reason });
            }
        }
    }
}

impl crate::state::JobRecord {
    /// Takes the front's first due time off the line (the gate skips it: `after.rs`).
    pub(super) fn take_front_one(&mut self) -> Option<Timestamp> {
        let crate::state::JobRecord { def, activity, .. } = self;
        let pending = &mut activity.as_deref_mut()?.pending;
        let first = pending.front()?.from;
        front_batch(pending, &def.schedule, first).map(|(_, c)| c.covers.from)
    }
}

/// The next run the line owes, taken from its front: a buffered overlap alone, a catch-up
/// of at most `REQUIRED_BATCH` due times and none after `through` (the gate of a job that
/// waits for upstreams: `after.rs`). The front segment shrinks by what the batch covers,
/// walked on the segment's own schedule, `schedule` when it is untagged. `None` when
/// nothing is owed.
fn front_batch(
    pending: &mut std::collections::VecDeque<crate::state::Owed>,
    schedule: &crate::schedule::Schedule,
    through: Timestamp,
) -> Option<(Trigger, Cover)> {
    let front = pending.front_mut()?;
    // A segment of an earlier schedule (tagged) goes one due time at a time through a
    // gate (its due times are not the upstreams' schedule's, which the gate's range is).
    let through = if through < Timestamp::MAX && front.schedule.is_some() {
        front.from
    } else {
        through
    };
    let cause = front.cause;
    let trigger = if cause == MissCause::Overlap {
        Trigger::Buffered
    } else {
        Trigger::CatchUp
    };
    // Buffered overlaps run one at a time; catch-ups in batches.
    let batch = if trigger == Trigger::Buffered {
        1
    } else {
        REQUIRED_BATCH
    };
    let covers = if through < front.to {
        // Only the due times through `through` (at least `from`: the gate's range holds it).
        let schedule = front.schedule.as_deref().unwrap_or(schedule);
        let (mut to, mut count) = (front.from, 1);
        for d in schedule.iter_after(front.from) {
            if count == batch || d > through {
                break;
            }
            (to, count) = (d, count + 1);
        }
        let c = Covers {
            from: front.from,
            to,
            count,
        };
        front.from = schedule.next_after(to).unwrap_or(front.to);
        front.count -= count;
        c
    } else if front.count <= batch {
        let c = Covers {
            from: front.from,
            to: front.to,
            count: front.count,
        };
        pending.pop_front();
        c
    } else {
        // The batch's last due time is the `batch`-th from `from`, inclusive (`from` itself
        // for a batch of one).
        let schedule = front.schedule.as_deref().unwrap_or(schedule);
        let to = match batch {
            1 => front.from,
            _ => schedule
                .iter_after(front.from)
                .nth(batch as usize - 2)
                .unwrap_or(front.to),
        };
        let c = Covers {
            from: front.from,
            to,
            count: batch,
        };
        front.from = schedule.next_after(to).unwrap_or(front.to);
        front.count -= batch;
        c
    };
    let cover = Cover {
        covers,
        late: Some(cause),
    };
    Some((trigger, cover))
}
