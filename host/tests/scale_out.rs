//! Two daemons dividing a PostgreSQL store of four partitions (issue 43): each claims its
//! share and steps it, every job runs; one is killed with `kill -9` and the other takes
//! its partitions over once their leases end, so the jobs keep running (a job not safe to
//! repeat whose run the kill left unreported is paused by the system, as promised); no due
//! time of a job not safe to repeat runs twice across the failover; the survivor drains on
//! SIGTERM and hands every partition back.

#[path = "support/pg.rs"]
mod pg;
#[path = "support/web.rs"]
mod web;
#[path = "support/world.rs"]
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::thread::sleep;
use std::time::Duration;

use duetime_host::store::{self, Store};
use duetime_loop::{route_of, PartitionCount};
use world::{drain_all, poll, signal, wait, World};

/// The jobs below `SAFE` are not safe to repeat (the default): a due time of theirs
/// written twice is a run started twice.
const SAFE: usize = 4;

/// Eight jobs every second, each writing its due time to a file of its own; the last four
/// safe to repeat.
fn jobs() -> String {
    (0..8)
        .map(|i| {
            format!(
                "[[job]]\nname = \"job_{i}\"\nevery = \"1s\"\nsafe_to_repeat = {}\n\
                 command = [\"sh\", \"-c\", \"echo $DUETIME_DUE >> {{dir}}/job_{i}.txt\"]\n\n",
                i >= SAFE
            )
        })
        .collect()
}

/// The jobs the system paused after a run of theirs was lost.
fn paused_by_loss(w: &World) -> Vec<usize> {
    w.journal()
        .iter()
        .filter(|r| world::paused_by_system(r))
        .filter_map(|r| r.job.as_str().strip_prefix("job_")?.parse().ok())
        .collect()
}

/// The due times each job's runs wrote, by job.
fn written(w: &World) -> BTreeMap<usize, Vec<String>> {
    (0..8)
        .map(|i| {
            let text = fs::read_to_string(w.path(&format!("job_{i}.txt"))).unwrap_or_default();
            (i, text.lines().map(str::to_string).collect())
        })
        .collect()
}

/// Each partition's owner as the store's rows say (`None`: unheld); no partitions before
/// the first daemon has made the store.
fn owners(url: &str) -> Vec<Option<i64>> {
    let options = store::Options {
        create: false,
        ..Default::default()
    };
    let Ok(mut s) = store::open(url, options) else {
        return Vec::new();
    };
    s.partition_rows()
        .unwrap()
        .into_iter()
        .map(|r| r.owner.filter(|_| r.lease_until.is_some()))
        .collect()
}

fn log(w: &World, name: &str) -> String {
    fs::read_to_string(w.path(name)).unwrap_or_default()
}

