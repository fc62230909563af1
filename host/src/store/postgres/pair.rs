//! What moving a job between partitions needs of the PostgreSQL store: one transaction
//! over two partitions (`Store::transact_pair`), and the pending moves of jobs whose run
//! was open when their definition came to route them elsewhere (`pending_moves`, schema
//! version 3).
//!
//! The pair's globals rows are locked in partition order, whichever partition the job
//! leaves: every transaction that holds two rows takes the lower first, so two moves the
//! other way round queue behind each other instead of each holding the row the other
//! waits for. A transaction on one partition holds one row, so it never closes a cycle.

use duetime::{Actor, Effect, JobDef, JobSeq, Timestamp};
use postgres::IsolationLevel;

use duetime_loop::Partition;

use super::{
    is_broken, live, map_err, part_key, Connection, Failure, Isolation, PgRows, PostgresStore,
    Unknown, Unsure,
};
use crate::store::cache::{Cache, Rows};
use crate::store::{NoPairWhy, PairBody, PendingMove, StoreError};

/// What a committed transaction over two partitions gives back: `a`'s effects and `b`'s.
type Pair = (Vec<Effect>, Vec<Effect>);

impl PostgresStore {
    /// `transact_pair`: both partitions checked, then attempts until one commits.
    pub(super) fn pair(
        &mut self,
        a: Partition,
        b: Partition,
        body: &mut PairBody<'_>,
    ) -> Result<Pair, StoreError> {
        let (i, j) = (self.index(a)?, self.index(b)?);
        if i == j {
            return Err(StoreError::NoPair {
                store: self.label.clone(),
                a,
                b,
                why: NoPairWhy::Same,
            });
        }
        self.retrying(&mut |s| s.attempt_pair(i, j, body))
    }

    /// One attempt at a transaction over the partitions of indexes `a` and `b` (distinct).
    fn attempt_pair(
        &mut self,
        a: usize,
        b: usize,
        body: &mut PairBody<'_>,
    ) -> Result<Pair, Failure<Pair>> {
        let isolation = self.options.isolation;
        let handle = self.handle;
        let several = self.count.get() > 1;
        self.connection().map_err(Failure::Before)?;
        let store = self.label.clone();
        let Connection {
            client, statements, ..
        } = live(&mut self.conn);
        let level = match isolation {
            Isolation::LockRow => IsolationLevel::ReadCommitted,
            Isolation::Serializable => IsolationLevel::Serializable,
        };
        let mut tx = client
            .build_transaction()
            .isolation_level(level)
            .start()
            .map_err(|e| Failure::classify(&store, e))?;
        let (ca, cb) = two_mut(&mut self.caches, a, b);
        let mut rows = PgRows::new(&mut tx, statements, &store, handle, 0);
        let (va, vb) = if a < b {
            let va = ready(&mut rows, a, ca, isolation, several)?;
            (va, ready(&mut rows, b, cb, isolation, several)?)
        } else {
            let vb = ready(&mut rows, b, cb, isolation, several)?;
            (ready(&mut rows, a, ca, isolation, several)?, vb)
        };
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let result = body(&mut ca.state, &mut cb.state, &mut ea, &mut eb);
        let (ta, tb) = (ca.state.take_touched(), cb.state.take_touched());
        let (na, nb) = (va + 1, vb + 1);
        // `a` first: the job leaving `a` gives up its name (a tombstone) before `b`'s
        // row takes it, as the unique index on names asks.
        let written = result.and_then(|()| {
            rows.part = part_key(a);
            ca.write(&mut rows, na, &ta, &ea)?;
            rows.part = part_key(b);
            cb.write(&mut rows, nb, &tb, &eb)
        });
        if let Err(e) = written {
            let failure = rows.failed(e);
            ca.forget(&ta);
            cb.forget(&tb);
            return Err(failure);
        }
        let sides = [(a, ca, na, ta), (b, cb, nb, tb)];
        commit_pair(tx, &store, sides, (ea, eb))
    }

