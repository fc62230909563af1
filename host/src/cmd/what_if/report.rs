//! The report: per job, the ledger grouped into runs of equal fate, a summary, notable
//! history and what is still owed or running at `--until`; as text or JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use chrono_tz::Tz;
use duetime::{
    Duration, Entry, History, JobDef, LedgerEntry, LedgerKind, MissAction, MissCause, RunId,
    Schedule, Timestamp,
};
use duetime_host::jobs_file::name_of;
use duetime_host::views::BaseDueTimes;
use serde_json::{json, Value};

use super::plan::Scenario;
use super::world::{Replay, MAX_EVENTS};

/// How one group of ledger entries ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Ran,
    CaughtUp(MissCause),
    Skipped(MissCause),
    FailedOut,
    Lost,
    ApprovalExpired,
}

impl Fate {
    fn of(kind: &LedgerKind) -> (Fate, Option<RunId>) {
        match *kind {
            LedgerKind::Ran { run, .. } => (Fate::Ran, Some(run)),
            LedgerKind::Missed {
                cause,
                action: MissAction::Skipped,
            } => (Fate::Skipped(cause), None),
            LedgerKind::Missed {
                cause,
                action: MissAction::CaughtUp { run },
            } => (Fate::CaughtUp(cause), Some(run)),
            LedgerKind::FailedOut { run } => (Fate::FailedOut, Some(run)),
            LedgerKind::Lost { run } => (Fate::Lost, Some(run)),
            LedgerKind::ApprovalExpired { run } => (Fate::ApprovalExpired, Some(run)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Fate::Ran => "ran",
            Fate::CaughtUp(_) => "caught_up",
            Fate::Skipped(_) => "skipped",
            Fate::FailedOut => "failed_out",
            Fate::Lost => "lost",
            Fate::ApprovalExpired => "approval_expired",
        }
    }

    fn cause(self) -> Option<MissCause> {
        match self {
            Fate::CaughtUp(c) | Fate::Skipped(c) => Some(c),
            _ => None,
        }
    }
}

fn cause_name(c: MissCause) -> &'static str {
    c.name()
}

/// Consecutive ledger entries (by due time) of one fate.
struct Group {
    from: Timestamp,
    to: Timestamp,
    count: u64,
    fate: Fate,
    runs: Vec<RunId>,
}

/// Consecutive due times of a schedule's base that its calendars left out for one reason:
/// not due, so never in the ledger, and shown beside it.
struct ExcludedRun {
    from: Timestamp,
    to: Timestamp,
    count: u64,
    /// `holidays (Christmas Day)`.
    why: String,
}

/// Base due times looked at for excluded ones in the span (a minutely base over two months;
/// past it the report says it stopped looking).
const MAX_EXCLUDED_LOOKED: usize = 100_000;

/// What the calendars left out of a job's span.
#[derive(Default)]
struct Excluded {
    runs: Vec<ExcludedRun>,
    /// The look stopped at `MAX_EXCLUDED_LOOKED` before the span's end.
    partly: bool,
}

impl Excluded {
    fn count(&self) -> u64 {
        self.runs.iter().map(|r| r.count).sum()
    }
}

/// The base's due times in `(from, until]` that the calendars exclude, in runs of one
/// reason.
fn excluded_runs(schedule: &Schedule, from: Timestamp, until: Timestamp) -> Excluded {
    let Schedule::Calendar(c) = schedule else {
        return Excluded::default();
    };
    let mut runs: Vec<ExcludedRun> = Vec::new();
    // Whether the previous base due time was excluded, so a kept one ends a run.
    let mut open = false;
    let mut walk = BaseDueTimes::new(c, from, until, MAX_EXCLUDED_LOOKED);
    for (d, why) in walk.by_ref() {
        let Some(why) = why else {
            open = false;
            continue;
        };
        match runs.last_mut() {
            Some(r) if open && r.why == why => {
                r.to = d;
                r.count += 1;
            }
            _ => runs.push(ExcludedRun {
                from: d,
                to: d,
                count: 1,
                why,
            }),
        }
        open = true;
    }
    Excluded {
        runs,
        partly: walk.cut_short(),
    }
}

