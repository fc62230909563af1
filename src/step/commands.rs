//! Definitions and people's commands. Each answers with a `Reply` (the job's new view or a
//! typed refusal) and, when accepted, leaves an audit `Record` naming the actor.

use crate::effect::Action;
use crate::effect::{
    AlertKind, CancelReason, Effect, History, Incident, MissCause, PausedBy, Refusal,
};
use crate::event::{Actor, Outcome, RunId};
use crate::job::{JobDef, JobName, MissedRule, MAX_TITLE};
use crate::jobs::JobSeq;
use crate::state::{
    Activity, HeldDef, JobRecord, Owed, Pause, Phase, RunLane, State, MAX_BACKFILL,
    MAX_OWED_SEGMENTS, REQUIRED_RESERVE,
};
use crate::time::{Duration, Timestamp};

use super::due::{last_due, skipped};
use super::Out;

const HOUR: Duration = Duration::from_hours(1);

impl State {
    pub(super) fn reply(&self, seq: Option<JobSeq>, job: Option<JobName>, out: &mut Out) {
        let view = seq.and_then(|s| self.view_seq(s, out.now)).map(Box::new);
        out.effects.push(Effect::Reply {
            job,
            result: Ok(view),
        });
    }

    pub(super) fn refuse(job: Option<JobName>, refusal: Refusal, out: &mut Out) {
        out.effects.push(Effect::Reply {
            job,
            result: Err(refusal),
        });
    }

    pub(super) fn find(&self, job: &str, out: &mut Out) -> Option<(JobSeq, JobName)> {
        match self.seq_of(job) {
            Some(seq) => Some((seq, self.jobs[&seq].def.name.clone())),
            None => {
                State::refuse(
                    None,
                    Refusal::NotFound {
                        job: job.chars().take(80).collect(),
                    },
                    out,
                );
                None
            }
        }
    }

    /// Adds a job (its schedule starts after now) or changes one. A changed schedule starts
    /// from now; the old schedule's due times not yet looked at are recorded `rescheduled`.
    pub(crate) fn upsert(&mut self, def: JobDef, actor: Actor, out: &mut Out) {
        if let Err(error) = def.validate(&self.config) {
            State::refuse(Some(def.name.clone()), Refusal::Invalid { error }, out);
            return;
        }
        if self.refuse_upstreams(&def, out) {
            return;
        }
        let now = out.now;
        let name = def.name.clone();
        let Some(seq) = self.seq_of(name.as_str()) else {
            if self.next_seq == u64::MAX {
                // Only a stored state can have used up its job numbers.
                State::refuse(Some(name), Refusal::Full, out);
                return;
            }
            let seq = self.new_seq();
            if def.requires_confirmation {
                // Held before its first due time: no schedule runs and nothing is accounted
                // until a person confirms this definition (`History::Defined` then).
                let mut record = JobRecord::new(def.clone(), now);
                record.act_mut().phase = Phase::Unconfirmed(Box::new(HeldDef::new(def)));
                self.jobs.insert(seq, record);
                self.by_name.insert(name.clone(), seq);
                self.tell_held(seq, out);
                self.reindex(seq);
                self.reply(Some(seq), Some(name), out);
                return;
            }
            out.history(
                &name,
                History::Defined {
                    schedule: Box::new(def.schedule.clone()),
                    from: now,
                    actor,
                },
            );
            let mut record = JobRecord::new(def, now);
            record.accounted_from = Some(now);
            self.jobs.insert(seq, record);
            self.by_name.insert(name.clone(), seq);
            self.reindex(seq);
            self.reply(Some(seq), Some(name), out);
            return;
        };
        let job = &self.jobs[&seq];
        let held = job.act().and_then(Activity::held).map(HeldDef::def);
        if held == Some(&def) {
            // Held already, as asked: nothing new to tell.
            self.reply(Some(seq), Some(name), out);
            return;
        }
        if job.is_unconfirmed() {
            // Never confirmed: the new definition replaces the held one, still held.
            let Some(record) = self.jobs.get_mut(&seq) else {
                return;
            };
            record.next_due = def.schedule.next_after(record.frontier);
            if let Some(heard) = record.heard.as_deref_mut() {
                heard.pin(&record.def.schedule, &def.schedule);
            }
            record.def = def.clone();
            record.rewatch(out.now);
            record.act_mut().hold(HeldDef::new(def));
            self.tell_held(seq, out);
            self.reindex(seq);
            self.reply(Some(seq), Some(name), out);
            return;
        }
        if job.def == def {
            if held.is_some() {
                // Asking for the definition in force withdraws the held change.
                let Some(record) = self.jobs.get_mut(&seq) else {
                    return;
                };
                record.act_mut().drop_held();
                record.tidy();
                out.history(&name, History::Updated { actor });
            }
            self.reply(Some(seq), Some(name), out);
            return;
        }
        if self.refuse_schedule_change(seq, &def, out) {
            return;
        }
        let job = &self.jobs[&seq];
        if job.def.requires_confirmation || def.requires_confirmation {
            // A change to (or away from) a definition that needs confirmation is held;
            // the definition in force keeps running until `Confirm`.
            let Some(record) = self.jobs.get_mut(&seq) else {
                return;
            };
            record.act_mut().hold(HeldDef::new(def));
            self.tell_held(seq, out);
            self.reindex(seq);
            self.reply(Some(seq), Some(name), out);
            return;
        }
        self.apply_def(seq, def, actor, out);
    }

