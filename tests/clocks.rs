//! Whose clock judges: a process whose wall clock reads far ahead of what the store can
//! vouch for is held to the store's clock, so a clock days ahead neither moves the frontier
//! (skipping or running due times before they come) nor writes a lease that holds a job for
//! days; one that is alone for two ticks is taken at its word, ahead or behind (a clock
//! corrected back runs the schedule on its clock again, and nothing runs twice). See
//! `src/step/clock.rs`.

mod support;

use duetime::{Action, Notice, Start};
use duetime::{
    ClockGapKind, Effect, Event, Fence, JobName, LedgerKind, MissAction, MissCause, MissedRule,
    Now, Outcome, ProcessId, RunId, Timestamp,
};
use support::*;

fn gaps(effects: &[Effect]) -> Vec<ClockGapKind> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notice(Notice::ClockGap { kind, .. }) => Some(*kind),
            _ => None,
        })
        .collect()
}

fn skipped_by_clock(trace: &str) -> bool {
    trace.contains("missed (clock_forward)")
}

#[test]
fn a_clock_set_days_ahead_while_another_process_lives_is_held_and_works_on_the_stores_time() {
    let mut s = Story::new();
    s.show_history = true;
    s.define("08:59", job("sync", every("1m")));
    s.start("08:59:30", 1);
    s.start("08:59:35", 2);
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.wall_set(2, "2d", false);
    s.note("p2's clock now reads two days ahead; p1's is right");
    s.tick("2025-06-04 09:00:35", 2);
    assert_eq!(
        gaps(&s.last),
        [ClockGapKind::ClockForward, ClockGapKind::HeldAhead]
    );
    s.note("held, p2 starts what is due on the store's time, not two days on");
    s.tick("2025-06-04 09:01:02", 2);
    assert!(s
        .last
        .iter()
        .any(|e| matches!(e, Effect::Do(Action::Start(_)))));
    s.tick("09:01:05", 1);
    s.finish("2025-06-04 09:01:10", 2, Outcome::Ok);
    s.tick("09:02:05", 1);
    s.tick("2025-06-04 09:02:32", 2);
    let trace = s.trace();
    assert!(!skipped_by_clock(&trace), "{trace}");
    assert!(
        !trace.contains("released"),
        "p1 speaks every tick: p2 is never alone"
    );
    assert!(
        !trace.contains("2025-06-04T"),
        "no due time two days on was touched:\n{trace}"
    );
    insta::assert_snapshot!(trace);
}

