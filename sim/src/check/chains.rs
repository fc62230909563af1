//! **Y1**, jobs that run after other jobs (`JobDef::after`), judged from the journal alone:
//!
//! - a downstream's run starts only for due times every upstream settled `ok` before it
//!   (in the journal's order), so an upstream's failed, lost, expired or skipped due time
//!   never lets the downstream's run;
//! - a downstream's due time is skipped with cause `upstream` only right after a line
//!   naming one of its upstreams and a fate that is not `ok`, and that fate is the
//!   upstream's as its own ledger tells it (failed out, lost, approval expired, skipped
//!   for the cause told), or the upstream is gone, or it settled no such due time (none
//!   since this registration of the downstream was defined: it never heard one before);
//! - (every downstream due time gets exactly one entry: S1, as for any job).
//!
//! Kept: each upstream's ledger entries (only jobs some job waits for), by first due
//! time, and the line each downstream was last told.

use std::collections::{BTreeMap, BTreeSet};

use duetime::UpstreamFate;
use duetime::{Entry, History, JobName, LedgerEntry, LedgerKind, MissAction, MissCause, Record};

use super::{ts, Checker, Invariant, Probe};

/// Y1's part of the checker.
#[derive(Default)]
pub(super) struct Chains {
    /// Jobs some job of the world waits for: only their entries are kept.
    upstreams: BTreeSet<JobName>,
    /// Each upstream's entries, in the journal's order, found by their first due time.
    settled: BTreeMap<JobName, Kept>,
    /// The upstream and fate a downstream was last told (`upstream_not_ok`), until the
    /// entry that follows it.
    told: BTreeMap<JobName, (JobName, UpstreamFate)>,
    /// Upstream entries kept so far (each `Settled::nth` is its place in this count).
    kept: u64,
    /// Each downstream's registration (a track) and how many upstream entries were kept
    /// before its first definition: it waits (hears its upstreams) from there on.
    since: BTreeMap<JobName, (usize, u64)>,
}

impl Chains {
    pub(super) fn new(facts: &BTreeMap<JobName, super::JobFacts>) -> Chains {
        Chains {
            upstreams: facts
                .values()
                .flat_map(|f| f.after.iter().cloned())
                .collect(),
            ..Chains::default()
        }
    }
}

/// Most ranges of fates a downstream keeps (the core's `MAX_HEARD`): an older fate it may
/// have forgotten.
const MAX_HEARD: usize = 256;

/// One upstream's entries, in the journal's order, with where each begins: a due time's
/// entry is found among those beginning at most the longest entry's span before it, not
/// by walking back through the upstream's whole history (a downstream's backfill of a
/// thousand old due times walked a thousand entries back for each: quadratic, 95% of a
/// world's instructions in swarm seed 936).
#[derive(Default)]
struct Kept {
    entries: Vec<Settled>,
    /// Each entry's index, by its first due time.
    by_from: BTreeMap<i64, Vec<usize>>,
    /// The longest `to - from` of the entries.
    max_span: i64,
}

impl Kept {
    fn push(&mut self, entry: Settled) {
        self.max_span = self.max_span.max(entry.to - entry.from);
        let i = self.entries.len();
        self.by_from.entry(entry.from).or_default().push(i);
        self.entries.push(entry);
    }

    /// The newest entry, of those kept from the `since`-th on, that holds instant `at`.
    fn newest_holding(
        &self,
        at: i64,
        since: u64,
        specs: &BTreeMap<String, crate::oracle::Spec>,
    ) -> Option<&Settled> {
        self.by_from
            .range(at.saturating_sub(self.max_span)..=at)
            .flat_map(|(_, ix)| ix.iter().map(|&i| &self.entries[i]))
            .filter(|s| s.nth >= since && s.holds(at, specs))
            .max_by_key(|s| s.nth)
    }

    /// How many entries were kept from the `from`-th on.
    fn count_since(&self, from: u64) -> usize {
        self.entries.len() - self.entries.partition_point(|s| s.nth < from)
    }
}

/// One upstream entry as kept.
struct Settled {
    /// Its place among the upstream entries kept (`Chains::kept`).
    nth: u64,
    from: i64,
    to: i64,
    count: u64,
    kind: LedgerKind,
    /// For an entry of more than one due time: the upstream's schedules (their texts) of
    /// which it is exactly a run (its due times are theirs from `from` to `to`).
    runs_of: Vec<String>,
}

