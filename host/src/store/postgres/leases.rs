//! Partition ownership on PostgreSQL (docs/scale-out.md): the daemons' heartbeats in
//! `members` (schema 4), the leases in each partition's `globals` row (`owner`, `epoch`,
//! `lease_until`), claims and releases, and the fence on every write of a held partition.
//!
//! Every time here is **the server's clock** (`clock_timestamp()`, in milliseconds since
//! the epoch), never a daemon's: two daemons whose clocks disagree still agree on whose
//! lease has ended. The decisions (whom a partition goes to, when to leave it) are
//! `duetime_loop::Ownership`'s; this file only reads and writes what it decides on, each
//! check in the statement that writes.

use duetime::{Duration, ProcessId, Timestamp};
use duetime_loop::{Lease, Member, Partition};
use postgres::IsolationLevel;

use super::{map_err, part_key, PgRows, PostgresStore};
use crate::store::{Holder, Roster, StoreError};

/// The lock of a held partition: the holder's lease checked and renewed in the statement
/// that takes the row's lock. In read committed, an `UPDATE` that waited for the lock
/// evaluates its condition again on the row as the lock's holder left it, with the clock
/// read again, so a claim that committed meanwhile (a raised epoch) is seen. No row: the
/// lease is not the holder's (`PgRows::lock_held` says whose it is).
///
/// `$1` the partition, `$2` the owner, `$3` the epoch, `$4` the lease's length in ms.
pub(super) const LOCK_HELD: &str = "
    UPDATE globals
    SET lease_until = GREATEST(lease_until,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $4)
    WHERE part = $1 AND owner = $2 AND epoch = $3
      AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    RETURNING version, json";

/// The owner's renewal of its seats' leases (`Store::renew`): each partition of `$1` whose
/// row still shows owner `$3` under its epoch in `$2` and an unended lease, renewed by `$4`
/// ms. Rows another transaction has locked are skipped (`SKIP LOCKED`), never waited for:
/// the locker is the partition's own seat, renewing it as it writes, or a claim, which the
/// epoch check would refuse anyway; and waiting on rows locked in another order than a
/// transaction over two partitions locks them could deadlock. The `UPDATE` checks again
/// what the lock found, under the lock.
const RENEW: &str = "
    WITH held AS (
        SELECT p, e FROM UNNEST($1::int[], $2::bigint[]) AS h(p, e)
    ), mine AS (
        SELECT g.part FROM globals g JOIN held ON g.part = held.p AND g.epoch = held.e
        WHERE g.owner = $3
          AND g.lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        ORDER BY g.part
        FOR UPDATE OF g SKIP LOCKED
    )
    UPDATE globals g
    SET lease_until = GREATEST(g.lease_until,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $4)
    FROM held
    WHERE g.part IN (SELECT part FROM mine) AND g.part = held.p AND g.epoch = held.e
      AND g.owner = $3
      AND g.lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    RETURNING g.part";

/// The server's clock, in milliseconds.
const NOW_MS: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// Every heartbeat, in process order.
const MEMBERS: &str = "SELECT process, alive_until, stopping FROM members ORDER BY process";

/// A `BIGINT` column that holds a process id or an epoch (never negative: ids come from a
/// sequence, epochs count up from 0), as its `u64`; a negative one is a damaged row, told
/// as `Corrupt` naming the column, never read as another number.
fn unsigned(store: &str, column: &str, v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt {
        store: store.to_string(),
        detail: format!("{column} is {v}; it is never negative"),
    })
}

fn member_of(store: &str, r: &postgres::Row) -> Result<Member, StoreError> {
    Ok(Member {
        process: ProcessId(unsigned(store, "members.process", r.get(0))?),
        alive_until: Timestamp::from_millis(r.get(1)),
        stopping: r.get(2),
    })
}

