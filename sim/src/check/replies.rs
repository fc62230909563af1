//! R3, every command's answer is what the journal says it must be, and H2, a digest names
//! one definition.
//!
//! People's commands reach the core as events and leave a `Reply`. For each, the checker
//! decides before the step, from what the journal has told it (whether the job exists, is
//! paused, has a run open or parked, a manual run queued, a definition held and its digest,
//! its accounted start) and from what people sent (the definitions of the `Upsert`s: the
//! journal says which was applied or held, the event what it was), how the core must
//! answer, and holds the reply and the step's journal lines to it: a refusal of exactly
//! the variant (and fields) the journal predicts, writing nothing; an acceptance writing
//! the line the command stands for (`paused` by that person with that note, `resumed`,
//! `manual run queued`, `removed`, `approved`, `backfill`, `defined`, `updated`, `pending
//! confirmation`, `confirmed`, `actor forgotten` for exactly the jobs whose pause or
//! queued run the actor's name was on). A definition is judged by the documented rules
//! (`crate::mistakes`), never by the core's `validate`: one breaking a rule must be
//! refused `invalid` with that rule's error, write nothing, and leave the job's definition
//! (and the one held) as they were, which the checker reads after the step through the
//! state's public accessors (as V1 reads views: the only other look at the state).
//!
//! Where the journal cannot predict an answer exactly, it is held as a bound, and the
//! comments say why: `owed_line_full` depends on how the core merges owed segments, which
//! no line tells (allowed only where a `required` job's schedule would change, or for a
//! backfill whose range holds due times); a backfill's refusal for due times an earlier
//! schedule still holds is allowed only before the accounted start and for a range whose
//! due times exist and are not too many; the hourly cap of manual runs is judged on the
//! `manual run queued` lines' own times (a refusal names the queued run it waits for).
//!
//! H2: the core tells a held definition's digest in its `pending confirmation` line, and
//! the checker knows which definition was sent: two different definitions told with one
//! digest (a digest that ignores a field, or is constant), or one told with two, break
//! it. A `Confirm` naming a digest told for a definition other than the one held (the
//! world's stale confirmation, of an earlier definition) must be refused `wrong_digest`
//! whatever the digests look like: the person read it for another definition.

use crate::check::Invariant;
use crate::check::Probe;
use std::collections::VecDeque;

use duetime::{
    Actor, DefError, Duration, Entry, Event, History, JobDef, JobName, JobView, MissedRule,
    PausedBy, Record, Refusal, State, Timestamp, Trigger, UpstreamProblem,
};

use crate::mistakes::MAX_TITLE;

/// The most due times one backfill may ask for, as `docs/semantics.md` states it.
const MAX_BACKFILL: u64 = 100_000;

use super::line::{Room, MAX_OWED_SEGMENTS, REQUIRED_RESERVE};
use super::{ts, Checker};
use crate::oracle::Spec;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// What people's commands and the journal have said of one job (one registration), beside
/// `Track`.
#[derive(Default)]
pub(super) struct Said {
    /// The definition in force and the one held for confirmation, as people sent them.
    in_force: Option<Box<JobDef>>,
    held: Option<Box<JobDef>>,
    /// A concurrency key has been in force for it (moved onto one since the world drew
    /// it): what it owed waiting for a lane may outlive the key.
    keyed: bool,
    /// Each digest the core told for a held definition of the job, with that definition.
    told: Vec<(String, Box<JobDef>)>,
    /// The person whose pause is in force (`None`: not paused, or paused by the system).
    paused_by: Option<Actor>,
    /// The person whose manual run is queued, until it starts.
    manual: Option<Actor>,
    /// When manual runs were queued, as the hourly cap counts them (oldest first).
    manual_recent: VecDeque<i64>,
}

/// A job's definition and the one it holds, read from the state (`kept_definition`).
type Kept = Option<(JobDef, Option<JobDef>)>;

/// R3's part of the checker.
#[derive(Default)]
pub(super) struct Replies {
    /// The store's tick and its hourly cap of manual runs; `None`: R3 is not held (a journal
    /// checked without its commands).
    tick: Option<Duration>,
    manual_per_hour: usize,
    /// The command of the step being fed.
    asked: Option<Box<Asked>>,
    /// A definition refused `invalid`: its job and what the state held before the step,
    /// which it must still hold after.
    kept: Option<(String, Kept)>,
}

/// A command and what its step has shown so far.
struct Asked {
    event: Event,
    /// The job it names (none for `forget_actor`) and its registration, if it exists.
    job: Option<String>,
    idx: Option<usize>,
    expect: Expect,
    /// For a backfill or a definition: the segments the job's owed line needs before the
    /// step (when the journal can tell: a job neither paused nor removed), and how many
    /// more it must have room for, which decide whether it is refused (`room_wrong`).
    room: Option<(Room, usize)>,
    /// For an `Upsert`: the job's definitions in the state before the step.
    before: Kept,
    lines: Lines,
    answers: Vec<Answer>,
}

/// What a reply said: the job it named and the view's parts R3 reads, or the refusal.
struct Answer {
    job: Option<String>,
    result: Result<Option<Shown>, Refusal>,
}

struct Shown {
    name: String,
    paused: bool,
    pending: Option<String>,
}

/// The journal lines of the step, by what R3 looks for.
#[derive(Default)]
struct Lines {
    /// Records of the job the command names, and of any other.
    own: u32,
    others: u32,
    defined: u32,
    updated: u32,
    held: u32,
    confirmed: u32,
    /// `paused` lines by the person asking, with the note asked.
    paused: u32,
    resumed: u32,
    removed: u32,
    approved: u32,
    backfill: Option<u64>,
    queued: Option<i64>,
    forgotten: Vec<String>,
}

