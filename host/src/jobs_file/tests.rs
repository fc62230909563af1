//! The jobs file read end to end: what is accepted, and every error with its line.

use duetime::{DstPolicy, Duration, Fold, Gap, MissedRule, Overlap, Schedule};

use super::*;

fn errors(text: &str) -> Vec<String> {
    match parse_str(text, "jobs.toml") {
        Ok(f) => panic!("expected errors, parsed {} jobs", f.jobs.len()),
        Err(es) => es.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn the_dead_mans_switch_reads_as_a_duration_and_below_the_tick_is_refused_by_name() {
    let text = "[[job]]\nname = \"report\"\ncron = \"0 9 * * *\"\ncommand = [\"true\"]\nexpect_success_within = \"26h\"\n";
    let file = parse_str(text, "jobs.toml").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        file.jobs[0].def.expect_success_within,
        Some(Duration::from_hours(26))
    );
    let too_soon = text.replace("\"26h\"", "\"10s\"");
    let es = errors(&too_soon);
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(
        es[0].contains("field \"expect_success_within\"")
            && es[0].contains("accepted: at least the tick"),
        "{es:?}"
    );
    let not_a_duration = text.replace("\"26h\"", "\"a day\"");
    let es = errors(&not_a_duration);
    assert!(es[0].contains("expect_success_within"), "{es:?}");
}

#[test]
fn a_full_job_reads_into_the_core_definition() {
    let text = r#"
[[job]]
name = "backup"
title = "Nightly backup"
cron = "30 2 * * *"
tz = "America/New_York"
dst = { fold = "last" }
command = ["/usr/local/bin/backup", "--full"]
workdir = "/var/backups"
env = { LANG = "C", MODE = "full" }
missed = "required"
retries = 3
backoff = { initial = "1m", max = "1h" }
timeout = "2h"
stall_after = "3h"
safe_to_repeat = true
legal_duty = true
concurrency_key = "disk"

[[job]]
name = "tick"
every = "15m"
offset = "5m"
command = ["true"]
catch_up_window = "1h"
missed = "catch_up_once"
overlap = "buffer_one"

[[job]]
name = "once"
at = 2025-03-09T07:00:00Z
command = ["echo", "hi"]
"#;
    let file = parse_str(text, "jobs.toml").unwrap();
    let names: Vec<_> = file.jobs.iter().map(|j| j.def.name.to_string()).collect();
    assert_eq!(names, ["backup", "tick", "once"]);
    let b = &file.jobs[0];
    assert_eq!(b.def.title, "Nightly backup");
    assert_eq!(b.def.missed, MissedRule::Required);
    assert_eq!(b.def.retries, 3);
    assert_eq!(b.def.backoff.initial, Duration::from_mins(1));
    assert_eq!(b.def.timeout, Duration::from_hours(2));
    assert!(b.def.safe_to_repeat && b.def.legal_duty);
    assert_eq!(b.def.concurrency_key.as_deref(), Some("disk"));
    let Schedule::Cron(c) = &b.def.schedule else {
        panic!()
    };
    assert_eq!(
        c.explicit_policy(),
        Some(DstPolicy {
            gap: Gap::RunAtGapEnd,
            fold: Fold::Last
        })
    );
    assert_eq!(b.command.argv, ["/usr/local/bin/backup", "--full"]);
    assert_eq!(b.command.env.len(), 2);
    assert_eq!(
        file.jobs[1].def.schedule,
        Schedule::every(Duration::from_mins(15), Duration::from_mins(5)).unwrap()
    );
    assert_eq!(file.jobs[1].def.overlap, Some(Overlap::BufferOne));
    assert_eq!(
        file.jobs[2].def.schedule,
        Schedule::at("2025-03-09T07:00:00Z".parse().unwrap())
    );
}

#[test]
fn an_empty_file_has_no_jobs() {
    assert_eq!(parse_str("", "x").unwrap().jobs.len(), 0);
    assert_eq!(parse_str("# nothing\n", "x").unwrap().jobs.len(), 0);
}

#[test]
fn errors_name_file_line_job_field_and_what_is_accepted() {
    let es = errors(
        "[[job]]\nname = \"backup\"\ncron = \"30 2 * * *\"\ncommand = [\"b\"]\nmissed = \"sometimes\"\n",
    );
    assert_eq!(
        es,
        [
            "jobs.toml:5: job \"backup\": field \"missed\": \"sometimes\" is not a missed rule; accepted: skip, catch_up_once, required"
        ]
    );
}

#[test]
fn every_error_of_a_file_is_reported() {
    let es = errors(
        r#"
[[job]]
name = "a"
cron = "61 * * * *"
command = []
timeout = 10

[[job]]
name = "a"
every = "5m"
at = "2025-01-01T00:00:00Z"
command = ["x"]
"#,
    );
    assert_eq!(es.len(), 5, "{es:#?}");
    assert!(es[0].starts_with("jobs.toml:4: job \"a\": field \"cron\": minute: `61`"));
    assert!(es[1].starts_with("jobs.toml:5: job \"a\": field \"command\": is empty"));
    assert!(es[2].starts_with("jobs.toml:6: job \"a\": field \"timeout\": is an integer"));
    assert!(es[3].starts_with("jobs.toml:8: job \"a\": has 2 schedules (every, at)"));
    assert!(es[4].starts_with(
        "jobs.toml:9: job \"a\": field \"name\": \"a\" is already the name of job #1 (line 2)"
    ));
}

#[test]
fn field_errors_and_the_cores_refusals_come_in_one_pass() {
    let es = errors(
        r#"
[[job]]
name = "a"
every = "5m"
command = ["x"]
timeout = "soon"
legal_duty = true
jitter = "2h"
concurrency_limit = 0
pause_after_failures = 0

[[job]]
name = "b"
cron = "61 * * * *"
command = ["x"]
missed = "requried"
legal_duty = true
catch_up_window = "1h"
retries = 500
"#,
    );
    let fields: Vec<&str> = es
        .iter()
        .map(|e| {
            e.split("field \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    // Job a: a field error, then every refusal of the core; job b: field errors, and
    // the core's refusals that do not hang on them (not "legal_duty needs required",
    // since `missed` itself is misspelt).
    assert_eq!(
        fields,
        [
            "timeout",
            "legal_duty",
            "jitter",
            "concurrency_limit",
            "pause_after_failures",
            "cron",
            "missed",
            "retries"
        ],
        "{es:#?}"
    );
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let es = errors("[[job]]\nname = \"a\"\ncron = \"* * * * *\n");
    assert!(es[0].starts_with("jobs.toml:3:"), "{es:?}");
    assert!(es[0].contains("not valid TOML"), "{es:?}");
}

#[test]
fn misspelt_keys_get_a_suggestion() {
    let es =
        errors("[[job]]\nname = \"a\"\ncron = \"@daily\"\ncommand = [\"x\"]\ntimout = \"1m\"\n");
    assert!(
        es[0].contains("field \"timout\": is not accepted (did you mean \"timeout\"?)"),
        "{es:?}"
    );
    let es = errors("[[jobs]]\nname = \"a\"\n");
    assert!(es[0].contains("(did you mean \"job\"?)"), "{es:?}");
}

/// Issue 42: a short key far from every accepted one gets no guess.
#[test]
fn an_unrelated_short_key_gets_no_suggestion() {
    let es = errors("foo = 1\n");
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(!es[0].contains("did you mean"), "{es:?}");
    let es = errors("[[job]]\nname = \"a\"\ncron = \"@daily\"\ncommand = [\"x\"]\nnmae = 1\n");
    assert!(
        es.iter().any(|e| e.contains("did you mean \"name\"")),
        "{es:?}"
    );
}

/// Issue 42: a bad `cron` and a misspelt `tz` in one job are both reported.
#[test]
fn a_bad_cron_does_not_hide_a_bad_zone() {
    let es = errors(
        "[[job]]\nname = \"a\"\ncron = \"0 0 32 * *\"\ntz = \"Europe/Pariss\"\ncommand = [\"x\"]\n",
    );
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(es.iter().any(|e| e.contains("field \"cron\"")), "{es:?}");
    assert!(
        es.iter()
            .any(|e| e.contains("field \"tz\"") && e.contains("Europe/Paris")),
        "{es:?}"
    );
}

#[test]
fn the_core_validation_speaks_through_the_file() {
    let es = errors(
        "[[job]]\nname = \"a\"\nevery = \"1s\"\ncommand = [\"x\"]\n\n[[job]]\nname = \"b\"\ncron = \"@daily\"\ncommand = [\"x\"]\nlegal_duty = true\n",
    );
    assert_eq!(
        es,
        [
            "jobs.toml:3: job \"a\": field \"every\": every 1s is shorter than the tick (30s); accepted: a period of at least the tick",
            "jobs.toml:10: job \"b\": field \"legal_duty\": a legal duty needs the missed rule `required`; accepted: missed = \"required\" with legal_duty = true, or legal_duty = false",
        ]
    );
}

#[test]
fn alerts_tables_read_at_the_top_and_per_job_and_refuse_with_what_is_accepted() {
    let file = parse_str(
        "[alerts]\ncommand = [\"page-me\"]\nwebhook = \"https://hooks.example/d\"\n\n\
         [[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = [\"true\"]\n\n\
         [[job]]\nname = \"b\"\nevery = \"1m\"\ncommand = [\"true\"]\nalerts = {}\n",
        "jobs.toml",
    )
    .unwrap();
    let global = file.alerts.as_ref().unwrap();
    assert_eq!(
        global.webhook.as_ref().unwrap().as_str(),
        "https://hooks.example/d"
    );
    assert_eq!(file.jobs[0].route(Some(global)), Some(global));
    assert!(!file.jobs[1].route(Some(global)).unwrap().sends());
    let errors = errors(
        "[alerts]\nwebhook = \"ftp://x\"\n\n[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = [\"true\"]\nalerts = { retries = \"many\" }\n",
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0]
            .starts_with("jobs.toml:1: field \"alerts.webhook\": \"ftp://x\" is not a webhook URL"),
        "{errors:?}"
    );
    assert!(
        errors[1]
            .contains("job \"a\": field \"alerts.retries\": is a string; accepted: an integer"),
        "{errors:?}"
    );
}

#[test]
fn never_panics_on_mangled_input() {
    let base = include_str!("../../jobs.example.toml").as_bytes().to_vec();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..2_000 {
        let mut bytes = base.clone();
        for _ in 0..(next() % 8 + 1) {
            let at = (next() as usize) % bytes.len();
            match next() % 3 {
                0 => bytes[at] = next() as u8,
                1 => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, b"\"[]{}=,.\n#0\\"[(next() % 12) as usize]),
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_str(&text, "fuzz.toml");
    }
}

/// A dotted key in a job (`o.ffset`) is an implicit table without a span; it once made the
/// second read for lines fail, and every error of the file pointed at the first `[[job]]`.
#[test]
fn a_dotted_key_does_not_cost_the_other_errors_their_lines() {
    let es = errors(
        "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = [\"x\"]\n\n[[job]]\nname = \"b\"\nevery = \"1m\"\no.ffset = \"5m\"\ncommand = [\"x\"]\ntimout = \"1m\"\n",
    );
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(
        es[0].starts_with("jobs.toml:9: job \"b\": field \"o\""),
        "{es:?}"
    );
    assert!(
        es[1].starts_with("jobs.toml:11: job \"b\": field \"timout\""),
        "{es:?}"
    );
}

const CALENDARS: &str = r#"
[calendars.holidays]
yearly = true
dates = ["2025-12-25", { date = "2026-01-01", label = "New Year's Day" }, "2025-12-24T12:00..2025-12-26"]

[calendars.freeze]
dates = ["2025-11-20..2025-11-30"]

[[job]]
name = "payroll"
cron = "0 9 * * *"
tz = "Europe/London"
exclude = ["holidays", "freeze"]
business_day = -1
roll = "next"
command = ["true"]
"#;

#[test]
fn calendars_and_business_days_read_into_a_calendar_schedule() {
    let file = parse_str(CALENDARS, "jobs.toml").unwrap_or_else(|e| panic!("{e:?}"));
    let Schedule::Calendar(c) = &file.jobs[0].def.schedule else {
        panic!("{:?}", file.jobs[0].def.schedule);
    };
    let names: Vec<&str> = c.exclude().iter().map(|c| c.name().as_str()).collect();
    assert_eq!(names, ["holidays", "freeze"]);
    assert!(c.exclude()[0].yearly() && !c.exclude()[1].yearly());
    assert_eq!(c.business_day().map(|b| b.get()), Some(-1));
    assert_eq!(c.roll(), duetime::Roll::Next);
    let labels: Vec<Option<&str>> = c.exclude()[0].spans().iter().map(|s| s.label()).collect();
    assert_eq!(labels, [None, None, Some("New Year's Day")]);
}

#[test]
fn calendar_mistakes_name_the_field_and_the_line() {
    let es = errors(&CALENDARS.replace("\"freeze\"]", "\"freez\"]"));
    assert_eq!(
        es,
        [
            "jobs.toml:13: job \"payroll\": field \"exclude\": exclude: no calendar `freez`; \
          accepted: freeze, holidays"
        ]
    );
    let es = errors(&CALENDARS.replace("business_day = -1", "business_day = 0"));
    let ok = es[0].starts_with("jobs.toml:14:") && es[0].contains("accepted: 1 to 23");
    assert!(ok, "{es:?}");
    let backwards = "\"2025-11-30..2025-11-20\"";
    let es = errors(&CALENDARS.replace("\"2025-11-20..2025-11-30\"", backwards));
    let ok = es[0].contains("calendars.freeze.dates") && es[0].contains("ends before it starts");
    assert!(ok, "{es:?}");
    let es = errors(&CALENDARS.replace("\"2025-12-25\"", "\"2025-12-32\""));
    let ok = es[0].contains("calendars.holidays.dates") && es[0].contains("is not a date");
    assert!(ok, "{es:?}");
    let es = errors(&CALENDARS.replace("roll = \"next\"", "roll = \"later\""));
    let ok = es[0].contains("field \"roll\"") && es[0].contains("\"previous\"");
    assert!(ok, "{es:?}");
    // Both mistakes of the calendar, then the job that names it (it has no calendar).
    let es = errors(&CALENDARS.replace("yearly = true", "yearly = 1\nweekly = true"));
    assert_eq!(es.len(), 3, "{es:?}");
}

#[test]
fn a_calendar_reads_a_file_of_dates_next_to_the_jobs_file() {
    let dir = std::env::temp_dir().join(format!("duetime-calendar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dates =
        "# public holidays\n2026-01-01 New Year's Day\n\n2026-04-03   Good Friday # Easter\n";
    std::fs::write(dir.join("holidays.txt"), dates).unwrap();
    let text = CALENDARS.replace(
        "yearly = true\n",
        "yearly = true\nfile = \"holidays.txt\"\n",
    );
    let jobs = dir.join("jobs.toml");
    let file = parse_str(&text, &jobs.display().to_string()).unwrap_or_else(|e| panic!("{e:?}"));
    let Schedule::Calendar(c) = &file.jobs[0].def.schedule else {
        panic!("a calendar schedule");
    };
    let labels: Vec<Option<&str>> = c.exclude()[0].spans().iter().map(|s| s.label()).collect();
    assert!(labels.contains(&Some("Good Friday")), "{labels:?}");
    std::fs::write(dir.join("holidays.txt"), "2026-01-01\n2026-02-30 nope\n").unwrap();
    let es = match parse_str(&text, &jobs.display().to_string()) {
        Ok(_) => panic!("a bad line is refused"),
        Err(es) => es.iter().map(ToString::to_string).collect::<Vec<_>>(),
    };
    assert!(
        es[0].contains("holidays.txt line 2") && es[0].contains("2026-02-30"),
        "{es:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An iCalendar file of bank holidays as calendar publishers write them (CRLF lines, a
/// folded summary, `DTEND` the day after), with a two-day event and a cancelled one.
const BANK_HOLIDAYS_ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//holidays//EN\r\n\
BEGIN:VEVENT\r\nUID:christmas-2026\r\nDTSTART;VALUE=DATE:20261225\r\nDTEND;VALUE=DATE:20261226\r\nSUMMARY:Christmas Day\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:easter-2026\r\nDTSTART;VALUE=DATE:20260403\r\nDTEND;VALUE=DATE:20260407\r\nSUMMARY:Easter \r\n weekend\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:moved\r\nDTSTART;VALUE=DATE:20260504\r\nSTATUS:CANCELLED\r\nSUMMARY:Moved holiday\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

#[test]
fn a_calendar_reads_the_all_day_events_of_an_icalendar_file() {
    let dir = std::env::temp_dir().join(format!("duetime-ics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jobs = dir.join("jobs.toml").display().to_string();
    let text = CALENDARS.replace(
        "[calendars.freeze]\n",
        "[calendars.freeze]\nics = \"bank.ics\"\n",
    );
    std::fs::write(dir.join("bank.ics"), BANK_HOLIDAYS_ICS).unwrap();
    let file = parse_str(&text, &jobs).unwrap_or_else(|e| panic!("{e:?}"));
    let Schedule::Calendar(c) = &file.jobs[0].def.schedule else {
        panic!("a calendar schedule");
    };
    let spans: Vec<(String, Option<&str>)> = c.exclude()[1]
        .spans()
        .iter()
        .map(|s| (s.to_string(), s.label()))
        .collect();
    // DTEND is exclusive: Easter's four days end with the 6th (a span stored as
    // `[from, until)` minutes); the cancelled one is left out.
    for want in [
        ("2026-12-25".to_string(), Some("Christmas Day")),
        (
            "2026-04-03T00:00..2026-04-07T00:00".to_string(),
            Some("Easter weekend"),
        ),
    ] {
        assert!(spans.contains(&want), "{want:?} not in {spans:?}");
    }
    assert!(!spans.iter().any(|(s, _)| s.contains("05-04")), "{spans:?}");

    let refused = |ics: &str| -> Vec<String> {
        std::fs::write(dir.join("bank.ics"), ics).unwrap();
        match parse_str(&text, &jobs) {
            Ok(_) => panic!("refused: {ics}"),
            Err(es) => es.iter().map(ToString::to_string).collect(),
        }
    };
    let timed =
        BANK_HOLIDAYS_ICS.replace("DTSTART;VALUE=DATE:20261225", "DTSTART:20261225T090000Z");
    let es = refused(&timed);
    let ok = es[0].contains("calendars.freeze.ics")
        && es[0].contains("event `Christmas Day`")
        && es[0].contains("only all-day events");
    assert!(ok, "{es:?}");
    let yearly = BANK_HOLIDAYS_ICS.replace(
        "SUMMARY:Christmas Day",
        "RRULE:FREQ=YEARLY\r\nSUMMARY:Christmas Day",
    );
    let es = refused(&yearly);
    assert!(es[0].contains("yearly = true"), "{es:?}");
    let es = refused("2026-12-25 not a calendar\n");
    assert!(es[0].contains("not an iCalendar file"), "{es:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An error names its field as a value a caller can match on (`check --json` and the
/// suggestions need no parsing of the text), printed exactly as the key is written.
#[test]
fn a_field_error_holds_its_key_typed() {
    let text = "[[job]]\nname = \"a\"\ncron = \"0 9 * * *\"\ntz = \"UTC\"\ncommand = [\"x\"]\n\
                dst = { gap = \"sometimes\" }\nenv = { \"A=B\" = \"c\" }\ntimout = \"1m\"\n";
    let Err(es) = parse_str(text, "jobs.toml") else {
        panic!("three mistakes, accepted")
    };
    let fields: Vec<(Option<&FieldKey>, String)> = es
        .iter()
        .map(|e| {
            (
                e.field(),
                e.field().map_or(String::new(), |f| f.to_string()),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            (
                Some(&FieldKey::Inner(Field::Dst, "gap".to_string())),
                "dst.gap".to_string()
            ),
            (
                Some(&FieldKey::Inner(Field::Env, "A=B".to_string())),
                "env.A=B".to_string()
            ),
            (
                Some(&FieldKey::Unknown("timout".to_string())),
                "timout".to_string()
            ),
        ],
        "{es:?}"
    );
    assert_eq!(es[0].field().and_then(|f| f.field()), Some(Field::Dst));
    assert_eq!(es[0].field().map(|f| f.key()), Some("dst"));
}

/// Issue 45: report after load after extract, written downstream first; the two without
/// a schedule take extract's, through the chain.
const CHAIN: &str = r#"
[[job]]
name = "report"
after = ["load"]
command = ["report"]

[[job]]
name = "load"
after = ["extract"]
command = ["load"]

[[job]]
name = "extract"
cron = "0 2 * * *"
tz = "Europe/Paris"
command = ["extract"]

[[job]]
name = "audit"
cron = "0 2 * * *"
tz = "Europe/Paris"
after = ["extract", "load"]
command = ["audit"]
"#;

#[test]
fn a_chain_in_any_order_takes_its_roots_schedule() {
    let file = parse_str(CHAIN, "jobs.toml").unwrap_or_else(|e| panic!("{e:#?}"));
    let by = |n: &str| file.jobs.iter().find(|j| j.def.name.as_str() == n).unwrap();
    let extract = &by("extract").def.schedule;
    for name in ["report", "load", "audit"] {
        assert_eq!(&by(name).def.schedule, extract, "{name}");
    }
    assert_eq!(by("report").cron_text.as_deref(), Some("0 2 * * *"));
    let after: Vec<&str> = by("audit").def.after.iter().map(|n| n.as_str()).collect();
    assert_eq!(after, ["extract", "load"]);
    // The file's order is kept; the upserts go upstreams first, ties in the file's order.
    let names: Vec<&str> = file.jobs.iter().map(|j| j.def.name.as_str()).collect();
    assert_eq!(names, ["report", "load", "extract", "audit"]);
    let order: Vec<&str> = upsert_order(file.jobs.iter().map(|j| &j.def))
        .into_iter()
        .map(|i| names[i])
        .collect();
    assert_eq!(order, ["extract", "load", "report", "audit"]);
}

#[test]
fn after_refuses_what_is_not_a_list_of_other_jobs_each_once() {
    let one = |after: &str| errors(&CHAIN.replace("after = [\"load\"]", after));
    let es = one("after = \"load\"");
    assert_eq!(
        es,
        [
            "jobs.toml:4: job \"report\": field \"after\": is a string; accepted: an array of \
          names of this file's jobs, such as [\"extract\", \"load\"]"
        ]
    );
    let es = one("after = [\"load\", 3]");
    assert!(
        es[0].contains("is an integer; accepted: an array of names"),
        "{es:?}"
    );
    let es = one("after = [\"Load\"]");
    assert!(es[0].contains("\"Load\" is not a job name"), "{es:?}");
    let es = one("after = [\"report\"]");
    assert_eq!(
        es,
        [
            "jobs.toml:4: job \"report\": field \"after\": names the job itself; accepted: other \
          jobs of this file, each once, with the same schedule (or none: the job takes its \
          upstreams')"
        ]
    );
    let es = one("after = [\"load\", \"load\"]");
    assert!(
        es[0].contains("names \"load\" twice; accepted: other jobs"),
        "{es:?}"
    );
    let many: Vec<String> = (0..=duetime::MAX_UPSTREAMS)
        .map(|i| format!("\"j{i}\""))
        .collect();
    let es = one(&format!("after = [{}]", many.join(", ")));
    assert!(
        es[0].contains("names 9 jobs; accepted: at most 8"),
        "{es:?}"
    );
}

#[test]
fn an_unknown_upstream_is_named_with_the_closest_job() {
    let es = errors(&CHAIN.replace("after = [\"extract\"]", "after = [\"extrat\"]"));
    assert_eq!(
        es,
        [
            "jobs.toml:9: job \"load\": field \"after\": \"extrat\" is not a job of this file \
          (did you mean \"extract\"?); accepted: other jobs of this file, each once, with the \
          same schedule (or none: the job takes its upstreams')"
        ]
    );
    let es = errors(&CHAIN.replace("after = [\"extract\"]", "after = [\"nightly\"]"));
    assert!(!es[0].contains("did you mean"), "{es:?}");
}

#[test]
fn a_cycle_is_named_once_with_its_chain() {
    let text = CHAIN.replace(
        "cron = \"0 2 * * *\"\ntz = \"Europe/Paris\"\ncommand = [\"extract\"]",
        "after = [\"report\"]\ncommand = [\"extract\"]",
    );
    let es = errors(&text);
    assert_eq!(
        es,
        [
            "jobs.toml:4: job \"report\": field \"after\": the jobs wait for each other (report \
          after load after extract after report, each running after the next); accepted: a \
          chain that never comes back to a job"
        ],
    );
}

#[test]
fn schedules_that_differ_along_a_chain_are_refused_naming_both() {
    let own = CHAIN.replace(
        "after = [\"extract\"]\n",
        "after = [\"extract\"]\ncron = \"0 3 * * *\"\ntz = \"Europe/Paris\"\n",
    );
    let es = errors(&own);
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(
        es[0].starts_with("jobs.toml:9: job \"load\": field \"after\": the job's schedule (cron 0 3 * * * in Europe/Paris) is not that of \"extract\" (cron 0 2 * * * in Europe/Paris)"),
        "{es:?}"
    );
    // audit takes two upstreams' schedule; they differ once load has its own.
    let differ = own.replace(
        "cron = \"0 2 * * *\"\ntz = \"Europe/Paris\"\nafter = [\"extract\", \"load\"]",
        "after = [\"extract\", \"nightly\"]",
    ) + "\n[[job]]\nname = \"nightly\"\ncron = \"0 2 * * *\"\ncommand = [\"n\"]\n";
    let es = errors(&differ);
    assert!(
        es.iter().any(|e| e.contains("job \"audit\": field \"after\": the job has no schedule of its own and its upstreams' differ: \"extract\" has cron 0 2 * * * in Europe/Paris, \"nightly\" has cron 0 2 * * * in UTC")),
        "{es:?}"
    );
}

#[test]
fn a_job_taking_its_upstreams_schedule_has_no_schedule_keys() {
    let es = errors(&CHAIN.replace(
        "after = [\"load\"]\n",
        "after = [\"load\"]\ntz = \"UTC\"\nexclude = [\"holidays\"]\n",
    ));
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(
        es[0].contains("field \"tz\": only goes with cron"),
        "{es:?}"
    );
    assert!(
        es[1].contains("field \"exclude\": only goes with a schedule of the job's own"),
        "{es:?}"
    );
    // Without `after`, or with `after = []`, no schedule is still no schedule.
    let es = errors(&CHAIN.replace("after = [\"load\"]\n", ""));
    assert!(es[0].contains("has no schedule"), "{es:?}");
    let es = errors(&CHAIN.replace("after = [\"load\"]", "after = []"));
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(es[0].contains("job \"report\": has no schedule"), "{es:?}");
}

/// A job with errors of its own is not checked against its downstreams again: the file
/// says what is wrong with it, not that its downstreams wait for a job that is not there.
#[test]
fn an_upstream_in_error_does_not_make_its_downstreams_wrong() {
    let es = errors(&CHAIN.replace("command = [\"extract\"]", "command = []"));
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(
        es[0].contains("job \"extract\": field \"command\""),
        "{es:?}"
    );
}
