//! Which daemon steps which partition: leases on partitions, decided without I/O, the same
//! in the daemon and in the simulator's processes.
//!
//! A store of P partitions keeps, per partition, a [`Lease`]: its owner, an epoch and when
//! the lease ends, timed by **the store's clock** (the database server's), so the skew
//! between daemons' clocks cannot make two owners. A daemon's [`Ownership`] takes, once a
//! round, what the store holds ([`Lease`] per partition, and the daemons that are alive)
//! and answers with [`Step`]s:
//!
//! - **claim** a partition the assignment gives it that no live lease holds (a new store, a
//!   clean hand-back, or an owner that died: its lease ended, so it is taken within the
//!   lease's time plus one round). A claim raises the epoch; every later transaction of
//!   the claimant on that partition checks the epoch in the same transaction, so a daemon
//!   that lost a partition cannot write to it ([`Lease::admits`]);
//! - **leave** a partition the assignment now gives another live daemon, at most
//!   `max_moves` a round, so a daemon joining moves a few partitions at a time rather than
//!   stopping them all at once. Leaving is the host's drain of its incarnation there (the
//!   core stops claiming for it; its runs end and are reported), then **release**;
//! - **lost**: the store shows another owner or a newer epoch: the host drops what it held
//!   there without writing (its runs' leases lapse under the core's rules, and the core's
//!   fences make any report of them stale).
//!
//! The assignment ([`assign`]) is a pure function of the partition count and the live
//! daemons: every daemon computes the same one. It gives each daemon its share (the
//! partitions divided as evenly as they go) by rendezvous hashing with capacities, so a
//! daemon joining or leaving moves only about the share that changes hands.
//!
//! Ownership is for throughput only. The core's fenced run leases still decide who runs
//! what inside a partition, so even two daemons stepping one partition (a lease read
//! stale, a clock far off) stay safe: the epoch keeps that rare, the core keeps it harmless.

use std::collections::BTreeMap;

use duetime::{Duration, ProcessId, Timestamp};

use crate::partition::{Partition, PartitionCount};

/// One partition's lease, as the store holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Who holds it (a daemon incarnation's process id), if anyone.
    pub owner: Option<ProcessId>,
    /// Raised by every claim: a transaction under an older epoch changes nothing.
    pub epoch: u64,
    /// When it ends unless renewed, by the store's clock.
    pub until: Timestamp,
}

impl Lease {
    /// A partition no one has held.
    pub const FREE: Lease = Lease {
        owner: None,
        epoch: 0,
        until: Timestamp::from_millis(0),
    };

    /// Whether someone holds it at `now` (by the store's clock).
    pub fn is_held(&self, now: Timestamp) -> bool {
        self.owner.is_some() && now < self.until
    }

    /// Whether `process` may claim it at `now`: no one holds it, or `process` itself does
    /// without knowing it (its claim committed but the answer was lost), so claiming again
    /// (a raised epoch) is how it learns the partition is its own.
    pub fn claimable_by(&self, process: ProcessId, now: Timestamp) -> bool {
        !self.is_held(now) || self.owner == Some(process)
    }

    /// Whether a transaction of `process` under `epoch` may write to the partition at
    /// `now`: the epoch is the current one and the lease is its own and not ended. The
    /// store checks this in the same transaction as the write.
    pub fn admits(&self, process: ProcessId, epoch: u64, now: Timestamp) -> bool {
        self.owner == Some(process) && self.epoch == epoch && now < self.until
    }

    /// The lease after `process` claims it at `now` for `ttl`: the epoch raised.
    pub fn claimed(&self, process: ProcessId, now: Timestamp, ttl: Duration) -> Lease {
        Lease {
            owner: Some(process),
            epoch: self.epoch + 1,
            until: now.saturating_add(ttl),
        }
    }

    /// The lease renewed by a transaction of its owner at `now`.
    pub fn renewed(&self, now: Timestamp, ttl: Duration) -> Lease {
        Lease {
            until: now.saturating_add(ttl).max(self.until),
            ..*self
        }
    }

