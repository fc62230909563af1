//! A daemon slower than its tick degrades by starting late, never by losing its own runs:
//! three daemons on one PostgreSQL store, 90 jobs due every second, `--tick 1s`, for a
//! minute on a machine that cannot keep up (each run is a supervisor and a command). No
//! daemon crashes, stalls past a lease or loses its store, so no run may be recorded lost,
//! no job paused by the system and no due time recorded missed as `down`; and the
//! simulator's checker holds the journal to its promises (every due time in the ledger
//! exactly once, none of these jobs, none safe to repeat, started twice). On the code
//! before the lease's floor and the renewal before a turn's reports, the first minute lost
//! 76 runs and paused 76 jobs.
//!
//! Longer with `DUETIME_OVERLOAD_SECS`:
//!
//!     scripts/pg start
//!     DUETIME_TEST_POSTGRES=$(scripts/pg url) DUETIME_OVERLOAD_SECS=300 \
//!         cargo test --release -p duetime-host --test overload -- --nocapture

#[path = "support/pg.rs"]
mod pg;
#[path = "support/world.rs"]
mod world;

use std::fmt::Write as _;
use std::thread::sleep;
use std::time::Duration;

use duetime::{Entry, History, LedgerKind};
use world::{check_journal, drain_all, now_ms, paused_by_system, World};

/// Jobs due every second, each a real command.
const JOBS: usize = 90;

fn jobs_file() -> String {
    let mut text = String::new();
    for i in 0..JOBS {
        writeln!(
            text,
            "[[job]]\nname = \"load{i:02}\"\nevery = \"1s\"\ncommand = [\"true\"]\n"
        )
        .unwrap();
    }
    text
}

#[test]
fn three_daemons_slower_than_their_tick_start_late_and_lose_nothing() {
    let Some(url) = pg::fresh("overload") else {
        return;
    };
    let secs: u64 = std::env::var("DUETIME_OVERLOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
        .max(10);
    let w = World::on(&url, &jobs_file());
    let node = |i: usize| (format!("node{i}.log"), format!("node{i}.runs"));
    // The checker reads every run's result from its directory, so none may be pruned: a
    // job runs at most once a second, and group commit lets the daemons keep that pace (50
    // kept, as before it, pruned the first results of a minute's 59 runs a job).
    let keep = (secs * 2 + 100).to_string();
    let mut daemons: Vec<_> = (0..3)
        .map(|i| {
            let (log, runs) = node(i);
            w.daemon_with(&log, Some(&runs), &["--tick", "1s", "--keep-runs", &keep])
        })
        .collect();
    sleep(Duration::from_secs(secs));
    let end = now_ms();
    drain_all(&w, &mut daemons, |i| node(i).0, Duration::from_secs(120));

    let journal = w.journal();
    let lost: Vec<String> = journal
        .iter()
        .filter(|r| matches!(r.entry, Entry::History(History::Lost { .. })))
        .map(|r| r.to_string())
        .collect();
    let paused: Vec<String> = journal
        .iter()
        .filter(|r| paused_by_system(r))
        .map(|r| r.to_string())
        .collect();
    let count = |pick: &dyn Fn(&LedgerKind) -> bool| -> u64 {
        journal
            .iter()
            .filter_map(|r| match &r.entry {
                Entry::Ledger(l) if pick(&l.kind) => Some(l.count),
                _ => None,
            })
            .sum()
    };
    let ran = count(&|k| matches!(k, LedgerKind::Ran { .. }));
    let missed = count(&|k| matches!(k, LedgerKind::Missed { .. }));
    let mut causes = std::collections::BTreeMap::new();
    for r in &journal {
        if let Entry::Ledger(l) = &r.entry {
            if let LedgerKind::Missed { cause, .. } = l.kind {
                *causes.entry(format!("{cause:?}")).or_insert(0u64) += l.count;
            }
        }
    }
    eprintln!("overload: missed by cause: {causes:?}");
    eprintln!(
        "overload: {secs} s, {} journal lines, {ran} due times ran, {missed} missed, {} lost, {} paused by the system",
        journal.len(),
        lost.len(),
        paused.len()
    );
    assert!(
        lost.is_empty(),
        "runs of live daemons recorded lost: {lost:#?}"
    );
    assert!(paused.is_empty(), "jobs paused by the system: {paused:#?}");
    // Late, a run still going when the next is due (`overlap`), but never an outage that
    // did not happen: a turn slower than the tick stays within the grace.
    assert!(
        !causes.contains_key("Down"),
        "due times recorded missed as down though no daemon went down: {causes:?}"
    );
    // The machine cannot keep up, but the daemons do work: well over one run a second.
    assert!(ran >= secs * 3, "only {ran} due times ran in {secs} s");
    let violations = check_journal(&w, end);
    assert!(violations.is_empty(), "{violations:#?}");
}
