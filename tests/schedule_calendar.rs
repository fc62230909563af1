//! Calendar schedules (issue 45) against a brute-force reading of their definition: each
//! base due time judged on its own with chrono-tz (spans' ends found by trying local
//! minutes, holidays by sweeping every span over the day, rolls by walking days), never
//! the core's calendar code. Then the cases people ask about, one by one.

use std::collections::BTreeSet;

use chrono::{Datelike, Duration as Chrono, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use duetime::{BusinessDay, Calendar, CalendarName, Duration, Roll, Schedule, Span, Timestamp};
use proptest::prelude::*;

/// A calendar as the brute force reads it: local `[from, until)` spans, yearly or not.
#[derive(Debug, Clone)]
struct Cal {
    yearly: bool,
    spans: Vec<(NaiveDateTime, NaiveDateTime)>,
}

struct Brute {
    tz: Tz,
    base: Schedule,
    cals: Vec<Cal>,
    business_day: Option<i64>,
    roll: Roll,
}

fn ms(t: &chrono::DateTime<Tz>) -> i64 {
    t.timestamp_millis()
}

impl Brute {
    /// The first instant whose local reading is `l` or later, by trying minutes forward.
    fn boundary(&self, l: NaiveDateTime) -> i64 {
        let mut l = l;
        loop {
            match self.tz.from_local_datetime(&l) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => return ms(&t),
                LocalResult::None => {
                    l += Chrono::minutes(1);
                    l = l
                        .date()
                        .and_hms_opt(l.time().hour_(), l.time().minute_(), 0)
                        .unwrap();
                }
            }
        }
    }

    fn local(&self, d: i64) -> NaiveDateTime {
        self.tz.timestamp_millis_opt(d).unwrap().naive_local()
    }

    /// Every span's instants, shifted into the years around `year`.
    fn intervals(&self, year: i32) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        for c in &self.cals {
            for &(f, u) in &c.spans {
                let years: Vec<i32> = if c.yearly {
                    (year - 2..=year + 1).map(|y| y - f.year()).collect()
                } else {
                    vec![0]
                };
                for k in years {
                    let (Some(f), Some(u)) = (shift(f, k), shift(u, k)) else {
                        continue;
                    };
                    out.push((self.boundary(f), self.boundary(u)));
                }
            }
        }
        out
    }

    fn excluded(&self, d: i64) -> bool {
        let year = self.local(d).year();
        self.intervals(year).iter().any(|&(s, e)| s <= d && d < e)
    }

    fn day_bounds(&self, day: NaiveDate) -> (i64, i64) {
        let start = |d: NaiveDate| self.boundary(d.and_hms_opt(0, 0, 0).unwrap());
        (start(day), start(day.succ_opt().unwrap()))
    }

    fn is_business(&self, day: NaiveDate) -> bool {
        if day.weekday().number_from_monday() > 5 {
            return false;
        }
        let (s, e) = self.day_bounds(day);
        if s >= e {
            return false;
        }
        let mut ivs = self.intervals(day.year());
        ivs.sort();
        let mut reach = s;
        for (a, b) in ivs {
            if a <= reach {
                reach = reach.max(b);
            }
        }
        reach < e
    }

    /// The local day whose instants hold `d`.
    fn day_of(&self, d: i64) -> NaiveDate {
        let mut day = self.local(d).date();
        while self.day_bounds(day).0 > d {
            day = day.pred_opt().unwrap();
        }
        while self.day_bounds(day).1 <= d {
            day = day.succ_opt().unwrap();
        }
        day
    }

    fn picked(&self, d: i64) -> bool {
        let Some(n) = self.business_day else {
            return true;
        };
        let day = self.day_of(d);
        let first = NaiveDate::from_ymd_opt(day.year(), day.month(), 1).unwrap();
        let days: Vec<NaiveDate> = first
            .iter_days()
            .take_while(|x| x.month() == day.month())
            .filter(|x| self.is_business(*x))
            .collect();
        let chosen = if n > 0 {
            days.get(n as usize - 1)
        } else {
            days.len()
                .checked_sub(n.unsigned_abs() as usize)
                .map(|i| &days[i])
        };
        chosen == Some(&day)
    }

    fn rolled(&self, d: i64) -> Option<i64> {
        let l = self.local(d);
        let step = if self.roll == Roll::Previous { -1 } else { 1 };
        (1..=31).find_map(|k| {
            let day = l.date() + Chrono::days(step * k);
            if !self.is_business(day) {
                return None;
            }
            let r = self.boundary(day.and_time(l.time()));
            (!self.excluded(r)).then_some(r)
        })
    }

    /// The due times in `(lo, hi]`.
    fn due(&self, lo: i64, hi: i64) -> BTreeSet<i64> {
        let reach = 40 * 86_400_000;
        let mut out = BTreeSet::new();
        for d in self.base.iter_after(Timestamp::from_millis(lo - reach)) {
            let d = d.as_millis();
            if d > hi + reach {
                break;
            }
            if !self.picked(d) {
                continue;
            }
            let r = if !self.excluded(d) {
                Some(d)
            } else if self.roll == Roll::Stay {
                None
            } else {
                self.rolled(d)
            };
            out.extend(r.filter(|&r| lo < r && r <= hi));
        }
        out
    }
}

