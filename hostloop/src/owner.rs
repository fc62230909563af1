//! The round of a daemon that owns partitions: the one order of heartbeat, hand-backs of
//! seats that ended unasked, [`Ownership::round`] and the steps it asks for, shared by the
//! daemon (`host/src/daemon/partitioned.rs`, over its store and its seats' threads) and the
//! simulator's partition worlds (`sim/src/parts/daemon.rs`, over their store and their
//! incarnations). Each supplies only its I/O ([`OwnerIo`]): what a claim, a release or a
//! seat is there. What the round decides, and what it does when a store call fails, is
//! this file's: a failed heartbeat ends the round (there is nothing to decide on); a failed
//! claim or release ends only its own step, and the round goes on with the others, since
//! partitions are independent: one lost answer must not hold every other partition's
//! takeover back a round (the simulator's P2: every partition stepped again within a lease
//! and a tick of its owner's death).

use duetime::Timestamp;

use crate::ownership::{Lease, Member, Ownership, Phase, Step};
use crate::partition::Partition;

/// What one heartbeat reads back: the store's clock, every partition's lease in partition
/// order, and the daemons alive or not yet forgotten. What [`Ownership::round`] takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roster {
    /// The store's clock (the database server's) when the beat was written.
    pub now: Timestamp,
    /// Every partition's lease, in partition order.
    pub leases: Vec<Lease>,
    /// The daemons whose heartbeats the store holds.
    pub members: Vec<Member>,
}

/// A daemon's I/O for its owner round: its store's heartbeat, claims and releases, and its
/// seats (what steps a partition it holds: a thread in the daemon, an incarnation in the
/// simulator). An `Err` of the heartbeat ends the round; one of a claim or a release ends
/// that step (the store's word is read again next round).
pub trait OwnerIo {
    /// What a failed store call says.
    type Error;

    /// Writes this daemon's heartbeat (`stopping`: it is handing everything back) and
    /// reads back what the store holds.
    fn beat(&mut self, stopping: bool) -> Result<Roster, Self::Error>;

    /// Whether the seat in `partition`, which this daemon steps, ended though nobody asked
    /// it to (a store error at its start, a write fenced, a panic): the partition is then
    /// handed back at once, so the next round claims it again under a new epoch rather
    /// than leaving it unstepped until its lease ends.
    fn ended_unasked(&mut self, partition: Partition) -> bool;

    /// Whether this daemon has nothing running in `partition`, which it leaves: no seat
    /// there, or one drained (its runs ended and reported).
    fn drained(&mut self, partition: Partition) -> bool;

    /// Claims `partition`, found at epoch `seen`: the new epoch, or `None` when another
    /// daemon came first.
    fn claim(&mut self, partition: Partition, seen: u64) -> Result<Option<u64>, Self::Error>;

    /// Starts a seat in `partition`, claimed under `epoch`; `false` when it could not start
    /// (the partition is then handed back at once).
    fn seat(&mut self, partition: Partition, epoch: u64) -> bool;

    /// Hands `partition`'s lease, held under `epoch`, back; `false` when the store no
    /// longer held it as this daemon's (it is not this daemon's either way after).
    fn release(&mut self, partition: Partition, epoch: u64) -> Result<bool, Self::Error>;

    /// The seat in `partition` drains: no new claims there; its runs end and are reported.
    fn leave(&mut self, partition: Partition);

    /// The seat in `partition` is done with: its lease was handed back.
    fn unseat(&mut self, partition: Partition);

    /// Someone else holds `partition` now: its seat stops without writing.
    fn lost(&mut self, partition: Partition);
}

/// One round of the owner of `own`'s partitions: the heartbeat, the seats that ended
/// unasked handed back, then each step [`Ownership::round`] asks for, carried out in order.
///
/// # Errors
///
/// The heartbeat's error, which ends the round before any step; else the first error of
/// a step (a claim or a release), after every other step was carried out. `own` knows of
/// what was done either way; a step that failed is asked for again by a later round.
pub fn owner_round<I: OwnerIo>(own: &mut Ownership, io: &mut I) -> Result<(), I::Error> {
    let roster = io.beat(own.is_stopping())?;
    let mut first_error = hand_back_ended(own, io).err();
    let drained: Vec<Partition> = own
        .held()
        .filter(|&(p, _, phase)| phase == Phase::Leaving && io.drained(p))
        .map(|(p, _, _)| p)
        .collect();
    let steps = own.round(roster.now, &roster.leases, &roster.members, |p| {
        drained.contains(&p)
    });
    for step in steps {
        if let Err(e) = take(own, io, step) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The partitions this daemon steps whose seat ended unasked, handed back; the first
/// release that failed (the others are still tried).
fn hand_back_ended<I: OwnerIo>(own: &mut Ownership, io: &mut I) -> Result<(), I::Error> {
    let stepping: Vec<(Partition, u64)> = own
        .held()
        .filter(|&(_, _, phase)| phase == Phase::Stepping)
        .map(|(p, e, _)| (p, e))
        .collect();
    let mut first_error = None;
    for (p, epoch) in stepping {
        if io.ended_unasked(p) {
            match io.release(p, epoch) {
                Ok(_) => {
                    own.released(p);
                    io.unseat(p);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// One step of a round, carried out.
fn take<I: OwnerIo>(own: &mut Ownership, io: &mut I, step: Step) -> Result<(), I::Error> {
    match step {
        Step::Claim { partition, seen } => {
            let Some(epoch) = io.claim(partition, seen)? else {
                return Ok(());
            };
            own.claimed(partition, epoch);
            if !io.seat(partition, epoch) {
                io.release(partition, epoch)?;
                own.released(partition);
            }
        }
        Step::Leave { partition } => io.leave(partition),
        Step::Release { partition, epoch } => {
            io.release(partition, epoch)?;
            own.released(partition);
            io.unseat(partition);
        }
        // `Ownership::round` has let it go already.
        Step::Lost { partition } => io.lost(partition),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
