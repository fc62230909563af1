//! Z2: cron text as people type it is read as `docs/schedules.md` says. The worlds' own
//! cron jobs come from a menu of valid shapes, so the parser's bounds (a minute of 60, a
//! day-of-month of 0, a step of 0, a backward range, a misspelt name) would go unchecked.
//! Each seed also types a few expressions (five fields, or six with seconds first) field
//! by field from items near those bounds, judges each by the documented dialect alone,
//! and holds the core to that verdict:
//!
//! - text the docs accept must parse, and yield exactly the due times the oracle expands
//!   from the same text (`cron_text::expand`, written apart from the core's parser);
//! - text the docs refuse must be refused, with a message naming the first field that is
//!   wrong (the dialect's promise: a typed error naming the field, never a panic).
//!
//! The dialect as the docs state it: numbers within the field (day-of-week 0 to 7, both
//! Sunday), names `jan`-`dec` and `sun`-`sat` in any case, `*`, `?` in the two day fields,
//! ranges `a-b` with `a <= b` (a day-of-week range may end at Sunday written `0` or `sun`),
//! steps `*/n` and `a-b/n` with `n >= 1` (a step past the range's end matches its first
//! value), never a step after a single value (`5/10`), lists of those.

use crate::check::Invariant;
use duetime::{Schedule, Timestamp};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::check::Violation;
use crate::cron_text::{FieldRule as Field, DOM, DOW, HOUR, MINUTE, MONTH, SECOND};
use crate::oracle::Spec;

/// The five fields, with the bounds and names the oracle's own reading of cron text uses.
const FIELDS: [&Field; 5] = [&MINUTE, &HOUR, &DOM, &MONTH, &DOW];
/// The six fields of the form with a leading seconds field.
const FIELDS6: [&Field; 6] = [&SECOND, &MINUTE, &HOUR, &DOM, &MONTH, &DOW];

/// The fields of a form drawn: six, with seconds first, one time in four.
fn draw_fields(rng: &mut ChaCha8Rng) -> &'static [&'static Field] {
    if rng.gen_ratio(1, 4) {
        &FIELDS6
    } else {
        &FIELDS
    }
}

/// Expressions typed per seed.
const TYPED: usize = 2;

/// A value typed for `f`: a number near or at a bound, or in range, or (where the field
/// has names) a name, sometimes misspelt. Its number when the docs accept it.
fn draw_value(rng: &mut ChaCha8Rng, f: &Field) -> (String, Option<u32>) {
    if !f.names.is_empty() && rng.gen_bool(0.3) {
        let i = rng.gen_range(0..f.names.len());
        let name = f.names[i];
        return match rng.gen_range(0..6) {
            0 => (format!("{name}x"), None),
            1 => (name.to_uppercase(), Some(f.low + i as u32)),
            _ => (name.to_string(), Some(f.low + i as u32)),
        };
    }
    let v = match rng.gen_range(0..6) {
        0 => f.low.wrapping_sub(1),
        1 => f.low,
        2 => f.high,
        3 => f.high + 1,
        _ => rng.gen_range(f.low..=f.high),
    };
    if v == u32::MAX {
        // Below a field starting at 0: a sign, which is not a number.
        return ("-1".to_string(), None);
    }
    let accepted = (f.low..=f.high).contains(&v).then_some(v);
    if rng.gen_ratio(1, 8) {
        // Leading zeros: a number is at most nine digits, zeros counted.
        let width = rng.gen_range(8..=10usize);
        return (format!("{v:0width$}"), accepted.filter(|_| width <= 9));
    }
    (v.to_string(), accepted)
}

/// A range `a-b`, and whether the docs accept it.
fn draw_range(rng: &mut ChaCha8Rng, f: &Field) -> (String, bool) {
    let (a, va) = draw_value(rng, f);
    let (b, vb) = draw_value(rng, f);
    let ok = match (va, vb) {
        (Some(x), Some(y)) => x <= y || (f.name == "day-of-week" && y == 0 && x > 0),
        _ => false,
    };
    (format!("{a}-{b}"), ok)
}

/// A step, and whether it is one (at least 1).
fn draw_step(rng: &mut ChaCha8Rng, f: &Field) -> (u32, bool) {
    let n = match rng.gen_range(0..5) {
        0 => 0,
        1 => 1,
        2 => f.high + 1,
        _ => rng.gen_range(2..=f.high.max(2)),
    };
    (n, n >= 1)
}

