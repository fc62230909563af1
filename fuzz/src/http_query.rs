//! The `http_query` target: the parts of an HTTP request the read-only pages take from the
//! URL (`duetime run --http`): the path, percent-decoded, naming a job (`/jobs/NAME`,
//! `/api/jobs/NAME`), and the query's `?days=` and `?from=&to=` (`host/src/http/query.rs`),
//! then the job page drawn for the window asked (`timeline::build`, `page::job`) from a real
//! job's journal.
//!
//! What it asserts: never a panic. `days` is 0 to 3660 (3 when not given) or a refusal
//! that says what is accepted; a window is accepted only when `from` comes before `to`
//! and it spans at most `MAX_WINDOW`, and a refusal says why in a bounded message (a
//! pasted megabyte is not echoed). A name finds the job only when it is the job's name;
//! the page for a name that is not a job, and the job page, carry the name escaped (the
//! name adds no markup). The drawn page only shows marks that meet its window.
//!
//! Inputs are a URL as text (`/jobs/backup?from=...&to=...`, the seeds) or structured:
//! a URL, one of a few real jobs and the instant the page is drawn at.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use duetime::{
    Action, Actor, Config, Duration, Effect, Event, JobDef, JobName, Now, Outcome, ProcessId,
    Record, Schedule, Start, State, Timestamp,
};
use duetime_host::http::query::{self, MAX_WINDOW};
use duetime_host::http::{page, timeline};
use duetime_host::views;

/// The job every case defines.
const NAME: &str = "backup";

/// 2025-03-08T12:00:00Z: a day before New York's spring change, so the drawn pages meet
/// a change of offset.
const T0: i64 = 1_741_435_200_000;

/// How long each job's history runs before the page is drawn: two days of ticks.
const HISTORY_MS: i64 = 2 * 86_400_000;

/// One job, stepped through its history: its state, schedule and journal.
pub struct Case {
    pub state: State,
    pub schedule: Schedule,
    pub journal: Vec<Record>,
    pub now: Timestamp,
}

fn schedules() -> Vec<Schedule> {
    vec![
        Schedule::cron("*/15 * * * *", Some("America/New_York")).expect("valid"),
        Schedule::cron("30 2 * * *", Some("America/New_York")).expect("valid"),
        Schedule::every(Duration::from_secs(40), Duration::ZERO).expect("valid"),
        Schedule::at(Timestamp::from_millis(T0 + 3_600_000)),
    ]
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| schedules().into_iter().map(history).collect())
}

/// A job of `schedule` through two days of ticks from one process, each run it starts
/// finished at the next tick, alternately well and badly.
fn history(schedule: Schedule) -> Case {
    let mut state = State::new(Config::default());
    let mut journal = Vec::new();
    let mut effects = Vec::new();
    let p = ProcessId(1);
    let name = JobName::new(NAME).expect("a valid name");
    let def = JobDef::new(name, schedule.clone());
    let upsert = Event::Upsert {
        def: Box::new(def),
        actor: Actor::new("ana"),
    };
    state.step(Now::at(Timestamp::from_millis(T0)), upsert, &mut effects);
    state.step(
        Now::at(Timestamp::from_millis(T0)),
        Event::ProcessStarted { process: p },
        &mut effects,
    );
    let mut open = Vec::new();
    let mut t = T0;
    let mut good = true;
    while t < T0 + HISTORY_MS {
        t += 30_000;
        let now = Now::at(Timestamp::from_millis(t));
        for e in effects.drain(..) {
            match e {
                Effect::Journal(r) => journal.push(r),
                Effect::Do(Action::Start(Start {
                    run, fence, job, ..
                })) => open.push((run, fence, job)),
                _ => {}
            }
        }
        for (run, fence, job) in open.drain(..) {
            good = !good;
            let outcome = if good {
                Outcome::Ok
            } else {
                Outcome::failed("exit 1")
            };
            let done = Event::RunFinished {
                process: p,
                job,
                run,
                fence,
                outcome,
            };
            state.step(now, done, &mut effects);
        }
        let tick = Event::Tick {
            process: p,
            held: Vec::new(),
        };
        state.step(now, tick, &mut effects);
    }
    journal.extend(effects.into_iter().filter_map(|e| match e {
        Effect::Journal(r) => Some(r),
        _ => None,
    }));
    Case {
        state,
        schedule,
        journal,
        now: Timestamp::from_millis(t),
    }
}

/// The instant the page is drawn at.
#[derive(Arbitrary, Debug, Clone)]
pub enum NowGen {
    /// The end of the job's history.
    End,
    /// Seconds from the end of its history.
    Shift(i32),
    /// Milliseconds within years 1 to 9999 (the wall clock a daemon reads).
    Civil(u64),
}

