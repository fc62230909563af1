//! The partitioned store: a daemon's transaction on a partition is refused unless the
//! partition's lease admits it (its owner, its epoch, not ended) in the same transaction;
//! claims and releases; people's commands (unfenced, as `duetime` commands are: they hold
//! no partition); and moves of a job between two partitions in one transaction.

use crate::check::Invariant;
use duetime::{Actor, Effect, Event, JobDef, ProcessId};
use duetime_loop::{relocate_chain, Partition, Relocated};
use rand::Rng;

use super::{ts, PartsWorld};

/// A transaction refused: the daemon no longer holds the partition under that epoch.
#[derive(Debug)]
pub(super) struct Fenced;

impl PartsWorld {
    /// A daemon's transaction: `events` stepped in order on partition `p` if its lease
    /// admits `me` under `epoch` now, the lease renewed by it.
    pub(super) fn transact(
        &mut self,
        p: Partition,
        me: ProcessId,
        epoch: u64,
        events: Vec<Event>,
    ) -> Result<Vec<Effect>, Fenced> {
        let (t, ttl) = (self.t, self.cfg.ttl_ms);
        let now = self.now();
        let part = &mut self.parts[p.0 as usize];
        if !part.lease.admits(me, epoch, ts(t)) {
            let lease = part.lease;
            self.note(|| format!("{p} write of {me} under epoch {epoch} refused: {lease:?}"));
            self.probe("stale epoch write refused");
            return Err(Fenced);
        }
        let mut effects = Vec::new();
        let mut lines = Vec::new();
        for event in events {
            if self.trace.is_some() {
                lines.push(format!("{p} {event}"));
            }
            part.state.step(now, event, &mut effects);
        }
        part.lease = part
            .lease
            .renewed(ts(t), duetime::Duration::from_millis(ttl as u64));
        self.check.written(p, Some((me, epoch)), t, &effects);
        self.heed(&effects);
        for line in lines {
            self.note(|| line);
        }
        for e in &effects {
            self.note(|| format!("  {e}"));
        }
        Ok(effects)
    }

    /// A claim of `p` by `me`, which found epoch `seen`: the new epoch, or `None` when
    /// another came first.
    pub(super) fn claim(&mut self, p: Partition, me: ProcessId, seen: u64) -> Option<u64> {
        let ttl = duetime::Duration::from_millis(self.cfg.ttl_ms as u64);
        let lease = self.parts[p.0 as usize].lease;
        if lease.epoch != seen || !lease.claimable_by(me, ts(self.t)) {
            self.probe("claim lost to another");
            return None;
        }
        let claimed = lease.claimed(me, ts(self.t), ttl);
        self.parts[p.0 as usize].lease = claimed;
        self.note(|| format!("{p} claimed by {me} under epoch {}", claimed.epoch));
        self.check.claimed(p, me, claimed.epoch, self.t);
        Some(claimed.epoch)
    }

    /// A release of `p` by `me` under `epoch`: true when it was still `me`'s.
    pub(super) fn release(&mut self, p: Partition, me: ProcessId, epoch: u64) -> bool {
        let lease = self.parts[p.0 as usize].lease;
        if !lease.admits(me, epoch, ts(self.t)) {
            return false;
        }
        self.parts[p.0 as usize].lease = lease.released();
        self.note(|| format!("{p} released by {me}"));
        self.check.released(p, self.t);
        true
    }

    /// A person's command about one job, in that job's partition (a new job's: where it
    /// routes).
    pub(super) fn person(&mut self, event: Event) {
        let p = match &event {
            Event::Upsert { def, .. } => self.where_is(&def.name).unwrap_or(self.home(def)),
            Event::Resume { job, .. } => match self.where_is(job) {
                Some(p) => p,
                None => return,
            },
            _ => return,
        };
        let now = self.now();
        let mut effects = Vec::new();
        let line = self.trace.is_some().then(|| format!("{p} person: {event}"));
        self.parts[p.0 as usize]
            .state
            .step(now, event, &mut effects);
        self.check.written(p, None, self.t, &effects);
        if let Some(line) = line {
            self.note(|| line);
            for e in &effects {
                self.note(|| format!("  {e}"));
            }
        }
        self.heed(&effects);
    }

