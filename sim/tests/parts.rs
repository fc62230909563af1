//! The partition worlds hold every promise on a few seeds, and reach what they are for:
//! takeovers, rebalancing, stale writes refused, moves done and moves waiting for a run.

use duetime_sim::parts::{run_range, PartsOptions};

#[test]
fn a_few_partition_worlds_hold_and_reach_their_paths() {
    let summary = run_range(0..8, 2, PartsOptions::default());
    assert!(summary.failures.is_empty(), "{}", summary.render());
    for probe in [
        "daemon crashed",
        "daemon stalled",
        "daemon stopped cleanly",
        "partition left",
        "partition found lost",
        "stale epoch write refused",
        "commit answer lost",
        "job moved between partitions",
        "move waits for an open run",
    ] {
        let reached = summary.probes.get(probe).copied().unwrap_or(0);
        assert!(
            reached > 0,
            "no world reached `{probe}`:\n{}",
            summary.render()
        );
    }
    assert!(
        summary.by_count.len() >= 3,
        "partition counts drawn: {:?}",
        summary.by_count
    );
}

#[test]
fn heavy_partition_worlds_of_64_partitions_hold() {
    let opts = PartsOptions {
        partitions: Some(duetime_loop::PartitionCount::new(64).unwrap()),
        heavy: true,
    };
    let summary = run_range(100..101, 1, opts);
    assert!(summary.failures.is_empty(), "{}", summary.render());
}
