//! A job's phase: what it is doing between definitions (its open run, a retry's wait,
//! a pause, owed due times, a run waiting for a lane or a person). Only what is not idle
//! is kept, boxed, so an idle job carries nothing.
//!
//! What excludes what is a type: a job is free (perhaps with a retry waiting, perhaps
//! waiting for room), running (its open run, parked or not), or new and unconfirmed (its
//! definition held for a person's `Confirm`), never two of these. A stored state keeps
//! the flat fields it always had (`run`, `retry`, `waiting`, `held`, `unconfirmed`);
//! `ActivityIn` reads them and refuses a combination no phase can hold, so it never
//! reaches the step.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::effect::WaitReason;
use crate::event::Actor;
use crate::schedule::Schedule;
use crate::time::Timestamp;

use super::{is_false, HeldDef, OpenRun, Owed, Pause, RetryWait, MAX_OWED_SEGMENTS};

/// What a job is doing about its runs: exactly one of these at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No run open. A failed run's retry may wait for its time, and the job may wait for
    /// room (a lane or the process's cap holds back what it could start).
    Free {
        retry: Option<RetryWait>,
        waiting: Option<Waiting>,
    },
    /// Its run is open (running, or parked awaiting approval: see `OpenRun::parked`).
    Running(OpenRun),
    /// A new job whose definition was never confirmed: no schedule runs and nothing is
    /// accounted until `Confirm` of this definition's digest.
    Unconfirmed(Box<HeldDef>),
}

impl Default for Phase {
    fn default() -> Phase {
        Phase::Free {
            retry: None,
            waiting: None,
        }
    }
}

/// Everything about a job beyond its definition and cursor; absent for a job that has
/// never needed any of it, which keeps idle jobs small.
///
/// Opaque outside the crate, and named only through the unstable `internals` feature.
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ActivityIn")]
pub struct Activity {
    pub(crate) pending: VecDeque<Owed>,
    pub(crate) phase: Phase,
    /// A queued manual run and who asked for it.
    pub(crate) manual: Option<Actor>,
    /// When manual runs were asked for in the last hour (for the hourly cap).
    pub(crate) manual_recent: VecDeque<Timestamp>,
    pub(crate) paused: Option<Pause>,
    /// Missed due times per hour over the last day: `(hour start, count)`.
    pub(crate) missed_recent: VecDeque<(Timestamp, u64)>,
    /// Until when a quota hold keeps the job from starting anything (see
    /// `JobDef::wait_budget`); cleared by the first visit at or after it.
    pub(crate) quota_hold: Option<Timestamp>,
    /// A changed definition of a confirmed job waiting for a person's `Confirm` of its
    /// digest; `def` keeps running meanwhile. (An unconfirmed job's is its phase's.)
    pub(crate) held: Option<Box<HeldDef>>,
}

/// A job waiting for room (see `Phase::Free`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Waiting {
    pub(crate) since: Timestamp,
    pub(crate) reason: WaitReason,
}

/// The stored form of `Activity`, as written before the phase was a type (and still
/// written): each part of the phase its own optional field.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(
        rename = "Activity",
        description = "Everything about a job beyond its definition and cursor; absent for a job that has\nnever needed any of it, which keeps idle jobs small.\n\nOpaque outside the crate, and named only through the unstable `internals` feature."
    )
)]
pub(crate) struct ActivityIn {
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pending: VecDeque<Owed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<OpenRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry: Option<RetryWait>,
    /// A queued manual run and who asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    manual: Option<Actor>,
    /// When manual runs were asked for in the last hour (for the hourly cap).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    manual_recent: VecDeque<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paused: Option<Pause>,
    /// Missed due times per hour over the last day: `(hour start, count)`.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    missed_recent: VecDeque<(Timestamp, u64)>,
    /// Until when a quota hold keeps the job from starting anything (see
    /// `JobDef::wait_budget`); cleared by the first visit at or after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quota_hold: Option<Timestamp>,
    /// Set while the job could start but a lane or the cap holds it back; `since` orders
    /// the waiters and gives the wait's length when it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<Waiting>,
    /// A changed definition waiting for a person's `Confirm` of its digest; `def` keeps
    /// running meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    held: Option<Box<HeldDef>>,
    /// A new job whose definition was never confirmed: no schedule runs, nothing is
    /// accounted, until `Confirm` (the definition is `held` too).
    #[serde(default, skip_serializing_if = "is_false")]
    unconfirmed: bool,
}

