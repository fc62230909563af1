//! V1, the views held to the journal: every `VIEW_EVERY` steps the checker asks the core
//! for each job's `job()` view and compares it with what the journal alone says the view
//! must be. The one place the checker reads the core's state, and only through its public
//! views.
//!
//! Held exactly: the job exists, paused, held for confirmation, running (the run), awaiting
//! approval, its quota hold, its last run (run, time, outcome), and its status as
//! `status_of` ranks it (given the view's own `missed_24h`). Held as bounds, because the
//! journal does not carry all of what they count: `missed_24h` is at least the due times
//! recorded skipped within the day (owed due times are counted when found late, which no
//! record says), and `next_due` is one of the oracle's due times of the job's current
//! schedule, later than every due time the journal has accounted (the frontier, which is
//! never written down, is at least that), and absent exactly while the job is paused.

use crate::check::Invariant;
use crate::check::Probe;
use std::collections::VecDeque;

use duetime::{
    Entry, History, JobView, LastOutcome, LedgerKind, MissAction, MissCause, Outcome, PausedBy,
    Record, RunId, Status,
};

use super::{ts, Checker, Track, VIEW_EVERY};
use crate::oracle::Spec;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// What a job's view must say, kept from its journal lines as they are read.
pub(super) struct Seen {
    /// The job's last run as the core keeps it: the run, when it ended, how.
    last: Option<(RunId, i64, LastOutcome)>,
    /// The latest pause line was the system's (a resume ends it).
    system_paused: bool,
    /// The latest start: its run and time (a stall counts from it), on the store's time
    /// base (`None`: moved by a release ahead, which does not say by how much).
    started: Option<(RunId, Option<i64>)>,
    /// Due times recorded skipped, but for a removal's (which the job's view never shows):
    /// `(at, count)` in journal order, only those that can still count.
    skipped: VecDeque<(i64, u64)>,
    /// The latest of those, and whether each came in an hour no earlier than the one
    /// before it (else the core's hourly buckets are out of order, its bound on them may
    /// drop some, and no floor is held).
    latest_skip: Option<i64>,
    skips_in_order: bool,
    /// The latest due time any ledger entry or start of the job covered.
    accounted: Option<i64>,
    /// The last next due time the oracle found to be a due time of a schedule, and that
    /// schedule (by address: the checker's facts, which hold it, never change while it
    /// runs). Asked again at the next view while the job waits for that due time, the
    /// oracle's answer is the same; a walk of its minute each time was 1% of a world.
    due_confirmed: Option<(*const Spec, i64)>,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            last: None,
            system_paused: false,
            started: None,
            skipped: VecDeque::new(),
            latest_skip: None,
            skips_in_order: true,
            accounted: None,
            due_confirmed: None,
        }
    }
}

fn hour_of(at: i64) -> i64 {
    at.div_euclid(HOUR) * HOUR
}

/// The last run's outcome a settlement leaves, as the core maps it.
fn last_of(outcome: &Outcome) -> LastOutcome {
    match outcome {
        Outcome::Ok | Outcome::AwaitingApproval { .. } => LastOutcome::Ok,
        Outcome::Skipped => LastOutcome::Skipped,
        Outcome::Failed { .. } => LastOutcome::Failed,
        Outcome::TimedOut => LastOutcome::TimedOut,
    }
}

impl Seen {
    /// One journal line of the job.
    pub(super) fn record(&mut self, rec: &Record) {
        let at = rec.at.as_millis();
        match &rec.entry {
            Entry::History(h) => self.history(at, h),
            Entry::Ledger(e) => {
                self.account(e.to.as_millis());
                match e.kind {
                    LedgerKind::FailedOut { run } => {
                        self.last = Some((run, at, LastOutcome::FailedOut));
                    }
                    LedgerKind::Missed {
                        cause,
                        action: MissAction::Skipped,
                    } if cause != MissCause::Removed => self.skip(at, e.count),
                    _ => {}
                }
            }
        }
    }

