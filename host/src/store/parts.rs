//! A store's partitions as the host uses them: where a job is, where a definition goes,
//! the jobs file made the store's across partitions, and what each partition's row says.
//!
//! A job lives in exactly one partition (`duetime_loop::route`: by its concurrency key,
//! else its name). A definition whose route differs from where its job lives (its key
//! changed) moves the job (`place`): `duetime_loop::relocate` in one transaction over both
//! partitions (`Store::transact_pair`), the whole record going along. A job with a run
//! open waits for the run (run ids and fences are counters of the state that made them):
//! its new definition is kept in the store as a pending move, and carried out once the
//! run has settled (`carry_out_pending`), the daemon holding the partition asking after
//! its turns.

mod moves;

use std::collections::{BTreeMap, BTreeSet};

use duetime::{Actor, Effect, Event, JobDef, JobName, Now, Timestamp};
use duetime_loop::{Partition, PartitionCount};

use super::{Store, StoreError};

pub use moves::{
    carry_out_pending, pending, place, Carried, Pending, PendingMove, Placed, Placement,
};

/// One partition's row (`duetime status`, `/metrics`): read from the store, not from a
/// state, so a partition whose state cannot be loaded is still listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRow {
    pub partition: Partition,
    /// How many transactions have committed on it.
    pub version: i64,
    /// Its live jobs.
    pub jobs: u64,
    /// The daemon that owns it, its epoch and how long its lease lasts: columns ready for
    /// partition ownership (issue 43), unset until a daemon takes a partition.
    pub owner: Option<i64>,
    pub epoch: i64,
    pub lease_until: Option<Timestamp>,
}

/// A partition's row and whether its state can be read (`duetime status`, `/metrics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionHealth {
    pub row: PartitionRow,
    /// Why its state is refused (it does not parse, or the core refuses it); `None` when
    /// it loads. The other partitions are served either way.
    pub refused: Option<String>,
    /// The oldest due time its jobs wait on (`State::oldest_waiting`): how far it is
    /// behind, a partition nobody steps showing by this falling back. `None` when no job
    /// waits on one, or its state is refused.
    pub oldest_waiting: Option<Timestamp>,
}

impl PartitionHealth {
    /// How far it is behind `now`: the age of the oldest due time its jobs wait on, zero
    /// when none is past (or its state is refused).
    pub fn lag(&self, now: Timestamp) -> duetime::Duration {
        let behind = self
            .oldest_waiting
            .map_or(0, |t| now.as_millis().saturating_sub(t.as_millis()));
        duetime::Duration::from_millis(u64::try_from(behind).unwrap_or(0))
    }
}

/// Every partition's row, each with whether its state loads.
///
/// # Errors
///
/// The store's, reading the rows (not a partition's refusal: that is in its health).
pub fn health<S: Store + ?Sized>(store: &mut S) -> Result<Vec<PartitionHealth>, StoreError> {
    let rows = store.partition_rows()?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let (refused, oldest_waiting) = match store.state_in(row.partition) {
                Ok(state) => (None, state.oldest_waiting()),
                Err(StoreError::InPartition { error, .. }) => (Some(error.to_string()), None),
                Err(other) => (Some(other.to_string()), None),
            };
            PartitionHealth {
                row,
                refused,
                oldest_waiting,
            }
        })
        .collect())
}

/// The partition a command about job `job` goes to: where it lives, or partition 0 when
/// no job has that name (the core there answers `not_found`, as in a store of one).
///
/// # Errors
///
/// The store's, reading where the job is.
pub fn partition_of<S: Store + ?Sized>(store: &mut S, job: &str) -> Result<Partition, StoreError> {
    if store.partitions() == PartitionCount::ONE {
        return Ok(Partition::FIRST);
    }
    Ok(store.locate(job)?.unwrap_or(Partition::FIRST))
}

/// Every job of `defs` that runs after one routed to another partition, one line each.
/// The core knows an upstream only in the downstream's own partition, so such a chain
/// would be refused (or, an upstream moved away later, its due times skipped as `gone`);
/// until routing follows `after` (docs/scale-out.md), the file must route a chain to one
/// partition itself, by one `concurrency_key`. Nothing on a store of one partition.
pub fn split_chains(defs: &[JobDef], count: PartitionCount) -> Vec<String> {
    if count == PartitionCount::ONE {
        return Vec::new();
    }
    let by_name: BTreeMap<&str, &JobDef> = defs.iter().map(|d| (d.name.as_str(), d)).collect();
    let by = |d: &JobDef| match &d.concurrency_key {
        Some(k) => format!("by its concurrency_key {k:?}"),
        None => "by its name".to_string(),
    };
    let mut lines = Vec::new();
    for def in defs {
        let home = duetime_loop::route(def, count);
        for up in def.after.iter().filter_map(|u| by_name.get(u.as_str())) {
            let there = duetime_loop::route(up, count);
            if there != home {
                lines.push(format!(
                    "job {:?} runs after {:?}, but they live in different partitions \
                     ({} {}, {} {}); a job and the jobs it runs after must share one: give \
                     them one concurrency_key",
                    def.name.as_str(),
                    up.name.as_str(),
                    home,
                    by(def),
                    there,
                    by(up)
                ));
            }
        }
    }
    lines
}

