//! K1 and L3, leases as DESIGN.md states them. Each open run's lease is kept by the
//! checker's own rule: a start or an adoption leases the run to the step's time plus the
//! lease TTL, and each tick of its holder that names it (with its fence) renews it to that
//! tick's time plus the TTL, never shorter. The step's time is the journal's (every record
//! of a step is dated with it) or, for a step that wrote nothing, the store's time at the
//! process's event (`ProcessRec::heard_at`).
//!
//! - K1: a run is recorded lost only after its lease lapsed by the store's clock (the
//!   losing step's time is past it), or once the store has not heard from its holder for a
//!   lease TTL and a `clock_jump`; and the lease the store keeps is exactly the one the
//!   holder's start, adoptions and renewals give (a renewal by another process, or one
//!   that shortens or fails to lengthen it, shows).
//! - L3: a lease whose holder fell silent is taken over at the first tick that can: after
//!   a tick of a process that decides (not a new incarnation waiting for its clock; the
//!   owner under `single_owner`) at a time past a run's lease, or once the store's clock
//!   is a lease TTL and a `clock_jump` past its holder's `heard_at`, the run is no longer
//!   open.
//!   (DESIGN.md allows a tick more; the wake index makes it the first.)

use crate::check::Invariant;
use crate::check::Probe;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use duetime::{Event, Fence, JobName, JobSeq, ProcessId, ProcessRec, RunId, State};

use super::{ts, Checker};

/// One open run's lease, by the checker's rule.
#[derive(Clone, Debug)]
struct Lease {
    job: JobName,
    /// The job's sequence number in the store, once looked up by name.
    seq: Option<JobSeq>,
    holder: ProcessId,
    fence: Fence,
    until: i64,
    /// When it started, on the store's time (what `OpenRun::started` shows).
    started: i64,
    /// False after its holder's clock was released ahead (the store moved its runs by a
    /// lead the journal does not tell): taken from the store again at the step's end.
    exact: bool,
    parked: bool,
}

impl Leases {
    /// When the store last heard each process, by the checker's record (D2).
    pub(super) fn heard(&self) -> impl Iterator<Item = (ProcessId, i64)> + '_ {
        self.heard.iter().map(|(p, t)| (*p, *t))
    }

    /// The store's `clock_jump` in ms, when its config is known.
    pub(super) fn clock_jump(&self) -> Option<i64> {
        self.config.map(|c| c.2)
    }

    /// The runs open by the journal and not parked: their run, job and (once looked up)
    /// sequence number in the store.
    pub(super) fn open_unparked(&self) -> impl Iterator<Item = (RunId, &JobName, Option<JobSeq>)> {
        self.runs
            .iter()
            .filter(|(_, l)| !l.parked)
            .map(|(run, l)| (*run, &l.job, l.seq))
    }
}

/// What the checker holds of leases.
#[derive(Default)]
pub(super) struct Leases {
    /// Lease TTL, tick and `clock_jump` in ms (`None`: K1 and L3 are not held, as for a
    /// journal checked without its store's config).
    config: Option<(i64, i64, i64)>,
    runs: BTreeMap<RunId, Lease>,
    /// The store's time at each process's latest event.
    heard: BTreeMap<ProcessId, i64>,
    /// The step's process event: its process, the runs a tick or an adoption renews, and
    /// whether it is a tick (which visits the jobs).
    step: Option<Stepping>,
    /// The step's time, once a record told it.
    at: Option<i64>,
    /// Runs recorded lost in this step: run, holder, lease, when (judged at its end).
    losses: Vec<(RunId, Lease, i64)>,
    /// Processes the store held ahead at an event it knew nothing of them before (J2:
    /// only those may wait for their clock).
    first_held_ahead: std::collections::BTreeSet<ProcessId>,
    /// The store had no record of the stepping process before this step (a new
    /// incarnation, or one it pruned after a long silence).
    new_to_store: bool,
    /// At a step of a process the store did not know (new to it, or pruned after a long
    /// silence), the other processes that waited for their clock before it (J2: it cannot vouch for
    /// the store's clock, so they still wait after it).
    waited_before: Vec<ProcessId>,
    /// The processes whose clock the store may hold: at its last judged event each was
    /// held (its `heard_at` more than a `clock_jump` from its reading). A hold ends only at
    /// the process's own events (or when it falls silent, which this does not follow, so
    /// the set may keep a process the store no longer counts, never miss one it does).
    maybe_held: std::collections::BTreeSet<ProcessId>,
    /// Each process's clock readings at its last judged event, and whether the measure the
    /// store took from the one before could not be true (J2, the held: worked out here from
    /// the readings, by the rule's numbers, not asked of the core).
    readings: BTreeMap<ProcessId, (duetime::Now, bool)>,
}

