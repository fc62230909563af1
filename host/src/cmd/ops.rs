//! People's commands on the store: `list`, `show`, `pause`, `resume`, `run-now`, `confirm`,
//! `approve`, `backfill`. Each reads or applies its event in one transaction, so they work whether or
//! not a daemon runs.

use std::io::{self, Write};

use duetime::{
    Actor, Coordination, Effect, Entry, Event, Filter, History, JobView, Now, Refusal, RunId,
    Schedule, Timestamp,
};
use duetime_host::store::{AnyStore, Store};

use super::StoreArgs;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The job
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// How many days of the journal to show
    #[arg(long, default_value_t = 3)]
    pub days: u64,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The job
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Who is asking (recorded in the journal)
    #[arg(long, default_value_t = whoami())]
    pub by: String,
    /// Why (pause only)
    #[arg(long, default_value = "")]
    pub note: String,
    /// The digest of the held definition, as `duetime show` prints it (confirm only)
    #[arg(long, default_value = "")]
    pub digest: String,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The job whose parked run to approve
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Approve only this run (`r7` or `7`, as `duetime show` names it), not whichever run
    /// of the job is parked now
    #[arg(long, value_name = "RUN", value_parser = parse_run)]
    pub run: Option<RunId>,
    /// Who approves (recorded in the journal)
    #[arg(long, default_value_t = whoami())]
    pub by: String,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct BackfillArgs {
    /// The job whose past due times to run
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The first instant of the range (RFC 3339, e.g. 2025-03-01T00:00:00Z)
    #[arg(long, value_name = "INSTANT", value_parser = super::parse_instant)]
    pub from: Timestamp,
    /// The last instant of the range, inclusive: at or before where the job's ledger
    /// begins (`duetime show` prints it as `ledger from`)
    #[arg(long, value_name = "INSTANT", value_parser = super::parse_instant)]
    pub to: Timestamp,
    /// Who asks (recorded in the journal)
    #[arg(long, default_value_t = whoami())]
    pub by: String,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

fn parse_run(text: &str) -> Result<RunId, String> {
    let digits = text.strip_prefix('r').unwrap_or(text);
    digits
        .parse::<u64>()
        .map(RunId)
        .map_err(|_| format!("{text:?} is not a run id; accepted: r7 or 7"))
}

fn whoami() -> String {
    std::env::var("USER").unwrap_or_else(|_| "someone".into())
}

fn open(args: &StoreArgs, err: &mut dyn Write) -> io::Result<Option<AnyStore>> {
    match args.open_existing() {
        Ok(s) => Ok(Some(s)),
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            Ok(None)
        }
    }
}

fn ts(t: Option<Timestamp>) -> String {
    t.map_or("-".into(), |t| t.to_string())
}

fn view_json(v: &JobView) -> serde_json::Value {
    serde_json::json!({
        "name": v.name.as_str(),
        "status": v.status.name(),
        "schedule": v.schedule,
        "next_due": v.next_due.map(|t| t.to_string()),
        "settled_through": v.settled_through.to_string(),
        "last": v.last.as_ref().map(|l| serde_json::json!({
            "run": l.run.to_string(), "at": l.at.to_string(), "outcome": format!("{:?}", l.outcome),
        })),
        "missed_24h": v.missed_24h,
        "owed": v.owed,
        "paused": v.paused.as_ref().map(|p| format!("{p:?}")),
        "running": v.running.map(|r| r.to_string()),
        "awaiting_approval": v.awaiting_approval.map(|t| t.to_string()),
        "held_until": v.held_until.map(|t| t.to_string()),
        "pending_confirmation": v.pending_confirmation,
    })
}