#[test]
fn a_new_incarnation_with_a_clock_days_ahead_decides_nothing_until_the_store_shows_it_is_alive() {
    let mut s = Story::new();
    let mut def = job("report", every("1h"));
    def.missed = MissedRule::Required;
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.wall_set(2, "3d", false);
    s.start("2025-06-05 09:00", 2);
    assert_eq!(gaps(&s.last), [ClockGapKind::HeldAhead]);
    assert!(
        !s.last
            .iter()
            .any(|e| matches!(e, Effect::Do(Action::Start(_)))),
        "a new incarnation whose clock cannot be measured starts nothing"
    );
    s.note("p1 speaks: the store's clock is alive, so p2 works on it from now on");
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.tick("2025-06-05 09:00:40", 2);
    s.tick("10:00:05", 1);
    let trace = s.ledger();
    assert_eq!(trace.lines().count(), 1, "{trace}");
    assert!(trace.contains("ran r1"), "{trace}");
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_lone_process_set_ahead_is_taken_at_its_word_and_a_lease_it_wrote_lapses_by_the_stores_clock() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.safe_to_repeat = true;
    def.timeout = "2h".parse().unwrap();
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.finish("09:00:20", 1, Outcome::Ok);
    s.wall_set(1, "1d", false);
    s.tick("2025-06-03 09:00:40", 1);
    s.note("alone for two ticks: p1's clock is the only witness");
    s.tick("2025-06-03 09:01:40", 1);
    assert_eq!(gaps(&s.last), [ClockGapKind::Released]);
    s.tick("2025-06-03 10:00:05", 1);
    s.crash("2025-06-03 10:00:20", 1);
    s.note("p1 crashes holding r2, whose lease its clock wrote a day ahead of true time");
    s.note("p2's clock is right: behind the store's, which it carries on by what it measures");
    s.start("10:01:00", 2);
    s.tick_through("10:01:30", "10:03:30", "30s", 2);
    let lost = s.trace().contains("r2 lost (lease lapsed)");
    assert!(
        lost,
        "the store stopped hearing from p1: its lease lapsed by the store's clock, not a day on\n{}",
        s.trace()
    );
    let kinds: Vec<LedgerKind> = s
        .last
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => match &r.entry {
                duetime::Entry::Ledger(l) => Some(l.kind),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(!kinds.contains(&LedgerKind::Missed {
        cause: MissCause::ClockForward,
        action: MissAction::Skipped
    }));
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_lone_clock_that_ran_fast_and_is_corrected_back_runs_the_schedule_on_its_clock_again() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("report", cron("*/10 * * * *"));
    def.safe_to_repeat = true;
    s.define("08:49", def);
    s.start("08:49:30", 1);
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.tick("09:10:05", 1);
    s.finish("09:10:10", 2, Outcome::Ok);
    s.wall_set(1, "25m", true);
    s.note("p1's clock was 25 minutes fast; NTP steps it back (true time is 08:45)");
    s.tick("08:45:35", 1);
    assert_eq!(
        gaps(&s.last),
        [ClockGapKind::ClockBackward, ClockGapKind::HeldBehind]
    );
    s.note("held behind, it works on the store's time while a sane clock may contradict it");
    s.tick("08:46:05", 1);
    s.tick("08:46:35", 1);
    assert_eq!(gaps(&s.last), [ClockGapKind::ReleasedBehind]);
    s.note("alone for two ticks: its clock is taken as right, and the store's goes back");
    s.tick_through("08:50:00", "09:19:00", "3m", 1);
    let trace = s.ledger();
    assert_eq!(
        trace.matches("[09:10:00]").count(),
        1,
        "09:10 ran once, before the clock went back, and not again:\n{trace}"
    );
    assert!(
        !trace.contains("[09:20:00]"),
        "09:20 is not due by the corrected clock before 09:20:\n{trace}"
    );
    s.tick("09:20:05", 1);
    assert!(
        s.trace()
            .contains("START report r3 f3 on p1: schedule attempt 1 covering [09:20:00]"),
        "09:20 starts when the corrected clock reaches it:\n{}",
        s.trace()
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_result_delivered_with_a_reading_from_another_origin_is_timed_within_a_lease_of_its_process() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.timeout = "2h".parse().unwrap();
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.note("r1's result comes by another hand, whose monotonic clock counts from elsewhere");
    s.note("(it reads twelve hours more than p1's): it must not carry the store's time there");
    let result = Event::RunFinished {
        process: ProcessId(1),
        job: JobName::new("sync").unwrap(),
        run: RunId(1),
        fence: Fence(1),
        outcome: Outcome::Ok,
    };
    let now = Now::new(at("09:05:00"), at("21:05:00"));
    s.send_now(now, "09:05:00", "r1's result arrives", result);
    let config = s.state.config();
    let latest = at("09:00:10")
        .saturating_add(config.lease_ttl)
        .saturating_add(config.clock_jump);
    let times = record_dates(&s.last);
    assert!(!times.is_empty(), "r1 settled:\n{}", s.trace());
    assert!(
        times.iter().all(|t| *t <= latest),
        "judged at most a lease (and a clock_jump) after p1's last event ({latest}), not by \
         the other origin: {times:?}"
    );
    assert_eq!(
        s.state.clock(),
        Some(at("09:00:10")),
        "a reading of another origin vouches for no time: it moves no clock"
    );
    insta::assert_snapshot!(s.trace());
}

/// Swarm seed 2338 (with the dead-man's switch drawn): a lone process whose clocks, wall
/// and monotonic alike, read eight hours behind true time had its result delivered by
/// another hand reading true time. Both clocks moved as much, so the reading passed as its
/// own and the step acted eight hours ahead, starting the buffered run with a lease there;
/// the store's clock stayed behind, so when that run's answer was lost the lease would not
/// lapse for eight hours of the process's ticks (L1, L3). What a result's own measure
/// vouches for now carries the store's clock, as a tick with that reading would. (Since
/// overload seed 6115, a process the store has not heard from for longer than a lease
/// claims nothing: the buffered run is started at p1's next tick, held to the store's time,
/// rather than by the result; its lease lapses all the same.)
#[test]
fn a_result_whose_reading_passes_as_its_own_carries_the_stores_clock_so_what_it_starts_can_lapse() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.timeout = "3h".parse().unwrap();
    def.overlap = Some(duetime::Overlap::BufferOne);
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.tick("09:00:10", 1);
    s.tick("10:00:10", 1);
    s.note("10:00 is buffered behind r1; r1's result comes by another hand, reading 18:05");
    s.note("on both its clocks, eight hours past p1's: as if p1 had measured eight hours");
    let result = Event::RunFinished {
        process: ProcessId(1),
        job: JobName::new("sync").unwrap(),
        run: RunId(1),
        fence: Fence(1),
        outcome: Outcome::Ok,
    };
    s.send_now(
        Now::new(at("18:05:00"), at("18:05:00")),
        "18:05:00",
        "r1's result arrives",
        result,
    );
    let started = s
        .last
        .iter()
        .any(|e| matches!(e, Effect::Do(Action::Start(Start { run, .. })) if *run == RunId(2)));
    assert!(
        !started,
        "the result carried the store's clock eight hours past p1's last tick: p1 is silent \
         by it, and a run started for it now would be found lost at once; the buffered 10:00 \
         waits for a tick:\n{}",
        s.trace()
    );
    assert_eq!(
        s.state.clock(),
        Some(at("18:05:00")),
        "the store's clock is carried to what the reading vouched for"
    );
    s.note("r2's start never reaches p1, which ticks on by its own clock, holding nothing");
    let mut t = at("10:06:10");
    while t <= at("10:12:10") {
        let tick = Event::Tick {
            process: ProcessId(1),
            held: Vec::new(),
        };
        s.send_now(
            Now::new(t, t),
            &label_of(t),
            "p1 ticks holding nothing",
            tick,
        );
        t = t.saturating_add(duetime::Duration::from_secs(30));
    }
    let lost = s.trace().contains("r2 lost");
    assert!(
        lost,
        "r2, started at p1's next tick, lapses within a lease and a few ticks of p1's:\n{}",
        s.trace()
    );
    insta::assert_snapshot!(s.trace());
}

/// Found by the simulator's V1 (seed 141 of 0..300, once views were held to the journal's
/// stall): a process whose wall clock is held behind the store's works on the store's time
/// at its ticks, but its results acted at its own reading, hours back. The run such a step
/// started was timed from then, so the next tick, on the store's time, found it stalled and
/// past its deadline at once and cancelled it; a release behind would have moved it back
/// once more. A result read further behind than `clock_jump` is held as a tick is.
/// p1 ticks every 30 s from `from` through `to`, and p2, two hours behind, 5 s after it.
fn both_tick(s: &mut Story, from: &str, to: &str) {
    let (mut t, end) = (at(from), at(to));
    while t <= end {
        s.tick(&label_of(t), 1);
        let p2 = t.saturating_sub(duetime::Duration::from_secs(2 * 3600 - 5));
        s.tick(&label_of(p2), 2);
        t = t.saturating_add(duetime::Duration::from_secs(30));
    }
}

#[test]
fn a_result_from_a_process_held_behind_acts_on_the_stores_time_so_what_it_starts_is_not_timed_out_at_once(
) {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("15m"));
    def.timeout = "30m".parse().unwrap();
    def.stall_after = "30m".parse().unwrap();
    def.overlap = Some(duetime::Overlap::BufferOne);
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:05", 2);
    s.wall_set(2, "2h", true);
    s.note("p2 runs r1; its wall clock now reads two hours behind p1's, which is alive");
    both_tick(&mut s, "09:00:35", "09:19:35");
    s.note("09:15 is buffered behind r1; p2 reports r1 done at 07:20 by its clock");
    s.finish("07:20:00", 1, Outcome::Ok);
    let deadline = s.last.iter().find_map(|e| match e {
        Effect::Do(Action::Start(Start { run, deadline, .. })) if *run == RunId(2) => {
            Some(*deadline)
        }
        _ => None,
    });
    assert_eq!(
        deadline,
        Some(at("09:50:00")),
        "the buffered 09:15 starts on the store's time, with its whole timeout ahead:\n{}",
        s.trace()
    );
    both_tick(&mut s, "09:20:05", "09:25:05");
    let trace = s.trace();
    assert!(
        !trace.contains("CANCEL") && !trace.contains("stalled"),
        "r2 is neither stalled nor cancelled minutes into its half hour:\n{trace}"
    );
    insta::assert_snapshot!(trace);
}

