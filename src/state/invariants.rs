//! What a state must satisfy, checked on every load and (in tests and the simulator)
//! after every step: each record on its own and against the counters and config, the
//! derived indexes against the records, and the whole state's counts.

use crate::effect::MissCause;
use crate::event::RunId;
use crate::inconsistency::Inconsistency;
use crate::job::{JobName, REQUIRED_BATCH};
use crate::jobs::JobSeq;
use crate::schedule::Schedule;
use crate::time::Timestamp;

use super::load::check_owner;
use super::{wake_of, Activity, Config, HeldDef, HoldCounts, JobRecord, State, MAX_OWED_SEGMENTS};

impl State {
    /// Everything loading checks of a state whose indexes are built: `check_invariants`
    /// and the owed segments' counts. What a host or simulator asks of a state before it
    /// commits it, so that nothing is stored that would not load.
    ///
    /// # Errors
    ///
    /// The first invariant broken.
    pub fn self_check(&self) -> Result<(), Inconsistency> {
        self.check_invariants()?;
        self.jobs
            .iter()
            .try_for_each(|(_, job)| check_owed_counts_of(job))
    }

    /// `self_check` of what a step can have changed, for a host or simulator that checks
    /// every step and cannot pay for the whole check each time: the records of the jobs
    /// the step handed out for change (`take_touched`'s list, removed jobs included) with
    /// their index entries and owed counts, and the whole-state checks that cost little
    /// (the indexes' sizes, every open run's index entry, the owner lease, the held
    /// clocks). A record the step did not hand out is as the last whole check found it
    /// (`track_changes` names every job a step can change, which the simulator's store of
    /// rows holds the core to). Left to `self_check`: the concurrency indexes rebuilt from
    /// every job, and an untouched job's entry in the name or wake index that a step
    /// overwrote; so a caller runs `self_check` now and then as well (the simulator: every
    /// 16 committed steps), and `Err` here is always an `Err` of `self_check` too.
    ///
    /// # Errors
    ///
    /// The first invariant broken among those it checks.
    pub fn self_check_touched(&self, touched: &[JobSeq]) -> Result<(), Inconsistency> {
        for &seq in touched {
            // A removed job: the sizes below hold its index entries to the table's.
            let Some(job) = self.jobs.get(&seq) else {
                continue;
            };
            self.check_indexed(seq, job)?;
            check_owed_counts_of(job)?;
            if !crate::lanes::LaneEntry::matches(job.lane.as_deref(), job) {
                let job = job.def.name.clone();
                return Err(Inconsistency::LaneEntryStale { job });
            }
        }
        // Each touched job's open run is in the run index (above); each entry of the index
        // names a job whose open run it is: so the index holds exactly the open runs.
        let stray = |(id, seq): (&RunId, &JobSeq)| {
            self.jobs.get(seq).and_then(JobRecord::run).map(|r| r.id) != Some(*id)
        };
        if self.runs.iter().any(stray) {
            return Err(Inconsistency::RunIndexExtra);
        }
        self.check_whole_state()
    }

    /// Checks what must always hold; `Err` names the first broken invariant. Run after every
    /// step in debug builds; on load always.
    ///
    /// # Errors
    ///
    /// The first invariant broken.
    pub fn check_invariants(&self) -> Result<(), Inconsistency> {
        // The job table in sequence order once for both walks (it is a hash map: each
        // ordered walk sorts).
        let jobs: Vec<_> = self.jobs.iter().collect();
        let (mut runs, mut listed, mut named) = (0, 0, 0);
        for &(&seq, job) in &jobs {
            self.check_indexed(seq, job)?;
            runs += usize::from(job.run().is_some());
            listed += usize::from(!job.def.after.is_empty());
            named += job.def.after.len();
        }
        if runs != self.runs.len() {
            return Err(Inconsistency::RunIndexExtra);
        }
        // Every job lists itself exactly (`check_indexed`), so sizes that agree leave no
        // entry of a job that is gone.
        if self.downstreams.sizes() != (listed, named) {
            return Err(Inconsistency::IndexSizes);
        }
        self.check_whole_state()?;
        self.check_lanes_of(&jobs)
    }

