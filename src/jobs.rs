//! The state's jobs by creation sequence number: a hash map, because every step looks a
//! job up by its number many times and a B-tree walk over a million jobs misses the cache
//! at every level. Iteration (load, listings, erasure, invariant checks: never a tick) goes
//! in sequence order, so everything derived from it, and the serialized form, stays
//! deterministic and identical to a `BTreeMap<u64, JobRecord>`.
//!
//! The table also keeps, when asked to (`State::track_changes`), the sequence numbers of the
//! jobs handed out for mutation, so a host can write back only the jobs a step touched. The
//! marking sits in the mutating accessors themselves, the only way to change a job, so no
//! transition can forget it; when tracking is off it costs one never-taken branch.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Index;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::state::JobRecord;

/// Hashes a sequence number by Fibonacci multiplication: fixed (no random seed, so runs
/// are reproducible) and well spread for the consecutive numbers the state hands out.
#[derive(Default, Clone, Copy)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

/// Jobs keyed by sequence number. Boxed, so the table stays small and a job never moves.
#[derive(Clone, Default)]
pub(crate) struct Jobs {
    map: HashMap<u64, Box<JobRecord>, BuildHasherDefault<SeqHasher>>,
    /// `Some` while changes are tracked: the jobs handed out for mutation, in the order they
    /// were, with direct repeats folded (a tick visits one job through many accessors).
    touched: Option<Vec<u64>>,
}

impl Jobs {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn get(&self, seq: &u64) -> Option<&JobRecord> {
        self.map.get(seq).map(|b| &**b)
    }

    pub(crate) fn get_mut(&mut self, seq: &u64) -> Option<&mut JobRecord> {
        let job = self.map.get_mut(seq)?;
        if let Some(t) = &mut self.touched {
            mark(t, *seq);
        }
        Some(&mut **job)
    }

    pub(crate) fn insert(&mut self, seq: u64, job: JobRecord) -> Option<JobRecord> {
        self.mark(seq);
        self.map.insert(seq, Box::new(job)).map(|b| *b)
    }

    pub(crate) fn remove(&mut self, seq: &u64) -> Option<JobRecord> {
        let old = self.map.remove(seq).map(|b| *b);
        if old.is_some() {
            self.mark(*seq);
        }
        old
    }

    fn mark(&mut self, seq: u64) {
        if let Some(t) = &mut self.touched {
            mark(t, seq);
        }
    }

    /// Starts (`true`) or stops tracking; stopping forgets what was marked.
    pub(crate) fn track(&mut self, on: bool) {
        match (on, self.touched.is_some()) {
            (true, false) => self.touched = Some(Vec::new()),
            (false, true) => self.touched = None,
            _ => {}
        }
    }

    pub(crate) fn tracking(&self) -> bool {
        self.touched.is_some()
    }

    /// What was marked since the last call, ascending and without repeats; empty when not
    /// tracking.
    pub(crate) fn take_touched(&mut self) -> Vec<u64> {
        let Some(t) = &mut self.touched else {
            return Vec::new();
        };
        let mut all = std::mem::take(t);
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Sets tracking aside while a host puts records from its store back (they are what the
    /// store holds, so they are not changes to write); `resume_tracking` puts it back.
    pub(crate) fn suspend_tracking(&mut self) -> Option<Vec<u64>> {
        self.touched.take()
    }

    pub(crate) fn resume_tracking(&mut self, saved: Option<Vec<u64>>) {
        self.touched = saved;
    }

    /// In sequence order.
    pub(crate) fn iter(&self) -> std::vec::IntoIter<(&u64, &JobRecord)> {
        let mut all: Vec<(&u64, &JobRecord)> = self.map.iter().map(|(k, v)| (k, &**v)).collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
    }

    /// In sequence order. Marks every job when tracking: any of them may be changed.
    pub(crate) fn iter_mut(&mut self) -> std::vec::IntoIter<(&u64, &mut JobRecord)> {
        if let Some(t) = &mut self.touched {
            t.extend(self.map.keys().copied());
        }
        let mut all: Vec<(&u64, &mut JobRecord)> =
            self.map.iter_mut().map(|(k, v)| (k, &mut **v)).collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
    }

    /// In sequence order.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut JobRecord> {
        self.iter_mut().map(|(_, v)| v)
    }
}

/// Appends `seq` unless it is the last one marked.
fn mark(touched: &mut Vec<u64>, seq: u64) {
    if touched.last() != Some(&seq) {
        touched.push(seq);
    }
}

impl<'a> IntoIterator for &'a Jobs {
    type Item = (&'a u64, &'a JobRecord);
    type IntoIter = std::vec::IntoIter<(&'a u64, &'a JobRecord)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Index<&u64> for Jobs {
    type Output = JobRecord;
    fn index(&self, seq: &u64) -> &JobRecord {
        self.get(seq).expect("no job with this sequence number")
    }
}

/// Equal when the same jobs are held; what is being tracked is not part of the table.
impl PartialEq for Jobs {
    fn eq(&self, other: &Self) -> bool {
        self.map.len() == other.map.len()
            && self
                .map
                .iter()
                .all(|(k, v)| other.map.get(k).is_some_and(|w| v == w))
    }
}

impl Eq for Jobs {}

/// The same form as a `BTreeMap<u64, JobRecord>`: a map in sequence order.
impl Serialize for Jobs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Jobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<u64, JobRecord>::deserialize(d)?;
        let mut jobs = Jobs::default();
        jobs.map.reserve(map.len());
        for (seq, job) in map {
            jobs.insert(seq, job);
        }
        Ok(jobs)
    }
}
