//! `Metered`: a store whose transactions are timed and whose failures are counted, by
//! kind, into this process's `Telemetry` (the daemon's store; `GET /metrics` shows them).
//! Everything else is passed through.

use std::time::Instant;

use duetime::{Effect, Record, State, Timestamp};

use duetime_loop::{Partition, PartitionCount};

use super::{Body, DaemonInfo, Loads, PairBody, PartitionRow, PendingMove, Store, StoreError};
use crate::telemetry::Telemetry;

pub struct Metered<S> {
    inner: S,
    telemetry: Telemetry,
}

impl<S: Store> Metered<S> {
    pub fn new(inner: S, telemetry: Telemetry) -> Metered<S> {
        Metered { inner, telemetry }
    }

    /// One transaction of the inner store, timed and its failure counted by kind.
    fn timed<T>(
        &mut self,
        run: impl FnOnce(&mut S) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let start = Instant::now();
        let result = run(&mut self.inner);
        let failure = result.as_ref().err().map(|e| e.kind().name());
        self.telemetry.transaction(start.elapsed(), failure);
        result
    }
}

impl<S: Store> Store for Metered<S> {
    fn partitions(&self) -> PartitionCount {
        self.inner.partitions()
    }
    fn transact_in(
        &mut self,
        p: Partition,
        body: &mut Body<'_>,
    ) -> Result<Vec<Effect>, StoreError> {
        self.timed(|inner| inner.transact_in(p, body))
    }
    fn transact_pair(
        &mut self,
        a: Partition,
        b: Partition,
        body: &mut PairBody<'_>,
    ) -> Result<(Vec<Effect>, Vec<Effect>), StoreError> {
        self.timed(|inner| inner.transact_pair(a, b, body))
    }
    fn pending_moves(&mut self) -> Result<Vec<PendingMove>, StoreError> {
        self.inner.pending_moves()
    }
    fn set_pending_move(&mut self, pending: &PendingMove) -> Result<(), StoreError> {
        self.inner.set_pending_move(pending)
    }
    fn clear_pending_move(&mut self, job: &str) -> Result<bool, StoreError> {
        self.inner.clear_pending_move(job)
    }
    fn next_process_id(&mut self) -> Result<duetime::ProcessId, StoreError> {
        self.inner.next_process_id()
    }
    fn state_in(&mut self, p: Partition) -> Result<&State, StoreError> {
        self.inner.state_in(p)
    }
    fn held_state_in(&self, p: Partition) -> Result<&State, StoreError> {
        self.inner.held_state_in(p)
    }
    fn locate(&mut self, job: &str) -> Result<Option<Partition>, StoreError> {
        self.inner.locate(job)
    }
    fn partition_rows(&mut self) -> Result<Vec<PartitionRow>, StoreError> {
        self.inner.partition_rows()
    }
    fn journal_for(&mut self, job: &str, since: Timestamp) -> Result<Vec<Record>, StoreError> {
        self.inner.journal_for(job, since)
    }
    fn journal_all(&mut self) -> Result<Vec<Record>, StoreError> {
        self.inner.journal_all()
    }
    fn journal_after(
        &mut self,
        after: i64,
        kinds: &[&str],
    ) -> Result<Vec<(i64, Record)>, StoreError> {
        self.inner.journal_after(after, kinds)
    }
    fn journal_end(&mut self) -> Result<i64, StoreError> {
        self.inner.journal_end()
    }
    fn register_daemon(&mut self, info: &DaemonInfo) -> Result<(), StoreError> {
        self.inner.register_daemon(info)
    }
    fn daemons(&mut self) -> Result<Vec<DaemonInfo>, StoreError> {
        self.inner.daemons()
    }
    fn describe(&self) -> &str {
        self.inner.describe()
    }
    fn version(&mut self) -> Result<i64, StoreError> {
        self.inner.version()
    }
    fn loads(&self) -> Loads {
        self.inner.loads()
    }
    fn beat(
        &mut self,
        me: duetime::ProcessId,
        stopping: bool,
        ttl: duetime::Duration,
    ) -> Result<super::Roster, StoreError> {
        self.timed(|inner| inner.beat(me, stopping, ttl))
    }
    fn claim(
        &mut self,
        p: Partition,
        me: duetime::ProcessId,
        seen: u64,
        ttl: duetime::Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.timed(|inner| inner.claim(p, me, seen, ttl))
    }
    fn release(
        &mut self,
        p: Partition,
        me: duetime::ProcessId,
        epoch: u64,
    ) -> Result<bool, StoreError> {
        self.timed(|inner| inner.release(p, me, epoch))
    }
    fn renew(
        &mut self,
        me: duetime::ProcessId,
        held: &[(Partition, u64)],
        ttl: duetime::Duration,
    ) -> Result<Vec<Partition>, StoreError> {
        self.timed(|inner| inner.renew(me, held, ttl))
    }
    fn members(&mut self) -> Result<Vec<duetime_loop::Member>, StoreError> {
        self.inner.members()
    }
    fn hold(&mut self, p: Partition, holder: super::Holder) -> Result<(), StoreError> {
        self.inner.hold(p, holder)
    }
}
