//! How a state is written and read back: its serialized form (`StateData`), the store's
//! pieces (`Globals` and one record per job: `from_parts`, `put_parts`), the format
//! version, and `LoadError` for what cannot be loaded. Loading rebuilds the derived
//! indexes and runs the invariant checks (`invariants.rs`), so no inconsistent state is
//! ever taken in.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::ProcessId;
use crate::event::RunId;
use crate::inconsistency::Inconsistency;
use crate::job::JobName;
use crate::jobs::{JobSeq, Jobs};
use crate::lanes::Lanes;
use crate::time::Timestamp;

use super::{
    check_owed_counts_of, check_record, Config, Coordination, HoldCounts, JobRecord, OwnerLease,
    ProcessRec, State,
};

/// The state format written by this build; a state from a newer build is refused
/// (`LoadError::NewerFormat`). Every earlier format loads unchanged. What each format added
/// is in `docs/state-format.md`; the fixtures of each are `tests/fixtures/state-v*.json`.
pub const FORMAT_VERSION: u32 = 9;

/// The serialized form: what a host stores. `Globals` and the jobs are the same data cut
/// in two, for a store that keeps each job apart (`State::from_parts`); this form keeps the
/// field order the format has always had.
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct StateData {
    format: u32,
    config: Config,
    next_seq: u64,
    next_run: u64,
    next_fence: u64,
    jobs: Jobs,
    processes: BTreeMap<ProcessId, ProcessRec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<OwnerLease>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clock: Option<Timestamp>,
}

/// `StateData` borrowed from a state: what `Serialize for State` writes, field for field
/// as `StateData`. Written from borrows, a save costs the text alone; `into = "StateData"`
/// cloned the whole state first on every save (issue 48: 257 ms for 100,000 jobs from
/// Node, most of it the copy and its drop).
#[derive(Serialize)]
struct StateDataRef<'a> {
    format: u32,
    config: &'a Config,
    next_seq: u64,
    next_run: u64,
    next_fence: u64,
    jobs: &'a Jobs,
    processes: &'a BTreeMap<ProcessId, ProcessRec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: &'a Option<OwnerLease>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clock: &'a Option<Timestamp>,
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StateDataRef {
            format: FORMAT_VERSION,
            config: &self.config,
            next_seq: self.next_seq,
            next_run: self.next_run,
            next_fence: self.next_fence,
            jobs: &self.jobs,
            processes: &self.processes,
            owner: &self.owner,
            clock: &self.clock,
        }
        .serialize(s)
    }
}

/// Everything in the state but the jobs: the format version, the config, the counters and
/// the processes. A store that keeps jobs one per row keeps this beside them and writes it
/// with every step (it is small: the processes seen in the last day).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Globals {
    /// The state format the parts were written in; `FORMAT_VERSION` when taken from a state.
    pub(crate) format: u32,
    pub(crate) config: Config,
    /// The next job's sequence number; every job's is below it.
    pub(crate) next_seq: u64,
    pub(crate) next_run: u64,
    pub(crate) next_fence: u64,
    pub(crate) processes: BTreeMap<ProcessId, ProcessRec>,
    /// The owner lease (`single_owner` coordination only); absent when none is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<OwnerLease>,
    /// The store's clock (`State::clock`); absent before any process has spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clock: Option<Timestamp>,
}

/// Why a stored state could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Written by a newer build, in a format this one does not know.
    NewerFormat {
        /// The stored state's format.
        found: u32,
        /// The newest this build reads (`FORMAT_VERSION`).
        supported: u32,
    },
    /// The state breaks an invariant: `what` says which.
    Inconsistent {
        /// The invariant broken.
        what: Inconsistency,
    },
}

