//! `duetime what-if` as people run it: the real binary over a jobs file in a temporary
//! directory. The replays are deterministic (no real clock once `--from` is given or
//! derived from a window), so their whole output is snapshotted.

mod support;
use support::*;

use std::path::Path;

use duetime::{Actor, Event, JobDef, JobName, Now, Schedule, Timestamp};
use duetime_host::store::{SqliteStore, Store};

/// A temporary directory holding `jobs.toml` with `text`.
fn with_jobs(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("jobs.toml"), text).expect("written");
    dir
}

/// The issue's example: a required New York backup at 02:30 (the 9 March 2025 gap moves it
/// to 03:00 EDT, 07:00Z), an hourly job that skips what it missed, and a quarter-hourly job
/// that catches up once.
const JOBS: &str = r#"
[[job]]
name = "backup"
cron = "30 2 * * *"
tz = "America/New_York"
command = ["/usr/local/bin/backup"]
missed = "required"
timeout = "2h"

[[job]]
name = "hourly"
cron = "0 * * * *"
command = ["/usr/local/bin/hourly"]
missed = "skip"

[[job]]
name = "quarter"
cron = "*/15 * * * *"
command = ["/usr/local/bin/quarter"]
missed = "catch_up_once"
"#;

const DOWN: &str = "2025-03-09T01:00..2025-03-09T09:00";

