//! Issue 21 against a real daemon over SQLite: `GET /metrics` scraped and held to the
//! store's journal (and its journal-derived counters surviving a restart), an alert
//! reaching a command and a webhook after a failed first delivery of each, the API
//! answering what `list --json` and `show --json` print, and `--http` refusing an address
//! other machines can reach.

#[path = "support/web.rs"]
mod web;
#[path = "support/world.rs"]
mod world;

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

use duetime::{Entry, History, Outcome};
use web::{free_port, get, samples, Hook};
use world::{poll, signal, wait, World};

const JOBS: &str = r#"
[[job]]
name = "steady"
title = "Runs <fine> & well"
every = "1s"
command = ["sh", "-c", "sleep 0.2"]

[[job]]
name = "flaky"
every = "1s"
retries = 0
pause_after_failures = 2
command = ["sh", "-c", "exit 3"]
"#;

fn log_of(w: &World, name: &str) -> String {
    fs::read_to_string(w.path(name)).unwrap_or_default()
}

/// Scrapes until the daemon answers.
fn scrape(w: &World, port: u16, log: &str) -> String {
    poll(Duration::from_secs(30), || {
        get(port, "/metrics").filter(|(s, _)| *s == 200)
    })
    .unwrap_or_else(|| panic!("no /metrics:\n{}", log_of(w, log)))
    .1
}

/// The journal once nothing more is written to it (every job paused, no run open).
fn settled_journal(w: &World) -> Vec<duetime::Record> {
    let mut last = w.journal();
    poll(Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_millis(1500));
        let now = w.journal();
        let same = now.len() == last.len();
        last = now;
        same.then(|| last.clone())
    })
    .expect("the journal settles once every job is paused")
}

/// The series the journal implies: due times by (job, fate, cause), starts by trigger,
/// settlements by outcome.
fn expected(journal: &[duetime::Record]) -> BTreeMap<String, f64> {
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    for r in journal {
        let job = r.job.as_str();
        let key = match &r.entry {
            Entry::Ledger(l) => {
                let (fate, cause) = duetime_host::http::tally::fate(l);
                *m.entry(format!(
                    "duetime_due_times_total{{job=\"{job}\",fate=\"{fate}\",cause=\"{cause}\"}}"
                ))
                .or_default() += l.count as f64;
                continue;
            }
            Entry::History(History::Started { trigger, .. }) => {
                format!(
                    "duetime_runs_started_total{{job=\"{job}\",trigger=\"{}\"}}",
                    trigger.name()
                )
            }
            Entry::History(History::Settled { outcome, .. }) => {
                let o = match outcome {
                    Outcome::Ok => "ok",
                    Outcome::Failed { .. } => "failed",
                    other => panic!("unexpected outcome {other:?}"),
                };
                format!("duetime_runs_finished_total{{job=\"{job}\",outcome=\"{o}\"}}")
            }
            _ => continue,
        };
        *m.entry(key).or_default() += 1.0;
    }
    m
}

fn assert_agrees(scraped: &BTreeMap<String, f64>, expected: &BTreeMap<String, f64>) {
    for (k, v) in expected {
        assert_eq!(
            scraped.get(k),
            Some(v),
            "{k}: scraped {:?}, journal {v}",
            scraped.get(k)
        );
    }
    for (k, v) in scraped.iter().filter(|(k, _)| {
        [
            "duetime_due_times_total",
            "duetime_runs_started_total",
            "duetime_runs_finished_total",
        ]
        .iter()
        .any(|p| k.starts_with(p))
    }) {
        // Every label value is exported from the start at 0 (issue 42): a series the
        // journal has no line for must be one of those, still at 0.
        assert!(
            expected.contains_key(k) || *v == 0.0,
            "{k} = {v} scraped, not in the journal"
        );
    }
}

