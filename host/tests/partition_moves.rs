//! Moving a job between partitions in the host (issue 43, docs/scale-out.md): a key
//! change moves the job whole in one transaction over both partitions (frontier, owed due
//! times and pause along, `moved_out` in the old partition's journal and `moved_in` in the
//! new one's, nothing run twice); a job with a run open keeps its move pending until the
//! run's report has committed; a pending move replaced and cleared; the migration from
//! schema 2 losing nothing; two moves the other way round at once both commit. The
//! PostgreSQL tests need a server: see support/pg.rs.

#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeSet;

use duetime::{Action, Entry, Fence, Held, History, Outcome, RunId, Schedule, Start, Timestamp};
use duetime::{Actor, Duration, Effect, Event, JobDef, JobName, MissedRule, Now, ProcessId};
use duetime_host::store::parts::{self, carry_out_pending, place, Placed, Placement};
use duetime_host::store::{Options, PostgresStore, SqliteStore, Store, StoreError};
use duetime_loop::{route, route_of, Partition, PartitionCount};

/// 2025-06-02T09:00:00Z.
const T0: i64 = 1_748_854_800_000;
const P: u64 = 8;

fn at(secs: i64) -> Now {
    Now::at(Timestamp::from_millis(T0 + secs * 1000))
}

fn count() -> PartitionCount {
    PartitionCount::new(P).unwrap()
}

fn options(partitions: Option<u64>) -> Options {
    Options {
        durable: false,
        partitions: partitions.map(|n| PartitionCount::new(n).unwrap()),
        ..Options::default()
    }
}

/// Every minute, every due time covered (`required`), so owed due times wait in its line.
fn def(name: &str, key: Option<&str>) -> JobDef {
    let mut def = JobDef::new(
        JobName::new(name).unwrap(),
        Schedule::every(Duration::from_secs(60), Duration::ZERO).unwrap(),
    );
    def.missed = MissedRule::Required;
    def.concurrency_key = key.map(String::from);
    def
}

fn name(n: &str) -> JobName {
    JobName::new(n).unwrap()
}

fn actor() -> Actor {
    Actor::new("jobs-file")
}

/// A concurrency key that routes to `p` (`want`) or away from it.
fn key_for(p: Partition, want: bool) -> String {
    (0..)
        .map(|i| format!("key_{i}"))
        .find(|k| (route_of(Some(k), "", count()) == p) == want)
        .unwrap()
}

fn upsert(store: &mut PostgresStore, d: &JobDef, now: Now) {
    let p = route(d, count());
    store
        .apply_in(
            p,
            now,
            Event::Upsert {
                def: Box::new(d.clone()),
                actor: actor(),
            },
        )
        .unwrap();
}

/// The runs a transaction's effects start: `(run, fence)`.
fn starts(effects: &[Effect]) -> Vec<(RunId, Fence)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start { run, fence, .. })) => Some((*run, *fence)),
            _ => None,
        })
        .collect()
}

fn tick(store: &mut PostgresStore, p: Partition, process: ProcessId, now: Now) -> Vec<Effect> {
    holding(store, p, process, &[], now)
}

/// A tick of `process`, which carries out `runs` (their leases renewed).
fn holding(
    store: &mut PostgresStore,
    p: Partition,
    process: ProcessId,
    runs: &[(RunId, Fence)],
    now: Now,
) -> Vec<Effect> {
    let held = runs
        .iter()
        .map(|&(run, fence)| Held { run, fence })
        .collect();
    store
        .apply_in(p, now, Event::Tick { process, held })
        .unwrap()
}

/// Reports `run` done; the effects (the settling process may start what is next).
fn finish(
    store: &mut PostgresStore,
    p: Partition,
    process: ProcessId,
    job: &str,
    run: (RunId, Fence),
    now: Now,
) -> Vec<Effect> {
    let effects = store
        .apply_in(
            p,
            now,
            Event::RunFinished {
                process,
                job: name(job),
                run: run.0,
                fence: run.1,
                outcome: Outcome::Ok,
            },
        )
        .unwrap();
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Reply { result: Err(_), .. })),
        "{effects:?}"
    );
    effects
}

