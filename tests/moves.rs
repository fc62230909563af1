//! Stories of a job moving between two states (a host's partitions, issue 43): its record
//! leaves one state whole (`MoveOut`, `Effect::Handover`) and goes on in the other
//! (`MoveIn`), what it owes and where its frontier stands included, so nothing it looked
//! at is looked at again and nothing it owes is lost. A job with an open run waits for the
//! run: run ids and fences belong to the state that made them.

mod support;

use duetime::{
    Action, Actor, Config, Effect, Entry, Event, History, JobName, JobRecord, MissedRule, Outcome,
    Overlap, Refusal, RunId, Start,
};
use support::*;

fn move_out(s: &mut Story, time: &str, job: &str) -> Result<JobRecord, Refusal> {
    let effects = s.send(
        time,
        &format!("move {job} out"),
        Event::MoveOut {
            job: JobName::new(job).unwrap(),
            actor: Actor::new("ops"),
        },
    );
    let handed = effects.iter().find_map(|e| match e {
        Effect::Handover(record) => Some((**record).clone()),
        _ => None,
    });
    let refused = effects.iter().find_map(|e| match e {
        Effect::Reply { result: Err(r), .. } => Some(r.clone()),
        _ => None,
    });
    match (handed, refused) {
        (Some(record), None) => Ok(record),
        (None, Some(refusal)) => Err(refusal),
        other => panic!("a move out either hands the record over or is refused: {other:?}"),
    }
}

fn move_in(s: &mut Story, time: &str, record: JobRecord) -> Option<Refusal> {
    let label = format!("move {} in", record.def().name);
    let effects = s.send(
        time,
        &label,
        Event::MoveIn {
            record: Box::new(record),
            actor: Actor::new("ops"),
        },
    );
    effects.iter().find_map(|e| match e {
        Effect::Reply { result: Err(r), .. } => Some(r.clone()),
        _ => None,
    })
}

fn starts(effects: &[Effect]) -> Vec<(RunId, Option<duetime::Covers>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Do(Action::Start(Start { run, covers, .. })) => Some((*run, *covers)),
            _ => None,
        })
        .collect()
}