    /// Records a held definition and alerts it (once per incident: until a confirmation,
    /// a success or a person's resume, further held changes are recorded, not alerted).
    fn tell_held(&mut self, seq: JobSeq, out: &mut Out) {
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(digest) = record
            .act()
            .and_then(Activity::held)
            .map(|h| h.digest().clone())
        else {
            return;
        };
        let name = record.def.name.clone();
        out.history(
            &name,
            History::PendingConfirmation {
                digest: digest.clone(),
            },
        );
        out.alert(
            record.alert_log(),
            AlertKind::PendingConfirmation { digest },
        );
    }

    /// `Confirm`: applies the held definition if `digest` is its digest.
    pub(crate) fn confirm(&mut self, job: &str, digest: &str, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let record = &self.jobs[&seq];
        let Some(held) = record.act().and_then(Activity::held) else {
            let current = record.def.digest();
            State::refuse(Some(name), Refusal::NothingToConfirm { current }, out);
            return;
        };
        let expected = held.digest().clone();
        if expected != digest {
            let given = digest.chars().take(80).collect();
            State::refuse(Some(name), Refusal::WrongDigest { given }, out);
            return;
        }
        if !record.is_unconfirmed() {
            let held = held.def().clone();
            if self.refuse_schedule_change(seq, &held, out) {
                return;
            }
        }
        let now = out.now;
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some((held, first)) = record.act_mut().take_held() else {
            return;
        };
        let def = held.into_def();
        // The incident ends here: a later held change is told again.
        record
            .incidents
            .retain(|&i| i != Incident::PendingConfirmation);
        out.history(
            &name,
            History::Confirmed {
                digest: expected,
                actor: actor.clone(),
            },
        );
        if !first {
            self.apply_def(seq, def, actor, out);
            return;
        }
        // A new job's schedule begins now.
        record.frontier = record.frontier.max(now);
        record.next_due = def.schedule.next_after(record.frontier);
        out.history(
            &name,
            History::Defined {
                schedule: Box::new(def.schedule.clone()),
                from: record.frontier,
                actor,
            },
        );
        record.accounted_from = Some(record.frontier);
        record.def = def;
        // The switch counts from the confirmation: nothing could succeed before it.
        record.watched_since = None;
        record.rewatch(now);
        record.tidy();
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// Whether the job's owed line has room for `need` more segments, merging segments
    /// that follow one another if it must (but not a pair around `apart`, the range of a
    /// backfill about to go between them: `Activity::make_room`), and under `missed:
    /// required` for its `REQUIRED_RESERVE` besides. A full line of disjoint debts has
    /// none.
    fn has_owed_room(
        &mut self,
        seq: JobSeq,
        need: usize,
        missed: MissedRule,
        apart: Option<(Timestamp, Timestamp)>,
    ) -> bool {
        let Some(JobRecord { def, activity, .. }) = self.jobs.get_mut(&seq) else {
            return false;
        };
        let Some(a) = activity.as_deref_mut() else {
            return true;
        };
        let reserve = match missed {
            MissedRule::Required => REQUIRED_RESERVE,
            MissedRule::Skip | MissedRule::CatchUpOnce => 0,
        };
        while a.pending.len() + need + reserve > MAX_OWED_SEGMENTS {
            if !a.make_room(&def.schedule, apart) {
                return false;
            }
        }
        true
    }

    /// Whether putting `def` in force must be refused: a new schedule for a `required` job
    /// may owe two more segments (the old schedule's due times passed as `rescheduled`, and
    /// the new schedule's own), apart from the old ones, and a line of disjoint debts too
    /// full for them could make room only by dropping the oldest, which `required` never
    /// does; the `REQUIRED_RESERVE` stays free after them. Refused before anything changes.
    fn refuse_schedule_change(&mut self, seq: JobSeq, def: &JobDef, out: &mut Out) -> bool {
        let changes = self.jobs[&seq].def.schedule != def.schedule;
        if !changes
            || def.missed != MissedRule::Required
            || self.has_owed_room(seq, 2, def.missed, None)
        {
            return false;
        }
        let refusal = Refusal::OwedLineFull {
            max: MAX_OWED_SEGMENTS,
        };
        State::refuse(Some(def.name.clone()), refusal, out);
        true
    }

    /// Puts a changed definition in force. A changed schedule starts from now; the old
    /// schedule's due times not yet looked at are recorded `rescheduled`.
    fn apply_def(&mut self, seq: JobSeq, def: JobDef, actor: Actor, out: &mut Out) {
        let now = out.now;
        let name = def.name.clone();
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        if job.def.schedule != def.schedule {
            // Due times the old schedule had up to now are passed as rescheduled; those
            // already owed or running keep their identity under the old schedule.
            job.pass_due_times(now, MissCause::Rescheduled, out);
            let old = job.def.schedule.clone();
            if let Some(act) = job.activity.as_deref_mut() {
                // Every segment, even of one due time: tagged, it never merges with the new
                // schedule's due times (which would make one segment of two schedules).
                for owed in act.pending.iter_mut().filter(|o| o.schedule.is_none()) {
                    owed.schedule = Some(Box::new(old.clone()));
                }
            }
            if let Some(heard) = job.heard.as_deref_mut() {
                heard.pin(&old, &def.schedule);
            }
            job.frontier = job.frontier.max(now);
            job.next_due = def.schedule.next_after(job.frontier);
            // A new schedule (a one-shot given a new instant) is armed afresh.
            job.ended = None;
            let from = job.frontier;
            job.accounted_from = Some(from);
            out.history(
                &name,
                History::Defined {
                    schedule: Box::new(def.schedule.clone()),
                    from,
                    actor,
                },
            );
        } else {
            out.history(&name, History::Updated { actor });
        }
        // An open run keeps the lane it started in: it still runs what it started as.
        if let Some(run) = job.activity.as_deref_mut().and_then(Activity::run_mut) {
            let started_in = match &run.lane {
                Some(lane) => lane.key(),
                None => job.def.concurrency_key.as_deref(),
            };
            let kept = RunLane::kept(started_in, def.concurrency_key.as_deref());
            run.lane = kept;
        }
        job.def = def;
        job.rewatch(now);
        job.tidy();
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// Ends a job: what it owed, ran or had not yet looked at is recorded `removed`, its run
    /// is cancelled, and the ledger is closed with a `removed` record.
    pub(crate) fn remove(&mut self, job: &str, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let view = self.view_seq(seq, out.now).map(Box::new);
        // Passing with the job unpaused and its rule set aside: everything is `removed`.
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        if let Some(act) = record.activity.as_deref_mut() {
            act.paused = None;
        }
        let schedule = record.def.schedule.clone();
        let from = record.frontier;
        let now = out.now;
        let unconfirmed = record.is_unconfirmed();
        if let (false, Some(first), Some(last)) = (
            unconfirmed,
            record.next_due.filter(|d| *d <= now),
            super::last_due(&schedule, from, now),
        ) {
            let count = schedule.count_in(from, now);
            out.ledger(&name, first, last, count, skipped(MissCause::Removed));
        }
        let Some(record) = self.jobs.remove(&seq) else {
            return;
        };
        if let Some(w) = record.wake {
            self.wake.remove(&(w, seq));
        }
        // Its run's lane frees; waiters are let in by the next tick's `admit`.
        self.unlane(seq, &record);
        self.downstreams.unlist(seq);
        self.by_name.remove(name.as_str());
        if let Some(act) = record.activity {
            let owed = act.pending.iter().cloned();
            let run_cover = act.run().and_then(|r| r.cover);
            let retry_cover = act.retry().map(|r| r.cover);
            for c in run_cover.into_iter().chain(retry_cover) {
                out.ledger(
                    &name,
                    c.covers.from,
                    c.covers.to,
                    c.covers.count,
                    skipped(MissCause::Removed),
                );
            }
            for o in owed {
                out.ledger(&name, o.from, o.to, o.count, skipped(MissCause::Removed));
            }
            if let Some(run) = act.run() {
                self.runs.remove(&run.id);
            }
            // A parked run has no process left to stop.
            if let Some(run) = act.run().filter(|r| r.parked().is_none()) {
                out.effects.push(Effect::Do(Action::Cancel {
                    run: run.id,
                    job: Some(name.clone()),
                    process: run.holder,
                    reason: CancelReason::Stopping,
                }));
            }
        }
        out.history(&name, History::Removed { actor });
        out.effects.push(Effect::Reply {
            job: Some(name),
            result: Ok(view),
        });
    }

    /// Pauses a job. Due times already late are accounted first (they were not missed
    /// because of the pause); a waiting retry is handed to the missed rule as `paused`.
    pub(crate) fn pause(&mut self, job: &str, actor: Actor, note: String, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let len = note.chars().count();
        if len > MAX_TITLE {
            State::refuse(
                Some(name),
                Refusal::NoteTooLong {
                    len,
                    max: MAX_TITLE,
                },
                out,
            );
            return;
        }
        // Asked before the record is taken to change: a refused command writes no row.
        if self.jobs.get(&seq).is_none_or(|j| j.paused().is_some()) {
            State::refuse(Some(name), Refusal::Already, out);
            return;
        }
        let grace = self.config.grace;
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        record.account_late(out.now, grace, MissCause::Down, out);
        let act = record.act_mut();
        let retry = act.take_retry();
        // A paused job starts nothing of its own, so it leaves the line of waiters (its
        // owed due times stay owed; a queued manual run waits again on the next tick).
        act.take_waiting();
        let by = PausedBy::Person { actor };
        act.paused = Some(Pause {
            by: by.clone(),
            note: note.clone(),
            since: out.now,
        });
        out.history(&name, History::Paused { by, note });
        if let Some(retry) = retry {
            record.unretry(retry.cover.covers, out);
        }
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// `Backfill`: owes the job's due times from `from` to `to` (inclusive) as one tagged
    /// segment with cause `backfill`, run like any owed segment whatever the missed rule
    /// (a person asked for exactly these). The range must end at or before the job's
    /// accounted start, which then moves back before the range's first due time: backfills
    /// go backward in time and never overlap, so no due time runs twice. A paused job
    /// accepts it; its line waits until the job is resumed.
    pub(crate) fn backfill(
        &mut self,
        job: &str,
        from: Timestamp,
        to: Timestamp,
        actor: Actor,
        out: &mut Out,
    ) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let owed = match backfill_plan(&self.jobs[&seq], from, to) {
            Ok(owed) => owed,
            Err(refusal) => return State::refuse(Some(name), refusal, out),
        };
        // The last refusal: making room merges what is owed (it changes nothing else). A
        // `required` job keeps its reserve free.
        let missed = self.jobs[&seq].def.missed;
        if !self.has_owed_room(seq, 1, missed, Some((owed.from, owed.to))) {
            let refusal = Refusal::OwedLineFull {
                max: MAX_OWED_SEGMENTS,
            };
            State::refuse(Some(name), refusal, out);
            return;
        }
        let (first, last, count) = (owed.from, owed.to, owed.count);
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        // `has_owed_room` made room above, so nothing is given up.
        record.owe_out_of_turn(owed, out);
        record.accounted_from = Some(first.saturating_sub(Duration::from_millis(1)));
        out.history(
            &name,
            History::Backfill {
                from: first,
                to: last,
                count,
                actor,
            },
        );
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// Resumes a job: due times passed while it was paused are handed to its missed rule
    /// with cause `paused`.
    pub(crate) fn resume(&mut self, job: &str, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        let Some(act) = record
            .activity
            .as_deref_mut()
            .filter(|a| a.paused.is_some())
        else {
            State::refuse(Some(name), Refusal::Already, out);
            return;
        };
        act.paused = None;
        // A person looked: what fails from here on is a new incident, told again. The job
        // has still not succeeded, though: a told `NoSuccess` stays told.
        record.incidents.retain(|&i| i == Incident::NoSuccess);
        out.history(&name, History::Resumed { actor });
        record.pass_due_times(out.now, MissCause::Paused, out);
        record.tidy();
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// Queues a manual run (covering no due time) for the next tick.
    pub(crate) fn run_now(&mut self, job: &str, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let cap = self.config.manual_per_hour as usize;
        let now = out.now;
        let Some(record) = self.jobs.get_mut(&seq) else {
            return;
        };
        if !record.def.safe_to_repeat {
            State::refuse(Some(name), Refusal::NotSafe, out);
            return;
        }
        if let Some(run) = record.run() {
            let refusal = match run.parked() {
                Some(until) => Refusal::AwaitingApproval { run: run.id, until },
                None => Refusal::InFlight { run: run.id },
            };
            State::refuse(Some(name), refusal, out);
            return;
        }
        let act = record.act_mut();
        if act.manual.is_some() {
            State::refuse(Some(name), Refusal::Already, out);
            return;
        }
        let hour_ago = now.saturating_sub(HOUR);
        while act.manual_recent.front().is_some_and(|t| *t <= hour_ago) {
            act.manual_recent.pop_front();
        }
        if act.manual_recent.len() >= cap {
            let until = act
                .manual_recent
                .front()
                .map_or(now, |t| t.saturating_add(HOUR));
            record.tidy();
            State::refuse(Some(name), Refusal::RateLimited { until }, out);
            return;
        }
        act.manual_recent.push_back(now);
        act.manual = Some(actor.clone());
        out.history(&name, History::ManualQueued { actor });
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// `ApprovalGiven`: the job's parked run `run` settles done, audited with the actor.
    /// Anything else (a run not parked now, another job's, settled or expired already) is
    /// refused and changes nothing.
    pub(crate) fn approve(&mut self, job: &str, run: RunId, actor: Actor, out: &mut Out) {
        let Some((seq, name)) = self.find(job, out) else {
            return;
        };
        let parked = self.jobs[&seq]
            .run()
            .filter(|r| r.id == run && r.parked().is_some())
            .map(|r| r.fence);
        let Some(fence) = parked else {
            State::refuse(Some(name), Refusal::NotAwaitingApproval { run }, out);
            return;
        };
        self.settle_by(seq, run, fence, Outcome::Ok, Some(actor), out);
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.tidy();
        }
        self.reindex(seq);
        self.reply(Some(seq), Some(name), out);
    }

    /// Erasure: the actor's name leaves every pause and queued run; the pause stands.
    pub(crate) fn forget_actor(&mut self, actor: &Actor, out: &mut Out) {
        for job in self.jobs.values_mut() {
            let Some(act) = job.activity.as_deref_mut() else {
                continue;
            };
            let mut touched = false;
            if let Some(Pause {
                by: PausedBy::Person { actor: a },
                ..
            }) = &mut act.paused
            {
                if a == actor {
                    *a = Actor::forgotten();
                    touched = true;
                }
            }
            if act.manual.as_ref() == Some(actor) {
                act.manual = Some(Actor::forgotten());
                touched = true;
            }
            if touched {
                out.history(&job.def.name, History::ActorForgotten);
            }
        }
        out.effects.push(Effect::Reply {
            job: None,
            result: Ok(None),
        });
    }
}

/// What a backfill of `record`'s due times from `from` to `to` would owe, or why it is
/// refused: an empty range, a range reaching into accounted time or into due times still
/// held from an earlier schedule, a range with no due time, or too many.
fn backfill_plan(record: &JobRecord, from: Timestamp, to: Timestamp) -> Result<Owed, Refusal> {
    const MS: Duration = Duration::from_millis(1);
    if to < from {
        return Err(Refusal::EmptyRange { from, to });
    }
    match record.accounted_from {
        Some(accounted) if to <= accounted => {}
        accounted => return Err(Refusal::AlreadyAccounted { from: accounted }),
    }
    let schedule = &record.def.schedule;
    // The due times in `[from, to]` are those after `before`. A range from the earliest
    // instant (`Timestamp::MIN`, "from the beginning") loses nothing by it: a due time is
    // always after some instant (`next_after`), so none is ever `Timestamp::MIN`.
    let before = from.saturating_sub(MS);
    let count = schedule.count_in(before, to);
    let first = schedule.next_after(before).filter(|&t| t <= to);
    let last = last_due(schedule, before, to);
    let (Some(first), Some(last), 1..) = (first, last, count) else {
        return Err(Refusal::NoDueTimes { from, to });
    };
    if count > MAX_BACKFILL {
        return Err(Refusal::TooManyDueTimes {
            count,
            max: MAX_BACKFILL,
        });
    }
    // Due times still held from a schedule the job had before (owed, retrying or running)
    // may lie before `accounted_from`: a backfill may not reach them, so that no instant
    // is held twice and the owed line stays in order.
    if let Some(held) = held_from(record, first).filter(|&h| h <= last) {
        return Err(Refusal::AlreadyAccounted {
            from: Some(held.saturating_sub(MS)),
        });
    }
    Ok(Owed {
        from: first,
        to: last,
        count,
        cause: MissCause::Backfill,
        schedule: Some(Box::new(schedule.clone())),
    })
}

/// The earliest due time `record` still holds (running, retrying or owed) among those
/// reaching `first` or later.
fn held_from(record: &JobRecord, first: Timestamp) -> Option<Timestamp> {
    let a = record.act()?;
    let run = a.run().and_then(|r| r.cover).map(|c| c.covers);
    let retry = a.retry().map(|r| r.cover.covers);
    let owed = a.pending.iter().map(|o| crate::effect::Covers {
        from: o.from,
        to: o.to,
        count: o.count,
    });
    run.into_iter()
        .chain(retry)
        .chain(owed)
        .filter(|c| c.to >= first)
        .map(|c| c.from)
        .min()
}
