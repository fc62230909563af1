//! Time zones as tables of constant-offset segments, built once per zone from chrono-tz.
//!
//! chrono-tz answers "what is the offset at this instant" but not "when does it change",
//! and the daylight-saving policy is all about the changes. So each zone is scanned once
//! into a sorted table of transitions; a cron search then costs one binary search into that
//! table instead of two or three chrono-tz lookups per call. Tables are pure functions of the
//! zone database compiled into the binary, so sharing them through a process-wide cache
//! cannot leak anything into a trace.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{Offset, TimeZone};
use chrono_tz::Tz;

/// The scan covers 1800-2100: the zone database has no transition before 1800, and
/// chrono-tz's tables end before 2100 (the offset stays constant after them). Both facts
/// are checked for every zone by `tests::every_zone_hourly` (ignored: run it when the zone
/// database changes).
const SCAN_FROM: i64 = -5_364_662_400; // 1800-01-01T00:00:00Z
const SCAN_TO: i64 = 4_102_444_800; // 2100-01-01T00:00:00Z
/// From this UTC second on, every zone's offset is constant (`SCAN_TO`): what repeats in
/// local time repeats in instants too (a calendar schedule's search for a seldom due time
/// stops after one Gregorian cycle past it).
pub(crate) const CONSTANT_FROM: i64 = SCAN_TO;
/// Lookups start from a bucket of 2^24 s (about 194 days) of the scanned range, which holds
/// at most a few transitions, instead of a binary search over the whole table.
const BUCKET_SHIFT: u32 = 24;
/// The scan's step: no two transitions of a zone are closer than this, so a step holds at
/// most one change, found by bisection (measured over every zone at one-hour resolution:
/// the closest pair is a week apart; see the same test). Six days rather than one makes a
/// zone's first use six times cheaper (about 18,000 lookups of chrono-tz instead of
/// 110,000), which a short simulator run or a daemon's start pays for every zone it meets.
const SCAN_STEP: i64 = 6 * 86_400;

/// An IANA zone with its transition table.
#[derive(Clone)]
pub struct Zone {
    tz: Tz,
    table: Arc<Table>,
}

/// Constant-offset segments: segment `i` covers UTC seconds `[starts[i], starts[i + 1])` with
/// local time `utc + offsets[i]`.
#[derive(Debug)]
pub(crate) struct Table {
    starts: Vec<i64>,
    offsets: Vec<i64>,
    /// For segment `i`: the end (exclusive) of the latest local time shown by any earlier
    /// segment, so local times below it inside segment `i` are a second (or later) pass.
    seen_before: Vec<i64>,
    /// For segment `i`: the earliest local time any later segment shows, so local times at
    /// or above it inside segment `i` will be shown again.
    shown_after: Vec<i64>,
    /// For each bucket of the scanned range, the segment holding the bucket's first second.
    buckets: Vec<u32>,
}

/// A stretch of a zone's history with one UTC offset, as the daylight-saving walk sees it;
/// a host reads where offsets change from these (`Zone::segment_at`, then the next index).
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// Its place in the zone's table; the next segment is `index + 1`.
    pub index: usize,
    /// Its start in UTC seconds.
    pub start: i64,
    /// Exclusive end in UTC seconds; `None` for the last segment.
    pub end: Option<i64>,
    /// Local time minus UTC, in seconds, throughout.
    pub offset: i64,
    /// The end of the latest local time an earlier segment showed (a fold's second pass).
    pub(crate) seen_before: i64,
    /// The earliest local time a later segment shows (this pass will come again).
    pub(crate) shown_after: i64,
}

impl Zone {
    /// UTC, which has no daylight saving.
    pub fn utc() -> Zone {
        Zone::from_tz(Tz::UTC)
    }

    /// Looks a zone up by IANA name (`America/New_York`, `UTC`).
    pub fn named(name: &str) -> Option<Zone> {
        name.parse::<Tz>().ok().map(Zone::from_tz)
    }

    /// The zone of a chrono-tz name, with its transition table (scanned once per process and
    /// shared).
    pub fn from_tz(tz: Tz) -> Zone {
        static TABLES: OnceLock<Mutex<BTreeMap<&'static str, Arc<Table>>>> = OnceLock::new();
        let tables = TABLES.get_or_init(|| Mutex::new(BTreeMap::new()));
        let mut tables = tables
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let table = tables
            .entry(tz.name())
            .or_insert_with(|| Arc::new(Table::scan(tz)))
            .clone();
        Zone { tz, table }
    }

