//! What a job runs: `command`, `workdir`, `env`, `env_file`, and whom it runs as
//! (`user`, `group`, else the file's defaults).

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::Value;

use super::errors::{FieldProblem, IDENTITY_FORMS};
use super::fields::{At, Field};
use super::reader::{describe, get, JobReader};
use super::Command;

/// A user or group name as written: non-empty text without NUL (a number is written as a
/// string, so `0` and `"0"` cannot be told apart by accident).
pub(super) fn identity_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if !s.is_empty() && !s.contains('\0') => Ok(s.clone()),
        Value::String(_) => Err("an empty string or one holding NUL".into()),
        other => Err(describe(other).to_string()),
    }
}

impl JobReader<'_> {
    pub(super) fn command(&mut self, t: &toml::Table) -> Option<Command> {
        let before = self.errors.len();
        let argv = self.argv(t);
        let workdir = self.workdir(t);
        let env = self.env(t);
        let env_file = self.env_file(t);
        let user = self
            .identity(t, Field::User)
            .or_else(|| self.defaults.user.clone());
        let group = self
            .identity(t, Field::Group)
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
        match get(t, Field::Command) {
            None => {
                self.field_error(
                    Field::Command,
                    FieldProblem::Missing {
                        accepted: "a list of strings, the program then its arguments, \
                               such as [\"/usr/local/bin/backup\", \"--full\"]",
                    },
                );
                None
            }
            Some(Value::Array(items)) if items.is_empty() => {
                self.field_error(Field::Command, FieldProblem::EmptyCommand);
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
                self.wrong_type(Field::Command, v, accepted);
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
                    Field::Command,
                    FieldProblem::BadText {
                        problem: "the program (the first item) is an empty string; \
                                  accepted: a program name or path",
                    },
                ),
                Value::String(s) if s.contains('\0') => self.field_error(
                    Field::Command,
                    FieldProblem::BadText {
                        problem: "an item holds a NUL character, which no program \
                                  argument can; accepted: text without \\u0000",
                    },
                ),
                Value::String(s) => argv.push(s.clone()),
                other => self.field_error(
                    Field::Command,
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
        match get(t, Field::Workdir) {
            None => None,
            Some(Value::String(s)) if s.is_empty() || s.contains('\0') => {
                self.field_error(
                    Field::Workdir,
                    FieldProblem::BadText {
                        problem: "is empty or holds a NUL character; accepted: a directory path",
                    },
                );
                None
            }
            Some(Value::String(s)) => Some(PathBuf::from(s)),
            Some(v) => {
                self.wrong_type(Field::Workdir, v, "a string: a directory path");
                None
            }
        }
    }

    /// `env`: a table of variables, names without `=` or NUL, values strings.
    fn env(&mut self, t: &toml::Table) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        match get(t, Field::Env) {
            None => {}
            Some(Value::Table(vars)) => {
                for (k, v) in vars {
                    let field = At::Inner(Field::Env, k);
                    match v {
                        _ if k.is_empty() || k.contains('=') || k.contains('\0') => self
                            .field_error(
                                field,
                                FieldProblem::BadText {
                                    problem: "is not a variable name; accepted: a non-empty \
                                              name without = or NUL",
                                },
                            ),
                        Value::String(s) if s.contains('\0') => self.field_error(
                            field,
                            FieldProblem::BadText {
                                problem: "holds a NUL character; accepted: text without \\u0000",
                            },
                        ),
                        Value::String(s) => {
                            env.insert(k.clone(), s.clone());
                        }
                        v => self.wrong_type(field, v, "a string (write numbers in quotes)"),
                    }
                }
            }
            Some(v) => self.wrong_type(
                Field::Env,
                v,
                "a table of strings, such as { LANG = \"C\" }",
            ),
        }
        env
    }

    /// `env_file`: an absolute path (the daemon's working directory is no anchor a person
    /// sees when reading the file).
    fn env_file(&mut self, t: &toml::Table) -> Option<PathBuf> {
        match get(t, Field::EnvFile)? {
            Value::String(s) if s.starts_with('/') && !s.contains('\0') => Some(PathBuf::from(s)),
            Value::String(_) => {
                self.field_error(
                    Field::EnvFile,
                    FieldProblem::BadText {
                        problem: "is not an absolute path; accepted: a file path beginning \
                                  with /, such as \"/etc/duetime/backup.env\"",
                    },
                );
                None
            }
            v => {
                self.wrong_type(Field::EnvFile, v, "a string: an absolute file path");
                None
            }
        }
    }

    /// `user` or `group` of the job.
    fn identity(&mut self, t: &toml::Table, key: Field) -> Option<String> {
        let v = get(t, key)?;
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
}
