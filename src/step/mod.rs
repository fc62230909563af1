//! `step`: the one mutator. It routes an event to its transition, then (in debug builds)
//! checks the invariants. Transitions live beside this file by concern: `due` accounts due
//! times (missed rule, overlap), `runs` starts runs and watches leases and deadlines,
//! `settle` takes results, `commands` carries out definitions and people's commands, `watch`
//! is the dead-man's switch.

mod after;
mod clock;
mod commands;
mod debts;
mod due;
mod moves;
mod owner;
mod runs;
mod settle;
mod tick;
mod watch;

use crate::effect::Notice;
use crate::effect::{
    Alert, AlertKind, Effect, Entry, History, Incident, LedgerEntry, LedgerKind, MissAction, Record,
};
use crate::event::{Event, Now, ProcessId};
use crate::job::JobName;
use crate::jobs::JobSeq;
use crate::schedule::Schedule;
use crate::state::OneShotEnd;
use crate::state::State;
use crate::time::{Duration, Timestamp};

pub(crate) use clock::solitude;
pub(crate) use due::last_due;

/// The by-value form, `(State, Event, Now) -> (State, Effects)`, for callers who want it;
/// `State::step` is the same transition in place.
pub fn step(mut state: State, now: Now, event: Event) -> (State, Vec<Effect>) {
    let mut effects = Vec::new();
    state.step(now, event, &mut effects);
    (state, effects)
}

/// Where effects go while a step runs, with the event's wall time at hand.
pub(crate) struct Out<'a> {
    pub now: Timestamp,
    pub effects: &'a mut Vec<Effect>,
    /// Where this step's effects begin in `effects` (a caller may pass a vector holding
    /// earlier ones).
    pub start: usize,
    /// This step's ledger entries of jobs others wait for, as far as read (`after.rs`).
    pub upstream_entries: UpstreamEntries,
}

/// Where a step's ledger entries of upstream jobs lie in its effects, found by reading each
/// effect once (`State::index_upstream_entries`): a downstream's gate reads them again and
/// again (a backfill of many due times skips them one by one), and a walk over all the
/// step's effects each time would be quadratic.
#[derive(Debug, Default)]
pub(crate) struct UpstreamEntries {
    /// How far the effects have been read.
    pub read_to: usize,
    /// The indexes of the entries found, in order.
    pub at: Vec<usize>,
}

/// How a one-shot's instant ended, read from the ledger entry that settled it.
fn one_shot_end(kind: LedgerKind, at: Timestamp) -> (OneShotEnd, History) {
    match kind {
        LedgerKind::Ran { run, .. }
        | LedgerKind::FailedOut { run }
        | LedgerKind::Lost { run }
        | LedgerKind::ApprovalExpired { run }
        | LedgerKind::Missed {
            action: MissAction::CaughtUp { run },
            ..
        } => (
            OneShotEnd::Completed { run, at },
            History::Completed { run },
        ),
        LedgerKind::Missed {
            cause,
            action: MissAction::Skipped,
        } => (
            OneShotEnd::Expired { cause, at },
            History::Expired { cause },
        ),
    }
}

