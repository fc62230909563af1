//! duetime: a job-scheduler core as one pure function, `(State, Event, Now) -> (State, Effects)`.
//!
//! The crate does no I/O and reads no clock. `schedule` answers "when is this due";
//! `State::step` decides what runs, what is recorded and what people are told. See
//! ARCHITECTURE.md for the path one event takes.

pub mod effect;
pub mod event;
pub mod job;
mod jobs;
pub mod lanes;
pub mod schedule;
#[cfg(feature = "schema")]
mod schema;
pub mod state;
pub mod step;
pub mod time;
pub mod view;

pub use effect::{
    Alert, AlertKind, CancelReason, ClockGapKind, Covers, Effect, Entry, History, LedgerEntry,
    LedgerKind, MissAction, MissCause, PausedBy, Record, Refusal, Trigger, WaitReason,
};
pub use event::{Actor, Event, Fence, Held, Now, Outcome, ProcessId, RunId, MAX_APPROVAL_TTL};
pub use job::{Backoff, DefError, JobDef, JobName, MissedRule, Overlap};
pub use schedule::{CronError, CronSchedule, DstPolicy, Fold, Gap, Schedule, ScheduleError, Zone};
pub use state::{
    Config, Coordination, Globals, JobRecord, LoadError, OneShotEnd, OwnerLease, State,
    FORMAT_VERSION,
};
pub use step::step;
pub use time::{Duration, Timestamp};
pub use view::{Filter, JobView, Page, Status};
