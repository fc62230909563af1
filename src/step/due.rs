//! Accounting due times: a tick looks at each job whose wake time has come, moves its
//! frontier over the due times that passed, and gives each one its fate: started on time,
//! handled by the missed rule (late), or by the overlap policy (the job was busy). Nothing
//! is stepped past without a ledger entry or a place in line.

use std::collections::VecDeque;

use crate::effect::{LedgerKind, MissAction, MissCause, Trigger};
use crate::event::ProcessId;
use crate::job::{MissedRule, Overlap};
use crate::jobs::JobSeq;
use crate::schedule::Schedule;
use crate::state::{Owed, State, MAX_OWED_SEGMENTS};
use crate::time::{Duration, Timestamp};

use super::Out;

const MS: Duration = Duration::from_millis(1);

/// The last due time `d` of `schedule` with `after < d <= until`. `every` and `at` answer
/// by arithmetic; cron by bisection over `count_in`, which is exact and cheap, so even a
/// decade-long outage costs a few dozen counts.
pub(crate) fn last_due(
    schedule: &Schedule,
    after: Timestamp,
    until: Timestamp,
) -> Option<Timestamp> {
    if until <= after {
        return None;
    }
    match schedule {
        Schedule::At { instant } => (after < *instant && *instant <= until).then_some(*instant),
        Schedule::Every { period, offset } => {
            let p = i128::from(period.as_millis());
            if p == 0 {
                return None;
            }
            let o = i128::from(offset.as_millis()) % p;
            let k = (i128::from(until.as_millis()) - o).div_euclid(p);
            let d = Timestamp::from_millis(i64::try_from(o + k * p).ok()?);
            (d > after).then_some(d)
        }
        Schedule::Cron(_) | Schedule::Calendar(_) => {
            if schedule.count_in(after, until) == 0 {
                return None;
            }
            // Invariant: a due time lies in (lo, until]; none lies in (hi, until].
            let (mut lo, mut hi) = (after.as_millis(), until.as_millis());
            let mut step: i64 = 1000;
            loop {
                let probe = hi.saturating_sub(step);
                if probe <= lo {
                    break;
                }
                if schedule.count_in(Timestamp::from_millis(probe), until) > 0 {
                    lo = probe;
                    break;
                }
                hi = probe;
                step = step.saturating_mul(2);
            }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if schedule.count_in(Timestamp::from_millis(mid), until) > 0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Some(Timestamp::from_millis(hi))
        }
    }
}

impl State {
    /// A quota hold in force hands every due time up to now to the missed rule as
    /// `quota_hold` (none of them could start before it ends); a hold that has ended (by
    /// this process's clock) is lifted, with a journal line, so a reader can tell which
    /// clock lifted it. A paused job's due times wait for the resume, as always.
    pub(super) fn hold_for_quota(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        if !self.quota_held(seq, now, out) {
            return;
        }
        if self.jobs.get(&seq).is_some_and(|j| j.paused().is_none()) {
            self.pass_due_times(seq, now, MissCause::QuotaHold, out);
        }
    }

