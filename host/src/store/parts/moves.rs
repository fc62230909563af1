//! Moving a job to the partition its definition routes it to (issue 43, docs/scale-out.md):
//! `place` moves it at once, whole, with `duetime_loop::relocate` in one transaction over
//! both partitions, or, while a run of it is open, keeps the new definition as a pending
//! move that `carry_out_pending` carries out once the run has settled.
//!
//! The run is waited for rather than carried along: its id and fence are counters of the
//! state that made them, and the process carrying it out reports to that state. Until the
//! move the job keeps the definition in force where it lives, since a new concurrency key
//! would count its next run in a lane of the wrong partition.

use std::collections::BTreeSet;
use std::fmt;

use duetime::{Actor, Effect, JobDef, JobName, Now, RunId, Timestamp};
use duetime_loop::{relocate_chain, Chains, Partition, PartitionCount, Relocated};

use crate::store::{Store, StoreError};

/// A move that waits for its job's open run: the definition that routes the job
/// elsewhere, who asked for it and when. One per job, in the store (`pending_moves`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingMove {
    pub def: JobDef,
    pub actor: Actor,
    pub asked_at: Timestamp,
}

/// Where a definition went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Its job lives in `partition` (or is new and routes there): upsert it there. Any
    /// pending move of the job was forgotten (it was placed back where it lives).
    Here { job: JobName, partition: Partition },
    /// The job moved whole from `from` to `to` and took its new definition there, in one
    /// transaction, with the jobs of its chain that lived in `from` (`along`, upstreams
    /// first: a chain moves as one, `duetime_loop::relocate_chain`).
    Moved {
        job: JobName,
        from: Partition,
        to: Partition,
        along: Vec<JobName>,
    },
    /// A run of the job, or of a job of its chain that moves with it, is open (`run`):
    /// nothing changed, and the definition is kept as a pending move, carried out when
    /// the run has ended.
    Pending {
        job: JobName,
        from: Partition,
        to: Partition,
        run: RunId,
    },
}

impl Placement {
    /// The job placed.
    pub fn job(&self) -> &JobName {
        match self {
            Placement::Here { job, .. }
            | Placement::Moved { job, .. }
            | Placement::Pending { job, .. } => job,
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Here { job, partition } => write!(f, "{job} is in {partition}"),
            Placement::Moved {
                job,
                from,
                to,
                along,
            } => {
                write!(
                    f,
                    "{job} moved from {from} to {to} (its concurrency key or its chain puts it \
                     there), its ledger, owed due times and pause with it; its new definition \
                     applies"
                )?;
                if !along.is_empty() {
                    let names: Vec<&str> = along.iter().map(JobName::as_str).collect();
                    write!(f, "; its chain moved with it: {}", names.join(", "))?;
                }
                Ok(())
            }
            Placement::Pending { job, from, to, run } => write!(
                f,
                "{job} moves to {to} when its run {run} has ended; its new definition applies \
                 then (until then it stays in {from} under the one in force)"
            ),
        }
    }
}

/// A placement and the effects of its transaction (a move's, from both partitions, after
/// its commit; none otherwise).
#[derive(Debug)]
pub struct Placed {
    pub placement: Placement,
    pub effects: Vec<Effect>,
}

/// Where definition `def` goes, moving its job first when it lives in another partition
/// than `def` routes it to (as `actor`, at `now`).
///
/// # Errors
///
/// `MoveRefused` when a state refused the move (nothing written); the store's.
pub fn place<S: Store + ?Sized>(
    store: &mut S,
    def: &JobDef,
    actor: &Actor,
    now: Now,
) -> Result<Placed, StoreError> {
    let waiting = waiting(store)?;
    let to = super::route_in_store(store, def)?;
    place_known(store, def, to, actor, now, &waiting)
}

/// The jobs with a pending move (none in a store of one partition, without asking).
pub(super) fn waiting<S: Store + ?Sized>(store: &mut S) -> Result<BTreeSet<JobName>, StoreError> {
    if store.partitions() == PartitionCount::ONE {
        return Ok(BTreeSet::new());
    }
    Ok(store
        .pending_moves()?
        .into_iter()
        .map(|p| p.def.name)
        .collect())
}

