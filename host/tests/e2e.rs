//! End to end with real processes: the `duetime` binary as a daemon over a SQLite file,
//! commands that append a line to a file, `kill -9` in the middle of runs, restarts, two
//! daemons on one store. The simulator's checker then reads the store's journal: every due
//! time accounted exactly once, no due time of a job not safe to repeat started twice; the
//! files the commands wrote are the ground truth of what really ran.
//!
//! Timing is generous on purpose (these machines are shared and slow): the tests assert
//! what must hold whatever the timing, never an exact count.

#[path = "support/world.rs"]
mod world;

use std::fs;
use std::thread::sleep;
use std::time::{Duration, Instant};

use duetime::{Effect, Entry, History, RunId};
use world::{
    assert_no_due_time_ran_twice, check_journal, now_ms, poll, signal, started_by, wait, World,
};

const JOBS: &str = r#"
[[job]]
name = "tick"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/tick.txt"]

[[job]]
name = "slow"
every = "5s"
missed = "required"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/slow.started; sleep 4; echo $DUETIME_RUN >> {dir}/slow.txt"]

[[job]]
name = "safe"
every = "2s"
safe_to_repeat = true
command = ["sh", "-c", "sleep 0.5; echo $DUETIME_RUN >> {dir}/safe.txt"]
"#;

#[test]
fn kill_9_in_the_middle_of_runs_loses_nothing_and_runs_nothing_twice() {
    let w = World::new(JOBS);
    let mut first = w.daemon("first.log");
    // Killed half a second into a run of `slow` (four seconds long), so its command
    // outlives the daemon and is still going when the next one starts.
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("slow.started").len() < 2 {
        assert!(Instant::now() < deadline, "slow never started twice");
        sleep(Duration::from_millis(50));
    }
    sleep(Duration::from_millis(500));
    signal(&first, libc::SIGKILL);
    wait(&mut first, Duration::from_secs(10));
    // Down for a while: due times pass with nobody ticking.
    sleep(Duration::from_millis(2_000));
    let mut second = w.daemon("second.log");
    sleep(Duration::from_millis(6_000));
    let end = now_ms();
    signal(&second, libc::SIGTERM);
    let code = wait(&mut second, Duration::from_secs(60));
    let log = fs::read_to_string(w.path("second.log")).unwrap();
    assert_eq!(code, Some(0), "the drained daemon exits 0:\n{log}");
    assert!(log.contains("drained"), "{log}");

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "tick", "tick.txt");
    assert_no_due_time_ran_twice(&w, "slow", "slow.txt");
    // Both incarnations ran things, and the down time shows in the journal.
    assert!(w.ran("tick.txt").len() >= 4, "{:?}", w.ran("tick.txt"));
    let journal = w.journal();
    let missed = journal.iter().any(|r| {
        matches!(&r.entry, Entry::Ledger(l) if matches!(l.kind, duetime::LedgerKind::Missed { .. }))
    });
    assert!(missed, "the down time left no missed due time");
    // Whatever was running when the first daemon died was adopted or reported by the
    // second, never left to lapse.
    let lost: Vec<String> = journal
        .iter()
        .filter(|r| matches!(r.entry, Entry::History(History::Lost { .. })))
        .map(|r| Effect::Journal(r.clone()).to_string())
        .collect();
    assert!(lost.is_empty(), "{lost:?}");
}

#[test]
fn two_daemons_on_one_store_with_one_killed() {
    let w = World::new(JOBS);
    let mut a = w.daemon("a.log");
    let mut b = w.daemon("b.log");
    sleep(Duration::from_millis(4_000));
    let killed_at = now_ms();
    signal(&a, libc::SIGKILL);
    wait(&mut a, Duration::from_secs(10));
    // Past the dead daemon's leases (ten seconds, `MIN_LEASE`, under a one-second tick)
    // and a tick more: the run it held is recorded lost by the survivor, which L1 asks.
    sleep(Duration::from_millis(15_000));
    let end = now_ms();
    signal(&b, libc::SIGTERM);
    let code = wait(&mut b, Duration::from_secs(60));
    assert_eq!(
        code,
        Some(0),
        "{}",
        fs::read_to_string(w.path("b.log")).unwrap()
    );

    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "tick", "tick.txt");
    assert_no_due_time_ran_twice(&w, "slow", "slow.txt");
    // The survivor carries on: runs start after the other daemon died.
    let journal = w.journal();
    let after_kill = journal
        .iter()
        .filter(|r| r.at.as_millis() > killed_at)
        .filter(|r| matches!(r.entry, Entry::History(History::Started { .. })))
        .count();
    assert!(
        after_kill >= 2,
        "only {after_kill} runs started after the kill"
    );
}