/// `duetime list`: every job, attention first (failed, stalled, missed, paused, running,
/// ok, never ran).
pub fn list(args: &ListArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let Some(mut store) = open(&args.store, err)? else {
        return Ok(1);
    };
    let now = super::now();
    let state = match store.state() {
        Ok(s) => s,
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            return Ok(1);
        }
    };
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
    if args.json {
        let v: Vec<_> = views.iter().map(view_json).collect();
        writeln!(out, "{:#}", serde_json::Value::Array(v))?;
        return Ok(0);
    }
    let width = views
        .iter()
        .map(|v| v.name.as_str().len())
        .max()
        .unwrap_or(3)
        .max(3);
    writeln!(
        out,
        "{:<width$}  {:<8}  {:<24}  {:<24}  {:>6}  {:>4}  schedule",
        "job", "status", "next due", "last", "missed", "owed"
    )?;
    for v in &views {
        let last = v
            .last
            .as_ref()
            .map_or("-".into(), |l| format!("{:?} {}", l.outcome, l.at));
        writeln!(
            out,
            "{:<width$}  {:<8}  {:<24}  {:<24}  {:>6}  {:>4}  {}",
            v.name.as_str(),
            v.status.name(),
            ts(v.next_due),
            last,
            v.missed_24h,
            v.owed,
            v.schedule
        )?;
    }
    if state.config().coordination == Coordination::SingleOwner {
        match state.owner(now) {
            Some(o) => writeln!(
                out,
                "single_owner: {} decides ({}, lease until {})",
                o.holder, o.fence, o.until
            )?,
            None => writeln!(
                out,
                "single_owner: no owner now; the next daemon to tick takes the lease"
            )?,
        }
    }
    Ok(0)
}

/// `duetime show JOB`: its view, its next due times, and the journal of the last days.
pub fn show(args: &ShowArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let Some(mut store) = open(&args.store, err)? else {
        return Ok(1);
    };
    let now = super::now();
    let (view, schedule, accounted_from) = match store.state() {
        Ok(state) => {
            let view = state.job(&args.job, now);
            let record = state
                .seq_of_name(&args.job)
                .and_then(|seq| state.record(seq));
            let schedule: Option<Schedule> = record.map(|r| r.def.schedule.clone());
            (view, schedule, record.and_then(|r| r.accounted_from))
        }
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            return Ok(1);
        }
    };
    let Some(view) = view else {
        writeln!(
            err,
            "duetime show: no job named {:?} in the store",
            args.job
        )?;
        return Ok(1);
    };
    let next: Vec<Timestamp> = schedule
        .map(|s| s.iter_after(now).take(5).collect())
        .unwrap_or_default();
    let since = now.saturating_sub(duetime::Duration::from_days(args.days));
    let journal = match store.journal_for(&args.job, since) {
        Ok(j) => j,
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            return Ok(1);
        }
    };
    if args.json {
        let mut job = view_json(&view);
        job["accounted_from"] = serde_json::json!(accounted_from.map(|t| t.to_string()));
        let v = serde_json::json!({
            "job": job,
            "next": next.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            "journal": journal,
        });
        writeln!(out, "{v:#}")?;
        return Ok(0);
    }
    writeln!(out, "{} ({})", view.name.as_str(), view.schedule)?;
    writeln!(out, "  status        {}", view.status.name())?;
    writeln!(out, "  settled until {}", view.settled_through)?;
    writeln!(out, "  missed (24h)  {}", view.missed_24h)?;
    writeln!(out, "  owed          {}", view.owed)?;
    match accounted_from {
        Some(t) => writeln!(
            out,
            "  ledger from   {t} (a backfill must end at or before it)"
        )?,
        None => writeln!(
            out,
            "  ledger from   unknown (defined before backfills were kept track of; redefine it to backfill)"
        )?,
    }
    match (view.running, view.awaiting_approval) {
        (Some(r), Some(until)) => writeln!(
            out,
            "  parked        {r} awaits approval until {until} (then it expires): duetime approve {}",
            view.name
        )?,
        (Some(r), None) => writeln!(out, "  running       {r}")?,
        _ => {}
    }
    if let Some(p) = &view.paused {
        writeln!(out, "  paused        {p:?}")?;
    }
    if let Some(d) = &view.pending_confirmation {
        writeln!(
            out,
            "  held          a changed definition waits: duetime confirm {} --digest {d}",
            view.name
        )?;
    }
    if let Some(until) = &view.held_until {
        writeln!(out, "  quota hold    until {until}")?;
    }
    if let Some(l) = &view.last {
        writeln!(
            out,
            "  last run      {} at {}: {:?}",
            l.run, l.at, l.outcome
        )?;
    }
    writeln!(out, "next due times:")?;
    for t in &next {
        writeln!(out, "  {t}")?;
    }
    writeln!(out, "journal since {since}:")?;
    for r in &journal {
        let line = Effect::Record(r.clone()).to_string();
        writeln!(out, "  {}  {line}", r.at)?;
    }
    Ok(0)
}

