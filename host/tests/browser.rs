//! The job page in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `.ci/run`) loads `/jobs/NAME` from a running daemon, and the DOM it built holds one
//! mark per ledger entry of the job in the window, each with the entry's fate, due times
//! and count; screenshots go under `target/browser/`. Without Chromium the test is
//! skipped, except under `CI=true`, where it fails.

#[path = "support/web.rs"]
mod web;
#[path = "support/week.rs"]
mod week;
#[path = "support/world.rs"]
mod world;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use duetime::Entry;
use world::{poll, signal, wait, World};

/// The Chromium binary, or `None` (a skip, or a failure under CI).
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH")?
            .to_str()?
            .split(':')
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is missing under CI: .ci/run installs Debian's chromium package"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install chromium)");
    }
    found
}

fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn headless(chromium: &Path, args: &[&str], url: &str) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--no-first-run", "--disable-dev-shm-usage"])
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of attribute `name` in one element's text.
fn attr<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
    element[at..].split('"').next()
}

/// Each ledger mark the browser's DOM holds: (fate, from, to) to count.
fn marks(dom: &str) -> BTreeMap<(String, String, String), u64> {
    let mut m = BTreeMap::new();
    for piece in dom.split('<').filter(|p| p.contains("class=\"due ")) {
        let get = |k| attr(piece, k).unwrap_or_default().to_string();
        let count: u64 = get("data-count").parse().unwrap();
        *m.entry((get("data-fate"), get("data-from"), get("data-to")))
            .or_default() += count;
    }
    m
}

#[test]
fn a_jobs_marks_in_the_browser_are_its_ledger_entries() {
    let Some(chromium) = chromium() else { return };
    let w = World::new(
        r#"
[[job]]
name = "steady"
every = "1s"
command = ["sh", "-c", "sleep 0.3"]

[[job]]
name = "flaky"
every = "1s"
retries = 0
pause_after_failures = 3
command = ["sh", "-c", "echo flaky cannot reach the bucket >&2; exit 2"]
"#,
    );
    let port = web::free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = w.daemon_with("d.log", None, &["--tick", "1s", "--http", &addr]);
    poll(Duration::from_secs(60), || {
        let (_, out, _) = w.cli(&["show", "steady"]);
        (out.matches(" ran r").count() >= 4).then_some(())
    })
    .expect("runs");
    assert_eq!(w.cli(&["pause", "steady"]).0, 0);
    poll(Duration::from_secs(60), || {
        w.cli(&["show", "flaky"])
            .1
            .contains("paused        by")
            .then_some(())
    })
    .expect("flaky paused by the system");
    std::thread::sleep(Duration::from_secs(2));
    let base = format!("http://{addr}");
    for job in ["steady", "flaky"] {
        let dom = headless(&chromium, &["--dump-dom"], &format!("{base}/jobs/{job}"));
        let ledger: BTreeMap<(String, String, String), u64> = w
            .journal()
            .iter()
            .filter(|r| r.job.as_str() == job)
            .filter_map(|r| match &r.entry {
                Entry::Ledger(l) => Some((
                    (
                        duetime_host::http::tally::fate(l).0.to_string(),
                        l.from.to_string(),
                        l.to.to_string(),
                    ),
                    l.count,
                )),
                _ => None,
            })
            .fold(BTreeMap::new(), |mut m, (k, n)| {
                *m.entry(k).or_default() += n;
                m
            });
        assert!(!ledger.is_empty(), "{job} has ledger entries");
        assert_eq!(
            marks(&dom),
            ledger,
            "{job}: the page's marks against the journal"
        );
        assert!(dom.contains("class=\"run\""), "{job}: runs drawn as bars");
        // Issue 42: the default window is fitted to a job every second (minutes, not the
        // four days it was), and the page reloads itself.
        let svg = dom.split("<svg id=\"timeline\"").nth(1).unwrap();
        let (from, to) = (
            attr(svg, "data-from").unwrap(),
            attr(svg, "data-to").unwrap(),
        );
        let (from, to): (duetime::Timestamp, duetime::Timestamp) =
            (from.parse().unwrap(), to.parse().unwrap());
        let minutes = (to.as_millis() - from.as_millis()) / 60_000;
        assert!(
            (5..=10).contains(&minutes),
            "{job}: a window of {minutes} minutes"
        );
        assert!(dom.contains("http-equiv=\"refresh\""), "{job}: no refresh");
        assert!(dom.contains("class=\"now-label\""), "{job}: no now label");
        let shot = shots().join(format!("{job}.png"));
        headless(
            &chromium,
            &[
                "--window-size=1200,700",
                &format!("--screenshot={}", shot.display()),
            ],
            &format!("{base}/jobs/{job}"),
        );
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 1000),
            "{}",
            shot.display()
        );
    }
    // Issue 42: why flaky is paused, by whom, the run that did it and how to resume; and
    // the last lines its failed run printed.
    let flaky = headless(&chromium, &["--dump-dom"], &format!("{base}/jobs/flaky"));
    let paused = flaky
        .split("<div id=\"paused\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no pause box:\n{flaky}"));
    assert_eq!(attr(paused, "data-who"), Some("the system"), "{paused}");
    let incident = attr(paused, "data-incident").unwrap();
    assert!(incident.starts_with('r'), "{paused}");
    assert!(paused.contains("duetime resume flaky"), "{paused}");
    let output = flaky
        .split("id=\"output\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no output:\n{flaky}"));
    assert!(output.contains("flaky cannot reach the bucket"), "{output}");
    let steady = headless(&chromium, &["--dump-dom"], &format!("{base}/jobs/steady"));
    let by_hand = steady
        .split("<div id=\"paused\"")
        .nth(1)
        .unwrap_or_else(|| panic!("steady was paused by hand:\n{steady}"));
    assert_ne!(attr(by_hand, "data-who"), Some("the system"), "{by_hand}");
    assert_eq!(attr(by_hand, "data-incident"), Some(""), "{by_hand}");
    assert!(!steady.contains("id=\"output\""), "steady's runs went well");
    let list = headless(&chromium, &["--dump-dom"], &format!("{base}/"));
    assert!(
        list.contains("data-job=\"flaky\" data-status=\"paused\""),
        "{list}"
    );
    assert!(
        list.contains("resume: <code>duetime resume flaky</code>"),
        "{list}"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(30)), Some(0));
}

/// The README's picture: a week of an hourly job with an outage, failures, a lost run, a
/// pause and the spring-forward change, rendered by the page's own code.
#[test]
fn a_week_at_a_glance_renders_in_the_browser() {
    let Some(chromium) = chromium() else { return };
    let t = week::timeline();
    let html = duetime_host::http::page::job(&t);
    let file = shots().join("week.html");
    std::fs::write(&file, &html).unwrap();
    let url = format!("file://{}", file.display());
    let dom = headless(&chromium, &["--dump-dom"], &url);
    let fates: BTreeMap<String, u64> =
        marks(&dom)
            .into_iter()
            .fold(BTreeMap::new(), |mut m, ((f, _, _), n)| {
                *m.entry(f).or_default() += n;
                m
            });
    for fate in ["ran", "skipped", "caught_up", "failed_out", "lost"] {
        assert!(fates.contains_key(fate), "{fate} drawn: {fates:?}");
    }
    assert!(
        dom.contains("class=\"dst\" data-at=\"2025-03-09T07:00:00Z\""),
        "the spring-forward change is marked"
    );
    assert!(
        dom.contains("class=\"span span-paused\""),
        "the pause is shaded"
    );
    let shot = shots().join("week.png");
    headless(
        &chromium,
        &[
            "--window-size=1140,420",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 1000));
}
