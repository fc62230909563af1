//! The ledger judged job by job at the end of a run: every entry against the oracle's due
//! times (S1), every backfill's entries against its range (B1), a `required` job's skips
//! (L2), and, in a healed world, that everything due long enough ago is accounted (L1) and
//! no run is left open (L3). `Checker::finish` calls `judge` once for each track.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{LedgerKind, MissAction, MissCause, MissedRule};

use super::{line, replies, ts, Backfill, Checker, Epoch, Horizon, JobFacts, Start, Track};
use crate::oracle::Spec;

/// A ledger entry as the track keeps it: its first and last due times, its count, its kind.
type Entry = (i64, i64, u64, LedgerKind);

/// The oracle's view of one job's life: the due times of every epoch (ascending, each
/// once) and each backfill with the due times of its range.
struct Oracle {
    at: Vec<i64>,
    backfills: Vec<Backfilled>,
}

impl Checker {
    pub(super) fn judge(
        &mut self,
        t: &mut Track,
        f: &JobFacts,
        open: &[Start],
        latest: i64,
        horizon: Horizon,
        held_by_a_pause: bool,
    ) {
        self.judge_silence(t, horizon);
        self.jitter_spread(t);
        let mut oracle = self.oracle(t, f, latest);
        let accounted = self.judge_entries(t, f, &mut oracle);
        // (A job waiting for a paused upstream waits as long: `held_by_a_pause`.)
        if !horizon.check_liveness || t.paused || held_by_a_pause || t.removed_at.is_some() {
            return;
        }
        self.judge_liveness(t, open, horizon, &oracle, &accounted);
    }

    /// The oracle's due times for every epoch of the job's life (each schedule walked once:
    /// the line has walked them as far as the run needed), and its backfills; S1 for a
    /// schedule the world never gave, B1 for a backfill that miscounts its range.
    fn oracle(&mut self, t: &mut Track, f: &JobFacts, latest: i64) -> Oracle {
        let mut at: Vec<i64> = Vec::new();
        let mut shaped: Vec<(i64, bool)> = Vec::new();
        // Owed due times carry no record of when they were found, so an entry may name a
        // due time later than any record: the oracle looks as far as the entries do.
        let furthest = t
            .entries
            .iter()
            .map(|e| e.1)
            .max()
            .unwrap_or(latest)
            .max(latest);
        let mut backfills: Vec<Backfilled> = Vec::new();
        let (mut unknown, mut miscounted) = (Vec::new(), Vec::new());
        // Due times a daylight-saving change shaped under a policy the job chose.
        let mut chosen_policy = 0;
        // A seconds field's due times after their minute's first second.
        let mut past_the_minute = 0;
        for i in 0..t.epochs.len() {
            // A removal ends the obligations, not the accounting: a frontier pushed ahead
            // by a fast clock may have accounted due times past the removal's wall time.
            let until = t.epochs.get(i + 1).map_or(furthest, |e| e.from);
            let Some(spec) = f.specs.get(&t.epochs[i].text) else {
                let text = &t.epochs[i].text;
                unknown.push(format!(
                    "defined with a schedule the world never gave: {text}"
                ));
                continue;
            };
            let (due, dst) = t.line.due_through(i, until);
            at.extend_from_slice(due);
            shaped.extend_from_slice(dst);
            if matches!(spec, Spec::Cron(c) if c.dst.is_some()) {
                chosen_policy += dst.len() as u64;
            }
            if matches!(spec, Spec::Cron(c) if c.seconds != [0]) {
                past_the_minute += due.iter().filter(|&&d| d % 60_000 != 0).count() as u64;
            }
            for b in &t.epochs[i].backfills {
                let bf = Backfilled::new(*b, spec, i);
                miscounted.extend(bf.miscounted(b));
                backfills.push(bf);
            }
        }
        for detail in unknown {
            self.violation(Invariant::S1, &t.name, detail);
        }
        for detail in miscounted {
            self.violation(Invariant::B1, &t.name, detail);
        }
        at.sort_unstable();
        at.dedup();
        shaped.sort_unstable();
        shaped.dedup_by_key(|d| d.0);
        let gaps = shaped.iter().filter(|d| d.1).count() as u64;
        self.probe_n(Probe::DSTGapDueTime, gaps);
        self.probe_n(Probe::DSTFoldDueTime, shaped.len() as u64 - gaps);
        self.probe_n(Probe::DSTShapedDueTimeUnderAChosenPolicy, chosen_policy);
        self.probe_n(Probe::CronDueTimePastItsMinutesFirstSecond, past_the_minute);
        Oracle { at, backfills }
    }

