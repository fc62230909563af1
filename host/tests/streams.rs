//! The host's streams as people really attach them: a terminal on stderr (`duetime sim`
//! draws its progress bar there) and a log pipe that closes under a running daemon
//! (`duetime run ... 2>&1 | head`). Neither may hang or stop the host.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use duetime::{Effect, Entry, History};
use world::{now_ms, poll, signal, wait, World};

/// A pseudo-terminal (libc's `openpty`, already a dependency of the host): the child gets
/// the terminal side as its stderr; the test reads the other side so the child never
/// blocks on a full terminal buffer.
fn pty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the given ints; the other arguments
    // may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

#[test]
fn duetime_sim_with_a_terminal_on_stderr_finishes_and_draws_its_progress() {
    let w = World::new(
        r#"
[[job]]
name = "hourly"
cron = "0 * * * *"
command = ["true"]
"#,
    );
    let (master, slave) = pty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_duetime"))
        .args(["sim", "jobs.toml", "--seeds", "0..6", "--threads", "2"])
        .args(["--days", "0.5", "--faults", "light"])
        .current_dir(w.path(""))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let drawn = std::thread::spawn(move || {
        let mut terminal = fs::File::from(master);
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child (the last holder of the terminal side) exits.
        while let Ok(n) = terminal.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let mut out = child.stdout.take().unwrap();
    let printed = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    // A hang is killed here (which closes its streams), and fails below.
    let code = wait(&mut child, Duration::from_secs(120));
    let stdout = printed.join().unwrap();
    assert_eq!(code, Some(0), "hung or failed:\n{stdout}");
    assert!(stdout.contains("6 seeds, 0 failed"), "{stdout}");
    let terminal = drawn.join().unwrap();
    assert!(
        terminal.contains("seeds"),
        "no progress bar drawn: {terminal:?}"
    );
}

#[test]
fn a_daemon_whose_log_pipe_closes_keeps_running_and_drains_cleanly() {
    let w = World::new(
        r#"
[[job]]
name = "tick"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/tick.txt"]
"#,
    );
    let mut d = w
        .daemon_command(None, &["--tick", "1s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    w.guard(&d);
    // Read two lines, as `| head -2` would, then close the pipe.
    {
        let mut log = BufReader::new(d.stderr.take().unwrap());
        for _ in 0..2 {
            let mut line = String::new();
            log.read_line(&mut line).unwrap();
        }
    }
    let closed_at = now_ms();
    let started_after = || {
        w.journal()
            .iter()
            .filter(|r| r.at.as_millis() > closed_at)
            .filter(|r| matches!(r.entry, Entry::History(History::Started { .. })))
            .count()
    };
    // Every start now logs into the closed pipe; the daemon must go on carrying them out.
    let went_on = poll(Duration::from_secs(60), || {
        (started_after() >= 4).then_some(())
    });
    let alive = d.try_wait().unwrap().is_none();
    assert!(
        alive,
        "the daemon died when its log pipe closed: {:?}",
        d.try_wait()
    );
    assert!(
        went_on.is_some(),
        "{} starts after the pipe closed",
        started_after()
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    // Every start after the close was carried out: none was left to be recorded lost.
    let lost: Vec<String> = w
        .journal()
        .iter()
        .filter(|r| matches!(r.entry, Entry::History(History::Lost { .. })))
        .map(|r| Effect::Journal(r.clone()).to_string())
        .collect();
    assert!(lost.is_empty(), "{lost:?}");
}
