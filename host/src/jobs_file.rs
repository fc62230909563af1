//! The jobs file (TOML): definitions and the commands they run.
//!
//! Each job is one entry of an array of tables, `[[job]]`, so the file's order is the
//! jobs' order and a name written twice is a readable error of ours rather than TOML's
//! "duplicate key" (which `[job.NAME]` tables would give, without saying which job).
//!
//! ```toml
//! [[job]]
//! name = "backup"
//! cron = "30 2 * * *"
//! tz = "America/New_York"
//! command = ["/usr/local/bin/backup", "--full"]
//! missed = "required"
//! ```
//!
//! The parser reads the whole file and reports every problem it finds, not only the first:
//! a person fixing a file wants the full list in one go. Each error names the file, the line
//! when known, the job (by name, or by position when it has no usable name), the field,
//! what was wrong and what is accepted. It never panics, whatever the bytes.
//!
//! Values are checked here (types, names of rules, durations, cron text through the core's
//! parser), then each complete definition goes through the core's own `JobDef::validate`,
//! so the file refuses exactly what the core would refuse.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use duetime::{
    Backoff, Config, CronError, DefError, DstPolicy, Duration, Fold, Gap, JobDef, JobName,
    MissedRule, Overlap, Schedule, ScheduleError, Timestamp,
};
use duetime::{CronSchedule, MAX_RETRIES};
use serde::Deserialize;

use crate::alerts::RouteProblem;
use toml::{Spanned, Value};

/// A jobs file, read and checked: its jobs in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct JobsFile {
    pub jobs: Vec<HostJob>,
    /// The file's `[alerts]` table: where every job's alerts go unless it says otherwise.
    pub alerts: Option<Route>,
}

/// One job: the core's definition and what the host runs for it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostJob {
    pub def: JobDef,
    /// The `cron` text as the file has it: the core keeps an expression lower-cased
    /// (`0 0 l * *` for `0 0 L * *`), and `check` echoes what the person wrote.
    pub cron_text: Option<String>,
    pub command: Command,
    /// The job's own `alerts = { ... }`, which replaces the file's `[alerts]` for it.
    pub alerts: Option<Route>,
}

impl HostJob {
    /// Where this job's alerts go: its own table, else the file's.
    pub fn route<'a>(&'a self, file: Option<&'a Route>) -> Option<&'a Route> {
        self.alerts.as_ref().or(file)
    }
}

pub use crate::alerts::Route;
pub use crate::command::Command;

/// The keys a `[[job]]` table accepts, in the order the docs list them.
pub const JOB_FIELDS: &[&str] = &[
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
    "overlap",
    "retries",
    "backoff",
    "timeout",
    "stall_after",
    "catch_up_window",
    "safe_to_repeat",
    "legal_duty",
    "concurrency_key",
    "pause_after_failures",
    "wait_budget",
    "alert_throttle",
    "concurrency_limit",
    "jitter",
    "requires_confirmation",
    "expect_success_within",
    "alerts",
];
/// The keys accepted at the top of the file.
pub const TOP_FIELDS: &[&str] = &["user", "group", "alerts", "job"];
const DST_FIELDS: &[&str] = &["gap", "fold"];
const BACKOFF_FIELDS: &[&str] = &["initial", "max"];
const SCHEDULE_FIELDS: &[&str] = &["cron", "every", "at"];

const IDENTITY_FORMS: &str =
    "a user or group name (\"nobody\") or a numeric id as a string (\"65534\"), without NUL";
const NAME_RULE: &str = "a lower-case letter, then at most 63 of a-z, 0-9 and _";
const DURATION_FORMS: &str = "\"30s\", \"10m\", \"1h30m\", \"2d\" or \"250ms\"";
const INSTANT_FORMS: &str =
    "an RFC 3339 instant with an offset, such as \"2025-03-09T07:00:00Z\" or \"2025-03-09T02:00:00-05:00\"";

/// A job as errors name it: by the name written in the file when there is one, else by its
/// position (1-based, in file order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRef {
    Named(String),
    Index(usize),
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobRef::Named(name) => write!(f, "job {}", quote(name)),
            JobRef::Index(i) => write!(f, "job #{i}"),
        }
    }
}