fn history_of(effects: &[Effect]) -> Vec<History> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                Entry::History(h) => Some(h.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A job every minute whose overlaps are owed (`buffer_all`).
fn queued(name: &str) -> duetime::JobDef {
    let mut def = job(name, every("1m"));
    def.overlap = Some(Overlap::BufferAll);
    def.timeout = "1h".parse().unwrap();
    def
}

#[test]
fn a_paused_job_moves_with_its_pause_and_runs_what_it_passed_in_its_new_state() {
    let (mut a, mut b) = (Story::new(), Story::new());
    a.show_history = true;
    b.show_history = true;
    let mut def = queued("report");
    def.missed = MissedRule::Required;
    a.define("09:00", def);
    a.start("09:00", 1);
    b.start("09:00", 1);
    a.tick("09:01", 1);
    a.finish("09:01:30", 1, Outcome::Ok);
    a.command("09:01:40", "pause report", pause("report"));
    a.tick_through("09:02", "09:04", "1m", 1);
    a.note("09:02..09:04 passed while paused: the record carries them to B");
    let record = move_out(&mut a, "09:04:10", "report").expect("no run open: it moves");
    assert!(
        a.state.job("report", at("09:04:10")).is_none(),
        "gone from A"
    );
    assert_eq!(move_in(&mut b, "09:04:10", record), None);
    let view = b.state.job("report", at("09:04:10")).expect("in B");
    assert!(view.paused.is_some(), "still paused in B");
    b.command("09:04:20", "resume report", resume("report"));
    b.tick("09:04:30", 1);
    let started = starts(&b.last);
    assert_eq!(started.len(), 1, "B runs what passed in A: {started:?}");
    let covers = started[0].1.expect("an owed batch covers due times");
    assert_eq!((covers.from, covers.to), (at("09:02"), at("09:04")));
    a.tick("09:05", 1);
    assert!(starts(&a.last).is_empty(), "A runs nothing of it any more");
    insta::assert_snapshot!(format!(
        "-- state A\n{}\n-- state B\n{}",
        a.trace(),
        b.trace()
    ));
}

fn pause(job: &str) -> Event {
    Event::Pause {
        job: JobName::new(job).unwrap(),
        actor: Actor::new("ops"),
        note: "moving".into(),
    }
}

fn resume(job: &str) -> Event {
    Event::Resume {
        job: JobName::new(job).unwrap(),
        actor: Actor::new("ops"),
    }
}

#[test]
fn a_job_with_an_open_run_waits_for_the_run_before_it_moves() {
    let mut a = Story::new();
    a.define("09:00", queued("report"));
    a.start("09:00", 1);
    a.tick("09:01", 1);
    assert_eq!(
        move_out(&mut a, "09:01:10", "report"),
        Err(Refusal::InFlight { run: RunId(1) })
    );
    assert!(a.state.job("report", at("09:01:10")).is_some(), "it stays");
    a.finish("09:01:30", 1, Outcome::Ok);
    assert!(move_out(&mut a, "09:01:40", "report").is_ok());
}

#[test]
fn a_name_taken_or_a_definition_this_state_refuses_is_not_moved_in() {
    let (mut a, mut b) = (Story::new(), Story::new());
    a.define("09:00", queued("report"));
    b.define("09:00", queued("report"));
    let record = move_out(&mut a, "09:00:10", "report").unwrap();
    let refused = move_in(&mut b, "09:00:10", record.clone());
    assert_eq!(
        refused,
        Some(Refusal::NameTaken {
            job: JobName::new("report").unwrap()
        })
    );
    // A state ticking every two minutes takes no job due every minute.
    let mut slow = Story::with_config(Config::with_tick("2m".parse().unwrap()));
    assert!(matches!(
        move_in(&mut slow, "09:00:10", record.clone()),
        Some(Refusal::Invalid { .. })
    ));
    let mut c = Story::new();
    let mut renamed = record.def().clone();
    renamed.name = JobName::new("report_two").unwrap();
    assert_eq!(move_in(&mut c, "09:00:10", with_def(record, renamed)), None);
    assert!(c.state.job("report_two", at("09:00:10")).is_some());
}

/// The record with another definition, as a record that came over the wire could be.
fn with_def(record: JobRecord, def: duetime::JobDef) -> JobRecord {
    let mut value = serde_json::to_value(&record).unwrap();
    value["def"] = serde_json::to_value(&def).unwrap();
    serde_json::from_value(value).unwrap()
}

#[test]
fn the_handover_survives_the_wire_and_both_journals_name_the_move() {
    let (mut a, mut b) = (Story::new(), Story::new());
    a.define("09:00", queued("report"));
    let record = move_out(&mut a, "09:00:10", "report").unwrap();
    assert!(matches!(
        history_of(&a.last)[..],
        [History::MovedOut { .. }]
    ));
    let text = serde_json::to_string(&Effect::Handover(Box::new(record))).unwrap();
    let Effect::Handover(back) = serde_json::from_str(&text).unwrap() else {
        panic!("a handover reads back as one");
    };
    assert_eq!(move_in(&mut b, "09:00:10", *back), None);
    assert!(matches!(history_of(&b.last)[..], [History::MovedIn { .. }]));
    assert!(b.state.job("report", at("09:00:10")).is_some());
}

#[test]
fn a_record_whose_owed_counts_are_wrong_is_refused_and_changes_nothing() {
    let (mut a, mut b) = (Story::new(), Story::new());
    let mut def = queued("report");
    def.missed = MissedRule::Required;
    a.define("09:00", def);
    a.start("09:00", 1);
    a.command("09:00:30", "pause report", pause("report"));
    a.tick_through("09:01", "09:05", "1m", 1);
    a.command("09:05:10", "resume report", resume("report"));
    let record = move_out(&mut a, "09:05:20", "report").expect("no run open");
    assert!(
        record.owed() > 0,
        "the record owes what passed while paused"
    );
    // A record as bad input could carry it: an owed segment claiming one due time more
    // than its range holds.
    let mut value = serde_json::to_value(&record).unwrap();
    let segment = &mut value["activity"]["pending"][0];
    let count = segment["count"].as_u64().unwrap();
    segment["count"] = serde_json::json!(count + 1);
    let forged: JobRecord = serde_json::from_value(value).unwrap();
    let before = b.state.clone();
    let refused = move_in(&mut b, "09:05:20", forged);
    assert!(
        matches!(refused, Some(Refusal::NotMovable { .. })),
        "{refused:?}"
    );
    assert_eq!(b.state, before, "a refused move_in changes nothing");
}

/// Every numeric field of a handed-over record, nudged: `move_in` never panics (debug
/// builds check every invariant after each step), and a refused one changes nothing.
#[test]
fn move_in_of_a_nudged_record_never_breaks_the_state() {
    let mut a = Story::new();
    let mut def = queued("report");
    def.missed = MissedRule::Required;
    def.retries = 2;
    a.define("09:00", def);
    a.start("09:00", 1);
    a.tick("09:01", 1);
    a.finish("09:01:30", 1, Outcome::failed("exit 1"));
    a.command("09:01:40", "pause report", pause("report"));
    a.tick_through("09:02", "09:05", "1m", 1);
    let record = move_out(&mut a, "09:05:20", "report").expect("no run open");
    let value = serde_json::to_value(&record).unwrap();
    let mut paths = Vec::new();
    numbers(&value, &mut Vec::new(), &mut paths);
    assert!(paths.len() > 5, "the record has numbers to nudge: {value}");
    let mut tried = 0;
    for path in &paths {
        for nudge in [-60_000i64, -1, 1, 60_000] {
            let mut v = value.clone();
            let leaf = path.iter().fold(&mut v, |v, step| match step {
                Step::Key(key) => &mut v[key.as_str()],
                Step::Index(i) => &mut v[*i],
            });
            let Some(n) = leaf.as_i64() else { continue };
            *leaf = serde_json::json!(n.saturating_add(nudge));
            let Ok(nudged) = serde_json::from_value::<JobRecord>(v) else {
                continue;
            };
            let mut b = Story::new();
            let before = b.state.clone();
            let refused = move_in(&mut b, "09:05:20", nudged);
            if refused.is_some() {
                assert_eq!(b.state, before, "{path:?} {nudge:+}: refused, yet changed");
            }
            b.tick("09:06", 1);
            tried += 1;
        }
    }
    assert!(tried > 10, "only {tried} nudged records read back");
}

/// One step into a JSON value.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// The paths of the numbers in `v`.
fn numbers(v: &serde_json::Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        serde_json::Value::Number(_) => out.push(at.clone()),
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                at.push(Step::Key(k.clone()));
                numbers(child, at, out);
                at.pop();
            }
        }
        serde_json::Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(Step::Index(i));
                numbers(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// A chain moves upstreams first, each job out of A and into B (as the hosts move it,
/// `duetime_loop::relocate_chain`): extract → load → report, every minute. load's 09:01
/// failed and waits for its retry when extract's 09:02 fails out: load has heard it, but
/// its 09:02 waits behind the retry. Moved in ahead of report, load must decide nothing
/// on arrival: report, still to come, would never hear it, and would skip its 09:02 as
/// `unheard` later. It decides once its retry has settled in B, with report there, which
/// skips its 09:02 for load's own fate.
#[test]
fn a_job_moved_in_ahead_of_its_downstream_decides_nothing_on_arrival() {
    let (mut a, mut b) = (Story::new(), Story::new());
    a.show_history = true;
    b.show_history = true;
    let mut extract = queued("extract");
    extract.retries = 0;
    let mut load = queued("load");
    load.after = vec![JobName::new("extract").unwrap()];
    load.retries = 1;
    load.backoff = duetime::Backoff {
        initial: "1m".parse().unwrap(),
        max: "1m".parse().unwrap(),
    };
    let mut report = queued("report");
    report.after = vec![JobName::new("load").unwrap()];
    for def in [extract, load, report] {
        a.define("09:00", def);
    }
    a.start("09:00", 1);
    b.start("09:00", 1);
    a.tick("09:01", 1);
    a.finish("09:01:10", 1, Outcome::Ok);
    a.finish("09:01:20", 2, Outcome::failed("exit 1"));
    a.tick("09:02", 1);
    a.finish("09:02:05", 3, Outcome::failed("exit 1"));
    a.note("extract's 09:02 failed out; load heard it, its 09:02 behind its retry of 09:01");
    for job in ["extract", "load", "report"] {
        let record = move_out(&mut a, "09:02:10", job).expect("no run open");
        assert_eq!(move_in(&mut b, "09:02:10", record), None);
        let decided = b
            .last
            .iter()
            .any(|e| matches!(e, Effect::Journal(r) if matches!(r.entry, Entry::Ledger(_))));
        assert!(!decided, "{job} decided on arrival:\n{}", b.trace());
    }
    // Every run B starts ends ok at once, until report has settled its 09:02.
    let mut told = Vec::new();
    b.tick("09:02:20", 1);
    let mut open: Vec<RunId> = Vec::new();
    loop {
        told.extend(history_of(&b.last));
        open.extend(starts(&b.last).into_iter().map(|(run, _)| run));
        let Some(run) = open.pop() else { break };
        b.finish("09:02:30", run.0, Outcome::Ok);
    }
    let fates: Vec<(String, duetime::UpstreamFate)> = told
        .into_iter()
        .filter_map(|h| match h {
            History::UpstreamNotOk { upstream, fate } => Some((upstream.to_string(), fate)),
            _ => None,
        })
        .collect();
    let failed_out = duetime::UpstreamFate::FailedOut;
    let skipped = duetime::UpstreamFate::Skipped {
        cause: duetime::MissCause::Upstream,
    };
    assert_eq!(
        fates,
        [("extract".into(), failed_out), ("load".into(), skipped)],
        "load skips its 09:02 for extract's fate, report for load's\n{}",
        b.trace()
    );
    insta::assert_snapshot!(format!(
        "-- state A\n{}\n-- state B\n{}",
        a.trace(),
        b.trace()
    ));
}
