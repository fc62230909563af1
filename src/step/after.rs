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
use crate::state::{is_run, told_alone_until, Heard, HeardOf, HeardRange, JobRecord, State};
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

    /// The gate at the first due time `at` of the downstream `seq`'s front segment: the
    /// fate each upstream gave its due time at the same instant. A batch may run through
    /// the last due time of an `ok` range only when the range's due times are the
    /// segment's schedule's (an earlier one, for a segment owed before the job was
    /// redefined); else through `at` alone.
    fn gate_at(&self, seq: JobSeq, at: Timestamp, out: &Out) -> Gate {
        let Some(job) = self.jobs.get(&seq) else {
            return Gate::Shut;
        };
        let mut through = Timestamp::MAX;
        let mut shut = false;
        for upstream in &job.def.after {
            let fate = match self.seq_of(upstream.as_str()).map(|s| &self.jobs[&s]) {
                None => Some((UpstreamFate::Gone, at)),
                Some(up) if up.def.schedule != job.def.schedule => Some((UpstreamFate::NotDue, at)),
                Some(up) => self.fate_told(job, up, at, out),
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

    /// What `up` (an upstream of `job`, both of one schedule) told of its due time at `at`,
    /// the front's first: its fate, and the last due time a batch may reach by it (`at`
    /// alone unless the range told is of the segment's schedule, and never into a newer
    /// entry of the upstream that settled instants again). `None`: it may still settle it.
    fn fate_told(
        &self,
        job: &JobRecord,
        up: &JobRecord,
        at: Timestamp,
        out: &Out,
    ) -> Option<(UpstreamFate, Timestamp)> {
        let own = &job.def.schedule;
        let front = job.act().and_then(|a| a.pending.front());
        let segment = front.and_then(|o| o.schedule.as_deref()).unwrap_or(own);
        let upstream = &up.def.name;
        // Settled earlier in this step (heard only at its end), or before.
        let (range, alone) = match self.settled_in_step(out, job, upstream, at, segment) {
            Some((range, alone)) => (range, alone),
            None => match job.heard_at(upstream, at, segment) {
                Some((range, alone)) => {
                    let alone = newer_in_step(out, upstream, at, alone, None);
                    (range.clone(), alone)
                }
                None if up.still_holds(at, out.now) => return None,
                None if job.heard.as_deref().is_some_and(Heard::is_full) => {
                    return Some((UpstreamFate::Forgotten, at))
                }
                None => return Some((UpstreamFate::Unheard, at)),
            },
        };
        let through = if range.is_of(segment, own) { alone } else { at };
        Some((range.fate, through))
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
            self.index_upstream_entries(out);
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

    /// At the end of a step: every ledger entry of the step of a job others wait for
    /// is heard by them (its range and fate), then each downstream that heard anything of
    /// its upstreams, or whose own line a person changed, is let through its gate at once
    /// (starting on `process` if it may claim, else on the next tick). All of a round's
    /// entries are heard before any downstream moves, since an upstream's other lines of
    /// the step (its `settled`) come before its entry. What the downstreams write (their
    /// skips) is read in the next round, so a chain settles in one step.
    pub(super) fn hear_upstreams(&mut self, out: &mut Out, process: Option<ProcessId>) {
        if self.downstreams.is_empty() {
            return;
        }
        let mut from = out.start;
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
            // Or its line moved (an entry of its own): its new front may be decided
            // already, with no range heard (an upstream that settled it long ago, or is
            // gone), and would wait for nothing.
            let (moved_own, reopens) = (matches!(entry, Entry::Ledger(_)), reopens_line(entry));
            let updated = matches!(entry, Entry::History(History::Updated { .. }));
            let own_seq = (moved_own || reopens || updated)
                .then(|| self.seq_of(name.as_str()))
                .flatten()
                .filter(|&s| self.downstreams.lists_any(s));
            let reopened = own_seq.filter(|_| moved_own || reopens);
            // A job moving out is no fate of its due times: its chain moves with it, in
            // the same transaction (`duetime_loop::relocate_chain`), and its downstreams
            // here, still to go, must not hear it as gone on the way.
            if matches!(entry, Entry::History(History::MovedOut { .. })) {
                continue;
            }
            let downstreams = self.downstreams.of(name.as_str());
            // A new definition (or one moved in) may bring a new schedule: noted, for
            // the entries of it still to come (`heard_range`).
            if reopens || updated {
                self.note_upstream_schedule(name, &downstreams);
                if let Some(seq) = own_seq {
                    self.note_schedules_of_upstreams(seq);
                }
            }
            if let Entry::Ledger(e) = entry {
                for &seq in &downstreams {
                    let range = self.jobs.get(&seq).map(|j| self.heard_range(j, name, e));
                    let (Some(range), Some(job)) = (range, self.jobs.get_mut(&seq)) else {
                        continue;
                    };
                    let schedule = &job.def.schedule;
                    let runs = |r: &HeardRange| is_run(schedule, r.from, r.to, r.count);
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

    /// Notes the schedule `upstream` has now (if it is still defined) on each of its
    /// `downstreams`: an entry it writes later may be a run of it (`heard_range`).
    fn note_upstream_schedule(&mut self, upstream: &JobName, downstreams: &[JobSeq]) {
        let Some(up) = self
            .seq_of(upstream.as_str())
            .filter(|_| !downstreams.is_empty())
        else {
            return;
        };
        let schedule = self.jobs[&up].def.schedule.clone();
        for seq in downstreams {
            if let Some(job) = self.jobs.get_mut(seq) {
                let seen = job.upstream_schedules.get_or_insert_with(Default::default);
                seen.note(upstream, &schedule);
            }
        }
    }

    /// Notes the schedules the downstream `seq`'s upstreams have now (it was defined, or
    /// moved in).
    fn note_schedules_of_upstreams(&mut self, seq: JobSeq) {
        let Some(after) = self.jobs.get(&seq).map(|j| j.def.after.clone()) else {
            return;
        };
        for upstream in &after {
            self.note_upstream_schedule(upstream, &[seq]);
        }
    }

    /// What the downstream `down` hears of `upstream`'s ledger entry `e`: its range, with
    /// the schedule whose due times it holds when that is not the downstream's own (one
    /// either job still owes due times of, the upstream's, or one the upstream had since
    /// the downstream waits for it), or else `Unknown`. (A range of one is tagged too, so
    /// that it merges with the ranges of its schedule.)
    fn heard_range(
        &self,
        down: &JobRecord,
        upstream: &JobName,
        e: &crate::effect::LedgerEntry,
    ) -> HeardRange {
        let mut range = HeardRange {
            upstream: upstream.clone(),
            from: e.from,
            to: e.to,
            count: e.count,
            fate: UpstreamFate::of(e.kind),
            of: HeardOf::Own,
        };
        let runs = |s: &crate::schedule::Schedule| is_run(s, e.from, e.to, e.count);
        if runs(&down.def.schedule) {
            return range;
        }
        let up = self.seq_of(upstream.as_str()).map(|s| &self.jobs[&s]);
        let seen = down.upstream_schedules.as_deref();
        let found = earlier_schedules(down)
            .chain(up.map(|u| &u.def.schedule))
            .chain(up.into_iter().flat_map(earlier_schedules))
            .chain(seen.into_iter().flat_map(|s| s.of(upstream)))
            .find(|s| runs(s));
        range.of = match found {
            Some(s) => HeardOf::Schedule(Box::new(s.clone())),
            // A range of one is an instant, whatever its schedule.
            None if e.count == 1 => HeardOf::Own,
            None => HeardOf::Unknown,
        };
        range
    }

    /// The range of `upstream`'s newest ledger entry written earlier in this step that
    /// holds instant `at` (a due time of `reading`), as the downstream `down` would hear it.
    fn settled_in_step(
        &self,
        out: &Out,
        down: &JobRecord,
        upstream: &JobName,
        at: Timestamp,
        reading: &crate::schedule::Schedule,
    ) -> Option<(HeardRange, Timestamp)> {
        let entries = &out.upstream_entries.at;
        entries
            .iter()
            .enumerate()
            .rev()
            .find_map(|(k, &i)| match &out.effects[i] {
                Effect::Journal(Record {
                    job,
                    entry: Entry::Ledger(l),
                    ..
                }) if job == upstream && l.from <= at && at <= l.to => {
                    let range = self.heard_range(down, upstream, l);
                    let alone = newer_in_step(out, upstream, at, range.to, Some(k));
                    range
                        .holds(at, &down.def.schedule, reading)
                        .then_some((range, alone))
                }
                _ => None,
            })
    }

    /// Reads this step's effects not read yet for ledger entries of jobs others wait for
    /// (`Out::upstream_entries`).
    fn index_upstream_entries(&self, out: &mut Out) {
        let from = out.upstream_entries.read_to.max(out.start);
        for (i, e) in out.effects.iter().enumerate().skip(from) {
            if let Effect::Journal(Record {
                job,
                entry: Entry::Ledger(_),
                ..
            }) = e
            {
                if self.downstreams.is_upstream(job.as_str()) {
                    out.upstream_entries.at.push(i);
                }
            }
        }
        out.upstream_entries.read_to = out.effects.len();
    }
}

impl JobRecord {
    /// Whether this job (as an upstream) may still settle its due time `at` (a due time
    /// of a downstream at `now`): it has not looked at it yet and its schedule has it, or it
    /// owes it, or its open run or its retry covers it. (Else its ledger settled it
    /// already, or it was never one of its due times: before its definition and not
    /// backfilled, or an instant its schedule never has, as a one-shot's.) A new job waiting for
    /// its confirmation holds none up to `now`: its schedule begins at its confirmation,
    /// not before the clock it is confirmed at (`confirm`), so its frontier, which stands
    /// still meanwhile, says nothing of them.
    fn still_holds(&self, at: Timestamp, now: Timestamp) -> bool {
        // A due time ahead is one it may settle only if its schedule has it.
        let due = || self.def.schedule.is_due(at);
        if self.is_unconfirmed() {
            return at > self.frontier.max(now) && due();
        }
        if at > self.frontier {
            return due();
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
        let reading = front.schedule.as_deref().unwrap_or(&self.def.schedule);
        self.def
            .after
            .iter()
            .all(|u| self.heard_at(u, front.from, reading).is_some())
    }

    /// The newest range heard of `upstream` that tells the fate of its due time at instant
    /// `at`, a due time of `reading` (the schedule of the segment it is owed in).
    fn heard_at(
        &self,
        upstream: &JobName,
        at: Timestamp,
        reading: &crate::schedule::Schedule,
    ) -> Option<(&HeardRange, Timestamp)> {
        self.heard
            .as_deref()?
            .range_at(upstream, at, &self.def.schedule, reading)
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

/// `alone` (the last instant after `at` a range of `upstream` tells) cut before this step's
/// entries of `upstream` that settled instants after `at` again: those after the `k`-th of
/// the step's upstream entries, or all of them (`None`: the range was heard before).
fn newer_in_step(
    out: &Out,
    upstream: &JobName,
    at: Timestamp,
    alone: Timestamp,
    k: Option<usize>,
) -> Timestamp {
    let later = &out.upstream_entries.at[k.map_or(0, |k| k + 1)..];
    later.iter().fold(alone, |end, &i| match &out.effects[i] {
        Effect::Journal(Record {
            job,
            entry: Entry::Ledger(l),
            ..
        }) if job == upstream => end.min(told_alone_until(at, end, (l.from, l.to))),
        _ => end,
    })
}

/// The earlier schedules a job still owes due times of (its owed segments' tags).
fn earlier_schedules(job: &JobRecord) -> impl Iterator<Item = &crate::schedule::Schedule> {
    let segments = job.act().into_iter().flat_map(|a| a.pending.iter());
    segments.filter_map(|o| o.schedule.as_deref())
}

/// Whether a journal record is a person's change to its job's own line, after which a
/// downstream's front is looked at again. Not a job moved in: its chain moves in with it,
/// upstreams first, in the same transaction (`duetime_loop::relocate_chain`), and a gate
/// opened on the way would write entries its downstreams, still to come, never hear. What
/// it brought (its line, what it heard) is looked at by the next tick, the whole chain here.
fn reopens_line(entry: &Entry) -> bool {
    matches!(
        entry,
        Entry::History(
            History::Backfill { .. }
                | History::Resumed { .. }
                | History::Defined { .. }
                | History::Confirmed { .. }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::{LedgerEntry, LedgerKind};
    use crate::event::RunId;

    fn minute(m: i64) -> Timestamp {
        Timestamp::from_millis(m * 60_000)
    }

    fn entry(job: &str, from: i64, to: i64, count: u64) -> Effect {
        Effect::Journal(Record {
            at: minute(0),
            job: JobName::new(job).unwrap(),
            entry: Entry::Ledger(LedgerEntry {
                from: minute(from),
                to: minute(to),
                count,
                kind: LedgerKind::FailedOut { run: RunId(1) },
            }),
        })
    }

    /// A range read for `extract` is cut only by `extract`'s own later entries of the step,
    /// never by another upstream's.
    #[test]
    fn a_range_is_cut_only_by_its_own_upstreams_newer_entries_of_the_step() {
        let mut effects = vec![
            entry("extract", 0, 180, 4),
            entry("other", 60, 60, 1),
            entry("extract", 120, 120, 1),
        ];
        let out = Out {
            now: minute(200),
            effects: &mut effects,
            start: 0,
            upstream_entries: super::super::UpstreamEntries {
                read_to: 3,
                at: vec![0, 1, 2],
            },
        };
        let extract = JobName::new("extract").unwrap();
        let other = JobName::new("other").unwrap();
        let before = |m: i64| minute(m).saturating_sub(crate::time::Duration::from_millis(1));
        assert_eq!(
            newer_in_step(&out, &extract, minute(0), minute(180), Some(0)),
            before(120)
        );
        assert_eq!(
            newer_in_step(&out, &extract, minute(0), minute(180), None),
            minute(0)
        );
        assert_eq!(
            newer_in_step(&out, &other, minute(0), minute(180), Some(1)),
            minute(180)
        );
        assert_eq!(
            newer_in_step(&out, &extract, minute(130), minute(180), Some(2)),
            minute(180)
        );
    }
}