/// Why a jobs file, or one of its jobs, was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum JobsFileError {
    /// The file could not be read.
    Read { file: String, message: String },
    /// Not TOML. Line and column are 1-based.
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key at the top of the file that is not `job`, or `job` not written as `[[job]]`.
    TopLevel {
        file: String,
        line: Option<usize>,
        key: String,
        problem: TopProblem,
    },
    /// A problem with a job as a whole (its schedule keys).
    Job {
        file: String,
        line: Option<usize>,
        job: JobRef,
        problem: JobProblem,
    },
    /// A problem with one field of a job. `field` is the key as written (`dst.gap` for a
    /// nested one).
    Field {
        file: String,
        line: Option<usize>,
        job: JobRef,
        field: String,
        problem: FieldProblem,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopProblem {
    UnknownKey {
        suggestion: Option<&'static str>,
    },
    NotArrayOfTables {
        found: &'static str,
    },
    /// A default (`user`, `group`) that is not a usable name.
    BadDefault {
        found: String,
    },
    /// The `[alerts]` table, or one of its keys (`key` is `alerts.webhook`, ...).
    Alerts(RouteProblem),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobProblem {
    /// An entry of `job` that is not a table (`job = [1, 2]`).
    NotATable {
        found: &'static str,
    },
    NoSchedule,
    TwoSchedules {
        fields: Vec<&'static str>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldProblem {
    /// True of this machine, not of the text: a user or group it does not have, or one
    /// the daemon cannot switch to.
    NotOnThisMachine {
        message: String,
    },
    Missing {
        accepted: &'static str,
    },
    Unknown {
        accepted: &'static [&'static str],
        suggestion: Option<&'static str>,
    },
    WrongType {
        found: &'static str,
        accepted: String,
    },
    /// A value of the right type that is not one of the accepted ones: `text` as written,
    /// `what` the kind of value expected ("a missed rule").
    BadValue {
        text: String,
        what: &'static str,
        accepted: String,
    },
    /// An integer outside the accepted range.
    OutOfRange {
        value: i64,
        accepted: String,
    },
    /// The cron text, its zone or its daylight-saving policy, refused by the core's parser.
    Cron(CronError),
    /// An `every` period of zero, refused by the core.
    Schedule(ScheduleError),
    /// A key that belongs with another schedule kind (`tz` without `cron`).
    Needs {
        needs: &'static str,
    },
    /// `offset` not shorter than the `every` period.
    OffsetNotShorter {
        offset: Duration,
        period: Duration,
    },
    EmptyCommand,
    /// An empty program name or a NUL byte in an argument, workdir or env entry.
    BadText {
        problem: &'static str,
    },
    /// Refused by the core's `JobDef::validate`.
    Def(DefError),
    /// The job's `alerts` table, or one of its keys.
    Alerts(RouteProblem),
    /// The name of an earlier job.
    DuplicateName {
        name: String,
        first: usize,
        first_line: Option<usize>,
    },
}

impl fmt::Display for JobsFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobsFileError::Read { file, message } => write!(f, "{file}: cannot read: {message}"),
            JobsFileError::Syntax {
                file,
                line,
                column,
                message,
            } => write!(f, "{file}:{line}:{column}: not valid TOML: {message}"),
            JobsFileError::TopLevel {
                file,
                line,
                key,
                problem,
            } => {
                write!(f, "{}: ", Where(file, *line))?;
                match problem {
                    TopProblem::UnknownKey { suggestion } => {
                        write!(f, "top-level key {} is not accepted", quote(key))?;
                        if let Some(s) = suggestion {
                            write!(f, " (did you mean {}?)", quote(s))?;
                        }
                        write!(
                            f,
                            "; accepted: job, written once per job as [[job]] followed by \
                             its fields, and before it user and group (every job's defaults) \
                             and [alerts] (where alerts go)"
                        )
                    }
                    TopProblem::BadDefault { found } => write!(
                        f,
                        "key {} is {found}; accepted: {}",
                        quote(key),
                        IDENTITY_FORMS
                    ),
                    TopProblem::Alerts(p) => write!(f, "field {}: {p}", quote(key)),
                    TopProblem::NotArrayOfTables { found } => write!(
                        f,
                        "key \"job\" is {found}; accepted: an array of tables, one [[job]] \
                         header per job (not [job] or [job.NAME])"
                    ),
                }
            }
            JobsFileError::Job {
                file,
                line,
                job,
                problem,
            } => {
                write!(f, "{}: {job}: ", Where(file, *line))?;
                match problem {
                    JobProblem::NotATable { found } => write!(
                        f,
                        "is {found}; accepted: a table of fields under a [[job]] header"
                    ),
                    JobProblem::NoSchedule => {
                        f.write_str("has no schedule; accepted: exactly one of cron, every, at")
                    }
                    JobProblem::TwoSchedules { fields } => write!(
                        f,
                        "has {} schedules ({}); accepted: exactly one of cron, every, at",
                        fields.len(),
                        fields.join(", ")
                    ),
                }
            }
            JobsFileError::Field {
                file,
                line,
                job,
                field,
                problem,
            } => {
                write!(f, "{}: {job}: field {}: ", Where(file, *line), quote(field))?;
                problem.fmt(f)
            }
        }
    }
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldProblem::Missing { accepted } => write!(f, "is missing; accepted: {accepted}"),
            FieldProblem::Unknown {
                accepted,
                suggestion,
            } => {
                f.write_str("is not accepted")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean {}?)", quote(s))?;
                }
                write!(f, "; accepted: {}", accepted.join(", "))
            }
            FieldProblem::NotOnThisMachine { message } => f.write_str(message),
            FieldProblem::Alerts(p) => p.fmt(f),
            FieldProblem::WrongType { found, accepted } => {
                write!(f, "is {found}; accepted: {accepted}")
            }
            FieldProblem::BadValue {
                text,
                what,
                accepted,
            } => write!(f, "{} is not {what}; accepted: {accepted}", quote(text)),
            FieldProblem::OutOfRange { value, accepted } => {
                write!(f, "{value} is out of range; accepted: {accepted}")
            }
            FieldProblem::Cron(e) => {
                e.fmt(f)?;
                match crate::hints::cron(e) {
                    Some(hint) => write!(f, " (did you mean `{hint}`?)"),
                    None => Ok(()),
                }
            }
            FieldProblem::Schedule(e) => {
                let text = e.to_string();
                f.write_str(text.strip_prefix("every: ").unwrap_or(&text))
            }
            FieldProblem::Needs { needs } => {
                write!(
                    f,
                    "only goes with {needs}; accepted: remove it, or use {needs}"
                )
            }
            FieldProblem::OffsetNotShorter { offset, period } => write!(
                f,
                "{offset} is not shorter than the period ({period}); accepted: a duration \
                 from 0s up to, not including, the period"
            ),
            FieldProblem::EmptyCommand => f.write_str(
                "is empty; accepted: a list of strings, the program then its arguments, \
                 such as [\"/usr/local/bin/backup\", \"--full\"]",
            ),
            FieldProblem::BadText { problem } => f.write_str(problem),
            FieldProblem::Def(e) => {
                // The core's text begins with its own name for the field (`schedule: `),
                // which the error already names as the file does.
                let text = e.to_string();
                let rest = text.split_once(": ").and_then(|(head, rest)| {
                    head.bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_')
                        .then_some(rest)
                });
                f.write_str(rest.unwrap_or(&text))?;
                // Where the core's text does not say what would be accepted, say it.
                let accepted = match e {
                    DefError::LegalDutyNeedsRequired => {
                        "missed = \"required\" with legal_duty = true, or legal_duty = false"
                    }
                    DefError::LegalDutyHasWindow => {
                        "no catch_up_window on a legal duty, or legal_duty = false"
                    }
                    DefError::ZeroTimeout => "a duration of at least 1s",
                    DefError::BadBackoff => "{ initial, max } with 1ms <= initial <= max",
                    _ => "",
                };
                if !accepted.is_empty() && !text.contains("accepted") {
                    write!(f, "; accepted: {accepted}")?;
                }
                Ok(())
            }
            FieldProblem::DuplicateName {
                name,
                first,
                first_line,
            } => {
                write!(f, "{} is already the name of job #{first}", quote(name))?;
                if let Some(l) = first_line {
                    write!(f, " (line {l})")?;
                }
                f.write_str("; accepted: a name no other job in the file has")
            }
        }
    }
}

impl std::error::Error for JobsFileError {}

/// `file` or `file:line`.
struct Where<'a>(&'a str, Option<usize>);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(line) => write!(f, "{}:{line}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// A value as TOML would write it: in double quotes, escaped, and cut at 80 characters so
/// a pasted megabyte does not become a megabyte of error.
fn quote(text: &str) -> String {
    let mut cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// The job field a core `DefError` is about (its Display starts with it).
fn def_error_field(e: &DefError) -> &'static str {
    match e {
        DefError::BadName { .. } | DefError::DuplicateName { .. } => "name",
        DefError::TitleTooLong { .. } => "title",
        DefError::LegalDutyNeedsRequired => "legal_duty",
        DefError::LegalDutyHasWindow => "catch_up_window",
        DefError::RequiredCannotSkipOverlap => "overlap",
        DefError::EveryShorterThanTick { .. } => "every",
        DefError::ZeroTimeout => "timeout",
        DefError::TooManyRetries { .. } => "retries",
        DefError::BadBackoff => "backoff",
        DefError::BadConcurrencyKey { .. } => "concurrency_key",
        DefError::ZeroFailureStreak => "pause_after_failures",
        DefError::BadConcurrencyLimit { .. } => "concurrency_limit",
        DefError::JitterTooLong { .. } => "jitter",
        DefError::PayloadTooLong { .. } => "command",
        DefError::ExpectSuccessTooSoon { .. } => "expect_success_within",
    }
}

impl JobsFileError {
    /// The job the error is about, if it is about one.
    pub fn job(&self) -> Option<&JobRef> {
        match self {
            JobsFileError::Job { job, .. } | JobsFileError::Field { job, .. } => Some(job),
            _ => None,
        }
    }

    /// The field the error is about, if it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            JobsFileError::Field { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The 1-based line the error points at, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            JobsFileError::Read { .. } => None,
            JobsFileError::Syntax { line, .. } => Some(*line),
            JobsFileError::TopLevel { line, .. }
            | JobsFileError::Job { line, .. }
            | JobsFileError::Field { line, .. } => *line,
        }
    }
}

