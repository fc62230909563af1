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
//! The daemon's wall clock is the real one plus a fixed offset (`FAKETIME="+Ns"`, its
//! monotonic clock left alone), so it sees no jump. libfaketime is Debian's `faketime`
//! package; without it the test is skipped, except under `CI=true`, where it fails.

#[path = "support/world.rs"]
mod world;

use std::path::Path;
use std::process::{Child, Stdio};
use std::thread::sleep;
use std::time::Duration;

use duetime::{Entry, History, Timestamp};
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
