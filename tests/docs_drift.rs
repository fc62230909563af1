//! The docs cannot drift from the code: every name the code can print or store (miss
//! causes, ledger kinds, history lines, alerts and incidents, refusals, definition errors,
//! events, effects, outcomes, statuses, the checker's invariants) appears in `docs/`,
//! written as code (`` `name` ``). The names are taken from the types themselves (their
//! `ALL` tables, or what serde says it accepts), never from a list kept here.

use std::collections::BTreeSet;

use duetime::{
    AlertKind, CancelReason, ClockGapKind, DefError, Effect, Event, Incident, LedgerKind,
    MissAction, MissCause, MissedRule, Outcome, Overlap, Refusal, Status, SystemPause, Trigger,
    WaitReason,
};
use serde::de::DeserializeOwned;

/// Every `*.md` under `docs/`, joined.
fn docs() -> String {
    let mut text = String::new();
    let mut paths: Vec<_> = std::fs::read_dir("docs")
        .expect("docs/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    paths.sort();
    for p in paths {
        text.push_str(&std::fs::read_to_string(&p).expect("readable"));
    }
    text
}

/// The variant names serde accepts for `T`: it refuses a name no variant has with the list
/// of those it knows (`` expected one of `a`, `b` ``). `tag` is the field of an internally
/// tagged enum (`None`: the enum is a plain string).
fn serde_names<T: DeserializeOwned + std::fmt::Debug>(tag: Option<&str>) -> Vec<String> {
    let probe = match tag {
        Some(tag) => format!(r#"{{"{tag}":"\u0000"}}"#),
        None => r#""\u0000""#.to_string(),
    };
    let err = serde_json::from_str::<T>(&probe).expect_err("no variant is named NUL");
    let text = err.to_string();
    let list = text
        .split_once("expected ")
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("not an unknown-variant error: {text}"));
    let names: Vec<String> = list
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert!(!names.is_empty(), "no names in {text}");
    names
}

fn names_of<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|&v| name(v).to_string()).collect()
}

/// Every name the core can print or store, with what it names.
fn core_names() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut add = |what: &'static str, names: Vec<String>| {
        out.extend(names.into_iter().map(|n| (what, n)));
    };
    add("miss cause", names_of(MissCause::ALL, MissCause::name));
    add("trigger", names_of(Trigger::ALL, Trigger::name));
    add("clock gap", names_of(ClockGapKind::ALL, ClockGapKind::name));
    add("wait reason", names_of(WaitReason::ALL, WaitReason::name));
    add(
        "cancel reason",
        names_of(CancelReason::ALL, CancelReason::name),
    );
    add("incident", names_of(Incident::ALL, Incident::name));
    add("status", names_of(Status::ALL, Status::name));
    add("ledger kind", serde_names::<LedgerKind>(Some("kind")));
    add("miss action", serde_names::<MissAction>(Some("action")));
    add(
        "history line",
        serde_names::<duetime::History>(Some("what")),
    );
    add("alert", serde_names::<AlertKind>(Some("alert")));
    add("refusal", serde_names::<Refusal>(Some("refusal")));
    add("definition error", serde_names::<DefError>(Some("error")));
    add("event", serde_names::<Event>(Some("event")));
    add("effect", serde_names::<Effect>(Some("effect")));
    add("outcome", serde_names::<Outcome>(Some("outcome")));
    add("last outcome", serde_names::<duetime::LastOutcome>(None));
    add(
        "one-shot end",
        serde_names::<duetime::OneShotEnd>(Some("end")),
    );
    add("coordination", serde_names::<duetime::Coordination>(None));
    add("missed rule", serde_names::<MissedRule>(None));
    add("overlap policy", serde_names::<Overlap>(None));
    let pauses = [SystemPause::RetriesExhausted, SystemPause::RunLost];
    add(
        "system pause",
        pauses.iter().map(|p| p.to_string()).collect(),
    );
    out
}

/// The invariants the simulator's checker can report (`S1`, `B1`, ...), read from the
/// enum that names them (`sim/src/check/invariant.rs`: a variant a line, a capital and a
/// digit). The simulator's own test holds the same; this one keeps the core's `cargo test`
/// watching the table too.
fn checker_invariants() -> BTreeSet<String> {
    let src = std::fs::read_to_string("sim/src/check/invariant.rs").expect("the enum");
    src.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_suffix(','))
        .filter(|v| {
            let b = v.as_bytes();
            b.len() == 2 && b[0].is_ascii_uppercase() && b[1].is_ascii_digit()
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_name_the_core_prints_is_in_the_docs() {
    let docs = docs();
    let missing: Vec<String> = core_names()
        .into_iter()
        .filter(|(_, name)| !docs.contains(&format!("`{name}`")))
        .map(|(what, name)| format!("{what} `{name}`"))
        .collect();
    assert!(missing.is_empty(), "not in docs/: {}", missing.join(", "));
}

#[test]
fn every_invariant_the_checker_reports_is_in_invariants_md() {
    let table = std::fs::read_to_string("docs/invariants.md").expect("docs/invariants.md");
    let found = checker_invariants();
    // The checker's own names; a read of the source that found none would check nothing.
    assert!(found.contains("S1") && found.contains("L3"), "{found:?}");
    let missing: Vec<&String> = found
        .iter()
        .filter(|inv| !table.contains(&format!("| {inv} |")))
        .collect();
    assert!(missing.is_empty(), "not in docs/invariants.md: {missing:?}");
}

/// The probe reads serde's list: one name that is certainly there, and a count that is
/// the enum's.
#[test]
fn serde_names_reads_every_variant() {
    let causes = serde_names::<MissCause>(None);
    // `ALL` and the old alias `clock_jump`, which serde still reads.
    assert_eq!(causes.len(), MissCause::ALL.len() + 1);
    let kinds = serde_names::<LedgerKind>(Some("kind"));
    assert!(kinds.iter().any(|k| k == "approval_expired"), "{kinds:?}");
}
