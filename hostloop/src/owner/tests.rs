//! The owner round over a store in memory: what it asks of the store and the seats, in
//! which order, and where it stops when the store fails.

use duetime::{Duration, ProcessId, Timestamp};

use super::*;
use crate::partition::PartitionCount;

const TTL: Duration = Duration::from_secs(30);

/// A store of leases and heartbeats in memory, with seats that are only names, and a log
/// of what the round asked.
struct Fake {
    me: ProcessId,
    now: Timestamp,
    leases: Vec<Lease>,
    others: Vec<Member>,
    seats: Vec<Partition>,
    /// Seats that ended though nobody asked, and seats drained.
    ended: Vec<Partition>,
    drained: Vec<Partition>,
    /// Seats that will not start, and the claim that fails with a store error.
    will_not_seat: Vec<Partition>,
    claim_fails: Option<Partition>,
    log: Vec<String>,
}

impl Fake {
    fn new(count: usize) -> Fake {
        Fake {
            me: ProcessId(1),
            now: Timestamp::from_millis(1_000),
            leases: vec![Lease::FREE; count],
            others: Vec::new(),
            seats: Vec::new(),
            ended: Vec::new(),
            drained: Vec::new(),
            will_not_seat: Vec::new(),
            claim_fails: None,
            log: Vec::new(),
        }
    }

    fn member(process: ProcessId, now: Timestamp) -> Member {
        Member {
            process,
            alive_until: Timestamp::from_millis(now.as_millis() + 30_000),
            stopping: false,
        }
    }
}

impl OwnerIo for Fake {
    type Error = String;

    fn beat(&mut self, stopping: bool) -> Result<Roster, String> {
        self.log.push(format!("beat stopping={stopping}"));
        let mut members = self.others.clone();
        members.push(Fake::member(self.me, self.now));
        Ok(Roster {
            now: self.now,
            leases: self.leases.clone(),
            members,
        })
    }

    fn ended_unasked(&mut self, partition: Partition) -> bool {
        self.ended.contains(&partition)
    }

    fn drained(&mut self, partition: Partition) -> bool {
        !self.seats.contains(&partition) || self.drained.contains(&partition)
    }

    fn claim(&mut self, partition: Partition, seen: u64) -> Result<Option<u64>, String> {
        if self.claim_fails == Some(partition) {
            return Err(format!("claim {partition}: the store is gone"));
        }
        let lease = &mut self.leases[partition.0 as usize];
        if lease.epoch != seen || !lease.claimable_by(self.me, self.now) {
            return Ok(None);
        }
        *lease = lease.claimed(self.me, self.now, TTL);
        self.log
            .push(format!("claim {partition} epoch {}", lease.epoch));
        Ok(Some(lease.epoch))
    }

    fn seat(&mut self, partition: Partition, epoch: u64) -> bool {
        if self.will_not_seat.contains(&partition) {
            self.log
                .push(format!("seat {partition} epoch {epoch} failed"));
            return false;
        }
        self.log.push(format!("seat {partition} epoch {epoch}"));
        self.seats.push(partition);
        true
    }

    fn release(&mut self, partition: Partition, epoch: u64) -> Result<bool, String> {
        let lease = &mut self.leases[partition.0 as usize];
        let mine = lease.admits(self.me, epoch, self.now);
        if mine {
            *lease = lease.released();
        }
        self.log
            .push(format!("release {partition} epoch {epoch}: {mine}"));
        Ok(mine)
    }

    fn leave(&mut self, partition: Partition) {
        self.log.push(format!("leave {partition}"));
    }

    fn unseat(&mut self, partition: Partition) {
        self.log.push(format!("unseat {partition}"));
        self.seats.retain(|&p| p != partition);
    }

    fn lost(&mut self, partition: Partition) {
        self.log.push(format!("lost {partition}"));
        self.seats.retain(|&p| p != partition);
    }
}

fn ownership(count: u64) -> Ownership {
    Ownership::new(ProcessId(1), PartitionCount::new(count).unwrap(), 4)
}

fn held(own: &Ownership) -> Vec<(u32, u64, Phase)> {
    own.held().map(|(p, e, ph)| (p.0, e, ph)).collect()
}

#[test]
fn a_lone_daemon_beats_then_claims_and_seats_every_partition() {
    let (mut own, mut io) = (ownership(2), Fake::new(2));
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(
        io.log,
        [
            "beat stopping=false",
            "claim p0 epoch 1",
            "seat p0 epoch 1",
            "claim p1 epoch 1",
            "seat p1 epoch 1",
        ]
    );
    assert_eq!(
        held(&own),
        [(0, 1, Phase::Stepping), (1, 1, Phase::Stepping)]
    );
}

