//! Damages of the globals: the format, the config, the owner lease, the counters.

use crate::check::Probe;
use duetime::{
    ConfigError, Duration, Fence, Globals, Inconsistency, JobRecord, JobSeq, LoadError, ProcessId,
    FORMAT_VERSION, MAX_GRACE, MIN_TICK,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::{counter, decode, encode, globals_with, refused, Expect, Made, Site};

/// A format newer than this build's: `NewerFormat`, before any other check.
pub(super) fn newer_format(site: &Site, _: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let found = FORMAT_VERSION + 1;
    let g = globals_with(site.globals, |g| g["format"] = json!(found))?;
    let expect = Expect::Refused(LoadError::NewerFormat {
        found,
        supported: FORMAT_VERSION,
    });
    Ok(Some(Made::globals(
        Probe::DamageRefusedANewerFormat,
        g,
        expect,
    )))
}

/// A config one past a bound: a tick a millisecond under `MIN_TICK`, a grace a
/// millisecond over `MAX_GRACE`, no runs per process.
pub(super) fn config_out_of_range(
    site: &Site,
    rng: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let ms = Duration::from_millis;
    let (probe, field, value, error) = match rng.gen_range(0..3) {
        0 => {
            let tick = ms(MIN_TICK.as_millis() - 1);
            let e = ConfigError::TickTooShort { tick };
            (
                Probe::DamageRefusedATickUnderTheMinimum,
                "tick",
                encode(&tick),
                e,
            )
        }
        1 => {
            let grace = ms(MAX_GRACE.as_millis() + 1);
            let e = ConfigError::GraceTooLong { grace };
            (
                Probe::DamageRefusedAGraceOverTheMaximum,
                "grace",
                encode(&grace),
                e,
            )
        }
        _ => (
            Probe::DamageRefusedNoRunsPerProcess,
            "max_runs_per_process",
            json!(0),
            ConfigError::NoRunsPerProcess,
        ),
    };
    let g = globals_with(site.globals, |g| g["config"][field] = value)?;
    let expect = refused(Inconsistency::Config(error));
    Ok(Some(Made::globals(probe, g, expect)))
}

/// A config exactly at a bound (a tick of `MIN_TICK`, a grace of `MAX_GRACE`, one run per
/// process): sane, so a load of the whole store takes it, but another than the copy's, so
/// `put_parts` refuses it (`ConfigChanged`: a store's config is fixed for its life).
pub(super) fn config_at_bound(site: &Site, rng: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let config = site.globals.config();
    let (field, value) = match rng.gen_range(0..3) {
        0 if config.tick != MIN_TICK => ("tick", encode(&MIN_TICK)),
        1 if config.grace != MAX_GRACE => ("grace", encode(&MAX_GRACE)),
        2 if config.max_runs_per_process != Some(1) => ("max_runs_per_process", json!(1)),
        _ => return Ok(None),
    };
    let g = globals_with(site.globals, |g| g["config"][field] = value)?;
    let mut made = Made::globals(
        Probe::BoundAcceptedAConfigAtItsBoundLoadedWholePutPartsChanged,
        g,
        Expect::Accepted,
    );
    made.put = refused(Inconsistency::ConfigChanged);
    made.whole = true;
    Ok(Some(made))
}

/// An owner lease where coordination is shared: the config switched to shared under the
/// lease, or a lease added to a shared store.
pub(super) fn owner_under_shared(site: &Site, _: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let g = site.globals;
    let (holder, fence) = match (g.owner(), g.config().coordination.is_shared()) {
        (Some(o), _) => (o.holder, o.fence),
        (None, true) => (ProcessId(1), Fence(1)),
        (None, false) => return Ok(None),
    };
    let damaged = globals_with(g, |j| {
        j["config"]
            .as_object_mut()
            .expect("a config")
            .remove("coordination");
        let owner = json!({ "holder": holder.0, "fence": fence.0, "until": 0 });
        j.insert("owner".into(), owner);
    })?;
    let expect = refused(Inconsistency::OwnerUnderShared { holder, fence });
    Ok(Some(Made::globals(
        Probe::DamageRefusedAnOwnerLeaseUnderSharedCoordination,
        damaged,
        expect,
    )))
}

/// The globals of a `single_owner` store with the owner lease set by `lease` from the
/// lease held (or, when none is, one made for a process that is not draining).
fn with_owner(
    site: &Site,
    lease: impl FnOnce(ProcessId, u64, &mut Map<String, Value>) -> Option<Expect>,
) -> Result<Option<(Globals, Expect)>, String> {
    let g = site.globals;
    if g.config().coordination.is_shared() {
        return Ok(None);
    }
    let holder = match g.owner() {
        Some(o) => o.holder,
        None => match g.processes().iter().find(|(_, p)| !p.draining()) {
            Some((&p, _)) => p,
            None => return Ok(None),
        },
    };
    let next_fence = counter(g, "next_fence");
    let mut json = encode(g);
    let fence = g
        .owner()
        .map_or(next_fence.saturating_sub(1), |o| o.fence.0);
    let until = g.owner().map_or(0, |o| o.until.as_millis());
    json["owner"] = json!({ "holder": holder.0, "fence": fence, "until": until });
    let obj = json.as_object_mut().expect("an object");
    let Some(expect) = lease(holder, next_fence, obj) else {
        return Ok(None);
    };
    Ok(Some((decode(json, "globals")?, expect)))
}

/// The owner lease's fence exactly at the fence counter: never handed out.
pub(super) fn owner_fence_ahead(site: &Site, _: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let made = with_owner(site, |_, next_fence, g| {
        g["owner"]["fence"] = json!(next_fence);
        Some(refused(Inconsistency::OwnerFenceAhead {
            fence: Fence(next_fence),
        }))
    })?;
    Ok(made.map(|(g, e)| Made::globals(Probe::DamageRefusedAnOwnerFenceAheadOfTheCounter, g, e)))
}

/// Its twin at the bound: the fence one under the counter, which a load takes.
pub(super) fn owner_fence_at_bound(
    site: &Site,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let made = with_owner(site, |_, next_fence, g| {
        g["owner"]["fence"] = json!(next_fence.checked_sub(1)?);
        Some(Expect::Accepted)
    })?;
    Ok(made.map(|(g, e)| Made::globals(Probe::BoundAcceptedAnOwnerFenceJustUnderTheCounter, g, e)))
}

/// The owner lease held by a process the store does not know.
pub(super) fn owner_holder_unknown(
    site: &Site,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let unknown = site
        .globals
        .processes()
        .keys()
        .last()
        .map_or(ProcessId(1), |p| ProcessId(p.0 + 1));
    let made = with_owner(site, |_, _, g| {
        g["owner"]["holder"] = json!(unknown.0);
        Some(refused(Inconsistency::OwnerHolderUnknown {
            holder: unknown,
        }))
    })?;
    Ok(made.map(|(g, e)| Made::globals(Probe::DamageRefusedAnOwnerUnknownToTheStore, g, e)))
}

/// The owner lease's holder marked draining (a drain gives the lease up).
pub(super) fn owner_holder_draining(
    site: &Site,
    _: &mut ChaCha8Rng,
) -> Result<Option<Made>, String> {
    let made = with_owner(site, |holder, _, g| {
        g["processes"][holder.0.to_string()]["draining"] = json!(true);
        Some(refused(Inconsistency::OwnerHolderDraining { holder }))
    })?;
    Ok(made.map(|(g, e)| Made::globals(Probe::DamageRefusedAnOwnerThatIsDraining, g, e)))
}

/// A counter moved back onto a row: the sequence counter onto a row's number, the run or
/// fence counter onto an open run's. What each load must answer follows from the order it
/// checks in (`expect_counters`).
pub(super) fn counters_behind(site: &Site, rng: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let runs: Vec<(u64, u64)> = site
        .rows
        .values()
        .filter_map(|r| r.run().map(|run| (run.id().0, run.fence().0)))
        .collect();
    let (field, value) = match rng.gen_range(0..3) {
        0 if !site.rows.is_empty() => {
            let seqs: Vec<JobSeq> = site.rows.keys().copied().collect();
            ("next_seq", seqs[rng.gen_range(0..seqs.len())].0)
        }
        1 if !runs.is_empty() => ("next_run", runs[rng.gen_range(0..runs.len())].0),
        2 if !runs.is_empty() => ("next_fence", runs[rng.gen_range(0..runs.len())].1),
        _ => return Ok(None),
    };
    let g = globals_with(site.globals, |g| g[field] = json!(value))?;
    let (put, load) = expect_counters(&g, site);
    let probe = match &put {
        Expect::Refused(LoadError::Inconsistent { what }) => match what {
            Inconsistency::CountersBehind { .. } => {
                Probe::DamageRefusedCountersBehindARowLeftAsItIs
            }
            Inconsistency::SequenceBeyondCounter { .. } => {
                Probe::DamageRefusedAWrittenRowBeyondTheSequenceCounter
            }
            Inconsistency::RunAheadOfCounters { .. } => {
                Probe::DamageRefusedAWrittenRunAheadOfTheCounters
            }
            _ => Probe::DamageRefusedAnOwnerFenceAheadOfTheCounter,
        },
        _ => Probe::DamageRefusedCountersBehindAccepted,
    };
    let mut made = Made::globals(probe, g, put);
    made.load = load;
    Ok(Some(made))
}

/// The counters moved back as far as they may go: just past every row's number and every
/// open run's id and fence (and the owner's fence), which both loads take (how a host puts
/// back what an aborted transaction did).
pub(super) fn counters_at_bound(site: &Site, _: &mut ChaCha8Rng) -> Result<Option<Made>, String> {
    let runs = || site.rows.values().filter_map(|r| r.run());
    let (Some(seq), Some(run)) = (site.rows.keys().last(), runs().map(|r| r.id().0).max()) else {
        return Ok(None);
    };
    let owner = site.globals.owner().map(|o| o.fence.0);
    let fence = runs()
        .map(|r| r.fence().0)
        .chain(owner)
        .max()
        .expect("a run");
    let g = globals_with(site.globals, |g| {
        g["next_seq"] = json!(seq.0 + 1);
        g["next_run"] = json!(run + 1);
        g["next_fence"] = json!(fence + 1);
    })?;
    Ok(Some(Made::globals(
        Probe::BoundAcceptedCountersJustPastEveryRow,
        g,
        Expect::Accepted,
    )))
}

/// What `put_parts` and `from_parts` must answer to globals `g` whose counters may lie
/// behind some rows, by the order each checks in: the owner's fence first (with the
/// globals); then `put_parts` checks each row written (its number, then its run), in
/// sequence order, then the rows it leaves as they are (`CountersBehind`); `from_parts`
/// checks every row's number, then every row's run.
fn expect_counters(g: &Globals, site: &Site) -> (Expect, Expect) {
    let (next_seq, next_run, next_fence) = (
        counter(g, "next_seq"),
        counter(g, "next_run"),
        counter(g, "next_fence"),
    );
    if let Some(o) = g.owner().filter(|o| o.fence.0 >= next_fence) {
        let e = refused(Inconsistency::OwnerFenceAhead { fence: o.fence });
        return (e.clone(), e);
    }
    let ahead = |r: &JobRecord| {
        r.run()
            .filter(|run| run.id().0 >= next_run || run.fence().0 >= next_fence)
            .map(|run| run.id())
    };
    let beyond = |seq: JobSeq, r: &JobRecord| {
        (seq.0 >= next_seq).then(|| Inconsistency::SequenceBeyondCounter {
            job: r.def().name.clone(),
            seq,
        })
    };
    let run_ahead = |r: &JobRecord| {
        ahead(r).map(|run| Inconsistency::RunAheadOfCounters {
            job: r.def().name.clone(),
            run,
        })
    };
    let written = site
        .changed
        .iter()
        .filter_map(|(s, r)| Some((*s, r.as_ref()?)));
    let put = written
        .map(|(s, r)| beyond(s, r).or_else(|| run_ahead(r)))
        .chain(
            site.rows
                .iter()
                .filter(|(s, _)| !site.changed.contains_key(s))
                .map(|(s, r)| {
                    (s.0 >= next_seq || ahead(r).is_some()).then(|| Inconsistency::CountersBehind {
                        job: r.def().name.clone(),
                    })
                }),
        )
        .flatten()
        .next();
    let load = site
        .rows
        .iter()
        .find_map(|(s, r)| beyond(*s, r))
        .or_else(|| site.rows.values().find_map(run_ahead));
    let answer = |i: Option<Inconsistency>| i.map_or(Expect::Accepted, refused);
    (answer(put), answer(load))
}
