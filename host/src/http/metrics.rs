//! `GET /metrics`: every series, per job (label `job`; never a run id or another label of
//! unbounded values), in the Prometheus text format. Three sources, named in each help
//! line and in docs/operate.md: the journal (`tally.rs`: counters that survive restarts),
//! the state (gauges read at the scrape), and this process (`telemetry.rs`: counters that
//! start from zero with each incarnation).

use std::collections::BTreeMap;

use duetime::{State, Timestamp, Trigger};

use super::expo::{Expo, Kind};
use super::tally::{self, JobTally, Tally};
use crate::store::parts::PartitionHealth;
use crate::telemetry::Counters;
use crate::views::Row;

/// Seconds since the epoch, as Prometheus timestamps in values are written.
fn secs(t: Timestamp) -> f64 {
    t.as_millis() as f64 / 1000.0
}

/// What a scrape reads from the store beside the journal's tally: every partition's jobs
/// (merged, `views::all_rows`) and each partition's row and health.
pub struct Scrape<'a> {
    pub rows: &'a [Row],
    pub parts: &'a [PartitionHealth],
}

/// The whole scrape. `state` is partition 0's: the owner lease and the processes are its
/// (the daemon steps partition 0 only until the multi-partition daemon of issue 43).
pub fn render(
    tally: &Tally,
    state: &State,
    scrape: &Scrape<'_>,
    me: &Counters,
    now: Timestamp,
) -> String {
    let rows = scrape.rows;
    let mut e = Expo::default();
    journal_series(&mut e, tally, rows);
    journal_histograms(&mut e, tally, rows);
    state_series(&mut e, rows);
    owner_series(&mut e, state, now);
    partition_series(&mut e, scrape.parts, now);
    process_series(&mut e, state, me, now);
    e.into_string()
}

/// Each partition: its jobs, its version, whether its state is refused, and its owner,
/// epoch and lease (the owner and lease only when set), and how far it is behind.
fn partition_series(e: &mut Expo, parts: &[PartitionHealth], now: Timestamp) {
    let families: [(&str, &str); 7] = [
        ("duetime_partition_jobs", "Jobs in the partition. From the store."),
        ("duetime_partition_version", "Transactions committed on the partition. From the store."),
        ("duetime_partition_refused", "1 while the partition's state cannot be loaded (it does not parse, or the core refuses it); the other partitions are served. From the store."),
        ("duetime_partition_epoch", "The partition's ownership epoch (0 until partition ownership, issue 43). From the store."),
        ("duetime_partition_owner", "The process id owning the partition (absent while none does). From the store."),
        ("duetime_partition_lease_expiry_timestamp_seconds", "When the partition's owner lease lapses unless renewed (absent while none is held). From the store."),
        ("duetime_partition_lag_seconds", "How long the oldest due time the partition's jobs wait on (not started, not settled, not paused) has been past; 0 when none is. Up to a tick while the partition is stepped; grows while nobody steps it. From the store."),
    ];
    for (name, help) in families {
        e.family(name, Kind::Gauge, help);
    }
    for h in parts {
        let p = h.row.partition.to_string();
        let labels = [("partition", p.as_str())];
        e.sample("duetime_partition_jobs", &labels, h.row.jobs as f64);
        e.sample("duetime_partition_version", &labels, h.row.version as f64);
        let refused = f64::from(u8::from(h.refused.is_some()));
        e.sample("duetime_partition_refused", &labels, refused);
        e.sample("duetime_partition_epoch", &labels, h.row.epoch as f64);
        if let Some(owner) = h.row.owner {
            e.sample("duetime_partition_owner", &labels, owner as f64);
        }
        if let Some(until) = h.row.lease_until {
            let name = "duetime_partition_lease_expiry_timestamp_seconds";
            e.sample(name, &labels, secs(until));
        }
        let lag = h.lag(now).as_millis() as f64 / 1000.0;
        e.sample("duetime_partition_lag_seconds", &labels, lag);
    }
}

/// The jobs the state has now, in name order (a removed job's series end with it).
fn names(rows: &[Row]) -> Vec<&str> {
    let mut names: Vec<&str> = rows.iter().map(|r| r.view.name.as_str()).collect();
    names.sort_unstable();
    names
}

