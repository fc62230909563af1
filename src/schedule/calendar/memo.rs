//! What a calendar schedule works out once and keeps: a roll's targets by stretch, each
//! month's chosen business day, the last business-day search's answer, the stretches of
//! time known to hold no excluded instant. A host asks a
//! schedule again and again about the same few days (each step, each self-check, each
//! catch-up batch), and without these each question walks months or thousands of sources.
//!
//! Memos, not state: derived from the schedule alone, shared by its clones, never
//! compared, stored or shown; an answer is the same with or without them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The most entries a memo keeps (it starts afresh past it): a long-lived schedule meets a
/// few stretches and months a year.
const MEMO_ENTRIES: usize = 256;

/// Answers by key, at most `MEMO_ENTRIES` of them.
pub(super) struct Memo<K, V>(Arc<Mutex<BTreeMap<K, V>>>);

impl<K, V> Clone for Memo<K, V> {
    fn clone(&self) -> Self {
        Memo(Arc::clone(&self.0))
    }
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo(Arc::default())
    }
}

impl<K: Ord, V: Clone> Memo<K, V> {
    /// The answer kept for `key`, or `work()`'s, kept.
    pub(super) fn get_or(&self, key: K, work: impl FnOnce() -> V) -> V {
        if let Some(v) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return v.clone();
        }
        // Worked out without the lock: the work may ask this memo again.
        let v = work();
        let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(key, v.clone());
        v
    }
}

/// Answers of business-day searches (`picked_next`), by the instant searched from: from
/// `t`, the first picked due time is `answer`, so it is the answer from any instant in
/// `[t, answer)` too (any instant after `t`, when there is none). A host asks about a few
/// instants again and again (each job's frontier, each check), so one kept answer was not
/// enough: each question of a bench's 64 instants searched the month again.
#[derive(Clone, Default)]
pub(super) struct PickMemo(Arc<Mutex<BTreeMap<i64, Option<i64>>>>);

impl PickMemo {
    /// A kept answer that holds for `t`, if any.
    pub(super) fn answer(&self, t: i64) -> Option<Option<i64>> {
        let picks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (_, &answer) = picks.range(..=t).next_back()?;
        answer.is_none_or(|a| t < a).then_some(answer)
    }

    pub(super) fn keep(&self, t: i64, answer: Option<i64>) {
        let mut picks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if picks.len() >= MEMO_ENTRIES {
            picks.clear();
        }
        picks.insert(t, answer);
    }
}

/// Stretches of time `[start, end)` known to hold no excluded instant, by start: a due time
/// inside one is kept without a look at the stretches around it (`kept_next`).
#[derive(Clone, Default)]
pub(super) struct Gaps(Arc<Mutex<BTreeMap<i64, i64>>>);

impl Gaps {
    /// Whether `t` lies in a stretch kept as free of exclusions.
    pub(super) fn hold(&self, t: i64) -> bool {
        let gaps = self.0.lock().unwrap_or_else(|p| p.into_inner());
        gaps.range(..=t)
            .next_back()
            .is_some_and(|(_, &end)| t < end)
    }

    /// Keeps `[start, end)` as free of exclusions.
    pub(super) fn keep(&self, start: i64, end: i64) {
        let mut gaps = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if gaps.len() >= MEMO_ENTRIES {
            gaps.clear();
        }
        gaps.insert(start, end);
    }
}
