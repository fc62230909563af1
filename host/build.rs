//! Records the commit the binary is built from, for `duetime --version`: an operator
//! asked which build runs must get an exact answer. Without git (a source tarball) the
//! commit is `unknown`; the build never fails for it.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DUETIME_COMMIT={commit}");
    // Built again when HEAD moves: the file HEAD names (a branch's ref) or HEAD itself.
    // Only files that exist are named: cargo takes a missing one as changed at every build,
    // which rebuilt the host (and everything above it) every time in a clone without
    // `packed-refs` (a fresh worktree; every `cargo fuzz run`). A ref that moves from its
    // own file into `packed-refs` deletes that file, which cargo notices.
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--symbolic-full-name", "HEAD"])
            .and_then(|r| git(&["rev-parse", "--git-path", &r])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    .filter(|p| std::path::Path::new(p).exists())
    {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
