//! Inputs the fuzz targets (fuzz/) once crashed on, replayed by `cargo test` through the same
//! checks the targets make, so a fix cannot quietly regress without nightly or cargo-fuzz.
//! The raw inputs stay under fuzz/regressions/<target>/ (replayed by fuzz/run.sh and by
//! `cd fuzz && cargo test`); the table in fuzz/regressions/README.md says what each found.

use duetime::Action;
use duetime::{
    CronSchedule, Effect, Event, Filter, Inconsistency, JobName, LoadError, Now, ProcessId,
    Schedule, State, Timestamp,
};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Schedules (cron_text, schedule_next)

/// cron_text: the parser sliced the first token at byte 8 to look for `CRON_TZ=`, which
/// panicked when byte 8 fell inside a multi-byte character.
#[test]
fn cron_tz_prefix_that_splits_a_character_is_an_error() {
    for text in [
        "cron_tzé * * * * *",
        "CRON_TZé * * * * *",
        "CRON_TZ=é * * * * *",
        "cron_tz€ 0 0 * * *",
        "ééééé",
        "CRON_T€",
    ] {
        let err = CronSchedule::parse(text, None).expect_err(text);
        assert!(!err.to_string().trim().is_empty(), "{text:?}: {err:?}");
        assert!(Schedule::cron(text, Some("UTC")).is_err(), "{text:?}");
    }
}

/// schedule_next: `* 6 27 JUL SAT` was refused ("month: `JUL` is not accepted here"): any
/// item containing `l` outside day-of-week was called a misplaced `L`, and `jul` has one.
#[test]
fn month_name_jul_is_july() {
    let named = CronSchedule::parse("* 6 27 JUL SAT", Some("UTC")).expect("JUL parses");
    let numbered = CronSchedule::parse("* 6 27 7 6", Some("UTC")).unwrap();
    assert_eq!(named.fields(), numbered.fields());
    let august = CronSchedule::parse("* 6 27 AUG SAT", Some("UTC")).unwrap();
    assert_ne!(named.fields(), august.fields(), "JUL is not AUG");
    for text in [
        "0 0 1 jul *",
        "0 0 1 Jul *",
        "0 0 1 jun-jul *",
        "0 0 L jul *",
    ] {
        CronSchedule::parse(text, None).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
    // The input's instant: 20 minutes before 1850 in UTC. Day of month and day of week are
    // both restricted, so either matches (cron's OR): Saturday 1850-07-06 comes first.
    let t = Timestamp::from_secs(-3_786_826_800);
    let next = Schedule::Cron(named).next_after(t);
    assert_eq!(next, Some(Timestamp::from_secs(-3_770_733_600)));
}

/// schedule_next: from just before the first instant after a spring-forward gap (New York,
/// `30 2 * * *`, the gap's due time is 2025-03-09T07:00:00Z), the search started in the
/// segment after the gap and skipped that due time; `count_in` had the same seam.
#[test]
fn gap_end_due_time_is_found_from_just_before_it() {
    let s = Schedule::cron("30 2 * * *", Some("America/New_York")).unwrap();
    let gap_end = Timestamp::from_secs(1_741_503_600);
    for before in [1, 500, 1000, 3_600_000] {
        let t = Timestamp::from_millis(gap_end.as_millis() - before);
        assert_eq!(s.next_after(t), Some(gap_end), "from {t}");
        assert_eq!(s.count_in(t, gap_end), 1, "count_in({t}, {gap_end})");
        assert_eq!(
            s.count_in(t, Timestamp::from_millis(gap_end.as_millis() - 1)),
            0
        );
    }
    // From the gap's end itself, the next is the following day's 02:30 EDT.
    assert_eq!(
        s.next_after(gap_end),
        Some(Timestamp::from_secs(1_741_503_600 + 86_400 - 1800))
    );
}

// ---------------------------------------------------------------------------------------------
// The state (step_sequence, state_bytes): the targets' checks, here without `arbitrary`

/// The state's invariants hold; it serializes, loads back equal, and serializes again to
/// the same bytes. Returns the loaded copy.
fn round_trip(state: &State) -> State {
    state.check_invariants().expect("invariants");
    let json = serde_json::to_vec(state).unwrap();
    let back: State = serde_json::from_slice(&json).expect("a state loads back");
    assert!(back == *state, "a state loads back different");
    assert_eq!(
        serde_json::to_vec(&back).unwrap(),
        json,
        "JSON differs after load"
    );
    assert_eq!(back.next_wake(), state.next_wake());
    back
}

/// One event into a state and into its loaded copy: the same effects, the same state.
fn step_both(state: &mut State, loaded: &mut State, now: Now, event: Event) -> Vec<Effect> {
    let mut effects = Vec::new();
    state.step(now, event.clone(), &mut effects);
    let mut again = Vec::new();
    loaded.step(now, event, &mut again);
    assert_eq!(effects, again, "a reloaded state answered differently");
    assert!(*loaded == *state, "a reloaded state stepped differently");
    *loaded = round_trip(state);
    effects
}

/// Replays a trace in the form `cargo run --example replay -- step_sequence FILE` prints:
/// a `{"config":..}` line, then `{"now":..,"event":..}` lines.
fn replay_trace(trace: &str) {
    let mut lines = trace.lines().filter(|l| !l.trim().is_empty());
    let first: Value = serde_json::from_str(lines.next().expect("a config line")).unwrap();
    let mut state = State::new(serde_json::from_value(first["config"].clone()).unwrap());
    let mut loaded = round_trip(&state);
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        let now: Now = serde_json::from_value(v["now"].clone()).unwrap();
        let event: Event = match serde_json::from_value(v["event"].clone()) {
            Ok(e) => e,
            // Kept from before events carried a `JobName`: a command naming a job no job
            // can have (refused `not_found` then, changing nothing) cannot be sent now.
            Err(_)
                if v["event"]["job"]
                    .as_str()
                    .is_some_and(|j| JobName::new(j).is_err()) =>
            {
                continue
            }
            Err(e) => panic!("{line}: {e}"),
        };
        step_both(&mut state, &mut loaded, now, event);
    }
}

