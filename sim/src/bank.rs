//! Campaigns across machines: a range of seeds cut into shards (`duetime-sim --shard K/N`),
//! each shard's failures kept as small JSON files in a failure bank (`--bank DIR`), and the
//! banks of every shard merged into one summary (`duetime-sim --merge-bank DIR...`).
//!
//! A bank directory holds two kinds of file, both written by `duetime-sim --bank DIR`:
//!
//! - `run-A-B.json`: one per run, the seeds `A..B` it ran (a shard's block) and its counts,
//!   so a merge can tell which seeds were covered and name the ones no bank accounts for;
//! - `fail-seed-N.json`: one per failing (or nondeterministic) seed: its fault mode, verdict,
//!   first broken invariant, the first violation and the command that replays it.
//!
//! Other files (a `--save-regression` file kept in the same directory) are left alone.

use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::Totals;
use crate::{SeedReport, Verdict};

/// Shard `k` of `n` (1-based: `1..=n`) of `seeds`: the contiguous block of indices
/// `floor((k-1)·L/n) .. floor(k·L/n)` of a range of `L` seeds. The `n` blocks are in
/// order, cover the range exactly, never overlap, and differ in size by at most one; a
/// shard of a range shorter than `n` may be empty. `None` when `k` is not in `1..=n`.
pub fn shard(seeds: &Range<u64>, k: u64, n: u64) -> Option<Range<u64>> {
    if n == 0 || k == 0 || k > n {
        return None;
    }
    let len = u128::from(seeds.end.saturating_sub(seeds.start));
    let at = |i: u64| seeds.start + (len * u128::from(i) / u128::from(n)) as u64;
    Some(at(k - 1)..at(k))
}

/// `--shard K/N`: `K` from 1 to `N`, `N` from 1 to 1,000,000.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || {
        format!(
            "--shard: `{text}`; accepted: K/N with N from 1 to 1000000 and K from 1 to N (1-based)"
        )
    };
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || n > 1_000_000 || k == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// One failing seed, as a bank keeps it (`fail-seed-N.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub seed: u64,
    /// The fault mode asked for (`swarm`, the default, draws each seed's own rates).
    pub mode: String,
    /// `safety`, `liveness`, `crash`, `stuck` or `nondeterministic`.
    pub verdict: String,
    /// The first broken invariant (a forbidden act before a missing one), `crash`, `stuck`
    /// or `determinism`.
    pub invariant: String,
    /// The first violation (or the panic, or why the world was stuck), in words.
    pub first_violation: String,
    /// The world the seed drew.
    pub world: String,
    /// The command that replays the seed on one machine.
    pub replay: String,
    /// The seed's exit code: 1 safety (and nondeterminism), 2 liveness, 3 crash, 4 stuck.
    pub exit_code: i32,
}

/// One run of a range of seeds, as a bank keeps it (`run-A-B.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The seeds run: `from..to`, `to` excluded.
    pub from: u64,
    pub to: u64,
    /// `K/N` when the run was a shard of a larger range (`--shard`), with that range.
    pub shard: Option<String>,
    pub of: Option<(u64, u64)>,
    pub mode: String,
    pub seeds: u64,
    pub events: u64,
    pub failed: u64,
    pub exit_code: i32,
}

impl Failure {
    /// A failing seed's record; `None` for a seed that held.
    pub fn of(r: &SeedReport, mode: &str, replay: String) -> Option<Failure> {
        let (verdict, invariant, first) = match &r.verdict {
            Verdict::Held => return None,
            Verdict::Crash(msg) => ("crash", "crash".to_string(), msg.clone()),
            Verdict::Stuck(msg) => ("stuck", "stuck".to_string(), msg.clone()),
            Verdict::Safety | Verdict::Liveness => {
                let v = r
                    .violations
                    .iter()
                    .find(|v| !v.is_liveness())
                    .or(r.violations.first());
                let verdict = if r.verdict == Verdict::Safety {
                    "safety"
                } else {
                    "liveness"
                };
                match v {
                    Some(v) => (verdict, v.invariant.to_string(), v.to_string()),
                    None => (verdict, String::new(), String::new()),
                }
            }
        };
        Some(Failure {
            seed: r.seed,
            mode: mode.to_string(),
            verdict: verdict.to_string(),
            invariant,
            first_violation: first,
            world: r.config.clone(),
            replay,
            exit_code: r.verdict.exit_code(),
        })
    }

