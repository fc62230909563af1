//! What a partition world checks, from what the store committed rather than from the
//! daemons' word (docs/invariants.md):
//!
//! - X1: at every move, and at the end, each job is in exactly one partition;
//! - X2: a partition whose owner died (a crash, a stall past its lease) or handed it back is
//!   stepped again, by a committed write of a new owner, within the lease's time plus two
//!   rounds, once some daemon serves (a death meanwhile starts the wait again: the
//!   assignment counts a dead daemon until its heartbeat ends);
//! - X3: a daemon's write commits only under the epoch the checker last saw claimed for
//!   that daemon, before its lease ran out (a stale epoch changes nothing);
//! - X4: a claim never takes a partition from another daemon whose lease still runs, and
//!   raises the epoch;
//! - X5: at the end, after hours without faults, each partition is held by the daemon the
//!   assignment gives it (rebalancing converged: the right thing happened, not only nothing
//!   wrong);
//! - X6: no due time of a job is settled twice, across every partition it lived in;
//! - X7: every due time of a job up to half an hour before the end is in its ledger;
//! - X8: chains (`chain_check.rs`).

use crate::check::Invariant;
use std::collections::BTreeMap;

use duetime::{Effect, Entry, History, JobDef, JobName, ProcessId, State, Timestamp};

use super::chain_check::{ChainCheck, Kept};
use duetime_loop::Partition;

use super::PartsConfig;

/// How long before the end a due time may still be outstanding (X7).
const SETTLE_MS: i64 = 30 * 60 * 1000;

pub(super) struct PartsCheck {
    pub(super) violations: Vec<String>,
    ttl_ms: i64,
    tick_ms: i64,
    /// Per partition: who holds it by the claims seen, under which epoch, until when.
    owners: Vec<Option<(ProcessId, u64, i64)>>,
    /// Per partition: the highest epoch claimed.
    epochs: Vec<u64>,
    /// Per partition: since when it has waited for an owner to step it (X2).
    orphaned: Vec<Option<i64>>,
    /// Since when some daemon has served without a break.
    serving_since: Option<i64>,
    /// Per job: its ledger entries, `from -> (to, count, kind)`, across partitions.
    ledger: BTreeMap<JobName, BTreeMap<i64, Kept>>,
    /// X8's part.
    chains: ChainCheck,
    /// Per job: the instant its schedule counts from (its first `defined` line).
    defined: BTreeMap<JobName, Timestamp>,
}

impl PartsCheck {
    pub(super) fn new(cfg: &PartsConfig, t0: i64) -> PartsCheck {
        let n = cfg.partitions.get() as usize;
        PartsCheck {
            violations: Vec::new(),
            ttl_ms: cfg.ttl_ms,
            tick_ms: cfg.tick_ms,
            owners: vec![None; n],
            epochs: vec![0; n],
            orphaned: vec![Some(t0); n],
            serving_since: None,
            ledger: BTreeMap::new(),
            chains: ChainCheck::default(),
            defined: BTreeMap::new(),
        }
    }

    /// The world's chains, once drawn (X8).
    pub(super) fn chains(&mut self, defs: &BTreeMap<JobName, JobDef>) {
        self.chains = ChainCheck::new(defs);
    }