struct Stepping {
    process: ProcessId,
    renews: Vec<(RunId, Fence)>,
    renewed: bool,
    tick: bool,
    /// A `ProcessStarted`: the one event at which the store forgets silent processes
    /// (`State::prune_processes`).
    starts: bool,
}

impl Leases {
    /// A step begins: what its event renews.
    fn stepping(&mut self, event: &Event) {
        self.at = None;
        self.step = match event {
            Event::Tick { process, held } => Some(Stepping {
                process: *process,
                renews: held.iter().map(|h| (h.run, h.fence)).collect(),
                renewed: false,
                tick: true,
                starts: false,
            }),
            Event::ProcessStarted { process } => Some(Stepping {
                process: *process,
                renews: Vec::new(),
                renewed: false,
                tick: true,
                starts: true,
            }),
            Event::ProcessDraining { process } => Some(Stepping {
                process: *process,
                renews: Vec::new(),
                renewed: false,
                tick: false,
                starts: false,
            }),
            Event::Adopt {
                process,
                run,
                fence,
            } => Some(Stepping {
                process: *process,
                renews: vec![(*run, *fence)],
                renewed: false,
                tick: false,
                starts: false,
            }),
            _ => None,
        };
    }

    /// The step's time is `at`: its renewals happen first (a tick renews before it visits
    /// any job).
    fn renew_at(&mut self, at: i64) {
        self.at.get_or_insert(at);
        let Some((ttl, _, _)) = self.config else {
            return;
        };
        let Some(s) = self.step.as_mut().filter(|s| !s.renewed) else {
            return;
        };
        s.renewed = true;
        for (run, fence) in &s.renews {
            if let Some(l) = self.runs.get_mut(run) {
                if l.holder == s.process && l.fence == *fence && !l.parked {
                    l.until = l.until.max(at.saturating_add(ttl));
                }
            }
        }
    }
}

impl Checker {
    /// Holds K1 and L3 (and G1, which needs the grace and the tick) for a store of this
    /// config.
    pub(super) fn hold_leases(&mut self, config: &duetime::Config) {
        let ms = |d: duetime::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.leases.config = Some((ms(config.lease_ttl), ms(config.tick), ms(config.clock_jump)));
        self.grace_ms = Some(ms(config.grace));
    }

    /// The store's tick in ms, when its config is known.
    pub(super) fn leases_tick(&self) -> Option<i64> {
        self.leases.config.map(|c| c.1)
    }

    pub(super) fn leases_stepping(&mut self, event: &Event, state: &State) {
        self.leases.stepping(event);
        self.leases.new_to_store = self
            .leases
            .step
            .as_ref()
            .is_some_and(|s| state.process(s.process).is_none());
        self.leases.waited_before.clear();
        // (A `ProcessStarted` of a process the store knows is a registration sent again:
        // it vouches like any other event of it.)
        if let Some(s) = self
            .leases
            .step
            .as_ref()
            .filter(|_| self.leases.new_to_store)
        {
            // (A copy of the store's globals: once per new incarnation.)
            let globals = state.globals();
            self.leases.waited_before = globals
                .processes()
                .iter()
                .filter(|(p, r)| **p != s.process && r.waits_for_clock())
                .map(|(p, _)| *p)
                .collect();
        }
    }

    /// A journal record's part in the leases (before its other checks).
    pub(super) fn lease_record(&mut self, rec: &duetime::Record) {
        use duetime::{Entry, History as H};
        let at = rec.at.as_millis();
        self.leases.renew_at(at);
        let Some((ttl, _, _)) = self.leases.config else {
            return;
        };
        let Entry::History(h) = &rec.entry else {
            return;
        };
        let leases = &mut self.leases;
        match h {
            H::Started {
                run,
                fence,
                process,
                ..
            } => {
                let lease = Lease {
                    job: rec.job.clone(),
                    seq: None,
                    holder: *process,
                    fence: *fence,
                    until: at.saturating_add(ttl),
                    started: at,
                    exact: true,
                    parked: false,
                };
                leases.runs.insert(*run, lease);
            }
            H::Adopted { run, process, .. } => {
                if let Some(l) = leases.runs.get_mut(run) {
                    l.holder = *process;
                    l.until = l.until.max(at.saturating_add(ttl));
                }
            }
            H::Parked { run, .. } => {
                if let Some(l) = leases.runs.get_mut(run) {
                    l.parked = true;
                }
            }
            H::Lost { run } => {
                if let Some(l) = leases.runs.remove(run) {
                    leases.losses.push((*run, l, at));
                }
            }
            H::Settled { run, .. } | H::Approved { run, .. } | H::ApprovalExpired { run } => {
                leases.runs.remove(run);
            }
            H::Removed { .. } => leases.runs.retain(|_, l| l.job != rec.job),
            _ => {}
        }
    }

