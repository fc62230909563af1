//! End to end with real processes: the `duetime` binary as a daemon over a SQLite file,
//! commands that append a line to a file, `kill -9` in the middle of runs, restarts, two
//! daemons on one store. The simulator's checker then reads the store's journal: every due
//! time accounted exactly once, no due time of a job not safe to repeat started twice; the
//! files the commands wrote are the ground truth of what really ran.
//!
//! Timing is generous on purpose (these machines are shared and slow): the tests assert
//! what must hold whatever the timing, never an exact count.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use duetime::{Effect, Entry, History, JobName, Record, RunId, Schedule};
use duetime_host::runner::ExitFile;
use duetime_host::store::{SqliteStore, Store};
use duetime_sim::check::{self, Horizon, JobFacts, Reported};
use duetime_sim::oracle::Spec;

const BIN: &str = env!("CARGO_BIN_EXE_duetime");

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(jobs: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let text = jobs.replace("{dir}", &dir.path().display().to_string());
        fs::write(dir.path().join("jobs.toml"), text).unwrap();
        World { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn daemon(&self, log: &str) -> Child {
        let log = fs::File::create(self.path(log)).unwrap();
        Command::new(BIN)
            .args(["run", "--tick", "1s", "--jobs"])
            .arg(self.path("jobs.toml"))
            .arg("--store")
            .arg(self.path("duetime.db"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN)
            .args(args)
            .arg("--store")
            .arg(self.path("duetime.db"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The run ids the commands wrote into `file`, one per line.
    fn ran(&self, file: &str) -> Vec<u64> {
        fs::read_to_string(self.path(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    fn journal(&self) -> Vec<Record> {
        let mut store = SqliteStore::open(&self.path("duetime.db")).unwrap();
        store.journal_all().unwrap()
    }

    /// What the runs' supervisors saw, as the checker's ground truth of reported results.
    fn reported(&self) -> Reported {
        let mut r = Reported::new();
        let Ok(entries) = fs::read_dir(self.path("duetime.db.runs")) else {
            return r;
        };
        for e in entries.flatten() {
            let Ok(run) = e.file_name().to_string_lossy().parse::<u64>() else {
                continue;
            };
            let Ok(bytes) = fs::read(e.path().join("exit.json")) else {
                continue;
            };
            let exit: ExitFile = serde_json::from_slice(&bytes).unwrap();
            let outcomes = r.entry(RunId(run)).or_default();
            outcomes.push(exit.outcome(false));
            outcomes.push(exit.outcome(true));
        }
        r
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// Waits for the child to exit, killing it after `limit`.
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        sleep(Duration::from_millis(50));
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn every_spec(schedule: &Schedule) -> Spec {
    match schedule {
        Schedule::Every { period, offset } => Spec::Every {
            period_ms: period.as_millis() as i64,
            offset_ms: offset.as_millis() as i64,
        },
        other => panic!("these tests use `every` schedules, not {other}"),
    }
}

/// The simulator's checker over the store's journal; `end` is when the last daemon was
/// told to drain (due times well before it must be accounted).
fn check_journal(w: &World, end: i64) -> Vec<String> {
    let config = duetime::Config::with_tick(duetime::Duration::from_secs(1));
    let jobs = duetime_host::jobs_file::load_with(&w.path("jobs.toml"), &config).unwrap();
    let facts: BTreeMap<JobName, JobFacts> = jobs
        .jobs
        .iter()
        .map(|j| {
            let mut specs = BTreeMap::new();
            specs.insert(j.def.schedule.to_string(), every_spec(&j.def.schedule));
            let f = JobFacts {
                safe_to_repeat: j.def.safe_to_repeat,
                missed: j.def.missed,
                pause_after_failures: j.def.pause_after_failures,
                specs,
            };
            (j.def.name.clone(), f)
        })
        .collect();
    let horizon = Horizon {
        end,
        settle_bound: 5_000,
        run_bound: 15_000,
        check_liveness: true,
    };
    let mut probes = BTreeMap::new();
    check::check(&w.journal(), &facts, &w.reported(), horizon, &mut probes)
        .iter()
        .map(|v| v.to_string())
        .collect()
}

/// Run ids of `job`'s starts and the due times each covered.
fn starts(journal: &[Record], job: &str) -> BTreeMap<u64, (i64, i64)> {
    journal
        .iter()
        .filter(|r| r.job.as_str() == job)
        .filter_map(|r| match &r.entry {
            Entry::History(History::Started {
                run,
                covers: Some(c),
                ..
            }) => Some((run.0, (c.from.as_millis(), c.to.as_millis()))),
            _ => None,
        })
        .collect()
}

/// No due time of `job` was covered by two runs that really ran (wrote their line).
fn assert_no_due_time_ran_twice(w: &World, job: &str, file: &str) {
    let ran = w.ran(file);
    let unique: BTreeSet<u64> = ran.iter().copied().collect();
    assert_eq!(unique.len(), ran.len(), "{job}: a run wrote twice: {ran:?}");
    let covers = starts(&w.journal(), job);
    let mut seen: Vec<(i64, i64, u64)> = Vec::new();
    for run in &ran {
        let &(a, b) = covers
            .get(run)
            .unwrap_or_else(|| panic!("{job}: r{run} ran but the journal never started it"));
        for &(x, y, other) in &seen {
            assert!(
                b < x || y < a,
                "{job}: r{run} and r{other} both ran due times in {a}..{b} / {x}..{y}"
            );
        }
        seen.push((a, b, *run));
    }
}

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
