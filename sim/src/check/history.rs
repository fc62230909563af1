//! The checker's reading of a job's history lines, one handler a kind of line: what each
//! family of checks notes when a definition, a pause, a start, a settlement, a loss, a
//! parked run or a quota hold is written to the journal. `history` is the table of
//! contents; each handler feeds the families its line concerns.

use duetime::{
    Fence, History, Incident, Outcome, PausedBy, ProcessId, Record, RunId, Schedule, Timestamp,
};

use super::{
    catch_up, one_shot_instant, retries, ts, Checker, Epoch, Invariant, OneShot, Parked, Probe,
    RunEnd,
};

impl Checker {
    pub(super) fn history(&mut self, idx: usize, rec: &Record, h: &History) {
        match h {
            History::Defined { schedule, from, .. } => self.defined(idx, rec, schedule, from),
            History::Backfill {
                from, to, count, ..
            } => self.backfill(idx, rec, from.as_millis(), to.as_millis(), *count),
            History::Removed { .. } => self.removed(idx, rec),
            History::Updated { .. } => self.updated(idx, rec),
            History::PendingConfirmation { digest } => {
                self.probe(Probe::DefinitionHeldForConfirmation);
                self.tracks[idx].held = Some(digest.to_string());
            }
            History::Confirmed { digest, .. } => self.confirmed(idx, rec, digest.as_str()),
            History::Waiting { reason } => {
                self.probe(match reason {
                    duetime::WaitReason::LaneBusy => Probe::LaneBusyDueRunWaited,
                    duetime::WaitReason::ConcurrencyCap => Probe::ProcessCapReached,
                });
                self.wait_for_room(idx, rec, *reason);
            }
            History::Parked { run, until, .. } => self.parked_run(idx, rec, run, until),
            History::Approved { run, .. } => self.approved(idx, rec, run),
            History::ApprovalExpired { run } => self.approval_expired(idx, rec, run),
            History::Paused { by, .. } => self.paused(idx, rec, by),
            History::Resumed { .. } => {
                let t = &mut self.tracks[idx];
                t.paused = false;
                // A resume is no success: a told no_success stays told.
                t.told.retain(|&k| k == Incident::NoSuccess);
            }
            History::Started { .. } => self.run_started(idx, rec, h),
            History::Settled {
                run,
                outcome,
                attempt,
            } => self.run_settled(idx, rec, run, outcome, attempt),
            History::RetryAt { run, at } => {
                self.tracks[idx].line.ended(*run, Some(true));
                self.retry_followed(*run, retries::Followed::RetryAt(at.as_millis()));
            }
            History::Lost { run } => self.run_lost(idx, rec, run),
            History::StaleResult { run, fence } => self.stale_result(run, fence),
            History::AlertHeld { alert, .. } => {
                self.stall_told(alert);
                self.pause_alert(idx, alert);
                self.held_by_throttle(idx, rec);
            }
            History::QuotaHold { until, run, asked } => self.quota_hold(idx, run, asked, until),
            History::QuotaHoldEnded { until } => self.quota_hold_ended(idx, rec, until),
            History::Adopted { run, process, .. } => self.adopted(rec, run, process),
            History::CancelSent { run, reason } => {
                self.probe(Probe::TimeoutCancelSent);
                if *reason == duetime::CancelReason::Timeout {
                    self.timeout_cancel(&rec.job, *run, rec.at.as_millis());
                }
            }
            _ => {}
        }
    }

    /// A new schedule: H1 (not while a change is held), the line and the one-shot start afresh, E1's silence counts from it.
    fn defined(&mut self, idx: usize, rec: &Record, schedule: &Schedule, from: &Timestamp) {
        let at = rec.at.as_millis();
        if let Some(digest) = self.tracks[idx].held.clone() {
            self.violation(
                Invariant::H1,
                &rec.job,
                format!(
                    "a definition was applied at {} while {digest} was held for confirmation",
                    rec.at
                ),
            );
        }
        self.applied_only_by_confirmation(idx, rec, "defined");
        let t = &mut self.tracks[idx];
        let text = crate::cron_text::schedule_key(schedule);
        t.one_shot = one_shot_instant(&text).map(|instant| OneShot {
            instant,
            end_owed: None,
            ended: false,
            end: None,
        });
        if t.one_shot.is_some() {
            self.one_shots.insert(idx);
        }
        let t = &mut self.tracks[idx];
        t.epochs.push(Epoch {
            text,
            from: from.as_millis(),
            backfills: Vec::new(),
        });
        let text = &t.epochs.last().expect("pushed").text;
        let spec = self.facts.get(&t.name).and_then(|f| f.specs.get(text));
        t.line.define(from.as_millis(), text, spec.cloned());
        t.catch_up = catch_up::Newest::default();
        if let Some(s) = t.silence.as_mut() {
            s.defined(at);
        }
        if t.epochs.len() > 1 {
            self.probe(Probe::Rescheduled);
        }
    }