/// One job's part of the report.
struct JobReport {
    def: JobDef,
    ledger: Vec<(Timestamp, LedgerEntry)>,
    groups: Vec<Group>,
    /// What the calendars left out.
    excluded: Excluded,
    notes: Vec<(Timestamp, String)>,
    /// Run → the wall time it started.
    started: BTreeMap<RunId, Timestamp>,
    owed: u64,
    running: Option<RunId>,
    paused: bool,
}

impl JobReport {
    fn zone(&self) -> Option<Tz> {
        match self.def.schedule.base() {
            Schedule::Cron(c) if !c.zone().is_utc() => Some(c.zone().tz()),
            _ => None,
        }
    }

    fn total(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }

    fn count(&self, pick: impl Fn(Fate) -> bool) -> u64 {
        self.groups
            .iter()
            .filter(|g| pick(g.fate))
            .map(|g| g.count)
            .sum()
    }

    /// Counts per cause among the fates `pick` keeps (caught up or skipped).
    fn by_cause(&self, pick: impl Fn(Fate) -> bool) -> BTreeMap<MissCause, u64> {
        let mut m = BTreeMap::new();
        for g in self.groups.iter().filter(|g| pick(g.fate)) {
            if let Some(c) = g.fate.cause() {
                *m.entry(c).or_default() += g.count;
            }
        }
        m
    }
}

pub(super) struct Report<'a> {
    pub(super) file: &'a str,
    pub(super) store: Option<&'a str>,
    pub(super) scenario: &'a Scenario,
    pub(super) replay: &'a Replay,
    pub(super) existed: &'a BTreeSet<String>,
    /// Print years in due times: the span crosses a new year, so month-day is ambiguous.
    pub(super) years: bool,
}

