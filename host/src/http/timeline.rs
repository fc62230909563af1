//! A job's ledger over a window, as the job page draws it: each ledger entry a mark
//! coloured by its fate (a range of due times a band), the due times still to come, runs
//! as bars from start to settlement, pauses and quota holds as shaded spans, and the
//! daylight-saving changes of a cron job's zone. `build` is pure (the bench and the tests
//! call it); `read` gathers its input from a store.

use std::collections::BTreeMap;

use duetime::{Entry, History, JobView, Record, RunId, Schedule, Timestamp};

use super::tally::{fate, tag_of};
use crate::store::{Store, StoreError};
use crate::views::{Row, Shown};

/// The instants a page draws, `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
}

impl Window {
    /// The window a job page draws when none is asked for: about thirty of the job's
    /// periods back and a quarter of that ahead, at least 5 minutes back and at most two
    /// weeks, so a job every 10 s is not four days of marks piled on one dot and a daily
    /// job still shows its fortnight. The period is the gap between its next two due
    /// times (a cron job's irregular gaps give an approximate fit; that is all it needs);
    /// a job with no next due times (a one-shot, an ended schedule) gets three days back
    /// and one ahead.
    pub fn fitted(schedule: Option<&Schedule>, now: Timestamp) -> Window {
        const MIN_BACK_MS: i64 = 5 * 60 * 1000;
        const MAX_BACK_MS: i64 = 14 * 86_400 * 1000;
        let period = schedule.and_then(|s| {
            let mut next = s.iter_after(now);
            let (a, b) = (next.next()?, next.next()?);
            Some(b.as_millis().saturating_sub(a.as_millis()))
        });
        let (back, ahead) = match period {
            Some(p) => {
                let back = p.saturating_mul(30).clamp(MIN_BACK_MS, MAX_BACK_MS);
                (back, back / 4)
            }
            None => (3 * 86_400 * 1000, 86_400 * 1000),
        };
        Window {
            from: Timestamp::from_millis(now.as_millis().saturating_sub(back)),
            to: Timestamp::from_millis(now.as_millis().saturating_add(ahead)),
        }
    }

    /// How often a page of this window reloads itself: about a sixtieth of the window, so
    /// a mark moves by a pixel or so between reloads, from every 5 s to every minute.
    pub fn refresh_secs(&self) -> i64 {
        ((self.to.as_millis() - self.from.as_millis()) / 60_000).clamp(5, 60)
    }

    fn meets(&self, from: Timestamp, to: Timestamp) -> bool {
        to >= self.from && from <= self.to
    }
}

/// One ledger entry in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub from: Timestamp,
    pub to: Timestamp,
    pub count: u64,
    pub fate: &'static str,
    pub cause: &'static str,
    /// The line `show` prints for it.
    pub text: String,
}

/// One run: started, and settled (or lost) or still open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub run: RunId,
    pub start: Timestamp,
    /// `None`: still open at `now`.
    pub end: Option<Timestamp>,
    /// The outcome's name (`ok`, `failed`, ...), `lost`, or `running`.
    pub outcome: String,
}

/// A time the job could not run: paused, or held by a quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub kind: &'static str,
    pub from: Timestamp,
    pub to: Timestamp,
}

/// A change of the zone's offset: `before` and `after` in seconds east of UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    pub at: Timestamp,
    pub before: i64,
    pub after: i64,
}

/// A due time of the schedule's base that its calendars exclude: not due, so never in the
/// ledger; the page draws it apart so a person sees why nothing ran then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excluded {
    pub at: Timestamp,
    /// `holidays (Christmas Day)`.
    pub why: String,
}

/// Everything the job page shows.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub row: Row,
    pub window: Window,
    pub now: Timestamp,
    pub zone: Option<&'static str>,
    pub marks: Vec<Mark>,
    pub upcoming: Vec<Timestamp>,
    /// At most `MAX_UPCOMING`.
    pub excluded: Vec<Excluded>,
    pub bars: Vec<Bar>,
    pub spans: Vec<Span>,
    pub shifts: Vec<Shift>,
    /// The latest run when it failed (or was lost), and what it printed last when its
    /// directory is on this machine: `read` leaves it `None`, the server fills it in.
    pub failed_output: Option<FailedOutput>,
}

/// The end of the output of the job's latest run, when that run did not end well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedOutput {
    pub run: RunId,
    /// `failed`, `failed_out`, `timed_out` or `lost`.
    pub outcome: String,
    /// `None`: its run directory is not on this machine (another daemon's, or pruned).
    pub tail: Option<crate::runner::Tail>,
}