impl Settled {
    /// Whether the entry settled the upstream's due time at instant `at`.
    fn holds(&self, at: i64, specs: &BTreeMap<String, crate::oracle::Spec>) -> bool {
        if at < self.from || self.to < at {
            return false;
        }
        if self.count == 1 {
            return at == self.from;
        }
        self.runs_of
            .iter()
            .filter_map(|text| specs.get(text))
            .any(|spec| spec.due_in(at - 1, at).iter().any(|d| d.at == at))
    }
}

/// The schedules among `specs` of which the entry `from..=to` of `count` due times is
/// exactly a run.
fn runs_of(
    specs: &BTreeMap<String, crate::oracle::Spec>,
    from: i64,
    to: i64,
    count: u64,
) -> Vec<String> {
    specs
        .iter()
        .filter(|(_, spec)| {
            let due = spec.due_in(from - 1, to);
            due.len() as u64 == count
                && due.first().is_some_and(|d| d.at == from)
                && due.last().is_some_and(|d| d.at == to)
        })
        .map(|(text, _)| text.clone())
        .collect()
}

impl Checker {
    /// The entry of `upstream` that settled its due time at instant `at` (a downstream
    /// waits for its upstreams' due times at its own due times' instants, whichever
    /// schedule either owed them under), if one did: the newest holding it (an entry of
    /// many due times holds those of the upstream's schedule it is a run of, so one of
    /// another schedule may span `at` without being about it).
    fn entry_at(&self, upstream: &JobName, at: i64) -> Option<LedgerKind> {
        self.entry_at_since(upstream, at, 0)
    }

    /// `entry_at` among the entries kept from the `since`-th on.
    fn entry_at_since(&self, upstream: &JobName, at: i64, since: u64) -> Option<LedgerKind> {
        self.settled_at_since(upstream, at, since).map(|s| s.kind)
    }

    fn settled_at_since(&self, upstream: &JobName, at: i64, since: u64) -> Option<&Settled> {
        let specs = &self.facts.get(upstream)?.specs;
        let kept = self.chains.settled.get(upstream)?;
        kept.newest_holding(at, since, specs)
    }

    /// Whether the downstream `job` may have forgotten the fate of `upstream`'s due time
    /// `at`: it keeps the last `MAX_HEARD` ranges, each one entry or more of its
    /// upstreams, so at least that many entries were heard after the one that settled it
    /// (or, if none did, since it waits for them).
    fn may_have_forgotten(&self, job: &JobName, upstream: &JobName, at: i64) -> bool {
        let since = self.chains.since.get(job).map_or(0, |s| s.1);
        let from = self
            .settled_at_since(upstream, at, since)
            .map_or(since, |s| s.nth + 1);
        let after = self
            .facts
            .get(job)
            .map(|f| f.after.as_slice())
            .unwrap_or_default();
        let heard: usize = after
            .iter()
            .filter_map(|u| self.chains.settled.get(u))
            .map(|kept| kept.count_since(from))
            .sum();
        heard >= MAX_HEARD
    }
}

impl Checker {
    /// Y1 for one journal record (after the rest of the checker has seen it).
    pub(super) fn chain_record(&mut self, idx: usize, rec: &Record) {
        if self.chains.upstreams.is_empty() {
            return;
        }
        match &rec.entry {
            Entry::Ledger(e) => {
                if self.chains.upstreams.contains(&rec.job) {
                    let (from, to) = (e.from.as_millis(), e.to.as_millis());
                    let runs_of = match self.facts.get(&rec.job) {
                        Some(f) if e.count > 1 => runs_of(&f.specs, from, to, e.count),
                        _ => Vec::new(),
                    };
                    let kept = Settled {
                        nth: self.chains.kept,
                        from,
                        to,
                        count: e.count,
                        kind: e.kind,
                        runs_of,
                    };
                    self.chains
                        .settled
                        .entry(rec.job.clone())
                        .or_default()
                        .push(kept);
                    self.chains.kept += 1;
                }
                self.upstream_skip(rec, e);
            }
            Entry::History(History::UpstreamNotOk { upstream, fate }) => {
                let waits = self
                    .facts
                    .get(&rec.job)
                    .is_some_and(|f| f.after.contains(upstream));
                if !waits || *fate == UpstreamFate::Ok {
                    let detail = format!(
                        "told `{upstream}` did not settle ok ({fate}), but it waits for {:?}",
                        self.facts.get(&rec.job).map(|f| &f.after)
                    );
                    self.violation(Invariant::Y1, &rec.job, detail);
                }
                self.chains
                    .told
                    .insert(rec.job.clone(), (upstream.clone(), *fate));
            }
            // A downstream's registration waits for its upstreams from its first
            // definition (a new job's confirmation) on: what they settled before, it never
            // heard (its record, and with it what it heard, is new).
            Entry::History(History::Defined { .. }) => {
                let kept = self.chains.kept;
                let waits = self
                    .facts
                    .get(&rec.job)
                    .is_some_and(|f| !f.after.is_empty());
                let known = self.chains.since.get(&rec.job).is_some_and(|s| s.0 == idx);
                if waits && !known {
                    self.chains.since.insert(rec.job.clone(), (idx, kept));
                }
            }
            Entry::History(History::Started {
                run,
                covers: Some(c),
                ..
            }) => self.started_after(idx, rec, *run, c),
            Entry::History(_) => {}
        }
    }

