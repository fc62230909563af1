//! J1, the journal is written on the store's time: no record is dated further behind the
//! latest record of a process's event than two `clock_jump`s (a reading within
//! `clock_jump` of the store's clock is taken as it reads, ahead or behind, so two such
//! records may lie that far apart), but for a release behind (`ClockGap::ReleasedBehind`),
//! which moves the store's clock back by as much as it tells. A person's command ahead of
//! the store's clock is taken as it reads (nothing can say it is wrong), so its records
//! are judged but set no mark. A step that acted on a clock held further behind timed what
//! it started from hours back: the next tick found those runs stalled and past their
//! deadlines at once; a person's command from a slow machine dated its records hours
//! before the ticks'.

use duetime::{Event, Record};

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
}

impl Checker {
    /// Holds J1 for a store of this `clock_jump` (the world and its replays, which feed
    /// the checker every effect in order).
    pub fn hold_journal_time(&mut self, clock_jump_ms: i64) {
        self.journal_time.jump = Some(clock_jump_ms);
    }

    /// The event of the step whose effects come next, and the state it is about to step
    /// (R3 reads a job's definitions from it before an `Upsert`).
    pub fn stepping(&mut self, event: &Event, state: &duetime::State) {
        self.asking(event, state);
        self.journal_time.person = !matches!(
            event,
            Event::Tick { .. }
                | Event::ProcessStarted { .. }
                | Event::ProcessDraining { .. }
                | Event::Adopt { .. }
                | Event::RunFinished { .. }
        );
    }

    /// J1 for one record, in journal order.
    pub(super) fn journal_time(&mut self, rec: &Record) {
        let jt = &mut self.journal_time;
        let Some(jump) = jt.jump else { return };
        let at = rec.at.as_millis();
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