/// `ActivityIn` borrowed from an activity: what `Serialize for Activity` writes, field for
/// field as `ActivityIn` (a save costs the text alone, no copy).
#[derive(Serialize)]
struct ActivityOut<'a> {
    #[serde(skip_serializing_if = "VecDeque::is_empty")]
    pending: &'a VecDeque<Owed>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a OpenRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<&'a RetryWait>,
    #[serde(skip_serializing_if = "Option::is_none")]
    manual: &'a Option<Actor>,
    #[serde(skip_serializing_if = "VecDeque::is_empty")]
    manual_recent: &'a VecDeque<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: &'a Option<Pause>,
    #[serde(skip_serializing_if = "VecDeque::is_empty")]
    missed_recent: &'a VecDeque<(Timestamp, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quota_hold: &'a Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting: Option<&'a Waiting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<&'a HeldDef>,
    #[serde(skip_serializing_if = "is_false")]
    unconfirmed: bool,
}

impl Serialize for Activity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (retry, waiting) = match &self.phase {
            Phase::Free { retry, waiting } => (retry.as_ref(), waiting.as_ref()),
            _ => (None, None),
        };
        ActivityOut {
            pending: &self.pending,
            run: self.run(),
            retry,
            manual: &self.manual,
            manual_recent: &self.manual_recent,
            paused: &self.paused,
            missed_recent: &self.missed_recent,
            quota_hold: &self.quota_hold,
            waiting,
            held: self.held(),
            unconfirmed: self.is_unconfirmed(),
        }
        .serialize(s)
    }
}

/// A stored activity whose parts no phase can hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhaseConflict {
    RunAndRetry,
    WaitsWhileRunning,
    UnconfirmedWithoutDefinition,
    UnconfirmedButBusy,
}

impl std::fmt::Display for PhaseConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PhaseConflict::RunAndRetry => {
                "a job's activity holds an open run and a retry at once (a job has one or the other)"
            }
            PhaseConflict::WaitsWhileRunning => {
                "a job's activity waits for room while its run is open (only a job with no open run waits)"
            }
            PhaseConflict::UnconfirmedWithoutDefinition => {
                "an unconfirmed job's activity has no held definition (`unconfirmed` needs `held`)"
            }
            PhaseConflict::UnconfirmedButBusy => {
                "an unconfirmed job's activity has a run, a retry or a wait for room (it has run nothing)"
            }
        })
    }
}

impl TryFrom<ActivityIn> for Activity {
    type Error = PhaseConflict;
    fn try_from(a: ActivityIn) -> Result<Activity, PhaseConflict> {
        let (phase, held) = match (a.unconfirmed, a.run) {
            (true, run) => {
                if run.is_some() || a.retry.is_some() || a.waiting.is_some() {
                    return Err(PhaseConflict::UnconfirmedButBusy);
                }
                let held = a.held.ok_or(PhaseConflict::UnconfirmedWithoutDefinition)?;
                (Phase::Unconfirmed(held), None)
            }
            (false, Some(run)) => {
                if a.retry.is_some() {
                    return Err(PhaseConflict::RunAndRetry);
                }
                if a.waiting.is_some() {
                    return Err(PhaseConflict::WaitsWhileRunning);
                }
                (Phase::Running(run), a.held)
            }
            (false, None) => {
                let (retry, waiting) = (a.retry, a.waiting);
                (Phase::Free { retry, waiting }, a.held)
            }
        };
        Ok(Activity {
            pending: a.pending,
            phase,
            manual: a.manual,
            manual_recent: a.manual_recent,
            paused: a.paused,
            missed_recent: a.missed_recent,
            quota_hold: a.quota_hold,
            held,
        })
    }
}

