//! The host's guards against whoever should not change what runs or read what it keeps:
//! a confirmation that covers the command, private files, run-as users, secrets kept out
//! of what is printed. Real daemons over SQLite, as `e2e.rs`.

#[path = "support/world.rs"]
mod world;

use std::thread::sleep;
use std::time::Duration;

use world::{signal, wait, World};

const GUARDED_V1: &str = r#"
[[job]]
name = "guarded"
every = "1s"
requires_confirmation = true
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/v1.txt"]
"#;

const GUARDED_V2: &str = r#"
[[job]]
name = "guarded"
every = "1s"
requires_confirmation = true
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/v2.txt"]
"#;

/// The digest `duetime show` prints beside a held definition.
fn shown_digest(w: &World, job: &str) -> String {
    let (code, out, err) = w.cli(&["show", job]);
    assert_eq!(code, 0, "{out}{err}");
    out.split("--digest ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("show names no digest: {out}"))
        .to_string()
}

#[test]
fn a_changed_command_waits_for_confirmation_and_the_confirmed_one_runs_meanwhile() {
    let w = World::new(GUARDED_V1);
    let mut d = w.daemon("d1.log");
    sleep(Duration::from_millis(1_500));
    let first = shown_digest(&w, "guarded");
    let (code, out, err) = w.cli(&["confirm", "guarded", "--digest", &first]);
    assert_eq!(code, 0, "{out}{err}");
    sleep(Duration::from_millis(2_500));
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    assert!(!w.ran("v1.txt").is_empty(), "the confirmed command ran");

    // Someone edits the command in the jobs file; the next daemon reads it.
    w.write_jobs(GUARDED_V2);
    let before = w.ran("v1.txt").len();
    let mut d = w.daemon("d2.log");
    sleep(Duration::from_millis(3_000));
    assert!(
        w.ran("v2.txt").is_empty(),
        "the new command ran unconfirmed"
    );
    assert!(
        w.ran("v1.txt").len() > before,
        "the confirmed command stopped running"
    );
    let (_, show, _) = w.cli(&["show", "guarded"]);
    assert!(
        show.contains("v1.txt' -> sh -c"),
        "show gives the change to review: {show}"
    );
    let second = shown_digest(&w, "guarded");
    assert_ne!(second, first);

    let (code, _, err) = w.cli(&["confirm", "guarded", "--digest", &first]);
    assert_eq!(code, 1, "the stale digest is refused");
    assert!(
        !err.contains(&second),
        "the refusal hands out the digest: {err}"
    );
    assert!(err.contains("command: sh -c 'echo"), "{err}");
    assert!(err.contains("v1.txt' -> sh -c 'echo"), "{err}");
    let (code, out, err) = w.cli(&["confirm", "guarded", "--digest", &second]);
    assert_eq!(code, 0, "{out}{err}");
    sleep(Duration::from_millis(2_500));
    assert!(
        !w.ran("v2.txt").is_empty(),
        "the confirmed new command runs"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn confirm_json_shows_changes_and_no_digest() {
    let w = World::new(GUARDED_V1);
    let mut d = w.daemon("d.log");
    sleep(Duration::from_millis(1_500));
    let digest = shown_digest(&w, "guarded");
    let (code, out, _) = w.cli(&["confirm", "guarded", "--digest", "abc", "--json"]);
    assert_eq!(code, 1);
    assert!(!out.contains(&digest), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "wrong_digest");
    let changes = v["changes"].as_array().unwrap();
    assert!(changes.iter().any(|c| c["field"] == "command"), "{out}");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}
