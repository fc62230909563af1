//! The checker: reads only the journal (ledger and history records, including each run's
//! start) and the oracle's due times, never the core's state, and holds the safety
//! invariants S1-S5 and the liveness promises L1-L3 of DESIGN.md.

use std::collections::BTreeMap;
use std::fmt;

use duetime::{
    Entry, History, JobName, LedgerKind, MissAction, MissCause, MissedRule, Outcome, Record, RunId,
};

use crate::oracle::{Due, Spec};

/// A broken promise, with the entries that show it.
#[derive(Debug, Clone)]
pub struct Violation {
    pub invariant: &'static str,
    pub job: String,
    pub detail: String,
}

impl Violation {
    pub fn is_liveness(&self) -> bool {
        self.invariant.starts_with('L')
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} broken for {}: {}",
            self.invariant, self.job, self.detail
        )
    }
}

/// What the checker needs to know about a job beyond the journal.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JobFacts {
    pub safe_to_repeat: bool,
    pub missed: MissedRule,
    /// The job's `pause_after_failures`: after that many failed runs in a row it must be
    /// paused before anything but a manual run starts again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_failures: Option<u32>,
    /// Oracle specs by the schedule text the core recorded in `defined`.
    pub specs: BTreeMap<String, Spec>,
}

/// The moments the liveness checks are judged at.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Horizon {
    /// Wall time at the end of the run.
    pub end: i64,
    /// Due times at or before `end - settle_bound` must be accounted (L1).
    pub settle_bound: i64,
    /// Runs started before `end - run_bound` must be settled or recorded lost (L3).
    pub run_bound: i64,
    pub check_liveness: bool,
}

#[derive(Default)]
struct JobTrack {
    /// Epochs: schedule text, the instant it applies after, and the removal that ended it.
    epochs: Vec<(String, i64, Option<i64>)>,
    removed_at: Option<i64>,
    paused: bool,
    /// Accounted due-time ranges, by `from`.
    accounted: BTreeMap<i64, (i64, u64)>,
    /// Started runs: covers and how they ended.
    starts: Vec<StartTrack>,
    /// The latest start of each due time covered so far, as disjoint ranges by their first
    /// due time (an index into `starts`).
    by_from: BTreeMap<i64, usize>,
    by_run: RunMap<usize>,
    /// The process of the job's latest start.
    last_process: Option<duetime::ProcessId>,
    /// Failed runs since the last success, and whether a pause is owed for them.
    failures_in_a_row: u32,
    pause_owed: bool,
    entries: Vec<(i64, i64, u64, LedgerKind)>,
}

struct StartTrack {
    run: RunId,
    covers: Option<(i64, i64)>,
    at: i64,
    end: Option<RunEnd>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    Done,
    Failed,
    Lost,
}

/// Run ids are counters: a multiplicative hash spreads them. Only looked up, never
/// iterated, so no hash order can reach a verdict.
#[derive(Default, Clone, Copy)]
struct RunHasher(u64);

impl std::hash::Hasher for RunHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type RunMap<V> = std::collections::HashMap<RunId, V, std::hash::BuildHasherDefault<RunHasher>>;

/// Counts of rare situations the journal shows; the simulator adds its own.
pub type Probes = BTreeMap<&'static str, u64>;

/// The results processes sent (the world's ground truth, or the `RunFinished` inputs of a
/// replay): a settlement must be one of them, or the core's own timeout.
pub type Reported = BTreeMap<duetime::RunId, Vec<Outcome>>;

/// The results among a list of core inputs.
pub fn reported_in<'a>(events: impl IntoIterator<Item = &'a duetime::Event>) -> Reported {
    let mut r = Reported::new();
    for e in events {
        if let duetime::Event::RunFinished { run, outcome, .. } = e {
            r.entry(*run).or_default().push(outcome.clone());
        }
    }
    r
}

