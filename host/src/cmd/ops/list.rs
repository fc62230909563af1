//! `duetime list`: every job, attention first, with when it runs next and when it last
//! ran, absolute and relative (`in 12m`, `3h ago`), like `systemctl list-timers`. The jobs
//! of every partition, merged; a partition that cannot be read is named on stderr (its
//! jobs left out, exit 1) and the others are listed.

use std::io::{self, Write};

use duetime::{Coordination, Timestamp};
use duetime_host::store::{Store, StoreError};
use duetime_host::views::{all_rows, list_json, PauseNote, Row};

use super::{open, relative, store_failed, StoreArgs};

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn list(args: &ListArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let mut store = match open(&args.store, args.json, out, err)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let now = crate::cmd::now();
    let merged = match all_rows(&mut store, now) {
        Ok(m) => m,
        Err(e) => return store_failed(&e, args.json, out, err),
    };
    let code = u8::from(!merged.refused.is_empty());
    let rows = merged.rows;
    if args.json {
        let mut v = list_json(&rows, now);
        // Only when a partition is refused, so a store of one lists as it always has.
        if code != 0 {
            v["refused"] = merged.refused.iter().map(refused_json).collect();
        }
        writeln!(out, "{v:#}")?;
        return Ok(code);
    }
    for e in &merged.refused {
        writeln!(err, "duetime list: {e}; its jobs are not listed")?;
    }
    write_table(out, &rows, now)?;
    write_pauses(out, &rows)?;
    let state = match store.state() {
        Ok(s) => s,
        Err(_) => return Ok(code),
    };
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
    Ok(code)
}

/// A partition `list` could not read: `{"partition": "p7", "kind", "error"}`.
fn refused_json(e: &StoreError) -> serde_json::Value {
    let (partition, inner) = match e {
        StoreError::InPartition { partition, error } => (Some(partition.to_string()), &**error),
        other => (None, other),
    };
    serde_json::json!({
        "partition": partition,
        "kind": inner.kind().name(),
        "error": inner.to_string(),
    })
}

/// Under the table, a line for each paused job: who paused it, why, how to resume. A job
/// the system paused is the one a person most needs to read about, and `paused` alone in
/// a column does not say it was not a person's doing.
fn write_pauses(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        if let Some(p) = PauseNote::of(&r.view) {
            writeln!(
                out,
                "{} paused by {}: {}; resume: {}",
                r.view.name, p.who, p.why, p.resume
            )?;
        }
    }
    Ok(())
}

/// The cells of one row, in column order.
fn cells(r: &Row, now: Timestamp) -> [String; 9] {
    let v = &r.view;
    let next = r.next();
    let (last_at, last_ago, outcome) = match &v.last {
        Some(l) => (
            l.at.to_string(),
            relative(now, l.at),
            serde_json::to_value(l.outcome)
                .ok()
                .and_then(|o| o.as_str().map(String::from))
                .unwrap_or_default(),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    [
        v.name.to_string(),
        r.shown.name().to_string(),
        next.map_or("-".into(), |t| t.to_string()),
        next.map_or("-".into(), |t| relative(now, t)),
        last_at,
        last_ago,
        outcome,
        format!("{}/{}", v.missed_24h, v.owed),
        v.schedule.clone(),
    ]
}

fn write_table(out: &mut dyn Write, rows: &[Row], now: Timestamp) -> io::Result<()> {
    let head = [
        "job",
        "status",
        "next",
        "left",
        "last",
        "passed",
        "outcome",
        "missed/owed",
        "schedule",
    ];
    let body: Vec<[String; 9]> = rows.iter().map(|r| cells(r, now)).collect();
    let mut width = head.map(str::len);
    for row in &body {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 9]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s
    };
    writeln!(out, "{}", line(head))?;
    for row in &body {
        let cells: [&str; 9] = std::array::from_fn(|i| row[i].as_str());
        writeln!(out, "{}", line(cells))?;
    }
    Ok(())
}
