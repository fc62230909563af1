//! A page request's URL (the job name in the path, `?days=`, `?from=&to=`) through the
//! server's query parsing and the job page drawn for it: bounded windows, bounded
//! messages, names escaped. See `http_query`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duetime_fuzz::http_query::http_query(data));