/// What the file asks of this machine: every job's `user` and `group` exist here, and, for
/// the daemon (`as_daemon`), that it may switch to them (only root may run a job as
/// another user). A jobs file is text checked anywhere; these are checked where it runs.
pub fn check_machine(file: &str, jobs: &JobsFile, as_daemon: bool) -> Vec<JobsFileError> {
    let mut errors = Vec::new();
    for job in &jobs.jobs {
        let c = &job.command;
        let refused = crate::runner::identity::resolve(c.user.as_deref(), c.group.as_deref())
            .and_then(|run_as| match run_as {
                Some(r) if as_daemon => r.permitted(),
                _ => Ok(()),
            });
        if let Err(e) = refused {
            errors.push(JobsFileError::Field {
                file: file.to_string(),
                line: None,
                job: JobRef::Named(job.def.name.to_string()),
                field: e.field().to_string(),
                problem: FieldProblem::NotOnThisMachine {
                    message: e.to_string(),
                },
            });
        }
    }
    errors
}

/// Reads and checks a jobs file under the default core config. Errors name the file as
/// `path` is written.
pub fn load(path: &Path) -> Result<JobsFile, Vec<JobsFileError>> {
    load_with(path, &Config::default())
}

/// Reads and checks a jobs file; `config` is the one the host will run the core with (its
/// tick bounds `every` periods).
pub fn load_with(path: &Path, config: &Config) -> Result<JobsFile, Vec<JobsFileError>> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        vec![JobsFileError::Read {
            file: file.clone(),
            message: e.to_string(),
        }]
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + upto.iter().filter(|b| **b == b'\n').count();
        let column = 1 + upto.iter().rev().take_while(|b| **b != b'\n').count();
        vec![JobsFileError::Syntax {
            file: file.clone(),
            line,
            column,
            message: "the file is not UTF-8 text".to_string(),
        }]
    })?;
    parse_str_with(&text, &file, config)
}

/// Checks the text of a jobs file under the default core config; `file` names it in errors.
pub fn parse_str(text: &str, file: &str) -> Result<JobsFile, Vec<JobsFileError>> {
    parse_str_with(text, file, &Config::default())
}

/// Checks the text of a jobs file; `file` names it in errors.
pub fn parse_str_with(
    text: &str,
    file: &str,
    config: &Config,
) -> Result<JobsFile, Vec<JobsFileError>> {
    let doc = parse_toml(text, file)?;
    let lines = Lines::of(text);
    let mut errors = unknown_top_keys(&doc, file, &lines);
    let entries = job_entries(&doc, file, &lines, &mut errors);
    let defaults = RunAsDefaults {
        user: top_identity(&doc, "user", file, &lines, &mut errors),
        group: top_identity(&doc, "group", file, &lines, &mut errors),
    };
    let alerts = top_alerts(&doc, file, &lines, &mut errors);
    let mut jobs = Vec::new();
    // Where each valid name was first seen: (1-based index, line).
    let mut names: BTreeMap<String, (usize, Option<usize>)> = BTreeMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let mut reader = JobReader {
            file,
            index: i,
            job: JobRef::Index(i + 1),
            lines: &lines,
            errors: Vec::new(),
            defaults: &defaults,
        };
        let Value::Table(table) = entry else {
            reader.errors.push(JobsFileError::Job {
                file: file.to_string(),
                line: lines.job(i),
                job: reader.job.clone(),
                problem: JobProblem::NotATable {
                    found: describe(entry),
                },
            });
            errors.append(&mut reader.errors);
            continue;
        };
        let job = reader.read(table, config);
        match job.as_ref().map(|j| j.def.name.to_string()) {
            Some(name) => reader.claim_name(&mut names, name),
            // A job with other errors still claims its name, so a later duplicate is named.
            None => match table.get("name") {
                Some(Value::String(name)) if JobName::new(name).is_ok() => {
                    reader.claim_name(&mut names, name.clone())
                }
                _ => {}
            },
        }
        // Within a job, report in the order of the file.
        reader
            .errors
            .sort_by_key(|e| e.line().unwrap_or(usize::MAX));
        if reader.errors.is_empty() {
            jobs.extend(job);
        }
        errors.append(&mut reader.errors);
    }
    if errors.is_empty() {
        Ok(JobsFile { jobs, alerts })
    } else {
        Err(errors)
    }
}

/// The file as TOML, or its syntax error with line and column.
fn parse_toml(text: &str, file: &str) -> Result<toml::Table, Vec<JobsFileError>> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => line_col(text, span.start),
            None => (1, 1),
        };
        vec![JobsFileError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: e.message().trim().to_string(),
        }]
    })
}

/// A top-level key the file does not know, with the one it probably meant.
fn unknown_top_keys(doc: &toml::Table, file: &str, lines: &Lines<'_>) -> Vec<JobsFileError> {
    doc.keys()
        .filter(|k| !TOP_FIELDS.contains(&k.as_str()))
        .map(|key| JobsFileError::TopLevel {
            file: file.to_string(),
            line: lines.top_key(key),
            key: key.clone(),
            problem: TopProblem::UnknownKey {
                suggestion: suggest(key, TOP_FIELDS).or(match key.as_str() {
                    "jobs" | "Job" | "JOB" => Some("job"),
                    _ => None,
                }),
            },
        })
        .collect()
}

/// The `[[job]]` entries (none, and an error, when `job` is not an array of tables).
fn job_entries<'d>(
    doc: &'d toml::Table,
    file: &str,
    lines: &Lines<'_>,
    errors: &mut Vec<JobsFileError>,
) -> &'d [Value] {
    match doc.get("job") {
        None => &[],
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            errors.push(JobsFileError::TopLevel {
                file: file.to_string(),
                line: lines.top_key("job"),
                key: "job".to_string(),
                problem: TopProblem::NotArrayOfTables {
                    found: describe(other),
                },
            });
            &[]
        }
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = 1 + before.matches('\n').count();
    let column = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, column)
}