#[test]
fn two_daemons_divide_the_partitions_and_one_takes_over_after_a_kill_9() {
    let Some(url) = pg::fresh("scale_out") else {
        return;
    };
    let w = World::on(&url, &jobs());
    let flags = ["--tick", "1s", "--partitions", "4"];
    let mut a = w.daemon_with("a.log", Some("a.runs"), &flags);
    let mut b = w.daemon_with("b.log", Some("b.runs"), &flags);

    // Both hold a share: two partitions each, once the second has joined and the first
    // has handed it two.
    let divided = poll(Duration::from_secs(60), || {
        let o = owners(&url);
        let mut distinct: Vec<i64> = o.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        (o.iter().all(Option::is_some) && distinct.len() == 2).then_some(o)
    });
    assert!(
        divided.is_some(),
        "the partitions were never divided between the two: {:?}\na:\n{}\nb:\n{}",
        owners(&url),
        log(&w, "a.log"),
        log(&w, "b.log")
    );
    // `duetime status` shows both daemons alive (their heartbeats), each holding a share.
    let (code, out, _) = w.cli(&["status"]);
    assert_eq!(code, 0, "{out}");
    let alive = out.lines().filter(|l| l.contains(" alive ")).count();
    assert_eq!(alive, 2, "{out}");
    assert_eq!(out.matches(", owner p").count(), 4, "{out}");
    // Every job runs, wherever its partition is.
    let all_ran = |at_least: usize| {
        poll(Duration::from_secs(60), || {
            let runs = written(&w);
            runs.values().all(|r| r.len() >= at_least).then_some(())
        })
    };
    assert!(all_ran(3).is_some(), "not every job ran: {:?}", written(&w));

    // kill -9 one: its leases end (ten seconds under a one-second tick) and the other
    // claims its partitions, so every job runs again after the kill.
    signal(&a, libc::SIGKILL);
    wait(&mut a, Duration::from_secs(10));
    let before: BTreeMap<usize, usize> =
        written(&w).into_iter().map(|(i, r)| (i, r.len())).collect();
    let taken_over = poll(Duration::from_secs(60), || {
        let o = owners(&url);
        let distinct: BTreeSet<i64> = o.iter().flatten().copied().collect();
        (o.iter().all(Option::is_some) && distinct.len() == 1).then_some(())
    });
    assert!(
        taken_over.is_some(),
        "the survivor never took every partition: {:?}\nb:\n{}",
        owners(&url),
        log(&w, "b.log")
    );
    let kept_running = poll(Duration::from_secs(60), || {
        let runs = written(&w);
        let paused = paused_by_loss(&w);
        runs.iter()
            .all(|(i, r)| r.len() >= before[i] + 3 || (*i < SAFE && paused.contains(i)))
            .then_some(())
    });
    assert!(
        kept_running.is_some(),
        "a job stopped running after the kill: before {before:?}, now {:?}\nb:\n{}",
        written(&w)
            .iter()
            .map(|(i, r)| (*i, r.len()))
            .collect::<Vec<_>>(),
        log(&w, "b.log")
    );

    // SIGTERM: every seat drains, every partition is handed back, exit 0.
    signal(&b, libc::SIGTERM);
    assert_eq!(
        wait(&mut b, Duration::from_secs(60)),
        Some(0),
        "the survivor did not drain:\n{}",
        log(&w, "b.log")
    );
    assert!(
        owners(&url).iter().all(Option::is_none),
        "a partition still held after a clean stop: {:?}",
        owners(&url)
    );
    eprintln!(
        "scale_out: divided {divided:?}; runs per job {:?}; paused by a loss {:?}",
        written(&w)
            .iter()
            .map(|(i, r)| (*i, r.len()))
            .collect::<Vec<_>>(),
        paused_by_loss(&w)
    );
    // No due time of a job not safe to repeat ran twice, across the division, the kill
    // and the takeover.
    sleep(Duration::from_millis(200));
    for (i, dues) in written(&w).into_iter().filter(|(i, _)| *i < SAFE) {
        let mut seen = std::collections::BTreeSet::new();
        for d in &dues {
            assert!(seen.insert(d), "job_{i}: due time {d} ran twice: {dues:?}");
        }
    }
}