impl std::fmt::Display for Lines {
    /// The counts that are not zero.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = [
            ("own", self.own),
            ("others'", self.others),
            ("defined", self.defined),
            ("updated", self.updated),
            ("pending confirmation", self.held),
            ("confirmed", self.confirmed),
            ("paused as asked", self.paused),
            ("resumed", self.resumed),
            ("removed", self.removed),
            ("approved", self.approved),
        ];
        let mut parts: Vec<String> = counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        if let Some(n) = self.backfill {
            parts.push(format!("backfill of {n}"));
        }
        if let Some(at) = self.queued {
            parts.push(format!("manual run queued at {}", ts(at)));
        }
        if !self.forgotten.is_empty() {
            parts.push(format!("actor forgotten for {:?}", self.forgotten));
        }
        if parts.is_empty() {
            return f.write_str("no lines");
        }
        f.write_str(&parts.join(", "))
    }
}

/// How the journal says a command must be answered.
enum Expect {
    /// Refused exactly so, writing nothing.
    Refused(Refusal),
    /// Refused `wrong_digest`: the digest is the held one's, but it was told for another
    /// definition too, so it names neither (H2 reports the telling).
    Ambiguous(Refusal),
    /// `nothing_to_confirm`, naming the digest told for the definition in force (when the
    /// journal told one).
    NothingToConfirm(Option<String>),
    /// Refused `invalid` with one of these errors: every rule the definition breaks.
    Invalid(Vec<DefError>),
    /// Accepted, writing `line`; or refused `owed_line_full` where that is allowed.
    Accepted { line: Line, owed_line_full: bool },
    /// A manual run past its exact refusals: queued unless the hourly cap is reached.
    ManualRun,
    /// A backfill within the accounted start: its due times decide (the oracle's).
    Backfill {
        spec: Option<Spec>,
        from: i64,
        to: i64,
        accounted: i64,
    },
    /// The journal cannot tell (a job without facts, a definition in force never seen).
    Unknown,
}

/// The line an accepted command writes.
#[derive(Debug)]
enum Line {
    /// Nothing at all (a definition held or in force already).
    Nothing,
    Defined,
    Updated,
    Held,
    Confirmed {
        defined: bool,
    },
    Paused,
    Resumed,
    Removed,
    Approved,
    /// `actor forgotten` for exactly these jobs.
    Forgot(Vec<String>),
}

fn accepted(line: Line) -> Expect {
    Expect::Accepted {
        line,
        owed_line_full: false,
    }
}

fn not_found(job: &str) -> Expect {
    Expect::Refused(Refusal::NotFound {
        job: job.chars().take(80).collect(),
    })
}

/// The job a command names, if any.
fn job_of(event: &Event) -> Option<Option<&str>> {
    Some(match event {
        Event::Upsert { def, .. } => Some(def.name.as_str()),
        Event::Remove { job, .. }
        | Event::Pause { job, .. }
        | Event::Resume { job, .. }
        | Event::RunNow { job, .. }
        | Event::Confirm { job, .. }
        | Event::ApprovalGiven { job, .. }
        | Event::Backfill { job, .. } => Some(job.as_str()),
        Event::ForgetActor { .. } => None,
        _ => return None,
    })
}

/// Due times of `spec` in `(after, until]`, counted exactly up to `cap` (more: `cap + 1`
/// or the exact count, which `every` and `at` give at once). A cron schedule is walked a
/// day at a time, so a range of months costs no more than `cap` due times.
pub(super) fn count_due(spec: &Spec, after: i64, until: i64, cap: u64) -> u64 {
    match spec {
        Spec::Every {
            period_ms,
            offset_ms,
        } => {
            // (In i128: a range may start at the earliest instant.)
            let (p, o) = (
                i128::from(*period_ms),
                i128::from(offset_ms.rem_euclid(*period_ms)),
            );
            let k = |t: i64| (i128::from(t) - o).div_euclid(p);
            u64::try_from(k(until) - k(after)).unwrap_or(0)
        }
        Spec::At { at_ms } => u64::from(after < *at_ms && *at_ms <= until),
        Spec::Cron(_) | Spec::Calendar(_) => {
            let (mut n, mut t) = (0, after);
            while t < until && n <= cap {
                let end = t.saturating_add(DAY).min(until);
                n += spec.due_in(t, end).len() as u64;
                t = end;
            }
            n.min(cap + 1)
        }
    }
}

/// The fields two definitions differ in (for a report).
fn differing(a: &JobDef, b: &JobDef) -> String {
    let (a, b) = (serde_json::to_value(a), serde_json::to_value(b));
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) = (a, b) else {
        return "?".to_string();
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let diff: Vec<&str> = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(String::as_str)
        .collect();
    diff.join(", ")
}

impl Checker {
    /// Holds R3 and H2 for a store of this config: the world and its replays tell every
    /// command (`Observation::Stepping`), its reply (`Observation::Effect`) and the state
    /// after it (`Observation::Committed`).
    pub(super) fn hold_replies(&mut self, config: &duetime::Config) {
        self.replies.tick = Some(config.tick);
        self.replies.manual_per_hour = config.manual_per_hour as usize;
    }

    /// The job's current registration, if it exists (defined or held, not removed).
    pub(super) fn registration(&self, job: &str) -> Option<usize> {
        self.current
            .iter()
            .copied()
            .find(|&i| self.tracks[i].name.as_str() == job)
            .filter(|&i| self.tracks[i].removed_at.is_none())
    }

    /// The event of the next step: a command is noted with the answer the journal says it
    /// must get (see the module's doc).
    pub(super) fn asking(&mut self, event: &Event, state: &State) {
        let Some(tick) = self.replies.tick else {
            return;
        };
        let Some(job) = job_of(event) else {
            self.replies.asked = None;
            return;
        };
        let idx = job.and_then(|j| self.registration(j));
        let expect = self.expect(event, idx, tick);
        let room = idx.and_then(|i| {
            let need = self.room_needed(i, event)?;
            Some((self.room_before(i, state)?, need))
        });
        let before = match event {
            Event::Upsert { def, .. } => definitions(state, def.name.as_str()),
            _ => None,
        };
        self.replies.asked = Some(Box::new(Asked {
            event: event.clone(),
            job: job.map(str::to_string),
            idx,
            expect,
            room,
            before,
            lines: Lines::default(),
            answers: Vec::new(),
        }));
    }

