//! What people see of the jobs, shared by the commands (`duetime list`, `show`) and the
//! daemon's HTTP page and API, so `GET /api/jobs` is `list --json` by construction rather
//! than by a second copy that could drift: the status shown (`Shown`), relative times,
//! the ranked rows of `list`, and the report `show` prints.

use duetime::{
    Filter, JobRecord, JobView, LastOutcome, PausedBy, Record, RunId, State, Status, SystemPause,
    Timestamp,
};

use crate::changes::Change;
use crate::json;
use crate::store::parts::partition_of;
use crate::store::{Store, StoreError};

/// How a job is shown to people: the core's status, except where it would mislead. A
/// job the system paused is `paused` (still ranked first, as the core's `failed`), a
/// parked run awaits approval rather than runs, a new job held for confirmation has not
/// run for a reason, and a run whose lease lapsed has lost its daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Core(Status),
    Paused,
    AwaitingApproval,
    AwaitingConfirmation,
    /// Its daemon stopped renewing its lease: the next daemon to tick records it lost (or
    /// adopts it, on the same machine).
    Orphaned,
}

impl Shown {
    pub fn of(view: &JobView, record: Option<&JobRecord>, now: Timestamp) -> Shown {
        let open = record.and_then(|r| r.run());
        if view.paused.is_some() {
            return Shown::Paused;
        }
        if record.is_some_and(|r| r.is_unconfirmed()) {
            return Shown::AwaitingConfirmation;
        }
        if view.awaiting_approval.is_some() {
            return Shown::AwaitingApproval;
        }
        if open.is_some_and(|r| r.parked().is_none() && r.lease_until() < now) {
            return Shown::Orphaned;
        }
        Shown::Core(view.status)
    }

    pub fn name(self) -> &'static str {
        match self {
            Shown::Core(s) => s.name(),
            Shown::Paused => "paused",
            Shown::AwaitingApproval => "awaiting_approval",
            Shown::AwaitingConfirmation => "awaiting_confirmation",
            Shown::Orphaned => "orphaned",
        }
    }

    /// Whether the job's next due times will run as things stand.
    pub fn will_run(self) -> bool {
        !matches!(self, Shown::Paused | Shown::AwaitingConfirmation)
    }
}

