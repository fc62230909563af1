//! End to end with real processes: the `duetime` binary as a daemon over a SQLite file,
//! commands that append a line to a file, `kill -9` in the middle of runs, restarts, two
//! daemons on one store. The simulator's checker then reads the store's journal: every due
//! time accounted exactly once, no due time of a job not safe to repeat started twice; the
//! files the commands wrote are the ground truth of what really ran.
//!
//! Timing is generous on purpose (these machines are shared and slow): the tests assert
//! what must hold whatever the timing, never an exact count.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::thread::sleep;
use std::time::{Duration, Instant};

use duetime::{Effect, Entry, History};
use world::{assert_no_due_time_ran_twice, check_journal, now_ms, signal, wait, World};

const JOBS: &str = r#"
[[job]]
name = "tick"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/tick.txt"]

[[job]]
name = "slow"
every = "5s"
missed = "required"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/slow.started; sleep 4; echo $DUETIME_RUN >> {dir}/slow.txt"]

[[job]]
name = "safe"
every = "2s"
safe_to_repeat = true
command = ["sh", "-c", "sleep 0.5; echo $DUETIME_RUN >> {dir}/safe.txt"]
"#;

#[test]
fn kill_9_in_the_middle_of_runs_loses_nothing_and_runs_nothing_twice() {
    let w = World::new(JOBS);
    let mut first = w.daemon("first.log");
    // Killed half a second into a run of `slow` (four seconds long), so its command
    // outlives the daemon and is still going when the next one starts.
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("slow.started").len() < 2 {
        assert!(Instant::now() < deadline, "slow never started twice");
        sleep(Duration::from_millis(50));
    }
    sleep(Duration::from_millis(500));
    signal(&first, libc::SIGKILL);
    wait(&mut first, Duration::from_secs(10));
    // Down for a while: due times pass with nobody ticking.
    sleep(Duration::from_millis(2_000));
    let mut second = w.daemon("second.log");
    sleep(Duration::from_millis(6_000));
    let end = now_ms();
    signal(&second, libc::SIGTERM);
    let code = wait(&mut second, Duration::from_secs(60));
    let log = fs::read_to_string(w.path("second.log")).unwrap();
    assert_eq!(code, Some(0), "the drained daemon exits 0:\n{log}");
    assert!(log.contains("drained"), "{log}");

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "tick", "tick.txt");
    assert_no_due_time_ran_twice(&w, "slow", "slow.txt");
    // Both incarnations ran things, and the down time shows in the journal.
    assert!(w.ran("tick.txt").len() >= 4, "{:?}", w.ran("tick.txt"));
    let journal = w.journal();
    let missed = journal.iter().any(|r| {
        matches!(&r.entry, Entry::Ledger(l) if matches!(l.kind, duetime::LedgerKind::Missed { .. }))
    });
    assert!(missed, "the down time left no missed due time");
    // Whatever was running when the first daemon died was adopted or reported by the
    // second, never left to lapse.
    let lost: Vec<String> = journal
        .iter()
        .filter(|r| matches!(r.entry, Entry::History(History::Lost { .. })))
        .map(|r| Effect::Record(r.clone()).to_string())
        .collect();
    assert!(lost.is_empty(), "{lost:?}");
}

#[test]
fn two_daemons_on_one_store_with_one_killed() {
    let w = World::new(JOBS);
    let mut a = w.daemon("a.log");
    let mut b = w.daemon("b.log");
    sleep(Duration::from_millis(4_000));
    let killed_at = now_ms();
    signal(&a, libc::SIGKILL);
    wait(&mut a, Duration::from_secs(10));
    sleep(Duration::from_millis(5_000));
    let end = now_ms();
    signal(&b, libc::SIGTERM);
    let code = wait(&mut b, Duration::from_secs(60));
    assert_eq!(
        code,
        Some(0),
        "{}",
        fs::read_to_string(w.path("b.log")).unwrap()
    );

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "tick", "tick.txt");
    assert_no_due_time_ran_twice(&w, "slow", "slow.txt");
    // The survivor carries on: runs start after the other daemon died.
    let journal = w.journal();
    let after_kill = journal
        .iter()
        .filter(|r| r.at.as_millis() > killed_at)
        .filter(|r| matches!(r.entry, Entry::History(History::Started { .. })))
        .count();
    assert!(
        after_kill >= 2,
        "only {after_kill} runs started after the kill"
    );
}

