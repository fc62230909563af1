//! The read-only pages, server-rendered HTML and SVG with no script: `list` (every job,
//! ranked as `duetime list` ranks them) and `job` (one job's timeline). Every piece of text
//! that comes from a definition or the journal goes through `esc`. Times are shown in this
//! machine's local time zone beside how far they are from now; `data-*` attributes carry
//! the exact instants (RFC 3339, UTC) for machines and tests.

use std::fmt::Write;

use duetime::Timestamp;

use super::timeline::{Bar, FailedOutput, Mark, Timeline, Window};
use crate::views::{relative, PauseNote, Row};

/// Text as HTML content or a quoted attribute value.
pub fn esc(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c => s.push(c),
        }
    }
    s
}

/// `t` in this machine's local time.
pub fn local(t: Timestamp) -> String {
    t.to_chrono().map_or_else(
        || t.to_string(),
        |c| {
            c.with_timezone(&chrono::Local)
                .format("%a %Y-%m-%d %H:%M:%S %:z")
                .to_string()
        },
    )
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #ddd;vertical-align:top}\
th{background:#f4f4f4}.title{color:#666;font-size:12px}.rel{color:#666}\
.status{padding:1px 6px;border-radius:3px;background:#e8e8e8}\
.st-failed,.st-stalled,.st-orphaned{background:#f8c9c4}.st-missed{background:#fbe3b0}\
.st-paused,.st-awaiting_approval,.st-awaiting_confirmation{background:#d9d2f0}\
.st-ok{background:#cdebd0}.st-running{background:#cfe3f7}\
a{color:#0b57d0}svg{border:1px solid #ddd;background:#fff}.legend span{margin-right:12px}\
.why{color:#444;font-size:12px;max-width:40em}.paused{background:#efeaf9;border-left:4px solid #8c7bc4;padding:6px 10px;margin-bottom:10px}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto;max-width:100em}";

/// The page's head. `refresh`: seconds after which the browser reloads it by itself (a
/// meta refresh: no script, which the Content-Security-Policy forbids), so a page left
/// open on a wall screen stays current.
fn head(out: &mut String, title: &str, refresh: Option<i64>) {
    let refresh = refresh.map_or(String::new(), |s| {
        format!("<meta http-equiv=\"refresh\" content=\"{s}\">")
    });
    let _ = writeln!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">{refresh}<title>{}</title>\
         <style>{STYLE}</style></head><body>",
        esc(title)
    );
}

/// How often the list of jobs reloads itself.
pub const LIST_REFRESH_SECS: i64 = 30;

fn time_cell(out: &mut String, t: Option<Timestamp>, now: Timestamp) {
    match t {
        Some(t) => {
            let _ = write!(
                out,
                "<td data-at=\"{t}\">{}<br><span class=\"rel\">{}</span></td>",
                esc(&local(t)),
                esc(&relative(now, t))
            );
        }
        None => out.push_str("<td>-</td>"),
    }
}

/// `GET /`: the jobs, attention first.
pub fn list(rows: &[Row], now: Timestamp) -> String {
    let mut out = String::with_capacity(512 + rows.len() * 600);
    head(&mut out, "duetime: jobs", Some(LIST_REFRESH_SECS));
    let _ = writeln!(
        out,
        "<h1>duetime</h1><p>{} jobs, attention first; now {} · <a href=\"/metrics\">metrics</a> · \
         <a href=\"/api/jobs\">JSON</a></p>\n<table id=\"jobs\"><thead><tr><th>job</th><th>status</th>\
         <th>next due</th><th>last run</th><th>outcome</th><th>missed 24h / owed</th><th>schedule</th>\
         </tr></thead><tbody>",
        rows.len(),
        esc(&local(now))
    );
    for r in rows {
        list_row(&mut out, r, now);
    }
    out.push_str("</tbody></table></body></html>\n");
    out
}

fn list_row(out: &mut String, r: &Row, now: Timestamp) {
    let v = &r.view;
    let name = esc(v.name.as_str());
    let status = r.shown.name();
    let _ = write!(
        out,
        "<tr data-job=\"{name}\" data-status=\"{status}\"><td><a href=\"/jobs/{name}\">{name}</a>"
    );
    if !v.title.is_empty() {
        let _ = write!(out, "<div class=\"title\">{}</div>", esc(&v.title));
    }
    let _ = write!(
        out,
        "</td><td><span class=\"status st-{status}\">{status}</span>"
    );
    if let Some(p) = PauseNote::of(v) {
        let _ = write!(
            out,
            "<div class=\"why\">by {}: {}<br>resume: <code>{}</code></div>",
            esc(&p.who),
            esc(&p.why),
            esc(&p.resume)
        );
    }
    out.push_str("</td>");
    time_cell(out, r.next(), now);
    time_cell(out, v.last.as_ref().map(|l| l.at), now);
    let outcome = v.last.as_ref().map_or("-".to_string(), |l| {
        super::tally::tag_of(&l.outcome, "outcome")
    });
    let outcome = if outcome == "unknown" {
        v.last.as_ref().map_or("-".into(), |l| {
            serde_json::to_value(l.outcome)
                .ok()
                .and_then(|o| o.as_str().map(String::from))
                .unwrap_or_default()
        })
    } else {
        outcome
    };
    let _ = writeln!(
        out,
        "<td>{}</td><td>{} / {}</td><td>{}</td></tr>",
        esc(&outcome),
        v.missed_24h,
        v.owed,
        esc(&v.schedule)
    );
}

/// A 404 page for a job the store does not have.
pub fn not_found(name: &str) -> String {
    let mut out = String::new();
    head(&mut out, "duetime: no such job", None);
    let _ = writeln!(
        out,
        "<h1>No job named {}</h1><p><a href=\"/\">All jobs</a></p></body></html>",
        esc(&super::query::cut(name))
    );
    out
}

/// The colour of each fate and run outcome.
fn colour(fate: &str) -> &'static str {
    match fate {
        "ran" | "ok" | "skipped_run" => "#2e9d4a",
        "caught_up" => "#1f77b4",
        "skipped" => "#b0b0b0",
        "failed_out" | "failed" | "timed_out" => "#d62728",
        "lost" => "#8c2dbd",
        "approval_expired" | "awaiting_approval" => "#e08a00",
        "running" => "#5aa9e6",
        _ => "#999",
    }
}

const W: f64 = 1100.0;
const LEFT: f64 = 20.0;
const PLOT: f64 = W - 2.0 * LEFT;
const MARK_Y: f64 = 70.0;
const BAR_Y: f64 = 110.0;
const H: f64 = 150.0;
/// The baseline of the `now` label: a row below the axis labels (baseline 14, 10 px
/// text), so the two never overlap.
const NOW_Y: f64 = 34.0;

fn x(w: Window, t: Timestamp) -> f64 {
    let span = (w.to.as_millis() - w.from.as_millis()).max(1) as f64;
    let at = t.as_millis().clamp(w.from.as_millis(), w.to.as_millis()) - w.from.as_millis();
    LEFT + PLOT * at as f64 / span
}

/// `GET /jobs/NAME`: the job's row, its timeline and its ledger entries as a table.
pub fn job(t: &Timeline) -> String {
    let v = &t.row.view;
    let name = esc(v.name.as_str());
    let mut out = String::with_capacity(4096 + t.marks.len() * 300);
    head(
        &mut out,
        &format!("duetime: {}", v.name),
        Some(t.window.refresh_secs()),
    );
    let _ = writeln!(
        out,
        "<p><a href=\"/\">All jobs</a></p><h1>{name}</h1>{}<p>{} · status <span class=\"status st-{st}\">{st}</span> · owed {} · missed in 24h {}{}</p>",
        if v.title.is_empty() { String::new() } else { format!("<p class=\"title\">{}</p>", esc(&v.title)) },
        esc(&v.schedule),
        v.owed,
        v.missed_24h,
        t.zone.map_or(String::new(), |z| format!(" · zone {}", esc(z))),
        st = t.row.shown.name(),
    );
    let _ = writeln!(
        out,
        "<p>From {} to {} (local time; <code>?from=…&amp;to=…</code> in RFC 3339 for another window)</p>",
        esc(&local(t.window.from)),
        esc(&local(t.window.to))
    );
    pause_box(&mut out, &t.row.view);
    svg(&mut out, t);
    legend(&mut out);
    if let Some(f) = &t.failed_output {
        failed_output(&mut out, v.name.as_str(), f);
    }
    ledger_table(&mut out, t);
    out.push_str("</body></html>\n");
    out
}

/// Why the job is paused, who did it, the run that caused it and how to resume.
fn pause_box(out: &mut String, view: &duetime::JobView) {
    let Some(p) = PauseNote::of(view) else { return };
    let since = view.paused.as_ref().map(|p| p.since);
    let _ = writeln!(
        out,
        "<div id=\"paused\" class=\"paused\" data-who=\"{}\" data-incident=\"{}\"><b>Paused by {}</b>{}: {}.<br>Resume: <code>{}</code> (the due times passed meanwhile meet its missed rule)</div>",
        esc(&p.who),
        p.incident.map_or(String::new(), |r| r.to_string()),
        esc(&p.who),
        since.map_or(String::new(), |t| format!(" since {}", esc(&local(t)))),
        esc(&p.why),
        esc(&p.resume)
    );
}

/// The last lines the latest run printed, when it did not end well.
fn failed_output(out: &mut String, job: &str, f: &FailedOutput) {
    let _ = writeln!(
        out,
        "<h2>Last lines of {} ({})</h2>",
        f.run,
        esc(&f.outcome)
    );
    match &f.tail {
        Some(tail) => {
            if tail.truncated {
                let _ = writeln!(
                    out,
                    "<p class=\"rel\">The end only: <code>duetime logs {} --run {}</code> prints all of it.</p>",
                    esc(job),
                    f.run
                );
            }
            let _ = writeln!(
                out,
                "<pre id=\"output\" data-run=\"{}\">{}</pre>",
                f.run,
                esc(&tail.lines.join("\n"))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<p id=\"output\" data-run=\"{}\">Its output is not on this machine (another daemon ran it, or it was pruned): <code>duetime logs {} --run {}</code> where it ran.</p>",
                f.run,
                esc(job),
                f.run
            );
        }
    }
}

fn svg(out: &mut String, t: &Timeline) {
    let w = t.window;
    let _ = writeln!(
        out,
        "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" data-from=\"{}\" data-to=\"{}\" role=\"img\" aria-label=\"timeline of {}\">",
        w.from,
        w.to,
        esc(t.row.view.name.as_str())
    );
    for s in &t.spans {
        let (a, b) = (x(w, s.from), x(w, s.to));
        let fill = if s.kind == "paused" {
            "#d9d2f0"
        } else {
            "#fbe3b0"
        };
        let _ = writeln!(
            out,
            "<rect class=\"span span-{k}\" data-kind=\"{k}\" data-from=\"{}\" data-to=\"{}\" x=\"{a:.1}\" y=\"22\" width=\"{:.1}\" height=\"{}\" fill=\"{fill}\" opacity=\"0.7\"><title>{k} {} – {}</title></rect>",
            s.from, s.to, (b - a).max(1.0), H - 30.0, esc(&local(s.from)), esc(&local(s.to)), k = s.kind
        );
    }
    axis(out, w);
    for s in &t.shifts {
        let at = x(w, s.at);
        let hours = (s.after - s.before) as f64 / 3600.0;
        let _ = writeln!(
            out,
            "<g class=\"dst\" data-at=\"{}\"><line x1=\"{at:.1}\" x2=\"{at:.1}\" y1=\"22\" y2=\"{}\" stroke=\"#e08a00\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"11\" fill=\"#b06a00\">DST {hours:+}h</text></g>",
            s.at, H - 8.0, at + 3.0, H - 10.0
        );
    }
    for m in &t.marks {
        mark(out, w, m);
    }
    for e in &t.excluded {
        let a = x(w, e.at);
        let _ = writeln!(
            out,
            "<g class=\"excluded\" data-due=\"{}\"><title>excluded, not due: {} · {}</title><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-width=\"1.5\"/><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-width=\"1.5\"/></g>",
            e.at,
            esc(&local(e.at)),
            esc(&e.why),
            a - 4.0, MARK_Y - 4.0, a + 4.0, MARK_Y + 4.0,
            a - 4.0, MARK_Y + 4.0, a + 4.0, MARK_Y - 4.0,
        );
    }
    for u in &t.upcoming {
        let _ = writeln!(
            out,
            "<circle class=\"upcoming\" data-due=\"{u}\" cx=\"{:.1}\" cy=\"{MARK_Y}\" r=\"4\" fill=\"none\" stroke=\"#555\"><title>upcoming {}</title></circle>",
            x(w, *u),
            esc(&local(*u))
        );
    }
    for b in &t.bars {
        bar(out, t, b);
    }
    if t.now >= w.from && t.now <= w.to {
        let n = x(w, t.now);
        // Beside its line, on the side with room, below the axis labels' row (y 14).
        let anchor = if n > W - 60.0 { "end" } else { "start" };
        let _ = writeln!(
            out,
            "<line class=\"now\" x1=\"{n:.1}\" x2=\"{n:.1}\" y1=\"18\" y2=\"{H}\" stroke=\"#d62728\"/><text class=\"now-label\" x=\"{:.1}\" y=\"{NOW_Y}\" font-size=\"11\" fill=\"#d62728\" text-anchor=\"{anchor}\">now</text>",
            if anchor == "end" { n - 3.0 } else { n + 3.0 }
        );
    }
    out.push_str("</svg>\n");
}

/// Grid steps, in seconds: the smallest giving at most a dozen lines is used.
const STEPS: &[i64] = &[
    1,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    86_400,
    7 * 86_400,
];

/// Grid lines with their local time, a dozen at most whatever the window.
fn axis(out: &mut String, w: Window) {
    let span = (w.to.as_millis() - w.from.as_millis()) / 1000;
    let step_s = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 12)
        .unwrap_or(30 * 86_400);
    let format = if step_s < 60 {
        "%H:%M:%S"
    } else if step_s < 86_400 {
        "%a %d %H:%M"
    } else {
        "%a %d %b"
    };
    let step = step_s * 1000;
    let mut t = (w.from.as_millis().div_euclid(step) + 1) * step;
    while t < w.to.as_millis() {
        let at = Timestamp::from_millis(t);
        let px = x(w, at);
        let label = at.to_chrono().map_or(String::new(), |c| {
            c.with_timezone(&chrono::Local).format(format).to_string()
        });
        let _ = writeln!(
            out,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"22\" y2=\"{H}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"14\" font-size=\"10\" fill=\"#666\">{}</text>",
            px + 2.0,
            esc(&label)
        );
        t += step;
    }
}

fn mark(out: &mut String, w: Window, m: &Mark) {
    let (a, b) = (x(w, m.from), x(w, m.to));
    let c = colour(m.fate);
    let attrs = format!(
        "class=\"due fate-{f}\" data-fate=\"{f}\" data-cause=\"{}\" data-from=\"{}\" data-to=\"{}\" data-count=\"{}\"",
        m.cause, m.from, m.to, m.count, f = m.fate
    );
    let title = esc(&m.text);
    if m.count == 1 || b - a < 3.0 {
        let _ = writeln!(out, "<circle {attrs} cx=\"{a:.1}\" cy=\"{MARK_Y}\" r=\"5\" fill=\"{c}\"><title>{title}</title></circle>");
    } else {
        let _ = writeln!(out, "<rect {attrs} x=\"{a:.1}\" y=\"{}\" width=\"{:.1}\" height=\"12\" rx=\"3\" fill=\"{c}\" opacity=\"0.8\"><title>{title}</title></rect>", MARK_Y - 6.0, b - a);
    }
}

fn bar(out: &mut String, t: &Timeline, b: &Bar) {
    let w = t.window;
    let end = b.end.unwrap_or(t.now);
    let (a, z) = (x(w, b.start), x(w, end));
    let _ = writeln!(
        out,
        "<rect class=\"run\" data-run=\"{}\" data-outcome=\"{}\" data-start=\"{}\" data-end=\"{}\" x=\"{a:.1}\" y=\"{BAR_Y}\" width=\"{:.1}\" height=\"14\" fill=\"{}\"><title>{} {} from {} to {}</title></rect>",
        b.run,
        esc(&b.outcome),
        b.start,
        b.end.map_or("".into(), |e| e.to_string()),
        (z - a).max(2.0),
        colour(&b.outcome),
        b.run,
        esc(&b.outcome),
        esc(&local(b.start)),
        b.end.map_or("now".into(), |e| esc(&local(e)))
    );
}

fn legend(out: &mut String) {
    out.push_str("<p class=\"legend\">");
    for (what, c) in [
        ("ran", "ran"),
        ("caught up", "caught_up"),
        ("skipped", "skipped"),
        ("failed out", "failed_out"),
        ("lost", "lost"),
        ("approval expired", "approval_expired"),
    ] {
        let _ = write!(out, "<span><svg width=\"10\" height=\"10\"><circle cx=\"5\" cy=\"5\" r=\"5\" fill=\"{}\"/></svg> {what}</span>", colour(c));
    }
    out.push_str("<span style=\"color:#888\">× excluded by a calendar (not due)</span>");
    out.push_str("<span>○ upcoming</span><span>▬ runs (start → end)</span><span style=\"background:#d9d2f0\">paused</span> <span style=\"background:#fbe3b0\">quota hold</span><span style=\"color:#b06a00\">┆ DST change</span></p>\n");
}

fn ledger_table(out: &mut String, t: &Timeline) {
    let _ = writeln!(
        out,
        "<h2>Ledger in the window</h2><table id=\"ledger\"><thead><tr><th>due (local)</th><th>count</th><th>fate</th><th>cause</th><th>entry</th></tr></thead><tbody>"
    );
    for m in t.marks.iter().rev() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&local(m.from)),
            m.count,
            m.fate,
            m.cause,
            esc(&m.text)
        );
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{Actor, Config, Event, JobDef, JobName, Now, Schedule, State};

    /// A timeline of a job every minute with `now` inside its fitted window.
    fn timeline(now: Timestamp) -> Timeline {
        let schedule = Schedule::every("1m".parse().unwrap(), duetime::Duration::ZERO).unwrap();
        let mut state = State::new(Config::default());
        let def = JobDef::new(JobName::new("fast").unwrap(), schedule.clone());
        let upsert = Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("jobs-file"),
        };
        state.step(Now::at(now), upsert, &mut Vec::new());
        let row = crate::views::rows(&state, now).remove(0);
        let window = Window::fitted(Some(&schedule), now);
        super::super::timeline::build(row, Some(&schedule), &[], window, now)
    }

    /// A weekday job whose calendar excludes Christmas Day: the page draws the excluded
    /// due time with its calendar and label, and not as upcoming.
    #[test]
    fn an_excluded_due_time_is_drawn_with_why() {
        use duetime::{Calendar, CalendarName, Roll, Span};
        let base = Schedule::cron("0 9 * * mon-fri", Some("Europe/London")).unwrap();
        let christmas = Span::parse("2026-12-25", Some("Christmas Day")).unwrap();
        let holidays = Calendar::new(
            CalendarName::new("holidays").unwrap(),
            false,
            vec![christmas],
        )
        .unwrap();
        let schedule = Schedule::calendar(base, vec![holidays], None, Roll::Stay).unwrap();
        let now: Timestamp = "2026-12-21T00:00:00Z".parse().unwrap();
        let mut state = State::new(Config::default());
        let def = JobDef::new(JobName::new("report").unwrap(), schedule.clone());
        let upsert = Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("jobs-file"),
        };
        state.step(Now::at(now), upsert, &mut Vec::new());
        let row = crate::views::rows(&state, now).remove(0);
        let window = Window {
            from: now,
            to: "2026-12-28T00:00:00Z".parse().unwrap(),
        };
        let t = super::super::timeline::build(row, Some(&schedule), &[], window, now);
        let christmas: Timestamp = "2026-12-25T09:00:00Z".parse().unwrap();
        assert_eq!(t.excluded.len(), 1);
        assert_eq!(t.excluded[0].at, christmas);
        assert!(!t.upcoming.contains(&christmas));
        assert_eq!(t.upcoming.len(), 4, "the other weekdays");
        let html = job(&t);
        assert!(
            html.contains(&format!("<g class=\"excluded\" data-due=\"{christmas}\">")),
            "{html}"
        );
        assert!(html.contains("holidays (Christmas Day)"), "{html}");
        assert!(
            html.contains("Europe/London"),
            "a calendar job's zone is shown: {html}"
        );
    }

    /// The `y` and `font-size` of each `<text>` whose opening tag contains `marker`.
    fn texts(html: &str, marker: &str) -> Vec<(f64, f64)> {
        let num = |tag: &str, key: &str| -> f64 {
            let at = tag.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
            tag[at..].split('"').next().unwrap().parse().unwrap()
        };
        html.split("<text")
            .skip(1)
            .map(|t| t.split('>').next().unwrap())
            .filter(|tag| tag.contains(marker))
            .map(|tag| (num(tag, "y"), num(tag, "font-size")))
            .collect()
    }

    /// Issue 42: the `now` label sat on the axis labels' row and overlapped them.
    #[test]
    fn the_now_label_is_below_every_axis_label() {
        let now: Timestamp = "2026-12-05T12:00:00Z".parse().unwrap();
        let html = job(&timeline(now));
        let axis = texts(&html, "fill=\"#666\"");
        let label = texts(&html, "class=\"now-label\"");
        assert!(axis.len() >= 5, "{html}");
        assert_eq!(label.len(), 1, "{html}");
        let (y, size) = label[0];
        for (axis_y, _) in axis {
            assert!(
                y - size >= axis_y,
                "now at {y} (size {size}) meets an axis label at {axis_y}"
            );
        }
        assert!(
            html.contains("<meta http-equiv=\"refresh\" content=\"37\">"),
            "{html}"
        );
    }
}
