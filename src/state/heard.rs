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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct HeardRange {
    pub(crate) upstream: JobName,
    pub(crate) from: Timestamp,
    pub(crate) to: Timestamp,
    /// How many due times `from..=to` held when heard: a range is read only while it is
    /// still a run of the downstream's schedule's due times (`step/after.rs`, `runs_of`),
    /// so a range heard under an earlier schedule of the downstream says nothing.
    pub(crate) count: u64,
    pub(crate) fate: UpstreamFate,
}

/// The ranges heard, oldest first; a later range overrides an earlier one for the due
/// times both hold (a backfill of the upstream settles a due time again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub(crate) struct Heard(Vec<HeardRange>);

impl Heard {
    /// Takes in an upstream ledger entry, merging it into the newest range of the same
    /// upstream and fate when both are runs of `schedule`'s due times (`runs`) and no due
    /// time of it lies between them: the merged range is a run of it too. (Entries of
    /// other schedules are kept as they came.)
    pub(crate) fn hear(
        &mut self,
        range: HeardRange,
        schedule: &Schedule,
        runs: impl Fn(&HeardRange) -> bool,
    ) {
        if let Some(last) = self
            .0
            .iter_mut()
            .rev()
            .find(|r| r.upstream == range.upstream)
        {
            let adjacent = last.to < range.from && schedule.next_after(last.to) == Some(range.from);
            if last.fate == range.fate && adjacent && runs(last) && runs(&range) {
                last.to = range.to;
                last.count = last.count.saturating_add(range.count);
                return;
            }
        }
        if self.0.len() >= MAX_HEARD {
            self.0.remove(0);
        }
        self.0.push(range);
    }

    /// The newest range heard of `upstream` that holds `at` and satisfies `fits` (is a run
    /// of the downstream's schedule's due times).
    pub(crate) fn range_at(
        &self,
        upstream: &JobName,
        at: Timestamp,
        fits: impl Fn(&HeardRange) -> bool,
    ) -> Option<&HeardRange> {
        self.0
            .iter()
            .rev()
            .find(|r| r.upstream == *upstream && r.from <= at && at <= r.to && fits(r))
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
