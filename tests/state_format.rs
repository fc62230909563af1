//! The stored state's format promises: a state written by an earlier format version keeps
//! loading (`tests/fixtures/state-v1.json`, `state-v2.json`, each committed once by the
//! build of its version and never regenerated after the format moves on), a newer format is
//! refused with `LoadError::NewerFormat`, and an inconsistent state is refused with a typed
//! `LoadError::Inconsistent`, never a panic.

use duetime::{Action, Start};
use duetime::{
    Actor, CronSchedule, DstPolicy, Duration, Effect, Event, Fence, Fold, Gap, Incident,
    Inconsistency, JobDef, JobName, JobSeq, LoadError, MissedRule, Now, Outcome, ProcessId,
    Refusal, RunId, Schedule, State, Status, Timestamp, FORMAT_VERSION,
};
use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/state-v1.json";
const FIXTURE_V2: &str = "tests/fixtures/state-v2.json";
const FIXTURE_V3: &str = "tests/fixtures/state-v3.json";
const FIXTURE_V4: &str = "tests/fixtures/state-v4.json";
const FIXTURE_V5: &str = "tests/fixtures/state-v5.json";
const FIXTURE_V6: &str = "tests/fixtures/state-v6.json";
const FIXTURE_V7: &str = "tests/fixtures/state-v7.json";
const FIXTURE_V8: &str = "tests/fixtures/state-v8.json";
const FIXTURE_V9: &str = "tests/fixtures/state-v9.json";
/// 2025-01-01T00:00:00Z
const T0: i64 = 1_735_689_600_000;

fn at(secs: i64) -> Now {
    Now::at(Timestamp::from_millis(T0 + secs * 1000))
}

fn def(name: &str, schedule: Schedule) -> JobDef {
    JobDef::new(JobName::new(name).unwrap(), schedule)
}

fn every(secs: u64) -> Schedule {
    Schedule::every(Duration::from_secs(secs), Duration::ZERO).unwrap()
}

/// Steps events and remembers each job's newest started run.
struct Driver {
    state: State,
    runs: Vec<(String, RunId, Fence)>,
}

impl Driver {
    fn step(&mut self, secs: i64, event: Event) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.state.step(at(secs), event, &mut effects);
        for e in &effects {
            if let Effect::Do(Action::Start(Start {
                run, job, fence, ..
            })) = e
            {
                self.runs.push((job.to_string(), *run, *fence));
            }
        }
        effects
    }

    fn run_of(&self, job: &str) -> (RunId, Fence) {
        let (_, run, fence) = self
            .runs
            .iter()
            .rev()
            .find(|(j, _, _)| j == job)
            .unwrap_or_else(|| panic!("{job} never started"));
        (*run, *fence)
    }

    fn tick(&mut self, secs: i64) -> Vec<Effect> {
        let held = self
            .runs
            .iter()
            .map(|(_, run, fence)| duetime::Held {
                run: *run,
                fence: *fence,
            })
            .filter(|h| self.state_holds(h.run))
            .collect();
        self.step(secs, Event::Tick { process: P1, held })
    }

    fn state_holds(&self, run: RunId) -> bool {
        self.runs.iter().any(|(job, r, _)| {
            *r == run
                && self
                    .state
                    .job(job, Timestamp::EPOCH)
                    .is_some_and(|v| v.running == Some(run))
        })
    }

    fn finish(&mut self, secs: i64, job: &str, outcome: Outcome) -> Vec<Effect> {
        let (run, fence) = self.run_of(job);
        self.step(
            secs,
            Event::RunFinished {
                process: P1,
                job: JobName::new(job).unwrap(),
                run,
                fence,
                outcome,
            },
        )
    }
}

const P1: ProcessId = ProcessId(1);

fn upsert(d: JobDef) -> Event {
    Event::Upsert {
        def: Box::new(d),
        actor: Actor::new("ops"),
    }
}

