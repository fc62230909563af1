//! A job's debts: what its missed rule does with due times found late, and its line of
//! owed due times. Each touches the one job's record and the output, nothing else of the
//! state, so they are the record's own methods: a transition looks its job up once and
//! hands it the due times, instead of each step of the accounting looking it up again.

use std::collections::VecDeque;

use crate::effect::{Covers, MissCause};
use crate::job::MissedRule;
use crate::state::{JobRecord, Owed, MAX_OWED_SEGMENTS};
use crate::time::{Duration, Timestamp};

use super::due::{last_due, skipped};
use super::Out;

const MS: Duration = Duration::from_millis(1);

impl JobRecord {
    /// Moves the frontier to `until`, handing every due time in between to the missed rule
    /// with `cause`.
    pub(crate) fn pass_due_times(&mut self, until: Timestamp, cause: MissCause, out: &mut Out) {
        if until <= self.frontier || self.is_unconfirmed() {
            // An unconfirmed job's schedule has not begun: there is nothing to account.
            return;
        }
        let from = self.frontier;
        let schedule = &self.def.schedule;
        let count = schedule.count_in(from, until);
        let first = self.next_due;
        let next = schedule.next_after(until);
        let last = if count == 0 {
            None
        } else {
            last_due(schedule, from, until)
        };
        self.frontier = until;
        self.next_due = next;
        if let (Some(first), Some(last)) = (first, last) {
            self.miss(first, last, count, cause, out);
        }
    }

    /// Applies the missed rule to due times `first..=last` (`count` of them) found late for
    /// `cause`. The catch-up window turns the oldest into `too_late` first.
    pub(crate) fn miss(
        &mut self,
        first: Timestamp,
        last: Timestamp,
        count: u64,
        cause: MissCause,
        out: &mut Out,
    ) {
        let Some((first, count)) = self.expire_before_window(first, last, count, out) else {
            return;
        };
        match self.def.missed {
            MissedRule::Skip => {
                self.note_missed(count, out.now);
                out.ledger(&self.def.name, first, last, count, skipped(cause));
            }
            MissedRule::CatchUpOnce => {
                // Only one catch-up is ever owed: whatever was owed before is skipped now.
                self.skip_owed(out);
                if count > 1 {
                    let schedule = &self.def.schedule;
                    let before_last =
                        last_due(schedule, first.saturating_sub(MS), last.saturating_sub(MS));
                    if let Some(before_last) = before_last {
                        self.note_missed(count - 1, out.now);
                        out.ledger(
                            &self.def.name,
                            first,
                            before_last,
                            count - 1,
                            skipped(cause),
                        );
                    }
                }
                self.owe(Owed::one(last, cause), out);
            }
            MissedRule::Required => self.owe(
                Owed {
                    from: first,
                    to: last,
                    count,
                    cause,
                    schedule: None,
                },
                out,
            ),
        }
    }

    /// The catch-up window's part of `miss` (never for `skip`, which records everything
    /// skipped anyway): due times older than the window are recorded `too_late`. What is
    /// left for the rule, its first due time and count; `None` when nothing is.
    fn expire_before_window(
        &mut self,
        first: Timestamp,
        last: Timestamp,
        count: u64,
        out: &mut Out,
    ) -> Option<(Timestamp, u64)> {
        let window = self.def.catch_up_window;
        let Some(window) = window.filter(|_| self.def.missed != MissedRule::Skip) else {
            return Some((first, count));
        };
        let cutoff = out.now.saturating_sub(window).saturating_sub(MS);
        let before = first.saturating_sub(MS);
        if first > cutoff {
            return Some((first, count));
        }
        let schedule = &self.def.schedule;
        let old = schedule.count_in(before, cutoff.min(last));
        let Some(old_last) = last_due(schedule, before, cutoff.min(last)) else {
            return Some((first, count));
        };
        let next = schedule.next_after(old_last).unwrap_or(last);
        self.note_missed(old, out.now);
        out.ledger(
            &self.def.name,
            first,
            old_last,
            old,
            skipped(MissCause::TooLate),
        );
        let left = count - old.min(count);
        (left > 0).then_some((next, left))
    }

