//! The turn: what one running incarnation holds, what it sends the core and what it makes of
//! each answer, the same in every host.
//!
//! An [`Incarnation`] keeps the runs this process carries out (started by the core's
//! `Start`, or adopted at start-up) and whether it drains. From it a host takes:
//!
//! - the tick to send ([`Incarnation::tick`]): every run held, so the core renews their
//!   leases; a run stays held until its result **committed**, so a report that failed
//!   (an aborted transaction, a store that did not answer) is tried again while the lease
//!   is still renewed, never left to lapse under a live process;
//! - what each committed effect asks of it ([`Incarnation::take`]): launch a run, or stop
//!   one (a timeout or a removal: the run stays held and its end is reported; a lost
//!   lease: the run is no longer this process's, and its result would be stale);
//! - the report of a run that ended ([`Incarnation::ended`], then
//!   [`Incarnation::reported`] once it committed), or of a run that could not even start
//!   ([`Incarnation::not_started`]);
//! - the drain ([`Incarnation::drain`]), and when it is complete.
//!
//! When to tick is the host's clock's business, decided by two rules shared here: a tick
//! has work when the store's next wake for this process has come by its own wall clock
//! ([`Incarnation::work_due`]), and a turn that reports many results renews the leases
//! again once a third of a lease has passed since its tick ([`Incarnation::renew_due`]),
//! so a slow store never makes a live process's leases lapse. A turn whose transaction
//! failed ends there, and the next one comes after a short [`backoff`], before anything
//! slow: a failed tick is tried again well within a lease.
//!
//! Effects are carried out only after their transaction committed; a commit whose answer
//! was lost is never acted on (the host did not hear it): the core sends what it still
//! needs again, or lets the lease lapse.

use duetime::{
    Action, CancelReason, Duration, Effect, Event, Fence, Held, JobName, Outcome, ProcessId, RunId,
    Start, Timestamp,
};

/// How long a host waits after `failures` failed turns in a row (a transaction that
/// aborted, a store that did not answer) before its next turn: from 400 ms, doubling, up to
/// 5 s, so a store in trouble is neither hammered nor slept through, and a tick that failed
/// is tried again well within a lease (`duetime::MIN_LEASE` is ten seconds).
pub fn backoff(failures: u32) -> std::time::Duration {
    const BASE: std::time::Duration = std::time::Duration::from_millis(200);
    BASE.saturating_mul(1 << failures.min(5))
        .min(std::time::Duration::from_secs(5))
}

/// A run this incarnation carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// Its job.
    pub job: JobName,
    /// The fence it was started or adopted under, which its result must carry.
    pub fence: Fence,
    /// Why the core asked to stop it, once it did (a timeout, or its job removed): the
    /// command is being stopped, and its end is still reported.
    pub stopping: Option<CancelReason>,
}

/// What a committed effect asks of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// Start the run's command (the effect carries the rest: attempt, trigger, covers). The
    /// run is held from now on; if its command cannot start, report
    /// [`Incarnation::not_started`].
    Launch {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
        /// Its fence.
        fence: Fence,
        /// When it must end.
        deadline: Timestamp,
    },
    /// Stop the run's command.
    Stop {
        /// The run.
        run: RunId,
        /// Its job.
        job: JobName,
        /// Why.
        reason: CancelReason,
        /// Whether it is still held, and its end still to be reported (a timeout, a
        /// removal), or let go (a lost lease: its result would be stale).
        held: bool,
    },
}

/// One incarnation of a host process, between its start-up and its exit: the runs it holds
/// and whether it drains. See the module's documentation.
#[derive(Debug, Clone)]
pub struct Incarnation {
    process: ProcessId,
    /// In run-id order (a sorted vector: hosts hold few runs, and the tick lists them in
    /// this order every time).
    held: Vec<(RunId, Holding)>,
    draining: bool,
}

impl Incarnation {
    /// Incarnation `process`, holding nothing yet.
    pub fn new(process: ProcessId) -> Incarnation {
        Incarnation {
            process,
            held: Vec::new(),
            draining: false,
        }
    }

    /// Its process id.
    pub fn process(&self) -> ProcessId {
        self.process
    }