    /// How bad the verdict is, for keeping one record of a seed two banks disagree on: a
    /// crash, then a forbidden act (safety), then a stuck world, then something missing
    /// (liveness), then nondeterminism.
    pub fn severity(&self) -> u8 {
        match self.verdict.as_str() {
            "crash" => 5,
            "safety" => 4,
            "stuck" => 3,
            "liveness" => 2,
            "nondeterministic" => 1,
            _ => 0,
        }
    }

    /// A seed that held but replayed with a different trace (`--check-determinism`).
    pub fn nondeterministic(seed: u64, mode: &str, replay: String) -> Failure {
        Failure {
            seed,
            mode: mode.to_string(),
            verdict: "nondeterministic".to_string(),
            invariant: "determinism".to_string(),
            first_violation: "the seed replayed with a different trace".to_string(),
            world: String::new(),
            replay,
            exit_code: 1,
        }
    }
}

/// Writes a run's failures and its run record into `dir` (made if missing). Returns the
/// paths written.
pub fn write_bank(
    dir: &Path,
    t: &Totals,
    mode: &str,
    shard: Option<(u64, u64, Range<u64>)>,
    replay_command: &dyn Fn(u64) -> String,
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut failures: Vec<Failure> = t
        .failures
        .iter()
        .filter_map(|r| Failure::of(r, mode, replay_command(r.seed)))
        .collect();
    for &seed in &t.nondeterministic {
        if !failures.iter().any(|f| f.seed == seed) {
            failures.push(Failure::nondeterministic(seed, mode, replay_command(seed)));
        }
    }
    let mut written = Vec::new();
    for f in &failures {
        let path = dir.join(format!("fail-seed-{}.json", f.seed));
        write_json(&path, f)?;
        written.push(path);
    }
    let run = RunRecord {
        from: t.range.start,
        to: t.range.end,
        shard: shard.as_ref().map(|(k, n, _)| format!("{k}/{n}")),
        of: shard.as_ref().map(|(_, _, r)| (r.start, r.end)),
        mode: mode.to_string(),
        seeds: t.seeds,
        events: t.events,
        failed: failures.len() as u64,
        exit_code: t.exit_code(),
    };
    let path = dir.join(format!("run-{}-{}.json", run.from, run.to));
    write_json(&path, &run)?;
    written.push(path);
    Ok(written)
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let json = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    std::fs::write(path, json + "\n")
}

/// Every bank merged: the runs, and the failures sorted by seed with one record per seed
/// (where banks disagree about a seed, the worst verdict is kept: `Failure::severity`).
#[derive(Debug, Default)]
pub struct Merged {
    pub banks: usize,
    pub runs: Vec<RunRecord>,
    pub failures: Vec<Failure>,
}

impl Merged {
    /// The seeds the runs covered, as disjoint ranges in order (overlapping or touching
    /// runs joined).
    pub fn covered(&self) -> Vec<Range<u64>> {
        let mut spans: Vec<Range<u64>> = self
            .runs
            .iter()
            .filter(|r| r.to > r.from)
            .map(|r| r.from..r.to)
            .collect();
        spans.sort_by_key(|r| (r.start, r.end));
        let mut out: Vec<Range<u64>> = Vec::new();
        for s in spans {
            match out.last_mut() {
                Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
                _ => out.push(s),
            }
        }
        out
    }