#[test]
fn pause_resume_and_run_now_through_the_command_line() {
    let w = World::new(JOBS);
    let mut d = w.daemon("d.log");
    sleep(Duration::from_millis(2_500));

    let (code, out, err) = w.cli(&["pause", "tick", "--note", "maintenance", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = w.cli(&["pause", "tick"]);
    assert_eq!(code, 0, "pausing twice is no error: {err}");
    assert!(out.contains("pause tick: already paused"), "{out}");
    let paused_at = w.ran("tick.txt").len();
    sleep(Duration::from_millis(3_000));
    // At most a run that was already going finishes while paused.
    assert!(w.ran("tick.txt").len() <= paused_at + 1);
    let (code, out, _) = w.cli(&["list"]);
    assert_eq!(code, 0);
    let line = out.lines().find(|l| l.starts_with("tick")).unwrap();
    assert!(line.contains("paused"), "{out}");

    let (code, out, err) = w.cli(&["resume", "tick", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = w.cli(&["run-now", "slow"]);
    assert_eq!(
        code, 1,
        "a job not safe to repeat cannot be run by hand: {err}"
    );
    let before = w.ran("safe.txt").len();
    // Refused while one of its runs is in flight: ask until it is between runs.
    let accepted = (0..50).any(|_| {
        let (code, out, err) = w.cli(&["run-now", "safe", "--by", "bo"]);
        assert!(code == 0 || err.contains("in flight"), "{out}{err}");
        code == 0 || {
            sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(accepted, "run-now was never accepted");
    sleep(Duration::from_millis(3_000));
    assert!(w.ran("safe.txt").len() > before);
    assert!(
        w.ran("tick.txt").len() > paused_at + 1,
        "tick runs again after resume"
    );

    let (code, out, _) = w.cli(&["show", "tick"]);
    assert_eq!(code, 0);
    assert!(out.contains("paused by ana"), "{out}");
    assert!(out.contains("resumed by ana"), "{out}");
    let (code, _, err) = w.cli(&["show", "nosuch"]);
    assert_eq!(code, 1);
    assert!(err.contains("no job named"), "{err}");

    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

#[test]
fn ctrl_c_twice_stops_at_once_and_the_next_daemon_adopts_the_run() {
    let w = World::new(
        r#"
[[job]]
name = "long"
every = "30s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/long.started; sleep 4; echo $DUETIME_RUN >> {dir}/long.txt"]
"#,
    );
    let mut first = w.daemon("first.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("long.started").is_empty() {
        assert!(Instant::now() < deadline, "long never started");
        sleep(Duration::from_millis(50));
    }
    // The first Ctrl-C drains (it would wait for the run); the second stops at once.
    signal(&first, libc::SIGINT);
    sleep(Duration::from_millis(300));
    signal(&first, libc::SIGINT);
    let code = wait(&mut first, Duration::from_secs(3));
    let log = fs::read_to_string(w.path("first.log")).unwrap();
    assert_eq!(code, Some(130), "{log}");
    assert!(w.ran("long.txt").is_empty(), "the run was still going");

    let mut second = w.daemon("second.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while w.ran("long.txt").is_empty() {
        assert!(Instant::now() < deadline, "the run never finished");
        sleep(Duration::from_millis(50));
    }
    sleep(Duration::from_millis(1_500));
    signal(&second, libc::SIGTERM);
    assert_eq!(wait(&mut second, Duration::from_secs(60)), Some(0));

    let journal = w.journal();
    let lines: Vec<String> = journal
        .iter()
        .map(|r| Effect::Journal(r.clone()).to_string())
        .collect();
    assert!(lines.iter().any(|l| l.contains("adopted by")), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("ran r1")), "{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains("lost")), "{lines:#?}");
}

#[test]
fn a_job_that_requires_confirmation_waits_for_duetime_confirm() {
    let w = World::new(
        r#"
[[job]]
name = "guarded"
every = "1s"
requires_confirmation = true
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/guarded.txt"]
"#,
    );
    let mut d = w.daemon("d.log");
    sleep(Duration::from_millis(2_500));
    assert!(w.ran("guarded.txt").is_empty(), "held until confirmed");
    let (code, out, err) = w.cli(&["show", "guarded"]);
    assert_eq!(code, 0, "{out}{err}");
    let digest = out
        .split("--digest ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("show names the digest to confirm: {out}"))
        .to_string();
    assert_eq!(digest.len(), 64, "a SHA-256 digest: {out}");
    let (code, _, err) = w.cli(&["confirm", "guarded", "--digest", "0000000000000000"]);
    assert_eq!(code, 1, "a wrong digest is refused");
    assert!(
        !err.contains(&digest),
        "the refusal must not hand out the digest to type: {err}"
    );
    assert!(
        err.contains("old FNV-1a form") && err.contains("command: (unset) -> sh -c"),
        "the refusal says the old form and shows what is held: {err}"
    );
    let (code, out, err) = w.cli(&["confirm", "guarded", "--digest", &digest, "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    sleep(Duration::from_millis(3_000));
    assert!(!w.ran("guarded.txt").is_empty(), "runs once confirmed");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
}

/// Every line of the journal, as `duetime show` prints them.
fn lines(w: &World) -> Vec<String> {
    w.journal()
        .iter()
        .map(|r| Effect::Journal(r.clone()).to_string())
        .collect()
}

#[test]
fn single_owner_one_daemon_runs_the_other_stands_by_and_takes_over_after_kill_9() {
    let w = World::new(
        r#"
[[job]]
name = "beat"
every = "3s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/beat.txt"]
"#,
    );
    // A 2 s tick makes the owner lease 4 s (two ticks): long enough that a slow turn of a
    // busy machine does not pass it to the standby early, short enough to keep this quick.
    let flags = ["--tick", "2s", "--coordination", "single_owner"];
    let mut a = w.daemon_with("a.log", Some("a.runs"), &flags);
    let pa = w.process_of("a.log");
    let by = |p| {
        move |w: &World| {
            started_by(&w.journal(), "beat")
                .iter()
                .filter(|s| s.1 == p)
                .count()
        }
    };
    let ran_by_a = by(pa);
    assert!(
        poll(Duration::from_secs(60), || (ran_by_a(&w) >= 1)
            .then_some(()))
        .is_some(),
        "the only daemon never ran beat:\n{}",
        fs::read_to_string(w.path("a.log")).unwrap()
    );
    // The second daemon finds the lease held and stands by while the owner runs on.
    let mut b = w.daemon_with("b.log", Some("b.runs"), &flags);
    let pb = w.process_of("b.log");
    let ran_by_b = by(pb);
    let target = ran_by_a(&w) + 2;
    assert!(
        poll(Duration::from_secs(60), || (ran_by_a(&w) >= target)
            .then_some(()))
        .is_some(),
        "the owner stopped running beat"
    );
    assert_eq!(ran_by_b(&w), 0, "the standby ran something");
    assert_eq!(
        w.state().owner_lease().map(|o| o.holder),
        Some(pa),
        "the first daemon owns"
    );
    let (code, out, _) = w.cli(&["list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("single_owner: {pa} decides")),
        "{out}"
    );

    // Killed between two runs (none open, the next due time over a second away), so no run
    // of its is left for its lease to lapse on.
    let quiet = poll(Duration::from_secs(60), || {
        let now = duetime::Timestamp::from_millis(now_ms());
        let view = w.state().job("beat", now)?;
        let next = view.next_due?;
        (view.running.is_none() && next.as_millis() - now.as_millis() > 1_000).then_some(())
    });
    assert!(quiet.is_some(), "beat was never between runs");
    signal(&a, libc::SIGKILL);
    let killed_at = now_ms();
    wait(&mut a, Duration::from_secs(10));

    // The standby takes the lease once it lapses and runs the next due times.
    assert!(
        poll(Duration::from_secs(60), || (ran_by_b(&w) >= 2)
            .then_some(()))
        .is_some(),
        "the standby never took over:\n{}",
        fs::read_to_string(w.path("b.log")).unwrap()
    );
    let end = now_ms();
    signal(&b, libc::SIGTERM);
    let code = wait(&mut b, Duration::from_secs(60));
    let log = fs::read_to_string(w.path("b.log")).unwrap();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("OWNER {pb}")) && log.contains(&format!("the lease of {pa} lapsed")),
        "the standby logs taking the lapsed lease:\n{log}"
    );

    // Every start before the kill was the owner's, every one after the standby's.
    for (run, process, at) in started_by(&w.journal(), "beat") {
        let expected = if at < killed_at { pa } else { pb };
        assert_eq!(
            process, expected,
            "r{run} started at {at} (killed at {killed_at})"
        );
    }
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "beat", "beat.txt");
    let all = lines(&w);
    assert!(!all.iter().any(|l| l.contains("lost")), "{all:#?}");
}

#[test]
fn a_run_that_asks_for_approval_parks_until_duetime_approve() {
    let w = World::new(
        r#"
[[job]]
name = "deploy"
every = "2s"
command = ['sh', '-c', 'echo $DUETIME_RUN >> {dir}/deploy.txt; echo 1h > "$DUETIME_APPROVAL"']
"#,
    );
    let mut d = w.daemon("d.log");
    let shown = poll(Duration::from_secs(60), || {
        let (code, out, _) = w.cli(&["show", "deploy"]);
        (code == 0 && out.contains("parked")).then_some(out)
    })
    .unwrap_or_else(|| {
        panic!(
            "deploy never parked:\n{}",
            fs::read_to_string(w.path("d.log")).unwrap()
        )
    });
    let run = RunId(w.ran("deploy.txt")[0]);
    let parked = shown.lines().find(|l| l.contains("parked")).unwrap();
    assert!(
        parked.contains(&format!("{run} awaits approval until "))
            && parked.contains("duetime approve deploy"),
        "{shown}"
    );
    let (code, out, _) = w.cli(&["show", "deploy", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let until: duetime::Timestamp = v["job"]["awaiting_approval"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .parse()
        .unwrap();
    // The command asked for an hour.
    let ahead = until.as_millis() - now_ms();
    assert!((3_000_000..=3_600_000).contains(&ahead), "{ahead} ms");

    // While parked the job stays occupied: later due times start nothing.
    sleep(Duration::from_millis(3_000));
    assert_eq!(
        w.ran("deploy.txt"),
        vec![run.0],
        "a run started while parked"
    );

    let (code, out, err) = w.cli(&["approve", "deploy", "--by", "ana"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("approve deploy: done"), "{out}");
    assert!(out.contains(&format!("{run} approved by ana")), "{out}");
    let all = lines(&w);
    let approved = all
        .iter()
        .position(|l| l.ends_with(&format!(": {run} approved by ana")))
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(
        all[approved..]
            .iter()
            .any(|l| l.starts_with("LEDGER deploy") && l.ends_with(&format!(": ran {run}"))),
        "the approved run settles as ran: {all:#?}"
    );
    // Approved once: the same run cannot be approved again.
    let (code, _, err) = w.cli(&["approve", "deploy", "--run", &run.to_string()]);
    assert_eq!(code, 1);
    assert!(err.contains("not awaiting approval"), "{err}");
    // The job is free again: the next due time runs (and parks in turn).
    assert!(
        poll(Duration::from_secs(60), || (w.ran("deploy.txt").len() >= 2)
            .then_some(()))
        .is_some(),
        "deploy never ran again after the approval"
    );
    // A parked run holds no process, so the drain does not wait for it.
    let end = now_ms();
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "deploy", "deploy.txt");
}

#[test]
fn approve_refuses_an_unknown_job_and_a_job_with_nothing_parked() {
    let w = World::new(
        r#"
[[job]]
name = "plain"
cron = "0 0 1 1 *"
command = ["true"]
"#,
    );
    let mut d = w.daemon("d.log");
    assert!(
        poll(Duration::from_secs(60), || (w.cli(&["show", "plain"]).0
            == 0)
            .then_some(()))
        .is_some(),
        "the daemon never defined plain"
    );
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));

    let (code, out, err) = w.cli(&["approve", "nosuch"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("approve nosuch: refused: no job named `nosuch`"),
        "{err}"
    );
    let (code, out, err) = w.cli(&["approve", "plain"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains(
            "approve plain: refused: nothing of this job awaits approval (no run is open)"
        ),
        "{err}"
    );
    let (code, out, _) = w.cli(&["approve", "plain", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["kind"], "nothing_parked", "{out}");
    // Naming a run goes to the core, which refuses any run that is not parked.
    let (code, out, _) = w.cli(&["approve", "plain", "--run", "r7", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "not_awaiting_approval", "{out}");
    let (code, _, err) = w.cli(&["approve", "plain", "--run", "seven"]);
    assert_eq!(code, 2, "a malformed run id is a usage error: {err}");
    let journal = lines(&w);
    assert!(
        !journal.iter().any(|l| l.contains("approved")),
        "{journal:#?}"
    );
}

#[test]
fn config_flags_that_contradict_the_store_are_refused_and_left_out_take_the_stores() {
    let w = World::new(
        r#"
[[job]]
name = "fast"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/fast.txt"]
"#,
    );
    // The store is made with a 1 s tick and a cap of 2.
    let mut first = w.daemon_with(
        "first.log",
        None,
        &["--tick", "1s", "--max-runs-per-process", "2"],
    );
    assert!(
        poll(Duration::from_secs(60), || (!w.ran("fast.txt").is_empty())
            .then_some(()))
        .is_some(),
        "fast never ran"
    );
    signal(&first, libc::SIGTERM);
    assert_eq!(wait(&mut first, Duration::from_secs(60)), Some(0));
    let config = *w.state().config();
    assert_eq!(config.max_runs_per_process, Some(2));

    // Each flag that differs is named with the store's value; nothing starts.
    let mut refused = w.daemon_with(
        "refused.log",
        None,
        &[
            "--tick",
            "2s",
            "--coordination",
            "single_owner",
            "--max-runs-per-process",
            "2",
        ],
    );
    let code = wait(&mut refused, Duration::from_secs(30));
    let log = fs::read_to_string(w.path("refused.log")).unwrap();
    assert_eq!(code, Some(64), "{log}");
    assert!(log.contains("--tick 2s: the store has 1s"), "{log}");
    assert!(
        log.contains("--coordination single_owner: the store has shared"),
        "{log}"
    );
    assert!(
        !log.contains("--max-runs-per-process"),
        "an equal flag is not a difference: {log}"
    );
    assert!(log.contains("leave these flags out"), "{log}");
    assert_eq!(
        *w.state().config(),
        config,
        "the store's config is unchanged"
    );

    // The core's own check of a flag's value is a usage error naming the flag.
    let mut zero = w.daemon_with("zero.log", None, &["--max-runs-per-process", "0"]);
    let code = wait(&mut zero, Duration::from_secs(30));
    let log = fs::read_to_string(w.path("zero.log")).unwrap();
    assert_eq!(code, Some(64), "{log}");
    assert!(
        log.contains(
            "--max-runs-per-process 0: config: max_runs_per_process 0 would start nothing"
        ),
        "{log}"
    );

    // Without flags the daemon runs with the store's config: `every = "1s"` is accepted
    // (its tick is 1 s, not the 30 s default a new store would get).
    let before = w.ran("fast.txt").len();
    let mut second = w.daemon_with("second.log", None, &[]);
    let ran = poll(Duration::from_secs(60), || {
        (w.ran("fast.txt").len() > before).then_some(())
    });
    signal(&second, libc::SIGTERM);
    let code = wait(&mut second, Duration::from_secs(60));
    let log = fs::read_to_string(w.path("second.log")).unwrap();
    assert!(
        ran.is_some(),
        "fast never ran under the store's config:\n{log}"
    );
    assert_eq!(code, Some(0), "{log}");
}

/// Where `job`'s ledger begins, as `duetime show --json` prints it (`accounted_from`).
fn accounted_from(w: &World, job: &str) -> Option<duetime::Timestamp> {
    let (code, out, err) = w.cli(&["show", job, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["job"]["accounted_from"]
        .as_str()
        .map(|t| t.parse().unwrap())
}

/// A daemon defines `job`; the world's store then holds it.
fn defined(w: &World, job: &str) -> std::process::Child {
    let d = w.daemon("d.log");
    assert!(
        poll(Duration::from_secs(60), || (w.cli(&["show", job]).0 == 0)
            .then_some(()))
        .is_some(),
        "the daemon never defined {job}:\n{}",
        fs::read_to_string(w.path("d.log")).unwrap_or_default()
    );
    d
}

#[test]
fn an_accepted_backfill_runs_its_due_times_as_catch_ups() {
    let w = World::new(
        r#"
[[job]]
name = "report"
every = "1s"
command = ["sh", "-c", "echo $DUETIME_RUN >> {dir}/report.txt"]
"#,
    );
    let mut d = defined(&w, "report");
    let accounted = accounted_from(&w, "report").expect("a new job has an accounted start");
    let (code, shown, _) = w.cli(&["show", "report"]);
    assert_eq!(code, 0);
    assert!(
        shown.contains(&format!(
            "ledger from   {accounted} (a backfill must end at or before it)"
        )),
        "{shown}"
    );
    // Five whole seconds, well before the ledger begins: five due times of `every 1s`.
    let whole = accounted.as_secs_floor();
    let first = duetime::Timestamp::from_secs(whole - 10);
    let last = duetime::Timestamp::from_secs(whole - 6);
    let (code, out, err) = w.cli(&[
        "backfill",
        "report",
        "--from",
        &first.to_string(),
        "--to",
        &last.to_string(),
        "--by",
        "ana",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("backfill report: done"), "{out}");
    assert!(
        out.contains(&format!(
            "5 due time(s) accepted, the first {first}, the last {last}; a running daemon \
             starts them as catch-ups"
        )),
        "{out}"
    );
    assert!(
        lines(&w).iter().any(|l| l.ends_with(&format!(
            ": backfill of 5 due times from {first} to {last} asked by ana"
        ))),
        "{:#?}",
        lines(&w)
    );
    // The ledger now begins just before the first due time asked for.
    assert_eq!(
        accounted_from(&w, "report"),
        Some(first.saturating_sub(duetime::Duration::from_millis(1)))
    );

    // The daemon starts them as one catch-up, which really runs.
    let run = poll(Duration::from_secs(60), || {
        let journal = w.journal();
        let run = journal.iter().find_map(|r| match &r.entry {
            Entry::History(History::Started {
                run,
                covers: Some(c),
                ..
            }) if c.from == first && c.to == last && c.count == 5 => Some(*run),
            _ => None,
        })?;
        w.ran("report.txt").contains(&run.0).then_some(run)
    })
    .unwrap_or_else(|| {
        panic!(
            "the backfill never ran:\n{:#?}\n{}",
            lines(&w),
            fs::read_to_string(w.path("d.log")).unwrap()
        )
    });
    assert!(
        poll(Duration::from_secs(60), || lines(&w)
            .iter()
            .any(|l| l.ends_with(&format!(": missed (backfill) caught up by {run}")))
            .then_some(()))
        .is_some(),
        "{:#?}",
        lines(&w)
    );
    let end = now_ms();
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_no_due_time_ran_twice(&w, "report", "report.txt");
}

#[test]
fn backfill_refuses_accounted_time_an_empty_range_and_an_unknown_job() {
    let w = World::new(
        r#"
[[job]]
name = "plain"
every = "1h"
command = ["true"]
"#,
    );
    let mut d = defined(&w, "plain");
    signal(&d, libc::SIGTERM);
    assert_eq!(wait(&mut d, Duration::from_secs(60)), Some(0));
    let accounted = accounted_from(&w, "plain").unwrap();
    let journal = lines(&w);

    // A range reaching into the ledger: refused, naming where it must end.
    let from = accounted.saturating_sub(duetime::Duration::from_hours(5));
    let into = accounted.saturating_add(duetime::Duration::from_hours(1));
    let range = [
        "--from".to_string(),
        from.to_string(),
        "--to".into(),
        into.to_string(),
    ];
    let mut args = vec!["backfill", "plain"];
    args.extend(range.iter().map(String::as_str));
    let (code, out, err) = w.cli(&args);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains(&format!(
            "backfill plain: refused: a backfill must end at or before {accounted}; due times \
             after it are in the ledger already"
        )),
        "{err}"
    );
    args.push("--json");
    let (code, out, _) = w.cli(&args);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["kind"], "already_accounted", "{out}");

    // `to` before `from`.
    let (code, out, _) = w.cli(&[
        "backfill",
        "plain",
        "--from",
        &accounted.to_string(),
        "--to",
        &from.to_string(),
        "--json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "empty_range", "{out}");

    // No such job.
    let (code, out, err) = w.cli(&[
        "backfill",
        "nosuch",
        "--from",
        &from.to_string(),
        "--to",
        &accounted.to_string(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("backfill nosuch: refused: no job named `nosuch`"),
        "{err}"
    );
    // An instant that does not parse is a usage error.
    let (code, _, err) = w.cli(&["backfill", "plain", "--from", "yesterday", "--to", "now"]);
    assert_eq!(code, 2, "{err}");

    // Nothing changed.
    assert_eq!(accounted_from(&w, "plain"), Some(accounted));
    assert_eq!(lines(&w), journal);
}
