//! Cron text to the oracle's plain sets, written apart from the core's parser on purpose.
//!
//! When the simulator runs the user's own jobs (`duetime sim JOBS.toml`) nobody drew the
//! oracle's sets: they have to come from the text the user wrote. Taking them from the
//! core's compiled fields would let a parser bug agree with itself, so this module expands
//! the text again, deliberately simply: only the common dialect (numbers, names, `*`, `?`,
//! ranges, steps, lists, the macros, `CRON_TZ=`, a seconds field first). Whatever it does
//! not know (`L`, `#`, `W`) is refused with `CronTextError::Unsupported`, because a check
//! the oracle cannot make must not pass silently.
//!
//! `spec_of` maps a whole `Schedule` (cron, every, at) to a `Spec`; the cron text comes
//! from `CronSchedule::expr()` and the zone's name, never from its bit sets.

use std::fmt;

use chrono_tz::Tz;
use duetime::{CalendarSchedule, DstPolicy, Fold, Gap, Roll, Schedule};

use crate::oracle::{CalendarSpec, CronSpec, DateSet, DstRule, FoldPass, RollTo, Spec};

/// Why a schedule cannot be handed to the oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronTextError {
    /// Valid cron for the core, perhaps, but outside what the oracle expands.
    Unsupported { expr: String, reason: String },
    /// The zone is not an IANA name chrono-tz knows, or the text and the job disagree.
    Zone { expr: String, reason: String },
    /// A duration or instant too large for the oracle's millisecond arithmetic.
    OutOfRange { schedule: String },
}

impl fmt::Display for CronTextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronTextError::Unsupported { expr, reason } => write!(
                f,
                "the simulator's oracle cannot check the cron expression `{expr}`: {reason}"
            ),
            CronTextError::Zone { expr, reason } => write!(
                f,
                "the simulator's oracle cannot check the cron expression `{expr}`: {reason}"
            ),
            CronTextError::OutOfRange { schedule } => write!(
                f,
                "the simulator's oracle cannot check `{schedule}`: its times are out of range"
            ),
        }
    }
}

impl std::error::Error for CronTextError {}

/// The oracle's view of a schedule as the core holds it.
pub fn spec_of(schedule: &Schedule) -> Result<Spec, CronTextError> {
    let range = || CronTextError::OutOfRange {
        schedule: schedule.to_string(),
    };
    match schedule {
        Schedule::Cron(c) => {
            let mut spec = expand(c.expr(), Some(c.zone().name()))?;
            // A policy chosen explicitly is told to the oracle as data (which passes fire);
            // what the passes are, the oracle works out from chrono-tz itself.
            spec.dst = c.explicit_policy().map(dst_rule);
            Ok(Spec::Cron(Box::new(spec)))
        }
        Schedule::Every { period, offset } => {
            let period_ms = i64::try_from(period.as_millis()).map_err(|_| range())?;
            let offset_ms = i64::try_from(offset.as_millis()).map_err(|_| range())?;
            if period_ms <= 0 {
                return Err(range());
            }
            Ok(Spec::Every {
                period_ms,
                offset_ms,
            })
        }
        Schedule::At { instant } => Ok(Spec::At {
            at_ms: instant.as_millis(),
        }),
        Schedule::Calendar(c) => calendar_spec_of(c).map(|c| Spec::Calendar(Box::new(c))),
    }
}

/// The text the checker finds a schedule's oracle spec by: its Display, and for a calendar
/// schedule each calendar's spans too (a calendar changed under the same name displays the
/// same, yet is another schedule).
pub fn schedule_key(schedule: &Schedule) -> String {
    let Schedule::Calendar(c) = schedule else {
        return schedule.to_string();
    };
    let mut key = schedule.to_string();
    for cal in c.exclude() {
        let spans: Vec<String> = cal.spans().iter().map(ToString::to_string).collect();
        key.push_str(&format!(" {}={{{}}}", cal.name(), spans.join(" ")));
    }
    key
}

