//! Jobs that run after other jobs for the same due time (`JobDef::after`).
//!
//! A downstream job has its upstreams' schedule (the upsert refuses one that differs, an
//! unknown upstream and a cycle: `refuse_upstreams`). Its due times come on its own
//! schedule like any job's, and every one of them waits in its owed line
//! (`due.rs::account_on_time` owes an on-time one with cause `upstream`); the line's front
//! starts only through a gate (`open_front`):
//!
//! - when every upstream has settled the front's due time `ok`, it starts, as a batch
//!   through the last due time all of them settled `ok` in one ledger entry;
//! - when one upstream settled it otherwise (or has gone, or no longer has such a due
//!   time), it leaves the line skipped with cause `upstream`, after a history line naming
//!   the upstream and its fate;
//! - else it waits, and the job has no wake for it (`JobRecord::front_told`).
//!
//! The fates come from the upstreams' ledger entries: at the end of every step,
//! `hear_upstreams` reads the step's journal, gives each downstream the ranges its
//! upstreams settled (`state/heard.rs`), and lets the downstream's front through the gate
//! at once (a skip can settle a further downstream's due times in turn, read in the same
//! pass). The gate works lazily at the front, so a line is never split.

use crate::effect::UpstreamProblem;
use crate::effect::{Effect, Entry, History, MissCause, Record, Refusal, UpstreamFate};
use crate::event::{Event, ProcessId};
use crate::job::{JobDef, JobName};
use crate::jobs::JobSeq;
use crate::state::{HeardRange, JobRecord, State};
use crate::time::Timestamp;

use super::due::skipped;
use super::Out;

/// What the front of a downstream's line may do, after the gate skipped what it could.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Front {
    /// Nothing is owed.
    Empty,
    /// An upstream has not settled the front's due time yet.
    Shut,
    /// Every upstream settled it `ok`: a batch may run through `through`.
    Open { through: Timestamp },
}

/// The gate at one due time of a downstream.
enum Gate {
    Open {
        through: Timestamp,
    },
    Shut,
    NotOk {
        upstream: JobName,
        fate: UpstreamFate,
    },
}

impl State {
    /// Refuses (with `Refusal::Upstream`) a definition whose `after` names a job not
    /// defined here, one with another schedule, or one that waits for this job in turn;
    /// whether it refused.
    pub(super) fn refuse_upstreams(&self, def: &JobDef, out: &mut Out) -> bool {
        for upstream in &def.after {
            let problem = match self.seq_of(upstream.as_str()).map(|s| &self.jobs[&s]) {
                None => Some(UpstreamProblem::Unknown),
                Some(up) if up.def.schedule != def.schedule => {
                    Some(UpstreamProblem::ScheduleDiffers)
                }
                Some(_) => self
                    .chain_back_to(upstream, &def.name)
                    .map(|through| UpstreamProblem::Cycle { through }),
            };
            if let Some(problem) = problem {
                let refusal = Refusal::Upstream {
                    upstream: upstream.clone(),
                    problem,
                };
                State::refuse(Some(def.name.clone()), refusal, out);
                return true;
            }
        }
        false
    }

    /// A chain of `after` from `from` that reaches `to`, `from` first and `to` last.
    fn chain_back_to(&self, from: &JobName, to: &JobName) -> Option<Vec<JobName>> {
        // Depth-first over the definitions in force, each job once (the graph of a state
        // that refused every cycle is acyclic, but a stored state is not trusted).
        let mut seen = std::collections::BTreeSet::new();
        let mut path = vec![from.clone()];
        self.walk_after(&mut path, to, &mut seen).then_some(path)
    }

    fn walk_after(
        &self,
        path: &mut Vec<JobName>,
        to: &JobName,
        seen: &mut std::collections::BTreeSet<JobName>,
    ) -> bool {
        let Some(at) = path.last().cloned() else {
            return false;
        };
        if at == *to {
            return true;
        }
        if !seen.insert(at.clone()) {
            return false;
        }
        let Some(job) = self.seq_of(at.as_str()).map(|s| &self.jobs[&s]) else {
            return false;
        };
        for next in &job.def.after {
            path.push(next.clone());
            if self.walk_after(path, to, seen) {
                return true;
            }
            path.pop();
        }
        false
    }

    /// The gate at the downstream `seq`'s due time `at`.
    fn gate_at(&self, seq: JobSeq, at: Timestamp) -> Gate {
        let Some(job) = self.jobs.get(&seq) else {
            return Gate::Shut;
        };
        let mut through = Timestamp::MAX;
        let mut shut = false;
        for upstream in &job.def.after {
            let fate = match self.seq_of(upstream.as_str()).map(|s| &self.jobs[&s]) {
                None => Some((UpstreamFate::Gone, at)),
                Some(up) if !up.has_due_time(at, &job.def) => Some((UpstreamFate::NotDue, at)),
                Some(_) => job.heard.as_deref().and_then(|h| h.fate_at(upstream, at)),
            };
            match fate {
                None => shut = true,
                Some((UpstreamFate::Ok, to)) => through = through.min(to),
                Some((fate, _)) => {
                    return Gate::NotOk {
                        upstream: upstream.clone(),
                        fate,
                    }
                }
            }
        }
        if shut {
            Gate::Shut
        } else {
            Gate::Open { through }
        }
    }

