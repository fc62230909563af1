//! A holiday calendar and a last-business-day job in the real daemon (issue 45), over a
//! clock moved to the last half minute of 2026-12-30 with libfaketime, so midnight (and the
//! holiday behind it) comes within seconds whatever day the test runs on.
//!
//! Three jobs run every two seconds: `plain` with no calendar, `holiday` excluding the
//! `holidays` calendar (New Year's Eve, 2026-12-31), and `close` on the month's last
//! business day only, which with the 31st excluded is Wednesday the 30th. Across midnight:
//! all three run on the 30th; on the 31st only `plain` does, and the journal holds no
//! entry at all for an excluded due time (an excluded time is not due, so it is never
//! missed). The simulator's checker, whose oracle reads calendars on its own, then holds
//! the journal to every invariant.
//!
//! The same calendar under a chain of jobs (`after`, issue 45): `extract` after `close`,
//! `load` after `extract`, every one on `close`'s days (they take its schedule), the
//! extract failing once: each load starts only after its extract settled ok, and the
//! due time whose extract failed out is skipped for the load with cause `upstream`. A
//! failed-out due time pauses its job, so the test resumes the extract as a person would.
//!
//! The daemon's wall clock is the real one plus a fixed offset (`FAKETIME="+Ns"`, its
//! monotonic clock left alone), so it sees no jump. libfaketime is Debian's `faketime`
//! package; without it the test is skipped, except under `CI=true`, where it fails.

#[path = "support/world.rs"]
mod world;

use std::path::Path;
use std::process::{Child, Stdio};
use std::thread::sleep;
use std::time::Duration;

use duetime::{Entry, History, LedgerKind, MissAction, MissCause, Record, Timestamp, UpstreamFate};
use world::{check_journal, now_ms, signal, wait, World};

const JOBS: &str = r#"
[calendars.holidays]
dates = [{ date = "2026-12-31", label = "New Year's Eve" }, "2026-12-25"]

[[job]]
name = "plain"
every = "2s"
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/plain.txt"]

[[job]]
name = "holiday"
every = "2s"
exclude = ["holidays"]
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/holiday.txt"]

[[job]]
name = "close"
every = "2s"
exclude = ["holidays"]
business_day = -1
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/close.txt"]
"#;

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The daemon's clock starts here: 30 seconds before the holiday, so a daemon slow to
/// start on a loaded machine still has several due times on the 30th.
const FAKE_START: &str = "2026-12-30T23:59:30Z";
const MIDNIGHT: &str = "2026-12-31T00:00:00Z";

/// The library's path, or `None` (a skip, or a failure under CI).
fn libfaketime() -> Option<&'static str> {
    if Path::new(LIBFAKETIME).exists() {
        return Some(LIBFAKETIME);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "libfaketime is missing under CI: .ci/run installs Debian's faketime package"
    );
    eprintln!("skipped: no {LIBFAKETIME} (apt-get install faketime)");
    None
}

fn ms(rfc3339: &str) -> i64 {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339.trim()).unwrap();
    Timestamp::from_chrono(&t).as_millis()
}

/// The daemon with its wall clock moved by `offset_ms`.
fn daemon_moved(w: &World, lib: &str, offset_ms: i64) -> Child {
    let log = std::fs::File::create(w.path("daemon.log")).unwrap();
    let child = w
        .daemon_command(None, &["--tick", "1s"])
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", format!("+{}s", offset_ms / 1000))
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    w.guard(&child);
    child
}

/// The due times a job's command was run for (`DUETIME_DUE`), as milliseconds.
fn ran_for(w: &World, file: &str) -> Vec<i64> {
    std::fs::read_to_string(w.path(file))
        .unwrap_or_default()
        .lines()
        .map(ms)
        .collect()
}