/// The command events: pause, resume, run-now, confirm. Exit 0 when accepted, 1 when refused.
pub fn command(
    kind: &str,
    args: &JobArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let Some(mut store) = open(&args.store, err)? else {
        return Ok(1);
    };
    let actor = Actor::new(&args.by);
    let job = args.job.clone();
    let event = match kind {
        "pause" => Event::Pause {
            job,
            actor,
            note: args.note.clone(),
        },
        "resume" => Event::Resume { job, actor },
        "confirm" => Event::Confirm {
            job,
            digest: args.digest.clone(),
            actor,
        },
        _ => Event::RunNow { job, actor },
    };
    send(&mut store, kind, &args.job, event, args.json, out, err)
}

/// Applies one command event in one transaction and prints the core's reply. Exit 0 when
/// accepted, 1 when refused.
fn send(
    store: &mut AnyStore,
    kind: &str,
    job: &str,
    event: Event,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    send_noting(store, kind, job, event, json, out, err, |_| None)
}

/// What a command adds to its answer when accepted, read from the effects the core wrote:
/// a JSON field (`key`: `value`) and a line of text.
struct Note {
    key: &'static str,
    value: serde_json::Value,
    text: String,
}

/// `send`, adding what `note` reads from the accepted event's effects to the answer.
#[allow(clippy::too_many_arguments)]
fn send_noting(
    store: &mut AnyStore,
    kind: &str,
    job: &str,
    event: Event,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
    note: impl Fn(&[Effect]) -> Option<Note>,
) -> io::Result<u8> {
    let effects = match store.apply(Now::at(super::now()), event) {
        Ok(e) => e,
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            return Ok(1);
        }
    };
    let reply = effects.iter().find_map(|e| match e {
        Effect::Reply { result, .. } => Some(result.clone()),
        _ => None,
    });
    match reply {
        Some(Ok(view)) => {
            let note = note(&effects);
            if json {
                let v = view.as_deref().map(view_json);
                let mut answer = serde_json::json!({"ok": true, "job": v});
                if let Some(n) = note {
                    answer[n.key] = n.value;
                }
                writeln!(out, "{answer:#}")?;
            } else {
                let status = view.as_deref().map_or("", |v| v.status.name());
                writeln!(out, "{kind} {job}: done ({status})")?;
                if let Some(n) = note {
                    writeln!(out, "{}", n.text)?;
                }
            }
            Ok(0)
        }
        Some(Err(refusal)) => {
            let tag = serde_json::to_value(&refusal)
                .ok()
                .and_then(|v| v.get("refusal").and_then(|t| t.as_str()).map(String::from))
                .unwrap_or_default();
            refused(kind, job, &tag, &refusal.to_string(), json, out, err)
        }
        None => {
            writeln!(err, "{kind} {job}: no answer from the core")?;
            Ok(1)
        }
    }
}

/// A refusal, typed by `tag` (the core's refusal name, or the host's): a line on stderr,
/// or `{"ok": false, "refusal": TEXT, "kind": TAG}` with `--json`. Exit 1.
fn refused(
    kind: &str,
    job: &str,
    tag: &str,
    text: &str,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if json {
        writeln!(
            out,
            "{:#}",
            serde_json::json!({"ok": false, "refusal": text, "kind": tag})
        )?;
    } else {
        writeln!(err, "{kind} {job}: refused: {text}")?;
    }
    Ok(1)
}

