//! A made-up week of an hourly job in New York across the spring-forward change of 9 March
//! 2025: runs on time, an outage (skipped, then one caught up), failures, a lost run, a
//! pause. The browser test screenshots its page for the README; the bench renders it.

#![allow(dead_code)]

use duetime::{
    Actor, Config, Covers, Entry, Event, Fence, History, JobDef, JobName, LedgerEntry, LedgerKind,
    MissAction, MissCause, Now, Outcome, PausedBy, ProcessId, Record, RunId, Schedule, State,
    Timestamp, Trigger,
};
use duetime_host::http::timeline::{self, Timeline, Window};

pub fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn hours(from: Timestamp, n: i64) -> Timestamp {
    Timestamp::from_millis(from.as_millis() + n * 3_600_000)
}

/// The records of the week and the instant the page is looked at.
pub fn records(job: &JobName) -> (Vec<Record>, Timestamp) {
    let start = at("2025-03-06T00:00:00Z");
    let now = at("2025-03-12T15:20:00Z");
    let mut out = Vec::new();
    let rec = |at: Timestamp, entry: Entry| Record {
        at,
        job: job.clone(),
        entry,
    };
    let mut run = 0u64;
    let mut h = 0;
    while hours(start, h) < now {
        let due = hours(start, h);
        h += 1;
        let down = (50..57).contains(&(h - 1));
        let paused = (108..126).contains(&(h - 1));
        if down || paused {
            continue;
        }
        run += 1;
        let r = RunId(run);
        let started = Timestamp::from_millis(due.as_millis() + 2_000);
        let covers = Some(Covers {
            from: due,
            to: due,
            count: 1,
        });
        out.push(rec(
            started,
            Entry::History(History::Started {
                run: r,
                fence: Fence(run),
                attempt: 1,
                trigger: Trigger::Schedule,
                covers,
                process: ProcessId(1),
                waited: None,
            }),
        ));
        let end = Timestamp::from_millis(due.as_millis() + 600_000 + (h % 7) * 300_000);
        let (outcome, kind) = match h % 31 {
            0 => (
                Outcome::Failed {
                    kind: "exit 1".into(),
                    retry_after: None,
                },
                LedgerKind::FailedOut { run: r },
            ),
            17 => (Outcome::Ok, LedgerKind::Lost { run: r }),
            _ => (
                Outcome::Ok,
                LedgerKind::Ran {
                    run: r,
                    skipped: false,
                },
            ),
        };
        if matches!(kind, LedgerKind::Lost { .. }) {
            out.push(rec(end, Entry::History(History::Lost { run: r })));
        } else {
            out.push(rec(
                end,
                Entry::History(History::Settled {
                    run: r,
                    attempt: 1,
                    outcome,
                }),
            ));
        }
        out.push(rec(
            end,
            Entry::Ledger(LedgerEntry {
                from: due,
                to: due,
                count: 1,
                kind,
            }),
        ));
    }
    // The outage: six hours skipped, the newest caught up when a daemon came back.
    let back = hours(start, 57);
    out.push(rec(
        back,
        Entry::Ledger(LedgerEntry {
            from: hours(start, 50),
            to: hours(start, 55),
            count: 6,
            kind: LedgerKind::Missed {
                cause: MissCause::Down,
                action: MissAction::Skipped,
            },
        }),
    ));
    run += 1;
    out.push(rec(
        back,
        Entry::History(History::Started {
            run: RunId(run),
            fence: Fence(run),
            attempt: 1,
            trigger: Trigger::CatchUp,
            covers: Some(Covers {
                from: hours(start, 56),
                to: hours(start, 56),
                count: 1,
            }),
            process: ProcessId(2),
            waited: None,
        }),
    ));
    let done = hours(start, 57).saturating_add(duetime::Duration::from_mins(20));
    out.push(rec(
        done,
        Entry::History(History::Settled {
            run: RunId(run),
            attempt: 1,
            outcome: Outcome::Ok,
        }),
    ));
    out.push(rec(
        done,
        Entry::Ledger(LedgerEntry {
            from: hours(start, 56),
            to: hours(start, 56),
            count: 1,
            kind: LedgerKind::Missed {
                cause: MissCause::Down,
                action: MissAction::CaughtUp { run: RunId(run) },
            },
        }),
    ));
    // The pause: a person paused it for 18 hours; its due times were skipped on resume.
    out.push(rec(
        hours(start, 107),
        Entry::History(History::Paused {
            by: PausedBy::Person {
                actor: Actor::new("ana"),
            },
            note: "disk swap".into(),
        }),
    ));
    let resumed = hours(start, 126);
    out.push(rec(
        resumed,
        Entry::History(History::Resumed {
            actor: Actor::new("ana"),
        }),
    ));
    out.push(rec(
        resumed,
        Entry::Ledger(LedgerEntry {
            from: hours(start, 108),
            to: hours(start, 125),
            count: 18,
            kind: LedgerKind::Missed {
                cause: MissCause::Paused,
                action: MissAction::Skipped,
            },
        }),
    ));
    out.sort_by_key(|r| r.at);
    (out, now)
}

/// The week as the job page draws it.
pub fn timeline() -> Timeline {
    let name = JobName::new("hourly_sync").unwrap();
    let schedule = Schedule::cron("0 * * * *", Some("America/New_York")).unwrap();
    let (journal, now) = records(&name);
    let mut state = State::new(Config::default());
    let mut def = JobDef::new(name, schedule.clone());
    def.title = "Hourly sync of the orders database".into();
    let mut effects = Vec::new();
    state.step(
        Now::at(at("2025-03-06T00:00:00Z")),
        Event::Upsert {
            def: Box::new(def),
            actor: Actor::new("jobs-file"),
        },
        &mut effects,
    );
    let row = duetime_host::views::rows(&state, now).remove(0);
    let window = Window {
        from: at("2025-03-06T00:00:00Z"),
        to: at("2025-03-13T00:00:00Z"),
    };
    timeline::build(row, Some(&schedule), &journal, window, now)
}