trait Hm {
    fn hour_(&self) -> u32;
    fn minute_(&self) -> u32;
}

impl Hm for chrono::NaiveTime {
    fn hour_(&self) -> u32 {
        chrono::Timelike::hour(self)
    }
    fn minute_(&self) -> u32 {
        chrono::Timelike::minute(self)
    }
}

fn shift(t: NaiveDateTime, years: i32) -> Option<NaiveDateTime> {
    let d = NaiveDate::from_ymd_opt(t.year() + years, t.month(), t.day())?;
    Some(d.and_time(t.time()))
}

fn text(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%dT%H:%M").to_string()
}

const ZONES: &[&str] = &[
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Havana",
];
const CRONS: &[&str] = &[
    "0 9 * * *",
    "30 1 * * *",
    "30 2 * * *",
    "0 */6 * * *",
    "15 9 * * mon-fri",
    "0 9 15 * *",
    "0 0 * * *",
    "*/30 * * * *",
];

/// A span: a day in 2023-2026 near a daylight-saving change or a year's end as often as
/// not, one to five days long, its ends at midnight or at a drawn minute.
fn span() -> impl Strategy<Value = (NaiveDateTime, NaiveDateTime)> {
    let anchors = [
        (3, 9),
        (3, 30),
        (11, 2),
        (10, 26),
        (12, 24),
        (2, 28),
        (4, 5),
        (4, 6),
    ];
    (
        2023..2027i32,
        prop::sample::select(anchors.to_vec()),
        -3..4i64,
        0..6i64,
        prop::option::of(0..1440u32),
        prop::option::of(0..1440u32),
    )
        .prop_map(|(y, (m, d), off, len, a, b)| {
            let day = NaiveDate::from_ymd_opt(y, m, d).unwrap() + Chrono::days(off);
            let at = |day: NaiveDate, m: Option<u32>| {
                day.and_hms_opt(m.unwrap_or(0) / 60, m.unwrap_or(0) % 60, 0)
                    .unwrap()
            };
            let from = at(day, a);
            let until = at(day + Chrono::days(len + 1), b);
            (from, until)
        })
}

fn calendars() -> impl Strategy<Value = Vec<Cal>> {
    prop::collection::vec(
        (any::<bool>(), prop::collection::vec(span(), 1..6))
            .prop_map(|(yearly, spans)| Cal { yearly, spans }),
        0..3,
    )
}

