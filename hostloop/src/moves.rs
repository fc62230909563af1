//! Moving a job to the partition its definition now routes to, the same in the daemon and
//! in the simulator: one transaction that holds both partitions (locked in partition
//! order, so two moves the other way round cannot deadlock) takes the job's whole record
//! out of one state (`MoveOut`), puts it into the other (`MoveIn`) and applies the new
//! definition there (`Upsert`).
//!
//! A job with an open run waits: run ids and fences are counters of the state that made
//! them, so the run cannot go along. Its new definition is not applied meanwhile either
//! (a new concurrency key would count its next run in a lane of the wrong partition, and a
//! cap is decided inside one state); the host keeps it and asks again when the run has
//! settled ([`Relocated::Waits`]).

use duetime::{Actor, Effect, Event, JobDef, Now, Refusal, RunId, State};

/// How a move went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relocated {
    /// The job is in the other state now, under its new definition.
    Moved,
    /// A run of it is open (or parked awaiting approval): nothing changed; ask again once
    /// it has settled.
    Waits {
        /// The open run.
        run: RunId,
    },
    /// The job is not in the state it was looked for in.
    NotFound,
    /// The other state refused the record or the definition: the caller must abort the
    /// transaction (the record was put back where it was, so a host whose store cannot
    /// abort loses nothing either).
    Refused(Refusal),
}

/// Moves `def`'s job from `from` to `to` and applies `def` there, appending each state's
/// effects (journal lines to write with each partition, then what to carry out after the
/// commit) to `from_effects` and `to_effects`.
pub fn relocate(
    from: &mut State,
    to: &mut State,
    def: &JobDef,
    now: Now,
    actor: &Actor,
    from_effects: &mut Vec<Effect>,
    to_effects: &mut Vec<Effect>,
) -> Relocated {
    let mark = from_effects.len();
    let out = Event::MoveOut {
        job: def.name.clone(),
        actor: actor.clone(),
    };
    from.step(now, out, from_effects);
    let record = match answer(&from_effects[mark..]) {
        Err(Refusal::InFlight { run }) | Err(Refusal::AwaitingApproval { run, .. }) => {
            return Relocated::Waits { run }
        }
        Err(_) => return Relocated::NotFound,
        Ok(()) => handed_over(&mut from_effects[mark..]).expect("an accepted move_out hands over"),
    };
    let mark_to = to_effects.len();
    let put = Event::MoveIn {
        record: record.clone(),
        actor: actor.clone(),
    };
    to.step(now, put, to_effects);
    if let Err(refusal) = answer(&to_effects[mark_to..]) {
        let back = Event::MoveIn {
            record,
            actor: actor.clone(),
        };
        from.step(now, back, from_effects);
        return Relocated::Refused(refusal);
    }
    let mark_def = to_effects.len();
    let upsert = Event::Upsert {
        def: Box::new(def.clone()),
        actor: actor.clone(),
    };
    to.step(now, upsert, to_effects);
    match answer(&to_effects[mark_def..]) {
        Ok(()) => Relocated::Moved,
        Err(refusal) => Relocated::Refused(refusal),
    }
}

/// Moves a chain's jobs that live in `from` (`defs`: each under the definition it takes in
/// `to`, upstreams before their downstreams, as [`Chains::members`](crate::Chains::members)
/// lists them) to `to`, all of them, in the one transaction the caller holds over both
/// states: a downstream is never apart from its upstream, so none of its due times is
/// skipped for an upstream that only moved. While any of them has a run open, none moves
/// ([`Relocated::Waits`] names the first such run). On anything but [`Relocated::Moved`]
/// after a job has moved, the caller must abort the transaction.
pub fn relocate_chain(
    from: &mut State,
    to: &mut State,
    defs: &[JobDef],
    now: Now,
    actor: &Actor,
    from_effects: &mut Vec<Effect>,
    to_effects: &mut Vec<Effect>,
) -> Relocated {
    for def in defs {
        let record = from
            .seq_of_name(def.name.as_str())
            .and_then(|seq| from.record(seq));
        match record {
            None => return Relocated::NotFound,
            Some(r) => {
                if let Some(run) = r.run() {
                    return Relocated::Waits { run: run.id() };
                }
            }
        }
    }
    for def in defs {
        let moved = relocate(from, to, def, now, actor, from_effects, to_effects);
        if moved != Relocated::Moved {
            return moved;
        }
    }
    Relocated::Moved
}