/// The state_bytes check: a typed error, or a sound state that round-trips, shows its views
/// and takes a tick (at its next wake time and at the end of time) and a restart.
fn check_state_bytes(json: &[u8]) -> bool {
    let Ok(state) = serde_json::from_slice::<State>(json) else {
        return false;
    };
    let loaded = round_trip(&state);
    let wake = state.next_wake().unwrap_or(Timestamp::EPOCH);
    let _ = state.jobs(&Filter::default(), None, 50, wake);
    for (t, event) in [
        (
            wake,
            Event::Tick {
                process: ProcessId(1),
                held: Vec::new(),
            },
        ),
        (
            Timestamp::MAX,
            Event::Tick {
                process: ProcessId(7),
                held: Vec::new(),
            },
        ),
        (
            wake,
            Event::ProcessStarted {
                process: ProcessId(9),
            },
        ),
    ] {
        let (mut s, mut l) = (state.clone(), loaded.clone());
        step_both(&mut s, &mut l, Now::at(t), event);
        let _ = s.jobs(&Filter::default(), None, 50, t);
    }
    true
}

fn fixture() -> Value {
    let text = std::fs::read_to_string("tests/fixtures/state-v1.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

fn job_mut<'a>(v: &'a mut Value, name: &str) -> &'a mut Value {
    v["jobs"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .find(|j| j["def"]["name"] == name)
        .unwrap()
}

fn loads(v: &Value) -> bool {
    check_state_bytes(&serde_json::to_vec(v).unwrap())
}

#[test]
fn the_v1_fixture_passes_the_state_bytes_checks() {
    assert!(loads(&fixture()));
}

/// state_bytes (fuzz/regressions/state_bytes/run-cover-count-zero): a stored open run
/// covering zero due times (or a range running backwards) loaded, and losing the run wrote
/// a ledger entry of zero due times (a debug assertion; a bogus journal line in release).
/// Such a state is now refused as inconsistent.
#[test]
fn a_run_or_retry_covering_nothing_is_refused() {
    type Edit = (&'static str, &'static str, fn(&mut Value));
    let edits: [Edit; 3] = [
        ("late_job", "run", |c| c["count"] = 0.into()),
        ("late_job", "run", |c| {
            c["from"] = (c["to"].as_i64().unwrap() + 1).into()
        }),
        ("sync", "retry", |c| c["count"] = 0.into()),
    ];
    for (job, what, edit) in edits {
        let mut v = fixture();
        edit(&mut job_mut(&mut v, job)["activity"][what]["cover"]["covers"]);
        assert!(!loads(&v), "{job}'s {what} covering nothing loaded");
        let err = State::load(v).expect("decodes").err();
        assert!(
            matches!(
                err,
                Some(LoadError::Inconsistent {
                    what: Inconsistency::EmptyCover { .. }
                })
            ),
            "{err:?}"
        );
    }
}

/// state_bytes (fuzz/regressions/state_bytes/owed-count-beyond-its-range): a stored owed
/// segment `[1970-01-01T00:01:00Z]` counting 3288749227223547904 due times loaded; starting
/// its first batch walked 1000 due times past the segment's end, and the invariant check
/// after the tick panicked ("owed segments out of order"). A segment's count, ends and
/// schedule must agree, or the state is refused.
#[test]
fn an_owed_segment_whose_count_disagrees_with_its_range_is_refused() {
    let crashed = br#"{"config":{"cancel_grace":60000,"clock_jump":60000,"grace":60000,"lease_ttl":60000,"manual_per_hour":20,"tick":30000},"format":1,"jobs":{"0":{"activity":{"pending":[{"cause":"down","count":3288749227223547904,"from":60000,"to":60000}],"run":null},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"required","name":"a","retries":5,"safe_to_repeat":true,"schedule":{"kind":"every","offset":0,"period":60000},"stall_after":900000,"timeout":600000,"title":""},"frontier":120000}},"next_fence":2,"next_run":2,"next_seq":1,"processes":{"1":{"last_mono":5,"last_wall":120000}}}"#;
    assert!(!check_state_bytes(crashed));
    let mut de = serde_json::Deserializer::from_slice(crashed);
    let err = State::load(&mut de).expect("decodes").err();
    assert!(
        matches!(
            err,
            Some(LoadError::Inconsistent {
                what: Inconsistency::OwedCountWrong { .. }
            })
        ),
        "{err:?}"
    );

    // The same with near misses on the fixture's two-segment line (report, every minute).
    let edits: [fn(&mut Value); 4] = [
        |o| o["count"] = 2.into(),
        |o| o["count"] = 4.into(),
        |o| o["to"] = (o["to"].as_i64().unwrap() - 1).into(),
        |o| o["from"] = (o["from"].as_i64().unwrap() + 1).into(),
    ];
    for edit in edits {
        let mut v = fixture();
        edit(&mut job_mut(&mut v, "report")["activity"]["pending"][1]);
        assert!(
            !loads(&v),
            "{}",
            job_mut(&mut v, "report")["activity"]["pending"]
        );
    }
    // The exact count of a huge segment is fine: a decade of minutes.
    let mut v = fixture();
    let seg = &mut job_mut(&mut v, "report")["activity"]["pending"][1];
    let to = seg["to"].as_i64().unwrap();
    let minutes = 10 * 365 * 1440;
    seg["from"] = (to - (minutes - 1) * 60_000).into();
    seg["count"] = minutes.into();
    job_mut(&mut v, "report")["activity"]["pending"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    assert!(loads(&v));
}

/// The trace replayer itself: a short history with a run, a stale result and a clock jump.
#[test]
fn a_trace_replays_through_the_step_checks() {
    replay_trace(
        r#"{"config":{"tick":30000,"lease_ttl":60000,"grace":60000,"cancel_grace":60000,"manual_per_hour":20,"clock_jump":60000}}
{"now":{"wall":0,"mono":0},"event":{"event":"upsert","def":{"name":"a","schedule":{"kind":"every","period":60000,"offset":0},"missed":"required","safe_to_repeat":true},"actor":"setup"}}
{"now":{"wall":0,"mono":0},"event":{"event":"process_started","process":1}}
{"now":{"wall":60000,"mono":60000},"event":{"event":"tick","process":1,"held":[]}}
{"now":{"wall":61000,"mono":61000},"event":{"event":"run_finished","process":1,"job":"a","run":1,"fence":0,"outcome":{"outcome":"ok"}}}
{"now":{"wall":9000000,"mono":62000},"event":{"event":"tick","process":1,"held":[{"run":1,"fence":1}]}}
{"now":{"wall":-9223372036854775808,"mono":63000},"event":{"event":"tick","process":1,"held":[]}}"#,
    );
}

/// state_bytes (fuzz/regressions/state_bytes/grace-of-centuries): the v1 fixture with a
/// stored grace of 487 years loaded, and its first tick hung: a tick looks at every due time
/// within the grace one by one, here 250 million of them. A stored config must have a tick
/// of at least a second and a grace of at most a day (which bounds a tick's work per job),
/// or the state is refused.
#[test]
fn a_stored_config_with_a_grace_of_centuries_is_refused() {
    let refused = |edit: fn(&mut Value), why: &str| {
        let mut v = fixture();
        edit(&mut v["config"]);
        assert!(!loads(&v), "{why}: loaded");
        let err = serde_json::from_value::<State>(v)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(why), "{err}");
    };
    refused(|c| c["grace"] = 15_390_961_773_155u64.into(), "grace");
    refused(|c| c["grace"] = (86_400_000 + 1).into(), "grace");
    refused(|c| c["tick"] = 0.into(), "tick");
    refused(|c| c["tick"] = 999.into(), "tick");
    let mut v = fixture();
    v["config"]["grace"] = 86_400_000.into();
    v["config"]["tick"] = 1000.into();
    assert!(loads(&v), "the bounds themselves load");
}

/// state_bytes (fuzz/regressions/state_bytes/run-counter-at-the-end): the v1 fixture with
/// `next_run` at 2^64 - 2 loaded, and the tick that started two runs overflowed it ("attempt
/// to add with overflow" in `start_run`). Used-up counters now start nothing (the due times
/// wait as a retry, still accounted) and add no job (`Refusal::Full`); every counter loads.
#[test]
fn counters_at_the_end_of_u64_start_nothing_and_add_nothing() {
    for field in ["next_run", "next_fence", "next_seq"] {
        for value in [u64::MAX - 2, u64::MAX - 1, u64::MAX] {
            let mut v = fixture();
            v[field] = value.into();
            assert!(loads(&v), "{field} = {value}");
        }
    }
    let mut v = fixture();
    v["next_run"] = (u64::MAX - 1).into();
    let mut state: State = serde_json::from_value(v).unwrap();
    let mut loaded = round_trip(&state);
    let mut started = 0;
    for (k, secs) in [400, 460, 520, 580, 640].into_iter().enumerate() {
        let now = Now::at(Timestamp::from_millis(1_735_689_600_000 + secs * 1000));
        let effects = step_both(
            &mut state,
            &mut loaded,
            now,
            Event::Tick {
                process: ProcessId(k as u64 + 1),
                held: Vec::new(),
            },
        );
        started += effects
            .iter()
            .filter(|e| matches!(e, Effect::Do(Action::Start(_))))
            .count();
    }
    assert_eq!(started, 1, "one run id was left");

    let mut v = fixture();
    v["next_seq"] = u64::MAX.into();
    let mut state: State = serde_json::from_value(v).unwrap();
    let mut loaded = round_trip(&state);
    let def = duetime::JobDef::new(
        duetime::JobName::new("one_more").unwrap(),
        Schedule::at(Timestamp::MAX),
    );
    let effects = step_both(
        &mut state,
        &mut loaded,
        Now::at(Timestamp::EPOCH),
        Event::Upsert {
            def: Box::new(def),
            actor: duetime::Actor::new("ops"),
        },
    );
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::Reply {
                result: Err(duetime::Refusal::Full),
                ..
            }]
        ),
        "{effects:?}"
    );
}

