//! duetime: a job-scheduler core as one pure function,
//! `(State, Event, Now) -> (State, Effects)`, called as
//! [`State::step`]`(now, event, &mut effects)`.
//!
//! The crate does no I/O, reads no clock and draws no random number. A host keeps the
//! [`State`] in its store, feeds it [`Event`]s with the time it read ([`Now`]), and carries
//! out the [`Effect`]s. Because the core is pure, a simulator can replay crashes, clock
//! jumps and racing processes by the million and check every promise. The manual is in
//! `docs/` (semantics, invariants, the host contract); this page teaches the core.
//!
//! # The host loop
//!
//! One event is one transaction: load the state, `step`, write the state and every
//! [`Effect::Journal`] record, commit, and only then carry out the rest ([`Effect::Do`],
//! [`Effect::Notice`], [`Effect::Reply`]), in order. A start carried out before the commit
//! could run a job whose claim never committed. [`State::step`] numbers the steps.
//!
//! ```
//! use duetime::{Action, Actor, Config, Effect, Event, JobDef, JobName, Now, Outcome, Start};
//! use duetime::{Entry, LedgerEntry, LedgerKind, ProcessId, Record, Schedule, State, Timestamp};
//!
//! /// The host's store: the state and the journal, written together.
//! struct Store {
//!     state: State,
//!     journal: Vec<Record>,
//! }
//!
//! /// One transaction: step, keep the records with the state, hand back the rest to carry
//! /// out after the commit.
//! fn transact(store: &mut Store, now: Timestamp, event: Event) -> Vec<Effect> {
//!     let mut effects = Vec::new();
//!     store.state.step(Now::at(now), event, &mut effects);
//!     let mut after_commit = Vec::new();
//!     for e in effects {
//!         match e {
//!             Effect::Journal(r) => store.journal.push(r),
//!             other => after_commit.push(other),
//!         }
//!     }
//!     after_commit
//! }
//!
//! let mut store = Store { state: State::new(Config::default()), journal: Vec::new() };
//! let t0: Timestamp = "2025-06-01T00:00:00Z".parse()?;
//! let def = JobDef::new(JobName::new("sync")?, Schedule::every("15m".parse()?, "0s".parse()?)?);
//! transact(&mut store, t0, Event::Upsert { def: Box::new(def), actor: Actor::new("ana") });
//!
//! // The host process: start, then tick when the core says something can change.
//! let process = ProcessId(1);
//! let mut now = t0;
//! let mut todo = transact(&mut store, now, Event::ProcessStarted { process });
//! for _ in 0..5 {
//!     for effect in std::mem::take(&mut todo) {
//!         if let Effect::Do(Action::Start(Start { run, fence, job, .. })) = effect {
//!             // Run the job's command here; report how it ended.
//!             let done = Event::RunFinished { process, job, run, fence, outcome: Outcome::Ok };
//!             todo.extend(transact(&mut store, now, done));
//!         }
//!     }
//!     now = store.state.next_wake_for(process).unwrap_or(now).max(now);
//!     todo.extend(transact(&mut store, now, Event::Tick { process, held: vec![] }));
//! }
//! // Every due time so far is in the ledger: 00:15, 00:30, 00:45 and 01:00 ran.
//! let ran = |r: &&Record| matches!(r.entry, Entry::Ledger(LedgerEntry { kind: LedgerKind::Ran { .. }, .. }));
//! assert_eq!(store.journal.iter().filter(ran).count(), 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The ledger
//!
//! Every due time a schedule yields ends up in exactly one ledger entry
//! ([`LedgerEntry`]): it ran, it was missed (with a [`MissCause`] and what was done), it
//! failed out, it was lost, or its approval expired. An entry covers a range with an exact
//! count, so ten years of downtime is one entry. Per job, a frontier moves forward over due
//! times and gives each its fate; it never moves back, whatever the clocks do.
//!
//! # Missed rules
//!
//! A due time found late (after a crash, a pause, a clock jump, a sleep) meets the job's
//! [`MissedRule`]: `skip` records it skipped, `catch_up_once` runs the newest once,
//! `required` runs every one, oldest first, in bounded batches. A due time that arrives
//! while the previous run is still going meets the [`Overlap`] policy instead.
//!
//! # Daylight saving
//!
//! Cron schedules run in an IANA zone and follow cron's policy by default: a fixed-time
//! schedule (`30 2 * * *`) whose local time does not exist fires right after the gap, and
//! fires once when its local time occurs twice; other schedules follow real time. A
//! schedule may choose otherwise ([`DstPolicy`]).
//!
//! ```
//! use duetime::{Schedule, Timestamp};
//!
//! // 9 March 2025, New York: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
//! let s = Schedule::cron("30 2 * * *", Some("America/New_York"))?;
//! let before: Timestamp = "2025-03-09T05:00:00Z".parse()?;
//! let next = s.next_after(before).expect("a due time");
//! assert_eq!(next, "2025-03-09T07:00:00Z".parse()?); // 03:00 EDT, the end of the gap
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Leases and fences
//!
//! A run is started under a lease `(holder, fence, until)`. The fence comes from a counter
//! in the state and only grows. A [`Event::RunFinished`] settles a run only with its own id
//! and fence, so a process that stalled and woke up late changes nothing. A run whose lease
//! lapsed is recorded lost: a job that is safe to repeat runs it again; any other is paused,
//! because running a due time twice is worse than not knowing.
//!
//! # The public surface
//!
//! Everything a host uses is at the crate root; the modules are private. A job's record
//! ([`JobRecord`]) and the state's parts ([`Globals`]) are read through accessors, so only
//! `step` changes them and the indexes derived from them cannot go stale.
//!
//! # Features
//!
//! - `schema`: derives `schemars::JsonSchema` for the wire format's types (used by
//!   `duetime-wire-schema`).
//! - `internals`: **unstable, no semver promise.** Access to the state's internals
//!   (`internals`: a record's activity, the parts' counters) for this repository's tests,
//!   which build states no event sequence reaches. A host never needs it.

