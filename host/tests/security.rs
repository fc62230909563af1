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

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o777
}

/// The umask most machines have, so a file made without an explicit mode shows it.
fn usual_umask() {
    // SAFETY: umask(2) cannot fail.
    unsafe {
        libc::umask(0o022);
    }
}

const TICKING: &str = r#"
[[job]]
name = "tick"
every = "1s"
command = ["sh", "-c", "echo secret output; echo $DUETIME_RUN >> {dir}/tick.txt"]
"#;

#[test]
fn the_store_its_wal_the_runs_directory_and_every_run_file_are_private() {
    usual_umask();
    let w = World::new(TICKING);
    let mut d = w.daemon("d.log");
    world::poll(Duration::from_secs(30), || {
        (w.ran("tick.txt").len() >= 2).then_some(())
    })
    .expect("tick never ran");
    let store = w.path("duetime.db");
    let runs = w.path("duetime.db.runs");
    assert_eq!(mode(&store), 0o600, "the store");
    for side in ["duetime.db-wal", "duetime.db-shm"] {
        if w.path(side).exists() {
            assert_eq!(mode(&w.path(side)), 0o600, "{side}");
        }
    }
    assert_eq!(mode(&runs), 0o700, "the runs directory");
    let mut run_files = 0;
    for entry in fs::read_dir(&runs).unwrap() {
        let dir = entry.unwrap().path();
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for f in fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            assert_eq!(mode(&f), 0o600, "{}", f.display());
            run_files += 1;
        }
    }
    assert!(
        run_files >= 4,
        "run.json, out.log, exit.json ... were written"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn the_daemon_refuses_a_store_or_runs_directory_others_can_write() {
    let w = World::new(TICKING);
    let mut d = w.daemon("first.log");
    sleep(Duration::from_millis(1_500));
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));

    let store = w.path("duetime.db");
    fs::set_permissions(&store, fs::Permissions::from_mode(0o666)).unwrap();
    let out = w.daemon_command(None, &["--tick", "1s"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "the store {} can be written by other users (mode 0666)",
            store.display()
        )) && text.contains(&format!("fix: chmod go-w {}", store.display())),
        "{text}"
    );
    fs::set_permissions(&store, fs::Permissions::from_mode(0o600)).unwrap();

    let runs = w.path("duetime.db.runs");
    fs::set_permissions(&runs, fs::Permissions::from_mode(0o777)).unwrap();
    let out = w.daemon_command(None, &["--tick", "1s"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the runs directory") && text.contains("chmod go-w"),
        "{text}"
    );
}