/// The journal's counters, per job of the state, every label value of their closed enums
/// present from the start at 0: a series that first appears at 1 has no earlier sample,
/// so `increase()` over it reads 0 and an alert on a job's first missed due time would
/// never fire.
fn journal_series(e: &mut Expo, tally: &Tally, rows: &[Row]) {
    let none = JobTally::default();
    let jobs: Vec<(&str, &JobTally)> = names(rows)
        .into_iter()
        .map(|n| (n, tally.jobs.get(n).unwrap_or(&none)))
        .collect();
    e.family(
        "duetime_due_times_total",
        Kind::Counter,
        "Due times by their fate in the ledger (ran, skipped, caught_up, failed_out, lost, approval_expired) and the missed rule's cause (none unless skipped or caught_up). From the journal.",
    );
    for (job, t) in &jobs {
        for ((fate, cause), n) in with_zeros(&t.due, &tally::fate_labels()) {
            let labels = [("job", *job), ("fate", fate), ("cause", cause)];
            e.sample("duetime_due_times_total", &labels, n as f64);
        }
    }
    e.family(
        "duetime_runs_started_total",
        Kind::Counter,
        "Runs started, by trigger. From the journal.",
    );
    let triggers: Vec<&'static str> = Trigger::ALL.iter().map(|t| t.name()).collect();
    for (job, t) in &jobs {
        for (trigger, n) in with_zeros(&t.started, &triggers) {
            let labels = [("job", *job), ("trigger", trigger)];
            e.sample("duetime_runs_started_total", &labels, n as f64);
        }
    }
    e.family("duetime_runs_finished_total", Kind::Counter, "Runs settled, by outcome (ok, skipped, failed, timed_out, awaiting_approval), and runs recorded lost. From the journal.");
    for (job, t) in &jobs {
        let finished: BTreeMap<&str, u64> =
            t.finished.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        for (outcome, n) in with_zeros(&finished, tally::OUTCOMES) {
            let labels = [("job", *job), ("outcome", outcome)];
            e.sample("duetime_runs_finished_total", &labels, n as f64);
        }
    }
}

/// `counts` with every one of `keys` it lacks at 0, in key order.
fn with_zeros<K: Ord + Copy>(counts: &BTreeMap<K, u64>, keys: &[K]) -> BTreeMap<K, u64> {
    let mut all: BTreeMap<K, u64> = keys.iter().map(|&k| (k, 0)).collect();
    all.extend(counts.iter().map(|(&k, &n)| (k, n)));
    all
}

/// The journal's histograms and its last success, per job.
fn journal_histograms(e: &mut Expo, tally: &Tally, rows: &[Row]) {
    let jobs: Vec<_> = names(rows)
        .into_iter()
        .filter_map(|n| tally.jobs.get(n).map(|t| (n, t)))
        .collect();
    e.family("duetime_start_lateness_seconds", Kind::Histogram, "A run's first start minus the newest due time it covers (manual runs and retries left out). From the journal.");
    for (job, t) in &jobs {
        e.histogram(
            "duetime_start_lateness_seconds",
            &[("job", job)],
            &t.lateness,
        );
    }
    e.family(
        "duetime_run_duration_seconds",
        Kind::Histogram,
        "From a run's start to its settlement. From the journal.",
    );
    for (job, t) in &jobs {
        e.histogram("duetime_run_duration_seconds", &[("job", job)], &t.duration);
    }
    e.family(
        "duetime_alerts_held_total",
        Kind::Counter,
        "Alerts the job's alert_throttle held back, by incident kind. From the journal.",
    );
    for (job, t) in &jobs {
        for (kind, n) in &t.alerts_held {
            e.sample(
                "duetime_alerts_held_total",
                &[("job", job), ("kind", kind)],
                *n as f64,
            );
        }
    }
    e.family(
        "duetime_last_success_timestamp_seconds",
        Kind::Gauge,
        "When a run of the job last settled ok (or was approved). From the journal.",
    );
    for (job, t) in &jobs {
        if let Some(at) = t.last_success {
            e.sample(
                "duetime_last_success_timestamp_seconds",
                &[("job", job)],
                secs(at),
            );
        }
    }
}