/// `in 12m`, `3h ago`, `now`: how far `t` is from `now`, in the largest whole unit.
pub fn relative(now: Timestamp, t: Timestamp) -> String {
    let ms = t.as_millis().saturating_sub(now.as_millis());
    let secs = ms.unsigned_abs() / 1000;
    let text = match secs {
        0 => return "now".to_string(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if ms > 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// The job's view with the shown status, as JSON; a paused job's `paused` also says, in
/// words, why, the incident and how to resume (`PauseNote`).
pub fn view_json(view: &JobView, shown: Shown) -> serde_json::Value {
    let mut v = json::view(view);
    v["status"] = shown.name().into();
    if !shown.will_run() {
        v["next_due"] = serde_json::Value::Null;
    }
    if let Some(note) = PauseNote::of(view) {
        v["paused"]["who"] = note.who.into();
        v["paused"]["why"] = note.why.into();
        v["paused"]["incident"] = note.incident.map(|r| r.to_string()).into();
        v["paused"]["resume"] = note.resume.into();
    }
    v
}

/// A paused job explained for people, the same in `list`, `show` and the page: who paused
/// it, why in words (a system pause is a policy, not a fault of the scheduler, and says
/// which), the run that caused it, and the command that resumes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseNote {
    /// `the system` or the person's name.
    pub who: String,
    pub why: String,
    /// The run whose end caused a system pause (the job's latest run, when it ended so).
    pub incident: Option<RunId>,
    /// `duetime resume JOB`.
    pub resume: String,
}

impl PauseNote {
    /// `None` when the job is not paused.
    pub fn of(view: &JobView) -> Option<PauseNote> {
        let pause = view.paused.as_ref()?;
        let last = view.last.as_ref();
        let ended = |o: &[LastOutcome]| last.filter(|l| o.contains(&l.outcome)).map(|l| l.run);
        let (who, why, incident) = match &pause.by {
            PausedBy::Person { actor } => {
                let why = if pause.note.is_empty() {
                    "paused by hand (no note)".to_string()
                } else {
                    format!("paused by hand: {:?}", pause.note)
                };
                (actor.to_string(), why, None)
            }
            PausedBy::System { reason } => {
                let (why, incident) = system_why(*reason, &ended);
                ("the system".to_string(), why, incident)
            }
        };
        Some(PauseNote {
            who,
            why,
            incident,
            resume: format!("duetime resume {}", view.name),
        })
    }
}

/// Why the system paused a job, and the run that made it.
fn system_why(
    reason: SystemPause,
    ended: &dyn Fn(&[LastOutcome]) -> Option<RunId>,
) -> (String, Option<RunId>) {
    match reason {
        SystemPause::RetriesExhausted => {
            let run = ended(&[LastOutcome::FailedOut]);
            let which = run.map_or("a run".to_string(), |r| r.to_string());
            (
                format!(
                    "{which} failed with no retry left (`retries`), so its due time failed out; \
                     a job that fails out is paused rather than left failing unseen"
                ),
                run,
            )
        }
        SystemPause::RunLost => {
            let run = ended(&[LastOutcome::Lost]);
            let which = run.map_or("a run".to_string(), |r| r.to_string());
            (
                format!(
                    "{which} was lost (its daemon stopped renewing its lease, with no result) and \
                     the job is not safe to repeat, so nothing runs it again until a person \
                     has looked"
                ),
                run,
            )
        }
        SystemPause::FailureStreak { failures } => (
            format!("{failures} failed runs in a row (`pause_after_failures`)"),
            ended(&[
                LastOutcome::Failed,
                LastOutcome::TimedOut,
                LastOutcome::FailedOut,
            ]),
        ),
    }
}

/// One row of `duetime list`: the view and how it is shown.
#[derive(Debug, Clone)]
pub struct Row {
    pub view: JobView,
    pub shown: Shown,
}

impl Row {
    /// The next due time that will run (none while paused or unconfirmed).
    pub fn next(&self) -> Option<Timestamp> {
        self.view.next_due.filter(|_| self.shown.will_run())
    }
}

/// Every job's view, ranked by the core (attention first, then by name).
pub fn rows(state: &State, now: Timestamp) -> Vec<Row> {
    let mut views = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = state.jobs(&Filter::default(), after.as_deref(), 500, now);
        views.extend(page.items);
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    views
        .into_iter()
        .map(|view| {
            let record = state
                .seq_of_name(view.name.as_str())
                .and_then(|s| state.record(s));
            let shown = Shown::of(&view, record, now);
            Row { view, shown }
        })
        .collect()
}

/// Every job of every partition, ranked as the core ranks one partition's (attention
/// first, then by name), and the partitions that could not be read, each error naming its
/// partition.
#[derive(Debug, Default)]
pub struct Merged {
    pub rows: Vec<Row>,
    pub refused: Vec<StoreError>,
}

/// The rows of every partition, merged (`list`, the page, `/api/jobs`). A store of one
/// partition fails as a whole, as it always has; in a store of several a partition that
/// cannot be read is set aside in `refused` and the others are shown.
///
/// # Errors
///
/// The store's, for a store of one partition.
pub fn all_rows<S: Store + ?Sized>(store: &mut S, now: Timestamp) -> Result<Merged, StoreError> {
    let mut merged = Merged::default();
    if store.partitions().get() == 1 {
        merged.rows = rows(store.state()?, now);
        return Ok(merged);
    }
    for p in store.partitions().iter() {
        match store.state_in(p) {
            Ok(state) => merged.rows.extend(rows(state, now)),
            Err(e) => merged.refused.push(e),
        }
    }
    merged.rows.sort_by(|a, b| {
        (a.view.status, a.view.name.as_str()).cmp(&(b.view.status, b.view.name.as_str()))
    });
    Ok(merged)
}

/// `duetime list --json` (and `GET /api/jobs`).
pub fn list_json(rows: &[Row], now: Timestamp) -> serde_json::Value {
    let jobs: Vec<_> = rows.iter().map(|r| view_json(&r.view, r.shown)).collect();
    serde_json::json!({"ok": true, "now": now.to_string(), "jobs": jobs})
}

/// What `show` prints (and `GET /api/jobs/NAME` answers), read in one go.
#[derive(Debug, Clone)]
pub struct JobReport {
    pub view: JobView,
    pub shown: Shown,
    /// The next due times that will run (none while paused or unconfirmed).
    pub next: Vec<Timestamp>,
    pub accounted_from: Option<Timestamp>,
    pub unconfirmed: bool,
    /// What a held definition changes (empty when nothing is held).
    pub changes: Vec<Change>,
    pub journal: Vec<Record>,
    pub since: Timestamp,
    pub now: Timestamp,
    /// The command the definition in force runs (`None`: it names none, or it cannot be
    /// read), so "not started: No such file or directory" can be understood.
    pub command: Option<crate::command::Command>,
}

/// The report of job `name` with `days` of journal, `None` when there is no such job.
pub fn job_report<S: Store + ?Sized>(
    store: &mut S,
    name: &str,
    now: Timestamp,
    days: u64,
) -> Result<Option<JobReport>, StoreError> {
    let p = partition_of(store, name)?;
    let state = store.state_in(p)?;
    let Some(view) = state.job(name, now) else {
        return Ok(None);
    };
    let record: Option<&JobRecord> = state.seq_of_name(name).and_then(|seq| state.record(seq));
    let shown = Shown::of(&view, record, now);
    let next: Vec<Timestamp> = match record {
        Some(r) if shown.will_run() => r.def().schedule.iter_after(now).take(5).collect(),
        _ => Vec::new(),
    };
    let accounted_from = record.and_then(|r| r.accounted_from());
    let unconfirmed = record.is_some_and(JobRecord::is_unconfirmed);
    let command = record.and_then(|r| crate::command::Command::of(r.def()).ok());
    let changes = held_changes(state, name).unwrap_or_default();
    let since = now.saturating_sub(duetime::Duration::from_days(days));
    let journal = store.journal_for(name, since)?;
    Ok(Some(JobReport {
        view,
        shown,
        next,
        accounted_from,
        unconfirmed,
        changes,
        journal,
        since,
        now,
        command,
    }))
}

/// `duetime show --json` (and `GET /api/jobs/NAME`).
pub fn show_json(j: &JobReport) -> serde_json::Value {
    let mut job = view_json(&j.view, j.shown);
    job["accounted_from"] = json::time_opt(j.accounted_from);
    job["held_changes"] = serde_json::to_value(&j.changes).unwrap_or_default();
    job["command"] = j
        .command
        .as_ref()
        .map_or(serde_json::Value::Null, |c| c.argv.clone().into());
    serde_json::json!({
        "ok": true,
        "job": job,
        "next": j.next.iter().map(|t| json::time(*t)).collect::<Vec<_>>(),
        "journal": j.journal.iter().map(json::record).collect::<Vec<_>>(),
    })
}

/// What the job's held definition changes against the one in force (`None`: no such job
/// or nothing held); every field of a new job's.
pub fn held_changes(state: &State, job: &str) -> Option<Vec<Change>> {
    let record = state.seq_of_name(job).and_then(|seq| state.record(seq))?;
    let held = record.held()?.def();
    let in_force = (!record.is_unconfirmed()).then_some(record.def());
    Some(crate::changes::changes(in_force, held))
}

/// Base due times looked at for excluded ones between two due times, or over the job
/// page's window (a minutely schedule over a week: 10,080).
pub const MAX_EXCLUDED_LOOKED: usize = 10_000;

/// The base's due times of a calendar schedule in `(after, through]`, each with why a
/// calendar excludes it (`None`: kept), at most `limit` of them. The one walk
/// `duetime check`'s notes, what-if's excluded runs and the job page's crosses read.
pub struct BaseDueTimes<'a> {
    calendar: &'a duetime::CalendarSchedule,
    base: duetime::DueTimes<'a>,
    through: Timestamp,
    limit: usize,
    looked: usize,
    cut_short: bool,
}

impl<'a> BaseDueTimes<'a> {
    pub fn new(
        calendar: &'a duetime::CalendarSchedule,
        after: Timestamp,
        through: Timestamp,
        limit: usize,
    ) -> BaseDueTimes<'a> {
        BaseDueTimes {
            calendar,
            base: calendar.base().iter_after(after),
            through,
            limit,
            looked: 0,
            cut_short: false,
        }
    }

    /// Whether the walk stopped at its limit with base due times left in the
    /// span (what it told is then part of the span's).
    pub fn cut_short(&self) -> bool {
        self.cut_short
    }
}

