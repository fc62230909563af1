//! What an alert says beyond the core's `Alert`: a stable id to deduplicate on, the
//! machine, and for an alert about a run what that run covered, how it ended and the last
//! lines it printed, read from its run directory when it is on this machine. A person
//! paged at night should see why without logging in.
//!
//! Gathered on the daemon's thread when the alert is handed over (`Courier::send`), not
//! on the delivery thread: by the time a retry goes out, the run's directory may have been
//! pruned, and every attempt must carry the same body.

use std::path::PathBuf;
use std::sync::OnceLock;

use duetime::{Alert, AlertKind, Covers, Effect, Notice, RunId};
use serde_json::{json, Value};

use crate::http::tally::tag_of;
use crate::runner::{self, ExitFile, RunFile, Runs, Tail};

/// This process's run directories, set once by `duetime run` before its daemon starts (one
/// daemon per process, its `--runs` fixed for its life). Unset, alerts carry no run
/// details: the other fields are still sent.
static RUNS: OnceLock<PathBuf> = OnceLock::new();

/// Tells alerts where this process's run directories are (a second call changes nothing).
pub fn set_runs_dir(root: PathBuf) {
    let _ = RUNS.set(root);
}

/// The run an alert is about, when it is about one.
pub fn run_of(kind: &AlertKind) -> Option<RunId> {
    match kind {
        AlertKind::FailedOut { run, .. }
        | AlertKind::RunLost { run, .. }
        | AlertKind::Stalled { run, .. }
        | AlertKind::ApprovalExpired { run } => Some(*run),
        AlertKind::PausedBySystem { .. }
        | AlertKind::PendingConfirmation { .. }
        | AlertKind::NoSuccess { .. } => None,
    }
}

/// The incident's id: the job, the kind and what makes the incident itself (its run, the
/// held digest, the silence's start, else when it was told). Every attempt and every
/// target of one alert carry the same id, and a receiver that sees it twice (a retry after
/// a delivery whose answer was lost) can drop the second.
pub fn id(alert: &Alert) -> String {
    let kind = tag_of(&alert.kind, "alert");
    let which = match &alert.kind {
        AlertKind::PendingConfirmation { digest } => digest.chars().take(16).collect(),
        AlertKind::NoSuccess { since, .. } => since.as_millis().to_string(),
        other => match run_of(other) {
            Some(run) => run.to_string(),
            None => alert.at.as_millis().to_string(),
        },
    };
    format!("{}:{kind}:{which}", alert.job)
}

/// What this machine knows of the alert's run: its `run.json`, `exit.json` and the end of
/// its output (each `None` when absent).
#[derive(Debug, Default)]
pub struct RunDetails {
    pub file: Option<RunFile>,
    pub exit: Option<ExitFile>,
    pub output: Option<Tail>,
}

impl RunDetails {
    /// Read from the run's directory under `runs`.
    pub fn read(runs: &Runs, run: RunId) -> RunDetails {
        let dir = runs.dir(run);
        RunDetails {
            file: runner::read_json(&dir.join("run.json")),
            exit: runner::read_json(&dir.join("exit.json")),
            output: runner::tail(&runs.log_path(run)),
        }
    }
}

/// The alert as its command reads it on stdin and its webhook receives it. The first
/// fields (`job`, `kind`, `at`, `text`, `alert`) are as they always were; the context
/// follows. See docs/operate.md for an example.
pub fn payload(alert: &Alert, host: &str, details: &RunDetails) -> Value {
    let covers: Option<Covers> = details
        .file
        .as_ref()
        .and_then(|f| f.context.as_ref())
        .and_then(|c| c.covers);
    let exit = details.exit.as_ref();
    json!({
        "id": id(alert),
        "job": alert.job.as_str(),
        "kind": tag_of(&alert.kind, "alert"),
        "at": alert.at.to_string(),
        "text": Effect::Notice(Notice::Alert(alert.clone())).to_string(),
        "host": host,
        "run": run_of(&alert.kind).map(|r| r.to_string()),
        "due": covers.map(|c| c.to.to_string()),
        "covers": covers.map(|c| json!({
            "from": c.from.to_string(), "to": c.to.to_string(), "count": c.count,
        })),
        "attempt": details.file.as_ref().and_then(|f| f.context.as_ref()).map(|c| c.attempt),
        "exit_code": exit.and_then(|e| e.code),
        "signal": exit.and_then(|e| e.signal).map(runner::signal_name),
        "timed_out": exit.is_some_and(|e| e.timed_out),
        "not_started": exit.and_then(|e| e.error.clone()),
        "output": details.output.as_ref().map(|t| &t.lines),
        "output_truncated": details.output.as_ref().is_some_and(|t| t.truncated),
        "alert": serde_json::to_value(alert).unwrap_or(Value::Null),
    })
}