/// The state's gauges, per job and in all.
fn state_series(e: &mut Expo, rows: &[Row]) {
    let mut rows: Vec<&Row> = rows.iter().collect();
    rows.sort_by(|a, b| a.view.name.as_str().cmp(b.view.name.as_str()));
    e.family(
        "duetime_jobs",
        Kind::Gauge,
        "Jobs in the store. From the state.",
    );
    e.sample("duetime_jobs", &[], rows.len() as f64);
    e.family(
        "duetime_job_status",
        Kind::Gauge,
        "1 for the status the job shows now (as duetime list shows it). From the state.",
    );
    for r in &rows {
        e.sample(
            "duetime_job_status",
            &[("job", r.view.name.as_str()), ("status", r.shown.name())],
            1.0,
        );
    }
    e.family(
        "duetime_next_due_timestamp_seconds",
        Kind::Gauge,
        "The job's next due time that will run (none while paused or unconfirmed). From the state.",
    );
    for r in &rows {
        if let Some(t) = r.next() {
            e.sample(
                "duetime_next_due_timestamp_seconds",
                &[("job", r.view.name.as_str())],
                secs(t),
            );
        }
    }
    let gauge = |e: &mut Expo, name: &str, help: &str, value: &dyn Fn(&Row) -> f64| {
        e.family(name, Kind::Gauge, help);
        for r in &rows {
            e.sample(name, &[("job", r.view.name.as_str())], value(r));
        }
    };
    gauge(
        e,
        "duetime_job_open_runs",
        "Runs of the job open now (started, not settled). From the state.",
        &|r| f64::from(u8::from(r.view.running.is_some())),
    );
    gauge(
        e,
        "duetime_job_owed_due_times",
        "Due times owed: found late and still to be run under the missed rule. From the state.",
        &|r| r.view.owed as f64,
    );
    gauge(
        e,
        "duetime_job_paused",
        "1 when the job is paused (by a person or the system). From the state.",
        &|r| f64::from(u8::from(r.view.paused.is_some())),
    );
    e.family(
        "duetime_jobs_paused",
        Kind::Gauge,
        "Paused jobs. From the state.",
    );
    e.sample(
        "duetime_jobs_paused",
        &[],
        rows.iter().filter(|r| r.view.paused.is_some()).count() as f64,
    );
}

/// The owner lease of `single_owner`.
fn owner_series(e: &mut Expo, state: &State, now: Timestamp) {
    e.family(
        "duetime_owner_fence",
        Kind::Gauge,
        "single_owner: the owner lease's fence (absent while nobody holds it). From the state.",
    );
    e.family(
        "duetime_owner_process",
        Kind::Gauge,
        "single_owner: the process id holding the owner lease (3 for p3). From the state.",
    );
    e.family(
        "duetime_owner_lease_expiry_timestamp_seconds",
        Kind::Gauge,
        "single_owner: when the owner lease lapses unless renewed. From the state.",
    );
    if let Some(o) = state.owner(now) {
        e.sample("duetime_owner_fence", &[], o.fence.0 as f64);
        e.sample("duetime_owner_process", &[], o.holder.0 as f64);
        e.sample(
            "duetime_owner_lease_expiry_timestamp_seconds",
            &[],
            secs(o.until),
        );
    }
}

