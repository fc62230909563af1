//! The state's jobs by creation sequence number: a hash map, because every step looks a
//! job up by its number many times and a B-tree walk over a million jobs misses the cache
//! at every level. Iteration (load, listings, erasure, invariant checks: never a tick) goes
//! in sequence order, so everything derived from it, and the serialized form, stays
//! deterministic and identical to a `BTreeMap<u64, JobRecord>`.

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
pub(crate) struct Jobs(HashMap<u64, Box<JobRecord>, BuildHasherDefault<SeqHasher>>);

impl Jobs {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn get(&self, seq: &u64) -> Option<&JobRecord> {
        self.0.get(seq).map(|b| &**b)
    }

    pub fn get_mut(&mut self, seq: &u64) -> Option<&mut JobRecord> {
        self.0.get_mut(seq).map(|b| &mut **b)
    }

    pub fn insert(&mut self, seq: u64, job: JobRecord) -> Option<JobRecord> {
        self.0.insert(seq, Box::new(job)).map(|b| *b)
    }

    pub fn remove(&mut self, seq: &u64) -> Option<JobRecord> {
        self.0.remove(seq).map(|b| *b)
    }

    /// In sequence order.
    pub fn iter(&self) -> std::vec::IntoIter<(&u64, &JobRecord)> {
        let mut all: Vec<(&u64, &JobRecord)> = self.0.iter().map(|(k, v)| (k, &**v)).collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
    }

    /// In sequence order.
    pub fn iter_mut(&mut self) -> std::vec::IntoIter<(&u64, &mut JobRecord)> {
        let mut all: Vec<(&u64, &mut JobRecord)> =
            self.0.iter_mut().map(|(k, v)| (k, &mut **v)).collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
    }

    /// In sequence order.
    pub fn keys(&self) -> std::vec::IntoIter<&u64> {
        let mut all: Vec<&u64> = self.0.keys().collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// In sequence order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut JobRecord> {
        self.iter_mut().map(|(_, v)| v)
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

impl PartialEq for Jobs {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .all(|(k, v)| other.0.get(k).is_some_and(|w| v == w))
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
        jobs.0.reserve(map.len());
        for (seq, job) in map {
            jobs.insert(seq, job);
        }
        Ok(jobs)
    }
}
