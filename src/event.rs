//! What hosts feed the core: definitions, process life, run results and people's commands,
//! each with the time the sending process read.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::job::{JobDef, JobName};
use crate::time::{Duration, Timestamp};

/// What the sending process read from its clocks. `wall` may be wrong or jump; `mono` is
/// that process's monotonic reading (milliseconds from any origin), which never jumps and
/// stands still while the machine sleeps (Linux `CLOCK_MONOTONIC`). `boot`, when the host
/// can read one, is a monotonic clock that keeps counting through sleep (`CLOCK_BOOTTIME`).
///
/// Why three: between two events of one process, a wall clock that ran ahead of `mono` by
/// an hour looks the same whether the wall clock was set forward or the machine slept for
/// an hour (in both, `mono` moved by about a tick). Only a clock that counts sleep tells the
/// two apart: after a sleep it moved with the wall clock, after a step it did not.
///
/// # Examples
///
/// ```
/// use duetime::{Now, Timestamp};
///
/// let wall: Timestamp = "2025-06-01T12:00:00Z".parse()?;
/// let mono = Timestamp::from_millis(86_400_000); // a day since boot, in any origin
/// let now = Now::new(wall, mono);
/// assert_eq!(now.wall, wall);
/// // Tests and one-shot commands: the monotonic clock follows the wall clock.
/// assert_eq!(Now::at(wall).mono, wall);
/// # Ok::<(), duetime::TimeParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Now {
    /// The wall clock: what due times and leases are measured in. May be wrong or jump.
    pub wall: Timestamp,
    /// The monotonic clock (any origin): never jumps, stands still in sleep.
    pub mono: Timestamp,
    /// A monotonic clock that counts sleep, when the host can read one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<Timestamp>,
}

impl Now {
    /// A reading of the wall and monotonic clocks, for a host that cannot read a clock that
    /// counts sleep (a gap is then told `clock_forward` whether it slept or not).
    pub fn new(wall: Timestamp, mono: Timestamp) -> Now {
        Now {
            wall,
            mono,
            boot: None,
        }
    }

    /// A reading with a clock that counts sleep as well (see the type's doc).
    pub fn with_boot(wall: Timestamp, mono: Timestamp, boot: Timestamp) -> Now {
        Now {
            wall,
            mono,
            boot: Some(boot),
        }
    }

    /// A reading whose monotonic clock follows the wall clock (tests, one-shot commands).
    pub fn at(wall: Timestamp) -> Now {
        Now::new(wall, wall)
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

id_type!(
    /// One incarnation of a host. A restarted host is a new process with a new id.
    ProcessId,
    "p"
);
id_type!(
    /// One attempt to execute a job, numbered by a counter in the state.
    RunId,
    "r"
);
id_type!(
    /// A number that only grows; a result carrying an older fence changes nothing.
    Fence,
    "f"
);

/// Who sent a command: a person or a tool acting for one. `Actor::forgotten()` stands in
/// after erasure.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Actor(pub String);

impl Actor {
    /// A person or tool by name, cut to `MAX_ACTOR` characters so the state stays bounded.
    pub fn new(name: &str) -> Actor {
        Actor(name.chars().take(MAX_ACTOR).collect())
    }
    /// What an erased actor's name becomes (`Event::ForgetActor`).
    pub fn forgotten() -> Actor {
        Actor("(forgotten)".to_string())
    }
}

/// Longest actor name kept, in characters.
pub const MAX_ACTOR: usize = 128;

impl fmt::Debug for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a run ended, as its process reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The run did its work.
    Ok,
    /// The job ran and found nothing to do; it counts as done.
    Skipped,
    /// `kind` is a short classification (`exit 1`, `signal TERM`); `retry_after` is the
    /// job's own word on when trying again makes sense.
    Failed {
        /// A short classification of the failure (`exit 1`, `signal TERM`).
        kind: String,
        /// When trying again makes sense, in the job's own word (a rate limit's `Retry-After`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<Duration>,
    },
    /// The host stopped the run at its deadline.
    TimedOut,
    /// The run did its part and now waits for a person's approval: the job stays occupied
    /// until `ApprovalGiven`, another result for the run, or `ttl` passes (then it settles
    /// `approval_expired`). `ttl` is clamped to `MAX_APPROVAL_TTL`, so a parked run always
    /// ends; the `parked` history line shows the instant actually used.
    AwaitingApproval {
        /// How long to wait for approval (at most `MAX_APPROVAL_TTL`).
        ttl: Duration,
    },
}

/// Longest a run waits for approval (30 days): a longer `ttl` is clamped to it.
pub const MAX_APPROVAL_TTL: Duration = Duration::from_days(30);

impl Outcome {
    /// A failure of `kind` with no word on when to retry.
    pub fn failed(kind: &str) -> Outcome {
        Outcome::Failed {
            kind: kind.to_string(),
            retry_after: None,
        }
    }

    /// Whether it settles the run done (`ok` or `skipped`): a success for retries, failure
    /// streaks and the dead-man's switch.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Ok | Outcome::Skipped)
    }
}

/// A run a process says it is carrying out, so a tick can renew its lease or tell it that
/// the lease is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Held {
    /// The run.
    pub run: RunId,
    /// The fence it was started or adopted under.
    pub fence: Fence,
}