#[test]
fn excluded_days_are_never_due_and_the_last_business_day_is_the_one_before_a_holiday() {
    let Some(lib) = libfaketime() else { return };
    let w = World::new(JOBS);
    // Whole seconds, so the daemon's clock lands on FAKE_START to the second.
    let offset_ms = (ms(FAKE_START) - now_ms()).div_euclid(1000) * 1000;
    let mut daemon = daemon_moved(&w, lib, offset_ms);
    let midnight = ms(MIDNIGHT);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    // Until `plain` has run for a due time six seconds into the holiday.
    while !ran_for(&w, "plain.txt")
        .iter()
        .any(|&d| d >= midnight + 6_000)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "plain never ran past midnight: {}",
            std::fs::read_to_string(w.path("daemon.log")).unwrap_or_default()
        );
        sleep(Duration::from_millis(200));
    }
    let end = now_ms() + offset_ms;
    signal(&daemon, libc::SIGTERM);
    wait(&mut daemon, Duration::from_secs(30));

    let before_midnight = |job: &str| {
        let due = ran_for(&w, &format!("{job}.txt"));
        assert!(
            due.iter().filter(|&&d| d < midnight).count() >= 3,
            "{job} ran for too few due times on the 30th: {due:?}"
        );
        due
    };
    let plain = before_midnight("plain");
    assert!(
        plain.iter().any(|&d| d >= midnight),
        "plain ran on the 31st"
    );
    for job in ["holiday", "close"] {
        let due = before_midnight(job);
        assert!(
            due.iter().all(|&d| d < midnight),
            "{job} ran for a due time of the holiday: {due:?}"
        );
    }

    // The journal: nothing at all for an excluded due time (no ledger entry, no start).
    let journal = w.journal();
    for r in &journal {
        if r.job.as_str() == "plain" {
            continue;
        }
        let late = match &r.entry {
            Entry::Ledger(l) => l.to.as_millis() >= midnight,
            Entry::History(History::Started {
                covers: Some(c), ..
            }) => c.to.as_millis() >= midnight,
            _ => false,
        };
        assert!(!late, "an excluded due time is in the journal: {r}");
    }
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// A last-business-day job with a chain after it: `extract` (no retries, failing its
/// third run: a counter file) after `close`, `load` after `extract`. Neither names a
/// schedule: they take `close`'s, holiday and all.
const CHAIN: &str = r#"
[calendars.holidays]
dates = [{ date = "2026-12-31", label = "New Year's Eve" }]

[[job]]
name = "plain"
every = "2s"
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/plain.txt"]

[[job]]
name = "load"
after = ["extract"]
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/load.txt"]

[[job]]
name = "extract"
after = ["close"]
retries = 0
command = ["sh", "-c", "n=$(cat {dir}/count 2>/dev/null || echo 0); echo $((n + 1)) > {dir}/count; [ $n -ne 2 ] || exit 3; echo $DUETIME_DUE >> {dir}/extract.txt"]

[[job]]
name = "close"
every = "2s"
exclude = ["holidays"]
business_day = -1
command = ["sh", "-c", "echo $DUETIME_DUE >> {dir}/close.txt"]
"#;

/// Runs `jobs` in a daemon whose clock starts at `FAKE_START` until `plain` ran six
/// seconds into the holiday, calling `meanwhile` between looks; the journal, and the
/// instant it was read up to.
fn run_past_midnight(w: &World, lib: &str, mut meanwhile: impl FnMut()) -> (Vec<Record>, i64) {
    let offset_ms = (ms(FAKE_START) - now_ms()).div_euclid(1000) * 1000;
    let mut daemon = daemon_moved(w, lib, offset_ms);
    let midnight = ms(MIDNIGHT);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !ran_for(w, "plain.txt")
        .iter()
        .any(|&d| d >= midnight + 6_000)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "plain never ran past midnight: {}",
            std::fs::read_to_string(w.path("daemon.log")).unwrap_or_default()
        );
        meanwhile();
        sleep(Duration::from_millis(200));
    }
    let end = now_ms() + offset_ms;
    signal(&daemon, libc::SIGTERM);
    wait(&mut daemon, Duration::from_secs(30));
    (w.journal(), end)
}

/// When `job`'s ledger settled due time `due` ok (ran, or caught up by a run), if it did.
fn settled_ok_at(journal: &[Record], job: &str, due: i64) -> Option<i64> {
    journal.iter().find_map(|r| match &r.entry {
        Entry::Ledger(l)
            if r.job.as_str() == job
                && l.from.as_millis() <= due
                && due <= l.to.as_millis()
                && matches!(
                    l.kind,
                    LedgerKind::Ran { .. }
                        | LedgerKind::Missed {
                            action: MissAction::CaughtUp { .. },
                            ..
                        }
                ) =>
        {
            Some(r.at.as_millis())
        }
        _ => None,
    })
}

