//! The `duetime-sim` command line: out-of-range flags are usage errors (exit 64) naming
//! what is accepted, never a panic blamed on the core; `--help` describes every flag.

use std::process::Command;

fn sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_duetime-sim"))
        .args(args)
        .output()
        .expect("duetime-sim runs");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn out_of_range_flags_are_usage_errors() {
    for (args, says) in [
        (
            ["--jobs", "0"],
            "--jobs: `0`; accepted: a whole number from 1 to 1000",
        ),
        (
            ["--processes", "0"],
            "--processes: `0`; accepted: a whole number from 1 to 64",
        ),
        (
            ["--processes", "65"],
            "accepted: a whole number from 1 to 64",
        ),
        (
            ["--days", "0"],
            "--days: `0`; accepted: a number of days above 0, up to 366",
        ),
        (
            ["--days", "400"],
            "accepted: a number of days above 0, up to 366",
        ),
        (["--threads", "0"], "--threads: `0`"),
    ] {
        let (code, out, err) = sim(&args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn help_describes_every_flag_on_stdout_and_exits_0() {
    let (code, out, err) = sim(&["--help"]);
    assert_eq!(code, 0, "{err}");
    for flag in [
        "--seeds A..B",
        "--processes N",
        "--jobs N",
        "--days X",
        "--faults MODE",
        "--check-determinism",
        "--replay-file PATH",
    ] {
        assert!(out.contains(flag), "{flag} missing:\n{out}");
    }
}

#[test]
fn one_job_one_process_runs() {
    let (code, out, err) = sim(&[
        "--seed",
        "3",
        "--jobs",
        "1",
        "--processes",
        "1",
        "--days",
        "0.2",
    ]);
    assert_eq!(code, 0, "{out}{err}");
}