    /// How many segments `event` needs free in track `idx`'s owed line (none: it needs no
    /// room). A backfill one; a new schedule of a `required` job two (the old schedule's
    /// due times passed, the new one's own). A `required` job keeps `REQUIRED_RESERVE`
    /// more free for the debts no command can refuse (`docs/semantics.md`, Backfill).
    fn room_needed(&self, idx: usize, event: &Event) -> Option<usize> {
        let in_force = self.tracks[idx].said.in_force.as_deref()?;
        let reserve = |rule| match rule {
            MissedRule::Required => REQUIRED_RESERVE,
            _ => 0,
        };
        match event {
            Event::Backfill { .. } => Some(1 + reserve(in_force.missed)),
            Event::Upsert { .. } | Event::Confirm { .. } => Some(2 + REQUIRED_RESERVE),
            _ => None,
        }
    }

    /// The room track `idx`'s owed line needs before a command (`Line::room`), when the
    /// journal knows what it owes: neither paused nor removed.
    fn room_before(&mut self, idx: usize, state: &State) -> Option<Room> {
        let t = &self.tracks[idx];
        if t.paused || t.removed_at.is_some() {
            return None;
        }
        let record = state
            .seq_of_name(t.name.as_str())
            .and_then(|s| state.record(s))?;
        let next_due = record.next_due().map(|d| d.as_millis());
        let reach = self.journal_time.jump.zip(state.clock());
        let reach = reach.map(|(jump, clock)| clock.as_millis().saturating_add(jump));
        self.owed_room(idx, next_due, record.owed(), reach)
    }

    /// How `event` must be answered, by what the journal has said so far (`idx`: its job's
    /// registration, if the job exists): a command about a job that does not exist is
    /// refused `not_found`, but a definition, which is judged by its rules first.
    fn expect(&self, event: &Event, idx: Option<usize>, tick: Duration) -> Expect {
        let job = job_of(event).flatten().unwrap_or("");
        if let Event::Upsert { def, .. } = event {
            return self.expect_upsert(def, idx, tick);
        }
        if let Event::ForgetActor { actor } = event {
            return accepted(Line::Forgot(self.named(actor)));
        }
        let Some(idx) = idx else {
            return not_found(job);
        };
        let t = &self.tracks[idx];
        match event {
            Event::Remove { .. } => accepted(Line::Removed),
            Event::Pause { note, .. } => {
                let len = note.chars().count();
                if len > MAX_TITLE {
                    Expect::Refused(Refusal::NoteTooLong {
                        len,
                        max: MAX_TITLE,
                    })
                } else if t.paused {
                    Expect::Refused(Refusal::Already)
                } else {
                    accepted(Line::Paused)
                }
            }
            Event::Resume { .. } if !t.paused => Expect::Refused(Refusal::Already),
            Event::Resume { .. } => accepted(Line::Resumed),
            Event::RunNow { .. } => self.expect_run_now(idx),
            Event::Confirm { digest, .. } => self.expect_confirm(idx, digest),
            Event::ApprovalGiven { run, .. } => {
                let parked = self.parked.get(run).is_some_and(|p| p.track == idx);
                if parked {
                    accepted(Line::Approved)
                } else {
                    Expect::Refused(Refusal::NotAwaitingApproval { run: *run })
                }
            }
            Event::Backfill { from, to, .. } => self.expect_backfill(idx, *from, *to),
            _ => Expect::Unknown,
        }
    }

    /// A definition: refused by the rules it breaks; else new, held, applied (`defined`
    /// when its schedule changes, else `updated`), withdrawing what is held (asking for
    /// the definition in force), or nothing at all (asking for what is held or in force).
    fn expect_upsert(&self, def: &JobDef, idx: Option<usize>, tick: Duration) -> Expect {
        let errors = crate::mistakes::broken(def, tick);
        if !errors.is_empty() {
            return Expect::Invalid(errors);
        }
        match self.upstream_refusal(def) {
            Ok(Some(refusal)) => return Expect::Refused(refusal),
            Ok(None) => {}
            Err(()) => return Expect::Unknown,
        }
        let Some(idx) = idx else {
            // A new job: held before its first due time when it needs confirmation.
            let line = if def.requires_confirmation {
                Line::Held
            } else {
                Line::Defined
            };
            return accepted(line);
        };
        let t = &self.tracks[idx];
        let held = t.said.held.as_deref();
        if held == Some(def) {
            return accepted(Line::Nothing);
        }
        if t.epochs.is_empty() {
            // Never confirmed: the new definition is held in place of the one held.
            return accepted(Line::Held);
        }
        let Some(in_force) = t.said.in_force.as_deref() else {
            return Expect::Unknown;
        };
        if in_force == def {
            return accepted(if held.is_some() {
                Line::Updated
            } else {
                Line::Nothing
            });
        }
        let reschedules = in_force.schedule != def.schedule;
        let line = if in_force.requires_confirmation || def.requires_confirmation {
            Line::Held
        } else if reschedules {
            Line::Defined
        } else {
            Line::Updated
        };
        Expect::Accepted {
            line,
            // A `required` job's new schedule needs room in its owed line, whose segments
            // the core merges as it must: no line says how many it keeps.
            owed_line_full: reschedules && def.missed == MissedRule::Required,
        }
    }