/// A small but rich state, built by stepping: open runs (on time, catching up, manual),
/// owed segments with two causes, a retry waiting, a person's pause, a system pause after a
/// failed-out run, a queued manual run, missed-time buckets, two processes (one draining),
/// an explicit daylight-saving policy.
fn rich_state() -> State {
    let mut d = Driver {
        state: State::default(),
        runs: Vec::new(),
    };
    let mut report = def("report", every(60));
    report.missed = MissedRule::Required;
    report.safe_to_repeat = true;
    report.retries = 2;
    let mut sync = def(
        "sync",
        Schedule::cron("*/2 * * * *", Some("America/New_York")).unwrap(),
    );
    sync.missed = MissedRule::CatchUpOnce;
    sync.safe_to_repeat = true;
    sync.retries = 3;
    sync.title = "Sync the ledgers".to_string();
    let mut audit = def(
        "audit",
        Schedule::at(Timestamp::from_millis(T0 + 1_800_000)),
    );
    audit.catch_up_window = Some(Duration::from_hours(6));
    audit.missed = MissedRule::CatchUpOnce;
    let mut close_books = def("close_books", every(3600));
    close_books.missed = MissedRule::Required;
    close_books.legal_duty = true;
    close_books.concurrency_key = Some("books".to_string());
    let mut adhoc = def("adhoc", every(86_400));
    adhoc.safe_to_repeat = true;
    let mut flaky = def("flaky", every(60));
    flaky.retries = 0;
    let mut late_job = def("late_job", Schedule::at(Timestamp::from_millis(T0 + 1000)));
    late_job.missed = MissedRule::CatchUpOnce;
    let nightly = CronSchedule::parse("30 2 * * *", Some("America/New_York"))
        .unwrap()
        .with_dst(Some(DstPolicy {
            gap: Gap::Skip,
            fold: Fold::Both,
        }));
    let mut nightly = def("nightly", Schedule::Cron(nightly));
    nightly.timeout = Duration::from_hours(2);

    for job in [
        report,
        sync,
        audit,
        close_books,
        adhoc,
        flaky,
        late_job,
        nightly,
    ] {
        d.step(0, upsert(job));
    }
    d.step(0, Event::ProcessStarted { process: P1 });
    d.step(
        20,
        Event::RunNow {
            job: JobName::new("adhoc").unwrap(),
            actor: Actor::new("bob"),
        },
    );
    // report (on time), flaky (on time), late_job (caught up late), adhoc (manual) start.
    d.tick(62);
    d.finish(70, "flaky", Outcome::failed("exit 2"));
    d.finish(75, "adhoc", Outcome::Ok);
    d.tick(90);
    d.step(
        100,
        Event::Pause {
            job: JobName::new("report").unwrap(),
            actor: Actor::new("alice"),
            note: "investigating the totals".to_string(),
        },
    );
    d.tick(125); // sync's 19:02 EST starts
    d.finish(
        130,
        "sync",
        Outcome::Failed {
            kind: "exit 1".to_string(),
            retry_after: Some(Duration::from_mins(10)),
        },
    );
    d.step(
        150,
        Event::Resume {
            job: JobName::new("report").unwrap(),
            actor: Actor::new("alice"),
        },
    ); // report's 00:02 is owed (paused)
    d.tick(160);
    d.tick(185); // report's 00:03 is owed (overlap)
    d.tick(215);
    d.tick(245); // report's 00:04 joins it; sync's 00:04 is skipped (retry waiting)
    d.step(
        300,
        Event::ProcessStarted {
            process: ProcessId(2),
        },
    );
    d.step(
        310,
        Event::ProcessDraining {
            process: ProcessId(2),
        },
    );
    d.tick(315);
    d.step(
        320,
        Event::Pause {
            job: JobName::new("audit").unwrap(),
            actor: Actor::new("carol"),
            note: "moved to the auditors' own tool ✓".to_string(),
        },
    );
    d.step(
        330,
        Event::RunNow {
            job: JobName::new("adhoc").unwrap(),
            actor: Actor::new("bob"),
        },
    );
    format_4_parts(&mut d);
    format_5_parts(&mut d);
    format_6_parts(&mut d);
    format_7_parts(&mut d);
    format_8_parts(&mut d);
    format_9_parts(&mut d);
    d.state
}

/// What format 4 added, on jobs of their own so the earlier story is unchanged: a quota
/// hold, a lane with a waiter, jitter, a run parked awaiting approval, a completed one-shot,
/// a definition held for confirmation, a throttled job's last alert, and a process that
/// reads a boot clock.
fn format_4_parts(d: &mut Driver) {
    let mut quota = def("quota", every(600));
    quota.retries = 3;
    quota.wait_budget = Some(Duration::from_mins(5));
    let mut disk_a = def("disk_a", every(600));
    disk_a.concurrency_key = Some("disk".to_string());
    let mut disk_b = def("disk_b", every(600));
    disk_b.concurrency_key = Some("disk".to_string());
    disk_b.concurrency_limit = Some(1);
    let mut jittery = def("jittery", every(3600));
    jittery.jitter = Some(Duration::from_mins(5));
    let approve = def("approve", every(600));
    let once = def("once", Schedule::at(Timestamp::from_millis(T0 + 600_000)));
    let mut noisy = def("noisy", every(600));
    noisy.retries = 0;
    noisy.alert_throttle = Some(Duration::from_hours(1));
    let mut guarded = def("guarded", every(3600));
    guarded.requires_confirmation = true;
    for job in [
        quota, disk_a, disk_b, jittery, approve, once, noisy, guarded,
    ] {
        d.step(340, upsert(job));
    }
    d.tick(601); // quota, disk_a, approve, once, noisy start; disk_b waits for the lane
    d.finish(
        610,
        "quota",
        Outcome::Failed {
            kind: "http 429".to_string(),
            retry_after: Some(Duration::from_hours(1)),
        },
    );
    d.finish(
        612,
        "approve",
        Outcome::AwaitingApproval {
            ttl: Duration::from_hours(2),
        },
    );
    d.finish(614, "once", Outcome::Ok);
    d.finish(616, "noisy", Outcome::failed("exit 3"));
    let mut effects = Vec::new();
    d.state.step(
        Now::with_boot(
            Timestamp::from_millis(T0 + 620_000),
            Timestamp::from_millis(5_000),
            Timestamp::from_millis(9_000),
        ),
        Event::ProcessStarted {
            process: ProcessId(3),
        },
        &mut effects,
    );
}

/// What format 5 added: the store's clock, and processes whose wall clocks read far ahead
/// of it: a new incarnation waiting (held before its time could be measured) and a known
/// process whose clock was set forward, held and working on the store's time.
fn format_5_parts(d: &mut Driver) {
    let mut effects = Vec::new();
    let wall = |secs: i64| Timestamp::from_millis(T0 + secs * 1000);
    d.state.step(
        Now::new(wall(640), Timestamp::from_millis(70_000)),
        Event::ProcessStarted {
            process: ProcessId(5),
        },
        &mut effects,
    );
    d.state.step(
        Now::new(wall(650 + 86_400), Timestamp::from_millis(80_000)),
        Event::Tick {
            process: ProcessId(5),
            held: Vec::new(),
        },
        &mut effects,
    );
    d.state.step(
        Now::new(wall(660 + 7200), Timestamp::from_millis(50_000)),
        Event::ProcessStarted {
            process: ProcessId(4),
        },
        &mut effects,
    );
}

