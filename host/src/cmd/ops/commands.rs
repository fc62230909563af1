//! The commands that change a job: `pause`, `resume`, `run-now`, `confirm`, `approve`,
//! `backfill`, `remove`. Each sends one event in one transaction and prints the core's
//! answer; each has only the flags it uses. In a store of several partitions each goes to
//! the partition its job lives in (`parts::partition_of`).

use std::io::{self, Write};

use duetime::{Actor, Effect, Entry, Event, History, JobName, Now, Refusal, RunId, Timestamp};
use duetime_host::store::parts::partition_of;
use duetime_host::store::{AnyStore, Store};
use duetime_loop::Partition;

use super::{json, open, parse_run, store_failed, view_json, whoami, Shown, StoreArgs};

/// The job and store every command names, and who asks.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The job
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Who is asking (recorded in the journal)
    #[arg(long, default_value_t = whoami())]
    pub by: String,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub target: Target,
    /// Why (recorded in the journal; at most 200 characters)
    #[arg(long, default_value = "")]
    pub note: String,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, clap::Args)]
pub struct RunNowArgs {
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, clap::Args)]
pub struct ConfirmArgs {
    #[command(flatten)]
    pub target: Target,
    /// The digest of the held definition, as `duetime show` prints it
    #[arg(long)]
    pub digest: String,
}

#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub target: Target,
    /// Approve only this run (`r7` or `7`, as `duetime show` names it), not whichever run
    /// of the job is parked now
    #[arg(long, value_name = "RUN", value_parser = parse_run)]
    pub run: Option<RunId>,
}

#[derive(Debug, clap::Args)]
pub struct BackfillArgs {
    #[command(flatten)]
    pub target: Target,
    /// The first instant of the range (RFC 3339, e.g. 2025-03-01T00:00:00Z)
    #[arg(long, value_name = "INSTANT", value_parser = crate::cmd::parse_instant)]
    pub from: Timestamp,
    /// The last instant of the range, inclusive: at or before where the job's ledger
    /// begins (`duetime show` prints it as `ledger from`)
    #[arg(long, value_name = "INSTANT", value_parser = crate::cmd::parse_instant)]
    pub to: Timestamp,
}

/// `duetime pause JOB [--note TEXT]`. A job paused already is no error: it stays paused
/// (exit 0, `already paused`).
pub fn pause(args: &PauseArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let t = &args.target;
    let event = |job| Event::Pause {
        job,
        actor: Actor::new(&t.by),
        note: args.note.clone(),
    };
    let already = Already("already paused; it stays paused");
    run_command("pause", t, event, Some(already), none, out, err)
}

/// `duetime resume JOB`. A job that is not paused is no error (exit 0, `not paused`).
pub fn resume(args: &ResumeArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let t = &args.target;
    let event = |job| Event::Resume {
        job,
        actor: Actor::new(&t.by),
    };
    let already = Already("not paused; nothing to resume");
    run_command("resume", t, event, Some(already), none, out, err)
}

/// `duetime run-now JOB`: a manual run (jobs safe to repeat only).
pub fn run_now(args: &RunNowArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let t = &args.target;
    let event = |job| Event::RunNow {
        job,
        actor: Actor::new(&t.by),
    };
    run_command("run-now", t, event, None, none, out, err)
}

/// `duetime confirm JOB --digest D`: applies the definition held for confirmation.
pub fn confirm(args: &ConfirmArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let t = &args.target;
    let event = |job| Event::Confirm {
        job,
        digest: args.digest.clone(),
        actor: Actor::new(&t.by),
    };
    run_command("confirm", t, event, None, none, out, err)
}

/// `duetime remove JOB`: removes the job from the store (`Event::Remove`): its due times
/// not yet run are recorded `missed (removed)`, its open run is cancelled. A daemon whose
/// jobs file still has the job defines it again when it starts.
pub fn remove(args: &RemoveArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let t = &args.target;
    let event = |job| Event::Remove {
        job,
        actor: Actor::new(&t.by),
    };
    let note = |_: &[Effect]| {
        Some(Note {
            key: "removed",
            value: true.into(),
            text: "removed from the store; take it out of the jobs file too, or the next \
                   daemon to start defines it again"
                .to_string(),
        })
    };
    run_command("remove", t, event, None, note, out, err)
}

