//! A store's partitions as the host uses them: where a job is, where a definition goes,
//! the jobs file made the store's across partitions, and what each partition's row says.
//!
//! A job lives in exactly one partition (`duetime_loop::route`: by its concurrency key,
//! else its name; a job joined to others by `after`, with its chain: `duetime_loop::Chains`). A definition whose route differs from where its job lives (its key
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

/// Where each of `defs` goes: with its chain (`duetime_loop::Chains`: the jobs joined by
/// `after` either way), where the chain's anchor routes by `duetime_loop::route`.
pub fn routes(defs: &[JobDef], count: PartitionCount) -> Vec<Partition> {
    duetime_loop::chain_routes(defs, count)
}

/// A job's definition as the store would have it (a pending move's, else the one in
/// force; the one being placed for its own job), and the partition it lives in now
/// (`None`: it is new).
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub(crate) def: JobDef,
    pub(crate) lives: Option<Partition>,
}

/// The definitions `def`'s chain is made of, as the store knows them: every job of the
/// partition `def`'s job lives in and of those its upstreams live in (a chain lives in
/// one partition, so these hold all of it, and the chains it joins), each pending move's
/// definition in place of the one in force, and `def` in place of its job's (first).
/// Reads one state per partition met, and the pending moves.
///
/// # Errors
///
/// The store's.
pub(crate) fn chain_view<S: Store + ?Sized>(
    store: &mut S,
    def: &JobDef,
) -> Result<Vec<Known>, StoreError> {
    let mut lives: BTreeMap<JobName, Option<Partition>> = BTreeMap::new();
    let mut read: BTreeSet<Partition> = BTreeSet::new();
    for name in std::iter::once(&def.name).chain(&def.after) {
        if let Some(p) = store.locate(name.as_str())? {
            read.insert(p);
        }
    }
    let mut defs: BTreeMap<JobName, JobDef> = BTreeMap::new();
    for p in read {
        for (_, r) in store.state_in(p)?.records() {
            lives.insert(r.def().name.clone(), Some(p));
            defs.insert(r.def().name.clone(), r.def().clone());
        }
    }
    for pending in store.pending_moves()? {
        let name = pending.def.name.clone();
        if !lives.contains_key(&name) {
            let p = store.locate(name.as_str())?;
            lives.insert(name.clone(), p);
        }
        defs.insert(name, pending.def);
    }
    defs.remove(&def.name);
    let own = Known {
        def: def.clone(),
        lives: lives.get(&def.name).copied().flatten(),
    };
    let others = defs.into_values().map(|d| Known {
        lives: lives.get(&d.name).copied().flatten(),
        def: d,
    });
    Ok(std::iter::once(own).chain(others).collect())
}

/// Where `def` goes, its chain looked up in the store (`chain_view`).
///
/// # Errors
///
/// The store's.
pub fn route_in_store<S: Store + ?Sized>(
    store: &mut S,
    def: &JobDef,
) -> Result<Partition, StoreError> {
    let count = store.partitions();
    if count == PartitionCount::ONE {
        return Ok(Partition::FIRST);
    }
    let view = chain_view(store, def)?;
    let defs: Vec<JobDef> = view.into_iter().map(|k| k.def).collect();
    Ok(duetime_loop::chain_routes(&defs, count)[0])
}

/// Every job of `defs` whose own lane would leave its partition, one line each: a job
/// with a `concurrency_key` that lives with its chain elsewhere than the key routes. Every
/// job of one lane must be in one state (its cap and its queue are decided in one step);
/// every job of a chain lives in one state too. Nothing on a store of one partition.
pub fn split_lanes(defs: &[JobDef], routes: &[Partition], count: PartitionCount) -> Vec<String> {
    if count == PartitionCount::ONE {
        return Vec::new();
    }
    let chains = duetime_loop::Chains::new(defs);
    let mut lines = Vec::new();
    for (i, (def, &home)) in defs.iter().zip(routes).enumerate() {
        let Some(key) = def.concurrency_key.as_deref() else {
            continue;
        };
        let lane = duetime_loop::route_of(Some(key), def.name.as_str(), count);
        if lane != home {
            let anchor = defs[chains.anchor(i)].name.as_str();
            lines.push(format!(
                "job {:?} is in a chain (jobs joined by after) that lives in partition \
                 {home}, where its first root {anchor:?} routes, but its concurrency_key \
                 {key:?} puts its lane in {lane}: a lane lives in one partition, and so does \
                 a chain; accepted: no concurrency_key on the other jobs of a chain, or the \
                 key of its first root",
                def.name.as_str(),
            ));
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
/// `Aborted`, writing nothing, when a job's lane would leave its chain's partition
/// (`split_lanes`); `MoveRefused` (that job's move wrote nothing; the moves
/// before it are written); a partition's store error (the partitions before it are
/// written, the ones after are not: the next sync finishes the work).
pub fn sync_placed<S: Store + ?Sized>(
    store: &mut S,
    defs: &[JobDef],
    actor: &Actor,
    now: Now,
) -> Result<Synced, StoreError> {
    let routes = routes(defs, store.partitions());
    let split = split_lanes(defs, &routes, store.partitions());
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
    for i in duetime_loop::upsert_order(defs) {
        let def = &defs[i];
        let placed = moves::place_known(store, def, routes[i], actor, now, &waiting)?;
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