    /// Records every owed due time as skipped (each with its own cause) and forgets them.
    /// A backfill is kept: a person asked for exactly those due times, so `catch_up_once`
    /// and `buffer_one` (which keep one catch-up of the schedule) do not drop them.
    pub(crate) fn skip_owed(&mut self, out: &mut Out) {
        let Some(act) = self.activity.as_deref_mut() else {
            return;
        };
        let (kept, owed): (VecDeque<Owed>, VecDeque<Owed>) = act
            .pending
            .drain(..)
            .partition(|o| o.cause == MissCause::Backfill);
        act.pending = kept;
        for o in owed {
            self.note_missed(o.count, out.now);
            out.ledger(
                &self.def.name,
                o.from,
                o.to,
                o.count,
                skipped(o.skip_cause()),
            );
        }
    }

    /// Puts due times in line. A segment is a contiguous run of the schedule's due times
    /// with one cause, so the new ones merge into the newest segment only when they follow
    /// it directly (something skipped in between would otherwise be walked into again).
    ///
    /// The line holds at most `MAX_OWED_SEGMENTS`. A full line makes room by merging two
    /// segments that follow one another (`Activity::make_room`; the newer cause is folded
    /// into the older one, counts stay exact), then by recording `too_late` what the
    /// catch-up window has let go since it was owed (`expire_owed`): a `required` job must
    /// not lose due times to a bound on its state. Only a line of 32 disjoint debts within
    /// the window records its oldest segment skipped: the bound on a job's state wins then
    /// (a `required` job's line does not get there: a backfill or a schedule change that
    /// would leave it fewer than `REQUIRED_RESERVE` free segments is refused, and those two
    /// take what its own schedule and a handed-back retry can owe).
    pub(crate) fn owe(&mut self, owed: Owed, out: &mut Out) {
        let JobRecord { def, activity, .. } = self;
        let act = activity.get_or_insert_with(Default::default);
        let pending = &mut act.pending;
        // A full line takes the new due times into its newest segment whatever its cause.
        let full = pending.len() >= MAX_OWED_SEGMENTS;
        if let Some(back) = pending
            .back_mut()
            .filter(|back| (full || back.cause == owed.cause) && back.joins(&owed, &def.schedule))
        {
            back.absorb(owed);
            return;
        }
        if pending.len() < MAX_OWED_SEGMENTS || act.make_room(&def.schedule, None) {
            act.pending.push_back(owed);
            return;
        }
        let expired = self.expire_owed(out);
        self.act_mut().pending.push_back(owed);
        if !expired {
            self.give_up_oldest_owed(out);
        }
    }

    /// Records `too_late` the owed segments wholly older than the job's catch-up window (a
    /// backfill excepted: a person asked for it); whether there were any. The window says
    /// they are too old to run, so a full line gives them up before anything the rule
    /// promised.
    fn expire_owed(&mut self, out: &mut Out) -> bool {
        let (Some(window), Some(act)) = (self.def.catch_up_window, self.activity.as_deref_mut())
        else {
            return false;
        };
        let cutoff = out.now.saturating_sub(window);
        let (old, kept): (VecDeque<Owed>, VecDeque<Owed>) = act
            .pending
            .drain(..)
            .partition(|o| o.to < cutoff && o.cause != MissCause::Backfill);
        act.pending = kept;
        for o in &old {
            self.note_missed(o.count, out.now);
            out.ledger(
                &self.def.name,
                o.from,
                o.to,
                o.count,
                skipped(MissCause::TooLate),
            );
        }
        !old.is_empty()
    }

    /// Owes a segment out of turn (a backfill, or a run's cover a pause or a failure hands
    /// back to a `required` job) in its place in the line (`Activity::owe_in_order`, which
    /// merges if the line is over its bound; a backfill finds room, `has_owed_room` made
    /// it). A line merging cannot bring back within its bound
    /// gives up, as `owe` does, what the catch-up window has let go (`expire_owed`, the
    /// new segment included), and only then its oldest segment. A `required` job's line
    /// does not get that far: its `REQUIRED_RESERVE` keeps room for the cover and for one
    /// run of its schedule's own due times, and its own due times are apart only where
    /// the window let some go between them, which leaves the older ones to expire.
    pub(crate) fn owe_out_of_turn(&mut self, owed: Owed, out: &mut Out) {
        let JobRecord { def, activity, .. } = self;
        let act = activity.get_or_insert_with(Default::default);
        if act.owe_in_order(owed, &def.schedule) || self.expire_owed(out) {
            return;
        }
        self.give_up_oldest_owed(out);
    }

