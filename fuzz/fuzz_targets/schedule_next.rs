//! An arbitrary valid schedule, zone and instant: `next_after` / `count_in` / `iter_after`
//! never panic, are consistent, and agree with a slow reference on a short window. See
//! `targets::check_schedule_next`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::targets::schedule_next(data));