    /// Seeds of the whole ranges the shards were cut from that no run covered.
    pub fn missing(&self) -> Vec<Range<u64>> {
        let covered = self.covered();
        let mut wholes: Vec<(u64, u64)> = self.runs.iter().filter_map(|r| r.of).collect();
        wholes.sort_unstable();
        wholes.dedup();
        let mut gaps = Vec::new();
        for (from, to) in wholes {
            let mut at = from;
            for c in &covered {
                if c.end <= at || c.start >= to {
                    continue;
                }
                if c.start > at {
                    gaps.push(at..c.start);
                }
                at = at.max(c.end);
            }
            if at < to {
                gaps.push(at..to);
            }
        }
        gaps.sort_by_key(|r| (r.start, r.end));
        gaps.dedup();
        gaps
    }

    /// Distinct seeds run (runs of the same seeds, such as a shard run twice, count once).
    pub fn seeds(&self) -> u64 {
        self.covered().iter().map(|r| r.end - r.start).sum()
    }

    /// 1 when any seed failed, any seed of a sharded range is missing, or no bank recorded
    /// a run at all (nothing was checked), else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(!self.failures.is_empty() || !self.missing().is_empty() || self.runs.is_empty())
    }
}

/// Reads the banks in `dirs`. A directory that cannot be read, or a bank file that is not
/// one, is an error naming it.
pub fn read_banks(dirs: &[PathBuf]) -> Result<Merged, String> {
    let mut m = Merged {
        banks: dirs.len(),
        ..Merged::default()
    };
    for dir in dirs {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let read = || {
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))
            };
            if name.starts_with("fail-seed-") {
                let f: Failure = serde_json::from_str(&read()?)
                    .map_err(|e| format!("{} is not a failure bank file: {e}", path.display()))?;
                m.failures.push(f);
            } else if name.starts_with("run-") {
                let r: RunRecord = serde_json::from_str(&read()?)
                    .map_err(|e| format!("{} is not a bank's run record: {e}", path.display()))?;
                m.runs.push(r);
            }
        }
    }
    // Worst verdict first within a seed, then one record per seed.
    m.failures
        .sort_by(|a, b| a.seed.cmp(&b.seed).then(b.severity().cmp(&a.severity())));
    m.failures.dedup_by_key(|f| f.seed);
    m.runs.sort_by_key(|r| (r.from, r.to));
    Ok(m)
}