    /// Every ledger entry in turn: a backfill's (B1), else the schedule's own (S1), each
    /// accounting no due time twice; L2 for a `required` job's skip. The ranges of the
    /// schedule's own due times accounted (disjoint, ascending).
    fn judge_entries(&mut self, t: &Track, f: &JobFacts, oracle: &mut Oracle) -> Vec<(i64, i64)> {
        let required = f.missed == MissedRule::Required;
        let mut own = OwnLedger {
            at: &oracle.at,
            next: 0,
            accounted: Vec::with_capacity(t.entries.len()),
        };
        for k in 0..t.entries.len() {
            let (_, to, _, kind) = t.entries[k];
            let Some((from, count)) =
                self.judge_backfill_entry(t, f, &mut oracle.backfills, &mut own, k, required)
            else {
                continue;
            };
            match own.account(from, to, count, kind) {
                Err(detail) => self.violation(Invariant::S1, &t.name, detail),
                Ok(()) => {
                    if let Some(cause) = required_skip(required, kind) {
                        self.forbidden(Invariant::L2, &t.name, required_skipped(from, to, cause));
                    }
                }
            }
        }
        own.accounted
    }

    /// B1 for entry `k`: an entry touching a backfill's range after it was accepted is the
    /// backfill's (the latest such one): its due times, each accounted once. One that spans
    /// several is theirs together, when they follow one another in one schedule (a full
    /// owed line merges them: `merged_wrong`). `None` when the entry was the backfills'
    /// alone or S1 judged its own part here (`judge_handed_back_merge`), else what S1 is to
    /// judge as the schedule's own (its first due time and count).
    fn judge_backfill_entry(
        &mut self,
        t: &Track,
        f: &JobFacts,
        backfills: &mut [Backfilled],
        own: &mut OwnLedger,
        k: usize,
        required: bool,
    ) -> Option<(i64, u64)> {
        let entry @ (from, to, count, kind) = t.entries[k];
        // (Backfills accepted after the entry are left out by an empty range.)
        let all = backfills.iter().map(|b| {
            let range = if b.range.after <= k {
                (b.range.from, b.range.to)
            } else {
                (i64::MAX, i64::MIN)
            };
            (t.epochs[b.epoch].text.as_str(), range.0, range.1)
        });
        let touched = line::backfills_of(all, from, to);
        if touched.len() > 1 {
            let specs: Vec<Option<&Spec>> = t.epochs.iter().map(|e| f.specs.get(&e.text)).collect();
            match merged_wrong(backfills, &touched, &specs, &t.epochs, entry) {
                Some(detail) => self.violation(Invariant::B1, &t.name, detail),
                None => self.probe(Probe::EntryOfBackfillsMergedInAFullLine),
            }
            return None;
        }
        let Some(b) = touched.last().map(|&j| &mut backfills[j]) else {
            return Some((from, count));
        };
        let Some((own_from, own_n)) = b.handed_back_merge(from, to, count, kind) else {
            match b.account(from, to, count, kind) {
                Err(detail) => self.violation(Invariant::B1, &t.name, detail),
                Ok(()) => {
                    if let Some(cause) = required_skip(required, kind) {
                        self.forbidden(Invariant::L2, &t.name, required_skipped(from, to, cause));
                    }
                }
            }
            return None;
        };
        // A backfill's cover handed back to the missed rule (cause `paused`, tagged with
        // the schedule) merged with the schedule's own due times that follow it: the
        // backfill's part is the backfill's, the rest S1's.
        let part = (from, b.range.to, count - own_n, kind);
        if let Err(detail) = b.account_part(part) {
            self.violation(Invariant::B1, &t.name, detail);
        }
        self.probe(Probe::HandedBackBackfillCoverMergedWithTheSchedulesOwn);
        let text = t.epochs[b.epoch].text.as_str();
        let due = t.line.due_of_text(text, own_from.saturating_sub(1), to);
        self.judge_handed_back_merge(t, own, (entry, own_n), &due, required);
        None
    }

