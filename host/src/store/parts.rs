//! A store's partitions as the host uses them: where a job is, where a definition goes,
//! the jobs file made the store's across partitions, and what each partition's row says.
//!
//! A job lives in exactly one partition (`duetime_loop::route`: by its concurrency key,
//! else its name). A definition whose route differs from where its job lives (its key
//! changed) would move the job; moving a record between two states needs core events not
//! written yet, so it is refused (`StoreError::WouldMove`) before anything is written.

use std::collections::{BTreeMap, BTreeSet};

use duetime::{Actor, Effect, Event, JobDef, JobName, Now, Timestamp};
use duetime_loop::{route, Partition, PartitionCount};

use super::{Store, StoreError};

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
            let refused = store.state_in(row.partition).err().map(|e| match e {
                StoreError::InPartition { error, .. } => error.to_string(),
                other => other.to_string(),
            });
            PartitionHealth { row, refused }
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

/// The partition definition `def` goes to: its route, which must be where its job lives
/// already if it does.
///
/// # Errors
///
/// `WouldMove` when the job lives in another partition than its route (its concurrency
/// key changed); the store's, reading where the job is.
pub fn place<S: Store + ?Sized>(store: &mut S, def: &JobDef) -> Result<Partition, StoreError> {
    let count = store.partitions();
    let routed = route(def, count);
    if count == PartitionCount::ONE {
        return Ok(routed);
    }
    match store.locate(def.name.as_str())? {
        Some(lives) if lives != routed => Err(StoreError::WouldMove {
            job: def.name.to_string(),
            from: lives,
            to: routed,
            key: def.concurrency_key.clone(),
        }),
        _ => Ok(routed),
    }
}

/// Makes the store's jobs `defs`: each upserted in its partition, every job of every
/// partition that `defs` lacks removed, all as `actor`. One transaction per partition
/// with anything to do and partition 0, in partition order (so one transaction in all for
/// a store of one, as before partitions).
/// Every definition is placed before anything is written, so a refused move changes
/// nothing.
///
/// # Errors
///
/// `WouldMove` (nothing written); a partition's store error (the partitions before it
/// are written, the ones after are not: the next sync finishes the work).
pub fn sync<S: Store + ?Sized>(
    store: &mut S,
    defs: &[JobDef],
    actor: &Actor,
    now: Now,
) -> Result<Vec<Effect>, StoreError> {
    let mut plan: BTreeMap<Partition, Vec<Event>> = BTreeMap::new();
    for def in defs {
        let p = place(store, def)?;
        plan.entry(p).or_default().push(Event::Upsert {
            def: Box::new(def.clone()),
            actor: actor.clone(),
        });
    }
    let in_file: BTreeSet<&str> = defs.iter().map(|d| d.name.as_str()).collect();
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
    let mut out = Vec::new();
    // Partition 0 always, so a store of one runs its one transaction as it always has.
    plan.entry(Partition::FIRST).or_default();
    for (p, events) in plan
        .into_iter()
        .filter(|(p, e)| !e.is_empty() || *p == Partition::FIRST)
    {
        out.extend(store.transact_in(p, &mut |state, effects| {
            for e in events.iter().cloned() {
                state.step(now, e, effects);
            }
            Ok(())
        })?);
    }
    Ok(out)
}
