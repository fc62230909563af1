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

/// Everything the job page shows.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub row: Row,
    pub window: Window,
    pub now: Timestamp,
    pub zone: Option<&'static str>,
    pub marks: Vec<Mark>,
    pub upcoming: Vec<Timestamp>,
    pub bars: Vec<Bar>,
    pub spans: Vec<Span>,
    pub shifts: Vec<Shift>,
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
    let state = store.state()?;
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
    let zone = match schedule {
        Some(Schedule::Cron(c)) if !c.zone().is_utc() => Some(c.zone()),
        _ => None,
    };
    Timeline {
        marks: marks(journal, window),
        bars: bars(journal, window, now),
        spans: spans(journal, &row.view, window, now),
        shifts: zone.map(|z| shifts(z, window)).unwrap_or_default(),
        zone: zone.map(|z| z.name()),
        upcoming,
        row,
        window,
        now,
    }
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
