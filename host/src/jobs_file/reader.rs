//! Reads one `[[job]]` entry into a [`HostJob`], collecting every error in it: the
//! reader's state and how it records errors, the job's name, its alerts and its
//! definition. The values are read in `values`, the schedule in `schedules`, the command
//! in `commands`, the core's own refusals in `core_checks`.

use std::collections::{BTreeMap, BTreeSet};

use duetime::{Config, JobDef, JobName, Schedule};
use toml::Value;

use super::core_checks::stand_in_schedule;
use super::errors::{FieldProblem, JobProblem, JobRef, JobsFileError, NAME_RULE};
use super::fields::{At, Field, JOB_FIELDS, SCHEDULE_FIELDS};
use super::spans::Lines;
use super::top::RunAsDefaults;
use super::{suggestions, Command, HostJob, Route};

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

/// The value of a job's field, if the table has it.
pub(super) fn get(t: &toml::Table, field: Field) -> Option<&Value> {
    t.get(field.name())
}

/// Whether a job takes its schedule from its upstreams: it has `after` (not `[]`, which
/// names no one to take it from) and none of the schedule keys.
pub(super) fn takes_upstreams_schedule(t: &toml::Table) -> bool {
    let names_some =
        get(t, Field::After).is_some_and(|v| !matches!(v, Value::Array(items) if items.is_empty()));
    names_some && SCHEDULE_FIELDS.iter().all(|f| get(t, *f).is_none())
}

/// Where each valid name was first seen: (1-based index, line).
pub(super) type Names = BTreeMap<String, (usize, Option<usize>)>;

/// Reads one `[[job]]` table, collecting every error in it.
pub(super) struct JobReader<'a> {
    file: &'a str,
    index: usize,
    job: JobRef,
    lines: &'a Lines<'a>,
    pub(super) errors: Vec<JobsFileError>,
    /// The fields an error was recorded about, so the core's checks do not guess past them.
    pub(super) in_error: BTreeSet<Field>,
    pub(super) defaults: &'a RunAsDefaults,
    /// The file's `[calendars.NAME]`, which `exclude` names.
    pub(super) calendars: &'a duetime::Calendars,
}

impl<'a> JobReader<'a> {
    /// A reader of entry `index` (0-based) of the file's `job` array.
    pub(super) fn new(
        file: &'a str,
        index: usize,
        lines: &'a Lines<'a>,
        defaults: &'a RunAsDefaults,
        calendars: &'a duetime::Calendars,
    ) -> Self {
        JobReader {
            file,
            index,
            job: JobRef::Index(index + 1),
            lines,
            errors: Vec::new(),
            in_error: BTreeSet::new(),
            defaults,
            calendars,
        }
    }

    /// Reads the entry: the job when it has no error, and every error, within the job in
    /// the order of the file. A job with errors still claims its name in `names`, so a
    /// later duplicate is named.
    pub(super) fn read_entry(
        mut self,
        entry: &Value,
        config: &Config,
        names: &mut Names,
    ) -> (Option<HostJob>, Vec<JobsFileError>) {
        let Value::Table(table) = entry else {
            self.job_error(JobProblem::NotATable {
                found: describe(entry),
            });
            return (None, self.errors);
        };
        let job = self.read(table, config);
        match job.as_ref().map(|j| j.def.name.to_string()) {
            Some(name) => self.claim_name(names, name),
            None => match get(table, Field::Name) {
                Some(Value::String(name)) if JobName::new(name).is_ok() => {
                    self.claim_name(names, name.clone())
                }
                _ => {}
            },
        }
        self.errors.sort_by_key(|e| e.line().unwrap_or(usize::MAX));
        let job = job.filter(|_| self.errors.is_empty());
        (job, self.errors)
    }

