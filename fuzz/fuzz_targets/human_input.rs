//! Text people type (durations, instants, zone names) through the command line's
//! parsers: round trips, agreement with the core's RFC 3339 reader and chrono's calendar,
//! suggestions that are zones. See `human_input`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::human_input::human_input(data));