/// One item of a list, and whether the docs accept it.
fn draw_item(rng: &mut ChaCha8Rng, f: &Field) -> (String, bool) {
    match rng.gen_range(0..10) {
        0..=3 => {
            let (text, v) = draw_value(rng, f);
            (text, v.is_some())
        }
        4 | 5 => draw_range(rng, f),
        6 | 7 => {
            let (n, ok) = draw_step(rng, f);
            (format!("*/{n}"), ok)
        }
        8 => {
            let (range, ok) = draw_range(rng, f);
            let (n, step_ok) = draw_step(rng, f);
            (format!("{range}/{n}"), ok && step_ok)
        }
        _ => {
            // A step after a single value: refused, write a range before it.
            let (v, _) = draw_value(rng, f);
            let (n, _) = draw_step(rng, f);
            (format!("{v}/{n}"), false)
        }
    }
}

/// One field's text, and whether the docs accept it.
fn draw_field(rng: &mut ChaCha8Rng, f: &Field) -> (String, bool) {
    match rng.gen_range(0..8) {
        0 => ("*".to_string(), true),
        1 => ("?".to_string(), f.question),
        _ => {
            let n = rng.gen_range(1..=3);
            let items: Vec<(String, bool)> = (0..n).map(|_| draw_item(rng, f)).collect();
            let text: Vec<&str> = items.iter().map(|(t, _)| t.as_str()).collect();
            (text.join(","), items.iter().all(|(_, ok)| *ok))
        }
    }
}

/// An expression typed field by field: its text, and the fields the docs refuse.
fn draw_expression(rng: &mut ChaCha8Rng) -> (String, Vec<&'static str>) {
    // Most fields typed plainly, so that an expression is wrong in one field or none.
    let fields = draw_fields(rng);
    let mut texts = Vec::with_capacity(fields.len());
    let mut wrong = Vec::new();
    let typed = rng.gen_range(0..fields.len());
    for (i, f) in fields.iter().enumerate() {
        let (text, ok) = if i == typed || rng.gen_bool(0.2) {
            draw_field(rng, f)
        } else {
            let (text, v) = draw_value(rng, f);
            if v.is_some() {
                (text, true)
            } else {
                ("*".to_string(), true)
            }
        };
        if !ok {
            wrong.push(f.name);
        }
        texts.push(text);
    }
    (texts.join(" "), wrong)
}

/// An expression the docs accept (five fields or six) with a stepped range in every
/// field (`a-b/n`, a day-of-week range sometimes ending at Sunday written `0`), steps from
/// 1 to one past the field's top: where `duetime check`'s warning of a step past its
/// range's end is decided.
fn draw_stepped_ranges(rng: &mut ChaCha8Rng) -> String {
    let fields: Vec<String> = draw_fields(rng)
        .iter()
        .map(|f| {
            let a = rng.gen_range(f.low..=f.high);
            let b = if f.name == "day-of-week" && a > 0 && rng.gen_ratio(1, 4) {
                0
            } else {
                rng.gen_range(a..=f.high)
            };
            let n = rng.gen_range(1..=f.high + 1);
            format!("{a}-{b}/{n}")
        })
        .collect();
    fields.join(" ")
}

/// A number past its field's range, alone in an expression otherwise all `*`: the docs
/// promise a refusal naming the field, saying the number is out of range and what the field
/// accepts (`day-of-week: `8` is out of range 0-7`), however many digits it has (one past
/// either end, ten digits, past any `u32`).
fn check_out_of_range(rng: &mut ChaCha8Rng) -> Result<(), String> {
    let all = draw_fields(rng);
    let i = rng.gen_range(0..all.len());
    let f = all[i];
    let number = match rng.gen_range(0..4) {
        0 if f.low > 0 => (f.low - 1).to_string(),
        0 | 1 => (f.high + 1).to_string(),
        2 => format!("{:010}", rng.gen_range(f.high + 1..1000)),
        _ => format!("{}", u64::from(u32::MAX) + rng.gen_range(1..1000)),
    };
    let mut fields = vec!["*".to_string(); all.len()];
    fields[i] = number;
    let text = fields.join(" ");
    let accepted = format!("is out of range {}-{}", f.low, f.high);
    match Schedule::cron(&text, Some("UTC")) {
        Ok(_) => Err(format!(
            "`{text}` was taken, but its {} field is out of range",
            f.name
        )),
        Err(e) => {
            let said = e.to_string();
            (said.starts_with(&format!("{}: ", f.name)) && said.contains(&accepted))
                .then_some(())
                .ok_or(format!(
                    "`{text}` was refused, but the message `{said}` does not name the {} field and say it {accepted}",
                    f.name
                ))
        }
    }
}

