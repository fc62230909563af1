//! C4: waiters are let in oldest first. When a job of a concurrency key starts, no other
//! job of that key may still wait for the lane (by the core's own word, `waits_for_room`)
//! since before the started one began to wait: `admit` takes the head of each lane, and a
//! job that finds an older waiter of its key first in line waits behind it rather than
//! starting (one that started without waiting is as young as its start).
//!
//! And they are let in when room opens: after a tick of a process that may claim (not
//! draining, not waiting for its clock, the owner under `single_owner`) and has room under
//! the cap, no job waits for a lane that has room (fewer runs open than its width, by the
//! store's counts, which V1 holds to the journal's): the tick's `admit` takes each lane's
//! head while the process has room.
//!
//! Keyless jobs wait only for the process cap, in one line of their own: a keyless job that
//! did not wait may not start while an older keyless job waits (room a process finds in
//! the middle of a tick, a run of its given up, goes to the line before anything due now).
//! Among keyless waiters the order is not judged: one already waiting may start on a
//! process with room ahead of older ones (`State::gate`).

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{Coordination, JobSeq, ProcessId, State, WaitReason};

use super::Checker;

impl Checker {
    /// The jobs of the journal not removed, each with its concurrency key in force,
    /// borrowed (asked after every tick: a name and a key cloned for each job was the
    /// larger part of C4's cost; benches/README.md, issue 46).
    fn keys_in_force(&self) -> impl Iterator<Item = (&duetime::JobName, Option<&str>)> + '_ {
        self.current
            .iter()
            .filter(|&&idx| self.tracks[idx].removed_at.is_none())
            .map(|&idx| (&self.tracks[idx].name, self.key_in_force_ref(idx)))
    }

    /// After a step: each start of the step against the waiters of its key, or, for a
    /// keyless start that did not wait, against the keyless waiters.
    pub(super) fn admitted_in_order(&mut self, state: &State) {
        let started = std::mem::take(&mut self.lanes.started_now);
        for (job, key, since, waited) in started {
            let Some(key) = key else {
                if !waited {
                    self.keyless_start_in_order(state, &job, since);
                }
                continue;
            };
            let older = self.keys_in_force().find_map(|(other, other_key)| {
                if *other == job || other_key != Some(key.as_str()) {
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
                    Invariant::C4,
                    &job,
                    format!(
                        "started in lane {key} ({} {}) while {other}, waiting for it since {}, waits on",
                        if waited { "waiting since" } else { "without waiting, at" },
                        duetime::Timestamp::from_millis(since),
                        duetime::Timestamp::from_millis(at)
                    ),
                ),
                None => self.probe(Probe::StartInItsLanesOrder),
            }
        }
    }

    /// A keyless job started at `at` without waiting: no other keyless job may still wait
    /// for room since before.
    fn keyless_start_in_order(&mut self, state: &State, job: &duetime::JobName, at: i64) {
        let older = self.keys_in_force().find_map(|(other, key)| {
            if other == job || key.is_some() {
                return None;
            }
            let (since, _) = state
                .seq_of_name(other.as_str())
                .and_then(|seq| state.record(seq))
                .and_then(|r| r.waits_for_room())?;
            (since.as_millis() < at).then(|| (other.clone(), since))
        });
        match older {
            Some((other, since)) => self.violation(
                Invariant::C4,
                job,
                format!(
                    "started without waiting at {} while {other}, keyless too, waits for room since {since}",
                    duetime::Timestamp::from_millis(at)
                ),
            ),
            None if state.config().max_runs_per_process.is_some() => {
                self.probe(Probe::KeylessStartUnderTheCapNoOlderKeylessWaiter)
            }
            None => {}
        }
    }

    /// After each step, before C4's checks: the store's jobs that wait for room
    /// (`store_waiting`) kept by the jobs the step touched, or read whole when those are
    /// not known (the first step, a state replaced; `Observation::Committed`). A record
    /// changes only when its job is handed out for change (`Jobs::get_mut`, which marks it
    /// touched) or added or removed (marked too), so a job the step did not touch waits
    /// for room exactly as it did after the step before: the set after each step is the
    /// jobs whose record waits, as reading every record would find them. (Reading and
    /// sorting every record after each tick was 2-3% of a world; benches/README.md, issue
    /// 46.) Debug builds, which `cargo test` runs seeds in, read every record anyway and
    /// assert the same set, so a core that changed a record it did not mark fails there.
    pub(super) fn waiters_followed(&mut self, state: &State, touched: Option<&[JobSeq]>) {
        let waits = |seq: JobSeq| {
            state
                .record(seq)
                .is_some_and(|r| r.waits_for_room().is_some())
        };
        match (&mut self.lanes.store_waiting, touched) {
            (Some(set), Some(touched)) => {
                for &seq in touched {
                    if waits(seq) {
                        set.insert(seq);
                    } else {
                        set.remove(&seq);
                    }
                }
            }
            (set, _) => {
                let all = state.records().map(|(seq, _)| seq).filter(|&s| waits(s));
                *set = Some(all.collect());
            }
        }
        debug_assert!(
            self.lanes.store_waiting.as_ref().is_some_and(|set| set
                .iter()
                .copied()
                .eq(state.records().map(|(s, _)| s).filter(|&s| waits(s)))),
            "C4's waiters: a record waits for room otherwise than the touched jobs tell"
        );
    }

    /// After a tick of `process`: no job waits for a lane with room, if it could let one in.
    pub(super) fn waiters_let_in(&mut self, state: &State) {
        let Some(process) = self.lanes.ticked.take() else {
            return;
        };
        if !could_admit(state, process) {
            return;
        }
        // The store's word first: most jobs wait for nothing, so only the few that wait
        // for a lane are looked up among the journal's jobs, for the key in force there
        // (a lookup of every job's record by name after every tick was 2% of a world;
        // benches/README.md, issue 46). Those that wait at all are followed step by step
        // (`waiters_followed`), in the store's order as `State::records` gives them.
        let mut stranded = Vec::new();
        let waiting = self.lanes.store_waiting.iter().flatten();
        for rec in waiting.filter_map(|&seq| state.record(seq)) {
            let Some((since, WaitReason::LaneBusy)) = rec.waits_for_room() else {
                continue;
            };
            let name = rec.def().name.as_str();
            let Some((order, (job, Some(key)))) = self
                .keys_in_force()
                .enumerate()
                .find(|(_, (job, _))| job.as_str() == name)
            else {
                continue;
            };
            let open = state.open_runs_of_key(key);
            let width = self.lanes.widths.get(key).copied().unwrap_or(1);
            if open < width {
                stranded.push((order, job.clone(), format!(
                    "waits for lane {key} (since {since}) though {open} of its {width} runs are open after a tick of {process}, which could let it in"
                )));
            }
        }
        if stranded.is_empty() {
            self.probe(Probe::LanesWithRoomHoldNoWaiterAfterATick);
        }
        // In the journal's order of the jobs, as when each job was asked in turn.
        stranded.sort_by_key(|(order, _, _)| *order);
        for (_, job, detail) in stranded {
            self.violation(Invariant::C4, &job, detail);
        }
    }
}

/// Whether a tick of `process` lets waiters in (`State::admit`): it may claim, and has
/// room under the cap.
fn could_admit(state: &State, process: ProcessId) -> bool {
    let Some(rec) = state.process(process) else {
        return false;
    };
    let claims = match state.config().coordination {
        Coordination::Shared => true,
        Coordination::SingleOwner => state.owner_lease().is_some_and(|o| o.holder == process),
    };
    let room = state
        .config()
        .max_runs_per_process
        .is_none_or(|cap| state.open_runs_of(process) < cap);
    claims && room && !rec.draining() && !rec.waits_for_clock()
}
