//! X8, chains in partition worlds (docs/invariants.md), from what the store committed:
//!
//! - a chain (jobs joined by `after`) lives in one partition, at every move and at the
//!   end (it moves as one);
//! - a downstream's run starts only for due times every upstream settled `ok` before it,
//!   across every partition the chain lived in;
//! - a due time a downstream skips for an upstream carries the fate the upstream's own
//!   ledger gives it. Never `gone`, `unheard`, `not due` or `forgotten`: no upstream of
//!   these worlds is removed or changes its schedule, every chain is defined upstreams
//!   first at the start, a chain that moves whole takes what its downstreams heard along,
//!   and no downstream falls 256 changes of fate behind (a pause lasts ten minutes at
//!   most, twenty due times; `forgotten` was once given for a due time an upstream had
//!   settled a minute before, its one long `ok` range dropped first because it began
//!   hours ago: fixed, the range heard longest ago is dropped).
//!
//! The worlds' schedules are `every` with no offset, and a downstream takes its
//! upstreams' (the same period), so a ledger entry of `count` due times from `from` holds
//! the instants `from + k × period`.

use std::collections::BTreeMap;

use duetime::{
    Covers, JobDef, JobName, LedgerKind, MissAction, MissCause, Schedule, State, UpstreamFate,
};
use duetime_loop::Chains;

/// What X8 keeps.
#[derive(Default)]
pub(super) struct ChainCheck {
    /// Each downstream's upstreams.
    after: BTreeMap<JobName, Vec<JobName>>,
    /// Each chained job's period.
    period: BTreeMap<JobName, i64>,
    /// The chains of more than one job.
    chains: Vec<Vec<JobName>>,
    /// The upstream and fate a downstream was last told, until its next ledger entry.
    told: BTreeMap<JobName, (JobName, UpstreamFate)>,
    /// How many starts of downstreams were judged, and found right.
    pub(super) starts: u64,
    /// How many skips for an upstream were judged, and found right.
    pub(super) skips: u64,
}

/// A ledger entry as X8 reads it: its last due time, how many, what became of them.
pub(super) type Kept = (i64, u64, LedgerKind);

impl ChainCheck {
    /// The chains of `defs` (drawn once: these worlds never change a job's `after`).
    pub(super) fn new(defs: &BTreeMap<JobName, JobDef>) -> ChainCheck {
        let list: Vec<JobDef> = defs.values().cloned().collect();
        let chains = Chains::new(&list);
        let mut check = ChainCheck::default();
        for (i, d) in list.iter().enumerate() {
            let members = chains.members(i);
            if members.len() < 2 {
                continue;
            }
            if let Schedule::Every { period, .. } = &d.schedule {
                check
                    .period
                    .insert(d.name.clone(), period.as_millis() as i64);
            }
            if !d.after.is_empty() {
                check.after.insert(d.name.clone(), d.after.clone());
            }
            if members[0] == i {
                let names = members.iter().map(|&m| list[m].name.clone()).collect();
                check.chains.push(names);
            }
        }
        check
    }

    /// Whether the world has a chain at all.
    pub(super) fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }

    /// Each chain that is not in one partition of `states` (it must be, at every move).
    pub(super) fn apart(&self, states: &[&State]) -> Vec<String> {
        let lives =
            |n: &JobName| (0..states.len()).find(|&i| states[i].seq_of_name(n.as_str()).is_some());
        self.chains
            .iter()
            .filter_map(|chain| {
                let at: Vec<Option<usize>> = chain.iter().map(lives).collect();
                let apart = at.iter().any(|p| *p != at[0]);
                apart.then(|| format!("the chain {chain:?} lives in partitions {at:?}"))
            })
            .collect()
    }

    /// A downstream was told an upstream's due time did not settle `ok` (judged with the
    /// skip that follows it, `entry`).
    pub(super) fn told(&mut self, job: &JobName, upstream: &JobName, fate: UpstreamFate) {
        self.told.insert(job.clone(), (upstream.clone(), fate));
    }

    /// A start of `job` covering `c`: wrong unless each upstream settled each due time
    /// `ok` before it.
    pub(super) fn started(
        &mut self,
        job: &JobName,
        c: &Covers,
        ledger: &BTreeMap<JobName, BTreeMap<i64, Kept>>,
    ) -> Option<String> {
        let after = self.after.get(job)?;
        let period = *self.period.get(job)?;
        let from = c.from.as_millis();
        for k in 0..c.count as i64 {
            let at = from + k * period;
            for upstream in after {
                let kind = self.settled(ledger, upstream, at);
                if kind.map(UpstreamFate::of) != Some(UpstreamFate::Ok) {
                    return Some(format!(
                        "{job} started covering {} ×{} though upstream {upstream} settled {} {}",
                        c.from,
                        c.count,
                        duetime::Timestamp::from_millis(at),
                        kind.map_or("not at all".to_string(), |k| format!("so: {k}")),
                    ));
                }
            }
        }
        self.starts += 1;
        None
    }

    /// A ledger entry of `job` from `from`: a skip for an upstream must follow the line
    /// naming it, with the fate its ledger gives that due time.
    pub(super) fn entry(
        &mut self,
        job: &JobName,
        from: i64,
        kind: LedgerKind,
        ledger: &BTreeMap<JobName, BTreeMap<i64, Kept>>,
    ) -> Option<String> {
        let told = self.told.remove(job);
        let LedgerKind::Missed {
            cause: MissCause::Upstream,
            action: MissAction::Skipped,
        } = kind
        else {
            return None;
        };
        let at = duetime::Timestamp::from_millis(from);
        let Some((upstream, fate)) = told else {
            return Some(format!(
                "{job} skipped {at} for an upstream, with no line naming it"
            ));
        };
        let settled = self.settled(ledger, &upstream, from);
        let agrees = match fate {
            UpstreamFate::Ok
            | UpstreamFate::Gone
            | UpstreamFate::NotDue
            | UpstreamFate::Unheard
            | UpstreamFate::Forgotten => false,
            told => settled.is_some_and(|k| UpstreamFate::of(k) == told),
        };
        self.skips += u64::from(agrees);
        (!agrees).then(|| {
            format!(
                "{job} skipped {at} for upstream {upstream} ({fate}), but its ledger has {}",
                settled.map_or("no entry for it".to_string(), |k| k.to_string())
            )
        })
    }

    /// What `upstream`'s ledger says of its due time at `at`.
    fn settled(
        &self,
        ledger: &BTreeMap<JobName, BTreeMap<i64, Kept>>,
        upstream: &JobName,
        at: i64,
    ) -> Option<LedgerKind> {
        let period = *self.period.get(upstream)?;
        let (&from, &(to, _, kind)) = ledger.get(upstream)?.range(..=at).next_back()?;
        (at <= to && (at - from) % period == 0).then_some(kind)
    }
}