/// `duetime approve JOB [--run rN]`: settles the job's parked run done
/// (`Event::ApprovalGiven`). Without `--run` it approves the run parked now, found in the
/// store's current state; the core checks again in the transaction, so a run that was
/// approved, finished or expired meanwhile is refused (`not_awaiting_approval`), never
/// approved twice. Refused: `not_found` (no such job), `nothing_parked` (the job has no
/// parked run; only without `--run`), `not_awaiting_approval` (`--run` names another run).
pub fn approve(args: &ApproveArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let kind = "approve";
    let Some(mut store) = open(&args.store, err)? else {
        return Ok(1);
    };
    let now = super::now();
    let view = match store.state() {
        Ok(state) => state.job(&args.job, now),
        Err(e) => {
            writeln!(err, "duetime: {e}")?;
            return Ok(1);
        }
    };
    let Some(view) = view else {
        let refusal = Refusal::NotFound {
            job: args.job.clone(),
        };
        return refused(
            kind,
            &args.job,
            "not_found",
            &refusal.to_string(),
            args.json,
            out,
            err,
        );
    };
    let run = match (args.run, view.running, view.awaiting_approval) {
        (Some(run), _, _) => run,
        (None, Some(run), Some(_)) => run,
        (None, running, _) => {
            let now_text = match running {
                Some(r) => format!("{r} is running, not parked"),
                None => "no run is open".to_string(),
            };
            let text = format!(
                "nothing of this job awaits approval ({now_text}); a run parks when its \
                 command writes $DUETIME_APPROVAL and exits 0"
            );
            return refused(
                kind,
                &args.job,
                "nothing_parked",
                &text,
                args.json,
                out,
                err,
            );
        }
    };
    let event = Event::ApprovalGiven {
        job: args.job.clone(),
        run,
        actor: Actor::new(&args.by),
    };
    let code = send(&mut store, kind, &args.job, event, args.json, out, err)?;
    if code == 0 && !args.json {
        writeln!(out, "{run} approved by {}", args.by)?;
    }
    Ok(code)
}

/// `duetime backfill JOB --from A --to B`: asks for the job's due times in [A, B], before
/// where its ledger begins, to run (`Event::Backfill`), in one transaction. Accepted, they
/// are owed with cause `backfill` and a running daemon starts them as catch-ups at its next
/// tick. Refused with the core's words and kind: `not_found`, `empty_range`,
/// `already_accounted` (it names the instant the range must end by), `no_due_times`,
/// `too_many_due_times`, `owed_line_full`.
pub fn backfill(args: &BackfillArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let kind = "backfill";
    let Some(mut store) = open(&args.store, err)? else {
        return Ok(1);
    };
    let event = Event::Backfill {
        job: args.job.clone(),
        from: args.from,
        to: args.to,
        actor: Actor::new(&args.by),
    };
    send_noting(
        &mut store,
        kind,
        &args.job,
        event,
        args.json,
        out,
        err,
        backfill_note,
    )
}

/// The accepted backfill's `History::Backfill` line: how many due times, the first, the last.
fn backfill_note(effects: &[Effect]) -> Option<Note> {
    effects.iter().find_map(|e| match e {
        Effect::Record(r) => match &r.entry {
            Entry::History(History::Backfill {
                from, to, count, ..
            }) => Some(Note {
                key: "backfill",
                value: serde_json::json!({
                    "count": count,
                    "first": from.to_string(),
                    "last": to.to_string(),
                }),
                text: format!(
                    "{count} due time(s) accepted, the first {from}, the last {to}; \
                     a running daemon starts them as catch-ups at its next tick"
                ),
            }),
            _ => None,
        },
        _ => None,
    })
}