    /// The store's clock went back `by` ms (a release behind): every lease and every
    /// process's last time but the released one's go back with it. A process released
    /// ahead moved its runs by its lead: their leases are read from the store next.
    pub(super) fn leases_moved(
        &mut self,
        kind: duetime::ClockGapKind,
        process: ProcessId,
        by: i64,
    ) {
        let leases = &mut self.leases;
        match kind {
            duetime::ClockGapKind::HeldAhead if leases.new_to_store => {
                leases.first_held_ahead.insert(process);
            }
            duetime::ClockGapKind::ReleasedBehind => {
                for l in leases.runs.values_mut() {
                    l.until = l.until.saturating_sub(by);
                    l.started = l.started.saturating_sub(by);
                }
                for (p, t) in leases.heard.iter_mut() {
                    if *p != process {
                        *t = t.saturating_sub(by);
                    }
                }
            }
            duetime::ClockGapKind::Released => {
                for l in leases.runs.values_mut().filter(|l| l.holder == process) {
                    l.exact = false;
                }
            }
            _ => {}
        }
    }

    /// The step's end (`wall`: the process's reading): its losses judged (K1), its takers
    /// held to L3, and every lease compared with the store's (K1).
    pub(super) fn leases_stepped(&mut self, state: &State, wall: i64) {
        let Some((ttl, _, jump)) = self.leases.config else {
            return;
        };
        // The time the step acted on, when no record told it: the reading itself when
        // within `clock_jump` of the store's time at the event, else that time (a held
        // clock works on the store's time).
        // The stepping process's record, looked up once for every check below (the state
        // does not change within them).
        let rec = self
            .leases
            .step
            .as_ref()
            .and_then(|s| state.process(s.process));
        let heard_now = rec.map(|r| {
            let heard = r.heard_at().as_millis();
            if wall.abs_diff(heard) <= jump.unsigned_abs() {
                wall
            } else {
                heard
            }
        });
        let at = self.leases.at.or(heard_now);
        if let Some(at) = at {
            self.leases.renew_at(at);
        }
        let step = self.leases.step.take();
        self.judge_losses(state, ttl.saturating_add(jump));
        if let Some(s) = &step {
            self.waits_only_when_new(rec, s.process);
            self.witnesses_wake(state, rec, s.process);
            self.waits_end_only_when_vouched(state, s.process);
            self.idle_wakes_for_work(state, rec, s.process, s.starts);
            self.held_wakes_within_a_tick(state, rec, s);
        }
        if let (Some(s), Some(at)) = (&step, at) {
            self.leases.heard.insert(s.process, heard_now.unwrap_or(at));
            if self.decides(rec, s) {
                self.take_over(state, s, heard_now.unwrap_or(at));
                self.timed_out_by(s.process, heard_now.unwrap_or(at));
            }
        }
        self.leases_held_to_the_store(state);
        self.stalls_watched(state);
        self.one_shot_ends_shown(state);
    }

    /// K1: each run lost in this step was lost after its lease lapsed, or its holder had
    /// been silent for `silence` by the store's clock.
    fn judge_losses(&mut self, state: &State, silence: i64) {
        let clock = state.clock().map(|c| c.as_millis());
        for (run, l, at) in std::mem::take(&mut self.leases.losses) {
            let heard = self.leases.heard.get(&l.holder).copied();
            let silent = clock
                .zip(heard)
                .is_some_and(|(c, h)| c > h.saturating_add(silence));
            if at > l.until || silent || !l.exact {
                self.probe(Probe::LostAfterItsLeaseLapsed);
                continue;
            }
            let detail = format!(
                "{run} recorded lost at {} though its lease from {} ran to {} (its holder last heard at {:?})",
                ts(at),
                l.holder,
                ts(l.until),
                heard.map(ts)
            );
            self.violation(Invariant::K1, &l.job, detail);
        }
    }

