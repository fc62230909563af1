//! Did-you-mean: the accepted key nearest a misspelt one.

use super::fields::{Field, JOB_FIELDS, TOP_FIELDS};

/// The accepted key closest to a misspelt one (at most two edits, or a different case;
/// one for a key of four letters or fewer, where two edits reach unrelated words: `foo`
/// is two from `job`).
pub(super) fn suggest(key: &str, accepted: &'static [&'static str]) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase().replace('-', "_");
    let max = if lower.chars().count() <= 4 { 1 } else { 2 };
    crate::hints::nearest(&lower, accepted.iter().copied(), max)
}

/// The job field a key probably meant.
pub(super) fn job_field(key: &str) -> Option<&'static str> {
    suggest(key, JOB_FIELDS)
}

/// The inner key of `field` (`dst`, `backoff`) a key probably meant.
pub(super) fn inner_key(field: Field, key: &str) -> Option<&'static str> {
    suggest(key, field.keys())
}

/// The top-level key a key probably meant: `jobs` and other cases of `job` included.
pub(super) fn top_key(key: &str) -> Option<&'static str> {
    suggest(key, TOP_FIELDS).or(match key {
        "jobs" | "Job" | "JOB" => Some("job"),
        _ => None,
    })
}
