//! Group commit: the events of one turn that are ready together, stepped in one store
//! transaction, so one commit (one fsync) carries many events.
//!
//! A [`Batch`] holds, in this order:
//!
//! 1. the reports of runs this incarnation holds whose commands ended (each a
//!    `RunFinished` under the fence the run is held by), in run-id order;
//! 2. then, when the turn's rules ask for one (the tick interval, the store's next wake,
//!    or a third of a lease since the last tick: [`Incarnation::renew_due`]), one tick of
//!    this process, listing every run held **except** those the batch reports (they are
//!    settled by then: listing them would only be answered `lease_lost`).
//!
//! Nothing else: never people's commands, never another process's events, never a
//! start-up step or a drain (those keep their one transaction each, and their own answer).
//!
//! Reports go first so the tick decides on what they leave. A tick is not added merely
//! because there were reports: the core's settlement already lets the freed lane's oldest
//! waiter in, and the settling process take its job's next in line, in the report's own
//! step (`State::step` for `RunFinished`), so lanes freed by a batch's reports are filled
//! in the same commit without one. A tick is a claim of everything due, which the turn's
//! rules already schedule; adding one to every batch would only add steps.
//!
//! After the commit, [`Incarnation::committed`] marks each report reported (no longer
//! held). A batch that failed, or whose commit answer was lost, changes nothing here: its
//! runs stay held (and in every tick, so their leases are renewed), and the host sends
//! their reports again in next turn's batch. That is safe because a report is idempotent
//! against the core's fence check: a `RunFinished` for a run already settled is answered
//! as stale (a `stale_result` history line) and changes no job.

use duetime::{Event, Fence, Held, Outcome, RunId};

use crate::Incarnation;

/// The most events one batch holds. A batch is one transaction, and while it runs no
/// tick of this process commits: a batch whose steps and writes outlasted a lease would
/// let the leases of the runs still going lapse under a live process. 256 events are a
/// few milliseconds of stepping and one commit's worth of rows (the journal lines of 256
/// settlements), far within `duetime::MIN_LEASE` (ten seconds) even on a slow store; a
/// turn with more ends runs several batches, each renewing the leases when due.
pub const BATCH_MAX: usize = 256;

/// The events of one turn that commit together. See the module's documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    events: Vec<Event>,
    /// The runs reported, with the fence each report carries, in run-id order.
    reports: Vec<(RunId, Fence)>,
    ticks: bool,
}

impl Batch {
    /// Its events, in the order they are stepped.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The runs it reports, with their fences, in run-id order.
    pub fn reports(&self) -> &[(RunId, Fence)] {
        &self.reports
    }