    /// One job's record, on its own and against the counters and config, and its entries
    /// in the name, wake and run indexes.
    fn check_indexed(&self, seq: JobSeq, job: &JobRecord) -> Result<(), Inconsistency> {
        let name = || job.def.name.clone();
        if self.by_name.get(&job.def.name) != Some(&seq) {
            return Err(Inconsistency::NameIndexStale { job: name() });
        }
        if job.next_due != job.def.schedule.next_after(job.frontier) {
            return Err(Inconsistency::NextDueStale { job: name() });
        }
        if wake_of(job, &self.config) != job.wake {
            return Err(Inconsistency::WakeStale { job: name() });
        }
        if job.wake.is_some_and(|w| !self.wake.contains(&(w, seq))) {
            return Err(Inconsistency::MissingFromWakeIndex { job: name() });
        }
        if !self.downstreams.lists(seq, &job.def.after) {
            return Err(Inconsistency::AfterIndexStale { job: name() });
        }
        check_record(job, &self.config, self.next_run, self.next_fence)?;
        match job.run() {
            Some(run) if self.runs.get(&run.id) != Some(&seq) => {
                Err(Inconsistency::MissingFromRunIndex {
                    job: name(),
                    run: run.id,
                })
            }
            _ => Ok(()),
        }
    }

    /// The checks of the state as a whole that cost little: the indexes' sizes against
    /// the table's, the owner lease, the held clocks' count.
    fn check_whole_state(&self) -> Result<(), Inconsistency> {
        if self.by_name.len() != self.jobs.len() || self.wake.len() > self.jobs.len() {
            return Err(Inconsistency::IndexSizes);
        }

        check_owner(&self.config, self.owner, &self.processes, self.next_fence)?;
        if self.holds != HoldCounts::of(&self.processes) {
            return Err(Inconsistency::HeldClockCountStale);
        }
        Ok(())
    }
}

/// What one job's record must satisfy on its own and against the counters and config,
/// whatever the indexes say: part of `check_invariants`, and what `put_parts` checks of a
/// record before taking it in.
pub(crate) fn check_record(
    job: &JobRecord,
    config: &Config,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let name = || job.def.name.clone();
    if job.watched_since.is_some() != job.def.expect_success_within.is_some() {
        return Err(Inconsistency::WatchOutOfStep { job: name() });
    }
    if let Some(count) = job
        .heard
        .as_deref()
        .map(|h| h.len())
        .filter(|&n| n > super::MAX_HEARD)
    {
        return Err(Inconsistency::TooManyHeard { job: name(), count });
    }
    if let Some(count) = job
        .upstream_schedules
        .as_deref()
        .map(|s| s.len())
        .filter(|&n| n > super::MAX_UPSTREAM_SCHEDULES)
    {
        return Err(Inconsistency::TooManyUpstreamSchedules { job: name(), count });
    }
    for (i, &incident) in job.incidents.iter().enumerate() {
        if job.incidents[..i].contains(&incident) {
            return Err(Inconsistency::IncidentRepeated {
                job: name(),
                incident,
            });
        }
    }
    if let Some(end) = job.ended {
        // Only a one-shot ends, and only once its instant is looked at and nothing still
        // covers it.
        let Schedule::At { instant } = job.def.schedule else {
            return Err(Inconsistency::EndedNotOneShot { job: name(), end });
        };
        if !job.one_shot_settled(instant) {
            return Err(Inconsistency::EndedUnsettled {
                job: name(),
                end,
                instant,
            });
        }
    }
    match job.act() {
        Some(a) => check_activity(&job.def.name, a, job.frontier, config, next_run, next_fence),
        None => Ok(()),
    }
}