/// A process id as a `BIGINT` column holds it (ids come from a sequence, far below 2^63).
fn id_key(p: ProcessId) -> i64 {
    i64::try_from(p.0).unwrap_or(i64::MAX)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A lease as a globals row's `owner`, `epoch` and `lease_until` hold it.
fn lease_of(store: &str, r: &postgres::Row) -> Result<Lease, StoreError> {
    let (owner, epoch, until): (Option<i64>, i64, Option<i64>) = (r.get(0), r.get(1), r.get(2));
    Ok(Lease {
        owner: match owner {
            Some(o) => Some(ProcessId(unsigned(store, "globals.owner", o)?)),
            None => None,
        },
        epoch: unsigned(store, "globals.epoch", epoch)?,
        until: Timestamp::from_millis(until.unwrap_or(0)),
    })
}

impl PgRows<'_, '_> {
    /// `lock`, for a partition `holder` holds: the version, with the globals kept for the
    /// sync, and the lease renewed; `Fenced` (nothing written) when the lease is not the
    /// holder's any more.
    pub(super) fn lock_held(&mut self, holder: &Holder) -> Result<i64, StoreError> {
        let (part, owner, epoch, ttl) = (
            self.part,
            id_key(holder.owner),
            i64::try_from(holder.epoch).unwrap_or(i64::MAX),
            ms(holder.ttl),
        );
        let rows = self.query(|s| &s.lock_held, &[&part, &owner, &epoch, &ttl])?;
        if let Some(row) = rows.first() {
            self.globals = Some(row.get(1));
            return Ok(row.get(0));
        }
        let found = self
            .tx
            .query_opt(
                "SELECT owner, epoch, lease_until FROM globals WHERE part = $1",
                &[&part],
            )
            .map_err(|e| self.fail(e))?
            .map(|r| lease_of(self.store, &r))
            .ok_or_else(|| StoreError::Corrupt {
                store: self.store.to_string(),
                detail: "the globals row is missing".to_string(),
            })??;
        // `part` is this handle's own key, made from a partition's index (`part_key`), so
        // it is never negative and fits.
        let partition = Partition(u32::try_from(part).unwrap_or(u32::MAX));
        Err(StoreError::Fenced {
            store: self.store.to_string(),
            partition,
            holder: *holder,
            found,
        })
    }
}

impl PostgresStore {
    /// `NotPartitioned` on a store of one partition: ownership is for stores of several.
    fn partitioned(&self) -> Result<(), StoreError> {
        match self.count.get() > 1 {
            true => Ok(()),
            false => Err(StoreError::NotPartitioned {
                store: self.label.clone(),
            }),
        }
    }

    /// `Store::beat`: the heartbeat written, the long-gone forgotten, everything read
    /// back, in one transaction.
    pub(super) fn beat_now(
        &mut self,
        me: ProcessId,
        stopping: bool,
        ttl: Duration,
    ) -> Result<Roster, StoreError> {
        self.partitioned()?;
        let store = self.label.clone();
        let err = |e| map_err(&store, e);
        let client = &mut self.connection()?.client;
        let mut tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::ReadCommitted)
            .start()
            .map_err(err)?;
        let now: i64 = tx.query_one(NOW_MS, &[]).map_err(err)?.get(0);
        tx.execute(
            "INSERT INTO members (process, alive_until, stopping) VALUES ($1, $2, $3)
             ON CONFLICT (process) DO UPDATE
             SET alive_until = excluded.alive_until, stopping = excluded.stopping",
            &[&id_key(me), &now.saturating_add(ms(ttl)), &stopping],
        )
        .map_err(err)?;
        tx.execute("DELETE FROM members WHERE alive_until <= $1", &[&now])
            .map_err(err)?;
        let members = tx
            .query(MEMBERS, &[])
            .map_err(err)?
            .iter()
            .map(|r| member_of(&store, r))
            .collect::<Result<_, _>>()?;
        let leases = tx
            .query(
                "SELECT owner, epoch, lease_until FROM globals ORDER BY part",
                &[],
            )
            .map_err(err)?
            .iter()
            .map(|r| lease_of(&store, r))
            .collect::<Result<_, _>>()?;
        tx.commit().map_err(err)?;
        Ok(Roster {
            now: Timestamp::from_millis(now),
            leases,
            members,
        })
    }

    /// `Store::members`: the heartbeats as they stand.
    pub(super) fn read_members(&mut self) -> Result<Vec<Member>, StoreError> {
        self.partitioned()?;
        let store = self.label.clone();
        let rows = self
            .connection()?
            .client
            .query(MEMBERS, &[])
            .map_err(|e| map_err(&store, e))?;
        rows.iter().map(|r| member_of(&store, r)).collect()
    }

    /// `Store::claim`: the lease taken, the epoch raised, if it is still as `seen` and
    /// not another's live lease.
    pub(super) fn claim_now(
        &mut self,
        p: Partition,
        me: ProcessId,
        seen: u64,
        ttl: Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.partitioned()?;
        let part = part_key(self.index(p)?);
        let store = self.label.clone();
        let seen = i64::try_from(seen).unwrap_or(i64::MAX);
        let row = self
            .connection()?
            .client
            .query_opt(
                "UPDATE globals
                 SET owner = $2, epoch = epoch + 1,
                     lease_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $4
                 WHERE part = $1 AND epoch = $3
                   AND (owner IS NULL OR owner = $2 OR lease_until IS NULL
                        OR lease_until <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                 RETURNING epoch",
                &[&part, &id_key(me), &seen, &ms(ttl)],
            )
            .map_err(|e| map_err(&store, e))?;
        row.map(|r| unsigned(&store, "globals.epoch", r.get(0)))
            .transpose()
    }

    /// `Store::release`: the owner cleared, the epoch kept, if `me` still holds it.
    pub(super) fn release_now(
        &mut self,
        p: Partition,
        me: ProcessId,
        epoch: u64,
    ) -> Result<bool, StoreError> {
        self.partitioned()?;
        let part = part_key(self.index(p)?);
        let store = self.label.clone();
        let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
        let n = self
            .connection()?
            .client
            .execute(
                "UPDATE globals SET owner = NULL, lease_until = NULL
                 WHERE part = $1 AND owner = $2 AND epoch = $3
                   AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                &[&part, &id_key(me), &epoch],
            )
            .map_err(|e| map_err(&store, e))?;
        Ok(n == 1)
    }

    /// `Store::renew`: the leases of `held` that are still `me`'s renewed, in one statement.
    pub(super) fn renew_now(
        &mut self,
        me: ProcessId,
        held: &[(Partition, u64)],
        ttl: Duration,
    ) -> Result<Vec<Partition>, StoreError> {
        self.partitioned()?;
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let parts = held
            .iter()
            .map(|&(p, _)| self.index(p).map(part_key))
            .collect::<Result<Vec<i32>, _>>()?;
        let epochs: Vec<i64> = held
            .iter()
            .map(|&(_, e)| i64::try_from(e).unwrap_or(i64::MAX))
            .collect();
        let store = self.label.clone();
        let rows = self
            .connection()?
            .client
            .query(RENEW, &[&parts, &epochs, &id_key(me), &ms(ttl)])
            .map_err(|e| map_err(&store, e))?;
        Ok(rows
            .iter()
            .map(|r| Partition(r.get::<_, i32>(0).unsigned_abs()))
            .collect())
    }

    /// `Store::hold`: this handle's transactions on `p` fenced by `holder` from now on.
    pub(super) fn hold_now(&mut self, p: Partition, holder: Holder) -> Result<(), StoreError> {
        self.partitioned()?;
        let i = self.index(p)?;
        self.holders[i] = Some(holder);
        // The next connection ends a transaction left idle past the lease.
        self.conn = None;
        Ok(())
    }
}
