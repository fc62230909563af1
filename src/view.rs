//! Views: pure reads on the state for dashboards, command replies and listings, ranked so
//! the jobs that need a person come first.

use serde::{Deserialize, Serialize};

use crate::event::RunId;
use crate::job::JobName;
use crate::jobs::JobSeq;
use crate::names::snake_names;
use crate::state::{
    JobRecord, LastOutcome, LastRun, OneShotEnd, OpenRun, OwnerLease, Pause, State,
};
use crate::time::{Duration, Timestamp};

/// A job's condition, in the order a person should look at them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Its last run failed, failed out or was lost, or the system paused it.
    Failed,
    /// A run has gone on past the job's stall-after.
    Stalled,
    /// Due times were missed in the last 24 hours.
    Missed,
    /// Paused, by a person or by the system for a reason that is not a failure.
    Paused,
    /// A run is going.
    Running,
    /// Its last run succeeded and nothing needs a person.
    Ok,
    /// Never ran.
    NoRun,
}

snake_names!(Status {
    Failed => "failed",
    Stalled => "stalled",
    Missed => "missed",
    Paused => "paused",
    Running => "running",
    Ok => "ok",
    NoRun => "no_run",
});

/// What a person sees of one job: a snapshot, computed from the state at `now`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobView {
    /// Its name.
    pub name: JobName,
    /// Its title.
    pub title: String,
    /// Its schedule, as one line.
    pub schedule: String,
    /// Its condition.
    pub status: Status,
    /// The next due time (none while paused).
    pub next_due: Option<Timestamp>,
    /// Every due time at or before this instant is settled in the ledger.
    pub settled_through: Timestamp,
    /// Its latest run.
    pub last: Option<LastRun>,
    /// How many due times were missed in the last 24 hours.
    pub missed_24h: u64,
    /// Due times owed (catch-ups and buffered overlaps) not yet started.
    pub owed: u64,
    /// The pause in force.
    pub paused: Option<Pause>,
    /// The run going (or parked).
    pub running: Option<RunId>,
    /// A quota hold in force: nothing of the job starts before this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_until: Option<Timestamp>,
    /// The digest of a definition held for a person's `Confirm` (what to confirm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_confirmation: Option<crate::job::Digest>,
    /// The running run is parked awaiting approval until then (`running` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting_approval: Option<Timestamp>,
    /// A one-shot whose instant is settled: completed by a run, or expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<OneShotEnd>,
}

/// Which jobs a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only jobs in this condition.
    pub status: Option<Status>,
    /// Only jobs whose names start with this.
    pub name_prefix: Option<String>,
}

/// One page of a listing; `next` resumes after its last item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The jobs, most urgent first.
    pub items: Vec<JobView>,
    /// The cursor for the next page (`jobs`'s `after`); `None` on the last page.
    pub next: Option<String>,
}

fn status_of(job: &JobRecord, now: Timestamp, missed_24h: u64) -> Status {
    let act = job.act();
    let last = job.last;
    let system_paused = act
        .and_then(|a| a.paused.as_ref())
        .is_some_and(|p| matches!(p.by, crate::effect::PausedBy::System { .. }));
    let failed = last.is_some_and(|l| {
        matches!(
            l.outcome,
            LastOutcome::Failed
                | LastOutcome::FailedOut
                | LastOutcome::Lost
                | LastOutcome::TimedOut
                | LastOutcome::ApprovalExpired
        )
    });
    if failed || system_paused {
        return Status::Failed;
    }
    // A parked run is waiting for a person, not stuck in a process.
    if let Some(run) = job.run().filter(|r| r.parked().is_none()) {
        if now.saturating_since(run.started) >= job.def.stall_after {
            return Status::Stalled;
        }
    }
    if missed_24h > 0 {
        return Status::Missed;
    }
    if job.paused().is_some() {
        return Status::Paused;
    }
    if job.run().is_some() {
        return Status::Running;
    }
    if last.is_some() {
        Status::Ok
    } else {
        Status::NoRun
    }
}

impl State {
    /// Who owns the scheduler under `single_owner` coordination, as of `now`: the lease
    /// while it has not lapsed (`None` also under shared coordination, where nobody owns).
    /// A lapsed lease still in the state is not an owner: the next tick of any process
    /// takes it.
    pub fn owner(&self, now: Timestamp) -> Option<OwnerLease> {
        self.owner.filter(|o| now <= o.until)
    }

    /// The owner lease as the state holds it, lapsed or not (for hosts that log it and
    /// for checks).
    pub fn owner_lease(&self) -> Option<OwnerLease> {
        self.owner
    }

