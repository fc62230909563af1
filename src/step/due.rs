//! Accounting due times: a tick looks at each job whose wake time has come, moves its
//! frontier over the due times that passed, and gives each one its fate: started on time,
//! handled by the missed rule (late), or by the overlap policy (the job was busy). Nothing
//! is stepped past without a ledger entry or a place in line.

use crate::effect::{LedgerKind, MissAction, MissCause, Trigger};
use crate::event::ProcessId;
use crate::job::Overlap;
use crate::jobs::JobSeq;
use crate::schedule::Schedule;
use crate::state::{JobRecord, Owed, State};
use crate::time::{Duration, Timestamp};

use super::Out;

const MS: Duration = Duration::from_millis(1);

/// The last due time `d` of `schedule` with `after < d <= until`. `every` and `at` answer
/// by arithmetic; cron by bisection over `count_in`, which is exact and cheap, so even a
/// decade-long outage costs a few dozen counts.
pub(crate) fn last_due(
    schedule: &Schedule,
    after: Timestamp,
    until: Timestamp,
) -> Option<Timestamp> {
    if until <= after {
        return None;
    }
    match schedule {
        Schedule::At { instant } => (after < *instant && *instant <= until).then_some(*instant),
        Schedule::Every { period, offset } => {
            let p = i128::from(period.as_millis());
            if p == 0 {
                return None;
            }
            let o = i128::from(offset.as_millis()) % p;
            let k = (i128::from(until.as_millis()) - o).div_euclid(p);
            let d = Timestamp::from_millis(i64::try_from(o + k * p).ok()?);
            (d > after).then_some(d)
        }
        Schedule::Cron(_) | Schedule::Calendar(_) => {
            if schedule.count_in(after, until) == 0 {
                return None;
            }
            // Invariant: a due time lies in (lo, until]; none lies in (hi, until].
            let (mut lo, mut hi) = (after.as_millis(), until.as_millis());
            let mut step: i64 = 1000;
            loop {
                let probe = hi.saturating_sub(step);
                if probe <= lo {
                    break;
                }
                if schedule.count_in(Timestamp::from_millis(probe), until) > 0 {
                    lo = probe;
                    break;
                }
                hi = probe;
                step = step.saturating_mul(2);
            }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if schedule.count_in(Timestamp::from_millis(mid), until) > 0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Some(Timestamp::from_millis(hi))
        }
    }
}

impl State {
    /// A quota hold in force hands every due time up to now to the missed rule as
    /// `quota_hold` (none of them could start before it ends); a hold that has ended (by
    /// this process's clock) is lifted, with a journal line, so a reader can tell which
    /// clock lifted it. A paused job's due times wait for the resume, as always.
    pub(super) fn hold_for_quota(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        if !self.quota_held(seq, now, out) {
            return;
        }
        if let Some(job) = self.jobs.get_mut(&seq).filter(|j| j.paused().is_none()) {
            job.pass_due_times(now, MissCause::QuotaHold, out);
        }
    }