    /// S1 for the part of entry `(from, to, count, kind)` past a backfill whose handed-back
    /// cover merged with its schedule's own due times: `own_n` of them, which are `due` (the
    /// schedule's, by every definition of its text). Another schedule's due times between
    /// (a job redefined back and forth) are no part of it, so each run of the schedule's
    /// that follows one another among all the job's due times is accounted apart.
    fn judge_handed_back_merge(
        &mut self,
        t: &Track,
        own: &mut OwnLedger,
        (entry, own_n): (Entry, u64),
        due: &[i64],
        required: bool,
    ) {
        let (from, to, count, kind) = entry;
        if due.len() as u64 != own_n {
            let detail = format!(
                "entry {}..{} ×{count} ({kind:?}) merges a backfill's cover with {own_n} of its schedule's own due times, but the oracle has {} there",
                ts(from),
                ts(to),
                due.len()
            );
            self.violation(Invariant::S1, &t.name, detail);
            return;
        }
        for (first, last, n) in runs_among(own.at, due) {
            match own.account(first, last, n, kind) {
                Err(detail) => self.violation(Invariant::S1, &t.name, detail),
                Ok(()) => {
                    if let Some(cause) = required_skip(required, kind) {
                        self.forbidden(
                            Invariant::L2,
                            &t.name,
                            required_skipped(first, last, cause),
                        );
                    }
                }
            }
        }
    }

    /// L1: everything due long enough ago is accounted, and everything a backfill asked
    /// for; L3: no run is left open long after it started.
    fn judge_liveness(
        &mut self,
        t: &Track,
        open: &[Start],
        horizon: Horizon,
        oracle: &Oracle,
        accounted: &[(i64, i64)],
    ) {
        let name = &t.name;
        let deadline = horizon.end - horizon.settle_bound;
        let (missing, first_missing) = unaccounted(&oracle.at, accounted, deadline);
        if let Some(first) = first_missing {
            self.violation(
                Invariant::L1,
                name,
                format!(
                    "{missing} due time(s) from {} on still unaccounted at the end {}",
                    ts(first),
                    ts(horizon.end)
                ),
            );
        }
        // ... and so is everything a backfill asked for (its due times are all past).
        for b in &oracle.backfills {
            let (missing, first) = unaccounted(&b.at, &b.accounted, deadline);
            if let Some(first) = first {
                self.violation(
                    Invariant::L1,
                    name,
                    format!(
                        "{missing} backfilled due time(s) from {} on (of the backfill {}..{}) still unaccounted at the end {}",
                        ts(first),
                        ts(b.range.from),
                        ts(b.range.to),
                        ts(horizon.end)
                    ),
                );
            }
        }
        for s in open {
            if s.at < horizon.end - horizon.run_bound {
                self.violation(
                    Invariant::L3,
                    name,
                    format!(
                        "{} started at {} was never settled or recorded lost",
                        s.run,
                        ts(s.at)
                    ),
                );
            }
        }
    }
}

/// L2: the cause of a `required` job's skip, when it is not one that sets the rule aside.
fn required_skip(required: bool, kind: LedgerKind) -> Option<MissCause> {
    let LedgerKind::Missed {
        cause,
        action: MissAction::Skipped,
    } = kind
    else {
        return None;
    };
    // (`upstream`: an upstream's due time did not settle ok, so this one could not run;
    // the chain's checks hold it to the upstream's ledger.)
    let excused = matches!(
        cause,
        MissCause::TooLate | MissCause::Removed | MissCause::Rescheduled | MissCause::Upstream
    );
    (required && !excused).then_some(cause)
}

fn required_skipped(from: i64, to: i64, cause: MissCause) -> String {
    format!(
        "a required job skipped {}..{} ({cause:?})",
        ts(from),
        ts(to)
    )
}

/// The runs of `due` (ascending) that follow one another among all the job's due times
/// `at` (ascending): each as its first, its last and how many. A due time `at` lacks is a
/// run of its own (S1 then tells it).
fn runs_among(at: &[i64], due: &[i64]) -> Vec<(i64, i64, u64)> {
    let mut runs: Vec<(i64, i64, u64, Option<usize>)> = Vec::new();
    for &d in due {
        let i = at.binary_search(&d).ok();
        match runs.last_mut() {
            Some(r) if i.is_some() && r.3.is_some_and(|j| Some(j + 1) == i) => {
                (r.1, r.2, r.3) = (d, r.2 + 1, i);
            }
            _ => runs.push((d, d, 1, i)),
        }
    }
    runs.into_iter().map(|(a, b, n, _)| (a, b, n)).collect()
}

/// S1's accounting of a schedule's own due times: the oracle's due times (ascending), where
/// the previous entry ended among them, and the ranges accounted so far (disjoint,
/// ascending by `from`: entries mostly come in due-time order and are pushed).
struct OwnLedger<'a> {
    at: &'a [i64],
    next: usize,
    accounted: Vec<(i64, i64)>,
}

