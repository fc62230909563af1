//! What the state keeps of each process that has spoken: its fence, its lease and its
//! clock, and a clock held ahead of the store's.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

use super::is_false;

/// What the state knows of one process (one incarnation of a host): its last clock
/// readings, whether it drains, whether its clock is held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProcessRec {
    pub(crate) last_wall: Timestamp,
    pub(crate) last_mono: Timestamp,
    #[serde(default)]
    pub(crate) draining: bool,
    /// The clock that counts sleep, when the host reads one (`Now::boot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_boot: Option<Timestamp>,
    /// The store's time at this process's last event (`step/clock.rs`): its wall clock
    /// when that was sane, else what the store vouched for then. Absent in states written
    /// before format 5 (read as `last_wall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base: Option<Timestamp>,
    /// Set while its wall clock is held ahead of the store's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hold: Option<ClockHold>,
}

/// A process whose wall clock reads further from the store's than `clock_jump`, ahead or
/// behind (see `step/clock.rs`): it works on the store's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct ClockHold {
    /// Its monotonic reading when it last found itself alone (no process with a sane clock
    /// has contradicted it since). Two ticks of that release it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) alone_since: Option<Timestamp>,
    /// How far its wall clock read from the store's at its last event, in ms (negative:
    /// behind): what a process contradicting it differs from, and how its wakes map to its
    /// own clock.
    pub(crate) lead: i64,
    /// A new incarnation held ahead before the store could measure it: it decides nothing
    /// until it is released or a process the store knows shows the store's clock is alive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) waiting: bool,
    /// The store has not heard from it for longer than a lease (`State::holder_silent`):
    /// it is most likely gone (a held incarnation that crashed), so it is left out of
    /// `State::holds`. No one contradicts it and no one wakes once a tick for it while it
    /// is silent (a dead incarnation held behind would otherwise make every process tick
    /// every tick for a day), and when it speaks again its solitude starts afresh: no one
    /// was looking while it was silent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) dormant: bool,
    /// Its measure since its previous event could not be true and was bounded
    /// (`step/clock.rs`, `believed`: a monotonic clock read in a wrong unit): it is asked
    /// to wake once a tick (`State::next_wake_for`), so that its wall clock's advance is
    /// believed whole. Asleep to its next due time by the store's clock, half an hour, a
    /// host reading nanoseconds carried the store's clock by the bound only, its lead grew
    /// past `clock_jump` at every event (each a new jump: its solitude started again), and
    /// it stayed held for hours, the store's clock hours behind clocks that all agreed
    /// (light seeds 10313, 12205: J4).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) bounded: bool,
}

impl ProcessRec {
    /// A process first heard from at `now`.
    pub(crate) fn new(now: crate::event::Now) -> ProcessRec {
        ProcessRec {
            last_wall: now.wall,
            last_mono: now.mono,
            draining: false,
            last_boot: now.boot,
            base: None,
            hold: None,
        }
    }

    /// The store's time at its last event (see `base`).
    pub(crate) fn base(&self) -> Timestamp {
        self.base.unwrap_or(self.last_wall)
    }

    /// Whether its clock is held (ahead of the store's or behind it) now.
    pub(crate) fn held(&self) -> bool {
        self.hold.is_some()
    }

    /// Whether its clock is held ahead of the store's now.
    pub(crate) fn held_ahead(&self) -> bool {
        self.hold.is_some_and(|h| h.lead > 0)
    }

    /// Whether it is a new incarnation held before its time could be measured: it decides
    /// nothing yet.
    pub(crate) fn waiting(&self) -> bool {
        self.hold.is_some_and(|h| h.waiting)
    }
}
