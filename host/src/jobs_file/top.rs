//! The top of the file: its keys, every job's `user` and `group` defaults, the file's
//! `[alerts]` table and the `[[job]]` entries.

use toml::Value;

use super::commands::identity_text;
use super::errors::{JobsFileError, TopProblem};
use super::fields::TOP_FIELDS;
use super::reader::describe;
use super::spans::Lines;
use super::{suggestions, Route};

/// The file's `user` and `group`: whom every job runs as unless it says otherwise.
#[derive(Default)]
pub(super) struct RunAsDefaults {
    pub(super) user: Option<String>,
    pub(super) group: Option<String>,
}

/// The top of the file, read: what applies to every job, and the jobs' entries.
pub(super) struct Top<'d> {
    pub(super) defaults: RunAsDefaults,
    pub(super) alerts: Option<Route>,
    pub(super) calendars: duetime::Calendars,
    pub(super) entries: &'d [Value],
}

/// Reads the top of the file, recording every error in it.
pub(super) fn read<'d>(
    doc: &'d toml::Table,
    file: &str,
    lines: &Lines<'_>,
    errors: &mut Vec<JobsFileError>,
) -> Top<'d> {
    let mut top = TopReader {
        doc,
        file,
        lines,
        errors,
    };
    top.unknown_keys();
    let entries = top.job_entries();
    let defaults = RunAsDefaults {
        user: top.identity("user"),
        group: top.identity("group"),
    };
    let alerts = top.alerts();
    let calendars = top.calendars();
    Top {
        defaults,
        alerts,
        calendars,
        entries,
    }
}

struct TopReader<'d, 'r> {
    doc: &'d toml::Table,
    file: &'r str,
    lines: &'r Lines<'r>,
    errors: &'r mut Vec<JobsFileError>,
}

impl<'d> TopReader<'d, '_> {
    /// Records a problem with `key`, at the line of the top-level key `at`.
    fn error(&mut self, at: &str, key: String, problem: TopProblem) {
        self.errors.push(JobsFileError::TopLevel {
            file: self.file.to_string(),
            line: self.lines.top_key(at),
            key,
            problem,
        });
    }

    /// A top-level key the file does not know, with the one it probably meant.
    fn unknown_keys(&mut self) {
        let doc = self.doc;
        for key in doc.keys().filter(|k| !TOP_FIELDS.contains(&k.as_str())) {
            let suggestion = suggestions::top_key(key);
            self.error(key, key.clone(), TopProblem::UnknownKey { suggestion });
        }
    }

    /// The `[[job]]` entries (none, and an error, when `job` is not an array of tables).
    fn job_entries(&mut self) -> &'d [Value] {
        match self.doc.get("job") {
            None => &[],
            Some(Value::Array(entries)) => entries,
            Some(other) => {
                let found = describe(other);
                self.error("job", "job".into(), TopProblem::NotArrayOfTables { found });
                &[]
            }
        }
    }

    /// The top-level default `key`, or `None` after recording why it is refused.
    fn identity(&mut self, key: &str) -> Option<String> {
        match identity_text(self.doc.get(key)?) {
            Ok(s) => Some(s),
            Err(found) => {
                self.error(key, key.to_string(), TopProblem::BadDefault { found });
                None
            }
        }
    }

    /// The file's `[alerts]` table, or `None` (after recording why, when it is refused).
    fn alerts(&mut self) -> Option<Route> {
        match crate::alerts::parse(self.doc.get("alerts")?) {
            Ok(route) => Some(route),
            Err(problems) => {
                for e in problems {
                    let key = alerts_key(&e.key);
                    self.error("alerts", key, TopProblem::Alerts(e.problem));
                }
                None
            }
        }
    }
}

impl TopReader<'_, '_> {
    /// The file's `[calendars.NAME]` tables (none after recording why each is refused).
    fn calendars(&mut self) -> duetime::Calendars {
        let Some(v) = self.doc.get("calendars") else {
            return duetime::Calendars::new();
        };
        let (calendars, refusals) = super::calendars::read(v, self.file);
        for (key, problem) in refusals {
            self.error("calendars", key, problem);
        }
        calendars
    }
}

/// `alerts.webhook` for the key `webhook` of an alerts table, `alerts` for the table.
pub(super) fn alerts_key(key: &str) -> String {
    if key.is_empty() {
        "alerts".into()
    } else {
        format!("alerts.{key}")
    }
}
