//! The wire form of `Effect`: one flat, internally tagged enum (`{"effect": "start", ...}`),
//! as the wire format, its fixtures and its schema have always had it. `Effect` groups the
//! same variants by what the host must do with them; serde and schemars go through this
//! mirror (`#[serde(into, from)]`), so the bytes on the wire do not change with the
//! grouping. The doc comments here are the schema's descriptions; a start is the one
//! `Start` struct `Action::Start` holds too, its fields written beside the tag, and its
//! fields' descriptions are on it.

use serde::{Deserialize, Serialize};

use super::{Action, Alert, CancelReason, ClockGapKind, Effect, Notice, Record, Refusal, Start};
use crate::event::{Fence, ProcessId, RunId};
use crate::job::JobName;
use crate::time::{Duration, Timestamp};
use crate::view::JobView;

/// What the core asks of its host, in order. Records go into the store in the step's
/// transaction; everything else is carried out only after that transaction commits
/// (`State::step` gives the whole host loop).
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "effect", rename_all = "snake_case")]
pub(crate) enum FlatEffect {
    /// Start a run on `process`. The host must feed back `RunFinished` with this run and fence.
    Start(Start),
    /// Stop a run on `process` (signal it; its result, if any, still comes back).
    /// `job` is `None` when the run is not known at all (a process holding a run the
    /// state never had, or one long settled).
    Cancel {
        /// The run.
        run: RunId,
        /// Its job, when known.
        job: Option<JobName>,
        /// The process that holds it.
        process: ProcessId,
        /// Why.
        reason: CancelReason,
    },
    /// Append to the journal, in the same transaction as the state.
    Record(Record),
    /// A process's wall clock moved `by` more (forward) or less (backward) than its
    /// monotonic clock between two of its events, beyond `config.clock_jump`. Not a journal
    /// line (the journal is per job): hosts log it. The due times a forward gap passed are
    /// recorded in the journal with the gap's cause (`asleep`, `clock_forward`).
    ClockGap {
        /// The wall time of the event that found it.
        at: Timestamp,
        /// The process whose clocks disagreed.
        process: ProcessId,
        /// What was found.
        kind: ClockGapKind,
        /// How far the wall clock moved beyond the monotonic clock.
        by: Duration,
    },
    /// Tell a person (after commit).
    Alert(Alert),
    /// A job's whole record, taken out by the `move_out` event: put it into the other state
    /// with `move_in` in the same transaction.
    Handover {
        /// The record, as a state stores it.
        record: Box<crate::state::JobRecord>,
    },
    /// The answer to a command: the job's new view (none for commands about no one job).
    Reply {
        /// The job the command was about, if one.
        job: Option<JobName>,
        /// The job's view after the command, or why it was refused.
        result: Result<Option<Box<JobView>>, Refusal>,
    },
    /// `single_owner`: `process` took the owner lease with `fence`, a fence higher than any
    /// owner's before; from now on only it claims. `from` is the earlier holder whose lease
    /// lapsed (`None`: the lease was free). Renewals are not told.
    Owner {
        /// The new owner.
        process: ProcessId,
        /// Its fence.
        fence: Fence,
        /// When its lease lapses unless renewed.
        until: Timestamp,
        /// The earlier holder, if its lease lapsed.
        from: Option<ProcessId>,
    },
    /// `single_owner`: the draining `process` gave up the owner lease, so a standby takes
    /// it at its next tick instead of waiting for it to lapse.
    OwnerReleased {
        /// The process that released it.
        process: ProcessId,
        /// The lease's fence.
        fence: Fence,
    },
    /// The draining `process` holds no open run any more: its drain is complete and it may
    /// exit. Told once per process.
    Drained {
        /// The process whose drain is complete.
        process: ProcessId,
    },
}

impl From<Effect> for FlatEffect {
    fn from(e: Effect) -> FlatEffect {
        match e {
            Effect::Journal(r) => FlatEffect::Record(r),
            Effect::Do(Action::Start(start)) => FlatEffect::Start(start),
            Effect::Do(Action::Cancel {
                run,
                job,
                process,
                reason,
            }) => FlatEffect::Cancel {
                run,
                job,
                process,
                reason,
            },
            Effect::Notice(n) => n.into(),
            Effect::Reply { job, result } => FlatEffect::Reply { job, result },
            Effect::Handover(record) => FlatEffect::Handover { record },
        }
    }
}

impl From<Notice> for FlatEffect {
    fn from(n: Notice) -> FlatEffect {
        match n {
            Notice::Alert(a) => FlatEffect::Alert(a),
            Notice::ClockGap {
                at,
                process,
                kind,
                by,
            } => FlatEffect::ClockGap {
                at,
                process,
                kind,
                by,
            },
            Notice::Owner {
                process,
                fence,
                until,
                from,
            } => FlatEffect::Owner {
                process,
                fence,
                until,
                from,
            },
            Notice::OwnerReleased { process, fence } => {
                FlatEffect::OwnerReleased { process, fence }
            }
            Notice::Drained { process } => FlatEffect::Drained { process },
        }
    }
}

impl From<FlatEffect> for Effect {
    fn from(e: FlatEffect) -> Effect {
        match e {
            FlatEffect::Record(r) => Effect::Journal(r),
            FlatEffect::Start(start) => Effect::Do(Action::Start(start)),
            FlatEffect::Cancel {
                run,
                job,
                process,
                reason,
            } => Effect::Do(Action::Cancel {
                run,
                job,
                process,
                reason,
            }),
            FlatEffect::Reply { job, result } => Effect::Reply { job, result },
            FlatEffect::Handover { record } => Effect::Handover(record),
            FlatEffect::Alert(a) => Effect::Notice(Notice::Alert(a)),
            FlatEffect::ClockGap {
                at,
                process,
                kind,
                by,
            } => Effect::Notice(Notice::ClockGap {
                at,
                process,
                kind,
                by,
            }),
            FlatEffect::Owner {
                process,
                fence,
                until,
                from,
            } => Effect::Notice(Notice::Owner {
                process,
                fence,
                until,
                from,
            }),
            FlatEffect::OwnerReleased { process, fence } => {
                Effect::Notice(Notice::OwnerReleased { process, fence })
            }
            FlatEffect::Drained { process } => Effect::Notice(Notice::Drained { process }),
        }
    }
}