    /// J2: a process waits for its clock (decides nothing) only after the store, knowing
    /// nothing of it (a new incarnation, or one pruned after a long silence), held its
    /// event ahead: a process the store knows, or one held behind, works on the store's
    /// time.
    fn waits_only_when_new(&mut self, rec: Option<&ProcessRec>, process: ProcessId) {
        let waits = rec.is_some_and(|p| p.waits_for_clock());
        if waits && !self.leases.first_held_ahead.contains(&process) {
            let detail = format!(
                "{process} waits for its clock, though no event of it the store knew nothing of was held ahead"
            );
            self.violation_of(Invariant::J2, "(clocks)".to_string(), detail);
        }
    }

    /// J2, the end of a wait: a process waiting for its clock goes on waiting through an
    /// event of a process the store did not know (a new incarnation's word says nothing of
    /// whether the store's clock is alive); only one it knew, or its own release, ends it.
    fn waits_end_only_when_vouched(&mut self, state: &State, process: ProcessId) {
        let waited = std::mem::take(&mut self.leases.waited_before);
        let ended: Vec<String> = waited
            .iter()
            .filter(|p| state.process(**p).is_some_and(|r| !r.waits_for_clock()))
            .map(ProcessId::to_string)
            .collect();
        if ended.is_empty() {
            if !waited.is_empty() {
                self.probe(Probe::WaitKeptThroughANewIncarnationsEvent);
            }
            return;
        }
        let detail = format!(
            "{} stopped waiting for its clock at an event of {process}, which the store did not know",
            ended.join(", ")
        );
        self.violation_of(Invariant::J2, "(clocks)".to_string(), detail);
    }

    /// J2, and only then: under shared coordination, while no process's clock may be held
    /// (`maybe_held`), the stepping process is told to wake when the store next has work
    /// (`next_wake`), not once a tick: an idle scheduler costs nothing.
    fn idle_wakes_for_work(
        &mut self,
        state: &State,
        rec: Option<&ProcessRec>,
        process: ProcessId,
        starts: bool,
    ) {
        let Some((_, _, jump)) = self.leases.config else {
            return;
        };
        // Just judged, its `heard_at` tells whether the store believes its clock.
        let believed = rec.is_some_and(|r| {
            let off = r.heard_at().as_millis().abs_diff(r.last_wall().as_millis());
            !r.waits_for_clock() && off <= jump.unsigned_abs()
        });
        let held = &mut self.leases.maybe_held;
        if believed {
            held.remove(&process);
        } else {
            held.insert(process);
        }
        // The set keeps only processes the store knows. The store forgets processes at one
        // event only, a process's start (`State::prune_processes`, called from `step` for
        // `ProcessStarted` alone), and that event is a step of this kind (`Stepping`), so
        // after any other step every member but the stepping process is known still, as it
        // was at the last start, and only the stepping process needs looking up: the set
        // is what looking up every member would leave. (Looking up every member at every
        // step was 7.7% of a world's instructions; benches/README.md, issue 46.) Debug
        // builds, which `cargo test` runs seeds in, look them all up anyway, so a core
        // that forgot processes at another event would fail there.
        if starts {
            held.retain(|p| state.process(*p).is_some());
        } else {
            debug_assert!(
                held.iter()
                    .all(|p| *p == process || state.process(*p).is_some()),
                "J2's maybe_held: a process left the store at a step that started none"
            );
            if rec.is_none() {
                held.remove(&process);
            }
        }
        if self.single_owner || !held.is_empty() || rec.is_none_or(|r| r.draining()) {
            return;
        }
        let (wake, work) = (state.next_wake_for(process), state.next_wake());
        if wake == work {
            self.probe(Probe::IdleProcessToldToWakeForWorkAlone);
            return;
        }
        let detail = format!(
            "{process} is told to wake at {wake:?} though no process waits or is held: the store's next work is at {work:?}"
        );
        self.violation_of(Invariant::J2, "(clocks)".to_string(), detail);
    }