    /// The lease handed back at once (a clean stop, a rebalance): free, epoch kept, so
    /// the next claim raises it again.
    pub fn released(&self) -> Lease {
        Lease {
            owner: None,
            until: Timestamp::from_millis(0),
            ..*self
        }
    }
}

/// A daemon as the store knows it: alive while its heartbeat is recent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Its process id.
    pub process: ProcessId,
    /// When it is taken for dead unless it is heard from again (store's clock).
    pub alive_until: Timestamp,
    /// Whether it is stopping: it keeps what it steps until its runs end, and is given
    /// nothing new.
    pub stopping: bool,
}

/// The daemons the assignment counts at `now`: alive and not stopping, in process order.
pub fn live(members: &[Member], now: Timestamp) -> Vec<ProcessId> {
    let mut live: Vec<ProcessId> = members
        .iter()
        .filter(|m| !m.stopping && now < m.alive_until)
        .map(|m| m.process)
        .collect();
    live.sort_unstable();
    live.dedup();
    live
}

/// Which live daemon each of `count` partitions belongs to (`None` only when none is
/// live). Deterministic from its inputs: every daemon computes the same answer.
///
/// Each daemon's share is `count / n`, the first `count % n` daemons (in process order)
/// one more. Partitions are dealt in order, each to the daemon that ranks it highest
/// (a hash of the partition and the daemon) among those with room left: rendezvous hashing
/// with capacities, so the shares are even and a change of membership moves about the
/// partitions that must move rather than reshuffling all of them.
pub fn assign(count: PartitionCount, live: &[ProcessId]) -> Vec<Option<ProcessId>> {
    let count = count.get();
    let n = live.len() as u32;
    if n == 0 {
        return vec![None; count as usize];
    }
    let mut room: Vec<u32> = (0..n)
        .map(|i| count / n + u32::from(i < count % n))
        .collect();
    (0..count)
        .map(|p| {
            let best = (0..live.len())
                .filter(|&i| room[i] > 0)
                .max_by_key(|&i| (rank(p, live[i]), std::cmp::Reverse(i)))?;
            room[best] -= 1;
            Some(live[best])
        })
        .collect()
}

/// How much daemon `process` wants partition `partition`: a fixed mix of the two (the
/// splitmix64 finalizer), the same on every machine and in every version.
fn rank(partition: u32, process: ProcessId) -> u64 {
    let mut z = (u64::from(partition) << 32 ^ process.0).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a round asks of the daemon, partition by partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Claim it: a transaction that checks the lease is still not held and writes
    /// [`Lease::claimed`]; then start an incarnation there (`Startup`).
    Claim {
        /// The partition.
        partition: Partition,
        /// The epoch the claim found; the claim is refused if another came first.
        seen: u64,
    },
    /// Drain the incarnation there (the core's `ProcessDraining`): the partition now
    /// belongs to another live daemon. Keep stepping it until its runs have ended.
    Leave {
        /// The partition.
        partition: Partition,
    },
    /// Its incarnation is drained: hand the lease back ([`Lease::released`]).
    Release {
        /// The partition.
        partition: Partition,
        /// The epoch it was held under.
        epoch: u64,
    },
    /// Someone else holds it now: drop what was held there without writing.
    Lost {
        /// The partition.
        partition: Partition,
    },
}

/// Where this daemon stands with a partition it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// It steps the partition, claiming work there.
    Stepping,
    /// It drains there, to hand the partition back.
    Leaving,
}

/// One daemon's partitions: what it holds, under which epoch, and whether it is leaving.
#[derive(Debug, Clone)]
pub struct Ownership {
    me: ProcessId,
    count: PartitionCount,
    max_moves: usize,
    held: BTreeMap<Partition, (u64, Phase)>,
    stopping: bool,
    /// The last assignment computed and the live daemons it was for: the same members
    /// give the same answer (`assign` is a function of them), and they change far less
    /// often than rounds come (a daemon's round is every second; `assign` over 64
    /// partitions was 5% of a partition world's instructions).
    last: Option<(Vec<ProcessId>, Vec<Option<ProcessId>>)>,
}

