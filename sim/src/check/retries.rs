//! R4: a failed run is handled as its job's rules say (docs/semantics.md), judged at the
//! end of the step that settled it. With attempts left (`retries` after the first), a run
//! that covered due times gets a `retry at` the backoff's delay for its attempt after the
//! settlement (`initial`, doubling, at most `max`), or the delay the failure asked for when
//! that is longer, unless the job is or becomes paused in that step (the missed rule takes
//! the cover then); with none left it fails out (a `failed out` entry) and gets no retry.
//! A failure asking for more than the job's wait budget holds the job for as long (`held
//! until`), when it is retried or was a manual run; one asking no more than the budget
//! holds nothing. And a retry's start is the next attempt, a repeat's the lost run's.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{Outcome, RunId};

use super::{ts, Checker};

/// A failure settled in this step, and what followed it in the step.
struct Failure {
    track: usize,
    run: RunId,
    at: i64,
    attempt: u32,
    /// What the failure asked to wait, in ms (0: nothing).
    asked: i64,
    covered: bool,
    /// The job was paused when the run settled (a person's pause).
    paused_before: bool,
    retry_at: Option<i64>,
    hold: Option<(i64, i64)>,
    failed_out: bool,
}

/// The failures of the step being fed.
#[derive(Default)]
pub(super) struct Retries {
    step: Vec<Failure>,
}

/// What the job's rules say of retries (from its facts).
#[derive(Clone, Copy)]
struct Rules {
    retries: u32,
    initial: i64,
    max: i64,
    budget: i64,
}

impl Rules {
    /// The backoff's delay before attempt `failed + 1`.
    fn delay(&self, failed: u32) -> i64 {
        let mut d = self.initial;
        for _ in 1..failed.min(64) {
            d = d.saturating_mul(2);
            if d >= self.max {
                break;
            }
        }
        d.min(self.max)
    }
}

impl Checker {
    /// A settlement line: a failure is remembered until the step ends.
    pub(super) fn retry_settled(
        &mut self,
        idx: usize,
        at: i64,
        run: RunId,
        attempt: u32,
        outcome: &Outcome,
    ) {
        let asked = match outcome {
            Outcome::Failed {
                retry_after: Some(d),
                ..
            } => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Outcome::Failed { .. } | Outcome::TimedOut => 0,
            _ => return,
        };
        let covered = self.open.get(&run).and_then(|o| o.covers).is_some();
        let paused_before = self.tracks[idx].paused;
        self.retries.step.push(Failure {
            track: idx,
            run,
            at,
            attempt,
            asked,
            covered,
            paused_before,
            retry_at: None,
            hold: None,
            failed_out: false,
        });
    }

    /// A `retry at`, `held until` or `failed out` line of `run`.
    pub(super) fn retry_followed(&mut self, run: RunId, line: Followed) {
        let Some(f) = self.retries.step.iter_mut().rev().find(|f| f.run == run) else {
            return;
        };
        match line {
            Followed::RetryAt(at) => f.retry_at = Some(at),
            Followed::Hold { asked, until } => f.hold = Some((asked, until)),
            Followed::FailedOut => f.failed_out = true,
        }
    }

    /// The step's end: each failure against its job's rules.
    pub(super) fn retries_judged(&mut self) {
        for f in std::mem::take(&mut self.retries.step) {
            let t = &self.tracks[f.track];
            let Some(facts) = self.facts.get(&t.name) else {
                continue;
            };
            let (Some(retries), Some((initial, max)), Some(budget)) =
                (facts.retries, facts.backoff_ms, facts.wait_budget_ms)
            else {
                continue;
            };
            let rules = Rules {
                retries,
                initial,
                max,
                budget,
            };
            let name = t.name.clone();
            // This failure made `pause_after_failures` in a row (P1's count): the job
            // stops, whatever it asked.
            let streak = t
                .pause_after_failures
                .is_some_and(|n| t.failures_in_a_row >= n);
            let timed = f.retry_at.is_some();
            for detail in failure_wrong(&f, rules, streak) {
                self.violation(Invariant::R4, &name, detail);
            }
            if timed {
                self.probe(Probe::RetryTimedByTheBackoff);
            }
        }
    }
}

/// A line that follows a failure in its step.
pub(super) enum Followed {
    RetryAt(i64),
    Hold { asked: i64, until: i64 },
    FailedOut,
}

/// What is wrong with failure `f` under `rules` (`streak`: it ended a streak of
/// `pause_after_failures`, which stops the job).
fn failure_wrong(f: &Failure, rules: Rules, streak: bool) -> Vec<String> {
    let mut wrong = Vec::new();
    let run = f.run;
    let left = f.attempt <= rules.retries;
    let paused = streak || f.paused_before;
    match f.retry_at {
        Some(at) if !left || !f.covered => wrong.push(format!(
            "{run} (attempt {} of {}) retried at {}, with no attempt left or nothing covered",
            f.attempt,
            rules.retries + 1,
            ts(at)
        )),
        Some(at) => {
            let want = f.at.saturating_add(rules.delay(f.attempt).max(f.asked));
            if at != want {
                wrong.push(format!(
                    "{run} failed at {} (attempt {}, asked to wait {} ms) is retried at {}, not {}",
                    ts(f.at),
                    f.attempt,
                    f.asked,
                    ts(at),
                    ts(want)
                ));
            }
        }
        None if left && f.covered && !paused => wrong.push(format!(
            "{run} failed with attempts left (attempt {} of {}) and no retry",
            f.attempt,
            rules.retries + 1
        )),
        None => {}
    }
    if f.covered && !left && !f.failed_out {
        wrong.push(format!(
            "{run} failed its last attempt ({}) and did not fail out",
            f.attempt
        ));
    }
    let should_hold = f.asked > rules.budget && (f.retry_at.is_some() || (!f.covered && !streak));
    match f.hold {
        Some((asked, until))
            if !should_hold || asked != f.asked || until != f.at.saturating_add(f.asked) =>
        {
            wrong.push(format!(
                "{run} held the job until {} for asking {asked} ms (budget {} ms, retried {})",
                ts(until),
                rules.budget,
                f.retry_at.is_some()
            ))
        }
        None if should_hold => wrong.push(format!(
            "{run} asked to wait {} ms, over the budget of {} ms, and held nothing",
            f.asked, rules.budget
        )),
        _ => {}
    }
    wrong
}