/// What a TOML value is, for "is an integer; accepted: ...".
pub(crate) fn describe(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// The accepted key closest to a misspelt one (at most two edits, or a different case;
/// one for a key of four letters or fewer, where two edits reach unrelated words: `foo`
/// is two from `job`).
fn suggest(key: &str, accepted: &'static [&'static str]) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase().replace('-', "_");
    let max = if lower.chars().count() <= 4 { 1 } else { 2 };
    crate::hints::nearest(&lower, accepted.iter().copied(), max)
}

/// Line numbers of jobs and their fields, from a second, typed read of the text that keeps
/// spans. Best effort: when the file's shape is too far off for it, errors go without lines.
struct Lines<'a> {
    text: &'a str,
    lines: Vec<&'a str>,
    top: BTreeMap<String, usize>,
    jobs: Vec<(usize, BTreeMap<String, usize>)>,
}

type SpannedJob = Spanned<BTreeMap<String, Spanned<Value>>>;

#[derive(Deserialize)]
struct SpannedJobs {
    #[serde(default)]
    job: Vec<SpannedJob>,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Lines<'a> {
        // Every field of every job asks for its line: one pass over the text for the line
        // starts, then a binary search each (a scan from the top each time is quadratic,
        // minutes for a file of 10,000 jobs).
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line = |at: usize| starts.partition_point(|&s| s <= at);
        let top = toml::from_str::<BTreeMap<String, Spanned<Value>>>(text)
            .map(|m| {
                m.into_iter()
                    .map(|(k, v)| (k, line(v.span().start)))
                    .collect()
            })
            .unwrap_or_default();
        let jobs = toml::from_str::<SpannedJobs>(text)
            .map(|doc| {
                doc.job
                    .into_iter()
                    .map(|job| {
                        let start = line(job.span().start);
                        let fields = job
                            .into_inner()
                            .into_iter()
                            .map(|(k, v)| (k, line(v.span().start)))
                            .collect();
                        (start, fields)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Lines {
            text,
            lines: text.lines().collect(),
            top,
            jobs,
        }
    }

    fn top_key(&self, key: &str) -> Option<usize> {
        self.top.get(key).copied().or_else(|| {
            // Dotted headers (`[job.backup]`) carry no span: find the first line that
            // begins with the key, bare or in a header.
            self.text
                .lines()
                .position(|l| {
                    let l = l.trim_start().trim_start_matches('[').trim_start();
                    l.strip_prefix(key)
                        .is_some_and(|rest| rest.starts_with(['.', ']', ' ', '=']))
                })
                .map(|i| i + 1)
        })
    }

    /// The line of job `index`'s `[[job]]` header (or its first line).
    fn job(&self, index: usize) -> Option<usize> {
        let Some((start, _)) = self.jobs.get(index) else {
            return self.top_key("job");
        };
        // The span of a `[[job]]` table may begin at its first key; step back to the header.
        let mut line = *start;
        while line > 1 {
            let l = self.lines.get(line - 1).map_or("", |l| l.trim_start());
            if l.starts_with("[[") {
                break;
            }
            line -= 1;
        }
        Some(line)
    }

    fn field(&self, index: usize, field: &str) -> Option<usize> {
        self.jobs.get(index)?.1.get(field).copied()
    }
}

/// Reads one `[[job]]` table, collecting every error in it.
struct JobReader<'a> {
    file: &'a str,
    index: usize,
    job: JobRef,
    lines: &'a Lines<'a>,
    errors: Vec<JobsFileError>,
    defaults: &'a RunAsDefaults,
}

/// The file's `user` and `group`: whom every job runs as unless it says otherwise.
#[derive(Default)]
struct RunAsDefaults {
    user: Option<String>,
    group: Option<String>,
}

/// A user or group name as written: non-empty text without NUL (a number is written as a
/// string, so `0` and `"0"` cannot be told apart by accident).
fn identity_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if !s.is_empty() && !s.contains('\0') => Ok(s.clone()),
        Value::String(_) => Err("an empty string or one holding NUL".into()),
        other => Err(describe(other).to_string()),
    }
}

/// The top-level default `key`, or `None` after recording why it is refused.
fn top_identity(
    doc: &toml::Table,
    key: &str,
    file: &str,
    lines: &Lines<'_>,
    errors: &mut Vec<JobsFileError>,
) -> Option<String> {
    match identity_text(doc.get(key)?) {
        Ok(s) => Some(s),
        Err(found) => {
            errors.push(JobsFileError::TopLevel {
                file: file.to_string(),
                line: lines.top_key(key),
                key: key.to_string(),
                problem: TopProblem::BadDefault { found },
            });
            None
        }
    }
}

/// The file's `[alerts]` table, or `None` (after recording why, when it is refused).
fn top_alerts(
    doc: &toml::Table,
    file: &str,
    lines: &Lines<'_>,
    errors: &mut Vec<JobsFileError>,
) -> Option<Route> {
    match crate::alerts::parse(doc.get("alerts")?) {
        Ok(route) => Some(route),
        Err(problems) => {
            errors.extend(problems.into_iter().map(|e| JobsFileError::TopLevel {
                file: file.to_string(),
                line: lines.top_key("alerts"),
                key: alerts_key(&e.key),
                problem: TopProblem::Alerts(e.problem),
            }));
            None
        }
    }
}

/// `alerts.webhook` for the key `webhook` of an alerts table, `alerts` for the table.
fn alerts_key(key: &str) -> String {
    if key.is_empty() {
        "alerts".into()
    } else {
        format!("alerts.{key}")
    }
}

/// One schedule key as found, before it is compiled.
enum ScheduleText<'v> {
    Cron(&'v str),
    Every(Duration),
    At(Timestamp),
}

impl<'a> JobReader<'a> {
    /// Claims `name` for this job, or names the job that claimed it first.
    fn claim_name(&mut self, names: &mut BTreeMap<String, (usize, Option<usize>)>, name: String) {
        if let Some(&(first, first_line)) = names.get(&name) {
            self.field_error(
                "name",
                FieldProblem::DuplicateName {
                    name,
                    first,
                    first_line,
                },
            );
        } else {
            names.insert(name, (self.index + 1, self.lines.job(self.index)));
        }
    }

    fn field_error(&mut self, field: &str, problem: FieldProblem) {
        // `dst.gap` points at the line of `dst`.
        let top = field.split('.').next().unwrap_or(field);
        self.errors.push(JobsFileError::Field {
            file: self.file.to_string(),
            line: self
                .lines
                .field(self.index, top)
                .or_else(|| self.lines.job(self.index)),
            job: self.job.clone(),
            field: field.to_string(),
            problem,
        });
    }

    fn job_error(&mut self, problem: JobProblem) {
        self.errors.push(JobsFileError::Job {
            file: self.file.to_string(),
            line: self.lines.job(self.index),
            job: self.job.clone(),
            problem,
        });
    }

    fn wrong_type(&mut self, field: &str, v: &Value, accepted: &str) {
        self.field_error(
            field,
            FieldProblem::WrongType {
                found: describe(v),
                accepted: accepted.to_string(),
            },
        );
    }