    /// A definition whose `after` names a job that is not defined (by the journal), one
    /// whose definition (in force, or held while it was never confirmed) has another
    /// schedule, or one that waits for the job defined in turn: refused `upstream`,
    /// naming the first such upstream. `Err` when the journal cannot tell.
    fn upstream_refusal(&self, def: &JobDef) -> Result<Option<Refusal>, ()> {
        for upstream in &def.after {
            let problem = match self.definition_of(upstream.as_str())? {
                None => Some(UpstreamProblem::Unknown),
                Some(up) if up.schedule != def.schedule => Some(UpstreamProblem::ScheduleDiffers),
                Some(_) => self
                    .chain_to(upstream, &def.name)?
                    .map(|through| UpstreamProblem::Cycle { through }),
            };
            if let Some(problem) = problem {
                return Ok(Some(Refusal::Upstream {
                    upstream: upstream.clone(),
                    problem,
                }));
            }
        }
        Ok(None)
    }

    /// The definition of the job named, as the core holds it: in force, or held while it
    /// was never confirmed. `Ok(None)`: no such job; `Err`: the journal cannot tell.
    fn definition_of(&self, name: &str) -> Result<Option<&JobDef>, ()> {
        let Some(idx) = self.registration(name) else {
            return Ok(None);
        };
        let t = &self.tracks[idx];
        let def = if t.epochs.is_empty() {
            t.said.held.as_deref()
        } else {
            t.said.in_force.as_deref()
        };
        def.map(Some).ok_or(())
    }

    /// The shortest chain of `after` from `from` to `to` by the definitions people sent,
    /// `from` first and `to` last (of chains as short, the one following each job's
    /// upstreams in their order, as the refusal's docs say).
    fn chain_to(&self, from: &JobName, to: &JobName) -> Result<Option<Vec<JobName>>, ()> {
        let mut paths = VecDeque::from([vec![from.clone()]]);
        let mut seen = std::collections::BTreeSet::new();
        while let Some(path) = paths.pop_front() {
            let at = path.last().cloned().unwrap_or_else(|| from.clone());
            if at == *to {
                return Ok(Some(path));
            }
            if !seen.insert(at.clone()) {
                continue;
            }
            let Some(def) = self.definition_of(at.as_str())? else {
                continue;
            };
            for next in &def.after {
                let mut longer = path.clone();
                longer.push(next.clone());
                paths.push_back(longer);
            }
        }
        Ok(None)
    }

    /// `RunNow`: not for a job not safe to repeat (the world's fact: no definition it
    /// sends changes it), nor while a run is open (`awaiting_approval` while it is parked,
    /// naming its `until`), nor while a manual run is queued; else queued, under the cap.
    fn expect_run_now(&self, idx: usize) -> Expect {
        let t = &self.tracks[idx];
        let Some(facts) = self.facts.get(&t.name) else {
            return Expect::Unknown;
        };
        if !facts.safe_to_repeat {
            return Expect::Refused(Refusal::NotSafe);
        }
        if let Some(run) = self.open_run_of(idx) {
            return Expect::Refused(match self.parked.get(&run) {
                Some(p) => Refusal::AwaitingApproval {
                    run,
                    until: Timestamp::from_millis(p.until),
                },
                None => Refusal::InFlight { run },
            });
        }
        if t.said.manual.is_some() {
            return Expect::Refused(Refusal::Already);
        }
        Expect::ManualRun
    }

    /// `Confirm`: nothing held, a digest not the held one's (or told for another
    /// definition: see the module's doc), else the held definition is confirmed and put in
    /// force (`defined` for a job's first or a new schedule, else `updated`).
    fn expect_confirm(&self, idx: usize, digest: &str) -> Expect {
        let t = &self.tracks[idx];
        let said = &t.said;
        let (Some(held_digest), Some(held)) = (t.held.as_deref(), said.held.as_deref()) else {
            if t.held.is_some() {
                return Expect::Unknown;
            }
            let current = said.in_force.as_deref().and_then(|d| said.digest_of(d));
            return Expect::NothingToConfirm(current);
        };
        let given = digest.chars().take(80).collect();
        let elsewhere = said
            .told
            .iter()
            .any(|(d, def)| d == digest && **def != *held);
        if digest != held_digest {
            return Expect::Refused(Refusal::WrongDigest { given });
        }
        if elsewhere {
            return Expect::Ambiguous(Refusal::WrongDigest { given });
        }
        if t.epochs.is_empty() {
            return accepted(Line::Confirmed { defined: true });
        }
        let Some(in_force) = said.in_force.as_deref() else {
            return Expect::Unknown;
        };
        let reschedules = in_force.schedule != held.schedule;
        Expect::Accepted {
            line: Line::Confirmed {
                defined: reschedules,
            },
            owed_line_full: reschedules && held.missed == MissedRule::Required,
        }
    }

    /// `Backfill`: an empty range, a range reaching past the accounted start (the current
    /// schedule's definition instant, moved back before each backfill's first due time;
    /// none before a job's first confirmation) are refused exactly; within it, the range's
    /// due times decide (`backfill_wrong`).
    fn expect_backfill(&self, idx: usize, from: Timestamp, to: Timestamp) -> Expect {
        if to < from {
            return Expect::Refused(Refusal::EmptyRange { from, to });
        }
        let t = &self.tracks[idx];
        let Some(epoch) = t.epochs.last() else {
            return Expect::Refused(Refusal::AlreadyAccounted { from: None });
        };
        let accounted = epoch.backfills.last().map_or(epoch.from, |b| b.from - 1);
        if to.as_millis() > accounted {
            let from = Some(Timestamp::from_millis(accounted));
            return Expect::Refused(Refusal::AlreadyAccounted { from });
        }
        let spec = self
            .facts
            .get(&t.name)
            .and_then(|f| f.specs.get(&epoch.text));
        Expect::Backfill {
            spec: spec.cloned(),
            from: from.as_millis(),
            to: to.as_millis(),
            accounted,
        }
    }

