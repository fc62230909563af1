//! Worlds of real processes for the end-to-end tests: a jobs file whose commands write
//! their run ids to files (the ground truth of what really ran), daemons of the real
//! binary started and killed, and the simulator's checker over the store's journal.

#![allow(dead_code)] // each test file uses what it needs

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use duetime::{Entry, History, JobName, ProcessId, Record, RunId, Schedule, State};
use duetime_host::runner::ExitFile;
use duetime_host::store::{self, Store};
use duetime_loop::{Partition, PartitionCount};
use duetime_sim::check::{self, Horizon, JobFacts, Reported};
use duetime_sim::oracle::Spec;

pub const BIN: &str = env!("CARGO_BIN_EXE_duetime");

/// A directory with a jobs file, the files the commands write, the daemons' logs and their
/// run directories; the store is an SQLite file in it or a PostgreSQL URL.
pub struct World {
    dir: tempfile::TempDir,
    store: String,
    /// The daemons `daemon_with` started, killed when the world is dropped (`Drop`).
    daemons: std::sync::Mutex<Vec<u32>>,
}

/// The drop guard of a world's daemons: a test whose assert failed unwinds past the
/// `Child`ren it held (whose drop leaves a process running), then drops its world, which
/// kills every daemon it started that is still running, so none outlives its test holding
/// a port, a build slot or a database's connections.
///
/// Only a process that is still a running child of this one (`waitpid(WNOHANG)` answers 0)
/// and whose command line names this world's jobs file is killed: a daemon the test already
/// waited for may have had its pid given again, to another test's child, which is left be.
impl Drop for World {
    fn drop(&mut self) {
        let pids = self
            .daemons
            .get_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let jobs = self.path("jobs.toml").display().to_string();
        for pid in pids {
            let ours = fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&jobs));
            let pid = pid as libc::pid_t;
            let mut status = 0;
            // SAFETY: waitpid(2) and kill(2) on a child of this process; WNOHANG never
            // blocks, and only a child still running (0) that is this world's is killed.
            unsafe {
                if ours && libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
            }
        }
    }
}

impl World {
    /// A world over an SQLite file in its directory.
    pub fn new(jobs: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("duetime.db").display().to_string();
        World::with_store(dir, jobs, store)
    }

    /// A world over the store at `store` (a PostgreSQL URL).
    pub fn on(store: &str, jobs: &str) -> World {
        World::with_store(tempfile::tempdir().unwrap(), jobs, store.to_string())
    }