#[test]
fn a_clock_a_minute_and_a_half_behind_a_live_sane_one_stays_held_and_nothing_is_skipped() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1m")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.wall_set(2, "90s", true);
    s.note("p2's clock now reads 90 s behind p1's, which vouches for the store's time");
    for m in 0..10 {
        let t = at("09:00:05").saturating_add(duetime::Duration::from_secs(60 * m));
        let back = t.saturating_sub(duetime::Duration::from_secs(90));
        s.tick(&label_of(t), 1);
        s.tick(&label_of(back), 2);
        s.tick(
            &label_of(t.saturating_add(duetime::Duration::from_secs(30))),
            1,
        );
    }
    let trace = s.trace();
    assert!(
        !trace.contains("released_behind") && !trace.contains("released,"),
        "while p1 lives, p2 is contradicted at every tick: no one is released, the store's \
         clock does not trade between them\n{trace}"
    );
    assert!(
        !trace.contains("missed (clock_forward)"),
        "nothing is skipped as the clock going forward\n{trace}"
    );
}

#[test]
fn two_clocks_corrected_back_together_agree_and_are_released_together() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("10m")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:05", 1);
    s.tick("09:00:06", 2);
    s.wall_set(1, "25m", true);
    s.wall_set(2, "25m", true);
    s.note("both clocks were 25 minutes fast; NTP steps both back");
    for (a, b) in [
        ("08:35:35", "08:35:36"),
        ("08:36:05", "08:36:06"),
        ("08:36:35", "08:36:36"),
        ("08:37:05", "08:37:06"),
    ] {
        s.tick(a, 1);
        s.tick(b, 2);
    }
    let trace = s.trace();
    assert!(
        trace.contains("released_behind"),
        "held clocks that agree are no evidence against each other\n{trace}"
    );
    let clock = s.state.clock().expect("a store clock");
    assert!(
        clock < at("08:40:00"),
        "the store's clock went back to theirs: {clock}\n{trace}"
    );
}