    /// The runs it holds, in run-id order.
    pub fn held(&self) -> impl Iterator<Item = (RunId, &Holding)> {
        self.held.iter().map(|(run, h)| (*run, h))
    }

    /// The run, if held.
    pub fn holding(&self, run: RunId) -> Option<&Holding> {
        self.find(run).ok().map(|i| &self.held[i].1)
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// How many runs it holds.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// A run adopted at start-up (`Started::Adopted`), held from now on.
    pub fn adopt(&mut self, run: RunId, job: JobName, fence: Fence) {
        self.hold(run, job, fence);
    }

    /// The tick to send: every run held, so their leases are renewed.
    pub fn tick(&self) -> Event {
        let held = self
            .held
            .iter()
            .map(|(run, h)| Held {
                run: *run,
                fence: h.fence,
            })
            .collect();
        Event::Tick {
            process: self.process,
            held,
        }
    }

    /// Whether a tick has work: the store's next wake for this process (`wake`, from
    /// `State::next_wake_for`) has come by its own wall clock. A draining process claims
    /// nothing, so only its heartbeat makes it tick.
    pub fn work_due(&self, wake: Option<Timestamp>, wall: Timestamp) -> bool {
        !self.draining && wake.is_some_and(|w| w <= wall)
    }

    /// Whether the leases of the runs held need renewing before the turn goes on: a third
    /// of a lease since the last tick (a turn reporting many results on a slow store).
    pub fn renew_due(&self, since_tick: Duration, lease: Duration) -> bool {
        !self.held.is_empty() && since_tick.as_millis() >= lease.as_millis() / 3
    }

    /// What a committed effect asks of this process, if anything. Starts for this process
    /// are held from here; a cancel of a run it holds stops it (let go at once for a lost
    /// lease). Everything else (journal lines, notices, replies, other processes' runs) is
    /// `None`.
    pub fn take(&mut self, effect: &Effect) -> Option<Order> {
        match effect {
            Effect::Do(Action::Start(Start {
                run,
                job,
                fence,
                deadline,
                process,
                ..
            })) if *process == self.process => {
                self.hold(*run, job.clone(), *fence);
                Some(Order::Launch {
                    run: *run,
                    job: job.clone(),
                    fence: *fence,
                    deadline: *deadline,
                })
            }
            Effect::Do(Action::Cancel {
                run,
                process,
                reason,
                ..
            }) if *process == self.process => self.stop(*run, *reason),
            _ => None,
        }
    }

    fn stop(&mut self, run: RunId, reason: CancelReason) -> Option<Order> {
        let i = self.find(run).ok()?;
        if reason == CancelReason::LeaseLost {
            let (_, h) = self.held.remove(i);
            return Some(Order::Stop {
                run,
                job: h.job,
                reason,
                held: false,
            });
        }
        let h = &mut self.held[i].1;
        h.stopping = Some(reason);
        Some(Order::Stop {
            run,
            job: h.job.clone(),
            reason,
            held: true,
        })
    }

    /// The report of a held run whose command ended with `outcome`; `None` for a run it
    /// does not hold (let go, or reported already). The run stays held until
    /// [`Incarnation::reported`]: a report that does not commit is sent again, and the
    /// ticks meanwhile renew its lease.
    pub fn ended(&self, run: RunId, outcome: Outcome) -> Option<Event> {
        let h = self.holding(run)?;
        Some(Event::RunFinished {
            process: self.process,
            job: h.job.clone(),
            run,
            fence: h.fence,
            outcome,
        })
    }

    /// A report of `run` under `fence` ([`Incarnation::ended`]) committed: it is no longer
    /// held. A report under another fence than the run is held under (a result the host
    /// mixed up) settles nothing here, as it settles nothing in the core: the run stays
    /// held, its lease renewed, until its own report commits.
    pub fn reported(&mut self, run: RunId, fence: Fence) {
        if self.holding(run).is_some_and(|h| h.fence == fence) {
            self.let_go(run);
        }
    }

    /// The report of a launched run whose command could not even start: failed with
    /// `why`. It is no longer held: if this report does not commit either, its lease
    /// lapses and the core records the run lost (there is no command whose end could be
    /// reported later).
    pub fn not_started(&mut self, run: RunId, why: &str) -> Option<Event> {
        let i = self.find(run).ok()?;
        let (_, h) = self.held.remove(i);
        Some(Event::RunFinished {
            process: self.process,
            job: h.job,
            run,
            fence: h.fence,
            outcome: Outcome::failed(&format!("not started: {why}")),
        })
    }

    /// Stops holding a run without reporting it (its command vanished without a result,
    /// or the host let it go): its lease lapses and the core accounts for it.
    pub fn let_go(&mut self, run: RunId) -> Option<Holding> {
        let i = self.find(run).ok()?;
        Some(self.held.remove(i).1)
    }

    /// The runs held, taken away (the process crashed or gave up: its commands go on as
    /// orphans for a later incarnation to adopt or report).
    pub fn take_all(&mut self) -> Vec<(RunId, Holding)> {
        std::mem::take(&mut self.held)
    }

    /// `ProcessDraining` to send, unless it already drains: no new claims from here.
    pub fn drain(&self) -> Option<Event> {
        (!self.draining).then_some(Event::ProcessDraining {
            process: self.process,
        })
    }

    /// The drain ([`Incarnation::drain`]) committed.
    pub fn drain_committed(&mut self) {
        self.draining = true;
    }

    /// Whether it drains.
    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// Whether the drain is complete: draining, and every run it held has ended and been
    /// reported (or let go). The process exits then.
    pub fn is_drained(&self) -> bool {
        self.draining && self.held.is_empty()
    }

    fn find(&self, run: RunId) -> Result<usize, usize> {
        self.held.binary_search_by_key(&run, |(r, _)| *r)
    }

    fn hold(&mut self, run: RunId, job: JobName, fence: Fence) {
        let holding = Holding {
            job,
            fence,
            stopping: None,
        };
        match self.find(run) {
            Ok(i) => self.held[i].1 = holding,
            Err(i) => self.held.insert(i, (run, holding)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, name};
    use duetime::{Actor, Config, JobDef, Now, Schedule, State};

    /// A store with one job due every minute, and incarnation 1 started at 10:00.
    fn store() -> (State, Incarnation) {
        let mut state = State::new(Config::default());
        let def = JobDef::new(
            name("job"),
            Schedule::every("1m".parse().expect("a period"), Duration::ZERO)
                .expect("a valid period"),
        );
        let mut fx = Vec::new();
        let upsert = Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("ana"),
        };
        state.step(at("2025-01-01T09:59:30Z"), upsert, &mut fx);
        (state, Incarnation::new(ProcessId(1)))
    }

    /// Steps `event` and hands every effect to the incarnation, as a host does after the
    /// commit; returns the orders.
    fn step(state: &mut State, inc: &mut Incarnation, now: Now, event: Event) -> Vec<Order> {
        let mut fx = Vec::new();
        state.step(now, event, &mut fx);
        fx.iter().filter_map(|e| inc.take(e)).collect()
    }

    #[test]
    fn a_started_run_is_held_and_ticked_until_its_report_commits() {
        let (mut state, mut inc) = store();
        let started = Event::ProcessStarted {
            process: ProcessId(1),
        };
        let orders = step(&mut state, &mut inc, at("2025-01-01T10:00:00Z"), started);
        let Some(Order::Launch { run, fence, .. }) = orders.first().cloned() else {
            panic!("the 10:00 due time starts: {orders:?}");
        };
        assert_eq!(inc.len(), 1);
        // The command ends; its report's transaction fails twice, and meanwhile the process
        // ticks for five minutes, long past a lease: the run is renewed, not lost.
        let report = inc.ended(run, Outcome::Ok).expect("held");
        for minute in 1..=5 {
            let now = at(&format!("2025-01-01T10:0{minute}:00Z"));
            let Event::Tick { held, .. } = inc.tick() else {
                panic!("a tick")
            };
            assert_eq!(held.len(), 1, "the unreported run is renewed");
            let mut fx = Vec::new();
            state.step(now, inc.tick(), &mut fx);
            assert!(
                !fx.iter().any(|e| matches!(
                    e,
                    Effect::Do(Action::Cancel {
                        reason: CancelReason::LeaseLost,
                        ..
                    })
                )),
                "no lease lapses under a live process"
            );
        }
        let mut fx = Vec::new();
        state.step(at("2025-01-01T10:05:30Z"), report, &mut fx);
        inc.reported(run, Fence(run.0 ^ 1));
        assert_eq!(inc.len(), 1, "a report under a wrong fence settles nothing");
        inc.reported(run, fence);
        assert!(inc.is_empty());
        let last = state
            .seq_of_name("job")
            .and_then(|seq| state.record(seq))
            .and_then(|r| r.last())
            .expect("settled");
        assert_eq!(last.run, run);
        assert_eq!(last.outcome, duetime::LastOutcome::Ok);
    }

    #[test]
    fn a_lost_lease_lets_the_run_go_and_a_timeout_keeps_it_for_its_report() {
        let mut inc = Incarnation::new(ProcessId(3));
        inc.adopt(RunId(2), name("a"), Fence(5));
        inc.adopt(RunId(1), name("b"), Fence(4));
        let cancel = |run: u64, reason| {
            Effect::Do(Action::Cancel {
                run: RunId(run),
                job: None,
                process: ProcessId(3),
                reason,
            })
        };
        let order = inc.take(&cancel(1, CancelReason::Timeout));
        assert!(matches!(order, Some(Order::Stop { held: true, .. })));
        assert_eq!(
            inc.holding(RunId(1)).and_then(|h| h.stopping),
            Some(CancelReason::Timeout)
        );
        let order = inc.take(&cancel(2, CancelReason::LeaseLost));
        assert!(matches!(order, Some(Order::Stop { held: false, .. })));
        assert!(inc.ended(RunId(2), Outcome::Ok).is_none(), "stale: let go");
        // Another process's cancel, or one for a run not held, asks nothing.
        assert_eq!(inc.take(&cancel(9, CancelReason::Timeout)), None);
        let other = Effect::Do(Action::Cancel {
            run: RunId(1),
            job: None,
            process: ProcessId(4),
            reason: CancelReason::LeaseLost,
        });
        assert_eq!(inc.take(&other), None);
        assert!(matches!(
            inc.ended(RunId(1), Outcome::TimedOut),
            Some(Event::RunFinished {
                fence: Fence(4),
                ..
            })
        ));
    }

    #[test]
    fn runs_are_ticked_in_run_id_order_and_a_drain_completes_when_the_last_is_reported() {
        let mut inc = Incarnation::new(ProcessId(1));
        for n in [3, 1, 2] {
            inc.adopt(RunId(n), name("job"), Fence(n));
        }
        let Event::Tick { held, .. } = inc.tick() else {
            panic!("a tick")
        };
        let order: Vec<u64> = held.iter().map(|h| h.run.0).collect();
        assert_eq!(order, vec![1, 2, 3]);
        assert!(inc.drain().is_some());
        inc.drain_committed();
        assert_eq!(inc.drain(), None, "drains once");
        assert!(!inc.work_due(Some(Timestamp::MIN), Timestamp::MAX));
        for n in [1, 2] {
            inc.reported(RunId(n), Fence(n));
        }
        assert!(!inc.is_drained());
        assert!(inc.not_started(RunId(3), "no such file").is_some());
        assert!(inc.is_drained());
    }

    #[test]
    fn a_failed_turn_is_tried_again_within_a_lease() {
        assert_eq!(backoff(1), std::time::Duration::from_millis(400));
        assert_eq!(backoff(3), std::time::Duration::from_millis(1600));
        assert_eq!(backoff(40), std::time::Duration::from_secs(5));
        let lease = std::time::Duration::from_millis(duetime::MIN_LEASE.as_millis());
        assert!(backoff(1) + backoff(2) + backoff(3) < lease);
    }

    #[test]
    fn leases_are_renewed_mid_turn_after_a_third_of_a_lease() {
        let mut inc = Incarnation::new(ProcessId(1));
        let lease = Duration::from_secs(30);
        assert!(!inc.renew_due(Duration::from_secs(60), lease), "none held");
        inc.adopt(RunId(1), name("job"), Fence(1));
        assert!(!inc.renew_due(Duration::from_secs(9), lease));
        assert!(inc.renew_due(Duration::from_secs(10), lease));
    }
}