pub fn check(
    journal: &[Record],
    facts: &BTreeMap<JobName, JobFacts>,
    reported: &Reported,
    horizon: Horizon,
    probes: &mut Probes,
) -> Vec<Violation> {
    let mut v = Vec::new();
    // A job removed and defined again is a new registration: its due times start afresh.
    // Tracks by (name, registration), found through the name's current registration; the
    // journal names the same few jobs over and over, so the last one found is tried first.
    let mut tracks: Vec<((JobName, u32), JobTrack)> = Vec::new();
    let mut current: BTreeMap<JobName, usize> = BTreeMap::new();
    let mut last_hit: Option<(JobName, usize)> = None;
    let mut settled: RunMap<()> = RunMap::default();
    let mut lost: RunMap<()> = RunMap::default();
    let mut probe = |name: &'static str| *probes.entry(name).or_default() += 1;
    let violation = |v: &mut Vec<Violation>, inv: &'static str, job: &JobName, detail: String| {
        v.push(Violation {
            invariant: inv,
            job: job.to_string(),
            detail,
        });
    };

    for rec in journal {
        let mut idx = match &last_hit {
            Some((name, i)) if same_name(name, &rec.job) => *i,
            _ => *current.entry(rec.job.clone()).or_insert_with(|| {
                tracks.push(((rec.job.clone(), 0), JobTrack::default()));
                tracks.len() - 1
            }),
        };
        if matches!(rec.entry, Entry::History(History::Defined { .. }))
            && tracks[idx].1.removed_at.is_some()
        {
            // Defined again after removal: a new registration.
            let reg = tracks[idx].0 .1 + 1;
            tracks.push(((rec.job.clone(), reg), JobTrack::default()));
            idx = tracks.len() - 1;
            current.insert(rec.job.clone(), idx);
        }
        if last_hit.as_ref().is_none_or(|(_, i)| *i != idx) {
            last_hit = Some((rec.job.clone(), idx));
        }
        let t = &mut tracks[idx].1;
        match &rec.entry {
            Entry::History(h) => {
                match h {
                    History::Defined { schedule, from, .. } => {
                        t.epochs
                            .push((schedule.to_string(), from.as_millis(), None));
                        if t.epochs.len() > 1 {
                            probe("rescheduled");
                        }
                    }
                    History::Removed { .. } => {
                        t.removed_at = Some(rec.at.as_millis());
                        if let Some(last) = t.epochs.last_mut() {
                            last.2 = Some(rec.at.as_millis());
                        }
                    }
                    History::Paused { by, .. } => {
                        t.paused = true;
                        t.pause_owed = false;
                        if let duetime::PausedBy::System { reason } = by {
                            probe("paused by the system");
                            if reason.contains("failed runs in a row") {
                                probe("paused after failures in a row");
                            }
                        }
                    }
                    History::Resumed { .. } => t.paused = false,
                    History::Started {
                        run,
                        covers,
                        trigger,
                        process,
                        ..
                    } => {
                        if *trigger == duetime::Trigger::Retry
                            && t.last_process.is_some_and(|p| p != *process)
                        {
                            probe("retry crossing a restart");
                        }
                        t.last_process = Some(*process);
                        if t.pause_owed && *trigger != duetime::Trigger::Manual {
                            violation(
                                &mut v,
                                "P1",
                                &rec.job,
                                format!(
                                    "{run} started after {} failed runs in a row, with no pause",
                                    t.failures_in_a_row
                                ),
                            );
                            t.pause_owed = false;
                        }
                        let covers = covers.map(|c| (c.from.as_millis(), c.to.as_millis()));
                        match trigger {
                            duetime::Trigger::Repeat => probe("lost run of a safe job repeated"),
                            duetime::Trigger::Retry => probe("retry started"),
                            duetime::Trigger::Manual => probe("manual run"),
                            duetime::Trigger::Buffered => probe("buffered overlap run"),
                            duetime::Trigger::CatchUp => probe("catch-up run"),
                            duetime::Trigger::Schedule => {}
                        }
                        if let Some((a, b)) = covers {
                            // S2: every earlier start covering any of these due times must have
                            // ended known-failed (or lost, for a job safe to repeat).
                            let safe = facts.get(&rec.job).is_some_and(|f| f.safe_to_repeat);
                            // Covers kept disjoint: the newest start of any due time replaces
                            // the older ones it overlaps, so only neighbours need looking at.
                            let mut overlapping = Vec::new();
                            for (&from, &i) in t.by_from.range(..=b).rev() {
                                let Some((_, to)) = t.starts[i].covers else {
                                    continue;
                                };
                                if to < a {
                                    break;
                                }
                                overlapping.push((from, i));
                            }
                            let earlier = overlapping.iter().map(|(f, i)| (f, i));
                            for (_, &i) in earlier {
                                let s = &t.starts[i];
                                let Some((sa, sb)) = s.covers else { continue };
                                if sa > b || sb < a {
                                    continue;
                                }
                                let ok = match s.end {
                                    Some(RunEnd::Failed) => true,
                                    Some(RunEnd::Lost) => safe,
                                    _ => false,
                                };
                                if !ok {
                                    violation(
                                    &mut v,
                                    "S2",
                                    &rec.job,
                                    format!(
                                        "{run} started at {} covering {}..{} while {} (covering {}..{}) had not failed{}",
                                        rec.at,
                                        ts(a),
                                        ts(b),
                                        s.run,
                                        ts(sa),
                                        ts(sb),
                                        if s.end == Some(RunEnd::Lost) { " (it was lost; the job is not safe to repeat)" } else { "" }
                                    ),
                                );
                                }
                            }
                            for (from, _) in &overlapping {
                                t.by_from.remove(from);
                            }
                            t.by_from.insert(a, t.starts.len());
                        }
                        t.by_run.insert(*run, t.starts.len());
                        t.starts.push(StartTrack {
                            run: *run,
                            covers,
                            at: rec.at.as_millis(),
                            end: None,
                        });
                    }
                    History::Settled { run, outcome, .. } => {
                        // S3: a run is settled only by a result reported for that very run (or
                        // by the core's own timeout), never by someone else's stale result.
                        let sent = reported
                            .get(run)
                            .is_some_and(|o| o.iter().any(|o| outcome_matches(o, outcome)));
                        if !sent && *outcome != Outcome::TimedOut {
                            violation(&mut v, "S3", &rec.job, format!("{run} settled {outcome} though no such result was reported for it"));
                        }
                        if settled.insert(*run, ()).is_some() {
                            violation(&mut v, "S5", &rec.job, format!("{run} settled twice"));
                        }
                        if lost.contains_key(run) {
                            violation(
                                &mut v,
                                "S3",
                                &rec.job,
                                format!("{run} settled after it was recorded lost"),
                            );
                        }
                        let end = if matches!(outcome, Outcome::Ok | Outcome::Skipped) {
                            RunEnd::Done
                        } else {
                            RunEnd::Failed
                        };
                        if matches!(outcome, Outcome::TimedOut) {
                            probe("run timed out");
                        }
                        if let Some(&i) = t.by_run.get(run) {
                            t.starts[i].end = Some(end);
                        }
                        // P1: `pause_after_failures` failed runs in a row pause the job
                        // (unless it is paused already).
                        if end == RunEnd::Done {
                            t.failures_in_a_row = 0;
                        } else {
                            t.failures_in_a_row += 1;
                            let limit = facts.get(&rec.job).and_then(|f| f.pause_after_failures);
                            if limit.is_some_and(|n| t.failures_in_a_row >= n) && !t.paused {
                                t.pause_owed = true;
                            }
                        }
                    }
                    History::Lost { run } => {
                        probe("lease expired while running");
                        lost.insert(*run, ());
                        if settled.contains_key(run) {
                            violation(
                                &mut v,
                                "S3",
                                &rec.job,
                                format!("{run} recorded lost after it was settled"),
                            );
                        }
                        if let Some(&i) = t.by_run.get(run) {
                            t.starts[i].end = Some(RunEnd::Lost);
                        }
                    }
                    History::StaleResult { .. } => probe("stale result refused"),
                    History::Adopted { .. } => probe("run adopted by a later incarnation"),
                    History::CancelSent { .. } => probe("timeout cancel sent"),
                    _ => {}
                }
            }
            Entry::Ledger(e) => {
                let (from, to) = (e.from.as_millis(), e.to.as_millis());
                match e.kind {
                    LedgerKind::Missed { cause, action } => {
                        probe(match (cause, action) {
                            (MissCause::Overlap, _) => "overlap recorded",
                            (MissCause::ClockJump, MissAction::CaughtUp { .. }) => {
                                "catch-up after a clock jump"
                            }
                            (MissCause::ClockJump, _) => "clock jump skipped due times",
                            (MissCause::Down, MissAction::CaughtUp { .. }) => {
                                "catch-up after downtime"
                            }
                            (MissCause::Down, _) => "downtime skipped due times",
                            (MissCause::Paused, _) => "paused due times",
                            (MissCause::TooLate, _) => "too late for the catch-up window",
                            (MissCause::Removed, _) => "removed with due times",
                            (MissCause::Rescheduled, _) => "rescheduled due times",
                            _ => "other missed",
                        });
                        if e.count >= 1000 {
                            probe("required batch of 1000");
                        }
                    }
                    LedgerKind::FailedOut { .. } => probe("failed out"),
                    LedgerKind::Lost { .. } => probe("lost run of a job not safe to repeat"),
                    LedgerKind::Ran { .. } => {}
                }
                if let LedgerKind::Ran { run, .. }
                | LedgerKind::FailedOut { run }
                | LedgerKind::Missed {
                    action: MissAction::CaughtUp { run },
                    ..
                } = e.kind
                {
                    if lost.contains_key(&run) {
                        violation(
                            &mut v,
                            "S3",
                            &rec.job,
                            format!("ledger names {run} after it was recorded lost"),
                        );
                    }
                }
                t.entries.push((from, to, e.count, e.kind));
            }
        }
    }

    // Processes whose clocks ran ahead account due times beyond the true end; no entry can
    // lie beyond the latest wall time any record was written at.
    let latest = journal
        .iter()
        .map(|r| r.at.as_millis())
        .max()
        .unwrap_or(horizon.end)
        .max(horizon.end);
    // Judged in (name, registration) order, so violations read in a stable order.
    tracks.sort_by(|a, b| a.0.cmp(&b.0));
    for ((name, _), t) in &tracks {
        let Some(f) = facts.get(name) else { continue };
        // The oracle's due times for every epoch of the job's life.
        let mut due: Vec<Due> = Vec::new();
        // Owed due times carry no record of when they were found, so an entry may name a
        // due time later than any record: the oracle looks as far as the entries do.
        let furthest = t
            .entries
            .iter()
            .map(|e| e.1)
            .max()
            .unwrap_or(latest)
            .max(latest);
        for (i, (text, from, removed)) in t.epochs.iter().enumerate() {
            let next = t.epochs.get(i + 1).map(|e| e.1);
            // A removal ends the obligations, not the accounting: a frontier pushed ahead by
            // a fast clock may have accounted due times past the removal's wall time.
            let _ = removed;
            let until = next.unwrap_or(furthest);
            match f.specs.get(text) {
                Some(spec) => due.extend(spec.due_in(*from, until)),
                None => violation(
                    &mut v,
                    "S1",
                    name,
                    format!("defined with a schedule the world never gave: {text}"),
                ),
            }
        }
        due.sort_by_key(|d| d.at);
        due.dedup_by_key(|d| d.at);
        for d in &due {
            if d.gap {
                probe("DST gap due time");
            }
            if d.fold {
                probe("DST fold due time");
            }
        }
        let at: Vec<i64> = due.iter().map(|d| d.at).collect();
        let mut accounted = t.accounted.clone();
        for &(from, to, count, kind) in &t.entries {
            // S1: the entry names due times the schedule yields, counts them exactly, and
            // accounts none twice.
            let lo = at.partition_point(|&x| x < from);
            let hi = at.partition_point(|&x| x <= to);
            let real = (hi - lo) as u64;
            if at.get(lo) != Some(&from) || hi == 0 || at[hi - 1] != to || real != count {
                violation(
                    &mut v,
                    "S1",
                    name,
                    format!("entry {}..{} ×{count} ({kind:?}) but the oracle has {real} due times there", ts(from), ts(to)),
                );
                continue;
            }
            let overlap_before = accounted
                .range(..=to)
                .next_back()
                .filter(|(_, (end, _))| *end >= from);
            if let Some((&a, &(b, _))) = overlap_before {
                violation(
                    &mut v,
                    "S1",
                    name,
                    format!(
                        "entry {}..{} ({kind:?}) accounts due times already accounted by {}..{}",
                        ts(from),
                        ts(to),
                        ts(a),
                        ts(b)
                    ),
                );
                continue;
            }
            accounted.insert(from, (to, count));
            if horizon.check_liveness && f.missed == MissedRule::Required {
                if let LedgerKind::Missed {
                    cause,
                    action: MissAction::Skipped,
                } = kind
                {
                    if !matches!(
                        cause,
                        MissCause::TooLate
                            | MissCause::Removed
                            | MissCause::Rescheduled
                            | MissCause::Paused
                    ) {
                        violation(
                            &mut v,
                            "L2",
                            name,
                            format!(
                                "a required job skipped {}..{} ({cause:?})",
                                ts(from),
                                ts(to)
                            ),
                        );
                    }
                }
            }
        }
        if !horizon.check_liveness || t.paused || t.removed_at.is_some() {
            continue;
        }
        // L1: everything due long enough ago is accounted.
        let deadline = horizon.end - horizon.settle_bound;
        let mut missing = Vec::new();
        let mut ranges = accounted
            .iter()
            .map(|(&from, &(to, _))| (from, to))
            .peekable();
        for &d in at.iter().take_while(|&&d| d <= deadline) {
            while ranges.peek().is_some_and(|&(_, to)| to < d) {
                ranges.next();
            }
            if ranges.peek().is_none_or(|&(from, _)| from > d) {
                missing.push(d);
            }
        }
        if let Some(first) = missing.first() {
            violation(
                &mut v,
                "L1",
                name,
                format!(
                    "{} due time(s) from {} on still unaccounted at the end {}",
                    missing.len(),
                    ts(*first),
                    ts(horizon.end)
                ),
            );
        }
        // L3: no run is left open long after it started.
        for s in &t.starts {
            if s.end.is_none() && s.at < horizon.end - horizon.run_bound {
                violation(
                    &mut v,
                    "L3",
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
    v
}

/// The same job name, by pointer first: the core hands out clones of one name.
fn same_name(a: &JobName, b: &JobName) -> bool {
    let (a, b) = (a.as_str(), b.as_str());
    std::ptr::eq(a, b) || a == b
}

fn ts(ms: i64) -> duetime::Timestamp {
    duetime::Timestamp::from_millis(ms)
}

/// The core keeps at most 64 characters of a failure's kind.
fn outcome_matches(sent: &Outcome, settled: &Outcome) -> bool {
    match (sent, settled) {
        (
            Outcome::Failed {
                kind: a,
                retry_after: ra,
            },
            Outcome::Failed {
                kind: b,
                retry_after: rb,
            },
        ) => ra == rb && a.chars().take(64).eq(b.chars()),
        _ => sent == settled,
    }
}