#[test]
fn a_held_incarnation_that_crashed_stops_making_the_others_tick_every_tick_after_a_lease() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("10m")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:05", 1);
    s.tick("09:00:06", 2);
    s.wall_set(2, "20m", true);
    s.tick("08:40:36", 2);
    let last_heard = s.state.clock().expect("a store clock");
    s.tick("09:00:37", 1);
    let p1 = ProcessId(1);
    assert_eq!(
        s.state.next_wake_for(p1),
        Some(at("09:01:07")),
        "while p2 is held behind, p1 shows itself once a tick\n{}",
        s.trace()
    );
    s.crash("08:40:40", 2);
    s.note("p2 is gone; the store cannot know it, only that it has gone quiet");
    s.tick_through("09:01:07", "09:02:07", "30s", 1);
    let config = *s.state.config();
    let lease = config.lease_ttl.saturating_add(config.clock_jump);
    let at_bound = last_heard.saturating_add(lease);
    s.tick(&label_of(at_bound), 1);
    assert_eq!(
        s.state.next_wake_for(p1),
        Some(at_bound.saturating_add(config.tick)),
        "within a lease (and clock_jump) of its last event p2 may only be slow: p1 still \
         ticks for it\n{}",
        s.trace()
    );
    assert_eq!(at_bound.as_millis() % 1000, 0, "whole seconds: {at_bound}");
    let past = Timestamp::from_millis(at_bound.as_millis() + 1);
    s.tick(&format!("{}.001", label_of(at_bound)), 1);
    let wake = s.state.next_wake_for(p1).expect("a wake");
    assert!(
        wake > past.saturating_add(config.tick),
        "silent longer than that, p2's hold is dormant: p1 wakes for its work only, \
         not a tick after its last event ({wake})\n{}",
        s.trace()
    );
}

