//! Why a jobs file is refused: the error types, their text, and the words for what is
//! accepted that the reader's errors share.

use std::fmt;
use std::io;

use duetime::{CalendarError, CronError, DefError, Duration, ScheduleError};

use super::fields::FieldKey;
use crate::alerts::RouteProblem;

pub(super) const IDENTITY_FORMS: &str =
    "a user or group name (\"nobody\") or a numeric id as a string (\"65534\"), without NUL";
pub(super) const NAME_RULE: &str = "a lower-case letter, then at most 63 of a-z, 0-9 and _";
pub(super) const DURATION_FORMS: &str = "\"30s\", \"10m\", \"1h30m\", \"2d\" or \"250ms\"";
pub(super) const INSTANT_FORMS: &str =
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
    /// A problem with one field of a job, or a key inside one (`dst.gap`), or a key the
    /// file does not know: `field` says which, printed as the key is written.
    Field {
        file: String,
        line: Option<usize>,
        job: JobRef,
        field: FieldKey,
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
    /// A calendar refused by the core (a bad date, a range ending before it starts).
    Calendar(CalendarError),
    /// A calendar's value of the wrong type.
    CalendarValue {
        found: &'static str,
        accepted: &'static str,
    },
    /// A key a calendar's table does not take.
    UnknownCalendarKey {
        accepted: &'static [&'static str],
    },
    /// A calendar's `file` that could not be read, or a line of it.
    CalendarFile {
        message: String,
    },
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

/// What is wrong with a job's `after` (the jobs it runs after, for the same due time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterProblem {
    /// The job names itself.
    Itself,
    /// An upstream named twice.
    Twice { upstream: String },
    /// More upstreams than the core takes (`duetime::MAX_UPSTREAMS`).
    TooMany { count: usize },
    /// No job of the file has this name; `suggestion` is a close one that does.
    Unknown {
        upstream: String,
        suggestion: Option<String>,
    },
    /// The jobs wait for each other: `chain` from this job back to it, each after the next.
    Cycle { chain: Vec<String> },
    /// No schedule of its own, and its upstreams' schedules differ: it cannot take theirs.
    UpstreamsDiffer {
        first: String,
        first_schedule: String,
        other: String,
        other_schedule: String,
    },
    /// Its own schedule is not its upstream's.
    ScheduleDiffers {
        upstream: String,
        own: String,
        theirs: String,
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
    /// `after`: an upstream named wrongly, or a chain the file cannot run.
    After(AfterProblem),
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
                problem.fmt_for(key, f)
            }
            JobsFileError::Job {
                file,
                line,
                job,
                problem,
            } => write!(f, "{}: {job}: {problem}", Where(file, *line)),
            JobsFileError::Field {
                file,
                line,
                job,
                field,
                problem,
            } => {
                let field = quote(&field.to_string());
                write!(f, "{}: {job}: field {field}: ", Where(file, *line))?;
                problem.fmt(f)
            }
        }
    }
}

impl TopProblem {
    /// The problem with top-level `key`.
    fn fmt_for(&self, key: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
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
            TopProblem::Calendar(e) => write!(f, "field {}: {e}", quote(key)),
            TopProblem::CalendarValue { found, accepted } => {
                write!(f, "field {} is {found}; accepted: {accepted}", quote(key))
            }
            TopProblem::UnknownCalendarKey { accepted } => write!(
                f,
                "key {} is not accepted; accepted: {}",
                quote(key),
                accepted.join(", ")
            ),
            TopProblem::CalendarFile { message } => write!(f, "field {}: {message}", quote(key)),
            TopProblem::NotArrayOfTables { found } => write!(
                f,
                "key \"job\" is {found}; accepted: an array of tables, one [[job]] \
                 header per job (not [job] or [job.NAME])"
            ),
        }
    }
}

impl fmt::Display for JobProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
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
            FieldProblem::Def(e) => fmt_def(e, f),
            FieldProblem::After(p) => p.fmt(f),
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

/// What `after` accepts, said after each of its errors.
const AFTER_ACCEPTED: &str = "accepted: other jobs of this file, each once, with the same \
     schedule (or none: the job takes its upstreams')";

impl fmt::Display for AfterProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AfterProblem::Itself => write!(f, "names the job itself; {AFTER_ACCEPTED}"),
            AfterProblem::Twice { upstream } => {
                write!(f, "names {} twice; {AFTER_ACCEPTED}", quote(upstream))
            }
            AfterProblem::TooMany { count } => write!(
                f,
                "names {count} jobs; accepted: at most {}",
                duetime::MAX_UPSTREAMS
            ),
            AfterProblem::Unknown {
                upstream,
                suggestion,
            } => {
                write!(f, "{} is not a job of this file", quote(upstream))?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean {}?)", quote(s))?;
                }
                write!(f, "; {AFTER_ACCEPTED}")
            }
            AfterProblem::Cycle { chain } => write!(
                f,
                "the jobs wait for each other ({}, each running after the next); \
                 accepted: a chain that never comes back to a job",
                chain.join(" after ")
            ),
            AfterProblem::UpstreamsDiffer {
                first,
                first_schedule,
                other,
                other_schedule,
            } => write!(
                f,
                "the job has no schedule of its own and its upstreams' differ: {} has \
                 {first_schedule}, {} has {other_schedule}; accepted: upstreams of one \
                 schedule, or a schedule of the job's own that each of them has",
                quote(first),
                quote(other)
            ),
            AfterProblem::ScheduleDiffers {
                upstream,
                own,
                theirs,
            } => write!(
                f,
                "the job's schedule ({own}) is not that of {} ({theirs}); accepted: the \
                 upstream's schedule, or no schedule fields (the job takes its upstreams')",
                quote(upstream)
            ),
        }
    }
}

/// A refusal of the core's `JobDef::validate`, in the file's words.
fn fmt_def(e: &DefError, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // The core's text begins with its own name for the field (`schedule: `), which the
    // error already names as the file does.
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
        DefError::LegalDutyHasWindow => "no catch_up_window on a legal duty, or legal_duty = false",
        DefError::ZeroTimeout => "a duration of at least 1s",
        DefError::BadBackoff => "{ initial, max } with 1ms <= initial <= max",
        _ => "",
    };
    if !accepted.is_empty() && !text.contains("accepted") {
        write!(f, "; accepted: {accepted}")?;
    }
    Ok(())
}

impl std::error::Error for JobsFileError {}

/// A refused file as `check`, `sim` and `what-if` print it: every error, one a line, then
/// `FILE: invalid, N errors`.
pub fn write_refusal(
    w: &mut dyn io::Write,
    file: &str,
    errors: &[JobsFileError],
) -> io::Result<()> {
    for e in errors {
        writeln!(w, "{e}")?;
    }
    let n = errors.len();
    writeln!(
        w,
        "{file}: invalid, {n} error{}",
        if n == 1 { "" } else { "s" }
    )
}

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
pub(super) fn quote(text: &str) -> String {
    let mut cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}
impl JobsFileError {
    /// The job the error is about, if it is about one.
    pub fn job(&self) -> Option<&JobRef> {
        match self {
            JobsFileError::Job { job, .. } | JobsFileError::Field { job, .. } => Some(job),
            _ => None,
        }
    }

    /// The field (or key) the error is about, if it is about one.
    pub fn field(&self) -> Option<&FieldKey> {
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