    fn history(&mut self, at: i64, h: &History) {
        match h {
            History::Settled { run, outcome, .. } => self.last = Some((*run, at, last_of(outcome))),
            History::Approved { run, .. } => self.last = Some((*run, at, LastOutcome::Ok)),
            History::Lost { run } => self.last = Some((*run, at, LastOutcome::Lost)),
            History::ApprovalExpired { run } => {
                self.last = Some((*run, at, LastOutcome::ApprovalExpired));
            }
            History::Paused { by, .. } => {
                self.system_paused = matches!(by, PausedBy::System { .. });
            }
            History::Resumed { .. } => self.system_paused = false,
            History::Started { run, covers, .. } => {
                self.started = Some((*run, Some(at)));
                if let Some(c) = covers {
                    self.account(c.to.as_millis());
                }
            }
            _ => {}
        }
    }

    fn account(&mut self, due: i64) {
        self.accounted = Some(self.accounted.map_or(due, |a| a.max(due)));
    }

    fn skip(&mut self, at: i64, count: u64) {
        if self.latest_skip.is_some_and(|l| hour_of(at) < hour_of(l)) {
            self.skips_in_order = false;
        }
        let latest = self.latest_skip.map_or(at, |l| l.max(at));
        self.latest_skip = Some(latest);
        self.skipped.push_back((at, count));
        // Never counted again: older than a day before the latest.
        while self
            .skipped
            .front()
            .is_some_and(|(t, _)| hour_of(*t) < latest - DAY)
        {
            self.skipped.pop_front();
        }
    }

    /// The least `missed_24h` the view may show at `now`. Each skip was counted into the
    /// bucket of its hour; a bucket is dropped only once it is a day older than a later
    /// count (or by the bound of 25, which in-order buckets reach only past a day), so
    /// every bucket no more than a day older than both `now` and the latest count is
    /// still there and shown.
    fn missed_floor(&self, now: i64) -> Option<u64> {
        if !self.skips_in_order {
            return None;
        }
        let since = now.max(self.latest_skip?) - DAY;
        let recent = self.skipped.iter().filter(|(t, _)| hour_of(*t) >= since);
        Some(recent.map(|(_, n)| n).sum())
    }

    /// The most `missed_24h` the view may show at `now`: the core counts each skip into
    /// the bucket of its hour and shows the buckets of hours since a day before `now`;
    /// it only ever drops buckets the checker's own list has dropped (older than a day
    /// before a later count), or more by its bound of 25.
    fn missed_ceiling(&self, now: i64) -> Option<u64> {
        if !self.skips_in_order {
            return None;
        }
        let recent = self
            .skipped
            .iter()
            .filter(|(t, _)| hour_of(*t) >= now - DAY);
        Some(recent.map(|(_, n)| n).sum())
    }

    /// The status `status_of` must give, from the journal and the view's `missed_24h`.
    /// `open` is the job's open run by the journal and whether it is parked; `stall_after`
    /// is the job's (`None`: a regression saved before it was a fact, and no status held).
    fn status(
        &self,
        t: &Track,
        open: Option<(RunId, bool)>,
        missed_24h: u64,
        now: i64,
        stall_after: Option<i64>,
    ) -> Option<Status> {
        let stall_after = stall_after?;
        let failed = self.last.is_some_and(|(_, _, o)| {
            matches!(
                o,
                LastOutcome::Failed
                    | LastOutcome::FailedOut
                    | LastOutcome::Lost
                    | LastOutcome::TimedOut
                    | LastOutcome::ApprovalExpired
            )
        });
        if failed || (t.paused && self.system_paused) {
            return Some(Status::Failed);
        }
        if let Some((run, false)) = open {
            let (started_run, started) = self.started?;
            // (A run of another process moved by a release is as old as that process
            // measured it, which the journal does not say: either is right then.)
            if started_run == run && started.is_none_or(|s| (now - s).max(0) >= stall_after) {
                return Some(Status::Stalled);
            }
        }
        Some(self.settled_status(t, open.is_some(), missed_24h))
    }

    /// The status below a stall, which the journal says exactly.
    fn settled_status(&self, t: &Track, open: bool, missed_24h: u64) -> Status {
        if missed_24h > 0 {
            Status::Missed
        } else if t.paused {
            Status::Paused
        } else if open {
            Status::Running
        } else if self.last.is_some() {
            Status::Ok
        } else {
            Status::NoRun
        }
    }

    /// The store's clock went back `by` ms (a release behind): every open run's instants
    /// went back with it.
    pub(super) fn clock_back(&mut self, by: i64) {
        if let Some((_, Some(at))) = &mut self.started {
            *at = at.saturating_sub(by);
        }
    }

