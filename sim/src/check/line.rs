//! N1, the line: nothing is stepped past unrecorded. The journal never says which due
//! times a job owes (owing writes no line), but it says everything else a due time can
//! be: accounted by a ledger entry, or held by a run (open, parked, or waiting for its
//! retry or repeat). So every due time before the job's next due time is one of those or
//! owed, and the checker can count what is owed without the core:
//!
//! - at every view (`Checker::views`), the owed due times by the journal are exactly as
//!   many as `job().owed` says, and a job whose missed rule owes nothing late (`skip`,
//!   `catch_up_once`: M1) owes no more than its rule allows;
//! - a start on schedule comes only when nothing is owed, held or unaccounted before its
//!   due time (the core starts on time only a job that is not busy);
//! - a catch-up starts with the oldest due time owed (its line is first in, first out),
//!   covers due times of its schedule exactly, and at most a batch of them;
//! - a job runs one run at a time: nothing starts while the job holds another.
//!
//! Kept per job (per registration), beside the epochs of `Track`: each schedule's due
//! times as far as they were needed (from the oracle), the ranges the schedule's entries
//! accounted, each backfill's own due times and entries, and the covers runs hold.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::RunId;

use super::ts;
use crate::oracle::Spec;

/// How one run holds its cover until an entry accounts it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    /// Started, not settled (or parked awaiting approval).
    Open,
    /// Settled failed in this step: a `retry at` line may follow; at the step's end,
    /// without one, the missed rule has taken its due times (owed, or skipped by an entry).
    Ended,
    /// Settled failed with a `retry at`, or lost while the job is safe to repeat and not
    /// paused: the same cover starts again.
    Awaiting,
}

#[derive(Clone, Copy, Debug)]
struct Held {
    run: RunId,
    from: i64,
    to: i64,
    hold: Hold,
}

/// One schedule's due times in `(from, end]` (`end`: the next schedule's `from`, or open
/// while it is the job's current one), computed through `until`; `at[..done]` are known
/// accounted. `judge` reads them at the end, so the oracle walks each schedule once.
struct Computed {
    /// The schedule as the journal wrote it: two epochs of one schedule owe segments the
    /// core may merge (`RunKey`).
    text: String,
    /// The oracle of the schedule (`None`: one the world never gave, which S1 reports).
    spec: Option<Spec>,
    from: i64,
    end: Option<i64>,
    until: i64,
    at: Vec<i64>,
    done: usize,
    /// The due times a daylight-saving rule shaped: `(at, gap)` (else a fold), for probes.
    shaped: Vec<(i64, bool)>,
}

/// A backfill's due times (of the schedule of `epoch`, computed when first needed), the
/// ranges its own entries accounted, and how many of its first due times those account.
struct Backfilled {
    epoch: usize,
    from: i64,
    to: i64,
    at: Option<Vec<i64>>,
    accounted: Vec<(i64, i64)>,
    done: usize,
}

/// What the line knows of one job.
#[derive(Default)]
pub(super) struct Line {
    /// One per epoch of the track, in the same order.
    epochs: Vec<Computed>,
    /// The ranges the schedules' entries (not a backfill's) accounted: disjoint, ascending.
    accounted: Vec<(i64, i64)>,
    backfills: Vec<Backfilled>,
    held: Vec<Held>,
    /// Covers a run held that went back to the missed rule without an entry (a retry a
    /// pause cleared, a failure no `retry at` followed) and have not started again since:
    /// the core owes each as a segment of its own (tagged with its schedule), which may
    /// split a run of due times the journal sees as one (`Room`).
    handed: Vec<(i64, i64)>,
    /// Covers started over a handed-back backfill cover merged with the schedule's own
    /// due times (`Line::handed_backfill`): their entries account those due times too.
    merged_handed: Vec<(i64, i64)>,
    /// The journal left the line unknowable (a schedule defined from an instant before the
    /// one before it: a clock released behind between two definitions): N1 holds nothing.
    unknown: bool,
}

/// What a start must find in the line.
pub(super) enum StartKind {
    /// On schedule: nothing owed, held or unaccounted before its due time.
    OnTime,
    /// A catch-up or a buffered overlap: the oldest owed, at most `batch` due times.
    Owed { batch: u64 },
    /// A retry or a repeat: the cover its run held.
    Again,
    /// A manual run: only one run at a time.
    Manual,
}

/// Whether `d` lies in one of the disjoint ascending `ranges`.
fn within(ranges: &[(i64, i64)], d: i64) -> bool {
    let i = ranges.partition_point(|&(_, to)| to < d);
    ranges.get(i).is_some_and(|&(from, _)| from <= d)
}

/// Adds `(from, to)` to disjoint ascending `ranges`, as their union: the ranges it
/// overlaps become one with it (an overlap is S1's to report; here it is only instants
/// accounted, and `within` and `gaps` need the ranges disjoint).
fn add_range(ranges: &mut Vec<(i64, i64)>, from: i64, to: i64) {
    let lo = ranges.partition_point(|&(_, b)| b < from);
    let hi = ranges.partition_point(|&(a, _)| a <= to);
    if lo == hi {
        ranges.insert(lo, (from, to));
        return;
    }
    let merged = (from.min(ranges[lo].0), to.max(ranges[hi - 1].1));
    ranges.splice(lo..hi, [merged]);
}

/// A run of owed due times that follow one another in one schedule (or one backfill).
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    first: i64,
    last: i64,
    n: u64,
}

/// The most segments a job's owed line keeps (`docs/semantics.md`: past it, segments
/// that follow one another merge, and only a line of disjoint debts gives one up).
pub(super) const MAX_OWED_SEGMENTS: usize = 32;