/// The merged summary: the banks and runs read, the seeds covered and any missing, then
/// each failure (seed order) with its first violation and replay command.
pub fn write_merged(out: &mut dyn Write, m: &Merged) -> io::Result<()> {
    writeln!(out, "duetime-sim bank summary")?;
    let events: u64 = m.runs.iter().map(|r| r.events).sum();
    writeln!(
        out,
        "  {} banks, {} runs, {} seeds, {} events",
        m.banks,
        m.runs.len(),
        m.seeds(),
        events
    )?;
    let show = |spans: &[Range<u64>]| {
        spans
            .iter()
            .map(|r| format!("{}..{}", r.start, r.end))
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(out, "  covered: {}", show(&m.covered()))?;
    if m.runs.is_empty() {
        writeln!(
            out,
            "  NO RUN: no bank holds a run record (run-A-B.json); nothing was checked"
        )?;
    }
    let missing = m.missing();
    if !missing.is_empty() {
        writeln!(
            out,
            "  MISSING: no bank covers seeds {} (a shard that did not run or whose bank was lost)",
            show(&missing)
        )?;
    }
    for f in &m.failures {
        writeln!(out)?;
        writeln!(
            out,
            "seed {} ({}, {}): {}",
            f.seed, f.mode, f.verdict, f.first_violation
        )?;
        if !f.world.is_empty() {
            writeln!(out, "  world: {}", f.world)?;
        }
        writeln!(out, "  replay: {}", f.replay)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{} seeds, {} failed{}",
        m.seeds(),
        m.failures.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                ", {} missing",
                missing.iter().map(|r| r.end - r.start).sum::<u64>()
            )
        }
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_range_exactly_in_order() {
        for len in [0u64, 1, 3, 4, 7, 100, 1001] {
            for n in 1..=9u64 {
                let range = 10..10 + len;
                let mut at = range.start;
                for k in 1..=n {
                    let s = shard(&range, k, n).unwrap();
                    assert_eq!(s.start, at, "len {len} shard {k}/{n}");
                    assert!(s.end >= s.start);
                    let size = s.end - s.start;
                    assert!(size == len / n || size == len / n + 1, "{len} {k}/{n}");
                    at = s.end;
                }
                assert_eq!(at, range.end);
            }
        }
        assert_eq!(shard(&(0..u64::MAX), 2, 2).unwrap().end, u64::MAX);
        assert!(shard(&(0..10), 0, 4).is_none());
        assert!(shard(&(0..10), 5, 4).is_none());
    }

    fn report(seed: u64, verdict: Verdict, violations: Vec<crate::Violation>) -> SeedReport {
        SeedReport {
            seed,
            config: format!("world of seed {seed}"),
            verdict,
            violations,
            events: 10,
            jobs: 1,
            processes: 1,
            sim_ms: 0,
            faults: Default::default(),
            probes: Default::default(),
            trace_hash: 0,
            inputs: None,
            trace: None,
            tick_ms: 1000,
            single_owner: false,
            max_runs_per_process: None,
            facts: Default::default(),
            horizon: None,
        }
    }

    #[test]
    fn a_bank_keeps_each_failure_and_the_run_and_reads_back() {
        let dir = std::env::temp_dir().join(format!("duetime-bank-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let liveness = crate::Violation {
            invariant: crate::check::Invariant::L1,
            job: "a".to_string(),
            detail: "never ran".to_string(),
            liveness: true,
        };
        let safety = crate::Violation {
            invariant: crate::check::Invariant::S1,
            job: "b".to_string(),
            detail: "ran twice".to_string(),
            liveness: false,
        };
        let t = Totals {
            seeds: 20,
            events: 200,
            failures: vec![
                report(3, Verdict::Safety, vec![liveness.clone(), safety]),
                report(9, Verdict::Crash("boom at x.rs:1".to_string()), vec![]),
                report(12, Verdict::Liveness, vec![liveness]),
            ],
            nondeterministic: vec![9, 15],
            range: 0..20,
            ..Totals::default()
        };
        let written = write_bank(&dir, &t, "heavy", Some((1, 2, 0..40)), &|s| {
            format!("replay {s}")
        })
        .unwrap();
        assert_eq!(written.len(), 5, "{written:?}");
        let m = read_banks(std::slice::from_ref(&dir)).unwrap();
        let seen: Vec<(u64, &str, &str)> = m
            .failures
            .iter()
            .map(|f| (f.seed, f.verdict.as_str(), f.invariant.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (3, "safety", "S1"),
                (9, "crash", "crash"),
                (12, "liveness", "L1"),
                (15, "nondeterministic", "determinism"),
            ]
        );
        assert_eq!(m.failures[0].first_violation, "S1 broken for b: ran twice");
        assert_eq!(m.failures[0].replay, "replay 3");
        assert_eq!(m.failures[0].mode, "heavy");
        assert_eq!(m.failures[1].exit_code, 3);
        assert_eq!(m.runs.len(), 1);
        assert_eq!(m.missing(), vec![20..40]);
        assert_eq!(m.seeds(), 20);
        assert_eq!(m.exit_code(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shard_flags() {
        assert_eq!(parse_shard("1/4"), Ok((1, 4)));
        assert_eq!(parse_shard("4/4"), Ok((4, 4)));
        for bad in ["0/4", "5/4", "1/0", "4", "a/b", "-1/4", "1/4/2", ""] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