#[test]
fn a_held_clock_back_from_a_silence_is_contradicted_by_a_sane_one_that_spoke_meanwhile() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("10m")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:05", 1);
    s.tick("09:00:06", 2);
    s.wall_set(2, "20m", true);
    s.tick("09:00:35", 1);
    s.tick("08:40:36", 2);
    s.note("both stall for four and a half minutes; p1 comes back first");
    s.tick("09:05:05", 1);
    s.tick("08:45:06", 2);
    s.tick("09:05:35", 1);
    s.tick("08:45:36", 2);
    s.tick("09:06:05", 1);
    s.tick("08:46:06", 2);
    let trace = s.trace();
    assert!(
        !trace.contains("released_behind"),
        "p1's sane clock lives: p2's solitude started again when it came back, and p1 \
         contradicts it at every tick since\n{trace}"
    );
    let clock = s.state.clock().expect("a store clock");
    assert!(
        clock >= at("09:06:05"),
        "the store's clock stays on p1's: {clock}\n{trace}"
    );
}

#[test]
fn a_held_clock_back_from_a_silence_is_contradicted_by_a_held_one_far_from_it_that_is_present() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("10m")));
    s.start("08:59:31", 2);
    s.start("08:59:32", 3);
    s.tick("09:00:05", 2);
    s.tick("09:00:06", 3);
    s.wall_set(2, "20m", true);
    s.tick("08:40:36", 2);
    s.note("p2 is held 20 minutes behind, and goes quiet");
    s.wall_set(3, "20m", true);
    s.tick("08:41:46", 3);
    s.tick("08:42:16", 3);
    s.tick("08:42:41", 3);
    s.note("p2 has been silent for longer than a lease: its hold is dormant");
    s.wall_set(3, "20m", true);
    s.tick("08:22:44", 3);
    s.note("p3, still held, now reads 40 minutes behind: 20 minutes from p2");
    s.tick("08:42:45", 2);
    let trace = s.trace();
    assert!(
        !trace.contains("CLOCK p2: released_behind"),
        "p3 is present and its clock is far from p2's: p2's solitude starts again on its \
         return, so p2 is not released at once\n{trace}"
    );
}

/// The dates of what step `effects` recorded.
fn record_dates(effects: &[Effect]) -> Vec<Timestamp> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Journal(r) => Some(r.at),
            _ => None,
        })
        .collect()
}

