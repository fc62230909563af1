//! `duetime sim` as people run it: the real binary over small jobs files written to a
//! temporary directory. Few seeds and half-day worlds keep the debug build quick.

mod support;
use support::*;

const HEALTHY: &str = r#"
[[job]]
name = "backup"
cron = "30 2 * * *"
tz = "America/New_York"
command = ["/usr/local/bin/backup"]
missed = "required"
timeout = "2h"

[[job]]
name = "heartbeat"
every = "1m"
command = ["/usr/local/bin/heartbeat"]
timeout = "30s"
safe_to_repeat = true

[[job]]
name = "report"
cron = "0 9 * * mon-fri"
tz = "Europe/London"
command = ["/usr/local/bin/report"]
missed = "catch_up_once"
"#;

/// The classic trap: every minute, every due time required, and runs of 90 s.
const TRAP: &str = r#"
[[job]]
name = "minutely"
cron = "* * * * *"
command = ["/usr/local/bin/sync-orders"]
missed = "required"
timeout = "5m"
"#;

#[test]
fn a_healthy_jobs_file_holds() {
    let dir = with_file("jobs.toml", HEALTHY);
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "jobs.toml",
            "--seeds",
            "0..3",
            "--days",
            "0.5",
            "--threads",
            "1",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r
        .stdout
        .contains("jobs.toml: 3 jobs; how long their runs take"));
    assert!(
        r.stdout.contains("  heartbeat  1s..30s  default"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("duetime sim summary (jobs.toml)"));
    assert!(r.stdout.contains("  seeds 3 (0..3), 1 threads"));
    assert!(r.stdout.contains("  world averages:"));
    assert!(r.stdout.contains("  probes (rare situations reached):"));
    assert!(r.stdout.ends_with("3 seeds, 0 failed\n"), "{}", r.stdout);
    assert_eq!(r.stderr, "");
}

#[test]
fn json_summary() {
    let dir = with_file("jobs.toml", HEALTHY);
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "jobs.toml",
            "--seeds",
            "0..2",
            "--days",
            "0.5",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["seeds"]["count"], 2);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["averages"]["jobs"], 3.0);
    assert!(v["faults"].is_object() && v["probes"].is_object());
}

/// The durations the user gives are the ones the worlds use, and say so.
#[test]
fn duration_hints_are_shown() {
    let dir = with_file("trap.toml", TRAP);
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "trap.toml",
            "--seeds",
            "0..1",
            "--days",
            "0.5",
            "--faults",
            "none",
            "--duration",
            "minutely=90s",
        ],
    );
    assert!(
        r.stdout
            .contains("  minutely  1m30s  --duration  cron * * * * *"),
        "{}",
        r.stdout
    );
}

/// A `required` job every minute whose runs take 90 s can never catch up: its due times
/// pile up faster than runs account them, and the checker's L1 must say so. (The user's
/// jobs keep their durations when the world heals; drawn worlds make runs quick then.)
#[test]
fn a_job_that_can_never_catch_up_breaks_liveness() {
    let dir = with_file("trap.toml", TRAP);
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "trap.toml",
            "--seeds",
            "0..2",
            "--days",
            "0.5",
            "--faults",
            "none",
            "--duration",
            "minutely=90s",
        ],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("L1 broken for minutely"), "{}", r.stdout);
    assert!(r.stdout.contains("still unaccounted"), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "replay: duetime sim trap.toml --seed 0 --trace --faults none --days 0.5 \
             --duration minutely=1m30s"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn a_cron_expression_the_oracle_cannot_check_is_refused() {
    let dir = with_file(
        "jobs.toml",
        r#"
[[job]]
name = "month_end"
cron = "0 23 L * *"
tz = "Europe/London"
command = ["/usr/local/bin/close-books"]
"#,
    );
    let r = duetime_in(dir.path(), &["sim", "jobs.toml", "--seeds", "0..1"]);
    assert_eq!(r.code, 64, "{}", r.stdout);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .contains("jobs.toml: job `month_end`: the simulator's oracle cannot check"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("`L`"), "{}", r.stderr);
    assert!(
        r.stderr.ends_with("jobs.toml: cannot be simulated\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn one_seed_with_its_trace() {
    let dir = with_file("trap.toml", TRAP);
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "trap.toml",
            "--seed",
            "1",
            "--trace",
            "--days",
            "0.5",
        ],
    );
    assert!(r.code == 0 || r.code == 2, "{}\n{}", r.stdout, r.stderr);
    let mut lines = r.stdout.lines();
    assert!(lines.next().is_some_and(|l| l.starts_with("seed 1 | ")));
    assert!(r
        .stdout
        .contains("upsert minutely (cron * * * * *) by setup"));
}

#[test]
fn usage_errors_exit_64() {
    let dir = with_file("trap.toml", TRAP);
    for args in [
        &["sim", "trap.toml", "--seeds", "3..3"][..],
        &["sim", "trap.toml", "--seeds", "0..x"],
        &["sim", "trap.toml", "--trace"],
        &["sim", "trap.toml", "--duration", "nobody=5s"],
        &["sim", "trap.toml", "--duration", "minutely"],
        &["sim", "trap.toml", "--days", "0"],
        &["sim", "trap.toml", "--fail-rate", "2"],
        &["sim", "trap.toml", "--faults", "lots"],
        &["sim", "trap.toml", "--processes", "0"],
        &["sim", "missing.toml"],
        &["sim"],
    ] {
        let r = duetime_in(dir.path(), args);
        assert_eq!(r.code, 64, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.is_empty(), "{args:?}");
    }
    // Other subcommands keep clap's code.
    assert_eq!(duetime_in(dir.path(), &["check", "--bogus"]).code, 2);
}

/// Issue 42, bug 3: the example file's `backup` (`required`, runs up to two hours) cannot
/// drain the simulator's own burst of ~30 separate backfilled ranges within a world's
/// fault-free end. Seeds 15, 18 and 19 failed L1 on that alone (exit 2); such seeds are now
/// set apart as such, with what to change, and the verdict about the file's jobs holds.
/// Which of 15..20 draw such a burst moves with the worlds (15, 18 and 19 did until the
/// processes committed their reports in batches; 19 alone since), so the test asks that
/// some seed is set apart, names none, and asks that none fails.
#[test]
fn the_example_file_gets_a_verdict_about_its_jobs() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/jobs.example.toml");
    let dir = tempfile::tempdir().unwrap();
    let r = duetime_in(
        dir.path(),
        &["sim", example, "--seeds", "15..20", "--threads", "1"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let apart = r
        .stdout
        .lines()
        .find(|l| {
            l.ends_with(
                "broke no promise but a backfill the file's settings cannot drain by design; \
                 not counted as failures:",
            )
        })
        .unwrap_or_else(|| panic!("no seed set apart:\n{}", r.stdout));
    assert!(apart.contains(" seed(s) ("), "{apart}");
    assert!(
        r.stdout.contains("  job `backup`: a person's backfill"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("--duration backup=TIME"), "{}", r.stdout);
    assert!(r.stdout.ends_with("5 seeds, 0 failed\n"), "{}", r.stdout);
}
