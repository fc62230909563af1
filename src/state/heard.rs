//! What a downstream job (`JobDef::after`) has heard of its upstreams' due times: each
//! upstream ledger entry's range and fate, kept on the downstream's record so that its gate
//! (`step/after.rs`) is a pure reading of the record, and so that the fates travel with it
//! (stored with the state, handed over by `MoveOut`).

use serde::{Deserialize, Serialize};

use crate::effect::UpstreamFate;
use crate::job::JobName;
use crate::jobs::JobSeq;
use crate::schedule::Schedule;
use crate::time::Timestamp;

/// Most ranges one downstream keeps. Ranges of one upstream and one fate that follow each
/// other merge, so this holds only as many changes of fate; when full, the oldest is
/// forgotten (a due time that old waits no more: a backfill of it finds no fate and waits
/// until the upstream is backfilled too).
pub(crate) const MAX_HEARD: usize = 256;

/// One upstream ledger entry as heard: the upstream's due times `from..=to` ended `fate`.
///
/// A range tells the fate of instants: its due times are `from` alone (a range of one), or
/// else every due time of `schedule` from `from` to `to` (`count` of them). A downstream's
/// due time waits for its upstreams' due times at the same instant, whichever schedule
/// either was owed under (a due time owed before a redefinition, a backfill of a time the
/// upstream ran under another schedule).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct HeardRange {
    pub(crate) upstream: JobName,
    pub(crate) from: Timestamp,
    pub(crate) to: Timestamp,
    /// How many due times `from..=to` held when heard.
    pub(crate) count: u64,
    pub(crate) fate: UpstreamFate,
    /// Whose due times the range holds (unread for a range of one).
    #[serde(default, skip_serializing_if = "HeardOf::is_own")]
    pub(crate) of: HeardOf,
}

/// Whose due times a heard range of many holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum HeardOf {
    /// The downstream's own schedule's.
    #[default]
    Own,
    /// Another schedule's: an upstream's entry for a schedule either job still owed due
    /// times of when it was heard, or any range once the downstream was redefined with
    /// another schedule (`Heard::pin`).
    Schedule(Box<Schedule>),
    /// A schedule's not known when it was heard (one neither job held by the step's end: a
    /// removed upstream's, a run's of a schedule since replaced): it holds the due times of
    /// a schedule it is read under (a downstream's segment's) when it is exactly a run of
    /// them.
    Unknown,
}

impl HeardOf {
    fn is_own(&self) -> bool {
        *self == HeardOf::Own
    }
}

impl HeardRange {
    /// Whether the range tells the fate of instant `at`, a due time of `reading` (the
    /// schedule of the segment it is owed in), the downstream's schedule being `own`.
    pub(crate) fn holds(&self, at: Timestamp, own: &Schedule, reading: &Schedule) -> bool {
        if at < self.from || self.to < at {
            return false;
        }
        if self.count == 1 {
            return at == self.from;
        }
        let schedule = match &self.of {
            HeardOf::Own => own,
            HeardOf::Schedule(s) => s,
            HeardOf::Unknown => return self.is_run_of(reading),
        };
        schedule.is_due(at)
    }

    /// Whether the range's due times are `reading`'s from `from` to `to` (so that a batch
    /// of `reading`'s due times through `to` is told by it), `own` being the downstream's.
    pub(crate) fn is_of(&self, reading: &Schedule, own: &Schedule) -> bool {
        self.count == 1
            || match &self.of {
                HeardOf::Own => own == reading,
                HeardOf::Schedule(s) => **s == *reading,
                HeardOf::Unknown => self.is_run_of(reading),
            }
    }

    /// Whether the range is exactly a run of `schedule`'s due times (`is_run`).
    pub(crate) fn is_run_of(&self, schedule: &Schedule) -> bool {
        is_run(schedule, self.from, self.to, self.count)
    }
}

/// Whether `from` and `to` are due times of `schedule` with `count` of them from one to
/// the other: a ledger entry of exactly those due times, which tells them (one written under
/// another schedule may span due times of `schedule` without being about them).
pub(crate) fn is_run(schedule: &Schedule, from: Timestamp, to: Timestamp, count: u64) -> bool {
    let before = from.saturating_sub(crate::time::Duration::from_millis(1));
    schedule.is_due(from) && schedule.is_due(to) && schedule.count_in(before, to) == count
}

