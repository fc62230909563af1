//! The `duetime` binary as people run it: `check` on jobs files and `next` on cron
//! expressions, around New York's 2025 daylight-saving changes. Outputs are snapshotted;
//! every run passes `--from` so they do not depend on the clock.

mod support;
use support::*;

use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn duetime(args: &[&str]) -> Run {
    duetime_in(&fixtures(), args)
}

#[test]
fn check_shows_each_job_across_spring_forward() {
    let r = duetime(&["check", "jobs.toml", "--from", "2025-03-08T12:00:00Z"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr, "");
    insta::assert_snapshot!("check_jobs_spring_forward", r.stdout);
}

#[test]
fn check_shows_each_job_across_fall_back() {
    let r = duetime(&[
        "check",
        "jobs.toml",
        "--from",
        "2025-11-02T04:00:00Z",
        "--count",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("check_jobs_fall_back", r.stdout);
}

#[test]
fn the_example_jobs_file_passes_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let r = duetime_in(
        dir,
        &[
            "check",
            "jobs.example.toml",
            "--from",
            "2025-03-08T12:00:00Z",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("check_example", r.stdout);
}

#[test]
fn check_lists_every_error_of_a_broken_file() {
    let r = duetime(&["check", "broken.toml", "--from", "2025-03-08T12:00:00Z"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout, "");
    insta::assert_snapshot!("check_broken", r.stderr);
}

#[test]
fn check_of_a_missing_file_fails_with_its_name() {
    let r = duetime(&["check", "no-such-file.toml"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with("no-such-file.toml: cannot read: "),
        "{}",
        r.stderr
    );
}

/// One broken job (or file) per case; the snapshot lists every message. Each case also
/// says what its message must name, so the snapshot cannot drift into vagueness.
#[test]
fn error_table() {
    const JOB: &str = "[[job]]\nname = \"backup\"\n";
    const CMD: &str = "command = [\"/bin/backup\"]\n";
    const CRON: &str = "cron = \"30 2 * * *\"\n";
    // (label, file text, strings the message must contain)
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "toml syntax",
            "[[job]]\nname = \"a\ncron = \"x\"\n".into(),
            &["jobs.toml:2:", "not valid TOML"],
        ),
        (
            "top-level typo",
            format!("[[jobs]]\nname = \"a\"\n{CRON}{CMD}"),
            &["\"jobs\"", "did you mean \"job\"", "accepted: job"],
        ),
        (
            "job as a table",
            format!("[job]\nname = \"a\"\n{CRON}{CMD}"),
            &["\"job\" is a table", "[[job]]"],
        ),
        (
            "job as [job.NAME]",
            format!("[job.backup]\n{CRON}{CMD}"),
            &["\"job\" is a table", "not [job] or [job.NAME]"],
        ),
        (
            "entry not a table",
            "job = [1]\n".into(),
            &["job #1", "is an integer", "accepted: a table"],
        ),
        (
            "missing name",
            format!("[[job]]\n{CRON}{CMD}"),
            &["job #1", "field \"name\"", "is missing", "accepted"],
        ),
        (
            "name not a string",
            format!("[[job]]\nname = 7\n{CRON}{CMD}"),
            &["job #1", "field \"name\"", "is an integer", "accepted: a string"],
        ),
        (
            "bad name",
            format!("[[job]]\nname = \"Nightly Backup\"\n{CRON}{CMD}"),
            &["job \"Nightly Backup\"", "field \"name\"", "lower-case letter"],
        ),
        (
            "duplicate name",
            format!("{JOB}{CRON}{CMD}\n{JOB}{CRON}{CMD}"),
            &["job \"backup\"", "field \"name\"", "job #1 (line 1)", "accepted"],
        ),
        (
            "no schedule",
            format!("{JOB}{CMD}"),
            &["job \"backup\"", "no schedule", "accepted: exactly one of cron, every, at"],
        ),
        (
            "two schedules",
            format!("{JOB}{CRON}every = \"5m\"\n{CMD}"),
            &["job \"backup\"", "2 schedules (cron, every)", "accepted: exactly one"],
        ),
        (
            "three schedules",
            format!("{JOB}{CRON}every = \"5m\"\nat = \"2025-01-01T00:00:00Z\"\n{CMD}"),
            &["3 schedules (cron, every, at)"],
        ),
        (
            "cron out of range",
            format!("{JOB}cron = \"61 2 * * *\"\n{CMD}"),
            &["field \"cron\"", "minute: `61` is out of range 0-59"],
        ),
        (
            "cron field count",
            format!("{JOB}cron = \"30 2 * *\"\n{CMD}"),
            &["field \"cron\"", "4 fields", "expected 5"],
        ),
        (
            "cron unknown macro",
            format!("{JOB}cron = \"@reboot\"\n{CMD}"),
            &["field \"cron\"", "accepted macros"],
        ),
        (
            "cron not a string",
            format!("{JOB}cron = 5\n{CMD}"),
            &["field \"cron\"", "is an integer", "accepted: a string"],
        ),
        (
            "unknown zone",
            format!("{JOB}{CRON}tz = \"America/New_Yrok\"\n{CMD}"),
            &["field \"tz\"", "unknown time zone `America/New_Yrok`", "IANA"],
        ),
        (
            "zone twice",
            format!("{JOB}cron = \"CRON_TZ=Europe/London 30 2 * * *\"\ntz = \"UTC\"\n{CMD}"),
            &["field \"tz\"", "give the zone once"],
        ),
        (
            "tz with every",
            format!("{JOB}every = \"5m\"\ntz = \"UTC\"\n{CMD}"),
            &["field \"tz\"", "only goes with cron"],
        ),
        (
            "offset with cron",
            format!("{JOB}{CRON}offset = \"5m\"\n{CMD}"),
            &["field \"offset\"", "only goes with every"],
        ),
        (
            "dst not a table",
            format!("{JOB}{CRON}dst = \"skip\"\n{CMD}"),
            &["field \"dst\"", "is a string", "accepted: a table"],
        ),
        (
            "dst bad gap",
            format!("{JOB}{CRON}dst = {{ gap = \"jump\" }}\n{CMD}"),
            &["field \"dst.gap\"", "\"jump\" is not a gap rule", "accepted: run_at_gap_end, skip"],
        ),
        (
            "dst bad fold",
            format!("{JOB}{CRON}dst = {{ fold = \"twice\" }}\n{CMD}"),
            &["field \"dst.fold\"", "accepted: first, last, both"],
        ),
        (
            "dst unknown key",
            format!("{JOB}{CRON}dst = {{ gaps = \"skip\" }}\n{CMD}"),
            &["field \"dst.gaps\"", "did you mean \"gap\"", "accepted: gap, fold"],
        ),
        (
            "every bad duration",
            format!("{JOB}every = \"5 minutes\"\n{CMD}"),
            &["field \"every\"", "\"5 minutes\" is not a duration", "accepted: a duration"],
        ),
        (
            "every as a number",
            format!("{JOB}every = 300\n{CMD}"),
            &["field \"every\"", "is an integer", "accepted: a string holding a duration"],
        ),
        (
            "every zero",
            format!("{JOB}every = \"0s\"\n{CMD}"),
            &["field \"every\"", "period is zero", "at least 1ms"],
        ),
        (
            "every shorter than the tick",
            format!("{JOB}every = \"10s\"\n{CMD}"),
            &["field \"every\"", "shorter than the tick (30s)", "accepted"],
        ),
        (
            "offset not shorter than the period",
            format!("{JOB}every = \"1h\"\noffset = \"90m\"\n{CMD}"),
            &["field \"offset\"", "1h30m is not shorter than the period (1h)", "accepted"],
        ),
        (
            "at not an instant",
            format!("{JOB}at = \"tomorrow\"\n{CMD}"),
            &["field \"at\"", "\"tomorrow\" is not an instant", "accepted: an RFC 3339"],
        ),
        (
            "at without an offset",
            format!("{JOB}at = 2025-03-09T02:30:00\n{CMD}"),
            &["field \"at\"", "it has no offset", "accepted"],
        ),
        (
            "missing command",
            format!("{JOB}{CRON}"),
            &["field \"command\"", "is missing", "accepted: a list of strings"],
        ),
        (
            "empty command",
            format!("{JOB}{CRON}command = []\n"),
            &["field \"command\"", "is empty", "accepted"],
        ),
        (
            "command as one string",
            format!("{JOB}{CRON}command = \"backup --full\"\n"),
            &["field \"command\"", "is a string", "no shell splits it"],
        ),
        (
            "command with a number",
            format!("{JOB}{CRON}command = [\"sleep\", 5]\n"),
            &["field \"command\"", "is an integer", "item 2"],
        ),
        (
            "command with an empty program",
            format!("{JOB}{CRON}command = [\"\", \"x\"]\n"),
            &["field \"command\"", "empty string", "accepted"],
        ),
        (
            "command with a NUL",
            format!("{JOB}{CRON}command = [\"a\\u0000b\"]\n"),
            &["field \"command\"", "NUL"],
        ),
        (
            "workdir not a string",
            format!("{JOB}{CRON}{CMD}workdir = true\n"),
            &["field \"workdir\"", "is a boolean", "accepted: a string"],
        ),
        (
            "env not a table",
            format!("{JOB}{CRON}{CMD}env = [\"A=1\"]\n"),
            &["field \"env\"", "is an array", "accepted: a table"],
        ),
        (
            "env value a number",
            format!("{JOB}{CRON}{CMD}env = {{ PORT = 8080 }}\n"),
            &["field \"env.PORT\"", "is an integer", "accepted: a string"],
        ),
        (
            "missed rule",
            format!("{JOB}{CRON}{CMD}missed = \"sometimes\"\n"),
            &["field \"missed\"", "\"sometimes\" is not a missed rule", "accepted: skip, catch_up_once, required"],
        ),
        (
            "overlap policy",
            format!("{JOB}{CRON}{CMD}overlap = \"queue\"\n"),
            &["field \"overlap\"", "accepted: skip, buffer_one, buffer_all"],
        ),
        (
            "retries negative",
            format!("{JOB}{CRON}{CMD}retries = -1\n"),
            &["field \"retries\"", "accepted: 0-100"],
        ),
        (
            "retries too many (core)",
            format!("{JOB}{CRON}{CMD}retries = 1000\n"),
            &["field \"retries\"", "accepted: 0-100"],
        ),
        (
            "retries as a string",
            format!("{JOB}{CRON}{CMD}retries = \"3\"\n"),
            &["field \"retries\"", "is a string", "accepted: an integer"],
        ),
        (
            "backoff unknown key",
            format!("{JOB}{CRON}{CMD}backoff = {{ start = \"1s\" }}\n"),
            &["field \"backoff.start\"", "accepted: initial, max"],
        ),
        (
            "backoff initial above max (core)",
            format!("{JOB}{CRON}{CMD}backoff = {{ initial = \"1h\", max = \"1m\" }}\n"),
            &["field \"backoff\"", "at most the maximum"],
        ),
        (
            "timeout zero (core)",
            format!("{JOB}{CRON}{CMD}timeout = \"0s\"\n"),
            &["field \"timeout\"", "at least 1s"],
        ),
        (
            "stall_after bad",
            format!("{JOB}{CRON}{CMD}stall_after = \"1 hour\"\n"),
            &["field \"stall_after\"", "accepted: a duration"],
        ),
        (
            "catch_up_window bad",
            format!("{JOB}{CRON}{CMD}catch_up_window = \"-1h\"\n"),
            &["field \"catch_up_window\"", "accepted: a duration"],
        ),
        (
            "safe_to_repeat as a string",
            format!("{JOB}{CRON}{CMD}safe_to_repeat = \"yes\"\n"),
            &["field \"safe_to_repeat\"", "is a string", "accepted: true or false"],
        ),
        (
            "legal duty without required (core)",
            format!("{JOB}{CRON}{CMD}legal_duty = true\n"),
            &["field \"legal_duty\"", "needs the missed rule `required`"],
        ),
        (
            "legal duty with a window (core)",
            format!("{JOB}{CRON}{CMD}legal_duty = true\nmissed = \"required\"\ncatch_up_window = \"1h\"\n"),
            &["field \"catch_up_window\"", "no catch-up window"],
        ),
        (
            "required with overlap skip (core)",
            format!("{JOB}{CRON}{CMD}missed = \"required\"\noverlap = \"skip\"\n"),
            &["field \"overlap\"", "accepted: buffer_all"],
        ),
        (
            "title too long (core)",
            format!("{JOB}{CRON}{CMD}title = \"{}\"\n", "x".repeat(201)),
            &["field \"title\"", "201 characters", "at most 200"],
        ),
        (
            "concurrency key empty (core)",
            format!("{JOB}{CRON}{CMD}concurrency_key = \"\"\n"),
            &["field \"concurrency_key\"", "accepted: 1-128 printable characters"],
        ),
        (
            "unknown field",
            format!("{JOB}{CRON}{CMD}timout = \"1m\"\n"),
            &["field \"timout\"", "did you mean \"timeout\"", "accepted: name, title, cron"],
        ),
        (
            "unknown field, no suggestion",
            format!("{JOB}{CRON}{CMD}priority = 5\n"),
            &["field \"priority\"", "is not accepted; accepted: name"],
        ),
    ];

    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = String::new();
    for (label, text, needles) in &cases {
        std::fs::write(dir.path().join("jobs.toml"), text).unwrap();
        let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
        assert_eq!(r.code, 1, "{label}: expected a refusal, got:\n{}", r.stdout);
        assert_eq!(r.stdout, "", "{label}");
        let messages: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| !l.starts_with("jobs.toml: invalid"))
            .collect();
        assert!(!messages.is_empty(), "{label}: no message");
        let all = messages.join("\n");
        for needle in *needles {
            assert!(all.contains(needle), "{label}: {needle:?} not in\n{all}");
        }
        // Every error names the file and says what is accepted.
        for m in &messages {
            assert!(m.starts_with("jobs.toml"), "{label}: {m}");
            // A syntax error has a place, not a set of accepted values; the core's cron
            // and period errors say what is accepted in their own words ("out of range
            // 0-59", "expected 5 fields"), checked by each case's needles.
            let own_words = [
                "not valid TOML",
                "field \"cron\"",
                "field \"tz\"",
                "period is zero",
            ];
            if !own_words.iter().any(|w| m.contains(w)) {
                assert!(m.contains("accepted"), "{label}: no accepted values in {m}");
            }
        }
        snapshot.push_str(&format!("## {label}\n{}\n", r.stderr));
    }
    insta::assert_snapshot!("error_table", snapshot);
}

#[test]
fn check_json_is_json() {
    let r = duetime(&[
        "check",
        "jobs.toml",
        "--from",
        "2025-03-08T12:00:00Z",
        "--json",
    ]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["valid"], true);
    assert_eq!(v["from"], "2025-03-08T12:00:00Z");
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 7);
    assert_eq!(jobs[0]["name"], "backup");
    assert_eq!(jobs[0]["def"]["missed"], "required");
    assert_eq!(jobs[0]["def"]["schedule"]["tz"], "America/New_York");
    assert_eq!(jobs[0]["command"]["argv"][0], "/usr/local/bin/backup");
    assert_eq!(jobs[0]["next"][0]["utc"], "2025-03-09T07:00:00Z");
    assert_eq!(jobs[0]["next"][0]["local"], "2025-03-09T03:00:00-04:00");
    assert_eq!(jobs[0]["next"][0]["notes"][0]["kind"], "gap");
    assert_eq!(jobs[0]["next"].as_array().unwrap().len(), 3);

    let r = duetime(&["check", "broken.toml", "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["valid"], false);
    let errors = v["errors"].as_array().unwrap();
    assert!(errors.len() > 5);
    assert_eq!(errors[0]["job"], "backup");
    assert_eq!(errors[0]["field"], "tz");
    assert_eq!(errors[0]["line"], 6);
}

#[test]
fn next_around_new_york_2025_changes() {
    let runs: &[&[&str]] = &[
        &[
            "30 2 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-03-08T12:00:00Z",
        ],
        &[
            "30 2 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-03-08T12:00:00Z",
            "--gap",
            "skip",
            "--count",
            "2",
        ],
        &[
            "30 1 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-11-01T12:00:00Z",
        ],
        &[
            "30 1 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-11-01T12:00:00Z",
            "--fold",
            "both",
            "--count",
            "3",
        ],
        &[
            "30 1 * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-11-01T12:00:00Z",
            "--fold",
            "last",
            "--count",
            "2",
        ],
        &[
            "*/30 * * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-03-09T06:00:00Z",
            "--count",
            "4",
        ],
        &[
            "*/30 * * * *",
            "--tz",
            "America/New_York",
            "--from",
            "2025-11-02T05:00:00Z",
            "--count",
            "5",
        ],
        &[
            "CRON_TZ=America/New_York 0,30 2 * * *",
            "--from",
            "2025-03-08T12:00:00Z",
            "--count",
            "3",
        ],
    ];
    let mut snapshot = String::new();
    for args in runs {
        let mut all = vec!["next"];
        all.extend_from_slice(args);
        let r = duetime(&all);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        snapshot.push_str(&format!(
            "$ duetime next {}\n{}\n",
            shell_line(args),
            r.stdout
        ));
    }
    insta::assert_snapshot!("next_new_york_2025", snapshot);
}

#[test]
fn next_in_odd_zones() {
    let runs: &[&[&str]] = &[
        // A 30-minute shift.
        &[
            "15 2 * * *",
            "--tz",
            "Australia/Lord_Howe",
            "--from",
            "2025-10-04T00:00:00Z",
            "--count",
            "2",
        ],
        // 30 December 2011 does not exist in Apia.
        &[
            "0 12 * * *",
            "--tz",
            "Pacific/Apia",
            "--from",
            "2011-12-28T00:00:00Z",
            "--count",
            "3",
        ],
        // Seconds, UTC, a macro.
        &[
            "*/20 * * * * *",
            "--from",
            "2025-01-01T00:00:00Z",
            "--count",
            "3",
        ],
        &[
            "@monthly",
            "--tz",
            "Europe/London",
            "--from",
            "2025-01-15T00:00:00Z",
            "--count",
            "3",
        ],
        // Never due: 30 February.
        &["0 0 30 2 *", "--from", "2025-01-01T00:00:00Z"],
    ];
    let mut snapshot = String::new();
    for args in runs {
        let mut all = vec!["next"];
        all.extend_from_slice(args);
        let r = duetime(&all);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        snapshot.push_str(&format!(
            "$ duetime next {}\n{}\n",
            shell_line(args),
            r.stdout
        ));
    }
    insta::assert_snapshot!("next_odd_zones", snapshot);
}

#[test]
fn next_json_is_json() {
    let r = duetime(&[
        "next",
        "30 1 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2025-11-01T12:00:00Z",
        "--count",
        "2",
        "--json",
    ]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["zone"], "America/New_York");
    assert_eq!(v["fixed_time"], true);
    assert_eq!(v["dst"]["fold"], "first");
    assert_eq!(v["due"][0]["utc"], "2025-11-02T05:30:00Z");
    assert_eq!(v["due"][0]["notes"][0]["kind"], "fold");
    assert_eq!(v["due"][1]["notes"].as_array().unwrap().len(), 0);
}

#[test]
fn next_refuses_bad_input_with_the_cores_words() {
    let r = duetime(&["next", "61 * * * *"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "duetime next: minute: `61` is out of range 0-59\n"
    );
    let r = duetime(&["next", "0 9 * * *", "--tz", "Mars/Olympus"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("unknown time zone `Mars/Olympus`"),
        "{}",
        r.stderr
    );
    let r = duetime(&["next", "0 9 * * *", "--json", "--tz", "Mars/Olympus"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert!(v["error"].as_str().unwrap().contains("Mars/Olympus"));
    // Usage errors are clap's: exit 2.
    let r = duetime(&["next", "0 9 * * *", "--from", "yesterday"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("RFC 3339"), "{}", r.stderr);
    let r = duetime(&["next", "0 9 * * *", "--fold", "twice"]);
    assert_eq!(r.code, 2);
}

/// Arbitrary text and mangled copies of a real file never panic the parser.
#[test]
fn the_parser_never_panics() {
    let base = std::fs::read(fixtures().join("jobs.toml")).unwrap();
    let alphabet = b"[]{}=\"',.#\n\\ azAZ09_-:+*/@";
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..3_000 {
        let bytes: Vec<u8> = if round % 3 == 0 {
            (0..next() % 200)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        } else {
            let mut b = base.clone();
            for _ in 0..=next() % 6 {
                let at = (next() % b.len() as u64) as usize;
                match next() % 3 {
                    0 => b[at] = alphabet[(next() % alphabet.len() as u64) as usize],
                    1 => {
                        b.remove(at);
                    }
                    _ => b.insert(at, next() as u8),
                }
            }
            b
        };
        let text = String::from_utf8_lossy(&bytes);
        if let Err(errors) = duetime_host::jobs_file::parse_str(&text, "fuzz.toml") {
            for e in errors {
                assert!(e.to_string().starts_with("fuzz.toml"));
            }
        }
    }
}

fn shell_line(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            if a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_/:.=".contains(c))
            {
                a.to_string()
            } else {
                format!("'{a}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Issue 42: `next --from` takes the time text `what-if` takes (no offset: UTC), and the
/// expression comes back as written, not lower-cased.
#[test]
fn next_takes_what_ifs_times_and_echoes_the_expression_as_written() {
    let r = duetime(&["next", "0 0 L * *", "--from", "2026-03-29T00:00:00"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("expression  0 0 L * *\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("after       2026-03-29T00:00:00Z"),
        "{}",
        r.stdout
    );
    let r = duetime(&[
        "next",
        "0 9 * * MON",
        "--json",
        "--from",
        "2026-03-29T00:00",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["expression"], "0 9 * * MON");
}

/// Issue 42: `--version` names the commit the binary was built from.
#[test]
fn version_names_the_build_commit() {
    let r = duetime(&["--version"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let commit = r
        .stdout
        .strip_prefix(concat!("duetime ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{:?}", r.stdout));
    let hex = commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit());
    assert!(hex || commit == "unknown", "{commit}");
}

/// The subcommands people type (every one but the hidden `_supervise`).
const SUBCOMMANDS: [&str; 19] = [
    "check",
    "next",
    "run",
    "list",
    "show",
    "status",
    "logs",
    "pause",
    "resume",
    "run-now",
    "confirm",
    "approve",
    "backfill",
    "remove",
    "sim",
    "what-if",
    "core",
    "completions",
    "man",
];

/// Issue 42: completions come from the clap definitions, so each shell's script names
/// every subcommand and the flags of `run`, and never the internal `_supervise`; bash's
/// parses as bash.
#[test]
fn completions_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let r = duetime(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        for sub in SUBCOMMANDS {
            assert!(r.stdout.contains(sub), "{shell}: no {sub}");
        }
        assert!(r.stdout.contains("log-format"), "{shell}: no run flags");
        assert!(
            !r.stdout.contains("_supervise"),
            "{shell}: names _supervise"
        );
    }
    let bash = duetime(&["completions", "bash"]).stdout;
    let dir = with_file("duetime.bash", &bash);
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(dir.path().join("duetime.bash"))
        .output();
    if let Ok(out) = syntax {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let r = duetime(&["completions", "tcsh"]);
    assert_eq!(r.code, 2, "an unknown shell is a usage error");
}

/// Issue 42: `duetime man` prints a roff page naming every subcommand; `--dir` writes one
/// page per subcommand too, and a directory that cannot be written is exit 1, not a panic.
#[test]
fn man_pages_come_from_the_definitions() {
    let r = duetime(&["man"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(".TH duetime 1"), "{}", r.stdout);
    for sub in SUBCOMMANDS {
        let roff = sub.replace('-', "\\-");
        assert!(r.stdout.contains(&roff), "the page lacks {sub}");
    }
    let dir = tempfile::tempdir().unwrap();
    let r = duetime(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run = std::fs::read_to_string(dir.path().join("duetime-run.1")).unwrap();
    assert!(run.contains("log\\-level"), "{run}");
    assert!(dir.path().join("duetime-what-if.1").exists());
    assert!(!dir.path().join("duetime-_supervise.1").exists());
    let r = duetime(&["man", "--dir", "/nonexistent/duetime-man"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot write into"), "{}", r.stderr);
}

/// Issue 42: `check` echoes a cron expression as the file has it (`0 0 L * MON-FRI`, not
/// the core's lower-cased `0 0 l * mon-fri`), in text and JSON.
#[test]
fn check_echoes_cron_expressions_as_written() {
    let dir = with_file(
        "jobs.toml",
        "[[job]]\nname = \"monthly\"\ncron = \"0  0 L * MON-FRI\"\ntz = \"Europe/Paris\"\ncommand = [\"true\"]\n",
    );
    let r = duetime_in(dir.path(), &["check", "jobs.toml", "--count", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("  schedule  cron 0 0 L * MON-FRI in Europe/Paris\n"),
        "{}",
        r.stdout
    );
    let r = duetime_in(dir.path(), &["check", "jobs.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(
        v["jobs"][0]["schedule"], "cron 0 0 L * MON-FRI in Europe/Paris",
        "{v}"
    );
}

/// Issue 42: an unknown top-level key far from every accepted one gets no suggestion
/// (`foo` was told "did you mean job?"); a near one still does.
#[test]
fn an_unknown_top_level_key_is_suggested_only_what_is_close() {
    let dir = with_file("jobs.toml", "foo = 1\n");
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("top-level key \"foo\" is not accepted"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
    let dir = with_file("jobs.toml", "jobs = 1\n");
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert!(r.stderr.contains("(did you mean \"job\"?)"), "{}", r.stderr);
}

/// `check` shows each due time a calendar excludes, with the calendar and the date's label
/// (issue 45): the New Year's Day of a weekday job, and the last business day of January.
#[test]
fn check_names_each_excluded_due_time_and_why() {
    let text = r#"
[calendars.holidays]
yearly = true
dates = [{ date = "2026-01-01", label = "New Year's Day" }, "2026-01-30"]

[[job]]
name = "standup"
cron = "0 9 * * mon-fri"
tz = "Europe/London"
exclude = ["holidays"]
command = ["true"]

[[job]]
name = "payroll"
cron = "0 17 * * *"
tz = "Europe/London"
exclude = ["holidays"]
business_day = -1
command = ["true"]
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.toml"), text).unwrap();
    let from = "2025-12-30T12:00:00Z";
    let r = duetime_in(dir.path(), &["check", "jobs.toml", "--from", from]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(
        out.contains("excluded: 09:00 Thu 2026-01-01: holidays (New Year's Day)"),
        "{out}"
    );
    // The 30th is a holiday, so the last business day of January 2026 is Thursday the 29th.
    assert!(out.contains("2026-01-29 17:00"), "{out}");
}

/// `duetime next` tries a calendar before it goes in a jobs file (issue 45): the 15th at
/// 09:00 in London with Friday 15 August 2025 left out rolls to Monday the 18th, each
/// excluded due time named under the one that follows; the last business day of each
/// month; a date that does not exist is refused naming the flag and the accepted forms.
#[test]
fn next_tries_excluded_dates_a_business_day_and_a_roll() {
    let r = duetime(&[
        "next",
        "0 9 15 * *",
        "--tz",
        "Europe/London",
        "--from",
        "2025-08-01T00:00:00Z",
        "--count",
        "2",
        "--exclude",
        "2025-08-15",
        "--roll",
        "next",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("next_excluded_rolled", r.stdout);
    let r = duetime(&[
        "next",
        "0 9 * * *",
        "--from",
        "2025-12-01T00:00:00Z",
        "--count",
        "2",
        "--business-day",
        "-1",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("valid JSON");
    assert_eq!(v["due"][0]["utc"], "2025-12-31T09:00:00Z");
    assert_eq!(v["due"][1]["utc"], "2026-01-30T09:00:00Z");
    let r = duetime(&["next", "0 9 * * *", "--exclude", "2025-02-30"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("--exclude") && r.stderr.contains("`2025-02-30` is not a date"),
        "{}",
        r.stderr
    );
}

/// Issue 45: `check` of a chain written downstream first prints each job with the
/// schedule it takes and an `after` row; an unknown upstream is named with the closest
/// job, at its line.
#[test]
fn check_shows_a_chain_and_names_an_unknown_upstream() {
    const CHAIN: &str = "[[job]]\nname = \"report\"\nafter = [\"load\"]\ncommand = [\"true\"]\n\n\
        [[job]]\nname = \"load\"\nafter = [\"extract\"]\ncommand = [\"true\"]\n\n\
        [[job]]\nname = \"extract\"\ncron = \"0 2 * * *\"\ntz = \"Europe/Paris\"\ncommand = [\"true\"]\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.toml"), CHAIN).unwrap();
    let r = duetime_in(
        dir.path(),
        &["check", "jobs.toml", "--from", "2026-12-01T00:00:00Z"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report = r
        .stdout
        .split("\n\n")
        .find(|j| j.starts_with("report"))
        .unwrap();
    assert!(
        report.contains("schedule  cron 0 2 * * * in Europe/Paris")
            && report.contains(
                "after     runs after load: each due time starts once load settled it ok, \
                 else is skipped (cause upstream)"
            ),
        "{}",
        r.stdout
    );
    std::fs::write(
        dir.path().join("jobs.toml"),
        CHAIN.replace("[\"extract\"]", "[\"extrac\"]"),
    )
    .unwrap();
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with(
            "jobs.toml:8: job \"load\": field \"after\": \"extrac\" is not a job of this file \
             (did you mean \"extract\"?)"
        ),
        "{}",
        r.stderr
    );
}