/// A drawn calendar schedule: its zone, cron base, calendars, business-day rule and roll.
type Case = (&'static str, &'static str, Vec<Cal>, Option<i64>, Roll);

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(ZONES.to_vec()),
        prop::sample::select(CRONS.to_vec()),
        calendars(),
        prop::option::of(prop::sample::select(vec![1i64, 2, -1, -2])),
        prop::sample::select(vec![Roll::Stay, Roll::Next, Roll::Previous]),
    )
}

fn build(zone: &str, base: Schedule, cals: &[Cal], bd: Option<i64>, roll: Roll) -> Schedule {
    let cals = cals
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let spans = c
                .spans
                .iter()
                .map(|&(f, u)| Span::parse(&format!("{}..{}", text(f), text(u)), None).unwrap())
                .collect();
            Calendar::new(
                CalendarName::new(&format!("c{i}")).unwrap(),
                c.yearly,
                spans,
            )
            .unwrap()
        })
        .collect();
    let _ = zone;
    Schedule::calendar(base, cals, bd.map(|n| BusinessDay::new(n).unwrap()), roll).unwrap()
}

fn check(brute: &Brute, s: &Schedule, lo: i64, hi: i64) {
    let want = brute.due(lo, hi);
    let (lo_t, hi_t) = (Timestamp::from_millis(lo), Timestamp::from_millis(hi));
    let got: Vec<i64> = s
        .iter_after(lo_t)
        .take_while(|d| *d <= hi_t)
        .map(Timestamp::as_millis)
        .collect();
    assert_eq!(
        got,
        want.iter().copied().collect::<Vec<_>>(),
        "iter_after of {s}"
    );
    assert_eq!(s.count_in(lo_t, hi_t), want.len() as u64, "count_in of {s}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(40), ..ProptestConfig::default() })]

    #[test]
    fn calendar_schedules_agree_with_brute_force(
        (zone, cron, cals, bd, roll) in case(),
        start_day in 0..1200i64,
        days in 1..120i64,
    ) {
        prop_assume!(!cals.is_empty() || bd.is_some());
        let base = Schedule::cron(cron, Some(zone)).unwrap();
        let s = build(zone, base.clone(), &cals, bd, roll);
        let brute = Brute { tz: zone.parse().unwrap(), base, cals, business_day: bd, roll };
        let lo = Timestamp::from_secs(1_672_531_200 + start_day * 86_400 + 3_600 * 7).as_millis();
        check(&brute, &s, lo, lo + days * 86_400_000);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(40), ..ProptestConfig::default() })]

    /// A count over years, which takes whole years from memos (`excluded_in_year`,
    /// `kept_in_business_year`), is the sum of the counts over the same range cut into
    /// pieces of 100 days, too short to hold a whole year (the brute-force property above
    /// holds counts like those), asked of another copy of the schedule; and it is the same
    /// asked again, warm.
    #[test]
    fn counts_over_years_are_the_sum_of_counts_over_months(
        (zone, cron, cals, bd, roll) in case(),
        start_day in 0..1200i64,
        years in 1..5i64,
    ) {
        prop_assume!(!cals.is_empty() || bd.is_some());
        let base = Schedule::cron(cron, Some(zone)).unwrap();
        let long = build(zone, base.clone(), &cals, bd, roll);
        let short = build(zone, base, &cals, bd, roll);
        let day = 86_400_000;
        let lo = Timestamp::from_secs(1_640_995_200 + start_day * 86_400 + 3_600 * 5).as_millis();
        let hi = lo + years * 366 * day + 17 * 3_600_000;
        let ts = Timestamp::from_millis;
        let mut pieces = 0;
        let mut from = lo;
        while from < hi {
            let to = (from + 100 * day).min(hi);
            pieces += short.count_in(ts(from), ts(to));
            from = to;
        }
        prop_assert_eq!(long.count_in(ts(lo), ts(hi)), pieces, "{}", long);
        prop_assert_eq!(long.count_in(ts(lo), ts(hi)), pieces, "warm: {}", long);
    }
}