    /// Whether a quota hold still holds the job at `now`; one that has ended is lifted here
    /// (with its journal line), whichever path asks first: a visit, or a start on the
    /// settling path or from a lane's waiters, which come without a visit.
    pub(crate) fn quota_held(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) -> bool {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return false;
        };
        let Some(act) = job.activity.as_deref_mut() else {
            return false;
        };
        match act.quota_hold {
            Some(until) if until <= now => {
                act.quota_hold = None;
                let name = job.def.name.clone();
                out.history(&name, crate::effect::History::QuotaHoldEnded { until });
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Due times that passed more than the grace ago: the missed rule decides.
    pub(crate) fn account_late(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        cause: MissCause,
        out: &mut Out,
    ) {
        let grace = self.config.grace;
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        if job.paused().is_some() {
            return;
        }
        // A due time is late when its (jittered) start is older than the grace; those
        // within the jitter of the line are judged one by one in `account_on_time`.
        let jitter = job.def.jitter.unwrap_or(Duration::ZERO);
        let late_until = now
            .saturating_sub(grace)
            .saturating_sub(MS)
            .saturating_sub(jitter);
        if job.next_due.is_none_or(|d| d > late_until) {
            return;
        }
        self.pass_due_times(seq, late_until, cause, out);
    }

    /// Moves the frontier to `until`, handing every due time in between to the missed rule
    /// with `cause`.
    pub(crate) fn pass_due_times(
        &mut self,
        seq: JobSeq,
        until: Timestamp,
        cause: MissCause,
        out: &mut Out,
    ) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        if until <= job.frontier || job.is_unconfirmed() {
            // An unconfirmed job's schedule has not begun: there is nothing to account.
            return;
        }
        let from = job.frontier;
        let schedule = &job.def.schedule;
        let count = schedule.count_in(from, until);
        job.frontier = until;
        let first = job.next_due;
        job.next_due = schedule.next_after(until);
        if count == 0 {
            return;
        }
        let (Some(first), Some(last)) = (first, last_due(schedule, from, until)) else {
            return;
        };
        self.miss(seq, first, last, count, cause, out);
    }

    /// Applies the missed rule to due times `first..=last` (`count` of them) found late for
    /// `cause`. The catch-up window turns the oldest into `too_late` first.
    pub(crate) fn miss(
        &mut self,
        seq: JobSeq,
        mut first: Timestamp,
        last: Timestamp,
        mut count: u64,
        cause: MissCause,
        out: &mut Out,
    ) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let rule = job.def.missed;
        let schedule = job.def.schedule.clone();
        let name = job.def.name.clone();
        if rule != MissedRule::Skip {
            if let Some(window) = job.def.catch_up_window {
                let cutoff = out.now.saturating_sub(window).saturating_sub(MS);
                let before = first.saturating_sub(MS);
                if first <= cutoff {
                    let old = schedule.count_in(before, cutoff.min(last));
                    if let Some(old_last) = last_due(&schedule, before, cutoff.min(last)) {
                        self.note_missed(seq, old, out.now);
                        out.ledger(&name, first, old_last, old, skipped(MissCause::TooLate));
                        count -= old.min(count);
                        if count == 0 {
                            return;
                        }
                        first = schedule.next_after(old_last).unwrap_or(last);
                    }
                }
            }
        }
        match rule {
            MissedRule::Skip => {
                self.note_missed(seq, count, out.now);
                out.ledger(&name, first, last, count, skipped(cause));
            }
            MissedRule::CatchUpOnce => {
                // Only one catch-up is ever owed: whatever was owed before is skipped now.
                self.skip_owed(seq, out);
                if count > 1 {
                    let before_last =
                        last_due(&schedule, first.saturating_sub(MS), last.saturating_sub(MS));
                    if let Some(before_last) = before_last {
                        self.note_missed(seq, count - 1, out.now);
                        out.ledger(&name, first, before_last, count - 1, skipped(cause));
                    }
                }
                self.owe(
                    seq,
                    Owed {
                        from: last,
                        to: last,
                        count: 1,
                        cause,
                        schedule: None,
                    },
                    out,
                );
            }
            MissedRule::Required => self.owe(
                seq,
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

    /// Records every owed due time as skipped (each with its own cause) and forgets them.
    /// A backfill is kept: a person asked for exactly those due times, so `catch_up_once`
    /// and `buffer_one` (which keep one catch-up of the schedule) do not drop them.
    pub(crate) fn skip_owed(&mut self, seq: JobSeq, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(act) = job.activity.as_deref_mut() else {
            return;
        };
        let (kept, owed): (VecDeque<Owed>, VecDeque<Owed>) = act
            .pending
            .drain(..)
            .partition(|o| o.cause == MissCause::Backfill);
        act.pending = kept;
        let name = job.def.name.clone();
        for o in owed {
            self.note_missed(seq, o.count, out.now);
            out.ledger(&name, o.from, o.to, o.count, skipped(o.cause));
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
    pub(crate) fn owe(&mut self, seq: JobSeq, owed: Owed, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let crate::state::JobRecord { def, activity, .. } = job;
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
        let expired = self.expire_owed(seq, out);
        if let Some(act) = self
            .jobs
            .get_mut(&seq)
            .and_then(|j| j.activity.as_deref_mut())
        {
            act.pending.push_back(owed);
        }
        if !expired {
            self.give_up_oldest_owed(seq, out);
        }
    }

    /// Records `too_late` the owed segments wholly older than the job's catch-up window (a
    /// backfill excepted: a person asked for it); whether there were any. The window says
    /// they are too old to run, so a full line gives them up before anything the rule
    /// promised.
    fn expire_owed(&mut self, seq: JobSeq, out: &mut Out) -> bool {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return false;
        };
        let (Some(window), Some(act)) = (job.def.catch_up_window, job.activity.as_deref_mut())
        else {
            return false;
        };
        let cutoff = out.now.saturating_sub(window);
        let (old, kept): (VecDeque<Owed>, VecDeque<Owed>) = act
            .pending
            .drain(..)
            .partition(|o| o.to < cutoff && o.cause != MissCause::Backfill);
        act.pending = kept;
        let name = job.def.name.clone();
        for o in &old {
            self.note_missed(seq, o.count, out.now);
            out.ledger(&name, o.from, o.to, o.count, skipped(MissCause::TooLate));
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
    pub(crate) fn owe_out_of_turn(&mut self, seq: JobSeq, owed: Owed, out: &mut Out) {
        let Some(crate::state::JobRecord { def, activity, .. }) = self.jobs.get_mut(&seq) else {
            return;
        };
        let act = activity.get_or_insert_with(Default::default);
        if act.owe_in_order(owed, &def.schedule) || self.expire_owed(seq, out) {
            return;
        }
        self.give_up_oldest_owed(seq, out);
    }

    /// A line one over its bound of disjoint debts: the oldest segment is recorded skipped
    /// (the bound on a job's state wins; a `required` job's line never gets here, see
    /// `owe` and `owe_out_of_turn`).
    fn give_up_oldest_owed(&mut self, seq: JobSeq, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(oldest) = job
            .activity
            .as_deref_mut()
            .and_then(|a| a.pending.pop_front())
        else {
            return;
        };
        let name = job.def.name.clone();
        self.note_missed(seq, oldest.count, out.now);
        out.ledger(
            &name,
            oldest.from,
            oldest.to,
            oldest.count,
            skipped(oldest.cause),
        );
    }

    /// Due times within the grace: start the job if it is free, else the overlap policy.
    /// A jittered due time is taken when its start (`due + jitter_delay`) comes; one whose
    /// start is already older than the grace goes to the missed rule with `late_cause`.
    pub(super) fn account_on_time(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        process: ProcessId,
        can_claim: bool,
        late_cause: MissCause,
        out: &mut Out,
    ) {
        let late_until = now.saturating_sub(self.config.grace).saturating_sub(MS);
        loop {
            let Some(job) = self.jobs.get(&seq) else {
                return;
            };
            if job.paused().is_some() || job.is_unconfirmed() {
                return;
            }
            let start_of = |d: Timestamp| d.saturating_add(job.def.jitter_delay(d));
            let Some(due) = job.next_due.filter(|&d| start_of(d) <= now) else {
                if job.next_due.is_none_or(|d| d > now) && job.frontier < now {
                    let job = self.jobs.get_mut(&seq).expect("checked above");
                    job.frontier = now;
                }
                // (A due time whose jittered start is still ahead keeps the frontier
                // before it.)
                return;
            };
            let late = start_of(due) <= late_until;
            let busy = job
                .act()
                .is_some_and(|a| a.run().is_some() || a.retry().is_some() || !a.pending.is_empty());
            if !late && !busy && !can_claim {
                // A draining process starts nothing; another process (or a later one, by
                // the missed rule) will take this due time. (Under `single_owner` only the
                // owner visits, and it may claim.)
                return;
            }
            let job = self.jobs.get_mut(&seq).expect("checked above");
            job.frontier = due;
            job.next_due = job.def.schedule.next_after(due);
            if late {
                self.miss(seq, due, due, 1, late_cause, out);
                continue;
            }
            let cover = crate::state::Cover {
                covers: crate::effect::Covers {
                    from: due,
                    to: due,
                    count: 1,
                },
                late: None,
            };
            if busy {
                self.overlap(seq, due, out);
            } else if let Some(reason) = self.gate(seq, process) {
                // It waits in line, owed with the reason as its cause, and starts as a
                // catch-up when `admit` lets it in.
                self.owe(
                    seq,
                    Owed {
                        from: due,
                        to: due,
                        count: 1,
                        cause: reason.cause(),
                        schedule: None,
                    },
                    out,
                );
                self.wait(seq, reason, out);
            } else {
                self.start_run(seq, now, process, Trigger::Schedule, 1, Some(cover), out);
            }
        }
    }

    /// A due time that arrived while the job was busy.
    fn overlap(&mut self, seq: JobSeq, due: Timestamp, out: &mut Out) {
        let Some(job) = self.jobs.get(&seq) else {
            return;
        };
        let name = job.def.name.clone();
        let owed = Owed {
            from: due,
            to: due,
            count: 1,
            cause: MissCause::Overlap,
            schedule: None,
        };
        match job.def.overlap_policy() {
            Overlap::Skip => {
                self.note_missed(seq, 1, out.now);
                out.ledger(&name, due, due, 1, skipped(MissCause::Overlap));
            }
            Overlap::BufferOne => {
                self.skip_owed(seq, out);
                self.owe(seq, owed, out);
            }
            Overlap::BufferAll => self.owe(seq, owed, out),
        }
    }

    /// Counts missed due times into the job's hourly buckets for the last day.
    pub(crate) fn note_missed(&mut self, seq: JobSeq, count: u64, now: Timestamp) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        let hour = Timestamp::from_millis(now.as_millis().div_euclid(3_600_000) * 3_600_000);
        let buckets = &mut job.act_mut().missed_recent;
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

pub(crate) fn skipped(cause: MissCause) -> LedgerKind {
    LedgerKind::Missed {
        cause,
        action: MissAction::Skipped,
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
        let at = Timestamp::from_millis(hour * HOUR);
        Owed {
            from: at,
            to: at,
            count: 1,
            cause,
            schedule: None,
        }
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
        };
        assert!(state.expire_owed(seq, &mut out));
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
            state.note_missed(seq, 1, Timestamp::from_millis(hour * HOUR));
        }
        let now = Timestamp::from_millis(124 * HOUR);
        let buckets = &state.jobs[&seq].act().unwrap().missed_recent;
        assert_eq!(buckets.len(), 25);
        assert_eq!(state.job("sync", now).unwrap().missed_24h, 25);
        state.note_missed(seq, 1, now.saturating_add(Duration::from_millis(1)));
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
        };
        state.owe_out_of_turn(seq, tagged(98, MissCause::Paused), &mut out);
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
