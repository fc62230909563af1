//! The one door into the checker: `Observation`, each kind of thing the world (or a
//! replay, or a journal read after the fact) sees, and `Checker::observe`, which hands it
//! to the families that judge it in the order they need. The feeding order is a rule of
//! the checker, not of its callers: it is written once, here, and a caller's code reads as
//! the list of what it saw.

use duetime::{Effect, Event, JobName, Notice, Now, Outcome, Record, RunId, State, Timestamp};

use super::{Checker, Invariant, JobFacts, Violation};

/// One thing seen, told to the checker as it happens (`Checker::observe`).
///
/// # Order
///
/// The checker streams: it keeps no journal, and many promises are judged between two
/// observations, so the order is part of what an observation means.
///
/// A world or a replay tells each step the store takes as three phases:
///
/// 1. `Stepping`, before the core steps the event, with the state it is about to step.
///    A result is the ground truth its run's settlement is held to (S3, R1), so it is
///    known before the `settled` line that reads it; R3 reads a job's definitions as they
///    were before a person's command, J1 the store's clock before the step, D2 what a
///    process's start may forget.
/// 2. `Effect`, for each effect of the step, in the order the core gave them, whether or
///    not the commit's answer reaches the process (the journal is written and notices are
///    told with the state): journal lines in journal order, an alert after the lines of
///    its own step (A1 holds a lost run's alert to the `lost` line before it).
/// 3. `Committed`, after the step's last effect, with the state it committed: the step's
///    ends are judged (R1: every current result settled or parked; N1: every failure
///    retried or not; R3: the reply; A3: the pauses told), then the state against the
///    journal (K1, L3, V1, ...).
///
/// Every event is told through all three, each step's before the next one's; an aborted
/// transaction is told nothing (nothing happened).
///
/// A journal checked after the fact (`check::check`: a replay's or a host's store, no
/// events behind it) tells `Sent` for every result known, then `Line` for each record in
/// journal order, and never the three phases: the checks that compare a record with its
/// event judge only when they saw the event. A record is told once, as an `Effect` or as a
/// `Line`, never both.
///
/// The world's own findings (`WorldSaw`, `DefinitionMisread`, `DigestShared`,
/// `StateBroken`) may come at any point: each is a verdict already reached, kept in the
/// order told.
pub enum Observation<'a> {
    /// An event the store is about to step: the state before it, and the clocks' reading
    /// it is stepped at. A `RunFinished` brings the result its process sent.
    Stepping {
        event: &'a Event,
        state: &'a State,
        now: Now,
    },
    /// One effect of the step being told.
    Effect(&'a Effect),
    /// The step committed: the state after it, the wall reading it was stepped at, and
    /// the jobs it touched (`State::take_touched`: every job whose record it changed,
    /// added or removed is among them), when the state is the one the step left and the
    /// one before it was told too (`None`: the checker reads every job where it follows
    /// what changed).
    Committed {
        state: &'a State,
        wall: Timestamp,
        touched: Option<&'a [duetime::JobSeq]>,
    },
    /// A result a process sent, known apart from the step that reads it (a journal checked
    /// after the fact knows every result from the start).
    Sent { run: RunId, outcome: &'a Outcome },
    /// A journal record read after the fact, with no event or effect behind it.
    Line(&'a Record),
    /// A broken promise only the world can see (it knows true time: J2's releases, J4's
    /// agreeing clocks, D1's drain shown), told as one that does not shrink (a replay has
    /// no true time to judge it by).
    WorldSaw {
        invariant: Invariant,
        detail: String,
    },
    /// W2 (`wire_def.rs`): the definition `job` was sent with, written as a person writes
    /// it, reads back as another.
    DefinitionMisread { job: &'a JobName, detail: String },
    /// H2 (`wire_def::digest_shared`): the digest of the definition `job` was sent with is
    /// also the digest of the same definition under another daylight-saving policy.
    DigestShared { job: &'a JobName, detail: String },
    /// S6: the state committed at that point fails its own load check or round trip.
    StateBroken(String),
}

impl Checker {
    /// A checker fed every event and effect of a store of `config` (the world and its
    /// replays): every promise that config asks for is held (O1 and O2 under
    /// `single_owner`, C2 against its cap, J1, K1, L3 and G1, K2, R3 and H2). Made from the
    /// store's config alone, so a world and the replay of its inputs hold the same.
    /// (F1, a property of the world's faults, not of the store, is `hold_live_hosts`.)
    pub fn for_store(
        facts: std::collections::BTreeMap<JobName, JobFacts>,
        config: &duetime::Config,
    ) -> Checker {
        let mut checker = Checker::new(facts);
        if config.coordination == duetime::Coordination::SingleOwner {
            checker.hold_single_owner(config.lease_ttl.as_millis() as i64);
        }
        checker.set_cap(config.max_runs_per_process);
        checker.hold_journal_time(config.clock_jump.as_millis() as i64);
        checker.hold_leases(config);
        checker.hold_timeouts(config);
        checker.hold_replies(config);
        checker
    }

    /// Tells the checker one thing seen, in the order `Observation` states.
    #[inline]
    pub fn observe(&mut self, obs: Observation<'_>) {
        match obs {
            Observation::Stepping { event, state, now } => self.seen_stepping(event, state, now),
            Observation::Effect(effect) => self.seen_effect(effect),
            Observation::Committed {
                state,
                wall,
                touched,
            } => {
                self.step_done();
                self.after_step(state, wall, touched);
            }
            Observation::Sent { run, outcome } => self.reported(run, outcome),
            Observation::Line(rec) => self.record(rec),
            Observation::WorldSaw { invariant, detail } => self.world_saw(invariant, detail),
            Observation::DefinitionMisread { job, detail } => {
                self.violation(Invariant::W2, job, detail)
            }
            Observation::DigestShared { job, detail } => self.violation(Invariant::H2, job, detail),
            Observation::StateBroken(detail) => self.violations.push(Violation::state(detail)),
        }
    }

    /// Phase 1: a result first (what was sent, then whether it was sent under the fence
    /// the run holds), then the event itself, then its log line (W1).
    fn seen_stepping(&mut self, event: &Event, state: &State, now: Now) {
        if let Event::RunFinished {
            run,
            fence,
            outcome,
            ..
        } = event
        {
            self.reported(*run, outcome);
            self.delivered(*run, *fence, outcome);
        }
        self.stepping(event, state, now);
        self.logged_event(event);
    }

    /// Phase 2: every effect's log line (W1) and, for a start, its deadline (K2); then each
    /// kind to the families it concerns: a clock gap to `coordination` too (a clock
    /// released behind moves the store's clock back, and O2, the leases, the parked runs'
    /// windows and J1 measure on it). The rest (a cancel, a handover) only the world acts
    /// on.
    fn seen_effect(&mut self, effect: &Effect) {
        self.logged(effect);
        self.action(effect);
        match effect {
            Effect::Journal(rec) => self.record(rec),
            Effect::Notice(Notice::Alert(alert)) => self.alert(alert),
            Effect::Notice(
                Notice::Owner { .. }
                | Notice::OwnerReleased { .. }
                | Notice::Drained { .. }
                | Notice::ClockGap { .. },
            ) => self.coordination(effect),
            Effect::Reply { job, result } => self.replied(job.as_ref(), result),
            _ => {}
        }
    }
}