impl Out<'_> {
    pub(crate) fn history(&mut self, job: &JobName, h: History) {
        self.effects.push(Effect::Journal(Record {
            at: self.now,
            job: job.clone(),
            entry: Entry::History(h),
        }));
    }

    /// Tells an alert unless the job has told the same incident since its last success or
    /// a person's resume; every alert goes through here. Within the job's `alert_throttle`
    /// of its last alert, it becomes a journal line instead (`AlertHeld`), and its incident
    /// is not counted as told, so it is told when it happens again after the throttle.
    /// (A job with the dead-man's switch wakes by its throttle: every transition that can
    /// alert reindexes the job after.)
    pub(crate) fn alert(&mut self, to: AlertLog<'_>, kind: AlertKind) {
        let incident = kind.incident();
        if to.told.contains(&incident) {
            return;
        }
        let held = match (to.throttle, *to.last) {
            (Some(throttle), Some(last)) => self.now < last.saturating_add(throttle),
            _ => false,
        };
        if held {
            let line = History::AlertHeld { alert: kind };
            self.history(to.job, line);
            return;
        }
        to.told.push(incident);
        if to.throttle.is_some() {
            *to.last = Some(self.now);
        }
        self.effects.push(Effect::Notice(Notice::Alert(Alert {
            at: self.now,
            job: to.job.clone(),
            kind,
        })));
    }

    pub(crate) fn ledger(
        &mut self,
        job: &JobName,
        from: Timestamp,
        to: Timestamp,
        count: u64,
        kind: LedgerKind,
    ) {
        debug_assert!(count > 0 && from <= to);
        self.effects.push(Effect::Journal(Record {
            at: self.now,
            job: job.clone(),
            entry: Entry::Ledger(LedgerEntry {
                from,
                to,
                count,
                kind,
            }),
        }));
    }
}

/// What an alert is told against (`Out::alert`): the job's name, the incidents it told
/// since its last success or a person's resume, when it last alerted, and its throttle.
/// Fields of the record apart from its run, so a transition holding the run can alert.
pub(crate) struct AlertLog<'a> {
    pub(crate) job: &'a JobName,
    pub(crate) told: &'a mut Vec<Incident>,
    pub(crate) last: &'a mut Option<Timestamp>,
    pub(crate) throttle: Option<Duration>,
}

impl crate::state::JobRecord {
    /// The record's parts an alert is told against.
    pub(crate) fn alert_log(&mut self) -> AlertLog<'_> {
        AlertLog {
            job: &self.def.name,
            told: &mut self.incidents,
            last: &mut self.last_alert,
            throttle: self.def.alert_throttle,
        }
    }
}

