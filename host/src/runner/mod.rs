//! Running a job's command so that it outlives the daemon that started it.
//!
//! Each run gets a directory `<runs>/<run id>/`. The daemon writes `run.json` (what to run,
//! under which run id and fence) and starts `duetime _supervise <dir>`, a small supervisor in
//! its own process group. The supervisor starts the command in a process group of its own
//! (so a signal meant for the command never reaches the supervisor, and a signal to the
//! daemon's terminal reaches neither), with stdout and stderr appended to `out.log` (a file,
//! not a pipe: nothing breaks when the daemon dies), writes the command's pid to `child.pid`,
//! waits, and writes how it ended to `exit.json`. Every file is written to a temporary name
//! and renamed, so a reader sees all of it or nothing.
//!
//! A command asks for a person's approval by writing a duration (the time to wait,
//! `24h`; empty for `DEFAULT_APPROVAL_TTL`) to the file `$DUETIME_APPROVAL` (`approval` in
//! its run directory) and exiting 0; the supervisor keeps that text in `exit.json`
//! (`approval`), and the run's outcome is `awaiting_approval { ttl }`. A command that exits
//! otherwise has failed, whatever the file says.
//!
//! A daemon that dies (even `kill -9`) leaves supervisor and command running; the next
//! incarnation finds the directory, and either adopts the run (the supervisor still lives) or
//! reports it from `exit.json`. `reported` marks a run whose result has been committed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use duetime::{Duration, Fence, Outcome, ProcessId, RunId};
use serde::{Deserialize, Serialize};

/// The file in a run's directory where its command asks for approval (the command finds
/// its path in `DUETIME_APPROVAL`).
pub const APPROVAL_FILE: &str = "approval";

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
            _ if cancelled_for_timeout => Outcome::TimedOut,
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
        fs::create_dir_all(&root)?;
        Ok(Runs { root })
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
        fs::create_dir_all(&dir)?;
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

/// The body of `duetime _supervise <dir>`: start the command, wait for it, write how it
/// ended. Returns the supervisor's exit code.
pub fn supervise(dir: &Path) -> i32 {
    let Some(file) = read_json::<RunFile>(&dir.join("run.json")) else {
        return 2;
    };
    // Absolute, so a command with its own `workdir` finds it too.
    let approval =
        std::path::absolute(dir.join(APPROVAL_FILE)).unwrap_or_else(|_| dir.join(APPROVAL_FILE));
    // Only this run's command may ask; nothing left from before counts.
    let _ = fs::remove_file(&approval);
    let exit = match start_command(dir, &file, &approval) {
        Ok(mut child) => {
            let _ = write_atomic(&dir.join("child.pid"), child.id().to_string().as_bytes());
            match child.wait() {
                Ok(status) => ExitFile {
                    code: status.code(),
                    signal: status.signal(),
                    error: None,
                    approval: (status.code() == Some(0))
                        .then(|| fs::read_to_string(&approval).ok())
                        .flatten()
                        .map(|t| t.trim().to_string()),
                },
                Err(e) => ExitFile {
                    code: None,
                    signal: None,
                    error: Some(format!("waiting for it failed: {e}")),
                    approval: None,
                },
            }
        }
        Err(e) => ExitFile {
            code: None,
            signal: None,
            error: Some(e.to_string()),
            approval: None,
        },
    };
    match serde_json::to_vec(&exit) {
        Ok(bytes) if write_atomic(&dir.join("exit.json"), &bytes).is_ok() => 0,
        _ => 1,
    }
}

fn start_command(dir: &Path, file: &RunFile, approval: &Path) -> io::Result<Child> {
    let (program, args) = file
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("out.log"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(&file.env)
        .env("DUETIME_RUN", file.run.to_string())
        .env("DUETIME_JOB", &file.job)
        .env("DUETIME_APPROVAL", approval)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    if let Some(wd) = &file.workdir {
        cmd.current_dir(wd);
    }
    cmd.spawn()
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(tmp, path)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn read_pid(path: &Path) -> Option<u32> {
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
