//! `duetime check JOBS.toml`: read a jobs file the way the host will, and show what it will
//! do: each job's schedule and rules in force (defaults included, since a default nobody
//! sees is a default nobody chose) and its next due times. Every error of the file is listed
//! at once, so one run shows everything to fix.

use std::io::{self, Write};
use std::path::PathBuf;

use duetime::{Backoff, JobDef, Schedule, Timestamp};
use duetime_host::jobs_file::{self, name_of, HostJob, JobRef, JobsFileError};

use super::due;
use crate::cmd::parse_instant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The jobs file
    #[arg(value_name = "JOBS.toml")]
    pub file: PathBuf,
    /// How many due times to show per job
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=1_000))]
    pub count: u32,
    /// Show due times after this RFC 3339 instant instead of now
    #[arg(long, value_name = "TIME", value_parser = parse_instant)]
    pub from: Option<Timestamp>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// The tick the daemon will run with (`duetime run --tick`): `every` periods must be
    /// at least this long
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duetime_host::human::parse_tick)]
    pub tick: duetime::Duration,
    /// Check against this store's tick (the store a daemon will run on) instead of --tick
    #[arg(long, value_name = "PATH|URL", conflicts_with = "tick")]
    pub store: Option<String>,
}

/// Exit 0 when the file is valid, 1 when it is not (or cannot be read).
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let file = args.file.display().to_string();
    let from = args.from.unwrap_or_else(super::now);
    let tick = match &args.store {
        None => args.tick,
        Some(location) => match store_tick(location) {
            Ok(t) => t,
            Err(e) => {
                if args.json {
                    writeln!(
                        out,
                        "{:#}",
                        super::json::error(super::json::store_kind(&e), &e.to_string())
                    )?;
                } else {
                    writeln!(err, "duetime check: {e}")?;
                }
                return Ok(1);
            }
        },
    };
    let loaded =
        jobs_file::load_with(&args.file, &duetime::Config::with_tick(tick)).and_then(|jobs| {
            let machine = jobs_file::check_machine(&file, &jobs, false);
            if machine.is_empty() {
                Ok(jobs)
            } else {
                Err(machine)
            }
        });
    match loaded {
        Ok(jobs) => report_valid(args, &file, from, &jobs, out),
        Err(errors) => report_invalid(args, &file, &errors, out, err),
    }
}

/// A valid file: its jobs and their next due times, as text or JSON.
fn report_valid(
    args: &Args,
    file: &str,
    from: Timestamp,
    jobs: &jobs_file::JobsFile,
    out: &mut dyn Write,
) -> io::Result<u8> {
    let count = args.count as usize;
    let about_file = super::lint::file_warnings(&jobs.jobs);
    if args.json {
        let mut v = serde_json::json!({
            "ok": true,
            "file": file,
            "valid": true,
            "from": from.to_string(),
            "jobs": jobs.jobs.iter().map(|j| job_json(j, from, count)).collect::<Vec<_>>(),
            "errors": [],
        });
        // Only when there is one, so the output of a file without is as it always was.
        if !about_file.is_empty() {
            v["warnings"] = serde_json::to_value(&about_file).unwrap_or_default();
        }
        writeln!(out, "{v:#}")?;
        return Ok(0);
    }
    let n = jobs.jobs.len();
    writeln!(
        out,
        "{file}: {n} job{}, valid; due times after {from}",
        if n == 1 { "" } else { "s" }
    )?;
    for w in &about_file {
        writeln!(out, "warning: {}: {}", w.field, w.text)?;
    }
    for job in &jobs.jobs {
        writeln!(out)?;
        write!(out, "{}", job_text(job, from, count))?;
    }
    Ok(0)
}

