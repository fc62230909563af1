//! The delivery thread: a bounded queue in front of one thread that runs each alert's
//! command and posts its webhook, retrying each with backoff, logging every delivery and
//! every failure. The daemon's loop only `try_send`s: a full queue (a pager down for long
//! while alerts keep coming) drops the alert with a warning and a count, rather than
//! stopping the scheduler behind it.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use duetime::Alert;
use tracing::{info, warn};

use super::Route;
use crate::telemetry::{Delivery, Target, Telemetry};

/// How many alerts may wait for delivery.
pub const QUEUE: usize = 256;

/// One alert to carry, with where to, and the body every attempt sends (gathered once).
struct Parcel {
    alert: Alert,
    route: Route,
    body: serde_json::Value,
}

/// The daemon's end of the queue.
#[derive(Debug, Clone)]
pub struct Courier {
    queue: SyncSender<Parcel>,
    telemetry: Telemetry,
}

impl std::fmt::Debug for Parcel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parcel({})", self.alert.job)
    }
}

impl Courier {
    /// Starts the delivery thread.
    pub fn start(telemetry: Telemetry) -> std::io::Result<Courier> {
        let (queue, rx) = sync_channel(QUEUE);
        let t = telemetry.clone();
        std::thread::Builder::new()
            .name("duetime-alerts".into())
            .spawn(move || run(rx, t))?;
        Ok(Courier { queue, telemetry })
    }

    /// Hands `alert` to the delivery thread; never waits for a target. Its body is
    /// gathered here (a few small files of the run's directory), while the directory is
    /// surely there: see `context.rs`.
    pub fn send(&self, alert: &Alert, route: &Route) {
        let parcel = Parcel {
            alert: alert.clone(),
            route: route.clone(),
            body: super::context::gather(alert),
        };
        match self.queue.try_send(parcel) {
            Ok(()) => {}
            Err(TrySendError::Full(p) | TrySendError::Disconnected(p)) => {
                warn!(job = %p.alert.job, queue = QUEUE, "alert not delivered: the delivery queue is full (or its thread is gone)");
                for target in targets(&p.route) {
                    self.telemetry
                        .delivery(p.alert.job.as_str(), target, Delivery::Dropped);
                }
            }
        }
    }
}

fn targets(route: &Route) -> Vec<Target> {
    let mut t = Vec::new();
    if route.command.is_some() {
        t.push(Target::Command);
    }
    if route.webhook.is_some() {
        t.push(Target::Webhook);
    }
    t
}

fn run(rx: Receiver<Parcel>, telemetry: Telemetry) {
    while let Ok(p) = rx.recv() {
        for target in targets(&p.route) {
            carry(&p, target, &p.body, &telemetry);
        }
    }
}

/// One target, tried until it takes the alert or the retries run out.
fn carry(p: &Parcel, target: Target, body: &serde_json::Value, telemetry: &Telemetry) {
    let job = p.alert.job.as_str();
    let kind = body["kind"].as_str().unwrap_or("unknown");
    for attempt in 1..=p.route.retries.saturating_add(1) {
        let tried = match target {
            Target::Command => by_command(&p.route, body),
            Target::Webhook => by_webhook(&p.route, body),
        };
        match tried {
            Ok(()) => {
                info!(
                    job,
                    kind,
                    target = target.name(),
                    attempt,
                    "alert delivered"
                );
                telemetry.delivery(job, target, Delivery::Ok);
                return;
            }
            Err(why) => {
                warn!(
                    job,
                    kind,
                    target = target.name(),
                    attempt,
                    "alert delivery failed: {why}"
                );
                telemetry.delivery(job, target, Delivery::Failed);
            }
        }
        if attempt <= p.route.retries {
            std::thread::sleep(p.route.backoff(attempt));
        }
    }
    warn!(
        job,
        kind,
        target = target.name(),
        attempts = p.route.retries + 1,
        "alert given up: every attempt failed"
    );
    telemetry.delivery(job, target, Delivery::GaveUp);
}

/// The command, with the alert on stdin and in `DUETIME_ALERT_*`; exit 0 within the
/// timeout is a delivery.
fn by_command(route: &Route, body: &serde_json::Value) -> Result<(), String> {
    let Some(argv) = route.command.as_deref().filter(|a| !a.is_empty()) else {
        return Ok(());
    };
    let field = |k: &str| body[k].as_str().unwrap_or("").to_string();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("DUETIME_ALERT_JOB", field("job"))
        .env("DUETIME_ALERT_KIND", field("kind"))
        .env("DUETIME_ALERT_AT", field("at"))
        .env("DUETIME_ALERT_TEXT", field("text"))
        .env("DUETIME_ALERT_ID", field("id"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group, as runs have: at the timeout the whole group is killed,
        // so what the command started (`sh -c "..."`'s children) does not live on.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{} did not start: {e}", argv[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is no failure of the delivery.
        let _ = writeln!(stdin, "{body}");
    }
    let deadline = Instant::now() + Duration::from_millis(route.timeout.as_millis());
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{} exited with {status}", argv[0])),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} took longer than {} and was killed",
                    argv[0], route.timeout
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {}: {e}", argv[0])),
        }
    }
}

/// SIGKILL to the process group `leader` leads (it was spawned with `process_group(0)`,
/// so the group's id is its pid).
fn kill_group(leader: u32) {
    let Ok(group) = libc::pid_t::try_from(leader) else {
        return;
    };
    // SAFETY: kill(2) on a process group this process created; no memory is touched.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

/// A POST of the alert as JSON; a 2xx answer within the timeout is a delivery.
fn by_webhook(route: &Route, body: &serde_json::Value) -> Result<(), String> {
    let Some(url) = &route.webhook else {
        return Ok(());
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(route.timeout.as_millis())))
        .build()
        .into();
    agent
        .post(url.as_str())
        .header("Content-Type", "application/json")
        // The same on every attempt: a receiver deduplicates retries on it.
        .header("Idempotency-Key", body["id"].as_str().unwrap_or(""))
        .header("User-Agent", concat!("duetime/", env!("CARGO_PKG_VERSION")))
        .send(body.to_string())
        .map(|_| ())
        .map_err(|e| format!("POST {}: {e}", crate::http::cut_text(url.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `pid` is gone (or only a zombie waiting for its new parent to reap it).
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    /// Issue 42: a command that outlives its timeout is killed with everything it started
    /// (`sh` was killed and its `sleep` lived on under PID 1).
    #[test]
    fn a_command_past_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let route = Route {
            command: Some(vec!["sh".into(), "-c".into(), script]),
            timeout: duetime::Duration::from_secs(1),
            ..Route::default()
        };
        let body = serde_json::json!({"job": "a", "kind": "failed_out"});
        let why = by_command(&route, &body).unwrap_err();
        assert!(why.contains("was killed"), "{why}");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let alive = !gone(pid);
        if alive {
            // SAFETY: kill(2) on the test's own leftover; nothing else is touched.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert!(!alive, "the command's child {pid} outlived the timeout");
    }
}