/// Every due time `job`'s starts covered, in journal order (a due time twice is run twice).
fn covered(store: &mut PostgresStore, job: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for r in store.journal_for(job, Timestamp::from_millis(0)).unwrap() {
        if let Entry::History(History::Started {
            covers: Some(c), ..
        }) = r.entry
        {
            let mut t = c.from.as_millis();
            while t <= c.to.as_millis() {
                out.push(t);
                t += 60_000;
            }
        }
    }
    out
}

/// `(partition, kind)` of `job`'s move lines, in journal order, read from the rows.
fn move_lines(url: &str, job: &str) -> Vec<(i32, String)> {
    let mut raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
    raw.query(
        "SELECT part, kind FROM journal WHERE job = $1 AND kind LIKE 'history.moved_%' ORDER BY id",
        &[&job],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

fn versions(store: &mut PostgresStore) -> Vec<i64> {
    store
        .partition_rows()
        .unwrap()
        .iter()
        .map(|r| r.version)
        .collect()
}

#[test]
fn a_key_change_moves_a_job_whole_and_nothing_runs_twice() {
    let Some(url) = pg::fresh("move_whole") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let before = def("nightly", None);
    let home = route(&before, count());
    upsert(&mut store, &before, at(0));
    // A run covering 60 s; 120 s and 180 s come while it runs and are owed; a pause while
    // it runs, then its report: owed due times, a pause and a frontier to carry along.
    let p1 = ProcessId(1);
    store
        .apply_in(home, at(1), Event::ProcessStarted { process: p1 })
        .unwrap();
    let r1 = starts(&tick(&mut store, home, p1, at(60)))[0];
    holding(&mut store, home, p1, &[r1], at(120));
    holding(&mut store, home, p1, &[r1], at(180));
    let paused = Event::Pause {
        job: name("nightly"),
        actor: Actor::new("ann"),
        note: "look".into(),
    };
    store.apply_in(home, at(185), paused).unwrap();
    finish(&mut store, home, p1, "nightly", r1, at(190));
    let seq = store
        .state_in(home)
        .unwrap()
        .seq_of_name("nightly")
        .unwrap();
    let was = store.state_in(home).unwrap().record(seq).unwrap().clone();
    assert!(was.owed() >= 2, "owed: {}", was.owed());
    assert!(was.run().is_none());

    let moved_def = def("nightly", Some(&key_for(home, false)));
    let target = route(&moved_def, count());
    let placed = place(&mut store, &moved_def, &actor(), at(200)).unwrap();
    assert_eq!(
        placed.placement,
        Placement::Moved {
            job: name("nightly"),
            from: home,
            to: target,
            along: vec![]
        }
    );
    assert!(placed
        .placement
        .to_string()
        .contains(&format!("moved from {home} to {target}")));
    assert!(!placed
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Handover(_))));
    assert_eq!(store.locate("nightly").unwrap(), Some(target));
    assert!(store
        .state_in(home)
        .unwrap()
        .seq_of_name("nightly")
        .is_none());

    // Read back by another handle: the record as it was, under its new definition.
    let mut other = PostgresStore::open_with(&url, options(None)).unwrap();
    let state = other.state_in(target).unwrap();
    let now = state.record(state.seq_of_name("nightly").unwrap()).unwrap();
    assert_eq!(now.frontier(), was.frontier(), "the frontier");
    assert_eq!(now.owed(), was.owed(), "the owed due times");
    assert_eq!(now.last(), was.last());
    assert_eq!(now.def(), &moved_def);
    let view = state.job("nightly", at(201).wall).unwrap();
    assert!(view.paused.is_some(), "the pause");
    assert_eq!(
        move_lines(&url, "nightly"),
        [
            (home.0 as i32, "history.moved_out".to_string()),
            (target.0 as i32, "history.moved_in".to_string())
        ]
    );

    // Resumed and ticked where it lives now: the owed due times and those since run once.
    let resume = Event::Resume {
        job: name("nightly"),
        actor: Actor::new("ann"),
    };
    store.apply_in(target, at(300), resume).unwrap();
    let p2 = ProcessId(2);
    let started = store
        .apply_in(target, at(301), Event::ProcessStarted { process: p2 })
        .unwrap();
    let mut open = starts(&started);
    let mut t = 302;
    while !open.is_empty() && t < 400 {
        for run in std::mem::take(&mut open) {
            open.extend(starts(&finish(
                &mut store,
                target,
                p2,
                "nightly",
                run,
                at(t),
            )));
        }
        t += 1;
        open.extend(starts(&tick(&mut store, target, p2, at(t))));
        t += 1;
    }
    let all = covered(&mut store, "nightly");
    let distinct: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len(), distinct.len(), "nothing covered twice: {all:?}");
    let expected: BTreeSet<i64> = (1..=5).map(|m| T0 + m * 60_000).collect();
    assert_eq!(distinct, expected, "every due time through 300 s, once");
}