/// What `sync_placed` did: the effects of every transaction (the moves' and each
/// partition's), and each definition that moved its job or waits to.
#[derive(Debug, Default)]
pub struct Synced {
    pub effects: Vec<Effect>,
    /// `Placement::Moved` and `Placement::Pending` only, in the file's order.
    pub moves: Vec<Placement>,
}

/// Makes the store's jobs `defs`: each upserted in its partition, every job of every
/// partition that `defs` lacks removed, all as `actor`. One transaction per partition
/// with anything to do and partition 0, in partition order (so one transaction in all for
/// a store of one, as before partitions), after the moves.
///
/// # Errors
///
/// As `sync_placed`.
pub fn sync<S: Store + ?Sized>(
    store: &mut S,
    defs: &[JobDef],
    actor: &Actor,
    now: Now,
) -> Result<Vec<Effect>, StoreError> {
    sync_placed(store, defs, actor, now).map(|s| s.effects)
}

/// `sync`, saying which jobs moved and which wait for a run to move (each also logged).
/// A job whose concurrency key moves it goes first, in a transaction of its own over
/// both partitions; one that waits keeps its old definition in force (a new key would
/// count its runs in a lane of the wrong partition) until `carry_out_pending`. A pending
/// move of a job the file no longer has is forgotten.
///
/// # Errors
///
/// `Aborted`, writing nothing, when a job and one it runs after would live in different
/// partitions (`split_chains`); `MoveRefused` (that job's move wrote nothing; the moves
/// before it are written); a partition's store error (the partitions before it are
/// written, the ones after are not: the next sync finishes the work).
pub fn sync_placed<S: Store + ?Sized>(
    store: &mut S,
    defs: &[JobDef],
    actor: &Actor,
    now: Now,
) -> Result<Synced, StoreError> {
    let split = split_chains(defs, store.partitions());
    if !split.is_empty() {
        return Err(StoreError::Aborted {
            reason: split.join("\n"),
        });
    }
    let mut synced = Synced::default();
    let waiting = moves::waiting(store)?;
    let mut plan: BTreeMap<Partition, Vec<Event>> = BTreeMap::new();
    // Upstreams first, in every partition's transaction: the core refuses a downstream
    // whose upstream it does not know yet.
    for def in crate::jobs_file::upsert_order(defs)
        .into_iter()
        .map(|i| &defs[i])
    {
        let placed = moves::place_known(store, def, actor, now, &waiting)?;
        synced.effects.extend(placed.effects);
        match placed.placement {
            Placement::Here { partition, .. } => {
                plan.entry(partition).or_default().push(Event::Upsert {
                    def: Box::new(def.clone()),
                    actor: actor.clone(),
                })
            }
            moved => synced.moves.push(moved),
        }
    }
    for m in &synced.moves {
        tracing::info!(job = %m.job(), "{m}");
    }
    let in_file: BTreeSet<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    for gone in waiting.iter().filter(|n| !in_file.contains(n.as_str())) {
        store.clear_pending_move(gone.as_str())?;
    }
    for p in store.partitions().iter() {
        let gone: Vec<JobName> = store
            .state_in(p)?
            .records()
            .map(|(_, r)| r.def().name.clone())
            .filter(|name| !in_file.contains(name.as_str()))
            .collect();
        let events = plan.entry(p).or_default();
        events.extend(gone.into_iter().map(|job| Event::Remove {
            job,
            actor: actor.clone(),
        }));
    }
    // Partition 0 always, so a store of one runs its one transaction as it always has.
    plan.entry(Partition::FIRST).or_default();
    for (p, events) in plan
        .into_iter()
        .filter(|(p, e)| !e.is_empty() || *p == Partition::FIRST)
    {
        synced
            .effects
            .extend(store.transact_in(p, &mut |state, effects| {
                for e in events.iter().cloned() {
                    state.step(now, e, effects);
                }
                Ok(())
            })?);
    }
    Ok(synced)
}