#[test]
fn down_over_the_spring_forward_gap() {
    let dir = with_jobs(JOBS);
    let r = duetime_in(dir.path(), &["what-if", "jobs.toml", "--down", DOWN]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(r.stderr, "");
    // The backup's gap-moved due time (07:00Z, inside the outage) is caught up at the
    // restart; the hourly job skips 02:00..08:00; the quarter-hourly one skips all but the
    // newest, which it catches up.
    assert!(r
        .stdout
        .contains("03-09 07:00  03-09 03:00 EDT      1  caught up (down) by r3"));
    assert!(r.stdout.contains("7  skipped (down)"));
    assert!(r.stdout.contains("30  skipped (down)"));
    insta::assert_snapshot!("down_spring_forward", r.stdout);
}

#[test]
fn the_same_arguments_print_the_same_report() {
    let dir = with_jobs(JOBS);
    let a = duetime_in(dir.path(), &["what-if", "jobs.toml", "--down", DOWN]);
    let b = duetime_in(dir.path(), &["what-if", "jobs.toml", "--down", DOWN]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn a_pause_skips_or_catches_up_by_the_missed_rule() {
    let dir = with_jobs(JOBS);
    let r = duetime_in(
        dir.path(),
        &[
            "what-if",
            "jobs.toml",
            "--from",
            "2025-03-09T04:00",
            "--until",
            "2025-03-09T16:00",
            "--pause",
            "hourly@2025-03-09T10:00..2025-03-09T14:30",
            "--pause",
            "backup@2025-03-09T05:00..2025-03-09T08:00",
        ],
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("caught up (paused) by"));
    assert!(r.stdout.contains("5  skipped (paused)"));
    insta::assert_snapshot!("pause", r.stdout);
}

#[test]
fn a_clock_jump_forward_and_back() {
    let dir = with_jobs(JOBS);
    let r = duetime_in(
        dir.path(),
        &[
            "what-if",
            "jobs.toml",
            "--from",
            "2025-03-09T09:00",
            "--until",
            "2025-03-09T16:00",
            "--clock-jump",
            "2025-03-09T10:00+2h",
            "--clock-jump",
            "2025-03-09T14:00-30m",
        ],
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("skipped (clock_forward)"));
    assert!(r.stdout.contains("caught up (clock_forward)"));
    insta::assert_snapshot!("clock_jump", r.stdout);
}

#[test]
fn runs_longer_than_the_timeout_fail_out() {
    let dir = with_jobs(JOBS);
    let r = duetime_in(
        dir.path(),
        &[
            "what-if",
            "jobs.toml",
            "--down",
            DOWN,
            "--duration",
            "backup=3h",
        ],
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("failed out (r"), "{}", r.stdout);
    assert!(r.stdout.contains("ALERT failed out"), "{}", r.stdout);
    assert!(r.stdout.contains("at --until: paused"), "{}", r.stdout);
}

/// A weekday report and a last-business-day payroll in London, over a yearly holiday
/// calendar, with the host down over Christmas Eve.
const HOLIDAYS: &str = r#"
[calendars.holidays]
yearly = true
dates = [{ date = "2025-12-25", label = "Christmas Day" }, { date = "2025-12-31", label = "New Year's Eve" }]

[[job]]
name = "report"
cron = "0 9 * * mon-fri"
tz = "Europe/London"
exclude = ["holidays"]
command = ["/usr/local/bin/report"]

[[job]]
name = "payroll"
cron = "0 17 * * *"
tz = "Europe/London"
exclude = ["holidays"]
business_day = -1
command = ["/usr/local/bin/payroll"]
"#;

#[test]
fn excluded_due_times_are_shown_beside_the_ledger_and_never_counted_due() {
    let dir = with_jobs(HOLIDAYS);
    let span = [
        "--from",
        "2026-12-20T00:00:00Z",
        "--until",
        "2027-01-05T00:00:00Z",
        "--down",
        "2026-12-24T00:00..2026-12-27T00:00",
    ];
    let r = duetime_in(dir.path(), &[&["what-if", "jobs.toml"][..], &span].concat());
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    // The calendar is yearly, written for 2025: 2026's Christmas is excluded, not skipped
    // as down, and the weekdays' run of on-time rows breaks around it.
    assert!(r.stdout.contains(
        "2026-12-25 09:00                      2026-12-25 09:00 GMT                              1  excluded, not due: holidays (Christmas Day)"
    ));
    assert!(r
        .stdout
        .contains("2026-12-24 09:00                      2026-12-24 09:00 GMT                              1  skipped (down)"));
    assert!(r.stdout.contains(
        "9 due: 8 ran on time, 0 caught up, 1 skipped (down 1), 0 failed out, 0 lost; 2 more excluded by calendars, not due"
    ));
    // The last business day of December 2026 is the 30th: the 31st is a holiday.
    assert!(r
        .stdout
        .contains("2026-12-30 17:00  2026-12-30 17:00 GMT      1  ran on time (r7)"));
    insta::assert_snapshot!("holidays", r.stdout);

    let r = duetime_in(
        dir.path(),
        &[&["what-if", "jobs.toml", "--json"][..], &span].concat(),
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let report = &v["jobs"][0];
    assert_eq!(report["summary"]["excluded"], 2);
    assert_eq!(report["summary"]["due"], 9);
    assert_eq!(report["excluded"][1]["from"], "2026-12-31T09:00:00Z");
    assert_eq!(report["excluded"][1]["why"], "holidays (New Year's Eve)");
    // No ledger entry covers an excluded due time.
    let ms = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .unwrap()
            .timestamp_millis()
    };
    let excluded = [ms("2026-12-25T09:00:00Z"), ms("2026-12-31T09:00:00Z")];
    for e in report["ledger"].as_array().expect("ledger") {
        let (from, to) = (e["from"].as_i64().unwrap(), e["to"].as_i64().unwrap());
        assert!(!excluded.iter().any(|x| (from..=to).contains(x)), "{e}");
    }
}

#[test]
fn json_parses_and_counts_agree() {
    let dir = with_jobs(JOBS);
    let r = duetime_in(
        dir.path(),
        &["what-if", "jobs.toml", "--down", DOWN, "--json"],
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["from"], "2025-03-09T01:00:00Z");
    assert_eq!(v["until"], "2025-03-10T09:00:00Z");
    assert_eq!(v["scenario"]["down"][0]["to"], "2025-03-09T09:00:00Z");
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 3);
    let quarter = &jobs[2];
    assert_eq!(quarter["name"], "quarter");
    assert_eq!(quarter["summary"]["skipped"]["down"], 30);
    assert_eq!(quarter["summary"]["caught_up"]["down"], 1);
    let backup = &jobs[0];
    assert_eq!(backup["zone"], "America/New_York");
    assert_eq!(backup["summary"]["caught_up"]["down"], 1);
    assert_eq!(backup["groups"][0]["from"], "2025-03-09T07:00:00Z");
    // Every job's groups add up to its summary, and its ledger to the same count.
    for j in jobs {
        let due = j["summary"]["due"].as_u64().expect("due");
        let groups: u64 = j["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["count"].as_u64().expect("count"))
            .sum();
        let ledger: u64 = j["ledger"]
            .as_array()
            .expect("ledger")
            .iter()
            .map(|e| e["count"].as_u64().expect("count"))
            .sum();
        assert_eq!((groups, ledger), (due, due), "{}", j["name"]);
    }
}

#[test]
fn usage_errors_name_the_flag_and_what_is_accepted() {
    let dir = with_jobs(JOBS);
    std::fs::write(dir.path().join("bad.toml"), "[[job]]\nname = \"x\"\n").expect("written");
    let cases: &[&[&str]] = &[
        &["--down", "2025-03-09T01:00"],
        &["--down", "2025-03-09T09:00..2025-03-09T01:00"],
        &["--down", "2025-03-09T01:00..2025-03-09T01:00"],
        &["--down", "2025-03-09T01:00..tomorrow"],
        &["--pause", "nosuch@2025-03-09T01:00..2025-03-09T02:00"],
        &["--pause", "hourly"],
        &[
            "--pause",
            "hourly@2025-03-09T01:00..2025-03-09T03:00",
            "--pause",
            "hourly@2025-03-09T02:00..2025-03-09T04:00",
        ],
        &["--clock-jump", "2025-03-09T01:00*2h"],
        &["--clock-jump", "2025-03-09T01:00+0s"],
        &["--duration", "nosuch=5s"],
        &["--duration", "hourly=0s"],
        &["--from", "2025-03-09T05:00", "--down", DOWN],
        &["--from", "2025-03-09T05:00", "--until", "2025-03-09T04:00"],
        &["--from", "2025-03-09T05:00", "--until", "2027-03-09T05:00"],
        &["--tick", "0s"],
        &["--store", "nope.db"],
    ];
    let mut report = String::new();
    for args in cases {
        let mut all = vec!["what-if", "jobs.toml"];
        all.extend_from_slice(args);
        let r = duetime_in(dir.path(), &all);
        report += &format!(
            "$ duetime {}\nexit {}\n{}\n",
            all.join(" "),
            r.code,
            r.stderr.trim_end()
        );
        assert_eq!(r.code, 64, "{all:?}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{all:?}");
    }
    // A bad jobs file is not a usage error: exit 1, with `duetime check`'s messages.
    for file in ["bad.toml", "missing.toml"] {
        let r = duetime_in(dir.path(), &["what-if", file, "--down", DOWN]);
        report += &format!(
            "$ duetime what-if {file} --down {DOWN}\nexit {}\n{}\n",
            r.code,
            r.stderr.trim_end()
        );
        assert_eq!(r.code, 1, "{file}: {}", r.stderr);
    }
    insta::assert_snapshot!("errors", report);
}

#[test]
fn the_store_is_only_read() {
    let dir = with_jobs(JOBS);
    let path = dir.path().join("duetime.db");
    {
        let mut store = SqliteStore::open(&path).expect("store");
        let def = JobDef::new(
            JobName::new("hourly").expect("name"),
            Schedule::cron("0 * * * *", None).expect("cron"),
        );
        let at: Timestamp = "2025-03-09T00:00:00Z".parse().expect("time");
        store
            .apply(
                Now::at(at),
                Event::Upsert {
                    def: Box::new(def),
                    actor: Actor::new("test"),
                },
            )
            .expect("upsert");
    }
    let listing = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = std::fs::read(&path).expect("read");
    let files_before = listing(dir.path());
    let r = duetime_in(
        dir.path(),
        &[
            "what-if",
            "jobs.toml",
            "--store",
            "duetime.db",
            "--from",
            "2025-03-09T01:00",
            "--down",
            DOWN,
        ],
    );
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    // The store's job was defined at 00:00, so its 01:00 due time counts too.
    assert!(r.stdout.contains("8  skipped (down)"), "{}", r.stdout);
    assert!(r.stdout.contains("the store duetime.db (read only)"));
    assert_eq!(std::fs::read(&path).expect("read"), before, "store bytes");
    assert_eq!(listing(dir.path()), files_before, "no file added or left");
    // And the store still holds one job, untouched by the replay.
    let mut store = SqliteStore::open(&path).expect("store");
    assert_eq!(store.state().expect("state").job_count(), 1);
}
