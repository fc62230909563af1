//! The checks behind each fuzz target, as plain functions of the raw input bytes, so the
//! target files are one line and a kept input replays under `cargo test` too.

use arbitrary::{Arbitrary, Unstructured};
use chrono::NaiveDate;
use chrono_tz::Tz;
use duetime::{CronError, CronSchedule, Duration, Schedule, ScheduleError, Timestamp};

use crate::cron_gen::CronGen;
use crate::reference::{self, LOCAL_END, LOCAL_MIN};

const FIELD_NAMES: [&str; 6] = [
    "second",
    "minute",
    "hour",
    "day-of-month",
    "month",
    "day-of-week",
];

// ---------------------------------------------------------------------------------------------
// cron_text

/// `tz` arguments for the parser: none, the generator's zones, and names that must be refused.
const TZ_ARGS: [Option<&str>; 14] = [
    None,
    Some("UTC"),
    Some("America/New_York"),
    Some("Europe/London"),
    Some("Australia/Lord_Howe"),
    Some("America/Santiago"),
    Some("Pacific/Apia"),
    Some("Asia/Kolkata"),
    Some("Etc/UTC"),
    Some("US/Eastern"),
    Some(""),
    Some("utc"),
    Some("Mars/Olympus_Mons"),
    Some("America/New_York "),
];

/// Pieces the structured mode glues into cron-like text, so mutations reach deep into the
/// parser instead of dying in the tokenizer.
#[derive(Arbitrary, Debug)]
enum Tok {
    Num(u8),
    Big(u32),
    Month(u8),
    Day(u8),
    Star,
    Question,
    Dash,
    Comma,
    Slash,
    L,
    Hash,
    Macro(u8),
    Space,
    Ascii(u8),
    Char(char),
}

const MACRO_WORDS: [&str; 9] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
    "@reboot",
    "@",
];

#[derive(Arbitrary, Debug)]
struct TokenText {
    prefix: Option<u8>,
    fields: Vec<Vec<Tok>>,
    upper: bool,
    tz: u8,
    probe: i64,
}

impl TokenText {
    fn render(&self) -> String {
        let mut out = String::new();
        if let Some(z) = self.prefix {
            out.push_str(if z & 1 == 0 { "CRON_TZ=" } else { "cron_tz=" });
            out.push_str(crate::zone(z >> 1));
            out.push(' ');
        }
        for (i, field) in self.fields.iter().take(8).enumerate() {
            if i > 0 {
                out.push(' ');
            }
            for tok in field.iter().take(12) {
                match *tok {
                    Tok::Num(n) => out.push_str(&(n % 64).to_string()),
                    Tok::Big(n) => out.push_str(&n.to_string()),
                    Tok::Month(m) => out.push_str(
                        [
                            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                            "nov", "dec",
                        ][usize::from(m) % 12],
                    ),
                    Tok::Day(d) => out.push_str(
                        ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][usize::from(d) % 7],
                    ),
                    Tok::Star => out.push('*'),
                    Tok::Question => out.push('?'),
                    Tok::Dash => out.push('-'),
                    Tok::Comma => out.push(','),
                    Tok::Slash => out.push('/'),
                    Tok::L => out.push('L'),
                    Tok::Hash => out.push('#'),
                    Tok::Macro(m) => out.push_str(MACRO_WORDS[usize::from(m) % MACRO_WORDS.len()]),
                    Tok::Space => out.push(' '),
                    Tok::Ascii(b) => out.push(char::from(b & 0x7f)),
                    Tok::Char(c) => out.push(c),
                }
            }
        }
        if self.upper {
            out.make_ascii_uppercase();
        }
        out
    }
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is `TokenText`);
/// 0x10-0x1f selects a `tz` argument and the rest is the text; anything else makes the
/// whole input the text (so seeds and the dictionary are plain cron).
pub fn cron_text(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            let Ok(tokens) = TokenText::arbitrary_take_rest(Unstructured::new(&data[1..])) else {
                return;
            };
            let tz = TZ_ARGS[usize::from(tokens.tz) % TZ_ARGS.len()];
            check_cron_text(&tokens.render(), tz, tokens.probe);
        }
        Some(&b) if b < 0x20 => {
            let text = String::from_utf8_lossy(&data[1..]);
            check_cron_text(&text, TZ_ARGS[usize::from(b - 0x10) % TZ_ARGS.len()], 0);
        }
        _ => check_cron_text(&String::from_utf8_lossy(data), None, 1_741_500_000_000),
    }
}