/// `place`, the jobs with a pending move known (`sync` reads them once for a whole file)
/// and where `def` routes (`to`: `sync` knows the whole file's chains).
pub(super) fn place_known<S: Store + ?Sized>(
    store: &mut S,
    def: &JobDef,
    to: Partition,
    actor: &Actor,
    now: Now,
    waiting: &BTreeSet<JobName>,
) -> Result<Placed, StoreError> {
    let count = store.partitions();
    if count == PartitionCount::ONE {
        return Ok(here(def, to));
    }
    match store.locate(def.name.as_str())? {
        Some(from) if from != to => {
            let m = Move {
                def,
                actor,
                now,
                asked_at: now.wall,
                from,
                to,
            };
            move_job(store, &m, waiting)
        }
        _ => {
            // Placed back where it lives, or new: a move asked earlier is void.
            if waiting.contains(&def.name) {
                store.clear_pending_move(def.name.as_str())?;
            }
            Ok(here(def, to))
        }
    }
}

fn here(def: &JobDef, partition: Partition) -> Placed {
    Placed {
        placement: Placement::Here {
            job: def.name.clone(),
            partition,
        },
        effects: Vec::new(),
    }
}

/// One move asked: the job's new definition, from where to where, by whom, when.
struct Move<'a> {
    def: &'a JobDef,
    actor: &'a Actor,
    now: Now,
    /// When it was first asked (a pending move keeps its time when it waits again).
    asked_at: Timestamp,
    from: Partition,
    to: Partition,
}

/// The jobs that move with `m`'s, itself among them: its chain's jobs (as the store knows
/// it, `m.def` for its own) that live in `m.from`, upstreams first, each under the
/// definition it takes in `m.to`.
fn chain_moving<S: Store + ?Sized>(store: &mut S, m: &Move<'_>) -> Result<Vec<JobDef>, StoreError> {
    let view = super::chain_view(store, m.def)?;
    let defs: Vec<JobDef> = view.iter().map(|k| k.def.clone()).collect();
    let chains = Chains::new(&defs);
    Ok(chains
        .members(0)
        .iter()
        .filter(|&&i| i == 0 || view[i].lives == Some(m.from))
        .map(|&i| defs[i].clone())
        .collect())
}

/// Moves the job now, with the jobs of its chain that live where it does, or keeps the
/// move pending while a run of any of them is open. A move that does not happen aborts
/// its transaction, so nothing of it is written.
fn move_job<S: Store + ?Sized>(
    store: &mut S,
    m: &Move<'_>,
    waiting: &BTreeSet<JobName>,
) -> Result<Placed, StoreError> {
    let job = m.def.name.clone();
    let chain = chain_moving(store, m)?;
    // Most moves that wait are seen here, without a transaction.
    for member in &chain {
        if let Some(run) = open_run(store, m.from, member.name.as_str())? {
            return wait(store, m, run);
        }
    }
    let mut outcome = None;
    let result = store.transact_pair(m.from, m.to, &mut |a, b, ea, eb| {
        let relocated = relocate_chain(a, b, &chain, m.now, m.actor, ea, eb);
        let moved = relocated == Relocated::Moved;
        outcome = Some(relocated);
        match moved {
            true => Ok(()),
            false => Err(StoreError::Aborted {
                reason: format!("{job} did not move from {} to {}", m.from, m.to),
            }),
        }
    });
    match (result, outcome) {
        (Ok((mut effects, to_effects)), _) => {
            for member in chain.iter().filter(|d| waiting.contains(&d.name)) {
                forget_moved(store, &member.name);
            }
            effects.extend(to_effects);
            // The records went into the other state: nothing to carry out.
            effects.retain(|e| !matches!(e, Effect::Handover(_)));
            let (from, to) = (m.from, m.to);
            let along = chain
                .into_iter()
                .map(|d| d.name)
                .filter(|n| *n != job)
                .collect();
            Ok(Placed {
                placement: Placement::Moved {
                    job,
                    from,
                    to,
                    along,
                },
                effects,
            })
        }
        // A run opened since the look above.
        (Err(_), Some(Relocated::Waits { run })) => wait(store, m, run),
        // It left `from` since it was located (removed, or moved by another handle):
        // the definition goes where it routes.
        (Err(_), Some(Relocated::NotFound)) => Ok(here(m.def, m.to)),
        (Err(_), Some(Relocated::Refused(refusal))) => Err(StoreError::MoveRefused {
            job,
            from: m.from,
            to: m.to,
            refusal,
        }),
        (Err(e), _) => Err(e),
    }
}

/// After a committed move: its pending row is done. Failing to forget it loses nothing
/// (the move's effects are returned all the same): the row names a job that lives where
/// its definition routes it, which `carry_out_pending` drops.
fn forget_moved<S: Store + ?Sized>(store: &mut S, job: &JobName) {
    if let Err(e) = store.clear_pending_move(job.as_str()) {
        tracing::warn!(%job, error = %e, "moved; its pending move is forgotten later");
    }
}