/// The segments a `required` job's backfills and schedule changes leave free
/// (`docs/semantics.md`, Backfill).
pub(super) const REQUIRED_RESERVE: usize = 2;

/// Which segments of the owed line the core may merge into one: see
/// `Line::merge_schedule`. Each names its epoch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RunKey {
    Current,
    Earlier(usize),
    Backfill(usize),
}

/// A run of owed due times, and whose.
struct OwedRun {
    first: i64,
    last: i64,
    n: u64,
    key: RunKey,
}

impl OwedRun {
    fn of(s: &Segment, key: RunKey) -> OwedRun {
        OwedRun {
            first: s.first,
            last: s.last,
            n: s.n,
            key,
        }
    }
}

/// How many segments the core's owed line needs for what a job owes: at `least` (runs
/// that follow one another in one schedule merged; 0 when so few runs are owed that any
/// command has room) and at `most` (each run apart, each split by every run of another
/// schedule or a backfill that starts within its span, and each cover handed back
/// splitting one).
#[derive(Clone, Copy, Debug)]
pub(super) struct Room {
    pub(super) least: usize,
    pub(super) most: usize,
}

/// The backfills `from..=to` is of, by their indices in `all` (each backfill's schedule
/// text and range, in the order they were accepted), ascending by range: the latest it
/// touches, and the others of that schedule it touches (a full line merges backfills
/// that follow one another in one schedule, even ones asked under two definitions of it,
/// so one entry or catch-up may span several: B1 holds it to them), but not one whose
/// range a later one of them overlaps. A new definition's accounted start lets backfills
/// reach instants again only once what was asked of them is accounted.
pub(super) fn backfills_of<'a>(
    all: impl Iterator<Item = (&'a str, i64, i64)>,
    from: i64,
    to: i64,
) -> Vec<usize> {
    let touched: Vec<(usize, (&str, i64, i64))> = all
        .enumerate()
        .filter(|(_, (_, a, b))| *a <= to && from <= *b)
        .collect();
    let Some(&(_, (text, _, _))) = touched.last() else {
        return Vec::new();
    };
    let same: Vec<(usize, i64, i64)> = touched
        .iter()
        .filter(|(_, (t, _, _))| *t == text)
        .map(|&(i, (_, a, b))| (i, a, b))
        .collect();
    let mut kept: Vec<(usize, i64, i64)> = same
        .iter()
        .enumerate()
        .filter(|(k, (_, a, b))| !same[k + 1..].iter().any(|(_, x, y)| x <= b && a <= y))
        .map(|(_, &r)| r)
        .collect();
    kept.sort_by_key(|r| r.1);
    kept.into_iter().map(|r| r.0).collect()
}

/// Whether a cover `from..=to` starts within the backfilled span `first..=last` and reaches
/// past it: a backfill's cover handed back to the missed rule that merged with the schedule's
/// own due times after it (N1 and B1 both follow it).
pub(super) fn reaches_past(from: i64, to: i64, (first, last): (i64, i64)) -> bool {
    first <= from && from <= last && to > last
}

/// The owed runs among the due times `at[lo..hi]`: those outside every entry's range in
/// `accounted` and every cover a run holds. By intervals, not one due time at a time: a
/// `required` job may owe thousands.
fn gaps(at: &[i64], lo: usize, hi: usize, accounted: &[(i64, i64)], held: &[Held]) -> Vec<Segment> {
    if lo >= hi {
        return Vec::new();
    }
    let (a, b) = (at[lo], at[hi - 1]);
    let first = accounted.partition_point(|&(_, to)| to < a);
    let mut blocks: Vec<(i64, i64)> = accounted[first..]
        .iter()
        .take_while(|&&(from, _)| from <= b)
        .copied()
        .collect();
    blocks.extend(
        held.iter()
            .filter(|h| h.hold != Hold::Ended && h.to >= a && h.from <= b)
            .map(|h| (h.from, h.to)),
    );
    blocks.sort_unstable();
    let mut out = Vec::new();
    let mut pos = lo;
    let mut push = |from: usize, to: usize| {
        if from < to {
            out.push(Segment {
                first: at[from],
                last: at[to - 1],
                n: (to - from) as u64,
            });
        }
    };
    for (from, to) in blocks {
        let start = lo + at[lo..hi].partition_point(|&d| d < from);
        push(pos, start.max(pos));
        pos = pos.max(lo + at[lo..hi].partition_point(|&d| d <= to));
    }
    push(pos, hi);
    out
}

/// How many more segments than runs an oldest-first line may need for `runs` (sorted by
/// their first due time): a run of one schedule's due times is one segment only if
/// nothing owed lies between its first and its last. The core's line is in time order, so
/// each run of another schedule (or a backfill) starting within its span cuts it in two
/// (swarm seed 67237: a backfill of the current schedule between an earlier schedule's
/// `overlap` and `paused` due times, which the journal counts as one run). Runs within one
/// gap of it cut it once, so this is an upper bound. A run of its own schedule cannot
/// start within it: runs are as long as the due times owed in a row.
fn splits(runs: &[OwedRun]) -> usize {
    runs.iter()
        .enumerate()
        .map(|(i, r)| {
            runs[i + 1..]
                .iter()
                .take_while(|o| o.first < r.last)
                .count()
        })
        .sum()
}

/// How many of the ascending `at` lie in `[from, to]`.
fn count_in(at: &[i64], from: i64, to: i64) -> u64 {
    (at.partition_point(|&d| d <= to) - at.partition_point(|&d| d < from)) as u64
}