#[test]
fn a_job_with_a_run_open_waits_until_its_report_commits() {
    let Some(url) = pg::fresh("move_pending") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let before = def("nightly", None);
    let home = route(&before, count());
    upsert(&mut store, &before, at(0));
    let p1 = ProcessId(1);
    store
        .apply_in(home, at(1), Event::ProcessStarted { process: p1 })
        .unwrap();
    let r1 = starts(&tick(&mut store, home, p1, at(60)))[0];

    let moved_def = def("nightly", Some(&key_for(home, false)));
    let target = route(&moved_def, count());
    let was = versions(&mut store);
    let placed = place(&mut store, &moved_def, &actor(), at(70)).unwrap();
    assert_eq!(
        placed.placement,
        Placement::Pending {
            job: name("nightly"),
            from: home,
            to: target,
            run: r1.0
        }
    );
    let text = placed.placement.to_string();
    assert!(
        text.starts_with(&format!(
            "nightly moves to {target} when its run {} has ended; its new definition applies then",
            r1.0
        )),
        "{text}"
    );
    assert_eq!(versions(&mut store), was, "no partition written");
    assert_eq!(store.locate("nightly").unwrap(), Some(home));
    let pending = store.pending_moves().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].def, moved_def);
    assert_eq!(pending[0].asked_at, at(70).wall);
    // The definition in force is the old one until the move.
    let st = store.state_in(home).unwrap();
    let rec = st.record(st.seq_of_name("nightly").unwrap()).unwrap();
    assert_eq!(rec.def(), &before);

    status_shows_the_pending_move(&url, target, r1.0);

    // Carried out while the run is open: nothing happens.
    assert!(carry_out_pending(&mut store, home, at(80))
        .unwrap()
        .is_empty());
    assert_eq!(store.locate("nightly").unwrap(), Some(home));
    let shown = parts::pending(&mut store).unwrap();
    assert_eq!(
        (shown[0].from, shown[0].to, shown[0].run),
        (Some(home), target, Some(r1.0))
    );

    // The report commits; the next carry-out moves it.
    finish(&mut store, home, p1, "nightly", r1, at(90));
    let other = Partition((home.0 + 1) % P as u32);
    assert!(
        carry_out_pending(&mut store, other, at(95))
            .unwrap()
            .is_empty(),
        "only the partition it lives in carries it out"
    );
    let carried = carry_out_pending(&mut store, home, at(100)).unwrap();
    assert_eq!(carried.len(), 1);
    let placed = carried[0].outcome.as_ref().unwrap();
    assert_eq!(
        placed.placement,
        Placement::Moved {
            job: name("nightly"),
            from: home,
            to: target,
            along: vec![]
        }
    );
    assert_eq!(store.locate("nightly").unwrap(), Some(target));
    assert!(store.pending_moves().unwrap().is_empty(), "done");
    let st = store.state_in(target).unwrap();
    let rec = st.record(st.seq_of_name("nightly").unwrap()).unwrap();
    assert_eq!(rec.def(), &moved_def, "its new definition applies now");
    assert_eq!(rec.frontier().as_millis(), T0 + 60_000);
    assert_eq!(move_lines(&url, "nightly").len(), 2);
}