    /// The job's definition and command, or `None` after recording why not. Every field
    /// is read whatever others got wrong, and the core's checks run on what could be read
    /// (defaults standing in for the fields in error), so one pass reports every mistake.
    fn read(&mut self, t: &toml::Table, config: &Config) -> Option<HostJob> {
        // Name first: every later error names the job by it.
        let name = self.name(t);
        for key in t.keys().filter(|k| !JOB_FIELDS.contains(&k.as_str())) {
            self.field_error(
                key,
                FieldProblem::Unknown {
                    accepted: JOB_FIELDS,
                    suggestion: suggest(key, JOB_FIELDS),
                },
            );
        }
        let schedule = self.schedule(t);
        let command = self.command(t);
        let alerts = self.alerts(t);
        let mut def = self.definition(t, name.clone(), schedule.clone());
        // What runs is part of the definition: its digest covers it, a change of it is held
        // under `requires_confirmation`, and the daemon runs the one in force.
        def.payload = command.as_ref().map(Command::payload);
        let read_cleanly = self.errors.is_empty();
        self.core_checks(def.clone(), config, schedule.is_some());
        let (true, true, Some(_), Some(_), Some(command)) = (
            read_cleanly,
            self.errors.is_empty(),
            name,
            schedule,
            command,
        ) else {
            return None;
        };
        Some(HostJob {
            def,
            cron_text: t.get("cron").and_then(Value::as_str).map(String::from),
            command,
            alerts,
        })
    }

    /// The job's own `alerts` table (it replaces the file's for this job).
    fn alerts(&mut self, t: &toml::Table) -> Option<Route> {
        match crate::alerts::parse(t.get("alerts")?) {
            Ok(route) => Some(route),
            Err(problems) => {
                for e in problems {
                    self.field_error(&alerts_key(&e.key), FieldProblem::Alerts(e.problem));
                }
                None
            }
        }
    }