    /// A line one over its bound of disjoint debts: the oldest segment is recorded skipped
    /// (the bound on a job's state wins; a `required` job's line never gets here, see
    /// `owe` and `owe_out_of_turn`).
    fn give_up_oldest_owed(&mut self, out: &mut Out) {
        let Some(oldest) = self
            .activity
            .as_deref_mut()
            .and_then(|a| a.pending.pop_front())
        else {
            return;
        };
        self.note_missed(oldest.count, out.now);
        out.ledger(
            &self.def.name,
            oldest.from,
            oldest.to,
            oldest.count,
            skipped(oldest.skip_cause()),
        );
    }

    /// A retry cleared by a pause: its due times go to the missed rule as `paused`. They
    /// are older than anything owed but a backfill, so under `catch_up_once` an owed newer
    /// one wins (an owed backfill counts as owing too).
    pub(crate) fn unretry(&mut self, c: Covers, out: &mut Out) {
        let owes = self.act().is_some_and(|a| !a.pending.is_empty());
        // Tagged with its schedule (the `required` and `catch_up_once` cases): the cover may
        // come from a schedule since replaced, so it must never be measured against the
        // current one (an untagged segment must hold exactly the current schedule's due
        // times), nor merge with newer due times.
        let owed = |def: &crate::job::JobDef| Owed {
            from: c.from,
            to: c.to,
            count: c.count,
            cause: MissCause::Paused,
            schedule: Some(Box::new(def.schedule.clone())),
        };
        match self.def.missed {
            MissedRule::Required => {
                // A run's cover is at most one batch, so it is started whole again and
                // never walked. In order, not at the front: a backfill accepted while the
                // run was out may owe earlier due times.
                let owed = owed(&self.def);
                self.owe_out_of_turn(owed, out);
            }
            MissedRule::CatchUpOnce if !owes => {
                // Owed as it is: nothing newer is owed, so this is the one catch-up.
                let too_late = self
                    .def
                    .catch_up_window
                    .is_some_and(|w| c.to < out.now.saturating_sub(w));
                if too_late {
                    self.note_missed(c.count, out.now);
                    let kind = skipped(MissCause::TooLate);
                    out.ledger(&self.def.name, c.from, c.to, c.count, kind);
                    return;
                }
                let owed = owed(&self.def);
                self.act_mut().pending.push_back(owed);
            }
            _ => {
                self.note_missed(c.count, out.now);
                let kind = skipped(MissCause::Paused);
                out.ledger(&self.def.name, c.from, c.to, c.count, kind);
            }
        }
    }

    /// Counts missed due times into the job's hourly buckets for the last day.
    pub(crate) fn note_missed(&mut self, count: u64, now: Timestamp) {
        let hour = Timestamp::from_millis(now.as_millis().div_euclid(3_600_000) * 3_600_000);
        let buckets = &mut self.act_mut().missed_recent;
        match buckets.back_mut() {
            Some((h, n)) if *h == hour => *n = n.saturating_add(count),
            _ => buckets.push_back((hour, count)),
        }
        let day_ago = now.saturating_sub(Duration::from_days(1));
        while buckets.len() > 25 || buckets.front().is_some_and(|(h, _)| *h < day_ago) {
            buckets.pop_front();
        }
    }
}

impl Owed {
    /// The cause these due times are recorded skipped with when the line drops them (a
    /// newer due time takes their place, or the line's bound): their own, but for on-time
    /// due times that waited for upstreams (`after`), which are an overlap then (the job
    /// was busy waiting). Cause `upstream` is only ever an upstream's verdict
    /// (`step/after.rs`).
    pub(crate) fn skip_cause(&self) -> MissCause {
        match self.cause {
            MissCause::Upstream => MissCause::Overlap,
            cause => cause,
        }
    }