    /// The jobs whose pause in force or queued manual run bears `actor`'s name, by name.
    fn named(&self, actor: &Actor) -> Vec<String> {
        let mut names: Vec<String> = self
            .current
            .iter()
            .map(|&i| &self.tracks[i])
            .filter(|t| t.removed_at.is_none())
            .filter(|t| {
                t.said.paused_by.as_ref() == Some(actor) || t.said.manual.as_ref() == Some(actor)
            })
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        names
    }

    /// A reply the core gave in the step being told (`Observation::Effect`).
    pub(super) fn replied(
        &mut self,
        job: Option<&JobName>,
        result: &Result<Option<Box<JobView>>, Refusal>,
    ) {
        if self.replies.tick.is_none() {
            return;
        }
        let Some(asked) = self.replies.asked.as_mut() else {
            let job = job.map_or_else(String::new, JobName::to_string);
            self.violation_of(
                Invariant::R3,
                job,
                "a reply to a process's event".to_string(),
            );
            return;
        };
        let result = match result {
            Ok(view) => Ok(view.as_deref().map(|v| Shown {
                name: v.name.to_string(),
                paused: v.paused.is_some(),
                pending: v.pending_confirmation.as_ref().map(|d| d.to_string()),
            })),
            Err(r) => Err(r.clone()),
        };
        asked.answers.push(Answer {
            job: job.map(JobName::to_string),
            result,
        });
    }

    /// One journal line of track `idx`: the lines of a command's step, and what people's
    /// commands and the journal have said of the job (`Said`).
    pub(super) fn note_said(&mut self, idx: usize, rec: &Record) {
        if let Some(asked) = self.replies.asked.as_mut() {
            asked.note(rec);
        }
        let Entry::History(h) = &rec.entry else {
            return;
        };
        match h {
            History::PendingConfirmation { digest } => {
                if let Some(def) = self.sent() {
                    self.told(idx, rec, digest.as_str(), def);
                }
                return;
            }
            History::Defined { .. } | History::Updated { .. } => {
                if let Some(def) = self.sent() {
                    let before = self.key_in_force(idx);
                    let said = &mut self.tracks[idx].said;
                    said.in_force = Some(def);
                    said.held = None;
                    self.rekeyed(idx, before);
                }
                return;
            }
            History::Confirmed { .. } => {
                let before = self.key_in_force(idx);
                let said = &mut self.tracks[idx].said;
                if let Some(held) = said.held.take() {
                    said.in_force = Some(held);
                    self.rekeyed(idx, before);
                }
                return;
            }
            _ => {}
        }
        let said = &mut self.tracks[idx].said;
        match h {
            History::Paused { by, .. } => {
                said.paused_by = match by {
                    PausedBy::Person { actor } => Some(actor.clone()),
                    PausedBy::System { .. } => None,
                };
            }
            History::Resumed { .. } => said.paused_by = None,
            History::ManualQueued { actor } => said.manual = Some(actor.clone()),
            History::Started {
                trigger: Trigger::Manual,
                ..
            } => said.manual = None,
            _ => {}
        }
    }

    /// The concurrency key of track `idx`'s definition in force: the one people sent and
    /// the journal put in force (`Said::in_force`), or the world's first before any
    /// (a new job still held for confirmation, which the store lanes by it all the same).
    pub(super) fn key_in_force(&self, idx: usize) -> Option<String> {
        self.key_in_force_ref(idx).map(str::to_string)
    }

    /// `key_in_force`, borrowed.
    pub(super) fn key_in_force_ref(&self, idx: usize) -> Option<&str> {
        let t = &self.tracks[idx];
        match t.said.in_force.as_deref() {
            Some(def) => def.concurrency_key.as_deref(),
            None => t.facts_key.as_deref(),
        }
    }

    /// Whether track `idx` has had a concurrency key in force: its first definition's, or
    /// one it was moved to.
    pub(super) fn ever_keyed(&self, idx: usize) -> bool {
        let t = &self.tracks[idx];
        t.said.keyed || t.facts_key.is_some()
    }

    /// Whether track `idx`'s definition in force sets the dead-man's switch, when people
    /// have put one in force (`None` before).
    pub(super) fn switch_in_force(&self, idx: usize) -> Option<bool> {
        let def = self.tracks[idx].said.in_force.as_deref()?;
        Some(def.expect_success_within.is_some())
    }

    /// Track `idx`'s definition in force changed, its key `before` that: a waiter whose
    /// key changed waits in its new lane (C3, C4), since when it did; an open run keeps
    /// counting where it started (`Concurrency::open`).
    fn rekeyed(&mut self, idx: usize, before: Option<String>) {
        let key = self.key_in_force(idx);
        if key == before {
            return;
        }
        self.tracks[idx].said.keyed |= key.is_some();
        self.probe(Probe::ConcurrencyKeyChanged);
        if self.lanes.open.values().any(|(_, _, i)| *i == idx) {
            self.probe(Probe::ConcurrencyKeyChangedWhileItsRunWasOpen);
        }
        if self.lanes.waiting.iter().any(|(i, _)| *i == idx) {
            self.probe(Probe::ConcurrencyKeyChangedWhileItWaited);
        }
        for (i, k) in &mut self.lanes.waiting {
            if *i == idx {
                k.clone_from(&key);
            }
        }
    }

    /// The definition the step's `Upsert` sent, if it is one.
    fn sent(&self) -> Option<Box<JobDef>> {
        match self.replies.asked.as_deref().map(|a| &a.event) {
            Some(Event::Upsert { def, .. }) => Some(def.clone()),
            _ => None,
        }
    }

