//! W1: what a host logs says what happened. A host writes each effect and each event it
//! sends as the one line their `Display` gives (the daemon's log, `duetime` CLI's trace,
//! the snapshots of `tests/`), so a line that drops its job, its run or what kind of thing
//! it tells is a mistake a person reading the log pays for. Every line must name what its
//! value holds: the job, run, fence and process it is about, the snake name of its kind
//! (trigger, miss cause, clock gap, wait reason, cancel reason), the person who acted, the
//! text of its outcome, alert, refusal or definition error (never empty), and the due
//! times it covers as `[from]` (one) or `[from .. to ×count]`. An `every` schedule names
//! its offset only when it has one; a tick lists the runs it holds as `run/fence`, one
//! space apart.
//!
//! The checks read the values the line is made from, never a copy of the format, so the
//! rendering may change its words freely; what it may not do is leave a fact out.

use crate::check::Invariant;
use crate::check::Probe;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use duetime::{
    Action, Covers, Effect, Entry, Event, History, LedgerKind, MissAction, Notice, Start,
};
use duetime::{Outcome, Schedule};

use super::Checker;

/// Each kind of line (a history line's variant, a ledger kind, an action, a notice, a
/// reply, an event) is read in full the first `READ_ALL` times a world writes it, then one
/// in `READ_EVERY`: the common ones go by in the hundreds of thousands, the same few
/// formats over and over, and rendering every one would cost the simulator a third of its
/// speed; a rare kind is read every time it comes.
const READ_ALL: u32 = 8;
const READ_EVERY: u32 = 64;

/// A key for the kind of `effect`: its variant and the variant of what it carries.
fn effect_kind(effect: &Effect) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    std::mem::discriminant(effect).hash(&mut h);
    match effect {
        Effect::Journal(r) => match &r.entry {
            Entry::Ledger(e) => std::mem::discriminant(&e.kind).hash(&mut h),
            Entry::History(x) => std::mem::discriminant(x).hash(&mut h),
        },
        Effect::Do(a) => std::mem::discriminant(a).hash(&mut h),
        Effect::Notice(n) => std::mem::discriminant(n).hash(&mut h),
        Effect::Reply { result, .. } => result.is_ok().hash(&mut h),
        Effect::Handover(_) => {}
    }
    h.finish()
}

impl Checker {
    /// Whether this line, of kind `kind`, is one to read (counts, not draws: the world's
    /// random stream stays as it was).
    fn reads(&mut self, kind: u64) -> bool {
        let seen = match self.log_seen.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => n,
            None => {
                self.log_seen.push((kind, 0));
                &mut self.log_seen.last_mut().expect("just pushed").1
            }
        };
        *seen += 1;
        *seen <= READ_ALL || *seen % READ_EVERY == 0
    }

    /// W1 for one effect the world received (`Observation::Effect`).
    pub(super) fn logged(&mut self, effect: &Effect) {
        if !self.reads(effect_kind(effect)) {
            return;
        }
        self.log_buf.clear();
        let _ = write!(self.log_buf, "{effect}");
        let line = std::mem::take(&mut self.log_buf);
        match missing_from_effect(&line, effect) {
            Some(what) => {
                let detail = format!("the line `{line}` leaves out {what}");
                self.violation_of(Invariant::W1, "(log)".to_string(), detail);
            }
            None => self.probe_n(Probe::EffectLoggedWithItsFacts, 1),
        }
        self.log_buf = line;
    }

    /// W1 for one event the world sends to the core (`Observation::Stepping`).
    pub(super) fn logged_event(&mut self, event: &Event) {
        let mut h = std::hash::DefaultHasher::new();
        std::mem::discriminant(event).hash(&mut h);
        if !self.reads(h.finish()) {
            return;
        }
        let line = event.to_string();
        if let Some(what) = missing_from_event(&line, event) {
            let detail = format!("the event line `{line}` leaves out {what}");
            self.violation_of(Invariant::W1, "(log)".to_string(), detail);
        }
    }
}

/// The first fact of `effect` its line does not show, if any.
fn missing_from_effect(line: &str, effect: &Effect) -> Option<String> {
    effect_facts(line, effect).err()
}

/// What a line leaves out: `Err` names the first fact missing.
type Found = Result<(), String>;