    /// X8's counts of what it judged right: downstreams' starts, and their skips for an
    /// upstream.
    pub(super) fn chain_counts(&self) -> [(&'static str, u64); 2] {
        [
            (
                "downstream started after its upstreams settled ok",
                self.chains.starts,
            ),
            (
                "downstream skipped as its upstream's ledger says",
                self.chains.skips,
            ),
        ]
    }

    /// X8 after a move: every chain in one partition.
    pub(super) fn together(&mut self, states: &[&State]) {
        for detail in self.chains.apart(states) {
            self.violation(Invariant::X8, detail);
        }
    }

    pub(super) fn violation(&mut self, invariant: Invariant, detail: String) {
        if self.violations.len() < 20 {
            self.violations.push(format!("{invariant}: {detail}"));
        }
    }

    /// A committed write to `p`, by a daemon under its epoch or by a person (`None`).
    pub(super) fn written(
        &mut self,
        p: Partition,
        by: Option<(ProcessId, u64)>,
        t: i64,
        effects: &[Effect],
    ) {
        if let Some((me, epoch)) = by {
            let i = p.0 as usize;
            match self.owners[i] {
                Some((owner, e, until)) if owner == me && e == epoch && t < until => {}
                seen => self.violation(
                    Invariant::X3,
                    format!("{p}: a write of {me} under epoch {epoch} committed at {t}; the claims seen say {seen:?}"),
                ),
            }
            if let Some(owner) = &mut self.owners[i] {
                owner.2 = t + self.ttl_ms;
            }
            self.orphaned[i] = None;
        }
        for e in effects {
            if let Effect::Journal(r) = e {
                self.journal(r);
            }
        }
    }

    fn journal(&mut self, r: &duetime::Record) {
        match &r.entry {
            Entry::Ledger(l) => {
                let (from, to) = (l.from.as_millis(), l.to.as_millis());
                let entries = self.ledger.entry(r.job.clone()).or_default();
                let before = entries
                    .range(..=to)
                    .next_back()
                    .map(|(&f, &(t, _, _))| (f, t));
                entries.insert(from, (to, l.count, l.kind));
                if let Some((f, t)) = before.filter(|&(_, t)| t >= from) {
                    let detail = format!(
                        "{}: due times {} .. {} settled again (already in {} .. {})",
                        r.job,
                        l.from,
                        l.to,
                        Timestamp::from_millis(f),
                        Timestamp::from_millis(t)
                    );
                    self.violation(Invariant::X6, detail);
                }
                if !self.chains.is_empty() {
                    if let Some(detail) = self.chains.entry(&r.job, from, l.kind, &self.ledger) {
                        self.violation(Invariant::X8, detail);
                    }
                }
            }
            Entry::History(History::Defined { from, .. }) => {
                self.defined.entry(r.job.clone()).or_insert(*from);
            }
            Entry::History(History::UpstreamNotOk { upstream, fate }) => {
                self.chains.told(&r.job, upstream, *fate);
            }
            Entry::History(History::Started {
                covers: Some(c), ..
            }) => {
                if let Some(detail) = self.chains.started(&r.job, c, &self.ledger) {
                    self.violation(Invariant::X8, detail);
                }
            }
            Entry::History(_) => {}
        }
    }

    /// A claim committed (X4).
    pub(super) fn claimed(&mut self, p: Partition, me: ProcessId, epoch: u64, t: i64) {
        let i = p.0 as usize;
        if let Some((owner, _, until)) = self.owners[i] {
            if owner != me && t < until {
                let detail =
                    format!("{p}: {me} claimed it at {t} while {owner}'s lease ran until {until}");
                self.violation(Invariant::X4, detail);
            }
        }
        if epoch <= self.epochs[i] {
            let detail = format!(
                "{p}: claimed under epoch {epoch}, not above {}",
                self.epochs[i]
            );
            self.violation(Invariant::X4, detail);
        }
        self.epochs[i] = epoch;
        self.owners[i] = Some((me, epoch, t + self.ttl_ms));
    }

    /// A claim committed whose answer its daemon did not hear: it claims again next round
    /// (`Lease::claimable_by`), so X2's wait runs one round more from here.
    pub(super) fn claim_unheard(&mut self, p: Partition, t: i64) {
        if let Some(since) = &mut self.orphaned[p.0 as usize] {
            *since = (*since).max(t - self.ttl_ms);
        }
    }

    /// A release committed: the partition waits for its next owner (X2).
    pub(super) fn released(&mut self, p: Partition, t: i64) {
        let i = p.0 as usize;
        self.owners[i] = None;
        self.orphaned[i] = Some(t);
    }

    /// Daemon `me` died or stalled at `t`: its partitions wait for a new owner, and every
    /// partition already waiting waits from now (the assignment counts `me` until its
    /// heartbeat ends).
    pub(super) fn owner_gone(&mut self, me: ProcessId, t: i64, lease_owners: &[Option<ProcessId>]) {
        for (i, owner) in lease_owners.iter().enumerate() {
            if *owner == Some(me) || self.orphaned[i].is_some() {
                self.orphaned[i] = Some(t);
            }
        }
    }

    /// Whether some daemon serves now.
    pub(super) fn serving(&mut self, serving: bool, t: i64) {
        match (serving, self.serving_since) {
            (true, None) => {
                self.serving_since = Some(t);
                for o in self.orphaned.iter_mut().flatten() {
                    *o = (*o).max(t);
                }
            }
            (false, _) => self.serving_since = None,
            (true, Some(_)) => {}
        }
    }

    /// X2 at `t`.
    pub(super) fn overdue(&mut self, t: i64) {
        if self.serving_since.is_none() {
            return;
        }
        let bound = self.ttl_ms + 2 * self.tick_ms + 1_000;
        for i in 0..self.orphaned.len() {
            if let Some(since) = self.orphaned[i] {
                if t - since > bound {
                    let detail = format!(
                        "p{i}: not stepped by an owner from {} to {} ({} ms, bound {bound} ms)",
                        Timestamp::from_millis(since),
                        Timestamp::from_millis(t),
                        t - since
                    );
                    self.violation(Invariant::X2, detail);
                    self.orphaned[i] = None;
                }
            }
        }
    }

    /// X1 after a move of `job` from `from` to `to`.
    pub(super) fn moved(
        &mut self,
        job: &JobName,
        from: Partition,
        to: Partition,
        states: &[&State],
    ) {
        let holding: Vec<usize> = (0..states.len())
            .filter(|&i| states[i].seq_of_name(job.as_str()).is_some())
            .collect();
        if holding != [to.0 as usize] {
            let detail = format!("{job} moved from {from} to {to} is in partitions {holding:?}");
            self.violation(Invariant::X1, detail);
        }
    }

    /// X5 at the end: each partition's lease holder is the one the assignment names.
    pub(super) fn converged(
        &mut self,
        holders: &[Option<ProcessId>],
        members: &[duetime_loop::Member],
        end: i64,
    ) {
        let count = duetime_loop::PartitionCount::new(holders.len() as u64).expect("a count");
        let live = duetime_loop::live(members, Timestamp::from_millis(end));
        let target = duetime_loop::assign(count, &live);
        for (i, (held, meant)) in holders.iter().zip(&target).enumerate() {
            if held != meant {
                let detail = format!(
                    "p{i} is held by {held:?} at the end; the assignment gives it to {meant:?}"
                );
                self.violation(Invariant::X5, detail);
            }
        }
    }

    /// At the end: X1 over every job, each partition's own invariants, X7.
    pub(super) fn finish(&mut self, end: i64, states: &[&State], defs: &BTreeMap<JobName, JobDef>) {
        self.together(states);
        for (i, state) in states.iter().enumerate() {
            if let Err(broken) = state.check_invariants() {
                self.violation(Invariant::S6, format!("p{i}: {broken}"));
            }
        }
        for (name, def) in defs {
            let holding = states
                .iter()
                .filter(|s| s.seq_of_name(name.as_str()).is_some())
                .count();
            if holding != 1 {
                self.violation(
                    Invariant::X1,
                    format!("{name} is in {holding} partitions at the end"),
                );
            }
            self.accounted(name, def, Timestamp::from_millis(end - SETTLE_MS));
        }
    }

    /// X7 for one job: the ledger's entries (disjoint, X6) hold every due time up to
    /// `cutoff`.
    fn accounted(&mut self, name: &JobName, def: &JobDef, cutoff: Timestamp) {
        let Some(&from) = self.defined.get(name) else {
            self.violation(Invariant::X7, format!("{name} was never defined"));
            return;
        };
        let due = def.schedule.count_in(from, cutoff);
        let entries = self.ledger.get(name);
        let settled: u64 = entries
            .into_iter()
            .flatten()
            .filter(|(&f, _)| f <= cutoff.as_millis())
            .map(|(&f, &(t, _, _))| {
                let to = Timestamp::from_millis(t.min(cutoff.as_millis()));
                def.schedule.count_in(Timestamp::from_millis(f - 1), to)
            })
            .sum();
        if settled != due {
            let detail =
                format!("{name}: {due} due times up to {cutoff}, the ledger holds {settled}");
            self.violation(Invariant::X7, detail);
        }
    }
}