impl Computed {
    /// Due times through `bound` (inclusive; within the schedule's range) are computed;
    /// `None` when the oracle does not know the schedule.
    fn extend(&mut self, bound: i64) -> Option<()> {
        let spec = self.spec.as_ref()?;
        let bound = self.end.map_or(bound, |e| e.min(bound));
        if bound > self.until {
            for d in spec.due_in(self.until, bound) {
                self.at.push(d.at);
                if d.gap || d.fold {
                    self.shaped.push((d.at, d.gap));
                }
            }
            self.until = bound;
        }
        Some(())
    }

    /// Moves `done` past the due times accounted by `accounted`.
    fn settle(&mut self, accounted: &[(i64, i64)]) {
        while self
            .at
            .get(self.done)
            .is_some_and(|&d| within(accounted, d))
        {
            self.done += 1;
        }
    }

    /// The index past the last due time through `bound`.
    fn end_index(&self, bound: i64) -> usize {
        let bound = self.end.map_or(bound, |e| e.min(bound));
        self.at.partition_point(|&d| d <= bound)
    }
}

impl Backfilled {
    /// Whether instant `d` is within its range.
    fn covers(&self, d: i64) -> bool {
        self.from <= d && d <= self.to
    }

    /// Its due times, from the oracle of its schedule (`spec`) the first time.
    fn due(&mut self, spec: Option<&Spec>) -> Option<&[i64]> {
        if self.at.is_none() {
            let at = spec?.due_in(self.from.saturating_sub(1), self.to);
            self.at = Some(at.into_iter().map(|d| d.at).collect());
        }
        self.at.as_deref()
    }

    /// How many of its due times before `before` none of its entries accounted and no run
    /// holds.
    fn open_before(&mut self, spec: Option<&Spec>, before: i64, held: &[Held]) -> u64 {
        self.open_runs(spec, before, held).iter().map(|s| s.n).sum()
    }

    /// Its runs of due times before `before` that none of its entries accounted and no
    /// run holds.
    fn open_runs(&mut self, spec: Option<&Spec>, before: i64, held: &[Held]) -> Vec<Segment> {
        if self.due(spec).is_none() {
            return Vec::new();
        }
        let at = self.at.as_deref().unwrap_or_default();
        while at
            .get(self.done)
            .is_some_and(|&d| within(&self.accounted, d))
        {
            self.done += 1;
        }
        let hi = at.partition_point(|&d| d < before);
        gaps(at, self.done, hi, &self.accounted, held)
    }
}

impl Line {
    /// A new schedule (`spec`, its oracle) from its `defined` line's instant: the one
    /// before it ends there.
    pub(super) fn define(&mut self, from: i64, text: &str, spec: Option<Spec>) {
        if let Some(last) = self.epochs.last_mut() {
            if from < last.from {
                self.unknown = true;
            }
            last.end = Some(from);
            last.at.retain(|&d| d <= from);
            last.shaped.retain(|&(d, _)| d <= from);
            last.done = last.done.min(last.at.len());
        }
        self.epochs.push(Computed {
            text: text.to_string(),
            spec,
            from,
            end: None,
            until: from,
            at: Vec::new(),
            done: 0,
            shaped: Vec::new(),
        });
    }

    /// An accepted backfill of the current schedule (its due times are computed when first
    /// needed).
    pub(super) fn backfill(&mut self, from: i64, to: i64) {
        self.backfills.push(Backfilled {
            epoch: self.epochs.len().saturating_sub(1),
            from,
            to,
            at: None,
            accounted: Vec::new(),
            done: 0,
        });
    }

    /// A ledger entry: a backfill's when it touches one (the latest accepted), as `judge`
    /// attributes it; it ends the hold of every run whose cover it accounts.
    pub(super) fn account(&mut self, from: i64, to: i64) {
        let touched = self.touched(from, to);
        if touched.is_empty() {
            add_range(&mut self.accounted, from, to);
        } else if let Some(p) = self.merged_handed.iter().position(|&c| c == (from, to)) {
            // A backfill's cover handed back merged with the schedule's own due times that
            // follow it (`Line::catch_up_wrong`): the entry accounts those too.
            self.merged_handed.swap_remove(p);
            let past = self.past_backfills(&touched).saturating_add(1);
            match self.own_due_in(past, to, &touched) {
                Some(own) => own
                    .iter()
                    .for_each(|&d| add_range(&mut self.accounted, d, d)),
                None => add_range(&mut self.accounted, past, to),
            }
        }
        for i in touched {
            let b = &mut self.backfills[i];
            add_range(&mut b.accounted, from.max(b.from), to.min(b.to));
        }
        self.held.retain(|h| !(from <= h.from && h.to <= to));
        self.handed.retain(|&(a, b)| !(from <= a && b <= to));
    }

    /// Whether a cover of one of the backfills `touched` was handed back to the missed
    /// rule: it is owed then as the schedule's own (tagged with it, cause `paused`) and may
    /// merge with the schedule's due times that follow it.
    fn handed_backfill(&self, touched: &[usize]) -> bool {
        touched.iter().any(|&i| {
            let b = &self.backfills[i];
            self.handed.iter().any(|&(x, y)| x <= b.to && b.from <= y)
        })
    }

    /// The end of the last of the backfills `touched`.
    fn past_backfills(&self, touched: &[usize]) -> i64 {
        touched
            .iter()
            .map(|&i| self.backfills[i].to)
            .max()
            .unwrap_or(i64::MIN)
    }

    /// Whether a cover `from..=to` starting in the backfills `touched` reaches past them
    /// with a handed-back cover of theirs: merged with the schedule's own due times.
    fn merges_past_backfills(&self, from: i64, to: i64, touched: &[usize]) -> bool {
        let first = touched.iter().map(|&i| self.backfills[i].from).min();
        first.is_some_and(|first| reaches_past(from, to, (first, self.past_backfills(touched))))
            && self.handed_backfill(touched)
    }

