//! The `jobs_file` target: TOML text into the host's jobs-file checker
//! (`duetime_host::jobs_file::parse_str`), which reads files people write and reports
//! every mistake at once. Never a panic; the same text always gets the same answer. A file
//! that is accepted is accepted again, as an equal `JobsFile`, when its TOML table is
//! printed back by the `toml` crate (another layout of the same document: the host has no
//! printer of its own), and every job's definition passes the core's `JobDef::validate`.
//! A refused file gets at least one error, and each one names where: a line inside the
//! text, or the field or key at fault; the same document printed back is refused with the
//! same errors, lines aside.
//!
//! Inputs are raw text (seeds: the example jobs file, the host's test fixtures, the docs'
//! examples) or structured edits of a real file's table (`json_edit`), so mutations reach
//! the field checks instead of dying in the TOML syntax.

use arbitrary::{Arbitrary, Unstructured};
use duetime::Config;
use duetime_host::jobs_file::{parse_str, parse_str_with, JobsFile, JobsFileError};

use crate::json_edit::{self, Edit, Vocab};

/// The name errors give the file.
const FILE: &str = "jobs.toml";

/// Files the structured mode edits.
const BASES: [&str; 3] = [
    include_str!("../../host/jobs.example.toml"),
    include_str!("../../host/tests/fixtures/jobs.toml"),
    r#"
user = "nobody"
[alerts]
command = ["/bin/true"]
[[job]]
name = "backup"
cron = "30 2 * * *"
tz = "America/New_York"
dst = { gap = "skip", fold = "both" }
command = ["/usr/local/bin/backup", "--full"]
missed = "required"
timeout = "2h"
backoff = { initial = "30s", max = "10m" }
env = { A = "1" }
[[job]]
name = "once"
at = 2025-03-09T07:00:00Z
command = ["/bin/echo", "hi"]
[[job]]
name = "poll"
every = "90s"
offset = "15s"
command = ["/bin/true"]
concurrency_key = "db"
concurrency_limit = 2
"#,
];

const WORDS: [&str; 32] = [
    "backup",
    "30 2 * * *",
    "0 0 30 2 *",
    "@daily",
    "CRON_TZ=Europe/London 0 9 * * *",
    "America/New_York",
    "America/New_Yrok",
    "UTC",
    "90m",
    "0s",
    "1h30m",
    "10000000000000d",
    "2025-03-09T07:00:00Z",
    "2025-03-09T02:00:00-05:00",
    "required",
    "skip",
    "catch_up_once",
    "buffer_one",
    "run_at_gap_end",
    "first",
    "last",
    "both",
    "/bin/true",
    "",
    "\u{0}",
    "nobody",
    "65534",
    "https://example.com/hook",
    "mon-fri",
    "a",
    "job",
    "ü",
];

const KEYS: [&str; 32] = [
    "name",
    "title",
    "cron",
    "tz",
    "dst",
    "every",
    "offset",
    "at",
    "command",
    "workdir",
    "env",
    "env_file",
    "user",
    "group",
    "missed",
    "catch_up_window",
    "overlap",
    "retries",
    "backoff",
    "timeout",
    "safe_to_repeat",
    "legal_duty",
    "concurrency_key",
    "concurrency_limit",
    "jitter",
    "gap",
    "fold",
    "initial",
    "max",
    "alerts",
    "job",
    "webhook",
];

const VOCAB: Vocab = Vocab {
    words: &WORDS,
    keys: &KEYS,
};

#[derive(Arbitrary, Debug, Clone)]
pub struct FileEdits {
    pub base: u8,
    pub edits: Vec<Edit>,
}

impl FileEdits {
    /// The edited file as TOML text, or `None` when the edits made something TOML cannot
    /// hold (a `null`, an integer beyond `i64`).
    pub fn render(&self) -> Option<String> {
        let base = BASES[usize::from(self.base) % BASES.len()];
        let table: toml::Table = toml::from_str(base).expect("bases are TOML");
        let mut doc = serde_json::to_value(&table).expect("a TOML table is JSON");
        json_edit::apply(&mut doc, &self.edits, &VOCAB);
        let table: toml::Table = serde_json::from_value(doc).ok()?;
        toml::to_string(&table).ok()
    }
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is
/// `FileEdits`); anything else is the file's text as it is.
pub fn jobs_file(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(edits) = FileEdits::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                if let Some(text) = edits.render() {
                    check_jobs_file(&text);
                }
            }
        }
        _ => {
            if let Ok(text) = std::str::from_utf8(data) {
                check_jobs_file(text);
            }
        }
    }
}