/// Every start of `downstream` came after `upstream` settled each due time it covers ok.
fn assert_started_after(journal: &[Record], downstream: &str, upstream: &str) -> usize {
    let starts: Vec<(i64, i64, i64)> = journal
        .iter()
        .filter(|r| r.job.as_str() == downstream)
        .filter_map(|r| match &r.entry {
            Entry::History(History::Started {
                covers: Some(c), ..
            }) => Some((r.at.as_millis(), c.from.as_millis(), c.to.as_millis())),
            _ => None,
        })
        .collect();
    for &(started, from, to) in &starts {
        for due in [from, to] {
            let settled = settled_ok_at(journal, upstream, due);
            assert!(
                settled.is_some_and(|s| s <= started),
                "{downstream} started at {started} for {due} before {upstream} settled it ok \
                 ({settled:?})"
            );
        }
    }
    starts.len()
}

#[test]
fn a_chain_after_the_last_business_day_runs_in_order_and_skips_what_its_upstream_failed() {
    let Some(lib) = libfaketime() else { return };
    let w = World::new(CHAIN);
    // A due time that fails out pauses its job (the system's pause, `retries`): while the
    // extract is paused the load's next due time waits for it, so a person resumes it.
    let mut resumed = None;
    let (journal, end) = run_past_midnight(&w, lib, || {
        let runs = std::fs::read_to_string(w.path("count")).unwrap_or_default();
        if resumed.is_none() && runs.trim().parse::<u32>().is_ok_and(|n| n >= 3) {
            sleep(Duration::from_secs(1));
            resumed = Some(w.cli(&["resume", "extract"]));
        }
    });
    let (code, _, err) = resumed.expect("the extract ran three times");
    assert_eq!(code, 0, "resume: {err}");
    let midnight = ms(MIDNIGHT);

    // The holiday: no job of the chain has a due time, so none is recorded, missed or not.
    for r in journal.iter().filter(|r| r.job.as_str() != "plain") {
        let late = match &r.entry {
            Entry::Ledger(l) => l.to.as_millis() >= midnight,
            Entry::History(History::Started {
                covers: Some(c), ..
            }) => c.to.as_millis() >= midnight,
            _ => false,
        };
        assert!(!late, "an excluded due time is in the journal: {r}");
    }

    // Each start after its upstream settled the same due time ok.
    assert!(assert_started_after(&journal, "extract", "close") >= 3);
    assert!(assert_started_after(&journal, "load", "extract") >= 2);

    // The third extract failed out: that due time is skipped for the load, cause
    // `upstream`, after a line naming the extract and its fate.
    let failed: Vec<i64> = journal
        .iter()
        .filter_map(|r| match &r.entry {
            Entry::Ledger(l)
                if r.job.as_str() == "extract"
                    && matches!(l.kind, LedgerKind::FailedOut { .. }) =>
            {
                Some(l.from.as_millis())
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "one extract failed out: {failed:?}");
    let skipped = journal.iter().any(|r| {
        r.job.as_str() == "load"
            && matches!(&r.entry, Entry::Ledger(l) if l.from.as_millis() == failed[0]
                && l.kind == LedgerKind::Missed { cause: MissCause::Upstream, action: MissAction::Skipped })
    });
    assert!(skipped, "the load's due time is not skipped: {journal:#?}");
    let told = journal.iter().any(|r| {
        r.job.as_str() == "load"
            && matches!(&r.entry, Entry::History(History::UpstreamNotOk { upstream, fate })
                if upstream.as_str() == "extract" && *fate == UpstreamFate::FailedOut)
    });
    assert!(told, "no line names the extract: {journal:#?}");
    let loaded = ran_for(&w, "load.txt");
    assert!(
        !loaded.contains(&failed[0]),
        "the load ran for {}",
        failed[0]
    );
    let extracted = ran_for(&w, "extract.txt");
    assert!(
        loaded.iter().all(|d| extracted.contains(d)),
        "{loaded:?} {extracted:?}"
    );

    // `duetime show load` tells the same in words, in the job's journal.
    let (code, out, err) = w.cli(&["show", "load"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("upstream extract did not settle ok"), "{out}");

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
}