    /// Lets the front of a downstream's line through the gate: skips, one by one, the due
    /// times an upstream did not settle `ok`, and says what the front may do then. A job
    /// without `after` is always `Open` (through the end of time).
    pub(super) fn open_front(&mut self, seq: JobSeq, out: &mut Out) -> Front {
        loop {
            let Some(job) = self.jobs.get(&seq) else {
                return Front::Empty;
            };
            let Some(front) = job.act().and_then(|a| a.pending.front()).map(|o| o.from) else {
                return Front::Empty;
            };
            if job.def.after.is_empty() {
                return Front::Open {
                    through: Timestamp::MAX,
                };
            }
            let (upstream, fate) = match self.gate_at(seq, front) {
                Gate::Open { through } => return Front::Open { through },
                Gate::Shut => return Front::Shut,
                Gate::NotOk { upstream, fate } => (upstream, fate),
            };
            let Some(job) = self.jobs.get_mut(&seq) else {
                return Front::Empty;
            };
            job.skip_front_for(upstream, fate, out);
        }
    }

    /// At the end of a step: every journal record (from `start` on) of a job others wait
    /// for is delivered to them; a ledger entry's range and fate is heard by each, and each
    /// is let through its gate at once (starting on `process` if it may claim, else on the
    /// next tick). Records this pass writes (a downstream's skips) are read too, so a
    /// chain settles in one step.
    pub(super) fn hear_upstreams(
        &mut self,
        out: &mut Out,
        start: usize,
        process: Option<ProcessId>,
    ) {
        if self.downstreams.is_empty() {
            return;
        }
        let mut i = start;
        while i < out.effects.len() {
            let Effect::Journal(Record {
                job: name, entry, ..
            }) = &out.effects[i]
            else {
                i += 1;
                continue;
            };
            i += 1;
            let downstreams = self.downstreams.of(name.as_str());
            if downstreams.is_empty() {
                continue;
            }
            let heard = match entry {
                Entry::Ledger(e) => Some(HeardRange {
                    upstream: name.clone(),
                    from: e.from,
                    to: e.to,
                    fate: UpstreamFate::of(e.kind),
                }),
                Entry::History(_) => None,
            };
            for seq in downstreams {
                if let (Some(h), Some(job)) = (&heard, self.jobs.get_mut(&seq)) {
                    let schedule = &job.def.schedule;
                    job.heard
                        .get_or_insert_with(Default::default)
                        .hear(h.clone(), schedule);
                }
                self.advance_downstream(seq, process, out);
            }
        }
    }

    /// Lets a downstream through its gate now: started on `process` when it may claim,
    /// else only its skips are recorded and the next tick starts it (its wake says so).
    fn advance_downstream(&mut self, seq: JobSeq, process: Option<ProcessId>, out: &mut Out) {
        let now = out.now;
        match process.filter(|&p| self.can_claim(p, now)) {
            Some(p) => self.try_start(seq, now, p, out),
            None => {
                self.open_front(seq, out);
            }
        }
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.tidy();
        }
        self.reindex(seq);
    }
}

impl JobRecord {
    /// Whether this job (as an upstream) has `at` as a due time of `downstream`'s schedule:
    /// the same schedule, confirmed, accounting from before `at`.
    fn has_due_time(&self, at: Timestamp, downstream: &JobDef) -> bool {
        self.def.schedule == downstream.schedule
            && !self.is_unconfirmed()
            && self.accounted_from.is_none_or(|from| from < at)
    }

    /// Whether every upstream has told the fate of the front's due time (or the job owes
    /// nothing, or waits for no one): then a tick has something to do for the line.
    pub(crate) fn front_told(&self) -> bool {
        let Some(front) = self.act().and_then(|a| a.pending.front()) else {
            return true;
        };
        self.def.after.iter().all(|u| {
            self.heard
                .as_deref()
                .is_some_and(|h| h.fate_at(u, front.from).is_some())
        })
    }

    /// Skips the front's first due time: `upstream` settled it `fate`, not `ok`.
    fn skip_front_for(&mut self, upstream: JobName, fate: UpstreamFate, out: &mut Out) {
        let Some(at) = self.take_front_one() else {
            return;
        };
        out.history(&self.def.name, History::UpstreamNotOk { upstream, fate });
        self.note_missed(1, out.now);
        let name = self.def.name.clone();
        out.ledger(&name, at, at, 1, skipped(MissCause::Upstream));
    }
}

/// The process an event comes from, when it is one a run may start on.
pub(super) fn process_of(event: &Event) -> Option<ProcessId> {
    match event {
        Event::ProcessStarted { process }
        | Event::Tick { process, .. }
        | Event::Adopt { process, .. }
        | Event::RunFinished { process, .. } => Some(*process),
        _ => None,
    }
}