    /// Claims `name` for this job, or names the job that claimed it first.
    fn claim_name(&mut self, names: &mut Names, name: String) {
        if let Some(&(first, first_line)) = names.get(&name) {
            self.field_error(
                Field::Name,
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

    /// Records a problem with a field; it points at the line of the job's key (`dst.gap`
    /// at the line of `dst`), else of the job.
    pub(super) fn field_error<'k>(&mut self, at: impl Into<At<'k>>, problem: FieldProblem) {
        let at = at.into();
        self.in_error.extend(at.field());
        self.errors.push(JobsFileError::Field {
            file: self.file.to_string(),
            line: self
                .lines
                .field(self.index, at.key())
                .or_else(|| self.lines.job(self.index)),
            job: self.job.clone(),
            field: at.to_owned_key(),
            problem,
        });
    }

    /// The same reader, naming its job by `name` (the file-wide checks of `after`, which
    /// come after the entry was read).
    pub(super) fn named(mut self, name: &str) -> Self {
        self.job = JobRef::Named(name.to_string());
        self
    }

    pub(super) fn job_error(&mut self, problem: JobProblem) {
        self.errors.push(JobsFileError::Job {
            file: self.file.to_string(),
            line: self.lines.job(self.index),
            job: self.job.clone(),
            problem,
        });
    }

    pub(super) fn wrong_type<'k>(&mut self, at: impl Into<At<'k>>, v: &Value, accepted: &str) {
        self.field_error(
            at,
            FieldProblem::WrongType {
                found: describe(v),
                accepted: accepted.to_string(),
            },
        );
    }

    /// Records the keys of a table that the file does not accept there: the job's own
    /// (`at` none), or those inside `dst` or `backoff`.
    pub(super) fn unknown_keys(&mut self, t: &toml::Table, inner_of: Option<Field>) {
        for key in t.keys() {
            let (at, accepted, suggestion) = match inner_of {
                None if Field::from_name(key).is_some() => continue,
                None => (At::Unknown(key), JOB_FIELDS, suggestions::job_field(key)),
                Some(f) if f.keys().contains(&key.as_str()) => continue,
                Some(f) => (At::Inner(f, key), f.keys(), suggestions::inner_key(f, key)),
            };
            let problem = FieldProblem::Unknown {
                accepted,
                suggestion,
            };
            self.field_error(at, problem);
        }
    }

    /// The job's definition and command, or `None` after recording why not. Every field
    /// is read whatever others got wrong, and the core's checks run on what could be read
    /// (defaults standing in for the fields in error), so one pass reports every mistake.
    fn read(&mut self, t: &toml::Table, config: &Config) -> Option<HostJob> {
        // Name first: every later error names the job by it.
        let name = self.name(t);
        self.unknown_keys(t, None);
        // A job with `after` and no schedule takes its upstreams' once the whole file is
        // read (`after::resolve`); until then it stands in, and is checked without it.
        let inherits = takes_upstreams_schedule(t);
        let schedule = match inherits {
            true => {
                self.orphans_without_schedule(t);
                Some(stand_in_schedule())
            }
            false => self.schedule(t),
        };
        let command = self.command(t);
        let alerts = self.alerts(t);
        let upstreams = self.after(t, name.as_ref());
        let mut def = self.definition(t, name.clone(), schedule.clone());
        def.after = upstreams;
        // What runs is part of the definition: its digest covers it, a change of it is held
        // under `requires_confirmation`, and the daemon runs the one in force.
        def.payload = command.as_ref().map(Command::payload);
        let read_cleanly = self.errors.is_empty();
        self.core_checks(def.clone(), config, schedule.is_some() && !inherits);
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
            cron_text: get(t, Field::Cron)
                .and_then(Value::as_str)
                .map(String::from),
            command,
            alerts,
        })
    }

    /// The job's own `alerts` table (it replaces the file's for this job).
    fn alerts(&mut self, t: &toml::Table) -> Option<Route> {
        match crate::alerts::parse(get(t, Field::Alerts)?) {
            Ok(route) => Some(route),
            Err(problems) => {
                for e in problems {
                    let problem = FieldProblem::Alerts(e.problem);
                    match e.key.as_str() {
                        "" => self.field_error(Field::Alerts, problem),
                        key => self.field_error(At::Inner(Field::Alerts, key), problem),
                    }
                }
                None
            }
        }
    }

    fn name(&mut self, t: &toml::Table) -> Option<JobName> {
        let problem = match get(t, Field::Name) {
            Some(Value::String(s)) => {
                self.job = JobRef::Named(s.clone());
                match JobName::new(s) {
                    Ok(n) => return Some(n),
                    Err(_) => FieldProblem::BadValue {
                        text: s.clone(),
                        what: "a job name",
                        accepted: NAME_RULE.to_string(),
                    },
                }
            }
            Some(v) => FieldProblem::WrongType {
                found: describe(v),
                accepted: format!("a string: {NAME_RULE}"),
            },
            None => FieldProblem::Missing {
                accepted: NAME_RULE,
            },
        };
        self.field_error(Field::Name, problem);
        None
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
        let title = "a string of at most 200 characters";
        if let Some(title) = self.string(t, Field::Title, title) {
            def.title = title;
        }
        if let Some(missed) = self.choice(t, Field::Missed) {
            def.missed = missed;
        }
        def.overlap = self.choice(t, Field::Overlap);
        if let Some(retries) = self.retries(t) {
            def.retries = retries;
        }
        if let Some(backoff) = self.backoff(t) {
            def.backoff = backoff;
        }
        if let Some(timeout) = self.duration(t, Field::Timeout) {
            def.timeout = timeout;
        }
        if let Some(stall_after) = self.duration(t, Field::StallAfter) {
            def.stall_after = stall_after;
        }
        def.catch_up_window = self.duration(t, Field::CatchUpWindow);
        if let Some(b) = self.boolean(t, Field::SafeToRepeat) {
            def.safe_to_repeat = b;
        }
        if let Some(b) = self.boolean(t, Field::LegalDuty) {
            def.legal_duty = b;
        }
        let key = "a string of 1-128 printable characters";
        def.concurrency_key = self.string(t, Field::ConcurrencyKey, key);
        def.pause_after_failures = self.count_at_least_1(t, Field::PauseAfterFailures);
        def.wait_budget = self.duration(t, Field::WaitBudget);
        def.alert_throttle = self.duration(t, Field::AlertThrottle);
        def.concurrency_limit = self.count_at_least_1(t, Field::ConcurrencyLimit);
        def.jitter = self.duration(t, Field::Jitter);
        def.expect_success_within = self.duration(t, Field::ExpectSuccessWithin);
        if let Some(b) = self.boolean(t, Field::RequiresConfirmation) {
            def.requires_confirmation = b;
        }
        def
    }
}