impl Iterator for BaseDueTimes<'_> {
    /// A base due time, and why it is excluded (`None`: kept).
    type Item = (Timestamp, Option<String>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.cut_short {
            return None;
        }
        let at = self.base.next().filter(|d| *d <= self.through)?;
        if self.looked == self.limit {
            self.cut_short = true;
            return None;
        }
        self.looked += 1;
        Some((at, excluded_why(self.calendar, at)))
    }
}

/// Why the base's due time `d` is excluded (`holidays (New Year's Day), freeze`), or
/// `None` when no calendar excludes it.
pub fn excluded_why(c: &duetime::CalendarSchedule, d: Timestamp) -> Option<String> {
    let why = c.excluded_by(d);
    if why.is_empty() {
        return None;
    }
    let reasons: Vec<String> = why
        .iter()
        .map(|(cal, label)| match label {
            Some(l) => format!("{} ({l})", cal.name()),
            None => cal.name().to_string(),
        })
        .collect();
    Some(reasons.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{Actor, JobName, LastRun, Pause};

    fn paused(by: PausedBy, note: &str, last: Option<(u64, LastOutcome)>) -> JobView {
        let at: Timestamp = "2026-12-05T03:00:00Z".parse().unwrap();
        JobView {
            name: JobName::new("backup").unwrap(),
            title: String::new(),
            schedule: "every 1h".into(),
            status: Status::Failed,
            next_due: None,
            settled_through: at,
            last: last.map(|(run, outcome)| LastRun {
                run: RunId(run),
                at,
                outcome,
            }),
            missed_24h: 0,
            owed: 0,
            paused: Some(Pause {
                by,
                note: note.into(),
                since: at,
            }),
            running: None,
            held_until: None,
            pending_confirmation: None,
            awaiting_approval: None,
            ended: None,
        }
    }

    #[test]
    fn each_pause_says_who_why_the_incident_and_how_to_resume() {
        let system = |reason| PausedBy::System { reason };
        let lost = paused(
            system(SystemPause::RunLost),
            "",
            Some((7, LastOutcome::Lost)),
        );
        let n = PauseNote::of(&lost).unwrap();
        assert_eq!(n.who, "the system");
        assert_eq!(n.incident, Some(RunId(7)));
        assert!(n.why.starts_with("r7 was lost"), "{}", n.why);
        assert!(n.why.contains("not safe to repeat"), "{}", n.why);
        assert_eq!(n.resume, "duetime resume backup");

        let out = paused(
            system(SystemPause::RetriesExhausted),
            "",
            Some((9, LastOutcome::FailedOut)),
        );
        let n = PauseNote::of(&out).unwrap();
        assert!(
            n.why.starts_with("r9 failed with no retry left"),
            "{}",
            n.why
        );

        let streak = paused(
            system(SystemPause::FailureStreak { failures: 3 }),
            "",
            Some((4, LastOutcome::Failed)),
        );
        let n = PauseNote::of(&streak).unwrap();
        assert!(n.why.contains("3 failed runs in a row"), "{}", n.why);
        assert_eq!(n.incident, Some(RunId(4)));

        let person = PausedBy::Person {
            actor: Actor::new("ana"),
        };
        let by_hand = paused(person, "disk swap", Some((4, LastOutcome::Ok)));
        let n = PauseNote::of(&by_hand).unwrap();
        assert_eq!((n.who.as_str(), n.incident), ("ana", None));
        assert!(n.why.contains("disk swap"), "{}", n.why);
        let mut running = by_hand.clone();
        running.paused = None;
        assert!(PauseNote::of(&running).is_none());
    }

    /// The shared walk of a calendar job's base due times: every one in the span, in
    /// order, each with why it is excluded; stopped at its limit, it says so.
    #[test]
    fn base_due_times_tell_each_with_why_and_stop_at_the_limit() {
        let text = r#"
[calendars.holidays]
dates = [{ date = "2026-01-01", label = "New Year's Day" }]

[[job]]
name = "hourly"
cron = "0 * * * *"
exclude = ["holidays"]
command = ["true"]
"#;
        let file = crate::jobs_file::parse_str(text, "jobs.toml").unwrap();
        let duetime::Schedule::Calendar(c) = &file.jobs[0].def.schedule else {
            panic!("not a calendar schedule");
        };
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        let (after, through) = (at("2025-12-31T22:00:00Z"), at("2026-01-01T02:00:00Z"));
        let walk: Vec<_> = BaseDueTimes::new(c, after, through, 100).collect();
        let whys: Vec<(String, Option<&str>)> = walk
            .iter()
            .map(|(d, why)| (d.to_string(), why.as_deref()))
            .collect();
        let holiday = Some("holidays (New Year's Day)");
        assert_eq!(
            whys,
            [
                ("2025-12-31T23:00:00Z".to_string(), None),
                ("2026-01-01T00:00:00Z".to_string(), holiday),
                ("2026-01-01T01:00:00Z".to_string(), holiday),
                ("2026-01-01T02:00:00Z".to_string(), holiday),
            ]
        );
        let mut short = BaseDueTimes::new(c, after, through, 2);
        assert_eq!(short.by_ref().count(), 2);
        assert!(short.cut_short(), "two of four looked at");
        let mut whole = BaseDueTimes::new(c, after, through, 4);
        assert_eq!(whole.by_ref().count(), 4);
        assert!(!whole.cut_short(), "all four looked at, none left");
    }
}
