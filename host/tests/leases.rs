//! Partition ownership in the PostgreSQL store (issue 43, docs/scale-out.md): the
//! heartbeat, a claim that raises the epoch and loses to one that came first, the fence
//! that refuses a write under a lease no longer the writer's (nothing written), the lease
//! renewed by each write, a release only by the holder. SQLite has no partitions to own.
//! The PostgreSQL tests need a server: see support/pg.rs.

#[path = "support/pg.rs"]
mod pg;

use duetime::{Duration, Event, Now, ProcessId, Timestamp};
use duetime_host::store::{Holder, Options, PostgresStore, SqliteStore, Store, StoreError};
use duetime_loop::{Lease, Partition, PartitionCount};

fn options(partitions: u64) -> Options {
    Options {
        durable: false,
        partitions: Some(PartitionCount::new(partitions).unwrap()),
        ..Options::default()
    }
}

fn now() -> Now {
    Now::at(Timestamp::from_millis(1_748_854_800_000))
}

fn started(p: u64) -> Event {
    Event::ProcessStarted {
        process: ProcessId(p),
    }
}

const A: ProcessId = ProcessId(1001);
const B: ProcessId = ProcessId(1002);
const P1: Partition = Partition(1);

#[test]
fn a_claim_fences_the_old_holder_and_only_the_holder_releases() {
    let Some(url) = pg::fresh("leases") else {
        return;
    };
    let mut a = PostgresStore::open_with(&url, options(3)).unwrap();
    let mut b = PostgresStore::open_with(&url, options(3)).unwrap();
    let long = Duration::from_secs(60);

    // The first heartbeat: every partition free, the daemon a member.
    let roster = a.beat(A, false, long).unwrap();
    assert_eq!(roster.leases, vec![Lease::FREE; 3]);
    assert_eq!(roster.members.len(), 1);
    assert_eq!(roster.members[0].process, A);
    assert!(roster.members[0].alive_until > roster.now);

    // A claims p1 (epoch 0 -> 1); B, having seen epoch 0 too, comes second and gets nothing.
    assert_eq!(a.claim(P1, A, 0, long).unwrap(), Some(1));
    assert_eq!(b.claim(P1, B, 0, long).unwrap(), None, "the epoch moved");
    assert_eq!(b.claim(P1, B, 1, long).unwrap(), None, "A's lease is live");
    let roster = b.beat(B, false, long).unwrap();
    assert_eq!(roster.leases[1].owner, Some(A));
    assert_eq!(roster.leases[1].epoch, 1);
    assert_eq!(roster.members.len(), 2);

    // A writes as the holder; each write renews the lease.
    let short = Duration::from_millis(300);
    a.hold(
        P1,
        Holder {
            owner: A,
            epoch: 1,
            ttl: short,
        },
    )
    .unwrap();
    a.apply_in(P1, now(), started(7)).unwrap();
    let version = a.partition_rows().unwrap()[1].version;
    assert_eq!(version, 1);

    // A claims again under its own live lease (as a daemon whose claim's answer was lost
    // does), now for a short lease, and goes quiet past it.
    assert_eq!(a.claim(P1, A, 1, short).unwrap(), Some(2));
    a.hold(
        P1,
        Holder {
            owner: A,
            epoch: 2,
            ttl: short,
        },
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    // The lease has ended: B claims it, and A's next write is fenced, writing nothing.
    assert_eq!(b.claim(P1, B, 2, long).unwrap(), Some(3));
    let err = a.apply_in(P1, now(), started(8)).unwrap_err();
    assert!(err.is_fenced(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("no longer held by process p1001 under epoch 2")
            && text.contains("owner p1002, epoch 3"),
        "{text}"
    );
    assert_eq!(err.kind().name(), "fenced");
    assert_eq!(
        a.partition_rows().unwrap()[1].version,
        version,
        "nothing written"
    );
    assert!(!a
        .state_in(P1)
        .unwrap()
        .globals()
        .processes()
        .contains_key(&ProcessId(8)));

    // Only the holder hands it back; the epoch stays, so the next claim raises it again.
    assert!(!a.release(P1, A, 2).unwrap());
    assert!(b.release(P1, B, 3).unwrap());
    let roster = b.beat(B, true, long).unwrap();
    assert_eq!(roster.leases[1].owner, None);
    assert_eq!(roster.leases[1].epoch, 3);
    assert!(roster.members.iter().any(|m| m.process == B && m.stopping));
    // An unheld partition is written to by no one fenced (people's commands are unfenced).
    b.apply_in(P1, now(), started(9)).unwrap();
}

#[test]
fn a_member_gone_a_lease_is_forgotten() {
    let Some(url) = pg::fresh("members") else {
        return;
    };
    let mut a = PostgresStore::open_with(&url, options(2)).unwrap();
    a.beat(A, false, Duration::from_millis(200)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let roster = a.beat(B, false, Duration::from_secs(60)).unwrap();
    let members: Vec<ProcessId> = roster.members.iter().map(|m| m.process).collect();
    assert_eq!(members, vec![B], "A's heartbeat ended and its row went");
}

#[test]
fn a_store_of_one_partition_has_nothing_to_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("one.db")).unwrap();
    let err = s.beat(A, false, Duration::from_secs(60)).unwrap_err();
    assert!(matches!(err, StoreError::NotPartitioned { .. }), "{err}");
    assert!(err.to_string().contains("has one partition"), "{err}");
    assert!(s
        .claim(Partition::FIRST, A, 0, Duration::from_secs(1))
        .is_err());
    assert!(s.release(Partition::FIRST, A, 0).is_err());
    let Some(url) = pg::fresh("one_partition_leases") else {
        return;
    };
    let mut one = PostgresStore::open_with(&url, options(1)).unwrap();
    let err = one
        .hold(
            Partition::FIRST,
            Holder {
                owner: A,
                epoch: 1,
                ttl: Duration::from_secs(1),
            },
        )
        .unwrap_err();
    assert_eq!(err.kind().name(), "not_partitioned");
}

/// The owner's renewal (`Store::renew`, issue 43): only a lease still the daemon's under the
/// epoch it claimed and not ended is renewed; an ended one is never revived (another may
/// have claimed it); a row a transaction holds locked is skipped, not waited for (its seat
/// renews it as it writes).
#[test]
fn the_owner_renews_its_live_leases_only_and_never_waits_on_a_locked_row() {
    let Some(url) = pg::fresh("renew") else {
        return;
    };
    let mut owner = PostgresStore::open_with(&url, options(4)).unwrap();
    let short = Duration::from_millis(800);
    let long = Duration::from_secs(60);
    owner.beat(A, false, long).unwrap();
    for p in 0..3 {
        assert_eq!(owner.claim(Partition(p), A, 0, short).unwrap(), Some(1));
    }
    let held = [(Partition(0), 1), (Partition(1), 1), (Partition(2), 7)];
    // p2 under another epoch than the store's: not renewed. p0 and p1 are, for a minute.
    let renewed = owner.renew(A, &held, long).unwrap();
    assert_eq!(renewed, vec![Partition(0), Partition(1)]);
    assert_eq!(owner.renew(B, &held, long).unwrap(), vec![], "not B's");
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let roster = owner.beat(A, false, long).unwrap();
    assert!(
        roster.leases[0].is_held(roster.now),
        "renewed past its first end"
    );
    assert!(roster.leases[1].is_held(roster.now));
    assert!(
        !roster.leases[2].is_held(roster.now),
        "not renewed: it ended"
    );
    assert!(
        owner
            .renew(A, &[(Partition(2), 1)], long)
            .unwrap()
            .is_empty(),
        "an ended lease is never revived"
    );

    // A seat's transaction holds p1's row: the owner's renewal passes it by at once.
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = raw.transaction().unwrap();
    tx.execute("SELECT 1 FROM globals WHERE part = 1 FOR UPDATE", &[])
        .unwrap();
    let began = std::time::Instant::now();
    let renewed = owner.renew(A, &held, long).unwrap();
    assert!(
        began.elapsed() < std::time::Duration::from_secs(2),
        "it did not wait"
    );
    assert_eq!(renewed, vec![Partition(0)], "p1 skipped while locked");
    tx.rollback().unwrap();
    assert_eq!(
        owner.renew(A, &held, long).unwrap(),
        vec![Partition(0), Partition(1)]
    );
}

/// Handles of one daemon's pool (`PostgresStore::pool`, `--pg-connections`) share its
/// connections: many handles, each holding its own partition and writing under its fence,
/// never have more open than the pool's share, and each handle's state and commits stay
/// its own whichever connection ran them.
#[test]
fn handles_of_a_pool_share_its_connections_and_keep_their_fences() {
    let Some(url) = pg::fresh("pooled") else {
        return;
    };
    let owner = PostgresStore::open_with(&url, options(8)).unwrap();
    let connections = duetime_host::store::Connections::new(3).unwrap();
    let pool = owner.pool(connections, std::time::Duration::from_secs(5));
    let pooled = Options {
        pool: Some(pool.clone()),
        ..options(8)
    };
    let long = Duration::from_secs(60);
    let mut claimer = PostgresStore::open_with(&url, options(8)).unwrap();
    claimer.beat(A, false, long).unwrap();
    let threads: Vec<_> = (0..8u32)
        .map(|p| {
            let epoch = claimer.claim(Partition(p), A, 0, long).unwrap().unwrap();
            let (url, pooled) = (url.clone(), pooled.clone());
            std::thread::spawn(move || {
                let mut seat = PostgresStore::open_with(&url, pooled).unwrap();
                let holder = Holder {
                    owner: A,
                    epoch,
                    ttl: long,
                };
                seat.hold(Partition(p), holder).unwrap();
                for i in 0..10 {
                    seat.apply_in(Partition(p), now(), started(100 + u64::from(p) * 10 + i))
                        .unwrap();
                }
                seat.partition_rows().unwrap()[p as usize].version
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 10, "each partition: its ten commits");
    }
    assert_eq!(
        pool.size(),
        2,
        "three connections: the owner's, and two shared"
    );
    assert!(
        pool.open() <= 2,
        "eight handles on {} connections",
        pool.open()
    );
    assert!(pool.open() >= 1);
    // A write under a lease no longer the holder's is fenced on a pooled handle too.
    let mut late = PostgresStore::open_with(&url, pooled).unwrap();
    late.hold(
        Partition(3),
        Holder {
            owner: A,
            epoch: 9,
            ttl: long,
        },
    )
    .unwrap();
    let err = late
        .apply_in(Partition(3), now(), started(999))
        .unwrap_err();
    assert!(err.is_fenced(), "{err}");
}

/// A damaged ownership row (a negative epoch or owner, which no write makes) is told as
/// `Corrupt` naming the column, never read as another number (a clamp to 0 read it as a
/// lease nobody ever held).
#[test]
fn a_negative_epoch_or_owner_is_a_corrupt_row_named_by_its_column() {
    let Some(url) = pg::fresh("negative") else {
        return;
    };
    let mut owner = PostgresStore::open_with(&url, options(4)).unwrap();
    let long = Duration::from_secs(60);
    owner.beat(A, false, long).unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for (sql, column) in [
        (
            "UPDATE globals SET epoch = -3 WHERE part = 2",
            "globals.epoch is -3",
        ),
        (
            "UPDATE globals SET epoch = 0, owner = -1 WHERE part = 2",
            "globals.owner is -1",
        ),
        (
            "UPDATE globals SET owner = NULL; UPDATE members SET process = -7",
            "members.process is -7",
        ),
    ] {
        raw.batch_execute(sql).unwrap();
        let err = owner.beat(A, false, long).map(|_| ()).unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { detail, .. } if detail.starts_with(column)),
            "{sql}: {err}"
        );
    }
}