    /// H2: a held definition's digest, as the core told it. One digest names one
    /// definition, and a definition has one digest.
    fn told(&mut self, idx: usize, rec: &Record, digest: &str, def: Box<JobDef>) {
        let said = &mut self.tracks[idx].said;
        let clash = said
            .told
            .iter()
            .find(|(d, other)| (d == digest) != (**other == *def));
        let detail = clash.map(|(d, other)| {
            if d == digest {
                format!(
                    "{digest} told for two definitions, which differ in {}",
                    differing(other, &def)
                )
            } else {
                format!("one definition told with two digests, {d} and {digest}")
            }
        });
        if !said
            .told
            .iter()
            .any(|(d, other)| d == digest && **other == *def)
        {
            said.told.push((digest.to_string(), def.clone()));
        }
        said.held = Some(def);
        match detail {
            Some(detail) => self.violation(Invariant::H2, &rec.job, detail),
            None => self.probe(Probe::DigestToldForAHeldDefinition),
        }
    }

    /// The end of a step: a command's answer and lines against what the journal said.
    pub(super) fn judge_reply(&mut self) {
        let Some(asked) = self.replies.asked.take() else {
            return;
        };
        let wrong = self.reply_wrong(&asked);
        self.after_reply(&asked);
        let job = asked.job.clone().unwrap_or_else(|| "(actor)".to_string());
        match wrong {
            Some(detail) => {
                // (A note or a title at its bound is hundreds of characters.)
                let event: String = asked.event.to_string().chars().take(160).collect();
                let detail = format!("{event}: {detail}");
                self.violation_of(Invariant::R3, job, detail);
            }
            None => self.probe(Probe::CommandAnsweredAsTheJournalSays),
        }
    }

    /// What is wrong with the answer to `asked`, if anything.
    fn reply_wrong(&mut self, asked: &Asked) -> Option<String> {
        let [answer] = asked.answers.as_slice() else {
            return Some(format!("answered {} times", asked.answers.len()));
        };
        let refused = answer.result.is_err();
        let wrong = match &asked.expect {
            Expect::Unknown => None,
            Expect::Refused(r) => self.refused_wrong(answer, r),
            Expect::Ambiguous(r) => self.refused_wrong(answer, r).map(|w| {
                format!("{w} (the digest was told for another definition too: it names neither)")
            }),
            Expect::NothingToConfirm(current) => match &answer.result {
                Err(Refusal::NothingToConfirm { current: c })
                    if current.as_ref().is_none_or(|d| c.as_str() == d) =>
                {
                    self.probe(Probe::ConfirmRefusedNothingToConfirm);
                    None
                }
                other => Some(format!(
                    "{}, but nothing is held (the definition in force told {current:?})",
                    answer_text(other)
                )),
            },
            Expect::Invalid(errors) => self.invalid_wrong(asked, answer, errors),
            Expect::Accepted {
                line,
                owed_line_full,
            } => match &answer.result {
                Err(Refusal::OwedLineFull { .. }) if *owed_line_full => {
                    room_wrong(asked.room, answer)
                }
                Ok(shown) => (*owed_line_full)
                    .then(|| room_wrong(asked.room, answer))
                    .flatten()
                    .or_else(|| self.accepted_wrong(asked, shown.as_ref(), line)),
                other => Some(format!(
                    "{}, but it must be accepted ({line:?})",
                    answer_text(other)
                )),
            },
            Expect::ManualRun => self.manual_wrong(asked, answer),
            Expect::Backfill {
                spec,
                from,
                to,
                accounted,
            } => backfill_wrong(
                spec.as_ref(),
                (*from, *to, *accounted),
                answer,
                &asked.lines,
            )
            .or_else(|| room_wrong(asked.room, answer)),
        };
        if wrong.is_some() {
            return wrong;
        }
        let l = &asked.lines;
        if refused && l.own + l.others > 0 {
            return Some(format!(
                "refused, yet the step wrote {} lines",
                l.own + l.others
            ));
        }
        let named = answer.job.as_deref();
        let must = match &answer.result {
            Err(Refusal::NotFound { .. }) => None,
            _ => asked.job.as_deref(),
        };
        (named != must).then(|| format!("the reply names {named:?}, not {must:?}"))
    }

    /// An exact refusal: that variant, those fields.
    fn refused_wrong(&mut self, answer: &Answer, r: &Refusal) -> Option<String> {
        if answer.result.as_ref().err() != Some(r) {
            return Some(format!(
                "{}, but the journal says it is refused: {r}",
                answer_text(&answer.result)
            ));
        }
        self.probe(match r {
            Refusal::NotFound { .. } => Probe::CommandForNoSuchJobRefused,
            Refusal::Already => Probe::CommandRefusedAlreadySo,
            Refusal::InFlight { .. } => Probe::RunNowRefusedInFlight,
            Refusal::AwaitingApproval { .. } => Probe::RunNowRefusedAwaitingApproval,
            Refusal::NotSafe => Probe::RunNowRefusedNotSafeToRepeat,
            Refusal::NoteTooLong { .. } => Probe::PauseRefusedNoteTooLong,
            Refusal::WrongDigest { .. } => Probe::ConfirmRefusedWrongDigest,
            Refusal::NotAwaitingApproval { .. } => Probe::ApprovalRefusedNotParked,
            Refusal::AlreadyAccounted { .. } | Refusal::EmptyRange { .. } => {
                Probe::BackfillRefusedAsTheJournalSays
            }
            _ => Probe::CommandRefusedAsTheJournalSays,
        });
        None
    }

    /// A definition breaking a rule: refused with that rule's error; and the job keeps
    /// its definitions (read after the step: `kept_definition`).
    fn invalid_wrong(
        &mut self,
        asked: &Asked,
        answer: &Answer,
        errors: &[DefError],
    ) -> Option<String> {
        match &answer.result {
            Err(Refusal::Invalid { error }) if errors.contains(error) => {
                self.probe(Probe::InvalidDefinitionRefusedByItsRule);
                let job = asked.job.clone().unwrap_or_default();
                self.replies.kept = Some((job, asked.before.clone()));
                None
            }
            other => Some(format!(
                "{}, but the definition breaks {errors:?}",
                answer_text(other)
            )),
        }
    }