impl Activity {
    /// The open run, parked or not.
    pub(crate) fn run(&self) -> Option<&OpenRun> {
        match &self.phase {
            Phase::Running(run) => Some(run),
            _ => None,
        }
    }

    pub(crate) fn run_mut(&mut self) -> Option<&mut OpenRun> {
        match &mut self.phase {
            Phase::Running(run) => Some(run),
            _ => None,
        }
    }

    /// Ends the open run's phase if `end` says so: the job is free again, with nothing
    /// waiting (a run's ending decides what comes next).
    pub(crate) fn take_run_if(&mut self, end: impl FnOnce(&OpenRun) -> bool) -> Option<OpenRun> {
        if !self.run().is_some_and(end) {
            return None;
        }
        match std::mem::take(&mut self.phase) {
            Phase::Running(run) => Some(run),
            _ => None,
        }
    }

    /// Ends the open run's phase, whatever it is.
    pub(crate) fn take_run(&mut self) -> Option<OpenRun> {
        self.take_run_if(|_| true)
    }

    /// Opens `run`: whatever the job waited with (its retry, its place in a line) is
    /// what the run now carries, so it is let go.
    pub(crate) fn open_run(&mut self, run: OpenRun) {
        self.phase = Phase::Running(run);
    }

    /// The failed run's retry waiting for its time.
    pub(crate) fn retry(&self) -> Option<RetryWait> {
        match &self.phase {
            Phase::Free { retry, .. } => *retry,
            _ => None,
        }
    }

    pub(crate) fn retry_mut(&mut self) -> Option<&mut RetryWait> {
        match &mut self.phase {
            Phase::Free { retry, .. } => retry.as_mut(),
            _ => None,
        }
    }

    pub(crate) fn take_retry(&mut self) -> Option<RetryWait> {
        match &mut self.phase {
            Phase::Free { retry, .. } => retry.take(),
            _ => None,
        }
    }

    /// A retry for a job with no open run (its run has just ended, or never opened): the
    /// callers take the run first, so a job running keeps its run.
    pub(crate) fn set_retry(&mut self, new: RetryWait) {
        if let Phase::Free { retry, .. } = &mut self.phase {
            *retry = Some(new);
        }
    }

    /// Since when, and why, the job waits for room.
    pub(crate) fn waiting(&self) -> Option<Waiting> {
        match &self.phase {
            Phase::Free { waiting, .. } => *waiting,
            _ => None,
        }
    }

    /// The job's wait for room, to begin or change: `None` while it has a run open or is
    /// unconfirmed (neither can wait).
    pub(crate) fn waiting_slot(&mut self) -> Option<&mut Option<Waiting>> {
        match &mut self.phase {
            Phase::Free { waiting, .. } => Some(waiting),
            _ => None,
        }
    }

    /// Ends a wait for room, returning it.
    pub(crate) fn take_waiting(&mut self) -> Option<Waiting> {
        self.waiting_slot().and_then(Option::take)
    }

    /// Whether the job is new and its definition not yet confirmed.
    pub(crate) fn is_unconfirmed(&self) -> bool {
        matches!(self.phase, Phase::Unconfirmed(_))
    }

    /// The definition waiting for a person's `Confirm`: a confirmed job's held change,
    /// or an unconfirmed job's first definition.
    pub(crate) fn held(&self) -> Option<&HeldDef> {
        match &self.phase {
            Phase::Unconfirmed(held) => Some(held),
            _ => self.held.as_deref(),
        }
    }

