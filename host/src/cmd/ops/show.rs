//! `duetime show JOB`: its state, the due times that will run next, and the journal of
//! the last days.

use std::io::{self, Write};

use duetime::Effect;
use duetime_host::views::{job_report, show_json, JobReport, PauseNote};

use super::{json, open, paused_text, relative, store_failed, Shown, StoreArgs};

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

pub fn show(args: &ShowArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let mut store = match open(&args.store, args.json, out, err)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let now = crate::cmd::now();
    let job = match job_report(&mut store, &args.job, now, args.days) {
        Ok(Some(job)) => job,
        Ok(None) => {
            let text = format!("no job named {:?} in the store", crate::cmd::cut(&args.job));
            if args.json {
                writeln!(out, "{:#}", json::error(json::ErrorKind::NotFound, &text))?;
            } else {
                writeln!(err, "duetime show: {text}")?;
            }
            return Ok(1);
        }
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    if args.json {
        writeln!(out, "{:#}", show_json(&job))?;
    } else {
        write_text(out, &job)?;
    }
    Ok(0)
}

fn write_text(out: &mut dyn Write, j: &JobReport) -> io::Result<()> {
    let view = &j.view;
    writeln!(out, "{} ({})", view.name.as_str(), view.schedule)?;
    writeln!(out, "  status        {}", j.shown.name())?;
    match &j.command {
        Some(c) => writeln!(out, "  command       {}", command_text(c))?,
        None => writeln!(
            out,
            "  command       none in the definition in force: its runs fail `not started` \
             until `duetime confirm` of a definition that names one"
        )?,
    }
    writeln!(out, "  settled until {}", view.settled_through)?;
    writeln!(out, "  missed (24h)  {}", view.missed_24h)?;
    writeln!(out, "  owed          {}", view.owed)?;
    match (j.accounted_from, j.unconfirmed) {
        (_, true) => writeln!(
            out,
            "  ledger from   not yet: the definition waits for confirmation, and its ledger \
             begins when it is confirmed"
        )?,
        (Some(t), false) => writeln!(
            out,
            "  ledger from   {t} (a backfill must end at or before it)"
        )?,
        (None, false) => writeln!(
            out,
            "  ledger from   unknown (defined before backfills were kept track of; redefine it to backfill)"
        )?,
    }
    write_activity(out, j)?;
    if j.shown.will_run() {
        writeln!(out, "next due times:")?;
        for t in &j.next {
            writeln!(out, "  {t}  ({})", relative(j.now, *t))?;
        }
    } else if j.shown == Shown::Paused {
        writeln!(
            out,
            "next due times: none while paused (`duetime resume {}`; the due times passed \
             meanwhile meet the missed rule)",
            view.name
        )?;
    } else {
        writeln!(
            out,
            "next due times: none until the definition is confirmed"
        )?;
    }
    writeln!(out, "journal since {}:", j.since)?;
    for r in &j.journal {
        let line = Effect::Journal(r.clone()).to_string();
        writeln!(out, "  {}  {line}", r.at)?;
    }
    Ok(())
}

/// The lines about what holds the job now: its run, pause, confirmation, quota hold.
fn write_activity(out: &mut dyn Write, j: &JobReport) -> io::Result<()> {
    let view = &j.view;
    match (view.running, view.awaiting_approval) {
        (Some(r), Some(until)) => writeln!(
            out,
            "  parked        {r} awaits approval until {until} (then it expires): duetime approve {}",
            view.name
        )?,
        (Some(r), None) if j.shown == Shown::Orphaned => writeln!(
            out,
            "  running       {r}, but its daemon stopped renewing its lease: the next daemon \
             to tick records it lost (or adopts it on its machine); `duetime status` shows \
             which daemons are alive"
        )?,
        (Some(r), None) => writeln!(out, "  running       {r}")?,
        _ => {}
    }
    if let Some(p) = &view.paused {
        let note = if p.note.is_empty() {
            String::new()
        } else {
            format!(" ({:?})", p.note)
        };
        writeln!(
            out,
            "  paused        {} since {}{note}",
            paused_text(&p.by),
            p.since
        )?;
        if let Some(why) = PauseNote::of(view) {
            writeln!(out, "  why           {}", why.why)?;
            writeln!(
                out,
                "  resume        {} (the due times passed meanwhile meet its missed rule)",
                why.resume
            )?;
        }
    }
    if let Some(d) = &view.pending_confirmation {
        writeln!(
            out,
            "  held          a {} definition waits; what it changes (in force -> held):",
            if j.unconfirmed { "new" } else { "changed" },
        )?;
        for line in duetime_host::changes::lines(&j.changes) {
            writeln!(out, "      {}", line.trim_start())?;
        }
        writeln!(
            out,
            "                once read: duetime confirm {} --digest {d}",
            view.name
        )?;
    }
    if let Some(until) = &view.held_until {
        writeln!(out, "  quota hold    until {until}")?;
    }
    if let Some(l) = &view.last {
        let outcome = serde_json::to_value(l.outcome)
            .ok()
            .and_then(|o| o.as_str().map(String::from))
            .unwrap_or_default();
        writeln!(
            out,
            "  last run      {} at {} ({}): {outcome}",
            l.run,
            l.at,
            relative(j.now, l.at)
        )?;
    }
    Ok(())
}

/// The command as a person would type it, and where and as whom it runs when the file
/// says so.
fn command_text(c: &duetime_host::command::Command) -> String {
    let mut text = c.argv_text();
    if let Some(user) = &c.user {
        text += &format!(" (as {user})");
    }
    if let Some(dir) = &c.workdir {
        text += &format!(" (in {})", dir.display());
    }
    text
}
