//! Running the real `duetime` binary from the host's integration tests.

#![allow(dead_code)] // each test file uses what it needs

use std::path::Path;
use std::process::Command;

/// How one run of the binary ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `duetime` in `dir`, so file names print as given.
pub fn duetime_in(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_duetime"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the duetime binary runs");
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// A temporary directory holding `name` with `text`.
pub fn with_file(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join(name), text).expect("written");
    dir
}
