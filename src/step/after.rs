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

    /// The shortest chain of `after` from `from` to `to`, `from` first and `to` last (of
    /// chains as short, the one that follows each job's upstreams in their order).
    fn chain_back_to(&self, from: &JobName, to: &JobName) -> Option<Vec<JobName>> {
        // Breadth-first over the definitions in force, each job once (the graph of a
        // state that refused every cycle is acyclic, but a stored state is not trusted).
        let mut paths = std::collections::VecDeque::from([vec![from.clone()]]);
        let mut seen = std::collections::BTreeSet::new();
        while let Some(path) = paths.pop_front() {
            let at = path.last()?;
            if at == to {
                return Some(path);
            }
            if !seen.insert(at.clone()) {
                continue;
            }
            let Some(job) = self.seq_of(at.as_str()).map(|s| &self.jobs[&s]) else {
                continue;
            };
            for next in &job.def.after {
                let mut longer = path.clone();
                longer.push(next.clone());
                paths.push_back(longer);
            }
        }
        None
    }

    /// The gate at the first due time `at` of the downstream `seq`'s front segment. The
    /// segment's own schedule (an earlier one, for a segment owed before the job was
    /// redefined) says which upstream entries are about it.
    fn gate_at(&self, seq: JobSeq, at: Timestamp, out: &Out) -> Gate {
        let Some(job) = self.jobs.get(&seq) else {
            return Gate::Shut;
        };
        let front = job.act().and_then(|a| a.pending.front());
        let schedule = front
            .and_then(|o| o.schedule.as_deref())
            .unwrap_or(&job.def.schedule);
        let mut through = Timestamp::MAX;
        let mut shut = false;
        for upstream in &job.def.after {
            let heard = || {
                let fits = |r: &HeardRange| runs_of(schedule, r.from, r.to, r.count);
                let range = job.heard.as_deref()?.range_at(upstream, at, fits)?;
                Some((range.fate, range.to))
            };
            let fate = match self.seq_of(upstream.as_str()).map(|s| &self.jobs[&s]) {
                None => Some((UpstreamFate::Gone, at)),
                Some(up) if up.def.schedule != job.def.schedule => Some((UpstreamFate::NotDue, at)),
                Some(up) => match heard() {
                    Some(told) => Some(told),
                    None if up.still_holds(at, out.now) => None,
                    // Settled earlier in this step: heard only at its end.
                    None => Some(
                        settled_in_step(out, upstream, at, schedule)
                            .unwrap_or((UpstreamFate::Unheard, at)),
                    ),
                },
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
            let (upstream, fate) = match self.gate_at(seq, front, out) {
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

    /// At the end of a step: every ledger entry (from `start` on) of a job others wait for
    /// is heard by them (its range and fate), then each downstream that heard anything of
    /// its upstreams, or whose own line a person changed, is let through its gate at once
    /// (starting on `process` if it may claim, else on the next tick). All of a round's
    /// entries are heard before any downstream moves, since an upstream's other lines of
    /// the step (its `settled`) come before its entry. What the downstreams write (their
    /// skips) is read in the next round, so a chain settles in one step.
    pub(super) fn hear_upstreams(
        &mut self,
        out: &mut Out,
        start: usize,
        process: Option<ProcessId>,
    ) {
        if self.downstreams.is_empty() {
            return;
        }
        let mut from = start;
        while from < out.effects.len() {
            let end = out.effects.len();
            let moved = self.hear_round(&out.effects[from..end]);
            for seq in moved {
                self.advance_downstream(seq, process, out);
            }
            from = end;
        }
    }

    /// One round of `hear_upstreams`: hears the entries of `records`, and says which
    /// downstreams to let through their gates, each once, in the order they came up.
    fn hear_round(&mut self, records: &[Effect]) -> Vec<JobSeq> {
        let mut moved: Vec<JobSeq> = Vec::new();
        for effect in records {
            let Effect::Journal(Record {
                job: name, entry, ..
            }) = effect
            else {
                continue;
            };
            // A person changed a downstream's own line (a backfill, a resume, a new
            // definition): its front may be decided already (`JobRecord::front_told`
            // knows only the fates heard, not an upstream that no longer holds a time).
            let reopened = reopens_line(entry)
                .then(|| self.seq_of(name.as_str()))
                .flatten()
                .filter(|&s| self.downstreams.lists_any(s));
            let downstreams = self.downstreams.of(name.as_str());
            if let Entry::Ledger(e) = entry {
                for &seq in &downstreams {
                    let Some(job) = self.jobs.get_mut(&seq) else {
                        continue;
                    };
                    let range = HeardRange {
                        upstream: name.clone(),
                        from: e.from,
                        to: e.to,
                        count: e.count,
                        fate: UpstreamFate::of(e.kind),
                    };
                    let schedule = &job.def.schedule;
                    let runs = |r: &HeardRange| runs_of(schedule, r.from, r.to, r.count);
                    job.heard
                        .get_or_insert_with(Default::default)
                        .hear(range, schedule, runs);
                }
            }
            for seq in reopened.into_iter().chain(downstreams) {
                if !moved.contains(&seq) {
                    moved.push(seq);
                }
            }
        }
        moved
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
    /// Whether this job (as an upstream) may still settle its due time `at` (a due time
    /// of a downstream at `now`): it has not looked at it yet, or owes it, or its open run
    /// or its retry covers it. (Else its ledger settled it already, or it was never one of
    /// its due times: before its definition, and not backfilled.) A new job waiting for
    /// its confirmation holds none up to `now`: its schedule begins at its confirmation,
    /// not before the clock it is confirmed at (`confirm`), so its frontier, which stands
    /// still meanwhile, says nothing of them.
    fn still_holds(&self, at: Timestamp, now: Timestamp) -> bool {
        if self.is_unconfirmed() {
            return at > self.frontier.max(now);
        }
        if at > self.frontier {
            return true;
        }
        let Some(act) = self.act() else {
            return false;
        };
        let covered = |c: Option<crate::state::Cover>| {
            c.is_some_and(|c| c.covers.from <= at && at <= c.covers.to)
        };
        act.pending.iter().any(|o| o.from <= at && at <= o.to)
            || covered(act.run().and_then(|r| r.cover))
            || covered(act.retry().map(|r| r.cover))
    }

    /// Whether every upstream has told the fate of the front's due time (or the job owes
    /// nothing, or waits for no one): then a tick has something to do for the line.
    pub(crate) fn front_told(&self) -> bool {
        let Some(front) = self.act().and_then(|a| a.pending.front()) else {
            return true;
        };
        let schedule = front.schedule.as_deref().unwrap_or(&self.def.schedule);
        self.def.after.iter().all(|u| {
            self.heard
                .as_deref()
                .and_then(|h| {
                    let fits = |r: &HeardRange| runs_of(schedule, r.from, r.to, r.count);
                    h.range_at(u, front.from, fits)
                })
                .is_some()
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

/// Whether an upstream's entry covers exactly a run of `schedule`'s due times: `from` and
/// `to` are two of them and `count` is how many lie from one to the other. Only such an
/// entry tells a downstream (whose schedule it is) anything: one written under another
/// schedule may span its due times without being about them.
fn runs_of(
    schedule: &crate::schedule::Schedule,
    from: Timestamp,
    to: Timestamp,
    count: u64,
) -> bool {
    let before = from.saturating_sub(crate::time::Duration::from_millis(1));
    schedule.next_after(before) == Some(from)
        && super::last_due(schedule, before, to) == Some(to)
        && schedule.count_in(before, to) == count
}

/// The fate of `upstream`'s due time `at` as an entry written earlier in this step tells
/// it (and the last due time of that entry).
fn settled_in_step(
    out: &Out,
    upstream: &JobName,
    at: Timestamp,
    schedule: &crate::schedule::Schedule,
) -> Option<(UpstreamFate, Timestamp)> {
    out.effects[out.start..].iter().rev().find_map(|e| match e {
        Effect::Journal(Record {
            job,
            entry: Entry::Ledger(l),
            ..
        }) if job == upstream
            && l.from <= at
            && at <= l.to
            && runs_of(schedule, l.from, l.to, l.count) =>
        {
            Some((UpstreamFate::of(l.kind), l.to))
        }
        _ => None,
    })
}

/// Whether a journal record is a person's change to its job's own line, after which a
/// downstream's front is looked at again.
fn reopens_line(entry: &Entry) -> bool {
    matches!(
        entry,
        Entry::History(
            History::Backfill { .. }
                | History::Resumed { .. }
                | History::Defined { .. }
                | History::Confirmed { .. }
                | History::MovedIn { .. }
        )
    )
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
