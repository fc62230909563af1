//! An arbitrary set of jobs and an arbitrary sequence of events from several processes with
//! jumping clocks: `step` never panics, the invariants hold, and the state round-trips
//! through serde after every step. See `step_sequence::check_step_sequence`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::step_sequence::step_sequence(data));
