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
//! read at that bound, a millisecond past it, or hours slow: `world.rs::person_now`).

use duetime::{Event, Now, Record, Timestamp};

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
    /// The date the rule gives a person's command being fed (its reading, or the store's
    /// clock when that reads further behind it than `clock_jump`).
    person_dated: Option<i64>,
}

impl Checker {
    /// Holds J1 for a store of this `clock_jump` (the world and its replays, which feed
    /// the checker every effect in order).
    pub fn hold_journal_time(&mut self, clock_jump_ms: i64) {
        self.journal_time.jump = Some(clock_jump_ms);
    }

    /// J1's part of `Checker::stepping`: whether the step is a person's command, and if so
    /// the date the rule gives it from its reading and the store's clock before the step.
    pub(super) fn journal_time_stepping(
        &mut self,
        event: &Event,
        store: Option<Timestamp>,
        now: Now,
    ) {
        let jt = &mut self.journal_time;
        jt.person = !matches!(
            event,
            Event::Tick { .. }
                | Event::ProcessStarted { .. }
                | Event::ProcessDraining { .. }
                | Event::Adopt { .. }
                | Event::RunFinished { .. }
        );
        let read = now.wall.as_millis();
        jt.person_dated = match (jt.person, jt.jump, store) {
            (false, _, _) | (_, None, _) => None,
            (true, Some(jump), Some(store)) if read < store.as_millis() - jump => {
                Some(store.as_millis())
            }
            (true, Some(_), _) => Some(read),
        };
    }

    /// J1 for one record, in journal order.
    pub(super) fn journal_time(&mut self, rec: &Record) {
        let jt = &mut self.journal_time;
        let Some(jump) = jt.jump else { return };
        let at = rec.at.as_millis();
        if let Some(dated) = jt.person_dated.filter(|&d| d != at) {
            let detail = format!(
                "a person's command dated {} where its reading and the store's clock say {}",
                rec.at,
                super::ts(dated)
            );
            self.violation("J1", &rec.job, detail);
            return;
        }
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
            self.violation("J1", &rec.job, detail);
        } else {
            self.probe("journal written on the store's time");
        }
    }

    /// The store's clock went back `by` ms by a release behind.
    pub(super) fn journal_time_back(&mut self, by: i64) {
        let jt = &mut self.journal_time;
        jt.latest = jt.latest.map(|l| l.saturating_sub(by));
    }
}