impl Report<'_> {
    /// The store's tick (its partitions share their config), or the fresh state's.
    fn tick(&self) -> duetime::Duration {
        self.replay
            .states
            .first()
            .map_or(duetime::Duration::from_secs(30), |s| s.config().tick)
    }

    fn jobs(&self) -> Vec<JobReport> {
        let mut out = Vec::new();
        let records = self.replay.states.iter().flat_map(|s| s.records());
        for (_, rec) in records {
            let name = rec.def().name.as_str();
            let mut ledger = Vec::new();
            let mut notes = Vec::new();
            let mut started = BTreeMap::new();
            let mut first_defined = !self.existed.contains(name);
            for r in self
                .replay
                .records
                .iter()
                .filter(|r| r.job.as_str() == name)
            {
                match &r.entry {
                    Entry::Ledger(e) => ledger.push((r.at, *e)),
                    Entry::History(h) => {
                        if let History::Started { run, .. } = h {
                            started.insert(*run, r.at);
                        }
                        let notable = match h {
                            History::Defined { .. } if first_defined => {
                                first_defined = false;
                                false
                            }
                            History::Started { .. } | History::ManualQueued { .. } => false,
                            History::Settled { outcome, .. } => !outcome.is_success(),
                            _ => true,
                        };
                        if notable {
                            notes.push((r.at, h.to_string()));
                        }
                    }
                }
            }
            for a in self.replay.alerts.iter().filter(|a| a.job.as_str() == name) {
                notes.push((a.at, format!("ALERT {}", a.kind)));
            }
            notes.sort_by_key(|n| n.0);
            ledger.sort_by_key(|(_, e)| (e.from, e.to));
            let s = self.scenario;
            let excluded = excluded_runs(&rec.def().schedule, s.from, s.until);
            let groups = groups(&ledger, &excluded.runs);
            out.push(JobReport {
                excluded,
                def: rec.def().clone(),
                ledger,
                groups,
                notes,
                started,
                owed: rec.owed(),
                running: rec.run().map(|r| r.id()),
                paused: rec.paused().is_some(),
            });
        }
        out
    }

    fn duration_text(&self, job: &str) -> String {
        let d = self.scenario.duration_of(job);
        if self.scenario.durations.contains_key(job) {
            format!("{d} (--duration)")
        } else {
            format!("{d} (assumed)")
        }
    }

    pub(super) fn text(&self) -> String {
        let mut o = String::new();
        self.scenario_text(&mut o);
        for job in &self.jobs() {
            o.push('\n');
            self.job_text(&mut o, job);
        }
        if !self.replay.notes.is_empty() {
            let _ = writeln!(o, "\nnotes:");
            for n in &self.replay.notes {
                let _ = writeln!(o, "  {n}");
            }
        }
        if let Some(at) = self.replay.stopped_early {
            let _ = writeln!(
                o,
                "\nstopped early at {}: over {MAX_EVENTS} events; shorten the span",
                utc(at, true)
            );
        }
        o
    }

    /// The head of the text report: the span, the start, the scenario, the processes.
    fn scenario_text(&self, o: &mut String) {
        let s = self.scenario;
        let start = match self.store {
            Some(p) => format!("the state of the store {p} (read only)"),
            None => "a fresh state".to_string(),
        };
        let _ = writeln!(o, "duetime what-if {}", self.file);
        let _ = writeln!(
            o,
            "  from {} until {} (UTC), starting from {start}",
            utc(s.from, true),
            utc(s.until, true)
        );
        let tick = self.tick();
        let _ = writeln!(
            o,
            "  one host process ticking every {tick}; every run succeeds after its duration"
        );
        for d in &s.down {
            let _ = writeln!(
                o,
                "  down        {} .. {}  (no process; a new one starts at the end)",
                utc(d.from, true),
                utc(d.to, true)
            );
        }
        for p in &s.pauses {
            let _ = writeln!(
                o,
                "  pause       {} .. {}  {}",
                utc(p.window.from, true),
                utc(p.window.to, true),
                p.job
            );
        }
        for j in &s.jumps {
            let _ = writeln!(
                o,
                "  clock jump  {}  wall clock {}",
                utc(j.at, true),
                signed(j.by_ms)
            );
        }
        let procs: Vec<String> = self
            .replay
            .processes
            .iter()
            .map(|(p, at)| format!("{p} at {}", utc(*at, true)))
            .collect();
        if !procs.is_empty() {
            let _ = writeln!(o, "  processes   {}", procs.join(", "));
        }
    }

    fn job_text(&self, o: &mut String, job: &JobReport) {
        let name = job.def.name.as_str();
        let _ = writeln!(
            o,
            "{name}: {}, missed = {}, runs take {}",
            job.def.schedule,
            name_of(&job.def.missed),
            self.duration_text(name)
        );
        let zone = job.zone();
        let row = |from: Timestamp, to: Timestamp, count: u64, what: String| {
            let due = range(from, to, |t| utc(t, self.years));
            let local = zone.map_or(String::new(), |z| {
                range(from, to, |t| local(t, z, self.years))
            });
            (from, (due, local, count.to_string(), what))
        };
        let mut rows: Vec<(Timestamp, (String, String, String, String))> = job
            .groups
            .iter()
            .map(|g| row(g.from, g.to, g.count, self.fate_text(job, g)))
            .collect();
        rows.extend(job.excluded.runs.iter().map(|r| {
            row(
                r.from,
                r.to,
                r.count,
                format!("excluded, not due: {}", r.why),
            )
        }));
        rows.sort_by_key(|(from, _)| *from);
        let rows: Vec<(String, String, String, String)> =
            rows.into_iter().map(|(_, r)| r).collect();
        let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(9);
        let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
        let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0).max(5);
        if rows.is_empty() {
            let _ = writeln!(o, "  no due time settled in the span");
        } else if zone.is_some() {
            let _ = writeln!(
                o,
                "  {:<w0$}  {:<w1$}  {:>w2$}  what happened",
                "due (UTC)", "local", "count"
            );
        } else {
            let _ = writeln!(o, "  {:<w0$}  {:>w2$}  what happened", "due (UTC)", "count");
        }
        for (due, local, count, what) in &rows {
            if zone.is_some() {
                let pad = w1 - local.chars().count();
                let _ = writeln!(
                    o,
                    "  {due:<w0$}  {local}{}  {count:>w2$}  {what}",
                    " ".repeat(pad)
                );
            } else {
                let _ = writeln!(o, "  {due:<w0$}  {count:>w2$}  {what}");
            }
        }
        let _ = writeln!(o, "  summary: {}", summary(job));
        if job.excluded.partly {
            let _ = writeln!(
                o,
                "  excluded: looked at the first {MAX_EXCLUDED_LOOKED} due times of the base schedule only"
            );
        }
        let mut end = Vec::new();
        if job.owed > 0 {
            end.push(format!("{} due times still owed", job.owed));
        }
        if let Some(r) = job.running {
            end.push(format!("{r} still running"));
        }
        if job.paused {
            end.push("paused".to_string());
        }
        if !end.is_empty() {
            let _ = writeln!(o, "  at --until: {}", end.join(", "));
        }
        for (at, text) in &job.notes {
            let _ = writeln!(o, "  ! {}  {text}", utc(*at, self.years));
        }
    }

    fn fate_text(&self, job: &JobReport, g: &Group) -> String {
        let runs = runs_text(&g.runs);
        let started = g
            .runs
            .first()
            .and_then(|r| job.started.get(r))
            .map(|t| utc(*t, self.years));
        match g.fate {
            Fate::Ran => format!("ran on time ({runs})"),
            Fate::CaughtUp(c) => {
                let at = started.map_or(String::new(), |t| format!(", started {t}"));
                format!("caught up ({}) by {runs}{at}", cause_name(c))
            }
            Fate::Skipped(c) => format!("skipped ({})", cause_name(c)),
            Fate::FailedOut => format!("failed out ({runs})"),
            Fate::Lost => format!("lost ({runs})"),
            Fate::ApprovalExpired => format!("approval expired ({runs})"),
        }
    }

    pub(super) fn json(&self) -> Value {
        let s = self.scenario;
        let jobs: Vec<Value> = self.jobs().iter().map(|j| self.job_json(j)).collect();
        json!({
            "file": self.file,
            "store": self.store,
            "from": s.from.to_string(),
            "until": s.until.to_string(),
            "tick": self.tick().to_string(),
            "scenario": {
                "down": s.down.iter().map(|w| json!({
                    "from": w.from.to_string(), "to": w.to.to_string()
                })).collect::<Vec<_>>(),
                "pause": s.pauses.iter().map(|p| json!({
                    "job": p.job, "from": p.window.from.to_string(), "to": p.window.to.to_string()
                })).collect::<Vec<_>>(),
                "clock_jump": s.jumps.iter().map(|j| json!({
                    "at": j.at.to_string(), "by_ms": j.by_ms
                })).collect::<Vec<_>>(),
            },
            "processes": self.replay.processes.iter().map(|(p, at)| json!({
                "process": p.to_string(), "started": at.to_string()
            })).collect::<Vec<_>>(),
            "jobs": jobs,
            "notes": self.replay.notes,
            "stopped_early": self.replay.stopped_early.map(|t| t.to_string()),
        })
    }

    /// One job of the JSON report.
    fn job_json(&self, j: &JobReport) -> Value {
        let s = self.scenario;
        let name = j.def.name.as_str();
        let causes = |m: BTreeMap<MissCause, u64>| {
            m.into_iter()
                .map(|(c, n)| (cause_name(c).to_string(), json!(n)))
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "name": name,
            "schedule": j.def.schedule.to_string(),
            "zone": j.zone().map(|z| z.name().to_string()),
            "missed": name_of(&j.def.missed),
            "run_duration": s.duration_of(name).to_string(),
            "summary": {
                "due": j.total(),
                "ran_on_time": j.count(|f| f == Fate::Ran),
                "caught_up": causes(j.by_cause(|f| matches!(f, Fate::CaughtUp(_)))),
                "skipped": causes(j.by_cause(|f| matches!(f, Fate::Skipped(_)))),
                "failed_out": j.count(|f| f == Fate::FailedOut),
                "lost": j.count(|f| f == Fate::Lost),
                "excluded": j.excluded.count(),
            },
            "excluded": j.excluded.runs.iter().map(|r| json!({
                "from": r.from.to_string(),
                "to": r.to.to_string(),
                "count": r.count,
                "why": r.why,
            })).collect::<Vec<_>>(),
            "excluded_looked_partly": j.excluded.partly,
            "groups": j.groups.iter().map(|g| json!({
                "from": g.from.to_string(),
                "to": g.to.to_string(),
                "count": g.count,
                "fate": g.fate.name(),
                "cause": g.fate.cause().map(cause_name),
                "runs": g.runs.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "ledger": j.ledger.iter().map(|(at, e)| {
                let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("at".to_string(), json!(at));
                }
                v
            }).collect::<Vec<_>>(),
            "history": j.notes.iter().map(|(at, text)| json!({
                "at": at.to_string(),
                "text": text,
            })).collect::<Vec<_>>(),
            "at_until": {
                "owed": j.owed,
                "running": j.running.map(|r| r.to_string()),
                "paused": j.paused,
            },
        })
    }
}