    /// Holds `def` for confirmation in place of what was held (an unconfirmed job's new
    /// definition replaces its first one and stays unconfirmed).
    pub(crate) fn hold(&mut self, def: HeldDef) {
        match &mut self.phase {
            Phase::Unconfirmed(held) => **held = def,
            _ => self.held = Some(Box::new(def)),
        }
    }

    /// Withdraws a confirmed job's held change (its definition in force was asked for).
    pub(crate) fn drop_held(&mut self) {
        self.held = None;
    }

    /// Takes the held definition for its confirmation, and whether it was the job's first
    /// (the job, unconfirmed until now, is free then).
    pub(crate) fn take_held(&mut self) -> Option<(HeldDef, bool)> {
        if let Phase::Unconfirmed(_) = self.phase {
            return match std::mem::take(&mut self.phase) {
                Phase::Unconfirmed(held) => Some((*held, true)),
                _ => None,
            };
        }
        self.held.take().map(|held| (*held, false))
    }

    /// Owes a segment out of turn (a backfill, a run's cover handed back) where it belongs
    /// in the oldest-first line: before the first segment that starts after it ends. A
    /// line over its bound then merges two segments that follow one another
    /// (`make_room`), the new one with its neighbours included: in place, it keeps apart
    /// the pair around it. False when nothing merged and the line is over its bound
    /// (`JobRecord::owe_out_of_turn` then makes room as `owe` does).
    pub(crate) fn owe_in_order(&mut self, owed: Owed, current: &Schedule) -> bool {
        let at = self
            .pending
            .iter()
            .position(|o| o.from > owed.to)
            .unwrap_or(self.pending.len());
        self.pending.insert(at, owed);
        self.pending.len() <= MAX_OWED_SEGMENTS || self.make_room(current, None)
    }

    /// Merges the newest two segments that follow one another (`Owed::joins`), keeping
    /// every count exact; false when no two do. Causes alternate (overlap, downtime,
    /// clock) far more often than debts are disjoint, and a schedule change tags what is
    /// owed without making it disjoint, so this nearly always finds a pair.
    ///
    /// `apart`: the range of a segment about to go in out of turn (a backfill, a cover
    /// handed back). Two due times of one schedule that follow one another may have
    /// another schedule's due times between them; a pair around `apart` is not merged,
    /// or the merged segment would straddle it and the line would fall out of order.
    pub(crate) fn make_room(
        &mut self,
        current: &Schedule,
        apart: Option<(Timestamp, Timestamp)>,
    ) -> bool {
        let pending = &mut self.pending;
        let around = |i: usize| {
            apart.is_some_and(|(from, to)| pending[i - 1].to < from && to < pending[i].from)
        };
        let pair = (1..pending.len())
            .rev()
            .find(|&i| !around(i) && pending[i - 1].joins(&pending[i], current));
        let Some(i) = pair else { return false };
        let newer = pending.remove(i).expect("in range");
        pending[i - 1].absorb(newer);
        true
    }

    /// Whether it equals `Activity::default()` (every field empty), without building one
    /// to compare with: `tidy` asks after every visit and every settlement.
    pub(crate) fn is_empty(&self) -> bool {
        // Named field by field, so a new field cannot be left out.
        let Activity {
            pending,
            phase,
            manual,
            manual_recent,
            paused,
            missed_recent,
            quota_hold,
            held,
        } = self;
        pending.is_empty()
            && matches!(
                phase,
                Phase::Free {
                    retry: None,
                    waiting: None
                }
            )
            && manual.is_none()
            && manual_recent.is_empty()
            && paused.is_none()
            && missed_recent.is_empty()
            && quota_hold.is_none()
            && held.is_none()
    }
}

#[cfg(test)]
mod activity_tests {
    use super::Activity;
    use crate::event::Actor;
    use crate::time::Timestamp;

