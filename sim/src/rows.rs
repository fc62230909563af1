//! A store that keeps one row per job, as the host's SQLite and PostgreSQL stores do
//! (`host/src/store/`): after each committed step it writes only the jobs the core says it
//! touched (`State::take_touched`) and the globals, and a second copy of the state (another
//! host process's cache) follows those rows through `State::put_parts`. Every so often the
//! copy, and a state loaded afresh from the rows (`State::from_parts`), must be the live
//! state, record for record (S6): a job changed without being named as touched, or a change
//! `put_parts` applies otherwise than the step did, shows there. Now and then a row is
//! damaged on its way to the copy (`damage.rs`), and must be refused for what it is.
//!
//! The copy reads the rows as a host's cache does: not after every step, but when it is
//! next asked (here on about a quarter of the steps, drawn by the step's number, and always
//! before a comparison or a damage), then every row written since it last read, and the
//! globals as they are then. So `put_parts` takes one step's rows or the rows of many, as
//! a host that was busy or idle would give it; reading after every step built the globals
//! (every process's record) at every step and was a tenth of a world's instructions.

use std::collections::{BTreeMap, BTreeSet};

use duetime::{JobRecord, JobSeq, State};

use crate::damage::{Damager, Site};
use crate::world::Counts;

/// How often the copies are compared with the live state, in committed steps (each
/// comparison serializes three states).
const COMPARE_EVERY: u64 = 32;

/// The rows, and the copy that follows them.
pub(crate) struct Rows {
    jobs: BTreeMap<JobSeq, JobRecord>,
    replica: State,
    steps: u64,
    damager: Damager,
    /// The jobs the last committed step touched (`State::take_touched`), for the state's
    /// own check of that step (`State::self_check_touched`).
    touched: Vec<JobSeq>,
    /// The rows written since the copy last read them.
    unread: BTreeSet<JobSeq>,
}

impl Rows {
    /// Rows for a store that starts as `state` (whose changes it then tracks), damaged by
    /// the world of `seed`.
    pub(crate) fn new(state: &mut State, seed: u64) -> Rows {
        state.track_changes(true);
        Rows {
            jobs: state.records().map(|(s, r)| (s, r.clone())).collect(),
            replica: state.clone(),
            steps: 0,
            damager: Damager::new(seed),
            touched: Vec::new(),
            unread: BTreeSet::new(),
        }
    }

    /// After a committed step of `state`: its touched jobs are written; when the copy reads
    /// (see the module's doc), it takes every row written since it last read and the
    /// globals (after refusing a damaged row now and then, counted in `faults`, each kind
    /// answered as it must be in `probes`); and every `COMPARE_EVERY` steps both copies are
    /// compared with the live state. `Err`: what broke, for S6.
    pub(crate) fn write(
        &mut self,
        state: &mut State,
        faults: &mut Counts,
        probes: &mut crate::check::ProbeCounts,
    ) -> Result<(), String> {
        self.touched = state.take_touched();
        for &seq in &self.touched {
            match state.record(seq) {
                Some(r) => self.jobs.insert(seq, r.clone()),
                None => self.jobs.remove(&seq),
            };
            self.unread.insert(seq);
        }
        self.steps += 1;
        let compare = self.steps.is_multiple_of(COMPARE_EVERY);
        if !compare && !self.damager.due(self.steps) && !reads_at(self.steps) {
            return Ok(());
        }
        let mut changed: BTreeMap<JobSeq, Option<JobRecord>> = std::mem::take(&mut self.unread)
            .into_iter()
            .map(|seq| (seq, self.jobs.get(&seq).cloned()))
            .collect();
        let globals = state.globals();
        self.damage(&globals, &mut changed, faults, probes)?;
        // The copy takes these globals themselves, not a clone (a clone of every process's
        // record at every step was 2% of a world's instructions): a comparison step builds
        // them again from the live state, which nothing here has changed since.
        self.replica
            .put_parts(globals, changed)
            .map_err(|e| format!("a copy following the store's rows refuses a step's rows: {e}"))?;
        if !compare {
            return Ok(());
        }
        if !same(state, &self.replica) {
            return Err(
                "a copy following the touched rows (put_parts) is not the live state".to_string(),
            );
        }
        let rows = self.jobs.iter().map(|(s, r)| (*s, r.clone()));
        let loaded = State::from_parts(state.globals(), rows)
            .map_err(|e| format!("the store's rows do not load (from_parts): {e}"))?;
        if !same(state, &loaded) {
            return Err("the state loaded from the store's rows is not the live state".to_string());
        }
        // The host that followed the rows takes over, as one does when another fails: the
        // world goes on from the copy `put_parts` kept (its indexes built record by record,
        // and the changes it tracks its own), and the old live state follows in its place.
        std::mem::swap(state, &mut self.replica);
        Ok(())
    }

    /// When a damage is due: it is offered to the copy (and now and then to a load of all
    /// the rows) and must be refused as it must be; then the good rows of whatever it
    /// damaged join the step's, as if the damage had been caught and repaired (a row at
    /// a bound, which the copy took, is put back so).
    fn damage(
        &mut self,
        globals: &duetime::Globals,
        changed: &mut BTreeMap<JobSeq, Option<JobRecord>>,
        faults: &mut Counts,
        probes: &mut crate::check::ProbeCounts,
    ) -> Result<(), String> {
        let site = Site {
            globals,
            rows: &self.jobs,
            changed,
        };
        let Some(made) = self.damager.draw(self.steps, &site)? else {
            return Ok(());
        };
        *faults.entry("row damaged").or_default() += 1;
        crate::damage::offer(&mut self.replica, &made, &site)?;
        probes.add(made.probe, 1);
        for (seq, _) in &made.rows {
            changed
                .entry(*seq)
                .or_insert_with(|| self.jobs.get(seq).cloned());
        }
        Ok(())
    }

    /// The jobs the last committed step touched.
    pub(crate) fn touched(&self) -> &[JobSeq] {
        &self.touched
    }

    /// Whether the last committed step was one of those after which the copies are compared
    /// with the live state and the copy takes over (every `COMPARE_EVERY`th): its indexes
    /// were built by `put_parts`, record by record, and not by the steps.
    pub(crate) fn took_over(&self) -> bool {
        self.steps.is_multiple_of(COMPARE_EVERY)
    }

    /// The live state was replaced by a round-tripped copy (which tracks nothing): it
    /// tracks its changes again.
    pub(crate) fn follow(state: &mut State) {
        state.track_changes(true);
    }
}

/// Whether the copy reads the rows after committed step `step`: on about a quarter of the
/// steps, spread by a multiplicative hash of the number so that it reads after one step
/// or after many, in no fixed rhythm.
fn reads_at(step: u64) -> bool {
    step.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62 == 0
}

/// Whether two states hold the same: their globals and every job's record, the caches a
/// load rebuilds included (what the stored form holds, and what the live state derived
/// from it). Compared as values, not as serialized text: a third of the simulator's time
/// went to serializing three states every 32 steps.
pub(crate) fn same(a: &State, b: &State) -> bool {
    a.globals() == b.globals() && a.records().eq(b.records())
}
