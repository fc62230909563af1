//! Issue 42, logs: `duetime run --log-format json` writes one JSON object a line with
//! `level` and `message` (for log shippers), `--log-level` and `RUST_LOG` choose what is
//! written, and routine housekeeping (pruning run directories) is not at info.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use world::{poll, signal, wait, World};

/// A job every second that fails out at once (`retries = 0`): its alert is a warning.
const FAILING: &str = r#"
[[job]]
name = "flaky"
every = "1s"
command = ["sh", "-c", "echo broken >&2; exit 3"]
retries = 0
"#;

const OK: &str = r#"
[[job]]
name = "beat"
every = "1s"
command = ["true"]
"#;

fn log(w: &World, name: &str) -> String {
    fs::read_to_string(w.path(name)).unwrap_or_default()
}

/// Starts a daemon with `flags` (and `RUST_LOG` when given), waits until its log holds
/// `until`, drains it and returns the log.
fn daemon_log(w: &World, flags: &[&str], rust_log: Option<&str>, until: &str) -> String {
    let file = fs::File::create(w.path("d.log")).unwrap();
    let mut cmd = w.daemon_command(None, flags);
    cmd.env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    let mut d = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap();
    w.guard(&d);
    let seen = poll(Duration::from_secs(30), || {
        log(w, "d.log").contains(until).then_some(())
    });
    signal(&d, libc::SIGTERM);
    let code = wait(&mut d, Duration::from_secs(30));
    let text = log(w, "d.log");
    assert!(seen.is_some(), "never logged {until:?}:\n{text}");
    assert_eq!(code, Some(0), "did not drain:\n{text}");
    text
}

#[test]
fn json_format_writes_one_object_a_line_with_level_and_message() {
    let w = World::new(OK);
    let flags = ["--tick", "1s", "--keep-runs", "1", "--log-format", "json"];
    let text = daemon_log(&w, &flags, None, "history beat: settled");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() >= 3, "{text}");
    for v in &lines {
        assert!(v["level"].is_string(), "no level: {v}");
        assert!(v["message"].is_string(), "no message: {v}");
        assert!(v["timestamp"].is_string(), "no timestamp: {v}");
    }
    let started = lines.iter().find(|v| v["message"] == "started").unwrap();
    assert_eq!(started["level"], "INFO");
    assert!(started["process"].as_str().unwrap().starts_with('p'));
    let start = lines
        .iter()
        .find(|v| v["message"].as_str().unwrap().starts_with("START beat"))
        .unwrap_or_else(|| panic!("no START line:\n{text}"));
    assert_eq!(
        start["job"], "beat",
        "the job is a field of its own: {start}"
    );
    assert!(start["run"].as_str().unwrap().starts_with('r'));
}

/// A run logs two lines at INFO, its start and its settling (with the outcome); the
/// daemon's own "finished", the start's history line and the `ran` ledger line, which say
/// the same again, are DEBUG.
#[test]
fn a_run_logs_its_start_and_its_settling_at_info() {
    let w = World::new(OK);
    let text = daemon_log(&w, &["--tick", "1s"], None, "history beat: settled r1");
    let of_r1: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" r1 ") || l.ends_with(" r1"))
        .collect();
    assert_eq!(of_r1.len(), 2, "{text}");
    assert!(of_r1[0].contains("START beat r1"), "{text}");
    assert!(of_r1[1].contains("settled r1"), "{text}");
    let debug = daemon_log(
        &w,
        &["--tick", "1s", "--log-level", "debug"],
        None,
        "history beat: settled r",
    );
    assert!(
        debug.contains("DEBUG ") && debug.contains("finished"),
        "{debug}"
    );
}

#[test]
fn pruning_is_not_info() {
    let w = World::new(OK);
    // With one run kept, every run after the first prunes one directory.
    let flags = ["--tick", "1s", "--keep-runs", "1"];
    let text = daemon_log(&w, &flags, None, "START beat r4");
    assert!(!text.contains("pruned"), "{text}");
    let debug = daemon_log(
        &w,
        &["--tick", "1s", "--keep-runs", "1", "--log-level", "debug"],
        None,
        "pruned",
    );
    assert!(
        debug.contains("DEBUG pruned old run directories"),
        "{debug}"
    );
}

#[test]
fn log_level_warn_hides_info_and_keeps_warnings() {
    for (flags, rust_log) in [
        (&["--tick", "1s", "--log-level", "warn"][..], Some("debug")),
        (&["--tick", "1s"][..], Some("warn")),
    ] {
        let w = World::new(FAILING);
        let text = daemon_log(&w, flags, rust_log, "ALERT flaky");
        assert!(text.contains(" WARN "), "{text}");
        assert!(!text.contains(" INFO "), "info shown at warn: {text}");
        assert!(!text.contains("DEBUG"), "{text}");
    }
}

#[test]
fn an_unreadable_rust_log_is_a_warning_and_info_is_used() {
    let w = World::new(OK);
    let text = daemon_log(&w, &["--tick", "1s"], Some("[[["), " started");
    assert!(
        text.contains("RUST_LOG `[[[` is not a log filter"),
        "{text}"
    );
}