    /// The job's open run's holder was released ahead: its instants moved by a lead the
    /// journal does not tell.
    pub(super) fn age_unknown(&mut self) {
        if let Some((_, at)) = &mut self.started {
            *at = None;
        }
    }

    /// What is wrong with the view's `next_due`: absent exactly while paused (a schedule
    /// of `every` never ends), else one of `spec`'s due times past every accounted one.
    fn next_due_wrong(&mut self, v: &JobView, paused: bool, spec: Option<&Spec>) -> Option<String> {
        let Some(d) = v.next_due.map(|d| d.as_millis()) else {
            let endless = matches!(spec, Some(Spec::Every { .. }));
            return (endless && !paused)
                .then(|| "no next due time by the view, though it is not paused".to_string());
        };
        if paused {
            return Some(format!(
                "next due {} by the view, though it is paused",
                ts(d)
            ));
        }
        if let Some(a) = self.accounted.filter(|&a| d <= a) {
            return Some(format!(
                "next due {} by the view, though the journal accounted {} already",
                ts(d),
                ts(a)
            ));
        }
        let spec = spec?;
        let asked = (std::ptr::from_ref(spec), d);
        if self.due_confirmed == Some(asked) {
            return None;
        }
        let due = spec.due_in(d - 1, d);
        if due.len() == 1 && due[0].at == d {
            self.due_confirmed = Some(asked);
            return None;
        }
        Some(format!(
            "next due {} by the view is not a due time of its schedule",
            ts(d)
        ))
    }
}

impl Checker {
    /// After each committed step (`Observation::Committed`, after `step_done`): the
    /// leases held to the checker's rule (K1, L3), then the views (V1, N1, M1). `touched`:
    /// the jobs the step touched, when known (see `Observation::Committed`).
    pub(super) fn after_step(
        &mut self,
        state: &duetime::State,
        now: duetime::Timestamp,
        touched: Option<&[duetime::JobSeq]>,
    ) {
        self.waiters_followed(state, touched);
        self.leases_stepped(state, now.as_millis());
        self.forgotten_as_due(state);
        self.caught_up_newest(state);
        self.given_up_at_pause_judged();
        self.kept_definition(state);
        self.counts_shown(state);
        self.admitted_in_order(state);
        self.waiters_let_in(state);
        self.owner_shown(state);
        self.views(state, now);
    }

    /// V1 for the owner a dashboard shows under `single_owner` (`State::owner`): the
    /// lease's holder while it has not lapsed by the store's clock, nobody once it has;
    /// and the lease held is the one the journal's notices last gave (O1's `owner`).
    fn owner_shown(&mut self, state: &duetime::State) {
        let (Some(store), true) = (state.clock(), self.single_owner) else {
            return;
        };
        let lease = state.owner_lease();
        let shown = state.owner(store).map(|o| o.holder);
        let live = lease.filter(|o| store <= o.until).map(|o| o.holder);
        let detail = if shown != live {
            format!(
                "the view shows {shown:?} as the owner at {store}, where the lease held ({lease:?}) says {live:?}"
            )
        } else if lease.is_some_and(|o| Some(o.holder) != self.owner) {
            format!(
                "the store holds an owner lease ({lease:?}) the notices gave {:?}",
                self.owner
            )
        } else {
            self.probe(Probe::OwnerShownAsTheLeaseHoldsIt);
            return;
        };
        self.violation_of(Invariant::V1, "(owner lease)".to_string(), detail);
    }

    /// V1 for the counts a dashboard reads: the runs open on each process and under each
    /// concurrency key (`State::open_runs_of`, `open_runs_of_key`) are C1's and C2's.
    ///
    /// Every process the journal ever counted a run on is held to the store's count, at
    /// every step, but only those whose count could differ are looked up: the ones the
    /// journal counts runs on now (`holding`) and the ones the store does
    /// (`State::processes_holding_runs`, outside which `open_runs_of` answers 0). Any
    /// other process the journal counted is at 0 by both, which agree. The same
    /// differences, in the same (process) order, as looking up every counted process,
    /// which was two thirds of this check's cost: the journal keeps every incarnation
    /// that ever held a run, about a dozen at a step (benches/README.md, issue 46).
    fn counts_shown(&mut self, state: &duetime::State) {
        let lanes = &self.lanes;
        let mut asked: Vec<duetime::ProcessId> = lanes.holding.iter().copied().collect();
        asked.extend(
            state
                .processes_holding_runs()
                .filter(|p| lanes.per_process.contains_key(p)),
        );
        asked.sort_unstable();
        asked.dedup();
        let mut wrong = Vec::new();
        for p in asked {
            let (shown, n) = (state.open_runs_of(p), lanes.per_process[&p]);
            if shown != n {
                wrong.push(format!(
                    "{shown} runs open on {p} by the store, {n} by the journal"
                ));
            }
        }
        debug_assert!(
            lanes
                .per_process
                .iter()
                .filter(|(p, n)| state.open_runs_of(**p) != **n)
                .count()
                == wrong.len(),
            "V1's counts: a process left unasked differs"
        );
        for (k, n) in &self.lanes.per_key {
            let shown = state.open_runs_of_key(k);
            if shown != *n {
                wrong.push(format!(
                    "{shown} runs open under key {k} by the store, {n} by the journal"
                ));
            }
        }
        for detail in wrong {
            self.violation_of(Invariant::V1, "(runs open)".to_string(), detail);
        }
    }