impl State {
    /// Applies one event at `now`, appending what the host must do to `effects`. Never
    /// panics on any event in any state; bad input becomes a refusal or a stale record.
    ///
    /// `now` is what the sending process read from its clocks (`Now`); the core reads no
    /// clock of its own, so the same state, event and `now` always give the same state and
    /// effects.
    ///
    /// # The host loop
    ///
    /// One event is one transaction:
    ///
    /// 1. Begin a transaction and load the state (or bring it up to date with
    ///    `State::put_parts`).
    /// 2. Call `step` with the event and the time the process just read.
    /// 3. Write every `Effect::Journal` record and the new state in that same
    ///    transaction, in order.
    /// 4. Commit. If the commit fails, forget the effects: the state as stored never took
    ///    the step.
    /// 5. Only then carry out the rest, in order: each `Effect::Do` (`Action::Start` or
    ///    `Action::Cancel` a run), each `Effect::Notice` (log a `ClockGap`, deliver an
    ///    `Alert`, note `Owner`, `OwnerReleased` and `Drained`), and answer whoever sent a
    ///    command with its `Effect::Reply`. A start carried out before the commit could
    ///    run a job whose claim never committed.
    /// 6. Tick again at `State::next_wake_for` the process (or sooner), and report each
    ///    run's end with `Event::RunFinished` carrying the `Action::Start`'s run and
    ///    fence.
    ///
    /// # Panics
    ///
    /// Only in debug builds, when the step left the state breaking an invariant
    /// (`check_invariants`): a bug in the core, which the simulator hunts for.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Action, Actor, Config, Effect, Event, JobDef, JobName, Now, ProcessId};
    /// use duetime::Schedule;
    /// use duetime::{State, Timestamp};
    ///
    /// let mut state = State::new(Config::default());
    /// let t0: Timestamp = "2025-06-01T00:00:00Z".parse()?;
    /// let every_minute = Schedule::every("1m".parse()?, "0s".parse()?)?;
    /// let def = JobDef::new(JobName::new("ping")?, every_minute);
    /// let mut effects = Vec::new();
    /// state.step(Now::at(t0), Event::Upsert { def: Box::new(def), actor: Actor::new("ana") }, &mut effects);
    /// assert!(matches!(effects.last(), Some(Effect::Reply { result: Ok(_), .. })));
    ///
    /// // A process starts, then ticks at the due time: the core asks it to start a run.
    /// let process = ProcessId(1);
    /// state.step(Now::at(t0), Event::ProcessStarted { process }, &mut effects);
    /// let due = state.next_wake_for(process).expect("a wake time");
    /// assert_eq!(due, "2025-06-01T00:01:00Z".parse()?);
    /// effects.clear();
    /// state.step(Now::at(due), Event::Tick { process, held: vec![] }, &mut effects);
    /// assert!(effects.iter().any(|e| matches!(e, Effect::Do(Action::Start(_)))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step(&mut self, now: Now, event: Event, effects: &mut Vec<Effect>) {
        let start = effects.len();
        // A person's command acts on its judged time; a process's event is judged below.
        let mut out = Out {
            now: self.judge_person_clock(now),
            effects,
            start,
            upstream_entries: UpstreamEntries::default(),
        };
        // Only process life, results and removals can end a process's last run (a tick
        // may find it lost or timed out): people's other commands leave drains as they are.
        let may_end_runs = !matches!(
            event,
            Event::Upsert { .. }
                | Event::Pause { .. }
                | Event::Resume { .. }
                | Event::RunNow { .. }
                | Event::ForgetActor { .. }
                | Event::MoveOut { .. }
                | Event::MoveIn { .. }
        );
        let drains = may_end_runs.then(|| self.drains_before(&event)).flatten();
        let process = after::process_of(&event);
        // A process's event is judged by the store's clock (`clock.rs`); from here on the
        // step acts on the judged time.
        let judge = |state: &mut State, process, fresh, out: &mut Out| {
            let judged = state.judge_clock(process, now, fresh, out);
            out.now = judged.at;
            judged
        };
        match event {
            Event::Upsert { def, actor } => self.upsert(*def, actor, &mut out),
            Event::Remove { job, actor } => self.remove(job.as_str(), actor, &mut out),
            Event::ProcessStarted { process } => {
                self.prune_processes();
                // A process already known is a registration sent again (its first answer
                // was lost or its transaction aborted after it went on working): it keeps
                // its record, a drain begun meanwhile included.
                let fresh = !self.processes.contains_key(&process);
                let judged = judge(self, process, fresh, &mut out);
                self.tick(judged, process, &[], &mut out);
            }
            Event::Tick { process, held } => {
                let judged = judge(self, process, false, &mut out);
                self.tick(judged, process, &held, &mut out);
            }
            Event::ProcessDraining { process } => {
                judge(self, process, false, &mut out);
                self.drain(process, &mut out);
            }
            Event::Adopt {
                process,
                run,
                fence,
            } => {
                let judged = judge(self, process, false, &mut out);
                self.adopt(judged.at, process, run, fence, &mut out);
            }
            Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            } => {
                out.now = self.judge_result_clock(process, now);
                self.finish(process, job.as_str(), run, fence, outcome, &mut out);
            }
            Event::Pause { job, actor, note } => self.pause(job.as_str(), actor, note, &mut out),
            Event::Resume { job, actor } => self.resume(job.as_str(), actor, &mut out),
            Event::RunNow { job, actor } => self.run_now(job.as_str(), actor, &mut out),
            Event::ForgetActor { actor } => self.forget_actor(&actor, &mut out),
            Event::Confirm { job, digest, actor } => {
                self.confirm(job.as_str(), &digest, actor, &mut out)
            }
            Event::ApprovalGiven { job, run, actor } => {
                self.approve(job.as_str(), run, actor, &mut out)
            }
            Event::Backfill {
                job,
                from,
                to,
                actor,
            } => self.backfill(job.as_str(), from, to, actor, &mut out),
            Event::MoveOut { job, actor } => self.move_out(job.as_str(), actor, &mut out),
            Event::MoveIn { record, actor } => self.move_in(*record, actor, &mut out),
        }
        if let Some(before) = drains {
            self.note_drained(before, &mut out);
        }
        self.hear_upstreams(&mut out, process);
        self.conclude_one_shots(out.effects, start);
        #[cfg(debug_assertions)]
        if let Err(broken) = self.self_check() {
            panic!("duetime invariant broken after a step: {broken}");
        }
    }

    /// Marks the one-shots whose instant this step's ledger settled, with a `completed` or
    /// `expired` line right after that entry. Read from the ledger rather than hooked into
    /// each transition, because every way a due time ends (a run's result, the missed rule,
    /// the overlap policy, an expiry, a pause handing over a retry) writes its entry there,
    /// and only there.
    fn conclude_one_shots(&mut self, effects: &mut Vec<Effect>, start: usize) {
        let mut i = start;
        while i < effects.len() {
            let Effect::Journal(Record {
                at,
                job: name,
                entry: Entry::Ledger(e),
            }) = &effects[i]
            else {
                i += 1;
                continue;
            };
            let found = self.seq_of(name.as_str()).filter(|seq| {
                // Ended only once nothing covers the instant any more (a stored state may
                // hold it twice; the last cover to settle ends it), and only by an entry
                // about the instant as this schedule's due time: an instant before the
                // definition is not due (unless backfilled), so an entry of an earlier
                // schedule whose range happens to hold it says nothing of it.
                self.jobs.get(seq).is_some_and(|j| {
                    j.ended.is_none()
                        && matches!(j.def.schedule,
                            Schedule::At { instant } if e.from <= instant && instant <= e.to
                                && j.accounts(instant)
                                && j.one_shot_settled(instant))
                })
            });
            // An entry the old schedule wrote before a new definition in this same step
            // is not about the new instant.
            let redefined = || {
                effects[i + 1..].iter().any(|f| {
                    matches!(f, Effect::Journal(Record {
                        job,
                        entry: Entry::History(History::Defined { .. }),
                        ..
                    }) if job == name)
                })
            };
            if let Some(seq) = found.filter(|_| !redefined()) {
                let (end, line) = one_shot_end(e.kind, *at);
                let line = Effect::Journal(Record {
                    at: *at,
                    job: name.clone(),
                    entry: Entry::History(line),
                });
                if let Some(job) = self.jobs.get_mut(&seq) {
                    job.ended = Some(end);
                }
                effects.insert(i + 1, line);
                i += 1;
            }
            i += 1;
        }
    }

    /// Forgets processes silent for a day of the store's clock that hold no run and not
    /// the owner lease, so incarnations do not pile up. A process asked to drain is kept
    /// however long it is silent: it must start nothing (D1), and the store's clock can run
    /// a day ahead of a stalled process's (a clock released ahead), so one that comes back
    /// would otherwise be taken for a new incarnation and given work. That keeps one small
    /// record per drained incarnation.
    fn prune_processes(&mut self) {
        let Some(clock) = self.clock else { return };
        let cutoff = clock.saturating_sub(Duration::from_days(1));
        let holders: std::collections::BTreeSet<ProcessId> = self
            .runs
            .values()
            .filter_map(|seq| self.jobs.get(seq).and_then(|j| j.run_holder()))
            .chain(self.owner.map(|o| o.holder))
            .collect();
        self.processes
            .retain(|p, rec| rec.base() >= cutoff || rec.draining || holders.contains(p));
        self.holds = crate::state::HoldCounts::of(&self.processes);
    }

    pub(crate) fn seq_of(&self, name: &str) -> Option<JobSeq> {
        self.by_name.get(name).copied()
    }
}