impl Ownership {
    /// A daemon `me` over `count` partitions that leaves at most `max_moves` partitions a
    /// round for rebalancing (at least one).
    pub fn new(me: ProcessId, count: PartitionCount, max_moves: usize) -> Ownership {
        Ownership {
            me,
            count,
            max_moves: max_moves.max(1),
            held: BTreeMap::new(),
            stopping: false,
            last: None,
        }
    }

    /// `assign` for `live` with `live`, the last round's when the live daemons are the same.
    fn take_target(&mut self, live: Vec<ProcessId>) -> (Vec<ProcessId>, Vec<Option<ProcessId>>) {
        match self.last.take() {
            Some(last) if last.0 == live => last,
            _ => {
                let target = assign(self.count, &live);
                (live, target)
            }
        }
    }

    /// The partitions it holds, with their epochs and phases, in order.
    pub fn held(&self) -> impl Iterator<Item = (Partition, u64, Phase)> + '_ {
        self.held.iter().map(|(&p, &(e, ph))| (p, e, ph))
    }

    /// The epoch it holds `partition` under, if it does.
    pub fn epoch(&self, partition: Partition) -> Option<u64> {
        self.held.get(&partition).map(|&(e, _)| e)
    }

    /// A clean stop (SIGTERM): every partition is left at once, whatever `max_moves`.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// Whether it is stopping (`stop`).
    pub fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// Whether it has stopped and holds nothing more.
    pub fn is_done(&self) -> bool {
        self.stopping && self.held.is_empty()
    }

    /// One round, from the leases the store holds now (`leases[p]` for partition `p`) and
    /// its members, at `now` by the store's clock. `drained(p)` says whether this daemon's
    /// incarnation in a partition it leaves holds no run any more.
    pub fn round(
        &mut self,
        now: Timestamp,
        leases: &[Lease],
        members: &[Member],
        drained: impl Fn(Partition) -> bool,
    ) -> Vec<Step> {
        let mut steps = self.notice_lost(now, leases);
        let last = self.take_target(live(members, now));
        let target = &last.1;
        let mine =
            |p: Partition| !self.stopping && target.get(p.0 as usize) == Some(&Some(self.me));
        let mut leaving = 0;
        for (&p, &(epoch, phase)) in &self.held {
            match phase {
                Phase::Leaving if drained(p) => steps.push(Step::Release {
                    partition: p,
                    epoch,
                }),
                Phase::Leaving => {}
                Phase::Stepping if mine(p) => {}
                Phase::Stepping if self.stopping || leaving < self.max_moves => {
                    leaving += 1;
                    steps.push(Step::Leave { partition: p });
                }
                Phase::Stepping => {}
            }
        }
        for (p, lease) in self.count.iter().zip(leases) {
            if self.held.contains_key(&p) {
                continue;
            }
            if mine(p) && lease.claimable_by(self.me, now) {
                steps.push(Step::Claim {
                    partition: p,
                    seen: lease.epoch,
                });
            } else if !mine(p) && lease.owner == Some(self.me) && lease.is_held(now) {
                // Its own claim, whose answer was lost, of a partition the assignment now
                // gives another: handed back at once rather than left idle for a lease.
                steps.push(Step::Release {
                    partition: p,
                    epoch: lease.epoch,
                });
            }
        }
        for step in &steps {
            if let Step::Leave { partition } = step {
                if let Some(held) = self.held.get_mut(partition) {
                    held.1 = Phase::Leaving;
                }
            }
        }
        self.last = Some(last);
        steps
    }

    /// The partitions it held that the store now shows under another owner or epoch.
    fn notice_lost(&mut self, now: Timestamp, leases: &[Lease]) -> Vec<Step> {
        let lost: Vec<Partition> = self
            .held
            .iter()
            .filter(|(&p, &(epoch, _))| {
                leases
                    .get(p.0 as usize)
                    .is_none_or(|l| !l.admits(self.me, epoch, now))
            })
            .map(|(&p, _)| p)
            .collect();
        lost.into_iter()
            .map(|p| {
                self.held.remove(&p);
                Step::Lost { partition: p }
            })
            .collect()
    }

    /// Its claim of `partition` committed under `epoch`.
    pub fn claimed(&mut self, partition: Partition, epoch: u64) {
        self.held.insert(partition, (epoch, Phase::Stepping));
    }

    /// Its release of `partition` committed (or the partition was found lost).
    pub fn released(&mut self, partition: Partition) {
        self.held.remove(&partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: u64) -> ProcessId {
        ProcessId(n)
    }

    fn n(count: u32) -> PartitionCount {
        PartitionCount::new(u64::from(count)).unwrap()
    }

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn alive(ids: &[u64]) -> Vec<Member> {
        ids.iter()
            .map(|&i| Member {
                process: p(i),
                alive_until: t(1_000_000),
                stopping: false,
            })
            .collect()
    }

    fn shares(target: &[Option<ProcessId>]) -> BTreeMap<u64, usize> {
        let mut s = BTreeMap::new();
        for o in target.iter().flatten() {
            *s.entry(o.0).or_insert(0) += 1;
        }
        s
    }

    #[test]
    fn the_assignment_is_even_and_the_same_from_any_order() {
        let a = assign(n(64), &[p(3), p(7), p(9), p(12)]);
        assert!(shares(&a).values().all(|&n| n == 16), "{:?}", shares(&a));
        let b = assign(n(64), &live(&alive(&[12, 9, 3, 7]), t(0)));
        assert_eq!(a, b);
        let odd = assign(n(7), &[p(1), p(2)]);
        assert_eq!(shares(&odd).values().copied().collect::<Vec<_>>(), [4, 3]);
        assert_eq!(assign(n(3), &[]), vec![None; 3]);
    }

    #[test]
    fn a_daemon_joining_moves_about_its_share_only() {
        let before = assign(n(64), &[p(1), p(2), p(3)]);
        let after = assign(n(64), &[p(1), p(2), p(3), p(4)]);
        let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        // Four daemons: the newcomer's 16, and a little more for the capacities.
        assert!((16..=26).contains(&moved), "{moved} partitions moved");
        let gone = assign(n(64), &[p(1), p(3), p(4)]);
        let moved = after.iter().zip(&gone).filter(|(a, b)| a != b).count();
        assert!((16..=26).contains(&moved), "{moved} partitions moved");
    }

    #[test]
    fn a_stale_epoch_or_an_ended_lease_admits_nothing() {
        let lease = Lease::FREE.claimed(p(1), t(0), Duration::from_secs(30));
        assert_eq!(lease.epoch, 1);
        assert!(lease.admits(p(1), 1, t(29_999)));
        assert!(!lease.admits(p(1), 1, t(30_000)), "ended");
        assert!(!lease.admits(p(1), 0, t(1)), "older epoch");
        assert!(!lease.admits(p(2), 1, t(1)), "another daemon");
        let taken = lease.claimed(p(2), t(30_000), Duration::from_secs(30));
        assert!(!taken.admits(p(1), 1, t(30_001)));
        assert_eq!(taken.released().epoch, 2);
        assert!(!taken.released().is_held(t(30_001)));
    }

    #[test]
    fn a_lone_daemon_claims_every_free_partition() {
        let mut own = Ownership::new(p(1), n(4), 1);
        let steps = own.round(t(0), &[Lease::FREE; 4], &alive(&[1]), |_| true);
        let claims: Vec<u32> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Claim { partition, seen: 0 } => Some(partition.0),
                _ => None,
            })
            .collect();
        assert_eq!(claims, [0, 1, 2, 3]);
    }

    #[test]
    fn a_dead_owners_partitions_are_claimed_once_its_lease_ends() {
        let ttl = Duration::from_secs(30);
        let leases: Vec<Lease> = (0..4)
            .map(|_| Lease::FREE.claimed(p(2), t(0), ttl))
            .collect();
        let mut members = alive(&[1]);
        members.push(Member {
            process: p(2),
            alive_until: t(30_000),
            stopping: false,
        });
        let mut own = Ownership::new(p(1), n(4), 1);
        let early = own.round(t(10_000), &leases, &members, |_| true);
        assert!(early.iter().all(|s| !matches!(s, Step::Claim { .. })));
        let late = own.round(t(30_000), &leases, &members, |_| true);
        let claims = late
            .iter()
            .filter(|s| matches!(s, Step::Claim { seen: 1, .. }))
            .count();
        assert_eq!(claims, 4, "{late:?}");
    }

    #[test]
    fn rebalancing_leaves_a_few_partitions_a_round_and_releases_only_when_drained() {
        let ttl = Duration::from_secs(30);
        let mut own = Ownership::new(p(1), n(8), 2);
        let mut leases = vec![Lease::FREE; 8];
        for step in own.round(t(0), &leases, &alive(&[1]), |_| true) {
            if let Step::Claim { partition, .. } = step {
                leases[partition.0 as usize] =
                    leases[partition.0 as usize].claimed(p(1), t(0), ttl);
                own.claimed(partition, 1);
            }
        }
        assert_eq!(own.held().count(), 8);
        let two = alive(&[1, 2]);
        let first = own.round(t(1), &leases, &two, |_| false);
        let left: Vec<_> = first
            .iter()
            .filter(|s| matches!(s, Step::Leave { .. }))
            .collect();
        assert_eq!(left.len(), 2, "at most max_moves a round: {first:?}");
        let waiting = own.round(t(2), &leases, &two, |_| false);
        assert_eq!(
            waiting
                .iter()
                .filter(|s| matches!(s, Step::Release { .. }))
                .count(),
            0,
            "not released before drained"
        );
        let drained = own.round(t(3), &leases, &two, |_| true);
        let released = drained
            .iter()
            .filter(|s| matches!(s, Step::Release { epoch: 1, .. }))
            .count();
        assert_eq!(
            released, 4,
            "the first two drained, two more left: {drained:?}"
        );
    }

    #[test]
    fn a_clean_stop_leaves_everything_at_once_and_a_lost_lease_is_dropped() {
        let ttl = Duration::from_secs(30);
        let mut own = Ownership::new(p(1), n(4), 1);
        let mut leases = vec![Lease::FREE.claimed(p(1), t(0), ttl); 4];
        for q in 0..4 {
            own.claimed(Partition(q), 1);
        }
        leases[3] = leases[3].claimed(p(9), t(40_000), ttl);
        own.stop();
        let steps = own.round(t(1), &leases, &alive(&[1]), |_| false);
        assert!(
            steps.contains(&Step::Lost {
                partition: Partition(3)
            }),
            "{steps:?}"
        );
        let leaving = steps
            .iter()
            .filter(|s| matches!(s, Step::Leave { .. }))
            .count();
        assert_eq!(leaving, 3);
        assert!(!own.is_done());
        for q in 0..3 {
            own.released(Partition(q));
        }
        assert!(own.is_done());
    }

    #[test]
    fn a_claim_whose_answer_was_lost_is_claimed_again_not_left_idle() {
        let ttl = Duration::from_secs(30);
        let mut own = Ownership::new(p(1), n(1), 1);
        let leases = [Lease::FREE.claimed(p(1), t(0), ttl)];
        let steps = own.round(t(5_000), &leases, &alive(&[1]), |_| true);
        assert_eq!(
            steps,
            [Step::Claim {
                partition: Partition(0),
                seen: 1
            }]
        );
        let gone = own.round(t(5_000), &leases, &alive(&[0, 1]), |_| true);
        assert_eq!(
            gone,
            [Step::Release {
                partition: Partition(0),
                epoch: 1
            }],
            "no longer its own by the assignment: handed back at once"
        );
        let other = [Lease::FREE.claimed(p(2), t(0), ttl)];
        let steps = own.round(t(5_000), &other, &alive(&[1, 2]), |_| true);
        assert!(
            steps.is_empty(),
            "another's live lease is not taken: {steps:?}"
        );
    }
}
