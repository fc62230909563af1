//! Running a job's command so that it outlives the daemon that started it.
//!
//! Each run gets a directory `<runs>/<run id>/`. The daemon writes `run.json` (what to run,
//! under which run id and fence, by when it must end, what it covers) and starts
//! `duetime _supervise <dir>`, a small supervisor in its own process group. The supervisor
//! (`supervise.rs`) starts the command in a process group of its own (so a signal meant for
//! the command never reaches the supervisor, and a signal to the daemon's terminal reaches
//! neither), with stdout and stderr appended to `out.log` (a file, not a pipe: nothing
//! breaks when the daemon dies), writes the command's pid to `child.pid`, waits, and writes
//! how it ended to `exit.json`. Every file is written to a temporary name and renamed, so a
//! reader sees all of it or nothing.
//!
//! The supervisor, not the daemon, stops the command: at its deadline (the core's, from
//! `Start`) or when the daemon asks (a `cancel` file), with SIGTERM and then SIGKILL after
//! the kill grace. So a command that ignores SIGTERM is killed on time whatever the
//! daemon's tick, even while no daemon runs, and is dead before the core would settle the
//! run on its own (two ticks after its cancel).
//!
//! A command asks for a person's approval by writing a duration (the time to wait,
//! `24h`; empty for `DEFAULT_APPROVAL_TTL`) to the file `$DUETIME_APPROVAL` (`approval` in
//! its run directory) and exiting 0; the supervisor keeps that text in `exit.json`
//! (`approval`), and the run's outcome is `awaiting_approval { ttl }`. A command that exits
//! otherwise has failed, whatever the file says.
//!
//! A daemon that dies (even `kill -9`) leaves supervisor and command running; the next
//! incarnation finds the directory, and either adopts the run (the supervisor still lives) or
//! reports it from `exit.json`. `reported` marks a run whose result has been committed; the
//! daemon keeps the newest reported directories of each job and prunes older ones
//! (`Runs::prune`).

mod context;
pub mod env_file;
pub mod identity;
mod supervise;
mod tail;

pub use context::{RunContext, TriggerName};
pub use supervise::supervise;
pub use tail::{tail, Tail, TAIL_BYTES, TAIL_LINES};

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use duetime::{Duration, Fence, Outcome, ProcessId, RunId};
use serde::{Deserialize, Serialize};

/// The file in a run's directory where its command asks for approval (the command finds
/// its path in `DUETIME_APPROVAL`).
pub const APPROVAL_FILE: &str = "approval";

/// The file in a run's directory by which the daemon asks the supervisor to stop the
/// command; it holds the reason.
pub const CANCEL_FILE: &str = "cancel";

/// How long a parked run waits for approval when the command wrote an empty approval file.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_days(1);

/// What the daemon asks the supervisor to run, and under which identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFile {
    pub run: u64,
    pub fence: u64,
    pub job: String,
    /// The incarnation that started it (or adopted it last).
    pub process: u64,
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Read by the supervisor when the command starts (its values are never written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_file: Option<PathBuf>,
    /// Whom the command runs as (`identity.rs`); `None`: the supervisor's own user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// When the command must have ended (the core's deadline, in milliseconds since the
    /// epoch by this machine's wall clock): the supervisor stops it then. `None` in files
    /// of older daemons: no deadline is kept by the supervisor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// How long a stopped command gets between SIGTERM and SIGKILL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_grace_ms: Option<u64>,
    /// What the run covers, told to the command in `DUETIME_*` variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RunContext>,
}

/// The longest a stopped command gets between SIGTERM and SIGKILL; with a short tick the
/// grace is the tick, so the command is dead before the core settles the run without it.
pub const MAX_KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The kill grace under a core tick: at most `MAX_KILL_GRACE`, and at most one tick (the
/// core records a cancelled run timed out two ticks after its cancel).
pub fn kill_grace(tick: Duration) -> std::time::Duration {
    std::time::Duration::from_millis(tick.as_millis()).min(MAX_KILL_GRACE)
}

/// How the command ended, as the supervisor saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The command could not be started at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the command wrote to its approval file before exiting 0 (trimmed): it asks a
    /// person to approve the run within that duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The supervisor stopped the command because its deadline passed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

impl ExitFile {
    /// The core's outcome: exit 0 is ok, or awaiting approval when the command asked for
    /// it; anything else failed with what happened, and a run the daemon killed for its
    /// timeout timed out. An approval file that is not a duration fails the run (a typo
    /// must not pass as done).
    pub fn outcome(&self, cancelled_for_timeout: bool) -> Outcome {
        match (self.code, self.signal, &self.error) {
            (_, _, Some(e)) => Outcome::failed(&format!("not started: {e}")),
            (Some(0), _, _) => match self.approval.as_deref() {
                None => Outcome::Ok,
                Some(text) => match approval_ttl(text) {
                    Ok(ttl) => Outcome::AwaitingApproval { ttl },
                    Err(why) => Outcome::failed(&format!("approval file: {why}")),
                },
            },
            _ if cancelled_for_timeout || self.timed_out => Outcome::TimedOut,
            (Some(code), _, _) => Outcome::failed(&format!("exit {code}")),
            (None, Some(sig), _) => Outcome::failed(&format!("signal {}", signal_name(sig))),
            (None, None, None) => Outcome::failed("ended without a status"),
        }
    }
}

/// The wait an approval file asks for: a duration, or empty for the default.
pub fn approval_ttl(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(DEFAULT_APPROVAL_TTL);
    }
    text.parse::<Duration>().map_err(|e| e.to_string())
}