/// What format 6 added: definitions carrying a payload (what a host runs), one in force
/// (confirmed) and a change of it alone held for confirmation.
fn format_6_parts(d: &mut Driver) {
    let mut deploy = def("deploy", every(3600));
    deploy.requires_confirmation = true;
    deploy.payload = Some(r#"{"argv":["deploy","--prod"],"user":"deployer"}"#.to_string());
    let digest = deploy.digest();
    d.step(670, upsert(deploy.clone()));
    d.step(671, confirm("deploy", digest.as_str()));
    deploy.payload = Some(r#"{"argv":["deploy","--prod","--fast"],"user":"deployer"}"#.to_string());
    d.step(672, upsert(deploy));
}

/// What format 7 added: the dead-man's switch, a definition's `expect_success_within` and
/// the job's `watched_since`, on a job that has told its silence.
fn format_7_parts(d: &mut Driver) {
    let mut nightly = def("nightly", every(86_400));
    nightly.expect_success_within = Some(duetime::Duration::from_mins(30));
    d.step(680, upsert(nightly));
    d.tick(680 + 1_900);
}

/// What format 8 added: a run that keeps the lane it started in (`lane`) after its job
/// moved to another concurrency key.
fn format_8_parts(d: &mut Driver) {
    let mut mover = def("mover", every(60));
    mover.concurrency_key = Some("/v8/before".to_string());
    d.step(2_700, upsert(mover.clone()));
    d.tick(2_700 + 61);
    mover.concurrency_key = Some("/v8/after".to_string());
    d.step(2_700 + 62, upsert(mover));
}

/// A calendar of `spans` (text, label).
fn calendar(name: &str, yearly: bool, spans: &[(&str, &str)]) -> duetime::Calendar {
    let spans = spans
        .iter()
        .map(|(t, l)| duetime::Span::parse(t, (!l.is_empty()).then_some(*l)).unwrap())
        .collect();
    duetime::Calendar::new(duetime::CalendarName::new(name).unwrap(), yearly, spans).unwrap()
}

/// `closing`'s schedule: every minute (UTC), `quiet` excluded and rolled to the next day.
fn closing_schedule(quiet: &str) -> Schedule {
    let quiet = calendar("quiet", false, &[(quiet, "maintenance")]);
    let base = Schedule::cron("* * * * *", None).unwrap();
    Schedule::calendar(base, vec![quiet], None, duetime::Roll::Next).unwrap()
}

/// What format 9 added (issue 45): calendar schedules. `closing` is paused while due times
/// pass, some in its calendar's stretch; its calendar then changes while they are owed.
/// `month_end` runs on the last business day, a yearly holiday excluded.
fn format_9_parts(d: &mut Driver) {
    let mut closing = def(
        "closing",
        closing_schedule("2025-01-01T00:50..2025-01-01T00:55"),
    );
    closing.missed = MissedRule::Required;
    d.step(2_780, upsert(closing.clone()));
    d.step(
        2_781,
        Event::Pause {
            job: JobName::new("closing").unwrap(),
            actor: Actor::new("alice"),
            note: "quarter end".to_string(),
        },
    );
    d.tick(3_400); // 00:47 .. 00:56 owed (paused), 00:50 .. 00:54 excluded
    closing.schedule = closing_schedule("2025-01-01T00:58..2025-01-01T01:05");
    d.step(3_401, upsert(closing));
    let holidays = calendar("holidays", true, &[("2025-01-31", "Founders' Day")]);
    let base = Schedule::cron("0 17 * * *", Some("Europe/London")).unwrap();
    let last = duetime::BusinessDay::new(-1).ok();
    let month_end = Schedule::calendar(base, vec![holidays], last, duetime::Roll::Stay).unwrap();
    d.step(3_402, upsert(def("month_end", month_end)));
}

fn confirm(job: &str, digest: &str) -> Event {
    Event::Confirm {
        job: JobName::new(job).unwrap(),
        digest: digest.to_string(),
        actor: Actor::new("ops"),
    }
}

fn load(json: &str) -> Result<State, LoadError> {
    load_value(serde_json::from_str(json).expect("test JSON parses"))
}

/// Loads a state and returns the typed `LoadError` when it is refused (the JSON must
/// decode as a state).
fn load_value(v: Value) -> Result<State, LoadError> {
    State::load(v).expect("decodes as a state")
}

fn fixture() -> Value {
    read_fixture(FIXTURE)
}

/// A committed fixture, as JSON.
fn read_fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path} is committed: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is JSON: {e}"))
}

/// Writes the fixture of `format` from `rich_state()`; only a build of that format may.
fn write_fixture(format: u32, path: &str) {
    assert_eq!(
        FORMAT_VERSION, format,
        "the v{format} fixture is written by a v{format} build only"
    );
    let json = serde_json::to_string_pretty(&rich_state()).unwrap();
    std::fs::create_dir_all("tests/fixtures").unwrap();
    std::fs::write(path, json + "\n").unwrap();
}

/// While `format` is current, its fixture is exactly what this build writes for the same
/// events: a change to the stored form must move `FORMAT_VERSION` (and keep the fixtures).
fn assert_fixture_is_written_while_current(format: u32, path: &str) {
    if FORMAT_VERSION != format {
        return;
    }
    let written = serde_json::to_value(rich_state()).unwrap();
    assert_eq!(
        written,
        read_fixture(path),
        "the stored form changed: bump FORMAT_VERSION and keep tests/fixtures/state-v*.json \
         loading (do not regenerate them)"
    );
}

/// Writes the fixture. Run once, when format 1 was current; never again (the file is what a
/// version-1 build wrote, and later builds must keep loading it as it is):
/// `cargo test --test state_format -- --ignored write_v1_fixture`.
#[test]
#[ignore]
fn write_v1_fixture() {
    write_fixture(1, FIXTURE);
}