    /// J2, the held: a process whose clock the store holds (its `heard_at` further than
    /// `clock_jump` from its wall clock), neither waiting nor draining, whose measure since
    /// its previous event could not be true (its monotonic or boot clock moved further than
    /// its wall clock by more than a lease plus `clock_jump`: a reading in a wrong unit), is
    /// told to wake within a tick and a `clock_jump` of its last event: asleep to its next due time by the
    /// store's clock, such a host moved the store's clock by the bound only, its lead grew
    /// at every event and it stayed held for hours (light seeds 10313, 12205: J4). A
    /// result notes none of its clocks: the verdict of its last judged event stands.
    fn held_wakes_within_a_tick(&mut self, state: &State, rec: Option<&ProcessRec>, s: &Stepping) {
        let (Some(r), Some((ttl, _, jump))) = (rec, self.leases.config) else {
            return;
        };
        let now = r.last_reading();
        let fresh = s.starts || self.leases.new_to_store;
        // (One search of the map for the reading before and the one kept in its place.)
        let bounded = match self.leases.readings.entry(s.process) {
            Entry::Occupied(mut e) => {
                let (before, bounded) = e.get();
                let bounded = match fresh {
                    false if *before == now => *bounded,
                    false => beyond_the_wall(before, &now, ttl + jump),
                    true => false,
                };
                e.insert((now, bounded));
                bounded
            }
            Entry::Vacant(e) => e.insert((now, false)).1,
        };
        let off = r.heard_at().as_millis().abs_diff(r.last_wall().as_millis());
        if !bounded || off <= jump.unsigned_abs() || r.waits_for_clock() || r.draining() {
            return;
        }
        let config = state.config();
        let by = r
            .last_wall()
            .saturating_add(config.tick.min(config.clock_jump));
        let wake = state.next_wake_for(s.process);
        if wake.is_some_and(|w| w <= by) {
            self.probe(Probe::HeldProcessToldToWakeWithinATick);
            return;
        }
        let detail = format!(
            "{} is held ({off} ms off the store's clock) on a measure that could not be true, but told to wake at {wake:?}, not within a tick (nor a clock_jump) of its last event ({})",
            s.process,
            r.last_wall()
        );
        self.violation_of(Invariant::J2, "(clocks)".to_string(), detail);
    }

    /// J2, the witnesses: while `process` waits for its clock (just heard, so its hold is
    /// present), every other process that neither waits nor drains is told to wake within
    /// a tick of its last event (`State::next_wake_for`), whatever work it has: a host
    /// sleeping until its work would leave the waiting one hearing nobody, released as if
    /// alone while a sane clock that could contradict it was up.
    fn witnesses_wake(&mut self, state: &State, rec: Option<&ProcessRec>, process: ProcessId) {
        if !rec.is_some_and(|p| p.waits_for_clock()) {
            return;
        }
        let tick = state.config().tick;
        // (A copy of the store's globals: this runs only while a process waits.)
        let globals = state.globals();
        let late: Vec<String> = globals
            .processes()
            .iter()
            .filter(|(q, r)| **q != process && !r.waits_for_clock() && !r.draining())
            .filter_map(|(q, r)| {
                let by = r.last_wall().saturating_add(tick);
                let wake = state.next_wake_for(*q);
                wake.is_none_or(|w| w > by)
                    .then(|| format!("{q} at {wake:?} (heard at {})", r.last_wall()))
            })
            .collect();
        if late.is_empty() {
            self.probe(Probe::WitnessesToldToWakeWithinATick);
            return;
        }
        let detail = format!(
            "{process} waits for its clock, but not every other process is told to wake within a tick of its last event: {}",
            late.join(", ")
        );
        self.violation_of(Invariant::J2, "(clocks)".to_string(), detail);
    }

    /// Whether the step was a tick of a process that decides: one not waiting for its
    /// clock, and the owner under `single_owner`.
    fn decides(&self, rec: Option<&ProcessRec>, s: &Stepping) -> bool {
        s.tick
            && !rec.is_some_and(|p| p.waits_for_clock())
            && (!self.single_owner || self.owner == Some(s.process))
    }

    /// L3: after a tick at `at` of a process that decides, no open run's lease lapsed
    /// before `at`.
    fn take_over(&mut self, state: &State, s: &Stepping, at: i64) {
        // A holder the store has not heard from for a lease TTL and a `clock_jump` by its
        // own clock has lost what it holds, whatever its leases say (`heard_at`'s promise):
        // a lease written ahead of the store's clock must not keep a dead holder's run.
        let silence = self
            .leases
            .config
            .map_or(i64::MAX, |(ttl, _, jump)| ttl + jump);
        let clock = state.clock().map_or(i64::MIN, |c| c.as_millis());
        let silent = |holder: ProcessId| {
            state
                .process(holder)
                .is_some_and(|p| clock > p.heard_at().as_millis().saturating_add(silence))
        };
        let lapsed: Vec<(RunId, Lease)> = self
            .leases
            .runs
            .iter()
            .filter(|(_, l)| !l.parked && l.exact && (l.until < at || silent(l.holder)))
            .map(|(r, l)| (*r, l.clone()))
            .collect();
        for (run, l) in lapsed {
            let detail = format!(
                "{run}'s lease from {} lapsed at {} (its holder last heard at {:?}), yet it is still open after a tick of {} at {}",
                l.holder,
                ts(l.until),
                state.process(l.holder).map(|p| p.heard_at()),
                s.process,
                ts(at)
            );
            // A forbidden act at that tick, shrunk like safety (not an end-of-run liveness
            // verdict).
            self.forbidden(Invariant::L3, &l.job, detail);
            self.leases.runs.remove(&run);
        }
    }