/// Everything the core reacts to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Adds a job or changes its definition.
    Upsert {
        /// The definition.
        def: Box<JobDef>,
        /// Who sent it.
        actor: Actor,
    },
    /// Ends a job; its ledger is closed.
    Remove {
        /// The job.
        job: JobName,
        /// Who removed it.
        actor: Actor,
    },
    /// A new incarnation of a host: it restores, then claims like a tick.
    ProcessStarted {
        /// The new incarnation's id, fresh from the store.
        process: ProcessId,
    },
    /// Renew this process's leases (it lists the runs it holds), enforce timeouts and
    /// leases, claim what is due.
    Tick {
        /// The ticking process.
        process: ProcessId,
        /// The runs it is carrying out.
        held: Vec<Held>,
    },
    /// Claim nothing more; let the process's runs finish.
    ProcessDraining {
        /// The draining process.
        process: ProcessId,
    },
    /// A new incarnation takes over a run an earlier one started whose child outlived it
    /// (a daemon restarted while its command ran on): with the run's current fence, the
    /// lease moves to `process`, which then renews it and reports the result. Without this
    /// the run would lapse and count as lost although it is still going.
    Adopt {
        /// The adopting incarnation.
        process: ProcessId,
        /// The run it found still going.
        run: RunId,
        /// The fence the run was started or last adopted under.
        fence: Fence,
    },
    /// `job` names the job the process ran, so a result for a run the state no longer
    /// holds is still recorded as stale against the right job.
    RunFinished {
        /// The process that ran it.
        process: ProcessId,
        /// The job it ran.
        job: JobName,
        /// The run, from its `Start`.
        run: RunId,
        /// The fence, from its `Start` (or its adoption).
        fence: Fence,
        /// How it ended.
        outcome: Outcome,
    },
    /// A person stops the job's schedule; due times meanwhile meet the missed rule when it
    /// resumes.
    Pause {
        /// The job.
        job: JobName,
        /// Who paused it.
        actor: Actor,
        /// Why, for the people who will read it.
        note: String,
    },
    /// A person resumes a paused job (and clears its incidents).
    Resume {
        /// The job.
        job: JobName,
        /// Who resumed it.
        actor: Actor,
    },
    /// A person asks for one run now, outside the schedule (it covers no due time).
    RunNow {
        /// The job.
        job: JobName,
        /// Who asked.
        actor: Actor,
    },
    /// Erasure: the actor's name leaves the state.
    ForgetActor {
        /// The actor to forget.
        actor: Actor,
    },
    /// Applies the job's held definition, if `digest` is its digest (`JobDef::digest`).
    Confirm {
        /// The job.
        job: JobName,
        /// The digest of the held definition, as shown to the person.
        digest: String,
        /// Who confirmed.
        actor: Actor,
    },
    /// A person approves run `run` of `job`, parked awaiting approval: it settles done.
    /// Refused (`not_awaiting_approval`) for a run that is not parked there now.
    ApprovalGiven {
        /// The job.
        job: JobName,
        /// The parked run.
        run: RunId,
        /// Who approved.
        actor: Actor,
    },
    /// Takes the job's whole record out of this state (`Effect::Handover`), for a host
    /// moving it to another state (another partition of its store); refused while a run
    /// of it is open (`in_flight`, `awaiting_approval`): the move waits for the run.
    MoveOut {
        /// The job.
        job: JobName,
        /// Who moves it.
        actor: Actor,
    },
    /// Puts in a record another state's `MoveOut` handed over, in the same transaction:
    /// its journal goes on here from where it stopped there.
    MoveIn {
        /// The record, as `Effect::Handover` carried it.
        record: Box<crate::state::JobRecord>,
        /// Who moves it.
        actor: Actor,
    },
    /// Run the job's due times from `from` to `to` (inclusive), before the span its ledger
    /// accounts already; refused for any range reaching into that span.
    Backfill {
        /// The job.
        job: JobName,
        /// The first instant of the range: `Timestamp::MIN` asks for every due time up to
        /// `to` (a one-shot's, or a sparse schedule's whole past).
        from: Timestamp,
        /// The last instant of the range.
        to: Timestamp,
        /// Who asked.
        actor: Actor,
    },
}

/// One line per event for traces and logs, in the words of the README.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Upsert { def, actor } => {
                write!(f, "upsert {} ({}) by {actor}", def.name, def.schedule)
            }
            Event::Remove { job, actor } => write!(f, "remove {job} by {actor}"),
            Event::ProcessStarted { process } => write!(f, "{process} started"),
            Event::Tick { process, held } => {
                write!(f, "{process} tick holding [")?;
                for (i, h) in held.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    write!(f, "{sep}{}/{}", h.run, h.fence)?;
                }
                f.write_str("]")
            }
            Event::ProcessDraining { process } => write!(f, "{process} draining"),
            Event::Adopt {
                process,
                run,
                fence,
            } => write!(f, "{process} adopts {run} {fence}"),
            Event::RunFinished {
                process,
                job,
                run,
                fence,
                outcome,
            } => {
                write!(f, "{process} reports {job} {run} {fence}: {outcome}")
            }
            Event::Pause { job, actor, note } => write!(f, "pause {job} by {actor}: {note:?}"),
            Event::Resume { job, actor } => write!(f, "resume {job} by {actor}"),
            Event::RunNow { job, actor } => write!(f, "run-now {job} by {actor}"),
            Event::ForgetActor { actor } => write!(f, "forget {actor}"),
            Event::Confirm { job, digest, actor } => {
                write!(f, "confirm {job} {digest} by {actor}")
            }
            Event::ApprovalGiven { job, run, actor } => {
                write!(f, "approve {job} {run} by {actor}")
            }
            Event::Backfill {
                job,
                from,
                to,
                actor,
            } => write!(f, "backfill {job} {from}..{to} by {actor}"),
            Event::MoveOut { job, actor } => write!(f, "move-out {job} by {actor}"),
            Event::MoveIn { record, actor } => {
                write!(f, "move-in {} by {actor}", record.def().name)
            }
        }
    }
}