/// Parsing never panics; what parses displays and re-parses to an equal schedule (and
/// survives serde); what fails says why, naming the field when one field is at fault.
pub fn check_cron_text(text: &str, tz: Option<&str>, probe: i64) {
    let direct = CronSchedule::parse(text, tz);
    let wrapped = Schedule::cron(text, tz);
    match (&direct, &wrapped) {
        (Ok(a), Ok(Schedule::Cron(b))) => assert_eq!(a, b),
        (Err(a), Err(ScheduleError::Cron(b))) => assert_eq!(a, b),
        _ => panic!(
            "CronSchedule::parse and Schedule::cron disagree on {text:?}: {direct:?} / {wrapped:?}"
        ),
    }
    let schedule = match direct {
        Ok(s) => s,
        Err(e) => return check_error(text, &e),
    };
    let shown = schedule.to_string();
    let again = CronSchedule::parse(&shown, None)
        .unwrap_or_else(|e| panic!("{text:?} (tz {tz:?}) displays as {shown:?}, which fails: {e}"));
    assert_eq!(
        again, schedule,
        "{text:?} displays as {shown:?}, which parses differently"
    );
    assert_eq!(
        again.to_string(),
        shown,
        "display is not stable for {text:?}"
    );
    assert_eq!(again.expr(), schedule.expr());
    assert_eq!(again.fields(), schedule.fields());
    assert_eq!(again.is_fixed_time(), schedule.is_fixed_time());
    assert_eq!(again.policy(), schedule.policy());

    let wrapped = Schedule::Cron(schedule.clone());
    assert_eq!(wrapped.to_string(), format!("cron {shown}"));
    let json = serde_json::to_string(&wrapped).expect("a schedule serializes");
    let back: Schedule = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{text:?} serializes as {json} which does not load: {e}"));
    assert_eq!(back, wrapped, "serde round trip of {text:?} via {json}");

    // One search, so odd but valid expressions (`0 0 30 2 *`, `L` with `#`) exercise the
    // matcher too; the full search properties are schedule_next's job.
    let t = Timestamp::from_millis(probe);
    if let Some(n) = schedule.next_after(t) {
        assert!(n > t, "{text:?}: next_after({t}) = {n}");
        assert_eq!(schedule.count_in(t, n), 1, "{text:?}: count_in({t}, {n})");
    }
}

fn check_error(text: &str, e: &CronError) {
    let msg = e.to_string();
    assert!(
        !msg.trim().is_empty(),
        "{text:?}: empty error message for {e:?}"
    );
    match e {
        CronError::Field { field, .. } => {
            let name = field.name();
            assert!(FIELD_NAMES.contains(&name), "unknown field name {name:?}");
            assert!(
                msg.starts_with(&format!("{name}: ")),
                "{text:?}: a field error does not start with its field: {msg:?}"
            );
        }
        // Whole-expression errors: listed so that a new kind of error is a compile error here.
        CronError::Empty
        | CronError::FieldCount { .. }
        | CronError::UnknownMacro { .. }
        | CronError::MacroWithFields { .. }
        | CronError::UnknownZone { .. }
        | CronError::ZoneConflict { .. } => {}
    }
}

// ---------------------------------------------------------------------------------------------
// schedule_next

#[derive(Arbitrary, Debug)]
pub enum ScheduleGen {
    Cron(CronGen),
    Every {
        period: PeriodGen,
        offset: u64,
        small_offset: bool,
    },
    At(InstantGen),
}

#[derive(Arbitrary, Debug)]
pub enum PeriodGen {
    Millis(u16),
    Seconds(u32),
    Hours(u16),
    Raw(u64),
    Max,
}

impl PeriodGen {
    fn millis(&self) -> u64 {
        match *self {
            PeriodGen::Millis(ms) => u64::from(ms),
            PeriodGen::Seconds(s) => u64::from(s) * 1000,
            PeriodGen::Hours(h) => u64::from(h) * 3_600_000,
            PeriodGen::Raw(ms) => ms,
            PeriodGen::Max => u64::MAX,
        }
    }
}