    /// `is_empty` answers what comparing with `Activity::default()` answered.
    #[test]
    fn empty_is_the_default() {
        let mut cases = vec![Activity::default()];
        cases.push(Activity {
            manual: Some(Actor::new("ana")),
            ..Activity::default()
        });
        let mut a = Activity::default();
        a.manual_recent.push_back(Timestamp::from_millis(1));
        cases.push(a);
        let mut a = Activity::default();
        a.missed_recent.push_back((Timestamp::from_millis(0), 1));
        cases.push(a);
        cases.push(Activity {
            phase: super::Phase::Free {
                retry: None,
                waiting: Some(super::Waiting {
                    since: Timestamp::from_millis(1),
                    reason: crate::effect::WaitReason::LaneBusy,
                }),
            },
            ..Activity::default()
        });
        let def = {
            use crate::job::{JobDef, JobName};
            use crate::schedule::Schedule;
            let every = Schedule::every(
                crate::time::Duration::from_mins(5),
                crate::time::Duration::ZERO,
            );
            JobDef::new(JobName::new("new").unwrap(), every.unwrap())
        };
        cases.push(Activity {
            phase: super::Phase::Unconfirmed(Box::new(super::HeldDef::new(def))),
            ..Activity::default()
        });
        for a in &cases {
            assert_eq!(a.is_empty(), *a == Activity::default(), "{a:?}");
        }
        assert!(cases[0].is_empty());
    }

    /// Two held definitions are equal when the definitions are (the digest is derived), so a
    /// state compared after a round trip tells a changed held definition from the same one.
    #[test]
    fn held_definitions_compare_by_their_definition() {
        use super::HeldDef;
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        use crate::time::Duration;
        let def = |minutes| {
            let every = Schedule::every(Duration::from_mins(minutes), Duration::ZERO).unwrap();
            JobDef::new(JobName::new("sync").unwrap(), every)
        };
        assert_eq!(HeldDef::new(def(5)), HeldDef::new(def(5)));
        assert_ne!(HeldDef::new(def(5)), HeldDef::new(def(10)));
        assert_eq!(*HeldDef::new(def(5)).digest(), def(5).digest());
    }

    /// Two tagged segments join only when both hold exactly what they say: a cover handed
    /// back may carry an older schedule's due times under the current one's tag, and a
    /// segment merged with it would be walked in batches by the wrong due times.
    #[test]
    fn a_tagged_segment_not_holding_exactly_joins_nothing() {
        use super::Owed;
        use crate::effect::MissCause;
        use crate::schedule::Schedule;
        use crate::time::Duration;
        const HOUR: i64 = 3_600_000;
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        let segment = |from: i64, to: i64, count: u64, tagged: bool| Owed {
            from: Timestamp::from_millis(from * HOUR),
            to: Timestamp::from_millis(to * HOUR),
            count,
            cause: MissCause::Paused,
            schedule: tagged.then(|| Box::new(hourly.clone())),
        };
        let current = Schedule::every(Duration::from_mins(7), Duration::ZERO).unwrap();
        // 10:00 holds exactly one hourly due time; 8:00..=9:00 holds two, not the one it says.
        let (exact, short) = (segment(10, 10, 1, true), segment(8, 9, 1, true));
        assert!(exact.holds_exactly(&hourly) && !short.holds_exactly(&hourly));
        // 10:30..=11:30 counts its one due time (11:00) right, yet starts and ends off them.
        let off_grid = Owed {
            from: Timestamp::from_millis(10 * HOUR + HOUR / 2),
            to: Timestamp::from_millis(11 * HOUR + HOUR / 2),
            ..segment(0, 0, 1, true)
        };
        assert!(!off_grid.holds_exactly(&hourly));
        assert!(
            exact.joins(&segment(11, 12, 2, true), &current),
            "both exact, in a row"
        );
        let says_one_of_two = segment(11, 12, 1, true);
        assert!(
            !exact.joins(&says_one_of_two, &current),
            "the newer one is not exact"
        );
        assert!(!short.joins(&exact, &current), "the older one is not exact");
        // Untagged, they are the current schedule's own, exact by construction.
        let (untagged, seven) = (segment(0, 0, 1, false), Timestamp::from_millis(7 * 60_000));
        let after = Owed {
            from: seven,
            to: seven,
            ..untagged.clone()
        };
        assert!(untagged.joins(&after, &current));
    }