/// A calendar schedule to the oracle's words: its base as `spec_of` reads it, and each
/// calendar's spans as the text they are stored in (`Span`'s Display), which the oracle
/// reads again with its own parser.
fn calendar_spec_of(c: &CalendarSchedule) -> Result<CalendarSpec, CronTextError> {
    let base = spec_of(c.base())?;
    let tz = match &base {
        Spec::Cron(cron) => cron.tz,
        _ => Tz::UTC,
    };
    let calendars = c
        .exclude()
        .iter()
        .map(|cal| DateSet {
            name: cal.name().to_string(),
            yearly: cal.yearly(),
            spans: cal.spans().iter().map(ToString::to_string).collect(),
        })
        .collect();
    let roll = match c.roll() {
        Roll::Stay => RollTo::Stay,
        Roll::Next => RollTo::Next,
        Roll::Previous => RollTo::Previous,
    };
    let business_day = c.business_day().and_then(|b| i32::try_from(b.get()).ok());
    let spec = CalendarSpec::new(base, tz, calendars, business_day, roll);
    spec.check().map_err(|reason| CronTextError::Unsupported {
        expr: c.to_string(),
        reason,
    })?;
    Ok(spec)
}

/// The oracle's words for a policy the core was given.
pub(crate) fn dst_rule(p: DstPolicy) -> DstRule {
    DstRule {
        gap_at_end: p.gap == Gap::RunAtGapEnd,
        fold: match p.fold {
            Fold::First => FoldPass::First,
            Fold::Last => FoldPass::Last,
            Fold::Both => FoldPass::Both,
        },
    }
}

/// One field's bounds and names (Z2 types text from the same table: `cron_typing.rs`).
pub(crate) struct FieldRule {
    pub(crate) name: &'static str,
    pub(crate) low: u32,
    pub(crate) high: u32,
    /// Three-letter names, the first meaning `low` (`jan` = 1, `sun` = 0).
    pub(crate) names: &'static [&'static str],
    /// Whether `?` may stand for `*` (the day fields, as in Quartz).
    pub(crate) question: bool,
}

pub(crate) const SECOND: FieldRule = FieldRule {
    name: "second",
    low: 0,
    high: 59,
    names: &[],
    question: false,
};
pub(crate) const MINUTE: FieldRule = FieldRule {
    name: "minute",
    low: 0,
    high: 59,
    names: &[],
    question: false,
};
pub(crate) const HOUR: FieldRule = FieldRule {
    name: "hour",
    low: 0,
    high: 23,
    names: &[],
    question: false,
};
pub(crate) const DOM: FieldRule = FieldRule {
    name: "day-of-month",
    low: 1,
    high: 31,
    names: &[],
    question: true,
};
pub(crate) const MONTH: FieldRule = FieldRule {
    name: "month",
    low: 1,
    high: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
    question: false,
};
/// 0-7 with 7 folded onto Sunday afterwards; `*` means 0-6.
pub(crate) const DOW: FieldRule = FieldRule {
    name: "day-of-week",
    low: 0,
    high: 7,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    question: true,
};

