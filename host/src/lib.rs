//! duetime-host: the reference host. It keeps the core's state in a store, feeds it events
//! with the time it reads, and carries out its effects on real processes.

pub mod alerts;
pub mod changes;
pub mod command;
pub mod config;
pub mod daemon;
pub mod hints;
pub mod http;
pub mod human;
pub mod jobs_file;
pub mod json;
pub mod log;
pub mod private;
pub mod runner;
pub mod secret;
pub mod store;
pub mod telemetry;
pub mod views;