/// `check_record` of a job's activity: bounded histories, owed segments in order and
/// behind the frontier, one run or one retry, a consistent confirmation and run.
fn check_activity(
    name: &JobName,
    a: &Activity,
    frontier: Timestamp,
    config: &Config,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let job = || name.clone();
    if a.pending.len() > MAX_OWED_SEGMENTS {
        let count = a.pending.len();
        return Err(Inconsistency::TooManyOwedSegments { job: job(), count });
    }
    if a.manual_recent.len() > config.manual_per_hour as usize {
        return Err(Inconsistency::ManualHistoryOverCap { job: job() });
    }
    if a.missed_recent.len() > 25 {
        return Err(Inconsistency::MissedHistoryOverDay { job: job() });
    }
    let mut last_to = None;
    for o in &a.pending {
        if o.count == 0 || o.from > o.to || last_to.is_some_and(|t| o.from <= t) {
            return Err(Inconsistency::OwedOutOfOrder { job: job() });
        }
        if o.to > frontier {
            return Err(Inconsistency::OwedBeyondFrontier { job: job() });
        }
        last_to = Some(o.to);
    }
    // A run and a retry at once, a wait for room while running, an unconfirmed job
    // without its definition or with a run: no `Phase` holds these (refused on reading).
    if a.is_unconfirmed() && !a.pending.is_empty() {
        return Err(Inconsistency::UnconfirmedNotClean { job: job() });
    }
    if let Some(held) = a.held().map(HeldDef::def).filter(|h| h.name != *name) {
        let held = held.name.clone();
        return Err(Inconsistency::HoldsOtherDefinition { job: job(), held });
    }
    check_open_run(name, a, next_run, next_fence)
}

/// `check_activity` of what a run or retry covers and of the open run.
fn check_open_run(
    name: &JobName,
    a: &Activity,
    next_run: u64,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let job = || name.clone();
    // What a run or a retry covers is settled as one ledger entry, which needs at
    // least one due time in order.
    let run_cover = a.run().and_then(|r| r.cover);
    let retry_cover = a.retry().map(|r| r.cover);
    if let Some(c) = run_cover
        .into_iter()
        .chain(retry_cover)
        .find(|c| c.covers.count == 0 || c.covers.from > c.covers.to)
    {
        let covers = c.covers;
        return Err(Inconsistency::EmptyCover { job: job(), covers });
    }
    let Some(run) = a.run() else { return Ok(()) };
    if run.fence.0 >= next_fence || run.id.0 >= next_run {
        return Err(Inconsistency::RunAheadOfCounters {
            job: job(),
            run: run.id,
        });
    }
    // (A parked run with a cancel sent: no `RunStage` holds it; reading refuses it.)
    Ok(())
}

/// On load, beyond `check_invariants` (too costly for every step): an owed segment of the
/// job's that will be started in pieces (a `required` catch-up over `REQUIRED_BATCH`,
/// buffered overlaps one by one) starts and ends on a due time of its schedule and counts
/// exactly the due times between, which walking it relies on. Smaller segments are started
/// whole and may hold a failed run's due times from a schedule since replaced, so they are
/// not held to the current one.
pub(crate) fn check_owed_counts_of(job: &JobRecord) -> Result<(), Inconsistency> {
    let Some(a) = job.act() else { return Ok(()) };
    for o in &a.pending {
        // Walked in pieces, or open to merging (an untagged segment is the current
        // schedule's and the next owed due time may join it): it must hold exactly
        // the due times it says. A tagged segment of at most one batch is started
        // whole, and merged only once it is found exact (`Activity::make_room`), so
        // its instants are all that matter.
        let walked = o.count > REQUIRED_BATCH || (o.cause == MissCause::Overlap && o.count > 1);
        if !walked && o.schedule.is_some() {
            continue;
        }
        if !o.holds_exactly(o.schedule.as_deref().unwrap_or(&job.def.schedule)) {
            return Err(Inconsistency::OwedCountWrong {
                job: job.def.name.clone(),
                from: o.from,
                to: o.to,
                count: o.count,
            });
        }
    }
    Ok(())
}