fn process_series(e: &mut Expo, state: &State, me: &Counters, now: Timestamp) {
    e.family(
        "duetime_build_info",
        Kind::Gauge,
        "1, labelled with this binary's version and the commit it was built from. Per process.",
    );
    let build = [
        ("version", env!("CARGO_PKG_VERSION")),
        ("commit", env!("DUETIME_COMMIT")),
    ];
    e.sample("duetime_build_info", &build, 1.0);
    e.family(
        "duetime_process",
        Kind::Gauge,
        "This daemon's process id (3 for p3). Per process.",
    );
    e.family(
        "duetime_process_is_owner",
        Kind::Gauge,
        "1 when this process holds the owner lease (single_owner). Per process.",
    );
    if let Some(p) = me.process {
        e.sample("duetime_process", &[], p.0 as f64);
        let owner = state.owner(now).is_some_and(|o| o.holder == p);
        e.sample("duetime_process_is_owner", &[], f64::from(u8::from(owner)));
    }
    e.family(
        "duetime_store_transaction_duration_seconds",
        Kind::Histogram,
        "This process's store transactions, committed or not. Per process.",
    );
    e.histogram(
        "duetime_store_transaction_duration_seconds",
        &[],
        &me.transactions,
    );
    e.family(
        "duetime_store_transaction_failures_total",
        Kind::Counter,
        "This process's failed store transactions, by the store error's kind. Per process.",
    );
    for (kind, n) in &me.transaction_failures {
        e.sample(
            "duetime_store_transaction_failures_total",
            &[("kind", kind)],
            *n as f64,
        );
    }
    e.family(
        "duetime_store_events_committed_total",
        Kind::Counter,
        "Events this daemon's loop stepped in committed transactions (start-up, ticks, reports, drain; a batch carries several). Per process.",
    );
    e.sample(
        "duetime_store_events_committed_total",
        &[],
        me.events_committed as f64,
    );
    e.family(
        "duetime_alerts_told_total",
        Kind::Counter,
        "Alerts the core told this process to carry to a person, by incident kind. Per process.",
    );
    for ((job, kind), n) in &me.alerts_told {
        e.sample(
            "duetime_alerts_told_total",
            &[("job", job), ("kind", kind)],
            *n as f64,
        );
    }
    e.family("duetime_alert_deliveries_total", Kind::Counter, "Alert delivery attempts by target (command, webhook) and result (ok, failed, gave_up, dropped). Per process.");
    for ((job, target, how), n) in &me.deliveries {
        e.sample(
            "duetime_alert_deliveries_total",
            &[
                ("job", job),
                ("target", target.name()),
                ("result", how.name()),
            ],
            *n as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{Actor, Event, Now};

    /// Issue 42: a job no event has touched yet already has every fate, trigger and outcome
    /// series, at 0, so the documented `increase(...) > 0` alert sees its first miss.
    #[test]
    fn every_counter_series_is_there_at_zero_before_any_event() {
        let text = "[[job]]\nname = \"nightly\"\ncron = \"0 3 * * *\"\ncommand = [\"true\"]\n";
        let job = crate::jobs_file::parse_str(text, "jobs.toml").unwrap().jobs[0].clone();
        let mut state = State::default();
        let now = Now::new(Timestamp::from_millis(1_000), Timestamp::from_millis(0));
        let upsert = Event::Upsert {
            def: Box::new(job.def),
            actor: Actor::new("test"),
        };
        state.step(now, upsert, &mut Vec::new());
        let rows = crate::views::rows(&state, now.wall);
        let scrape = Scrape {
            rows: &rows,
            parts: &[],
        };
        let out = render(
            &Tally::default(),
            &state,
            &scrape,
            &Counters::default(),
            now.wall,
        );
        for line in [
            r#"duetime_due_times_total{job="nightly",fate="skipped",cause="down"} 0"#,
            r#"duetime_due_times_total{job="nightly",fate="failed_out",cause="none"} 0"#,
            r#"duetime_due_times_total{job="nightly",fate="lost",cause="none"} 0"#,
            r#"duetime_runs_started_total{job="nightly",trigger="schedule"} 0"#,
            r#"duetime_runs_finished_total{job="nightly",outcome="failed"} 0"#,
            r#"duetime_runs_finished_total{job="nightly",outcome="lost"} 0"#,
            concat!(
                r#"duetime_build_info{version=""#,
                env!("CARGO_PKG_VERSION"),
                r#"",commit=""#,
                env!("DUETIME_COMMIT"),
                r#""} 1"#
            ),
        ] {
            assert!(out.lines().any(|l| l == line), "no `{line}` in:\n{out}");
        }
    }

    /// Each partition's row is a labelled series, a refused one marked 1 beside the
    /// others, the owner and lease only once a partition has them, and its lag: how long
    /// its oldest waiting due time has been past (0 for one that waits on nothing).
    #[test]
    fn each_partition_shows_its_jobs_version_refusal_and_owner_when_set() {
        use crate::store::PartitionRow;
        use duetime_loop::Partition;
        let row = |n: u32, jobs: u64, owner: Option<i64>| PartitionRow {
            partition: Partition(n),
            version: 10 + i64::from(n),
            jobs,
            owner,
            epoch: i64::from(n),
            lease_until: owner.map(|_| Timestamp::from_millis(5_000)),
        };
        let parts = [
            PartitionHealth {
                row: row(0, 3, None),
                refused: None,
                oldest_waiting: Some(Timestamp::from_millis(-1_500)),
            },
            PartitionHealth {
                row: row(1, 2, Some(7)),
                refused: Some("globals: expected value".to_string()),
                oldest_waiting: None,
            },
        ];
        let state = State::default();
        let scrape = Scrape {
            rows: &[],
            parts: &parts,
        };
        let out = render(
            &Tally::default(),
            &state,
            &scrape,
            &Counters::default(),
            Timestamp::from_millis(1_000),
        );
        for line in [
            r#"duetime_partition_jobs{partition="p0"} 3"#,
            r#"duetime_partition_jobs{partition="p1"} 2"#,
            r#"duetime_partition_version{partition="p1"} 11"#,
            r#"duetime_partition_refused{partition="p0"} 0"#,
            r#"duetime_partition_refused{partition="p1"} 1"#,
            r#"duetime_partition_epoch{partition="p1"} 1"#,
            r#"duetime_partition_owner{partition="p1"} 7"#,
            r#"duetime_partition_lease_expiry_timestamp_seconds{partition="p1"} 5"#,
            r#"duetime_partition_lag_seconds{partition="p0"} 2.5"#,
            r#"duetime_partition_lag_seconds{partition="p1"} 0"#,
        ] {
            assert!(out.lines().any(|l| l == line), "no `{line}` in:\n{out}");
        }
        assert!(
            !out.contains(r#"duetime_partition_owner{partition="p0"}"#),
            "{out}"
        );
    }
}
