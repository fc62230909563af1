//! People's commands on a real store, against a real daemon where they need one: views
//! that say what is true (paused by the system, parked, held, orphaned), one JSON schema
//! for every `--json` output, `remove`, `status`, `logs`, a store never made from nothing,
//! and each subcommand offering only its own flags.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::time::Duration;

use duetime::{Entry, History};
use world::{poll, signal, wait, World};

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A JSON error object: `ok` false, a snake_case kind, the words.
fn assert_error(text: &str, kind: &str) {
    let v = json(text);
    assert_eq!(v["ok"], false, "{text}");
    assert_eq!(v["kind"], kind, "{text}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{text}");
}

#[test]
fn a_zero_byte_store_is_refused_by_every_command_and_left_empty() {
    let w = World::new("");
    fs::write(w.path("duetime.db"), b"").unwrap();
    let (code, out, err) = w.cli(&["list"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("is empty (0 bytes)"), "{err}");
    let (code, out, _) = w.cli(&["list", "--json"]);
    assert_eq!(code, 1);
    assert_error(&out, "corrupt");
    let mut d = w.daemon("d.log");
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(1));
    assert_eq!(fs::metadata(w.path("duetime.db")).unwrap().len(), 0);
    // A missing store: a JSON error too.
    let other = World::new("");
    let (code, out, _) = other.cli(&["list", "--json"]);
    assert_eq!(code, 1);
    assert_error(&out, "no_store");
    assert!(!other.path("duetime.db").exists(), "a command made a store");
}

#[test]
fn each_subcommand_offers_only_its_own_flags() {
    let w = World::new("");
    let help = |cmd: &str| w.cli(&[cmd, "--help"]).1;
    assert!(help("pause").contains("--note"));
    assert!(!help("pause").contains("--digest"));
    assert!(!help("resume").contains("--note"));
    assert!(help("confirm").contains("--digest"));
    assert!(!help("run-now").contains("--digest"));
    let (code, out, _) = w.cli(&["resume", "x", "--note", "hi", "--json"]);
    assert_eq!(code, 2, "{out}");
    assert_error(&out, "usage");
}

