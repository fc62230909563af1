//! Coordination between processes: the owner lease of `single_owner` (who may visit jobs
//! and claim), and drains (a process that claims nothing more and is told when its last
//! run has ended).

use crate::effect::Effect;
use crate::effect::Notice;
use crate::event::{Event, Fence, ProcessId};
use crate::state::{Coordination, OwnerLease, State};
use crate::time::Timestamp;

use super::Out;

impl State {
    /// At a tick of `process`: whether it may visit jobs. Shared coordination: always (a
    /// draining process still watches leases and accounts due times, it only claims
    /// nothing). `single_owner`: only the owner, which renews its lease here; a lease that
    /// lapsed, or none, is taken by this process with a fresh fence. A standby visits
    /// nothing, so two processes never both decide for the same job.
    pub(crate) fn lead(&mut self, now: Timestamp, process: ProcessId, out: &mut Out) -> bool {
        if self.config.coordination == Coordination::Shared {
            return true;
        }
        if self.processes.get(&process).is_none_or(|p| p.draining) {
            return false;
        }
        let ttl = self.config.lease_ttl;
        // A holder the store has stopped hearing from has lost the lease, whatever `until`
        // its clock wrote (`clock.rs`).
        let silent = self.owner.is_some_and(|o| self.holder_silent(o.holder));
        match &mut self.owner {
            Some(o) if now <= o.until && !silent => {
                if o.holder != process {
                    return false;
                }
                // A wall clock that went back never makes the lease younger.
                o.until = o.until.max(now.saturating_add(ttl));
                true
            }
            lapsed_or_free => {
                if self.next_fence == u64::MAX {
                    // The fence counter is used up (only a stored state can get here): no
                    // fence higher than the last owner's exists, so nobody leads.
                    return false;
                }
                let from = lapsed_or_free.as_ref().map(|o| o.holder);
                let fence = Fence(self.next_fence);
                self.next_fence += 1;
                let until = now.saturating_add(ttl);
                *lapsed_or_free = Some(OwnerLease {
                    holder: process,
                    fence,
                    until,
                });
                out.effects.push(Effect::Notice(Notice::Owner {
                    process,
                    fence,
                    until,
                    from,
                }));
                true
            }
        }
    }

    /// Whether `process` may claim a run at `now`: it is known, not draining and not waiting
    /// for its clock to be judged, and under
    /// `single_owner` it holds the owner lease, unlapsed. The state keeps one lease, whose
    /// fence is the highest any owner was given, so holding it is holding the highest fence.
    pub(crate) fn can_claim(&self, process: ProcessId, now: Timestamp) -> bool {
        // A new incarnation waiting for its clock to be judged decides nothing (`clock.rs`).
        // Nor does a process the store has not heard from for longer than a lease (a result
        // it sends is no tick: `judge_result_clock`): a run started for it would be taken
        // for lost at the next tick, whatever its lease says (`holder_silent`). What it
        // would have taken waits for the next tick, its own or another's.
        if self
            .processes
            .get(&process)
            .is_none_or(|p| p.draining || p.waiting() || self.is_silent(p))
        {
            return false;
        }
        match self.config.coordination {
            Coordination::Shared => true,
            Coordination::SingleOwner => self
                .owner
                .is_some_and(|o| o.holder == process && now <= o.until),
        }
    }

    /// `ProcessDraining`: the process claims nothing more, and an owner gives up its lease
    /// at once, so a standby need not wait for it to lapse.
    pub(crate) fn drain(&mut self, process: ProcessId, out: &mut Out) {
        let Some(p) = self.processes.get_mut(&process) else {
            return;
        };
        p.draining = true;
        if let Some(o) = self.owner.take_if(|o| o.holder == process) {
            out.effects.push(Effect::Notice(Notice::OwnerReleased {
                process,
                fence: o.fence,
            }));
        }
    }

    /// Before a step that can end a run: the draining processes holding open runs, and
    /// the process this event starts draining (if it is not draining yet); `None` when no
    /// drain can complete in this step, which is the common case and costs a look at the
    /// processes holding runs.
    pub(crate) fn drains_before(&self, event: &Event) -> Option<DrainsBefore> {
        let starting = match event {
            Event::ProcessDraining { process }
                if !self.processes.get(process).is_some_and(|p| p.draining) =>
            {
                Some(*process)
            }
            _ => None,
        };
        let holding = self.draining_holders();
        if starting.is_none() && holding.is_empty() {
            return None;
        }
        Some(DrainsBefore { holding, starting })
    }

    /// After that step: a draining process that held runs before it and holds none now,
    /// or that began draining in it holding none, has completed its drain and is told so.
    /// Its last run may end by its result, by being lost or timed out at another process's
    /// tick, by being adopted away or by its job's removal, so the question is asked
    /// around any such event rather than on each of those paths. Told at the transition,
    /// so once, with nothing kept in the state for it.
    pub(crate) fn note_drained(&mut self, before: DrainsBefore, out: &mut Out) {
        let after = self.draining_holders();
        let mut done: Vec<ProcessId> = before
            .holding
            .into_iter()
            .chain(before.starting)
            .filter(|p| !after.contains(p))
            .collect();
        done.sort();
        done.dedup();
        for process in done {
            out.effects
                .push(Effect::Notice(Notice::Drained { process }));
        }
    }

    /// The draining processes that hold an open run, in process order. Asked of the
    /// per-process run counts the concurrency index keeps exact (they count what
    /// `JobRecord::run_holder` names), so it costs a look per process holding runs, not a
    /// pass over the open runs or over every incarnation not yet pruned.
    fn draining_holders(&self) -> Vec<ProcessId> {
        self.lanes
            .holders()
            .filter(|p| self.processes.get(p).is_some_and(|p| p.draining))
            .collect()
    }
}

/// What `note_drained` compares with after a step.
pub(crate) struct DrainsBefore {
    holding: Vec<ProcessId>,
    starting: Option<ProcessId>,
}