    /// The schedule's due times in `from..=to` outside the backfills `touched`, not yet
    /// accounted: what a catch-up of a handed-back backfill cover merged with.
    fn own_owed_in(&mut self, from: i64, to: i64, touched: &[usize]) -> Option<u64> {
        let own = self.own_due_in(from, to, touched)?;
        let accounted = &self.accounted;
        Some(own.iter().filter(|&&d| !within(accounted, d)).count() as u64)
    }

    /// The due times in `from..=to`, outside the backfills `touched`, of the schedule they
    /// are of (every definition of its text: the core tags an owed segment with its
    /// schedule and merges only segments of one schedule). Another schedule's due times
    /// between are no part of a cover that merged a handed-back backfill cover with the
    /// schedule's own (a job redefined back and forth between a one-shot and a cron).
    fn own_due_in(&mut self, from: i64, to: i64, touched: &[usize]) -> Option<Vec<i64>> {
        self.owed_before(to.saturating_add(1))?;
        let epoch = self.backfills[*touched.first()?].epoch;
        let text = self.epochs.get(epoch)?.text.as_str();
        let mut own = self.due_of_text(text, from.saturating_sub(1), to);
        own.retain(|&d| !touched.iter().any(|&i| self.backfills[i].covers(d)));
        Some(own)
    }

    /// The due times in `after+1..=to` of every epoch of schedule `text`, as far as the
    /// epochs were walked (`due_through`), ascending and each once: a schedule's own due
    /// times among a job's redefined back and forth (S1 for a handed-back merge).
    pub(super) fn due_of_text(&self, text: &str, after: i64, to: i64) -> Vec<i64> {
        let mut due: Vec<i64> = self
            .epochs
            .iter()
            .filter(|e| e.text == text)
            .flat_map(|e| e.at[..e.end_index(to)].iter().copied())
            .filter(|&d| d > after)
            .collect();
        due.sort_unstable();
        due.dedup();
        due
    }

    /// The parts of a start's cover `from..=to` S2 judges apart: one per backfill it
    /// spans when it spans several (`backfills_of`: a full line merges backfills that
    /// follow one another), and each of its schedule's own due times past them when it
    /// merged a handed-back backfill cover with those (`start` saw it); else the whole.
    /// The instants between are no due times of the cover's: another schedule's there (a
    /// job redefined back and forth) is no business of this start's.
    pub(super) fn cover_parts(&mut self, from: i64, to: i64) -> Vec<(i64, i64)> {
        let touched = self.touched(from, to);
        let mut parts: Vec<(i64, i64)> = touched
            .iter()
            .map(|&i| {
                (
                    from.max(self.backfills[i].from),
                    to.min(self.backfills[i].to),
                )
            })
            .collect();
        if self.merged_handed.contains(&(from, to)) {
            let past = self.past_backfills(&touched).saturating_add(1);
            if let Some(own) = self.own_due_in(past, to, &touched) {
                parts.extend(own.into_iter().map(|d| (d, d)));
                return parts;
            }
        }
        if touched.len() < 2 {
            return vec![(from, to)];
        }
        parts
    }

    /// The backfills `from..=to` is of (`backfills_of`).
    fn touched(&self, from: i64, to: i64) -> Vec<usize> {
        let all = self
            .backfills
            .iter()
            .map(|b| (self.epochs[b.epoch].text.as_str(), b.from, b.to));
        backfills_of(all, from, to)
    }

    /// A run started: its cover is held from now on (a retry's or a repeat's replaces the
    /// one its run held).
    pub(super) fn start(&mut self, run: RunId, cover: Option<(i64, i64)>) {
        let Some((from, to)) = cover else { return };
        let touched = self.touched(from, to);
        if self.merges_past_backfills(from, to, &touched) {
            self.merged_handed.push((from, to));
        }
        self.held.retain(|h| h.to < from || to < h.from);
        self.handed.retain(|&(a, b)| b < from || to < a);
        self.held.push(Held {
            run,
            from,
            to,
            hold: Hold::Open,
        });
    }

    /// The run ended without an entry for its cover yet: a retry or repeat will start it
    /// again (`Some(true)`), the missed rule takes its due times (`Some(false)`: they are
    /// owed, or skipped by an entry), or a `retry at` line may still say (`None`: see
    /// `step_done`).
    pub(super) fn ended(&mut self, run: RunId, again: Option<bool>) {
        let hold = match again {
            Some(true) => Hold::Awaiting,
            None => Hold::Ended,
            Some(false) => {
                self.hand_back(|h| h.run == run);
                return;
            }
        };
        for h in self.held.iter_mut().filter(|h| h.run == run) {
            h.hold = hold;
        }
    }

    /// Epoch `i`'s due times through `until` (within its range), and those among them a
    /// daylight-saving rule shaped: what `judge` holds the entries to at the end.
    pub(super) fn due_through(&mut self, i: usize, until: i64) -> (&[i64], &[(i64, bool)]) {
        let e = &mut self.epochs[i];
        e.extend(until);
        let hi = e.end_index(until);
        let shaped = e.shaped.partition_point(|&(d, _)| d <= until);
        (&e.at[..hi], &e.shaped[..shaped])
    }

    /// Whether a run (open, parked, or waiting to start again) holds a due time after `t`.
    pub(super) fn holds_after(&self, t: i64) -> bool {
        self.held.iter().any(|h| h.to > t)
    }

    /// The end of a step: a failure no `retry at` followed has no retry waiting.
    pub(super) fn step_done(&mut self) {
        self.hand_back(|h| h.hold == Hold::Ended);
    }

