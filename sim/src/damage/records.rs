//! Damages of rows: their numbers and names, and one record on its own (what
//! `check_record` and the counts check hold it to).

use crate::check::Probe;
use duetime::{
    Covers, Incident, Inconsistency, JobSeq, MissCause, OneShotEnd, RunId, Schedule, Timestamp,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::{
    act, counter, decode, encode, globals_with, other_name, refused, renamed_copy, seg, segs,
    Expect, Made, Row, Site, MAX_OWED_SEGMENTS, MISSED_HOURS, REQUIRED_BATCH,
};

/// A row given twice under one sequence number.
pub(super) fn sequence_twice(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let expect = refused(Inconsistency::SequenceTwice { seq: row.seq });
    let mut made = Made::row(
        Probe::DamageRefusedOneSequenceNumberTwice,
        site,
        row.seq,
        row.rec.clone(),
        expect,
    );
    made.twice = true;
    Ok(Some(made))
}

/// A second row with a row's name, under a new sequence number (the counter moved past
/// it); written with the first row or beside it.
pub(super) fn name_twice(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let next_seq = counter(site.globals, "next_seq");
    let copy = row.with(|r| {
        r.remove("activity");
    })?;
    let g = globals_with(site.globals, |g| g["next_seq"] = json!(next_seq + 1))?;
    let expect = refused(Inconsistency::NameTwice { job: row.name() });
    let mut made = Made::globals(Probe::DamageRefusedTwoRowsWithOneName, g, expect);
    made.rows.push((JobSeq(next_seq), copy));
    if rng.gen_bool(0.5) {
        made.rows.push((row.seq, row.rec.clone()));
    }
    Ok(Some(made))
}

/// A new job's row at the sequence counter itself.
pub(super) fn beyond_sequence_counter(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let seq = JobSeq(counter(site.globals, "next_seq"));
    let copy = renamed_copy(row, site.rows)?;
    let job = copy.def().name.clone();
    let expect = refused(Inconsistency::SequenceBeyondCounter { job, seq });
    Ok(Some(Made::row(
        Probe::DamageRefusedARowAtTheSequenceCounter,
        site,
        seq,
        copy,
        expect,
    )))
}

/// Its twin at the bound: the new row just under the counter, moved past it.
pub(super) fn new_row_at_bound(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let seq = counter(site.globals, "next_seq");
    let copy = renamed_copy(row, site.rows)?;
    let g = globals_with(site.globals, |g| g["next_seq"] = json!(seq + 1))?;
    let mut made = Made::globals(
        Probe::BoundAcceptedANewRowJustUnderTheSequenceCounter,
        g,
        Expect::Accepted,
    );
    made.rows.push((JobSeq(seq), copy));
    Ok(Some(made))
}

/// A row given another job's open run: two jobs hold one run. The other job's row is
/// written too, or left as the copy holds it.
pub(super) fn run_open_twice(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() || row.act("run").is_some() || row.act("retry").is_some() {
        return Ok(None);
    }
    if row.act("waiting").is_some() {
        return Ok(None);
    }
    let Some((&other, holder)) = site
        .rows
        .iter()
        .find(|(s, r)| **s != row.seq && r.run().is_some())
    else {
        return Ok(None);
    };
    let run = encode(holder)["activity"]["run"].clone();
    let id = holder.run().expect("found by its run").id();
    let rec = row.with(|r| {
        act(r).insert("run".into(), run);
    })?;
    let expect = refused(Inconsistency::RunOpenTwice { run: id });
    let mut made = Made::row(
        Probe::DamageRefusedTwoJobsHoldingOneOpenRun,
        site,
        row.seq,
        rec,
        expect,
    );
    if rng.gen_bool(0.5) {
        made.rows.push((other, holder.clone()));
    }
    Ok(Some(made))
}

/// An incident listed twice.
pub(super) fn incident_twice(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let incident = row
        .rec
        .incidents()
        .first()
        .copied()
        .unwrap_or(Incident::Stalled);
    let rec = row.with(|r| {
        let list = r.entry("incidents").or_insert_with(|| json!([]));
        let list = list.as_array_mut().expect("a list");
        if list.is_empty() {
            list.push(encode(&incident));
        }
        list.push(encode(&incident));
    })?;
    let expect = refused(Inconsistency::IncidentRepeated {
        job: row.name(),
        incident,
    });
    Ok(Some(Made::row(
        Probe::DamageRefusedAnIncidentListedTwice,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// `watched_since` without the dead-man's switch, or the switch without it.
pub(super) fn watch_out_of_step(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let switched = row.rec.def().expect_success_within.is_some();
    let frontier = row.frontier();
    let rec = row.with(|r| {
        if switched {
            r.remove("watched_since");
        } else {
            r.insert("watched_since".into(), json!(frontier));
        }
    })?;
    let expect = refused(Inconsistency::WatchOutOfStep { job: row.name() });
    let probe = if switched {
        Probe::DamageRefusedTheSwitchWithoutWatchedSince
    } else {
        Probe::DamageRefusedWatchedSinceWithoutTheSwitch
    };
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// A one-shot's end on a job that is not a one-shot.
pub(super) fn ended_not_one_shot(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if matches!(row.rec.def().schedule, Schedule::At { .. }) {
        return Ok(None);
    }
    let end = OneShotEnd::Completed {
        run: RunId(1),
        at: row.rec.frontier(),
    };
    let rec = row.with(|r| {
        r.insert("ended".into(), encode(&end));
    })?;
    let expect = refused(Inconsistency::EndedNotOneShot {
        job: row.name(),
        end,
    });
    Ok(Some(Made::row(
        Probe::DamageRefusedAnEndOnAJobThatIsNotAOneShot,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// A one-shot marked ended before its instant was looked at.
pub(super) fn ended_unsettled(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let Schedule::At { instant } = row.rec.def().schedule else {
        return Ok(None);
    };
    if row.rec.ended().is_some() || row.rec.frontier() >= instant {
        return Ok(None);
    }
    let end = OneShotEnd::Expired {
        cause: MissCause::Down,
        at: row.rec.frontier(),
    };
    let rec = row.with(|r| {
        r.insert("ended".into(), encode(&end));
    })?;
    let expect = refused(Inconsistency::EndedUnsettled {
        job: row.name(),
        end,
        instant,
    });
    Ok(Some(Made::row(
        Probe::DamageRefusedAOneShotEndedBeforeItsInstant,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// One owed segment more than a record keeps.
pub(super) fn too_many_owed(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let count = MAX_OWED_SEGMENTS + 1;
    let end = row.frontier();
    let rec = row.with(|r| {
        act(r).insert("pending".into(), Value::Array(segs(count, end)));
    })?;
    let expect = refused(Inconsistency::TooManyOwedSegments {
        job: row.name(),
        count,
    });
    Ok(Some(Made::row(
        Probe::DamageRefused33OwedSegments,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// Its twin at the bound: exactly as many as a record keeps, in order, the last on the
/// frontier itself (each a millisecond after the one before: the order's bound too).
pub(super) fn owed_at_bound(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let end = row.frontier();
    let rec = row.with(|r| {
        act(r).insert("pending".into(), Value::Array(segs(MAX_OWED_SEGMENTS, end)));
    })?;
    Ok(Some(Made::row(
        Probe::BoundAccepted32OwedSegmentsUpToTheFrontier,
        site,
        row.seq,
        rec,
        Expect::Accepted,
    )))
}

/// Manual runs asked in the last hour: one over the config's cap, or (`at_bound`) exactly
/// the cap, which a load takes.
pub(super) fn manual_over_cap(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let cap = site.globals.config().manual_per_hour as usize;
    let at_bound = rng.gen_bool(0.5);
    let n = if at_bound { cap } else { cap + 1 };
    let times = vec![json!(row.frontier()); n];
    let rec = row.with(|r| {
        act(r).insert("manual_recent".into(), Value::Array(times));
    })?;
    let probes = (
        Probe::BoundAcceptedManualRunsAtTheHourlyCap,
        Probe::DamageRefusedManualRunsOverTheHourlyCap,
    );
    let over = Inconsistency::ManualHistoryOverCap { job: row.name() };
    Ok(Some(at_bound_or_past(
        site, row, rec, at_bound, probes, over,
    )))
}

/// Hourly missed counts: one more than a day and its hour (26), or (`at_bound`) exactly
/// 25, which a load takes.
pub(super) fn missed_over_day(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let at_bound = rng.gen_bool(0.5);
    let n = if at_bound {
        MISSED_HOURS
    } else {
        MISSED_HOURS + 1
    };
    let hour = 3_600_000;
    let start = row.frontier() / hour * hour - (n as i64 - 1) * hour;
    let counts: Vec<Value> = (0..n)
        .map(|i| json!([start + i as i64 * hour, 1]))
        .collect();
    let rec = row.with(|r| {
        act(r).insert("missed_recent".into(), Value::Array(counts));
    })?;
    let probes = (
        Probe::BoundAccepted25HourlyMissedCounts,
        Probe::DamageRefused26HourlyMissedCounts,
    );
    let over = Inconsistency::MissedHistoryOverDay { job: row.name() };
    Ok(Some(at_bound_or_past(
        site, row, rec, at_bound, probes, over,
    )))
}

/// A row holding exactly a bound (taken, probe `probes.0`) or one past it (refused with
/// `over`, probe `probes.1`).
fn at_bound_or_past(
    site: &Site,
    row: &Row,
    rec: duetime::JobRecord,
    at_bound: bool,
    probes: (Probe, Probe),
    over: Inconsistency,
) -> Made {
    if at_bound {
        Made::row(probes.0, site, row.seq, rec, Expect::Accepted)
    } else {
        Made::row(probes.1, site, row.seq, rec, refused(over))
    }
}

/// Owed segments out of order: one counting nothing, one ending before it starts, one
/// starting on the last one's end, or two swapped.
pub(super) fn owed_out_of_order(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let f = row.frontier();
    let tag = Some(f + 86_400_000);
    let down = MissCause::Down;
    let (probe, pending) = match rng.gen_range(0..4) {
        0 => (
            Probe::DamageRefusedAnOwedSegmentCountingNothing,
            vec![seg(f, f, 0, down, tag)],
        ),
        1 => (
            Probe::DamageRefusedAnOwedSegmentEndingBeforeItStarts,
            vec![seg(f, f - 1, 1, down, tag)],
        ),
        2 => (
            Probe::DamageRefusedAnOwedSegmentStartingOnTheLastOnesEnd,
            vec![seg(f - 1, f - 1, 1, down, tag), seg(f - 1, f, 1, down, tag)],
        ),
        _ => (
            Probe::DamageRefusedOwedSegmentsSwapped,
            vec![seg(f, f, 1, down, tag), seg(f - 1, f - 1, 1, down, tag)],
        ),
    };
    let rec = row.with(|r| {
        act(r).insert("pending".into(), Value::Array(pending));
    })?;
    let expect = refused(Inconsistency::OwedOutOfOrder { job: row.name() });
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// An owed due time a millisecond past the frontier.
pub(super) fn owed_beyond_frontier(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let end = row.frontier() + 1;
    let rec = row.with(|r| {
        act(r).insert("pending".into(), Value::Array(segs(1, end)));
    })?;
    let expect = refused(Inconsistency::OwedBeyondFrontier { job: row.name() });
    Ok(Some(Made::row(
        Probe::DamageRefusedAnOwedDueTimePastTheFrontier,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// A cover of one due time on the frontier, in its stored form.
fn frontier_cover(row: &Row) -> Value {
    let f = row.frontier();
    json!({ "covers": { "from": f, "to": f, "count": 1 }, "late": null })
}

/// An open run and a waiting retry at once.
pub(super) fn run_and_retry(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let Some(run) = row.act("run").filter(|_| row.plain()) else {
        return Ok(None);
    };
    let cover = match run.get("cover").filter(|c| !c.is_null()) {
        Some(c) => c.clone(),
        None => frontier_cover(row),
    };
    let retry = json!({ "at": run["started"], "attempt": 2, "trigger": "retry", "cover": cover });
    row.unreadable(
        Probe::DamageRefusedARunAndARetryAtOnce,
        site,
        |r| {
            act(r).insert("retry".into(), retry);
        },
        "an open run and a retry at once",
    )
}

/// Waiting for room while a run is open.
pub(super) fn waits_while_busy(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() || row.act("run").is_none() || row.act("waiting").is_some() {
        return Ok(None);
    }
    let waiting = json!({ "since": row.frontier(), "reason": "lane_busy" });
    row.unreadable(
        Probe::DamageRefusedWaitingWhileARunIsOpen,
        site,
        |r| {
            act(r).insert("waiting".into(), waiting);
        },
        "waits for room while its run is open",
    )
}

/// A job marked unconfirmed that is not clean: without its held definition, or holding
/// it with a run open or a debt owed.
pub(super) fn unconfirmed_not_clean(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() || row.act("waiting").is_some() {
        return Ok(None);
    }
    let def = encode(row.rec.def());
    let has_run = row.act("run").is_some();
    let free = !has_run && row.act("retry").is_none();
    // Without its definition, or with a run open: no phase holds it, reading refuses it.
    // Owing due times: the state's invariants refuse it.
    let (probe, held, owe, says) = match rng.gen_range(0..3) {
        0 if free && row.act("held").is_none() => (
            Probe::DamageRefusedUnconfirmedWithoutItsDefinition,
            false,
            false,
            Some("has no held definition"),
        ),
        1 if has_run => (
            Probe::DamageRefusedUnconfirmedWithARunOpen,
            true,
            false,
            Some("has a run, a retry or a wait for room"),
        ),
        2 if free => (
            Probe::DamageRefusedUnconfirmedOwingDueTimes,
            true,
            true,
            None,
        ),
        _ => return Ok(None),
    };
    let f = row.frontier();
    let damage = |r: &mut Map<String, Value>| {
        let a = act(r);
        a.insert("unconfirmed".into(), json!(true));
        if held && a.get("held").is_none_or(Value::is_null) {
            a.insert("held".into(), def);
        }
        if owe
            && a.get("pending")
                .is_none_or(|p| p.as_array().is_none_or(Vec::is_empty))
        {
            a.insert("pending".into(), Value::Array(segs(1, f)));
        }
    };
    if let Some(says) = says {
        return row.unreadable(probe, site, damage, says);
    }
    let rec = row.with(damage)?;
    let expect = refused(Inconsistency::UnconfirmedNotClean { job: row.name() });
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// A held definition that names another job.
pub(super) fn holds_other_definition(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let held = other_name(&row.name(), site.rows);
    let mut def = match row.act("held") {
        Some(h) => h.clone(),
        None => encode(row.rec.def()),
    };
    def["name"] = encode(&held);
    let rec = row.with(|r| {
        act(r).insert("held".into(), def);
    })?;
    let expect = refused(Inconsistency::HoldsOtherDefinition {
        job: row.name(),
        held,
    });
    Ok(Some(Made::row(
        Probe::DamageRefusedAHeldDefinitionOfAnotherJob,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// What a run or a retry covers made empty: counting nothing, or ending before it starts.
pub(super) fn empty_cover(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let field = ["run", "retry"]
        .into_iter()
        .find(|f| row.act(f).is_some_and(|x| !x["cover"].is_null()));
    let Some(field) = field else { return Ok(None) };
    let covers: Covers = decode(
        row.act(field).expect("found")["cover"]["covers"].clone(),
        "cover",
    )?;
    let (probe, covers) = if rng.gen_bool(0.5) {
        (
            Probe::DamageRefusedACoverCountingNothing,
            Covers { count: 0, ..covers },
        )
    } else {
        let from = Timestamp::from_millis(covers.to.as_millis() + 1);
        (
            Probe::DamageRefusedACoverEndingBeforeItStarts,
            Covers { from, ..covers },
        )
    };
    let rec = row.with(|r| {
        act(r)[field]["cover"]["covers"] = encode(&covers);
    })?;
    let expect = refused(Inconsistency::EmptyCover {
        job: row.name(),
        covers,
    });
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// An open run whose id or fence is exactly the counter's next: never handed out.
pub(super) fn run_ahead_of_counters(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let Some(run) = row.rec.run().filter(|_| row.plain()) else {
        return Ok(None);
    };
    let (field, value, id, probe) = if rng.gen_bool(0.5) {
        let next = counter(site.globals, "next_run");
        (
            "id",
            next,
            RunId(next),
            Probe::DamageRefusedAnOpenRunsIdAtTheCounter,
        )
    } else {
        let next = counter(site.globals, "next_fence");
        (
            "fence",
            next,
            run.id(),
            Probe::DamageRefusedAnOpenRunsFenceAtTheCounter,
        )
    };
    let rec = row.with(|r| {
        act(r)["run"][field] = json!(value);
    })?;
    let expect = refused(Inconsistency::RunAheadOfCounters {
        job: row.name(),
        run: id,
    });
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// Its twin at the bound: the fence one under the counter, which a load takes.
pub(super) fn run_fence_at_bound(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if row.rec.run().is_none() || !row.plain() {
        return Ok(None);
    }
    let fence = counter(site.globals, "next_fence").saturating_sub(1);
    let rec = row.with(|r| {
        act(r)["run"]["fence"] = json!(fence);
    })?;
    Ok(Some(Made::row(
        Probe::BoundAcceptedAnOpenRunsFenceJustUnderTheCounter,
        site,
        row.seq,
        rec,
        Expect::Accepted,
    )))
}

/// A parked run with a timeout's cancel sent.
pub(super) fn parked_with_cancel(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let Some(run) = row.rec.run().filter(|_| row.plain()) else {
        return Ok(None);
    };
    let (started, until) = (run.started().as_millis(), run.lease_until().as_millis());
    row.unreadable(
        Probe::DamageRefusedAParkedRunWithACancelSent,
        site,
        |r| {
            let run = &mut act(r)["run"];
            if run["parked"].is_null() {
                run["parked"] = json!(until + 3_600_000);
            }
            if run["cancel_sent"].is_null() {
                run["cancel_sent"] = json!(started);
            }
        },
        "is parked and has a cancel sent",
    )
}

/// An owed segment of the current schedule counting one due time more than it holds (or,
/// for a row that owes nothing, two in one instant): the counts check holds every
/// untagged segment to its schedule.
pub(super) fn owed_miscounted(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let pending = row.pending();
    let (i, from, to, count) = match pending.iter().position(|o| o.get("schedule").is_none()) {
        Some(i) => {
            let o = &pending[i];
            let n = o["count"].as_u64().expect("a count") + 1;
            (i, o["from"].as_i64(), o["to"].as_i64(), n)
        }
        None if pending.is_empty() => (0, Some(row.frontier()), Some(row.frontier()), 2),
        None => return Ok(None),
    };
    let (Some(from), Some(to)) = (from, to) else {
        return Err("an owed segment's instants are not numbers".into());
    };
    let rec = row.with(|r| {
        let a = act(r);
        match a.get_mut("pending").and_then(Value::as_array_mut) {
            Some(list) if !list.is_empty() => list[i]["count"] = json!(count),
            _ => {
                a.insert(
                    "pending".into(),
                    json!([seg(from, to, count, MissCause::Down, None)]),
                );
            }
        }
    })?;
    let expect = refused(Inconsistency::OwedCountWrong {
        job: row.name(),
        from: Timestamp::from_millis(from),
        to: Timestamp::from_millis(to),
        count,
    });
    Ok(Some(Made::row(
        Probe::DamageRefusedAnOwedSegmentMiscounted,
        site,
        row.seq,
        rec,
        expect,
    )))
}

/// A segment of another schedule that is walked in pieces, miscounted: a buffered overlap
/// of two, or a catch-up one over a batch (`REQUIRED_BATCH + 1`), each claiming more than
/// its one instant holds.
pub(super) fn walked_owed_miscounted(
    site: &Site,
    row: &Row,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let f = row.frontier();
    let (probe, count, cause) = if rng.gen_bool(0.5) {
        (
            Probe::DamageRefusedABufferedOverlapOfTwoMiscounted,
            2,
            MissCause::Overlap,
        )
    } else {
        (
            Probe::DamageRefusedASegmentOverABatchMiscounted,
            REQUIRED_BATCH + 1,
            MissCause::Down,
        )
    };
    let rec = row.with(|r| {
        act(r).insert(
            "pending".into(),
            json!([seg(f, f, count, cause, Some(f + 86_400_000))]),
        );
    })?;
    let expect = refused(Inconsistency::OwedCountWrong {
        job: row.name(),
        from: row.rec.frontier(),
        to: row.rec.frontier(),
        count,
    });
    Ok(Some(Made::row(probe, site, row.seq, rec, expect)))
}

/// Their twins at the bound: segments of another schedule started whole are not held to
/// it (a catch-up of exactly a batch, a buffered overlap of one), so a load takes them
/// whatever they claim.
pub(super) fn unwalked_owed_at_bound(
    site: &Site,
    row: &Row,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    if !row.plain() {
        return Ok(None);
    }
    let f = row.frontier();
    let tag = Some(f + 86_400_000);
    let pending = json!([
        seg(f - 1, f - 1, REQUIRED_BATCH, MissCause::Down, tag),
        seg(f, f, 1, MissCause::Overlap, tag),
    ]);
    let rec = row.with(|r| {
        act(r).insert("pending".into(), pending);
    })?;
    Ok(Some(Made::row(
        Probe::BoundAcceptedOwedSegmentsStartedWholeNotWalked,
        site,
        row.seq,
        rec,
        Expect::Accepted,
    )))
}