/// The macros `docs/schedules.md` lists.
const MACROS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// The zones a `CRON_TZ=` prefix and the zone given beside the text are drawn from.
const ZONES: [&str; 4] = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"];

/// A whole form typed, as the docs list them beside the fields: a macro (one in four
/// misspelt), or five fields behind a `CRON_TZ=` prefix with the same zone given beside
/// it, another, or none. Its text, the zone given, and, when the docs refuse it, the words
/// its message must name (the misspelt macro; both zones of a conflict).
fn draw_form(rng: &mut ChaCha8Rng) -> (String, Option<&'static str>, Option<Vec<String>>) {
    if rng.gen_bool(0.5) {
        let m = MACROS[rng.gen_range(0..MACROS.len())];
        return match rng.gen_range(0..4) {
            0 => (format!("{m}x"), None, Some(vec![format!("{m}x")])),
            _ => (m.to_string(), None, None),
        };
    }
    let fields = [
        "30 2 * * *",
        "0 */6 * * *",
        "15 1 * 3 0",
        "0 12 1,15 * mon-fri",
    ][rng.gen_range(0..4)];
    let zone = ZONES[rng.gen_range(0..ZONES.len())];
    let text = format!("CRON_TZ={zone} {fields}");
    match rng.gen_range(0..3) {
        0 => (text, None, None),
        1 => (text, Some(zone), None),
        _ => {
            let other = ZONES[rng.gen_range(0..ZONES.len())];
            let refused = (other != zone).then(|| vec![zone.to_string(), other.to_string()]);
            (text, Some(other), refused)
        }
    }
}

/// Z2 for one whole form read with zone `tz` beside it: accepted forms must yield the
/// oracle's due times in the zone the docs give them; refused ones must be refused with a
/// message naming each of `refused`.
pub fn check_form(
    text: &str,
    tz: Option<&str>,
    refused: Option<&[String]>,
    from_ms: i64,
) -> Result<(), String> {
    match (Schedule::cron(text, tz), refused) {
        (Ok(schedule), None) => same_due_times_in(text, tz, &schedule, from_ms),
        (Err(e), None) => Err(format!(
            "`{text}` with the zone {tz:?} beside it is documented, but it was refused: {e}"
        )),
        (Ok(_), Some(_)) => Err(format!(
            "`{text}` with the zone {tz:?} beside it was taken, but the docs refuse it"
        )),
        (Err(e), Some(words)) => {
            let said = e.to_string();
            match words.iter().find(|w| !said.contains(w.as_str())) {
                None => Ok(()),
                Some(w) => Err(format!(
                    "`{text}` was refused as it must be, but the message `{said}` does not name `{w}`"
                )),
            }
        }
    }
}

/// Z2 for one expression: `Err` says how the core's reading differs from the docs'.
pub fn check_typed(text: &str, wrong: &[&str], from_ms: i64) -> Result<(), String> {
    let parsed = Schedule::cron(text, Some("UTC"));
    match (wrong, parsed) {
        ([], Err(e)) => Err(format!(
            "`{text}` is the documented dialect, but it was refused: {e}"
        )),
        ([], Ok(schedule)) => {
            same_due_times(text, &schedule, from_ms).and_then(|()| same_wide_steps(text))
        }
        (fields, Ok(_)) => Err(format!(
            "`{text}` was taken, but its {} field is not the documented dialect",
            fields.join(" and ")
        )),
        (fields, Err(e)) => {
            let said = e.to_string();
            if fields.iter().any(|f| said.starts_with(&format!("{f}: "))) {
                Ok(())
            } else {
                Err(format!(
                    "`{text}` was refused as it must be, but the message `{said}` names none of the fields that are wrong ({})",
                    fields.join(", ")
                ))
            }
        }
    }
}

/// How many due times Z2 compares, and how far it looks for them.
const Z2_DUE_TIMES: usize = 24;
const Z2_SPAN_MS: i64 = 400 * 86_400_000;

/// The core's first due times after `from_ms` against the oracle's expansion of the text.
fn same_due_times(text: &str, schedule: &Schedule, from_ms: i64) -> Result<(), String> {
    same_due_times_in(text, Some("UTC"), schedule, from_ms)
}

