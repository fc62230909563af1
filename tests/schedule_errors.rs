//! Refused schedules: every bad input gets a typed error whose message names the field, the
//! offending text and what is accepted. The exact messages are snapshotted in one table, and
//! random garbage must never panic.

use duetime::{Duration, Schedule, ScheduleError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// `(expression, zone given beside it)`.
const BAD: &[(&str, Option<&str>)] = &[
    // Field counts.
    ("", None),
    ("   \t ", None),
    ("*", None),
    ("* * * *", None),
    ("* * * * * * *", None),
    ("0 0 * * * * 2025", None),
    // Out of range, in every field.
    ("60 * * * * *", None),
    ("60 * * * *", None),
    ("* 24 * * *", None),
    ("* * 0 * *", None),
    ("* * 32 * *", None),
    ("* * * 0 *", None),
    ("* * * 13 *", None),
    ("* * * * 8", None),
    ("0-60 * * * *", None),
    ("* 20-24 * * *", None),
    ("* * * * 1-8", None),
    ("-5 * * * *", None),
    ("? * * * *", None),
    // Names.
    ("* * * foo *", None),
    ("* * * january *", None),
    ("* * * * funday", None),
    ("* * * * mon-fry", None),
    ("0 0 * * Mo", None),
    ("0 0 mon * *", None),
    ("0 jan * * *", None),
    // Steps.
    ("*/0 * * * *", None),
    ("5/10 * * * *", None),
    ("*/x * * * *", None),
    ("*/ * * * *", None),
    ("1-10/0 * * * *", None),
    // Backward ranges.
    ("30-10 * * * *", None),
    ("* * * dec-jan *", None),
    ("* * * * fri-mon", None),
    ("* * * * thu-tue", None),
    ("* * * * sun-sat-mon", None),
    // `L` and `#` where they do not belong.
    ("L * * * *", None),
    ("* L * * *", None),
    ("* * * L *", None),
    ("* * 5L * *", None),
    ("* * 1#2 * *", None),
    ("* * * * L", None),
    ("* * LW * *", None),
    ("* * L/2 * *", None),
    ("* * * * 5L/2", None),
    ("* * * * 1-5#2", None),
    ("* * * * 5#6", None),
    ("* * * * 5#0", None),
    ("* * * * 5#", None),
    ("* * * * #3", None),
    ("* * * * 8#2", None),
    ("* * * * 8L", None),
    // Empty items.
    ("1,,2 * * * *", None),
    (",1 * * * *", None),
    ("* * * * 1,", None),
    ("- * * * *", None),
    ("1- * * * *", None),
    // Macros.
    ("@fortnightly", None),
    ("@every 5m", None),
    ("@reboot", None),
    ("@daily 5", None),
    ("@", None),
    // Zones.
    ("0 0 * * *", Some("America/New_Yrok")),
    ("CRON_TZ=Mars/Olympus_Mons 0 0 * * *", None),
    ("CRON_TZ= 0 0 * * *", None),
    ("0 0 * * *", Some("")),
    ("0 0 * * *", Some("america/new_york")),
    ("CRON_TZ=Europe/London 0 0 * * *", Some("America/New_York")),
    ("CRON_TZ=UTC", None),
    // Huge numbers.
    ("99999999999999999999 * * * *", None),
    ("*/99999999999 * * * *", None),
    ("0-4294967296 * * * *", None),
    ("* * * * 4294967303", None),
    ("* * * * 5#4294967297", None),
    // Unicode garbage.
    ("０ * * * *", None),
    ("* * * * 月", None),
    ("cron_tzé 0 0 * * *", None),
    ("CRON_TZ=Europe/Zürich 0 0 * * *", None),
    ("💥 * * * *", None),
    ("\u{200b}* * * * *", None),
    ("* * * * mon\u{301}", None),
    ("* * * ｊａｎ *", None),
    ("*\u{2003}*\u{2003}*\u{2003}*", None),
];

/// The text of a refusal echoes at most 80 characters of a token, then its length.
#[test]
fn a_huge_token_is_cut_in_the_message() {
    let token = "x".repeat(100_000);
    let msg = message(&format!("{token} * * * *"), None);
    assert!(msg.len() < 400, "{} characters", msg.len());
    assert!(msg.contains("… (100000 characters)"), "{msg}");
    let msg = message("0 0 * * *", Some(&"Z".repeat(100_000)));
    assert!(
        msg.len() < 400 && msg.contains("(100000 characters)"),
        "{msg}"
    );
}

fn message(expr: &str, tz: Option<&str>) -> String {
    match Schedule::cron(expr, tz) {
        Ok(s) => panic!("`{expr}` was accepted as {s}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn refusals_name_the_field_the_text_and_what_is_accepted() {
    let mut table = String::new();
    for &(expr, tz) in BAD {
        let shown = format!("{expr:?}");
        let zone = tz.map(|z| format!(" in {z:?}")).unwrap_or_default();
        table.push_str(&format!("{shown}{zone}\n    => {}\n", message(expr, tz)));
    }
    table.push_str(&format!(
        "every 0s\n    => {}\n",
        Schedule::every(Duration::ZERO, Duration::ZERO).unwrap_err()
    ));
    insta::assert_snapshot!("refusals", table);
}

#[test]
fn errors_are_typed() {
    use duetime::{CronError, Field, Problem};
    let field = |expr: &str| match Schedule::cron(expr, None) {
        Err(ScheduleError::Cron(CronError::Field { field, problem, .. })) => (field, problem),
        other => panic!("{expr}: {other:?}"),
    };
    assert_eq!(
        field("* * * * 8"),
        (Field::DayOfWeek, Problem::OutOfRange { low: 0, high: 7 })
    );
    assert_eq!(field("*/0 * * * *"), (Field::Minute, Problem::ZeroStep));
    assert_eq!(
        field("* * * * 5#6"),
        (Field::DayOfWeek, Problem::NthOutOfRange)
    );
    assert_eq!(field("* * 5L * *"), (Field::DayOfMonth, Problem::Misplaced));
    assert_eq!(
        field("0-60 * * * * *"),
        (Field::Second, Problem::OutOfRange { low: 0, high: 59 })
    );
    assert!(matches!(
        Schedule::cron("0 0 * * *", Some("Nowhere/Land")),
        Err(ScheduleError::Cron(CronError::UnknownZone { .. }))
    ));
    assert!(matches!(
        Schedule::cron("CRON_TZ=UTC 0 0 * * *", Some("Europe/London")),
        Err(ScheduleError::Cron(CronError::ZoneConflict { .. }))
    ));
    assert!(matches!(
        Schedule::cron("* *", None),
        Err(ScheduleError::Cron(CronError::FieldCount { found: 2, .. }))
    ));
}

/// Things that look odd but are cron: they parse, and mean what cronie means.
#[test]
fn odd_but_valid_expressions_are_accepted() {
    for expr in [
        "0 0 1 jul *",
        "0 0 1 jun-jul *",
        "0 0 * JUL,Aug *",
        "0 0 * * 7",
        "0 0 * * 5-7",
        "0 0 * * SUN-SAT",
        "0 0 ? * 5L",
        "0 0 L * ?",
        "0 0 L,15 * 5#3,1L",
        "*/59 */23 */31 */12 */7",
        "59 59 23 31 12 7",
        "0 0 0 1 1 0",
        "@ANNUALLY",
        "cron_tz=America/New_York 0 9 * * mon-fri",
        "  0\t9  *  *  *  ",
    ] {
        if let Err(e) = Schedule::cron(expr, None) {
            panic!("`{expr}` was refused: {e}");
        }
    }
}

/// Random text, cron-like or not, is parsed or refused, never a panic.
#[test]
fn garbage_never_panics() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let token = prop_oneof![
        "[0-9*/,#?lLwW@-]{0,6}",
        "[0-9]{1,12}",
        "(mon|jul|dec|sun|fri|l|@daily|@reboot|cron_tz=UTC|CRON_TZ=|\\?)",
        "\\PC{0,4}",
    ];
    let text = prop::collection::vec(token, 0..8).prop_map(|t| t.join(" "));
    let zone = prop::option::of(prop_oneof![
        Just("UTC".to_string()),
        Just("America/New_York".to_string()),
        "\\PC{0,12}",
    ]);
    runner
        .run(&(text, zone), |(text, zone)| {
            if let Ok(s) = Schedule::cron(&text, zone.as_deref()) {
                // What parses must also print, parse back and answer without panicking.
                let shown = match &s {
                    Schedule::Cron(c) => c.to_string(),
                    _ => unreachable!(),
                };
                let again = Schedule::cron(&shown, None).unwrap();
                prop_assert_eq!(&again, &s);
                let t = duetime::Timestamp::from_secs(1_700_000_000);
                let _ = s.next_after(t);
                let _ = s.count_in(t, duetime::Timestamp::from_secs(1_700_086_400));
            } else {
                let e = Schedule::cron(&text, zone.as_deref()).unwrap_err();
                prop_assert!(!e.to_string().is_empty());
            }
            Ok(())
        })
        .unwrap();
}