/// `0001-01-01T00:00:00Z` and the end of 9999, in milliseconds.
const CIVIL_MIN: i64 = -62_135_596_800_000;
const CIVIL_END: i64 = 253_402_300_800_000;

impl NowGen {
    fn get(&self, end: Timestamp) -> Timestamp {
        match *self {
            NowGen::End => end,
            NowGen::Shift(s) => Timestamp::from_millis(end.as_millis() + i64::from(s) * 1000),
            NowGen::Civil(ms) => {
                let span = (CIVIL_END - CIVIL_MIN) as u64;
                Timestamp::from_millis(CIVIL_MIN + (ms % span) as i64)
            }
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub struct HttpInput {
    pub url: String,
    pub case: u8,
    pub now: NowGen,
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is
/// `HttpInput`); anything else is the URL (`/jobs/NAME?from=..&to=..`) of the first job,
/// drawn at the end of its history.
pub fn http_query(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(input) = HttpInput::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                let cases = cases();
                let case = &cases[usize::from(input.case) % cases.len()];
                check_url(&input.url, case, input.now.get(case.now));
            }
        }
        _ => {
            let case = &cases()[0];
            check_url(&String::from_utf8_lossy(data), case, case.now);
        }
    }
}

/// What the input decodes to.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => match HttpInput::arbitrary_take_rest(Unstructured::new(&data[1..]))
        {
            Ok(input) => format!("{input:?}"),
            Err(e) => format!("undecodable: {e}"),
        },
        _ => format!("url {:?}", String::from_utf8_lossy(data)),
    }
}

/// A message echoing a request's text stays short: `cut` keeps 80 characters of it.
const MAX_MESSAGE: usize = 400;

/// One request's URL, split as the server splits it, through every check.
pub fn check_url(url: &str, case: &Case, now: Timestamp) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let path = query::decode(path);
    check_days(query);
    let fitted = timeline::Window::fitted(Some(&case.schedule), now);
    assert!(fitted.from < fitted.to, "fitted window {fitted:?} at {now}");
    let window = match query::window(query, fitted) {
        Ok(w) => w,
        Err(why) => {
            assert!(!why.trim().is_empty(), "{query:?}: an empty refusal");
            assert!(why.chars().count() <= MAX_MESSAGE, "{query:?}: {why}");
            return check_name(&path, case, now, None);
        }
    };
    assert!(window.from < window.to, "{query:?}: {window:?}");
    let span = window.to.as_millis() - window.from.as_millis();
    assert!(
        span as u64 <= MAX_WINDOW.as_millis(),
        "{query:?}: {window:?}"
    );
    assert!((5..=60).contains(&window.refresh_secs()));
    check_name(&path, case, now, Some(window));
}

fn check_days(query: &str) {
    match query::days(query) {
        Ok(d) => assert!(d <= 3660, "{query:?}: days {d}"),
        Err(why) => {
            assert!(why.starts_with("days="), "{query:?}: {why}");
            assert!(why.contains("accepted"), "{query:?}: {why}");
            assert!(why.chars().count() <= MAX_MESSAGE, "{query:?}: {why}");
        }
    }
}

/// The name in the path, looked up and drawn: the job's page when it is the job, else the
/// page that says there is none. Either way the name is escaped.
fn check_name(path: &str, case: &Case, now: Timestamp, window: Option<timeline::Window>) {
    let Some(name) = path
        .strip_prefix("/jobs/")
        .or_else(|| path.strip_prefix("/api/jobs/"))
    else {
        return;
    };
    let view = case.state.job(name, now);
    assert_eq!(view.is_some(), name == NAME, "looked up {name:?}");
    assert_eq!(case.state.seq_of_name(name).is_some(), name == NAME);
    let missing = page::not_found(name);
    assert_eq!(
        markup(&missing),
        markup(&page::not_found("")),
        "the name {name:?} adds markup to the page"
    );
    let (Some(window), Some(_)) = (window, view) else {
        return;
    };
    let row = views::rows(&case.state, now)
        .into_iter()
        .next()
        .expect("one job, one row");
    let t = timeline::build(row, Some(&case.schedule), &case.journal, window, now);
    for m in &t.marks {
        assert!(
            m.to >= window.from && m.from <= window.to,
            "a mark {m:?} outside the window {window:?}"
        );
    }
    for u in &t.upcoming {
        assert!(
            *u >= window.from && *u <= window.to,
            "due {u} outside {window:?}"
        );
    }
    let html = page::job(&t);
    assert!(html.contains("</html>"), "a job page that does not end");
}

/// The characters that make markup: a name escaped adds none.
fn markup(html: &str) -> [usize; 3] {
    [
        html.matches('<').count(),
        html.matches('>').count(),
        html.matches('"').count(),
    ]
}