/// `n` cases, times `CALENDAR_PROPS_SCALE` when set (a longer run by hand).
fn cases(n: u32) -> u32 {
    let scale = std::env::var("CALENDAR_PROPS_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1);
    n.saturating_mul(scale.max(1))
}

fn cal(name: &str, yearly: bool, spans: &[(&str, &str)]) -> Calendar {
    let spans = spans
        .iter()
        .map(|(t, label)| Span::parse(t, (!label.is_empty()).then_some(*label)).unwrap())
        .collect();
    Calendar::new(CalendarName::new(name).unwrap(), yearly, spans).unwrap()
}

fn at(t: &str) -> Timestamp {
    t.parse().unwrap()
}

fn next_n(s: &Schedule, from: &str, n: usize) -> Vec<String> {
    s.iter_after(at(from))
        .take(n)
        .map(|t| t.to_string())
        .collect()
}

#[test]
fn holidays_next_to_daylight_saving_changes_in_london_and_new_york() {
    // London springs forward on 30 March 2025 (01:00 GMT -> 02:00 BST).
    let h = cal("h", false, &[("2025-03-30T01:30..2025-03-31T01:00", "")]);
    let base = Schedule::cron("30 * * * *", Some("Europe/London")).unwrap();
    let s = Schedule::calendar(base, vec![h], None, Roll::Stay).unwrap();
    // 01:30 does not exist: the range starts at the gap's end, 02:00 BST (01:00Z).
    assert_eq!(
        next_n(&s, "2025-03-30T00:00:00Z", 2),
        ["2025-03-30T00:30:00Z", "2025-03-31T00:30:00Z"]
    );
    // New York falls back on 2 November 2025: 01:00-01:59 happens twice.
    let h = cal("h", false, &[("2025-11-02T01:30..2025-11-02T03:00", "")]);
    let base = Schedule::cron("*/30 * * * *", Some("America/New_York")).unwrap();
    let s = Schedule::calendar(base, vec![h], None, Roll::Stay).unwrap();
    // The range starts at 01:30's first pass (EDT) and runs unbroken to 03:00 EST:
    // the second pass's 01:00 and 01:30 EST are inside it.
    assert_eq!(
        next_n(&s, "2025-11-02T05:00:00Z", 3),
        [
            "2025-11-02T08:00:00Z",
            "2025-11-02T08:30:00Z",
            "2025-11-02T09:00:00Z"
        ]
    );
    assert_eq!(
        s.count_in(at("2025-11-02T04:00:00Z"), at("2025-11-02T08:00:00Z")),
        3
    );
}

#[test]
fn yearly_ranges_cross_the_year_end_and_leap_days_recur_in_leap_years_only() {
    let h = cal(
        "h",
        true,
        &[("2024-12-24T12:00..2025-01-01", ""), ("2024-02-29", "leap")],
    );
    let base = Schedule::cron("0 9 * * *", None).unwrap();
    let s = Schedule::calendar(base, vec![h], None, Roll::Stay).unwrap();
    assert_eq!(
        next_n(&s, "2030-12-23T10:00:00Z", 2),
        ["2030-12-24T09:00:00Z", "2031-01-02T09:00:00Z"]
    );
    assert_eq!(
        next_n(&s, "2027-02-28T10:00:00Z", 1),
        ["2027-03-01T09:00:00Z"]
    );
    assert_eq!(
        next_n(&s, "2028-02-28T10:00:00Z", 1),
        ["2028-03-01T09:00:00Z"]
    );
    // Ten years: 3,652 days, less 8 days each year's end (25th to 1st) and 2 leap days.
    assert_eq!(
        s.count_in(at("2030-01-01T10:00:00Z"), at("2040-01-01T10:00:00Z")),
        3652 - 80 - 2
    );
}

#[test]
fn the_last_business_day_of_february() {
    let h = cal(
        "h",
        false,
        &[("2024-02-29", "Leap holiday"), ("2027-02-26", "")],
    );
    let base = Schedule::cron("0 17 * * *", Some("Europe/London")).unwrap();
    let s = Schedule::calendar(base, vec![h], BusinessDay::new(-1).ok(), Roll::Stay).unwrap();
    // 2024: the 29th (a Thursday) is a holiday, so the 28th. 2025: Friday the 28th.
    // 2026: Saturday the 28th, so Friday the 27th. 2027: the 26th is a holiday: the 25th.
    assert_eq!(
        next_n(&s, "2024-02-01T00:00:00Z", 1),
        ["2024-02-28T17:00:00Z"]
    );
    assert_eq!(
        next_n(&s, "2025-02-01T00:00:00Z", 1),
        ["2025-02-28T17:00:00Z"]
    );
    assert_eq!(
        next_n(&s, "2026-02-01T00:00:00Z", 1),
        ["2026-02-27T17:00:00Z"]
    );
    assert_eq!(
        next_n(&s, "2027-02-01T00:00:00Z", 1),
        ["2027-02-25T17:00:00Z"]
    );
    assert_eq!(
        s.count_in(at("2024-01-01T00:00:00Z"), at("2034-01-01T00:00:00Z")),
        120
    );
}

#[test]
fn rolls_move_an_excluded_due_time_to_the_nearest_business_day() {
    // The 15th at 09:00 New York; 15 August 2025 is a Friday holiday.
    let h = cal("h", false, &[("2025-08-15", "Assumption")]);
    let base = || Schedule::cron("0 9 15 * *", Some("America/New_York")).unwrap();
    let next = Schedule::calendar(base(), vec![h.clone()], None, Roll::Next).unwrap();
    let prev = Schedule::calendar(base(), vec![h.clone()], None, Roll::Previous).unwrap();
    let none = Schedule::calendar(base(), vec![h], None, Roll::Stay).unwrap();
    // Next: over the weekend to Monday the 18th; previous: Thursday the 14th.
    assert_eq!(
        next_n(&next, "2025-08-01T00:00:00Z", 1),
        ["2025-08-18T13:00:00Z"]
    );
    assert_eq!(
        next_n(&prev, "2025-08-01T00:00:00Z", 1),
        ["2025-08-14T13:00:00Z"]
    );
    assert_eq!(
        next_n(&none, "2025-08-01T00:00:00Z", 1),
        ["2025-09-15T13:00:00Z"]
    );
    for s in [&next, &prev, &none] {
        let n = s.count_in(at("2025-01-01T00:00:00Z"), at("2026-01-01T00:00:00Z"));
        assert_eq!(n, if std::ptr::eq(s, &none) { 11 } else { 12 });
    }
}

#[test]
fn why_a_due_time_is_excluded_names_the_calendar_and_the_label() {
    let h = cal("holidays", true, &[("2025-01-01", "New Year's Day")]);
    let f = cal("freeze", false, &[("2025-12-20..2026-01-04", "")]);
    let base = Schedule::cron("0 9 * * *", Some("Europe/London")).unwrap();
    let s = Schedule::calendar(base, vec![h, f], None, Roll::Stay).unwrap();
    let Schedule::Calendar(c) = &s else {
        unreachable!()
    };
    let why: Vec<(String, Option<&str>)> = c
        .excluded_by(at("2026-01-01T09:00:00Z"))
        .into_iter()
        .map(|(c, l)| (c.name().to_string(), l))
        .collect();
    assert_eq!(
        why,
        [
            ("holidays".to_string(), Some("New Year's Day")),
            ("freeze".to_string(), None)
        ]
    );
    assert!(c.excluded_by(at("2026-01-05T09:00:00Z")).is_empty());
}

#[test]
fn calendar_schedules_round_trip_through_serde() {
    let h = cal(
        "holidays",
        true,
        &[
            ("2025-01-01", "New Year's Day"),
            ("2025-12-24T12:00..2025-12-27", ""),
        ],
    );
    let base = Schedule::cron("0 9 * * *", Some("Europe/London")).unwrap();
    let s = Schedule::calendar(base, vec![h], BusinessDay::new(-1).ok(), Roll::Next).unwrap();
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"calendar","base":{"kind":"cron","expr":"0 9 * * *","tz":"Europe/London"},"exclude":[{"name":"holidays","yearly":true,"dates":[{"span":"2025-01-01","label":"New Year's Day"},{"span":"2025-12-24T12:00..2025-12-28T00:00"}]}],"business_day":-1,"roll":"next"}"#
    );
    let back: Schedule = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    for bad in [
        json.replace("-1", "0"),
        json.replace("2025-01-01\"", "2025-02-30\""),
        json.replace(r#""base":{"kind":"cron","expr":"0 9 * * *","tz":"Europe/London"}"#, r#""base":{"kind":"calendar","base":{"kind":"every","period":60000,"offset":0},"business_day":1}"#),
    ] {
        assert!(serde_json::from_str::<Schedule>(&bad).is_err(), "{bad}");
    }
}