/// The uid of a user, from the system's database.
fn uid_of(user: &str) -> u32 {
    let out = std::process::Command::new("id")
        .args(["-u", user])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn a_job_running_as_nobody_writes_files_owned_by_nobody_and_may_ask_for_approval() {
    // Tests run as root here and in CI: only root can switch users.
    assert_eq!(unsafe { libc::geteuid() }, 0, "run the tests as root");
    let w = World::new(
        r#"
user = "nobody"

[[job]]
name = "as_nobody"
every = "1s"
command = ["sh", "-c", "id -u > {dir}/shared/id.txt; touch {dir}/shared/owned.txt; echo 1h > \"$DUETIME_APPROVAL\""]
"#,
    );
    let shared = w.path("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    // The world's directory is 0700 root's: nobody may pass through it to `shared`.
    fs::set_permissions(w.path(""), fs::Permissions::from_mode(0o711)).unwrap();
    let mut d = w.daemon("d.log");
    let owned = shared.join("owned.txt");
    world::poll(Duration::from_secs(30), || owned.exists().then_some(())).unwrap_or_else(|| {
        panic!(
            "never ran: {}",
            fs::read_to_string(w.path("d.log")).unwrap()
        )
    });
    let nobody = uid_of("nobody");
    assert_eq!(
        fs::metadata(&owned).unwrap().uid(),
        nobody,
        "the file is nobody's"
    );
    let id = fs::read_to_string(shared.join("id.txt")).unwrap();
    assert_eq!(id.trim(), nobody.to_string());
    let parked = world::poll(Duration::from_secs(30), || {
        let (_, out, _) = w.cli(&["show", "as_nobody", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        (!v["job"]["awaiting_approval"].is_null()).then_some(())
    });
    assert!(
        parked.is_some(),
        "the run as nobody could not ask for approval"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn a_daemon_that_is_not_root_refuses_a_job_of_another_user() {
    let w = World::new(
        r#"
[[job]]
name = "as_root"
every = "1s"
user = "root"
command = ["true"]
"#,
    );
    fs::set_permissions(w.path(""), fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = w.daemon_command(None, &["--tick", "1s"]);
    std::os::unix::process::CommandExt::uid(&mut cmd, uid_of("nobody"));
    std::os::unix::process::CommandExt::gid(&mut cmd, uid_of("nobody"));
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("job \"as_root\": field \"user\": the job runs as root (uid 0)")
            && text.contains("only root can switch users"),
        "{text}"
    );
}

#[test]
fn check_refuses_a_user_or_group_this_machine_does_not_have() {
    let w = World::new(
        r#"
[[job]]
name = "a"
every = "1m"
user = "no_such_user_xy"
command = ["true"]

[[job]]
name = "b"
every = "1m"
group = "no_such_group_xy"
command = ["true"]
"#,
    );
    let (code, _, err) = w.cli_plain(&["check", w.path("jobs.toml").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("job \"a\": field \"user\": no user \"no_such_user_xy\""),
        "{err}"
    );
    assert!(
        err.contains("job \"b\": field \"group\": no group \"no_such_group_xy\""),
        "{err}"
    );
}

#[test]
fn secrets_from_an_env_file_reach_the_command_and_no_output_of_duetime() {
    let w = World::new(
        r#"
[[job]]
name = "secretive"
every = "1s"
env = { DB_PASSWORD = "hunter2", MODE = "full" }
env_file = "{dir}/job.env"
command = ["sh", "-c", "echo \"$API_TOKEN $DB_PASSWORD $MODE\" > {dir}/seen.txt"]
"#,
    );
    let env = w.path("job.env");
    fs::write(&env, "# secrets\nAPI_TOKEN=s3cret-token\n").unwrap();
    fs::set_permissions(&env, fs::Permissions::from_mode(0o600)).unwrap();
    let jobs = w.path("jobs.toml");
    let jobs = jobs.to_str().unwrap();
    let (code, check, err) = w.cli_plain(&["check", jobs, "--tick", "1s"]);
    assert_eq!(code, 0, "{err}");
    assert!(check.contains("DB_PASSWORD=*** MODE=full"), "{check}");
    assert!(
        check.contains("env_file  ") && check.contains("job.env"),
        "{check}"
    );
    let (_, json, _) = w.cli_plain(&["check", jobs, "--tick", "1s", "--json"]);
    assert!(json.contains("\"DB_PASSWORD\": \"***\""), "{json}");
    let mut d = w.daemon("d.log");
    let seen = w.path("seen.txt");
    world::poll(Duration::from_secs(30), || seen.exists().then_some(())).expect("never ran");
    let (_, show, _) = w.cli(&["show", "secretive"]);
    let (_, show_json, _) = w.cli(&["show", "secretive", "--json"]);
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    assert_eq!(
        fs::read_to_string(&seen).unwrap().trim(),
        "s3cret-token hunter2 full"
    );
    let log = fs::read_to_string(w.path("d.log")).unwrap();
    for (what, text) in [
        ("check", &check),
        ("check --json", &json),
        ("show", &show),
        ("show --json", &show_json),
        ("the daemon's log", &log),
    ] {
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{what} shows a secret: {text}"
        );
    }
}

#[test]
fn the_daemon_refuses_an_env_file_others_can_write() {
    let w = World::new(
        r#"
[[job]]
name = "secretive"
every = "1s"
env_file = "{dir}/job.env"
command = ["true"]
"#,
    );
    let env = w.path("job.env");
    fs::write(&env, "API_TOKEN=x\n").unwrap();
    fs::set_permissions(&env, fs::Permissions::from_mode(0o666)).unwrap();
    let out = w.daemon_command(None, &["--tick", "1s"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "the env file {} can be written by other users",
            env.display()
        )),
        "{text}"
    );
}

#[test]
fn a_daemon_never_runs_a_command_its_jobs_file_does_not_name() {
    let w = World::new(
        r#"
[[job]]
name = "x"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/mine.txt"]
"#,
    );
    let mut owner = w.daemon_with(
        "owner.log",
        None,
        &["--tick", "1s", "--coordination", "single_owner"],
    );
    world::poll(Duration::from_secs(30), || {
        (!w.ran("mine.txt").is_empty()).then_some(())
    })
    .expect("the owner never ran x");
    // Whoever can write the store (here: a second daemon with another file, standing by)
    // puts another command in force for x.
    let other = w.path("other.toml");
    let text = format!(
        "[[job]]\nname = \"x\"\nevery = \"1s\"\ncommand = [\"sh\", \"-c\", \"echo $DUETIME_RUN >> {}/theirs.txt\"]\n",
        w.path("").display()
    );
    fs::write(&other, text).unwrap();
    let log = fs::File::create(w.path("standby.log")).unwrap();
    let mut standby = std::process::Command::new(world::BIN)
        .args([
            "run",
            "--tick",
            "1s",
            "--coordination",
            "single_owner",
            "--jobs",
        ])
        .arg(&other)
        .arg("--store")
        .arg(w.path("duetime.db"))
        .arg("--runs")
        .arg(w.path("standby.runs"))
        .stderr(log)
        .spawn()
        .unwrap();
    // The owner meets the foreign command at its next start of x, refuses it, and keeps
    // refusing it for a few more ticks.
    let refused = world::poll(Duration::from_secs(60), || {
        let text = fs::read_to_string(w.path("owner.log")).unwrap_or_default();
        text.contains("is not this daemon's jobs file's")
            .then_some(())
    });
    sleep(Duration::from_millis(2_000));
    for d in [&standby, &owner] {
        signal(d, libc::SIGTERM);
    }
    assert_eq!(wait(&mut standby, Duration::from_secs(60)), Some(0));
    assert_eq!(wait(&mut owner, Duration::from_secs(60)), Some(0));
    let owner_log = fs::read_to_string(w.path("owner.log")).unwrap();
    assert!(
        !w.path("theirs.txt").exists(),
        "the owner ran the store's foreign command:\n{owner_log}"
    );
    assert!(
        refused.is_some(),
        "the owner never met the store's command:\n{owner_log}"
    );
}
