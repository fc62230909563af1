//! The world's store: transactions of one event, or of a process's batch (group commit:
//! `duetime_loop::Batch`), which may abort or lose their answer as a whole; what each
//! step's effects mean for the processes that hear them, and what the checker is told.

use super::*;
use crate::check::Probe;

/// Under `check_state`, the core's whole load check runs every this many committed steps
/// (and the check of the touched jobs at every other): a broken index of a job the step
/// did not touch is found within this many steps. The state the store of rows' copy hands
/// over is always checked whole.
const FULL_CHECK_EVERY: u64 = 16;

/// How a step was taken, for reading its effects (`World::take_effect`).
pub(super) struct StepSeen {
    pub(super) host: Option<usize>,
    /// The commit's answer was lost: the processes carry out none of its starts or
    /// cancels.
    pub(super) lost: bool,
    /// The step was a `ProcessDraining`.
    pub(super) draining: bool,
    /// The step was a `Backfill`.
    pub(super) backfill: bool,
    /// J2: the judged process's clocks as read before the step.
    pub(super) before: Option<crate::check::witness::Before>,
}

/// How a transaction ended, as its process saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Commit {
    /// Aborted: nothing changed.
    Aborted,
    /// Committed, and its process never heard: it carries out nothing and sends its
    /// reports again.
    Lost,
    /// Committed, and its process heard the answer.
    Heard,
}

/// What a step's effects leave for after it (`World::after_transact`).
#[derive(Default)]
pub(super) struct StepLeft {
    /// Runs parked for approval: job, run, until, and when.
    pub(super) parked: Vec<(JobName, RunId, Timestamp, Timestamp)>,
    /// Retries scheduled: job, and the wait in milliseconds.
    pub(super) retrying: Vec<(JobName, i64)>,
    /// A clock newly held (ahead or behind).
    pub(super) held: bool,
}

/// The probe a refused backfill counts under.
pub(super) fn backfill_refused(refusal: &duetime::Refusal) -> Probe {
    use duetime::Refusal as R;
    match refusal {
        R::AlreadyAccounted { .. } => Probe::BackfillRefusedAlreadyAccounted,
        R::EmptyRange { .. } => Probe::BackfillRefusedEmptyRange,
        R::NoDueTimes { .. } => Probe::BackfillRefusedNoDueTimes,
        R::TooManyDueTimes { .. } => Probe::BackfillRefusedTooManyDueTimes,
        R::OwedLineFull { .. } => Probe::BackfillRefusedOwedLineFull,
        R::NotFound { .. } => Probe::BackfillRefusedNoSuchJob,
        _ => Probe::BackfillRefusedOther,
    }
}

impl World {
    /// D1 for what a host's status shows: a process known to the store that was asked to
    /// drain shows as draining (`ProcessRec::draining`) once that step is committed.
    pub(super) fn drain_shown(&mut self, p: ProcessId) {
        let shown = self.state.process(p).map(duetime::ProcessRec::draining);
        if shown == Some(false) {
            let detail = format!("{p} was asked to drain, yet the store shows it not draining");
            self.checker.observe(Observation::WorldSaw {
                invariant: Invariant::D1,
                detail,
            });
        }
    }

    /// One store transaction of one event: it may abort (nothing happens), or commit with
    /// its answer lost (the journal is written, the process never hears of its effects).
    /// Returns whether it committed (an aborted transaction changed nothing).
    pub(super) fn transact(&mut self, host: Option<usize>, now: Now, event: Event) -> bool {
        if self.transaction_aborted(host, std::slice::from_ref(&event)) {
            return false;
        }
        let lost = self.answer_lost();
        self.step_one(host, now, event, lost);
        true
    }

    /// One store transaction of several events, stepped in order on one reading of the
    /// clocks (a process's batch): it aborts as a whole (nothing happens), or commits as a
    /// whole, its answer heard or lost as a whole (a lost answer: the process carries out
    /// none of its starts or cancels). Each event is still a step of its own for the
    /// checker, which holds every invariant after each.
    pub(super) fn transact_all(
        &mut self,
        host: Option<usize>,
        now: Now,
        events: Vec<Event>,
    ) -> Commit {
        if self.transaction_aborted(host, &events) {
            return Commit::Aborted;
        }
        let lost = self.answer_lost();
        for event in events {
            self.step_one(host, now, event, lost);
        }
        if lost {
            Commit::Lost
        } else {
            Commit::Heard
        }
    }

