//! A run's life as its command sees it, with real processes: the variables that tell it
//! which due times it covers (scheduled, caught up after downtime, backfilled), and the
//! kill at its deadline when it ignores SIGTERM, whatever the daemon's tick.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::time::{Duration, Instant};

use duetime::{Entry, History, Outcome, RunId, Timestamp};
use world::{check_journal, now_ms, poll, signal, wait, World};

/// Whether process `pid` still exists (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let (_, rest) = s.rsplit_once(')')?;
            rest.split_whitespace().next().map(|st| st != "Z")
        })
        .unwrap_or(false)
}

/// The outcome `run` was settled with, if it has been.
fn settled(w: &World, run: RunId) -> Option<Outcome> {
    w.journal().into_iter().find_map(|r| match r.entry {
        Entry::History(History::Settled {
            run: r, outcome, ..
        }) if r == run => Some(outcome),
        _ => None,
    })
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_at_its_deadline_before_it_is_settled() {
    let w = World::new(
        r#"
[[job]]
name = "stubborn"
every = "5s"
timeout = "3s"
retries = 0
command = ["sh", "-c", "trap '' TERM; echo $DUETIME_RUN $$ >> {dir}/pids; sleep 60; echo $DUETIME_RUN >> {dir}/survived"]
"#,
    );
    // A 1 s tick: the core settles an unanswered cancel two ticks after it, far sooner than
    // the 10 s a kill used to wait.
    let mut d = w.daemon("d.log");
    let (run, pid) = poll(Duration::from_secs(60), || {
        let text = fs::read_to_string(w.path("pids")).ok()?;
        let mut first = text.lines().next()?.split_whitespace();
        let run = first.next()?.parse().ok()?;
        let pid = first.next()?.parse().ok()?;
        Some((RunId(run), pid))
    })
    .expect("stubborn never started");
    let started = Instant::now();
    // Whenever the run shows settled, its command must already be dead: a settled run
    // whose command still runs can be started again beside it.
    let outcome = poll(Duration::from_secs(60), || {
        let outcome = settled(&w, run)?;
        assert!(
            !alive(pid),
            "{run} was settled {outcome:?} while its command (pid {pid}) still ran"
        );
        Some(outcome)
    })
    .expect("the run was never settled");
    assert_eq!(outcome, Outcome::TimedOut);
    // Dead by the deadline (3 s) plus the grace (one tick), with room for a slow machine.
    assert!(
        poll(Duration::from_secs(1), || (!alive(pid)).then_some(())).is_some()
            && started.elapsed() < Duration::from_secs(15),
        "pid {pid} outlived its deadline"
    );
    let end = now_ms();
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    assert!(!w.path("survived").exists(), "a command outlived its kill");
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// One line a command wrote: its run and the `DUETIME_*` variables it was given.
#[derive(Debug, Clone)]
struct Told {
    run: u64,
    trigger: String,
    due: String,
    from: String,
    to: String,
    count: u64,
    attempt: u32,
    key: String,
}

fn told(w: &World) -> Vec<Told> {
    fs::read_to_string(w.path("env.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Some(Told {
                run: f.first()?.parse().ok()?,
                trigger: f.get(1)?.to_string(),
                due: f.get(2)?.to_string(),
                from: f.get(3)?.to_string(),
                to: f.get(4)?.to_string(),
                count: f.get(5)?.parse().ok()?,
                attempt: f.get(6)?.parse().ok()?,
                key: f.get(7)?.to_string(),
            })
        })
        .collect()
}

/// What the journal says `run` covers.
fn covers_of(w: &World, run: u64) -> (Timestamp, Timestamp, u64) {
    w.journal()
        .into_iter()
        .find_map(|r| match r.entry {
            Entry::History(History::Started {
                run: r,
                covers: Some(c),
                ..
            }) if r.0 == run => Some((c.from, c.to, c.count)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("r{run} has no start with covers in the journal"))
}

/// The command was told exactly what the journal says its run covers.
fn agrees(w: &World, t: &Told) {
    let (from, to, count) = covers_of(w, t.run);
    assert_eq!(t.from, from.to_string(), "{t:?}");
    assert_eq!(t.to, to.to_string(), "{t:?}");
    assert_eq!(
        t.due,
        to.to_string(),
        "DUETIME_DUE is the newest covered: {t:?}"
    );
    assert_eq!(t.count, count, "{t:?}");
    assert_eq!(t.attempt, 1, "{t:?}");
    assert_eq!(t.key, format!("report:{from}..{to}"), "{t:?}");
}

#[test]
fn a_command_is_told_what_it_covers_when_scheduled_caught_up_and_backfilled() {
    let w = World::new(
        r#"
[[job]]
name = "report"
every = "2s"
missed = "required"
command = ["sh", "-c", "echo $DUETIME_RUN $DUETIME_TRIGGER $DUETIME_DUE $DUETIME_COVERS_FROM $DUETIME_COVERS_TO $DUETIME_COVERS_COUNT $DUETIME_ATTEMPT $DUETIME_IDEMPOTENCY_KEY >> {dir}/env.txt"]
"#,
    );
    let find = |trigger: &str, at_least: u64| {
        poll(Duration::from_secs(60), || {
            told(&w)
                .into_iter()
                .find(|t| t.trigger == trigger && t.count >= at_least)
        })
    };
    let mut d = w.daemon("d.log");
    let scheduled = find("scheduled", 1).expect("no scheduled run");
    assert_eq!(scheduled.count, 1);
    assert_eq!(scheduled.from, scheduled.to);
    agrees(&w, &scheduled);

    // Six due times from before the ledger begins, asked for by a person.
    let (code, out, _) = w.cli(&["show", "report", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let accounted: Timestamp = v["job"]["accounted_from"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let last = Timestamp::from_secs((accounted.as_secs_floor() - 10) / 2 * 2);
    let first = Timestamp::from_secs(last.as_secs_floor() - 10);
    let (code, out, err) = w.cli(&[
        "backfill",
        "report",
        "--from",
        &first.to_string(),
        "--to",
        &last.to_string(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let backfill = find("backfill", 1).expect("the backfill never ran");
    assert_eq!(
        (backfill.from.as_str(), backfill.to.as_str(), backfill.count),
        (first.to_string().as_str(), last.to_string().as_str(), 6)
    );
    agrees(&w, &backfill);

    // Down for longer than the grace (ten seconds, `MIN_LEASE`, under a one-second tick)
    // by a few due times: those found later than the grace are caught up (all of them:
    // `required`); the ones within it start on time.
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    std::thread::sleep(Duration::from_secs(18));
    let mut d = w.daemon("d2.log");
    let caught_up = find("catch_up", 2).expect("no catch-up of the downtime");
    agrees(&w, &caught_up);
    // The due times found within the grace wait behind the catch-up (`buffer_all`, as
    // `required` asks) and run one by one after it: given the time to, before L1 judges.
    std::thread::sleep(Duration::from_secs(6));
    let end = now_ms();
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
}