/// A daemon frozen (SIGSTOP) past its leases while another takes its partitions over, then
/// thawed: its seats wake believing they hold their partitions, and each stops without
/// writing (its write under the old epoch fenced, or its owner's first round finding the
/// partition lost, whichever comes first); then it takes its share again under new epochs.
/// No due time of a job not safe to repeat runs twice.
#[test]
fn a_daemon_frozen_past_its_leases_is_fenced_when_it_thaws() {
    let Some(url) = pg::fresh("scale_out_frozen") else {
        return;
    };
    let w = World::on(&url, &jobs());
    let flags = ["--tick", "1s", "--partitions", "4"];
    let a = w.daemon_with("a.log", Some("a.runs"), &flags);
    let b = w.daemon_with("b.log", Some("b.runs"), &flags);
    let two_owners = |o: &[Option<i64>]| {
        let distinct: BTreeSet<i64> = o.iter().flatten().copied().collect();
        !o.is_empty() && o.iter().all(Option::is_some) && distinct.len() == 2
    };
    let divided = poll(Duration::from_secs(60), || {
        let o = owners(&url);
        two_owners(&o).then_some(o)
    });
    assert!(divided.is_some(), "never divided:\n{}", log(&w, "a.log"));

    signal(&a, libc::SIGSTOP);
    // Within a lease (ten seconds) and a few rounds, even if it froze in the middle of a
    // transaction holding a partition's row: the server ends that transaction a lease
    // after it went idle (on a handle that holds partitions), so the claim never waits
    // for its minute-long default.
    let taken_over = poll(Duration::from_secs(30), || {
        let o = owners(&url);
        let distinct: BTreeSet<i64> = o.iter().flatten().copied().collect();
        (o.iter().all(Option::is_some) && distinct.len() == 1).then_some(())
    });
    assert!(
        taken_over.is_some(),
        "never taken over:\n{}",
        log(&w, "b.log")
    );
    signal(&a, libc::SIGCONT);

    // The thawed daemon's seats stop without writing, and it divides the partitions with
    // the other again. A seat says so one of three ways: fenced or found lost once
    // started, or before it had started (frozen between its claim and its start-up);
    // ended unasked (frozen in the middle of its start-up's transaction, whose connection
    // the server ended a lease after it went idle, so the other's claim waited no longer);
    // or not started at all (its store handle refused).
    let fenced = poll(Duration::from_secs(60), || {
        let text = log(&w, "a.log");
        (text.contains("partition lost to another daemon")
            || text.contains("its seat ended unasked")
            || text.contains("the seat did not start"))
        .then_some(())
    });
    assert!(
        fenced.is_some(),
        "no seat of the thawed daemon stopped:\n{}",
        log(&w, "a.log")
    );
    let again = poll(Duration::from_secs(60), || {
        two_owners(&owners(&url)).then_some(())
    });
    assert!(
        again.is_some(),
        "never divided again: {:?}\na:\n{}",
        owners(&url),
        log(&w, "a.log")
    );

    let logs = ["a.log", "b.log"];
    drain_all(
        &w,
        &mut [a, b],
        |i| logs[i].to_string(),
        Duration::from_secs(60),
    );
    for (i, dues) in written(&w).into_iter().filter(|(i, _)| *i < SAFE) {
        let mut seen = std::collections::BTreeSet::new();
        for d in &dues {
            assert!(seen.insert(d), "job_{i}: due time {d} ran twice: {dues:?}");
        }
    }
}