/// The last instant after `at` (up to `to`) a range tells alone beside a newer one of
/// `newer_from..=newer_to`: just before the newer begins, or `at` itself when it began at
/// or before it.
pub(crate) fn told_alone_until(
    at: Timestamp,
    to: Timestamp,
    (newer_from, newer_to): (Timestamp, Timestamp),
) -> Timestamp {
    if newer_from > to || newer_to <= at {
        return to;
    }
    if newer_from > at {
        newer_from.saturating_sub(crate::time::Duration::from_millis(1))
    } else {
        at
    }
}

/// The ranges heard, least recently heard first (a range merged into moves to the end, so
/// the one dropped when full is the one heard longest ago); of one upstream, a later range
/// overrides an earlier one for the due times both hold (a backfill of the upstream
/// settles a due time again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub(crate) struct Heard(Vec<HeardRange>);

impl Heard {
    /// Takes in an upstream ledger entry, merging it into the newest range of the same
    /// upstream when both have one fate and are runs of one schedule's due times with none
    /// of them between: the merged range is a run of it too. A range of the downstream's
    /// own schedule (`own`) is checked to be a run of it (`runs`); one of another schedule
    /// is one by how it was heard; one of a schedule not known never merges.
    pub(crate) fn hear(
        &mut self,
        range: HeardRange,
        own: &Schedule,
        runs: impl Fn(&HeardRange) -> bool,
    ) {
        if let Some(i) = self.0.iter().rposition(|r| r.upstream == range.upstream) {
            let last = &mut self.0[i];
            let schedule = match &range.of {
                _ if last.of != range.of || last.fate != range.fate => None,
                HeardOf::Own => Some(own).filter(|_| runs(last) && runs(&range)),
                HeardOf::Schedule(s) => Some(&**s),
                HeardOf::Unknown => None,
            };
            let adjacent =
                |s: &Schedule| last.to < range.from && s.next_after(last.to) == Some(range.from);
            if schedule.is_some_and(adjacent) {
                last.to = range.to;
                last.count = last.count.saturating_add(range.count);
                // Heard last, so forgotten last: a long range still growing (an upstream
                // that keeps running ok) must not be the first dropped because it began
                // long ago. Its own upstream's order is kept (it was that one's newest).
                let merged = self.0.remove(i);
                self.0.push(merged);
                return;
            }
        }
        if self.0.len() >= MAX_HEARD {
            self.0.remove(0);
        }
        self.0.push(range);
    }

    /// The newest range heard of `upstream` that holds instant `at` (`HeardRange::holds`),
    /// and the last instant it tells alone: a newer range of the upstream reaching into
    /// it after `at` settled its instants again (a backfill, a clock set back), so a batch
    /// read from this one stops before it.
    pub(crate) fn range_at(
        &self,
        upstream: &JobName,
        at: Timestamp,
        own: &Schedule,
        reading: &Schedule,
    ) -> Option<(&HeardRange, Timestamp)> {
        let of_upstream = |r: &&HeardRange| r.upstream == *upstream;
        // The instant's bounds first (two comparisons), the upstream's name (a string's)
        // only for a range around it: most of the ranges heard are not.
        let around = |r: &HeardRange| r.from <= at && at <= r.to;
        let newest = self
            .0
            .iter()
            .rposition(|r| around(r) && of_upstream(&r) && r.holds(at, own, reading))?;
        let found = &self.0[newest];
        let alone = self.0[newest + 1..]
            .iter()
            .filter(of_upstream)
            .fold(found.to, |end, r| {
                end.min(told_alone_until(at, found.to, (r.from, r.to)))
            });
        Some((found, alone))
    }

