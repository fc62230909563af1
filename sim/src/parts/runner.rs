//! Running partition worlds over a range of seeds on several threads, and their summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::{run_parts, PartsOptions, PartsReport};

/// What a range of partition worlds found.
#[derive(Debug, Default)]
pub struct PartsSummary {
    pub seeds: u64,
    pub events: u64,
    /// Seeds by partition count.
    pub by_count: BTreeMap<u32, u64>,
    pub probes: BTreeMap<&'static str, u64>,
    /// The failing seeds, in seed order.
    pub failures: Vec<PartsReport>,
    pub cpu_seconds: f64,
}

/// Runs the partition worlds of `seeds` on `threads` threads.
pub fn run_range(seeds: std::ops::Range<u64>, threads: usize, opts: PartsOptions) -> PartsSummary {
    let next = AtomicU64::new(seeds.start);
    let summary = Mutex::new(PartsSummary::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= seeds.end {
                    break;
                }
                let began = std::time::Instant::now();
                let report = run_parts(seed, opts);
                let took = began.elapsed().as_secs_f64();
                let mut sum = summary.lock().unwrap_or_else(|e| e.into_inner());
                sum.add(report, took);
            });
        }
    });
    let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.failures.sort_by_key(|r| r.seed);
    summary
}

impl PartsSummary {
    fn add(&mut self, report: PartsReport, took: f64) {
        self.seeds += 1;
        self.events += report.events;
        self.cpu_seconds += took;
        *self.by_count.entry(report.partitions).or_default() += 1;
        for (&k, &n) in &report.probes {
            *self.probes.entry(k).or_default() += n;
        }
        if !report.violations.is_empty() {
            self.failures.push(report);
        }
    }

    /// The summary as printed: counts, probes, then each failing seed's first violations
    /// and the command that replays it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let per_cpu = self.seeds as f64 / self.cpu_seconds.max(1e-9);
        let _ = writeln!(
            out,
            "partition worlds: {} seeds, {} failed, {} events, {per_cpu:.1} seeds per CPU second",
            self.seeds,
            self.failures.len(),
            self.events
        );
        let counts: Vec<String> = self
            .by_count
            .iter()
            .map(|(p, n)| format!("{p}: {n}"))
            .collect();
        let _ = writeln!(out, "  partitions (count: seeds): {}", counts.join(", "));
        for (probe, n) in &self.probes {
            let _ = writeln!(out, "  {probe}: {n}");
        }
        for r in self.failures.iter().take(10) {
            let _ = writeln!(out, "FAILED seed {} ({} partitions):", r.seed, r.partitions);
            for v in r.violations.iter().take(3) {
                let _ = writeln!(out, "  {v}");
            }
            let _ = writeln!(
                out,
                "  replay: duetime-sim --partition-worlds --seed {}",
                r.seed
            );
        }
        out
    }
}
