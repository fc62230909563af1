//! Arbitrary bytes (or structured edits of a real state's JSON) into state loading: a typed
//! error or a sound state that round-trips and takes a tick. See
//! `state_bytes::check_state_bytes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::state_bytes::state_bytes(data));