/// The threads of process `pid` named `name` (Linux: `/proc/PID/task/*/comm`).
fn threads_named(pid: u32, name: &str) -> usize {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

/// A daemon holding four partitions whose alerts go somewhere delivers them from one
/// thread, not one a partition: its seats share the owner's.
#[test]
fn a_daemon_of_several_partitions_delivers_alerts_from_one_thread() {
    let Some(url) = pg::fresh("one_courier") else {
        return;
    };
    let jobs = format!("[alerts]\ncommand = [\"true\"]\n\n{}", jobs());
    let w = World::on(&url, &jobs);
    let mut d = w.daemon_with(
        "d.log",
        Some("d.runs"),
        &["--tick", "1s", "--partitions", "4"],
    );
    let all_held = poll(Duration::from_secs(60), || {
        owners(&url).iter().all(Option::is_some).then_some(())
    });
    assert!(
        all_held.is_some(),
        "never held every partition:\n{}",
        log(&w, "d.log")
    );
    // Each seat is up once its partition is held; give the last a moment to start.
    sleep(Duration::from_secs(2));
    let couriers = threads_named(d.id(), "duetime-alerts");
    // Stopped before judging, so a failure leaves no daemon behind.
    signal(&d, libc::SIGTERM);
    wait(&mut d, Duration::from_secs(30));
    assert_eq!(couriers, 1, "{}", log(&w, "d.log"));
}

/// Connections a daemon may open in the test below (`--pg-connections`): its owner's own
/// and three its 32 seats share.
const CONNECTIONS: usize = 4;

/// One job name per partition of a store of `count`: every partition has work to step.
fn one_job_per_partition(count: PartitionCount) -> Vec<String> {
    let mut names: Vec<Option<String>> = vec![None; count.get() as usize];
    for k in 0.. {
        let name = format!("job_{k}");
        let p = route_of(None, &name, count).0 as usize;
        if names[p].is_none() {
            names[p] = Some(name);
        }
        if names.iter().all(Option::is_some) {
            break;
        }
    }
    names.into_iter().flatten().collect()
}

/// A database of its own on the test server (so `pg_stat_activity` counts only this test's
/// daemons), dropped when the test ends, however it ends.
struct Database {
    admin: postgres::Client,
    name: String,
    url: String,
    /// The test's one connection to the database, to read the leases (so no handle of the
    /// test's comes and goes while the daemons' are counted), and its backend's pid.
    watcher: Option<(postgres::Client, i32)>,
}

impl Database {
    fn make(server: &str, name: &str) -> Database {
        let mut admin = postgres::Client::connect(server, postgres::NoTls).unwrap();
        let name = format!("{name}_{}", std::process::id());
        // One statement a call: neither runs inside a transaction block.
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let base = server.rsplit_once('/').map_or(server, |(base, _)| base);
        let url = format!("{base}/{name}");
        let mut watcher = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let pid = watcher
            .query_one("SELECT pg_backend_pid()", &[])
            .unwrap()
            .get(0);
        Database {
            admin,
            name,
            url,
            watcher: Some((watcher, pid)),
        }
    }

    /// The connections open to this database now, but the watcher's (the admin's is to
    /// another database).
    fn connections(&mut self) -> Vec<(i32, String)> {
        let pid = self.watcher.as_ref().map_or(0, |w| w.1);
        self.admin
            .query(
                "SELECT pid, format('%s %s %s %s %s', pid, application_name, state, \
                 backend_start, left(query, 60)) \
                 FROM pg_stat_activity WHERE datname = $1 AND pid <> $2",
                &[&self.name, &pid],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    /// The connections held now: those open, and, when there are more than `limit`, only
    /// those still open a moment later. A backend lingers in `pg_stat_activity` for a
    /// while after its client closed it (on a loaded machine, long enough to be sampled
    /// beside the connection a pool opened in its place); one the daemon holds stays.
    fn held(&mut self, limit: usize) -> Vec<String> {
        let now = self.connections();
        if now.len() <= limit {
            return now.into_iter().map(|(_, row)| row).collect();
        }
        sleep(Duration::from_millis(500));
        let later: BTreeSet<i32> = self.connections().iter().map(|c| c.0).collect();
        let (held, gone): (Vec<_>, Vec<_>) = now.into_iter().partition(|c| later.contains(&c.0));
        eprintln!(
            "{} connections open, of which closing: {:?}",
            held.len() + gone.len(),
            gone
        );
        held.into_iter().map(|(_, row)| row).collect()
    }

    /// Each partition's owner while its lease is set, as `owners` reads them, through the
    /// watcher; none before a daemon has made the store.
    fn owners(&mut self) -> Vec<Option<i64>> {
        let Some((watcher, _)) = self.watcher.as_mut() else {
            return Vec::new();
        };
        watcher
            .query("SELECT owner, lease_until FROM globals ORDER BY part", &[])
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        r.get::<_, Option<i64>>(0)
                            .filter(|_| r.get::<_, Option<i64>>(1).is_some())
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.watcher = None;
        let _ = self.admin.batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// Issue 43: two daemons on a new store, which has 64 partitions by default, each given
/// `--pg-connections 4`. Each holds 32 partitions, a seat each, yet the two together never
/// hold more than 8 connections to the database (sampled throughout, from
/// `pg_stat_activity`), and every partition is stepped: a job in each runs again and again.
/// One serves the job page (`--http`), asked for its list and a job's page at every
/// sample: the page's handle takes its connections from the seats' pool too.
#[test]
fn two_daemons_on_64_partitions_hold_a_few_connections_and_step_every_partition() {
    let Some(server) = pg::server("pool") else {
        return;
    };
    let mut db = Database::make(&server, "duetime_pool");
    let names = one_job_per_partition(PartitionCount::POSTGRES_DEFAULT);
    let jobs: String = names
        .iter()
        .map(|n| {
            format!(
                "[[job]]\nname = \"{n}\"\nevery = \"1s\"\nsafe_to_repeat = true\n\
                 command = [\"sh\", \"-c\", \"echo $DUETIME_DUE >> {{dir}}/{n}.txt\"]\n\n"
            )
        })
        .collect();
    let w = World::on(&db.url, &jobs);
    let flags = ["--tick", "1s", "--pg-connections", "4"];
    let port = web::free_port();
    let addr = format!("127.0.0.1:{port}");
    let a = w.daemon_with(
        "a.log",
        Some("a.runs"),
        &[&flags[..], &["--http", &addr]].concat(),
    );
    let b = w.daemon_with("b.log", Some("b.runs"), &flags);
    let mut pages_answered = 0;
    let runs_of = |n: &String| {
        fs::read_to_string(w.path(&format!("{n}.txt")))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let mut most = Vec::new();
    let mut sample = |db: &mut Database| {
        for path in ["/api/jobs", &format!("/jobs/{}", names[0])] {
            if web::get(port, path).is_some_and(|(status, _)| status == 200) {
                pages_answered += 1;
            }
        }
        let now = db.held(2 * CONNECTIONS);
        if now.len() > most.len() {
            most = now;
        }
    };
    // Until the two have divided the partitions and every job has run three times since.
    let divided = poll(Duration::from_secs(120), || {
        sample(&mut db);
        let o = db.owners();
        let distinct: BTreeSet<i64> = o.iter().flatten().copied().collect();
        (o.len() == 64 && o.iter().all(Option::is_some) && distinct.len() == 2).then_some(())
    });
    assert!(
        divided.is_some(),
        "the 64 partitions were never divided between the two: {:?}\na:\n{}",
        db.owners(),
        log(&w, "a.log")
    );
    let since: Vec<usize> = names.iter().map(runs_of).collect();
    let all_ran = poll(Duration::from_secs(90), || {
        sample(&mut db);
        names
            .iter()
            .zip(&since)
            .all(|(n, &before)| runs_of(n) >= before + 3)
            .then_some(())
    });
    let behind: Vec<(&String, usize)> = names
        .iter()
        .map(|n| (n, runs_of(n)))
        .filter(|&(_, r)| r < 3)
        .collect();
    assert!(
        all_ran.is_some(),
        "not every partition's job ran: {behind:?}\na:\n{}",
        log(&w, "a.log")
    );
    let most = most;
    eprintln!(
        "pool: at most {} connections for two daemons over 64 partitions",
        most.len()
    );
    assert!(
        most.len() <= 2 * CONNECTIONS,
        "{} connections for two daemons of --pg-connections {CONNECTIONS}:\n{}",
        most.len(),
        most.join("\n")
    );
    assert!(!most.is_empty(), "the daemons' connections were seen");
    assert!(
        pages_answered > 0,
        "the page never answered\na:\n{}",
        log(&w, "a.log")
    );
    let logs = ["a.log", "b.log"];
    drain_all(
        &w,
        &mut [a, b],
        |i| logs[i].to_string(),
        Duration::from_secs(60),
    );
    assert!(
        db.owners().iter().all(Option::is_none),
        "a partition still held after a clean stop"
    );
}
