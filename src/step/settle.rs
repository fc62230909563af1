//! Settling a run: a result is taken only with the run's current fence; success writes the
//! ledger for what the run covered, failure retries the ORIGINAL due times after a backoff,
//! and the last allowed failure records them failed out and pauses the job.

use crate::effect::{AlertKind, History, LedgerKind, MissAction, SystemPause};
use crate::event::{Actor, Fence, Outcome, ProcessId, RunId, MAX_APPROVAL_TTL};
use crate::jobs::JobSeq;
use crate::state::{Activity, Cover, JobRecord, LastOutcome, LastRun, RetryWait, RunStage, State};
use crate::time::Duration;
use crate::time::Timestamp;

use super::Out;

/// Longest failure classification kept from a result, in characters.
const MAX_FAILURE_KIND: usize = 64;

/// What a settled run's outcome asks of what it covered, beyond the outcome itself.
#[derive(Clone, Copy)]
struct Failure {
    run: RunId,
    attempt: u32,
    /// The delay the failure asked for before a retry (zero when it asked none).
    asked: Duration,
    /// Whether that delay is past the job's wait budget: the job is held for a quota.
    quota_hold: bool,
    /// Whether this failure ends a `pause_after_failures` streak.
    streak_ended: bool,
}

impl JobRecord {
    /// Notes a settled run's outcome on the job: its last run, its failures in a row, and
    /// on a success its incidents ended and the dead-man's switch fed. Whether the failure
    /// ends a `pause_after_failures` streak.
    fn note_outcome(&mut self, run: RunId, now: Timestamp, outcome: &Outcome) -> bool {
        let last = match outcome {
            Outcome::Ok => LastOutcome::Ok,
            Outcome::Skipped => LastOutcome::Skipped,
            Outcome::Failed { .. } => LastOutcome::Failed,
            Outcome::TimedOut => LastOutcome::TimedOut,
            // Turned away by `settle_by`.
            Outcome::AwaitingApproval { .. } => LastOutcome::Ok,
        };
        self.last = Some(LastRun {
            run,
            at: now,
            outcome: last,
        });
        if outcome.is_success() {
            self.failures_in_a_row = 0;
            // A success ends the incident: the next failure is told again.
            self.incidents.clear();
            self.succeeded(now);
            false
        } else {
            self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
            self.def
                .pause_after_failures
                .is_some_and(|n| self.failures_in_a_row >= n)
        }
    }
}

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
            && job.run().is_some_and(|r| r.parked().is_some());
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
        seq: JobSeq,
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
    fn park(&mut self, seq: JobSeq, run: RunId, fence: Fence, ttl: Duration, out: &mut Out) {
        let until = out.now.saturating_add(ttl.min(MAX_APPROVAL_TTL));
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(open) = job
            .activity
            .as_deref_mut()
            .and_then(Activity::run_mut)
            .filter(|r| r.id == run && r.fence == fence)
        else {
            return;
        };
        open.stage = RunStage::Parked { until };
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
    /// `ok` and the journal says who, instead of a result line). The run is taken from its
    /// job with its line written, the outcome noted on the job (its last run, its streak,
    /// its incidents), then what the run covered is settled: written to the ledger on a
    /// success, retried, or failed out (`settle_failure`).
    pub(crate) fn settle_by(
        &mut self,
        seq: JobSeq,
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
            .and_then(|a| a.take_run_if(|r| r.id == run && r.fence == fence))
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
        let streak_ended = job.note_outcome(run, now, &outcome);
        let asked = match &outcome {
            Outcome::Failed {
                retry_after: Some(d),
                ..
            } => *d,
            _ => Duration::ZERO,
        };
        let failure = Failure {
            run,
            attempt: open.attempt,
            asked,
            quota_hold: asked > job.def.wait_budget(),
            streak_ended,
        };
        let Some(cover) = open.cover else {
            if streak_ended {
                self.pause_for_streak(seq, out);
            } else if failure.quota_hold {
                self.hold(seq, run, asked, out);
            }
            return;
        };
        if outcome.is_success() {
            let c = cover.covers;
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
        self.settle_failure(seq, failure, cover, out);
    }

    /// A failed run that covered due times: with attempts left, they wait as a retry after
    /// the backoff (or the delay the failure asked, when longer), unless the failure ends
    /// a streak or the job is paused, which hand them to the missed rule; with none left,
    /// they are recorded failed out and the job is paused.
    fn settle_failure(&mut self, seq: JobSeq, failure: Failure, cover: Cover, out: &mut Out) {
        let now = out.now;
        let Failure { run, attempt, .. } = failure;
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let name = job.def.name.clone();
        let c = cover.covers;
        if attempt <= job.def.retries {
            if failure.streak_ended {
                // The retry would be one more failure in the row: the job stops here, and
                // what this run covered meets the missed rule as paused, as a person's
                // pause would hand it.
                self.pause_for_streak(seq, out);
                if let Some(job) = self.jobs.get_mut(&seq) {
                    job.unretry(c, out);
                }
                return;
            }
            if job.act_mut().paused.is_some() {
                // A paused job keeps no retry waiting (a pause hands a waiting one to the
                // missed rule), so a failure while paused goes the same way.
                job.unretry(c, out);
                return;
            }
            let wait = job.def.backoff.delay(attempt).max(failure.asked);
            let at = now.saturating_add(wait);
            job.act_mut().set_retry(RetryWait {
                at,
                attempt: attempt + 1,
                trigger: crate::effect::Trigger::Retry,
                cover,
            });
            out.history(&name, History::RetryAt { run, at });
            if failure.quota_hold {
                self.hold(seq, run, failure.asked, out);
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
            attempts: attempt,
        };
        out.alert(job.alert_log(), kind);
        // One incident, one alert: the failed-out alert says the job is paused.
        self.pause_by_system(seq, SystemPause::RetriesExhausted, false, out);
    }

    /// Holds the job for a quota: nothing of it starts for `asked` (its retry, if any, waits
    /// as long); the due times the hold passes meet the missed rule as `quota_hold`.
    fn hold(&mut self, seq: JobSeq, run: RunId, asked: Duration, out: &mut Out) {
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
    fn pause_for_streak(&mut self, seq: JobSeq, out: &mut Out) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let n = job.failures_in_a_row;
        self.pause_by_system(seq, SystemPause::FailureStreak { failures: n }, true, out);
    }
}