    /// K1: the lease the store keeps for each open run is the checker's (a lease its
    /// holder's clock release moved is taken from the store); V1: so is its start, which
    /// views show, and whether it is parked awaiting approval and until when.
    fn leases_held_to_the_store(&mut self, state: &State) {
        let mut wrong = Vec::new();
        let mut started_wrong = Vec::new();
        let mut parked_wrong = Vec::new();
        let mut parked_shown = 0;
        for (run, l) in self.leases.runs.iter_mut() {
            if l.seq.is_none() {
                l.seq = state.seq_of_name(l.job.as_str());
            }
            let open = l
                .seq
                .and_then(|seq| state.record(seq))
                .and_then(|r| r.run())
                .filter(|r| r.id() == *run);
            let Some(open) = open else {
                // The journal has it open: the store must too (V1's part: a host shows it).
                wrong.push((*run, l.clone(), None));
                continue;
            };
            let journal_parked = self.parked.get(run).map(|p| p.until);
            let shown_parked = open.parked().map(|t| t.as_millis());
            if shown_parked != journal_parked {
                parked_wrong.push((*run, l.job.clone(), shown_parked, journal_parked));
            } else if journal_parked.is_some() {
                parked_shown += 1;
            }
            if l.parked {
                continue;
            }
            let kept = open.lease_until().as_millis();
            if !l.exact {
                l.until = kept;
                l.started = open.started().as_millis();
                l.exact = true;
            } else if kept != l.until {
                wrong.push((*run, l.clone(), Some(kept)));
            } else if open.started().as_millis() != l.started {
                started_wrong.push((*run, l.job.clone(), open.started(), l.started));
            }
        }
        if parked_shown > 0 {
            self.probe(Probe::ParkedRunShownAsTheJournalSays);
        }
        for (run, job, shown, journal) in parked_wrong {
            let tell = |t: Option<i64>| {
                t.map_or("not parked".to_string(), |t| {
                    format!("parked until {}", ts(t))
                })
            };
            let detail = format!(
                "the store shows {run} {}; by the journal it is {}",
                tell(shown),
                tell(journal)
            );
            self.violation(Invariant::V1, &job, detail);
        }
        for (run, job, shown, started) in started_wrong {
            let detail = format!(
                "the store shows {run} started at {shown}; the journal started it at {}",
                ts(started)
            );
            self.violation(Invariant::V1, &job, detail);
        }
        for (run, l, kept) in wrong {
            let Some(kept) = kept else {
                let detail =
                    format!("the journal has {run} open; the store shows no such run of the job");
                self.violation(Invariant::V1, &l.job, detail);
                self.leases.runs.remove(&run);
                continue;
            };
            let detail = format!(
                "the store keeps {run}'s lease to {}, but its holder {}'s start, adoptions and renewals give {}",
                ts(kept),
                l.holder,
                ts(l.until)
            );
            self.violation(Invariant::K1, &l.job, detail);
            if let Some(l) = self.leases.runs.get_mut(&run) {
                l.until = kept;
            }
        }
    }
}

/// Whether a process's monotonic (or boot) clock moved from `before` to `now` further than
/// its wall clock by more than `bound` ms: a measure the store cannot believe.
fn beyond_the_wall(before: &duetime::Now, now: &duetime::Now, bound: i64) -> bool {
    let since = |a: duetime::Timestamp, b: duetime::Timestamp| {
        i128::from(a.as_millis())
            .saturating_sub(i128::from(b.as_millis()))
            .max(0)
    };
    let mono = since(now.mono, before.mono);
    let boot = match (now.boot, before.boot) {
        (Some(b), Some(last)) => since(b, last),
        _ => 0,
    };
    mono.max(boot) > since(now.wall, before.wall) + i128::from(bound)
}