fn effect_facts(line: &str, effect: &Effect) -> Found {
    match effect {
        Effect::Journal(r) => {
            lacks(line, r.job.as_str(), "its job")?;
            match &r.entry {
                Entry::Ledger(e) => {
                    let covers = Covers {
                        from: e.from,
                        to: e.to,
                        count: e.count,
                    };
                    lacks(line, &covers_text(&covers), "the due times it covers")?;
                    part(line, &e.kind, "its ledger kind")?;
                    ledger_kind(line, e.kind)
                }
                Entry::History(h) => {
                    part(line, h, "its history line")?;
                    history(line, h)
                }
            }
        }
        Effect::Do(a) => action(line, a),
        Effect::Notice(n) => notice(line, n),
        Effect::Handover(record) => lacks(line, record.def().name.as_str(), "its job"),
        Effect::Reply { job, result } => {
            lacks(line, job.as_ref().map_or("-", |j| j.as_str()), "its job")?;
            match result {
                Err(duetime::Refusal::Invalid { error }) => {
                    part(line, error, "the rule the definition breaks")
                }
                Err(refusal) => part(line, refusal, "its refusal"),
                Ok(_) => Ok(()),
            }
        }
    }
}

/// Whether `line` holds `text` (a fact's own rendering, or a name the core gives it).
fn lacks(line: &str, text: &str, what: &str) -> Found {
    if text.is_empty() || line.contains(text) {
        Ok(())
    } else {
        Err(format!("{what} (`{text}`)"))
    }
}

/// A part rendered on its own must say something, and the line must hold it.
fn part(line: &str, value: &dyn std::fmt::Display, what: &str) -> Found {
    let text = value.to_string();
    if text.trim().is_empty() {
        return Err(format!("{what}: its own text is empty"));
    }
    lacks(line, &text, what)
}

/// One due time as itself, a range as its ends and count.
fn covers_text(c: &Covers) -> String {
    if c.count == 1 && c.from == c.to {
        format!("[{}]", c.from)
    } else {
        format!("[{} .. {} ×{}]", c.from, c.to, c.count)
    }
}

fn ledger_kind(line: &str, kind: LedgerKind) -> Found {
    match kind {
        LedgerKind::Ran { run, .. }
        | LedgerKind::FailedOut { run }
        | LedgerKind::Lost { run }
        | LedgerKind::ApprovalExpired { run } => lacks(line, &run.to_string(), "its run"),
        LedgerKind::Missed { cause, action } => {
            lacks(line, cause.name(), "the miss's cause")?;
            match action {
                MissAction::CaughtUp { run } => lacks(line, &run.to_string(), "the catch-up run"),
                MissAction::Skipped => Ok(()),
            }
        }
    }
}

