//! A world's inputs to the core, recorded: the store's config and every `(Now, Event)` the
//! world stepped its state with, in order. Replayed from `State::new(config)` they give the
//! same effects and state again, so another runtime (the stdio core, the Node and Python
//! packages) can be held to the Rust core's answers over many worlds. Recording is the
//! simulator's `record_inputs` option, off in ordinary runs: the hot path pays one branch.

use duetime::{Config, Event, Now};

use crate::gen::Overrides;
use crate::{replay, run_seed, Options};

/// What one seed fed the core.
#[derive(Debug, Clone)]
pub struct Recording {
    pub seed: u64,
    pub config: Config,
    pub inputs: Vec<(Now, Event)>,
}

/// Runs seed `seed` (with `overrides`, such as fewer simulated days) and keeps its inputs.
pub fn record(seed: u64, overrides: &Overrides) -> Recording {
    let opts = Options {
        overrides: overrides.clone(),
        record_inputs: true,
        ..Options::default()
    };
    let report = run_seed(seed, &opts);
    Recording {
        seed,
        config: replay::config(
            report.tick_ms,
            report.single_owner,
            report.max_runs_per_process,
        ),
        inputs: report.inputs.unwrap_or_default(),
    }
}