impl OwnLedger<'_> {
    /// S1: the entry names due times the schedule yields, counts them exactly, and accounts
    /// none twice.
    fn account(&mut self, from: i64, to: i64, count: u64, kind: LedgerKind) -> Result<(), String> {
        let at = self.at;
        // Entries mostly follow one another, and `at` ascends strictly, so a due time found
        // where it is expected is found where the search would find it.
        let lo = if at.get(self.next) == Some(&from) {
            self.next
        } else {
            at.partition_point(|&x| x < from)
        };
        let expected_hi = usize::try_from(count).ok().and_then(|c| lo.checked_add(c));
        let hi = match expected_hi {
            Some(h) if h > lo && at.get(h - 1) == Some(&to) => h,
            _ => at.partition_point(|&x| x <= to),
        };
        self.next = hi;
        let real = (hi - lo) as u64;
        if at.get(lo) != Some(&from) || hi == 0 || at[hi - 1] != to || real != count {
            return Err(format!(
                "entry {}..{} ×{count} ({kind:?}) but the oracle has {real} due times there",
                ts(from),
                ts(to)
            ));
        }
        add_disjoint(&mut self.accounted, from, to).map_err(|(a, b)| {
            format!(
                "entry {}..{} ({kind:?}) accounts due times already accounted by {}..{}",
                ts(from),
                ts(to),
                ts(a),
                ts(b)
            )
        })
    }
}

/// Adds `from..=to` to `accounted` (disjoint ranges, ascending by `from`), or names the
/// range it would overlap (the last one starting at or before `to`). Entries mostly come
/// in due-time order: a range past the last is pushed.
fn add_disjoint(accounted: &mut Vec<(i64, i64)>, from: i64, to: i64) -> Result<(), (i64, i64)> {
    let pos = if accounted.last().is_none_or(|&(a, _)| a <= to) {
        accounted.len()
    } else {
        accounted.partition_point(|&(a, _)| a <= to)
    };
    if let Some(&(a, b)) = pos.checked_sub(1).map(|p| &accounted[p]) {
        if b >= from {
            return Err((a, b));
        }
    }
    accounted.insert(pos, (from, to));
    Ok(())
}

/// How many of the due times `at` (ascending) up to `deadline` no range of `accounted`
/// (disjoint, ascending) holds, and the first of them.
fn unaccounted(at: &[i64], accounted: &[(i64, i64)], deadline: i64) -> (usize, Option<i64>) {
    let mut missing = 0usize;
    let mut first = None;
    let mut ranges = accounted.iter().copied().peekable();
    for &d in at.iter().take_while(|&&d| d <= deadline) {
        while ranges.peek().is_some_and(|&(_, to)| to < d) {
            ranges.next();
        }
        if ranges.peek().is_none_or(|&(from, _)| from > d) {
            missing += 1;
            first.get_or_insert(d);
        }
    }
    (missing, first)
}

/// A backfill as `judge` holds it: its range, the oracle's due times there, and the ranges
/// of them accounted so far (disjoint, ascending).
struct Backfilled {
    range: Backfill,
    /// The epoch whose schedule it was asked of.
    epoch: usize,
    at: Vec<i64>,
    accounted: Vec<(i64, i64)>,
}

/// B1 for an entry spanning the backfills `touched` (ascending, at least two): all of one
/// schedule, none with a due time of it between one and the next (only what follows one
/// another merges), the entry starting and ending on their due times and counting each
/// one's part exactly; each part is then that backfill's (`Backfilled::account`).
fn merged_wrong(
    backfills: &mut [Backfilled],
    touched: &[usize],
    specs: &[Option<&Spec>],
    epochs: &[Epoch],
    (from, to, count, kind): (i64, i64, u64, LedgerKind),
) -> Option<String> {
    let text = |j: usize| &epochs[backfills[j].epoch].text;
    let spec = specs.get(backfills[touched[0]].epoch).copied().flatten()?;
    let mut parts = Vec::new();
    for pair in touched.windows(2) {
        let (a, b) = (&backfills[pair[0]], &backfills[pair[1]]);
        let between = replies::count_due(spec, a.range.to, b.range.from - 1, 0);
        if text(pair[0]) != text(pair[1]) || between > 0 {
            return Some(format!(
                "entry {}..{} ({kind:?}) spans the backfills {}..{} and {}..{}, which do not follow one another in one schedule",
                ts(from),
                ts(to),
                ts(a.range.from),
                ts(a.range.to),
                ts(b.range.from),
                ts(b.range.to)
            ));
        }
    }
    let mut total = 0;
    for &j in touched {
        let b = &backfills[j];
        let (lo, hi) = (from.max(b.range.from), to.min(b.range.to));
        let n = b.at.iter().filter(|&&d| lo <= d && d <= hi).count() as u64;
        let first = b.at.iter().find(|&&d| d >= lo).copied();
        let last = b.at.iter().rev().find(|&&d| d <= hi).copied();
        total += n;
        parts.push((j, first, last, n));
    }
    let ends = (parts[0].1, parts[parts.len() - 1].2);
    if ends != (Some(from), Some(to)) || total != count {
        return Some(format!(
            "entry {}..{} ×{count} ({kind:?}) spans {} backfills, whose due times there are {total} from {:?} to {:?}",
            ts(from),
            ts(to),
            touched.len(),
            ends.0.map(ts),
            ends.1.map(ts)
        ));
    }
    for (j, first, last, n) in parts {
        let (Some(a), Some(b)) = (first, last) else {
            continue;
        };
        if let Err(detail) = backfills[j].account(a, b, n, kind) {
            return Some(detail);
        }
    }
    None
}