impl From<Inconsistency> for LoadError {
    fn from(what: Inconsistency) -> LoadError {
        LoadError::Inconsistent { what }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NewerFormat { found, supported } => write!(
                f,
                "the state was written in format {found}, newer than this build's {supported}; upgrade duetime"
            ),
            LoadError::Inconsistent { what } => write!(f, "the state is inconsistent: {what}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl TryFrom<StateData> for State {
    type Error = LoadError;
    fn try_from(d: StateData) -> Result<State, LoadError> {
        let globals = Globals {
            format: d.format,
            config: d.config,
            next_seq: d.next_seq,
            next_run: d.next_run,
            next_fence: d.next_fence,
            processes: d.processes,
            owner: d.owner,
            clock: d.clock,
        };
        State::assemble(globals, d.jobs)
    }
}

/// What the globals must satisfy on their own: a format this build reads, a sane config.
fn check_globals(g: &Globals) -> Result<(), LoadError> {
    if g.format > FORMAT_VERSION {
        return Err(LoadError::NewerFormat {
            found: g.format,
            supported: FORMAT_VERSION,
        });
    }
    g.config.check().map_err(Inconsistency::Config)?;
    check_owner(&g.config, g.owner, &g.processes, g.next_fence)?;
    Ok(())
}

/// The owner lease must belong to the coordination that has one, be held by a known
/// process that is not draining (a drain gives it up), and carry a fence the counter has
/// handed out.
pub(super) fn check_owner(
    config: &Config,
    owner: Option<OwnerLease>,
    processes: &BTreeMap<ProcessId, ProcessRec>,
    next_fence: u64,
) -> Result<(), Inconsistency> {
    let Some(o) = owner else { return Ok(()) };
    if config.coordination != Coordination::SingleOwner {
        return Err(Inconsistency::OwnerUnderShared {
            holder: o.holder,
            fence: o.fence,
        });
    }
    if o.fence.0 >= next_fence {
        return Err(Inconsistency::OwnerFenceAhead { fence: o.fence });
    }
    match processes.get(&o.holder) {
        None => Err(Inconsistency::OwnerHolderUnknown { holder: o.holder }),
        Some(p) if p.draining => Err(Inconsistency::OwnerHolderDraining { holder: o.holder }),
        Some(_) => Ok(()),
    }
}

impl State {
    /// Builds a state from its parts, as a store that keeps jobs apart has them, with the
    /// same checks as loading the serialized form: a newer format is `NewerFormat`; a bad
    /// config, a sequence number given twice or beyond the counter, a name or an open run
    /// held twice, or a record that breaks an invariant is `Inconsistent`. Never panics.
    ///
    /// # Errors
    ///
    /// `LoadError::NewerFormat` or `LoadError::Inconsistent` (with the `Inconsistency`), as
    /// above.
    pub fn from_parts(
        globals: Globals,
        jobs: impl IntoIterator<Item = (JobSeq, JobRecord)>,
    ) -> Result<State, LoadError> {
        let mut table = Jobs::default();
        for (seq, job) in jobs {
            if table.insert(seq, job).is_some() {
                return Err(Inconsistency::SequenceTwice { seq }.into());
            }
        }
        State::assemble(globals, table)
    }

    /// The shared path of `from_parts` and deserialization.
    fn assemble(globals: Globals, jobs: Jobs) -> Result<State, LoadError> {
        check_globals(&globals)?;
        let mut s = State {
            config: globals.config,
            next_seq: globals.next_seq,
            next_run: globals.next_run,
            next_fence: globals.next_fence,
            jobs,
            processes: globals.processes,
            owner: globals.owner,
            clock: globals.clock,
            by_name: BTreeMap::new(),
            wake: BTreeSet::new(),
            runs: BTreeMap::new(),
            lanes: Lanes::default(),
            holds: HoldCounts::default(),
            downstreams: Default::default(),
        };
        s.holds = HoldCounts::of(&s.processes);
        s.rebuild_indexes()?;
        s.self_check()?;
        Ok(s)
    }

    /// Deserializes a stored state, keeping a refusal typed: the outer error is the
    /// format's own (bad syntax, an unknown name such as a miss cause or an incident, a
    /// missing field), the inner one a `LoadError` (a newer format, a broken invariant).
    /// `serde::Deserialize for State` does the same but folds a `LoadError` into the
    /// format's error as text.
    ///
    /// # Errors
    ///
    /// `Err(e)` when the input does not decode as a state; `Ok(Err(LoadError))` when it
    /// decodes but may not be loaded.
    pub fn load<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Result<State, LoadError>, D::Error> {
        let data = StateData::deserialize(d)?;
        Ok(State::try_from(data))
    }

    /// The state without its jobs (see `Globals`).
    pub fn globals(&self) -> Globals {
        Globals {
            format: FORMAT_VERSION,
            config: self.config,
            next_seq: self.next_seq,
            next_run: self.next_run,
            next_fence: self.next_fence,
            processes: self.processes.clone(),
            owner: self.owner,
            clock: self.clock,
        }
    }

    /// Brings a loaded state up to date with a store another process wrote to: `globals`
    /// as the store now holds them, and for each job that changed there, its record
    /// (`None`: removed). Only those jobs and their index entries are touched, so a host
    /// that reloads what changed pays for what changed. Records put here are not reported
    /// by `take_touched` (they are what the store already holds).
    ///
    /// The counters may move backward, which is how a host puts back what an aborted
    /// transaction did (the changes then name every job that transaction touched, with its
    /// stored record or `None`).
    ///
    /// Refused with the state left as it was (a typed `LoadError`, never a panic): a newer
    /// format, a bad or changed config (the config is fixed for a store's life; a host that
    /// meets a changed one loads the whole state), counters behind a job left as it is, a
    /// sequence number given twice or beyond the counter, a name or open run that another
    /// job holds, a record that breaks an invariant.
    ///
    /// # Errors
    ///
    /// A `LoadError` as above; the state is then as it was.
    pub fn put_parts(
        &mut self,
        globals: Globals,
        changed: impl IntoIterator<Item = (JobSeq, Option<JobRecord>)>,
    ) -> Result<(), LoadError> {
        check_globals(&globals)?;
        if globals.config != self.config {
            return Err(Inconsistency::ConfigChanged.into());
        }
        let mut changes: BTreeMap<JobSeq, Option<JobRecord>> = BTreeMap::new();
        for (seq, job) in changed {
            if changes.insert(seq, job).is_some() {
                return Err(Inconsistency::SequenceTwice { seq }.into());
            }
        }
        // Check everything before changing anything, so a refusal leaves the state whole.
        let mut names: BTreeMap<&JobName, JobSeq> = BTreeMap::new();
        let mut runs: BTreeMap<RunId, JobSeq> = BTreeMap::new();
        for (&seq, job) in changes.iter().filter_map(|(s, j)| Some((s, j.as_ref()?))) {
            let name = &job.def.name;
            if seq.0 >= globals.next_seq {
                return Err(Inconsistency::SequenceBeyondCounter {
                    job: name.clone(),
                    seq,
                }
                .into());
            }
            check_record(job, &globals.config, globals.next_run, globals.next_fence)?;
            check_owed_counts_of(job)?;
            let held_elsewhere = |by: Option<&JobSeq>| by.is_some_and(|s| !changes.contains_key(s));
            if names.insert(name, seq).is_some() || held_elsewhere(self.by_name.get(name)) {
                return Err(Inconsistency::NameTwice { job: name.clone() }.into());
            }
            if let Some(run) = job.run() {
                if runs.insert(run.id, seq).is_some() || held_elsewhere(self.runs.get(&run.id)) {
                    return Err(Inconsistency::RunOpenTwice { run: run.id }.into());
                }
            }
        }
        // Counters move backward only when a host puts back what an aborted transaction
        // did: then every job left as it is must still be below them (O(jobs), but rare).
        if globals.next_seq < self.next_seq
            || globals.next_run < self.next_run
            || globals.next_fence < self.next_fence
        {
            for (&seq, job) in self.jobs.iter() {
                if changes.contains_key(&seq) {
                    continue;
                }
                let run_ahead = job
                    .run()
                    .is_some_and(|r| r.id.0 >= globals.next_run || r.fence.0 >= globals.next_fence);
                if seq.0 >= globals.next_seq || run_ahead {
                    return Err(Inconsistency::CountersBehind {
                        job: job.def.name.clone(),
                    }
                    .into());
                }
            }
        }
        let tracking = self.jobs.suspend_tracking();
        self.next_seq = globals.next_seq;
        self.next_run = globals.next_run;
        self.next_fence = globals.next_fence;
        self.processes = globals.processes;
        self.holds = HoldCounts::of(&self.processes);
        self.owner = globals.owner;
        self.clock = globals.clock;
        for &seq in changes.keys() {
            if let Some(old) = self.jobs.remove(&seq) {
                self.by_name.remove(&old.def.name);
                if let Some(w) = old.wake {
                    self.wake.remove(&(w, seq));
                }
                if let Some(run) = old.run() {
                    self.runs.remove(&run.id);
                }
                self.unlane(seq, &old);
                self.downstreams.unlist(seq);
            }
        }
        for (seq, job) in changes {
            let Some(mut job) = job else { continue };
            job.next_due = job.def.schedule.next_after(job.frontier);
            job.wake = None;
            job.lane = None;
            self.by_name.insert(job.def.name.clone(), seq);
            if let Some(run) = job.run() {
                self.runs.insert(run.id, seq);
            }
            self.jobs.insert(seq, job);
            self.reindex(seq);
        }
        self.jobs.resume_tracking(tracking);
        debug_assert_eq!(self.check_invariants(), Ok(()));
        Ok(())
    }

    fn rebuild_indexes(&mut self) -> Result<(), LoadError> {
        let mut seqs = Vec::with_capacity(self.jobs.len());
        for (&seq, job) in self.jobs.iter_mut() {
            // Parts may come from a live state's records, whose wake times would make
            // `reindex` skip them; the index is built from nothing here.
            job.wake = None;
            job.lane = None;
            if seq.0 >= self.next_seq {
                return Err(Inconsistency::SequenceBeyondCounter {
                    job: job.def.name.clone(),
                    seq,
                }
                .into());
            }
            if self.by_name.insert(job.def.name.clone(), seq).is_some() {
                return Err(Inconsistency::NameTwice {
                    job: job.def.name.clone(),
                }
                .into());
            }
            job.next_due = job.def.schedule.next_after(job.frontier);
            if let Some(run) = job.run() {
                if self.runs.insert(run.id, seq).is_some() {
                    return Err(Inconsistency::RunOpenTwice { run: run.id }.into());
                }
            }
            seqs.push(seq);
        }
        for seq in seqs {
            self.reindex(seq);
        }
        Ok(())
    }
}