/// Keeps `m` as its job's pending move, waiting for `run`.
fn wait<S: Store + ?Sized>(store: &mut S, m: &Move<'_>, run: RunId) -> Result<Placed, StoreError> {
    store.set_pending_move(&PendingMove {
        def: m.def.clone(),
        actor: m.actor.clone(),
        asked_at: m.asked_at,
    })?;
    Ok(Placed {
        placement: Placement::Pending {
            job: m.def.name.clone(),
            from: m.from,
            to: m.to,
            run,
        },
        effects: Vec::new(),
    })
}

/// The open (or parked) run of `job` in partition `p`, if it has one.
fn open_run<S: Store + ?Sized>(
    store: &mut S,
    p: Partition,
    job: &str,
) -> Result<Option<RunId>, StoreError> {
    let state = store.state_in(p)?;
    Ok(state
        .seq_of_name(job)
        .and_then(|seq| state.record(seq))
        .and_then(|r| r.run())
        .map(|run| run.id()))
}

/// What `carry_out_pending` did with one pending move it tried.
#[derive(Debug)]
pub struct Carried {
    pub job: JobName,
    /// `Moved` (its row forgotten), `Pending` (a run opened meanwhile: it waits again),
    /// `Here` (the job left the partition meanwhile: its row forgotten); or why a state
    /// refused it (`MoveRefused`: its row forgotten, the job stays as it was, so the
    /// refusal is told once rather than after every turn) or the store failed (its row
    /// kept, for the next try).
    pub outcome: Result<Placed, StoreError>,
}

/// Tries every pending move whose job lives in `partition` and has no open run (the
/// daemon holding `partition` calls it after its turns; a run's end is a report it
/// committed). Pending moves of jobs that no longer exist, or that live where their
/// definition routes them already (a move whose row was not forgotten), are dropped
/// on the way, whatever their partition.
///
/// # Errors
///
/// The store's, reading the pending moves or where their jobs are (each move's own
/// failure is in its `Carried`).
pub fn carry_out_pending<S: Store + ?Sized>(
    store: &mut S,
    partition: Partition,
    now: Now,
) -> Result<Vec<Carried>, StoreError> {
    let count = store.partitions();
    if count == PartitionCount::ONE {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let moves = store.pending_moves()?;
    let waiting: BTreeSet<JobName> = moves.iter().map(|p| p.def.name.clone()).collect();
    for pending in moves {
        let job = pending.def.name.clone();
        let to = super::route_in_store(store, &pending.def)?;
        let from = match store.locate(job.as_str())? {
            Some(from) if from != to => from,
            // Gone, or moved already: nothing left to do.
            _ => {
                store.clear_pending_move(job.as_str())?;
                continue;
            }
        };
        if from != partition || open_run(store, from, job.as_str())?.is_some() {
            continue;
        }
        let m = Move {
            def: &pending.def,
            actor: &pending.actor,
            now,
            asked_at: pending.asked_at,
            from,
            to,
        };
        let outcome = move_job(store, &m, &waiting);
        match &outcome {
            Ok(Placed {
                placement: Placement::Here { .. },
                ..
            })
            | Err(StoreError::MoveRefused { .. }) => {
                store.clear_pending_move(job.as_str())?;
            }
            _ => {}
        }
        out.push(Carried { job, outcome });
    }
    Ok(out)
}

/// A pending move as `duetime status` shows it: where its job lives now (`None`: it is
/// gone), where it goes, and the run it waits for (`None`: the run has ended, and the
/// daemon holding `from` carries the move out after its next turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub pending: PendingMove,
    pub from: Option<Partition>,
    pub to: Partition,
    pub run: Option<RunId>,
}

/// Every pending move, oldest first, with where its job is and what it waits for. A
/// partition that cannot be read shows no run rather than failing the list.
///
/// # Errors
///
/// The store's, reading the moves or where their jobs are.
pub fn pending<S: Store + ?Sized>(store: &mut S) -> Result<Vec<Pending>, StoreError> {
    let mut out = Vec::new();
    for p in store.pending_moves()? {
        let from = store.locate(p.def.name.as_str())?;
        let run = match from {
            Some(f) => open_run(store, f, p.def.name.as_str()).ok().flatten(),
            None => None,
        };
        let to = super::route_in_store(store, &p.def)?;
        out.push(Pending {
            pending: p,
            from,
            to,
            run,
        });
    }
    Ok(out)
}