/// Expands cron `text` (five fields, six with a seconds field first, or a macro;
/// optionally prefixed `CRON_TZ=Zone`) read in zone `tz` (default: the prefix's, else UTC).
///
/// The spec's `text` is the five fields the oracle reads cron's "fixed-time" rule from:
/// the expression itself for five-field text (lower case, single spaces, as the core
/// normalizes it), the expansion for a macro (`@daily` is `0 0 * * *`, fixed-time like
/// cronie treats it) and the last five fields of the seconds form. The checker finds specs
/// by the schedule's Display, not by this text.
pub fn expand(text: &str, tz: Option<&str>) -> Result<CronSpec, CronTextError> {
    let expr = text.trim().to_string();
    let unsupported = |reason: String| CronTextError::Unsupported {
        expr: expr.clone(),
        reason,
    };
    let mut words: Vec<&str> = text.split_whitespace().collect();
    let mut prefix_zone = None;
    if let Some(first) = words.first() {
        if first
            .get(..8)
            .is_some_and(|p| p.eq_ignore_ascii_case("cron_tz="))
        {
            prefix_zone = first.get(8..);
            words.remove(0);
        }
    }
    let zone_name = match (prefix_zone, tz) {
        (Some(a), Some(b)) if a != b => {
            return Err(CronTextError::Zone {
                expr: expr.clone(),
                reason: format!("the text says CRON_TZ={a} but the job's zone is {b}"),
            })
        }
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => "UTC",
    };
    let zone: Tz = zone_name.parse().map_err(|_| CronTextError::Zone {
        expr: expr.clone(),
        reason: format!("unknown time zone `{zone_name}`"),
    })?;

    let expanded: Vec<String>;
    let mut seconds = vec![0];
    let fields: Vec<&str> = match words.as_slice() {
        [] => return Err(unsupported("it is empty".to_string())),
        [m] if m.starts_with('@') => {
            let five = match m.to_ascii_lowercase().as_str() {
                "@yearly" | "@annually" => "0 0 1 1 *",
                "@monthly" => "0 0 1 * *",
                "@weekly" => "0 0 * * 0",
                "@daily" | "@midnight" => "0 0 * * *",
                "@hourly" => "0 * * * *",
                other => return Err(unsupported(format!("unknown macro `{other}`"))),
            };
            expanded = five.split(' ').map(str::to_string).collect();
            expanded.iter().map(String::as_str).collect()
        }
        [_, _, _, _, _] => words.clone(),
        [s, rest @ ..] if rest.len() == 5 => {
            seconds = field(&SECOND, s).map_err(&unsupported)?;
            rest.to_vec()
        }
        other => {
            return Err(unsupported(format!(
                "{} fields; the oracle reads five (or six with a seconds field first) or a \
                 macro",
                other.len()
            )))
        }
    };
    let [minute, hour, dom, month, dow] = [fields[0], fields[1], fields[2], fields[3], fields[4]];
    let mut weekdays: Vec<u32> = field(&DOW, dow)
        .map_err(&unsupported)?
        .into_iter()
        .map(|d| d % 7)
        .collect();
    weekdays.sort_unstable();
    weekdays.dedup();
    let starlike = |f: &str| f.starts_with('*') || f.starts_with('?');
    Ok(CronSpec {
        seconds,
        minutes: field(&MINUTE, minute).map_err(&unsupported)?,
        hours: field(&HOUR, hour).map_err(&unsupported)?,
        days: field(&DOM, dom).map_err(&unsupported)?,
        months: field(&MONTH, month).map_err(&unsupported)?,
        weekdays,
        dom_star: starlike(dom),
        dow_star: starlike(dow),
        last_day: false,
        last_weekdays: Vec::new(),
        nth_weekdays: Vec::new(),
        dst: None,
        tz: zone,
        text: fields
            .iter()
            .map(|f| f.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// The sorted values one field's text names.
fn field(rule: &FieldRule, text: &str) -> Result<Vec<u32>, String> {
    let mut set = std::collections::BTreeSet::new();
    for item in text.split(',') {
        let (low, high, step) = item_range(rule, item)?;
        let mut v = low;
        while v <= high {
            set.insert(v);
            v = v.saturating_add(step);
        }
    }
    Ok(set.into_iter().collect())
}

/// The items of cron `text` in fields (five, or six with seconds first) whose step goes
/// past the end of their range, as the docs say `duetime check` tells of them: each as
/// (field, item in lower case, the one value it matches). Empty for other text (a macro,
/// text it refuses).
pub(crate) fn wide_items(text: &str) -> Vec<(&'static str, String, u32)> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let rules: &[&FieldRule] = match fields.len() {
        5 => &[&MINUTE, &HOUR, &DOM, &MONTH, &DOW],
        6 => &[&SECOND, &MINUTE, &HOUR, &DOM, &MONTH, &DOW],
        _ => return Vec::new(),
    };
    let mut wide = Vec::new();
    for (rule, text) in rules.iter().zip(fields) {
        for item in text.split(',') {
            match item_range(rule, item) {
                Ok((low, high, step)) if step > 1 && low.saturating_add(step) > high => {
                    wide.push((rule.name, item.to_ascii_lowercase(), low));
                }
                Ok(_) => {}
                Err(_) => return Vec::new(),
            }
        }
    }
    wide
}

/// One item's first and last value and its step (1 without one), as the docs read it.
fn item_range(rule: &FieldRule, item: &str) -> Result<(u32, u32, u32), String> {
    let lower = item.to_ascii_lowercase();
    if let Some(c) = lower.chars().find(|c| matches!(c, 'l' | 'w' | '#')) {
        // `jul` has an `l` and `wed` a `w`: refuse only when one is left after the
        // field's names are taken out.
        let mut rest = lower.clone();
        for n in rule.names {
            rest = rest.replace(n, "");
        }
        if rest.contains(c) {
            return Err(format!(
                "`{item}` in the {} field uses `{}`, which the oracle does not expand \
                 (it knows numbers, names, `*`, ranges, steps and lists)",
                rule.name,
                c.to_ascii_uppercase()
            ));
        }
    }
    let (range, step) = match lower.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (lower.as_str(), None),
    };
    let step = match step {
        None => 1,
        Some(s) => match number(s) {
            Some(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "`{item}` in the {} field: the step is not a positive number",
                    rule.name
                ))
            }
        },
    };
    if range == "*" || (range == "?" && rule.question) {
        return Ok((
            rule.low,
            if rule.name == DOW.name { 6 } else { rule.high },
            step,
        ));
    }
    if let Some((a, b)) = range.split_once('-') {
        let (a, mut b) = (value(rule, a, item)?, value(rule, b, item)?);
        // cronie: a day-of-week range ending at Sunday written `0` (`mon-sun`,
        // `fri-0`) runs through Sunday, 7.
        if rule.name == DOW.name && b == 0 && a > 0 {
            b = 7;
        }
        if a > b {
            return Err(format!(
                "`{item}` in the {} field is a backward range",
                rule.name
            ));
        }
        return Ok((a, b, step));
    }
    let v = value(rule, range, item)?;
    // `a/n`: from `a` to the field's end.
    Ok((v, if step > 1 { rule.high } else { v }, step))
}

