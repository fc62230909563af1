//! The `human_input` target: what people type on the command line. Durations (`90m`,
//! `1h30m`: the core's `Duration::from_str` behind `--for`, `--tick`), instants
//! (`duetime_host::human::parse_time`: RFC 3339 with an offset, or a date and time with none,
//! read as UTC, behind `--from`, `--at`, what-if's windows) and zone names (`next --tz`,
//! a jobs file's `tz`: the core's cron parser, with the host's suggestion for a misspelt
//! one).
//!
//! What it asserts: never a panic. A duration that parses prints and parses back to itself;
//! a refusal names the text, cut. An instant that parses prints (RFC 3339, UTC) and parses
//! back to itself, and is what the core's own RFC 3339 parser reads when that reads it;
//! the same local time written with `Z`, `+00:00`, no offset, or with seconds and
//! milliseconds spelt out, is one instant, and an offset moves it by exactly the offset
//! (structured mode, against chrono's calendar). A zone is accepted exactly when chrono-tz
//! knows the name, and a suggestion for a refused one is itself a zone.
//!
//! Inputs are text (every parser gets the same text: seeds are examples from the docs and
//! the CLI's help) or structured: a civil time and offset written in several forms.

use arbitrary::{Arbitrary, Unstructured};
use chrono::NaiveDate;
use duetime::{CronError, CronSchedule, Duration, ScheduleError, Timestamp};
use duetime_host::human::{parse_duration, parse_instant, parse_tick, parse_time, ECHO_MAX};

/// Input layout: a first byte below 0x10 selects structured mode (the rest is `Civil`);
/// anything else is text for every parser.
pub fn human_input(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(civil) = Civil::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                check_civil(&civil);
            }
        }
        _ => check_text(&String::from_utf8_lossy(data)),
    }
}

/// What the input decodes to.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => match Civil::arbitrary_take_rest(Unstructured::new(&data[1..])) {
            Ok(civil) => format!("{civil:?}\n{:?}", civil.forms()),
            Err(e) => format!("undecodable: {e}"),
        },
        _ => format!("text {:?}", String::from_utf8_lossy(data)),
    }
}

/// One text through every parser.
pub fn check_text(text: &str) {
    check_duration(text);
    check_instant(text);
    check_zone(text);
}

/// A message echoing `text` holds at most `ECHO_MAX` of its characters, plus its own words.
fn bounded(message: &str) -> bool {
    message.chars().count() <= ECHO_MAX + 300
}

fn check_duration(text: &str) {
    match text.parse::<Duration>() {
        Ok(d) => {
            let shown = d.to_string();
            assert_eq!(
                shown.parse::<Duration>(),
                Ok(d),
                "{text:?} prints as {shown:?}"
            );
            assert_eq!(parse_duration(text), Ok(d));
            // Only digits and units, around spaces the parser trims.
            assert!(
                text.trim().bytes().all(|b| b.is_ascii_alphanumeric()),
                "{text:?} read as {d}"
            );
        }
        Err(e) => {
            assert!(e.to_string().contains("is not a duration"), "{e}");
            let flag = parse_duration(text).expect_err("the flag refuses it too");
            assert!(bounded(&flag), "{flag}");
            assert!(flag.contains("accepted"), "{flag}");
        }
    }
    if let Ok(tick) = parse_tick(text) {
        assert!(tick >= duetime::MIN_TICK, "tick {tick} from {text:?}");
    }
}

fn check_instant(text: &str) {
    let core = text.parse::<Timestamp>();
    match parse_time(text) {
        Ok(t) => {
            if let Ok(c) = core {
                assert_eq!(c, t, "{text:?}: the core reads {c}, the flags {t}");
            }
            let shown = t.to_string();
            if !shown.starts_with('@') {
                assert_eq!(parse_time(&shown), Ok(t), "{text:?} prints as {shown:?}");
            }
            assert_eq!(parse_instant(text), Ok(t));
        }
        Err(why) => {
            assert!(
                core.is_err(),
                "{text:?}: the core reads it, the flags do not"
            );
            assert!(why.contains("accepted"), "{why}");
            let flag = parse_instant(text).expect_err("the flag refuses it too");
            assert!(bounded(&flag), "{flag}");
        }
    }
}

