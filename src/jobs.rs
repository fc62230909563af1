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

/// A job's creation sequence number: which job, in the state and in a store's rows
/// (`State::record`, `State::take_touched`, `State::from_parts`, `State::put_parts`).
///
/// A type of its own, where it was a bare `u64` that could be taken for a run id, a fence,
/// a count or milliseconds. The state hands out run ids (`RunId`) and fences (`Fence`) from
/// its counters too, and they say which run and which lease; a sequence number says which
/// job. It survives a serde round trip (it serializes as the bare number, the key of the
/// stored job table), and it orders the jobs' iteration and the ties in the wake index, so
/// everything derived from the state stays deterministic. `Display` prints the bare
/// number. The state's counter of them (`next_seq` in `Globals`) stays a plain number.
///
/// Its `Hash` is the number's own (one `write_u64`), so the job table hashes it as it
/// hashed the number.
///
/// # Examples
///
/// ```
/// use duetime::{Actor, Config, Event, JobDef, JobName, JobSeq, Now, Schedule, State};
///
/// let mut state = State::new(Config::default());
/// let t0 = "2025-06-01T00:00:00Z".parse()?;
/// let def = JobDef::new(JobName::new("report")?, Schedule::cron("@daily", None)?);
/// let upsert = Event::Upsert { def: Box::new(def), actor: Actor::new("ana") };
/// state.step(Now::at(t0), upsert, &mut Vec::new());
///
/// let seq = state.seq_of_name("report").expect("defined");
/// assert_eq!(seq, JobSeq(0)); // the first job made
/// assert_eq!(seq.to_string(), "0");
/// assert_eq!(state.record(seq).map(|r| r.def().name.as_str()), Some("report"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct JobSeq(pub u64);

impl std::fmt::Display for JobSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// Jobs keyed by sequence number. Boxed, so the table stays small and a job never moves.
#[derive(Clone, Default)]
pub(crate) struct Jobs {
    map: HashMap<JobSeq, Box<JobRecord>, BuildHasherDefault<SeqHasher>>,
    /// `Some` while changes are tracked: the jobs handed out for mutation, in the order they
    /// were, with direct repeats folded (a tick visits one job through many accessors).
    touched: Option<Vec<JobSeq>>,
}

impl Jobs {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn get(&self, seq: &JobSeq) -> Option<&JobRecord> {
        self.map.get(seq).map(|b| &**b)
    }

    pub(crate) fn get_mut(&mut self, seq: &JobSeq) -> Option<&mut JobRecord> {
        let job = self.map.get_mut(seq)?;
        if let Some(t) = &mut self.touched {
            mark(t, *seq);
        }
        Some(&mut **job)
    }

    pub(crate) fn insert(&mut self, seq: JobSeq, job: JobRecord) -> Option<JobRecord> {
        self.mark(seq);
        self.map.insert(seq, Box::new(job)).map(|b| *b)
    }

    pub(crate) fn remove(&mut self, seq: &JobSeq) -> Option<JobRecord> {
        let old = self.map.remove(seq).map(|b| *b);
        if old.is_some() {
            self.mark(*seq);
        }
        old
    }

    fn mark(&mut self, seq: JobSeq) {
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
    pub(crate) fn take_touched(&mut self) -> Vec<JobSeq> {
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
    pub(crate) fn suspend_tracking(&mut self) -> Option<Vec<JobSeq>> {
        self.touched.take()
    }

    pub(crate) fn resume_tracking(&mut self, saved: Option<Vec<JobSeq>>) {
        self.touched = saved;
    }

    /// In sequence order.
    pub(crate) fn iter(&self) -> std::vec::IntoIter<(&JobSeq, &JobRecord)> {
        let mut all: Vec<(&JobSeq, &JobRecord)> = self.map.iter().map(|(k, v)| (k, &**v)).collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
    }

    /// In sequence order. Marks every job when tracking: any of them may be changed.
    pub(crate) fn iter_mut(&mut self) -> std::vec::IntoIter<(&JobSeq, &mut JobRecord)> {
        if let Some(t) = &mut self.touched {
            t.extend(self.map.keys().copied());
        }
        let mut all: Vec<(&JobSeq, &mut JobRecord)> =
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
fn mark(touched: &mut Vec<JobSeq>, seq: JobSeq) {
    if touched.last() != Some(&seq) {
        touched.push(seq);
    }
}

impl<'a> IntoIterator for &'a Jobs {
    type Item = (&'a JobSeq, &'a JobRecord);
    type IntoIter = std::vec::IntoIter<(&'a JobSeq, &'a JobRecord)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Index<&JobSeq> for Jobs {
    type Output = JobRecord;
    fn index(&self, seq: &JobSeq) -> &JobRecord {
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

/// The same form as a `BTreeMap<u64, JobRecord>` (a `JobSeq` is its bare number): a map in
/// sequence order.
impl Serialize for Jobs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Jobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<JobSeq, JobRecord>::deserialize(d)?;
        let mut jobs = Jobs::default();
        jobs.map.reserve(map.len());
        for (seq, job) in map {
            jobs.insert(seq, job);
        }
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::{JobSeq, SeqHasher};

    /// The table hashes a `JobSeq` as it hashed the bare number, and it is written as that
    /// number, in text and in serde.
    #[test]
    fn a_job_seq_is_its_number() {
        let hasher = BuildHasherDefault::<SeqHasher>::default();
        for n in [0, 1, 2, 41, 1 << 40, u64::MAX] {
            assert_eq!(hasher.hash_one(JobSeq(n)), hasher.hash_one(n));
            assert_eq!(JobSeq(n).to_string(), n.to_string());
            assert_eq!(format!("{:>25}", JobSeq(n)), format!("{n:>25}"));
            let json = serde_json::to_string(&JobSeq(n)).unwrap();
            assert_eq!(json, n.to_string());
            assert_eq!(serde_json::from_str::<JobSeq>(&json).unwrap(), JobSeq(n));
        }
    }
}