    /// Its events taken out, in the order they are stepped, for a host that steps each
    /// once (the batch keeps its reports and its tick for [`Incarnation::committed`]).
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Whether it ends with a tick.
    pub fn ticks(&self) -> bool {
        self.ticks
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds nothing (nothing ended, and no tick is due): no transaction.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

impl Incarnation {
    /// The next batch: the reports of `ended` (runs whose commands ended, with how; runs
    /// not held are left out, a run named twice is reported once), in run-id order, then
    /// the tick if `tick`; at most `max` events (at least one, at most [`BATCH_MAX`]).
    ///
    /// The tick always has its place: when the cap leaves no room for every report, the
    /// reports left out go in the next batch. So `max` of 1 is one event per transaction,
    /// the tick first, as hosts did before group commit (kept for measurements).
    pub fn batch<I>(&self, ended: I, tick: bool, max: usize) -> Batch
    where
        I: IntoIterator<Item = (RunId, Outcome)>,
    {
        let max = max.clamp(1, BATCH_MAX);
        let room = max - usize::from(tick);
        let mut ended: Vec<(RunId, Outcome)> = ended.into_iter().collect();
        ended.sort_by_key(|(run, _)| *run);
        ended.dedup_by_key(|(run, _)| *run);
        let size = ended.len().min(room) + usize::from(tick);
        let mut events = Vec::with_capacity(size);
        let mut reports = Vec::with_capacity(size - usize::from(tick));
        for (run, outcome) in ended {
            if reports.len() == room {
                break;
            }
            let Some(event) = self.ended(run, outcome) else {
                continue;
            };
            if let Event::RunFinished { fence, .. } = &event {
                reports.push((run, *fence));
            }
            events.push(event);
        }
        if tick {
            events.push(self.tick_without(&reports));
        }
        Batch {
            events,
            reports,
            ticks: tick,
        }
    }

    /// The batch committed and this process heard the answer: each run it reported is no
    /// longer held ([`Incarnation::reported`]). Never called for a batch that failed or
    /// whose answer was lost: its runs stay held and are reported again.
    pub fn committed(&mut self, batch: &Batch) {
        for &(run, fence) in &batch.reports {
            self.reported(run, fence);
        }
    }

    /// A tick listing every run held but those in `reported` (both in run-id order).
    fn tick_without(&self, reported: &[(RunId, Fence)]) -> Event {
        let tick = self.tick();
        let Event::Tick { process, held } = tick else {
            return tick;
        };
        if reported.is_empty() {
            return Event::Tick { process, held };
        }
        let held: Vec<Held> = held
            .into_iter()
            .filter(|h| reported.binary_search_by_key(&h.run, |(r, _)| *r).is_err())
            .collect();
        Event::Tick { process, held }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, name};
    use duetime::{
        Action, Actor, CancelReason, Config, Duration, Effect, Entry, History, JobDef, ProcessId,
        Schedule, State,
    };

    fn held(inc: &Incarnation) -> Vec<u64> {
        inc.held().map(|(run, _)| run.0).collect()
    }

    #[test]
    fn reports_go_in_run_id_order_then_the_tick_without_them() {
        let mut inc = Incarnation::new(ProcessId(7));
        for n in [4, 2, 9, 1] {
            inc.adopt(RunId(n), name("job"), Fence(n * 10));
        }
        // Run 5 is not held (let go, or never this process's): left out; run 2 twice.
        let ended = [4, 5, 2, 1, 2].map(|n| (RunId(n), Outcome::Ok));
        let batch = inc.batch(ended, true, BATCH_MAX);
        let order: Vec<String> = batch.events().iter().map(|e| e.to_string()).collect();
        assert_eq!(batch.len(), 4, "{order:?}");
        let reported: Vec<(u64, u64)> = batch.reports().iter().map(|(r, f)| (r.0, f.0)).collect();
        assert_eq!(reported, vec![(1, 10), (2, 20), (4, 40)]);
        for (event, (run, fence)) in batch.events().iter().zip(batch.reports()) {
            assert!(
                matches!(event, Event::RunFinished { run: r, fence: f, process: ProcessId(7), .. } if r == run && f == fence),
                "{event}"
            );
        }
        let Some(Event::Tick { process, held }) = batch.events().last() else {
            panic!("the tick comes last: {order:?}");
        };
        assert_eq!(*process, ProcessId(7));
        let ticked: Vec<u64> = held.iter().map(|h| h.run.0).collect();
        assert_eq!(ticked, vec![9], "the tick lists only the runs still going");
        assert!(batch.ticks());
        let mut taken = batch.clone();
        assert_eq!(taken.take_events(), batch.events());
        assert_eq!(taken.reports(), batch.reports(), "kept for `committed`");
        // No tick due, nothing ended: no transaction at all.
        assert!(inc.batch([], false, BATCH_MAX).is_empty());
    }

    #[test]
    fn the_cap_keeps_the_tick_and_leaves_later_reports_for_the_next_batch() {
        let mut inc = Incarnation::new(ProcessId(1));
        for n in 1..=5 {
            inc.adopt(RunId(n), name("job"), Fence(n));
        }
        let ended: Vec<(RunId, Outcome)> = (1..=5).map(|n| (RunId(n), Outcome::Ok)).collect();
        let batch = inc.batch(ended.clone(), true, 3);
        assert_eq!(batch.len(), 3);
        let runs: Vec<u64> = batch.reports().iter().map(|(r, _)| r.0).collect();
        assert_eq!(runs, vec![1, 2], "the lowest run ids first");
        assert!(matches!(batch.events()[2], Event::Tick { .. }));
        inc.committed(&batch);
        assert_eq!(held(&inc), vec![3, 4, 5]);
        let next = inc.batch(ended.clone(), false, 3);
        let runs: Vec<u64> = next.reports().iter().map(|(r, _)| r.0).collect();
        assert_eq!(
            runs,
            vec![3, 4, 5],
            "the reports already committed are not sent again"
        );
        // One event a transaction (the measurement's `DUETIME_BATCH_MAX=1`): the tick alone
        // first, as before group commit; a cap of 0 or past the bound is taken as its bound.
        let one = inc.batch(ended.clone(), true, 1);
        assert!(matches!(one.events(), [Event::Tick { .. }]));
        assert_eq!(inc.batch(ended.clone(), false, 0).len(), 1);
        let many: Vec<(RunId, Outcome)> = (1..=1000).map(|n| (RunId(n), Outcome::Ok)).collect();
        let mut big = Incarnation::new(ProcessId(1));
        for n in 1..=1000 {
            big.adopt(RunId(n), name("job"), Fence(n));
        }
        assert_eq!(big.batch(many, true, usize::MAX).len(), BATCH_MAX);
    }

    #[test]
    fn a_failed_or_unheard_batch_leaves_every_run_held_and_is_sent_again() {
        let mut inc = Incarnation::new(ProcessId(1));
        for n in 1..=3 {
            inc.adopt(RunId(n), name("job"), Fence(n));
        }
        let ended = [(RunId(1), Outcome::Ok), (RunId(3), Outcome::TimedOut)];
        let first = inc.batch(ended.clone(), true, BATCH_MAX);
        // The transaction aborted, or committed with its answer lost: the host never
        // calls `committed`. Every run stays held, and the next tick renews them all.
        assert_eq!(held(&inc), vec![1, 2, 3]);
        let Event::Tick { held: ticked, .. } = inc.tick() else {
            panic!("a tick")
        };
        assert_eq!(ticked.len(), 3);
        let again = inc.batch(ended, true, BATCH_MAX);
        assert_eq!(again, first, "the same reports, sent again");
        inc.committed(&again);
        assert_eq!(
            held(&inc),
            vec![2],
            "a committed batch settles exactly its runs"
        );
    }

    #[test]
    fn a_batch_sent_twice_changes_no_job_the_second_time() {
        let mut state = State::new(Config::default());
        let def = JobDef::new(
            name("job"),
            Schedule::every("1m".parse().expect("a period"), Duration::ZERO).expect("valid"),
        );
        let upsert = Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("ana"),
        };
        state.step(at("2025-01-01T09:59:30Z"), upsert, &mut Vec::new());
        let mut inc = Incarnation::new(ProcessId(1));
        let start = Event::ProcessStarted {
            process: ProcessId(1),
        };
        let mut fx = Vec::new();
        state.step(at("2025-01-01T10:00:00Z"), start, &mut fx);
        let run = fx
            .iter()
            .find_map(|e| match inc.take(e) {
                Some(crate::Order::Launch { run, .. }) => Some(run),
                _ => None,
            })
            .expect("the 10:00 due time starts");
        let batch = inc.batch([(run, Outcome::Ok)], true, BATCH_MAX);
        let step_all = |state: &mut State, now| {
            let mut fx = Vec::new();
            for e in batch.events() {
                state.step(now, e.clone(), &mut fx);
            }
            fx
        };
        // Committed, answer lost: the host does not hear it, and sends the batch again.
        step_all(&mut state, at("2025-01-01T10:00:05Z"));
        let settled = state.clone();
        let fx = step_all(&mut state, at("2025-01-01T10:00:06Z"));
        let record = |s: &State| {
            let seq = s.seq_of_name("job").expect("the job");
            s.record(seq)
                .map(|r| (r.last().map(|l| l.run), r.run().map(|o| o.id())))
        };
        assert_eq!(
            record(&state),
            record(&settled),
            "the job is as the first left it"
        );
        assert_eq!(record(&state), Some((Some(run), None)));
        assert!(
            fx.iter().any(|e| matches!(
                e,
                Effect::Journal(r) if matches!(r.entry, Entry::History(History::StaleResult { .. }))
            )),
            "the repeated report is answered as stale: {fx:?}"
        );
        assert!(
            !fx.iter().any(|e| matches!(
                e,
                Effect::Do(Action::Cancel {
                    reason: CancelReason::LeaseLost,
                    ..
                })
            )),
            "the tick does not list the run it reports"
        );
        inc.committed(&batch);
        assert!(inc.is_empty());
    }
}
