//! Stored rows (globals, job rows, journal lines, daemon rows), damaged, through the
//! store's loaders: a typed refusal that changes nothing, or a state that passes its
//! self-check and equals a whole load. See `stored_rows`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::stored_rows::stored_rows(data));