    fn name(&mut self, t: &toml::Table) -> Option<JobName> {
        match t.get("name") {
            Some(Value::String(s)) => {
                self.job = JobRef::Named(s.clone());
                match JobName::new(s) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        self.field_error(
                            "name",
                            FieldProblem::BadValue {
                                text: s.clone(),
                                what: "a job name",
                                accepted: NAME_RULE.to_string(),
                            },
                        );
                        None
                    }
                }
            }
            Some(v) => {
                self.wrong_type("name", v, &format!("a string: {NAME_RULE}"));
                None
            }
            None => {
                self.field_error(
                    "name",
                    FieldProblem::Missing {
                        accepted: NAME_RULE,
                    },
                );
                None
            }
        }
    }

    /// The definition from every field that could be read; a field in error (recorded
    /// already) keeps its default, a missing name or schedule a stand-in, so the core's
    /// checks can still run on the rest.
    fn definition(
        &mut self,
        t: &toml::Table,
        name: Option<JobName>,
        schedule: Option<Schedule>,
    ) -> JobDef {
        let name = name.unwrap_or_else(|| JobName::new("job").expect("a valid name"));
        let schedule = schedule.unwrap_or_else(stand_in_schedule);
        let mut def = JobDef::new(name, schedule);
        if let Some(title) = self.string(t, "title", "a string of at most 200 characters") {
            def.title = title;
        }
        if let Some(missed) = self.choice(t, "missed", "a missed rule", MISSED) {
            def.missed = missed;
        }
        def.overlap = self.choice(t, "overlap", "an overlap policy", OVERLAP);
        if let Some(retries) = self.retries(t) {
            def.retries = retries;
        }
        if let Some(backoff) = self.backoff(t) {
            def.backoff = backoff;
        }
        if let Some(timeout) = self.duration(t, "timeout") {
            def.timeout = timeout;
        }
        if let Some(stall_after) = self.duration(t, "stall_after") {
            def.stall_after = stall_after;
        }
        def.catch_up_window = self.duration(t, "catch_up_window");
        if let Some(b) = self.boolean(t, "safe_to_repeat") {
            def.safe_to_repeat = b;
        }
        if let Some(b) = self.boolean(t, "legal_duty") {
            def.legal_duty = b;
        }
        def.concurrency_key = self.string(
            t,
            "concurrency_key",
            "a string of 1-128 printable characters",
        );
        def.pause_after_failures = self.failure_streak(t);
        def.wait_budget = self.duration(t, "wait_budget");
        def.alert_throttle = self.duration(t, "alert_throttle");
        def.concurrency_limit = self.count_at_least_1(t, "concurrency_limit");
        def.jitter = self.duration(t, "jitter");
        def.expect_success_within = self.duration(t, "expect_success_within");
        if let Some(b) = self.boolean(t, "requires_confirmation") {
            def.requires_confirmation = b;
        }
        def
    }

    /// Every refusal of the core's `JobDef::validate`, not only its first: each one found
    /// is recorded and its field set back to the default, and the check runs again.
    /// Refusals about a field already in error are not repeated, nor those about the
    /// stand-in schedule.
    fn core_checks(&mut self, mut def: JobDef, config: &Config, real_schedule: bool) {
        let in_error: Vec<String> = self
            .errors
            .iter()
            .filter_map(|e| {
                e.field()
                    .map(|f| f.split('.').next().unwrap_or(f).to_string())
            })
            .collect();
        // Each pass resets one field, and there are fewer kinds of refusal than this.
        for _ in 0..32 {
            let Err(e) = def.validate(config) else {
                return;
            };
            let (field, problem) = def_problem(&def, e.clone());
            let involved = involved_fields(&e);
            let stand_in = !real_schedule && involved.iter().any(|f| SCHEDULE_FIELDS.contains(f));
            if !stand_in && !involved.iter().any(|f| in_error.iter().any(|g| g == f)) {
                self.field_error(field, problem);
            }
            if !reset_field(&mut def, &e) {
                return;
            }
        }
    }

    fn string(&mut self, t: &toml::Table, field: &str, accepted: &str) -> Option<String> {
        match t.get(field)? {
            Value::String(s) => Some(s.clone()),
            v => {
                self.wrong_type(field, v, accepted);
                None
            }
        }
    }

    fn boolean(&mut self, t: &toml::Table, field: &str) -> Option<bool> {
        match t.get(field)? {
            Value::Boolean(b) => Some(*b),
            v => {
                self.wrong_type(field, v, "true or false (without quotes)");
                None
            }
        }
    }

    fn duration(&mut self, t: &toml::Table, field: &str) -> Option<Duration> {
        let v = t.get(field)?;
        self.duration_value(field, v)
    }

    fn duration_value(&mut self, field: &str, v: &Value) -> Option<Duration> {
        match v {
            Value::String(s) => match s.parse::<Duration>() {
                Ok(d) => Some(d),
                Err(_) => {
                    self.field_error(
                        field,
                        FieldProblem::BadValue {
                            text: s.clone(),
                            what: "a duration",
                            accepted: format!(
                                "a duration: numbers each followed by a unit d, h, m, s or ms, \
                                 such as {DURATION_FORMS}"
                            ),
                        },
                    );
                    None
                }
            },
            v => {
                self.wrong_type(
                    field,
                    v,
                    &format!("a string holding a duration such as {DURATION_FORMS}"),
                );
                None
            }
        }
    }

    fn choice<T: Copy>(
        &mut self,
        t: &toml::Table,
        field: &str,
        what: &'static str,
        options: &[(T, &'static str)],
    ) -> Option<T> {
        let v = t.get(field)?;
        self.choice_value(field, v, what, options)
    }

    fn choice_value<T: Copy>(
        &mut self,
        field: &str,
        v: &Value,
        what: &'static str,
        options: &[(T, &'static str)],
    ) -> Option<T> {
        let names = options
            .iter()
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", ");
        match v {
            Value::String(s) => match options.iter().find(|(_, n)| n == s) {
                Some((value, _)) => Some(*value),
                None => {
                    self.field_error(
                        field,
                        FieldProblem::BadValue {
                            text: s.clone(),
                            what,
                            accepted: names,
                        },
                    );
                    None
                }
            },
            v => {
                self.wrong_type(field, v, &format!("a string, one of {names}"));
                None
            }
        }
    }

    fn retries(&mut self, t: &toml::Table) -> Option<u32> {
        match t.get("retries")? {
            Value::Integer(n) => match u32::try_from(*n) {
                // Above MAX_RETRIES the core's own check names the limit.
                Ok(n) => Some(n),
                Err(_) => {
                    self.field_error(
                        "retries",
                        FieldProblem::OutOfRange {
                            value: *n,
                            accepted: format!("0-{MAX_RETRIES}"),
                        },
                    );
                    None
                }
            },
            v => {
                self.wrong_type(
                    "retries",
                    v,
                    &format!("an integer 0-{MAX_RETRIES} (without quotes)"),
                );
                None
            }
        }
    }

    fn failure_streak(&mut self, t: &toml::Table) -> Option<u32> {
        self.count_at_least_1(t, "pause_after_failures")
    }

    /// An integer field of at least 1 (0 goes through: the core's own check refuses it,
    /// naming the rule).
    fn count_at_least_1(&mut self, t: &toml::Table, field: &'static str) -> Option<u32> {
        let accepted = "an integer of at least 1 (without quotes)";
        match t.get(field)? {
            Value::Integer(n) => match u32::try_from(*n) {
                // 0 goes through: the core's own check refuses it, naming the rule.
                Ok(n) => Some(n),
                Err(_) => {
                    self.field_error(
                        field,
                        FieldProblem::OutOfRange {
                            value: *n,
                            accepted: format!("1-{}", u32::MAX),
                        },
                    );
                    None
                }
            },
            v => {
                self.wrong_type(field, v, accepted);
                None
            }
        }
    }

    fn backoff(&mut self, t: &toml::Table) -> Option<Backoff> {
        let v = t.get("backoff")?;
        let Value::Table(b) = v else {
            self.wrong_type(
                "backoff",
                v,
                "a table such as { initial = \"30s\", max = \"10m\" }",
            );
            return None;
        };
        let before = self.errors.len();
        for key in b.keys().filter(|k| !BACKOFF_FIELDS.contains(&k.as_str())) {
            self.field_error(
                &format!("backoff.{key}"),
                FieldProblem::Unknown {
                    accepted: BACKOFF_FIELDS,
                    suggestion: suggest(key, BACKOFF_FIELDS),
                },
            );
        }
        let mut backoff = Backoff::default();
        if let Some(v) = b.get("initial") {
            if let Some(d) = self.duration_value("backoff.initial", v) {
                backoff.initial = d;
            }
        }
        if let Some(v) = b.get("max") {
            if let Some(d) = self.duration_value("backoff.max", v) {
                backoff.max = d;
            }
        }
        (self.errors.len() == before).then_some(backoff)
    }

    fn command(&mut self, t: &toml::Table) -> Option<Command> {
        let before = self.errors.len();
        let argv = self.argv(t);
        let workdir = self.workdir(t);
        let env = self.env(t);
        let env_file = self.env_file(t);
        let user = self
            .identity(t, "user")
            .or_else(|| self.defaults.user.clone());
        let group = self
            .identity(t, "group")
            .or_else(|| self.defaults.group.clone());
        (self.errors.len() == before).then(|| Command {
            argv: argv.unwrap_or_default(),
            workdir,
            env,
            env_file,
            user,
            group,
        })
    }

    /// `command`: a list of strings, the program then its arguments (no shell splits it).
    fn argv(&mut self, t: &toml::Table) -> Option<Vec<String>> {
        match t.get("command") {
            None => {
                self.field_error(
                    "command",
                    FieldProblem::Missing {
                        accepted: "a list of strings, the program then its arguments, \
                               such as [\"/usr/local/bin/backup\", \"--full\"]",
                    },
                );
                None
            }
            Some(Value::Array(items)) if items.is_empty() => {
                self.field_error("command", FieldProblem::EmptyCommand);
                None
            }
            Some(Value::Array(items)) => Some(self.argv_items(items)),
            Some(v) => {
                let accepted = if matches!(v, Value::String(_)) {
                    "a list of strings, not one string: no shell splits it; write \
                 [\"/usr/bin/backup\", \"--full\"], or [\"sh\", \"-c\", \"...\"] for a shell line"
                } else {
                    "a list of strings, the program then its arguments"
                };
                self.wrong_type("command", v, accepted);
                None
            }
        }
    }

    /// The items of `command`: strings, the first a program.
    fn argv_items(&mut self, items: &[Value]) -> Vec<String> {
        let mut argv = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if i == 0 && s.is_empty() => self.field_error(
                    "command",
                    FieldProblem::BadText {
                        problem: "the program (the first item) is an empty string; \
                                  accepted: a program name or path",
                    },
                ),
                Value::String(s) if s.contains('\0') => self.field_error(
                    "command",
                    FieldProblem::BadText {
                        problem: "an item holds a NUL character, which no program \
                                  argument can; accepted: text without \\u0000",
                    },
                ),
                Value::String(s) => argv.push(s.clone()),
                other => self.field_error(
                    "command",
                    FieldProblem::WrongType {
                        found: describe(other),
                        accepted: format!(
                            "strings only (item {} is not one); write numbers in quotes",
                            i + 1
                        ),
                    },
                ),
            }
        }
        argv
    }

    /// `workdir`: a directory path.
    fn workdir(&mut self, t: &toml::Table) -> Option<PathBuf> {
        match t.get("workdir") {
            None => None,
            Some(Value::String(s)) if s.is_empty() || s.contains('\0') => {
                self.field_error(
                    "workdir",
                    FieldProblem::BadText {
                        problem: "is empty or holds a NUL character; accepted: a directory path",
                    },
                );
                None
            }
            Some(Value::String(s)) => Some(PathBuf::from(s)),
            Some(v) => {
                self.wrong_type("workdir", v, "a string: a directory path");
                None
            }
        }
    }

    /// `env`: a table of variables, names without `=` or NUL, values strings.
    fn env(&mut self, t: &toml::Table) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        match t.get("env") {
            None => {}
            Some(Value::Table(vars)) => {
                for (k, v) in vars {
                    let field = format!("env.{k}");
                    match v {
                        _ if k.is_empty() || k.contains('=') || k.contains('\0') => self
                            .field_error(
                                &field,
                                FieldProblem::BadText {
                                    problem: "is not a variable name; accepted: a non-empty \
                                              name without = or NUL",
                                },
                            ),
                        Value::String(s) if s.contains('\0') => self.field_error(
                            &field,
                            FieldProblem::BadText {
                                problem: "holds a NUL character; accepted: text without \\u0000",
                            },
                        ),
                        Value::String(s) => {
                            env.insert(k.clone(), s.clone());
                        }
                        v => self.wrong_type(&field, v, "a string (write numbers in quotes)"),
                    }
                }
            }
            Some(v) => self.wrong_type("env", v, "a table of strings, such as { LANG = \"C\" }"),
        }
        env
    }

    /// `env_file`: an absolute path (the daemon's working directory is no anchor a person
    /// sees when reading the file).
    fn env_file(&mut self, t: &toml::Table) -> Option<PathBuf> {
        match t.get("env_file")? {
            Value::String(s) if s.starts_with('/') && !s.contains('\0') => Some(PathBuf::from(s)),
            Value::String(_) => {
                self.field_error(
                    "env_file",
                    FieldProblem::BadText {
                        problem: "is not an absolute path; accepted: a file path beginning \
                                  with /, such as \"/etc/duetime/backup.env\"",
                    },
                );
                None
            }
            v => {
                self.wrong_type("env_file", v, "a string: an absolute file path");
                None
            }
        }
    }

    /// `user` or `group` of the job.
    fn identity(&mut self, t: &toml::Table, key: &str) -> Option<String> {
        let v = t.get(key)?;
        match (identity_text(v), v) {
            (Ok(s), _) => Some(s),
            (Err(_), Value::String(_)) => {
                self.field_error(
                    key,
                    FieldProblem::BadText {
                        problem: "is empty or holds a NUL character; accepted: a user or \
                                  group name, or a numeric id as a string",
                    },
                );
                None
            }
            (Err(_), v) => {
                self.wrong_type(key, v, IDENTITY_FORMS);
                None
            }
        }
    }

    fn schedule(&mut self, t: &toml::Table) -> Option<Schedule> {
        let present: Vec<&'static str> = SCHEDULE_FIELDS
            .iter()
            .copied()
            .filter(|k| t.contains_key(*k))
            .collect();
        match present.len() {
            0 => {
                self.job_error(JobProblem::NoSchedule);
                return None;
            }
            1 => {}
            _ => {
                self.job_error(JobProblem::TwoSchedules {
                    fields: present.clone(),
                });
                return None;
            }
        }
        let kind = present[0];
        self.orphan_keys(t, kind);
        let before = self.errors.len();
        let text = match (kind, &t[kind]) {
            ("cron", Value::String(s)) => Some(ScheduleText::Cron(s)),
            ("cron", v) => {
                self.wrong_type(
                    "cron",
                    v,
                    "a string holding a cron expression, such as \"30 2 * * *\"",
                );
                None
            }
            ("every", v) => self.duration_value("every", v).map(ScheduleText::Every),
            (_, Value::String(s)) => match s.parse::<Timestamp>() {
                Ok(t) => Some(ScheduleText::At(t)),
                Err(_) => {
                    self.field_error(
                        "at",
                        FieldProblem::BadValue {
                            text: s.clone(),
                            what: "an instant",
                            accepted: INSTANT_FORMS.to_string(),
                        },
                    );
                    None
                }
            },
            (_, Value::Datetime(dt)) => self.toml_instant(dt),
            (_, v) => {
                self.wrong_type("at", v, INSTANT_FORMS);
                None
            }
        };
        match text? {
            ScheduleText::Cron(expr) => self.cron(t, expr),
            ScheduleText::Every(period) => {
                let offset = self.duration(t, "offset").unwrap_or(Duration::ZERO);
                if self.errors.len() > before {
                    return None;
                }
                if !period.is_zero() && offset >= period {
                    self.field_error("offset", FieldProblem::OffsetNotShorter { offset, period });
                    return None;
                }
                match Schedule::every(period, offset) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        self.field_error("every", FieldProblem::Schedule(e));
                        None
                    }
                }
            }
            ScheduleText::At(instant) => Some(Schedule::at(instant)),
        }
    }

    /// A TOML date-time for `at`: it must be a full instant, with a date, a time and an
    /// offset, since a local date-time without a zone names no instant.
    fn toml_instant(&mut self, dt: &toml::value::Datetime) -> Option<ScheduleText<'static>> {
        let text = dt.to_string();
        let what = match (dt.date, dt.time, dt.offset) {
            (Some(_), Some(_), Some(_)) => match text.parse::<Timestamp>() {
                Ok(t) => return Some(ScheduleText::At(t)),
                Err(_) => "an instant",
            },
            (None, _, _) => "an instant (it has no date)",
            (_, None, _) => "an instant (it has no time of day)",
            (_, _, None) => "an instant (it has no offset, so it names no moment: add Z or -05:00)",
        };
        self.field_error(
            "at",
            FieldProblem::BadValue {
                text,
                what,
                accepted: INSTANT_FORMS.to_string(),
            },
        );
        None
    }

    /// `tz`, `dst` and `offset` present without the schedule kind they belong to.
    fn orphan_keys(&mut self, t: &toml::Table, kind: &str) {
        for (key, needs) in [("tz", "cron"), ("dst", "cron"), ("offset", "every")] {
            if t.contains_key(key) && kind != needs {
                self.field_error(key, FieldProblem::Needs { needs });
            }
        }
    }

    fn cron(&mut self, t: &toml::Table, expr: &str) -> Option<Schedule> {
        let tz = match t.get("tz") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(v) => {
                self.wrong_type(
                    "tz",
                    v,
                    "a string: an IANA zone name such as \"America/New_York\" or \"UTC\"",
                );
                return None;
            }
        };
        let dst = self.dst(t);
        let cron = match CronSchedule::parse(expr, tz) {
            Ok(c) => c,
            Err(e) => {
                let field = match e {
                    CronError::UnknownZone { .. } | CronError::ZoneConflict { .. }
                        if tz.is_some() =>
                    {
                        "tz"
                    }
                    _ => "cron",
                };
                self.field_error(field, FieldProblem::Cron(e));
                if field == "cron" {
                    self.zone_alone(tz);
                }
                return None;
            }
        };
        let (gap, fold) = dst?;
        let policy = match (gap, fold) {
            (None, None) => None,
            (gap, fold) => Some(DstPolicy {
                gap: gap.unwrap_or(cron.policy().gap),
                fold: fold.unwrap_or(cron.policy().fold),
            }),
        };
        Some(Schedule::Cron(cron.with_dst(policy)))
    }

    /// `tz` checked on its own after the expression was refused, which the parser reports
    /// first: a bad `cron` must not hide a misspelt `tz` in the same job.
    fn zone_alone(&mut self, tz: Option<&str>) {
        let Some(tz) = tz else { return };
        if let Err(e @ CronError::UnknownZone { .. }) = CronSchedule::parse("0 0 * * *", Some(tz)) {
            self.field_error("tz", FieldProblem::Cron(e));
        }
    }

    /// `dst = { gap = ..., fold = ... }`: either part may be left out, keeping cron's
    /// default for this expression. `None` after an error.
    #[allow(clippy::type_complexity)]
    fn dst(&mut self, t: &toml::Table) -> Option<(Option<Gap>, Option<Fold>)> {
        let Some(v) = t.get("dst") else {
            return Some((None, None));
        };
        let Value::Table(d) = v else {
            self.wrong_type(
                "dst",
                v,
                "a table such as { gap = \"skip\", fold = \"both\" }",
            );
            return None;
        };
        let before = self.errors.len();
        for key in d.keys().filter(|k| !DST_FIELDS.contains(&k.as_str())) {
            self.field_error(
                &format!("dst.{key}"),
                FieldProblem::Unknown {
                    accepted: DST_FIELDS,
                    suggestion: suggest(key, DST_FIELDS),
                },
            );
        }
        let gap = d
            .get("gap")
            .and_then(|v| self.choice_value("dst.gap", v, "a gap rule", GAP));
        let fold = d
            .get("fold")
            .and_then(|v| self.choice_value("dst.fold", v, "a fold rule", FOLD));
        (self.errors.len() == before).then_some((gap, fold))
    }
}