/// The payload with this machine's details: the run's directory read when the process set
/// one (`set_runs_dir`) and the alert names a run.
pub fn gather(alert: &Alert) -> Value {
    static HOST: OnceLock<String> = OnceLock::new();
    let host = HOST.get_or_init(crate::store::daemons::host_name);
    let details = match (RUNS.get(), run_of(&alert.kind)) {
        (Some(root), Some(run)) => {
            RunDetails::read(&Runs::holding(root, alert.job.as_str(), run), run)
        }
        _ => RunDetails::default(),
    };
    payload(alert, host, &details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{JobName, Timestamp};

    fn alert(kind: AlertKind) -> Alert {
        Alert {
            at: "2026-12-05T03:00:07Z".parse::<Timestamp>().unwrap(),
            job: JobName::new("backup").unwrap(),
            kind,
        }
    }

    #[test]
    fn the_id_names_the_incident_and_not_the_attempt() {
        let failed = alert(AlertKind::FailedOut {
            run: RunId(12),
            attempts: 3,
        });
        assert_eq!(id(&failed), "backup:failed_out:r12");
        let mut later = failed.clone();
        later.at = "2026-12-05T03:05:00Z".parse().unwrap();
        assert_eq!(id(&failed), id(&later), "the same run's alert, told later");
        let lost = alert(AlertKind::RunLost {
            run: RunId(12),
            paused: true,
        });
        assert_ne!(id(&failed), id(&lost));
    }

    #[test]
    fn a_run_on_this_machine_gives_its_due_time_exit_and_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let runs = Runs::open(dir.path()).unwrap();
        let run_dir = runs.dir(RunId(12));
        std::fs::create_dir_all(&run_dir).unwrap();
        let due: Timestamp = "2025-12-05T03:00:00Z".parse().unwrap();
        let covers = Covers {
            from: due,
            to: due,
            count: 1,
        };
        let job = JobName::new("backup").unwrap();
        let context =
            runner::RunContext::new(&job, RunId(12), runner::TriggerName::Retry, 3, Some(covers));
        let file = serde_json::json!({
            "run": 12, "fence": 4, "job": "backup", "process": 1, "argv": ["backup"],
            "context": context,
        });
        std::fs::write(run_dir.join("run.json"), file.to_string()).unwrap();
        std::fs::write(
            run_dir.join("exit.json"),
            r#"{"signal": 9, "timed_out": true}"#,
        )
        .unwrap();
        let out: String = (1..=30).map(|i| format!("step {i}\n")).collect();
        std::fs::write(runs.log_path(RunId(12)), out).unwrap();
        let a = alert(AlertKind::FailedOut {
            run: RunId(12),
            attempts: 3,
        });
        let v = payload(&a, "db1", &RunDetails::read(&runs, RunId(12)));
        assert_eq!(v["id"], "backup:failed_out:r12");
        assert_eq!(v["host"], "db1");
        assert_eq!(v["run"], "r12");
        assert_eq!(v["due"], "2025-12-05T03:00:00Z");
        assert_eq!(v["attempt"], 3);
        assert_eq!(v["signal"], "SIGKILL");
        assert!(v["exit_code"].is_null());
        assert_eq!(v["timed_out"], true);
        let lines = v["output"].as_array().unwrap();
        assert_eq!(lines.len(), runner::TAIL_LINES);
        assert_eq!(lines.last().unwrap(), "step 30");
        assert_eq!(v["output_truncated"], true);
        assert_eq!(v["alert"]["job"], "backup");
        // Not on this machine (or no run): the fields are there, null.
        let none = payload(&a, "db1", &RunDetails::default());
        assert!(none["due"].is_null() && none["output"].is_null(), "{none}");
        assert_eq!(none["run"], "r12");
    }
}