impl FailedOutput {
    /// The latest run's output from the run directories under `runs`, when that run
    /// failed, timed out or was lost; `None` for a job whose latest run went well.
    pub fn of(view: &JobView, runs: Option<&std::path::Path>) -> Option<FailedOutput> {
        use duetime::LastOutcome as O;
        let last = view.last.as_ref()?;
        if !matches!(
            last.outcome,
            O::Failed | O::FailedOut | O::TimedOut | O::Lost
        ) {
            return None;
        }
        let tail = runs.and_then(|root| {
            let runs = crate::runner::Runs::holding(root, view.name.as_str(), last.run);
            crate::runner::tail(&runs.log_path(last.run))
        });
        Some(FailedOutput {
            run: last.run,
            outcome: serde_json::to_value(last.outcome)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            tail,
        })
    }
}

/// The most upcoming due times drawn (an every-second job over a day would be 86,400).
pub const MAX_UPCOMING: usize = 2000;

/// History lines are read from this long before the window, so a pause or a run that
/// began before it and ends inside it is drawn.
const LOOKBACK: duetime::Duration = duetime::Duration::from_days(7);

/// The timeline of job `name`, `None` when the store has no such job.
pub fn read<S: Store + ?Sized>(
    store: &mut S,
    name: &str,
    window: Window,
    now: Timestamp,
) -> Result<Option<Timeline>, StoreError> {
    let p = crate::store::parts::partition_of(store, name)?;
    let state = store.state_in(p)?;
    let Some(view) = state.job(name, now) else {
        return Ok(None);
    };
    let record = state.seq_of_name(name).and_then(|s| state.record(s));
    let shown = Shown::of(&view, record, now);
    let schedule = record.map(|r| r.def().schedule.clone());
    let journal = store.journal_for(name, window.from.saturating_sub(LOOKBACK))?;
    let row = Row { view, shown };
    Ok(Some(build(row, schedule.as_ref(), &journal, window, now)))
}

/// The timeline from a job's row, schedule and journal lines (oldest first).
pub fn build(
    row: Row,
    schedule: Option<&Schedule>,
    journal: &[Record],
    window: Window,
    now: Timestamp,
) -> Timeline {
    let upcoming = match schedule {
        Some(s) if row.shown.will_run() => s
            .iter_after(now.max(window.from))
            .take_while(|t| *t <= window.to)
            .take(MAX_UPCOMING)
            .collect(),
        _ => Vec::new(),
    };
    let zone = match schedule.map(Schedule::base) {
        Some(Schedule::Cron(c)) if !c.zone().is_utc() => Some(c.zone()),
        _ => None,
    };
    Timeline {
        excluded: schedule.map(|s| excluded(s, window)).unwrap_or_default(),
        marks: marks(journal, window),
        bars: bars(journal, window, now),
        spans: spans(journal, &row.view, window, now),
        shifts: zone.map(|z| shifts(z, window)).unwrap_or_default(),
        failed_output: None,
        zone: zone.map(|z| z.name()),
        upcoming,
        row,
        window,
        now,
    }
}

/// The base's due times in the window that the calendars exclude (`MAX_UPCOMING` of them
/// at most, among as many base due times looked at as `duetime check` looks at).
fn excluded(schedule: &Schedule, window: Window) -> Vec<Excluded> {
    let Schedule::Calendar(c) = schedule else {
        return Vec::new();
    };
    let limit = crate::views::MAX_EXCLUDED_LOOKED;
    crate::views::BaseDueTimes::new(c, window.from, window.to, limit)
        .filter_map(|(at, why)| Some(Excluded { at, why: why? }))
        .take(MAX_UPCOMING)
        .collect()
}

fn marks(journal: &[Record], window: Window) -> Vec<Mark> {
    journal
        .iter()
        .filter_map(|r| match &r.entry {
            Entry::Ledger(l) if window.meets(l.from, l.to) => {
                let (fate, cause) = fate(l);
                Some(Mark {
                    from: l.from,
                    to: l.to,
                    count: l.count,
                    fate,
                    cause,
                    text: duetime::Effect::Journal(r.clone()).to_string(),
                })
            }
            _ => None,
        })
        .collect()
}

