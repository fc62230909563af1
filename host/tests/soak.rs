//! Several machines on one PostgreSQL store, under `kill -9`: three daemons (each with its
//! own run directories, as on its own machine), jobs every one or two seconds, daemons
//! killed and restarted at random, the database server itself crash-restarted once. Then
//! the simulator's checker reads the journal: every due time accounted exactly once, no
//! due time of a job not safe to repeat started twice; the files the commands wrote are
//! the ground truth of what really ran.
//!
//! A minute by default (what CI runs); longer with `DUETIME_SOAK_SECS`, and another
//! sequence of kills with `DUETIME_SOAK_SEED` (the test prints the seed it used):
//!
//!     scripts/pg start
//!     DUETIME_TEST_POSTGRES=$(scripts/pg url) DUETIME_SOAK_SECS=600 \
//!         cargo test --release -p duetime-host --test soak -- --nocapture
//!
//! One test in this file on purpose: it restarts the server, which the tests of other
//! files (run one file at a time by cargo) never see.

#[path = "support/pg.rs"]
mod pg;
#[path = "support/world.rs"]
mod world;

use std::process::{Child, Command};
use std::thread::sleep;
use std::time::{Duration, Instant};

use duetime::{Entry, History, LedgerKind};
use world::{
    assert_no_due_time_ran_twice, check_journal, drain_all, now_ms, paused_by_system, signal, wait,
    World,
};

const JOBS: &str = r#"
[[job]]
name = "each_second"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/each_second.txt"]

[[job]]
name = "required"
every = "2s"
missed = "required"
command = ["sh", "-c", "sleep 0.3; echo $DUETIME_RUN >> {dir}/required.txt"]

[[job]]
name = "slow"
every = "2s"
command = ["sh", "-c", "sleep 1.5; echo $DUETIME_RUN >> {dir}/slow.txt"]

[[job]]
name = "repeatable"
every = "1s"
safe_to_repeat = true
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/repeatable.txt"]
"#;

/// The calm at the end of the soak: more than a lease (ten seconds) and a tick, so every
/// run of a daemon killed at the last moment is recorded lost before the journal is judged.
const CALM_SECS: u64 = 20;

/// The jobs not safe to repeat, and the files their runs write.
const ONCE_ONLY: &[(&str, &str)] = &[
    ("each_second", "each_second.txt"),
    ("required", "required.txt"),
    ("slow", "slow.txt"),
];

/// A small deterministic generator, so a seed replays the same kills.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn restart_server() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pg");
    let status = Command::new(script).arg("restart").status();
    match status {
        Ok(s) if s.success() => {}
        other => {
            assert!(
                std::env::var_os("CI").is_none(),
                "scripts/pg restart failed: {other:?}"
            );
            eprintln!("soak: could not restart the server ({other:?}); carrying on without");
        }
    }
}

#[test]
fn three_daemons_on_postgres_under_kill_9_and_a_server_restart() {
    let Some(url) = pg::fresh("soak") else { return };
    let secs: u64 = std::env::var("DUETIME_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
        .max(CALM_SECS + 10);
    let seed: u64 = std::env::var("DUETIME_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ms() as u64);
    eprintln!("soak: {secs} s, DUETIME_SOAK_SEED={seed}");
    let mut dice = Dice(seed | 1);

    let w = World::on(&url, JOBS);
    let node = |i: usize| (format!("node{i}.log"), format!("node{i}.runs"));
    let start = |i: usize| -> Child {
        let (log, runs) = node(i);
        w.daemon_at(&log, Some(&runs))
    };
    let mut daemons: Vec<Child> = (0..3).map(start).collect();
    let began = Instant::now();
    // Chaos until twenty seconds before the end, then calm, so the last due times settle:
    // a daemon killed at the last moment leaves runs whose leases (ten seconds, `MIN_LEASE`,
    // under a one-second tick) must lapse and be recorded lost before the end.
    let chaos = Duration::from_secs(secs - CALM_SECS);
    let server_restart_at = chaos / 2;
    let mut server_restarted = false;
    let mut kills = 0;
    while began.elapsed() < chaos {
        sleep(Duration::from_millis(1_000 + dice.below(3_000)));
        if !server_restarted && began.elapsed() >= server_restart_at {
            eprintln!(
                "soak: restarting the database server at {:?}",
                began.elapsed()
            );
            restart_server();
            server_restarted = true;
            continue;
        }
        let i = dice.below(3) as usize;
        signal(&daemons[i], libc::SIGKILL);
        wait(&mut daemons[i], Duration::from_secs(10));
        kills += 1;
        sleep(Duration::from_millis(dice.below(2_500)));
        daemons[i] = start(i);
    }
    sleep(Duration::from_secs(CALM_SECS));
    let end = now_ms();
    drain_all(&w, &mut daemons, |i| node(i).0, Duration::from_secs(60));

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "seed {seed}: {violations:#?}");
    for (job, file) in ONCE_ONLY {
        assert_no_due_time_ran_twice(&w, job, file);
    }
    let journal = w.journal();
    let count = |f: &dyn Fn(&Entry) -> bool| journal.iter().filter(|r| f(&r.entry)).count();
    let ran = count(&|e| matches!(e, Entry::Ledger(l) if matches!(l.kind, LedgerKind::Ran { .. })));
    let missed =
        count(&|e| matches!(e, Entry::Ledger(l) if matches!(l.kind, LedgerKind::Missed { .. })));
    let lost = count(&|e| matches!(e, Entry::History(History::Lost { .. })));
    let adopted = count(&|e| matches!(e, Entry::History(History::Adopted { .. })));
    eprintln!(
        "soak: {kills} kills, server restarted: {server_restarted}; journal: {} lines, \
         {ran} ran, {missed} missed, {lost} lost, {adopted} adopted",
        journal.len()
    );
    // The jobs kept running through it all. A job safe to repeat runs again whatever is
    // lost. One that is not safe to repeat is paused by the system when a run of it is lost
    // (a kill and a restart slower than its lease: that is the promise, and a person resumes
    // it), so it must have kept running unless the journal says it was paused so.
    let repeatable = w.ran("repeatable.txt").len() as u64;
    assert!(
        repeatable >= secs / 3,
        "repeatable ran only {repeatable} times in {secs} s"
    );
    let each_second = w.ran("each_second.txt").len() as u64;
    let paused_by_loss: Vec<&str> = journal
        .iter()
        .filter(|r| paused_by_system(r))
        .map(|r| r.job.as_str())
        .collect();
    eprintln!("soak: paused by a loss: {paused_by_loss:?}");
    let paused_by_loss = paused_by_loss.contains(&"each_second");
    assert!(
        each_second >= secs / 3 || paused_by_loss,
        "each_second ran only {each_second} times in {secs} s, and was never paused by a loss"
    );
}