#[test]
fn state_from_format_1_loads() {
    let v = fixture();
    assert_eq!(v["format"], 1);
    let state: State = serde_json::from_value(v).expect("a v1 state loads");
    state.check_invariants().unwrap();
    let now = Timestamp::from_millis(T0 + 330_000);
    let view = |name: &str| state.job(name, now).unwrap();
    assert_eq!(state.job_count(), 8);

    let report = view("report");
    assert!(report.running.is_some());
    assert_eq!(
        report.owed, 4,
        "one paused, three overlapped due times owed"
    );
    assert_eq!(view("audit").status, Status::Paused);
    assert_eq!(view("flaky").status, Status::Failed, "failed out, paused");
    assert!(view("late_job").running.is_some());
    assert!(view("sync").missed_24h > 0);
    assert_eq!(view("adhoc").running, None);

    // What views do not show, the stored form does.
    let json = serde_json::to_value(&state).unwrap();
    let jobs = json["jobs"].as_object().unwrap();
    let job = |name: &str| {
        jobs.values()
            .find(|j| j["def"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} in the stored form"))
    };
    assert_eq!(
        job("report")["activity"]["pending"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(job("sync")["activity"]["retry"]["attempt"], 2);
    assert_eq!(job("adhoc")["activity"]["manual"], "bob");
    assert_eq!(job("flaky")["activity"]["paused"]["by"]["by"], "system");
    assert_eq!(job("nightly")["def"]["schedule"]["dst"]["fold"], "both");
    assert_eq!(json["processes"].as_object().unwrap().len(), 2);

    // The loaded state carries on: a tick renews, settles and starts without complaint.
    let mut state = state;
    let mut effects = Vec::new();
    state.step(
        Now::at(Timestamp::from_millis(T0 + 400_000)),
        Event::Tick {
            process: P1,
            held: Vec::new(),
        },
        &mut effects,
    );
    state.check_invariants().unwrap();
}

/// Writes the format-2 fixture. Run once, when format 2 was current; never again:
/// `cargo test --test state_format -- --ignored write_v2_fixture`.
#[test]
#[ignore]
fn write_v2_fixture() {
    write_fixture(2, FIXTURE_V2);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_2_is_current() {
    assert_fixture_is_written_while_current(2, FIXTURE_V2);
}

#[test]
fn state_from_format_2_loads_and_keeps_its_failure_counts() {
    let v = read_fixture(FIXTURE_V2);
    assert_eq!(v["format"], 2);
    let state: State = serde_json::from_value(v).expect("a v2 state loads");
    state.check_invariants().unwrap();
    let json = serde_json::to_value(&state).unwrap();
    let sync = json["jobs"]
        .as_object()
        .unwrap()
        .values()
        .find(|j| j["def"]["name"] == "sync")
        .unwrap();
    assert_eq!(sync["failures_in_a_row"], 1);
}

/// Writes the format-3 fixture. Run once, when format 3 was current; never again:
/// `cargo test --test state_format -- --ignored write_v3_fixture`.
#[test]
#[ignore]
fn write_v3_fixture() {
    write_fixture(3, FIXTURE_V3);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_3_is_current() {
    assert_fixture_is_written_while_current(3, FIXTURE_V3);
}

#[test]
fn state_from_format_3_loads_and_keeps_its_incidents() {
    let v = read_fixture(FIXTURE_V3);
    assert_eq!(v["format"], 3);
    let state: State = serde_json::from_value(v).expect("a v3 state loads");
    state.check_invariants().unwrap();
    let json = serde_json::to_value(&state).unwrap();
    let told: Vec<&Value> = json["jobs"]
        .as_object()
        .unwrap()
        .values()
        .filter(|j| j.get("incidents").is_some())
        .collect();
    assert!(!told.is_empty(), "the failed-out job keeps its incident");
    assert!(
        told.iter().any(|j| j["incidents"][0] == "failed_out"),
        "{told:?}"
    );
}

/// Writes the format-4 fixture. Run once, when format 4 was current; never again:
/// `cargo test --test state_format -- --ignored write_v4_fixture`.
#[test]
#[ignore]
fn write_v4_fixture() {
    write_fixture(4, FIXTURE_V4);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_4_is_current() {
    assert_fixture_is_written_while_current(4, FIXTURE_V4);
}

#[test]
fn state_from_format_4_loads_with_what_format_4_added() {
    let v = read_fixture(FIXTURE_V4);
    assert_eq!(v["format"], 4);
    let state: State = serde_json::from_value(v).expect("a v4 state loads");
    state.check_invariants().unwrap();
    let now = Timestamp::from_millis(T0 + 700_000);
    let view = |name: &str| state.job(name, now).unwrap();
    assert_eq!(
        view("quota").held_until,
        Some(Timestamp::from_millis(T0 + 610_000 + 3_600_000))
    );
    assert!(view("approve").awaiting_approval.is_some());
    assert!(view("once").ended.is_some());
    let json = serde_json::to_value(&state).unwrap();
    let jobs = json["jobs"].as_object().unwrap();
    let job = |name: &str| jobs.values().find(|j| j["def"]["name"] == name).unwrap();
    assert_eq!(job("disk_b")["activity"]["waiting"]["reason"], "lane_busy");
    assert!(job("guarded")["activity"]["unconfirmed"] == true);
    assert!(job("noisy")["last_alert"].is_number());
    assert!(job("quota")["accounted_from"].is_number());
    assert!(json["processes"]["3"]["last_boot"].is_number());
}

/// Writes the format-5 fixture. Run once, when format 5 was current; never again:
/// `cargo test --test state_format -- --ignored write_v5_fixture`.
#[test]
#[ignore]
fn write_v5_fixture() {
    write_fixture(5, FIXTURE_V5);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_5_is_current() {
    assert_fixture_is_written_while_current(5, FIXTURE_V5);
}

#[test]
fn state_from_format_5_loads_with_the_store_clock_and_held_clocks() {
    let v = read_fixture(FIXTURE_V5);
    assert_eq!(v["format"], 5);
    let state: State = serde_json::from_value(v.clone()).expect("a v5 state loads");
    state.self_check().unwrap();
    assert_eq!(state.clock(), Some(Timestamp::from_millis(T0 + 650_000)));
    let waiting = &v["processes"]["4"]["hold"];
    assert_eq!(waiting["waiting"], true, "{waiting}");
    assert!(waiting["lead"].as_i64().unwrap() > 7_000_000);
    let working = &v["processes"]["5"]["hold"];
    assert!(working.get("waiting").is_none(), "{working}");
    assert!(working["lead"].as_i64().unwrap() > 86_000_000);
    assert!(state.records().count() > 10);
}

/// Writes the format-6 fixture. Run once, when format 6 was current; never again:
/// `cargo test --test state_format -- --ignored write_v6_fixture`.
#[test]
#[ignore]
fn write_v6_fixture() {
    write_fixture(6, FIXTURE_V6);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_6_is_current() {
    assert_fixture_is_written_while_current(6, FIXTURE_V6);
}

#[test]
fn state_from_format_6_loads_with_the_payloads_in_force_and_held() {
    let v = read_fixture(FIXTURE_V6);
    assert_eq!(v["format"], 6);
    let state: State = serde_json::from_value(v).expect("a v6 state loads");
    state.self_check().unwrap();
    let record = state
        .seq_of_name("deploy")
        .and_then(|seq| state.record(seq))
        .expect("deploy is kept");
    let in_force = record.def().payload.as_deref().unwrap();
    assert!(in_force.contains(r#"["deploy","--prod"]"#), "{in_force}");
    let held = record.held().expect("a change is held");
    assert!(held.def().payload.as_deref().unwrap().contains("--fast"));
    assert!(!record.is_unconfirmed(), "the first payload was confirmed");
    // Older formats carry no payload: every definition in them loads without one.
    let old: State = serde_json::from_value(read_fixture(FIXTURE_V5)).unwrap();
    assert!(old.records().all(|(_, r)| r.def().payload.is_none()));
}

/// Writes the format-7 fixture. Run once, when format 7 was current; never again:
/// `cargo test --test state_format -- --ignored write_v7_fixture`.
#[test]
#[ignore]
fn write_v7_fixture() {
    write_fixture(7, FIXTURE_V7);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_7_is_current() {
    assert_fixture_is_written_while_current(7, FIXTURE_V7);
}

/// Writes the format-8 fixture. Run once, when format 8 was current; never again:
/// `cargo test --test state_format -- --ignored write_v8_fixture`.
#[test]
#[ignore]
fn write_v8_fixture() {
    write_fixture(8, FIXTURE_V8);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_8_is_current() {
    assert_fixture_is_written_while_current(8, FIXTURE_V8);
}

/// Writes the format-9 fixture. Run once, when format 9 was current; never again:
/// `cargo test --test state_format -- --ignored write_v9_fixture`.
#[test]
#[ignore]
fn write_v9_fixture() {
    write_fixture(9, FIXTURE_V9);
}

#[test]
fn fixture_is_what_this_build_writes_while_format_9_is_current() {
    assert_fixture_is_written_while_current(9, FIXTURE_V9);
}

#[test]
fn state_from_format_9_loads_with_its_calendar_schedules() {
    let v = read_fixture(FIXTURE_V9);
    assert_eq!(v["format"], 9);
    let state: State = serde_json::from_value(v).expect("a v9 state loads");
    state.self_check().unwrap();
    let def_of = |job: &str| {
        state
            .seq_of_name(job)
            .and_then(|seq| state.record(seq))
            .map(|r| r.def().clone())
            .unwrap_or_else(|| panic!("{job} is kept"))
    };
    assert_eq!(
        def_of("closing").schedule,
        closing_schedule("2025-01-01T00:58..2025-01-01T01:05")
    );
    let Schedule::Calendar(month_end) = def_of("month_end").schedule else {
        panic!("month_end keeps its calendar schedule");
    };
    assert_eq!(month_end.business_day().map(|b| b.get()), Some(-1));
    let jan = month_end.next_after(Timestamp::from_millis(T0)).unwrap();
    assert_eq!(jan.to_string(), "2025-01-30T17:00:00Z"); // the 31st is Founders' Day
}

/// A calendar changed while due times are owed is a definition change like any other: a
/// `Defined` line names the new calendar; the due times that passed while the job was
/// paused are the old definition's up to the change and the new one's after it, and the
/// runs cover exactly those.
#[test]
fn a_calendar_changed_while_due_times_are_owed_is_a_definition_change() {
    let mut d = Driver {
        state: State::default(),
        runs: Vec::new(),
    };
    let mut closing = def(
        "closing",
        closing_schedule("2025-01-01T00:05..2025-01-01T00:08"),
    );
    closing.missed = MissedRule::Required;
    closing.safe_to_repeat = true;
    d.step(0, upsert(closing.clone()));
    d.step(0, Event::ProcessStarted { process: P1 });
    let pause = Event::Pause {
        job: JobName::new("closing").unwrap(),
        actor: Actor::new("alice"),
        note: String::new(),
    };
    d.step(1, pause);
    for secs in (30..=600).step_by(30) {
        d.tick(secs);
    }
    let old = closing.schedule.clone();
    closing.schedule = closing_schedule("2025-01-01T00:09..2025-01-01T00:12");
    let effects = d.step(601, upsert(closing.clone()));
    let change = Timestamp::from_millis(T0 + 601_000);
    let defined = effects.iter().any(|e| {
        matches!(e, Effect::Journal(duetime::Record { entry: duetime::Entry::History(
            duetime::History::Defined { schedule, .. }), .. }) if **schedule == closing.schedule)
    });
    assert!(defined, "{effects:?}");
    let resume = Event::Resume {
        job: JobName::new("closing").unwrap(),
        actor: Actor::new("alice"),
    };
    let mut all = d.step(602, resume);
    for secs in (630..=1200).step_by(30) {
        all.extend(d.tick(secs));
        if d.state_holds(d.run_of("closing").0) {
            all.extend(d.finish(secs + 1, "closing", Outcome::Ok));
        }
    }
    let mut covered = 0;
    for e in &all {
        if let Effect::Do(Action::Start(Start {
            covers: Some(c), ..
        })) = e
        {
            let before = c.from.saturating_sub(Duration::from_millis(1));
            let old_part = old.count_in(before, c.to.min(change));
            let new_part = closing.schedule.count_in(before.max(change), c.to);
            assert_eq!(old_part + new_part, c.count, "{c:?}");
            covered += c.count;
        }
    }
    d.state.self_check().unwrap();
    // 00:01-00:10 under the old calendar (00:05-00:07 out), then 00:12-00:20 under the new
    // (00:09-00:11 out, rolled to the next day).
    assert_eq!(covered, 7 + 9);
}

#[test]
fn state_from_format_8_loads_with_a_run_kept_in_the_lane_it_started_in() {
    let v = read_fixture(FIXTURE_V8);
    assert_eq!(v["format"], 8);
    let state: State = serde_json::from_value(v).expect("a v8 state loads");
    state.self_check().unwrap();
    assert_eq!(state.open_runs_of_key("/v8/before"), 1);
    assert_eq!(state.open_runs_of_key("/v8/after"), 0);
    let record = state
        .seq_of_name("mover")
        .and_then(|seq| state.record(seq))
        .expect("mover is kept");
    assert_eq!(record.run_key(), Some("/v8/before"));
    assert_eq!(record.def().concurrency_key.as_deref(), Some("/v8/after"));
    // Older formats name no run's lane: each run counts under its job's key.
    let old: State = serde_json::from_value(read_fixture(FIXTURE_V7)).unwrap();
    assert!(old
        .records()
        .all(|(_, r)| r.run_key() == r.def().concurrency_key.as_deref()));
}

#[test]
fn state_from_format_7_loads_with_the_switch_and_its_told_silence() {
    let v = read_fixture(FIXTURE_V7);
    assert_eq!(v["format"], 7);
    let state: State = serde_json::from_value(v.clone()).expect("a v7 state loads");
    state.self_check().unwrap();
    let record = state
        .seq_of_name("nightly")
        .and_then(|seq| state.record(seq))
        .expect("nightly is kept");
    assert_eq!(
        record.def().expect_success_within,
        Some(duetime::Duration::from_mins(30))
    );
    assert_eq!(
        record.watched_since(),
        Some(Timestamp::from_millis(T0 + 680_000))
    );
    assert!(record.incidents().contains(&Incident::NoSuccess));
    // Older formats set no switch: every job in them loads unwatched.
    let old: State = serde_json::from_value(read_fixture(FIXTURE_V6)).unwrap();
    assert!(old.records().all(|(_, r)| r.watched_since().is_none()));
}

/// The switch set and no silence counted (or the other way round) is a state no build
/// writes: refused, by name.
#[test]
fn a_switch_without_its_silence_is_refused() {
    let mut v = read_fixture(FIXTURE_V7);
    let job = v["jobs"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .find(|j| j.get("watched_since").is_some())
        .unwrap();
    job.as_object_mut().unwrap().remove("watched_since");
    let err = load_value(v).unwrap_err();
    assert_eq!(
        err,
        LoadError::Inconsistent {
            what: Inconsistency::WatchOutOfStep {
                job: JobName::new("nightly").unwrap(),
            }
        }
    );
    // What a person reads names the job and the two fields out of step.
    let text = err.to_string();
    for word in ["nightly", "watched_since", "expect_success_within"] {
        assert!(text.contains(word), "{text}");
    }
}

/// Issue 18's migration: digests were 16 hex digits of FNV-1a before SHA-256, and none is
/// stored, so the definition an older state holds for confirmation is confirmed by its
/// SHA-256 digest now; the FNV-1a digest a person may have noted before is refused.
#[test]
fn a_held_definition_of_an_older_state_is_confirmed_by_its_sha256_digest_only() {
    let mut state: State = serde_json::from_value(read_fixture(FIXTURE_V5)).unwrap();
    let seq = state.seq_of_name("guarded").unwrap();
    let held = state.record(seq).and_then(|r| r.held()).cloned();
    let digest = held
        .expect("the v5 fixture holds guarded's definition")
        .digest()
        .to_string();
    assert_eq!(digest.len(), duetime::DIGEST_HEX_LEN);
    let now = Timestamp::from_millis(T0 + 700_000);
    let mut effects = Vec::new();
    // What FNV-1a gave for this definition before (computed by the format-5 build's rule).
    state.step(
        Now::at(now),
        confirm("guarded", "0230faf8d7933d1d"),
        &mut effects,
    );
    let wrong = |e: &Effect| {
        matches!(
            e,
            Effect::Reply {
                result: Err(Refusal::WrongDigest { .. }),
                ..
            }
        )
    };
    assert!(effects.iter().any(wrong), "{effects:?}");
    assert!(state.record(seq).unwrap().is_unconfirmed());
    effects.clear();
    state.step(Now::at(now), confirm("guarded", &digest), &mut effects);
    let confirmed = |e: &Effect| matches!(e, Effect::Reply { result: Ok(_), .. });
    assert!(effects.iter().any(confirmed), "{effects:?}");
    assert!(!state.record(seq).unwrap().is_unconfirmed());
}

#[test]
fn an_unknown_or_repeated_incident_is_refused() {
    // The v3 fixture with the failed-out job's incidents replaced.
    let with_incidents = |incidents: Value| {
        let mut v = read_fixture(FIXTURE_V3);
        let job = v["jobs"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .find(|j| j.get("incidents").is_some())
            .unwrap();
        job["incidents"] = incidents;
        v
    };
    // An unknown name does not decode: the error names it and what is accepted.
    let err = State::load(with_incidents(serde_json::json!(["meteor"]))).unwrap_err();
    assert_eq!(err.classify(), serde_json::error::Category::Data);
    let text = err.to_string();
    assert!(text.contains("meteor"), "{text}");
    for incident in Incident::ALL {
        assert!(text.contains(incident.name()), "{text} omits {incident}");
        // A host's log line shows an incident by the name the state stores it under.
        assert_eq!(incident.to_string(), incident.name());
    }
    let repeated = with_incidents(serde_json::json!(["stalled", "stalled"]));
    assert_eq!(
        load_value(repeated).unwrap_err(),
        LoadError::Inconsistent {
            what: Inconsistency::IncidentRepeated {
                job: JobName::new("flaky").unwrap(),
                incident: Incident::Stalled,
            }
        }
    );
}

#[test]
fn newer_format_is_refused() {
    for format in [FORMAT_VERSION + 1, u32::MAX] {
        let mut v = fixture();
        v["format"] = format.into();
        let err = serde_json::from_value::<State>(v.clone()).unwrap_err();
        assert!(
            err.to_string().contains(
                &LoadError::NewerFormat {
                    found: format,
                    supported: FORMAT_VERSION
                }
                .to_string()
            ),
            "{err}"
        );
        assert!(matches!(load_value(v), Err(LoadError::NewerFormat { .. })));
    }
}

/// A job's phase is one of free, running or unconfirmed, and an open run's stage running
/// or parked: a stored activity holding parts of two is refused on reading, saying which
/// parts and what a job may hold.
#[test]
fn an_activity_no_phase_can_hold_is_refused_on_reading() {
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit); 5] = [
        (
            "an open run and a retry at once (a job has one or the other)",
            |v| {
                let retry = job_mut(v, "sync")["activity"]["retry"].clone();
                job_mut(v, "report")["activity"]["retry"] = retry;
            },
        ),
        ("an open run is parked and has a cancel sent", |v| {
            let run = &mut job_mut(v, "report")["activity"]["run"];
            run["parked"] = 7_200_000.into();
            run["cancel_sent"] = 3_600_000.into();
        }),
        ("waits for room while its run is open", |v| {
            let waiting = serde_json::json!({ "since": 0, "reason": "lane_busy" });
            job_mut(v, "report")["activity"]["waiting"] = waiting;
        }),
        (
            "an unconfirmed job's activity has no held definition",
            |v| {
                let act = job_mut(v, "sync")["activity"].as_object_mut().unwrap();
                act.remove("retry");
                act.insert("unconfirmed".into(), true.into());
            },
        ),
        (
            "an unconfirmed job's activity has a run, a retry or a wait",
            |v| {
                let def = job_mut(v, "report")["def"].clone();
                let act = &mut job_mut(v, "report")["activity"];
                act["unconfirmed"] = true.into();
                act["held"] = def;
            },
        ),
    ];
    for (says, edit) in cases {
        let mut v = fixture();
        edit(&mut v);
        let err = State::load(v).expect_err(says);
        assert_eq!(err.classify(), serde_json::error::Category::Data, "{says}");
        assert!(err.to_string().contains(says), "{err} does not say {says}");
    }
}

/// Edits the fixture, loads it, and expects `LoadError::Inconsistent` with an
/// inconsistency `expected` accepts.
fn refused(what: &str, expected: fn(&Inconsistency) -> bool, edit: impl FnOnce(&mut Value)) {
    let mut v = fixture();
    edit(&mut v);
    match load_value(v) {
        Err(LoadError::Inconsistent { what: why }) => {
            assert!(expected(&why), "{what}: refused as {why:?}")
        }
        Err(other) => panic!("{what}: refused as {other:?}"),
        Ok(_) => panic!("{what}: loaded"),
    }
}

fn job_mut<'a>(v: &'a mut Value, name: &str) -> &'a mut Value {
    v["jobs"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .find(|j| j["def"]["name"] == name)
        .unwrap()
}

#[test]
fn inconsistent_states_are_refused_with_a_typed_error() {
    refused(
        "duplicate job name",
        |i| matches!(i, Inconsistency::NameTwice { .. }),
        |v| {
            let copy = job_mut(v, "report").clone();
            v["jobs"]["8"] = copy;
            v["next_seq"] = 9.into();
        },
    );
    refused(
        "job beyond the sequence counter",
        |i| matches!(i, Inconsistency::SequenceBeyondCounter { .. }),
        |v| {
            let copy = job_mut(v, "report").clone();
            v["jobs"]["8"] = copy;
        },
    );
    refused(
        "run ahead of the run counter",
        |i| matches!(i, Inconsistency::RunAheadOfCounters { .. }),
        |v| {
            let next = v["next_run"].clone();
            job_mut(v, "report")["activity"]["run"]["id"] = next;
        },
    );
    refused(
        "run ahead of the fence counter",
        |i| matches!(i, Inconsistency::RunAheadOfCounters { .. }),
        |v| {
            let next = v["next_fence"].clone();
            job_mut(v, "report")["activity"]["run"]["fence"] = next;
        },
    );
    refused(
        "one run open twice",
        |i| matches!(i, Inconsistency::RunOpenTwice { .. }),
        |v| {
            let run = job_mut(v, "report")["activity"]["run"].clone();
            job_mut(v, "late_job")["activity"]["run"] = run;
        },
    );
    refused(
        "owed segments out of order",
        |i| matches!(i, Inconsistency::OwedOutOfOrder { .. }),
        |v| {
            let pending = job_mut(v, "report")["activity"]["pending"]
                .as_array_mut()
                .unwrap();
            pending.reverse();
        },
    );
    refused(
        "an empty owed segment",
        |i| matches!(i, Inconsistency::OwedOutOfOrder { .. }),
        |v| {
            job_mut(v, "report")["activity"]["pending"][0]["count"] = 0.into();
        },
    );
    refused(
        "owed beyond the frontier",
        |i| matches!(i, Inconsistency::OwedBeyondFrontier { .. }),
        |v| {
            let frontier = job_mut(v, "report")["frontier"].as_i64().unwrap();
            job_mut(v, "report")["activity"]["pending"][1]["to"] = (frontier + 1).into();
        },
    );
    refused(
        "too many owed segments",
        |i| matches!(i, Inconsistency::TooManyOwedSegments { count: 41, .. }),
        |v| {
            let pending = job_mut(v, "report")["activity"]["pending"]
                .as_array_mut()
                .unwrap();
            let (first, second) = (pending[0].clone(), pending[1].clone());
            let base = first["from"].as_i64().unwrap() - 40 * 60_000;
            pending.clear();
            for k in 0..40 {
                let mut seg = first.clone();
                seg["from"] = (base + k * 60_000).into();
                seg["to"] = (base + k * 60_000).into();
                pending.push(seg);
            }
            pending.push(second);
        },
    );
}

/// Garbage and near-misses are errors, never panics.
#[test]
fn malformed_states_are_errors() {
    for text in [
        "",
        "null",
        "{}",
        "[]",
        r#"{"format":1}"#,
        r#"{"format":-1,"config":{}}"#,
    ] {
        assert!(serde_json::from_str::<State>(text).is_err(), "{text:?}");
    }
    let mut v = fixture();
    job_mut(&mut v, "report")["def"]["name"] = "Not A Name".into();
    assert!(serde_json::from_value::<State>(v).is_err());
    let mut v = fixture();
    job_mut(&mut v, "sync")["def"]["schedule"]["expr"] = "61 * * * *".into();
    assert!(serde_json::from_value::<State>(v).is_err());
}

#[test]
fn load_error_texts_name_the_problem() {
    let err = load(r#"{"format":1,"config":{"tick":30000,"lease_ttl":60000,"grace":60000,"cancel_grace":60000,"manual_per_hour":20,"clock_jump":60000},"next_seq":0,"next_run":1,"next_fence":1,"jobs":{"0":{"def":{"name":"a","schedule":{"kind":"at","instant":0}},"frontier":0}},"processes":{}}"#)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            LoadError::Inconsistent {
                what: Inconsistency::SequenceBeyondCounter { seq: JobSeq(0), .. }
            }
        ),
        "{err:?}"
    );
    // The text names the job and what is wrong with it.
    assert_eq!(
        err.to_string(),
        "the state is inconsistent: job a has sequence 0 beyond the counter"
    );
}

/// Every kind of alert is its own incident: the one place names are kept (`Incident`)
/// knows each, so a state holding it loads and two kinds are never one incident.
#[test]
fn every_alert_kind_is_its_own_incident() {
    use duetime::{AlertKind, SystemPause};
    let kinds = [
        AlertKind::FailedOut {
            run: RunId(1),
            attempts: 1,
        },
        AlertKind::PausedBySystem {
            reason: SystemPause::FailureStreak { failures: 3 },
        },
        AlertKind::RunLost {
            run: RunId(1),
            paused: false,
        },
        AlertKind::Stalled {
            run: RunId(1),
            running_for: Duration::from_secs(1),
        },
        AlertKind::PendingConfirmation {
            digest: serde_json::from_str("\"d\"").unwrap(),
        },
        AlertKind::ApprovalExpired { run: RunId(1) },
        AlertKind::NoSuccess {
            since: Timestamp::from_millis(T0),
            within: Duration::from_hours(26),
        },
    ];
    let named: Vec<Incident> = kinds.iter().map(|k| k.incident()).collect();
    assert_eq!(named, Incident::ALL);
    // The incident's name is the alert's own tag.
    for kind in &kinds {
        let tag = serde_json::to_value(kind).unwrap()["alert"].clone();
        assert_eq!(tag, kind.incident().name(), "{kind:?}");
    }
}

#[test]
fn a_due_time_owed_for_a_clock_jump_before_format_4_loads_as_clock_forward() {
    let cause: duetime::MissCause = serde_json::from_str("\"clock_jump\"").unwrap();
    assert_eq!(cause, duetime::MissCause::ClockForward);
    assert_eq!(serde_json::to_string(&cause).unwrap(), "\"clock_forward\"");
}

/// What a downstream keeps of its upstreams is bounded: 256 heard ranges and 16 schedules
/// load, one more of either is refused with the inconsistency naming it.
#[test]
fn a_downstream_keeping_more_than_it_may_is_refused_on_reading() {
    let range = |k: i64| {
        serde_json::json!({
            "upstream": "late_job", "from": k * 60_000, "to": k * 60_000, "count": 1,
            "fate": { "fate": "ok" }
        })
    };
    let ranges = |n: i64| Value::Array((0..n).map(range).collect());
    let schedules = |v: &Value, n: usize| {
        let schedule = job_mut(&mut v.clone(), "report")["def"]["schedule"].clone();
        let one = serde_json::json!({ "upstream": "late_job", "schedule": schedule });
        Value::Array(vec![one; n])
    };
    let mut v = fixture();
    job_mut(&mut v, "report")["heard"] = ranges(256);
    let kept = schedules(&v, 16);
    job_mut(&mut v, "report")["upstream_schedules"] = kept;
    assert!(load_value(v).is_ok(), "at the bounds it loads");
    refused(
        "257 heard ranges",
        |i| matches!(i, Inconsistency::TooManyHeard { count: 257, .. }),
        |v| job_mut(v, "report")["heard"] = ranges(257),
    );
    refused(
        "17 schedules of its upstreams",
        |i| matches!(i, Inconsistency::TooManyUpstreamSchedules { count: 17, .. }),
        |v| {
            let kept = schedules(v, 17);
            job_mut(v, "report")["upstream_schedules"] = kept;
        },
    );
}