/// What the input decodes to.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => {
            match FileEdits::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                Ok(edits) => format!("{edits:?}\n{}", edits.render().unwrap_or_default()),
                Err(e) => format!("undecodable: {e}"),
            }
        }
        _ => String::from_utf8_lossy(data).into_owned(),
    }
}

/// See the module's documentation.
pub fn check_jobs_file(text: &str) {
    let first = parse_str(text, FILE);
    assert_eq!(
        first,
        parse_str(text, FILE),
        "two reads of one text differ:\n{text}"
    );
    let config = Config::default();
    assert_eq!(
        first,
        parse_str_with(text, FILE, &config),
        "parse_str is not parse_str_with the default config"
    );
    let reprinted = toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| toml::to_string(&t).ok())
        // Only a reprint the TOML crate reads back is a fair second layout.
        .filter(|r| toml::from_str::<toml::Table>(r).is_ok());
    match &first {
        Ok(file) => {
            check_accepted(file, &config, text);
            let again = reprinted.expect("an accepted file is TOML that prints");
            assert_eq!(
                parse_str(&again, FILE).as_ref(),
                Ok(file),
                "accepted, but not when printed back:\n{text}\n---\n{again}"
            );
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without an error:\n{text}");
            for e in errors {
                check_located(e, text);
            }
            if let Some(again) = reprinted {
                let second =
                    parse_str(&again, FILE).expect_err("refused, but accepted when printed back");
                assert_eq!(
                    without_lines(errors),
                    without_lines(&second),
                    "refused differently when printed back:\n{text}\n---\n{again}"
                );
            }
        }
    }
}

/// An accepted file: every job passes the core's own check, names are distinct, and the
/// cron text kept is the one written.
fn check_accepted(file: &JobsFile, config: &Config, text: &str) {
    let mut names = std::collections::BTreeSet::new();
    for job in &file.jobs {
        job.def
            .validate(config)
            .unwrap_or_else(|e| panic!("accepted a job the core refuses ({e}):\n{text}"));
        assert!(names.insert(job.def.name.clone()), "a name twice:\n{text}");
        if let Some(cron) = &job.cron_text {
            assert!(
                duetime::Schedule::cron(cron, None).is_ok() || cron.contains("CRON_TZ"),
                "kept cron text {cron:?} does not parse"
            );
        }
    }
}

/// The error names where: a line within the text, or the field or key at fault; its
/// message starts with the file's name and says something.
fn check_located(e: &JobsFileError, text: &str) {
    let shown = e.to_string();
    assert!(shown.starts_with(FILE), "{shown:?} does not name the file");
    let last_line = text.split('\n').count();
    if let Some(line) = e.line() {
        assert!(
            (1..=last_line).contains(&line),
            "{shown:?}: line {line} is not in a text of {last_line} lines:\n{text}"
        );
    }
    let named = match e {
        JobsFileError::Read { .. } => panic!("parse_str reads no file: {shown}"),
        JobsFileError::Syntax { column, .. } => *column >= 1,
        JobsFileError::TopLevel { key, .. } => !key.is_empty() || e.line().is_some(),
        JobsFileError::Job { .. } => true,
        JobsFileError::Field { field, .. } => !field.to_string().is_empty() || e.line().is_some(),
    };
    assert!(named, "{shown:?} names neither a line nor a field:\n{text}");
    assert!(
        shown.len() > FILE.len() + 2,
        "{shown:?} says nothing past the file's name"
    );
}

/// The errors with their lines taken out (the layout moves them), in a stable order.
fn without_lines(errors: &[JobsFileError]) -> Vec<String> {
    let mut out: Vec<String> = errors
        .iter()
        .map(|e| {
            let mut e = e.clone();
            match &mut e {
                JobsFileError::Syntax { line, column, .. } => {
                    *line = 0;
                    *column = 0;
                }
                JobsFileError::TopLevel { line, .. }
                | JobsFileError::Job { line, .. }
                | JobsFileError::Field { line, .. } => *line = None,
                JobsFileError::Read { .. } => {}
            }
            if let JobsFileError::Field {
                problem: duetime_host::jobs_file::FieldProblem::DuplicateName { first_line, .. },
                ..
            } = &mut e
            {
                *first_line = None;
            }
            format!("{e:?}")
        })
        .collect();
    out.sort();
    out
}
