//! C4: waiters are let in oldest first. When a job of a concurrency key starts, no other
//! job of that key may still wait for the lane (by the core's own word, `waits_for_room`)
//! since before the started one began to wait: `admit` takes the head of each lane, and a
//! job that finds an older waiter of its key first in line waits behind it rather than
//! starting (one that started without waiting is as young as its start).
//!
//! Keyless waits for the process cap are not judged here: a keyless job already waiting
//! may start on a process with room ahead of older ones (`State::gate`).

use duetime::{State, WaitReason};

use super::Checker;

impl Checker {
    /// After a step: each keyed start of the step against the waiters of its key.
    pub(super) fn admitted_in_order(&mut self, state: &State) {
        let started = std::mem::take(&mut self.lanes.started_now);
        for (job, key, since, waited) in started {
            let older = self.facts.iter().find_map(|(other, facts)| {
                if *other == job || facts.concurrency_key.as_deref() != Some(key.as_str()) {
                    return None;
                }
                let (at, reason) = state
                    .seq_of_name(other.as_str())
                    .and_then(|seq| state.record(seq))
                    .and_then(|r| r.waits_for_room())?;
                let at = at.as_millis();
                let ahead = reason == WaitReason::LaneBusy && at < since;
                ahead.then(|| (other.clone(), at))
            });
            match older {
                Some((other, at)) => self.violation(
                    "C4",
                    &job,
                    format!(
                        "started in lane {key} ({} {}) while {other}, waiting for it since {}, waits on",
                        if waited { "waiting since" } else { "without waiting, at" },
                        duetime::Timestamp::from_millis(since),
                        duetime::Timestamp::from_millis(at)
                    ),
                ),
                None => self.probe("start in its lane's order"),
            }
        }
    }
}