    /// The job was paused: a waiting retry or repeat is handed to the missed rule. The
    /// covers handed, `(from, to)`.
    pub(super) fn paused(&mut self) -> Vec<(i64, i64)> {
        self.hand_back(|h| h.hold == Hold::Awaiting)
    }

    /// The covers `gone` picks are held no more: each goes back to the missed rule.
    fn hand_back(&mut self, gone: impl Fn(&Held) -> bool) -> Vec<(i64, i64)> {
        let (back, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| gone(h));
        self.held = kept;
        let covers: Vec<(i64, i64)> = back.iter().map(|h| (h.from, h.to)).collect();
        self.handed.extend(&covers);
        covers
    }

    /// Every due time before `before` that no entry accounts and no run holds: each
    /// schedule's (through its end, the current one's through `before - 1`), then each
    /// backfill's. `specs` gives each epoch's oracle. `None` when an epoch's schedule is
    /// unknown to the oracle (S1 tells that).
    fn owed_before(&mut self, before: i64) -> Option<Owed> {
        let mut owed = Owed::default();
        let bound = before.saturating_sub(1);
        for e in &mut self.epochs {
            e.extend(bound)?;
            e.settle(&self.accounted);
            let hi = e.end_index(bound);
            owed.schedule
                .extend(gaps(&e.at, e.done, hi, &self.accounted, &self.held));
        }
        for b in &mut self.backfills {
            let spec = self.epochs.get(b.epoch).and_then(|e| e.spec.as_ref());
            let n = b.open_before(spec, before, &self.held);
            if n > 0 {
                owed.backfill.push((b.from, b.to, n));
            }
        }
        Some(owed)
    }

    /// Every run of owed due times before `before`, oldest first, with the schedule each
    /// belongs to as the core tags it (`RunKey`): the schedules' through `near` (see
    /// `view_owed`), the backfills' through `before` (a backfill may lie past the store's
    /// clock, where a fast one left the job's frontier). `None` when an epoch's schedule
    /// is unknown to the oracle.
    fn runs_before(&mut self, near: i64, before: i64) -> Option<Vec<OwedRun>> {
        let bound = near.saturating_sub(1);
        let current = self.epochs.len().saturating_sub(1);
        let mut runs = Vec::new();
        for (i, e) in self.epochs.iter_mut().enumerate() {
            e.extend(bound)?;
            e.settle(&self.accounted);
            let hi = e.end_index(bound);
            let key = if i == current {
                RunKey::Current
            } else {
                RunKey::Earlier(i)
            };
            let owed = gaps(&e.at, e.done, hi, &self.accounted, &self.held);
            runs.extend(owed.iter().map(|s| OwedRun::of(s, key)));
        }
        for b in &mut self.backfills {
            let spec = self.epochs.get(b.epoch).and_then(|e| e.spec.as_ref());
            let key = RunKey::Backfill(b.epoch);
            let owed = b.open_runs(spec, before, &self.held);
            runs.extend(owed.iter().map(|s| OwedRun::of(s, key)));
        }
        runs.sort_by_key(|r| r.first);
        Some(runs)
    }

    /// The schedule whose due times decide whether runs keyed `a` and `b` may be one
    /// segment: the core merges a schedule's own (the current one's untagged, an earlier
    /// one's tagged with it, so two earlier epochs of one schedule too), or backfills of
    /// one schedule; never a backfill with a schedule's own.
    fn merge_schedule(&self, a: RunKey, b: RunKey) -> Option<&Spec> {
        let same_text = |x: usize, y: usize| self.epochs[x].text == self.epochs[y].text;
        let epoch = match (a, b) {
            (RunKey::Current, RunKey::Current) => self.epochs.len() - 1,
            (RunKey::Earlier(x), RunKey::Earlier(y))
            | (RunKey::Backfill(x), RunKey::Backfill(y))
                if same_text(x, y) =>
            {
                x
            }
            _ => return None,
        };
        self.epochs[epoch].spec.as_ref()
    }

    /// Whether `from..=to` takes in a due time a backfill owes (not one a cover handed
    /// back holds: a pause hands a backfill's retry to the missed rule like any other, and
    /// so does a failure no retry follows, which this step's entries may meet before its
    /// end: `Hold::Ended`).
    pub(super) fn backfill_owed_in(&mut self, from: i64, to: i64) -> bool {
        let Line {
            epochs,
            backfills,
            held,
            handed,
            ..
        } = self;
        let ended = held
            .iter()
            .filter(|h| h.hold == Hold::Ended)
            .map(|h| (h.from, h.to));
        let back: Vec<(i64, i64)> = handed.iter().copied().chain(ended).collect();
        let handed_back = |a: i64, b: i64| back.iter().any(|&(x, y)| x <= a && b <= y);
        backfills
            .iter_mut()
            .filter(|b| b.from <= to && from <= b.to)
            .any(|b| {
                let spec = epochs.get(b.epoch).and_then(|e| e.spec.as_ref());
                b.open_runs(spec, to.saturating_add(1), held)
                    .iter()
                    .filter(|r| r.last >= from)
                    .any(|r| !handed_back(r.first.max(from), r.last.min(to)))
            })
    }