    /// Every pending move, oldest first.
    pub(super) fn read_pending(&mut self) -> Result<Vec<PendingMove>, StoreError> {
        let store = self.label.clone();
        let rows = self
            .connection()?
            .client
            .query(
                "SELECT job, def, actor, asked_at FROM pending_moves ORDER BY asked_at, job",
                &[],
            )
            .map_err(|e| map_err(&store, e))?;
        rows.iter()
            .map(|r| {
                let job: String = r.get(0);
                let def: JobDef =
                    serde_json::from_str(r.get(1)).map_err(|e| StoreError::Corrupt {
                        store: store.clone(),
                        detail: format!("the pending move of {job}: {e}"),
                    })?;
                if def.name.as_str() != job {
                    return Err(StoreError::Corrupt {
                        store: store.clone(),
                        detail: format!(
                            "the pending move of {job} holds the definition of {}",
                            def.name
                        ),
                    });
                }
                Ok(PendingMove {
                    def,
                    actor: Actor::new(r.get(2)),
                    asked_at: Timestamp::from_millis(r.get(3)),
                })
            })
            .collect()
    }

    /// Keeps `pending`, replacing its job's earlier one.
    pub(super) fn write_pending(&mut self, pending: &PendingMove) -> Result<(), StoreError> {
        let store = self.label.clone();
        let def = serde_json::to_string(&pending.def).map_err(|e| StoreError::Database {
            store: store.clone(),
            detail: format!("cannot serialize: {e}"),
        })?;
        self.connection()?
            .client
            .execute(
                "INSERT INTO pending_moves (job, def, actor, asked_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (job) DO UPDATE
                 SET def = excluded.def, actor = excluded.actor, asked_at = excluded.asked_at",
                &[
                    &pending.def.name.as_str(),
                    &def,
                    &pending.actor.0,
                    &pending.asked_at.as_millis(),
                ],
            )
            .map(|_| ())
            .map_err(|e| map_err(&store, e))
    }

    /// Forgets `job`'s pending move; whether there was one.
    pub(super) fn delete_pending(&mut self, job: &str) -> Result<bool, StoreError> {
        let store = self.label.clone();
        self.connection()?
            .client
            .execute("DELETE FROM pending_moves WHERE job = $1", &[&job])
            .map(|n| n > 0)
            .map_err(|e| map_err(&store, e))
    }
}

/// Locks (or, serializable, reads) partition `i`'s row and brings its cache up to date;
/// the version read. An error names the partition in a store of `several`.
fn ready<T>(
    rows: &mut PgRows<'_, '_>,
    i: usize,
    cache: &mut Cache,
    isolation: Isolation,
    several: bool,
) -> Result<i64, Failure<T>> {
    rows.part = part_key(i);
    rows.globals = None;
    let read = match isolation {
        Isolation::LockRow => rows.lock(),
        Isolation::Serializable => rows.version(),
    };
    match read.and_then(|v| cache.sync(rows, v).map(|()| v)) {
        Ok(v) => Ok(v),
        Err(error) if several => Err(rows.failed(StoreError::InPartition {
            partition: Partition(u32::try_from(i).unwrap_or(u32::MAX)),
            error: Box::new(error),
        })),
        Err(error) => Err(rows.failed(error)),
    }
}

/// Commits a pair's transaction: each side's cache (`(index, cache, next version,
/// touched jobs)`) advanced, or put back when the server refused the commit, or left to
/// `settle_unknown` when no answer came.
fn commit_pair(
    tx: postgres::Transaction<'_>,
    store: &str,
    sides: [(usize, &mut Cache, i64, Vec<JobSeq>); 2],
    effects: Pair,
) -> Result<Pair, Failure<Pair>> {
    match tx.commit() {
        Ok(()) => {
            for (_, cache, next, _) in sides {
                cache.committed(next);
            }
            Ok(effects)
        }
        Err(e) if !is_broken(&e) => {
            for (_, cache, _, touched) in sides {
                cache.forget(&touched);
            }
            Err(Failure::classify(store, e))
        }
        Err(e) => Err(Failure::Unknown(Unknown {
            detail: e.to_string(),
            parts: sides
                .into_iter()
                .map(|(part, _, next, touched)| Unsure {
                    part,
                    next,
                    touched,
                })
                .collect(),
            effects,
        })),
    }
}

/// Two distinct elements of `v`, mutably, in the order asked.
fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (low, high) = v.split_at_mut(b);
        (&mut low[a], &mut high[0])
    } else {
        let (low, high) = v.split_at_mut(a);
        (&mut high[0], &mut low[b])
    }
}
