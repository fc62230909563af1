//! D2: incarnations do not pile up, and none is forgotten early. When a process starts, the
//! store forgets every other process it has not heard from for a day of its clock, unless
//! that process holds an open run (by the journal), holds the owner lease, or was asked to
//! drain (it must start nothing, D1, and may come back from a long stall); it forgets
//! no other.
//!
//! "Heard" is the checker's own record (`Leases::heard`: the store's time at each
//! process's latest event), and the clock the store's before the step. The store's record
//! of a process's time and the checker's may differ by up to a `clock_jump` (a reading
//! within it is taken as it read), so a silence within a `clock_jump` of a day is not
//! judged either way.

use crate::check::Invariant;
use crate::check::Probe;
use std::collections::BTreeSet;

use duetime::{Event, ProcessId, State};

use super::{ts, Checker};

const DAY_MS: i64 = 86_400_000;

/// What a `ProcessStarted` step may forget, as the checker saw it before the step.
pub(super) struct Forgetting {
    starting: ProcessId,
    /// The store's clock before the step (what its day of silence is measured to).
    clock: i64,
    /// The other processes the store knew, with when the checker last heard each.
    known: Vec<(ProcessId, i64)>,
    /// Those it must keep however silent: holders of open runs or the owner lease, and
    /// processes asked to drain.
    kept: BTreeSet<ProcessId>,
}

impl Checker {
    /// Before a step: a process starting is when the store forgets the silent ones.
    pub(super) fn forgetting(&mut self, event: &Event, state: &State) {
        self.forgetting = None;
        let Event::ProcessStarted { process } = event else {
            return;
        };
        let Some(clock) = state.clock() else {
            return;
        };
        let known = self
            .leases
            .heard()
            .filter(|(p, _)| p != process && state.process(*p).is_some())
            .collect();
        let kept = self
            .holders
            .iter()
            .map(|(_, holder, _)| *holder)
            .chain(self.draining.iter().copied())
            .chain(state.owner_lease().map(|o| o.holder))
            .collect();
        self.forgetting = Some(Forgetting {
            starting: *process,
            clock: clock.as_millis(),
            known,
            kept,
        });
    }

    /// After the step: each process the store knew before it is gone exactly when it had
    /// been silent a day and was not kept.
    pub(super) fn forgotten_as_due(&mut self, state: &State) {
        let (Some(f), Some(jump)) = (self.forgetting.take(), self.leases.clock_jump()) else {
            return;
        };
        for &(p, heard) in &f.known {
            let gone = state.process(p).is_none();
            let silent = f.clock.saturating_sub(heard);
            let kept = f.kept.contains(&p);
            let detail = if gone && (kept || silent < DAY_MS - jump) {
                let why = if kept {
                    "it held a run or the owner lease, or was asked to drain".to_string()
                } else {
                    format!("it was last heard at {}", ts(heard))
                };
                Some(format!("forgotten though {why}"))
            } else if !gone && !kept && silent > DAY_MS + jump {
                Some(format!(
                    "still known though silent since {} and holding nothing",
                    ts(heard)
                ))
            } else {
                None
            };
            if gone {
                self.probe(Probe::ProcessForgottenAfterADaysSilence);
            }
            if let Some(detail) = detail {
                let when = format!(
                    "{p} {detail}, when {} started at the store's {}",
                    f.starting,
                    ts(f.clock)
                );
                self.violation_of(Invariant::D2, "(process)".to_string(), when);
            }
        }
    }
}