/// A dense base rolled over a holiday (every 30 s, the calendar worlds' seed 29): its
/// 2,880 excluded due times roll onto Monday's own, so nothing new is due, and the
/// Monday's first due times follow the Saturday's last unchanged; asked again and again
/// from inside the holiday, the answer is the same (the targets are worked out once).
#[test]
fn a_dense_base_rolled_over_a_holiday_rolls_onto_its_own_due_times() {
    let h = cal("h", false, &[("2025-03-09", "a Sunday off")]);
    let every = Schedule::every(Duration::from_secs(30), Duration::ZERO).unwrap();
    let s = Schedule::calendar(every, vec![h], None, Roll::Next).unwrap();
    assert_eq!(
        next_n(&s, "2025-03-08T23:59:00Z", 3),
        [
            "2025-03-08T23:59:30Z",
            "2025-03-10T00:00:00Z",
            "2025-03-10T00:00:30Z"
        ]
    );
    for k in 0..50 {
        let from = Timestamp::from_millis(at("2025-03-09T00:00:00Z").as_millis() + k * 1_000_000);
        assert_eq!(s.next_after(from), Some(at("2025-03-10T00:00:00Z")));
    }
    let day = |d: &str| at(&format!("{d}T00:00:00Z"));
    assert_eq!(s.count_in(day("2025-03-08"), day("2025-03-11")), 2 * 2_880);
}

/// A base never on the chosen business day (the 1st to the 15th, and the last business
/// day of each month) is never due, and says so at once: the search stops one Gregorian
/// cycle past the zones' last change, not at year 9999.
#[test]
fn a_base_never_on_the_chosen_business_day_is_never_due() {
    let base = Schedule::cron("0 9 1-15 * *", Some("Europe/London")).unwrap();
    let last = BusinessDay::new(-1).unwrap();
    let s = Schedule::calendar(base, Vec::new(), Some(last), Roll::Stay).unwrap();
    assert_eq!(s.next_after(at("2025-01-01T00:00:00Z")), None);
    assert_eq!(
        s.count_in(at("2025-01-01T00:00:00Z"), at("2030-01-01T00:00:00Z")),
        0
    );
    // The 16th to the 31st holds it: the last business day of January 2025 is Friday the
    // 31st.
    let base = Schedule::cron("0 9 16-31 * *", Some("Europe/London")).unwrap();
    let s = Schedule::calendar(base, Vec::new(), Some(last), Roll::Stay).unwrap();
    assert_eq!(
        next_n(&s, "2025-01-01T00:00:00Z", 2),
        ["2025-01-31T09:00:00Z", "2025-02-28T09:00:00Z"]
    );
}
