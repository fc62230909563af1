//! The mutation judge: seeds of every fault mode, run when `DUETIME_MUTANTS_JUDGE` names
//! them (`scripts/mutants` sets it: `swarm:0..300,heavy:0..100,...`); without it this test
//! only checks that the judge's own default plan parses, and the simulator's seeds run in
//! `tests/seeds.rs` and CI's simulator stage instead. A mutant of the core is caught when a
//! seed of the plan breaks an invariant, panics or gets stuck.

use duetime_sim::{report, FaultMode, Options};

/// Probes that say a check looked (its question was asked and answered "held"): each must
/// be reached somewhere over the plan. A mutant that blinds a check (an accessor the world
/// reads to decide whether to judge, made to say nothing) is caught here, not passed.
const CHECKS_LOOKED: &[&str] = &[
    "clock gap told as it was",
    "journal written on the store's time",
    "result dated by its own measure",
    "parked run shown as the journal says",
    "stall watched by its job's wake",
    "run told stalled",
    "alert held by the throttle",
    "one-shot's end shown as the journal says",
    "process forgotten after a day's silence",
    "catch_up_once skipped late due times for a newer catch-up",
    "pause after failures in a row told",
    "retry older than the window given up at a pause",
    "run now refused: rate limited",
    "views compared with the journal",
    "views' status and last run held to the journal",
    "views' missed count held to the journal's skips",
    "views' owed count held to the line",
    "views' cursor held to the line",
    "lost run's alert tells the pause as it is",
    "start held to the line",
    "owed held to the missed rule",
    "too late only past the catch-up window",
    "retry covered what failed",
    "current result settled its run",
    "wait held to a full lane or cap",
    "start in its lane's order",
    "release its rule allows",
    "store's clock away from clocks that agree",
    "store's clock came to clocks that agree",
    "cron text typed near its bounds (Z2)",
    "missed as late past the grace",
    "owner shown as the lease holds it",
    "run that found nothing to do recorded skipped",
    "result with a stale fence settled nothing",
    "witnesses told to wake within a tick",
    "wait kept through a new incarnation's event",
    "idle process told to wake for work alone",
    "adoption under the run's own fence",
    "timed out a grace after its cancel",
    "backfill from the beginning",
];

/// The plan `scripts/mutants` uses unless told otherwise: about two seconds in release.
const DEFAULT_PLAN: &str = "swarm:0..300,heavy:0..80,extreme:0..40,light:0..60";

fn parse(plan: &str) -> Result<Vec<(FaultMode, std::ops::Range<u64>)>, String> {
    plan.split(',')
        .map(|part| {
            let (mode, range) = part
                .split_once(':')
                .ok_or(format!("`{part}`: accepted MODE:A..B"))?;
            let (a, b) = range
                .split_once("..")
                .ok_or(format!("`{range}`: accepted A..B"))?;
            let a: u64 = a.parse().map_err(|_| format!("`{a}` is not a seed"))?;
            let b: u64 = b.parse().map_err(|_| format!("`{b}` is not a seed"))?;
            Ok((mode.parse::<FaultMode>()?, a..b))
        })
        .collect()
}

#[test]
fn the_simulator_judges_a_mutant() {
    let plan = match std::env::var("DUETIME_MUTANTS_JUDGE") {
        Ok(plan) if !plan.is_empty() && plan != "default" => plan,
        Ok(_) => DEFAULT_PLAN.to_string(),
        Err(_) => {
            assert_eq!(parse(DEFAULT_PLAN).map(|p| p.len()), Ok(4));
            return;
        }
    };
    // (Another plan may be too short to reach every probe: only the default's is held.)
    let default_plan = plan == DEFAULT_PLAN;
    let plan = parse(&plan).unwrap_or_else(|e| panic!("DUETIME_MUTANTS_JUDGE: {e}"));
    let mut looked = std::collections::BTreeMap::new();
    for (mode, seeds) in plan {
        let mut opts = Options::default();
        opts.overrides.faults = Some(mode);
        // A mutant that loops is caught in seconds, not at cargo-mutants' timeout: a seed
        // takes milliseconds unmutated (the slowest of the plan well under one second in
        // release), so ten seconds a seed, or ten more inside one step, is a loop. One
        // failing seed is the verdict: the rest of the range is not run.
        opts.seed_budget = std::time::Duration::from_secs(10);
        opts.step_grace = std::time::Duration::from_secs(10);
        opts.stop_at_first = true;
        let t = report::run_seeds(seeds.clone(), 2, &opts, false);
        let failed: Vec<String> = t
            .failures
            .iter()
            .take(3)
            .map(|r| {
                format!(
                    "seed {} {:?}: {:?}",
                    r.seed,
                    r.verdict,
                    r.violations.first()
                )
            })
            .collect();
        assert!(
            failed.is_empty(),
            "--faults {} --seeds {}..{}: {}",
            mode.name(),
            seeds.start,
            seeds.end,
            failed.join("; ")
        );
        for (probe, n) in t.probes {
            *looked.entry(probe).or_insert(0u64) += n;
        }
    }
    let blind: Vec<&str> = CHECKS_LOOKED
        .iter()
        .copied()
        .filter(|p| default_plan && looked.get(p).copied().unwrap_or(0) == 0)
        .collect();
    assert!(
        blind.is_empty(),
        "checks that never looked over the plan (a blinded check): {blind:?}"
    );
}