#[test]
fn metrics_agree_with_the_journal_and_survive_a_restart() {
    let w = World::new(JOBS);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    poll(Duration::from_secs(60), || {
        let (_, out, _) = w.cli(&["show", "steady"]);
        let (_, flaky, _) = w.cli(&["show", "flaky"]);
        (out.matches(" ran r").count() >= 3 && flaky.contains("paused        by the system"))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no runs:\n{}", log_of(&w, "d.log")));
    assert_eq!(w.cli(&["pause", "steady"]).0, 0);
    let journal = settled_journal(&w);
    let text = scrape(&w, port, "d.log");
    let scraped = samples(&text);
    assert_agrees(&scraped, &expected(&journal));
    // Per-job gauges from the state, and names as Prometheus spells them.
    assert_eq!(scraped["duetime_job_paused{job=\"steady\"}"], 1.0);
    assert_eq!(scraped["duetime_jobs_paused"], 2.0);
    assert_eq!(scraped["duetime_jobs"], 2.0);
    // An SQLite store is one partition, p0, holding every job and loading.
    assert_eq!(scraped["duetime_partition_jobs{partition=\"p0\"}"], 2.0);
    assert_eq!(scraped["duetime_partition_refused{partition=\"p0\"}"], 0.0);
    assert!(scraped["duetime_partition_version{partition=\"p0\"}"] > 3.0);
    assert!(!text.contains("duetime_partition_jobs{partition=\"p1\"}"));
    assert!(
        !text.contains("duetime_next_due_timestamp_seconds{job=\"steady\"}"),
        "a paused job has no next due time"
    );
    let last_ok = journal
        .iter()
        .filter(|r| r.job.as_str() == "steady")
        .filter(|r| {
            matches!(
                r.entry,
                Entry::History(History::Settled {
                    outcome: Outcome::Ok,
                    ..
                })
            )
        })
        .map(|r| r.at.as_millis() as f64 / 1000.0)
        .fold(f64::MIN, f64::max);
    assert_eq!(
        scraped["duetime_last_success_timestamp_seconds{job=\"steady\"}"],
        last_ok
    );
    let starts = scraped["duetime_runs_started_total{job=\"steady\",trigger=\"schedule\"}"];
    assert_eq!(
        scraped["duetime_start_lateness_seconds_count{job=\"steady\"}"],
        starts
    );
    assert!(scraped["duetime_store_transaction_duration_seconds_count"] > 0.0);
    let told = |m: &BTreeMap<String, f64>| -> f64 {
        m.iter()
            .filter(|(k, _)| k.starts_with("duetime_alerts_told_total{job=\"flaky\""))
            .map(|(_, v)| v)
            .sum()
    };
    assert!(told(&scraped) >= 1.0, "{text}");
    assert!(text.contains("# TYPE duetime_run_duration_seconds histogram"));
    assert!(!text.contains("run=\""), "no run ids as labels");

    // A new incarnation reads the same journal: the same counters; its own start afresh.
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
    let mut d = w.daemon_with("d2.log", None, &["--http", &addr]);
    let again = samples(&scrape(&w, port, "d2.log"));
    let journal = w.journal();
    assert_agrees(&again, &expected(&journal));
    assert_eq!(told(&again), 0.0, "told is per process");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

#[test]
fn the_api_answers_what_list_and_show_print_and_the_page_escapes() {
    let w = World::new(JOBS);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    scrape(&w, port, "d.log");
    assert_eq!(w.cli(&["pause", "steady"]).0, 0);
    assert_eq!(w.cli(&["pause", "flaky"]).0, 0);
    settled_journal(&w);
    let json = |t: &str| -> serde_json::Value { serde_json::from_str(t).unwrap() };
    let (status, api) = get(port, "/api/jobs").unwrap();
    assert_eq!(status, 200);
    let (_, cli) = (0, w.cli(&["list", "--json"]).1);
    let (mut a, mut c) = (json(&api), json(&cli));
    // The same document but for the instant each was asked at.
    a["now"] = serde_json::Value::Null;
    c["now"] = serde_json::Value::Null;
    assert_eq!(a, c);
    let (status, api) = get(port, "/api/jobs/steady").unwrap();
    assert_eq!(status, 200);
    assert_eq!(json(&api), json(&w.cli(&["show", "steady", "--json"]).1));
    let (status, api) = get(port, "/api/jobs/nosuch").unwrap();
    assert_eq!(
        (status, json(&api)["kind"].clone()),
        (404, "not_found".into())
    );
    let (status, page) = get(port, "/").unwrap();
    assert_eq!(status, 200);
    assert!(
        page.contains("Runs &lt;fine&gt; &amp; well") && !page.contains("<fine>"),
        "{page}"
    );
    let (status, page) = get(port, "/jobs/steady?from=yesterday").unwrap();
    assert_eq!(status, 400);
    assert!(page.contains("RFC 3339"), "{page}");
    let (status, _) = get(port, "/jobs/%3Cscript%3E").unwrap();
    assert_eq!(status, 404);
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));

    // Another machine's reach needs --http-public.
    let mut refused = w.daemon_with("r.log", None, &["--http", "0.0.0.0:9"]);
    assert_eq!(wait(&mut refused, Duration::from_secs(30)), Some(64));
    assert!(
        log_of(&w, "r.log").contains("not a loopback address"),
        "{}",
        log_of(&w, "r.log")
    );
}

/// The dead-man's switch end to end: a job not due for an hour that expects a success
/// within three seconds is told `no_success` at the first tick past them, and the alert
/// reaches the command like any other, and the metrics count it.
#[test]
fn a_job_silent_past_its_expect_success_within_pages_through_the_command() {
    let w = World::new(
        r#"
[alerts]
command = ["sh", "-c", "cat >> {dir}/alerts.jsonl; echo \"$DUETIME_ALERT_JOB $DUETIME_ALERT_KIND\" >> {dir}/alerts.env"]

[[job]]
name = "nightly"
every = "1h"
expect_success_within = "3s"
command = ["true"]
"#,
    );
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    // A whole line: the command's shell creates the file before it writes the line.
    let env = poll(Duration::from_secs(60), || {
        fs::read_to_string(w.path("alerts.env"))
            .ok()
            .filter(|text| text.ends_with('\n'))
    })
    .unwrap_or_else(|| panic!("no alert delivered:\n{}", log_of(&w, "d.log")));
    assert_eq!(env.lines().next(), Some("nightly no_success"), "{env}");
    let body: serde_json::Value = serde_json::from_str(
        fs::read_to_string(w.path("alerts.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(body["alert"]["kind"]["alert"], "no_success", "{body}");
    assert_eq!(body["alert"]["kind"]["within"], 3000, "{body}");
    let m = samples(&scrape(&w, port, "d.log"));
    assert_eq!(
        m.get("duetime_alerts_told_total{job=\"nightly\",kind=\"no_success\"}"),
        Some(&1.0),
        "told once: {m:?}"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

#[test]
fn an_alert_reaches_a_command_and_a_webhook_after_a_failed_first_delivery() {
    let hook = Hook::start(1);
    let w = World::new(&format!(
        r#"
[alerts]
# Fails its first delivery (no marker yet), then takes the alert.
command = ["sh", "-c", "test -e {{dir}}/tried || {{ touch {{dir}}/tried; exit 1; }}; cat >> {{dir}}/alerts.jsonl; echo \"$DUETIME_ALERT_JOB $DUETIME_ALERT_KIND\" >> {{dir}}/alerts.env"]
webhook = "http://127.0.0.1:{}/hook"
retries = 3
backoff = {{ initial = "200ms", max = "1s" }}

[[job]]
name = "doomed"
every = "1s"
retries = 0
command = ["sh", "-c", "echo starting; echo cannot reach the database >&2; exit 1"]

[[job]]
name = "quiet"
every = "1s"
retries = 0
alerts = {{}}
command = ["sh", "-c", "exit 1"]
"#,
        hook.port
    ));
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    let env = poll(Duration::from_secs(60), || {
        let text = fs::read_to_string(w.path("alerts.env")).ok()?;
        (hook.received().len() >= 2).then_some(text)
    })
    .unwrap_or_else(|| panic!("no alert delivered:\n{}", log_of(&w, "d.log")));
    assert_eq!(env.lines().next(), Some("doomed failed_out"), "{env}");
    let body: serde_json::Value = serde_json::from_str(
        fs::read_to_string(w.path("alerts.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (body["job"].as_str(), body["kind"].as_str()),
        (Some("doomed"), Some("failed_out"))
    );
    assert!(
        body["text"].as_str().unwrap().starts_with("ALERT doomed"),
        "{body}"
    );
    assert_eq!(body["alert"]["job"], "doomed");
    // Issue 42: the context a person needs, and an id stable across attempts.
    let run = body["run"].as_str().unwrap();
    assert_eq!(body["id"], format!("doomed:failed_out:{run}"), "{body}");
    assert_eq!(body["exit_code"], 1, "{body}");
    assert!(body["signal"].is_null(), "{body}");
    assert_eq!(
        body["output"],
        serde_json::json!(["starting", "cannot reach the database"]),
        "{body}"
    );
    assert!(!body["host"].as_str().unwrap().is_empty(), "{body}");
    let due = body["due"].as_str().unwrap();
    assert!(due.parse::<duetime::Timestamp>().is_ok(), "{body}");
    assert_eq!(body["covers"]["to"], due, "{body}");
    // The webhook got the same JSON twice: refused once, then taken.
    let got = hook.received();
    let first: serde_json::Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(first, body);
    assert_eq!(got[0], got[1]);
    let log = log_of(&w, "d.log");
    assert!(
        log.contains("alert delivery failed") && log.contains("alert delivered"),
        "{log}"
    );
    let m = samples(&scrape(&w, port, "d.log"));
    for target in ["command", "webhook"] {
        let k = |r: &str| {
            format!("duetime_alert_deliveries_total{{job=\"doomed\",target=\"{target}\",result=\"{r}\"}}")
        };
        assert_eq!(
            (m.get(&k("failed")), m.get(&k("ok"))),
            (Some(&1.0), Some(&1.0)),
            "{target}"
        );
    }
    // `alerts = {}`: the quiet job's alert is told (logged, counted) and sent nowhere.
    assert!(!env.contains("quiet"), "{env}");
    assert!(
        m.contains_key("duetime_alerts_told_total{job=\"quiet\",kind=\"failed_out\"}"),
        "{m:?}"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

/// Issue 42: `GET /healthz` answers 200 with the daemon's process once it turns with its
/// store reachable, and 404 was all there was before.
#[test]
fn healthz_says_the_daemon_turns_and_reads_its_store() {
    let w = World::new(JOBS);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    let (status, body) = poll(Duration::from_secs(30), || {
        get(port, "/healthz").filter(|(s, _)| *s == 200)
    })
    .unwrap_or_else(|| panic!("no healthy /healthz:\n{}", log_of(&w, "d.log")));
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["ok"], true, "{body}");
    assert_eq!(v["store"], "reachable", "{body}");
    assert!(
        v["process"].as_str().is_some_and(|p| p.starts_with('p')),
        "{body}"
    );
    assert!(
        v["last_turn_seconds_ago"]
            .as_f64()
            .is_some_and(|s| s < 60.0),
        "{body}"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

/// Group commit (issue 43): the reports of the runs that ended together commit in one
/// transaction, so a daemon whose twelve jobs end every second commits several events a
/// transaction; with `DUETIME_BATCH_MAX=1` (the measurement knob) it commits one event a
/// transaction, as before. Both counted by the daemon's own `/metrics`.
#[test]
fn the_reports_that_ended_together_commit_in_one_transaction() {
    let mut jobs = String::new();
    for i in 0..12 {
        jobs.push_str(&format!(
            "[[job]]\nname = \"j{i:02}\"\nevery = \"1s\"\ncommand = [\"true\"]\n\n"
        ));
    }
    let per_transaction = |batch_max: Option<&str>| -> f64 {
        let w = World::new(&jobs);
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let log = fs::File::create(w.path("d.log")).unwrap();
        let mut cmd = w.daemon_command(None, &["--tick", "1s", "--http", &addr]);
        if let Some(max) = batch_max {
            cmd.env("DUETIME_BATCH_MAX", max);
        }
        let mut d = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        w.guard(&d);
        let scraped = poll(Duration::from_secs(60), || {
            let m = samples(&get(port, "/metrics").filter(|(s, _)| *s == 200)?.1);
            let started: f64 = m
                .iter()
                .filter(|(k, _)| k.starts_with("duetime_runs_started_total{"))
                .map(|(_, v)| v)
                .sum();
            (started >= 48.0).then_some(m)
        })
        .unwrap_or_else(|| panic!("too few runs:\n{}", log_of(&w, "d.log")));
        signal(&d, libc::SIGTERM);
        assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
        scraped["duetime_store_events_committed_total"]
            / scraped["duetime_store_transaction_duration_seconds_count"]
    };
    let batched = per_transaction(None);
    eprintln!("group commit: {batched:.2} events a transaction");
    // About 5 on a quiet machine (each second: the tick, and the twelve reports in one or
    // two batches as the commands end); start-up's transactions count too.
    assert!(
        batched >= 2.0,
        "{batched} events a transaction with group commit"
    );
    let one = per_transaction(Some("1"));
    assert!(
        one <= 1.0,
        "{one} events a transaction with DUETIME_BATCH_MAX=1"
    );
}