/// The schedule a definition is checked with when its own could not be read: daily,
/// longer than any tick, so it adds no refusal of its own.
fn stand_in_schedule() -> Schedule {
    Schedule::every(Duration::from_days(1), Duration::ZERO).expect("a day is a valid period")
}

/// The field a core refusal is about, and the problem as the file reports it.
fn def_problem(def: &JobDef, e: DefError) -> (&'static str, FieldProblem) {
    match e {
        DefError::TooManyRetries { retries } => (
            "retries",
            FieldProblem::OutOfRange {
                value: i64::from(retries),
                accepted: format!("0-{MAX_RETRIES}"),
            },
        ),
        // The core's words ("zero") do not fit a timeout of 500ms; say what it is.
        DefError::ZeroTimeout => (
            "timeout",
            FieldProblem::BadValue {
                text: def.timeout.to_string(),
                what: "a timeout",
                accepted: "a duration of at least 1s".to_string(),
            },
        ),
        e => (def_error_field(&e), FieldProblem::Def(e)),
    }
}

/// Every field a core refusal depends on: one read in error (a misspelt missed rule)
/// would make the refusal (a legal duty that is not `required`) a wrong guess.
fn involved_fields(e: &DefError) -> Vec<&'static str> {
    let mut fields = vec![def_error_field(e)];
    match e {
        DefError::LegalDutyNeedsRequired => fields.push("missed"),
        DefError::LegalDutyHasWindow => fields.push("legal_duty"),
        DefError::RequiredCannotSkipOverlap => fields.push("missed"),
        DefError::JitterTooLong { .. } => fields.extend(SCHEDULE_FIELDS),
        _ => {}
    }
    fields
}