    /// People read the alerts a commit told: a job the system paused (it failed out) is
    /// resumed by someone within ten minutes, as an on-call person would.
    pub(super) fn heed(&mut self, effects: &[Effect]) {
        for e in effects {
            if let Effect::Notice(duetime::Notice::Alert(a)) = e {
                if matches!(a.kind, duetime::AlertKind::FailedOut { .. }) {
                    let after = self.rng.gen_range(30_000..600_000);
                    let job = a.job.clone();
                    self.at(self.t + after, super::Act::Resume { job });
                }
            }
        }
    }

    /// A definition people changed: applied in place when its partition stays, else its
    /// job moved there (now, or by the owner of its partition once its run has settled).
    pub(super) fn place(&mut self, def: JobDef) {
        let here = self.where_is(&def.name);
        if here.is_none() || here == Some(self.home(&def)) {
            self.pending.remove(&def.name);
            let upsert = Event::Upsert {
                def: Box::new(def),
                actor: Actor::new("ops"),
            };
            self.person(upsert);
            return;
        }
        self.pending.insert(def.name.clone(), def.clone());
        self.move_pending(&def, None);
    }

    /// Tries the pending move of `def`'s job, as a person's command (`by: None`) or by the
    /// daemon holding the job's partition under `by`'s epoch: the job and the jobs of its
    /// chain that live where it does, in one transaction, or none while a run of any of
    /// them is open (`relocate_chain`, as the host moves them).
    pub(super) fn move_pending(&mut self, def: &JobDef, by: Option<(ProcessId, u64)>) {
        let Some(from) = self.where_is(&def.name) else {
            self.pending.remove(&def.name);
            return;
        };
        let to = self.home(def);
        if from == to {
            self.pending.remove(&def.name);
            return;
        }
        if let Some((me, epoch)) = by {
            if !self.parts[from.0 as usize]
                .lease
                .admits(me, epoch, ts(self.t))
            {
                return;
            }
        }
        let chain = self.chain_in(def, from);
        let now = self.now();
        let (a, b) = two(&mut self.parts, from.0 as usize, to.0 as usize);
        let (mut from_effects, mut to_effects) = (Vec::new(), Vec::new());
        let actor = Actor::new("ops");
        let moved = relocate_chain(
            &mut a.state,
            &mut b.state,
            &chain,
            now,
            &actor,
            &mut from_effects,
            &mut to_effects,
        );
        match moved {
            Relocated::Waits { .. } => self.probe("move waits for an open run"),
            Relocated::Moved => {
                self.probe("job moved between partitions");
                if chain.len() > 1 {
                    self.probe("chain moved as one");
                }
                let names: Vec<&str> = chain.iter().map(|d| d.name.as_str()).collect();
                let line = format!("{from} -> {to}: moved {}", names.join(", "));
                self.note(|| line);
                for e in from_effects.iter().chain(&to_effects) {
                    self.note(|| format!("  {e}"));
                }
                self.check.written(from, by, self.t, &from_effects);
                self.check.written(to, None, self.t, &to_effects);
                let states: Vec<&duetime::State> = self.parts.iter().map(|p| &p.state).collect();
                for member in &chain {
                    self.pending.remove(&member.name);
                    self.check.moved(&member.name, from, to, &states);
                }
                self.check.together(&states);
            }
            Relocated::NotFound => {
                self.pending.remove(&def.name);
            }
            Relocated::Refused(refusal) => {
                self.check.violation(
                    Invariant::X1,
                    format!("moving {} refused: {refusal}", def.name),
                );
            }
        }
    }
}

/// Two distinct elements of `v`, mutably.
fn two<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &mut T) {
    assert_ne!(i, j, "two distinct partitions");
    if i < j {
        let (left, right) = v.split_at_mut(j);
        (&mut left[i], &mut right[0])
    } else {
        let (left, right) = v.split_at_mut(i);
        (&mut right[0], &mut left[j])
    }
}
