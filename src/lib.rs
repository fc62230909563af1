//! duetime: a job-scheduler core as one pure function, `(State, Event, Now) -> (State, Effects)`.
//!
//! This crate does no I/O and reads no clock. The schedules module answers "when is this
//! due"; the state machine that decides what runs builds on it.

pub mod schedule;
pub mod time;

pub use schedule::{CronError, CronSchedule, DstPolicy, Fold, Gap, Schedule, ScheduleError, Zone};
pub use time::{Duration, Timestamp};
