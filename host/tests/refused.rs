//! Issue 42, bug 5: a store `duetime run` refuses is left exactly as it was: an empty, a
//! text or a foreign SQLite file keeps its mode and gets no `X.runs/` beside it, and a
//! port in use leaves no runs directory behind. Bug 7: a PostgreSQL database or role that
//! does not exist ends the daemon (exit 1) instead of being waited for as an outage.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::{duetime_in, with_file};

const JOBS: &str = "[[job]]\nname = \"a\"\nevery = \"1h\"\ncommand = [\"true\"]\n";

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The jobs file private (the daemon refuses one others could write), then `bytes` as
/// the store at mode 0644.
fn refused_store(bytes: &[u8]) -> tempfile::TempDir {
    let dir = with_file("jobs.toml", JOBS);
    fs::set_permissions(
        dir.path().join("jobs.toml"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let db = dir.path().join("x.db");
    fs::write(&db, bytes).unwrap();
    fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
    dir
}

#[test]
fn a_refused_store_file_keeps_its_mode_and_gets_no_runs_directory() {
    let foreign = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
            .unwrap();
        drop(conn);
        fs::read(&path).unwrap()
    };
    let cases: [(&str, Vec<u8>); 3] = [
        ("empty", Vec::new()),
        ("text", b"just some text, not a database\n".to_vec()),
        ("foreign", foreign),
    ];
    for (what, bytes) in cases {
        let dir = refused_store(&bytes);
        let r = duetime_in(
            dir.path(),
            &["run", "--jobs", "jobs.toml", "--store", "x.db"],
        );
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert_eq!(
            mode(&dir.path().join("x.db")),
            0o644,
            "{what}: mode changed"
        );
        assert!(
            !dir.path().join("x.db.runs").exists(),
            "{what}: runs directory made"
        );
        assert_eq!(fs::read(dir.path().join("x.db")).unwrap(), bytes, "{what}");
    }
}

#[test]
fn a_port_in_use_leaves_no_runs_directory() {
    let dir = with_file("jobs.toml", JOBS);
    fs::set_permissions(
        dir.path().join("jobs.toml"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = duetime_in(
        dir.path(),
        &[
            "run",
            "--jobs",
            "jobs.toml",
            "--store",
            "x.db",
            "--http",
            &addr,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        !dir.path().join("x.db.runs").exists(),
        "runs directory made"
    );
    assert!(!dir.path().join("x.db").exists(), "store made");
}

#[path = "support/pg.rs"]
mod pg;

/// Issue 42, bug 7: a database or role that does not exist, or a wrong password, is no
/// outage to wait out: the daemon ends at once, exit 1, saying so (it used to print
/// "cannot be reached ...; waiting" and wait forever).
#[test]
fn a_database_or_role_that_does_not_exist_ends_the_daemon() {
    let Some(url) = pg::server("a_database_or_role_that_does_not_exist_ends_the_daemon") else {
        return;
    };
    let (server, _db) = url.rsplit_once('/').expect("a URL with a database");
    let no_db = format!("{server}/nosuchdb");
    let no_role = no_db.replacen("postgres://postgres@", "postgres://nosuchrole@", 1);
    let no_role = no_role.replace("/nosuchdb", "/duetime_test");
    // scripts/pg makes duetime_pw give a password over TCP (every other role is trusted).
    let wrong_password = no_role.replacen("nosuchrole@", "duetime_pw:wrong@", 1);
    for (store, says) in [
        (no_db, "nosuchdb"),
        (no_role, "nosuchrole"),
        (wrong_password, "password authentication failed"),
    ] {
        let dir = with_file("jobs.toml", JOBS);
        fs::set_permissions(
            dir.path().join("jobs.toml"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_duetime"))
            .args(["run", "--jobs", "jobs.toml", "--store", &store])
            .current_dir(dir.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.and_then(|s| s.code()), Some(1), "{store}: {stderr}");
        assert!(
            stderr.contains(says) && !stderr.contains("waiting"),
            "{stderr}"
        );
    }
}
