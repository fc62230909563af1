//! Replaying and shrinking: a failing world's inputs to the core, fed again to a fresh
//! state and checked by the same checker. Shrinking drops events (delta debugging) while the
//! same invariant still breaks for the same job; what is left is saved as a regression file
//! that `cargo test` replays without the generator, so it stays meaningful when the
//! generator changes.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use duetime::{Config, Coordination, Duration, Event, JobName, Now, State};
use serde::{Deserialize, Serialize};

use crate::check::{self, Horizon, JobFacts, Observation, Violation};

/// Everything needed to replay a failure without the generator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Regression {
    /// Where it came from, for people.
    pub origin: String,
    /// The broken invariant it showed when saved (`S1`... or `crash`).
    pub invariant: String,
    /// Whether that is a liveness failure (not shrunk; see `Violation::liveness`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub liveness: bool,
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

/// How much of the state's own checking a replay does after each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateChecks {
    /// Every committed state must pass the core's self-check and survive a serde round
    /// trip (S6): what a kept regression replays with.
    Full,
    /// Only the journal is checked: shrinking a failure that is not about the state
    /// replays thousands of times, and the round trips would be most of its cost.
    JournalOnly,
}

/// Feeds `inputs` to a fresh state with `config` and checks the journal (and, under
/// `single_owner`, the owner lease's changes: O1), with every state checked (S6).
pub fn replay(
    config: Config,
    inputs: &[(Now, Event)],
    facts: &BTreeMap<JobName, JobFacts>,
    horizon: Horizon,
) -> Finding {
    replay_with(config, inputs, facts, horizon, StateChecks::Full)
}

/// `replay`, with the state checks asked for. A state that fails its own load check, or
/// does not survive a serde round trip, is an S6 finding at the step that wrote it.
pub fn replay_with(
    config: Config,
    inputs: &[(Now, Event)],
    facts: &BTreeMap<JobName, JobFacts>,
    horizon: Horizon,
    checks: StateChecks,
) -> Finding {
    replay_counting(
        config,
        inputs,
        facts,
        horizon,
        checks,
        &mut check::Probes::new(),
    )
}

/// `replay_with`, counting what the checker met into `probes`: a kept world that guards a
/// rare situation shows by them that it still reaches it.
pub fn replay_counting(
    config: Config,
    inputs: &[(Now, Event)],
    facts: &BTreeMap<JobName, JobFacts>,
    horizon: Horizon,
    checks: StateChecks,
    probes: &mut check::Probes,
) -> Finding {
    let run = crate::quietly(|| {
        let mut checker = check::Checker::for_store(facts.clone(), &config);
        let mut state = State::new(config);
        let mut effects = Vec::new();
        for (i, (now, event)) in inputs.iter().enumerate() {
            // As the world tells it (`check::Observation`'s order).
            checker.observe(Observation::Stepping {
                event,
                state: &state,
                now: *now,
            });
            state.step(*now, event.clone(), &mut effects);
            if checks == StateChecks::Full {
                if let Err(what) = crate::round_trip(&mut state) {
                    return Err(format!("after input {i} ({event}): {what}"));
                }
            }
            for e in effects.drain(..) {
                checker.observe(Observation::Effect(&e));
            }
            checker.observe(Observation::Committed {
                state: &state,
                wall: now.wall,
                touched: None,
            });
        }
        Ok(checker)
    });
    match run {
        Err(panic) => Finding::Crash(panic),
        Ok(Err(what)) => Finding::Broken(vec![Violation::state(what)]),
        Ok(Ok(checker)) => {
            let v = checker.finish(horizon, probes);
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

    /// `replay`, and what the checker met on the way (its probes).
    pub fn replay_counting(&self) -> (Finding, check::Probes) {
        let mut probes = check::Probes::new();
        let finding = replay_counting(
            self.config(),
            &self.inputs,
            &self.facts,
            self.horizon,
            StateChecks::Full,
            &mut probes,
        );
        (finding, probes)
    }

    /// Delta debugging over the inputs: drop chunks, halving the chunk size, while the same
    /// invariant still breaks for the same job, until `deadline`; what is left when it
    /// passes is the best found. Returns whether it finished before the deadline.
    /// Failures that are not about the state replay without its round trips (see
    /// `StateChecks`); the result is checked once with them.
    pub fn shrink(&mut self, deadline: Instant) -> bool {
        let (inv, job) = (self.invariant.clone(), self.job.clone());
        let checks = if inv == "S6" || inv == "crash" {
            StateChecks::Full
        } else {
            StateChecks::JournalOnly
        };
        let (config, facts, horizon) = (self.config(), self.facts.clone(), self.horizon);
        let shows = |inputs: &[(Now, Event)]| {
            replay_with(config, inputs, &facts, horizon, checks).shows(&inv, &job)
        };
        let mut chunk = self.inputs.len() / 2;
        while chunk >= 1 {
            let mut i = 0;
            let mut shrunk = false;
            while i < self.inputs.len() {
                if Instant::now() >= deadline {
                    return false;
                }
                let end = (i + chunk).min(self.inputs.len());
                let mut candidate = self.inputs.clone();
                candidate.drain(i..end);
                if shows(&candidate) {
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
        true
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