/// `duetime status` (text and `--json`) lists the pending move, the run it waits for and
/// who asked.
/// extract → load: a key given to extract routes the chain elsewhere. While a run of
/// either is open the whole chain waits (extract's own run, then load's, which starts as
/// extract's ends); once none is open, the carry-out moves both in one transaction,
/// upstream first, and no due time of either runs twice or is skipped.
#[test]
fn a_chain_waits_whole_for_its_runs_and_moves_whole() {
    let Some(url) = pg::fresh("chain_moves_whole") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let extract = def("extract", None);
    let mut load = def("load", None);
    load.after = vec![name("extract")];
    parts::sync(
        &mut store,
        &[extract.clone(), load.clone()],
        &actor(),
        at(0),
    )
    .unwrap();
    let home = route(&extract, count());
    assert_eq!(store.locate("load").unwrap(), Some(home), "with its chain");
    let p1 = ProcessId(1);
    store
        .apply_in(home, at(1), Event::ProcessStarted { process: p1 })
        .unwrap();
    let r1 = starts(&tick(&mut store, home, p1, at(60)))[0];

    let mut keyed = extract.clone();
    keyed.concurrency_key = Some(key_for(home, false));
    let target = route(&keyed, count());
    let placed = place(&mut store, &keyed, &actor(), at(61)).unwrap();
    assert!(matches!(placed.placement, Placement::Pending { run, .. } if run == r1.0));

    // extract's run ends and load's starts: the chain still waits, whole.
    let r2 = starts(&finish(&mut store, home, p1, "extract", r1, at(62)))[0];
    let carried = carry_out_pending(&mut store, home, at(63)).unwrap();
    assert!(
        matches!(carried[0].outcome, Ok(Placed { placement: Placement::Pending { run, .. }, .. }) if run == r2.0),
        "{carried:?}"
    );
    for job in ["extract", "load"] {
        assert_eq!(store.locate(job).unwrap(), Some(home), "{job} waits");
    }

    finish(&mut store, home, p1, "load", r2, at(64));
    let carried = carry_out_pending(&mut store, home, at(65)).unwrap();
    let moved = &carried[0].outcome.as_ref().unwrap().placement;
    assert_eq!(
        moved,
        &Placement::Moved {
            job: name("extract"),
            from: home,
            to: target,
            along: vec![name("load")]
        }
    );
    assert!(
        moved.to_string().ends_with("its chain moved with it: load"),
        "{moved}"
    );
    for job in ["extract", "load"] {
        assert_eq!(store.locate(job).unwrap(), Some(target), "{job} moved");
    }
    assert!(store.pending_moves().unwrap().is_empty());

    // There, the chain runs on: extract's 00:02, then load's, each once.
    let p2 = ProcessId(2);
    store
        .apply_in(target, at(66), Event::ProcessStarted { process: p2 })
        .unwrap();
    let r3 = starts(&tick(&mut store, target, p2, at(120)))[0];
    let r4 = starts(&finish(&mut store, target, p2, "extract", r3, at(121)))[0];
    finish(&mut store, target, p2, "load", r4, at(122));
    for job in ["extract", "load"] {
        let minutes = [T0 + 60_000, T0 + 120_000];
        assert_eq!(covered(&mut store, job), minutes, "{job}");
    }
}

fn status_shows_the_pending_move(url: &str, target: Partition, run: RunId) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duetime"))
        .args(["status", "--store", url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("move "))
        .unwrap_or_else(|| panic!("a move line: {text}"));
    assert!(
        line.contains("nightly: ")
            && line.contains(&format!("to {target}, when its run {run} has ended")),
        "{line}"
    );
    assert!(line.contains("asked by jobs-file"), "{line}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duetime"))
        .args(["status", "--json", "--store", url])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["pending_moves"][0];
    assert_eq!(m["job"], "nightly", "{v}");
    assert_eq!(m["to"], target.to_string());
    assert_eq!(m["waits_for"], run.to_string());
    assert_eq!(m["actor"], "jobs-file");
}

