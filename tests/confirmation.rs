//! Confirmation hold as stories: a definition that requires confirmation is not applied
//! until a person confirms its digest; the definition before it keeps running, a new job
//! runs nothing, and a wrong or stale digest is refused naming the one expected.

mod support;

use duetime::{Actor, Effect, Event, JobDef, Outcome};
use support::*;

fn confirm(s: &mut Story, time: &str, digest: &str) {
    s.command(
        time,
        &format!("bob confirms report {digest}"),
        Event::Confirm {
            job: "report".into(),
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
    assert!(!s.last.iter().any(|e| matches!(e, Effect::Start { .. })));
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
fn the_digest_is_stable_and_covers_every_field() {
    let def = guarded("1h");
    // Pinned: a build that computes another digest would strand every held definition.
    assert_eq!(def.digest(), "3a2516dd743a67d0");
    let mut other = def.clone();
    other.jitter = Some("1m".parse().unwrap());
    assert_ne!(other.digest(), def.digest());
    let mut other = def.clone();
    other.title = "x".into();
    assert_ne!(other.digest(), def.digest());
    let mut other = def.clone();
    other.concurrency_key = Some("k".into());
    assert_ne!(other.digest(), def.digest());
    assert_eq!(def.digest().len(), 16);
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