/// The ledger (sorted by due time) in runs of equal fate, a run broken where excluded due
/// times lie between two entries (so each row of the table is one stretch of time).
fn groups(ledger: &[(Timestamp, LedgerEntry)], excluded: &[ExcludedRun]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (_, e) in ledger {
        let (fate, run) = Fate::of(&e.kind);
        let between = |g: &Group| excluded.iter().any(|r| g.to < r.from && r.from < e.from);
        match groups.last_mut() {
            Some(g) if g.fate == fate && !between(g) => {
                g.to = g.to.max(e.to);
                g.count += e.count;
                g.runs.extend(run);
            }
            _ => groups.push(Group {
                from: e.from,
                to: e.to,
                count: e.count,
                fate,
                runs: run.into_iter().collect(),
            }),
        }
    }
    groups
}

/// The summary line: every fate with its causes.
fn summary(job: &JobReport) -> String {
    let with_causes = |n: u64, what: &str, m: BTreeMap<MissCause, u64>| {
        if m.is_empty() {
            format!("{n} {what}")
        } else {
            let parts: Vec<String> = m
                .iter()
                .map(|(c, k)| format!("{} {k}", cause_name(*c)))
                .collect();
            format!("{n} {what} ({})", parts.join(", "))
        }
    };
    let caught = job.by_cause(|f| matches!(f, Fate::CaughtUp(_)));
    let skipped = job.by_cause(|f| matches!(f, Fate::Skipped(_)));
    let excluded = match job.excluded.count() {
        0 => String::new(),
        n => format!("; {n} more excluded by calendars, not due"),
    };
    format!(
        "{} due: {} ran on time, {}, {}, {} failed out, {} lost{excluded}",
        job.total(),
        job.count(|f| f == Fate::Ran),
        with_causes(
            job.count(|f| matches!(f, Fate::CaughtUp(_))),
            "caught up",
            caught
        ),
        with_causes(
            job.count(|f| matches!(f, Fate::Skipped(_))),
            "skipped",
            skipped
        ),
        job.count(|f| f == Fate::FailedOut),
        job.count(|f| f == Fate::Lost),
    )
}