    /// How many segments the core's owed line needs for what is owed before `before`
    /// (`Room`): runs that follow one another in one schedule count as one, since the core
    /// merges them when its line is full (`Activity::make_room`); each cover handed back
    /// since may split one run into three. The schedules' runs are taken through `near`
    /// (see `runs_before`), or through `before` when only that agrees with the view's
    /// `owed_by_view` (the job's frontier can lie past the store's clock, which a release
    /// behind moved back); `None` when neither does (N1 reports that at the view).
    pub(super) fn room(&mut self, near: i64, before: i64, owed_by_view: u64) -> Option<Room> {
        if self.unknown || self.epochs.is_empty() {
            return None;
        }
        let total = |runs: &[OwedRun]| runs.iter().map(|r| r.n).sum::<u64>();
        let mut runs = self.runs_before(near, before)?;
        if total(&runs) != owed_by_view && near < before {
            runs = self.runs_before(before, before)?;
        }
        if total(&runs) != owed_by_view {
            return None;
        }
        let most = runs.len() + splits(&runs) + 2 * self.handed.len();
        if runs.len() + 2 + REQUIRED_RESERVE <= MAX_OWED_SEGMENTS {
            // Room for what any command needs whatever merges: not worth walking the gaps.
            return Some(Room { least: 0, most });
        }
        let joined = runs
            .windows(2)
            .filter(|w| {
                self.merge_schedule(w[0].key, w[1].key).is_some_and(|s| {
                    super::replies::count_due(s, w[0].last, w[1].first - 1, 0) == 0
                })
            })
            .count();
        Some(Room {
            least: runs.len() - joined,
            most,
        })
    }

    /// N1 at a view: the due times owed before `next_due` against the view's `owed`.
    /// `reach` is as far as the job's frontier can be (the store's clock and a
    /// `clock_jump`): no due time after it is owed yet, so the oracle need not walk on to a
    /// next due time months ahead (a schedule of Feb 29), unless the counts disagree.
    /// `Ok` with what its schedules owe (for M1), `Err` with what is wrong; `None` when the
    /// line cannot tell (no next due time, a schedule the oracle does not know).
    pub(super) fn view_owed(
        &mut self,
        next_due: Option<i64>,
        owed_by_view: u64,
        reach: Option<i64>,
    ) -> Option<Result<Vec<Segment>, String>> {
        if self.unknown || self.epochs.is_empty() {
            return None;
        }
        let before = next_due?;
        let near = reach.map_or(before, |r| before.min(r.saturating_add(1)));
        let mut owed = self.owed_before(near)?;
        if owed.count() != owed_by_view && near < before {
            owed = self.owed_before(before)?;
        }
        let n = owed.count();
        if n == owed_by_view {
            return Some(Ok(owed.schedule));
        }
        Some(Err(format!(
            "owes {owed_by_view} due time(s) by the view, {n} by the journal before its next due {} ({})",
            ts(before),
            owed.describe()
        )))
    }

    /// V1 for the view's cursor: every due time at or before `through` (the view's
    /// `settled_through`) is settled in the ledger, so the line owes none of them and no
    /// run holds one (or waits to run it again), and the next due time `next_due`, not
    /// settled yet, comes after it. `None` when that holds or the line cannot tell (no
    /// next due time: the walk would have no end).
    pub(super) fn unsettled_through(
        &mut self,
        through: i64,
        next_due: Option<i64>,
    ) -> Option<String> {
        let next = next_due?;
        if through >= next {
            return Some(format!(
                "settled through {} by the view, at or after its next due time {}",
                ts(through),
                ts(next)
            ));
        }
        if self.unknown || self.epochs.is_empty() {
            return None;
        }
        let owed = self.owed_before(through.saturating_add(1))?;
        let held = self
            .held
            .iter()
            .filter(|h| h.from <= through)
            .min_by_key(|h| h.from);
        if owed.count() == 0 && held.is_none() {
            return None;
        }
        let held = held.map_or("none".to_string(), |h| {
            format!("{}'s from {}", h.run, ts(h.from))
        });
        Some(format!(
            "settled through {} by the view, but the journal still owes {} and holds {held} then",
            ts(through),
            owed.describe()
        ))
    }

    /// What is wrong with a start of `kind` covering `cover`, judged before the start
    /// takes its place in the line.
    pub(super) fn start_wrong(
        &mut self,
        kind: StartKind,
        run: RunId,
        cover: Option<(i64, i64, u64)>,
    ) -> Option<String> {
        if self.unknown || self.epochs.is_empty() {
            return None;
        }
        let again = matches!(kind, StartKind::Again);
        let busy = self
            .held
            .iter()
            .filter(|h| h.run != run && h.hold != Hold::Ended)
            .find(|h| !again || h.hold == Hold::Open);
        if let Some(h) = busy {
            return Some(format!(
                "{run} started while {} still held {}..{} ({:?})",
                h.run,
                ts(h.from),
                ts(h.to),
                h.hold
            ));
        }
        let (from, to, count) = cover?;
        match kind {
            StartKind::OnTime => {
                let owed = self.owed_before(from)?;
                (owed.count() > 0).then(|| {
                    format!(
                        "{run} started on schedule at its due time {} while it owed {}",
                        ts(from),
                        owed.describe()
                    )
                })
            }
            StartKind::Owed { batch } => self.catch_up_wrong(run, (from, to, count), batch),
            StartKind::Again => {
                let waits = self
                    .held
                    .iter()
                    .any(|h| h.hold == Hold::Awaiting && h.from == from && h.to == to);
                (!waits).then(|| {
                    format!(
                        "{run} started {}..{} again, but no run that failed or was lost waits to start that again",
                        ts(from),
                        ts(to)
                    )
                })
            }
            StartKind::Manual => None,
        }
    }

