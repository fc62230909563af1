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
//!
//! `calendars` reads the file's `[calendars.NAME]` tables, which a job's `exclude` names.
//! The module's rooms: `spans` parses the text once and knows the line of every key;
//! `top` reads the top of the file; `reader` reads one `[[job]]` entry, with `values`,
//! `schedules` and `commands` for its fields and `core_checks` for the core's refusals;
//! `after` the jobs a job runs after, checked across the file once every entry is read;
//! `fields` is the one list of a job's keys, `rules` the core's named rules, `suggestions`
//! the did-you-mean, and `errors` the error types and their text.

mod after;
mod calendars;
mod commands;
mod core_checks;
mod errors;
mod fields;
mod reader;
mod rules;
mod schedules;
mod spans;
mod suggestions;
#[cfg(test)]
mod tests;
mod top;
mod values;

use std::path::Path;

use duetime::{Config, JobDef};

pub use after::upsert_order;
pub use errors::{
    write_refusal, AfterProblem, FieldProblem, JobProblem, JobRef, JobsFileError, TopProblem,
};
pub use fields::{Field, FieldKey, JOB_FIELDS, TOP_FIELDS};
pub(crate) use reader::describe;
pub use rules::{all_names, from_name, name_of, Rule};

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
                field: e.field().into(),
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
    let (doc, lines) = spans::parse(text, file)?;
    let mut errors = Vec::new();
    let top = top::read(&doc, file, &lines, &mut errors);
    let mut jobs = Vec::new();
    let mut names = reader::Names::new();
    for (index, entry) in top.entries.iter().enumerate() {
        let reader = reader::JobReader::new(file, index, &lines, &top.defaults, &top.calendars);
        let (job, mut job_errors) = reader.read_entry(entry, config, &mut names);
        let inherits = entry
            .as_table()
            .is_some_and(reader::takes_upstreams_schedule);
        jobs.extend(job.map(|job| after::Read {
            index,
            inherits,
            job,
        }));
        errors.append(&mut job_errors);
    }
    let ctx = after::FileCtx {
        file,
        lines: &lines,
        defaults: &top.defaults,
        calendars: &top.calendars,
        config,
        names: &names,
    };
    // After every entry's own errors: these are about jobs against each other.
    errors.extend(after::resolve(&ctx, &mut jobs));
    if errors.is_empty() {
        Ok(JobsFile {
            jobs: jobs.into_iter().map(|r| r.job).collect(),
            alerts: top.alerts,
        })
    } else {
        Err(errors)
    }
}
