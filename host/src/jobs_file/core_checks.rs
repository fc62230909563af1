//! The core's own refusals: each complete definition goes through `JobDef::validate`, so
//! the file refuses exactly what the core would, every refusal reported, each against the
//! field the file writes.

use duetime::{Config, DefError, Duration, JobDef, Schedule, MAX_RETRIES};

use super::errors::FieldProblem;
use super::fields::{Field, SCHEDULE_FIELDS};
use super::reader::JobReader;

impl JobReader<'_> {
    /// Every refusal of the core's `JobDef::validate`, not only its first: each one found
    /// is recorded and its field set back to the default, and the check runs again.
    /// Refusals about a field already in error are not repeated, nor those about the
    /// stand-in schedule.
    pub(super) fn core_checks(&mut self, mut def: JobDef, config: &Config, real_schedule: bool) {
        let in_error = self.in_error.clone();
        // Each pass resets one field, and there are fewer kinds of refusal than this.
        for _ in 0..32 {
            let Err(e) = def.validate(config) else {
                return;
            };
            let (field, problem) = def_problem(&def, e.clone());
            let involved = involved_fields(&e);
            let stand_in = !real_schedule && involved.iter().any(|f| SCHEDULE_FIELDS.contains(f));
            if !stand_in && !involved.iter().any(|f| in_error.contains(f)) {
                self.field_error(field, problem);
            }
            if !reset_field(&mut def, &e) {
                return;
            }
        }
    }
}

/// The job field a core `DefError` is about (its Display starts with it).
fn def_error_field(e: &DefError) -> Field {
    match e {
        DefError::BadName { .. } | DefError::DuplicateName { .. } => Field::Name,
        DefError::TitleTooLong { .. } => Field::Title,
        DefError::LegalDutyNeedsRequired => Field::LegalDuty,
        DefError::LegalDutyHasWindow => Field::CatchUpWindow,
        DefError::RequiredCannotSkipOverlap => Field::Overlap,
        DefError::EveryShorterThanTick { .. } => Field::Every,
        DefError::ZeroTimeout => Field::Timeout,
        DefError::TooManyRetries { .. } => Field::Retries,
        DefError::BadBackoff => Field::Backoff,
        DefError::BadConcurrencyKey { .. } => Field::ConcurrencyKey,
        DefError::ZeroFailureStreak => Field::PauseAfterFailures,
        DefError::BadConcurrencyLimit { .. } => Field::ConcurrencyLimit,
        DefError::JitterTooLong { .. } => Field::Jitter,
        DefError::PayloadTooLong { .. } => Field::Command,
        DefError::ExpectSuccessTooSoon { .. } => Field::ExpectSuccessWithin,
        DefError::BadUpstreams { .. } => Field::After,
    }
}

/// The schedule a definition is checked with when its own could not be read: daily,
/// longer than any tick, so it adds no refusal of its own.
pub(super) fn stand_in_schedule() -> Schedule {
    Schedule::every(Duration::from_days(1), Duration::ZERO).expect("a day is a valid period")
}

/// The field a core refusal is about, and the problem as the file reports it.
fn def_problem(def: &JobDef, e: DefError) -> (Field, FieldProblem) {
    match e {
        DefError::TooManyRetries { retries } => (
            Field::Retries,
            FieldProblem::OutOfRange {
                value: i64::from(retries),
                accepted: format!("0-{MAX_RETRIES}"),
            },
        ),
        // The core's words ("zero") do not fit a timeout of 500ms; say what it is.
        DefError::ZeroTimeout => (
            Field::Timeout,
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
fn involved_fields(e: &DefError) -> Vec<Field> {
    let mut fields = vec![def_error_field(e)];
    match e {
        DefError::LegalDutyNeedsRequired => fields.push(Field::Missed),
        DefError::LegalDutyHasWindow => fields.push(Field::LegalDuty),
        DefError::RequiredCannotSkipOverlap => fields.push(Field::Missed),
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
        DefError::BadUpstreams { .. } => def.after.clear(),
    }
    true
}