/// An instant, biased towards where bugs live: around the zone's next offset change, the
/// edges of years 1-9999 and the ends of `i64`.
#[derive(Arbitrary, Debug, Clone)]
pub enum InstantGen {
    /// The first offset change of the schedule's zone after day `day` of `year` (1850-2099),
    /// shifted by `shift` within the reference window.
    NearChange {
        year: u16,
        day: u16,
        shift: u32,
        ms: u16,
    },
    /// A civil UTC time in years 1-9999.
    Civil {
        year: u16,
        day: u16,
        second: u32,
        ms: u16,
    },
    Extreme(u8),
    /// Within two days of the start of year 1 (false) or the end of year 9999 (true).
    Edge {
        end: bool,
        shift: u32,
    },
    Raw(i64),
}

const EXTREMES: [i64; 16] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    -1,
    0,
    1,
    LOCAL_MIN * 1000,
    LOCAL_MIN * 1000 - 1,
    (LOCAL_MIN - 2 * 86_400) * 1000,
    LOCAL_END * 1000,
    LOCAL_END * 1000 - 1,
    (LOCAL_END - 86_400) * 1000,
    (LOCAL_END + 86_400) * 1000,
    -8_640_000_000_000_000,
    8_640_000_000_000_000,
];

fn millis_part(ms: u16) -> i64 {
    // Mostly whole seconds: due times are whole seconds, and `t` equal to one is the edge.
    if ms < 1000 {
        i64::from(ms)
    } else {
        0
    }
}

fn midnight(year: u16, day: u16, first_year: i32, years: i32) -> i64 {
    let y = first_year + i32::from(year) % years;
    let date = NaiveDate::from_yo_opt(y, 1 + u32::from(day) % 365).expect("valid ordinal");
    date.and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc()
        .timestamp()
}

