//! Calendars as instants: the excluded stretches of absolute time a schedule's calendars make
//! in its zone, merged, found by window.
//!
//! The daylight-saving rule for a span's ends (one rule for both ends): a local minute `L`
//! becomes **the first instant at which the zone's clock reads `L` or later**. So a boundary
//! inside a spring-forward gap is the gap's end (the clock never reads 02:30 on that day in
//! New York, it first reads 03:00 EDT or later), and a boundary inside a fall-back fold is
//! its first pass (01:30 EDT, not 01:30 EST). Each span is then one unbroken stretch of
//! instants `[boundary(from), boundary(until))`, possibly empty (a day a zone skipped
//! whole, like Apia's 30 December 2011), and a due time is excluded when it lies in one.
//!
//! Non-yearly spans are turned into instants once, when the schedule is built; yearly spans
//! are shifted into each year a window asks about, once a year (kept in a memo), so a
//! window's cost is the stretches of the years it covers (plus a binary search among the
//! fixed ones).

use std::sync::Arc;

use crate::schedule::zone::Zone;

use super::memo::Memo;
use super::{Calendar, LocalMinute};

/// A millisecond day, and the reach of the searches around a window.
pub(crate) const DAY_MS: i64 = 86_400_000;
/// The local years yearly spans are shifted into (as cron's due times: years 1 to 9999).
const LAST_YEAR: i64 = 9999;

/// The excluded instants of a set of calendars in one zone.
#[derive(Clone, Debug)]
pub(crate) struct Exclusions {
    zone: Zone,
    /// Non-yearly spans as instants `[start, end)` in ms, merged and sorted.
    fixed: Vec<(i64, i64)>,
    /// The longest merged fixed stretch, so a window finds every one that reaches into it.
    fixed_reach: i64,
    /// Yearly spans in local minutes, as written (shifted by whole years when asked).
    yearly: Vec<(LocalMinute, LocalMinute)>,
    /// The yearly spans shifted into each local year asked about, as instants (`memo.rs`).
    yearly_in: Memo<i64, Arc<[(i64, i64)]>>,
}

impl Exclusions {
    /// The exclusions `calendars` make in `zone`.
    pub(crate) fn new(zone: Zone, calendars: &[Calendar]) -> Exclusions {
        let mut yearly = Vec::new();
        let mut fixed = Vec::new();
        for c in calendars {
            for s in &c.spans {
                if c.yearly {
                    yearly.push((s.from, s.until));
                } else {
                    fixed.push((boundary(&zone, s.from), boundary(&zone, s.until)));
                }
            }
        }
        yearly.sort_unstable();
        let fixed = merge(fixed);
        let fixed_reach = fixed.iter().map(|(s, e)| e - s).max().unwrap_or(0);
        Exclusions {
            zone,
            fixed,
            fixed_reach,
            yearly,
            yearly_in: Memo::default(),
        }
    }

    /// The end of the last stretch that does not recur yearly: after it, only yearly
    /// spans exclude.
    pub(crate) fn fixed_end(&self) -> i64 {
        self.fixed.last().map_or(i64::MIN, |&(_, e)| e)
    }

    /// The zone they are in.
    pub(crate) fn zone(&self) -> &Zone {
        &self.zone
    }

    /// The first instant whose local reading is `local_ms` (local ms since 1970) or later.
    pub(crate) fn boundary_ms(&self, local_ms: i64) -> i64 {
        boundary_ms(&self.zone, local_ms)
    }

    /// The local reading (ms since 1970-01-01T00:00 local) of instant `ms`.
    pub(crate) fn local_ms(&self, ms: i64) -> i64 {
        let offset = self.zone.offset_at(ms.div_euclid(1000));
        ms.saturating_add(offset * 1000)
    }