    /// The downstream is redefined from schedule `old` to `new`: each range of more than
    /// one due time that held `old`'s keeps it by name, and one that names `new` needs its
    /// name no more.
    pub(crate) fn pin(&mut self, old: &Schedule, new: &Schedule) {
        if old == new {
            return;
        }
        for r in &mut self.0 {
            match &r.of {
                HeardOf::Own if r.count > 1 => r.of = HeardOf::Schedule(Box::new(old.clone())),
                HeardOf::Schedule(s) if **s == *new => r.of = HeardOf::Own,
                _ => {}
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds `MAX_HEARD` ranges: then a range may have been forgotten (it never
    /// holds fewer again), and a due time no range holds has a fate `Forgotten`, not
    /// `Unheard`.
    pub(crate) fn is_full(&self) -> bool {
        self.0.len() >= MAX_HEARD
    }
}

/// Most schedules of its upstreams one downstream keeps (`UpstreamSchedules`).
pub(crate) const MAX_UPSTREAM_SCHEDULES: usize = 16;

/// One schedule an upstream had while a downstream waited for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct UpstreamSchedule {
    pub(crate) upstream: JobName,
    pub(crate) schedule: Schedule,
}

/// The schedules each upstream has had while this downstream waited for it, the most
/// recently seen last: what an upstream's entry of many due times may be a run of when it
/// is heard (a run settled after the upstream was given another schedule, or a removed
/// upstream's debts), so that the entry tells the instants it settled (`HeardOf`). When
/// full, the one seen longest ago is forgotten (an entry of it is then `Unknown`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub(crate) struct UpstreamSchedules(Vec<UpstreamSchedule>);

impl UpstreamSchedules {
    /// Notes that `upstream` has `schedule` now.
    pub(crate) fn note(&mut self, upstream: &JobName, schedule: &Schedule) {
        let same = |s: &UpstreamSchedule| s.upstream == *upstream && s.schedule == *schedule;
        if self.0.last().is_some_and(same) {
            return;
        }
        self.0.retain(|s| !same(s));
        if self.0.len() >= MAX_UPSTREAM_SCHEDULES {
            self.0.remove(0);
        }
        self.0.push(UpstreamSchedule {
            upstream: upstream.clone(),
            schedule: schedule.clone(),
        });
    }

    /// `upstream`'s schedules, the most recently seen first.
    pub(crate) fn of<'a>(&'a self, upstream: &'a JobName) -> impl Iterator<Item = &'a Schedule> {
        self.0
            .iter()
            .rev()
            .filter(move |s| s.upstream == *upstream)
            .map(|s| &s.schedule)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Which jobs wait for each upstream (derived from the definitions, never stored): what a
/// step's ledger entries are delivered by (`step/after.rs`). Kept by `State::reindex`,
/// which every transition calls after it changes a job; empty in a state without `after`,
/// so such a state pays one emptiness test a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Downstreams {
    by_upstream: std::collections::BTreeMap<JobName, std::collections::BTreeSet<JobSeq>>,
    /// What each downstream is listed under (its `after` when last reindexed).
    listed: std::collections::BTreeMap<JobSeq, Vec<JobName>>,
}

impl Downstreams {
    pub(crate) fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// Whether any job waits for `upstream`.
    pub(crate) fn is_upstream(&self, upstream: &str) -> bool {
        self.by_upstream.contains_key(upstream)
    }

    /// The jobs waiting for `upstream`, in sequence order.
    pub(crate) fn of(&self, upstream: &str) -> Vec<JobSeq> {
        self.by_upstream
            .get(upstream)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Lists `seq` under each of `after` (what its definition names now).
    pub(crate) fn relist(&mut self, seq: JobSeq, after: &[JobName]) {
        let same = match self.listed.get(&seq) {
            Some(old) => old.as_slice() == after,
            None => after.is_empty(),
        };
        if same {
            return;
        }
        self.unlist(seq);
        if after.is_empty() {
            return;
        }
        for u in after {
            self.by_upstream.entry(u.clone()).or_default().insert(seq);
        }
        self.listed.insert(seq, after.to_vec());
    }

    /// Whether `seq` waits for any job.
    pub(crate) fn lists_any(&self, seq: JobSeq) -> bool {
        self.listed.contains_key(&seq)
    }

    /// Whether `seq` is listed under exactly `after` (the index's check).
    pub(crate) fn lists(&self, seq: JobSeq, after: &[JobName]) -> bool {
        let listed = self.listed.get(&seq).map_or(&[][..], Vec::as_slice);
        listed == after
            && after
                .iter()
                .all(|u| self.by_upstream.get(u).is_some_and(|s| s.contains(&seq)))
    }

    /// How many jobs are listed, and how many entries the upstreams' side holds.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let entries = self.by_upstream.values().map(|s| s.len()).sum();
        (self.listed.len(), entries)
    }

    /// Takes `seq` out (the job is gone).
    pub(crate) fn unlist(&mut self, seq: JobSeq) {
        let Some(old) = self.listed.remove(&seq) else {
            return;
        };
        for u in old {
            if let Some(set) = self.by_upstream.get_mut(&u) {
                set.remove(&seq);
                if set.is_empty() {
                    self.by_upstream.remove(&u);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn every(minutes: u64) -> Schedule {
        Schedule::every(Duration::from_mins(minutes), Duration::ZERO).unwrap()
    }

    fn minute(m: i64) -> Timestamp {
        Timestamp::from_millis(m * 60_000)
    }

    fn range(from: i64, to: i64, count: u64, of: HeardOf) -> HeardRange {
        HeardRange {
            upstream: JobName::new("extract").unwrap(),
            from: minute(from),
            to: minute(to),
            count,
            fate: UpstreamFate::Ok,
            of,
        }
    }

    /// A range of an hourly schedule's due times tells an instant of its own, and lets a
    /// batch run through its end only for a segment of that schedule.
    #[test]
    fn a_range_of_another_schedule_tells_its_instants_and_batches_only_its_own() {
        let (hourly, half_hourly) = (every(60), every(30));
        let r = range(120, 180, 2, HeardOf::Schedule(Box::new(hourly.clone())));
        assert!(r.holds(minute(120), &half_hourly, &half_hourly));
        assert!(
            !r.holds(minute(150), &half_hourly, &half_hourly),
            "02:30 is no hourly instant"
        );
        assert!(r.is_of(&hourly, &half_hourly));
        assert!(
            !r.is_of(&half_hourly, &half_hourly),
            "a half-hourly batch would take 02:30"
        );
        let own = range(120, 180, 2, HeardOf::Own);
        assert!(own.is_of(&hourly, &hourly));
        assert!(!own.is_of(&half_hourly, &hourly));
    }

    /// A range of a schedule not known is read only as an exact run of the segment's.
    #[test]
    fn a_range_of_an_unknown_schedule_is_read_as_an_exact_run() {
        let (hourly, half_hourly) = (every(60), every(30));
        let r = range(120, 180, 2, HeardOf::Unknown);
        assert!(r.is_run_of(&hourly));
        assert!(
            !r.is_run_of(&half_hourly),
            "three half-hourly due times, not two"
        );
        assert!(!range(120, 180, 3, HeardOf::Unknown).is_run_of(&hourly));
        assert!(!range(121, 180, 2, HeardOf::Unknown).is_run_of(&hourly));
        assert!(r.holds(minute(180), &half_hourly, &hourly));
        assert!(!r.holds(minute(180), &hourly, &half_hourly));
    }

    /// Three hundred fates in a row of one kind take one range, not the oldest 44 out.
    #[test]
    fn adjacent_ranges_of_one_fate_merge_and_a_change_of_fate_does_not() {
        let hourly = every(60);
        let mut heard = Heard::default();
        let runs = |r: &HeardRange| r.is_run_of(&hourly);
        for h in 0..300 {
            heard.hear(range(h * 60, h * 60, 1, HeardOf::Own), &hourly, runs);
        }
        assert_eq!(heard.len(), 1);
        let mut failed = range(300 * 60, 300 * 60, 1, HeardOf::Own);
        failed.fate = UpstreamFate::FailedOut;
        heard.hear(failed, &hourly, runs);
        assert_eq!(heard.len(), 2);
        let other = HeardOf::Schedule(Box::new(every(30)));
        heard.hear(range(301 * 60, 301 * 60, 1, other), &hourly, runs);
        assert_eq!(
            heard.len(),
            3,
            "another schedule's range does not join the own ones"
        );
        assert!(!heard.is_full());
    }

    /// Partition world 3 (issue 45): a downstream of two upstreams, one always ok (one
    /// long range, begun hours ago, still growing) and one whose fates keep changing
    /// (a new range each time). When full, the range dropped is the one heard longest
    /// ago, never the growing one: its newest instant must still read `ok`, not
    /// `forgotten`.
    #[test]
    fn a_range_still_growing_is_not_the_one_dropped_when_full() {
        let hourly = every(60);
        let mut heard = Heard::default();
        let runs = |r: &HeardRange| r.is_run_of(&hourly);
        let steady = JobName::new("steady").unwrap();
        for h in 0..400 {
            let mut ok = range(h * 60, h * 60, 1, HeardOf::Own);
            ok.upstream = steady.clone();
            heard.hear(ok, &hourly, runs);
            let mut flaky = range(h * 60, h * 60, 1, HeardOf::Own);
            if h % 2 == 1 {
                flaky.fate = UpstreamFate::FailedOut;
            }
            heard.hear(flaky, &hourly, runs);
        }
        assert!(heard.is_full());
        let last = minute(399 * 60);
        let (found, _) = heard
            .range_at(&steady, last, &hourly, &hourly)
            .expect("the steady upstream's newest instant is still heard");
        assert_eq!(found.fate, UpstreamFate::Ok);
        assert_eq!(found.from, minute(0), "one range, from the first hour");
        let flaky = JobName::new("extract").unwrap();
        assert!(heard
            .range_at(&flaky, minute(0), &hourly, &hourly)
            .is_none());
    }

    /// A newer range settling an instant again cuts the batch an older one tells: it stops
    /// just before it, and the instant itself reads the newer fate.
    #[test]
    fn a_newer_range_inside_an_older_one_ends_what_the_older_tells_alone() {
        let hourly = every(60);
        let mut heard = Heard::default();
        let runs = |r: &HeardRange| r.is_run_of(&hourly);
        heard.hear(range(0, 180, 4, HeardOf::Own), &hourly, runs);
        let mut again = range(120, 120, 1, HeardOf::Own);
        again.fate = UpstreamFate::ApprovalExpired;
        heard.hear(again, &hourly, runs);
        let extract = JobName::new("extract").unwrap();
        let read = |at: i64| {
            let (r, alone) = heard
                .range_at(&extract, minute(at), &hourly, &hourly)
                .unwrap();
            (r.fate, alone)
        };
        let before_two = minute(120).saturating_sub(Duration::from_millis(1));
        assert_eq!(read(0), (UpstreamFate::Ok, before_two));
        assert_eq!(read(120), (UpstreamFate::ApprovalExpired, minute(120)));
        assert_eq!(
            read(180),
            (UpstreamFate::Ok, minute(180)),
            "after it, the older tells"
        );
        assert_eq!(
            told_alone_until(minute(120), minute(180), (minute(60), minute(150))),
            minute(120),
            "a newer range begun before the instant leaves it alone"
        );
        assert_eq!(
            told_alone_until(minute(0), minute(120), (minute(120), minute(150))),
            before_two,
            "a newer range begun at the older one's end takes that end"
        );
    }

    /// A redefinition names the old schedule on the ranges of it, and a range of the new
    /// one becomes the job's own again.
    #[test]
    fn a_redefinition_pins_the_old_schedule_and_unpins_the_new() {
        let (hourly, half_hourly) = (every(60), every(30));
        let mut heard = Heard::default();
        let runs = |_: &HeardRange| true;
        heard.hear(range(0, 60, 2, HeardOf::Own), &hourly, runs);
        heard.hear(range(600, 600, 1, HeardOf::Own), &hourly, runs);
        let half = HeardOf::Schedule(Box::new(half_hourly.clone()));
        heard.hear(range(700, 730, 2, half), &hourly, runs);
        heard.pin(&hourly, &half_hourly);
        let ofs: Vec<&HeardOf> = heard.0.iter().map(|r| &r.of).collect();
        assert_eq!(
            ofs,
            vec![
                &HeardOf::Schedule(Box::new(hourly.clone())),
                &HeardOf::Own,
                &HeardOf::Own
            ]
        );
    }
}
