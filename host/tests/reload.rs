//! Issue 42, bug 1: SIGHUP makes a running daemon reread its jobs file (it used to kill
//! it). A good file's new job reaches the store and the daemon lives on; a broken file
//! changes nothing, is logged, and the daemon lives on.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::time::Duration;

use world::{poll, signal, wait, World};

const ONE: &str = r#"
[[job]]
name = "first"
every = "1h"
command = ["true"]
"#;

const TWO: &str = r#"
[[job]]
name = "first"
every = "1h"
command = ["true"]

[[job]]
name = "second"
every = "1h"
command = ["true"]
"#;

/// A bad `every` and an unknown key: both must be logged, neither applied.
const BROKEN: &str = r#"
[[job]]
name = "first"
every = "soon"
command = ["true"]

[[job]]
name = "third"
every = "1h"
comand = ["true"]
"#;

fn names(w: &World) -> Vec<String> {
    let mut names: Vec<String> = w
        .state()
        .records()
        .map(|(_, r)| r.def().name.to_string())
        .collect();
    names.sort();
    names
}

fn log(w: &World) -> String {
    fs::read_to_string(w.path("d.log")).unwrap_or_default()
}

#[test]
fn hup_reloads_the_jobs_file_and_a_broken_one_changes_nothing() {
    let w = World::new(ONE);
    let mut d = w.daemon("d.log");
    w.process_of("d.log");
    assert_eq!(names(&w), ["first"]);

    w.write_jobs(TWO);
    signal(&d, libc::SIGHUP);
    let added = poll(Duration::from_secs(20), || {
        (names(&w).len() == 2 && log(&w).contains("reloaded the jobs file")).then_some(())
    });
    assert!(added.is_some(), "no reload:\n{}", log(&w));
    assert_eq!(names(&w), ["first", "second"]);
    assert!(
        d.try_wait().unwrap().is_none(),
        "HUP ended the daemon:\n{}",
        log(&w)
    );
    assert!(log(&w).contains("added=second"), "{}", log(&w));

    w.write_jobs(BROKEN);
    signal(&d, libc::SIGHUP);
    let refused = poll(Duration::from_secs(20), || {
        log(&w).contains("reload refused").then_some(())
    });
    assert!(refused.is_some(), "no refusal logged:\n{}", log(&w));
    let text = log(&w);
    assert!(text.contains("soon"), "the bad `every` is named:\n{text}");
    assert!(text.contains("comand"), "the unknown key too:\n{text}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(names(&w), ["first", "second"], "the old definitions stay");
    assert!(
        d.try_wait().unwrap().is_none(),
        "HUP ended the daemon:\n{text}"
    );

    signal(&d, libc::SIGTERM);
    assert_eq!(
        wait(&mut d, Duration::from_secs(30)),
        Some(0),
        "{}",
        log(&w)
    );
}
