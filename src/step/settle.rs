//! Settling a run: a result is taken only with the run's current fence; success writes the
//! ledger for what the run covered, failure retries the ORIGINAL due times after a backoff,
//! and the last allowed failure records them failed out and pauses the job.

use crate::effect::{AlertKind, History, LedgerKind, MissAction, SystemPause};
use crate::event::{Actor, Fence, Outcome, ProcessId, RunId, MAX_APPROVAL_TTL};
use crate::state::{LastOutcome, LastRun, RetryWait, State};
use crate::time::Duration;

use super::Out;

/// Longest failure classification kept from a result, in characters.
const MAX_FAILURE_KIND: usize = 64;

impl State {
    /// `RunFinished`: a stale fence or an unknown run changes no job state.
    pub(crate) fn finish(
        &mut self,
        process: ProcessId,
        job: &str,
        run: RunId,
        fence: Fence,
        outcome: Outcome,
        out: &mut Out,
    ) {
        let Some(seq) = self.runs.get(&run).copied().or_else(|| self.seq_of(job)) else {
            // The job is gone: nothing to change and nowhere to record it.
            return;
        };
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let current = job.run().is_some_and(|r| r.id == run && r.fence == fence);
        // A parked run asked to park again is a repeat of the result that parked it (a
        // duplicate delivery): taking it would push its expiry out for ever.
        let repeat = matches!(outcome, Outcome::AwaitingApproval { .. })
            && job.run().is_some_and(|r| r.parked.is_some());
        if !current || repeat {
            // Settled already (a result delivered twice), taken over, or never this job's.
            let name = job.def.name.clone();
            out.history(&name, History::StaleResult { run, fence });
            return;
        }
        let outcome = match outcome {
            Outcome::Failed { kind, retry_after } => Outcome::Failed {
                kind: kind.chars().take(MAX_FAILURE_KIND).collect(),
                retry_after,
            },
            other => other,
        };
        self.settle(seq, run, fence, outcome, out);
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.tidy();
        }
        self.reindex(seq);
        // The settled run's lane (and the process's room) may let a waiter in: the oldest
        // waiter goes first, before this job's own next in line.
        self.admit(out.now, process, out);
        if self.can_claim(process, out.now) {
            // The settling process may take the next in line right away (the next batch
            // of a `required` catch-up, a buffered due time); under `single_owner` only
            // if it is the owner, as at a tick.
            self.try_start(seq, out.now, process, out);
        }
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.tidy();
        }
        self.reindex(seq);
    }

    /// Settles the job's open run `run` with `outcome` (the fence has been checked), or
    /// parks it when the outcome is `awaiting_approval`.
    pub(crate) fn settle(
        &mut self,
        seq: u64,
        run: RunId,
        fence: Fence,
        outcome: Outcome,
        out: &mut Out,
    ) {
        if let Outcome::AwaitingApproval { ttl } = outcome {
            self.park(seq, run, fence, ttl, out);
            return;
        }
        self.settle_by(seq, run, fence, outcome, None, out);
    }

    /// The run waits for a person: it keeps its id, fence and cover (the job stays
    /// occupied, so later due times meet the overlap policy), but no process holds it.
    fn park(&mut self, seq: u64, run: RunId, fence: Fence, ttl: Duration, out: &mut Out) {
        let until = out.now.saturating_add(ttl.min(MAX_APPROVAL_TTL));
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(open) = job
            .activity
            .as_deref_mut()
            .and_then(|a| a.run.as_mut())
            .filter(|r| r.id == run && r.fence == fence)
        else {
            return;
        };
        open.parked = Some(until);
        open.cancel_sent = None;
        let attempt = open.attempt;
        let name = job.def.name.clone();
        out.history(
            &name,
            History::Parked {
                run,
                attempt,
                until,
            },
        );
    }

    /// Settles the run; `approver` is the person who approved it (then the outcome is
    /// `ok` and the journal says who, instead of a result line).
    pub(crate) fn settle_by(
        &mut self,
        seq: u64,
        run: RunId,
        fence: Fence,
        outcome: Outcome,
        approver: Option<Actor>,
        out: &mut Out,
    ) {
        if matches!(outcome, Outcome::AwaitingApproval { .. }) {
            // Parking is `settle`'s; nothing here may take the run for it.
            return;
        }
        let now = out.now;
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(open) = job
            .activity
            .as_deref_mut()
            .and_then(|a| a.run.take_if(|r| r.id == run && r.fence == fence))
        else {
            return;
        };
        self.runs.remove(&run);
        let name = job.def.name.clone();
        let line = match approver {
            Some(actor) => History::Approved { run, actor },
            None => History::Settled {
                run,
                attempt: open.attempt,
                outcome: outcome.clone(),
            },
        };
        out.history(&name, line);
        let retries = job.def.retries;
        let backoff = job.def.backoff;
        let last = match &outcome {
            Outcome::Ok => LastOutcome::Ok,
            Outcome::Skipped => LastOutcome::Skipped,
            Outcome::Failed { .. } => LastOutcome::Failed,
            Outcome::TimedOut => LastOutcome::TimedOut,
            // Turned away at the top.
            Outcome::AwaitingApproval { .. } => LastOutcome::Ok,
        };
        job.last = Some(LastRun {
            run,
            at: now,
            outcome: last,
        });
        let streak_ended = if outcome.is_success() {
            job.failures_in_a_row = 0;
            // A success ends the incident: the next failure is told again.
            job.incidents.clear();
            job.succeeded(now);
            false
        } else {
            job.failures_in_a_row = job.failures_in_a_row.saturating_add(1);
            job.def
                .pause_after_failures
                .is_some_and(|n| job.failures_in_a_row >= n)
        };
        let asked = match &outcome {
            Outcome::Failed {
                retry_after: Some(d),
                ..
            } => *d,
            _ => Duration::ZERO,
        };
        let quota_hold = asked > job.def.wait_budget();
        let Some(cover) = open.cover else {
            if streak_ended {
                self.pause_for_streak(seq, out);
            } else if quota_hold {
                self.hold(seq, run, asked, out);
            }
            return;
        };
        let act = job.act_mut();
        let c = cover.covers;
        if outcome.is_success() {
            let kind = match cover.late {
                None => LedgerKind::Ran {
                    run,
                    skipped: outcome == Outcome::Skipped,
                },
                Some(cause) => LedgerKind::Missed {
                    cause,
                    action: MissAction::CaughtUp { run },
                },
            };
            out.ledger(&name, c.from, c.to, c.count, kind);
            return;
        }
        if open.attempt <= retries {
            if streak_ended {
                // The retry would be one more failure in the row: the job stops here, and
                // what this run covered meets the missed rule as paused, as a person's
                // pause would hand it.
                self.pause_for_streak(seq, out);
                self.unretry(seq, c, out);
                return;
            }
            if act.paused.is_some() {
                // A paused job keeps no retry waiting (a pause hands a waiting one to the
                // missed rule), so a failure while paused goes the same way.
                self.unretry(seq, c, out);
                return;
            }
            let wait = backoff.delay(open.attempt).max(asked);
            let at = now.saturating_add(wait);
            act.retry = Some(RetryWait {
                at,
                attempt: open.attempt + 1,
                trigger: crate::effect::Trigger::Retry,
                cover,
            });
            out.history(&name, History::RetryAt { run, at });
            if quota_hold {
                self.hold(seq, run, asked, out);
            }
            return;
        }
        job.last = Some(LastRun {
            run,
            at: now,
            outcome: LastOutcome::FailedOut,
        });
        out.ledger(&name, c.from, c.to, c.count, LedgerKind::FailedOut { run });
        let kind = AlertKind::FailedOut {
            run,
            attempts: open.attempt,
        };
        out.alert(&mut job.incidents, &name, kind);
        // One incident, one alert: the failed-out alert says the job is paused.
        self.pause_by_system(seq, SystemPause::RetriesExhausted, false, out);
    }

    /// Holds the job for a quota: nothing of it starts for `asked` (its retry, if any, waits
    /// as long); the due times the hold passes meet the missed rule as `quota_hold`.
    fn hold(&mut self, seq: u64, run: RunId, asked: Duration, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let until = out.now.saturating_add(asked);
        let act = job.act_mut();
        act.quota_hold = Some(act.quota_hold.map_or(until, |h| h.max(until)));
        let name = job.def.name.clone();
        out.history(&name, History::QuotaHold { run, asked, until });
    }

    /// `pause_after_failures` reached: paused by the system, with an alert (unless a person
    /// or the system paused it already: then it stays as it is).
    fn pause_for_streak(&mut self, seq: u64, out: &mut Out) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let n = job.failures_in_a_row;
        self.pause_by_system(seq, SystemPause::FailureStreak { failures: n }, true, out);
    }
}