fn check_zone(text: &str) {
    // A zone as `next --tz` gives it, and as a jobs file's `tz` does.
    let known = text.parse::<chrono_tz::Tz>().is_ok();
    match CronSchedule::parse("0 9 * * *", Some(text)) {
        Ok(cron) => {
            assert!(known, "{text:?} taken as a zone chrono-tz does not know");
            let again = CronSchedule::parse("0 9 * * *", Some(cron.zone().name()))
                .expect("a zone's own name is a zone");
            assert_eq!(again.zone().name(), cron.zone().name());
        }
        Err(e) => {
            assert!(!known, "{text:?} refused as a zone: {e}");
            let CronError::UnknownZone { .. } = &e else {
                panic!("{text:?}: refused as a zone with {e:?}");
            };
            // A suggestion weighs the text against every zone's name (about a millisecond):
            // asked only of texts that look like one, so the target keeps its pace.
            let zone_like = text.contains('/') && text.len() <= 64;
            if let Some(hint) = zone_like.then(|| duetime_host::hints::cron(&e)).flatten() {
                assert!(
                    CronSchedule::parse("0 9 * * *", Some(&hint)).is_ok(),
                    "{text:?}: the suggestion {hint:?} is not a zone"
                );
            }
        }
    }
    // The same zone in the expression's own prefix.
    if !text.contains(char::is_whitespace) && !text.is_empty() {
        let prefixed = format!("CRON_TZ={text} 0 9 * * *");
        match duetime::Schedule::cron(&prefixed, None) {
            Ok(_) => assert!(known, "{prefixed:?} taken"),
            Err(ScheduleError::Cron(CronError::UnknownZone { .. })) => {
                assert!(!known, "{prefixed:?} refused")
            }
            Err(_) => {}
        }
    }
}

/// A civil time and an offset, written in the forms the flags accept.
#[derive(Arbitrary, Debug, Clone)]
pub struct Civil {
    pub year: u16,
    pub ordinal: u16,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub millis: u16,
    /// Minutes east of UTC, within a day.
    pub offset_minutes: i16,
    pub lower_z: bool,
}

impl Civil {
    /// The civil fields in range (years 1 to 9999), or `None` for a day the year lacks.
    fn parts(&self) -> Option<(NaiveDate, u32, u32, u32, u32, i64)> {
        let year = 1 + i32::from(self.year % 9999);
        let date = NaiveDate::from_yo_opt(year, 1 + u32::from(self.ordinal % 366))?;
        let offset = i64::from(self.offset_minutes % (24 * 60));
        Some((
            date,
            u32::from(self.hour % 24),
            u32::from(self.minute % 60),
            u32::from(self.second % 60),
            u32::from(self.millis % 1000),
            offset,
        ))
    }

    /// `(text, the instant it must be)` for every form.
    pub fn forms(&self) -> Vec<(String, i64)> {
        let Some((date, h, m, s, ms, offset)) = self.parts() else {
            return Vec::new();
        };
        let utc = date
            .and_hms_milli_opt(h, m, s, ms)
            .expect("fields in range")
            .and_utc()
            .timestamp_millis();
        let day = date.format("%Y-%m-%d");
        let z = if self.lower_z { "z" } else { "Z" };
        let sign = if offset < 0 { '-' } else { '+' };
        let off = format!("{sign}{:02}:{:02}", offset.abs() / 60, offset.abs() % 60);
        let minute = utc - i64::from(s) * 1000 - i64::from(ms);
        let second = utc - i64::from(ms);
        let shifted = |t: i64| t - offset * 60_000;
        vec![
            (format!("{day}T{h:02}:{m:02}"), minute),
            (format!("{day}T{h:02}:{m:02}{z}"), minute),
            (format!("{day}T{h:02}:{m:02}:{s:02}"), second),
            (format!("{day}T{h:02}:{m:02}:{s:02}{z}"), second),
            (format!("{day}T{h:02}:{m:02}:{s:02}.{ms:03}"), utc),
            (format!("{day}T{h:02}:{m:02}:{s:02}.{ms:03}+00:00"), utc),
            (format!("{day}T{h:02}:{m:02}{off}"), shifted(minute)),
            (format!("{day}T{h:02}:{m:02}:{s:02}{off}"), shifted(second)),
            (
                format!("{day}T{h:02}:{m:02}:{s:02}.{ms:03}{off}"),
                shifted(utc),
            ),
            (
                format!(" {day}T{h:02}:{m:02}:{s:02}{off} "),
                shifted(second),
            ),
        ]
    }
}

/// Every form of one civil time is read as the instant it names.
pub fn check_civil(civil: &Civil) {
    for (text, want) in civil.forms() {
        let got = parse_time(&text).unwrap_or_else(|e| panic!("{text:?} refused: {e}"));
        assert_eq!(
            got,
            Timestamp::from_millis(want),
            "{text:?} read as {got}, not {}",
            Timestamp::from_millis(want)
        );
        // Zone names are the text mode's: their suggestions cost a millisecond a text.
        check_duration(&text);
        check_instant(&text);
    }
}