    /// One event's step within a committed transaction: the input noted, the core's step,
    /// S6, J2 and J3 around it, its effects taken (heard unless `lost`), the checker told.
    fn step_one(&mut self, host: Option<usize>, now: Now, event: Event, lost: bool) {
        self.note_input(host, now, &event);
        let mut effects = std::mem::take(&mut self.effects);
        let wake_before = self.state.next_wake();
        let owner_before = self.state.owner_lease().map(|o| (o.holder, o.fence));
        let ticked = match &event {
            Event::Tick { process, .. } => Some(*process),
            _ => None,
        };
        let (judged, before) = self.judged_before(&event, now);
        let gap_expected = self.gap_expected(&event, judged, now);
        if host.is_some() && judged.is_some() {
            self.read_clocks();
        }
        let drain_of = match event {
            Event::ProcessDraining { process } => Some(process),
            _ => None,
        };
        let backfill = matches!(event, Event::Backfill { .. });
        self.state.step(now, event, &mut effects);
        self.events += 1;
        if let Some(p) = drain_of {
            self.drain_shown(p);
        }
        self.check_committed(now);
        if let Some(p) = judged {
            self.gap_told(p, gap_expected, &effects, now);
        }
        let seen = StepSeen {
            host,
            lost,
            draining: drain_of.is_some(),
            backfill,
            before,
        };
        let mut left = StepLeft::default();
        for e in effects.drain(..) {
            self.take_effect(e, &seen, &mut left);
        }
        self.effects = effects;
        if let (Some(h), Some(p), Some(before)) = (host, judged, before) {
            let heard_at = self.state.process(p).map(|r| r.heard_at().as_millis());
            self.witnesses.spoke(h, p, self.t, before, heard_at);
            self.clocks_followed(h, p, now);
        }
        let touched = match (&self.rows, self.touched_known) {
            (_, false) => None,
            (Some(rows), true) => Some(rows.touched()),
            (None, true) => Some(self.touched.as_slice()),
        };
        self.checker.observe(Observation::Committed {
            state: &self.state,
            wall: now.wall,
            touched,
        });
        self.after_transact(ticked, owner_before, wake_before, left);
    }

    /// J2 (`witness.rs`): the process whose event the store judges by its clock, and what
    /// the store knew of it before.
    fn judged_before(
        &self,
        event: &Event,
        now: Now,
    ) -> (Option<ProcessId>, Option<crate::check::witness::Before>) {
        let judged = match event {
            Event::ProcessStarted { process }
            | Event::Tick { process, .. }
            | Event::ProcessDraining { process }
            | Event::Adopt { process, .. } => Some(*process),
            _ => None,
        };
        let before = judged.map(|p| crate::check::witness::Before {
            wall: now.wall.as_millis(),
            store: self.state.clock().map(|c| c.as_millis()),
            heard_at: self.state.process(p).map(|r| r.heard_at().as_millis()),
        });
        (judged, before)
    }

    /// Whether the commit's answer is lost on its way to the process (a fault).
    fn answer_lost(&mut self) -> bool {
        let f = self.cfg.faults;
        let lost = f.lost_answer > 0.0 && self.rng.gen_bool(f.lost_answer.min(1.0));
        if lost {
            *self.faults.entry("commit answer lost").or_default() += 1;
        }
        self.lost_last = lost;
        lost
    }