    /// The job is removed: its waits, holds, lanes and parked runs end with it.
    fn removed(&mut self, idx: usize, rec: &Record) {
        let at = rec.at.as_millis();
        self.tracks[idx].removed_at = Some(at);
        self.timeouts_removed(&rec.job);
        self.lanes.waiting.retain(|(i, _)| *i != idx);
        // A removed job's open run ends with it.
        self.holders.retain(|(_, _, i)| *i != idx);
        // Its run leaves the core's accounting with it (the core cancels it).
        let runs: Vec<RunId> = self
            .lanes
            .open
            .iter()
            .filter(|(_, v)| v.2 == idx)
            .map(|(r, _)| *r)
            .collect();
        for r in runs {
            self.lanes.close(r);
        }
        // Its parked runs end with it (their due times are recorded removed).
        if self.tracks[idx].parked > 0 {
            self.parked.retain(|_, p| p.track != idx);
            self.tracks[idx].parked = 0;
        }
    }

    /// A change applied without a new schedule: after a confirmation, or the definition in force asked for again, which withdraws a held change (H1).
    fn updated(&mut self, idx: usize, rec: &Record) {
        // A change applied without a new schedule (a new command, a new rule):
        // after a confirmation, or the definition in force asked for again, which
        // withdraws a held change.
        if self.tracks[idx].held.take().is_none() {
            self.applied_only_by_confirmation(idx, rec, "updated");
        }
        self.tracks[idx].confirmed = false;
    }

    /// H1: the digest confirmed is the one held.
    fn confirmed(&mut self, idx: usize, rec: &Record, digest: &str) {
        let t = &mut self.tracks[idx];
        let held = t.held.take();
        t.confirmed = true;
        t.told.retain(|&k| k != Incident::PendingConfirmation);
        if held.as_deref() != Some(digest) {
            self.violation(
                Invariant::H1,
                &rec.job,
                format!("{digest} confirmed while {held:?} was held"),
            );
        }
        self.probe(Probe::Confirmed);
    }

    /// P2: a run parks only when its process reported it awaiting approval, and once.
    fn parked_run(&mut self, idx: usize, rec: &Record, run: &RunId, until: &Timestamp) {
        // A parked run waits for a person, not for its deadline.
        self.timeout_forgotten(*run);
        let run = *run;
        self.probe(Probe::RunParkedAwaitingApproval);
        // Parked, the run holds no process and no room in its lane (its command
        // ended): D1, C1 and C2 stop counting it.
        self.holders.retain(|(r, _, _)| *r != run);
        self.lanes.close(run);
        let asked = self.open.get(&run).is_some_and(|o| {
            o.reported()
                .any(|o| matches!(o, Outcome::AwaitingApproval { .. }))
        });
        if !asked {
            self.violation(
                Invariant::P2,
                &rec.job,
                format!("{run} parked though no process reported it awaiting approval"),
            );
        }
        let until = until.as_millis();
        if self
            .parked
            .insert(run, Parked { track: idx, until })
            .is_some()
        {
            self.violation(Invariant::P2, &rec.job, format!("{run} parked twice"));
        } else {
            self.tracks[idx].parked += 1;
        }
    }

    /// P2: only a parked run is approved.
    fn approved(&mut self, idx: usize, rec: &Record, run: &RunId) {
        let run = *run;
        self.probe(Probe::ApprovalGiven);
        if self.unpark(run).is_none() {
            self.violation(
                Invariant::P2,
                &rec.job,
                format!("{run} approved though it was not parked"),
            );
        }
        self.close(idx, rec, run, RunEnd::Done);
    }

