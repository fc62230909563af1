//! The body of `duetime _supervise <dir>`: start the run's command, watch it, stop it when
//! its deadline passes or the daemon asks, and write how it ended.

use std::fs;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::identity::{self, RunAs};
use super::{env_file, read_json, write_atomic, ExitFile, RunFile, APPROVAL_FILE, CANCEL_FILE};

/// How often the supervisor looks at its command, its deadline and the cancel file.
const WATCH: Duration = Duration::from_millis(50);

/// Starts the command, waits for it, writes `exit.json`. Returns the supervisor's exit
/// code.
pub fn supervise(dir: &Path) -> i32 {
    let Some(file) = read_json::<RunFile>(&dir.join("run.json")) else {
        return 2;
    };
    let exit = match Launch::prepare(dir, &file) {
        Ok(launch) => launch.run(dir, &file),
        Err(e) => not_started(e.to_string()),
    };
    match serde_json::to_vec(&exit) {
        Ok(bytes) if write_atomic(&dir.join("exit.json"), &bytes).is_ok() => 0,
        _ => 1,
    }
}

fn not_started(error: String) -> ExitFile {
    ExitFile {
        code: None,
        signal: None,
        error: Some(error),
        approval: None,
        timed_out: false,
    }
}

/// What a run's command needs before it starts: whom it runs as, its env file's
/// variables, and where it may ask for approval.
struct Launch {
    run_as: Option<RunAs>,
    env_file: Vec<(String, String)>,
    approval: Approval,
}

impl Launch {
    fn prepare(dir: &Path, file: &RunFile) -> io::Result<Launch> {
        let run_as = identity::resolve(file.user.as_deref(), file.group.as_deref())
            .map_err(io::Error::other)?;
        if let Some(r) = &run_as {
            r.permitted().map_err(io::Error::other)?;
        }
        let env_file = match &file.env_file {
            Some(path) => env_file::read(path).map_err(io::Error::other)?,
            None => Vec::new(),
        };
        let approval = Approval::make(dir, run_as.as_ref())?;
        Ok(Launch {
            run_as,
            env_file,
            approval,
        })
    }

    fn run(self, dir: &Path, file: &RunFile) -> ExitFile {
        let mut child = match start_command(dir, file, &self) {
            Ok(child) => child,
            Err(e) => return not_started(e.to_string()),
        };
        let _ = write_atomic(&dir.join("child.pid"), child.id().to_string().as_bytes());
        let mut watch = Watch::new(file);
        let exit = match watch.wait(dir, &mut child) {
            Ok(status) => ExitFile {
                code: status.code(),
                signal: status.signal(),
                error: None,
                approval: (status.code() == Some(0))
                    .then(|| self.approval.read())
                    .flatten(),
                timed_out: watch.timed_out,
            },
            Err(e) => ExitFile {
                error: Some(format!("waiting for it failed: {e}")),
                timed_out: watch.timed_out,
                ..not_started(String::new())
            },
        };
        self.approval.clean();
        exit
    }
}

/// The file a command writes to ask for approval (`$DUETIME_APPROVAL`). In the run's
/// directory, unless the command runs as another user: that directory is the daemon's
/// alone (0700), so such a command gets a directory of its own under the temporary
/// directory, made afresh (mkdtemp) and owned by it, removed once the run ends.
struct Approval {
    path: PathBuf,
    own_dir: Option<PathBuf>,
}

/// The most of an approval file read: a duration, not a document (and a command running
/// as another user could point it elsewhere).
const MAX_APPROVAL_TEXT: u64 = 256;

impl Approval {
    fn make(dir: &Path, run_as: Option<&RunAs>) -> io::Result<Approval> {
        let other = run_as.filter(|r| r.uid != crate::private::effective_uid());
        let Some(r) = other else {
            // Absolute, so a command with its own `workdir` finds it too.
            let path = std::path::absolute(dir.join(APPROVAL_FILE))
                .unwrap_or_else(|_| dir.join(APPROVAL_FILE));
            // Only this run's command may ask; nothing left from before counts.
            let _ = fs::remove_file(&path);
            return Ok(Approval {
                path,
                own_dir: None,
            });
        };
        let own = temp_dir_for(r)?;
        Ok(Approval {
            path: own.join(APPROVAL_FILE),
            own_dir: Some(own),
        })
    }

    /// The text the command wrote, trimmed; never following a symbolic link.
    fn read(&self) -> Option<String> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)
            .ok()?;
        if !f.metadata().ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        f.take(MAX_APPROVAL_TEXT).read_to_string(&mut text).ok()?;
        Some(text.trim().to_string())
    }

    fn clean(&self) {
        if let Some(d) = &self.own_dir {
            let _ = fs::remove_dir_all(d);
        }
    }
}

/// A fresh directory under the temporary directory, owned by `r`, 0700.
fn temp_dir_for(r: &RunAs) -> io::Result<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let template = std::env::temp_dir().join("duetime-approval-XXXXXX");
    let mut bytes = std::ffi::CString::new(template.into_os_string().into_vec())
        .map_err(io::Error::other)?
        .into_bytes_with_nul();
    // SAFETY: `bytes` is a writable NUL-terminated template that mkdtemp fills in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(io::Error::last_os_error());
    }
    bytes.pop();
    let path = PathBuf::from(std::ffi::OsString::from_vec(bytes));
    std::os::unix::fs::chown(&path, Some(r.uid), Some(r.gid))?;
    Ok(path)
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

fn start_command(dir: &Path, file: &RunFile, launch: &Launch) -> io::Result<Child> {
    let (program, args) = file
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let log = crate::private::file_options()
        .create(true)
        .append(true)
        .open(dir.join("out.log"))?;
    let mut cmd = Command::new(program);
    if let Some(r) = &launch.run_as {
        r.apply(&mut cmd);
    }
    // The jobs file's `env` wins over the env file's lines (it is what was confirmed).
    cmd.args(args)
        .envs(launch.env_file.iter().map(|(k, v)| (k, v)))
        .envs(&file.env)
        .env("DUETIME_RUN", file.run.to_string())
        .env("DUETIME_JOB", &file.job)
        .env("DUETIME_APPROVAL", &launch.approval.path)
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
