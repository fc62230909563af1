//! What the crate's tests share: instants and job names from text.

use duetime::{JobName, Now, Timestamp};

/// The instant `s` (RFC 3339), read by both clocks.
pub(crate) fn at(s: &str) -> Now {
    Now::at(s.parse::<Timestamp>().expect("a valid instant"))
}

/// The job name `s`.
pub(crate) fn name(s: &str) -> JobName {
    JobName::new(s).expect("a valid name")
}
