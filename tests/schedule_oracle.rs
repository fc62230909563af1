//! proptest: duetime's cron search against an independent brute-force evaluator.
//!
//! The oracle below shares no code with `duetime::schedule` beyond the public entry points it
//! checks. It builds its own field sets from a generated structure (the generator renders the
//! same structure to cron text for duetime to parse), reads offsets and folds from chrono-tz,
//! and decides for each UTC second `u` whether it is a due time by the definition documented
//! at the top of `src/schedule/cron/mod.rs`:
//!
//! - `u`'s local time `l` matches the fields (cronie's day rule: when neither day-of-month nor
//!   day-of-week text begins with `*`/`?`, a day matches if EITHER matches, otherwise both
//!   must), and the fold policy admits this pass (`first`: `u` is chrono-tz's earliest instant
//!   for `l`; `last`: its latest; `both`: any), or
//! - `u` is the first second after a spring-forward gap, the gap policy is `run_at_gap_end`,
//!   and some local time that does not exist (chrono-tz says `None`) between the two sides of
//!   the jump matches.
//!
//! The default policy is cronie's: fixed-time (neither minute nor hour text begins with `*`)
//! gets `run_at_gap_end` + `first`, anything else `skip` + `both`.
//!
//! The scan is second by second, except that it jumps to the next local minute when the
//! local date, hour or minute cannot match and no offset change lies in between (an offset
//! change is always visited, for its gap). Offsets come from chrono-tz sampled every minute
//! and bisected to the second (no zone changes offset twice within a minute).
//!
//! Case counts are kept small so the file runs in a few seconds in a debug build; for a
//! deeper run: `PROPTEST_CASES=2000 cargo test --release --test schedule_oracle`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};
use chrono_tz::Tz;
use duetime::{CronSchedule, DstPolicy, Fold, Gap, Schedule, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

// ---------------------------------------------------------------------------------------
// Expressions: a structure the oracle reads and a text duetime parses.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Second,
    Minute,
    Hour,
    Dom,
    Month,
    Dow,
}