/// The answer of the command whose effects these are.
fn answer(effects: &[Effect]) -> Result<(), Refusal> {
    match effects.iter().rev().find_map(|e| match e {
        Effect::Reply { result, .. } => Some(result),
        _ => None,
    }) {
        Some(Err(refusal)) => Err(refusal.clone()),
        _ => Ok(()),
    }
}

/// The record a `MoveOut` handed over, taken out of its effects (the record goes into
/// the other state, not into the journal).
fn handed_over(effects: &mut [Effect]) -> Option<Box<duetime::JobRecord>> {
    effects.iter().find_map(|e| match e {
        Effect::Handover(record) => Some(record.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at, name};
    use duetime::{Config, ProcessId, Schedule};

    fn def(key: Option<&str>) -> JobDef {
        let schedule = Schedule::every("1m".parse().unwrap(), "0s".parse().unwrap()).unwrap();
        let mut def = JobDef::new(name("report"), schedule);
        def.concurrency_key = key.map(str::to_string);
        def
    }

    fn upsert(state: &mut State, now: Now, def: JobDef) {
        let mut effects = Vec::new();
        let actor = Actor::new("setup");
        let event = Event::Upsert {
            def: Box::new(def),
            actor,
        };
        state.step(now, event, &mut effects);
    }

    #[test]
    fn a_job_moves_whole_and_takes_its_new_definition_in_the_other_state() {
        let (mut a, mut b) = (State::new(Config::default()), State::new(Config::default()));
        let t0 = at("2026-01-01T00:00:00Z");
        upsert(&mut a, t0, def(None));
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let new = def(Some("reports"));
        let moved = relocate(
            &mut a,
            &mut b,
            &new,
            t0,
            &Actor::new("ops"),
            &mut ea,
            &mut eb,
        );
        assert_eq!(moved, Relocated::Moved);
        assert!(a.seq_of_name("report").is_none());
        let seq = b.seq_of_name("report").expect("in b");
        let record = b.record(seq).unwrap();
        assert_eq!(record.def().concurrency_key.as_deref(), Some("reports"));
    }

    #[test]
    fn a_job_with_a_run_open_waits_and_nothing_changes() {
        let (mut a, mut b) = (State::new(Config::default()), State::new(Config::default()));
        let t0 = at("2026-01-01T00:00:00Z");
        upsert(&mut a, t0, def(None));
        let mut effects = Vec::new();
        let p = ProcessId(1);
        a.step(t0, Event::ProcessStarted { process: p }, &mut effects);
        let due = at("2026-01-01T00:01:00Z");
        a.step(
            due,
            Event::Tick {
                process: p,
                held: vec![],
            },
            &mut effects,
        );
        let before = a.clone();
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let new = def(Some("reports"));
        let moved = relocate(
            &mut a,
            &mut b,
            &new,
            due,
            &Actor::new("ops"),
            &mut ea,
            &mut eb,
        );
        assert!(matches!(moved, Relocated::Waits { .. }), "{moved:?}");
        assert_eq!(a, before, "a refused move changes nothing");
        assert!(b.seq_of_name("report").is_none());
    }

    fn step(state: &mut State, now: Now, event: Event) -> Vec<Effect> {
        let mut effects = Vec::new();
        state.step(now, event, &mut effects);
        effects
    }

    fn tick(state: &mut State, now: Now, p: ProcessId) -> Vec<Effect> {
        let held = vec![];
        step(state, now, Event::Tick { process: p, held })
    }

    /// The runs `effects` start, by job and first due time.
    fn starts(effects: &[Effect]) -> Vec<(String, duetime::Timestamp)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Do(duetime::Action::Start(s)) => Some((s.job.to_string(), s.covers?.from)),
                _ => None,
            })
            .collect()
    }

    /// Whether `effects` skip a due time for an upstream.
    fn skips_for_an_upstream(effects: &[Effect]) -> bool {
        effects.iter().any(|e| {
            matches!(e, Effect::Journal(r) if matches!(
                r.entry,
                duetime::Entry::History(duetime::History::UpstreamNotOk { .. })
            ))
        })
    }

    /// extract → load, every minute, due times required, defined in `state` at `t0`.
    fn extract_and_load(state: &mut State, t0: Now) -> (JobDef, JobDef) {
        let mut extract = def(None);
        extract.name = name("extract");
        extract.missed = duetime::MissedRule::Required;
        let mut load = extract.clone();
        load.name = name("load");
        load.after = vec![name("extract")];
        upsert(state, t0, extract.clone());
        upsert(state, t0, load.clone());
        (extract, load)
    }

    /// extract → load, every minute, due times required: extract is paused, so its 00:01
    /// and load's wait.
    /// The chain moves as one (a key given to extract): on the way, load must not hear
    /// extract as gone (it moved, it was not removed), and nothing is decided before both
    /// are in; there, extract resumed runs 00:01 and load runs it after.
    #[test]
    fn a_chain_moves_whole_and_its_downstream_loses_no_due_time_on_the_way() {
        let (mut a, mut b) = (State::new(Config::default()), State::new(Config::default()));
        let t0 = at("2026-01-01T00:00:00Z");
        let (mut extract, load) = extract_and_load(&mut a, t0);
        let ops = Actor::new("ops");
        let note = String::new();
        let pause = Event::Pause {
            job: name("extract"),
            actor: ops.clone(),
            note,
        };
        step(&mut a, t0, pause);
        let p = ProcessId(1);
        step(&mut a, t0, Event::ProcessStarted { process: p });
        let owed = at("2026-01-01T00:01:30Z");
        assert!(starts(&tick(&mut a, owed, p)).is_empty(), "both wait");

        extract.concurrency_key = Some("etl".into());
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let chain = [extract, load];
        let moved = relocate_chain(&mut a, &mut b, &chain, owed, &ops, &mut ea, &mut eb);
        assert_eq!(moved, Relocated::Moved);
        assert!(a.seq_of_name("extract").is_none() && a.seq_of_name("load").is_none());
        assert!(
            !skips_for_an_upstream(&ea),
            "load heard extract as gone: {ea:?}"
        );
        assert!(!skips_for_an_upstream(&eb), "decided on the way: {eb:?}");

        let q = ProcessId(2);
        step(&mut b, owed, Event::ProcessStarted { process: q });
        let resume = Event::Resume {
            job: name("extract"),
            actor: ops,
        };
        step(&mut b, owed, resume);
        let later = at("2026-01-01T00:01:40Z");
        let started = tick(&mut b, later, q);
        let minute = at("2026-01-01T00:01:00Z").wall;
        assert_eq!(starts(&started), [("extract".to_string(), minute)]);
        let run = started.iter().find_map(|e| match e {
            Effect::Do(duetime::Action::Start(s)) => Some((s.run, s.fence)),
            _ => None,
        });
        let (run, fence) = run.expect("a start");
        let done = Event::RunFinished {
            process: q,
            job: name("extract"),
            run,
            fence,
            outcome: duetime::Outcome::Ok,
        };
        let then = step(&mut b, at("2026-01-01T00:01:45Z"), done);
        assert_eq!(starts(&then), [("load".to_string(), minute)]);
    }

    /// While a run of any job of the chain is open, none of it moves.
    #[test]
    fn a_chain_with_a_run_open_waits_whole() {
        let (mut a, mut b) = (State::new(Config::default()), State::new(Config::default()));
        let t0 = at("2026-01-01T00:00:00Z");
        let (extract, load) = extract_and_load(&mut a, t0);
        let p = ProcessId(1);
        step(&mut a, t0, Event::ProcessStarted { process: p });
        let due = at("2026-01-01T00:01:00Z");
        assert_eq!(starts(&tick(&mut a, due, p)).len(), 1, "extract runs");
        let before = a.clone();
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let chain = [extract, load];
        let ops = Actor::new("ops");
        let moved = relocate_chain(&mut a, &mut b, &chain, due, &ops, &mut ea, &mut eb);
        assert!(matches!(moved, Relocated::Waits { .. }), "{moved:?}");
        assert_eq!(a, before, "nothing moved");
        assert!(b.seq_of_name("extract").is_none() && b.seq_of_name("load").is_none());
    }

    #[test]
    fn a_name_taken_in_the_other_state_puts_the_record_back() {
        let (mut a, mut b) = (State::new(Config::default()), State::new(Config::default()));
        let t0 = at("2026-01-01T00:00:00Z");
        upsert(&mut a, t0, def(None));
        upsert(&mut b, t0, def(None));
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let moved = relocate(
            &mut a,
            &mut b,
            &def(Some("k")),
            t0,
            &Actor::new("ops"),
            &mut ea,
            &mut eb,
        );
        assert!(matches!(
            moved,
            Relocated::Refused(Refusal::NameTaken { .. })
        ));
        assert!(a.seq_of_name("report").is_some(), "put back");
    }
}
