//! Cron schedules in a time zone: the compiled fields searched segment by segment through
//! the zone's transition table, with the daylight-saving policy applied at the seams.
//!
//! A UTC second `u` with local time `l = u + offset(u)` is a due time when
//! - `l` matches the fields and the fold policy admits this pass over `l` (`first`: no
//!   earlier second had local time `l`; `last`: no later one will; `both`: always), or
//! - `u` is the first second after a spring-forward gap, the gap policy is `run_at_gap_end`,
//!   and some local time inside the gap matches (all of them collapse into this one).
//!
//! Search and counting walk the constant-offset segments from the start instant; each
//! segment is a plain local-time range for `Matcher`, narrowed by the fold policy.

mod fields;
mod parse;

use std::fmt;

use serde::{Deserialize, Serialize};

use fields::Matcher;
// Named outside only through the unstable `internals` feature.
#[cfg(feature = "internals")]
pub use fields::Fields;
pub(crate) use fields::{LOCAL_END, LOCAL_MIN};
pub use parse::{wide_steps, CronError, Field, Problem, WideStep};

use super::dst::{DstPolicy, Fold, Gap};
use super::zone::Zone;
use crate::time::Timestamp;

/// A compiled cron expression in a zone.
#[derive(Clone)]
pub struct CronSchedule {
    matcher: Matcher,
    zone: Zone,
    /// The normalized expression without its zone (lower case, single spaces, macro kept).
    text: String,
    fixed_time: bool,
    /// The policy the user chose, if any; `policy()` falls back to cronie's default.
    explicit: Option<DstPolicy>,
    policy: DstPolicy,
}

impl CronSchedule {
    /// Parses `expr` (optionally prefixed `CRON_TZ=Area/City`) in zone `tz` (`None` means
    /// the prefix's zone, or UTC without one).
    ///
    /// # Errors
    ///
    /// A `CronError` naming the field, the text (cut to 80 characters) and what is
    /// accepted; `UnknownZone` or `ZoneConflict` for the zone.
    pub fn parse(expr: &str, tz: Option<&str>) -> Result<CronSchedule, CronError> {
        let parsed = parse::parse(expr)?;
        let zone_name = match (parsed.zone.as_deref(), tz) {
            (Some(a), Some(b)) if a != b => {
                return Err(CronError::ZoneConflict {
                    in_text: a.to_string(),
                    given: b.to_string(),
                })
            }
            (Some(a), _) => a,
            (None, Some(b)) => b,
            (None, None) => "UTC",
        };
        let zone = Zone::named(zone_name).ok_or_else(|| CronError::UnknownZone {
            text: zone_name.to_string(),
        })?;
        let policy = DstPolicy::default_for(parsed.fixed_time);
        Ok(CronSchedule {
            matcher: Matcher::new(parsed.fields),
            zone,
            text: parsed.text,
            fixed_time: parsed.fixed_time,
            explicit: None,
            policy,
        })
    }

    /// The same schedule under an explicit daylight-saving policy (`None` restores cron's).
    pub fn with_dst(mut self, policy: Option<DstPolicy>) -> Self {
        self.explicit = policy;
        self.policy = policy.unwrap_or(DstPolicy::default_for(self.fixed_time));
        self
    }

    /// The compiled form, one bit set per field: equal for two texts that mean the same
    /// (`jul` and `7`), whatever their normalized text. Unstable: `internals` only.
    #[cfg(feature = "internals")]
    pub fn fields(&self) -> &Fields {
        &self.matcher.fields
    }

    /// The zone its fields are read in.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    /// The expression as normalized text, without the zone.
    pub fn expr(&self) -> &str {
        &self.text
    }

    /// cronie's "fixed-time": neither the minute nor the hour field begins with `*`.
    pub fn is_fixed_time(&self) -> bool {
        self.fixed_time
    }

    /// The daylight-saving policy in force: the explicit one, else cron's default for this
    /// expression (`DstPolicy::default_for`).
    pub fn policy(&self) -> DstPolicy {
        self.policy
    }

    /// The policy the definition chose, if any (`None`: cron's default applies).
    pub fn explicit_policy(&self) -> Option<DstPolicy> {
        self.explicit
    }