    /// The view of one job, as of `now` (its status counts missed due times over the day
    /// before it); `None` when no job has that name.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Actor, Config, Event, JobDef, JobName, Now, Schedule, State, Status};
    ///
    /// let mut state = State::new(Config::default());
    /// let t0 = "2025-06-01T00:00:00Z".parse()?;
    /// let def = JobDef::new(JobName::new("report")?, Schedule::cron("0 6 * * *", None)?);
    /// let upsert = Event::Upsert { def: Box::new(def), actor: Actor::new("ana") };
    /// state.step(Now::at(t0), upsert, &mut Vec::new());
    ///
    /// let view = state.job("report", t0).expect("defined");
    /// assert_eq!(view.status, Status::NoRun);
    /// assert_eq!(view.next_due, Some("2025-06-01T06:00:00Z".parse()?));
    /// assert!(state.job("nobody", t0).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn job(&self, name: &str, now: Timestamp) -> Option<JobView> {
        self.view_seq(self.seq_of(name)?, now)
    }

    pub(crate) fn view_seq(&self, seq: JobSeq, now: Timestamp) -> Option<JobView> {
        let job = self.jobs.get(&seq)?;
        let act = job.act();
        let missed_24h = missed_24h(job, now);
        let settled_through = match job.first_unsettled() {
            Some(t) => t.saturating_sub(Duration::from_millis(1)).min(job.frontier),
            None => job.frontier,
        };
        Some(JobView {
            name: job.def.name.clone(),
            title: job.def.title.clone(),
            schedule: job.def.schedule.to_string(),
            status: status_of(job, now, missed_24h),
            next_due: if job.paused().is_some() {
                None
            } else {
                job.next_due
            },
            settled_through,
            last: job.last,
            missed_24h,
            owed: job.owed(),
            paused: act.and_then(|a| a.paused.clone()),
            running: job.run().map(|r| r.id),
            held_until: act.and_then(|a| a.quota_hold).filter(|&until| until > now),
            pending_confirmation: act
                .and_then(crate::state::Activity::held)
                .map(|d| d.digest().clone()),
            awaiting_approval: job.run().and_then(OpenRun::parked),
            ended: job.ended,
        })
    }

    /// Jobs ranked attention first (then by name), `limit` per page. `after` is the `next`
    /// of the previous page; anything unreadable there starts from the top.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Actor, Config, Event, Filter, JobDef, JobName, Now, Schedule, State, Status};
    ///
    /// let mut state = State::new(Config::default());
    /// let t0 = "2025-06-01T00:00:00Z".parse()?;
    /// for name in ["alpha", "beta", "gamma"] {
    ///     let def = JobDef::new(JobName::new(name)?, Schedule::cron("@daily", None)?);
    ///     let upsert = Event::Upsert { def: Box::new(def), actor: Actor::new("ana") };
    ///     state.step(Now::at(t0), upsert, &mut Vec::new());
    /// }
    /// let pause = Event::Pause { job: JobName::new("gamma")?, actor: Actor::new("ana"), note: "disk full".into() };
    /// state.step(Now::at(t0), pause, &mut Vec::new());
    ///
    /// // What needs a person comes first: the paused job, then the others by name.
    /// let page = state.jobs(&Filter::default(), None, 2, t0);
    /// let names: Vec<&str> = page.items.iter().map(|v| v.name.as_str()).collect();
    /// assert_eq!(names, ["gamma", "alpha"]);
    /// assert_eq!(page.items[0].status, Status::Paused);
    /// let rest = state.jobs(&Filter::default(), page.next.as_deref(), 2, t0);
    /// assert_eq!(rest.items.len(), 1);
    /// assert_eq!(rest.next, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn jobs(&self, filter: &Filter, after: Option<&str>, limit: usize, now: Timestamp) -> Page {
        let resume: Option<(Status, String)> = after.and_then(parse_page_key);
        // Ranked by (status, name) alone, then only the page's views are built: a view
        // prints its schedule and copies its texts, and building one per job made a page
        // of 100 cost 10 ms at 10,000 jobs (issue 48). The status still needs every job.
        let mut keys: Vec<(Status, &str, JobSeq)> = self
            .jobs
            .iter()
            .filter(|(_, job)| {
                filter
                    .name_prefix
                    .as_deref()
                    .is_none_or(|p| job.def.name.as_str().starts_with(p))
            })
            .map(|(&seq, job)| {
                (
                    status_of(job, now, missed_24h(job, now)),
                    job.def.name.as_str(),
                    seq,
                )
            })
            .filter(|(status, _, _)| filter.status.is_none_or(|s| s == *status))
            .filter(|(status, name, _)| {
                resume
                    .as_ref()
                    .is_none_or(|(s, n)| (*status, *name) > (*s, n.as_str()))
            })
            .collect();
        let limit = limit.max(1);
        if keys.len() > limit {
            keys.select_nth_unstable(limit);
        }
        let more = keys.len() > limit;
        keys.truncate(limit);
        keys.sort_unstable();
        let next = keys
            .last()
            .filter(|_| more)
            .map(|(status, name, _)| format!("{}:{}", status.name(), name));
        let items = keys
            .iter()
            .filter_map(|&(_, _, seq)| self.view_seq(seq, now))
            .collect();
        Page { items, next }
    }
}

/// How many of the job's due times were missed in the day before `now`.
fn missed_24h(job: &JobRecord, now: Timestamp) -> u64 {
    let day_ago = now.saturating_sub(Duration::from_days(1));
    job.act().map_or(0, |a| {
        a.missed_recent
            .iter()
            .filter(|(h, _)| *h >= day_ago)
            .map(|(_, n)| n)
            .sum()
    })
}

fn parse_page_key(key: &str) -> Option<(Status, String)> {
    let (status, name) = key.split_once(':')?;
    let status = [
        Status::Failed,
        Status::Stalled,
        Status::Missed,
        Status::Paused,
        Status::Running,
        Status::Ok,
        Status::NoRun,
    ]
    .into_iter()
    .find(|s| s.name() == status)?;
    JobName::new(name).ok()?;
    Some((status, name.to_string()))
}
