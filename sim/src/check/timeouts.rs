//! K2: a run is timed out as its deadline says. The core asks to cancel a run
//! (`cancel sent`, reason `timeout`) only once the store's clock has reached the deadline
//! its start carried (`Action::Start`), and settles it `timed_out` only once that cancel has
//! gone unanswered for the config's `cancel_grace`: a process that stops in time reports
//! its own outcome.
//!
//! Both are read on the journal's dates, which are the store's time. A release behind
//! moves the store's clock, and every run's deadline and cancel, back by as much (the
//! notice says by how much); a release ahead moves its holder's runs by its lead, which
//! no notice tells, so those runs are judged no further.

use crate::check::Invariant;
use crate::check::Probe;
use std::collections::BTreeMap;

use duetime::{JobName, ProcessId, RunId};

use super::{ts, Checker};

/// What K2 holds of one open run.
struct Timed {
    job: JobName,
    holder: ProcessId,
    deadline: i64,
    /// When its cancel for the deadline was sent.
    cancel: Option<i64>,
    /// False once its holder was released ahead: its instants moved by an unknown lead.
    exact: bool,
}

/// The open runs' deadlines, by run.
#[derive(Default)]
pub(super) struct Timeouts {
    grace_ms: Option<i64>,
    runs: BTreeMap<RunId, Timed>,
}

impl Checker {
    /// Holds K2 for a store whose cancels are given `grace_ms` to be answered.
    pub(super) fn hold_timeouts(&mut self, config: &duetime::Config) {
        self.timeouts.grace_ms =
            Some(i64::try_from(config.cancel_grace.as_millis()).unwrap_or(i64::MAX));
    }

    /// An action the core asked for, whatever became of the step's answer: a start puts
    /// its run in the store with its deadline (K2), and what it told the host of why its
    /// due times were late is kept for the entry that settles them (N1, `late_as_told`).
    pub(super) fn action(&mut self, effect: &duetime::Effect) {
        if let duetime::Effect::Do(duetime::Action::Start(duetime::Start {
            run,
            job,
            process,
            deadline,
            late,
            ..
        })) = effect
        {
            self.told_late.insert(*run, *late);
            let timed = Timed {
                job: job.clone(),
                holder: *process,
                deadline: deadline.as_millis(),
                cancel: None,
                exact: true,
            };
            self.timeouts.runs.insert(*run, timed);
        }
    }

    /// `cancel sent` for `run`'s deadline, in a record dated `at`.
    pub(super) fn timeout_cancel(&mut self, job: &JobName, run: RunId, at: i64) {
        let Some(t) = self.timeouts.runs.get_mut(&run) else {
            return;
        };
        t.cancel = Some(at);
        if t.exact && at < t.deadline {
            let detail = format!(
                "{run} was asked to cancel for its deadline at {}, before its deadline {}",
                ts(at),
                ts(t.deadline)
            );
            self.violation(Invariant::K2, job, detail);
        }
    }

    /// `run` settled in a record dated `at`; `timed_out`: by the core's own timeout (no
    /// host reported it), which needs its cancel a grace before.
    pub(super) fn timeout_settled(&mut self, job: &JobName, run: RunId, timed_out: bool, at: i64) {
        let Some(t) = self.timeouts.runs.remove(&run) else {
            return;
        };
        let Some(grace) = self.timeouts.grace_ms.filter(|_| timed_out && t.exact) else {
            return;
        };
        let detail = match t.cancel {
            None => format!("{run} settled timed_out at {} with no cancel sent", ts(at)),
            Some(c) if at < c.saturating_add(grace) => format!(
                "{run} settled timed_out at {}, though its cancel sent at {} had until {} to be answered",
                ts(at),
                ts(c),
                ts(c.saturating_add(grace))
            ),
            Some(_) => {
                self.probe(Probe::TimedOutAGraceAfterItsCancel);
                return;
            }
        };
        self.violation(Invariant::K2, job, detail);
    }

    /// K2's other half, after a tick at `at` (the store's time) of a process that decides:
    /// no run whose cancel went unanswered for the grace is still open (the tick visited
    /// it: its wake is the cancel's end).
    pub(super) fn timed_out_by(&mut self, ticked: ProcessId, at: i64) {
        let Some(grace) = self.timeouts.grace_ms else {
            return;
        };
        let overdue: Vec<(RunId, i64)> = self
            .timeouts
            .runs
            .iter()
            .filter(|(_, t)| t.exact)
            .filter_map(|(r, t)| Some((*r, t.cancel?)))
            .filter(|(_, c)| c.saturating_add(grace) <= at)
            .collect();
        for (run, cancel) in overdue {
            let Some(t) = self.timeouts.runs.remove(&run) else {
                continue;
            };
            let detail = format!(
                "{run}'s cancel sent at {} went unanswered past its grace, yet it is still open after a tick of {ticked} at {}",
                ts(cancel),
                ts(at)
            );
            self.forbidden(Invariant::K2, &t.job, detail);
        }
    }

    /// `run` ended otherwise (lost), or was parked: no deadline holds it any more.
    pub(super) fn timeout_forgotten(&mut self, run: RunId) {
        self.timeouts.runs.remove(&run);
    }

    /// `job` was removed: its run is cancelled with it.
    pub(super) fn timeouts_removed(&mut self, job: &JobName) {
        self.timeouts.runs.retain(|_, t| t.job != *job);
    }

    /// `run` was adopted by `holder`.
    pub(super) fn timeout_adopted(&mut self, run: RunId, holder: ProcessId) {
        if let Some(t) = self.timeouts.runs.get_mut(&run) {
            t.holder = holder;
        }
    }

    /// The store's clock went back `by` ms (a release behind): deadlines and cancels with it.
    pub(super) fn timeouts_back(&mut self, by: i64) {
        for t in self.timeouts.runs.values_mut() {
            t.deadline = t.deadline.saturating_sub(by);
            t.cancel = t.cancel.map(|c| c.saturating_sub(by));
        }
    }

    /// `process` was released ahead: its runs' instants moved by its lead.
    pub(super) fn timeouts_released(&mut self, process: ProcessId) {
        for t in self
            .timeouts
            .runs
            .values_mut()
            .filter(|t| t.holder == process)
        {
            t.exact = false;
        }
    }
}
