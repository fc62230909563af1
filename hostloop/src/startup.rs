//! Start-up: the one order in which a new incarnation takes over what earlier ones left.
//!
//! 1. Every run an earlier incarnation left whose command has **ended** is reported
//!    (`RunFinished`, under the fence it ran with), and every run whose command is still
//!    **going** is adopted (`Adopt`), in run-id order.
//! 2. Then `ProcessStarted`.
//!
//! Adoption comes first because `ProcessStarted` ticks: nobody renewed the left runs'
//! leases while no incarnation ran, so that tick would find them lapsed and record runs
//! lost (and pause the jobs not safe to repeat) whose commands are alive or ended well.
//! Adopting first moves each lease to the new incarnation and renews it; reporting first
//! settles the ended ones as they ended.
//!
//! A step whose transaction failed (aborted, or its answer lost) is not done. The daemon
//! gives the whole start-up up and begins again as a new incarnation, with a fresh process
//! id, from what is left ([`Startup::into_left`], and the runs it adopted meanwhile, whose
//! run directories now name it); so does the simulator. Sending the same event again
//! ([`Startup::next_event`] still returns it) is safe for an adoption or a report, but not
//! for a `ProcessStarted` that committed with its answer lost: sent again, the store takes
//! it for a new incarnation of a process it knows, whose clock may then wait.

use std::collections::VecDeque;

use duetime::{Action, Effect, Event, Fence, JobName, Outcome, ProcessId, RunId};

/// A run an earlier incarnation of this host started (or adopted) and never reported, as
/// the host finds it at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftRun {
    /// Its command is still going: the new incarnation adopts it.
    Going {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
        /// The fence it was started or last adopted under.
        fence: Fence,
    },
    /// Its command ended while no incarnation listened: the new one reports how.
    Ended {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
        /// The fence it was started or last adopted under.
        fence: Fence,
        /// How it ended.
        outcome: Outcome,
    },
}

impl LeftRun {
    /// The run.
    pub fn run(&self) -> RunId {
        match self {
            LeftRun::Going { run, .. } | LeftRun::Ended { run, .. } => *run,
        }
    }
}

/// What one committed step of start-up means for the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// The run is this incarnation's now: renew it at every tick and report its result.
    Adopted {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
        /// Its fence, unchanged by adoption.
        fence: Fence,
    },
    /// The core no longer has the run open under that fence (it settled, lost or removed
    /// it meanwhile) and answered with a cancel: stop its command; its result would be
    /// stale.
    NotAdopted {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
    },
    /// The ended run's result reached the core (which recorded it, or found it stale): the
    /// host need not report it again.
    Reported {
        /// The run.
        run: RunId,
    },
    /// `ProcessStarted` committed: start-up is done, and turns begin.
    Registered,
}

/// The start-up of one incarnation, step by step: [`Startup::next_event`] says what to send
/// next, [`Startup::committed`] takes the effects its transaction answered with.
#[derive(Debug, Clone)]
pub struct Startup {
    process: ProcessId,
    left: VecDeque<LeftRun>,
    registered: bool,
}

impl Startup {
    /// The start-up of incarnation `process`, with the runs earlier incarnations left
    /// (in any order: they are taken in run-id order, so every host sends the same
    /// sequence for the same runs).
    pub fn new(process: ProcessId, left: impl IntoIterator<Item = LeftRun>) -> Startup {
        let mut left: Vec<LeftRun> = left.into_iter().collect();
        left.sort_by_key(LeftRun::run);
        left.dedup_by_key(|l| l.run());
        Startup {
            process,
            left: left.into(),
            registered: false,
        }
    }

    /// The incarnation starting.
    pub fn process(&self) -> ProcessId {
        self.process
    }

    /// Whether `ProcessStarted` has committed.
    pub fn is_done(&self) -> bool {
        self.registered
    }

    /// The runs not yet reported or adopted, for a start-up begun again as a new
    /// incarnation after a step failed (what the host then finds left again).
    pub fn into_left(self) -> Vec<LeftRun> {
        self.left.into()
    }

    /// The event to send next, or `None` once start-up is done.
    pub fn next_event(&self) -> Option<Event> {
        if self.registered {
            return None;
        }
        let process = self.process;
        Some(match self.left.front() {
            Some(LeftRun::Going { run, fence, .. }) => Event::Adopt {
                process,
                run: *run,
                fence: *fence,
            },
            Some(LeftRun::Ended {
                run,
                job,
                fence,
                outcome,
            }) => Event::RunFinished {
                process,
                job: job.clone(),
                run: *run,
                fence: *fence,
                outcome: outcome.clone(),
            },
            None => Event::ProcessStarted { process },
        })
    }

    /// The transaction of [`Startup::next_event`] committed and the host heard its
    /// `effects`: start-up moves on, and says what the host must make of it. `None` once
    /// start-up is done (nothing was asked).
    pub fn committed(&mut self, effects: &[Effect]) -> Option<Started> {
        if self.registered {
            return None;
        }
        let Some(left) = self.left.pop_front() else {
            self.registered = true;
            return Some(Started::Registered);
        };
        Some(match left {
            LeftRun::Going { run, job, .. } if refused(effects, self.process, run) => {
                Started::NotAdopted { run, job }
            }
            LeftRun::Going { run, job, fence } => Started::Adopted { run, job, fence },
            LeftRun::Ended { run, .. } => Started::Reported { run },
        })
    }
}