/// Sets the field a core refusal is about back to its default, so the next check looks
/// past it. False when there is nothing to reset (the check would refuse the same again).
fn reset_field(def: &mut JobDef, e: &DefError) -> bool {
    let default = JobDef::new(def.name.clone(), def.schedule.clone());
    match e {
        DefError::BadName { .. } | DefError::DuplicateName { .. } => return false,
        DefError::TitleTooLong { .. } => def.title = default.title,
        DefError::LegalDutyNeedsRequired => def.legal_duty = false,
        DefError::LegalDutyHasWindow => def.catch_up_window = None,
        DefError::RequiredCannotSkipOverlap => def.overlap = None,
        DefError::EveryShorterThanTick { .. } => def.schedule = stand_in_schedule(),
        DefError::ZeroTimeout => def.timeout = default.timeout,
        DefError::TooManyRetries { .. } => def.retries = default.retries,
        DefError::BadBackoff => def.backoff = default.backoff,
        DefError::BadConcurrencyKey { .. } => def.concurrency_key = None,
        DefError::ZeroFailureStreak => def.pause_after_failures = None,
        DefError::BadConcurrencyLimit { .. } => def.concurrency_limit = None,
        DefError::JitterTooLong { .. } => def.jitter = None,
        DefError::PayloadTooLong { .. } => def.payload = None,
        DefError::ExpectSuccessTooSoon { .. } => def.expect_success_within = None,
    }
    true
}

/// The core's names for its rules, as its serde writes them (a test checks they agree).
pub const MISSED: &[(MissedRule, &str)] = &[
    (MissedRule::Skip, "skip"),
    (MissedRule::CatchUpOnce, "catch_up_once"),
    (MissedRule::Required, "required"),
];
pub const OVERLAP: &[(Overlap, &str)] = &[
    (Overlap::Skip, "skip"),
    (Overlap::BufferOne, "buffer_one"),
    (Overlap::BufferAll, "buffer_all"),
];
pub const GAP: &[(Gap, &str)] = &[(Gap::RunAtGapEnd, "run_at_gap_end"), (Gap::Skip, "skip")];
pub const FOLD: &[(Fold, &str)] = &[
    (Fold::First, "first"),
    (Fold::Last, "last"),
    (Fold::Both, "both"),
];

/// The file's name for a rule value (`"catch_up_once"`).
pub fn name_of<T: PartialEq>(options: &[(T, &'static str)], value: &T) -> &'static str {
    options
        .iter()
        .find(|(v, _)| v == value)
        .map_or("?", |(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        match parse_str(text, "jobs.toml") {
            Ok(f) => panic!("expected errors, parsed {} jobs", f.jobs.len()),
            Err(es) => es.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn rule_names_are_the_cores_serde_names() {
        fn check<T: serde::Serialize>(options: &[(T, &str)]) {
            for (v, name) in options {
                assert_eq!(serde_json::to_value(v).unwrap(), *name);
            }
        }
        check(MISSED);
        check(OVERLAP);
        check(GAP);
        check(FOLD);
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
        let es = errors(
            "[[job]]\nname = \"a\"\ncron = \"@daily\"\ncommand = [\"x\"]\ntimout = \"1m\"\n",
        );
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
            errors[0].starts_with(
                "jobs.toml:1: field \"alerts.webhook\": \"ftp://x\" is not a webhook URL"
            ),
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
        let base = include_str!("../jobs.example.toml").as_bytes().to_vec();
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
}