#[test]
fn a_pending_move_is_replaced_and_cleared() {
    let Some(url) = pg::fresh("move_replaced") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let before = def("nightly", None);
    let home = route(&before, count());
    upsert(&mut store, &before, at(0));
    let p1 = ProcessId(1);
    store
        .apply_in(home, at(1), Event::ProcessStarted { process: p1 })
        .unwrap();
    let r1 = starts(&tick(&mut store, home, p1, at(60)))[0];
    let first = def("nightly", Some(&key_for(home, false)));
    let mut second = first.clone();
    second.title = "second".into();
    place(&mut store, &first, &actor(), at(70)).unwrap();
    let placed = place(&mut store, &second, &Actor::new("ann"), at(75)).unwrap();
    assert!(matches!(placed.placement, Placement::Pending { .. }));
    let pending = store.pending_moves().unwrap();
    assert_eq!(pending.len(), 1, "one per job");
    assert_eq!(
        pending[0].def, second,
        "the later definition replaces the earlier"
    );
    assert_eq!(pending[0].actor, Actor::new("ann"));

    // Placed back where it lives: the pending move is void, the definition goes there.
    let back = def("nightly", Some(&key_for(home, true)));
    let placed = place(&mut store, &back, &actor(), at(80)).unwrap();
    assert_eq!(
        placed.placement,
        Placement::Here {
            job: name("nightly"),
            partition: home
        }
    );
    assert!(store.pending_moves().unwrap().is_empty());
    finish(&mut store, home, p1, "nightly", r1, at(90));
    assert!(carry_out_pending(&mut store, home, at(95))
        .unwrap()
        .is_empty());
    assert_eq!(store.locate("nightly").unwrap(), Some(home));

    // `sync` keeps an old definition in force while its move waits, and forgets the
    // pending move of a job the file no longer has.
    let r2 = starts(&tick(&mut store, home, p1, at(120)))[0];
    let away = def("nightly", Some(&key_for(home, false)));
    let synced =
        parts::sync_placed(&mut store, &[away, def("other", None)], &actor(), at(125)).unwrap();
    assert!(matches!(synced.moves[..], [Placement::Pending { run, .. }] if run == r2.0));
    assert_eq!(store.pending_moves().unwrap().len(), 1);
    parts::sync(&mut store, &[def("other", None)], &actor(), at(130)).unwrap();
    assert!(
        store.pending_moves().unwrap().is_empty(),
        "its job left the file"
    );

    // A reload places every definition again: a move whose run has ended happens then.
    let weekly = def("weekly", None);
    let w_home = route(&weekly, count());
    upsert(&mut store, &weekly, at(130));
    let p3 = ProcessId(3);
    store
        .apply_in(w_home, at(131), Event::ProcessStarted { process: p3 })
        .unwrap();
    let rw = starts(&tick(&mut store, w_home, p3, at(180)))[0];
    let away = def("weekly", Some(&key_for(w_home, false)));
    let file = [away, def("other", None)];
    let synced = parts::sync_placed(&mut store, &file, &actor(), at(185)).unwrap();
    assert!(matches!(synced.moves[..], [Placement::Pending { .. }]));
    finish(&mut store, w_home, p3, "weekly", rw, at(190));
    let synced = parts::sync_placed(&mut store, &file, &actor(), at(200)).unwrap();
    assert!(
        matches!(synced.moves[..], [Placement::Moved { from, .. }] if from == w_home),
        "{:?}",
        synced.moves
    );
    assert!(store.pending_moves().unwrap().is_empty());
    assert_eq!(
        store.locate("weekly").unwrap(),
        Some(route(&file[0], count()))
    );
}

#[test]
fn a_refused_move_writes_nothing() {
    let Some(url) = pg::fresh("move_refused") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let before = def("nightly", None);
    let home = route(&before, count());
    upsert(&mut store, &before, at(0));
    // A definition the other state refuses (a timeout under a second): the record was
    // taken out of one state and offered to the other, then the transaction aborted.
    let mut bad = def("nightly", Some(&key_for(home, false)));
    bad.timeout = Duration::from_millis(10);
    let target = route(&bad, count());
    let was = versions(&mut store);
    let err = place(&mut store, &bad, &actor(), at(10)).err().unwrap();
    assert!(
        matches!(&err, StoreError::MoveRefused { job, from, to, .. }
            if job.as_str() == "nightly" && *from == home && *to == target),
        "{err:?}"
    );
    assert_eq!(err.kind().name(), "move_refused");
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert_eq!(versions(&mut store), was, "nothing written");
    assert_eq!(store.locate("nightly").unwrap(), Some(home));
    assert!(move_lines(&url, "nightly").is_empty());
    // Memory was put back: the same handle sees the job where it was.
    assert!(store
        .state_in(home)
        .unwrap()
        .seq_of_name("nightly")
        .is_some());
    assert!(store
        .state_in(target)
        .unwrap()
        .seq_of_name("nightly")
        .is_none());
}

#[test]
fn a_pair_is_two_partitions_of_a_store_of_several() {
    let Some(url) = pg::fresh("move_no_pair") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let err = store
        .transact_pair(Partition(2), Partition(2), &mut |_, _, _, _| Ok(()))
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::NoPair { .. }), "{err:?}");
    assert_eq!(err.kind().name(), "no_pair");
    let dir = tempfile::tempdir().unwrap();
    let mut lite = SqliteStore::open_with(&dir.path().join("s.db"), options(None)).unwrap();
    let err = lite
        .transact_pair(Partition(0), Partition(1), &mut |_, _, _, _| Ok(()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("exactly one partition"), "{err}");
    assert!(lite.pending_moves().unwrap().is_empty());
}