    /// A catch-up of `cover`: the oldest owed due times of its schedules (or of the
    /// backfill it lies in), exactly its count of them, at most `batch`.
    fn catch_up_wrong(
        &mut self,
        run: RunId,
        (from, to, count): (i64, i64, u64),
        batch: u64,
    ) -> Option<String> {
        if count > batch {
            return Some(format!(
                "{run} catches up {count} due times at once, more than a batch of {batch}"
            ));
        }
        // The backfills it lies in: one, or several a full line merged (B1 holds them to
        // following one another).
        let inside = self.touched(from, to);
        let owed = self.owed_before(from)?;
        let (older, real) = match inside.first() {
            Some(&first) => {
                let (mut older, mut real) = (0, 0);
                for &i in &inside {
                    let b = &mut self.backfills[i];
                    let spec = self.epochs.get(b.epoch).and_then(|e| e.spec.as_ref());
                    if i == first {
                        older = b.open_before(spec, from, &[]);
                    }
                    real += count_in(b.due(spec)?, from, to);
                }
                if self.merges_past_backfills(from, to, &inside) {
                    real += self.own_owed_in(from, to, &inside)?;
                }
                (older, real)
            }
            None => {
                let older = owed.schedule.iter().map(|s| s.n).sum();
                self.owed_before(to.saturating_add(1))?;
                let real = self.epochs.iter().map(|e| count_in(&e.at, from, to)).sum();
                (older, real)
            }
        };
        if older > 0 {
            return Some(format!(
                "{run} caught up {}..{} while {older} older due time(s) were owed ({})",
                ts(from),
                ts(to),
                owed.describe()
            ));
        }
        (real != count).then(|| {
            format!(
                "{run} caught up {}..{} as {count} due time(s), but its schedule has {real} there",
                ts(from),
                ts(to)
            )
        })
    }
}

/// The due times a line owes: its schedules' runs (ascending within each schedule) and
/// each backfill's count.
#[derive(Default)]
pub(super) struct Owed {
    pub(super) schedule: Vec<Segment>,
    backfill: Vec<(i64, i64, u64)>,
}

impl Owed {
    fn count(&self) -> u64 {
        self.schedule.iter().map(|s| s.n).sum::<u64>()
            + self.backfill.iter().map(|b| b.2).sum::<u64>()
    }

    fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .schedule
            .iter()
            .take(3)
            .map(|s| match s.n {
                1 => ts(s.first).to_string(),
                n => format!("{n} from {} to {}", ts(s.first), ts(s.last)),
            })
            .collect();
        if self.schedule.len() > 3 {
            parts.push(format!("and {} more runs", self.schedule.len() - 3));
        }
        for (from, to, n) in &self.backfill {
            parts.push(format!("{n} of the backfill {}..{}", ts(*from), ts(*to)));
        }
        if parts.is_empty() {
            return "nothing".to_string();
        }
        parts.join(", ")
    }
}

/// The most due times one catch-up covers (DESIGN.md: `required` owes "in bounded batches").
const BATCH: u64 = 1000;

impl super::Checker {
    /// N1 at a start: see the module's doc. Then the start holds its cover.
    pub(super) fn line_start(
        &mut self,
        idx: usize,
        rec: &duetime::Record,
        run: RunId,
        covers: Option<&duetime::Covers>,
        trigger: duetime::Trigger,
    ) {
        use duetime::Trigger as T;
        let kind = match trigger {
            T::Schedule => StartKind::OnTime,
            T::CatchUp => StartKind::Owed { batch: BATCH },
            T::Buffered => StartKind::Owed { batch: 1 },
            T::Retry | T::Repeat => StartKind::Again,
            T::Manual => StartKind::Manual,
        };
        let cover = covers.map(|c| (c.from.as_millis(), c.to.as_millis(), c.count));
        if let (T::Schedule, Some((due, _, _))) = (trigger, cover) {
            self.on_time(idx, rec, run, due);
        }
        let wrong = self.tracks[idx].line.start_wrong(kind, run, cover);
        self.tracks[idx]
            .line
            .start(run, cover.map(|(from, to, _)| (from, to)));
        match wrong {
            Some(detail) => self.violation(Invariant::N1, &rec.job, detail),
            None if cover.is_some() => self.probe(Probe::StartHeldToTheLine),
            None => {}
        }
    }

    /// G1: a start on schedule comes at or after its due time and before its due time
    /// plus the job's jitter and the grace (later, it is late and goes to the missed rule);
    /// a jittered job's are spread (counted for `jitter_spread`).
    fn on_time(&mut self, idx: usize, rec: &duetime::Record, run: RunId, due: i64) {
        let Some(grace) = self.grace_ms else { return };
        let at = rec.at.as_millis();
        let tick = self.leases_tick().unwrap_or(i64::MAX);
        let t = &mut self.tracks[idx];
        let jitter = t
            .jitter_ms
            .map_or(0, |j| i64::try_from(j).unwrap_or(i64::MAX));
        let latest = due.saturating_add(jitter).saturating_add(grace);
        if jitter > 0 {
            t.jittered.0 += 1;
            t.jittered.1 += u32::from(at - due >= tick);
        }
        if at < due || at > latest {
            let detail = format!(
                "{run} started on schedule at {} for its due time {} (jitter {jitter} ms, grace {grace} ms)",
                ts(at),
                ts(due)
            );
            self.violation(Invariant::G1, &rec.job, detail);
        }
    }

    /// G1 at the end: a job whose jitter is at least four ticks, started on schedule a
    /// dozen times or more, started at least once a tick or more after its due time (its
    /// delays are drawn over the whole jitter: all twelve under a tick is a chance of one
    /// in sixteen million).
    pub(super) fn jitter_spread(&mut self, t: &super::Track) {
        let (Some(jitter), Some(tick)) = (t.jitter_ms, self.leases_tick()) else {
            return;
        };
        let jitter = i64::try_from(jitter).unwrap_or(i64::MAX);
        let (starts, late) = t.jittered;
        if jitter >= 4 * tick && starts >= 12 && late == 0 {
            let detail = format!(
                "{starts} starts on schedule with a jitter of {jitter} ms, none a tick after its due time"
            );
            self.violation(Invariant::G1, &t.name, detail);
        } else if late > 0 {
            self.probe(Probe::JitteredStartsSpread);
        }
    }