    /// V1, after a step: see the module's doc. Looked at every `VIEW_EVERY` steps (the
    /// same steps in a world and in its replays).
    fn views(&mut self, state: &duetime::State, now: duetime::Timestamp) {
        self.view_steps += 1;
        if !self.view_steps.is_multiple_of(VIEW_EVERY) {
            return;
        }
        self.probe(Probe::ViewsComparedWithTheJournal);
        let current = self.current.clone();
        for idx in current {
            let t = &self.tracks[idx];
            let Some(v) = state.job(t.name.as_str(), now) else {
                if t.removed_at.is_none() {
                    let detail = "the journal has it defined; job() knows no such job".into();
                    self.violation(Invariant::V1, &t.name.clone(), detail);
                }
                continue;
            };
            let removed = t.removed_at.is_some();
            if !removed && !t.paused && v.paused.is_none() {
                let reach = self.journal_time.jump.zip(state.clock());
                let reach = reach.map(|(jump, clock)| clock.as_millis().saturating_add(jump));
                self.line_view(idx, &v, reach);
            }
            // The job's record, found by its name once for the three checks that read it
            // (the view's name is the same text, unless `job()` misnamed it).
            let rec = state
                .seq_of_name(self.tracks[idx].name.as_str())
                .and_then(|seq| state.record(seq));
            let rec_of_view = if v.name.as_str() == self.tracks[idx].name.as_str() {
                rec
            } else {
                state
                    .seq_of_name(v.name.as_str())
                    .and_then(|seq| state.record(seq))
            };
            let mut wrong = self.view_wrong(idx, &v, now.as_millis());
            wrong.extend(rec.and_then(|rec| self.watch_wrong(idx, rec)));
            wrong.extend(rec_of_view.and_then(|rec| record_next_due_wrong(rec, &v)));
            wrong.extend(rec.and_then(|rec| self.accounted_wrong(idx, rec)));
            if removed {
                wrong.insert(0, "job() shows a job the journal removed".to_string());
            }
            if !wrong.is_empty() {
                let name = self.tracks[idx].name.clone();
                self.violation(Invariant::V1, &name, wrong.join("; "));
            }
        }
        // The listing builds every job's view for each page: one turn in eight.
        if self.view_steps.is_multiple_of(8 * VIEW_EVERY) {
            if let Some(detail) = listing_wrong(state, now) {
                self.violation_of(Invariant::V1, "(listing)".to_string(), detail);
            }
        }
    }