    /// Its IANA name.
    pub fn name(&self) -> &'static str {
        self.tz.name()
    }

    /// The chrono-tz zone, for printing local times.
    pub fn tz(&self) -> Tz {
        self.tz
    }

    /// Whether it is UTC (views then print no zone).
    pub fn is_utc(&self) -> bool {
        self.tz == Tz::UTC
    }

    /// The segment holding UTC second `utc`.
    pub fn segment_at(&self, utc: i64) -> Segment {
        self.segment(self.table.index_at(utc))
    }

    /// The segment at `index` of the zone's table (from `segment_at`'s `index`, plus or
    /// minus one to walk).
    ///
    /// # Panics
    ///
    /// When `index` is not in the table: the neighbours of a segment exist unless its `end`
    /// is `None` (the last) or its index is 0 (the first).
    pub fn segment(&self, index: usize) -> Segment {
        let t = &self.table;
        Segment {
            index,
            start: t.starts[index],
            end: t.starts.get(index + 1).copied(),
            offset: t.offsets[index],
            seen_before: t.seen_before[index],
            shown_after: t.shown_after[index],
        }
    }

    /// The offset (local minus UTC, in seconds) at UTC second `utc`.
    pub fn offset_at(&self, utc: i64) -> i64 {
        self.segment_at(utc).offset
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.tz == other.tz
    }
}

impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn chrono_offset(tz: Tz, utc: i64) -> i64 {
    let Some(t) = chrono::DateTime::from_timestamp(utc, 0) else {
        return 0;
    };
    i64::from(
        tz.offset_from_utc_datetime(&t.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

impl Table {
    fn scan(tz: Tz) -> Table {
        let mut starts = vec![i64::MIN];
        let mut offsets = vec![chrono_offset(tz, SCAN_FROM)];
        let mut t = SCAN_FROM;
        let mut current = offsets[0];
        while t < SCAN_TO {
            let next = t + SCAN_STEP;
            let offset = chrono_offset(tz, next);
            if offset != current {
                // The change lies in (t, next]: find its first second by bisection.
                let (mut lo, mut hi) = (t, next);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if chrono_offset(tz, mid) == current {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                starts.push(hi);
                offsets.push(offset);
                current = offset;
            }
            t = next;
        }
        let n = starts.len();
        let mut seen_before = vec![i64::MIN; n];
        for i in 1..n {
            seen_before[i] = seen_before[i - 1].max(starts[i] + offsets[i - 1]);
        }
        let mut shown_after = vec![i64::MAX; n];
        for i in (0..n.saturating_sub(1)).rev() {
            shown_after[i] = shown_after[i + 1].min(starts[i + 1] + offsets[i + 1]);
        }
        let mut buckets = Vec::new();
        let mut i = 0;
        let mut bucket_start = SCAN_FROM;
        while bucket_start < SCAN_TO {
            while i + 1 < n && starts[i + 1] <= bucket_start {
                i += 1;
            }
            buckets.push(i as u32);
            bucket_start += 1 << BUCKET_SHIFT;
        }
        Table {
            starts,
            offsets,
            seen_before,
            shown_after,
            buckets,
        }
    }

    /// The index of the segment holding UTC second `utc`.
    fn index_at(&self, utc: i64) -> usize {
        let starts = &self.starts;
        if starts.len() == 1 {
            return 0;
        }
        let bucket = utc
            .checked_sub(SCAN_FROM)
            .filter(|&d| d >= 0)
            .and_then(|d| self.buckets.get((d >> BUCKET_SHIFT) as usize));
        match bucket {
            Some(&first) => {
                let mut i = first as usize;
                while starts.get(i + 1).is_some_and(|&s| s <= utc) {
                    i += 1;
                }
                i
            }
            None => starts.partition_point(|&s| s <= utc).saturating_sub(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_york_2025_transitions_are_exact() {
        let zone = Zone::named("America/New_York").unwrap();
        // 2025-03-09 02:00 EST -> 03:00 EDT at 07:00Z; 2025-11-02 02:00 EDT -> 01:00 EST at 06:00Z.
        assert_eq!(zone.offset_at(1_741_503_599), -5 * 3600);
        assert_eq!(zone.offset_at(1_741_503_600), -4 * 3600);
        assert_eq!(zone.offset_at(1_762_063_199), -4 * 3600);
        assert_eq!(zone.offset_at(1_762_063_200), -5 * 3600);
        let seg = zone.segment_at(1_762_063_200);
        assert_eq!(seg.start, 1_762_063_200);
        // Local 01:00-02:00 was already shown by the summer segment.
        assert_eq!(seg.seen_before, 1_762_063_200 - 4 * 3600);
    }

    /// The scan's step, checked exhaustively: every zone at every hour (shifted off the
    /// hour by 29 minutes) of 1800-2100, a century on either side of the scan constant,
    /// and no two of a zone's changes closer than the step. Too slow for every run (about
    /// a minute in release); run it when the zone database changes:
    /// `cargo test --release --lib -- --ignored every_zone_hourly`.
    #[test]
    #[ignore]
    fn every_zone_hourly() {
        const CENTURY: i64 = 100 * 365 * 86_400;
        for tz in chrono_tz::TZ_VARIANTS {
            let zone = Zone::from_tz(tz);
            for (edge, far) in [
                (SCAN_FROM, SCAN_FROM - CENTURY),
                (SCAN_TO, SCAN_TO + CENTURY),
            ] {
                let mut t = far.min(edge);
                while t <= far.max(edge) {
                    assert_eq!(
                        chrono_offset(tz, t),
                        chrono_offset(tz, edge),
                        "{} at {t}",
                        tz.name()
                    );
                    t += 86_400 * 29 + 3_607;
                }
            }
            let starts = &zone.table.starts;
            for pair in starts[1..].windows(2) {
                assert!(
                    pair[1] - pair[0] > SCAN_STEP,
                    "{} changes at {pair:?}",
                    tz.name()
                );
            }
            let mut t = SCAN_FROM + 1_740;
            while t < SCAN_TO {
                assert_eq!(
                    zone.offset_at(t),
                    chrono_offset(tz, t),
                    "{} at {t}",
                    tz.name()
                );
                t += 3_600;
            }
        }
    }

    #[test]
    fn bucketed_lookup_agrees_with_binary_search() {
        for name in [
            "America/New_York",
            "Australia/Lord_Howe",
            "Pacific/Apia",
            "UTC",
        ] {
            let zone = Zone::named(name).unwrap();
            let t = &zone.table;
            let mut probes = vec![i64::MIN, SCAN_FROM - 1, SCAN_FROM, SCAN_TO, i64::MAX];
            for &s in &t.starts[1..] {
                probes.extend([s - 1, s, s + 1]);
            }
            let mut u = SCAN_FROM;
            while u < SCAN_TO {
                probes.push(u);
                u += 86_400 * 7 + 3_601;
            }
            for u in probes {
                let want = t.starts.partition_point(|&s| s <= u).saturating_sub(1);
                assert_eq!(t.index_at(u), want, "{name} at {u}");
            }
        }
    }

    /// `seen_before` is a running maximum, in case a fold reached back past the whole
    /// segment before it (a clock set back by more than that segment lasted). No zone in
    /// the database does: every segment's end shows a later local time than any earlier
    /// segment's end, so the running maximum is the last end alone. Should a zone ever break
    /// this, the maximum is what keeps the second pass right, and this test says so (it is
    /// why a mutant dropping the maximum is listed as equivalent in mutants/equivalent.txt).
    #[test]
    fn no_fold_reaches_back_past_the_segment_before_it() {
        for tz in chrono_tz::TZ_VARIANTS {
            let t = Zone::from_tz(tz).table;
            for i in 1..t.starts.len() {
                let end_shown = t.starts[i] + t.offsets[i - 1];
                assert_eq!(t.seen_before[i], end_shown, "{} segment {i}", tz.name());
            }
        }
    }

    /// `shown_after` is a running minimum, in case a later segment began showing local
    /// times below the next segment's first (clocks set back twice before the first fold
    /// was over). No zone in the database does: every segment's first local time is below
    /// every later segment's, so the running minimum is the next segment's first alone.
    /// Should a zone ever break this, the minimum keeps `Fold::Last` right, and this test
    /// says so (it is why a mutant dropping the minimum is listed as equivalent in
    /// mutants/equivalent.txt).
    #[test]
    fn no_fold_reaches_forward_past_the_segment_after_it() {
        for tz in chrono_tz::TZ_VARIANTS {
            let t = Zone::from_tz(tz).table;
            for i in 0..t.starts.len() - 1 {
                let next_shown = t.starts[i + 1] + t.offsets[i + 1];
                assert_eq!(t.shown_after[i], next_shown, "{} segment {i}", tz.name());
            }
        }
    }

    #[test]
    fn unknown_names_are_none() {
        assert!(Zone::named("America/New_Yrok").is_none());
        assert!(Zone::named("").is_none());
        assert_eq!(Zone::named("UTC").unwrap().name(), "UTC");
    }

    /// The assumptions behind the scan, checked for every zone chrono-tz knows: constant
    /// offsets outside 1800-2100, and agreement with chrono-tz inside at hourly samples
    /// shifted off the daily grid (so a missed pair of close transitions would show).
    #[test]
    fn every_zone_agrees_with_chrono_tz() {
        for tz in chrono_tz::TZ_VARIANTS {
            let zone = Zone::from_tz(tz);
            for far in [-62_135_596_800, SCAN_FROM - 1, SCAN_TO, 253_402_300_799] {
                assert_eq!(
                    zone.offset_at(far),
                    chrono_offset(tz, far),
                    "{} at {far}",
                    tz.name()
                );
            }
            let mut t = SCAN_FROM + 1_799;
            while t < SCAN_TO {
                assert_eq!(
                    zone.offset_at(t),
                    chrono_offset(tz, t),
                    "{} at {t}",
                    tz.name()
                );
                t += 86_400 * 13 + 3_607;
            }
        }
    }
}