/// step_sequence (tests/fixtures/fuzz/step_sequence-retry-of-an-old-schedule-paused.jsonl):
/// a `required` job's catch-up batch of 1000 due times under its first schedule, the schedule
/// replaced, the batch waiting as a retry, then a pause: the retry went back in line as an
/// owed segment of the old schedule's due times, and the load check (4fc2f8a) held it to the
/// new schedule, so the state no longer loaded back. Only segments that are walked (started
/// in pieces) are held to their schedule now.
#[test]
fn a_paused_retry_from_a_replaced_schedule_loads_back() {
    replay_trace(
        &std::fs::read_to_string(
            "tests/fixtures/fuzz/step_sequence-retry-of-an-old-schedule-paused.jsonl",
        )
        .unwrap(),
    );
}

/// state_bytes (CI, 45 s): an untagged owed segment of one due time whose range holds two
/// loaded, because only segments walked in pieces were checked; a tick at the end of time
/// then merged the next owed due times into it, and the merged segment's count was one
/// short. An untagged segment can be merged into, so it must hold exactly what it says.
#[test]
fn a_mergeable_owed_segment_whose_count_disagrees_is_refused() {
    let crashed = br#"{"config":{"cancel_grace":60000,"clock_jump":60000,"grace":60000,"lease_ttl":60000,"manual_per_hour":20,"tick":30000},"format":1,"jobs":{"0":{"activity":{"pending":[{"cause":"down","count":1,"from":60000,"to":120000}],"run":null},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"required","name":"a","retries":5,"safe_to_repeat":true,"schedule":{"kind":"every","offset":0,"period":60000},"stall_after":900000,"timeout":600000,"title":""},"frontier":120000}},"next_fence":2,"next_run":2,"next_seq":1,"processes":{"1":{"last_mono":5,"last_wall":120000}}}"#;
    let mut de = serde_json::Deserializer::from_slice(crashed);
    let err = State::load(&mut de).expect("decodes").err();
    assert!(
        matches!(
            err,
            Some(LoadError::Inconsistent {
                what: Inconsistency::OwedCountWrong { .. }
            })
        ),
        "{err:?}"
    );
    assert!(!check_state_bytes(crashed));
}