/// The answer of a command refused as `already` that is no error (a pause of a paused
/// job): what to print instead.
#[derive(Clone, Copy)]
struct Already(&'static str);

/// What a command adds to its answer when accepted, read from the effects the core wrote:
/// a JSON field (`key`: `value`) and a line of text.
struct Note {
    key: &'static str,
    value: serde_json::Value,
    text: String,
}

fn none(_: &[Effect]) -> Option<Note> {
    None
}

/// Opens the store, sends the event `event` makes of the job's name in one transaction
/// and prints the core's answer. A name no job can have (`JobName::new` refuses it) names
/// no job: refused `not_found`, as the core refuses a name it does not know.
fn run_command(
    kind: &str,
    t: &Target,
    event: impl FnOnce(JobName) -> Event,
    already: Option<Already>,
    note: impl Fn(&[Effect]) -> Option<Note>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let mut store = match open(&t.store, t.json, out, err)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let Ok(job) = JobName::new(&t.job) else {
        let refusal = Refusal::NotFound {
            job: crate::cmd::cut(&t.job),
        };
        return refused(
            kind,
            t,
            json::ErrorKind::NotFound.name(),
            &refusal.to_string(),
            out,
            err,
        );
    };
    let applied = partition_of(&mut store, job.as_str()).and_then(|p| {
        let effects = store.apply_in(p, Now::at(crate::cmd::now()), event(job))?;
        Ok((p, effects))
    });
    let (p, effects) = match applied {
        Ok(e) => e,
        Err(e) => return store_failed(&e, t.json, out, err),
    };
    let reply = effects.iter().find_map(|e| match e {
        Effect::Reply { result, .. } => Some(result.clone()),
        _ => None,
    });
    match reply {
        Some(Ok(view)) => {
            let shown = view.as_deref().map(|v| shown_now(&mut store, p, v));
            let note = note(&effects);
            if t.json {
                let v = view.as_deref().zip(shown).map(|(v, s)| view_json(v, s));
                let mut answer = serde_json::json!({"ok": true, "job": v});
                if let Some(n) = note {
                    answer[n.key] = n.value;
                }
                writeln!(out, "{answer:#}")?;
            } else {
                let status = shown.map_or("", Shown::name);
                writeln!(out, "{kind} {}: done ({status})", t.job)?;
                if let Some(n) = note {
                    writeln!(out, "{}", n.text)?;
                }
            }
            Ok(0)
        }
        Some(Err(Refusal::Already)) if already.is_some() => {
            let text = already.map_or("", |a| a.0);
            if t.json {
                let v = serde_json::json!({"ok": true, "already": true, "note": text});
                writeln!(out, "{v:#}")?;
            } else {
                writeln!(out, "{kind} {}: {text}", t.job)?;
            }
            Ok(0)
        }
        Some(Err(Refusal::WrongDigest { given })) => wrong_digest(&mut store, t, &given, out, err),
        Some(Err(refusal)) => {
            let tag = serde_json::to_value(&refusal)
                .ok()
                .and_then(|v| v.get("refusal").and_then(|t| t.as_str()).map(String::from))
                .unwrap_or_default();
            refused(kind, t, &tag, &refusal.to_string(), out, err)
        }
        None => refused(
            kind,
            t,
            json::ErrorKind::NoAnswer.name(),
            "no answer from the core",
            out,
            err,
        ),
    }
}

/// `confirm` with a digest that is not the held definition's: says so and shows what the
/// held definition changes against the one in force, never the digest to type (a person
/// who could copy it from the refusal would confirm what they never read). Exit 1.
fn wrong_digest(
    store: &mut AnyStore,
    t: &Target,
    given: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let changes = super::held_changes(store, &t.job).unwrap_or_default();
    let mut text = format!(
        "digest {} is not the held definition's",
        crate::cmd::cut(given)
    );
    if given.len() == 16 && given.bytes().all(|b| b.is_ascii_hexdigit()) {
        text.push_str(
            " (16 hex digits is the old FNV-1a form; digests are SHA-256 now, 64 hex digits, \
             and cover the command too)",
        );
    }
    text.push_str(&format!(
        "; read what it changes, then confirm the digest `duetime show {}` prints beside it",
        t.job
    ));
    if t.json {
        let mut v = json::error(json::ErrorKind::WrongDigest, &text);
        v["changes"] = serde_json::to_value(&changes).unwrap_or_default();
        writeln!(out, "{v:#}")?;
    } else {
        writeln!(err, "confirm {}: refused: {text}", t.job)?;
        writeln!(err, "what the held definition changes (in force -> held):")?;
        for line in duetime_host::changes::lines(&changes) {
            writeln!(err, "{line}")?;
        }
    }
    Ok(1)
}

/// The status a command's answer shows, read from the store just written.
fn shown_now(store: &mut AnyStore, p: Partition, view: &duetime::JobView) -> Shown {
    let now = crate::cmd::now();
    match store.state_in(p) {
        Ok(state) => {
            let record = state
                .seq_of_name(view.name.as_str())
                .and_then(|s| state.record(s));
            Shown::of(view, record, now)
        }
        Err(_) => Shown::Core(view.status),
    }
}

/// A refusal, typed by `tag` (the core's refusal name, or the host's): a line on stderr,
/// or the JSON error object with `--json`. Exit 1.
fn refused(
    kind: &str,
    t: &Target,
    tag: &str,
    text: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if t.json {
        writeln!(out, "{:#}", json::refusal(tag, text))?;
    } else {
        writeln!(err, "{kind} {}: refused: {text}", t.job)?;
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
    let (kind, t) = ("approve", &args.target);
    let mut store = match open(&t.store, t.json, out, err)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let state = partition_of(&mut store, &t.job).and_then(|p| store.state_in(p));
    let view = match state {
        Ok(state) => state.job(&t.job, crate::cmd::now()),
        Err(e) => return store_failed(&e, t.json, out, err),
    };
    let Some(view) = view else {
        let refusal = Refusal::NotFound { job: t.job.clone() };
        return refused(
            kind,
            t,
            json::ErrorKind::NotFound.name(),
            &refusal.to_string(),
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
                t,
                json::ErrorKind::NothingParked.name(),
                &text,
                out,
                err,
            );
        }
    };
    let event = |job| Event::ApprovalGiven {
        job,
        run,
        actor: Actor::new(&t.by),
    };
    let code = run_command(kind, t, event, None, none, out, err)?;
    if code == 0 && !t.json {
        writeln!(out, "{run} approved by {}", t.by)?;
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
    let t = &args.target;
    let event = |job| Event::Backfill {
        job,
        from: args.from,
        to: args.to,
        actor: Actor::new(&t.by),
    };
    run_command("backfill", t, event, None, backfill_note, out, err)
}

/// The accepted backfill's `History::Backfill` line: how many due times, the first, the last.
fn backfill_note(effects: &[Effect]) -> Option<Note> {
    effects.iter().find_map(|e| match e {
        Effect::Journal(r) => match &r.entry {
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