/// Whether the core answered the adoption of `run` by `process` with a cancel.
fn refused(effects: &[Effect], process: ProcessId, run: RunId) -> bool {
    effects.iter().any(|e| {
        matches!(e, Effect::Do(Action::Cancel { run: r, process: p, .. }) if *r == run && *p == process)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, name};
    use duetime::{Actor, Config, JobDef, Now, Schedule, Start, State};

    /// Drives a start-up against `state` the way every host does, returning what each
    /// step meant.
    fn drive(state: &mut State, now: Now, mut startup: Startup) -> Vec<Started> {
        let mut told = Vec::new();
        while let Some(event) = startup.next_event() {
            let mut effects = Vec::new();
            state.step(now, event, &mut effects);
            told.extend(startup.committed(&effects));
        }
        told
    }

    /// A store where process 1 started one run of `job` at 10:00 and then went silent.
    fn one_run_left() -> (State, RunId, Fence) {
        let mut state = State::new(Config::default());
        let def = JobDef::new(
            name("job"),
            Schedule::every("1h".parse().expect("a period"), duetime::Duration::ZERO)
                .expect("a valid period"),
        );
        let mut fx = Vec::new();
        let upsert = Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("ana"),
        };
        state.step(at("2025-01-01T09:30:00Z"), upsert, &mut fx);
        fx.clear();
        let started = Event::ProcessStarted {
            process: ProcessId(1),
        };
        state.step(at("2025-01-01T10:00:00Z"), started, &mut fx);
        let (run, fence) = fx
            .iter()
            .find_map(|e| match e {
                Effect::Do(Action::Start(Start { run, fence, .. })) => Some((*run, *fence)),
                _ => None,
            })
            .expect("the 10:00 due time starts");
        (state, run, fence)
    }

    #[test]
    fn a_going_run_is_adopted_before_the_start_can_find_its_lease_lapsed() {
        let (mut state, run, fence) = one_run_left();
        // An hour later, long past the lease: a new incarnation finds the command going.
        let now = at("2025-01-01T10:59:00Z");
        let left = LeftRun::Going {
            run,
            job: name("job"),
            fence,
        };
        let told = drive(&mut state, now, Startup::new(ProcessId(2), [left]));
        assert_eq!(
            told,
            vec![
                Started::Adopted {
                    run,
                    job: name("job"),
                    fence
                },
                Started::Registered
            ]
        );
        let open = state
            .seq_of_name("job")
            .and_then(|seq| state.record(seq))
            .and_then(|r| r.run())
            .expect("the run is still open, not lost");
        assert_eq!(open.holder(), ProcessId(2));
    }

    #[test]
    fn an_ended_run_is_reported_as_it_ended_and_a_stale_adoption_is_refused() {
        let (mut state, run, fence) = one_run_left();
        let now = at("2025-01-01T10:59:00Z");
        let ended = LeftRun::Ended {
            run,
            job: name("job"),
            fence,
            outcome: Outcome::Ok,
        };
        let told = drive(&mut state, now, Startup::new(ProcessId(2), [ended]));
        assert_eq!(told, vec![Started::Reported { run }, Started::Registered]);
        let last = state
            .seq_of_name("job")
            .and_then(|seq| state.record(seq))
            .and_then(|r| r.last())
            .expect("the run is settled");
        assert_eq!(last.run, run);
        assert_eq!(last.outcome, duetime::LastOutcome::Ok);
        // A third incarnation that still thinks the command goes is told to stop it.
        let going = LeftRun::Going {
            run,
            job: name("job"),
            fence,
        };
        let told = drive(&mut state, now, Startup::new(ProcessId(3), [going]));
        assert_eq!(
            told,
            vec![
                Started::NotAdopted {
                    run,
                    job: name("job")
                },
                Started::Registered
            ]
        );
    }

    #[test]
    fn runs_are_taken_in_run_id_order_whatever_order_the_host_lists_them() {
        let left = |n: u64| LeftRun::Going {
            run: RunId(n),
            job: name("job"),
            fence: Fence(n),
        };
        let mut startup = Startup::new(ProcessId(9), [left(3), left(1), left(2), left(1)]);
        let mut sent = Vec::new();
        while let Some(event) = startup.next_event() {
            sent.push(event.to_string());
            startup.committed(&[]);
        }
        assert_eq!(
            sent.len(),
            4,
            "three adoptions, the repeated one once, then the start"
        );
        assert!(sent[0].contains("r1") && sent[1].contains("r2") && sent[2].contains("r3"));
        assert!(sent[3].contains("started"), "{}", sent[3]);
        assert!(startup.is_done());
        assert_eq!(startup.committed(&[]), None);
    }

    #[test]
    fn a_step_that_did_not_commit_is_asked_again() {
        let left = LeftRun::Going {
            run: RunId(4),
            job: name("job"),
            fence: Fence(7),
        };
        let startup = Startup::new(ProcessId(2), [left]);
        let first = startup.next_event();
        // The host's transaction aborted: it asks again and gets the same event.
        assert_eq!(startup.next_event(), first);
        assert!(matches!(first, Some(Event::Adopt { .. })));
        // Or it begins again as a new incarnation, with what is left.
        let left = startup.into_left();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].run(), RunId(4));
    }
}
