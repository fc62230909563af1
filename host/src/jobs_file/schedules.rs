//! A job's schedule: exactly one of `cron` (with `tz` and `dst`), `every` (with `offset`)
//! and `at`, compiled by the core.

use duetime::{
    BusinessDay, Calendar, CronError, CronSchedule, DstPolicy, Duration, Fold, Gap, Roll, Schedule,
    ScheduleError, Timestamp,
};
use toml::Value;

use super::errors::{FieldProblem, JobProblem, INSTANT_FORMS};
use super::fields::{At, Field, SCHEDULE_FIELDS};
use super::reader::{get, JobReader};
use super::rules::from_name;

/// One schedule key as found, before it is compiled.
enum ScheduleText<'v> {
    Cron(&'v str),
    Every(Duration),
    At(Timestamp),
}

impl JobReader<'_> {
    pub(super) fn schedule(&mut self, t: &toml::Table) -> Option<Schedule> {
        let present: Vec<Field> = SCHEDULE_FIELDS
            .into_iter()
            .filter(|f| get(t, *f).is_some())
            .collect();
        let kind = match present[..] {
            [] => {
                self.job_error(JobProblem::NoSchedule);
                return None;
            }
            [kind] => kind,
            _ => {
                let fields = present.iter().map(|f| f.name()).collect();
                self.job_error(JobProblem::TwoSchedules { fields });
                return None;
            }
        };
        self.orphan_keys(t, kind);
        let before = self.errors.len();
        let base = match self.schedule_text(kind, get(t, kind)?)? {
            ScheduleText::Cron(expr) => self.cron(t, expr),
            ScheduleText::Every(period) => self.every(t, period, before),
            ScheduleText::At(instant) => Some(Schedule::at(instant)),
        };
        self.calendar_rules(t, base?)
    }

    /// `exclude`, `business_day` and `roll` around the base schedule (issue 45): the
    /// calendars named are looked up among the file's `[calendars.NAME]`.
    fn calendar_rules(&mut self, t: &toml::Table, base: Schedule) -> Option<Schedule> {
        let (ex, bd, roll) = (
            get(t, Field::Exclude),
            get(t, Field::BusinessDay),
            get(t, Field::Roll),
        );
        if ex.is_none() && bd.is_none() && roll.is_none() {
            return Some(base);
        }
        let exclude = match ex {
            None => Vec::new(),
            Some(v) => self.exclude(v)?,
        };
        let business_day = match bd {
            None => None,
            Some(Value::Integer(n)) => match BusinessDay::new(*n) {
                Ok(b) => Some(b),
                Err(e) => {
                    let problem = FieldProblem::Schedule(ScheduleError::Calendar(e));
                    self.field_error(Field::BusinessDay, problem);
                    return None;
                }
            },
            Some(v) => {
                self.wrong_type(Field::BusinessDay, v, "an integer: 1 to 23, or -1 to -23");
                return None;
            }
        };
        let roll = match roll {
            None => Roll::Stay,
            Some(v) => match v.as_str().and_then(from_name) {
                Some(r) => r,
                None => {
                    self.wrong_type(Field::Roll, v, "\"none\", \"next\" or \"previous\"");
                    return None;
                }
            },
        };
        match Schedule::calendar(base, exclude, business_day, roll) {
            Ok(s) => Some(s),
            Err(e) => {
                let at = if business_day.is_none() && exclude_is_empty(ex) {
                    Field::Roll
                } else {
                    Field::Exclude
                };
                self.field_error(at, FieldProblem::Schedule(e));
                None
            }
        }
    }

    /// `exclude = ["holidays", ...]`: the calendars, by the names the file declares.
    fn exclude(&mut self, v: &Value) -> Option<Vec<Calendar>> {
        let accepted = "an array of calendar names, such as [\"holidays\"]";
        let Value::Array(items) = v else {
            self.wrong_type(Field::Exclude, v, accepted);
            return None;
        };
        let mut names = Vec::new();
        for item in items {
            match item {
                Value::String(s) => names.push(s.as_str()),
                other => {
                    self.wrong_type(Field::Exclude, other, accepted);
                    return None;
                }
            }
        }
        match self.calendars.resolve(&names) {
            Ok(c) => Some(c),
            Err(e) => {
                let problem = FieldProblem::Schedule(ScheduleError::Calendar(e));
                self.field_error(Field::Exclude, problem);
                None
            }
        }
    }

    /// The value of the schedule key `kind`, checked for its type.
    fn schedule_text<'v>(&mut self, kind: Field, v: &'v Value) -> Option<ScheduleText<'v>> {
        match (kind, v) {
            (Field::Cron, Value::String(s)) => Some(ScheduleText::Cron(s)),
            (Field::Cron, v) => {
                let accepted = "a string holding a cron expression, such as \"30 2 * * *\"";
                self.wrong_type(Field::Cron, v, accepted);
                None
            }
            (Field::Every, v) => self
                .duration_value(Field::Every, v)
                .map(ScheduleText::Every),
            (_, Value::String(s)) => match s.parse::<Timestamp>() {
                Ok(t) => Some(ScheduleText::At(t)),
                Err(_) => {
                    self.field_error(
                        Field::At,
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
                self.wrong_type(Field::At, v, INSTANT_FORMS);
                None
            }
        }
    }

    /// `every` with its `offset`; `before` is the count of errors before the schedule.
    fn every(&mut self, t: &toml::Table, period: Duration, before: usize) -> Option<Schedule> {
        let offset = self.duration(t, Field::Offset).unwrap_or(Duration::ZERO);
        if self.errors.len() > before {
            return None;
        }
        if !period.is_zero() && offset >= period {
            let problem = FieldProblem::OffsetNotShorter { offset, period };
            self.field_error(Field::Offset, problem);
            return None;
        }
        match Schedule::every(period, offset) {
            Ok(s) => Some(s),
            Err(e) => {
                self.field_error(Field::Every, FieldProblem::Schedule(e));
                None
            }
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
            Field::At,
            FieldProblem::BadValue {
                text,
                what,
                accepted: INSTANT_FORMS.to_string(),
            },
        );
        None
    }

    /// The keys of a schedule, in a job that has none of its own (it takes its upstreams'
    /// through `after`): they would change a schedule that must stay the upstreams'.
    pub(super) fn orphans_without_schedule(&mut self, t: &toml::Table) {
        let own = "a schedule of the job's own (cron, every or at)";
        let needed = [
            (Field::Tz, "cron"),
            (Field::Dst, "cron"),
            (Field::Offset, "every"),
            (Field::Exclude, own),
            (Field::BusinessDay, own),
            (Field::Roll, own),
        ];
        for (key, needs) in needed {
            if get(t, key).is_some() {
                self.field_error(key, FieldProblem::Needs { needs });
            }
        }
    }

    /// `tz`, `dst` and `offset` present without the schedule kind they belong to.
    fn orphan_keys(&mut self, t: &toml::Table, kind: Field) {
        let needed = [
            (Field::Tz, Field::Cron),
            (Field::Dst, Field::Cron),
            (Field::Offset, Field::Every),
        ];
        for (key, needs) in needed {
            if get(t, key).is_some() && kind != needs {
                let needs = needs.name();
                self.field_error(key, FieldProblem::Needs { needs });
            }
        }
    }

    fn cron(&mut self, t: &toml::Table, expr: &str) -> Option<Schedule> {
        let tz = match get(t, Field::Tz) {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(v) => {
                let accepted =
                    "a string: an IANA zone name such as \"America/New_York\" or \"UTC\"";
                self.wrong_type(Field::Tz, v, accepted);
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
                        Field::Tz
                    }
                    _ => Field::Cron,
                };
                self.field_error(field, FieldProblem::Cron(e));
                if field == Field::Cron {
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
            self.field_error(Field::Tz, FieldProblem::Cron(e));
        }
    }

    /// `dst = { gap = ..., fold = ... }`: either part may be left out, keeping cron's
    /// default for this expression. `None` after an error.
    #[allow(clippy::type_complexity)]
    fn dst(&mut self, t: &toml::Table) -> Option<(Option<Gap>, Option<Fold>)> {
        let Some(v) = get(t, Field::Dst) else {
            return Some((None, None));
        };
        let before = self.errors.len();
        let accepted = "a table such as { gap = \"skip\", fold = \"both\" }";
        let d = self.inner_table(Field::Dst, v, accepted)?;
        let gap = d
            .get("gap")
            .and_then(|v| self.choice_value(At::Inner(Field::Dst, "gap"), v));
        let fold = d
            .get("fold")
            .and_then(|v| self.choice_value(At::Inner(Field::Dst, "fold"), v));
        (self.errors.len() == before).then_some((gap, fold))
    }
}

/// Whether `exclude` is absent or names no calendar.
fn exclude_is_empty(v: Option<&Value>) -> bool {
    v.is_none_or(|v| matches!(v, Value::Array(a) if a.is_empty()))
}