    /// Whether a quota hold still holds the job at `now`; one that has ended is lifted here
    /// (with its journal line), whichever path asks first: a visit, or a start on the
    /// settling path or from a lane's waiters, which come without a visit.
    pub(crate) fn quota_held(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) -> bool {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return false;
        };
        let Some(act) = job.activity.as_deref_mut() else {
            return false;
        };
        match act.quota_hold {
            Some(until) if until <= now => {
                act.quota_hold = None;
                let name = job.def.name.clone();
                out.history(&name, crate::effect::History::QuotaHoldEnded { until });
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Due times that passed more than the grace ago: the missed rule decides.
    pub(crate) fn account_late(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        cause: MissCause,
        out: &mut Out,
    ) {
        let grace = self.config.grace;
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.account_late(now, grace, cause, out);
        }
    }

    /// Due times within the grace: start the job if it is free, else the overlap policy.
    /// A jittered due time is taken when its start (`due + jitter_delay`) comes; one whose
    /// start is already older than the grace goes to the missed rule with `late_cause`.
    pub(super) fn account_on_time(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        process: ProcessId,
        can_claim: bool,
        late_cause: MissCause,
        out: &mut Out,
    ) {
        let late_until = now.saturating_sub(self.config.grace).saturating_sub(MS);
        let arrival = Arrival {
            now,
            late_until,
            can_claim,
            late_cause,
        };
        loop {
            let Some(job) = self.jobs.get_mut(&seq) else {
                return;
            };
            let due = match job.take_on_time(&arrival, out) {
                OnTime::Nothing => return,
                OnTime::Handled => continue,
                OnTime::Free(due) => due,
            };
            if self.jobs.get(&seq).is_some_and(|j| !j.def.after.is_empty()) {
                // It waits in line for its upstreams' fates (`after.rs`); they may be told.
                if let Some(job) = self.jobs.get_mut(&seq) {
                    job.owe(Owed::one(due, MissCause::Upstream), out);
                }
                self.try_start(seq, now, process, out);
            } else if let Some(reason) = self.gate(seq, process) {
                // It waits in line, owed with the reason as its cause, and starts as a
                // catch-up when `admit` lets it in.
                if let Some(job) = self.jobs.get_mut(&seq) {
                    job.owe(Owed::one(due, reason.cause()), out);
                }
                self.wait(seq, reason, out);
            } else {
                let cover = crate::state::Cover {
                    covers: crate::effect::Covers {
                        from: due,
                        to: due,
                        count: 1,
                    },
                    late: None,
                };
                self.start_run(seq, now, process, Trigger::Schedule, 1, Some(cover), out);
            }
        }
    }
}

/// What `account_on_time` judges each due time of now by.
struct Arrival {
    now: Timestamp,
    /// A due time whose start is at or before this is late.
    late_until: Timestamp,
    /// Whether this process may start a run (a draining one may not).
    can_claim: bool,
    late_cause: MissCause,
}

/// The job's next due time of now, taken off its schedule (`JobRecord::take_on_time`).
enum OnTime {
    /// None has come (or the job takes none: paused, unconfirmed, or free on a process
    /// that may not claim).
    Nothing,
    /// One came and has its fate: the missed rule's (late) or the overlap policy's (busy).
    Handled,
    /// One came and the job is free to start it, if its lane and the cap let it.
    Free(Timestamp),
}

impl JobRecord {
    /// Due times that passed more than `grace` ago: the missed rule decides (with `cause`).
    /// A paused job's wait for its resume.
    pub(crate) fn account_late(
        &mut self,
        now: Timestamp,
        grace: Duration,
        cause: MissCause,
        out: &mut Out,
    ) {
        if self.paused().is_some() {
            return;
        }
        // A due time is late when its (jittered) start is older than the grace; those
        // within the jitter of the line are judged one by one in `account_on_time`.
        let jitter = self.def.jitter.unwrap_or(Duration::ZERO);
        let late_until = now
            .saturating_sub(grace)
            .saturating_sub(MS)
            .saturating_sub(jitter);
        if self.next_due.is_none_or(|d| d > late_until) {
            return;
        }
        self.pass_due_times(late_until, cause, out);
    }

    /// Takes the next due time whose (jittered) start has come, moving the frontier to it;
    /// a late one goes to the missed rule, one arriving while the job is busy to the
    /// overlap policy. With none due, the frontier moves to now (a due time whose jittered
    /// start is still ahead keeps the frontier before it).
    fn take_on_time(&mut self, arrival: &Arrival, out: &mut Out) -> OnTime {
        let now = arrival.now;
        if self.paused().is_some() || self.is_unconfirmed() {
            return OnTime::Nothing;
        }
        let def = &self.def;
        let start_of = |d: Timestamp| d.saturating_add(def.jitter_delay(d));
        let Some(due) = self.next_due.filter(|&d| start_of(d) <= now) else {
            if self.next_due.is_none_or(|d| d > now) && self.frontier < now {
                self.frontier = now;
            }
            return OnTime::Nothing;
        };
        let late = start_of(due) <= arrival.late_until;
        let busy = self
            .act()
            .is_some_and(|a| a.run().is_some() || a.retry().is_some() || !a.pending.is_empty());
        if !late && !busy && !arrival.can_claim {
            // A draining process starts nothing; another process (or a later one, by the
            // missed rule) will take this due time. (Under `single_owner` only the owner
            // visits, and it may claim.)
            return OnTime::Nothing;
        }
        self.frontier = due;
        self.next_due = self.def.schedule.next_after(due);
        if late {
            self.miss(due, due, 1, arrival.late_cause, out);
        } else if busy {
            self.overlap(due, out);
        } else {
            return OnTime::Free(due);
        }
        OnTime::Handled
    }

    /// A due time that arrived while the job was busy.
    fn overlap(&mut self, due: Timestamp, out: &mut Out) {
        let owed = Owed::one(due, MissCause::Overlap);
        match self.def.overlap_policy() {
            Overlap::Skip => {
                self.note_missed(1, out.now);
                out.ledger(&self.def.name, due, due, 1, skipped(MissCause::Overlap));
            }
            Overlap::BufferOne => {
                self.skip_owed(out);
                self.owe(owed, out);
            }
            Overlap::BufferAll => self.owe(owed, out),
        }
    }
}

pub(crate) fn skipped(cause: MissCause) -> LedgerKind {
    LedgerKind::Missed {
        cause,
        action: MissAction::Skipped,
    }
}