    /// What the view `v` of track `idx` says against the journal, one line a difference.
    fn view_wrong(&mut self, idx: usize, v: &JobView, now: i64) -> Vec<String> {
        let open = self.open_run_of(idx);
        let mut wrong = self.view_flags_wrong(idx, v, open, now);
        let t = &self.tracks[idx];
        let seen = &t.seen;
        let last = v.last.map(|l| (l.run, l.at.as_millis(), l.outcome));
        if last != seen.last {
            wrong.push(format!(
                "last run {last:?} by the view, {:?} by the journal",
                seen.last
            ));
        }
        let facts = self.facts.get(&t.name);
        let stall_after = facts.and_then(|f| f.stall_after);
        let parked = open.map(|run| (run, self.parked.contains_key(&run)));
        if let Some(s) = seen.status(t, parked, v.missed_24h, now, stall_after) {
            let unknown_age = seen.started.is_some_and(|s| s.1.is_none());
            let either = unknown_age && v.status == seen.settled_status(t, true, v.missed_24h);
            if s != v.status && !either {
                let run = parked.map_or("no run open".to_string(), |(r, p)| {
                    let since = seen.started.filter(|s| s.0 == r).and_then(|s| s.1.map(ts));
                    format!("{r} open (parked {p}) since {since:?}")
                });
                wrong.push(format!(
                    "status {:?} by the view, {s:?} by the journal ({run}, at {})",
                    v.status,
                    ts(now)
                ));
            }
        }
        let floor = seen.missed_floor(now);
        if let Some(floor) = floor.filter(|&f| v.missed_24h < f) {
            wrong.push(format!(
                "missed {} in the last day by the view, but the journal skipped {floor} then",
                v.missed_24h
            ));
        }
        let ceiling = seen.missed_ceiling(now);
        if let Some(ceiling) = ceiling.filter(|&c| v.missed_24h > c) {
            wrong.push(format!(
                "missed {} in the last day by the view, but the journal skipped only {ceiling} then",
                v.missed_24h
            ));
        }
        let spec = t
            .epochs
            .last()
            .and_then(|e| facts.and_then(|f| f.specs.get(&e.text)));
        let paused = t.paused;
        let floored = floor.is_some_and(|f| f > 0);
        wrong.extend(self.tracks[idx].seen.next_due_wrong(v, paused, spec));
        if !wrong.is_empty() {
            return wrong;
        }
        self.probe(Probe::ViewsStatusAndLastRunHeldToTheJournal);
        if floored {
            self.probe(Probe::ViewsMissedCountHeldToTheJournalsSkips);
        }
        wrong
    }

    /// V1 for the dead-man's switch a host shows ("no success since"): the store's
    /// `watched_since` is E1's count from the journal (the latest success, or the
    /// definition) for a job with the switch, and unset for one without.
    fn watch_wrong(&self, idx: usize, rec: &duetime::JobRecord) -> Option<String> {
        let t = &self.tracks[idx];
        let shown = rec.watched_since().map(|w| w.as_millis());
        let counted = t.silence.and_then(|s| s.since());
        if self.switch_in_force(idx) != Some(t.silence.is_some()) && !rec.is_unconfirmed() {
            // A person's definition at a bound set or dropped the switch the world's
            // jobs keep (set back at once): E1 does not count it, the store watches
            // exactly while it is set.
            let set = self.switch_in_force(idx).unwrap_or(t.silence.is_some());
            return (shown.is_some() != set).then(|| {
                format!("watched for a success since {shown:?} by the store, though the switch in force is set: {set}")
            });
        }
        (shown != counted).then(|| {
            format!(
                "watched for a success since {:?} by the store, {:?} by the journal",
                shown.map(ts),
                counted.map(ts)
            )
        })
    }

    /// The journal's open run of track `idx` (a parked run holds no process, but stays
    /// the job's open run).
    pub(super) fn open_run_of(&self, idx: usize) -> Option<RunId> {
        self.holders
            .iter()
            .find(|h| h.2 == idx)
            .map(|h| h.0)
            .or_else(|| {
                let mut parked = self.parked.iter().filter(|(_, p)| p.track == idx);
                parked.next().map(|(run, _)| *run)
            })
    }

    /// The view's flags against the journal: paused, held for confirmation, running (`open`:
    /// the journal's open run), awaiting approval, quota hold (shown while it lasts past
    /// `now`, the time the view is asked at: its end is journaled at the next visit).
    fn view_flags_wrong(
        &self,
        idx: usize,
        v: &JobView,
        open: Option<RunId>,
        now: i64,
    ) -> Vec<String> {
        let t = &self.tracks[idx];
        let mut wrong = Vec::new();
        if v.paused.is_some() != t.paused {
            wrong.push(format!(
                "paused {} by the view, {} by the journal",
                v.paused.is_some(),
                t.paused
            ));
        }
        if v.pending_confirmation.as_ref().map(|d| d.as_str()) != t.held.as_deref() {
            wrong.push(format!(
                "holds {:?} for confirmation by the view, {:?} by the journal",
                v.pending_confirmation, t.held
            ));
        }
        if v.running != open {
            wrong.push(format!(
                "running {:?} by the view, {open:?} by the journal",
                v.running
            ));
        }
        if v.awaiting_approval.is_some() != (t.parked > 0) {
            wrong.push(format!(
                "awaiting approval {} by the view, {} runs parked by the journal",
                v.awaiting_approval.is_some(),
                t.parked
            ));
        }
        let held_until = t.held_until.filter(|&until| until > now);
        if v.held_until.map(|u| u.as_millis()) != held_until {
            wrong.push(format!(
                "held until {:?} by the view, {:?} by the journal at {}",
                v.held_until,
                held_until.map(ts),
                ts(now)
            ));
        }
        wrong
    }
}