    /// The first due time strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let mut u = t
            .as_secs_floor()
            .saturating_add(1)
            .max(LOCAL_MIN - 2 * 86_400);
        // Start in the segment holding the second before `u`: when `u` is the first instant
        // after a spring-forward gap, that gap's due time is `u` itself, and only the seam
        // check between the two segments sees it.
        let mut seg = self.zone.segment_at(u - 1);
        // Remembers that no local time in [lo, found) matches, so walking many segments to a
        // far-away match (Feb 29 from March) searches the calendar once, not once per segment.
        let mut memo: Option<(i64, Option<i64>)> = None;
        let mut next_local = |lo: i64| -> Option<i64> {
            if let Some((memo_lo, found)) = memo {
                if lo >= memo_lo && found.is_none_or(|f| lo <= f) {
                    return found;
                }
            }
            let found = self.matcher.next_local(lo);
            memo = Some((lo, found));
            found
        };
        loop {
            let (lo, hi) = self.local_range(&seg, u, seg.end);
            if lo < hi {
                match next_local(lo) {
                    Some(m) if m < hi => return Some(Timestamp::from_secs(m - seg.offset)),
                    // Nothing matches at or after `lo`: only a second pass over earlier local
                    // times (a fold) could still yield, so keep walking only while folds remain.
                    None if self.policy.fold == Fold::First => return None,
                    _ => {}
                }
            }
            let end = seg.end?;
            let next = self.zone.segment(seg.index + 1);
            if let Some((gap_lo, gap_hi)) = self.gap(&next) {
                if next_local(gap_lo).is_some_and(|m| m < gap_hi) {
                    return Some(Timestamp::from_secs(end));
                }
            }
            seg = next;
            u = end;
        }
    }

    /// The number of due times `d` with `after < d <= until`.
    pub fn count_in(&self, after: Timestamp, until: Timestamp) -> u64 {
        let first = after
            .as_secs_floor()
            .saturating_add(1)
            .max(LOCAL_MIN - 2 * 86_400);
        let stop = until.as_secs_floor().saturating_add(1); // exclusive
        if first >= stop {
            return 0;
        }
        let mut u = first;
        // As in `next_after`: a gap ending exactly at `first` has its due time at `first`.
        let mut seg = self.zone.segment_at(u - 1);
        let mut n = 0;
        loop {
            let end = seg.end.filter(|&e| e < stop);
            let (lo, hi) = self.local_range(&seg, u, Some(end.unwrap_or(stop)));
            n += self.matcher.count_local(lo, hi);
            let Some(end) = end else { return n };
            let next = self.zone.segment(seg.index + 1);
            if let Some((gap_lo, gap_hi)) = self.gap(&next) {
                let gap_has_match = self.matcher.next_local(gap_lo).is_some_and(|m| m < gap_hi);
                // The gap's due time is the instant after it; if that instant's own local time
                // matches, the next segment counts it already.
                if gap_has_match && !self.matcher.matches(end + next.offset) {
                    n += 1;
                }
            }
            seg = next;
            u = end;
        }
    }

    /// The local-time range `[lo, hi)` of UTC seconds `[u, end)` in `seg`, narrowed by the
    /// fold policy.
    fn local_range(
        &self,
        seg: &crate::schedule::zone::Segment,
        u: i64,
        end: Option<i64>,
    ) -> (i64, i64) {
        let mut lo = u.saturating_add(seg.offset);
        let mut hi = end.map_or(LOCAL_END, |e| e.saturating_add(seg.offset));
        match self.policy.fold {
            Fold::First => lo = lo.max(seg.seen_before),
            Fold::Last => hi = hi.min(seg.shown_after),
            Fold::Both => {}
        }
        (lo, hi)
    }

    /// The local times no segment shows just before `next` begins (a spring-forward gap),
    /// if the policy turns them into a due time at `next.start`.
    fn gap(&self, next: &crate::schedule::zone::Segment) -> Option<(i64, i64)> {
        if self.policy.gap != Gap::RunAtGapEnd {
            return None;
        }
        let gap_hi = next.start.saturating_add(next.offset);
        (next.seen_before < gap_hi).then_some((next.seen_before, gap_hi))
    }
}

/// Equal when they yield the same due times: the same fields, zone and policy. Spelling
/// does not count (`@daily` equals `0 0 * * *`), but cronie's fixed-time flag does, since it
/// picks the default policy (`0-59 0-23 * * *` is fixed-time, `* * * * *` is not).
impl PartialEq for CronSchedule {
    fn eq(&self, other: &Self) -> bool {
        self.matcher.fields == other.matcher.fields
            && self.zone == other.zone
            && self.explicit == other.explicit
            && self.fixed_time == other.fixed_time
    }
}

impl Eq for CronSchedule {}

impl fmt::Debug for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cron({self}")?;
        if let Some(p) = self.explicit {
            write!(f, ", {p}")?;
        }
        f.write_str(")")
    }
}

/// The expression as it parses back: `CRON_TZ=Zone` first unless the zone is UTC.
impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.zone.is_utc() {
            write!(f, "CRON_TZ={} ", self.zone.name())?;
        }
        f.write_str(&self.text)
    }
}

/// How a cron schedule is stored: the text, the zone and the explicit policy. Compiling on
/// load keeps one source of truth and lets a newer build read an older state.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct CronSpec {
    pub expr: String,
    #[serde(default = "utc_name")]
    pub tz: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<DstPolicy>,
}

fn utc_name() -> String {
    "UTC".to_string()
}

impl TryFrom<CronSpec> for CronSchedule {
    type Error = CronError;
    fn try_from(spec: CronSpec) -> Result<Self, CronError> {
        Ok(CronSchedule::parse(&spec.expr, Some(&spec.tz))?.with_dst(spec.dst))
    }
}

impl From<CronSchedule> for CronSpec {
    fn from(s: CronSchedule) -> CronSpec {
        CronSpec {
            expr: s.text,
            tz: s.zone.name().to_string(),
            dst: s.explicit,
        }
    }
}
