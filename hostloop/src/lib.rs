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
//! - [`Ownership`]: on a store of several partitions, which ones this daemon steps: leases
//!   with epochs, claimed, left, released and lost by one deterministic assignment.
//! - [`owner_round`]: the round of a daemon that owns partitions (heartbeat, seats that
//!   ended unasked handed back, then what [`Ownership`] asks), over its I/O ([`OwnerIo`]).
//! - [`relocate`]: a job moved to the partition its new definition routes to, whole, in one
//!   transaction over both; a job with an open run waits for it.
//! - [`route`]: which [`Partition`] of a store a job lives in (by its concurrency key, else
//!   its name), the one answer every host and the simulator share.
//! - [`Batch`]: group commit: the reports of one turn and its tick, stepped in one
//!   transaction ([`Incarnation::batch`], then [`Incarnation::committed`]).

#![warn(missing_docs, unreachable_pub)]

mod batch;
mod chains;
mod incarnation;
mod moves;
mod owner;
mod ownership;
mod partition;
mod startup;
#[cfg(test)]
mod testing;

pub use batch::{Batch, BATCH_MAX};
pub use chains::{chain_routes, upsert_order, upstreams_first, Chains};
pub use incarnation::{backoff, Holding, Incarnation, Order};
pub use moves::{relocate, relocate_chain, Relocated};
pub use owner::{owner_round, OwnerIo, Roster};
pub use ownership::{assign, live, Lease, Member, Ownership, Phase, Step};
pub use partition::{route, route_of, Partition, PartitionCount, PartitionCountError};
pub use startup::{LeftRun, Started, Startup};