    /// An acceptance: the line it stands for, and the view it answers with.
    fn accepted_wrong(
        &mut self,
        asked: &Asked,
        shown: Option<&Shown>,
        line: &Line,
    ) -> Option<String> {
        let l = &asked.lines;
        let single = |n: u32| n == 1;
        let lines_ok = match line {
            Line::Nothing => l.own == 0,
            Line::Defined => single(l.defined) && l.held + l.updated == 0,
            Line::Updated => single(l.updated) && l.held + l.defined == 0,
            Line::Held => single(l.held) && l.defined + l.updated == 0,
            Line::Confirmed { defined } => {
                let (a, b) = if *defined {
                    (l.defined, l.updated)
                } else {
                    (l.updated, l.defined)
                };
                single(l.confirmed) && single(a) && b == 0
            }
            Line::Paused => single(l.paused),
            Line::Resumed => single(l.resumed),
            Line::Removed => single(l.removed),
            Line::Approved => single(l.approved),
            Line::Forgot(names) => {
                // (Told in the core's order of its jobs, which the journal does not name.)
                let mut told = l.forgotten.clone();
                told.sort();
                *names == told
            }
        };
        let others_ok = matches!(line, Line::Forgot(_)) || l.others == 0;
        if !lines_ok || !others_ok {
            return Some(format!(
                "accepted, but it must write {line:?} and wrote {l}"
            ));
        }
        if let Line::Forgot(names) = line {
            if !names.is_empty() {
                self.probe(Probe::ActorForgottenFromAPauseOrAQueuedRun);
            }
            return shown.map(|_| "answered with a view, about no one job".to_string());
        }
        let Some(shown) = shown else {
            return Some("accepted without the job's view".to_string());
        };
        self.reply_view_wrong(asked, shown, line)
    }

    /// The view an acceptance answers with: the job's, paused as the command left it,
    /// holding what the journal says is held.
    fn reply_view_wrong(&mut self, asked: &Asked, shown: &Shown, line: &Line) -> Option<String> {
        let job = asked.job.as_deref().unwrap_or("");
        if shown.name != job {
            return Some(format!("answered with the view of {}", shown.name));
        }
        match line {
            Line::Paused if !shown.paused => return Some("the view is not paused".into()),
            Line::Resumed if shown.paused => return Some("the view is still paused".into()),
            Line::Removed | Line::Paused | Line::Resumed => return None,
            _ => {}
        }
        let held = self
            .registration(job)
            .and_then(|i| self.tracks[i].held.clone());
        if shown.pending != held {
            return Some(format!(
                "the view holds {:?}, the journal {held:?}",
                shown.pending
            ));
        }
        self.probe(match line {
            Line::Nothing => Probe::DefinitionAskedForAgainChangedNothing,
            Line::Held => Probe::DefinitionHeldToldInTheReply,
            Line::Confirmed { .. } => Probe::HeldDefinitionConfirmedInTheReply,
            _ => Probe::DefinitionAccepted,
        });
        None
    }

    /// A manual run: queued, unless `manual_per_hour` runs were queued within the hour
    /// before (the core counts them from its own queue, oldest first: a refusal names when
    /// the oldest counted one leaves the hour, which must be a queued run's time).
    fn manual_wrong(&mut self, asked: &Asked, answer: &Answer) -> Option<String> {
        let cap = self.replies.manual_per_hour;
        let idx = asked.idx?;
        let recent = &mut self.tracks[idx].said.manual_recent;
        match &answer.result {
            Ok(_) => {
                let Some(at) = asked.lines.queued else {
                    return Some("accepted without a `manual run queued` line".to_string());
                };
                while recent.front().is_some_and(|&t| t <= at - HOUR) {
                    recent.pop_front();
                }
                let before = recent.len();
                recent.push_back(at);
                (before >= cap).then(|| {
                    format!("queued though {before} manual runs were queued in the hour before (the cap is {cap})")
                })
            }
            Err(Refusal::RateLimited { until }) => {
                let oldest = until.as_millis() - HOUR;
                match recent.iter().position(|&t| t == oldest) {
                    Some(j) if recent.len() - j >= cap => {
                        recent.drain(..j);
                        self.probe(Probe::RunNowRefusedRateLimited);
                        None
                    }
                    _ => Some(format!(
                        "rate limited until {until}, but the queued runs were {:?}",
                        recent.iter().map(|&t| ts(t)).collect::<Vec<_>>()
                    )),
                }
            }
            other => Some(format!(
                "{}, but a manual run must be queued",
                answer_text(other)
            )),
        }
    }

    /// What an answer leaves for later commands: a forgotten actor's name off the pauses
    /// and queued runs it was on.
    fn after_reply(&mut self, asked: &Asked) {
        let Event::ForgetActor { actor } = &asked.event else {
            return;
        };
        for &i in &self.current {
            let said = &mut self.tracks[i].said;
            for who in [&mut said.paused_by, &mut said.manual] {
                if who.as_ref() == Some(actor) {
                    *who = Some(Actor::forgotten());
                }
            }
        }
    }

    /// After the step (`views`): a job whose definition was refused `invalid` holds the
    /// definitions it held before.
    pub(super) fn kept_definition(&mut self, state: &State) {
        let Some((job, before)) = self.replies.kept.take() else {
            return;
        };
        let after = definitions(state, &job);
        if after != before {
            let detail = "refused an invalid definition, yet the job's definition changed";
            self.violation_of(Invariant::R3, job, detail.to_string());
        }
    }
}

impl Said {
    /// The digest the core told for `def`, if it told one.
    fn digest_of(&self, def: &JobDef) -> Option<String> {
        self.told
            .iter()
            .find(|(_, d)| **d == *def)
            .map(|(digest, _)| digest.clone())
    }
}

