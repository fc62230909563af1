//! The body of `duetime _supervise <dir>`: start the run's command, watch it, stop it when
//! its deadline passes or the daemon asks, and write how it ended.

use std::fs;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::{read_json, write_atomic, ExitFile, RunFile, APPROVAL_FILE, CANCEL_FILE};

/// How often the supervisor looks at its command, its deadline and the cancel file.
const WATCH: Duration = Duration::from_millis(50);

/// Starts the command, waits for it, writes `exit.json`. Returns the supervisor's exit
/// code.
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
            let mut watch = Watch::new(&file);
            match watch.wait(dir, &mut child) {
                Ok(status) => ExitFile {
                    code: status.code(),
                    signal: status.signal(),
                    error: None,
                    approval: (status.code() == Some(0))
                        .then(|| fs::read_to_string(&approval).ok())
                        .flatten()
                        .map(|t| t.trim().to_string()),
                    timed_out: watch.timed_out,
                },
                Err(e) => ExitFile {
                    code: None,
                    signal: None,
                    error: Some(format!("waiting for it failed: {e}")),
                    approval: None,
                    timed_out: watch.timed_out,
                },
            }
        }
        Err(e) => ExitFile {
            code: None,
            signal: None,
            error: Some(e.to_string()),
            approval: None,
            timed_out: false,
        },
    };
    match serde_json::to_vec(&exit) {
        Ok(bytes) if write_atomic(&dir.join("exit.json"), &bytes).is_ok() => 0,
        _ => 1,
    }
}

/// When to stop the command and how far stopping has gone.
struct Watch {
    /// The deadline on the monotonic clock, read once against the wall clock at start,
    /// so a wall clock set later does not move it.
    deadline: Option<Instant>,
    grace: Duration,
    /// When SIGTERM went to the command's group.
    termed: Option<Instant>,
    killed: bool,
    timed_out: bool,
}

impl Watch {
    fn new(file: &RunFile) -> Watch {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let deadline = file.deadline_ms.map(|d| {
            let left = u64::try_from(d.saturating_sub(now_ms)).unwrap_or(0);
            Instant::now() + Duration::from_millis(left)
        });
        let grace = file
            .kill_grace_ms
            .map_or(super::MAX_KILL_GRACE, Duration::from_millis);
        Watch {
            deadline,
            grace,
            termed: None,
            killed: false,
            timed_out: false,
        }
    }

    /// Waits for the command, stopping it when its deadline passes or a cancel file
    /// appears: SIGTERM to its process group, SIGKILL after the grace.
    fn wait(&mut self, dir: &Path, child: &mut Child) -> io::Result<ExitStatus> {
        let group = child.id() as libc::pid_t;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            let now = Instant::now();
            if self.termed.is_none() {
                let late = self.deadline.is_some_and(|d| now >= d);
                if late || dir.join(CANCEL_FILE).exists() {
                    self.timed_out = late;
                    signal_group(group, libc::SIGTERM);
                    self.termed = Some(now);
                }
            } else if let Some(termed) = self.termed {
                if !self.killed && now.duration_since(termed) >= self.grace {
                    signal_group(group, libc::SIGKILL);
                    self.killed = true;
                }
            }
            std::thread::sleep(WATCH);
        }
    }
}

fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
    unsafe {
        libc::kill(-group, signal);
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
    if let Some(context) = &file.context {
        cmd.envs(context.env());
    }
    if let Some(wd) = &file.workdir {
        cmd.current_dir(wd);
    }
    cmd.spawn()
}
