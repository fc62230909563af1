//! J3: a clock's gap is told as what it was. Between two judged events of a process the
//! world knows how far its wall clock moved against its monotonic clock, and how long it
//! slept (its boot clock, when it reads one). `docs/semantics.md`'s rule: a wall clock
//! that moved more than `clock_jump` ahead of the monotonic one is told `asleep` when the
//! sleep explains the lead (to within `clock_jump`), else `clock_forward`; one that moved
//! more than `clock_jump` behind is told `clock_backward`; within `clock_jump`, nothing.
//! The world holds each judged event's notices to that, from its own readings, whenever
//! the store's record of the process is the one its previous judged event left (a new
//! incarnation, or a process the store forgot, has nothing to measure from).

use duetime::{ClockGapKind, Now};

/// The gap the rule tells between readings `prev` and `now` of one process.
pub fn expected(prev: Now, now: Now, clock_jump_ms: i64) -> Option<ClockGapKind> {
    let ms = |t: duetime::Timestamp| i128::from(t.as_millis());
    let mono = ms(now.mono) - ms(prev.mono);
    let lead = ms(now.wall) - ms(prev.wall) - mono;
    let jump = i128::from(clock_jump_ms);
    if lead > jump {
        let slept = match (now.boot, prev.boot) {
            (Some(b), Some(a)) => Some((ms(b) - ms(a) - mono).max(0)),
            _ => None,
        };
        Some(if slept.is_some_and(|s| s + jump >= lead) {
            ClockGapKind::Asleep
        } else {
            ClockGapKind::ClockForward
        })
    } else if lead < -jump {
        Some(ClockGapKind::ClockBackward)
    } else {
        None
    }
}

/// Whether `kind` is one of the three kinds J3 judges (holds and releases are J2's).
pub fn judged(kind: ClockGapKind) -> bool {
    matches!(
        kind,
        ClockGapKind::Asleep | ClockGapKind::ClockForward | ClockGapKind::ClockBackward
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::Timestamp;

    fn read(wall: i64, mono: i64, boot: Option<i64>) -> Now {
        Now {
            wall: Timestamp::from_millis(wall),
            mono: Timestamp::from_millis(mono),
            boot: boot.map(Timestamp::from_millis),
        }
    }

    #[test]
    fn the_rule_as_the_docs_state_it() {
        let prev = read(1_000_000, 500, Some(500));
        let j = 60_000;
        assert_eq!(
            expected(prev, read(1_060_000, 500, Some(500)), j),
            None,
            "at the bound"
        );
        let ahead = read(1_060_001, 500, Some(500));
        assert_eq!(expected(prev, ahead, j), Some(ClockGapKind::ClockForward));
        let slept = read(1_600_000, 500, Some(590_500));
        assert_eq!(expected(prev, slept, j), Some(ClockGapKind::Asleep));
        let back = read(939_999, 500, Some(500));
        assert_eq!(expected(prev, back, j), Some(ClockGapKind::ClockBackward));
        let no_boot = read(1_600_000, 500, None);
        assert_eq!(expected(prev, no_boot, j), Some(ClockGapKind::ClockForward));
    }
}
