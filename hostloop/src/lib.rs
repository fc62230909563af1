//! The host loop's order, without I/O: what a host process sends the core, in which order,
//! and what it makes of each answer. The daemon (`host/`), `duetime what-if` and the
//! simulator's processes (`sim/`) all drive these types, so there is one place that orders
//! start-up; each host supplies only its I/O (a store transaction, a clock, children to
//! run) and its own reaction to each answer.
//!
//! - [`Startup`]: a new incarnation reports or adopts the runs earlier ones left, then
//!   sends `ProcessStarted`.
//! - [`Incarnation`]: then, turn after turn, the runs it holds (ticked until their reports
//!   commit), what each committed effect asks of it ([`Order`]), its reports and its drain.
//! - [`Batch`]: group commit: the reports of one turn and its tick, stepped in one
//!   transaction ([`Incarnation::batch`], then [`Incarnation::committed`]).

#![warn(missing_docs, unreachable_pub)]

mod batch;
mod incarnation;
mod startup;
#[cfg(test)]
mod testing;

pub use batch::{Batch, BATCH_MAX};
pub use incarnation::{backoff, Holding, Incarnation, Order};
pub use startup::{LeftRun, Started, Startup};
