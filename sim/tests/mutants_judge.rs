//! The mutation judge: seeds of every fault mode, run when `DUETIME_MUTANTS_JUDGE` names
//! them (`scripts/mutants` sets it: `swarm:0..300,heavy:0..100,...`); without it this test
//! only checks that the judge's own default plan parses, and the simulator's seeds run in
//! `tests/seeds.rs` and CI's simulator stage instead. A mutant of the core is caught when a
//! seed of the plan breaks an invariant, panics or gets stuck.

use duetime_sim::{report, FaultMode, Options};

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
    let plan = parse(&plan).unwrap_or_else(|e| panic!("DUETIME_MUTANTS_JUDGE: {e}"));
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
    }
}
