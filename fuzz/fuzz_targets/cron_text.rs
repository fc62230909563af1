//! Arbitrary text (raw, or glued from cron-like tokens) into the cron parser: never panics,
//! round-trips through Display and serde, and every refusal says why. See `targets::cron_text`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::targets::cron_text(data));