/// `same_due_times` for text read with the zone `tz` given beside it (`None`: the text's
/// own `CRON_TZ=`, else UTC).
fn same_due_times_in(
    text: &str,
    tz: Option<&str>,
    schedule: &Schedule,
    from_ms: i64,
) -> Result<(), String> {
    let zone = tz.unwrap_or("its own zone");
    let spec = crate::cron_text::expand(text, tz)
        .map_err(|e| format!("`{text}`: the oracle cannot expand it: {e}"))?;
    let (core, until) =
        crate::dates::core_due_times(schedule, from_ms, from_ms + Z2_SPAN_MS, Z2_DUE_TIMES);
    let oracle: Vec<i64> = Spec::Cron(Box::new(spec))
        .due_in(from_ms, until)
        .into_iter()
        .map(|d| d.at)
        .collect();
    if core == oracle {
        // And counted by arithmetic (`count_in`, which works a day or a month at a time)
        // as the walk finds them.
        let counted = schedule.count_in(
            Timestamp::from_millis(from_ms),
            Timestamp::from_millis(until),
        );
        return match counted == oracle.len() as u64 {
            true => Ok(()),
            false => Err(format!(
                "`{text}` ({zone}): {} due times in ({}, {}], but count_in says {counted}",
                oracle.len(),
                ts(from_ms),
                ts(until)
            )),
        };
    }
    let at = crate::dates::first_difference(&core, &oracle);
    let show = |v: Option<&i64>| v.map_or("nothing".to_string(), |t| ts(*t));
    Err(format!(
        "`{text}` ({zone}) after {}: due time {} is {} by the core, {} by the docs",
        ts(from_ms),
        at + 1,
        show(core.get(at)),
        show(oracle.get(at))
    ))
}