impl Backfilled {
    /// B1: the backfill's line told its first and last due times and their count as the
    /// oracle has them.
    fn miscounted(&self, b: &Backfill) -> Option<String> {
        let told = self.at.first() == Some(&b.from)
            && self.at.last() == Some(&b.to)
            && self.at.len() as u64 == b.count;
        (!told).then(|| {
            format!(
                "backfill of {} due times {}..{} but the oracle has {} there",
                b.count,
                ts(b.from),
                ts(b.to),
                self.at.len()
            )
        })
    }

    fn new(range: Backfill, spec: &Spec, epoch: usize) -> Backfilled {
        let at = spec
            .due_in(range.from.saturating_sub(1), range.to)
            .iter()
            .map(|d| d.at)
            .collect();
        Backfilled {
            range,
            epoch,
            at,
            accounted: Vec::new(),
        }
    }

    /// When an entry of cause `paused` starts in this backfill and reaches past it: its
    /// first due time after the backfill and how many of its due times lie past the
    /// backfill (the schedule's own, which S1 judges). `None` for any other entry.
    fn handed_back_merge(
        &self,
        from: i64,
        to: i64,
        count: u64,
        kind: LedgerKind,
    ) -> Option<(i64, u64)> {
        let paused = matches!(
            kind,
            LedgerKind::Missed {
                cause: MissCause::Paused,
                ..
            }
        );
        let b = self.range.to;
        if !paused || !line::reaches_past(from, to, (self.range.from, b)) {
            return None;
        }
        let lo = self.at.partition_point(|&x| x < from);
        let hi = self.at.partition_point(|&x| x <= b);
        let inside = (hi - lo) as u64;
        (inside < count).then_some((b.saturating_add(1), count - inside))
    }

    /// `account` for the part of an entry within this backfill, ending at its last due
    /// time there.
    fn account_part(
        &mut self,
        (from, to, count, kind): (i64, i64, u64, LedgerKind),
    ) -> Result<(), String> {
        let hi = self.at.partition_point(|&x| x <= to);
        let last = hi.checked_sub(1).map_or(to, |i| self.at[i]);
        self.account(from, last, count, kind)
    }

    /// An entry of this backfill: within its range, naming its schedule's due times and
    /// counting them exactly, accounting none a second time.
    fn account(&mut self, from: i64, to: i64, count: u64, kind: LedgerKind) -> Result<(), String> {
        let (a, b) = (self.range.from, self.range.to);
        if from < a || to > b {
            return Err(format!(
                "entry {}..{} ({kind:?}) reaches past the backfill {}..{} it overlaps",
                ts(from),
                ts(to),
                ts(a),
                ts(b)
            ));
        }
        let lo = self.at.partition_point(|&x| x < from);
        let hi = self.at.partition_point(|&x| x <= to);
        let real = (hi - lo) as u64;
        if self.at.get(lo) != Some(&from) || hi == 0 || self.at[hi - 1] != to || real != count {
            return Err(format!(
                "entry {}..{} ×{count} ({kind:?}) of the backfill {}..{} but the oracle has {real} due times there",
                ts(from),
                ts(to),
                ts(a),
                ts(b)
            ));
        }
        add_disjoint(&mut self.accounted, from, to).map_err(|(x, y)| {
            format!(
                "entry {}..{} ({kind:?}) accounts backfilled due times already accounted by {}..{}",
                ts(from),
                ts(to),
                ts(x),
                ts(y)
            )
        })
    }
}