/// The first UTC second in `(from, from + 400 days]` at which `tz`'s offset changes (sampled
/// weekly: a change undone within a week may be stepped over, which only costs a test case).
fn next_change(tz: Tz, from: i64) -> Option<i64> {
    let mut t = from;
    let start = reference::offset(tz, t);
    for _ in 0..58 {
        let next = t + 7 * 86_400;
        if reference::offset(tz, next) != start {
            let (mut lo, mut hi) = (t, next);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if reference::offset(tz, mid) == start {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return Some(hi);
        }
        t = next;
    }
    None
}

impl InstantGen {
    /// The instant in ms; `window` is the reference window in seconds.
    fn resolve(&self, tz: Tz, window: i64) -> i64 {
        match *self {
            InstantGen::NearChange {
                year,
                day,
                shift,
                ms,
            } => {
                let from = midnight(year, day, 1850, 250);
                let at = next_change(tz, from).unwrap_or(from);
                // From a full window before the change to a quarter window after it.
                let shift = i64::from(shift) % (window + window / 4) - window;
                (at + shift) * 1000 + millis_part(ms)
            }
            InstantGen::Civil {
                year,
                day,
                second,
                ms,
            } => {
                (midnight(year, day, 1, 9999) + i64::from(second % 86_400)) * 1000 + millis_part(ms)
            }
            InstantGen::Extreme(k) => EXTREMES[usize::from(k) % EXTREMES.len()],
            InstantGen::Edge { end, shift } => {
                let base = if end { LOCAL_END } else { LOCAL_MIN };
                (base + i64::from(shift % (4 * 86_400)) - 2 * 86_400) * 1000
            }
            InstantGen::Raw(t) => t,
        }
    }
}

#[derive(Arbitrary, Debug)]
pub struct NextInput {
    pub schedule: ScheduleGen,
    pub instant: InstantGen,
}

pub fn schedule_next(data: &[u8]) {
    if let Ok(input) = NextInput::arbitrary_take_rest(Unstructured::new(data)) {
        check_schedule_next(&input);
    }
}

/// How many due times of the reference list are checked one by one with `next_after` and
/// `count_in` (the window total is always checked).
const CHAIN: usize = 16;

/// The exclusive end of all of time, for windows that reach `Timestamp::MAX`.
const END: i128 = i64::MAX as i128 + 1;

pub fn check_schedule_next(input: &NextInput) {
    match &input.schedule {
        ScheduleGen::Cron(gen) => {
            let case = gen.render();
            let parsed = Schedule::cron(&case.expr, case.tz).unwrap_or_else(|e| {
                panic!(
                    "generated cron {:?} (tz {:?}) refused: {e}",
                    case.expr, case.tz
                )
            });
            let Schedule::Cron(cron) = parsed else {
                panic!("Schedule::cron returned another kind")
            };
            assert_eq!(
                cron.is_fixed_time(),
                case.reference.fixed_time,
                "fixed-time of {:?}",
                case.expr
            );
            let cron = cron.with_dst(case.policy);
            let policy = case.policy.unwrap_or(case.reference.default_policy());
            assert_eq!(cron.policy(), policy, "policy of {:?}", case.expr);
            let schedule = Schedule::Cron(cron);
            let tz: Tz = case.zone.parse().expect("generator zones exist");
            // Per-second expressions walk second by second, so their window is shorter.
            let window = if case.reference.single_second().is_some() {
                8 * 3600
            } else {
                1200
            };
            let t = input.instant.resolve(tz, window);
            check_basics(&schedule, t);
            let from = t.div_euclid(1000) + 1;
            let until = from.saturating_add(window);
            if from > LOCAL_END + 2 * 86_400 {
                assert_eq!(
                    schedule.next_after(Timestamp::from_millis(t)),
                    None,
                    "after year 9999"
                );
                return;
            }
            let due: Vec<i64> = reference::cron_due_in(&case.reference, tz, policy, from, until)
                .into_iter()
                .map(|u| u * 1000)
                .collect();
            check_window(&schedule, t, &due, Some(i128::from(until) * 1000));
        }
        ScheduleGen::Every {
            period,
            offset,
            small_offset,
        } => {
            let (period, offset) = (
                period.millis(),
                if *small_offset {
                    offset % 100_000
                } else {
                    *offset
                },
            );
            let t = input.instant.resolve(Tz::UTC, 3600);
            let schedule =
                match Schedule::every(Duration::from_millis(period), Duration::from_millis(offset))
                {
                    Ok(s) => s,
                    Err(e) => {
                        assert_eq!(period, 0, "every({period}ms, {offset}ms) refused: {e}");
                        assert!(e.to_string().starts_with("every: "));
                        return;
                    }
                };
            check_basics(&schedule, t);
            let mut due = Vec::new();
            let mut last = t;
            while due.len() < 8 {
                match reference::every_next(period, offset, last) {
                    Some(n) => {
                        due.push(n);
                        last = n;
                    }
                    None => break,
                }
            }
            // The window is up to the last listed due time, or all of time when the list ended
            // at the end of the range.
            let until = if due.len() < 8 { Some(END) } else { None };
            check_window(&schedule, t, &due, until);
        }
        ScheduleGen::At(at) => {
            let instant = at.resolve(Tz::UTC, 3600);
            let t = input.instant.resolve(Tz::UTC, 3600);
            let schedule = Schedule::at(Timestamp::from_millis(instant));
            check_basics(&schedule, t);
            let due: Vec<i64> = if instant > t { vec![instant] } else { vec![] };
            check_window(&schedule, t, &due, Some(END));
        }
    }
}

/// `next_after` is strictly after `t` or none, and what it returns is counted once.
fn check_basics(s: &Schedule, t: i64) {
    let t = Timestamp::from_millis(t);
    assert_eq!(s.count_in(t, t), 0);
    match s.next_after(t) {
        Some(n) => {
            assert!(n > t, "{s}: next_after({t}) = {n} is not after it");
            assert_eq!(s.count_in(t, n), 1, "{s}: count_in({t}, next {n})");
            let before = Timestamp::from_millis(n.as_millis() - 1);
            assert_eq!(
                s.count_in(t, before),
                0,
                "{s}: count_in({t}, {before}), just before next {n}"
            );
            assert_eq!(s.iter_after(t).next(), Some(n));
        }
        None => assert_eq!(
            s.count_in(t, Timestamp::MAX),
            0,
            "{s}: no next after {t}, yet due times counted"
        ),
    }
}

/// The schedule yields exactly `due` (the reference's list, ascending) after `t` and before
/// `until` (ms, exclusive; `END` for all of time): or at least `due` as its first due times
/// when `until` is `None`.
fn check_window(s: &Schedule, t: i64, due: &[i64], until: Option<i128>) {
    let ts = Timestamp::from_millis;
    let first = s.next_after(ts(t));
    match (due.first(), until) {
        (Some(&d), _) => assert_eq!(first, Some(ts(d)), "{s}: next_after({})", ts(t)),
        (None, Some(end)) => assert!(
            first.is_none_or(|n| i128::from(n.as_millis()) >= end),
            "{s}: next_after({}) = {first:?}, but the reference has nothing before {end}ms",
            ts(t),
        ),
        (None, None) => {}
    }
    let mut prev = t;
    for (i, &d) in due.iter().enumerate().take(CHAIN) {
        assert_eq!(
            s.next_after(ts(prev)),
            Some(ts(d)),
            "{s}: next_after({}), due #{i}",
            ts(prev)
        );
        assert_eq!(
            s.count_in(ts(t), ts(d)),
            i as u64 + 1,
            "{s}: count_in({}, {})",
            ts(t),
            ts(d)
        );
        prev = d;
    }
    if let Some(end) = until {
        let last = ts(i64::try_from(end - 1).expect("window inside i64").max(t));
        assert_eq!(
            s.count_in(ts(t), last),
            due.len() as u64,
            "{s}: count_in({}, {last}) over the window",
            ts(t)
        );
        if due.len() <= CHAIN {
            let after = s.next_after(ts(prev));
            assert!(
                after.is_none_or(|n| i128::from(n.as_millis()) >= end),
                "{s}: next_after({}) = {after:?}, but the reference has nothing more before {end}ms",
                ts(prev),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Replay

/// Every target, as `cargo fuzz list` names them.
pub const TARGETS: [&str; 9] = [
    "cron_text",
    "schedule_next",
    "step_sequence",
    "state_bytes",
    "wire_request",
    "jobs_file",
    "stored_rows",
    "http_query",
    "human_input",
];

/// Runs the named target's check on one input.
pub fn run(target: &str, data: &[u8]) {
    match target {
        "cron_text" => cron_text(data),
        "schedule_next" => schedule_next(data),
        "step_sequence" => crate::step_sequence::step_sequence(data),
        "state_bytes" => crate::state_bytes::state_bytes(data),
        "wire_request" => crate::wire_request::wire_request(data),
        "jobs_file" => crate::jobs_file::jobs_file(data),
        "stored_rows" => crate::stored_rows::stored_rows(data),
        "http_query" => crate::http_query::http_query(data),
        "human_input" => crate::human_input::human_input(data),
        other => panic!("unknown target {other:?}"),
    }
}

/// What an input decodes to, for people reading a crash.
pub fn describe(target: &str, data: &[u8]) -> String {
    match target {
        "cron_text" => match data.first() {
            Some(&b) if b < 0x10 => {
                match TokenText::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                    Ok(t) => format!(
                        "text {:?}, tz {:?}, probe {}",
                        t.render(),
                        TZ_ARGS[usize::from(t.tz) % TZ_ARGS.len()],
                        t.probe
                    ),
                    Err(e) => format!("undecodable: {e}"),
                }
            }
            Some(&b) if b < 0x20 => format!(
                "text {:?}, tz {:?}",
                String::from_utf8_lossy(&data[1..]),
                TZ_ARGS[usize::from(b - 0x10) % TZ_ARGS.len()]
            ),
            _ => format!("text {:?}, tz None", String::from_utf8_lossy(data)),
        },
        "schedule_next" => match NextInput::arbitrary_take_rest(Unstructured::new(data)) {
            Ok(input) => {
                let case = match &input.schedule {
                    ScheduleGen::Cron(g) => {
                        let c = g.render();
                        format!(
                            "cron {:?} tz {:?} zone {} policy {:?}\n",
                            c.expr, c.tz, c.zone, c.policy
                        )
                    }
                    _ => String::new(),
                };
                format!("{case}{input:?}")
            }
            Err(e) => format!("undecodable: {e}"),
        },
        "step_sequence" => crate::step_sequence::describe(data),
        "state_bytes" => crate::state_bytes::describe(data),
        "wire_request" => crate::wire_request::describe(data),
        "jobs_file" => crate::jobs_file::describe(data),
        "stored_rows" => crate::stored_rows::describe(data),
        "http_query" => crate::http_query::describe(data),
        "human_input" => crate::human_input::describe(data),
        other => panic!("unknown target {other:?}"),
    }
}