#![warn(missing_docs, unreachable_pub)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod effect;
mod event;
mod inconsistency;
#[cfg(feature = "internals")]
pub mod internals;
mod job;
mod jobs;
mod lanes;
mod names;
mod schedule;
#[cfg(feature = "schema")]
mod schema;
mod state;
mod step;
mod time;
mod view;

pub use effect::{
    Action, Alert, AlertKind, CancelReason, ClockGapKind, Covers, Effect, Entry, History, Incident,
    LedgerEntry, LedgerKind, MissAction, MissCause, Notice, PausedBy, Record, Refusal, Start,
    SystemPause, Trigger, UpstreamFate, UpstreamProblem, WaitReason,
};
pub use event::{
    Actor, Event, Fence, Held, Now, Outcome, ProcessId, RunId, MAX_ACTOR, MAX_APPROVAL_TTL,
};
pub use inconsistency::{ConfigError, Inconsistency};
pub use job::{
    Backoff, DefError, Digest, JobDef, JobName, MissedRule, Overlap, DIGEST_HEX_LEN,
    MAX_CONCURRENCY_LIMIT, MAX_JITTER, MAX_PAYLOAD, MAX_RETRIES, MAX_TITLE, MAX_UPSTREAMS,
};
pub use jobs::JobSeq;
pub use schedule::zone::Segment as ZoneSegment;
pub use schedule::{
    wide_steps, BusinessDay, Calendar, CalendarError, CalendarName, CalendarSchedule, Calendars,
    CronError, CronSchedule, DstPolicy, DueTimes, Field, Fold, Gap, Problem, Roll, Schedule,
    ScheduleError, Span, WideStep, Zone, MAX_ROLL_DAYS, MAX_SPANS,
};
pub use state::{
    Config, Coordination, Globals, HeldDef, JobRecord, LastOutcome, LastRun, LoadError, OneShotEnd,
    OpenRun, OwnerLease, Pause, ProcessRec, State, FORMAT_VERSION, MAX_BACKFILL, MAX_GRACE,
    MIN_LEASE, MIN_TICK,
};
pub use step::step;
pub use time::{Duration, TimeParseError, Timestamp};
pub use view::{Filter, JobView, Page, Status};

/// The README's Rust code, compiled and run by `cargo test --doc` so the front page cannot
/// show code that does not build.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