/// Digits only (no sign, no spaces), at most nine of them, leading zeros counted.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn value(rule: &FieldRule, text: &str, item: &str) -> Result<u32, String> {
    let v = match number(text) {
        Some(v) => v,
        None => match rule.names.iter().position(|n| *n == text) {
            Some(i) => rule.low + i as u32,
            None => {
                return Err(format!(
                    "`{item}` in the {} field: `{text}` is not a number or a name the \
                     oracle knows",
                    rule.name
                ))
            }
        },
    };
    if v < rule.low || v > rule.high {
        return Err(format!(
            "`{item}` in the {} field: {v} is outside {}-{}",
            rule.name, rule.low, rule.high
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::Timestamp;

    /// The oracle's due times from the expanded sets against the core's `next_after`,
    /// over `days` days from `from`: both must list the same instants.
    fn agree(expr: &str, zone: &str, from: &str, days: i64) {
        let schedule = Schedule::cron(expr, Some(zone)).expect("the core accepts it");
        agree_on(&schedule, from, days);
    }

    /// `agree` for a schedule as built (a daylight-saving policy chosen, say).
    fn agree_on(schedule: &Schedule, from: &str, days: i64) {
        let spec = spec_of(schedule).expect("the oracle expands it");
        let start = from.parse::<Timestamp>().expect("instant").as_millis();
        let end = start + days * 86_400_000;
        let oracle: Vec<i64> = spec.due_in(start, end).iter().map(|d| d.at).collect();
        let mut core = Vec::new();
        let mut t = Timestamp::from_millis(start);
        while let Some(n) = schedule.next_after(t) {
            if n.as_millis() > end {
                break;
            }
            core.push(n.as_millis());
            t = n;
        }
        assert_eq!(
            oracle.len(),
            core.len(),
            "{schedule} ({:?}) from {from}: due-time counts differ",
            spec_dst(&spec)
        );
        assert_eq!(
            oracle,
            core,
            "{schedule} ({:?}) from {from}",
            spec_dst(&spec)
        );
    }

    fn spec_dst(spec: &Spec) -> Option<DstRule> {
        match spec {
            Spec::Cron(c) => Some(c.dst_rule()),
            _ => None,
        }
    }

    /// Every policy a schedule may choose, cron's defaults among them.
    fn every_policy() -> Vec<DstPolicy> {
        let mut all = Vec::new();
        for gap in [Gap::RunAtGapEnd, Gap::Skip] {
            for fold in [Fold::First, Fold::Last, Fold::Both] {
                all.push(DstPolicy { gap, fold });
            }
        }
        all
    }

    /// The oracle's rule against docs/schedules.md's worked example (New York, 2025), with
    /// no core in the loop: the due times of one day under each policy.
    #[test]
    fn the_oracle_follows_the_documented_worked_example() {
        // The local day: from midnight EDT (04:00Z) 23 hours in spring, 25 in the fall.
        let day = |expr: &str, dst: Option<DstRule>, date: &str| -> Vec<String> {
            let mut spec = expand(expr, Some("America/New_York")).expect("expands");
            spec.dst = dst;
            let from = format!("{date}T04:00:00Z").parse::<Timestamp>().unwrap();
            let from = from.as_millis() - 1;
            let hours = if date.ends_with("03-09") { 23 } else { 25 };
            Spec::Cron(Box::new(spec))
                .due_in(from, from + hours * 3_600_000)
                .iter()
                .map(|d| Timestamp::from_millis(d.at).to_string())
                .collect()
        };
        let rule = |gap_at_end, fold| Some(DstRule { gap_at_end, fold });
        let spring = "2025-03-09";
        assert_eq!(day("30 2 * * *", None, spring), ["2025-03-09T07:00:00Z"]);
        assert!(day("30 2 * * *", rule(false, FoldPass::First), spring).is_empty());
        let hourly = day("30 * * * *", rule(true, FoldPass::Both), spring);
        assert!(
            hourly.contains(&"2025-03-09T07:00:00Z".to_string()),
            "{hourly:?}"
        );
        assert!(!day("30 * * * *", None, spring).contains(&"2025-03-09T07:00:00Z".to_string()));
        let fall = "2025-11-02";
        assert_eq!(day("30 1 * * *", None, fall), ["2025-11-02T05:30:00Z"]);
        assert_eq!(
            day("30 1 * * *", rule(true, FoldPass::Last), fall),
            ["2025-11-02T06:30:00Z"]
        );
        assert_eq!(
            day("30 1 * * *", rule(true, FoldPass::Both), fall),
            ["2025-11-02T05:30:00Z", "2025-11-02T06:30:00Z"]
        );
        assert_eq!(day("30 * * * *", None, fall).len(), 25);
        for fold in [FoldPass::First, FoldPass::Last] {
            assert_eq!(day("30 * * * *", rule(false, fold), fall).len(), 24);
        }
    }

    #[test]
    fn explicit_policies_expand_like_the_core_schedules() {
        let exprs = [
            "* * * * *",
            "*/7 * * * *",
            "30 * * * *",
            "0,30 1-3 * * *",
            "30 2 * * *",
            "45 1 * * *",
            "0 0 * * *",
            "@hourly",
        ];
        let zones = [
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "America/Santiago",
            "America/Havana",
        ];
        let starts = [
            "2025-03-01T00:00:00Z",
            "2025-10-20T00:00:00Z",
            "2025-09-01T00:00:00Z",
        ];
        for policy in every_policy() {
            for zone in zones {
                for expr in exprs {
                    let c = duetime::CronSchedule::parse(expr, Some(zone)).expect("valid");
                    let schedule = Schedule::Cron(c.with_dst(Some(policy)));
                    for from in starts {
                        agree_on(&schedule, from, 14);
                    }
                }
            }
        }
    }

    const EXPRS: [&str; 33] = [
        "* * * * *",
        "*/7 * * * *",
        "5-50/15 * * * *",
        "0,30 1-3 * * *",
        "30 2 * * *",
        "0 1 * * *",
        "15 1 * * sun",
        "0 9 * * mon-fri",
        "0 9 * * 1-5",
        "0 12 1-15 * 1-5",
        "0 12 */10 * *",
        "0 0 * * 7",
        "0 0 * * 5-7",
        "0 6 ? * ?",
        "0 6 13 * fri",
        "45 23 31 * *",
        "0 3 * jan,mar,nov *",
        "0 3 * MAR-Apr *",
        "@hourly",
        "@daily",
        "@weekly",
        "0 30 2 * * *",
        "0 9 * * mon-sun",
        "0 9 * * fri-0",
        "0 */30 * * *",
        "1 1 */100 * *",
        "15 30 2 * * *",
        "0,15 0 2-3 * * *",
        "15 0,30 2-3 * * *",
        "*/20 * * * * *",
        "10-50/20 30 1 * * *",
        "45 */15 * * * *",
        "59 59 23 * * *",
    ];

    #[test]
    fn expands_like_the_core_schedules_in_several_zones() {
        let zones = [
            "UTC",
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "America/Santiago",
            "Asia/Kolkata",
        ];
        // Around the daylight-saving changes of 2025 for the zones that have them.
        let starts = [
            "2025-03-01T00:00:00Z",
            "2025-10-20T00:00:00Z",
            "2025-03-27T00:00:00Z",
            "2025-09-01T00:00:00Z",
        ];
        for zone in zones {
            for from in starts {
                for expr in EXPRS {
                    agree(expr, zone, from, 14);
                }
            }
        }
    }

    /// The oracle's walk, which passes over hours and minutes that cannot match and asks
    /// about folds once per hour, against the plain minute-by-minute walk: the same due times with the
    /// same daylight-saving marks, from instants that are not whole minutes too.
    #[test]
    fn the_hour_skipping_walk_matches_the_minute_walk() {
        let zones = [
            "UTC",
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "America/Santiago",
            "Asia/Kolkata",
            "Asia/Kathmandu",
        ];
        let starts = [
            "2025-03-08T18:00:00Z",
            "2025-11-01T18:00:00.500Z",
            "2025-03-29T18:00:00Z",
            "2025-10-25T17:59:59.999Z",
            "2025-04-05T06:00:30Z",
            "2025-09-06T00:00:00Z",
        ];
        for zone in zones {
            for from in starts {
                for expr in EXPRS {
                    let schedule = Schedule::cron(expr, Some(zone)).expect("the core accepts it");
                    let Ok(crate::oracle::Spec::Cron(spec)) = spec_of(&schedule) else {
                        panic!("{expr} expands to a cron spec");
                    };
                    let start = from.parse::<Timestamp>().expect("instant").as_millis();
                    let end = start + 2 * 86_400_000 + 7_777;
                    for policy in [None]
                        .into_iter()
                        .chain(every_policy().into_iter().map(Some))
                    {
                        let mut spec = spec.clone();
                        spec.dst = policy.map(dst_rule);
                        let fast = crate::oracle::Spec::Cron(spec.clone()).due_in(start, end);
                        let plain = spec.due_in_every_minute(start, end);
                        assert_eq!(fast, plain, "{expr} in {zone} from {from} ({policy:?})");
                    }
                }
            }
        }
    }

    /// The walk passes over whole UTC days none of whose local dates can match
    /// (`oracle::next_day_with_dates`): over six weeks, with date rules that leave most
    /// days out (a month's last day, the n-th weekday, a month of the year, the 29th of
    /// February) and across the changes of several zones, from instants that are not whole
    /// minutes, the same due times and marks as the plain minute-by-minute walk.
    #[test]
    fn the_day_skipping_walk_matches_the_minute_walk() {
        let zones = [
            "UTC",
            "America/New_York",
            "Australia/Lord_Howe",
            "America/Santiago",
            "Pacific/Kiritimati",
            "Pacific/Pago_Pago",
        ];
        let sparse = [
            "30 2 1 * *",
            "0 9 * * 5",
            "15 1 * * 0",
            "0 3 * mar,apr *",
            "0,30 0-2 29 2 *",
            "45 23 31 * *",
            "0 0 1 * *",
            "0 12 1-7 * 1",
            "59 23 * * 6",
            "30 0 * * sun",
        ];
        let starts = ["2024-02-20T11:59:59.999Z", "2025-09-25T00:00:30Z"];
        for zone in zones {
            for from in starts {
                for expr in sparse.iter().chain(EXPRS.iter().skip(6).take(12)) {
                    let mut spec = Box::new(expand(expr, Some(zone)).expect("expands"));
                    // The first three as the month's last day, the last Friday and the
                    // second Sunday (`L`, `5L`, `0#2`, which the text expansion leaves to
                    // `dates.rs`).
                    match *expr {
                        "30 2 1 * *" => (spec.days, spec.last_day) = (Vec::new(), true),
                        "0 9 * * 5" => {
                            (spec.weekdays, spec.last_weekdays) = (Vec::new(), vec![5]);
                        }
                        "15 1 * * 0" => {
                            (spec.weekdays, spec.nth_weekdays) = (Vec::new(), vec![(0, 2)]);
                        }
                        _ => {}
                    }
                    let start = from.parse::<Timestamp>().expect("instant").as_millis();
                    let end = start + 45 * 86_400_000 + 7_777;
                    for policy in [None]
                        .into_iter()
                        .chain(every_policy().into_iter().map(Some))
                    {
                        let mut spec = spec.clone();
                        spec.dst = policy.map(dst_rule);
                        let fast = crate::oracle::Spec::Cron(spec.clone()).due_in(start, end);
                        let plain = spec.due_in_every_minute(start, end);
                        assert_eq!(fast, plain, "{expr} in {zone} from {from} ({policy:?})");
                    }
                }
            }
        }
    }

    /// A seconds field as docs/schedules.md has it at New York's spring change of 2025
    /// (02:00 EST to 03:00 EDT, 07:00Z): the matching seconds of a swallowed minute fire
    /// once, together, at the gap's end; a matching second after it is a due time of its
    /// own, unless it is the gap's end itself.
    #[test]
    fn seconds_meet_a_gap_as_the_docs_say() {
        let due = |expr: &str| -> Vec<String> {
            let spec = expand(expr, Some("America/New_York")).expect("expands");
            let from = "2025-03-09T06:00:00Z".parse::<Timestamp>().unwrap();
            Spec::Cron(Box::new(spec))
                .due_in(from.as_millis(), from.as_millis() + 2 * 3_600_000)
                .iter()
                .map(|d| Timestamp::from_millis(d.at).to_string())
                .collect()
        };
        assert_eq!(due("15,45 30 2 * * *"), ["2025-03-09T07:00:00Z"]);
        assert_eq!(
            due("15 0,30 2-3 * * *"),
            [
                "2025-03-09T07:00:00Z",
                "2025-03-09T07:00:15Z",
                "2025-03-09T07:30:15Z"
            ]
        );
        assert_eq!(
            due("0,15 0 2-3 * * *"),
            ["2025-03-09T07:00:00Z", "2025-03-09T07:00:15Z"]
        );
        let spec = expand("0,30 * * * * *", Some("UTC")).expect("expands");
        assert_eq!(spec.seconds, [0, 30]);
        assert_eq!(spec.text, "* * * * *");
        assert!(!spec.fixed_time());
        assert_eq!(spec.core_text(), "0,30 * * * * *");
        assert!(expand("15 30 2 * * *", None).expect("expands").fixed_time());
        // From inside a minute: its later matching seconds, not its earlier ones.
        let from = "2025-01-01T00:00:15Z"
            .parse::<Timestamp>()
            .unwrap()
            .as_millis();
        let next: Vec<i64> = Spec::Cron(Box::new(spec))
            .due_in(from, from + 60_000)
            .iter()
            .map(|d| d.at)
            .collect();
        assert_eq!(next, [from + 15_000, from + 45_000]);
        for expr in ["15,45 30 2 * * *", "15 0,30 2-3 * * *", "0,15 0 2-3 * * *"] {
            agree(expr, "America/New_York", "2025-03-08T00:00:00Z", 3);
        }
    }

    #[test]
    fn monthly_and_yearly_macros_over_a_year() {
        for zone in ["UTC", "America/Santiago", "Europe/London"] {
            agree("@monthly", zone, "2025-01-01T00:00:00Z", 366);
            agree("@yearly", zone, "2025-06-01T00:00:00Z", 366);
            agree("@annually", zone, "2025-06-01T00:00:00Z", 366);
            agree("@midnight", zone, "2025-03-20T00:00:00Z", 30);
        }
    }

    #[test]
    fn the_zone_comes_from_the_prefix_or_the_job() {
        let s = expand("CRON_TZ=Europe/London 0 9 * * *", None).expect("expands");
        assert_eq!(s.tz.name(), "Europe/London");
        assert_eq!(s.text, "0 9 * * *");
        let s = expand("0 9 * * *", Some("Asia/Kolkata")).expect("expands");
        assert_eq!(s.tz.name(), "Asia/Kolkata");
        assert!(matches!(
            expand("CRON_TZ=Europe/London 0 9 * * *", Some("UTC")),
            Err(CronTextError::Zone { .. })
        ));
        assert!(matches!(
            expand("0 9 * * *", Some("Mars/Olympus")),
            Err(CronTextError::Zone { .. })
        ));
        // Through a whole schedule, with the zone given as the job's `tz`.
        let schedule = Schedule::cron("CRON_TZ=America/New_York 30 2 * * *", None).expect("valid");
        match spec_of(&schedule) {
            Ok(Spec::Cron(c)) => assert_eq!(c.tz.name(), "America/New_York"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sets_and_stars() {
        let s = expand("*/20 1-3 ? jan-mar sun,7", None).expect("expands");
        assert_eq!(s.minutes, vec![0, 20, 40]);
        assert_eq!(s.hours, vec![1, 2, 3]);
        assert_eq!(s.days, (1..=31).collect::<Vec<_>>());
        assert_eq!(s.months, vec![1, 2, 3]);
        assert_eq!(s.weekdays, vec![0]);
        assert!(s.dom_star && !s.dow_star);
        let s = expand("10/20 * */2 * 1", None).expect("expands");
        assert_eq!(s.minutes, vec![10, 30, 50]);
        assert!(s.dom_star, "`*/2` counts as a star, as in cronie");
        let s = expand("@daily", None).expect("expands");
        assert_eq!(s.text, "0 0 * * *");
        assert!(s.fixed_time(), "@daily is fixed-time, as in cronie");
    }

    #[test]
    fn refuses_what_it_cannot_expand() {
        for expr in [
            "0 0 L * *",
            "0 0 * * 5L",
            "0 0 * * 5#3",
            "0 0 15W * *",
            "0 0 * *",
            "0 0 * * * * *",
            "@reboot",
            "",
            "0 0 * * fri-mon",
            "*/0 * * * *",
            "60 * * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 8",
            "a * * * *",
            "0 0 * * mon/x",
            "5,,6 * * * *",
            "-5 * * * *",
            "+5 * * * *",
            "99999999999999999999 * * * *",
        ] {
            match expand(expr, None) {
                Err(CronTextError::Unsupported { reason, .. }) => {
                    assert!(!reason.is_empty(), "{expr}")
                }
                other => panic!("{expr:?} gave {other:?}"),
            }
        }
        let e = expand("0 0 L * *", Some("UTC")).expect_err("refused");
        assert!(e.to_string().contains("cannot check"), "{e}");
        assert!(e.to_string().contains("`L`"), "{e}");
    }

    #[test]
    fn names_with_l_and_w_are_names() {
        let s = expand("0 0 * jul wed", None).expect("expands");
        assert_eq!(s.months, vec![7]);
        assert_eq!(s.weekdays, vec![3]);
    }

    #[test]
    fn every_and_at() {
        let every = Schedule::every(
            duetime::Duration::from_millis(90_000),
            duetime::Duration::from_millis(15_000),
        )
        .expect("valid");
        match spec_of(&every) {
            Ok(Spec::Every {
                period_ms,
                offset_ms,
            }) => assert_eq!((period_ms, offset_ms), (90_000, 15_000)),
            other => panic!("{other:?}"),
        }
        let at = Schedule::at(Timestamp::from_millis(1_750_000_000_000));
        match spec_of(&at) {
            Ok(Spec::At { at_ms }) => assert_eq!(at_ms, 1_750_000_000_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_explicit_policy_reaches_the_oracle_as_its_rule() {
        let c =
            duetime::CronSchedule::parse("30 2 * * *", Some("America/New_York")).expect("valid");
        let chosen = DstPolicy {
            gap: Gap::Skip,
            fold: Fold::Last,
        };
        match spec_of(&Schedule::Cron(c.clone().with_dst(Some(chosen)))) {
            Ok(Spec::Cron(s)) => assert_eq!(
                s.dst_rule(),
                DstRule {
                    gap_at_end: false,
                    fold: FoldPass::Last
                }
            ),
            other => panic!("{other:?}"),
        }
        match spec_of(&Schedule::Cron(c)) {
            Ok(Spec::Cron(s)) => assert_eq!((s.dst, s.dst_rule()), (None, DstRule::FIXED_TIME)),
            other => panic!("{other:?}"),
        }
    }
}