/// Found by the simulator's J1 (the journal is written on the store's time: nearly every
/// world of 0..300 broke it): a person's command acted on the clock it carried, unjudged.
/// A person whose machine reads hours behind the store's clock resumed a job, or approved
/// a run, hours before the ticks' time: what it recorded was dated before what came
/// before it. A command read further behind the store's clock than `clock_jump` acts on
/// the store's clock; one ahead is taken as it reads (the store's clock stands still while
/// no process speaks, so nothing says such a clock is wrong).
#[test]
fn a_persons_command_from_a_clock_far_behind_acts_on_the_stores_time() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("15m")));
    s.start("08:59:30", 1);
    s.tick_through("09:00:05", "09:10:05", "30s", 1);
    let sync = || JobName::new("sync").unwrap();
    let pause = Event::Pause {
        job: sync(),
        actor: duetime::Actor::new("ana"),
        note: "from a laptop 35 s slow".into(),
    };
    s.command("09:09:50", "ana pauses sync, her clock 35 s slow", pause);
    assert_eq!(
        record_dates(&s.last),
        vec![at("09:09:50")],
        "a clock within clock_jump of the store's is taken as it reads"
    );
    s.tick_through("09:10:35", "09:20:05", "30s", 1);
    let resume = Event::Resume {
        job: sync(),
        actor: duetime::Actor::new("bo"),
    };
    s.command(
        "06:20:10",
        "bo resumes sync, his clock three hours slow",
        resume,
    );
    let dates = record_dates(&s.last);
    assert!(
        !dates.is_empty() && dates.iter().all(|&d| d == at("09:20:05")),
        "the resume and the 09:15 it hands to the missed rule are dated by the store's \
         clock: {dates:?}\n{}",
        s.trace()
    );
    let pause = Event::Pause {
        job: sync(),
        actor: duetime::Actor::new("cy"),
        note: "from a laptop an hour fast".into(),
    };
    s.command("10:20:20", "cy pauses sync, her clock an hour fast", pause);
    let dates = record_dates(&s.last);
    assert!(
        !dates.is_empty() && dates.iter().all(|&d| d == at("10:20:20")),
        "ahead of the store's clock nothing says a person's clock is wrong: taken as it \
         reads: {dates:?}"
    );
    insta::assert_snapshot!(s.trace());
}

#[test]
fn a_held_clock_come_back_within_clock_jump_is_no_release_and_lengthens_no_lease() {
    let mut s = Story::new();
    s.show_history = true;
    let mut def = job("sync", every("1h"));
    def.timeout = "30m".parse().unwrap();
    s.define("08:59", def);
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("08:59:59", 1);
    s.wall_set(2, "90s", true);
    s.note("p2's clock reads 90 s behind p1's, which vouches for the store's time: p2 is held");
    s.tick("08:58:35", 2);
    assert!(
        s.trace().contains("START sync r1"),
        "held, p2 claims 09:00 on the store's time:\n{}",
        s.trace()
    );
    s.note("the answer to that start is lost: p2 never learns of r1 and does not renew it");
    let silent_tick = |s: &mut Story, wall: &str| {
        let now = s.now_of(ProcessId(2), wall);
        let event = Event::Tick {
            process: ProcessId(2),
            held: vec![],
        };
        s.send_now(now, wall, "p2 ticks, not knowing r1", event);
    };
    s.tick("09:00:35", 1);
    s.wall_set(2, "2m", false);
    s.note("p2's clock is set right and a little fast: 35 s ahead, within clock_jump");
    silent_tick(&mut s, "09:01:15");
    let trace = s.trace();
    assert!(
        trace.contains("r1 lost"),
        "r1's lease ran to 09:01:05 (its start and a lease): a clock coming back from a \
         hold is no release, so nothing moves the lease on and p2's tick at 09:01:15 finds \
         it lapsed:\n{trace}"
    );
    insta::assert_snapshot!(trace);
}

#[test]
fn a_held_clock_set_a_day_on_is_a_new_claim_and_is_not_released_at_once() {
    let mut s = p2_set_100s_ahead();
    s.note(
        "p2's clock runs 100 s ahead: held, and p1's sane clock, less than two clock_jumps \
         behind it, does not contradict it",
    );
    s.tick("09:00:35", 1);
    s.tick("09:02:16", 2);
    s.tick("09:01:05", 1);
    s.tick("09:02:46", 2);
    s.wall_set(2, "1d", false);
    s.note("p2's clock is set a day on, after two ticks held");
    s.tick(&next_day("09:03:16"), 2);
    s.tick("09:01:35", 1);
    s.tick(&next_day("09:03:46"), 2);
    let trace = s.trace();
    assert!(
        !trace.contains("released,"),
        "a day ahead is a claim no one has had the chance to contradict: its solitude starts \
         again, and p1 contradicts it at its next tick\n{trace}"
    );
    let clock = s.state.clock().expect("a store clock");
    assert!(
        clock < at("09:05:00"),
        "the store's clock stays on p1's time: {clock}\n{trace}"
    );
    insta::assert_snapshot!(trace);
}

