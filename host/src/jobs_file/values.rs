//! The values of a job's fields, each by its type: strings, booleans, durations, the
//! core's named rules, counts and the `backoff` table.

use duetime::{Backoff, Duration, MAX_RETRIES};
use toml::Value;

use super::errors::{FieldProblem, DURATION_FORMS};
use super::fields::{At, Field};
use super::reader::{get, JobReader};
use super::rules::{self, Rule};

impl JobReader<'_> {
    pub(super) fn string(
        &mut self,
        t: &toml::Table,
        field: Field,
        accepted: &str,
    ) -> Option<String> {
        match get(t, field)? {
            Value::String(s) => Some(s.clone()),
            v => {
                self.wrong_type(field, v, accepted);
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, t: &toml::Table, field: Field) -> Option<bool> {
        match get(t, field)? {
            Value::Boolean(b) => Some(*b),
            v => {
                self.wrong_type(field, v, "true or false (without quotes)");
                None
            }
        }
    }

    pub(super) fn duration(&mut self, t: &toml::Table, field: Field) -> Option<Duration> {
        let v = get(t, field)?;
        self.duration_value(field, v)
    }

    pub(super) fn duration_value<'k>(
        &mut self,
        at: impl Into<At<'k>>,
        v: &Value,
    ) -> Option<Duration> {
        let problem = match v {
            Value::String(s) => match s.parse::<Duration>() {
                Ok(d) => return Some(d),
                Err(_) => FieldProblem::BadValue {
                    text: s.clone(),
                    what: "a duration",
                    accepted: format!(
                        "a duration: numbers each followed by a unit d, h, m, s or ms, \
                         such as {DURATION_FORMS}"
                    ),
                },
            },
            v => FieldProblem::WrongType {
                found: super::reader::describe(v),
                accepted: format!("a string holding a duration such as {DURATION_FORMS}"),
            },
        };
        self.field_error(at, problem);
        None
    }

    /// One of the core's named rules (`missed`, `overlap`).
    pub(super) fn choice<T: Rule>(&mut self, t: &toml::Table, field: Field) -> Option<T> {
        let v = get(t, field)?;
        self.choice_value(field, v)
    }

    pub(super) fn choice_value<'k, T: Rule>(
        &mut self,
        at: impl Into<At<'k>>,
        v: &Value,
    ) -> Option<T> {
        let names = rules::names::<T>();
        match v {
            Value::String(s) => match rules::from_name::<T>(s) {
                Some(value) => Some(value),
                None => {
                    self.field_error(
                        at,
                        FieldProblem::BadValue {
                            text: s.clone(),
                            what: T::WHAT,
                            accepted: names,
                        },
                    );
                    None
                }
            },
            v => {
                self.wrong_type(at, v, &format!("a string, one of {names}"));
                None
            }
        }
    }

    pub(super) fn retries(&mut self, t: &toml::Table) -> Option<u32> {
        match get(t, Field::Retries)? {
            Value::Integer(n) => match u32::try_from(*n) {
                // Above MAX_RETRIES the core's own check names the limit.
                Ok(n) => Some(n),
                Err(_) => {
                    self.field_error(
                        Field::Retries,
                        FieldProblem::OutOfRange {
                            value: *n,
                            accepted: format!("0-{MAX_RETRIES}"),
                        },
                    );
                    None
                }
            },
            v => {
                let accepted = format!("an integer 0-{MAX_RETRIES} (without quotes)");
                self.wrong_type(Field::Retries, v, &accepted);
                None
            }
        }
    }

    /// An integer field of at least 1 (0 goes through: the core's own check refuses it,
    /// naming the rule).
    pub(super) fn count_at_least_1(&mut self, t: &toml::Table, field: Field) -> Option<u32> {
        let accepted = "an integer of at least 1 (without quotes)";
        match get(t, field)? {
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

    /// A table-valued field (`dst`, `backoff`), its unknown keys recorded; `None` after
    /// recording that it is not a table.
    pub(super) fn inner_table<'t>(
        &mut self,
        field: Field,
        v: &'t Value,
        accepted: &str,
    ) -> Option<&'t toml::Table> {
        let Value::Table(inner) = v else {
            self.wrong_type(field, v, accepted);
            return None;
        };
        self.unknown_keys(inner, Some(field));
        Some(inner)
    }

    pub(super) fn backoff(&mut self, t: &toml::Table) -> Option<Backoff> {
        let v = get(t, Field::Backoff)?;
        let before = self.errors.len();
        let accepted = "a table such as { initial = \"30s\", max = \"10m\" }";
        let b = self.inner_table(Field::Backoff, v, accepted)?;
        let mut backoff = Backoff::default();
        if let Some(v) = b.get("initial") {
            if let Some(d) = self.duration_value(At::Inner(Field::Backoff, "initial"), v) {
                backoff.initial = d;
            }
        }
        if let Some(v) = b.get("max") {
            if let Some(d) = self.duration_value(At::Inner(Field::Backoff, "max"), v) {
                backoff.max = d;
            }
        }
        (self.errors.len() == before).then_some(backoff)
    }
}
