//! TOML text (raw, or structured edits of real jobs files) into the host's jobs-file
//! checker: deterministic, an accepted file is accepted again printed back, every error
//! names its line or field. See `jobs_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::jobs_file::jobs_file(data));