/// What `duetime check` says of steps past the end of their range (`wide_steps`) against
/// the docs: exactly the items whose step passes their range's end, each matching only its
/// range's first value.
fn same_wide_steps(text: &str) -> Result<(), String> {
    let core: Vec<(String, String, u32)> = duetime::wide_steps(text)
        .into_iter()
        .map(|w| (w.field.to_string(), w.item.to_ascii_lowercase(), w.matches))
        .collect();
    let docs: Vec<(String, String, u32)> = crate::cron_text::wide_items(text)
        .into_iter()
        .map(|(field, item, matches)| (field.to_string(), item, matches))
        .collect();
    if core == docs {
        return Ok(());
    }
    let show = |v: &[(String, String, u32)]| {
        let items: Vec<String> = v
            .iter()
            .map(|(f, i, m)| format!("{f} `{i}` (only {m})"))
            .collect();
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    Err(format!(
        "`{text}`: the steps past their range's end told are {}, by the docs {}",
        show(&core),
        show(&docs)
    ))
}

fn ts(ms: i64) -> String {
    Timestamp::from_millis(ms).to_string()
}

/// Z2 over the expressions seed `seed` types: how many, and what broke.
pub fn check_seed(seed: u64) -> (u64, Vec<Violation>) {
    let mut rng = crate::gen::stream_rng(seed, crate::gen::Stream::CronTyping);
    // 2024..2032
    let from = |rng: &mut ChaCha8Rng| rng.gen_range(1_704_067_200_000i64..1_956_528_000_000);
    let mut verdicts = Vec::with_capacity(TYPED + 3);
    for _ in 0..TYPED {
        let (text, wrong) = draw_expression(&mut rng);
        let at = from(&mut rng);
        verdicts.push(check_typed(&text, &wrong, at));
    }
    let text = draw_stepped_ranges(&mut rng);
    let at = from(&mut rng);
    verdicts.push(check_typed(&text, &[], at));
    verdicts.push(check_out_of_range(&mut rng));
    let (text, tz, refused) = draw_form(&mut rng);
    let at = from(&mut rng);
    verdicts.push(check_form(&text, tz, refused.as_deref(), at));
    let checked = verdicts.len() as u64;
    let violations = verdicts
        .into_iter()
        .filter_map(Result::err)
        .map(|detail| Violation {
            invariant: Invariant::Z2,
            job: "(cron text)".to_string(),
            detail,
            // Nothing to shrink: it does not depend on the world's events.
            liveness: true,
        })
        .collect();
    (checked, violations)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_735_689_600_000; // 2025-01-01T00:00:00Z

    #[test]
    fn text_the_docs_refuse_must_be_refused_naming_the_field() {
        assert_eq!(check_typed("60 * * * *", &["minute"], T), Ok(()));
        assert_eq!(check_typed("* * * 0 *", &["month"], T), Ok(()));
        assert_eq!(check_typed("5/10 * * * *", &["minute"], T), Ok(()));
        let e = check_typed("59 * * * *", &["minute"], T).expect_err("59 is a minute");
        assert!(e.contains("was taken"), "{e}");
    }

    #[test]
    fn text_the_docs_accept_must_yield_the_oracles_due_times() {
        assert_eq!(check_typed("*/25 1-2 * * mon-sun", &[], T), Ok(()));
        assert_eq!(
            check_typed("0 0 31 feb,apr *", &[], T),
            Ok(()),
            "never due, by both"
        );
        let half_past = Schedule::cron("30 * * * *", Some("UTC")).unwrap();
        let e = same_due_times("0 * * * *", &half_past, T).expect_err("another schedule");
        assert!(e.contains("due time 1"), "{e}");
    }

    #[test]
    fn seeds_type_both_valid_and_invalid_text() {
        let mut rng = crate::gen::stream_rng(1, crate::gen::Stream::CronTyping);
        let drawn: Vec<(String, Vec<&str>)> = (0..400).map(|_| draw_expression(&mut rng)).collect();
        let valid = drawn.iter().filter(|(_, w)| w.is_empty()).count();
        assert!((80..320).contains(&valid), "{valid} of 400 valid");
        let six = drawn
            .iter()
            .filter(|(t, w)| w.is_empty() && t.split(' ').count() == 6)
            .count();
        assert!(six >= 10, "{six} of 400 valid with a seconds field");
        let wide = drawn
            .iter()
            .filter(|(t, w)| w.is_empty() && !crate::cron_text::wide_items(t).is_empty())
            .count();
        // A by-product here; the stepped ranges are drawn to meet them.
        assert!(wide >= 5, "{wide} of 400 with a step past its range's end");
        let stepped: Vec<String> = (0..100).map(|_| draw_stepped_ranges(&mut rng)).collect();
        let wide = stepped
            .iter()
            .filter(|t| !crate::cron_text::wide_items(t).is_empty())
            .count();
        let six = stepped.iter().filter(|t| t.split(' ').count() == 6).count();
        assert!(
            wide >= 50 && six >= 10,
            "of 100 stepped: {wide} wide, {six} of six fields"
        );
    }

    #[test]
    fn macros_and_zone_prefixes_are_read_as_the_docs_say() {
        for m in MACROS {
            assert_eq!(check_form(m, None, None, T), Ok(()), "{m}");
        }
        let typo = ["@dailyx".to_string()];
        assert_eq!(check_form("@dailyx", None, Some(&typo), T), Ok(()));
        let text = "CRON_TZ=Asia/Kolkata 30 2 * * *";
        assert_eq!(check_form(text, None, None, T), Ok(()));
        assert_eq!(check_form(text, Some("Asia/Kolkata"), None, T), Ok(()));
        let both = ["Asia/Kolkata".to_string(), "UTC".to_string()];
        assert_eq!(check_form(text, Some("UTC"), Some(&both), T), Ok(()));
        // Read in the wrong zone, the due times differ: the comparison notices.
        let utc = Schedule::cron("30 2 * * *", Some("UTC")).unwrap();
        assert!(same_due_times_in(text, None, &utc, T).is_err());
        let mut rng = crate::gen::stream_rng(1, crate::gen::Stream::CronTyping);
        let forms: Vec<_> = (0..100).map(|_| draw_form(&mut rng)).collect();
        assert!(forms
            .iter()
            .any(|(t, _, r)| t.starts_with('@') && r.is_none()));
        assert!(forms
            .iter()
            .any(|(t, _, r)| t.starts_with('@') && r.is_some()));
        assert!(forms.iter().any(|(_, tz, r)| tz.is_some() && r.is_some()));
        assert!(forms
            .iter()
            .any(|(t, tz, r)| t.starts_with("CRON") && tz.is_none() && r.is_none()));
    }

    #[test]
    fn steps_past_their_range_are_told_as_the_docs_say() {
        assert_eq!(
            crate::cron_text::wide_items("0 */30 * * *"),
            vec![("hour", "*/30".to_string(), 0)]
        );
        assert_eq!(
            crate::cron_text::wide_items("*/7 */6 1-3/5 */12 */7"),
            vec![
                ("day-of-month", "1-3/5".to_string(), 1),
                ("month", "*/12".to_string(), 1),
                ("day-of-week", "*/7".to_string(), 0)
            ],
            "a minute step of 7 and an hour step of 6 stay in range; `*` in day-of-week is 0-6"
        );
        assert!(
            crate::cron_text::wide_items("0 0 * * */6").is_empty(),
            "sunday and saturday"
        );
        assert_eq!(same_wide_steps("0 */30 1 */100 fri-0/3"), Ok(()));
    }
}