    /// One due time of the job's current schedule, owed for `cause`.
    pub(crate) fn one(at: Timestamp, cause: MissCause) -> Owed {
        Owed {
            from: at,
            to: at,
            count: 1,
            cause,
            schedule: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::effect::{Effect, Entry, LedgerKind, MissAction, Record};
    use crate::state::Owed;
    use crate::step::Out;
    use crate::{Actor, Config, Duration, Event, JobDef, JobName, MissCause, Now, Schedule};
    use crate::{State, Timestamp};

    const HOUR: i64 = 3_600_000;

    fn owed(hour: i64, cause: MissCause) -> Owed {
        Owed::one(Timestamp::from_millis(hour * HOUR), cause)
    }

    #[test]
    fn a_full_line_expires_what_its_window_passed_but_never_a_backfill() {
        let mut state = State::new(Config::default());
        let mut def = JobDef::new(
            JobName::new("sync").unwrap(),
            Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap(),
        );
        def.catch_up_window = Some(Duration::from_hours(3));
        let (def, actor) = (Box::new(def), Actor::new("ana"));
        let now = Timestamp::from_millis(100 * HOUR);
        state.step(Now::at(now), Event::Upsert { def, actor }, &mut Vec::new());
        let seq = state.seq_of_name("sync").unwrap();
        let line = [
            owed(10, MissCause::Backfill),
            owed(20, MissCause::Down),
            owed(97, MissCause::Down),
            owed(99, MissCause::Down),
        ];
        state.jobs.get_mut(&seq).unwrap().act_mut().pending = line.iter().cloned().collect();
        let mut effects = Vec::new();
        let mut out = Out {
            now,
            effects: &mut effects,
            start: 0,
            upstream_entries: Default::default(),
        };
        assert!(state.jobs.get_mut(&seq).unwrap().expire_owed(&mut out));
        let kept: Vec<Owed> = state.jobs[&seq]
            .act()
            .unwrap()
            .pending
            .iter()
            .cloned()
            .collect();
        assert_eq!(
            kept,
            [line[0].clone(), line[2].clone(), line[3].clone()],
            "the backfill a person asked for stays, however old; 20:00 is past the window, \
             97:00 exactly at its edge is not"
        );
        assert_eq!(too_late_hours(&effects), [20]);
    }

    /// At the first millisecond of an hour the last day spans 25 hourly buckets: the one
    /// a day old still holds misses of the last 24 hours (its first hour is exactly a day
    /// ago), so all 25 are kept and counted.
    #[test]
    fn misses_in_each_of_25_hours_all_count_at_the_hour_a_day_after_the_first() {
        let mut state = State::new(Config::default());
        let def = JobDef::new(
            JobName::new("sync").unwrap(),
            Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap(),
        );
        let (def, actor) = (Box::new(def), Actor::new("ana"));
        let start = Timestamp::from_millis(100 * HOUR);
        state.step(
            Now::at(start),
            Event::Upsert { def, actor },
            &mut Vec::new(),
        );
        let seq = state.seq_of_name("sync").unwrap();
        for hour in 100..=124 {
            state
                .jobs
                .get_mut(&seq)
                .unwrap()
                .note_missed(1, Timestamp::from_millis(hour * HOUR));
        }
        let now = Timestamp::from_millis(124 * HOUR);
        let buckets = &state.jobs[&seq].act().unwrap().missed_recent;
        assert_eq!(buckets.len(), 25);
        assert_eq!(state.job("sync", now).unwrap().missed_24h, 25);
        state
            .jobs
            .get_mut(&seq)
            .unwrap()
            .note_missed(1, now.saturating_add(Duration::from_millis(1)));
        let buckets = &state.jobs[&seq].act().unwrap().missed_recent;
        assert_eq!(
            buckets.len(),
            24,
            "a millisecond later, the first hour is over a day old"
        );
    }

    fn hourly() -> Schedule {
        Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap()
    }

    fn tagged(hour: i64, cause: MissCause) -> Owed {
        Owed {
            schedule: Some(Box::new(hourly())),
            ..owed(hour, cause)
        }
    }

    fn too_late_hours(effects: &[Effect]) -> Vec<i64> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Journal(Record {
                    entry: Entry::Ledger(l),
                    ..
                }) if l.kind
                    == (LedgerKind::Missed {
                        cause: MissCause::TooLate,
                        action: MissAction::Skipped,
                    }) =>
                {
                    Some(l.from.as_millis() / HOUR)
                }
                _ => None,
            })
            .collect()
    }

    /// A cover handed back goes in first, then the line merges: the cover may follow on
    /// from its neighbours, which merging before it went in could not use (the pair around
    /// it must stay apart until it is in place).
    #[test]
    fn a_cover_handed_back_to_a_full_line_merges_with_a_neighbour_once_in_place() {
        let mut act = crate::state::Activity {
            pending: (0..32).map(|k| tagged(2 * k, MissCause::Down)).collect(),
            ..Default::default()
        };
        let current = Schedule::every(Duration::from_mins(7), Duration::ZERO).unwrap();
        assert!(act.owe_in_order(tagged(5, MissCause::Paused), &current));
        assert_eq!(act.pending.len(), 32);
        let hours: Vec<(i64, i64, u64)> = act
            .pending
            .iter()
            .map(|o| (o.from.as_millis() / HOUR, o.to.as_millis() / HOUR, o.count))
            .collect();
        assert_eq!(hours[2], (4, 4, 1), "the older pair stays apart");
        assert_eq!(
            hours[3],
            (5, 6, 2),
            "05:00 and 06:00 follow one another: merged"
        );
        assert_eq!(act.pending.iter().map(|o| o.count).sum::<u64>(), 33);
    }

    /// Swarm seed 52973: a pause handed a `required` job's waiting retry back to a line of
    /// 32 disjoint debts (backfills, an earlier schedule's, its own split where the window
    /// let due times go), and it went in as a 33rd segment: the state no longer loaded.
    /// The line now gives up what the window let go first; the cover stays owed.
    #[test]
    fn a_cover_handed_back_to_a_full_line_expires_what_the_window_let_go_and_stays_owed() {
        let mut state = State::new(Config::default());
        let mut def = JobDef::new(JobName::new("sync").unwrap(), hourly());
        def.missed = crate::MissedRule::Required;
        def.catch_up_window = Some(Duration::from_hours(3));
        let (def, actor) = (Box::new(def), Actor::new("ana"));
        let now = Timestamp::from_millis(100 * HOUR);
        state.step(Now::at(now), Event::Upsert { def, actor }, &mut Vec::new());
        let seq = state.seq_of_name("sync").unwrap();
        let line = std::iter::once(owed(1, MissCause::Down))
            .chain((0..31).map(|k| tagged(3 + 2 * k, MissCause::Backfill)));
        state.jobs.get_mut(&seq).unwrap().act_mut().pending = line.collect();
        let mut effects = Vec::new();
        let mut out = Out {
            now,
            effects: &mut effects,
            start: 0,
            upstream_entries: Default::default(),
        };
        state
            .jobs
            .get_mut(&seq)
            .unwrap()
            .owe_out_of_turn(tagged(98, MissCause::Paused), &mut out);
        let pending = &state.jobs[&seq].act().unwrap().pending;
        assert_eq!(pending.len(), 32);
        assert_eq!(pending.back(), Some(&tagged(98, MissCause::Paused)));
        assert_eq!(pending.front(), Some(&tagged(3, MissCause::Backfill)));
        assert_eq!(too_late_hours(&effects), [1], "01:00 only, as too late");
        assert_eq!(effects.len(), 1, "nothing else recorded");
    }

    #[test]
    fn making_room_never_merges_two_due_times_around_a_segment_about_to_go_between() {
        // A schedule's due times at 10:00 and 11:00 follow one another, yet a backfill of a
        // later schedule may owe 10:30: merged, 10:00..11:00 would straddle it.
        let hourly = Schedule::every(Duration::from_hours(1), Duration::ZERO).unwrap();
        let tagged = |hour, cause| Owed {
            schedule: Some(Box::new(hourly.clone())),
            ..owed(hour, cause)
        };
        let mut act = crate::state::Activity {
            pending: [
                tagged(10, MissCause::Paused),
                tagged(11, MissCause::Rescheduled),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let half_past = Timestamp::from_millis(10 * HOUR + HOUR / 2);
        let current = Schedule::every(Duration::from_mins(7), Duration::ZERO).unwrap();
        assert!(!act.make_room(&current, Some((half_past, half_past))));
        assert_eq!(act.pending.len(), 2, "nothing merged around 10:30");
        let later = Timestamp::from_millis(12 * HOUR + HOUR / 2);
        assert!(act.make_room(&current, Some((later, later))));
        assert_eq!(act.pending.len(), 1, "12:30 lies past both: they merge");
        assert_eq!(act.pending[0].count, 2);
    }
}