impl Checker {
    /// V1 for the record's `accounted_from` (what a backfill is measured against, and the
    /// world's backfills are drawn from): the instant the journal defined the current
    /// schedule, or just before the first due time a backfill took back.
    fn accounted_wrong(&self, idx: usize, rec: &duetime::JobRecord) -> Option<String> {
        let t = &self.tracks[idx];
        let epoch = t.epochs.last()?;
        let expected = epoch.backfills.last().map_or(epoch.from, |b| b.from - 1);
        let shown = rec.accounted_from().map(|a| a.as_millis());
        (shown != Some(expected)).then(|| {
            format!(
                "the record accounts from {:?}, the journal from {}",
                rec.accounted_from(),
                ts(expected)
            )
        })
    }
}

/// V1 for the record a host reads beside the view (`JobRecord::next_due`, what a host's
/// timeline starts from): the view's next due time, which V1 holds to the oracle, unless
/// the job is paused (the view then shows none).
fn record_next_due_wrong(rec: &duetime::JobRecord, v: &JobView) -> Option<String> {
    (v.paused.is_none() && rec.next_due() != v.next_due).then(|| {
        format!(
            "the record's next due time is {:?}, the view's {:?}",
            rec.next_due(),
            v.next_due
        )
    })
}

/// V1 for the listing a dashboard pages through (`State::jobs`) and the count beside it
/// (`job_count`): held to `job()`, which V1 holds to the journal. Paged three at a time,
/// the listing must give every job once, each as `job()` shows it, ranked by status then
/// name; filtered by a status or a name's first letter, exactly the jobs so shown.
fn listing_wrong(state: &duetime::State, now: duetime::Timestamp) -> Option<String> {
    let all = match page_through(state, &duetime::Filter::default(), now) {
        Ok(all) => all,
        Err(e) => return Some(e),
    };
    if all.len() != state.job_count() {
        return Some(format!(
            "the listing holds {} jobs, job_count says {}",
            all.len(),
            state.job_count()
        ));
    }
    let ranked = all
        .windows(2)
        .all(|w| (w[0].status, w[0].name.as_str()) < (w[1].status, w[1].name.as_str()));
    if !ranked {
        return Some("the listing is not ranked by status, then name".to_string());
    }
    if let Some(v) = all
        .iter()
        .find(|v| state.job(v.name.as_str(), now).as_ref() != Some(*v))
    {
        return Some(format!("the listing shows {} otherwise than job()", v.name));
    }
    let first = all.first()?;
    let filters = [
        duetime::Filter {
            status: Some(first.status),
            name_prefix: None,
        },
        duetime::Filter {
            status: None,
            name_prefix: Some(first.name.as_str()[..1].to_string()),
        },
    ];
    for filter in filters {
        let shown = match page_through(state, &filter, now) {
            Ok(shown) => shown,
            Err(e) => return Some(e),
        };
        let meant: Vec<&JobView> = all
            .iter()
            .filter(|v| filter.status.is_none_or(|s| s == v.status))
            .filter(|v| {
                let prefix = filter.name_prefix.as_deref().unwrap_or("");
                v.name.as_str().starts_with(prefix)
            })
            .collect();
        if shown.iter().collect::<Vec<_>>() != meant {
            return Some(format!(
                "the listing filtered by {filter:?} is not the jobs it names"
            ));
        }
    }
    None
}

/// Every page of a listing, three items a page; `Err` when the pages do not end.
fn page_through(
    state: &duetime::State,
    filter: &duetime::Filter,
    now: duetime::Timestamp,
) -> Result<Vec<JobView>, String> {
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..=state.job_count() {
        let page = state.jobs(filter, after.as_deref(), 3, now);
        items.extend(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(items),
        }
    }
    Err(format!(
        "the listing filtered by {filter:?} gives a next page after {} jobs, more than it holds",
        items.len()
    ))
}
