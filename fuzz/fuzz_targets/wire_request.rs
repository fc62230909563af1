//! Request lines (raw, or structured edits of the conformance traces' lines) into one
//! `duetime_wire::Core`: a typed refusal that leaves the state as it was, or the answer of the
//! Rust call the request stands for. See `wire_request`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::wire_request::wire_request(data));