    /// Whether the store aborts the transaction carrying `events` (a fault): nothing is
    /// stepped. A result whose transaction aborted is delivered again later (`Action::Deliver`),
    /// unless `host` holds its run under its fence: that host sends it again in its next
    /// turn's batch (`Host::unreported`), as the daemon does.
    pub(super) fn transaction_aborted(&mut self, host: Option<usize>, events: &[Event]) -> bool {
        let f = self.cfg.faults;
        if f.abort <= 0.0 || !self.rng.gen_bool(f.abort.min(1.0)) {
            return false;
        }
        *self.faults.entry("transaction aborted").or_default() += 1;
        for event in events {
            let Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            } = event
            else {
                continue;
            };
            let held = host.is_some_and(|h| {
                let inc = &self.hosts[h].inc;
                inc.process() == *process && inc.holding(*run).is_some_and(|r| r.fence == *fence)
            });
            if held {
                continue;
            }
            let t = self.t + self.rng.gen_range(1_000..30_000);
            let deliver = Action::Deliver {
                process: *process,
                run: *run,
                job: job.clone(),
                fence: *fence,
                outcome: outcome.clone(),
            };
            self.at(t, deliver);
        }
        true
    }

    /// Before a step: the input kept for a regression file, the trace's line, and what
    /// the checker knows of the event before the core sees it.
    pub(super) fn note_input(&mut self, host: Option<usize>, now: Now, event: &Event) {
        if let Some(inputs) = &mut self.inputs {
            inputs.push((now, event.clone()));
        }
        if let Some(trace) = &mut self.trace {
            // The store's clock before the step, where it differs from true time by more
            // than a minute: what the core judges held clocks by.
            let store = self
                .state
                .clock()
                .filter(|c| (c.as_millis() - self.t).abs() > 60_000)
                .map_or(String::new(), |c| format!(", store {c}"));
            trace.push(format!(
                "{} (true {}{store}) {}",
                now.wall,
                Timestamp::from_millis(self.t),
                event
            ));
        }
        if let Some(h) = host {
            self.hosts[h].shown_at = self.t;
        }
        self.checker.observe(Observation::Stepping {
            event,
            state: &self.state,
            now,
        });
        if let Event::Upsert { def, .. } = event {
            self.definition_read(def);
        }
    }

    /// The checks of a definition a person or a host sent (`wire_def`: read back with
    /// its defaults left out, typed durations, a digest no other daylight-saving policy
    /// shares), once per distinct definition: they are functions of the definition alone,
    /// and a world sends the same few again at every start-up and reload (7 digests and
    /// 2 JSON round trips each time were 7% of a world's instructions).
    fn definition_read(&mut self, def: &duetime::JobDef) {
        if self.definitions_read.contains(def) {
            return;
        }
        let job = &def.name;
        if let Some(detail) = crate::wire_def::misread(def) {
            self.checker
                .observe(Observation::DefinitionMisread { job, detail });
        }
        if let Some(detail) = crate::wire_def::digest_shared(def) {
            self.checker
                .observe(Observation::DigestShared { job, detail });
        }
        self.definitions_read.push(def.clone());
    }

    /// S6: what was committed must load. Every step under `check_state`; a full round trip
    /// now and then always (the world goes on from the reloaded copy).
    pub(super) fn check_committed(&mut self, now: Now) {
        let rows = match &mut self.rows {
            Some(rows) => rows.write(&mut self.state, &mut self.faults, &mut self.probes),
            None => {
                self.touched = self.state.take_touched();
                Ok(())
            }
        };
        self.touched_known = rows.is_ok() && !self.rows.as_ref().is_some_and(|r| r.took_over());
        let checked = if rows.is_err() {
            rows
        } else if self.rng.gen_ratio(1, 1024) {
            self.probes.add(Probe::StateRoundTrip, 1);
            let trip = crate::round_trip(&mut self.state);
            crate::rows::Rows::follow(&mut self.state);
            self.touched_known = false;
            trip
        } else if self.check_state {
            self.self_check_committed()
                .map_err(|e| format!("the state fails its own load check: {e}"))
                .and_then(|()| crate::leases_within_the_clock(&self.state))
        } else {
            Ok(())
        };
        if let Err(what) = checked {
            let detail = format!("after the event at {}: {what}", now.wall);
            self.checker.observe(Observation::StateBroken(detail));
            self.broken = true;
        }
    }

    /// The core's own load check of a committed state, under `check_state`: of the jobs the
    /// step touched and the whole-state checks that cost little (`self_check_touched`), and
    /// the whole check (`self_check`) every `FULL_CHECK_EVERY` committed steps, after the
    /// store's copy takes over, at the world's end (`check_at_end`), and in worlds without
    /// A whole check of a state of nine jobs cost about 17,000 instructions, 36% of a heavy
    /// world's; a record a step did not touch is the one the last whole check passed (the
    /// store of rows holds the core's list of touched jobs to what changed).
    pub(super) fn self_check_committed(&mut self) -> Result<(), duetime::Inconsistency> {
        self.states_checked += 1;
        let whole = self.states_checked.is_multiple_of(FULL_CHECK_EVERY);
        match &self.rows {
            Some(rows) if whole || rows.took_over() => self.state.self_check(),
            Some(rows) => self.state.self_check_touched(rows.touched()),
            None if whole => self.state.self_check(),
            None => self.state.self_check_touched(&self.touched),
        }
    }

    /// One effect of a step: traced, hashed, told to the checker, and carried out as the
    /// world's processes would (a start or a cancel whose commit answer was lost is not).
    pub(super) fn take_effect(&mut self, e: Effect, seen: &StepSeen, left: &mut StepLeft) {
        let lost = seen.lost;
        if let (Some(heard), false) = (&mut self.heard, lost) {
            heard.push(e.clone());
        }
        self.trace_effect(&e, lost);
        if self.hash_trace {
            self.hash(&e);
        }
        self.coordination_probes(&e, seen.draining);
        // Every effect, whether or not the commit's answer reaches the process: the journal
        // is written and notices are told with the state.
        self.checker.observe(Observation::Effect(&e));
        match e {
            Effect::Journal(r) => self.take_record(r, left),
            Effect::Reply {
                result: Err(refusal),
                ..
            } if seen.backfill => {
                self.probes.add(backfill_refused(&refusal), 1);
            }
            Effect::Reply {
                result: Err(duetime::Refusal::NotAwaitingApproval { .. }),
                ..
            } => {
                self.probes.add(Probe::StaleApprovalRefused, 1);
            }
            Effect::Notice(Notice::ClockGap { kind, process, .. }) => {
                left.held |= self.clock_gap_seen(kind, process, seen);
            }
            Effect::Reply {
                result: Err(duetime::Refusal::WrongDigest { .. }),
                ..
            } => {
                self.probes.add(Probe::StaleConfirmRefused, 1);
            }
            Effect::Do(_) if !lost => self.heard(&e, seen.host),
            _ => {}
        }
    }

    /// A start or a cancel, carried out by the process that heard the commit: a start by
    /// the one whose step it was, a cancel by its process wherever it is up (it polls the
    /// store).
    fn heard(&mut self, e: &Effect, stepped: Option<usize>) {
        let host = match e {
            Effect::Do(duetime::Action::Start(duetime::Start { process, .. })) => {
                stepped.filter(|&h| self.hosts[h].inc.process() == *process)
            }
            Effect::Do(duetime::Action::Cancel { process, .. }) => self
                .hosts
                .iter()
                .position(|h| h.inc.process() == *process && h.state != HostState::Down),
            _ => None,
        };
        if let Some(host) = host {
            let order = self.hosts[host].inc.take(e);
            self.carry_out(host, order);
        }
    }

    /// The trace's line for an effect (marked where the commit's answer was lost).
    pub(super) fn trace_effect(&mut self, e: &Effect, lost: bool) {
        if let Some(trace) = &mut self.trace {
            trace.push(format!(
                "      {e}{}",
                if lost
                    && matches!(
                        e,
                        Effect::Do(duetime::Action::Start(_))
                            | Effect::Do(duetime::Action::Cancel { .. })
                    )
                {
                    " [answer lost]"
                } else {
                    ""
                }
            ));
        }
    }

    /// A journal record of a step (the checker has read it as an effect): a parked run and
    /// a retry's wait are kept for after it.
    pub(super) fn take_record(&mut self, r: duetime::Record, left: &mut StepLeft) {
        match &r.entry {
            Entry::History(duetime::History::Parked { run, until, .. }) => {
                left.parked.push((r.job.clone(), *run, *until, r.at));
            }
            Entry::History(duetime::History::RetryAt { at, .. }) => {
                left.retrying
                    .push((r.job.clone(), at.as_millis() - r.at.as_millis()));
            }
            _ => {}
        }
    }

    /// A clock gap the core told: a release judged (J2), counted by kind; whether it holds
    /// a clock newly (ahead or behind).
    pub(super) fn clock_gap_seen(
        &mut self,
        kind: ClockGapKind,
        process: ProcessId,
        seen: &StepSeen,
    ) -> bool {
        if matches!(kind, ClockGapKind::Released | ClockGapKind::ReleasedBehind) {
            self.judge_release(seen.host, process, kind, seen.before);
        }
        let probe = match kind {
            ClockGapKind::Asleep => Probe::ClockGapAsleep,
            ClockGapKind::ClockForward => Probe::ClockGapSetForward,
            ClockGapKind::ClockBackward => Probe::ClockGapSetBack,
            ClockGapKind::HeldAhead => Probe::ClockHeldAheadOfTheStores,
            ClockGapKind::HeldBehind => Probe::ClockHeldBehindTheStores,
            ClockGapKind::Released => Probe::ClockHeldAheadReleasedAlone,
            ClockGapKind::ReleasedBehind => Probe::ClockHeldBehindReleasedAlone,
        };
        self.probes.add(probe, 1);
        matches!(kind, ClockGapKind::HeldAhead | ClockGapKind::HeldBehind)
    }

    /// After a step's effects: a standby's tick counted, parked runs and retries
    /// scheduled, and the sleepers roused when their wake may have come closer.
    pub(super) fn after_transact(
        &mut self,
        ticked: Option<ProcessId>,
        owner_before: Option<(ProcessId, Fence)>,
        wake_before: Option<Timestamp>,
        left: StepLeft,
    ) {
        let owner_after = self.state.owner_lease().map(|o| (o.holder, o.fence));
        if let (Some(p), Some((holder, _))) = (ticked, owner_after) {
            if holder != p {
                // O1 holds it to starting nothing.
                self.probes.add(Probe::StandbyTickedWhileTheOwnerLived, 1);
            }
        }
        for (job, run, until, wall) in left.parked {
            self.parked(&job, run, until, wall);
        }
        for (job, wait) in left.retrying {
            self.retry_waits(job, wait);
        }
        // Sleepers chose their wake from the store's next wake; only one that came closer
        // can make any of them wake sooner (a run started for a process re-plans that
        // process in `start`). Under `single_owner` a new or released owner lease changes
        // every process's wake.
        let closer = match (self.state.next_wake(), wake_before) {
            (Some(after), Some(before)) => after < before,
            (Some(_), None) => true,
            (None, _) => false,
        };
        // A clock newly held (a new incarnation waiting, or one held behind) brings every
        // other process's wake within a tick of its last event (`State::next_wake_for`: the
        // witnesses), which the store's next wake does not show; a host that polls the
        // store sees it at its next poll. (Only in the worlds of late draws, so the seeds
        // kept by number replay the worlds of their day, where sleepers missed it and a
        // held clock could look alone.)
        let held = left.held && self.cfg.late_draws;
        if closer || held || owner_after != owner_before {
            self.rouse();
        }
    }

    /// Counts the coordination situations an effect shows (`draining`: the step was a
    /// `ProcessDraining`).
    pub(super) fn coordination_probes(&mut self, e: &Effect, draining: bool) {
        let probe = match e {
            Effect::Notice(Notice::Drained { .. }) if draining => Probe::DrainCompletedAtOnce,
            Effect::Notice(Notice::Drained { .. }) => Probe::DrainCompletedAfterItsLastRun,
            Effect::Notice(Notice::Owner {
                process,
                from: Some(from),
                ..
            }) if from != process => {
                self.deposed.push(*from);
                return;
            }
            Effect::Do(duetime::Action::Cancel {
                process,
                reason: CancelReason::LeaseLost,
                ..
            }) if self.deposed.contains(process) => Probe::DeposedOwnerToldToCancelARun,
            Effect::Journal(r) => match &r.entry {
                Entry::History(duetime::History::ManualQueued { .. }) if self.cfg.single_owner => {
                    let drainers: Vec<ProcessId> = self
                        .hosts
                        .iter()
                        .filter(|h| h.state != HostState::Down && h.inc.is_draining())
                        .map(|h| h.inc.process())
                        .collect();
                    if !drainers.is_empty() {
                        self.manual_in_drain.push((r.job.to_string(), drainers));
                    }
                    return;
                }
                Entry::History(duetime::History::Started {
                    trigger: duetime::Trigger::Manual,
                    process,
                    ..
                }) => {
                    let Some(i) = self
                        .manual_in_drain
                        .iter()
                        .position(|(job, _)| job == r.job.as_str())
                    else {
                        return;
                    };
                    let (_, drainers) = self.manual_in_drain.swap_remove(i);
                    if drainers.contains(process) {
                        return;
                    }
                    Probe::ManualRunAskedDuringADrainStartedByTheNextOwner
                }
                _ => return,
            },
            _ => return,
        };
        self.probes.add(probe, 1);
    }

    pub(super) fn hash(&mut self, e: &Effect) {
        let text = serde_json::to_string(e).expect("effects serialize");
        for b in text.bytes() {
            self.trace_hash ^= u64::from(b);
            self.trace_hash = self.trace_hash.wrapping_mul(0x100_0000_01b3);
        }
    }
}
