//! Moving a job between two states: a host whose store keeps its jobs in several
//! partitions (each a `State` of its own) moves a job whose concurrency key now belongs to
//! another partition by taking its whole record out of one state (`Event::MoveOut`) and
//! putting it into the other (`Event::MoveIn`), both in one transaction.
//!
//! The record travels whole: its frontier, its owed line, its waiting retry, its held
//! definition, its pause, its incidents. So nothing it looked at is looked at again and
//! nothing it owes is dropped: the journal's lines of the job continue in the other state
//! from where they stopped, each side marked (`moved_out`, `moved_in`).
//!
//! A job with an open run does not move: run ids and fences are counters of the state
//! that started the run, so the run could not keep them in another state, and the process
//! carrying it out reports to the state it knows. The move waits for the run to settle
//! (the host asks again; `MoveOut` is refused `in_flight`, or `awaiting_approval` for a
//! parked run), which costs at most one run's length and keeps every fence where it was
//! made.

use crate::effect::{Effect, History, Refusal};
use crate::event::Actor;
use crate::state::{check_owed_counts_of, check_record, JobRecord, State};

use super::Out;

impl State {
    /// Takes `job`'s record out: it leaves the state whole (no due time is accounted, no
    /// run cancelled: there is none) and comes back as `Effect::Handover`, for `MoveIn`.
    pub(crate) fn move_out(&mut self, job: &str, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        if let Some(run) = self.jobs[&seq].run() {
            let refusal = match run.parked() {
                Some(until) => Refusal::AwaitingApproval { run: run.id, until },
                None => Refusal::InFlight { run: run.id },
            };
            State::refuse(Some(name), refusal, out);
            return;
        }
        let Some(mut record) = self.jobs.remove(&seq) else {
            return;
        };
        if let Some(w) = record.wake {
            self.wake.remove(&(w, seq));
        }
        self.unlane(seq, &record);
        self.downstreams.unlist(seq);
        self.by_name.remove(name.as_str());
        record.wake = None;
        record.lane = None;
        out.history(&name, History::MovedOut { actor });
        out.effects.push(Effect::Handover(Box::new(record)));
        out.effects.push(Effect::Reply {
            job: Some(name),
            result: Ok(None),
        });
    }

    /// Puts in a record another state handed over: refused when the name is taken here,
    /// when its definition does not hold under this state's config, when it carries an
    /// open run, or when it is not a record this state could have made.
    pub(crate) fn move_in(&mut self, mut record: JobRecord, actor: Actor, out: &mut Out) {
        let name = record.def.name.clone();
        if let Some(refusal) = self.refuse_move_in(&record) {
            State::refuse(Some(name), refusal, out);
            return;
        }
        let seq = self.new_seq();
        record.next_due = record.def.schedule.next_after(record.frontier);
        record.wake = None;
        record.lane = None;
        self.jobs.insert(seq, record);
        self.by_name.insert(name.clone(), seq);
        self.reindex(seq);
        out.history(&name, History::MovedIn { actor });
        self.reply(Some(seq), Some(name), out);
    }

    fn refuse_move_in(&self, record: &JobRecord) -> Option<Refusal> {
        let name = &record.def.name;
        if self.by_name.contains_key(name) {
            return Some(Refusal::NameTaken { job: name.clone() });
        }
        if let Err(error) = record.def.validate(&self.config) {
            return Some(Refusal::Invalid { error });
        }
        if let Some(run) = record.run() {
            return Some(Refusal::InFlight { run: run.id });
        }
        if self.next_seq == u64::MAX {
            return Some(Refusal::Full);
        }
        // The checks `State::put_parts` makes of a record from outside: a record is input
        // here too (it may come over the wire), and one this state could not have made
        // would break its invariants at the next step.
        check_record(record, &self.config, self.next_run, self.next_fence)
            .and_then(|()| check_owed_counts_of(record))
            .err()
            .map(|broken| Refusal::NotMovable {
                why: broken.to_string(),
            })
    }
}