    fn with_store(dir: tempfile::TempDir, jobs: &str, store: String) -> World {
        let text = jobs.replace("{dir}", &dir.path().display().to_string());
        fs::write(dir.path().join("jobs.toml"), text).unwrap();
        World {
            dir,
            store,
            daemons: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Rewrites the jobs file (`{dir}` stands for the world's directory), as a person
    /// editing it between daemons would.
    pub fn write_jobs(&self, jobs: &str) {
        let text = jobs.replace("{dir}", &self.dir.path().display().to_string());
        fs::write(self.path("jobs.toml"), text).unwrap();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A daemon with the default run directories (beside an SQLite store).
    pub fn daemon(&self, log: &str) -> Child {
        self.daemon_at(log, None)
    }

    /// A daemon as if on its own machine: its run directories in `runs` under the world.
    pub fn daemon_at(&self, log: &str, runs: Option<&str>) -> Child {
        self.daemon_with(log, runs, &["--tick", "1s"])
    }

    /// A daemon with these config flags (`--tick 1s`, `--coordination single_owner`, ...)
    /// in place of the default `--tick 1s`.
    pub fn daemon_with(&self, log: &str, runs: Option<&str>, flags: &[&str]) -> Child {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(log))
            .unwrap();
        let child = self
            .daemon_command(runs, flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.guard(&child);
        child
    }

    /// Puts `child` (a daemon started from `daemon_command`) under the world's drop guard.
    pub fn guard(&self, child: &Child) {
        if let Ok(mut pids) = self.daemons.lock() {
            pids.push(child.id());
        }
    }

    /// `duetime run` on this world's jobs file and store, its streams left for the caller
    /// to set. Run directories are kept (`--keep-runs`): the checker reads every run's
    /// `exit.json` as the ground truth of what was reported.
    pub fn daemon_command(&self, runs: Option<&str>, flags: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("run")
            .args(flags)
            .arg("--jobs")
            .arg(self.path("jobs.toml"))
            .arg("--store")
            .arg(&self.store);
        if !flags.contains(&"--keep-runs") {
            cmd.args(["--keep-runs", "100000"]);
        }
        if let Some(runs) = runs {
            cmd.arg("--runs").arg(self.path(runs));
        }
        cmd
    }

    /// The binary with exactly these arguments (no `--store`), for `check`.
    pub fn cli_plain(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN).args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN)
            .args(args)
            .arg("--store")
            .arg(&self.store)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The run ids the commands wrote into `file`, one per line.
    pub fn ran(&self, file: &str) -> Vec<u64> {
        fs::read_to_string(self.path(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// The process id a daemon logged when it started (waits for the line).
    pub fn process_of(&self, log: &str) -> ProcessId {
        let found = poll(Duration::from_secs(60), || {
            let text = fs::read_to_string(self.path(log)).unwrap_or_default();
            text.lines()
                .filter(|l| l.contains(" started"))
                .find_map(|l| l.split("process=p").nth(1))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
                .map(ProcessId)
        });
        found.unwrap_or_else(|| {
            panic!(
                "{log} never said which process it is:\n{}",
                fs::read_to_string(self.path(log)).unwrap_or_default()
            )
        })
    }

    /// The store's state as of now (a fresh read).
    pub fn state(&self) -> State {
        let options = store::Options {
            create: false,
            ..Default::default()
        };
        let mut store = store::open(&self.store, options).unwrap();
        store.state().unwrap().clone()
    }

    pub fn journal(&self) -> Vec<Record> {
        let options = store::Options {
            create: false,
            ..Default::default()
        };
        let mut store = store::open(&self.store, options).unwrap();
        store.journal_all().unwrap()
    }

    /// What the runs' supervisors saw, in every run directory of the world, as the
    /// checker's ground truth of reported results.
    pub fn reported(&self) -> Reported {
        self.reported_in(None)
    }

    /// Each partition's journal, in the journal's order, on a store of several partitions
    /// (run ids, fences and process events are a partition's own, so each is checked as
    /// the one state it is); `None` on a store of one.
    pub fn journals_by_partition(&self) -> Option<Vec<(Partition, Vec<Record>)>> {
        let options = store::Options {
            create: false,
            ..Default::default()
        };
        let count = store::open(&self.store, options).unwrap().partitions();
        if count == PartitionCount::ONE {
            return None;
        }
        let mut client = postgres::Client::connect(&self.store, postgres::NoTls).unwrap();
        let rows = client
            .query("SELECT part, at, job, json FROM journal ORDER BY id", &[])
            .unwrap();
        let mut parts: Vec<(Partition, Vec<Record>)> =
            count.iter().map(|p| (p, Vec::new())).collect();
        for r in rows {
            let part: i32 = r.get(0);
            let record = Record {
                at: duetime::Timestamp::from_millis(r.get(1)),
                job: JobName::new(r.get::<_, &str>(2)).unwrap(),
                entry: serde_json::from_str(r.get(3)).unwrap(),
            };
            parts[part as usize].1.push(record);
        }
        Some(parts)
    }

    /// `reported`, of one partition's runs (`RUNS/pN/` under each run directory) when
    /// `partition` is given.
    pub fn reported_in(&self, partition: Option<Partition>) -> Reported {
        let mut r = Reported::new();
        let mut entries = Vec::new();
        for dir in fs::read_dir(self.dir.path()).unwrap().flatten() {
            if dir.file_name().to_string_lossy().ends_with(".runs") {
                let runs = match partition {
                    Some(p) => dir.path().join(format!("p{}", p.0)),
                    None => dir.path(),
                };
                if let Ok(found) = fs::read_dir(runs) {
                    entries.extend(found.flatten());
                }
            }
        }
        for e in entries {
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

/// Asks `found` every 50 ms until it answers or `limit` passes.
pub fn poll<T>(limit: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(t) = found() {
            return Some(t);
        }
        if Instant::now() > deadline {
            return None;
        }
        sleep(Duration::from_millis(50));
    }
}

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// Waits for the child to exit, killing it after `limit`.
pub fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
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

/// Sends every daemon SIGTERM and waits up to `limit` for each to drain and exit 0, naming
/// the one that did not with its log (`log_of` its index).
pub fn drain_all(
    w: &World,
    daemons: &mut [Child],
    log_of: impl Fn(usize) -> String,
    limit: Duration,
) {
    for d in daemons.iter() {
        signal(d, libc::SIGTERM);
    }
    for (i, d) in daemons.iter_mut().enumerate() {
        let code = wait(d, limit);
        let log = fs::read_to_string(w.path(&log_of(i))).unwrap_or_default();
        assert_eq!(code, Some(0), "node {i} did not drain:\n{log}");
    }
}

/// Whether a journal line is the system pausing a job (a lost run of a job not safe to
/// repeat, failures in a row).
pub fn paused_by_system(r: &Record) -> bool {
    matches!(
        r.entry,
        Entry::History(History::Paused {
            by: duetime::PausedBy::System { .. },
            ..
        })
    )
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The oracle's reading of a job's schedule (the simulator's own, calendars included),
/// under the key the checker finds a definition's schedule by.
pub fn oracle_spec(schedule: &Schedule) -> (String, Spec) {
    let spec = duetime_sim::cron_text::spec_of(schedule)
        .unwrap_or_else(|e| panic!("the oracle cannot read {schedule}: {e}"));
    (duetime_sim::cron_text::schedule_key(schedule), spec)
}

/// The simulator's checker over the store's journal; `end` is when the last daemon was
/// told to drain (due times well before it must be accounted).
pub fn check_journal(w: &World, end: i64) -> Vec<String> {
    let config = duetime::Config::with_tick(duetime::Duration::from_secs(1));
    let jobs = duetime_host::jobs_file::load_with(&w.path("jobs.toml"), &config).unwrap();
    let facts: BTreeMap<JobName, JobFacts> = jobs
        .jobs
        .iter()
        .map(|j| {
            let specs = BTreeMap::from([oracle_spec(&j.def.schedule)]);
            let f = JobFacts {
                safe_to_repeat: j.def.safe_to_repeat,
                missed: j.def.missed,
                pause_after_failures: j.def.pause_after_failures,
                alert_throttle: j.def.alert_throttle.map(|d| d.as_millis() as i64),
                specs,
                concurrency_key: j.def.concurrency_key.clone(),
                concurrency_limit: j.def.concurrency_limit,
                jitter_ms: j.def.jitter.map(|d| d.as_millis()),
                requires_confirmation: j.def.requires_confirmation,
                expect_success_within: j.def.expect_success_within.map(|d| d.as_millis() as i64),
                stall_after: Some(j.def.stall_after.as_millis() as i64),
                overlap: Some(j.def.overlap_policy()),
                retries: None,
                backoff_ms: None,
                wait_budget_ms: None,
                catch_up_window_ms: j.def.catch_up_window.map(|d| d.as_millis() as i64),
                after: j.def.after.clone(),
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
    let Some(parts) = w.journals_by_partition() else {
        return check::check(&w.journal(), &facts, &w.reported(), horizon, &mut probes)
            .iter()
            .map(|v| v.to_string())
            .collect();
    };
    // A store of several partitions: each is a state of its own (its run ids, fences and
    // processes), checked with the jobs that live in it and the runs kept for it.
    let mut violations = Vec::new();
    for (p, journal) in parts {
        let here: BTreeSet<&JobName> = journal.iter().map(|r| &r.job).collect();
        let facts: BTreeMap<JobName, JobFacts> = facts
            .iter()
            .filter(|(name, _)| here.contains(name))
            .map(|(name, f)| (name.clone(), f.clone()))
            .collect();
        let reported = w.reported_in(Some(p));
        for v in check::check(&journal, &facts, &reported, horizon, &mut probes) {
            violations.push(format!("{p}: {v}"));
        }
    }
    violations
}

/// Run ids of `job`'s starts and the due times each covered.
pub fn starts(journal: &[Record], job: &str) -> BTreeMap<u64, (i64, i64)> {
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

/// Each start of `job`: its run id and the process that started it, in journal order.
pub fn started_by(journal: &[Record], job: &str) -> Vec<(u64, ProcessId, i64)> {
    journal
        .iter()
        .filter(|r| r.job.as_str() == job)
        .filter_map(|r| match &r.entry {
            Entry::History(History::Started { run, process, .. }) => {
                Some((run.0, *process, r.at.as_millis()))
            }
            _ => None,
        })
        .collect()
}

/// No due time of `job` was covered by two runs that really ran (wrote their line).
pub fn assert_no_due_time_ran_twice(w: &World, job: &str, file: &str) {
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