    /// N1 and M1 at a view of track `idx` (neither paused nor removed by the journal);
    /// `reach`: see `Line::view_owed`.
    pub(super) fn line_view(&mut self, idx: usize, v: &duetime::JobView, reach: Option<i64>) {
        let next_due = v.next_due.map(|d| d.as_millis());
        if v.owed > MAX_OWED_SEGMENTS as u64 {
            self.line_kept(idx, next_due, v.owed, reach);
        }
        let bound = self.rule_bound(idx);
        let line = &mut self.tracks[idx].line;
        let owed = match line.view_owed(next_due, v.owed, reach) {
            None => return,
            Some(Err(detail)) => {
                let name = self.tracks[idx].name.clone();
                self.violation(Invariant::N1, &name, detail);
                return;
            }
            Some(Ok(owed)) => owed,
        };
        self.probe(Probe::ViewsOwedCountHeldToTheLine);
        let through = v.settled_through.as_millis();
        match self.tracks[idx].line.unsettled_through(through, next_due) {
            Some(detail) => {
                let name = self.tracks[idx].name.clone();
                self.violation(Invariant::V1, &name, detail);
            }
            None => self.probe(Probe::ViewsCursorHeldToTheLine),
        }
        match bound.and_then(|b| b.wrong(&owed)) {
            Some(detail) => {
                let name = self.tracks[idx].name.clone();
                self.violation(Invariant::M1, &name, detail);
            }
            None if bound.is_some() => self.probe(Probe::OwedHeldToTheMissedRule),
            None => {}
        }
    }

    /// N1, the line's bound: what a job owes fits in `MAX_OWED_SEGMENTS` segments, however
    /// they merge (only a line of disjoint debts gives its oldest up, so none needs more).
    fn line_kept(&mut self, idx: usize, next_due: Option<i64>, owed: u64, reach: Option<i64>) {
        let Some(room) = self.owed_room(idx, next_due, owed, reach) else {
            return;
        };
        if room.least > MAX_OWED_SEGMENTS {
            let detail = format!(
                "owes {} runs of due times that no merge can join, more than the {MAX_OWED_SEGMENTS} segments a line keeps",
                room.least
            );
            let name = self.tracks[idx].name.clone();
            self.violation(Invariant::N1, &name, detail);
        } else if room.least + 1 >= MAX_OWED_SEGMENTS {
            self.probe(Probe::OwedLineFullOfDisjointRuns);
        }
    }

    /// `Line::room` for what the job owes before its next due time (`next_due`; `owed`:
    /// the view's count; `reach`: see `Line::view_owed`).
    pub(super) fn owed_room(
        &mut self,
        idx: usize,
        next_due: Option<i64>,
        owed: u64,
        reach: Option<i64>,
    ) -> Option<Room> {
        let before = next_due?;
        let near = reach.map_or(before, |r| before.min(r.saturating_add(1)));
        self.tracks[idx].line.room(near, before, owed)
    }

    /// What the job's missed rule lets its schedules owe, when nothing else can owe (no
    /// concurrency key ever in force, no process cap, an overlap policy that owes at most
    /// one).
    fn rule_bound(&self, idx: usize) -> Option<RuleBound> {
        let f = self.facts.get(&self.tracks[idx].name)?;
        let overlap = f.overlap?;
        if !f.after.is_empty() {
            // Its on-time due times wait in its line for its upstreams (`docs/semantics.md`).
            return None;
        }
        if self.ever_keyed(idx) || self.lanes.cap.is_some() {
            return None;
        }
        let buffers = match overlap {
            duetime::Overlap::Skip => false,
            duetime::Overlap::BufferOne => true,
            duetime::Overlap::BufferAll => return None,
        };
        match f.missed {
            duetime::MissedRule::Skip => Some(RuleBound::Skip { buffers }),
            duetime::MissedRule::CatchUpOnce => Some(RuleBound::CatchUpOnce),
            duetime::MissedRule::Required => None,
        }
    }
}

/// M1: what a missed rule lets a job's schedules owe at any moment.
#[derive(Clone, Copy)]
enum RuleBound {
    /// `skip` owes nothing it found late: one buffered overlap at most (`buffer_one`).
    Skip { buffers: bool },
    /// `catch_up_once` owes one catch-up at a time, and a buffered overlap replaces it
    /// (`buffer_one`): one run of due times in a row at most (a retry a pause handed to the
    /// rule may be several).
    CatchUpOnce,
}

impl RuleBound {
    fn wrong(&self, owed: &[Segment]) -> Option<String> {
        let n: u64 = owed.iter().map(|s| s.n).sum();
        let broken = match self {
            RuleBound::Skip { buffers } => n > u64::from(*buffers),
            RuleBound::CatchUpOnce => owed.len() > 1,
        };
        broken.then(|| {
            let listed: Vec<String> = owed
                .iter()
                .take(3)
                .map(|s| format!("{} from {}", s.n, ts(s.first)))
                .collect();
            match self {
                RuleBound::Skip { .. } => format!(
                    "a `skip` job owes {n} due time(s) of its schedule ({})",
                    listed.join(", ")
                ),
                RuleBound::CatchUpOnce => format!(
                    "a `catch_up_once` job owes {} catch-ups at once ({})",
                    owed.len(),
                    listed.join("; ")
                ),
            }
        })
    }
}
