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

/// Issue 45: a chain written downstream first (report after load after extract).
const CHAIN: &str = r#"
[[job]]
name = "report"
after = ["load"]
command = ["true"]

[[job]]
name = "load"
after = ["extract"]
command = ["true"]

[[job]]
name = "extract"
every = "1h"
command = ["true"]
"#;

/// The same jobs, the chain turned round: extract after load after report.
const CHAIN_TURNED: &str = r#"
[[job]]
name = "extract"
after = ["load"]
command = ["true"]

[[job]]
name = "load"
after = ["report"]
command = ["true"]

[[job]]
name = "report"
every = "1h"
command = ["true"]
"#;

/// The core refuses a downstream whose upstream it does not know: the daemon upserts a
/// file's definitions upstreams first, at start and at a reload, whatever the file's order
/// (and a reload that turns a chain round upserts the new roots first).
#[test]
fn a_chain_written_downstream_first_loads_and_reloads() {
    let w = World::new(CHAIN);
    let mut d = w.daemon("d.log");
    w.process_of("d.log");
    assert_eq!(names(&w), ["extract", "load", "report"], "{}", log(&w));
    let after_of = |w: &World, job: &str| -> Vec<String> {
        let state = w.state();
        let (_, r) = state
            .records()
            .find(|(_, r)| r.def().name.as_str() == job)
            .unwrap();
        r.def().after.iter().map(ToString::to_string).collect()
    };
    assert_eq!(after_of(&w, "report"), ["load"]);

    w.write_jobs(CHAIN_TURNED);
    signal(&d, libc::SIGHUP);
    let turned = poll(Duration::from_secs(20), || {
        log(&w).contains("reloaded the jobs file").then_some(())
    });
    assert!(turned.is_some(), "no reload:\n{}", log(&w));
    assert_eq!(after_of(&w, "extract"), ["load"], "{}", log(&w));
    assert!(after_of(&w, "report").is_empty());
    assert!(!log(&w).contains("refused"), "{}", log(&w));

    signal(&d, libc::SIGTERM);
    assert_eq!(
        wait(&mut d, Duration::from_secs(30)),
        Some(0),
        "{}",
        log(&w)
    );
}
