//! Replaying and shrinking: a failing world's inputs to the core, fed again to a fresh
//! state and checked by the same checker. Shrinking drops events (delta debugging) while the
//! same invariant still breaks for the same job; what is left is saved as a regression file
//! that `cargo test` replays without the generator, so it stays meaningful when the
//! generator changes.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use duetime::{Config, Coordination, Duration, Effect, Event, JobName, Now, State};
use serde::{Deserialize, Serialize};

use crate::check::{self, Horizon, JobFacts, Violation};

/// Everything needed to replay a failure without the generator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Regression {
    /// Where it came from, for people.
    pub origin: String,
    /// The broken invariant it showed when saved (`S1`... or `crash`).
    pub invariant: String,
    pub job: String,
    pub tick_ms: u64,
    /// The store ran `single_owner` coordination (absent: shared).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub single_owner: bool,
    /// The world's `max_runs_per_process`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs_per_process: Option<u32>,
    pub horizon: Horizon,
    pub facts: BTreeMap<JobName, JobFacts>,
    pub inputs: Vec<(Now, Event)>,
}

/// What a replay found.
#[derive(Debug, Clone)]
pub enum Finding {
    Held,
    Broken(Vec<Violation>),
    Crash(String),
}

impl Finding {
    /// The first broken promise as `(invariant, job)`, if any.
    pub fn first(&self) -> Option<(String, String)> {
        match self {
            Finding::Held => None,
            Finding::Broken(v) => v.first().map(|v| (v.invariant.to_string(), v.job.clone())),
            Finding::Crash(_) => Some(("crash".to_string(), String::new())),
        }
    }

    fn shows(&self, invariant: &str, job: &str) -> bool {
        match self {
            Finding::Held => false,
            Finding::Crash(_) => invariant == "crash",
            Finding::Broken(v) => v.iter().any(|v| v.invariant == invariant && v.job == job),
        }
    }
}

/// The config a world of this tick, coordination and cap runs its store with.
pub fn config(tick_ms: u64, single_owner: bool, cap: Option<u32>) -> Config {
    let mut config = Config::with_tick(Duration::from_millis(tick_ms));
    if single_owner {
        config.coordination = Coordination::SingleOwner;
    }
    config.max_runs_per_process = cap;
    config
}

/// Feeds `inputs` to a fresh state with `config` and checks the journal (and, under
/// `single_owner`, the owner lease's changes: O1).
pub fn replay(
    config: Config,
    inputs: &[(Now, Event)],
    facts: &BTreeMap<JobName, JobFacts>,
    horizon: Horizon,
) -> Finding {
    let single_owner = config.coordination == Coordination::SingleOwner;
    let run = catch_unwind(AssertUnwindSafe(|| {
        let mut state = State::new(config);
        let mut journal: Vec<Effect> = Vec::new();
        let mut effects = Vec::new();
        for (now, event) in inputs {
            state.step(*now, event.clone(), &mut effects);
            // As the world does now and then: the state must survive its own serde.
            let json = serde_json::to_string(&state).expect("state serializes");
            state = serde_json::from_str(&json).expect("state deserializes");
            journal.extend(effects.drain(..).filter(|e| {
                matches!(
                    e,
                    Effect::Record(_)
                        | Effect::Owner { .. }
                        | Effect::OwnerReleased { .. }
                        | Effect::Drained { .. }
                )
            }));
        }
        journal
    }));
    match run {
        Err(panic) => Finding::Crash(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into()),
        ),
        Ok(journal) => {
            let mut probes = check::Probes::new();
            let reported = check::reported_in(inputs.iter().map(|(_, e)| e));
            let v = check::check_effects(
                &journal,
                facts,
                &reported,
                horizon,
                &mut probes,
                single_owner,
                config.max_runs_per_process,
            );
            if v.is_empty() {
                Finding::Held
            } else {
                Finding::Broken(v)
            }
        }
    }
}

impl Regression {
    pub fn config(&self) -> Config {
        config(self.tick_ms, self.single_owner, self.max_runs_per_process)
    }

    pub fn replay(&self) -> Finding {
        replay(self.config(), &self.inputs, &self.facts, self.horizon)
    }

    /// Delta debugging over the inputs: drop chunks, halving the chunk size, while the same
    /// invariant still breaks for the same job. `budget` bounds the replays.
    pub fn shrink(&mut self, budget: usize) {
        let (inv, job) = (self.invariant.clone(), self.job.clone());
        let mut chunk = self.inputs.len() / 2;
        let mut tries = 0;
        while chunk >= 1 && tries < budget {
            let mut i = 0;
            let mut shrunk = false;
            while i < self.inputs.len() && tries < budget {
                let end = (i + chunk).min(self.inputs.len());
                let mut candidate = self.inputs.clone();
                candidate.drain(i..end);
                tries += 1;
                if replay(self.config(), &candidate, &self.facts, self.horizon).shows(&inv, &job) {
                    self.inputs = candidate;
                    shrunk = true;
                } else {
                    i = end;
                }
            }
            if !shrunk {
                chunk /= 2;
            }
        }
    }
}

/// The inputs and the effects they produced, one line each, for people.
pub fn readable(config: Config, inputs: &[(Now, Event)]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut state = State::new(config);
    let mut effects = Vec::new();
    for (now, event) in inputs {
        lines.push(format!("{} {}", now.wall, event));
        let ok = catch_unwind(AssertUnwindSafe(|| {
            state.step(*now, event.clone(), &mut effects)
        }));
        if ok.is_err() {
            lines.push("      PANIC in step".to_string());
            break;
        }
        for e in effects.drain(..) {
            lines.push(format!("      {e}"));
        }
    }
    lines
}
