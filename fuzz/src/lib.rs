//! Shared pieces of duetime's fuzz targets: input generators built from `arbitrary`, the slow
//! references the targets compare the core against, and the checks themselves (kept here, not
//! in the target files, so a regression input can be replayed by `cargo test` as well).

pub mod cron_gen;
pub mod http_query;
pub mod human_input;
pub mod jobs_file;
pub mod json_edit;
pub mod reference;
pub mod state_bytes;
pub mod step_sequence;
pub mod stored_rows;
pub mod targets;
pub mod wire_request;

/// Zones the generators draw from: UTC, the zones the schedules issue names, and a few whose
/// rules are unusual (half-hour DST, midnight transitions, a skipped day, negative DST,
/// offsets that are not whole hours).
pub const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Apia",
    "Asia/Kolkata",
    "Europe/Dublin",
    "America/St_Johns",
    "Asia/Kathmandu",
];

pub fn zone(pick: u8) -> &'static str {
    ZONES[usize::from(pick) % ZONES.len()]
}
