//! A2, a stall is watched for: while a run runs (not parked) and its stall has not been
//! noticed, its job's wake (`JobRecord::wake`, of which `State::next_wake`, what every
//! sleeping host waits for, is the least, and which a tick's visits follow) comes no later
//! than the run's start plus the job's `stall_after`. A wake past it would let a run that
//! keeps renewing its lease run on untold until its lease lapsed or its deadline came
//! (`wake_of` leaving out the stall's wake, a survivor of shard 11).
//!
//! A stall is noticed when its `stalled` alert is told or held by the throttle, or while
//! the job's `stalled` incident is open (a second stall of the same incident is told as
//! nothing): from then on its wake is no longer owed.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{AlertKind, RunId, State};

use super::{Checker, Incident};

impl Checker {
    /// A `stalled` alert for `run` was told, or held by the throttle (an `AlertHeld`
    /// record): its stall was noticed.
    pub(super) fn stall_told(&mut self, kind: &AlertKind) {
        if let AlertKind::Stalled { run, .. } = kind {
            self.stalls_noticed.insert(*run);
            self.probe(Probe::RunToldStalled);
        }
    }

    /// A2 at the step's end (after the leases were held to the store's).
    pub(super) fn stalls_watched(&mut self, state: &State) {
        let mut late = Vec::new();
        let open: Vec<(RunId, duetime::JobName, Option<duetime::JobSeq>)> = self
            .leases
            .open_unparked()
            .filter(|(run, _, _)| !self.stalls_noticed.contains(*run))
            .map(|(run, job, seq)| (run, job.clone(), seq))
            .collect();
        for (run, job, seq) in open {
            let idx = self.track_of(&job);
            if self.tracks[idx].told.contains(&Incident::Stalled) {
                self.stalls_noticed.insert(run);
                continue;
            }
            let Some(record) = seq.and_then(|s| state.record(s)) else {
                continue;
            };
            let Some(started) = record.run().filter(|r| r.id() == run).map(|r| r.started()) else {
                continue;
            };
            let wake = record.wake().map_or(i64::MAX, |w| w.as_millis());
            let due = started.saturating_add(record.def().stall_after).as_millis();
            if wake > due {
                late.push((run, job, wake, due));
            } else {
                self.probe(Probe::StallWatchedByItsJobsWake);
            }
        }
        for (run, job, wake, due) in late {
            let detail = format!(
                "the job's wake is {}, past {run}'s stall at {} (not yet noticed)",
                super::ts(wake),
                super::ts(due)
            );
            self.violation(Invariant::A2, &job, detail);
            self.stalls_noticed.insert(run);
        }
    }
}
