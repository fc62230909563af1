//! The daylight-saving policy of a cron schedule: what a local time that does not exist
//! (spring forward) or exists twice (fall back) means. Cron's behaviour is the default;
//! a schedule may choose another explicitly, which no common scheduler offers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What to do with matching local times inside a spring-forward gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Gap {
    /// Fire once at the first instant after the gap, however many matching local times the
    /// gap swallowed (cronie's rule for fixed-time schedules).
    RunAtGapEnd,
    /// Local times that never happen do not fire.
    Skip,
}

/// Which pass of a repeated (fall-back) local time fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Fold {
    /// Only the first occurrence (cronie's rule for fixed-time schedules).
    First,
    /// Only the second occurrence.
    Last,
    /// Both: real elapsed time, as cron treats schedules with `*` in minute or hour.
    Both,
}

/// What a cron schedule does at daylight-saving changes: in a gap (spring forward) and in
/// a fold (fall back). Cron's default depends on the expression (`default_for`); a schedule
/// may choose either part explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DstPolicy {
    /// Matching local times that a spring-forward gap swallows.
    pub gap: Gap,
    /// Matching local times that a fall-back fold shows twice.
    pub fold: Fold,
}

impl DstPolicy {
    /// Fixed-time schedules (neither minute nor hour begins with `*`) keep their wall-clock
    /// promise: a skipped time runs right after the gap, a repeated one runs once. Others
    /// follow real elapsed time.
    pub const FIXED_TIME: DstPolicy = DstPolicy {
        gap: Gap::RunAtGapEnd,
        fold: Fold::First,
    };
    /// Real elapsed time: a local time that never happens does not fire, and one that happens
    /// twice fires twice (cron's rule for schedules with `*` in the minute or hour field).
    pub const ELAPSED: DstPolicy = DstPolicy {
        gap: Gap::Skip,
        fold: Fold::Both,
    };

    /// Cron's default for an expression: `FIXED_TIME` when it is fixed-time, else `ELAPSED`.
    pub fn default_for(fixed_time: bool) -> DstPolicy {
        if fixed_time {
            DstPolicy::FIXED_TIME
        } else {
            DstPolicy::ELAPSED
        }
    }
}

impl fmt::Display for DstPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gap = match self.gap {
            Gap::RunAtGapEnd => "run_at_gap_end",
            Gap::Skip => "skip",
        };
        let fold = match self.fold {
            Fold::First => "first",
            Fold::Last => "last",
            Fold::Both => "both",
        };
        write!(f, "gap: {gap}, fold: {fold}")
    }
}