    /// P2: only a parked run's approval expires, and never before its until.
    fn approval_expired(&mut self, idx: usize, rec: &Record, run: &RunId) {
        let at = rec.at.as_millis();
        let run = *run;
        self.probe(Probe::ApprovalExpired);
        match self.unpark(run) {
            None => self.violation(
                Invariant::P2,
                &rec.job,
                format!("approval for {run} expired though it was not parked"),
            ),
            Some(p) if at < p.until => self.violation(
                Invariant::P2,
                &rec.job,
                format!(
                    "approval for {run} expired at {} before its until {}",
                    rec.at,
                    ts(p.until)
                ),
            ),
            Some(_) => {}
        }
        self.close(idx, rec, run, RunEnd::Expired);
    }

    /// A pause: what the line hands back (M1's window at a person's pause), A3 for the system's.
    fn paused(&mut self, idx: usize, rec: &Record, by: &PausedBy) {
        let t = &mut self.tracks[idx];
        t.paused = true;
        t.pause_owed = false;
        let handed = t.line.paused();
        if matches!(by, duetime::PausedBy::Person { .. }) {
            self.window_at_pause(idx, rec.at.as_millis(), &handed);
        }
        self.lanes.waiting.retain(|(i, _)| *i != idx);
        if let duetime::PausedBy::System { reason } = by {
            self.system_paused(idx, *reason);
            self.probe(Probe::PausedByTheSystem);
            if matches!(reason, duetime::SystemPause::FailureStreak { .. }) {
                self.probe(Probe::PausedAfterFailuresInARow);
            }
        }
    }

    /// A run started: C4's order, R2's and N1's covers, D1's drain, C1/C2, and everything `started` judges.
    fn run_started(&mut self, idx: usize, rec: &Record, h: &History) {
        let History::Started {
            run,
            covers,
            trigger,
            process,
            waited,
            fence,
            ..
        } = h
        else {
            return;
        };
        let at = rec.at.as_millis();
        if waited.is_some() {
            self.probe(Probe::WaitedThenStarted);
        }
        self.lanes.waiting.retain(|(i, _)| *i != idx);
        let key = self.key_in_force(idx);
        // (One that did not wait is as young as its start.)
        let since = at - waited.map_or(0, |w| w.as_millis() as i64);
        self.lanes
            .started_now
            .push((rec.job.clone(), key, since, waited.is_some()));
        self.retry_covers(idx, rec, *run, covers.as_ref(), *trigger);
        self.line_start(idx, rec, *run, covers.as_ref(), *trigger);
        let o = self.open.entry(*run).or_default();
        o.fence = Some(*fence);
        o.covers = *covers;
        self.holders.push((*run, *process, idx));
        if self.draining.contains(process) {
            let detail = format!("{run} started on {process}, which was asked to drain");
            self.violation(Invariant::D1, &rec.job, detail);
        }
        self.concurrency(idx, rec, *run, *process);
        self.started(idx, rec, *run, covers.as_ref(), *trigger, *process)
    }

    /// A run settled: K2's timeout, R4's retry, N1's line, then what `settled` judges.
    fn run_settled(
        &mut self,
        idx: usize,
        rec: &Record,
        run: &RunId,
        outcome: &Outcome,
        attempt: &u32,
    ) {
        let at = rec.at.as_millis();
        // (A host may report `timed_out` itself, once told to cancel.)
        let by_core = *outcome == Outcome::TimedOut
            && !self
                .open
                .get(run)
                .is_some_and(|o| o.reported().any(|o| *o == Outcome::TimedOut));
        self.timeout_settled(&rec.job, *run, by_core, at);
        self.retry_settled(idx, at, *run, *attempt, outcome);
        self.holders.retain(|(r, _, _)| r != run);
        if matches!(outcome, Outcome::Failed { .. } | Outcome::TimedOut) {
            // Its due times go to a retry's run, or to the entry failing them out, which
            // records no cause.
            self.told_late.remove(run);
        }
        if !matches!(outcome, Outcome::Ok | Outcome::Skipped) {
            // A `retry at` line may follow in this step (N1).
            self.tracks[idx].line.ended(*run, None);
            self.line_dirty.push(idx);
        }
        self.settled(idx, rec, *run, outcome)
    }

