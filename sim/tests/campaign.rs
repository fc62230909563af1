//! Campaigns across machines, run here as four local shards: `--shard K/N` cuts `--seeds
//! A..B` into blocks that cover it exactly without overlap, `--bank DIR` keeps each shard's
//! run and failures, and `--merge-bank` merges the banks into one summary (failures by
//! seed, each once; exit 1 on any failure or a shard's seeds missing).

use std::path::{Path, PathBuf};
use std::process::Command;

use duetime_sim::bank::{Failure, RunRecord};

fn sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_duetime-sim"))
        .args(args)
        .output()
        .expect("duetime-sim runs");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("campaign-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs shard `k` of 4 of seeds 0..22 (short light worlds) into `bank`; returns the seeds
/// its bank's run record says it ran.
fn run_shard(k: u64, bank: &Path) -> std::ops::Range<u64> {
    let shard = format!("{k}/4");
    let (code, out, err) = sim(&[
        "--seeds",
        "0..22",
        "--shard",
        &shard,
        "--faults",
        "light",
        "--days",
        "0.3",
        "--threads",
        "1",
        "--bank",
        bank.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "shard {shard}: {out}{err}");
    let runs: Vec<RunRecord> = std::fs::read_dir(bank)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("run-"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "shard {shard}: {runs:?}");
    let r = &runs[0];
    assert_eq!(r.shard.as_deref(), Some(shard.as_str()));
    assert_eq!(r.of, Some((0, 22)));
    assert_eq!(r.mode, "light");
    assert_eq!(
        r.seeds,
        r.to - r.from,
        "shard {shard} ran every seed of its block"
    );
    assert!(
        out.contains(&format!("seeds {} ({}..{})", r.seeds, r.from, r.to)),
        "the summary names the shard's seeds: {out}"
    );
    r.from..r.to
}

fn failure(seed: u64, verdict: &str, exit_code: i32) -> Failure {
    Failure {
        seed,
        mode: "light".to_string(),
        verdict: verdict.to_string(),
        invariant: "S1".to_string(),
        first_violation: format!("S1 broken for job-{seed}: planted"),
        world: "planted world".to_string(),
        replay: format!(
            "cargo run --release -p duetime-sim -- --replay {seed} --faults light --trace"
        ),
        exit_code,
    }
}

fn plant(bank: &Path, f: &Failure) {
    std::fs::write(
        bank.join(format!("fail-seed-{}.json", f.seed)),
        serde_json::to_string_pretty(f).unwrap(),
    )
    .unwrap();
}

#[test]
fn four_shards_cover_the_range_and_their_banks_merge() {
    let root = scratch("four");
    let banks: Vec<PathBuf> = (1..=4).map(|k| root.join(format!("shard-{k}"))).collect();
    let blocks: Vec<_> = (1..=4)
        .map(|k| run_shard(k, &banks[k as usize - 1]))
        .collect();
    // In order, each starting where the last ended, from 0 to 22: exactly the range, no
    // seed twice, none left out; sizes differ by at most one.
    assert_eq!(blocks, vec![0..5, 5..11, 11..16, 16..22]);

    // All held: the merge says so and exits 0.
    let dirs: Vec<&str> = banks.iter().map(|b| b.to_str().unwrap()).collect();
    let mut args = vec!["--merge-bank"];
    args.extend(&dirs);
    let (code, out, err) = sim(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("4 banks, 4 runs, 22 seeds"), "{out}");
    assert!(out.contains("covered: 0..22"), "{out}");
    assert!(out.contains("22 seeds, 0 failed"), "{out}");

    // Planted failures: seed 13 in shard 3's bank, found again (as a lesser verdict) in
    // shard 1's; seed 2 in shard 1's. One record per seed, the worst kept, in seed order.
    plant(&banks[2], &failure(13, "safety", 1));
    plant(&banks[0], &failure(13, "liveness", 2));
    plant(&banks[0], &failure(2, "liveness", 2));
    let (code, out, err) = sim(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("22 seeds, 2 failed"), "{out}");
    let two = out.find("seed 2 (light, liveness)").expect(&out);
    let thirteen = out.find("seed 13 (light, safety): S1 broken").expect(&out);
    assert!(two < thirteen, "failures in seed order: {out}");
    assert_eq!(out.matches("seed 13 (").count(), 1, "{out}");
    assert!(out.contains("replay: cargo run --release -p duetime-sim -- --replay 13"));

    // A lost shard is not a pass: its seeds are named as missing and the merge exits 1.
    let (code, out, _) = sim(&["--merge-bank", dirs[0], dirs[2], dirs[3]]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("MISSING: no bank covers seeds 5..11"), "{out}");

    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn shard_and_merge_usage_errors_exit_64() {
    for (args, says) in [
        (vec!["--shard", "0/4"], "--shard: `0/4`; accepted: K/N"),
        (vec!["--shard", "5/4"], "--shard: `5/4`"),
        (vec!["--shard", "1/0"], "--shard: `1/0`"),
        (vec!["--shard", "two"], "--shard: `two`"),
        (vec!["--shard"], "--shard needs a value"),
        (
            vec!["--merge-bank"],
            "--merge-bank needs one or more bank directories",
        ),
        (
            vec!["--merge-bank", "/nonexistent/duetime-bank"],
            "cannot read /nonexistent/duetime-bank",
        ),
    ] {
        let (code, out, err) = sim(&args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A bank file that is not one names itself.
    let root = scratch("bad");
    std::fs::write(root.join("fail-seed-1.json"), "{\"seed\": 1}").unwrap();
    let (code, _, err) = sim(&["--merge-bank", root.to_str().unwrap()]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("is not a failure bank file"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