/// The name a person is logged by: their name as the wire carries it.
fn actor_name(actor: &duetime::Actor) -> String {
    match serde_json::to_value(actor) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

fn history(line: &str, h: &History) -> Found {
    use History as H;
    match h {
        H::Defined {
            schedule, actor, ..
        } => {
            lacks(line, &actor_name(actor), "who defined it")?;
            schedule_text(line, schedule)
        }
        H::Removed { actor }
        | H::MovedOut { actor }
        | H::MovedIn { actor }
        | H::Updated { actor }
        | H::Resumed { actor }
        | H::ManualQueued { actor }
        | H::Backfill { actor, .. }
        | H::Confirmed { actor, .. } => lacks(line, &actor_name(actor), "who acted"),
        H::Approved { run, actor } => {
            lacks(line, &run.to_string(), "its run")?;
            lacks(line, &actor_name(actor), "who approved")
        }
        H::Started {
            run,
            fence,
            trigger,
            covers,
            ..
        } => {
            lacks(line, &run.to_string(), "its run")?;
            lacks(line, &fence.to_string(), "its fence")?;
            lacks(line, trigger.name(), "its trigger")?;
            covers.map_or(Ok(()), |c| lacks(line, &covers_text(&c), "what it covers"))
        }
        H::Settled { run, outcome, .. } => {
            lacks(line, &run.to_string(), "its run")?;
            outcome_text(line, outcome)
        }
        H::Waiting { reason } => lacks(line, reason.name(), "why it waits"),
        H::CancelSent { run, reason } => {
            lacks(line, &run.to_string(), "its run")?;
            lacks(line, reason.name(), "why")
        }
        H::AlertHeld { alert } => part(line, alert, "the alert held"),
        H::Expired { cause } => lacks(line, cause.name(), "why it expired"),
        H::UpstreamNotOk { upstream, .. } => lacks(line, upstream.as_str(), "the upstream"),
        H::RetryAt { run, .. }
        | H::QuotaHold { run, .. }
        | H::Lost { run }
        | H::StaleResult { run, .. }
        | H::Parked { run, .. }
        | H::ApprovalExpired { run }
        | H::Completed { run }
        | H::Adopted { run, .. } => lacks(line, &run.to_string(), "its run"),
        H::PendingConfirmation { .. }
        | H::QuotaHoldEnded { .. }
        | H::Paused { .. }
        | H::ActorForgotten => Ok(()),
    }
}

fn outcome_text(line: &str, outcome: &Outcome) -> Found {
    part(line, outcome, "its outcome")
}

/// A definition's schedule as its text, which names an `every`'s offset only when it has
/// one (`every 1h`, `every 1h + 5m`).
fn schedule_text(line: &str, schedule: &Schedule) -> Found {
    let text = schedule.to_string();
    lacks(line, &text, "its schedule")?;
    match schedule {
        Schedule::Every { offset, .. } if offset.is_zero() && text.contains('+') => {
            Err(format!("nothing: it names an offset of zero (`{text}`)"))
        }
        _ => Ok(()),
    }
}

fn action(line: &str, a: &Action) -> Found {
    match a {
        Action::Start(Start {
            run,
            job,
            fence,
            trigger,
            covers,
            process,
            ..
        }) => {
            lacks(line, job.as_str(), "its job")?;
            lacks(line, &run.to_string(), "its run")?;
            lacks(line, &fence.to_string(), "its fence")?;
            lacks(line, &process.to_string(), "its process")?;
            lacks(line, trigger.name(), "its trigger")?;
            covers.map_or(Ok(()), |c| lacks(line, &covers_text(&c), "what it covers"))
        }
        Action::Cancel {
            run,
            job,
            process,
            reason,
        } => {
            lacks(line, job.as_ref().map_or("", |j| j.as_str()), "its job")?;
            lacks(line, &run.to_string(), "its run")?;
            lacks(line, &process.to_string(), "its process")?;
            lacks(line, reason.name(), "why")
        }
    }
}

fn notice(line: &str, n: &Notice) -> Found {
    match n {
        Notice::Alert(a) => {
            lacks(line, a.job.as_str(), "its job")?;
            part(line, &a.kind, "what it alerts")
        }
        Notice::ClockGap { process, kind, .. } => {
            lacks(line, &process.to_string(), "its process")?;
            lacks(line, kind.name(), "the kind of gap")
        }
        Notice::Owner { process, fence, .. } | Notice::OwnerReleased { process, fence } => {
            lacks(line, &process.to_string(), "the process")?;
            lacks(line, &fence.to_string(), "its fence")
        }
        Notice::Drained { process } => lacks(line, &process.to_string(), "the process"),
    }
}

/// The first fact of `event` its line does not show, if any.
fn missing_from_event(line: &str, event: &Event) -> Option<String> {
    let found = match event {
        Event::Upsert { def, actor } => lacks(line, def.name.as_str(), "its job")
            .and_then(|()| lacks(line, &actor_name(actor), "who sent it"))
            .and_then(|()| schedule_text(line, &def.schedule)),
        Event::Tick { process, held } => {
            let mut list = String::new();
            for (i, h) in held.iter().enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let _ = write!(list, "{sep}{}/{}", h.run, h.fence);
            }
            lacks(line, &process.to_string(), "its process")
                .and_then(|()| lacks(line, &format!("[{list}]"), "the runs it holds"))
        }
        Event::RunFinished {
            process,
            job,
            run,
            fence,
            outcome,
        } => lacks(line, job.as_str(), "its job")
            .and_then(|()| lacks(line, &process.to_string(), "its process"))
            .and_then(|()| lacks(line, &format!("{run} {fence}"), "its run and fence"))
            .and_then(|()| outcome_text(line, outcome)),
        Event::Remove { job, actor }
        | Event::Resume { job, actor }
        | Event::RunNow { job, actor }
        | Event::Pause { job, actor, .. }
        | Event::Confirm { job, actor, .. }
        | Event::ApprovalGiven { job, actor, .. }
        | Event::MoveOut { job, actor }
        | Event::Backfill { job, actor, .. } => lacks(line, job.as_str(), "its job")
            .and_then(|()| lacks(line, &actor_name(actor), "who sent it")),
        Event::ForgetActor { actor } => lacks(line, &actor_name(actor), "whom"),
        Event::MoveIn { record, actor } => lacks(line, record.def().name.as_str(), "its job")
            .and_then(|()| lacks(line, &actor_name(actor), "who sent it")),
        Event::ProcessStarted { process }
        | Event::ProcessDraining { process }
        | Event::Adopt { process, .. } => lacks(line, &process.to_string(), "its process"),
    };
    found.err()
}