/// An invalid file: every error, as text on stderr or JSON on stdout; exit 1.
fn report_invalid(
    args: &Args,
    file: &str,
    errors: &[jobs_file::JobsFileError],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    if args.json {
        let v = serde_json::json!({
            "ok": false,
            "kind": super::json::ErrorKind::Invalid.name(),
            "error": format!("{file}: invalid, {} error(s)", errors.len()),
            "file": file,
            "valid": false,
            "jobs": [],
            "errors": errors.iter().map(error_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{v:#}")?;
        return Ok(1);
    }
    jobs_file::write_refusal(err, file, errors)?;
    Ok(1)
}

/// The tick of an existing store (never made here).
fn store_tick(location: &str) -> Result<duetime::Duration, duetime_host::store::StoreError> {
    use duetime_host::store::Store;
    let options = duetime_host::store::Options {
        create: false,
        ..Default::default()
    };
    let mut store = duetime_host::store::open(location, options)?;
    Ok(store.state()?.config().tick)
}

/// The schedule in words; a cron expression as `written` in the file when given (its
/// letters' case kept: `0 0 L * *`, not the core's `0 0 l * *`).
fn schedule_text(s: &Schedule, written: Option<&str>) -> String {
    match s {
        Schedule::Cron(c) => {
            let expr = written.map_or_else(|| c.expr().to_string(), super::next::written);
            format!("cron {expr} in {}", c.zone().name())
        }
        Schedule::Every { period, offset } if offset.is_zero() => {
            format!("every {period} (a UTC grid from the epoch)")
        }
        Schedule::Every { period, offset } => {
            format!("every {period}, offset {offset} (a UTC grid from the epoch)")
        }
        Schedule::At { instant } => format!("at {instant} (once)"),
        Schedule::Calendar(c) => {
            let base = schedule_text(c.base(), written);
            let rest = c.to_string();
            let rest = rest.strip_prefix(&c.base().to_string()).unwrap_or(&rest);
            format!("{base}{rest}")
        }
    }
}

fn backoff_text(b: &Backoff) -> String {
    format!("{} doubling to {}", b.initial, b.max)
}

fn rules_text(d: &JobDef) -> String {
    let overlap = name_of(&d.overlap_policy());
    let overlap = if d.overlap.is_some() {
        overlap.to_string()
    } else {
        format!("{overlap} (default)")
    };
    let retries = if d.retries == 0 {
        "0".to_string()
    } else {
        format!("{} (backoff {})", d.retries, backoff_text(&d.backoff))
    };
    format!(
        "missed {}, overlap {overlap}, retries {retries}, timeout {}, stall_after {}",
        name_of(&d.missed),
        d.timeout,
        d.stall_after
    )
}

fn flags_text(d: &JobDef) -> Option<String> {
    let mut flags = Vec::new();
    if let Some(w) = d.catch_up_window {
        flags.push(format!("catch_up_window {w}"));
    }
    if d.safe_to_repeat {
        flags.push("safe_to_repeat".to_string());
    }
    if d.legal_duty {
        flags.push("legal_duty".to_string());
    }
    if let Some(k) = &d.concurrency_key {
        flags.push(format!("concurrency_key {k:?}"));
    }
    (!flags.is_empty()).then(|| flags.join(", "))
}

/// The jobs a job runs after, and what that means for its due times (`None`: it waits for
/// no job).
fn after_text(d: &JobDef) -> Option<String> {
    let names: Vec<&str> = d.after.iter().map(|n| n.as_str()).collect();
    let who = match names[..] {
        [] => return None,
        [one] => one.to_string(),
        _ => "all of them".to_string(),
    };
    Some(format!(
        "runs after {}: each due time starts once {who} settled it ok, else is skipped \
         (cause upstream)",
        names.join(", ")
    ))
}

fn job_text(job: &HostJob, from: Timestamp, count: usize) -> String {
    let d = &job.def;
    let mut s = String::new();
    if d.title.is_empty() {
        s.push_str(&format!("{}\n", d.name));
    } else {
        s.push_str(&format!("{}  {:?}\n", d.name, d.title));
    }
    let mut row = |k: &str, v: &str| s.push_str(&format!("  {k:<9} {v}\n"));
    row(
        "schedule",
        &schedule_text(&d.schedule, job.cron_text.as_deref()),
    );
    if let Some(after) = after_text(d) {
        row("after", &after);
    }
    if let Schedule::Cron(c) = &d.schedule {
        row(
            "dst",
            &due::policy_text(c, "set in the file; a part left out keeps cron's default"),
        );
    }
    row("rules", &rules_text(d));
    if let Some(flags) = flags_text(d) {
        row("flags", &flags);
    }
    let c = &job.command;
    row("command", &c.argv_text());
    if let Some(w) = &c.workdir {
        row("workdir", &w.display().to_string());
    }
    if !c.env.is_empty() {
        row("env", &c.env_text());
    }
    if let Some(f) = &c.env_file {
        row(
            "env_file",
            &format!("{} (read when each run starts)", f.display()),
        );
    }
    if c.user.is_some() || c.group.is_some() {
        let user = c.user.as_deref().unwrap_or("the daemon's user");
        let group = c.group.as_deref().unwrap_or("the user's primary group");
        row("runs as", &format!("user {user}, group {group}"));
    }
    if count > 0 {
        let dues = due::upcoming(&d.schedule, from, count);
        if dues.is_empty() {
            row("next", "none: no due time after that");
        } else {
            let mut table = String::new();
            due::write_table(&mut table, &dues, "", false);
            for (i, line) in table.lines().enumerate() {
                row(if i == 0 { "next" } else { "" }, line);
            }
        }
    }
    for w in super::lint::warnings(job, from) {
        row("warning", &format!("{}: {}", w.field, w.text));
    }
    // Rows of an empty key and an empty value leave trailing spaces; trim every line.
    s.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

fn job_json(job: &HostJob, from: Timestamp, count: usize) -> serde_json::Value {
    let d = &job.def;
    let dst = match &d.schedule {
        Schedule::Cron(c) => serde_json::json!({
            "gap": name_of(&c.policy().gap),
            "fold": name_of(&c.policy().fold),
            "explicit": c.explicit_policy().is_some(),
        }),
        _ => serde_json::Value::Null,
    };
    serde_json::json!({
        "name": d.name.as_str(),
        "schedule": schedule_text(&d.schedule, job.cron_text.as_deref()),
        "dst": dst,
        "overlap": name_of(&d.overlap_policy()),
        "def": def_json(d),
        "command": command_json(&job.command),
        "next": due::upcoming(&d.schedule, from, count).iter().map(due::to_json).collect::<Vec<_>>(),
        "warnings": super::lint::warnings(job, from),
    })
}

/// The core's serialized definition without its payload: the payload is the command,
/// shown (with secrets hidden) as `command`.
fn def_json(d: &duetime::JobDef) -> serde_json::Value {
    let mut v = serde_json::to_value(d).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.remove("payload");
    }
    v
}

/// The command as JSON, a secret's value as `***`.
fn command_json(c: &duetime_host::command::Command) -> serde_json::Value {
    let mut v = serde_json::to_value(c).unwrap_or_default();
    if let Some(env) = v.get_mut("env").and_then(|e| e.as_object_mut()) {
        for (k, value) in env.iter_mut() {
            if duetime_host::secret::is_secret_name(k) {
                *value = duetime_host::secret::HIDDEN.into();
            }
        }
    }
    v
}

fn error_json(e: &JobsFileError) -> serde_json::Value {
    let job = match e.job() {
        Some(JobRef::Named(n)) => serde_json::json!(n),
        Some(JobRef::Index(i)) => serde_json::json!(i),
        None => serde_json::Value::Null,
    };
    serde_json::json!({
        "message": e.to_string(),
        "line": e.line(),
        "job": job,
        "field": e.field().map(ToString::to_string),
    })
}