#[test]
fn views_json_and_remove_say_what_is_true() {
    let w = World::new(
        r#"
[[job]]
name = "flaky"
every = "1s"
retries = 0
pause_after_failures = 1
command = ["sh", "-c", "echo out of $DUETIME_RUN; exit 3"]

[[job]]
name = "held"
every = "1s"
requires_confirmation = true
command = ["true"]

[[job]]
name = "doomed"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/doomed.txt"]
"#,
    );
    let mut d = w.daemon("d.log");
    let shown = poll(Duration::from_secs(60), || {
        let (_, out, _) = w.cli(&["show", "flaky"]);
        out.contains("paused        by the system").then_some(out)
    })
    .unwrap_or_else(|| panic!("{}", fs::read_to_string(w.path("d.log")).unwrap()));
    assert!(shown.contains("status        paused"), "{shown}");
    // Issue 42: why the system paused it, the run that did, and how to resume.
    assert!(shown.contains("\n  why           r"), "{shown}");
    assert!(
        shown.contains("\n  resume        duetime resume flaky"),
        "{shown}"
    );
    let (_, listed, _) = w.cli(&["list"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with("flaky paused by the system: r"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.ends_with("; resume: duetime resume flaky"), "{line}");
    assert!(
        shown.contains("next due times: none while paused"),
        "{shown}"
    );
    let (_, out, _) = w.cli(&["show", "held"]);
    assert!(out.contains("status        awaiting_confirmation"), "{out}");
    assert!(out.contains("ledger from   not yet"), "{out}");
    assert!(!out.contains("unknown"), "{out}");

    let (code, out, _) = w.cli(&["list", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["ok"], true);
    let jobs = v["jobs"].as_array().unwrap();
    let job = |name: &str| jobs.iter().find(|j| j["name"] == name).unwrap().clone();
    let flaky = job("flaky");
    assert_eq!(flaky["status"], "paused", "{flaky}");
    assert_eq!(flaky["paused"]["by"], "system", "{flaky}");
    assert_eq!(flaky["paused"]["who"], "the system", "{flaky}");
    assert_eq!(flaky["paused"]["incident"], flaky["last"]["run"], "{flaky}");
    assert_eq!(flaky["paused"]["resume"], "duetime resume flaky", "{flaky}");
    assert!(
        flaky["paused"]["why"].as_str().unwrap().len() > 20,
        "{flaky}"
    );
    assert!(flaky["next_due"].is_null(), "{flaky}");
    assert!(flaky["last"]["run"].as_str().unwrap().starts_with('r'));
    let outcome = flaky["last"]["outcome"].as_str().unwrap();
    assert!(["failed", "failed_out"].contains(&outcome), "{flaky}");
    assert!(
        !out.contains("Pause {") && !out.contains("FailedOut"),
        "{out}"
    );
    assert_eq!(job("held")["status"], "awaiting_confirmation");
    assert!(job("held")["next_due"].is_null());

    let (_, out, _) = w.cli(&["show", "flaky", "--json"]);
    let v = json(&out);
    let line = &v["journal"][0];
    assert!(line["at"].as_str().unwrap().ends_with('Z'), "{line}");
    assert!(v["journal"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["kind"] == "started" && l["entry"]["run"].as_str().is_some()));
    let (code, out, _) = w.cli(&["show", "nosuch", "--json"]);
    assert_eq!(code, 1);
    assert_error(&out, "not_found");

    // Text: relative times beside absolute ones. Doomed's first run may not have ended
    // yet (the test gets here within a second of flaky's pause): asked again until it has.
    let relative = |out: &str| {
        let doomed = out.lines().find(|l| l.starts_with("doomed")).unwrap();
        doomed
            .split("  ")
            .filter(|c| {
                let c = c.trim();
                c == "now" || c.starts_with("in ") || c.ends_with(" ago")
            })
            .count()
    };
    let out = poll(Duration::from_secs(30), || {
        let (_, out, _) = w.cli(&["list"]);
        (relative(&out) == 2).then_some(out)
    })
    .unwrap_or_else(|| panic!("next and last, relative: {}", w.cli(&["list"]).1));
    assert!(out.starts_with("job ") && out.contains(" left ") && out.contains(" passed "));

    // Remove: recorded, gone from the store; the daemon stops running it.
    let (code, out, err) = w.cli(&["remove", "doomed", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("remove doomed: done"), "{out}");
    let ran = w.ran("doomed.txt").len();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        w.ran("doomed.txt").len() <= ran + 1,
        "a removed job kept running"
    );
    let removed = w.journal().iter().any(|r| {
        r.job.as_str() == "doomed"
            && matches!(&r.entry, Entry::History(History::Removed { actor }) if actor.0 == "ana")
    });
    assert!(removed);
    let (code, _, _) = w.cli(&["show", "doomed"]);
    assert_eq!(code, 1);
    let log = fs::read_to_string(w.path("d.log")).unwrap();
    assert!(
        log.contains("command: ") && log.contains("removed by ana"),
        "{log}"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn a_job_left_out_of_the_jobs_file_is_removed_by_the_next_daemon() {
    let w = World::new(
        r#"
[[job]]
name = "stays"
every = "1s"
command = ["true"]

[[job]]
name = "goes"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/goes.txt"]
"#,
    );
    let mut d = w.daemon("d.log");
    assert!(
        poll(Duration::from_secs(60), || (!w.ran("goes.txt").is_empty())
            .then_some(()))
        .is_some()
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    fs::write(
        w.path("jobs.toml"),
        "[[job]]\nname = \"stays\"\nevery = \"1s\"\ncommand = [\"true\"]\n",
    )
    .unwrap();
    let mut d = w.daemon("d2.log");
    let ran = w.ran("goes.txt").len();
    std::thread::sleep(Duration::from_secs(3));
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    assert_eq!(w.ran("goes.txt").len(), ran, "a job not in the file ran");
    let log = fs::read_to_string(w.path("d2.log")).unwrap();
    assert!(
        log.contains("not in the jobs file: removed from the store"),
        "{log}"
    );
    assert!(!log.contains("reported failed"), "{log}");
    assert!(w
        .state()
        .job("goes", duetime::Timestamp::from_secs(0))
        .is_none());
    assert!(w.journal().iter().any(|r| r.job.as_str() == "goes"
        && matches!(&r.entry, Entry::History(History::Removed { actor }) if actor.0 == "jobs-file")));
}

#[test]
fn status_logs_and_retention_on_a_running_daemon() {
    let w = World::new(
        r#"
[[job]]
name = "chatty"
every = "1s"
command = ["sh", "-c", "echo hello from $DUETIME_RUN"]
"#,
    );
    let mut d = w
        .daemon_command(None, &["--tick", "1s", "--keep-runs", "3"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(w.path("d.log")).unwrap())
        .spawn()
        .unwrap();
    w.guard(&d);
    let process = w.process_of("d.log");
    let log = fs::read_to_string(w.path("d.log")).unwrap();
    assert!(
        log.contains("tick=1s") && log.contains("jobs=1") && log.contains("runs="),
        "{log}"
    );
    let (code, out, _) = w.cli(&["status"]);
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.starts_with(&process.to_string()))
        .unwrap();
    assert!(line.contains("alive"), "{out}");
    assert!(line.contains(&format!("pid {}", d.id())), "{out}");
    let (code, out, _) = w.cli(&["status", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["daemons"][0]["state"], "alive", "{out}");

    // Retention: never more than 3 finished directories (plus the run going) for long.
    std::thread::sleep(Duration::from_secs(6));
    // The newest run may have just started and printed nothing yet (every second, on a
    // busy machine): asked again, `logs` soon shows what a run printed.
    let printed = poll(Duration::from_secs(10), || {
        let (code, out, err) = w.cli(&["logs", "chatty"]);
        assert_eq!(code, 0, "{err}");
        out.starts_with("hello from ").then_some(out)
    });
    assert!(printed.is_some(), "logs never showed a run's output");
    let (code, _, err) = w.cli(&["logs", "chatty", "--run", "r1"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("pruned") || err.contains("no directory"),
        "{err}"
    );

    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    // Restarted: the start prunes at once.
    let mut d = w
        .daemon_command(None, &["--tick", "1s", "--keep-runs", "3"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(w.path("d2.log")).unwrap())
        .spawn()
        .unwrap();
    w.guard(&d);
    w.process_of("d2.log");
    let dirs = fs::read_dir(w.path("duetime.db.runs")).unwrap().count();
    assert!(dirs <= 5, "{dirs} run directories kept with --keep-runs 3");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    // The first daemon is gone now: status says so.
    let (_, out, _) = w.cli(&["status"]);
    let line = out
        .lines()
        .find(|l| l.starts_with(&process.to_string()))
        .unwrap();
    assert!(
        line.contains("gone") || line.contains("silent") || line.contains("draining"),
        "{out}"
    );
}

#[test]
fn a_run_whose_daemon_died_is_shown_orphaned_not_running() {
    let w = World::new(
        r#"
[[job]]
name = "long"
every = "1h"
missed = "catch_up_once"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/long.txt; sleep 8"]
"#,
    );
    let mut d = w.daemon("d.log");
    let process = w.process_of("d.log");
    // The first due time is an hour away: a backfill of two old ones starts a run now.
    let (code, out, err) = w.cli(&[
        "backfill",
        "long",
        "--from",
        "2000-01-01T00:00:00Z",
        "--to",
        "2000-01-01T01:00:00Z",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        poll(Duration::from_secs(60), || (!w.ran("long.txt").is_empty())
            .then_some(()))
        .is_some()
    );
    signal(&d, libc::SIGKILL);
    wait(&mut d, Duration::from_secs(10));
    // Its lease (ten seconds: `MIN_LEASE`, the floor under two 1 s ticks) lapses with
    // nobody to renew it.
    let shown = poll(Duration::from_secs(30), || {
        let (_, out, _) = w.cli(&["list"]);
        out.lines()
            .find(|l| l.starts_with("long"))
            .filter(|l| l.contains("orphaned"))
            .map(str::to_string)
    });
    assert!(shown.is_some(), "{}", w.cli(&["list"]).1);
    let (_, out, _) = w.cli(&["status"]);
    let line = out
        .lines()
        .find(|l| l.starts_with(&process.to_string()))
        .unwrap();
    assert!(line.contains("gone"), "{out}");
}

/// Issue 42: `show` prints the command the definition in force runs (as whom, where), so
/// a run that failed `not started: No such file or directory` can be understood; `--json`
/// carries its argv.
#[test]
fn show_prints_the_command_in_force() {
    let w = World::new(
        r#"
[[job]]
name = "nightly"
cron = "0 3 * * *"
command = ["/usr/local/bin/backup orders", "--full"]
workdir = "/tmp"
"#,
    );
    let mut d = w.daemon("d.log");
    w.process_of("d.log");
    let (code, out, err) = w.cli(&["show", "nightly"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("  command       '/usr/local/bin/backup orders' --full (in /tmp)\n"),
        "{out}"
    );
    let (code, out, _) = w.cli(&["show", "nightly", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["job"]["command"],
        serde_json::json!(["/usr/local/bin/backup orders", "--full"])
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

/// Issue 42: a store restarted many times does not list every dead incarnation: the
/// newest three dead get a line each, the rest one summary line, and `--all` lists each.
#[test]
fn status_folds_dead_incarnations_into_one_line() {
    let w = World::new(
        r#"
[[job]]
name = "idle"
every = "1h"
command = ["true"]
"#,
    );
    for i in 0..5 {
        let log = format!("d{i}.log");
        let mut d = w.daemon(&log);
        w.process_of(&log);
        signal(&d, libc::SIGTERM);
        assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
    }
    let (code, out, err) = w.cli(&["status"]);
    assert_eq!(code, 0, "{err}");
    let rows = out.lines().filter(|l| l.starts_with('p')).count();
    assert_eq!(rows, 3, "three dead incarnations on a line each:\n{out}");
    assert!(
        out.contains("2 earlier incarnation(s) folded (p1..p2: 2 gone, 0 silent)"),
        "{out}"
    );
    let (_, all, _) = w.cli(&["status", "--all"]);
    let rows = all.lines().filter(|l| l.starts_with('p')).count();
    assert_eq!(rows, 5, "{all}");
    assert!(!all.contains("folded"), "{all}");
    let (_, json_out, _) = w.cli(&["status", "--json"]);
    assert_eq!(json(&json_out)["daemons"].as_array().unwrap().len(), 5);
}
