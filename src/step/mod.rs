//! `step`: the one mutator. It routes an event to its transition, then (in debug builds)
//! checks the invariants. Transitions live beside this file by concern: `due` accounts due
//! times (missed rule, overlap), `runs` starts runs and watches leases and deadlines,
//! `settle` takes results, `commands` carries out definitions and people's commands.

mod commands;
mod due;
mod runs;
mod settle;

use crate::effect::{
    Alert, AlertKind, Effect, Entry, History, LedgerEntry, LedgerKind, MissAction, MissCause,
    Record,
};
use crate::event::{Event, Now, ProcessId};
use crate::job::JobName;
use crate::schedule::Schedule;
use crate::state::OneShotEnd;
use crate::state::{ProcessRec, State};
use crate::time::{Duration, Timestamp};

pub use due::last_due;

/// The by-value form, `(State, Event, Now) -> (State, Effects)`, for callers who want it.
pub fn step(mut state: State, now: Now, event: Event) -> (State, Vec<Effect>) {
    let mut effects = Vec::new();
    state.step(now, event, &mut effects);
    (state, effects)
}

/// Where effects go while a step runs, with the event's wall time at hand.
pub(crate) struct Out<'a> {
    pub now: Timestamp,
    pub effects: &'a mut Vec<Effect>,
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
    pub fn history(&mut self, job: &JobName, h: History) {
        self.effects.push(Effect::Record(Record {
            at: self.now,
            job: job.clone(),
            entry: Entry::History(h),
        }));
    }

    /// Tells an alert unless the job has told the same incident since its last success or
    /// a person's resume; every alert goes through here.
    /// `told` is the job's `JobRecord::incidents` (a field apart, so a transition holding
    /// the job's run can still alert).
    pub fn alert(&mut self, told: &mut Vec<String>, job: &JobName, kind: AlertKind) {
        let incident = kind.incident();
        if told.iter().any(|t| t == incident) {
            return;
        }
        told.push(incident.to_string());
        self.effects.push(Effect::Alert(Alert {
            at: self.now,
            job: job.clone(),
            kind,
        }));
    }

    pub fn ledger(
        &mut self,
        job: &JobName,
        from: Timestamp,
        to: Timestamp,
        count: u64,
        kind: LedgerKind,
    ) {
        debug_assert!(count > 0 && from <= to);
        self.effects.push(Effect::Record(Record {
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

impl State {
    /// Applies one event at `now`, appending what the host must do to `effects`. Never
    /// panics on any event in any state; bad input becomes a refusal or a stale record.
    pub fn step(&mut self, now: Now, event: Event, effects: &mut Vec<Effect>) {
        let start = effects.len();
        let mut out = Out {
            now: now.wall,
            effects,
        };
        match event {
            Event::Upsert { def, actor } => self.upsert(*def, actor, &mut out),
            Event::Remove { job, actor } => self.remove(&job, actor, &mut out),
            Event::ProcessStarted { process } => {
                self.prune_processes(now.wall);
                self.processes.insert(
                    process,
                    ProcessRec {
                        last_wall: now.wall,
                        last_mono: now.mono,
                        draining: false,
                    },
                );
                self.tick(now, process, &[], MissCause::Down, &mut out);
            }
            Event::Tick { process, held } => {
                let cause = self.observe_clock(process, now);
                self.tick(now, process, &held, cause, &mut out);
            }
            Event::ProcessDraining { process } => {
                self.observe_clock(process, now);
                if let Some(p) = self.processes.get_mut(&process) {
                    p.draining = true;
                }
            }
            Event::Adopt {
                process,
                run,
                fence,
            } => {
                self.observe_clock(process, now);
                self.adopt(now.wall, process, run, fence, &mut out);
            }
            Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            } => {
                self.observe_clock(process, now);
                self.finish(process, &job, run, fence, outcome, &mut out);
            }
            Event::Pause { job, actor, note } => self.pause(&job, actor, note, &mut out),
            Event::Resume { job, actor } => self.resume(&job, actor, &mut out),
            Event::RunNow { job, actor } => self.run_now(&job, actor, &mut out),
            Event::ForgetActor { actor } => self.forget_actor(&actor, &mut out),
            Event::ApprovalGiven { job, run, actor } => self.approve(&job, run, actor, &mut out),
        }
        self.conclude_one_shots(out.effects, start);
        #[cfg(debug_assertions)]
        if let Err(broken) = self
            .check_invariants()
            .and_then(|()| self.check_owed_counts())
        {
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
            let Effect::Record(Record {
                at,
                job: name,
                entry: Entry::Ledger(e),
            }) = &effects[i]
            else {
                i += 1;
                continue;
            };
            let found = self.seq_of(name.as_str()).filter(|seq| {
                self.jobs.get(seq).is_some_and(|j| {
                    j.ended.is_none()
                        && matches!(j.def.schedule,
                            Schedule::At { instant } if e.from <= instant && instant <= e.to)
                })
            });
            // An entry the old schedule wrote before a new definition in this same step
            // is not about the new instant.
            let redefined = || {
                effects[i + 1..].iter().any(|f| {
                    matches!(f, Effect::Record(Record {
                        job,
                        entry: Entry::History(History::Defined { .. }),
                        ..
                    }) if job == name)
                })
            };
            if let Some(seq) = found.filter(|_| !redefined()) {
                let (end, line) = one_shot_end(e.kind, *at);
                let line = Effect::Record(Record {
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

    /// Notes a process's clocks and says which cause late due times found now get: a wall
    /// clock that ran ahead of the monotonic one by more than the threshold jumped.
    fn observe_clock(&mut self, process: ProcessId, now: Now) -> MissCause {
        let threshold = self.config.clock_jump;
        let rec = self.processes.entry(process).or_insert(ProcessRec {
            last_wall: now.wall,
            last_mono: now.mono,
            draining: false,
        });
        let wall = i128::from(now.wall.as_millis()) - i128::from(rec.last_wall.as_millis());
        let mono = i128::from(now.mono.as_millis()) - i128::from(rec.last_mono.as_millis());
        rec.last_wall = now.wall;
        rec.last_mono = now.mono;
        if wall - mono > i128::from(threshold.as_millis()) {
            MissCause::ClockJump
        } else {
            MissCause::Down
        }
    }

    /// Forgets processes silent for a day that hold no run, so incarnations do not pile up.
    fn prune_processes(&mut self, now: Timestamp) {
        let cutoff = now.saturating_sub(Duration::from_days(1));
        let holders: std::collections::BTreeSet<ProcessId> = self
            .runs
            .values()
            // A parked run's process is done with it; it keeps nobody's record alive.
            .filter_map(|seq| {
                let run = self.jobs.get(seq).and_then(|j| j.run());
                run.filter(|r| r.parked.is_none()).map(|r| r.holder)
            })
            .collect();
        self.processes
            .retain(|p, rec| rec.last_wall >= cutoff || holders.contains(p));
    }

    pub(crate) fn can_claim(&self, process: ProcessId) -> bool {
        self.processes.get(&process).is_some_and(|p| !p.draining)
    }

    pub(crate) fn seq_of(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }
}