/// Where a run stands, read from its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// The supervisor is alive: the command is running (or about to end).
    Running,
    Exited(ExitFile),
    /// No supervisor and no exit file: the machine restarted, or the supervisor was
    /// killed. How the command ended is unknown.
    Vanished,
}

/// The runs directory of one store.
#[derive(Debug, Clone)]
pub struct Runs {
    root: PathBuf,
}

impl Runs {
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Runs> {
        let root = root.into();
        crate::private::create_dir_all(&root)?;
        Ok(Runs { root })
    }

    /// The run directories at `root`, for reading (nothing is created).
    pub fn at(root: &Path) -> Runs {
        Runs {
            root: root.to_path_buf(),
        }
    }

    /// The runs directory at `root` and, after it, those of the partitions under it
    /// (`p<N>`: the daemon of a store of several keeps each partition's runs apart, as run
    /// ids are a partition's own counters), for readers that look for a job's runs.
    pub fn all_at(root: &Path) -> Vec<Runs> {
        let mut places = vec![Runs::at(root)];
        let Ok(entries) = fs::read_dir(root) else {
            return places;
        };
        let mut parts: Vec<(u32, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                let n = name.strip_prefix('p')?.parse::<u32>().ok()?;
                e.path().is_dir().then(|| (n, e.path()))
            })
            .collect();
        parts.sort();
        places.extend(parts.into_iter().map(|(_, path)| Runs { root: path }));
        places
    }

    /// Where `job`'s run `run` is kept under `root`: its partition's directory when one
    /// holds a run of that id for that job, else `root`'s.
    pub fn holding(root: &Path, job: &str, run: RunId) -> Runs {
        Runs::all_at(root)
            .into_iter()
            .find(|r| {
                read_json::<RunFile>(&r.dir(run).join("run.json")).is_some_and(|f| f.job == job)
            })
            .unwrap_or_else(|| Runs::at(root))
    }

    /// The directory holding the run directories.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, run: RunId) -> PathBuf {
        self.root.join(run.0.to_string())
    }

    pub fn log_path(&self, run: RunId) -> PathBuf {
        self.dir(run).join("out.log")
    }

    /// Writes `run.json` and starts the supervisor (`exe _supervise <dir>`). Returns the
    /// supervisor's child handle, which the caller reaps.
    pub fn start(&self, exe: &Path, file: &RunFile) -> io::Result<Child> {
        let dir = self.dir(RunId(file.run));
        crate::private::create_dir_all(&dir)?;
        write_atomic(&dir.join("run.json"), &serde_json::to_vec_pretty(file)?)?;
        let child = Command::new(exe)
            .arg("_supervise")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        write_atomic(
            &dir.join("supervisor.pid"),
            child.id().to_string().as_bytes(),
        )?;
        Ok(child)
    }

    /// Where the run stands.
    pub fn state(&self, run: RunId) -> RunState {
        let dir = self.dir(run);
        if let Some(exit) = read_json::<ExitFile>(&dir.join("exit.json")) {
            return RunState::Exited(exit);
        }
        match read_pid(&dir.join("supervisor.pid")) {
            Some(pid) if alive(pid) => RunState::Running,
            // It may have written the exit file between the two reads.
            _ => match read_json::<ExitFile>(&dir.join("exit.json")) {
                Some(exit) => RunState::Exited(exit),
                None => RunState::Vanished,
            },
        }
    }

    /// Sends `signal` to the command's process group (the supervisor is not in it, so it
    /// lives on to write the exit file).
    pub fn signal(&self, run: RunId, signal: i32) -> io::Result<()> {
        let Some(pid) = read_pid(&self.dir(run).join("child.pid")) else {
            return Ok(());
        };
        // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
        let r = unsafe { libc::kill(-(pid as libc::pid_t), signal) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            Ok(())
        } else {
            Err(e)
        }
    }

    /// Runs started here whose result has not been committed yet (for the next
    /// incarnation to adopt or report), in run order.
    pub fn unreported(&self) -> Vec<RunFile> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut runs: Vec<RunFile> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| !p.join("reported").exists())
            .filter_map(|p| read_json::<RunFile>(&p.join("run.json")))
            .collect();
        runs.sort_by_key(|r| r.run);
        runs
    }

    /// Notes that the run's result is in the store (or that it never will be).
    pub fn mark_reported(&self, run: RunId, why: &str) -> io::Result<()> {
        write_atomic(&self.dir(run).join("reported"), why.as_bytes())
    }

    /// Asks the run's supervisor to stop its command (SIGTERM, then SIGKILL after the
    /// kill grace). A file, not a signal to the supervisor: it is there for the supervisor
    /// to find even if it was busy, and it says why.
    pub fn request_stop(&self, run: RunId, why: &str) -> io::Result<()> {
        write_atomic(&self.dir(run).join(CANCEL_FILE), why.as_bytes())
    }

    /// Every run directory of `job` found here, oldest first (for `duetime logs`).
    pub fn runs_of(&self, job: &str) -> Vec<RunFile> {
        let mut runs: Vec<RunFile> = self
            .all()
            .into_iter()
            .filter(|(_, f)| f.job == job)
            .map(|(_, f)| f)
            .collect();
        runs.sort_by_key(|r| r.run);
        runs
    }

    /// Removes the run directories of each job beyond its newest `keep` that are done
    /// with: reported (their result is in the store) and ended (an exit file, or no
    /// supervisor left). A run not yet reported, or still going, is never removed: the
    /// next incarnation needs it. Returns how many were removed.
    pub fn prune(&self, keep: usize) -> usize {
        let mut by_job: BTreeMap<String, Vec<(u64, PathBuf)>> = BTreeMap::new();
        for (path, file) in self.all() {
            let done = path.join("reported").exists()
                && !matches!(self.state(file.id()), RunState::Running);
            if done {
                by_job.entry(file.job).or_default().push((file.run, path));
            }
        }
        let mut removed = 0;
        for (_, mut runs) in by_job {
            runs.sort_by_key(|(run, _)| std::cmp::Reverse(*run));
            for (_, path) in runs.into_iter().skip(keep) {
                if fs::remove_dir_all(&path).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Every run directory with a readable `run.json`.
    fn all(&self) -> Vec<(PathBuf, RunFile)> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter_map(|p| read_json::<RunFile>(&p.join("run.json")).map(|f| (p, f)))
            .collect()
    }

    /// Rewrites the run's owner after an adoption.
    pub fn set_process(&self, run: RunId, process: ProcessId) -> io::Result<()> {
        let path = self.dir(run).join("run.json");
        let Some(mut file) = read_json::<RunFile>(&path) else {
            return Ok(());
        };
        file.process = process.0;
        write_atomic(&path, &serde_json::to_vec_pretty(&file)?)
    }
}

impl RunFile {
    pub fn id(&self) -> RunId {
        RunId(self.run)
    }
    pub fn fence(&self) -> Fence {
        Fence(self.fence)
    }
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = crate::private::file_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(tmp, path)
}

pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub(crate) fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether a process exists (a zombie counts as gone: it has ended).
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, approval: Option<&str>) -> ExitFile {
        ExitFile {
            code: Some(code),
            signal: None,
            error: None,
            approval: approval.map(str::to_string),
            timed_out: false,
        }
    }

    #[test]
    fn an_approval_file_parks_only_a_command_that_exited_0() {
        assert_eq!(exited(0, None).outcome(false), Outcome::Ok);
        assert_eq!(
            exited(0, Some("2h")).outcome(false),
            Outcome::AwaitingApproval {
                ttl: Duration::from_secs(7200)
            }
        );
        assert_eq!(
            exited(0, Some("")).outcome(false),
            Outcome::AwaitingApproval {
                ttl: DEFAULT_APPROVAL_TTL
            }
        );
        // The supervisor keeps the file only after exit 0; a failure stays a failure.
        assert_eq!(
            exited(3, Some("2h")).outcome(false),
            Outcome::failed("exit 3")
        );
        let bad = exited(0, Some("tomorrow")).outcome(false);
        let Outcome::Failed { kind, .. } = &bad else {
            panic!("{bad:?}")
        };
        assert!(kind.starts_with("approval file: "), "{kind}");
    }

    #[test]
    fn an_exit_file_without_approval_reads_as_before() {
        let old: ExitFile = serde_json::from_str(r#"{"code":0}"#).unwrap();
        assert_eq!(old, exited(0, None));
        let json = serde_json::to_string(&exited(0, Some("1h"))).unwrap();
        assert_eq!(json, r#"{"code":0,"approval":"1h"}"#);
    }
}
