//! J4: clocks that agree are believed. J2 (`witness.rs`) holds the core to "a held clock is
//! not released while a right clock contradicts it"; this is its other side, "did the
//! right thing happen?": when every host's wall clock agrees with the others, the store's
//! clock comes to them, whichever way they moved together.
//!
//! The core's rule (`step/clock.rs`): a held process that nothing contradicted for
//! `solitude` (two ticks) of its own monotonic time is released, and the store's clock
//! moves to its wall clock, ahead or back. Held processes are no evidence against each
//! other unless their leads differ by more than `disagreement` (two `clock_jump`s); a
//! process taken as it reads contradicts them, but then the store's clock is within a
//! `clock_jump` of that clock. So once every wall clock agrees to within half a
//! `clock_jump` (none moved since), a judged event that finds the store's clock more than
//! two `clock_jump`s from its own wall clock is a hold that must end soon: the same
//! process must not find it so for more than `AWAY_EVENTS` events in a row spanning more
//! than `AWAY_TICKS` ticks of its own clock, unless an event found the store's clock near
//! the clocks meanwhile. Held for good away from clocks that every host left together (a
//! store that never goes back when all its processes were set back at once, because held
//! processes take each other for contradictions), it would be.
//!
//! The world tells this module when a host's clock moved (a jump, every clock set at once,
//! the healing) and what each judged event read; the agreement is measured from true
//! readings.

use duetime::{ProcessId, Timestamp};

/// How long one process may find the store's clock away from clocks that all agree: more
/// judged events in a row than this, spanning more ticks of its own clock than that. A
/// held process is released at its first event a solitude (two ticks) after its hold
/// began, its third or fourth; the rest is room for held processes whose estimates of the
/// store's time came apart in earlier turbulence, which may contradict each other for a
/// few ticks before one of them is released. Both, so that neither a burst of events in a
/// tick (a process starting a backlog) nor a long stall between two events is taken for a
/// store that does not follow.
const AWAY_EVENTS: u32 = 12;
const AWAY_TICKS: i64 = 10;

/// What J4 says of one judged event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The clocks disagree: the rule asks nothing.
    Unjudged,
    /// The store's clock is near the agreeing clocks; `after_away`: an event had found it
    /// away since it was last near.
    Near { after_away: bool },
    /// The store's clock is away from them, for no longer than the rule allows.
    Away,
    /// Away for longer: what is wrong.
    Stuck(String),
}

/// The agreement of the hosts' wall clocks and, within it, how long each host's process
/// has found the store's clock away from them.
pub(crate) struct Consensus {
    jump_ms: i64,
    tick_ms: i64,
    /// True time since which every wall clock has agreed (none moved since), if they do.
    agreed_since: Option<i64>,
    /// Per host: the events in a row of its process that found the store's clock away.
    away: Vec<Option<Away>>,
}

/// Events in a row of one process that found the store's clock more than two
/// `clock_jump`s from its own, since the store's clock was last near the clocks.
#[derive(Clone, Copy)]
struct Away {
    process: ProcessId,
    events: u32,
    /// Its monotonic clock at the first of them.
    since_mono: i64,
}

impl Consensus {
    pub(crate) fn new(hosts: usize, tick_ms: i64, jump_ms: i64) -> Consensus {
        Consensus {
            jump_ms,
            tick_ms,
            agreed_since: None,
            away: vec![None; hosts],
        }
    }

    /// A host's wall clock moved (a jump, or every clock set): any agreement starts again.
    pub(crate) fn moved(&mut self) {
        self.agreed_since = None;
        self.away.iter_mut().for_each(|a| *a = None);
    }