    /// A run recorded lost: A1's told pause, N1's cover run again or not, P2 (never while parked), S3 (never after its settlement).
    fn run_lost(&mut self, idx: usize, rec: &Record, run: &RunId) {
        let run = *run;
        self.timeout_forgotten(run);
        self.told_late.remove(&run);
        let covered = self.open.get(&run).is_some_and(|o| o.covers.is_some());
        let paused = !self.tracks[idx].safe_to_repeat && covered;
        self.lost_told = Some((run, paused));
        // A job safe to repeat runs the cover again, unless paused (N1).
        let t = &mut self.tracks[idx];
        let again = t.safe_to_repeat && !t.paused;
        t.line.ended(run, Some(again));
        self.holders.retain(|(r, _, _)| *r != run);
        self.lanes.close(run);
        if self.unpark(run).is_some() {
            self.violation(
                Invariant::P2,
                &rec.job,
                format!("{run} recorded lost while parked (it holds no lease)"),
            );
        }
        self.probe(Probe::LeaseExpiredWhileRunning);
        if self.tracks[idx].told.contains(&Incident::RunLost) {
            self.probe(Probe::RepeatedLossHeldAsOneIncident);
        }
        self.lost.insert(run);
        if self.settled.contains(run) {
            self.violation(
                Invariant::S3,
                &rec.job,
                format!("{run} recorded lost after it was settled"),
            );
        }
        if let Some(s) = self
            .open
            .get_mut(&run)
            .and_then(|o| o.start.as_mut())
            .filter(|s| s.track == idx)
        {
            s.end = Some(RunEnd::Lost);
            let cover = s.cover;
            self.tracks[idx].end_cover(cover, run, RunEnd::Lost);
        }
    }

    /// S3: a stale result told refused in the step it was delivered.
    fn stale_result(&mut self, run: &RunId, fence: &Fence) {
        self.probe(Probe::StaleResultRefused);
        if self.stale_delivered.is_some_and(|d| d == (*run, *fence)) {
            self.stale_told = true;
        }
    }

    /// Q1: a quota hold begins (R4 notes what followed the run).
    fn quota_hold(
        &mut self,
        idx: usize,
        run: &RunId,
        asked: &duetime::Duration,
        until: &Timestamp,
    ) {
        self.probe(Probe::QuotaHold);
        let asked = i64::try_from(asked.as_millis()).unwrap_or(i64::MAX);
        let until_ms = until.as_millis();
        self.retry_followed(
            *run,
            retries::Followed::Hold {
                asked,
                until: until_ms,
            },
        );
        let t = &mut self.tracks[idx];
        t.held_until = Some(t.held_until.unwrap_or(i64::MIN).max(until.as_millis()));
    }

    /// Q1: a hold is lifted only at or after its end, by the lifting process's clock (a process whose clock runs ahead lifts it early in true time).
    fn quota_hold_ended(&mut self, idx: usize, rec: &Record, until: &Timestamp) {
        let at = rec.at.as_millis();
        // Q1: a hold is lifted only at or after its end, by the lifting process's
        // clock (a process whose clock runs ahead lifts it early in true time).
        if at < until.as_millis() {
            self.violation(
                Invariant::Q1,
                &rec.job,
                format!("hold until {until} lifted at {}", rec.at),
            );
        }
        self.tracks[idx].held_until = None;
        self.tracks[idx].lifted = true;
    }

    /// An adoption: under the run's own fence; its holder, timeout and lane count move to the adopting process.
    fn adopted(&mut self, rec: &Record, run: &RunId, process: &ProcessId) {
        self.adoption_held_to_its_fence(&rec.job, *run);
        self.timeout_adopted(*run, *process);
        if let Some(h) = self.holders.iter_mut().find(|(r, _, _)| r == run) {
            h.1 = *process;
        }
        self.probe(Probe::RunAdoptedByALaterIncarnation);
        if let Some(open) = self.lanes.open.get_mut(run) {
            let from = std::mem::replace(&mut open.1, *process);
            self.lanes.run_off(from);
            self.lanes.run_on(*process);
        }
    }
}