/// state_bytes (fuzz/regressions/state_bytes/one-shot-frontier-behind-its-run): a stored
/// one-shot (`late_job`) whose frontier was edited back to before its instant while its run
/// still covers the instant. Settling that run wrote the instant's ledger entry, the
/// one-shot was marked ended, and the invariant check refused an ended one-shot whose
/// instant the frontier had not passed. A one-shot ends only when nothing covers its
/// instant any more and the frontier has passed it (`JobRecord::one_shot_settled`, used by
/// both the step and the check).
#[test]
fn a_one_shot_is_ended_only_once_its_instant_is_settled() {
    let stored = r#"{"config":{"cancel_grace":60000,"clock_jump":60000,"grace":60000,"lease_ttl":60000,"manual_per_hour":20,"tick":30000},"format":1,"jobs":{"0":{"activity":{"pending":[{"cause":"paused","count":1,"from":1735689720000,"to":1735689720000},{"cause":"overlap","count":3,"from":1735689780000,"to":1735689900000}],"run":{"attempt":1,"cancel_sent":null,"cover":{"covers":{"count":1,"from":1735689660000,"to":1735689660000},"late":null},"deadline":1735690262000,"fence":3,"holder":1,"id":3,"lease_until":1735689975000,"stall_alerted":false,"started":1735689662000,"trigger":"schedule"}},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"required","name":"report","retries":2,"safe_to_repeat":true,"schedule":{"kind":"every","offset":0,"period":60000},"stall_after":900000,"timeout":600000,"title":""},"frontier":1735689900000},"1":{"activity":{"missed_recent":[[1735689600000,1]],"retry":{"at":1735690330000,"attempt":2,"cover":{"covers":{"count":1,"from":1735689720000,"to":1735689720000},"late":null},"trigger":"retry"}},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"catch_up_once","name":"sync","retries":3,"safe_to_repeat":true,"schedule":{"expr":"*/2 * * * *","kind":"cron","tz":"America/New_York"},"stall_after":900000,"timeout":600000,"title":"Sync the ledgers"},"frontier":1735689845000,"last":{"at":1735689730000,"outcome":"failed","run":5}},"2":{"activity":{"paused":{"by":{"actor":"carol","by":"person"},"note":"moved to the auditors' own tool ✓","since":1735689920000}},"def":{"backoff":{"initial":30000,"max":600000},"catch_up_window":21600000,"legal_duty":false,"missed":"catch_up_once","name":"audit","retries":5,"safe_to_repeat":false,"schedule":{"instant":1735691400000,"kind":"at"},"stall_after":900000,"timeout":600000,"title":""},"frontier":1735689600000},"3":{"def":{"backoff":{"initial":30000,"max":600000},"concurrency_key":"books","legal_duty":true,"missed":"required","name":"close_books","retries":5,"safe_to_repeat":false,"schedule":{"kind":"every","offset":0,"period":3600000},"stall_after":900000,"timeout":600000,"title":""},"frontier":1735689600000},"4":{"activity":{"manual":"bob","manual_recent":[1735689620000,1735689930000]},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"skip","name":"adhoc","retries":5,"safe_to_repeat":true,"schedule":{"kind":"every","offset":0,"period":86400000},"stall_after":900000,"timeout":600000,"title":""},"frontier":1735689662000,"last":{"at":1735689675000,"outcome":"ok","run":1}},"5":{"activity":{"paused":{"by":{"by":"system","reason":"retries exhausted"},"note":"","since":1735689670000}},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"skip","name":"flaky","retries":0,"safe_to_repeat":false,"schedule":{"kind":"every","offset":0,"period":60000},"stall_after":900000,"timeout":600000,"title":""},"frontier":1735689662000,"last":{"at":1735689670000,"outcome":"failed_out","run":4}},"6":{"activity":{"run":{"attempt":1,"cancel_sent":null,"cover":{"covers":{"count":1,"from":1735689601000,"to":1735689601000},"late":"down"},"deadline":1735690262000,"fence":2,"holder":1,"id":2,"lease_until":1735689975000,"stall_alerted":false,"started":1735689662000,"trigger":"catch_up"}},"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"catch_up_once","name":"late_job","retries":5,"safe_to_repeat":false,"schedule":{"instant":1735689601000,"kind":"at"},"stall_after":900000,"timeout":600000,"title":""},"frontier":1},"7":{"def":{"backoff":{"initial":30000,"max":600000},"legal_duty":false,"missed":"skip","name":"nightly","retries":5,"safe_to_repeat":false,"schedule":{"dst":{"fold":"both","gap":"skip"},"expr":"30 2 * * *","kind":"cron","tz":"America/New_York"},"stall_after":900000,"timeout":7200000,"title":""},"frontier":1735689600000}},"next_fence":6,"next_run":6,"next_seq":8,"processes":{"1":{"draining":false,"last_mono":1735689915000,"last_wall":1735689915000},"2":{"draining":true,"last_mono":1735689910000,"last_wall":1735689910000}}}"#.as_bytes();
    assert!(check_state_bytes(stored));
}

/// step_sequence (CI, 45 s; tests/fixtures/fuzz/step_sequence-clock-leads-at-the-ends-of-time.jsonl):
/// processes whose clocks read at the two ends of time are held ahead and behind, and the
/// difference of their leads, taken to see whether one contradicts the other, saturated at
/// `i64::MIN` and its `abs()` overflowed ("attempt to negate with overflow" in
/// `contradict_holds`). Leads are now compared in `i128`.
#[test]
fn clocks_held_at_the_two_ends_of_time_are_compared_without_overflow() {
    replay_trace(
        &std::fs::read_to_string(
            "tests/fixtures/fuzz/step_sequence-clock-leads-at-the-ends-of-time.jsonl",
        )
        .unwrap(),
    );
}