    /// Before a judged event at true time `t`: every host's wall clock now (`walls`).
    pub(crate) fn read(&mut self, t: i64, walls: impl IntoIterator<Item = i64>) {
        let (lo, hi) = walls
            .into_iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), w| (lo.min(w), hi.max(w)));
        if hi.saturating_sub(lo) > self.jump_ms / 2 {
            self.moved();
        } else if self.agreed_since.is_none() {
            self.agreed_since = Some(t);
        }
    }

    /// After host `host`'s `process` was judged with wall clock `wall` and monotonic
    /// clock `mono`, the store's clock then reading `store`.
    pub(crate) fn judged(
        &mut self,
        host: usize,
        process: ProcessId,
        (wall, mono): (i64, i64),
        store: Option<i64>,
    ) -> Verdict {
        let (Some(agreed_since), Some(store)) = (self.agreed_since, store) else {
            return Verdict::Unjudged;
        };
        let apart = store.abs_diff(wall);
        if apart <= 2 * self.jump_ms.unsigned_abs() {
            let after_away = self.away.iter().any(Option::is_some);
            self.away.iter_mut().for_each(|a| *a = None);
            return Verdict::Near { after_away };
        }
        let Some(slot) = self.away.get_mut(host) else {
            return Verdict::Unjudged;
        };
        let away = match *slot {
            Some(a) if a.process == process => Away {
                events: a.events + 1,
                ..a
            },
            _ => Away {
                process,
                events: 1,
                since_mono: mono,
            },
        };
        *slot = Some(away);
        let (events, ms) = (away.events, mono - away.since_mono);
        if events <= AWAY_EVENTS || ms <= AWAY_TICKS * self.tick_ms {
            return Verdict::Away;
        }
        Verdict::Stuck(format!(
            "every host's clock has agreed since {} (within half a clock_jump), yet {events} \
             events in a row of {process}, over {ms} ms of its own clock, found the store's \
             clock more than two clock_jumps from its own: at {} it reads {} ({apart} ms \
             away)",
            Timestamp::from_millis(agreed_since),
            Timestamp::from_millis(wall),
            Timestamp::from_millis(store),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JUMP: i64 = 60_000;
    const TICK: i64 = 30_000;

    fn agreeing(c: &mut Consensus, t: i64) {
        c.read(t, [t, t + 10]);
    }

    /// An event of host 0's `p`, `n` ticks in, the store's clock `off` ms from its clock.
    fn event(c: &mut Consensus, p: ProcessId, n: i64, off: i64) -> Verdict {
        agreeing(c, n * TICK);
        c.judged(0, p, (n * TICK, n * TICK), Some(n * TICK + off))
    }

    #[test]
    fn a_store_away_for_many_events_over_many_ticks_is_named() {
        let mut c = Consensus::new(2, TICK, JUMP);
        let p = ProcessId(1);
        let away = 3_600_000;
        // Twelve events a tick apart (eleven ticks): still within what the rule allows.
        for n in 0..i64::from(AWAY_EVENTS) {
            assert_eq!(event(&mut c, p, n, away), Verdict::Away, "event {n}");
        }
        let wrong = event(&mut c, p, i64::from(AWAY_EVENTS), away);
        assert!(matches!(wrong, Verdict::Stuck(w) if w.contains("13 events in a row")));
        // Back at the store's side of the hour: away as much.
        assert!(matches!(event(&mut c, p, 13, -away), Verdict::Stuck(_)));
    }

    #[test]
    fn many_events_within_a_few_ticks_are_not_a_stuck_store() {
        let mut c = Consensus::new(2, TICK, JUMP);
        let p = ProcessId(1);
        agreeing(&mut c, 0);
        for ms in 0..50 {
            let v = c.judged(0, p, (0, ms * 1_000), Some(10 * JUMP));
            assert_eq!(v, Verdict::Away, "{ms} s in");
        }
    }

    #[test]
    fn the_store_near_any_agreeing_clock_ends_every_count() {
        let mut c = Consensus::new(2, TICK, JUMP);
        let (p, q) = (ProcessId(1), ProcessId(2));
        for n in 0..i64::from(AWAY_EVENTS) {
            assert_eq!(event(&mut c, p, n, 10 * JUMP), Verdict::Away);
        }
        // Host 1's event finds the store's clock two clock_jumps from it: near enough.
        let near = c.judged(1, q, (0, 0), Some(2 * JUMP));
        assert_eq!(near, Verdict::Near { after_away: true });
        assert_eq!(event(&mut c, p, 20, 10 * JUMP), Verdict::Away);
        assert_eq!(event(&mut c, p, 21, 0), Verdict::Near { after_away: true });
        assert_eq!(
            event(&mut c, p, 22, -2 * JUMP),
            Verdict::Near { after_away: false }
        );
    }

    #[test]
    fn clocks_that_disagree_or_moved_are_not_judged() {
        let mut c = Consensus::new(2, TICK, JUMP);
        let p = ProcessId(1);
        // Half a clock_jump and a millisecond apart: no agreement.
        for n in 0..=i64::from(AWAY_EVENTS) {
            c.read(n * TICK, [n * TICK, n * TICK + JUMP / 2 + 1]);
            let v = c.judged(0, p, (n * TICK, n * TICK), Some(10 * JUMP));
            assert_eq!(v, Verdict::Unjudged);
        }
        // Agreeing, then moved: the count starts again.
        for n in 0..i64::from(AWAY_EVENTS) {
            assert_eq!(event(&mut c, p, n, 10 * JUMP), Verdict::Away);
        }
        c.moved();
        for n in 20..40 {
            assert_eq!(event(&mut c, p, n, 10 * JUMP), Verdict::Away, "event {n}");
            if n == 31 {
                c.moved();
            }
        }
        // A new incarnation on the host starts its own count.
        let q = ProcessId(2);
        for n in 40..40 + i64::from(AWAY_EVENTS) {
            assert_eq!(event(&mut c, q, n, 10 * JUMP), Verdict::Away);
        }
        assert!(matches!(event(&mut c, q, 60, 10 * JUMP), Verdict::Stuck(_)));
    }
}
