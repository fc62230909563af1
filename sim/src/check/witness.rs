//! J2's half that needs true time: a clock held away from the store's is released only
//! after two ticks in which nothing contradicted it, and only its own events measure those
//! ticks. The checker sees events one by one and no true time; the world sees both.
//!
//! The core's rule (`step/clock.rs`, `contradicts`): a process held ahead with lead `L`
//! (its wall clock less its own estimate of the store's time) is contradicted by a process
//! taken as it reads whose lead is more than two `clock_jump`s below `L`; one held behind,
//! by every process taken as it reads. A contradicted process's solitude starts again at
//! its next event; so does the solitude of one whose lead jumps by more than a
//! `clock_jump` while held (a clock two minutes ahead, set a day on, is a new claim no one
//! has had the chance to contradict). Either way it cannot be released at that event.
//!
//! Only a clock within half a `clock_jump` of true time is taken as a witness: the promise
//! is that a right clock, present, keeps a wrong one from moving the store's; among clocks
//! all wrong the core cannot know which is right. The world reads each judged event's
//! numbers from the public surface: a held process's
//! lead is its wall clock less `ProcessRec::heard_at` (what the store vouched for); one
//! taken as it reads (or released) has `heard_at` at or up to a `clock_jump` past its wall
//! clock, and its lead is at most its wall clock less the store's clock before the step. The release is
//! judged with a margin of a `clock_jump` against the drift of the hosts' clocks, and the
//! jump with true elapsed time, which only shortens what the core measured (a stalled or
//! sleeping host's monotonic clock counts no more than true time): neither can blame a
//! release the core's own rule allows.

use duetime::{ClockGapKind, ProcessId, Timestamp};

/// One judged event of a host's process, as the store took it.
#[derive(Clone, Copy)]
struct Heard {
    process: ProcessId,
    /// True time.
    t: i64,
    /// Its wall clock less what the store vouched for (exact when held; for one taken as
    /// it reads, an upper bound).
    lead: i64,
    /// Held by the store (else taken as it read, or released).
    held: bool,
    /// Its wall clock within half a `clock_jump` of true time.
    right: bool,
}

/// What the world read just before a process's judged event: its wall clock, the store's
/// clock, and when the store last heard from the process.
#[derive(Clone, Copy)]
pub(crate) struct Before {
    pub(crate) wall: i64,
    pub(crate) store: Option<i64>,
    pub(crate) heard_at: Option<i64>,
}

/// The latest judged event of each host's process.
pub(crate) struct Witnesses {
    tick_ms: i64,
    jump_ms: i64,
    last: Vec<Option<Heard>>,
}

impl Witnesses {
    pub(crate) fn new(hosts: usize, tick_ms: i64, jump_ms: i64) -> Witnesses {
        Witnesses {
            tick_ms,
            jump_ms,
            last: vec![None; hosts],
        }
    }

    /// Host `host`'s `process` was judged at true time `t` (`before`: as the world read
    /// it before the step), the store then vouching `heard_at` for it.
    pub(crate) fn spoke(
        &mut self,
        host: usize,
        process: ProcessId,
        t: i64,
        before: Before,
        heard_at: Option<i64>,
    ) {
        let Some(heard_at) = heard_at else {
            return;
        };
        let wall = before.wall;
        // Only a clock that reads true time (within half a `clock_jump`) is a witness: in
        // a world of clocks all wrong, which one is right is not for the core to know.
        let right = (wall - t).abs() <= self.jump_ms / 2;
        let held = heard_at < wall || heard_at - wall > self.jump_ms;
        // (Taken as it reads, the store vouched at least its clock before the step; with
        // no clock yet, nothing it could contradict was held.)
        let lead = match (heard_at == wall, before.store) {
            (true, Some(store)) => wall - store,
            (true, None) => i64::MAX / 4,
            (false, _) => wall - heard_at,
        };
        if let Some(slot) = self.last.get_mut(host) {
            *slot = Some(Heard {
                process,
                t,
                lead,
                held,
                right,
            });
        }
    }

    /// `process` (host `host`) was released (`kind`) at true time `t`: what is wrong, if
    /// its rule did not allow it.
    pub(crate) fn released(
        &self,
        host: usize,
        process: ProcessId,
        kind: ClockGapKind,
        t: i64,
        before: Before,
    ) -> Option<String> {
        let prev = self
            .last
            .get(host)
            .copied()
            .flatten()
            .filter(|h| h.process == process && h.held)?;
        let ahead = !matches!(kind, ClockGapKind::ReleasedBehind);
        if ahead {
            if let Some(jumped) = self.jumped(prev, t, before) {
                return Some(format!(
                    "{process} was released ({kind:?}) at {} by the event whose lead jumped from {} ms to {jumped} ms: its solitude starts again there",
                    Timestamp::from_millis(t),
                    prev.lead
                ));
            }
        }
        let (at, w) = self.contradicted_by(host, prev, ahead, t)?;
        Some(format!(
            "{process}, held with a lead of {} ms, was released ({kind:?}) at {} though {}, taken as it read with a lead of at most {} ms, spoke at {} after its last event and within its solitude",
            prev.lead,
            Timestamp::from_millis(t),
            w.process,
            w.lead,
            Timestamp::from_millis(at)
        ))
    }

    /// The lead of a held-ahead process's event at `t`, when it is more than two
    /// `clock_jump`s above its previous one's (`prev`).
    fn jumped(&self, prev: Heard, t: i64, before: Before) -> Option<i64> {
        let carried = before.heard_at? + (t - prev.t);
        let vouched = before.store.map_or(carried, |s| s.max(carried));
        let lead = before.wall - vouched;
        (prev.lead > self.jump_ms && lead - prev.lead > 2 * self.jump_ms).then_some(lead)
    }

    /// A process taken as it read whose event came after `prev` (the held process's last
    /// before its release at `t`) and within its solitude, and whose lead its rule says
    /// contradicts `prev`'s hold.
    fn contradicted_by(
        &self,
        host: usize,
        prev: Heard,
        ahead: bool,
        t: i64,
    ) -> Option<(i64, Heard)> {
        let solitude = 2 * self.tick_ms;
        self.last.iter().enumerate().find_map(|(h, w)| {
            let w = (*w)?;
            let within = w.t > prev.t && w.t < t && w.t > t - solitude + 1_000;
            let disagrees = if ahead {
                prev.lead - w.lead.max(0) > 3 * self.jump_ms
            } else {
                prev.lead < -self.jump_ms
            };
            let witness = w.right && !w.held;
            (h != host && w.process != prev.process && witness && within && disagrees)
                .then_some((w.t, w))
        })
    }
}
