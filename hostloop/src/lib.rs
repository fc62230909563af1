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
//! - [`route`]: which [`Partition`] of a store a job lives in (by its concurrency key, else
//!   its name), the one answer every host and the simulator share.

#![warn(missing_docs, unreachable_pub)]

mod incarnation;
mod partition;
mod startup;
#[cfg(test)]
mod testing;

pub use incarnation::{backoff, Holding, Incarnation, Order};
pub use partition::{route, route_of, Partition, PartitionCount, PartitionCountError};
pub use startup::{LeftRun, Started, Startup};