    /// A segment from the first instant of time (a grid that holds `Timestamp::MIN`, owed
    /// by a backfill from the beginning) counts that instant too: the one due time no
    /// `next_after` can find, since none is before it.
    #[test]
    fn a_segment_from_the_first_instant_of_time_holds_exactly() {
        use super::Owed;
        use crate::effect::MissCause;
        use crate::schedule::Schedule;
        use crate::time::Duration;
        // i64::MIN ms is 192 ms past a whole second: this grid holds it.
        let grid = Schedule::every(Duration::from_secs(1), Duration::from_millis(192)).unwrap();
        let first_three = |count: u64| Owed {
            from: Timestamp::MIN,
            to: Timestamp::from_millis(i64::MIN + 2_000),
            count,
            cause: MissCause::Backfill,
            schedule: Some(Box::new(grid.clone())),
        };
        assert!(first_three(3).holds_exactly(&grid));
        assert!(!first_three(2).holds_exactly(&grid));
    }

    /// A one-shot's instant is settled once looked at and held by nothing of its own: a
    /// retry waiting to run it holds it; an owed segment of an older schedule (tagged,
    /// kept from before the redefinition) is not about it, even when its range holds it.
    #[test]
    fn a_one_shot_is_settled_only_when_nothing_of_its_own_holds_its_instant() {
        use crate::effect::{Covers, MissCause, Trigger};
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        use crate::state::{Cover, JobRecord, Owed, RetryWait};
        use crate::time::Duration;
        let instant = Timestamp::from_millis(7_200_000);
        let def = JobDef::new(JobName::new("once").unwrap(), Schedule::at(instant));
        let mut record = JobRecord::new(def, Timestamp::from_millis(0));
        record.frontier = instant;
        assert!(
            record.one_shot_settled(instant),
            "looked at, nothing holds it"
        );
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        record.act_mut().pending.push_back(Owed {
            from: Timestamp::from_millis(3_600_000),
            to: Timestamp::from_millis(10_800_000),
            count: 3,
            cause: MissCause::Down,
            schedule: Some(Box::new(hourly)),
        });
        assert!(
            record.one_shot_settled(instant),
            "an older schedule's owed segment is not about the instant"
        );
        record.act_mut().set_retry(RetryWait {
            at: Timestamp::from_millis(7_300_000),
            attempt: 2,
            trigger: Trigger::Schedule,
            cover: Cover {
                covers: Covers {
                    from: instant,
                    to: instant,
                    count: 1,
                },
                late: None,
            },
        });
        assert!(
            !record.one_shot_settled(instant),
            "a retry waiting to run it holds it"
        );
    }

    /// The accounted start itself is not accounted: a due time at or before the instant a
    /// schedule was defined was never due under it (a one-shot defined at its own instant
    /// never runs, and no earlier schedule's entry holding that instant ends it).
    #[test]
    fn the_accounted_start_is_not_accounted() {
        use crate::job::{JobDef, JobName};
        use crate::schedule::Schedule;
        use crate::state::JobRecord;
        let at = Timestamp::from_millis(1_000_000);
        let def = JobDef::new(JobName::new("once").unwrap(), Schedule::at(at));
        let mut record = JobRecord::new(def, at);
        record.accounted_from = Some(at);
        assert!(!record.accounts(at));
        assert!(!record.accounts(Timestamp::from_millis(999_999)));
        assert!(record.accounts(Timestamp::from_millis(1_000_001)));
        record.accounted_from = None;
        assert!(
            record.accounts(at),
            "a state older than the field accounts everything"
        );
    }
}