#[test]
fn pause_resume_and_run_now_through_the_command_line() {
    let w = World::new(JOBS);
    let mut d = w.daemon("d.log");
    sleep(Duration::from_millis(2_500));

    let (code, out, err) = w.cli(&["pause", "tick", "--note", "maintenance", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = w.cli(&["pause", "tick"]);
    assert_eq!(code, 1, "pausing twice is refused");
    assert!(err.contains("refused"), "{err}");
    let paused_at = w.ran("tick.txt").len();
    sleep(Duration::from_millis(3_000));
    // At most a run that was already going finishes while paused.
    assert!(w.ran("tick.txt").len() <= paused_at + 1);
    let (code, out, _) = w.cli(&["list"]);
    assert_eq!(code, 0);
    let line = out.lines().find(|l| l.starts_with("tick")).unwrap();
    assert!(line.contains("paused"), "{out}");

    let (code, out, err) = w.cli(&["resume", "tick", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = w.cli(&["run-now", "slow"]);
    assert_eq!(
        code, 1,
        "a job not safe to repeat cannot be run by hand: {err}"
    );
    let before = w.ran("safe.txt").len();
    // Refused while one of its runs is in flight: ask until it is between runs.
    let accepted = (0..50).any(|_| {
        let (code, out, err) = w.cli(&["run-now", "safe", "--by", "bo"]);
        assert!(code == 0 || err.contains("in flight"), "{out}{err}");
        code == 0 || {
            sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(accepted, "run-now was never accepted");
    sleep(Duration::from_millis(3_000));
    assert!(w.ran("safe.txt").len() > before);
    assert!(
        w.ran("tick.txt").len() > paused_at + 1,
        "tick runs again after resume"
    );

    let (code, out, _) = w.cli(&["show", "tick"]);
    assert_eq!(code, 0);
    assert!(out.contains("paused by ana"), "{out}");
    assert!(out.contains("resumed by ana"), "{out}");
    let (code, _, err) = w.cli(&["show", "nosuch"]);
    assert_eq!(code, 1);
    assert!(err.contains("no job named"), "{err}");

    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn ctrl_c_twice_stops_at_once_and_the_next_daemon_adopts_the_run() {
    let w = World::new(
        r#"
[[job]]
name = "long"
every = "30s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/long.started; sleep 4; echo $DUETIME_RUN >> {dir}/long.txt"]
"#,
    );
    let mut first = w.daemon("first.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("long.started").is_empty() {
        assert!(Instant::now() < deadline, "long never started");
        sleep(Duration::from_millis(50));
    }
    // The first Ctrl-C drains (it would wait for the run); the second stops at once.
    signal(&first, libc::SIGINT);
    sleep(Duration::from_millis(300));
    signal(&first, libc::SIGINT);
    let code = wait(&mut first, Duration::from_secs(3));
    let log = fs::read_to_string(w.path("first.log")).unwrap();
    assert_eq!(code, Some(130), "{log}");
    assert!(w.ran("long.txt").is_empty(), "the run was still going");

    let mut second = w.daemon("second.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("long.txt").is_empty() {
        assert!(Instant::now() < deadline, "the run never finished");
        sleep(Duration::from_millis(50));
    }
    sleep(Duration::from_millis(1_500));
    signal(&second, libc::SIGTERM);
    assert_eq!(wait(&mut second, Duration::from_secs(60)), Some(0));

    let journal = w.journal();
    let lines: Vec<String> = journal
        .iter()
        .map(|r| Effect::Record(r.clone()).to_string())
        .collect();
    assert!(lines.iter().any(|l| l.contains("adopted by")), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("ran r1")), "{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains("lost")), "{lines:#?}");
}

#[test]
fn a_job_that_requires_confirmation_waits_for_duetime_confirm() {
    let w = World::new(
        r#"
[[job]]
name = "guarded"
every = "1s"
requires_confirmation = true
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/guarded.txt"]
"#,
    );
    let mut d = w.daemon("d.log");
    sleep(Duration::from_millis(2_500));
    assert!(w.ran("guarded.txt").is_empty(), "held until confirmed");
    let (code, out, err) = w.cli(&["show", "guarded"]);
    assert_eq!(code, 0, "{out}{err}");
    let digest = out
        .split("--digest ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("show names the digest to confirm: {out}"))
        .to_string();
    let (code, _, err) = w.cli(&["confirm", "guarded", "--digest", "0000000000000000"]);
    assert_eq!(code, 1, "a wrong digest is refused");
    assert!(
        err.contains(&digest),
        "the refusal names the digest expected: {err}"
    );
    let (code, out, err) = w.cli(&["confirm", "guarded", "--digest", &digest, "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    sleep(Duration::from_millis(3_000));
    assert!(!w.ran("guarded.txt").is_empty(), "runs once confirmed");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}