/// `r5`, or `r5..r9` for a run of runs.
fn runs_text(runs: &[RunId]) -> String {
    match (runs.first(), runs.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => "-".to_string(),
    }
}

/// `A .. B`, or `A` when they are the same instant.
fn range(a: Timestamp, b: Timestamp, f: impl Fn(Timestamp) -> String) -> String {
    if a == b {
        f(a)
    } else {
        format!("{} .. {}", f(a), f(b))
    }
}

/// `2025-03-09 07:00` (seconds only when present); with `year` false, `03-09 07:00`.
pub(super) fn utc(t: Timestamp, year: bool) -> String {
    let Some(c) = t.to_chrono() else {
        return t.to_string();
    };
    c.format(&pattern(t, year, "")).to_string()
}

/// The chrono format of an instant in the report: the year only with `year`, seconds only
/// when there are any, then `tail` (` %Z` for a zone's abbreviation).
fn pattern(t: Timestamp, year: bool, tail: &str) -> String {
    let date = if year { "%Y-%m-%d" } else { "%m-%d" };
    let time = if t.as_millis().rem_euclid(60_000) == 0 {
        "%H:%M"
    } else {
        "%H:%M:%S"
    };
    format!("{date} {time}{tail}")
}

/// The local time in `zone`, with its abbreviation: `03-09 03:00 EDT`.
fn local(t: Timestamp, zone: Tz, year: bool) -> String {
    let Some(c) = t.to_chrono() else {
        return t.to_string();
    };
    c.with_timezone(&zone)
        .format(&pattern(t, year, " %Z"))
        .to_string()
}

/// `+2h`, `-30m`.
fn signed(ms: i64) -> String {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms < 0 {
        format!("-{d}")
    } else {
        format!("+{d}")
    }
}