fn bars(journal: &[Record], window: Window, now: Timestamp) -> Vec<Bar> {
    let mut runs: BTreeMap<RunId, Bar> = BTreeMap::new();
    for r in journal {
        match &r.entry {
            Entry::History(History::Started { run, .. }) => {
                runs.insert(
                    *run,
                    Bar {
                        run: *run,
                        start: r.at,
                        end: None,
                        outcome: "running".into(),
                    },
                );
            }
            Entry::History(History::Settled { run, outcome, .. }) => {
                if let Some(b) = runs.get_mut(run).filter(|b| b.end.is_none()) {
                    b.end = Some(r.at);
                    b.outcome = tag_of(outcome, "outcome");
                }
            }
            Entry::History(History::Lost { run }) => {
                if let Some(b) = runs.get_mut(run).filter(|b| b.end.is_none()) {
                    b.end = Some(r.at);
                    b.outcome = "lost".into();
                }
            }
            _ => {}
        }
    }
    runs.into_values()
        .filter(|b| window.meets(b.start, b.end.unwrap_or(now)))
        .collect()
}

fn spans(journal: &[Record], view: &JobView, window: Window, now: Timestamp) -> Vec<Span> {
    let mut out = Vec::new();
    let mut paused: Option<Timestamp> = None;
    let mut hold: Option<(Timestamp, Timestamp)> = None;
    for r in journal {
        match &r.entry {
            Entry::History(History::Paused { .. }) => {
                paused = paused.or(Some(r.at));
            }
            Entry::History(History::Resumed { .. }) => {
                if let Some(from) = paused.take() {
                    out.push(Span {
                        kind: "paused",
                        from,
                        to: r.at,
                    });
                }
            }
            Entry::History(History::QuotaHold { until, .. }) => hold = Some((r.at, *until)),
            Entry::History(History::QuotaHoldEnded { .. }) => {
                if let Some((from, _)) = hold.take() {
                    out.push(Span {
                        kind: "quota_hold",
                        from,
                        to: r.at,
                    });
                }
            }
            _ => {}
        }
    }
    // Still paused: the pause began at the view's `since` (the journal may not reach back).
    if let Some(p) = &view.paused {
        out.push(Span {
            kind: "paused",
            from: paused.unwrap_or(p.since).min(p.since),
            to: now,
        });
    }
    if let Some((from, until)) = hold {
        out.push(Span {
            kind: "quota_hold",
            from,
            to: until,
        });
    }
    out.retain(|s| window.meets(s.from, s.to));
    out
}

/// The offset changes of `zone` inside the window.
fn shifts(zone: &duetime::Zone, window: Window) -> Vec<Shift> {
    let mut out = Vec::new();
    let mut seg = zone.segment_at(window.from.as_secs_floor());
    while let Some(end) = seg.end {
        if end > window.to.as_secs_floor() {
            break;
        }
        let next = zone.segment(seg.index + 1);
        if next.offset != seg.offset {
            out.push(Shift {
                at: Timestamp::from_secs(end),
                before: seg.offset,
                after: next.offset,
            });
        }
        seg = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn span_secs(w: Window) -> (i64, i64, i64) {
        let now = at("2026-12-05T12:00:00Z").as_millis();
        (
            (now - w.from.as_millis()) / 1000,
            (w.to.as_millis() - now) / 1000,
            w.refresh_secs(),
        )
    }

    /// Issue 42: a job every 10 s drew four days with every mark in one dot at "now".
    #[test]
    fn the_default_window_fits_the_jobs_period() {
        let now = at("2026-12-05T12:00:00Z");
        let every = |p: &str| Schedule::every(p.parse().unwrap(), duetime::Duration::ZERO);
        let ten = every("10s").unwrap();
        assert_eq!(
            span_secs(Window::fitted(Some(&ten), now)),
            (300, 75, 6),
            "a floor of 5 minutes back"
        );
        let minute = every("1m").unwrap();
        assert_eq!(
            span_secs(Window::fitted(Some(&minute), now)),
            (1800, 450, 37)
        );
        let hourly = Schedule::cron("0 * * * *", None).unwrap();
        assert_eq!(
            span_secs(Window::fitted(Some(&hourly), now)),
            (30 * 3600, 30 * 900, 60)
        );
        let daily = Schedule::cron("0 3 * * *", Some("Europe/London")).unwrap();
        assert_eq!(
            span_secs(Window::fitted(Some(&daily), now)).0,
            14 * 86_400,
            "at most two weeks back"
        );
        assert_eq!(
            span_secs(Window::fitted(None, now)),
            (3 * 86_400, 86_400, 60)
        );
    }
}