impl Asked {
    /// One journal line of the step.
    fn note(&mut self, rec: &Record) {
        let l = &mut self.lines;
        let h = match &rec.entry {
            Entry::History(History::ActorForgotten) => {
                l.forgotten.push(rec.job.to_string());
                return;
            }
            // A downstream's due times that waited for the job this command changed or
            // removed, skipped in the same step (a one-shot's instant so ends), which the
            // chain's own checks judge.
            Entry::History(
                History::UpstreamNotOk { .. }
                | History::Expired {
                    cause: duetime::MissCause::Upstream,
                },
            )
            | Entry::Ledger(duetime::LedgerEntry {
                kind:
                    duetime::LedgerKind::Missed {
                        cause: duetime::MissCause::Upstream,
                        action: duetime::MissAction::Skipped,
                    },
                ..
            }) if self.job.as_deref() != Some(rec.job.as_str()) => {
                return;
            }
            _ if self.job.as_deref() != Some(rec.job.as_str()) => {
                l.others += 1;
                return;
            }
            Entry::History(h) => h,
            Entry::Ledger(_) => {
                l.own += 1;
                return;
            }
        };
        l.own += 1;
        match (h, &self.event) {
            (History::Defined { .. }, _) => l.defined += 1,
            (History::Updated { .. }, _) => l.updated += 1,
            (History::PendingConfirmation { .. }, _) => l.held += 1,
            (History::Confirmed { .. }, _) => l.confirmed += 1,
            (
                History::Paused { by, note },
                Event::Pause {
                    actor, note: asked, ..
                },
            ) => {
                let by_them = matches!(by, PausedBy::Person { actor: a } if a == actor);
                l.paused += u32::from(by_them && note == asked);
            }
            (History::Resumed { .. }, _) => l.resumed += 1,
            (History::Removed { .. }, _) => l.removed += 1,
            (History::Approved { run, .. }, Event::ApprovalGiven { run: asked, .. }) => {
                l.approved += u32::from(run == asked);
            }
            (History::Backfill { count, .. }, _) => l.backfill = Some(*count),
            (History::ManualQueued { .. }, _) => l.queued = Some(rec.at.as_millis()),
            _ => {}
        }
    }
}

/// A backfill within the accounted start (`range`: from, to, the accounted start): the
/// oracle's due times in it decide. None: refused `no_due_times`; more than
/// `MAX_BACKFILL`: refused `too_many_due_times` (counted exactly for `every` and `at`; a
/// cron range is walked only past the bound). Else accepted (B1 holds its line to the
/// oracle), or refused `already_accounted` for due times an earlier schedule still holds
/// (its instant before the accounted start), or `owed_line_full`: the journal does not
/// tell how the core merges what is owed, so those two are bounds.
fn backfill_wrong(
    spec: Option<&Spec>,
    range: (i64, i64, i64),
    answer: &Answer,
    lines: &Lines,
) -> Option<String> {
    let (from, to, accounted) = range;
    // (From `i64::MIN`, the earliest instant: no due time is ever that instant.)
    let count = |cap: u64| spec.map(|s| count_due(s, from.saturating_sub(1), to, cap));
    let some_not_too_many = || count(MAX_BACKFILL).is_none_or(|n| (1..=MAX_BACKFILL).contains(&n));
    let ok = match &answer.result {
        Ok(_) => lines
            .backfill
            .is_some_and(|n| (1..=MAX_BACKFILL).contains(&n)),
        Err(Refusal::NoDueTimes { from: f, to: t }) => {
            (f.as_millis(), t.as_millis()) == (from, to) && count(0).is_none_or(|n| n == 0)
        }
        Err(Refusal::TooManyDueTimes { count: c, max }) => {
            let exact = matches!(spec, Some(Spec::Every { .. } | Spec::At { .. }));
            let n = count(MAX_BACKFILL);
            *max == MAX_BACKFILL
                && *c > MAX_BACKFILL
                && n.is_none_or(|n| if exact { n == *c } else { n > MAX_BACKFILL })
        }
        Err(Refusal::AlreadyAccounted { from: Some(h) }) => {
            h.as_millis() < accounted && h.as_millis() < to && some_not_too_many()
        }
        Err(Refusal::OwedLineFull { .. }) => some_not_too_many(),
        Err(_) => false,
    };
    (!ok).then(|| {
        let n = count(MAX_BACKFILL);
        format!(
            "{} for {}..{} (accounted from {}), which holds {n:?} due times",
            answer_text(&answer.result),
            ts(from),
            ts(to),
            ts(accounted)
        )
    })
}

/// Whether a command that needs room for `need` more segments in the job's owed line
/// (`Checker::room_needed`) was answered as that room decides: refused
/// `owed_line_full` exactly when even the most merging leaves no room (`Room::least`), and
/// only when the line may need that many (`Room::most`). The refusals checked before it
/// are held by `backfill_wrong` and the definition's rules.
fn room_wrong(room: Option<(Room, usize)>, answer: &Answer) -> Option<String> {
    let (room, need) = room?;
    match &answer.result {
        Ok(_) if room.least + need > MAX_OWED_SEGMENTS => Some(format!(
            "accepted, but the job owes {} runs of due times no merge can join: no room for {need} more in a line of {MAX_OWED_SEGMENTS}",
            room.least
        )),
        Err(Refusal::OwedLineFull { .. }) if room.most + need <= MAX_OWED_SEGMENTS => {
            Some(format!(
                "refused as the owed line is full, but the job owes at most {} runs of due times: room for {need} more in a line of {MAX_OWED_SEGMENTS}",
                room.most
            ))
        }
        _ => None,
    }
}

/// A reply, for a report.
fn answer_text(result: &Result<Option<Shown>, Refusal>) -> String {
    match result {
        Ok(_) => "accepted".to_string(),
        Err(r) => format!("refused ({r})"),
    }
}

/// The job's definition and the one it holds, as the state has them.
fn definitions(state: &State, job: &str) -> Kept {
    let record = state.seq_of_name(job).and_then(|seq| state.record(seq))?;
    Some((record.def().clone(), record.held().map(|h| h.def().clone())))
}