    /// Y1 for a start of a job that waits for others: each upstream settled each of the
    /// start's due times `ok` before it.
    fn started_after(
        &mut self,
        idx: usize,
        rec: &Record,
        run: duetime::RunId,
        c: &duetime::Covers,
    ) {
        let Some(after) = self
            .facts
            .get(&rec.job)
            .map(|f| f.after.clone())
            .filter(|a| !a.is_empty())
        else {
            return;
        };
        let (from, to) = (c.from.as_millis(), c.to.as_millis());
        let due: Vec<i64> = if c.count == 1 {
            vec![from]
        } else {
            // A batch covers due times of the job's current schedule (the upstreams').
            let t = &self.tracks[idx];
            let spec = t
                .epochs
                .last()
                .and_then(|e| self.facts.get(&t.name)?.specs.get(&e.text));
            match spec {
                Some(spec) => spec.due_in(from - 1, to).iter().map(|d| d.at).collect(),
                None => return,
            }
        };
        for upstream in &after {
            let wrong = due
                .iter()
                .find_map(|&at| match self.entry_at(upstream, at) {
                    Some(kind) if UpstreamFate::of(kind) == UpstreamFate::Ok => None,
                    other => Some((at, other)),
                });
            if let Some((at, entry)) = wrong {
                let detail = format!(
                    "{run} started covering {} ({} due times) though upstream `{upstream}` settled {} {}",
                    ts(from),
                    c.count,
                    ts(at),
                    entry.map_or("not at all".to_string(), |k| format!("so: {k}")),
                );
                self.violation(Invariant::Y1, &rec.job, detail);
                return;
            }
        }
        self.probe(Probe::DownstreamStartedAfterItsUpstreamsSettledOk);
    }

    /// Y1 for a skip with cause `upstream`: right after the line naming the upstream, for
    /// the fate the upstream's own ledger (or its absence) gives that due time.
    fn upstream_skip(&mut self, rec: &Record, e: &LedgerEntry) {
        let told = self.chains.told.remove(&rec.job);
        let LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::Skipped,
        } = e.kind
        else {
            return;
        };
        let Some((upstream, fate)) = told else {
            let detail = format!(
                "skipped {} for an upstream, with no line naming it",
                ts(e.from.as_millis())
            );
            self.violation(Invariant::Y1, &rec.job, detail);
            return;
        };
        let at = e.from.as_millis();
        let entry = self.entry_at(&upstream, at);
        let agrees = match fate {
            UpstreamFate::Ok => false,
            UpstreamFate::Gone => self.registration(upstream.as_str()).is_none(),
            // No entry for it since this registration of the downstream waits (one settled
            // before it was defined, or while it was removed, it never heard).
            UpstreamFate::Unheard => {
                let since = self.chains.since.get(&rec.job).map_or(0, |s| s.1);
                self.entry_at_since(&upstream, at, since).is_none()
            }
            UpstreamFate::Forgotten => self.may_have_forgotten(&rec.job, &upstream, at),
            // (Its schedule is not the downstream's: the views and S1 hold the schedules.)
            UpstreamFate::NotDue => true,
            told => entry.is_some_and(|k| UpstreamFate::of(k) == told),
        };
        if e.count != 1 || !agrees {
            let detail = format!(
                "skipped {} ×{} for upstream `{upstream}` ({fate}), but its ledger has {}",
                ts(at),
                e.count,
                entry.map_or("no entry for it".to_string(), |k| k.to_string())
            );
            self.violation(Invariant::Y1, &rec.job, detail);
            return;
        }
        self.probe(Probe::DownstreamSkippedAsItsUpstreamsLedgerSays);
    }
}
