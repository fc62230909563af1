//! J1, the journal is written on the store's time: no record is dated further behind the
//! latest record of a process's event than two `clock_jump`s (a reading within
//! `clock_jump` of the store's clock is taken as it reads, ahead or behind, so two such
//! records may lie that far apart), but for a release behind (`ClockGap::ReleasedBehind`),
//! which moves the store's clock back by as much as it tells. A person's command ahead of
//! the store's clock is taken as it reads (nothing can say it is wrong), so its records
//! are judged but set no mark. A step that acted on a clock held further behind timed what
//! it started from hours back: the next tick found those runs stalled and past their
//! deadlines at once; a person's command from a slow machine dated its records hours
//! before the ticks'. And exactly (the rule as `judge_person_clock` states it): a person's
//! command is dated at its reading unless that reads further behind the store's clock than
//! `clock_jump`, then at the store's clock (the world sends one in eight from a machine
//! read at that bound, a millisecond past it, or hours slow: `world/people.rs::person_now`).
//! A result is dated exactly too (`result_dated`, the rule as `judge_result_clock` states
//! it): the store vouches for its process's time at its last event plus what its clocks
//! measured since, when that reading is its own; its record is dated at its reading within
//! `clock_jump` of what was vouched (never further behind it, nor further ahead).

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{Event, Now, ProcessId, Record, State};

use super::Checker;

/// What J1 holds: the latest record's time, on the store's time base.
#[derive(Default)]
pub(super) struct JournalTime {
    /// `clock_jump` in ms (`None`: J1 is not held, as for a journal checked without the
    /// effects that tell the releases).
    pub(super) jump: Option<i64>,
    latest: Option<i64>,
    /// The step being fed is a person's command (its records set no mark).
    person: bool,
    /// The date the rule gives the step being fed, a person's command (its reading, or
    /// the store's clock when that reads further behind it than `clock_jump`) or a result
    /// (`result_dated`).
    dated: Option<i64>,
    /// The result being fed is dated past the store's clock by its process's own measure
    /// (the rule's part no other check reaches).
    measured: bool,
}

impl Checker {
    /// Holds J1 for a store of this `clock_jump` (the world and its replays, which tell
    /// the checker every effect in order: `Checker::for_store`).
    pub(super) fn hold_journal_time(&mut self, clock_jump_ms: i64) {
        self.journal_time.jump = Some(clock_jump_ms);
    }

    /// J1's part of `Observation::Stepping`: whether the step is a person's command, and the
    /// date the rule gives a person's command or a result from its reading and the store
    /// before the step.
    pub(super) fn journal_time_stepping(&mut self, event: &Event, state: &State, now: Now) {
        let jt = &mut self.journal_time;
        jt.measured = false;
        jt.person = !matches!(
            event,
            Event::Tick { .. }
                | Event::ProcessStarted { .. }
                | Event::ProcessDraining { .. }
                | Event::Adopt { .. }
                | Event::RunFinished { .. }
        );
        let read = now.wall.as_millis();
        let store = state.clock().map(|c| c.as_millis());
        jt.dated = match (event, jt.jump, store) {
            (_, None, _) => None,
            (Event::RunFinished { process, .. }, Some(jump), _) => {
                let (dated, measured) = result_dated(state, *process, now, jump);
                jt.measured = measured;
                Some(dated)
            }
            _ if !jt.person => None,
            (_, Some(jump), Some(store)) if read < store - jump => Some(store),
            (_, Some(_), _) => Some(read),
        };
    }

    /// J1 for one record, in journal order.
    pub(super) fn journal_time(&mut self, rec: &Record) {
        let jt = &mut self.journal_time;
        let Some(jump) = jt.jump else { return };
        let at = rec.at.as_millis();
        if let Some(dated) = jt.dated.filter(|&d| d != at) {
            let whose = if jt.person {
                "a person's command"
            } else {
                "a result"
            };
            let detail = format!(
                "{whose} dated {} where its reading and the store's clock say {}",
                rec.at,
                super::ts(dated)
            );
            self.violation(Invariant::J1, &rec.job, detail);
            return;
        }
        if jt.measured {
            self.probe(Probe::ResultDatedByItsOwnMeasure);
        }
        let jt = &mut self.journal_time;
        let Some(latest) = jt.latest else {
            jt.latest = (!jt.person).then_some(at);
            return;
        };
        if !jt.person {
            jt.latest = Some(latest.max(at));
        }
        if at < latest.saturating_sub(2 * jump) {
            let detail = format!(
                "a record dated {} after one dated {}: the step acted on a clock held behind",
                rec.at,
                super::ts(latest)
            );
            self.violation(Invariant::J1, &rec.job, detail);
        } else {
            self.probe(Probe::JournalWrittenOnTheStoresTime);
        }
    }

    /// The store's clock went back `by` ms by a release behind.
    pub(super) fn journal_time_back(&mut self, by: i64) {
        let jt = &mut self.journal_time;
        jt.latest = jt.latest.map(|l| l.saturating_sub(by));
    }
}

/// The date J1's rule gives a result `process` reports with reading `now`, judged by the
/// store `state` was before it (`jump`: `clock_jump` in ms). The store vouches for the
/// process's time at its last event (`heard_at`) plus what its clocks measured since, its
/// monotonic clock or the one that counts sleep, whichever moved more; but only when its
/// wall clock moved as much, within `jump` (a reading from another hand counts from
/// another origin: it vouches for no time passed). Never less than the store's clock. The
/// result is dated at its reading unless that lies further than `jump` from what was
/// vouched: then at the vouched time, if behind, or `jump` past it, if ahead. Returns the
/// date, and whether the process's own measure vouched for a time past the store's clock.
fn result_dated(state: &State, process: ProcessId, now: Now, jump: i64) -> (i64, bool) {
    let read = now.wall.as_millis();
    let Some(clock) = state.clock().map(|c| c.as_millis()) else {
        return (read, false);
    };
    let vouched = match state.process(process) {
        Some(rec) => {
            let last = rec.last_reading();
            let since = |a: i64, b: i64| a.saturating_sub(b).max(0);
            let mono = since(now.mono.as_millis(), last.mono.as_millis());
            let boot = match (now.boot, last.boot) {
                (Some(b), Some(l)) => since(b.as_millis(), l.as_millis()),
                _ => 0,
            };
            let measured = mono.max(boot);
            let wall = i128::from(read) - i128::from(last.wall.as_millis());
            let own =
                (wall - i128::from(measured)).unsigned_abs() <= u128::from(jump.unsigned_abs());
            let passed = if own { measured } else { 0 };
            clock.max(rec.heard_at().as_millis().saturating_add(passed))
        }
        None => clock,
    };
    let dated = if read < vouched.saturating_sub(jump) {
        vouched
    } else {
        read.min(vouched.saturating_add(jump))
    };
    (dated, vouched > clock)
}