    /// The merged excluded stretches that overlap `[lo, hi)`, sorted. A stretch that runs on
    /// past the window may be cut short of stretches it touches outside it.
    pub(crate) fn window(&self, lo: i64, hi: i64) -> Vec<(i64, i64)> {
        let mut raw: Vec<(i64, i64)> = Vec::new();
        let from = self
            .fixed
            .partition_point(|&(s, _)| s < lo.saturating_sub(self.fixed_reach));
        raw.extend(
            self.fixed[from..]
                .iter()
                .take_while(|&&(s, _)| s < hi)
                .filter(|&&(_, e)| e > lo),
        );
        if !self.yearly.is_empty() {
            // The window in local minutes, widened by a day each side: a span outside it
            // cannot reach the window whatever the offsets, so it is skipped before the
            // (dearer) turn of its ends into instants.
            let local = |ms: i64| self.local_ms(ms).div_euclid(60_000);
            let (lo_m, hi_m) = (local(lo) - 1440, local(hi.saturating_sub(1)) + 1440);
            let year = |m: i64| LocalMinute(m).year();
            let (y0, y1) = (year(lo_m) - 1, year(hi_m).min(LAST_YEAR));
            for y in y0.max(1)..=y1 {
                let shifted = self.yearly_stretches(y);
                raw.extend(shifted.iter().filter(|&&(s, e)| s < hi && e > lo));
            }
        }
        merge(raw)
    }

    /// Whether the zone's clock jumps ahead a whole day or more between instants `lo` and
    /// `hi` (ms), emptying a local day (Apia's 30 December 2011): a day whose instants
    /// are none is no business day.
    pub(crate) fn skips_a_day(&self, lo: i64, hi: i64) -> bool {
        let mut seg = self.zone.segment_at(lo.div_euclid(1000));
        while seg.end.is_some_and(|e| e.saturating_mul(1000) < hi) {
            let next = self.zone.segment(seg.index + 1);
            if next.offset - seg.offset >= 86_400 {
                return true;
            }
            seg = next;
        }
        false
    }

    /// The yearly spans shifted into local year `y` (both ends there or after, as written),
    /// as instants: worked out once a year.
    fn yearly_stretches(&self, y: i64) -> Arc<[(i64, i64)]> {
        self.yearly_in.get_or(y, || {
            self.yearly
                .iter()
                .filter_map(|&(f, u)| {
                    let k = y - f.year();
                    let (f, u) = (f.shifted_years(k)?, u.shifted_years(k)?);
                    Some((boundary(&self.zone, f), boundary(&self.zone, u)))
                })
                .collect()
        })
    }

    /// The excluded stretch holding instant `u`, whole (followed through stretches it
    /// touches), or `None` when `u` is not excluded.
    pub(crate) fn containing(&self, u: i64) -> Option<(i64, i64)> {
        let (mut s, mut e) = self.window(u, u + 1).first().copied()?;
        while let Some(&(s2, e2)) = self.window(s - 1, s).first() {
            if e2 < s || s2 >= s {
                break;
            }
            s = s2;
        }
        while let Some(&(s2, e2)) = self.window(e, e + 1).first() {
            if s2 > e || e2 <= e {
                break;
            }
            e = e2;
        }
        Some((s, e))
    }

    /// The first excluded stretch that ends after `u` (holding `u` or after it), whole.
    pub(crate) fn next_from(&self, u: i64) -> Option<(i64, i64)> {
        if let Some(found) = self.containing(u) {
            return Some(found);
        }
        let mut lo = u;
        loop {
            let hi = lo.saturating_add(400 * DAY_MS);
            if let Some(&(s, _)) = self.window(lo, hi).iter().find(|&&(_, e)| e > u) {
                return self.containing(s);
            }
            let beyond_fixed = self.fixed.last().is_none_or(|&(_, e)| e <= hi);
            let beyond_years = LocalMinute(self.local_ms(hi).div_euclid(60_000)).year() > LAST_YEAR;
            if (self.yearly.is_empty() || beyond_years) && beyond_fixed || hi == i64::MAX {
                return None;
            }
            lo = hi;
        }
    }
}

