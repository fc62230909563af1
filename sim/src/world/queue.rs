//! The world's queue of timed actions: what happens next, in true time, in a fixed order
//! for actions due at the same instant.

use super::*;

#[derive(Debug, Clone)]
pub(super) enum Action {
    Tick {
        host: usize,
        epoch: u64,
    },
    RunDone {
        host: usize,
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    },
    /// A result reaching the store on its own (a child that outlived its process, a late or
    /// duplicated delivery), sent as from `process`.
    Deliver {
        process: ProcessId,
        run: RunId,
        job: JobName,
        fence: Fence,
        outcome: Outcome,
    },
    Crash {
        host: usize,
    },
    Restart {
        host: usize,
    },
    Stall {
        host: usize,
    },
    Wake {
        host: usize,
    },
    Jump {
        host: usize,
    },
    /// A span of slow turns begins on a host (`FaultMode::Overload`).
    Overload {
        host: usize,
    },
    /// A slow turn of a host ends: what its process collected is reported.
    TurnEnds {
        host: usize,
    },
    /// Every host's wall clock set to true time plus `off` (`World::set_clocks`).
    SetClocks {
        off: i64,
    },
    /// A host's process starts reading its monotonic clock in a wrong unit, or at the end
    /// of time (`World::mono_unit`), until it restarts or the world heals.
    MonoUnit {
        host: usize,
        unit: MonoUnit,
    },
    Drain {
        host: usize,
    },
    /// A burst (see `Faults::burst_per_hour`).
    Burst {
        host: usize,
    },
    /// A crash of a crash loop (it schedules no further crash of its own).
    LoopCrash {
        host: usize,
    },
    /// One redefinition of a burst: job `job` moves to one of its other schedules.
    Redefine {
        job: usize,
    },
    /// A drain right after a clock jump (it schedules no further drain of its own).
    DrainNow {
        host: usize,
    },
    /// The same drain asked again by a process already draining (its answer was lost, or
    /// a person sent the signal twice).
    DrainAgain {
        host: usize,
        process: ProcessId,
    },
    /// A person pauses a job while its failed run waits for its retry (the pause clears
    /// the retry and hands its due times to the missed rule), or resumes it later.
    PauseWaiting {
        job: JobName,
        resume: bool,
    },
    Command,
    /// A person approves a parked run (in time, too late, or twice).
    Approve {
        job: JobName,
        run: RunId,
    },
    /// A person asks to run a job now while its run awaits approval (not knowing it does).
    RunNow {
        job: JobName,
    },
    Heal,
}

impl Action {
    /// Whether it is a fault or a person's act drawn in advance: none happens once the
    /// world has healed.
    pub(super) fn is_fault(&self) -> bool {
        matches!(
            self,
            Action::Crash { .. }
                | Action::LoopCrash { .. }
                | Action::Stall { .. }
                | Action::Jump { .. }
                | Action::Overload { .. }
                | Action::SetClocks { .. }
                | Action::MonoUnit { .. }
                | Action::Drain { .. }
                | Action::DrainNow { .. }
                | Action::DrainAgain { .. }
                | Action::PauseWaiting { .. }
                | Action::Burst { .. }
                | Action::Redefine { .. }
                | Action::Command
                | Action::RunNow { .. }
        )
    }
}

/// The queue of timed actions, ordered by time, then by the order they were queued in.
/// The heap holds only `(time, order, slot)`; the actions wait in slots beside it, so
/// sifting moves 24 bytes rather than a whole action.
#[derive(Default)]
pub(super) struct Queue {
    pub(super) heap: BinaryHeap<Reverse<(i64, u64, u32)>>,
    pub(super) slots: Vec<Option<Action>>,
    pub(super) free: Vec<u32>,
    pub(super) seq: u64,
}

impl Queue {
    /// The next place in the order of things queued at one time.
    pub(super) fn order(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The time and order of the first queued action.
    pub(super) fn peek(&self) -> Option<(i64, u64)> {
        self.heap.peek().map(|Reverse((t, seq, _))| (*t, *seq))
    }

    pub(super) fn push(&mut self, t: i64, action: Action) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(action);
                i
            }
            None => {
                self.slots.push(Some(action));
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((t, self.seq, slot)));
    }

    pub(super) fn pop(&mut self) -> Option<(i64, Action)> {
        let Reverse((t, _, slot)) = self.heap.pop()?;
        let action = self.slots[slot as usize]
            .take()
            .expect("a queued slot is full");
        self.free.push(slot);
        Some((t, action))
    }
}
