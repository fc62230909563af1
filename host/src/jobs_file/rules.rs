//! The rules a job picks by name (`missed`, `overlap`, `dst.gap`, `dst.fold`, `roll`): the names
//! are the core's serde names, read from its types rather than written again here.

use duetime::{Fold, Gap, MissedRule, Overlap, Roll};
use serde::Serialize;

/// A rule of the core that the file names by its serde name.
pub trait Rule: Copy + PartialEq + Serialize + 'static {
    /// Every value, in the order the docs list them.
    const ALL: &'static [Self];
    /// What the file calls a value of it, for "is not a missed rule".
    const WHAT: &'static str;
}

impl Rule for MissedRule {
    const ALL: &'static [Self] = &[
        MissedRule::Skip,
        MissedRule::CatchUpOnce,
        MissedRule::Required,
    ];
    const WHAT: &'static str = "a missed rule";
}

impl Rule for Overlap {
    const ALL: &'static [Self] = &[Overlap::Skip, Overlap::BufferOne, Overlap::BufferAll];
    const WHAT: &'static str = "an overlap policy";
}

impl Rule for Gap {
    const ALL: &'static [Self] = &[Gap::RunAtGapEnd, Gap::Skip];
    const WHAT: &'static str = "a gap rule";
}

impl Rule for Fold {
    const ALL: &'static [Self] = &[Fold::First, Fold::Last, Fold::Both];
    const WHAT: &'static str = "a fold rule";
}

impl Rule for Roll {
    const ALL: &'static [Self] = &[Roll::Stay, Roll::Next, Roll::Previous];
    const WHAT: &'static str = "a roll";
}

/// The file's name for a rule value (`"catch_up_once"`): the core's serde name.
pub fn name_of<T: Rule>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "?".to_string(),
    }
}

/// The rule value a name stands for.
pub fn from_name<T: Rule>(name: &str) -> Option<T> {
    T::ALL.iter().copied().find(|v| name_of(v) == name)
}

/// Every name of a rule, in order (for a flag's possible values).
pub fn all_names<T: Rule>() -> Vec<String> {
    T::ALL.iter().map(name_of).collect()
}

/// Every name of a rule, in order, as errors list them: `skip, catch_up_once, required`.
pub fn names<T: Rule>() -> String {
    all_names::<T>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value is listed, once: each name reads back as its value through serde.
    #[test]
    fn every_rule_name_reads_back_through_serde() {
        fn check<T: Rule + serde::de::DeserializeOwned + std::fmt::Debug>() {
            for v in T::ALL {
                let back: T = serde_json::from_value(name_of(v).into()).unwrap();
                assert_eq!(back, *v);
                assert_eq!(from_name::<T>(&name_of(v)), Some(*v));
            }
        }
        check::<MissedRule>();
        check::<Overlap>();
        check::<Gap>();
        check::<Fold>();
        check::<Roll>();
        assert_eq!(names::<MissedRule>(), "skip, catch_up_once, required");
        assert_eq!(names::<Overlap>(), "skip, buffer_one, buffer_all");
        assert_eq!(names::<Gap>(), "run_at_gap_end, skip");
        assert_eq!(names::<Fold>(), "first, last, both");
        assert_eq!(names::<Roll>(), "none, next, previous");
    }
}