impl Kind {
    fn low(self) -> u32 {
        match self {
            Kind::Dom | Kind::Month => 1,
            _ => 0,
        }
    }
    /// The highest value cron accepts (7 is Sunday in day-of-week, as 0 is).
    fn high(self) -> u32 {
        match self {
            Kind::Second | Kind::Minute => 59,
            Kind::Hour => 23,
            Kind::Dom => 31,
            Kind::Month => 12,
            Kind::Dow => 7,
        }
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

#[derive(Clone, Debug)]
enum Item {
    Star,
    Question,
    StarStep(u32),
    Value(u32),
    Range(u32, u32),
    RangeStep(u32, u32, u32),
    /// `L` in day-of-month.
    Last,
    /// `5L` in day-of-week.
    LastWeekday(u32),
    /// `5#3` in day-of-week.
    Nth(u32, u32),
}

/// One item and how to spell it: names instead of numbers (month, day-of-week) and upper case.
#[derive(Clone, Debug)]
struct Spelled {
    item: Item,
    names: bool,
    upper: bool,
}

#[derive(Clone, Debug)]
struct Expr {
    /// `None`: five fields (the second is 0).
    seconds: Option<Vec<Spelled>>,
    fields: [Vec<Spelled>; 5],
    /// Rendered as this macro instead of the fields (which hold its expansion).
    macro_name: Option<&'static str>,
    /// Put the zone in the text as `CRON_TZ=` rather than passing it separately.
    zone_in_text: bool,
    wide_spaces: bool,
}

const FIELD_KINDS: [Kind; 5] = [Kind::Minute, Kind::Hour, Kind::Dom, Kind::Month, Kind::Dow];

fn spell_value(kind: Kind, v: u32, names: bool) -> String {
    match kind {
        Kind::Month if names => MONTHS[(v - 1) as usize].to_string(),
        Kind::Dow if names => DAYS[(v % 7) as usize].to_string(),
        _ => v.to_string(),
    }
}

fn render_item(kind: Kind, s: &Spelled) -> String {
    // Names in a day-of-week range only when neither end is 7 (`sat-sun` would run backwards).
    let named = |a: u32, b: u32| s.names && !(kind == Kind::Dow && (a == 7 || b == 7));
    let text = match s.item {
        Item::Star => "*".to_string(),
        Item::Question => "?".to_string(),
        Item::StarStep(step) => format!("*/{step}"),
        Item::Value(v) => spell_value(kind, v, s.names),
        Item::Range(a, b) => {
            let n = named(a, b);
            format!("{}-{}", spell_value(kind, a, n), spell_value(kind, b, n))
        }
        Item::RangeStep(a, b, step) => {
            let n = named(a, b);
            format!(
                "{}-{}/{step}",
                spell_value(kind, a, n),
                spell_value(kind, b, n)
            )
        }
        Item::Last => "l".to_string(),
        Item::LastWeekday(w) => format!("{}l", spell_value(kind, w, s.names)),
        Item::Nth(w, n) => format!("{}#{n}", spell_value(kind, w, s.names)),
    };
    if s.upper {
        text.to_ascii_uppercase()
    } else {
        text
    }
}

fn render_field(kind: Kind, items: &[Spelled]) -> String {
    items
        .iter()
        .map(|s| render_item(kind, s))
        .collect::<Vec<_>>()
        .join(",")
}

impl Expr {
    fn text(&self, zone: &str) -> String {
        let sep = if self.wide_spaces { " \t " } else { " " };
        let body = match self.macro_name {
            Some(m) => m.to_string(),
            None => {
                let mut parts = Vec::new();
                if let Some(s) = &self.seconds {
                    parts.push(render_field(Kind::Second, s));
                }
                for (kind, items) in FIELD_KINDS.iter().zip(&self.fields) {
                    parts.push(render_field(*kind, items));
                }
                parts.join(sep)
            }
        };
        if self.zone_in_text {
            format!("CRON_TZ={zone}{sep}{body}")
        } else {
            body
        }
    }

    fn parse(&self, zone: &str) -> CronSchedule {
        let text = self.text(zone);
        let tz = (!self.zone_in_text).then_some(zone);
        CronSchedule::parse(&text, tz)
            .unwrap_or_else(|e| panic!("generated `{text}` was refused: {e}"))
    }
}

fn plain(item: Item) -> Spelled {
    Spelled {
        item,
        names: false,
        upper: false,
    }
}

fn macro_expr(name: &'static str) -> Expr {
    use Item::*;
    let v = |n| vec![plain(Value(n))];
    let star = || vec![plain(Star)];
    let fields = match name {
        "@yearly" | "@annually" => [v(0), v(0), v(1), v(1), star()],
        "@monthly" => [v(0), v(0), v(1), star(), star()],
        "@weekly" => [v(0), v(0), star(), star(), v(0)],
        "@daily" | "@midnight" => [v(0), v(0), star(), star(), star()],
        "@hourly" => [v(0), star(), star(), star(), star()],
        _ => unreachable!(),
    };
    Expr {
        seconds: None,
        fields,
        macro_name: Some(name),
        zone_in_text: false,
        wide_spaces: false,
    }
}

fn item_strategy(kind: Kind) -> BoxedStrategy<Item> {
    let (low, high) = (kind.low(), kind.high());
    let value = low..=high;
    let range = (low..=high, low..=high).prop_map(|(a, b)| (a.min(b), a.max(b)));
    let step = 1..=high;
    let mut choices: Vec<(u32, BoxedStrategy<Item>)> = vec![
        (4, value.clone().prop_map(Item::Value).boxed()),
        (
            3,
            range.clone().prop_map(|(a, b)| Item::Range(a, b)).boxed(),
        ),
        (
            2,
            (range, step.clone())
                .prop_map(|((a, b), s)| Item::RangeStep(a, b, s))
                .boxed(),
        ),
        (2, step.prop_map(Item::StarStep).boxed()),
    ];
    match kind {
        Kind::Dom => choices.push((2, Just(Item::Last).boxed())),
        Kind::Dow => {
            choices.push((1, (0..=7u32).prop_map(Item::LastWeekday).boxed()));
            choices.push((
                1,
                (0..=7u32, 1..=5u32)
                    .prop_map(|(w, n)| Item::Nth(w, n))
                    .boxed(),
            ));
        }
        _ => {}
    }
    proptest::strategy::Union::new_weighted(choices).boxed()
}

fn spelled_strategy(kind: Kind) -> BoxedStrategy<Spelled> {
    (
        item_strategy(kind),
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(item, names, upper)| Spelled { item, names, upper })
        .boxed()
}

/// A field: often `*` (so that expressions match often enough to meet a window), else a list.
fn field_strategy(kind: Kind, star_weight: u32) -> BoxedStrategy<Vec<Spelled>> {
    let star = Just(vec![plain(Item::Star)]);
    let mut choices: Vec<(u32, BoxedStrategy<Vec<Spelled>>)> = vec![
        (star_weight, star.boxed()),
        (
            4,
            prop::collection::vec(spelled_strategy(kind), 1..=3).boxed(),
        ),
    ];
    if matches!(kind, Kind::Dom | Kind::Dow) {
        choices.push((1, Just(vec![plain(Item::Question)]).boxed()));
    }
    proptest::strategy::Union::new_weighted(choices).boxed()
}

fn expr_strategy() -> impl Strategy<Value = Expr> {
    let fields = (
        field_strategy(Kind::Minute, 3),
        field_strategy(Kind::Hour, 4),
        field_strategy(Kind::Dom, 8),
        field_strategy(Kind::Month, 10),
        field_strategy(Kind::Dow, 8),
    );
    let seconds = prop_oneof![
        3 => Just(None),
        1 => field_strategy(Kind::Second, 2).prop_map(Some),
    ];
    let plain_expr = (fields, seconds, any::<bool>(), prop::bool::weighted(0.1)).prop_map(
        |((mi, h, dom, mo, dow), seconds, zone_in_text, wide_spaces)| Expr {
            seconds,
            fields: [mi, h, dom, mo, dow],
            macro_name: None,
            zone_in_text,
            wide_spaces,
        },
    );
    let macros = prop::sample::select(vec![
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ])
    .prop_map(macro_expr);
    prop_oneof![12 => plain_expr, 1 => macros]
}

// ---------------------------------------------------------------------------------------
// The oracle's own reading of the fields.

#[derive(Debug)]
struct Sets {
    second: [bool; 60],
    minute: [bool; 60],
    hour: [bool; 24],
    dom: [bool; 32],
    last_dom: bool,
    month: [bool; 13],
    dow: [bool; 7],
    last_weekday: [bool; 7],
    /// `[weekday][n]` for `weekday#n`.
    nth: [[bool; 6]; 7],
    dom_star: bool,
    dow_star: bool,
    fixed_time: bool,
}

fn expand(kind: Kind, items: &[Spelled], out: &mut [bool]) {
    let mut set = |a: u32, b: u32, step: u32| {
        let mut v = a;
        while v <= b {
            // Day-of-week 7 is Sunday.
            let i = if kind == Kind::Dow { v % 7 } else { v };
            out[i as usize] = true;
            v += step;
        }
    };
    for s in items {
        match s.item {
            Item::Star | Item::Question => set(kind.low(), kind.high(), 1),
            Item::StarStep(step) => set(kind.low(), kind.high(), step),
            Item::Value(v) => set(v, v, 1),
            Item::Range(a, b) => set(a, b, 1),
            Item::RangeStep(a, b, step) => set(a, b, step),
            Item::Last | Item::LastWeekday(_) | Item::Nth(..) => {}
        }
    }
}

impl Sets {
    fn of(e: &Expr) -> Sets {
        let zero = [plain(Item::Value(0))];
        let seconds = e.seconds.as_deref().unwrap_or(&zero);
        let starts_star =
            |items: &[Spelled]| matches!(items[0].item, Item::Star | Item::StarStep(_));
        let starts_star_or_q =
            |items: &[Spelled]| starts_star(items) || matches!(items[0].item, Item::Question);
        let mut s = Sets {
            second: [false; 60],
            minute: [false; 60],
            hour: [false; 24],
            dom: [false; 32],
            last_dom: false,
            month: [false; 13],
            dow: [false; 7],
            last_weekday: [false; 7],
            nth: [[false; 6]; 7],
            dom_star: starts_star_or_q(&e.fields[2]),
            dow_star: starts_star_or_q(&e.fields[4]),
            fixed_time: !starts_star(&e.fields[0]) && !starts_star(&e.fields[1]),
        };
        expand(Kind::Second, seconds, &mut s.second);
        expand(Kind::Minute, &e.fields[0], &mut s.minute);
        expand(Kind::Hour, &e.fields[1], &mut s.hour);
        expand(Kind::Dom, &e.fields[2], &mut s.dom);
        expand(Kind::Month, &e.fields[3], &mut s.month);
        expand(Kind::Dow, &e.fields[4], &mut s.dow);
        for it in &e.fields[2] {
            if let Item::Last = it.item {
                s.last_dom = true;
            }
        }
        for it in &e.fields[4] {
            match it.item {
                Item::LastWeekday(w) => s.last_weekday[(w % 7) as usize] = true,
                Item::Nth(w, n) => s.nth[(w % 7) as usize][n as usize] = true,
                _ => {}
            }
        }
        s
    }

    fn date_matches(&self, date: NaiveDate) -> bool {
        let (m, d) = (date.month(), date.day());
        if !self.month[m as usize] {
            return false;
        }
        let next_month = if m == 12 {
            NaiveDate::from_ymd_opt(date.year() + 1, 1, 1)
        } else {
            NaiveDate::from_ymd_opt(date.year(), m + 1, 1)
        };
        let days_in_month = next_month.unwrap().pred_opt().unwrap().day();
        let wd = date.weekday().num_days_from_sunday() as usize;
        let dom_ok = self.dom[d as usize] || (self.last_dom && d == days_in_month);
        let dow_ok = self.dow[wd]
            || (self.last_weekday[wd] && d + 7 > days_in_month)
            || self.nth[wd][((d - 1) / 7 + 1) as usize];
        if self.dom_star || self.dow_star {
            dom_ok && dow_ok
        } else {
            dom_ok || dow_ok
        }
    }

    fn time_matches(&self, t: NaiveDateTime) -> bool {
        self.second[t.second() as usize]
            && self.minute[t.minute() as usize]
            && self.hour[t.hour() as usize]
    }
}

/// Cron due times exist in local years 1 through 9999.
fn in_cron_years(l: NaiveDateTime) -> bool {
    (1..=9999).contains(&l.year())
}

fn naive(local_secs: i64) -> NaiveDateTime {
    chrono::DateTime::from_timestamp(local_secs, 0)
        .expect("in chrono's range")
        .naive_utc()
}

fn chrono_offset(tz: Tz, utc: i64) -> i64 {
    let t = chrono::DateTime::from_timestamp(utc, 0).expect("in chrono's range");
    i64::from(
        tz.offset_from_utc_datetime(&t.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

struct Oracle<'a> {
    sets: &'a Sets,
    tz: Tz,
    gap: Gap,
    fold: Fold,
    /// `(first UTC second, offset)`, sorted, exact over the scanned window and two days around it.
    offsets: Vec<(i64, i64)>,
    date_cache: HashMap<i64, bool>,
}

impl<'a> Oracle<'a> {
    fn new(sets: &'a Sets, tz: Tz, policy: DstPolicy, from: i64, to: i64) -> Oracle<'a> {
        let (lo, hi) = (from - 2 * 86_400, to + 2 * 86_400);
        let mut offsets = vec![(i64::MIN, chrono_offset(tz, lo))];
        let mut t = lo;
        while t < hi {
            let next = t + 60;
            let current = offsets.last().unwrap().1;
            if chrono_offset(tz, next) != current {
                let (mut a, mut b) = (t, next);
                while b - a > 1 {
                    let mid = a + (b - a) / 2;
                    if chrono_offset(tz, mid) == current {
                        a = mid;
                    } else {
                        b = mid;
                    }
                }
                offsets.push((b, chrono_offset(tz, b)));
            }
            t = next;
        }
        Oracle {
            sets,
            tz,
            gap: policy.gap,
            fold: policy.fold,
            offsets,
            date_cache: HashMap::new(),
        }
    }

    fn segment(&self, u: i64) -> usize {
        self.offsets.partition_point(|&(s, _)| s <= u) - 1
    }

    fn offset(&self, u: i64) -> i64 {
        self.offsets[self.segment(u)].1
    }

    fn date_matches(&mut self, local: i64) -> bool {
        let day = local.div_euclid(86_400);
        let sets = self.sets;
        *self
            .date_cache
            .entry(day)
            .or_insert_with(|| sets.date_matches(naive(local).date()))
    }

    fn local_matches(&mut self, local: i64) -> bool {
        let t = naive(local);
        in_cron_years(t) && self.sets.time_matches(t) && self.date_matches(local)
    }

    fn near_change(&self, u: i64) -> bool {
        self.offsets
            .iter()
            .skip(1)
            .any(|&(s, _)| (s - u).abs() <= 2 * 86_400)
    }

    fn fold_admits(&self, u: i64, local: i64) -> bool {
        if self.fold == Fold::Both || !self.near_change(u) {
            return true;
        }
        match self.tz.from_local_datetime(&naive(local)) {
            chrono::LocalResult::Single(_) => true,
            chrono::LocalResult::Ambiguous(first, last) => match self.fold {
                Fold::First => u == first.timestamp(),
                Fold::Last => u == last.timestamp(),
                Fold::Both => true,
            },
            chrono::LocalResult::None => {
                panic!("{u} shows local {local}, which chrono-tz says does not exist")
            }
        }
    }

    fn gap_due(&mut self, u: i64) -> bool {
        if self.gap != Gap::RunAtGapEnd {
            return false;
        }
        let (before, after) = (u - 1 + self.offset(u - 1), u + self.offset(u));
        (before + 1..after).any(|l| {
            self.local_matches(l)
                && matches!(
                    self.tz.from_local_datetime(&naive(l)),
                    chrono::LocalResult::None
                )
        })
    }

    fn is_due(&mut self, u: i64) -> bool {
        let l = u + self.offset(u);
        (self.local_matches(l) && self.fold_admits(u, l)) || self.gap_due(u)
    }

    /// Due times in `(after, until]` (UTC seconds), at most `limit` of them.
    fn scan(&mut self, after: i64, until: i64, limit: usize) -> Vec<i64> {
        let mut found = Vec::new();
        let mut u = after + 1;
        while u <= until && found.len() < limit {
            let seg = self.segment(u);
            let change = self.offsets.get(seg + 1).map_or(i64::MAX, |&(s, _)| s);
            let l = u + self.offsets[seg].1;
            let t = naive(l);
            let minute_can_match = in_cron_years(t)
                && self.sets.minute[t.minute() as usize]
                && self.sets.hour[t.hour() as usize]
                && self.date_matches(l);
            if !minute_can_match && u != self.offsets[seg].0 {
                u = (u + 60 - l.rem_euclid(60)).min(change);
                continue;
            }
            if self.is_due(u) {
                found.push(u);
            }
            u += 1;
        }
        found
    }
}

// ---------------------------------------------------------------------------------------
// Zones, instants and policies.

const ZONES: [&str; 7] = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Santiago",
    "America/Havana",
    "Pacific/Apia",
];

/// Offset changes of a zone in 2005-2030, found with chrono-tz alone (hourly samples, then
/// bisection), plus Apia's whole-day jump which falls inside.
fn transitions(zone: &str) -> Vec<i64> {
    static CACHE: OnceLock<Mutex<HashMap<String, Vec<i64>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap().get(zone) {
        return v.clone();
    }
    let tz: Tz = zone.parse().unwrap();
    let (from, to) = (1_104_537_600, 1_924_992_000); // 2005-01-01 .. 2031-01-01
    let mut out = Vec::new();
    let mut t = from;
    let mut current = chrono_offset(tz, t);
    while t < to {
        let next = t + 3600;
        if chrono_offset(tz, next) != current {
            let (mut a, mut b) = (t, next);
            while b - a > 1 {
                let mid = a + (b - a) / 2;
                if chrono_offset(tz, mid) == current {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            out.push(b);
            current = chrono_offset(tz, next);
        }
        t = next;
    }
    cache.lock().unwrap().insert(zone.to_string(), out.clone());
    out
}

fn policy_strategy() -> impl Strategy<Value = Option<DstPolicy>> {
    let explicit = (
        prop::sample::select(vec![Gap::RunAtGapEnd, Gap::Skip]),
        prop::sample::select(vec![Fold::First, Fold::Last, Fold::Both]),
    )
        .prop_map(|(gap, fold)| Some(DstPolicy { gap, fold }));
    prop_oneof![1 => Just(None), 1 => explicit]
}

/// A starting instant in milliseconds: near one of the zone's offset changes (within 36
/// hours either side), or anywhere in 1900-2100, or near the ends of cron's years.
#[derive(Clone, Debug)]
enum Start {
    NearChange {
        pick: prop::sample::Index,
        delta_ms: i64,
    },
    Anywhere(i64),
}

fn start_strategy() -> impl Strategy<Value = Start> {
    prop_oneof![
        4 => (any::<prop::sample::Index>(), -129_600_000i64..129_600_000)
            .prop_map(|(pick, delta_ms)| Start::NearChange { pick, delta_ms }),
        1 => (-2_208_988_800_000i64..4_102_444_800_000).prop_map(Start::Anywhere),
    ]
}

fn start_ms(start: &Start, zone: &str) -> i64 {
    match start {
        Start::NearChange { pick, delta_ms } => {
            let changes = transitions(zone);
            if changes.is_empty() {
                1_741_503_600_000 + delta_ms // UTC has none: near 2025-03-09T07:00Z
            } else {
                changes[pick.index(changes.len())] * 1000 + delta_ms
            }
        }
        Start::Anywhere(ms) => *ms,
    }
}

fn schedule(e: &Expr, zone: &str, policy: Option<DstPolicy>) -> (Schedule, Sets, DstPolicy) {
    let sets = Sets::of(e);
    let cron = e.parse(zone).with_dst(policy);
    let effective = policy.unwrap_or(if sets.fixed_time {
        DstPolicy::FIXED_TIME
    } else {
        DstPolicy::ELAPSED
    });
    assert_eq!(
        cron.is_fixed_time(),
        sets.fixed_time,
        "fixed-time of `{}`",
        e.text(zone)
    );
    assert_eq!(cron.policy(), effective);
    (Schedule::Cron(cron), sets, effective)
}

fn cases(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

/// How many due times of one window are compared one by one.
const LIMIT: usize = 300;
/// The window: three days from the start.
const WINDOW: i64 = 3 * 86_400;

fn check_window(e: &Expr, zone: &str, policy: Option<DstPolicy>, t_ms: i64) {
    let (schedule, sets, effective) = schedule(e, zone, policy);
    let tz: Tz = zone.parse().unwrap();
    let t_secs = t_ms.div_euclid(1000);
    let until = t_secs + WINDOW;
    let mut oracle = Oracle::new(&sets, tz, effective, t_secs, until);
    let expected = oracle.scan(t_secs, until, LIMIT);
    let text = e.text(zone);
    let t = Timestamp::from_millis(t_ms);

    // The iterator, hence `next_after` chained, yields exactly the oracle's due times.
    let got: Vec<i64> = schedule
        .iter_after(t)
        .take(expected.len() + 1)
        .map(|d| d.as_millis())
        .collect();
    let horizon_ms = if expected.len() == LIMIT {
        expected[LIMIT - 1] * 1000
    } else {
        until * 1000
    };
    let got_in: Vec<i64> = got.iter().copied().filter(|&d| d <= horizon_ms).collect();
    let expected_ms: Vec<i64> = expected.iter().map(|s| s * 1000).collect();
    if got_in != expected_ms {
        let show = |v: &[i64]| {
            v.iter()
                .take(8)
                .map(|&ms| Timestamp::from_millis(ms).to_string())
                .collect::<Vec<_>>()
        };
        panic!(
            "`{text}` in {zone} ({effective}) after {t}:\n  duetime {:?}\n  oracle  {:?}",
            show(&got_in),
            show(&expected_ms)
        );
    }
    // Strictly increasing, all after `t`.
    assert!(got.windows(2).all(|w| w[0] < w[1]), "`{text}`: {got:?}");
    assert!(got.first().is_none_or(|&d| d > t_ms));

    // `next_after` from instants between due times (not only from due times themselves),
    // and from right before and at each offset change, where a gap's due time is.
    let changes: Vec<i64> = oracle.offsets[1..].iter().map(|&(s, _)| s * 1000).collect();
    let mut probes = vec![t_ms + 1, t_ms + 59_999, t_ms + 3_600_500, t_ms + 86_400_000];
    for &c in &changes {
        probes.extend([c - 1_000, c - 1, c]);
    }
    for probe in probes.iter().copied().filter(|&p| p >= t_ms) {
        if probe / 1000 >= horizon_ms / 1000 {
            continue;
        }
        let want = expected_ms.iter().copied().find(|&d| d > probe);
        let next = schedule.next_after(Timestamp::from_millis(probe));
        match want {
            Some(d) => assert_eq!(
                next.map(|x| x.as_millis()),
                Some(d),
                "`{text}` in {zone} after {}",
                Timestamp::from_millis(probe)
            ),
            None => assert!(
                next.is_none_or(|x| x.as_millis() > horizon_ms),
                "`{text}` in {zone} after {}: {next:?}",
                Timestamp::from_millis(probe)
            ),
        }
    }

    // `count_in` over sub-ranges agrees with the oracle and with walking the iterator.
    let mut ends = vec![
        t_ms,
        t_ms + 1_500,
        t_ms + 3_600_000,
        t_ms + 7 * 3_600_000 + 1,
        horizon_ms,
    ];
    for &c in &changes {
        ends.extend([c - 1_000, c]);
    }
    ends.retain(|&x| x >= t_ms);
    ends.sort_unstable();
    for (i, &a) in ends.iter().enumerate() {
        for &b in &ends[i..] {
            if b > horizon_ms {
                continue;
            }
            let by_oracle = expected_ms.iter().filter(|&&d| a < d && d <= b).count() as u64;
            let walked = schedule
                .iter_after(Timestamp::from_millis(a))
                .take_while(|d| d.as_millis() <= b)
                .count() as u64;
            let counted = schedule.count_in(Timestamp::from_millis(a), Timestamp::from_millis(b));
            assert_eq!(
                (counted, walked),
                (by_oracle, by_oracle),
                "`{text}` in {zone} ({effective}): count_in({}, {})",
                Timestamp::from_millis(a),
                Timestamp::from_millis(b)
            );
        }
    }
}

#[test]
fn next_after_and_count_in_agree_with_brute_force() {
    let mut runner = TestRunner::new(cases(96));
    let strategy = (
        expr_strategy(),
        prop::sample::select(ZONES.to_vec()),
        policy_strategy(),
        start_strategy(),
    );
    runner
        .run(&strategy, |(e, zone, policy, start)| {
            check_window(&e, zone, policy, start_ms(&start, zone));
            Ok(())
        })
        .unwrap();
}

/// Every transition of every test zone in 2024-2026, under all seven policies, for the
/// expressions DST policies are about: a fixed time that falls in gaps and folds, several
/// fixed times, a wildcard hour and a per-second schedule.
#[test]
fn every_transition_of_the_test_zones_under_every_policy() {
    let exprs = [
        "30 2 * * *",
        "0,30 1-2 * * *",
        "*/15 * * * *",
        "30 * * * *",
        "0 0 * * *",
        "*/20 30 0-3 * * *",
    ];
    let policies = [
        None,
        Some((Gap::RunAtGapEnd, Fold::First)),
        Some((Gap::RunAtGapEnd, Fold::Last)),
        Some((Gap::RunAtGapEnd, Fold::Both)),
        Some((Gap::Skip, Fold::First)),
        Some((Gap::Skip, Fold::Last)),
        Some((Gap::Skip, Fold::Both)),
    ];
    for zone in ZONES {
        let changes: Vec<i64> = transitions(zone)
            .into_iter()
            .filter(|&c| (1_704_067_200..1_798_761_600).contains(&c)) // 2024-2026
            .chain(
                transitions(zone)
                    .into_iter()
                    .filter(|&c| c == 1_325_239_200),
            ) // Apia 2011
            .collect();
        for change in changes {
            for text in exprs {
                let e = parse_plain(text);
                for p in policies {
                    let policy = p.map(|(gap, fold)| DstPolicy { gap, fold });
                    check_window(&e, zone, policy, (change - 26 * 3600) * 1000 - 1);
                }
            }
        }
    }
}

/// A hand-written expression as the oracle's structure (numbers, `*`, `*/n`, `a-b`, lists).
fn parse_plain(text: &str) -> Expr {
    let parts: Vec<&str> = text.split(' ').collect();
    let kinds: &[Kind] = if parts.len() == 6 {
        &[
            Kind::Second,
            Kind::Minute,
            Kind::Hour,
            Kind::Dom,
            Kind::Month,
            Kind::Dow,
        ]
    } else {
        &FIELD_KINDS
    };
    let mut fields: Vec<Vec<Spelled>> = parts
        .iter()
        .zip(kinds)
        .map(|(p, _)| {
            p.split(',')
                .map(|item| {
                    plain(if item == "*" {
                        Item::Star
                    } else if let Some(s) = item.strip_prefix("*/") {
                        Item::StarStep(s.parse().unwrap())
                    } else if let Some((a, b)) = item.split_once('-') {
                        Item::Range(a.parse().unwrap(), b.parse().unwrap())
                    } else {
                        Item::Value(item.parse().unwrap())
                    })
                })
                .collect()
        })
        .collect();
    let seconds = (parts.len() == 6).then(|| fields.remove(0));
    Expr {
        seconds,
        fields: fields.try_into().unwrap(),
        macro_name: None,
        zone_in_text: false,
        wide_spaces: false,
    }
}

#[test]
fn display_parses_back_to_the_same_schedule() {
    let mut runner = TestRunner::new(cases(256));
    let strategy = (
        expr_strategy(),
        prop::sample::select(ZONES.to_vec()),
        policy_strategy(),
    );
    runner
        .run(&strategy, |(e, zone, policy)| {
            let cron = e.parse(zone).with_dst(policy);
            let shown = cron.to_string();
            let again = CronSchedule::parse(&shown, None)
                .unwrap_or_else(|err| panic!("`{shown}` does not parse back: {err}"))
                .with_dst(policy);
            prop_assert_eq!(&again, &cron, "`{}` shown as `{}`", e.text(zone), shown);
            prop_assert_eq!(again.to_string(), shown.clone());
            prop_assert_eq!(again.fields(), cron.fields());
            // And through serde, as a host stores it.
            let schedule = Schedule::Cron(cron);
            let json = serde_json::to_string(&schedule).unwrap();
            let back: Schedule = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back, schedule);
            Ok(())
        })
        .unwrap();
}