/// Two handles on two threads, each moving a job the other way round between the same
/// two partitions, over and over: every move commits (locked in partition order, neither
/// waits for the other's second row while holding its first).
#[test]
fn moves_the_other_way_round_at_once_both_commit() {
    let Some(url) = pg::fresh("move_crossed") else {
        return;
    };
    let (a, b) = (Partition(1), Partition(5));
    let mut setup = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let (key_a, key_b) = (key_for(a, true), key_for(b, true));
    upsert(&mut setup, &def("east", Some(&key_a)), at(0));
    upsert(&mut setup, &def("west", Some(&key_b)), at(0));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let mover = |job: &'static str, keys: [String; 2]| {
        let (url, barrier) = (url.clone(), barrier.clone());
        std::thread::spawn(move || {
            let mut opts = options(None);
            opts.busy_timeout = std::time::Duration::from_secs(20);
            let mut store = PostgresStore::open_with(&url, opts).unwrap();
            barrier.wait();
            for i in 0..20 {
                let d = def(job, Some(&keys[(i + 1) % 2]));
                let placed = place(&mut store, &d, &actor(), at(10 + i as i64)).unwrap();
                assert!(
                    matches!(placed.placement, Placement::Moved { .. }),
                    "{placed:?}"
                );
            }
            store.conflicts()
        })
    };
    let east = mover("east", [key_a.clone(), key_b.clone()]);
    let west = mover("west", [key_b, key_a]);
    assert_eq!(east.join().unwrap(), 0, "no deadlock to retry");
    assert_eq!(west.join().unwrap(), 0, "no deadlock to retry");
    assert_eq!(
        setup.locate("east").unwrap(),
        Some(a),
        "20 moves: back home"
    );
    assert_eq!(setup.locate("west").unwrap(), Some(b));
    assert_eq!(move_lines(&url, "east").len(), 40);
    assert_eq!(move_lines(&url, "west").len(), 40);
}

/// A store of schema 2 (partitions, before pending moves) is this build's store without
/// the `pending_moves` and `members` tables at version 2 (the 2 -> 3 and 3 -> 4 steps only
/// add those tables; schema 1 to 4 is checked from schema 1's own SQL in partitions.rs):
/// opened, it migrates to 4 with every partition's state and every journal line as they
/// were.
#[test]
fn a_store_of_schema_2_migrates_losing_nothing() {
    let Some(url) = pg::fresh("migrate_to_3") else {
        return;
    };
    let mut store = PostgresStore::open_with(&url, options(Some(P))).unwrap();
    let defs: Vec<JobDef> = (0..12).map(|i| def(&format!("job_{i}"), None)).collect();
    parts::sync(&mut store, &defs, &actor(), at(0)).unwrap();
    let p1 = ProcessId(1);
    for p in count().iter() {
        store
            .apply_in(p, at(1), Event::ProcessStarted { process: p1 })
            .unwrap();
        tick(&mut store, p, p1, at(60));
    }
    let states: Vec<duetime::State> = count()
        .iter()
        .map(|p| store.state_in(p).unwrap().clone())
        .collect();
    let journal = store.journal_all().unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute(
        "DROP TABLE pending_moves; DROP TABLE members; \
         UPDATE meta SET value = '2' WHERE key = 'schema'",
    )
    .unwrap();
    drop(store);

    let mut after = PostgresStore::open_with(&url, options(None)).unwrap();
    let schema: String = raw
        .query_one("SELECT value FROM meta WHERE key = 'schema'", &[])
        .unwrap()
        .get(0);
    assert_eq!(schema, "4");
    for (p, state) in count().iter().zip(&states) {
        assert_eq!(after.state_in(p).unwrap(), state, "{p}");
    }
    assert_eq!(after.journal_all().unwrap(), journal);
    assert!(after.pending_moves().unwrap().is_empty());
    for d in &defs {
        assert_eq!(
            after.locate(d.name.as_str()).unwrap(),
            Some(route(d, count()))
        );
    }
}