#[test]
fn a_seat_that_will_not_start_hands_its_partition_back_at_once() {
    let (mut own, mut io) = (ownership(2), Fake::new(2));
    io.will_not_seat.push(Partition(1));
    owner_round(&mut own, &mut io).unwrap();
    assert!(io.log.ends_with(&[
        "seat p1 epoch 1 failed".into(),
        "release p1 epoch 1: true".into()
    ]));
    assert_eq!(held(&own), [(0, 1, Phase::Stepping)]);
    assert!(
        !io.leases[1].is_held(io.now),
        "p1 is free for the next round"
    );
}

#[test]
fn a_failed_claim_ends_its_own_step_only_and_the_next_round_takes_it_up() {
    let (mut own, mut io) = (ownership(3), Fake::new(3));
    io.claim_fails = Some(Partition(1));
    let e = owner_round(&mut own, &mut io).unwrap_err();
    assert!(e.contains("claim p1"), "{e}");
    // p0 before it and p2 after it are claimed and seated all the same.
    assert_eq!(
        held(&own),
        [(0, 1, Phase::Stepping), (2, 1, Phase::Stepping)]
    );
    assert!(
        !io.log.iter().any(|l| l.contains("seat p1")),
        "{:?}",
        io.log
    );
    // The next round, with the store back, takes up the rest.
    io.claim_fails = None;
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(held(&own).len(), 3);
}

#[test]
fn a_failed_heartbeat_ends_the_round_before_any_step() {
    struct Down(Fake);
    impl OwnerIo for Down {
        type Error = String;
        fn beat(&mut self, _: bool) -> Result<Roster, String> {
            Err("the store is gone".into())
        }
        fn ended_unasked(&mut self, p: Partition) -> bool {
            self.0.ended_unasked(p)
        }
        fn drained(&mut self, p: Partition) -> bool {
            self.0.drained(p)
        }
        fn claim(&mut self, p: Partition, seen: u64) -> Result<Option<u64>, String> {
            self.0.claim(p, seen)
        }
        fn seat(&mut self, p: Partition, epoch: u64) -> bool {
            self.0.seat(p, epoch)
        }
        fn release(&mut self, p: Partition, epoch: u64) -> Result<bool, String> {
            self.0.release(p, epoch)
        }
        fn leave(&mut self, p: Partition) {
            self.0.leave(p);
        }
        fn unseat(&mut self, p: Partition) {
            self.0.unseat(p);
        }
        fn lost(&mut self, p: Partition) {
            self.0.lost(p);
        }
    }
    let (mut own, mut io) = (ownership(2), Down(Fake::new(2)));
    assert!(owner_round(&mut own, &mut io).is_err());
    assert!(io.0.log.is_empty(), "{:?}", io.0.log);
    assert_eq!(held(&own), []);
}

#[test]
fn a_seat_that_ended_unasked_is_handed_back_before_the_steps() {
    let (mut own, mut io) = (ownership(1), Fake::new(1));
    owner_round(&mut own, &mut io).unwrap();
    io.ended.push(Partition(0));
    io.log.clear();
    owner_round(&mut own, &mut io).unwrap();
    // Released and unseated, then (the partition free again and still this daemon's) claimed
    // again under a new epoch with a new seat.
    assert_eq!(
        io.log,
        [
            "beat stopping=false",
            "release p0 epoch 1: true",
            "unseat p0",
            "claim p0 epoch 2",
            "seat p0 epoch 2",
        ]
    );
}

#[test]
fn a_stopping_daemon_leaves_then_releases_once_drained_then_is_done() {
    let (mut own, mut io) = (ownership(1), Fake::new(1));
    owner_round(&mut own, &mut io).unwrap();
    own.stop();
    io.log.clear();
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(io.log, ["beat stopping=true", "leave p0"]);
    // Not drained yet: nothing more.
    io.log.clear();
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(io.log, ["beat stopping=true"]);
    io.drained.push(Partition(0));
    io.log.clear();
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(
        io.log,
        [
            "beat stopping=true",
            "release p0 epoch 1: true",
            "unseat p0"
        ]
    );
    assert!(own.is_done());
}

#[test]
fn a_partition_another_took_is_dropped_without_a_write() {
    let (mut own, mut io) = (ownership(1), Fake::new(1));
    owner_round(&mut own, &mut io).unwrap();
    // Its lease ran out while it stalled; another daemon claimed the partition.
    io.now = Timestamp::from_millis(io.now.as_millis() + 60_000);
    let other = ProcessId(2);
    io.leases[0] = io.leases[0].claimed(other, io.now, TTL);
    io.others.push(Fake::member(other, io.now));
    io.log.clear();
    owner_round(&mut own, &mut io).unwrap();
    assert_eq!(io.log[..2], ["beat stopping=false", "lost p0"]);
    assert!(
        !io.log.iter().any(|l| l.starts_with("release")),
        "{:?}",
        io.log
    );
    assert!(io.seats.is_empty());
}
