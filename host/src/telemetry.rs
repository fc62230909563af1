//! What only this process knows, counted as it happens and shown by `GET /metrics`: store
//! transactions (how long, and why they failed), alerts told to it by the core, and their
//! deliveries. Unlike the journal-derived metrics these start from zero with each
//! incarnation (Prometheus's `rate` and `increase` expect counters that reset that way).
//!
//! Shared between the daemon's loop, the alert delivery thread and the HTTP thread: a
//! mutex held only for a counter's increment or a copy, so no thread waits on another's I/O.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use duetime::ProcessId;

use crate::http::expo::Histogram;

/// Bounds of the store transaction histogram, in seconds: SQLite commits with
/// `synchronous = FULL` take milliseconds, PostgreSQL over a network tens of them.
pub const TRANSACTION_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Where an alert was carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    Command,
    Webhook,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Command => "command",
            Target::Webhook => "webhook",
        }
    }
}

/// How one delivery (after its retries) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Delivery {
    /// Delivered (the command exited 0, the webhook answered 2xx).
    Ok,
    /// One attempt failed (it may be retried).
    Failed,
    /// Every attempt failed: given up.
    GaveUp,
    /// The delivery queue was full: never tried.
    Dropped,
}

impl Delivery {
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Ok => "ok",
            Delivery::Failed => "failed",
            Delivery::GaveUp => "gave_up",
            Delivery::Dropped => "dropped",
        }
    }
}

/// The counters themselves (a copy is what a scrape reads).
#[derive(Debug, Clone)]
pub struct Counters {
    pub process: Option<ProcessId>,
    pub transactions: Histogram,
    /// Failed transactions by the store error's kind (`locked`, `unreachable`, ...).
    pub transaction_failures: BTreeMap<&'static str, u64>,
    /// Events the daemon's loop stepped in committed transactions (start-up, ticks,
    /// reports, drain): over the transactions' count, how many events one commit (one
    /// fsync) carried (group commit).
    pub events_committed: u64,
    /// Alerts the core told this process, by job and incident kind.
    pub alerts_told: BTreeMap<(String, String), u64>,
    /// Delivery attempts by job, target and how they ended.
    pub deliveries: BTreeMap<(String, Target, Delivery), u64>,
    /// When the daemon last ended a turn without a store error (`GET /healthz`).
    pub last_turn: Option<std::time::Instant>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            process: None,
            transactions: Histogram::new(TRANSACTION_BOUNDS),
            transaction_failures: BTreeMap::new(),
            events_committed: 0,
            alerts_told: BTreeMap::new(),
            deliveries: BTreeMap::new(),
            last_turn: None,
        }
    }
}

/// A handle on this process's counters; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Telemetry(Arc<Mutex<Counters>>);

impl Telemetry {
    /// A poisoned lock (a panic elsewhere while counting) still counts: metrics never stop
    /// a host.
    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_process(&self, process: ProcessId) {
        self.lock().process = Some(process);
    }

    pub fn transaction(&self, took: std::time::Duration, failure: Option<&'static str>) {
        let mut c = self.lock();
        c.transactions.observe(took.as_secs_f64());
        if let Some(kind) = failure {
            *c.transaction_failures.entry(kind).or_default() += 1;
        }
    }

    /// `n` events committed in one transaction.
    pub fn events_committed(&self, n: u64) {
        self.lock().events_committed += n;
    }

    pub fn alert_told(&self, job: &str, kind: &str) {
        *self
            .lock()
            .alerts_told
            .entry((job.to_string(), kind.to_string()))
            .or_default() += 1;
    }

    pub fn delivery(&self, job: &str, target: Target, how: Delivery) {
        *self
            .lock()
            .deliveries
            .entry((job.to_string(), target, how))
            .or_default() += 1;
    }

    /// The daemon ended a turn with the store reachable.
    pub fn turned(&self) {
        self.lock().last_turn = Some(std::time::Instant::now());
    }

    pub fn snapshot(&self) -> Counters {
        self.lock().clone()
    }
}