/// An hourly job, p1 and p2 started and ticked once on true time, then p2's clock set
/// 100 s ahead: over `clock_jump`, under the two that let p1 contradict it.
fn p2_set_100s_ahead() -> Story {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1h")));
    s.start("08:59:30", 1);
    s.start("08:59:31", 2);
    s.tick("09:00:05", 1);
    s.tick("09:00:06", 2);
    s.wall_set(2, "100s", false);
    s
}

/// `clock` on the day after the stories' day.
fn next_day(clock: &str) -> String {
    format!("2025-06-03 {clock}")
}

#[test]
fn a_held_clock_moved_by_exactly_clock_jump_keeps_its_two_ticks() {
    let mut s = p2_set_100s_ahead();
    s.tick("09:02:16", 2);
    s.wall_set(2, "60s", false);
    s.note("set on by exactly clock_jump while held: the same claim, measured again");
    s.tick("09:03:46", 2);
    s.tick("09:04:16", 2);
    let trace = s.trace();
    assert!(
        trace.contains("CLOCK p2: released,"),
        "a lead that moved by clock_jump, no more, keeps the solitude begun at 09:00:36: \
         p2 is released two ticks after it\n{trace}"
    );
}

#[test]
fn while_a_new_incarnation_waits_for_its_clock_the_others_show_themselves_once_a_tick() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.start("09:20:20", 2);
    s.tick("09:20:25", 2);
    s.note("p2 is new and its clock reads 09:20 at 09:00: it waits to be judged");
    assert!(
        s.state
            .process(ProcessId(2))
            .is_some_and(|r| r.waits_for_clock()),
        "{}",
        s.trace()
    );
    let p1 = ProcessId(1);
    assert_eq!(
        s.state.process(p1).map(|r| r.last_wall()),
        Some(at("09:00:05")),
        "the store's record of p1's wall clock is from its last tick"
    );
    assert_eq!(
        s.state.next_wake_for(p1),
        Some(at("09:00:35")),
        "p1's next work is at 10:00, but while p2 waits p1 shows itself a tick after it \
         last spoke, so p2 is judged by a live clock, not released as if alone\n{}",
        s.trace()
    );
    s.tick("09:00:35", 1);
    assert!(
        s.state
            .process(ProcessId(2))
            .is_some_and(|r| !r.waits_for_clock()),
        "p1 spoke: p2 is held to the store's time, no longer waiting\n{}",
        s.trace()
    );
}

/// `clock_jump` is the most a wall clock may move apart from the monotonic clock between
/// two events and still be taken as running: set forward by exactly that much, nothing is
/// told; by a millisecond more, the gap is told `clock_forward`.
#[test]
fn a_wall_clock_set_forward_by_exactly_clock_jump_is_no_gap_and_a_millisecond_more_is_one() {
    let mut s = Story::new();
    s.define("08:59", job("sync", every("1h")));
    s.start("08:59:30", 1);
    s.tick("09:00:05", 1);
    s.finish("09:00:10", 1, Outcome::Ok);
    s.wall_set(1, "60s", false);
    s.tick("09:00:40", 1);
    assert_eq!(gaps(&s.last), [], "exactly clock_jump: no gap");
    s.wall_set(1, "60001ms", false);
    s.tick("09:01:10", 1);
    assert_eq!(
        gaps(&s.last).first(),
        Some(&ClockGapKind::ClockForward),
        "a millisecond past clock_jump"
    );
}
