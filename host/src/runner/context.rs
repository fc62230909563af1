//! What a run covers, told to its command in environment variables, so a command that
//! catches up or backfills knows which due times it is doing (a report for the right day,
//! a sync of the right window) and can make its own work idempotent.
//!
//! | variable | value |
//! |---|---|
//! | `DUETIME_DUE` | the newest due time the run covers (RFC 3339); unset for a manual run |
//! | `DUETIME_COVERS_FROM`, `DUETIME_COVERS_TO` | the first and last due time covered; unset for a manual run |
//! | `DUETIME_COVERS_COUNT` | how many due times it covers (`0` for a manual run) |
//! | `DUETIME_TRIGGER` | `scheduled`, `catch_up`, `buffered`, `retry`, `repeat`, `manual` or `backfill` |
//! | `DUETIME_ATTEMPT` | `1` for the first attempt at these due times, `2` for the first retry, ... |
//! | `DUETIME_IDEMPOTENCY_KEY` | the same for every attempt at the same due times (retries, repeats) |

use duetime::{Covers, JobName, MissCause, RunId, Trigger};
use serde::{Deserialize, Serialize};

/// Why a run started, as its command is told: the core's trigger, with a catch-up of due
/// times a person asked for (`duetime backfill`) told apart as `backfill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerName {
    Scheduled,
    CatchUp,
    Buffered,
    Retry,
    Repeat,
    Manual,
    Backfill,
}

impl TriggerName {
    /// The core's trigger; `backfill` for a catch-up whose due times were late because a
    /// person asked for them (`Start::late`), since the core's trigger alone does not tell
    /// a backfill from a catch-up after downtime. A retry or repeat of them is told as
    /// such (`retry`, `repeat`), its cover's cause aside.
    pub fn of(trigger: Trigger, late: Option<MissCause>) -> TriggerName {
        match trigger {
            Trigger::CatchUp if late == Some(MissCause::Backfill) => TriggerName::Backfill,
            Trigger::Schedule => TriggerName::Scheduled,
            Trigger::CatchUp => TriggerName::CatchUp,
            Trigger::Buffered => TriggerName::Buffered,
            Trigger::Retry => TriggerName::Retry,
            Trigger::Repeat => TriggerName::Repeat,
            Trigger::Manual => TriggerName::Manual,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TriggerName::Scheduled => "scheduled",
            TriggerName::CatchUp => "catch_up",
            TriggerName::Buffered => "buffered",
            TriggerName::Retry => "retry",
            TriggerName::Repeat => "repeat",
            TriggerName::Manual => "manual",
            TriggerName::Backfill => "backfill",
        }
    }
}

/// What one run covers and why it started (kept in `run.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunContext {
    pub trigger: TriggerName,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<Covers>,
    pub idempotency_key: String,
}

impl RunContext {
    /// The context of a `Start`. The key names the job and the due times covered, which
    /// stay the same across retries and repeats (new run ids, same cover); a manual run
    /// covers none and is never retried, so its own run id is its key.
    pub fn new(
        job: &JobName,
        run: RunId,
        trigger: TriggerName,
        attempt: u32,
        covers: Option<Covers>,
    ) -> RunContext {
        let idempotency_key = match covers {
            Some(c) => format!("{job}:{}..{}", c.from, c.to),
            None => format!("{job}:manual:{run}"),
        };
        RunContext {
            trigger,
            attempt,
            covers,
            idempotency_key,
        }
    }

    /// The `DUETIME_*` variables, in a fixed order.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut vars = Vec::with_capacity(7);
        if let Some(c) = self.covers {
            vars.push(("DUETIME_DUE", c.to.to_string()));
            vars.push(("DUETIME_COVERS_FROM", c.from.to_string()));
            vars.push(("DUETIME_COVERS_TO", c.to.to_string()));
        }
        let count = self.covers.map_or(0, |c| c.count);
        vars.push(("DUETIME_COVERS_COUNT", count.to_string()));
        vars.push(("DUETIME_TRIGGER", self.trigger.name().to_string()));
        vars.push(("DUETIME_ATTEMPT", self.attempt.to_string()));
        vars.push(("DUETIME_IDEMPOTENCY_KEY", self.idempotency_key.clone()));
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(from: &str, to: &str, count: u64) -> Covers {
        Covers {
            from: from.parse().unwrap(),
            to: to.parse().unwrap(),
            count,
        }
    }

    #[test]
    fn only_a_catch_up_of_backfilled_due_times_is_told_as_a_backfill() {
        let backfill = Some(MissCause::Backfill);
        assert_eq!(
            TriggerName::of(Trigger::CatchUp, backfill),
            TriggerName::Backfill
        );
        let down = Some(MissCause::Down);
        assert_eq!(
            TriggerName::of(Trigger::CatchUp, down),
            TriggerName::CatchUp
        );
        assert_eq!(
            TriggerName::of(Trigger::Retry, backfill),
            TriggerName::Retry
        );
        assert_eq!(
            TriggerName::of(Trigger::Repeat, backfill),
            TriggerName::Repeat
        );
        assert_eq!(
            TriggerName::of(Trigger::Schedule, None),
            TriggerName::Scheduled
        );
    }

    #[test]
    fn the_key_is_the_same_for_every_attempt_at_the_same_due_times() {
        let job = JobName::new("report").unwrap();
        let c = covers("2025-03-01T00:00:00Z", "2025-03-01T05:00:00Z", 6);
        let first = RunContext::new(&job, RunId(3), TriggerName::Backfill, 1, Some(c));
        let retry = RunContext::new(&job, RunId(9), TriggerName::Retry, 2, Some(c));
        assert_eq!(first.idempotency_key, retry.idempotency_key);
        assert_eq!(
            first.idempotency_key,
            "report:2025-03-01T00:00:00Z..2025-03-01T05:00:00Z"
        );
        let other = RunContext::new(&job, RunId(3), TriggerName::Scheduled, 1, None);
        assert_eq!(other.idempotency_key, "report:manual:r3");
    }

    #[test]
    fn a_batch_tells_its_range_and_the_newest_due_time() {
        let job = JobName::new("report").unwrap();
        let c = covers("2025-03-01T00:00:00Z", "2025-03-01T05:00:00Z", 6);
        let env = RunContext::new(&job, RunId(3), TriggerName::Backfill, 1, Some(c)).env();
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("DUETIME_DUE"), Some("2025-03-01T05:00:00Z"));
        assert_eq!(get("DUETIME_COVERS_FROM"), Some("2025-03-01T00:00:00Z"));
        assert_eq!(get("DUETIME_COVERS_COUNT"), Some("6"));
        assert_eq!(get("DUETIME_TRIGGER"), Some("backfill"));
        let manual = RunContext::new(&job, RunId(4), TriggerName::Manual, 1, None).env();
        assert!(!manual.iter().any(|(n, _)| *n == "DUETIME_DUE"));
    }

    #[test]
    fn trigger_names_are_their_serde_names() {
        for t in [
            TriggerName::Scheduled,
            TriggerName::CatchUp,
            TriggerName::Buffered,
            TriggerName::Retry,
            TriggerName::Repeat,
            TriggerName::Manual,
            TriggerName::Backfill,
        ] {
            assert_eq!(serde_json::to_value(t).unwrap(), t.name());
        }
    }
}