/// Sorts and merges stretches, joining those that overlap or touch; drops empty ones.
fn merge(mut raw: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    raw.retain(|(s, e)| s < e);
    raw.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(raw.len());
    for (s, e) in raw {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// `boundary_ms` of a local minute.
fn boundary(zone: &Zone, m: LocalMinute) -> i64 {
    boundary_ms(zone, m.0.saturating_mul(60_000))
}

/// The first instant (ms) at which `zone`'s clock reads `local` (ms) or later: walk the
/// constant-offset segments from one surely before it; the first whose clock passes `local`
/// holds the answer (its start, when `local` fell in the gap before it).
fn boundary_ms(zone: &Zone, local: i64) -> i64 {
    let mut seg = zone.segment_at(local.div_euclid(1000).saturating_sub(2 * 86_400));
    loop {
        let offset = seg.offset.saturating_mul(1000);
        match seg.end {
            Some(end) if end.saturating_mul(1000).saturating_add(offset) <= local => {
                seg = zone.segment(seg.index + 1);
            }
            _ => {
                return seg
                    .start
                    .saturating_mul(1000)
                    .max(local.saturating_sub(offset))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::calendar::{CalendarName, Span};
    use crate::time::Timestamp;

    fn ms(t: &str) -> i64 {
        t.parse::<Timestamp>().unwrap().as_millis()
    }

    fn local(t: &str) -> i64 {
        let (m, _) = super::super::text::parse_span(&format!("{t}..9999-01-01")).unwrap();
        m.0 * 60_000
    }

    #[test]
    fn boundaries_in_gaps_take_the_gap_end_and_in_folds_the_first_pass() {
        let ny = Zone::named("America/New_York").unwrap();
        // 9 March 2025: 02:00 EST jumps to 03:00 EDT.
        assert_eq!(
            boundary_ms(&ny, local("2025-03-09T02:30")),
            ms("2025-03-09T07:00:00Z")
        );
        assert_eq!(
            boundary_ms(&ny, local("2025-03-09T01:59")),
            ms("2025-03-09T06:59:00Z")
        );
        assert_eq!(
            boundary_ms(&ny, local("2025-03-09T03:00")),
            ms("2025-03-09T07:00:00Z")
        );
        // 2 November 2025: 02:00 EDT falls back to 01:00 EST.
        assert_eq!(
            boundary_ms(&ny, local("2025-11-02T01:30")),
            ms("2025-11-02T05:30:00Z")
        );
        assert_eq!(
            boundary_ms(&ny, local("2025-11-02T02:00")),
            ms("2025-11-02T07:00:00Z")
        );
    }

    #[test]
    fn windows_merge_touching_spans_and_repeat_yearly_ones() {
        let name = CalendarName::new("h").unwrap();
        let spans = vec![
            Span::parse("2024-12-25", None).unwrap(),
            Span::parse("2024-12-26..2025-01-01", None).unwrap(),
            Span::parse("2024-02-29", None).unwrap(),
        ];
        let cal = Calendar::new(name, true, spans).unwrap();
        let ex = Exclusions::new(Zone::utc(), &[cal]);
        let w = ex.window(ms("2027-01-01T00:00:00Z"), ms("2029-01-01T00:00:00Z"));
        assert_eq!(
            w,
            vec![
                // Cut at the window: the 25th does not reach into it.
                (ms("2026-12-26T00:00:00Z"), ms("2027-01-02T00:00:00Z")),
                (ms("2027-12-25T00:00:00Z"), ms("2028-01-02T00:00:00Z")),
                (ms("2028-02-29T00:00:00Z"), ms("2028-03-01T00:00:00Z")),
                (ms("2028-12-25T00:00:00Z"), ms("2029-01-02T00:00:00Z")),
            ]
        );
        let found = ex.next_from(ms("2029-01-05T00:00:00Z"));
        assert_eq!(found.unwrap().0, ms("2029-12-25T00:00:00Z"));
        assert_eq!(
            ex.containing(ms("2028-12-31T12:00:00Z")).unwrap().0,
            ms("2028-12-25T00:00:00Z")
        );
    }
}
