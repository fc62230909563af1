//! Concurrency lanes, the per-process cap and jitter, as stories: a due run that cannot
//! start waits (recorded once, with why), is let in when room opens (oldest first), and
//! its start says how long it waited; jitter delays a start by a pure function of (job,
//! due time) while the ledger names the due time. A property holds the counts under
//! random events.

mod support;

use duetime::Action;
use duetime::{Config, Duration, Effect, Entry, Event, History, Outcome, ProcessId, Record};
use proptest::prelude::*;
use support::*;

/// Notes every start's wait among the last step's effects (the trace hides `started`).
fn note_waits(s: &mut Story) {
    let waits: Vec<String> = s
        .last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(Record {
                job,
                entry:
                    Entry::History(History::Started {
                        run,
                        waited: Some(w),
                        ..
                    }),
                ..
            }) => Some(format!("{job} {run} started after waiting {w}")),
            _ => None,
        })
        .collect();
    for w in waits {
        s.note(&w);
    }
}

fn keyed(name: &str, key: &str) -> duetime::JobDef {
    let mut def = job(name, every("1h"));
    def.concurrency_key = Some(key.to_string());
    def
}

#[test]
fn two_jobs_on_one_key_due_together_run_one_at_a_time_and_the_second_records_its_wait() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", keyed("write_a", "/srv/folder"));
    s.define("08:59", keyed("write_b", "/srv/folder"));
    s.define("08:59", job("other", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.note("write_b waits: the lane /srv/folder is one wide and write_a holds it");
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1);
    let waits = |s: &Story, name: &str| {
        let seq = s.state.seq_of_name(name).unwrap();
        s.state.record(seq).unwrap().waits_for_room()
    };
    assert_eq!(
        waits(&s, "write_b"),
        Some((at("09:00:10"), duetime::WaitReason::LaneBusy)),
        "a host can tell since when, and for what, write_b waits"
    );
    assert_eq!(waits(&s, "write_a"), None);
    s.tick("09:02", 1);
    // A live host ticks while its runs go on (a process the store has not heard from for
    // longer than a lease claims nothing: a result is no tick).
    s.tick("09:04:30", 1);
    s.finish("09:05", 1, Outcome::Ok);
    note_waits(&mut s);
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1);
    s.finish("09:06", 2, Outcome::Ok);
    s.tick("09:06:30", 1);
    s.finish("09:07", 3, Outcome::Ok);
    s.tick("10:00:10", 1);
    s.finish("10:01", 4, Outcome::Ok);
    note_waits(&mut s);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_lane_of_two_lets_two_run_and_the_third_waits_oldest_first() {
    let mut s = Story::new();
    s.show_history = true;
    for name in ["copy_a", "copy_b", "copy_c"] {
        let mut def = keyed(name, "disk");
        def.concurrency_limit = Some(2);
        s.define("08:59", def);
    }
    // A fourth job on the key asking for a lane of one would narrow it for all: the
    // smallest width wins. Not defined here; see the property.
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    assert_eq!(s.state.open_runs_of_key("disk"), 2);
    // A live host ticks while its runs go on (a process the store has not heard from for
    // longer than a lease claims nothing: a result is no tick).
    s.tick("09:02:30", 1);
    s.finish("09:03", 2, Outcome::Ok);
    note_waits(&mut s);
    assert_eq!(s.state.open_runs_of_key("disk"), 2);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn the_process_cap_holds_a_due_run_until_a_process_has_room() {
    let config = Config {
        max_runs_per_process: Some(1),
        ..Config::default()
    };
    let mut s = Story::with_config(config);
    s.show_history = true;
    s.define("08:59", job("alpha", every("1h")));
    s.define("08:59", job("beta", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    assert_eq!(s.state.open_runs_of(ProcessId(1)), 1);
    s.note("beta waits for the cap: p1 holds one run, its most");
    s.tick("09:00:40", 1);
    s.start("09:01", 2);
    note_waits(&mut s);
    s.note("p2 has room: its first tick lets beta in");
    assert_eq!(s.state.open_runs_of(ProcessId(2)), 1);
    s.finish("09:02", 1, Outcome::Ok);
    s.finish("09:03", 2, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn jitter_delays_the_start_deterministically_and_the_ledger_names_the_due_time() {
    let mut def = job("spread", every("1h"));
    def.jitter = Some("10m".parse().unwrap());
    let delay = def.jitter_delay(at("09:00"));
    assert_eq!(
        delay,
        def.clone().jitter_delay(at("09:00")),
        "a pure function"
    );
    assert!(delay <= Duration::from_mins(10));
    let delays: Vec<Duration> = ["10:00", "11:00", "12:00", "13:00"]
        .iter()
        .map(|t| def.jitter_delay(at(t)))
        .collect();
    assert!(
        delays.iter().any(|d| *d != delay),
        "the delay depends on the due time: {delay} then {delays:?}"
    );
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    let start = at("09:00").saturating_add(delay);
    s.note(&format!("the delay for 09:00 is {delay}"));
    assert_eq!(
        s.state.next_wake(),
        Some(start),
        "the wake time includes the delay"
    );
    s.tick("09:00:10", 1);
    assert!(
        !s.last
            .iter()
            .any(|e| matches!(e, Effect::Do(Action::Start(_)))),
        "nothing starts before due + delay"
    );
    let clock = start.saturating_add(Duration::from_secs(1)).to_string()[11..19].to_string();
    s.tick(&clock, 1);
    assert!(s
        .last
        .iter()
        .any(|e| matches!(e, Effect::Do(Action::Start(_)))));
    s.finish("09:20", 1, Outcome::Ok);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_jittered_start_missed_by_more_than_the_grace_goes_to_the_missed_rule() {
    let mut def = job("spread", every("1h"));
    def.jitter = Some("30m".parse().unwrap());
    let mut s = Story::new();
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.crash("08:59:40", 1);
    s.start_alone("09:44:30", 2);
    insta::assert_snapshot!(s.ledger());
}

#[test]
fn jitter_longer_than_an_hour_or_the_period_is_refused() {
    let mut s = Story::new();
    let mut def = job("spread", every("10m"));
    def.jitter = Some("11m".parse().unwrap());
    s.define("08:59", def);
    let mut def = job("spread", every("1d"));
    def.jitter = Some("2h".parse().unwrap());
    s.define("08:59", def);
    let mut def = keyed("wide", "k");
    def.concurrency_limit = Some(0);
    s.define("08:59", def);
    insta::assert_snapshot!(s.trace());
}

#[derive(Debug, Clone)]
enum Step {
    Tick { p: u64, secs: u64 },
    Finish { pick: usize, secs: u64 },
    Remove { job: usize },
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1u64..=3, 1u64..400).prop_map(|(p, secs)| Step::Tick { p, secs }),
        4 => (0usize..8, 1u64..400).prop_map(|(pick, secs)| Step::Finish { pick, secs }),
        1 => (0usize..6).prop_map(|job| Step::Remove { job }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the order of ticks, results and removals, no key has more runs open than
    /// its lane is wide (the smallest width of its jobs) and no process more than the cap.
    #[test]
    fn never_more_open_runs_per_key_than_its_width_nor_per_process_than_the_cap(
        cap in proptest::option::of(1u32..=3),
        widths in proptest::collection::vec(1u32..=3, 6),
        steps in proptest::collection::vec(step_strategy(), 1..120),
    ) {
        let config = Config {
            max_runs_per_process: cap,
            ..Config::default()
        };
        let mut s = Story::with_config(config);
        let keys = ["a", "a", "a", "b", "b", "-"];
        for (i, key) in keys.iter().enumerate() {
            let mut def = job(&format!("j{i}"), every("1m"));
            if *key != "-" {
                def.concurrency_key = Some(key.to_string());
            }
            def.concurrency_limit = Some(widths[i]);
            s.define("08:59", def);
        }
        let mut removed = [false; 6];
        for p in 1..=3 {
            s.start("08:59:30", p);
        }
        let mut t = at("09:00");
        for step in steps {
            match step {
                Step::Tick { p, secs } => {
                    t = t.saturating_add(Duration::from_secs(secs));
                    let process = ProcessId(p);
                    let held = s.held_by(process);
                    s.send_now(duetime::Now::at(t), "tick", "tick", Event::Tick { process, held });
                }
                Step::Finish { pick, secs } => {
                    t = t.saturating_add(Duration::from_secs(secs));
                    let open: Vec<(ProcessId, duetime::Held)> = (1..=3)
                        .flat_map(|p| s.held_by(ProcessId(p)).into_iter().map(move |h| (ProcessId(p), h)))
                        .collect();
                    if open.is_empty() {
                        continue;
                    }
                    let (p, h) = open[pick % open.len()];
                    let label = t.to_string();
                    s.finish_as(&label[11..19], p.0, h.run.0, h.fence.0, Outcome::Ok);
                    let _ = &label;
                }
                Step::Remove { job } => {
                    removed[job] = true;
                    let name = duetime::JobName::new(&format!("j{job}")).unwrap();
                    s.send_now(duetime::Now::at(t), "remove", "remove", Event::Remove { job: name, actor: duetime::Actor::new("p") });
                }
            }
            // The smallest width among the jobs still defined on the key.
            let width = |k: &str| {
                (0..6)
                    .filter(|&i| keys[i] == k && !removed[i])
                    .map(|i| widths[i])
                    .min()
                    .unwrap_or(u32::MAX)
            };
            for k in ["a", "b"] {
                prop_assert!(s.state.open_runs_of_key(k) <= width(k), "key {} has {} open, width {}", k, s.state.open_runs_of_key(k), width(k));
            }
            if let Some(cap) = cap {
                for p in 1..=3 {
                    prop_assert!(s.state.open_runs_of(ProcessId(p)) <= cap);
                }
            }
        }
    }
}

/// A job waiting for its lane that is moved to another key waits no more for the old one:
/// it takes the new lane at the next tick, and each lane counts its own run. (Found by a
/// mutant that kept a moved job's lane entry under its old key: nothing changed a key
/// while a job was laned.)
#[test]
fn a_job_moved_to_a_free_lane_while_waiting_starts_there_and_leaves_the_old_lane() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", keyed("write_a", "/srv/folder"));
    s.define("08:59", keyed("write_b", "/srv/folder"));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1, "write_b waits");
    s.note("write_b moves to the key /srv/other, where nothing runs");
    s.define("09:01", keyed("write_b", "/srv/other"));
    s.tick("09:01:10", 1);
    assert_eq!(s.state.open_runs_of_key("/srv/other"), 1, "{}", s.trace());
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1, "{}", s.trace());
    s.finish("09:05", 1, Outcome::Ok);
    s.finish("09:05:30", 2, Outcome::Ok);
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 0);
    assert_eq!(s.state.open_runs_of_key("/srv/other"), 0);
    insta::assert_snapshot!(s.trace());
}

/// A job moved to another key while its run is open: the run still does what it started
/// as, on what the old key guards, so it keeps counting in the old lane until it ends (a
/// job of that lane waits for it), while the new lane does not count it (its own job
/// starts). Saved states say so (`OpenRun::lane`, format 8), and moving back forgets it.
#[test]
fn a_job_moved_to_another_key_while_it_runs_keeps_its_run_in_the_lane_it_started_in() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", keyed("write_a", "/srv/folder"));
    s.define("08:59", keyed("write_b", "/srv/folder"));
    s.define("08:59", keyed("archive", "/srv/other"));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:00:20", 2, Outcome::Ok);
    s.note("write_a r1 runs in /srv/folder; write_b waits; archive r2 ran and ended");
    s.define("09:01", keyed("write_a", "/srv/other"));
    s.note("write_a moves to /srv/other while r1 runs: r1 stays in /srv/folder");
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1);
    assert_eq!(s.state.open_runs_of_key("/srv/other"), 0);
    let stored = serde_json::to_value(&s.state).unwrap();
    let back: duetime::State = serde_json::from_value(stored).unwrap();
    assert_eq!(
        back.open_runs_of_key("/srv/folder"),
        1,
        "a reloaded state agrees"
    );
    s.tick("09:02:10", 1);
    assert_eq!(
        s.state.open_runs_of_key("/srv/folder"),
        1,
        "write_b still waits for r1\n{}",
        s.trace()
    );
    s.finish("09:03", 1, Outcome::Ok);
    note_waits(&mut s);
    assert_eq!(s.state.open_runs_of_key("/srv/folder"), 1, "write_b let in");
    s.finish("09:04", 3, Outcome::Ok);
    s.tick("10:00:10", 1);
    s.define("10:00:20", keyed("write_a", "/srv/folder"));
    assert_eq!(
        s.state.open_runs_of_key("/srv/other"),
        1,
        "r4 stays in /srv/other"
    );
    assert!(serde_json::to_string(&s.state)
        .unwrap()
        .contains(r#""lane":{"key":"/srv/other"}"#));
    s.define("10:00:30", keyed("write_a", "/srv/other"));
    s.note("moved away and back while r4 runs: it counts where it started, as plain as before");
    assert_eq!(s.state.open_runs_of_key("/srv/other"), 1, "{}", s.trace());
    assert!(!serde_json::to_string(&s.state)
        .unwrap()
        .contains(r#""lane""#));
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_job_held_by_a_quota_stands_in_no_lane_so_the_jobs_behind_it_run() {
    let mut s = Story::new();
    s.show_history = true;
    let mut limited = keyed("call_api", "/api");
    limited.schedule = every("1m");
    limited.safe_to_repeat = true;
    limited.overlap = Some(duetime::Overlap::BufferOne);
    let mut sync = keyed("sync", "/api");
    sync.schedule = every("1m");
    sync.overlap = Some(duetime::Overlap::BufferOne);
    s.define("08:59", limited);
    s.define("08:59", sync);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    let run_now = Event::RunNow {
        job: duetime::JobName::new("call_api").unwrap(),
        actor: duetime::Actor::new("bo"),
    };
    s.finish("09:00:40", 1, Outcome::Ok);
    s.command("09:00:45", "bo runs call_api now", run_now);
    s.finish("09:00:55", 2, Outcome::Ok);
    s.tick("09:01:10", 1);
    s.note("call_api's manual run r3 holds the lane; its 09:01 due time waits behind it");
    let quota = Outcome::Failed {
        kind: "quota".into(),
        retry_after: Some(Duration::from_hours(1)),
    };
    s.finish("09:01:30", 3, quota);
    s.note("the API asks call_api to wait an hour: it could not take the lane meanwhile");
    s.finish("09:01:40", 4, Outcome::Ok);
    s.tick("09:02:10", 1);
    s.tick("09:02:40", 1);
    let trace = s.trace();
    let waits = |name: &str| {
        let seq = s.state.seq_of_name(name).unwrap();
        s.state.record(seq).unwrap().waits_for_room()
    };
    assert_eq!(
        waits("call_api"),
        None,
        "held by its quota, call_api waits in no line\n{trace}"
    );
    assert!(
        trace.contains("START sync r5"),
        "sync's 09:02 run starts while call_api's quota holds it back, not an hour later\n{trace}"
    );
    insta::assert_snapshot!(trace);
}

#[test]
fn a_full_lane_whose_waiter_is_older_holds_back_no_waiter_of_another_lane() {
    let mut s = Story::new();
    for (name, key) in [
        ("a_first", "/a"),
        ("a_second", "/a"),
        ("b_first", "/b"),
        ("b_second", "/b"),
    ] {
        s.define("08:59", keyed(name, key));
    }
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.note("a_second waits for /a and b_second for /b, a_second first in the line of lines");
    s.finish("09:01", 2, Outcome::Ok);
    let trace = s.trace();
    assert!(
        trace.contains("START b_second"),
        "/b has room once b_first settles: b_second starts though /a, whose waiter is older, is still full\n{trace}"
    );
}

#[test]
fn room_freed_during_a_tick_goes_to_the_oldest_keyless_waiter_not_a_job_just_due() {
    let config = Config {
        max_runs_per_process: Some(1),
        ..Config::default()
    };
    let mut s = Story::with_config(config);
    s.show_history = true;
    let mut slow = job("slow", every("1h"));
    slow.timeout = Duration::from_secs(300);
    s.define("08:59", slow);
    s.define("08:59", job("waiter", every("1h")));
    s.define("08:59", job("fresh", cron("7 * * * *")));
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.note("slow holds p1's one place; waiter waits for the cap since 09:00:10");
    s.tick("09:05:20", 1);
    s.note("slow ran past its timeout: cancel sent; its grace ends before 09:07");
    s.tick("09:07:10", 1);
    s.note("in one tick slow's run is given up (its lease lapsed), freeing p1's place, and fresh comes due (09:07)");
    let trace = s.trace();
    assert!(
        trace.contains("START waiter"),
        "the room slow's timeout freed goes to waiter, who has waited since 09:00:10\n{trace}"
    );
    assert!(
        !trace.contains("START fresh"),
        "fresh, due only now, waits behind the older waiter\n{trace}"
    );
    let seq = s.state.seq_of_name("fresh").unwrap();
    assert_eq!(
        s.state.record(seq).unwrap().waits_for_room(),
        Some((at("09:07:10"), duetime::WaitReason::ConcurrencyCap)),
        "{trace}"
    );
    insta::assert_snapshot!(trace);
}
