//! What a calendar schedule works out once and keeps: a roll's targets by stretch, each
//! month's chosen business day, business-day searches' answers, the stretches of time
//! known to hold no excluded instant, counts over whole years and months. A host asks a
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

/// Facts that hold over stretches of time, by where each stretch starts: from `start` up
/// to `end` (exclusive; `None`: from `start` on). Two memos are made of it:
///
/// - a business-day search's answers (`picked_next`): from `t`, the first picked due time
///   is `answer`, so it is the answer from any instant in `[t, answer)` too, and from any
///   instant after `t` when there is none; the stretch's end is the answer;
/// - the stretches known to hold no excluded instant (`kept_next`): from a kept due time to
///   the next excluded stretch's start.
///
/// A host asks about a few instants again and again (each job's frontier, each check), so
/// many stretches are kept, not only the last.
#[derive(Clone, Default)]
pub(super) struct Stretches(Arc<Mutex<BTreeMap<i64, Option<i64>>>>);

impl Stretches {
    /// The end of a kept stretch holding `t`, if any.
    pub(super) fn holding(&self, t: i64) -> Option<Option<i64>> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (_, &end) = kept.range(..=t).next_back()?;
        end.is_none_or(|e| t < e).then_some(end)
    }

    /// Keeps `[start, end)`.
    pub(super) fn keep(&self, start: i64, end: Option<i64>) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= MEMO_ENTRIES {
            kept.clear();
        }
        kept.insert(start, end);
    }
}
