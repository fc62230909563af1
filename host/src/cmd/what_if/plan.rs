//! What a run of `what-if` will replay, from its flags: the starting state (a store's, read
//! only, or a fresh one), the file's definitions, and the scenario (the span and the
//! windows, pauses, jumps and durations within it), every flag checked on the way.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use duetime::{Config, Duration, JobDef, State, Timestamp};
use duetime_host::store::{self, Store};

use super::flags::{Jump, PauseWindow, Window};
use super::Args;

/// The longest span replayed: ticks are stepped one by one.
const MAX_SPAN: Duration = Duration::from_days(366);
/// How long a run takes unless `--duration` says otherwise.
const DEFAULT_DURATION: Duration = Duration::from_secs(1);

/// Why there is nothing to replay.
pub(super) enum Refusal {
    /// A flag that cannot be taken, and why (exit 64).
    Usage(String),
    /// The jobs file or the store could not be read, already said (the exit code).
    Said(u8),
}

/// What the flags describe, checked.
#[derive(Clone)]
pub(super) struct Scenario {
    pub(super) from: Timestamp,
    pub(super) until: Timestamp,
    pub(super) down: Vec<Window>,
    pub(super) pauses: Vec<PauseWindow>,
    pub(super) jumps: Vec<Jump>,
    pub(super) durations: BTreeMap<String, Duration>,
}

impl Scenario {
    pub(super) fn duration_of(&self, job: &str) -> Duration {
        self.durations.get(job).copied().unwrap_or(DEFAULT_DURATION)
    }
}

/// A replay ready to run.
pub(super) struct Plan {
    /// The state at `--from` of each partition: the store's (one a partition, in partition
    /// order), or one fresh one.
    pub(super) states: Vec<State>,
    /// The store's name, when the state is a store's.
    pub(super) store: Option<String>,
    pub(super) defs: Vec<JobDef>,
    pub(super) scenario: Scenario,
}

impl Plan {
    /// The plan the flags describe, or why there is none (a store or file error is said on
    /// `err` here; a usage error is left to the caller).
    pub(super) fn make(args: &Args, err: &mut dyn Write) -> io::Result<Result<Plan, Refusal>> {
        let (states, store) = match start(args, err)? {
            Ok(start) => start,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let Some(defs) = super::super::job_defs(&args.file, states[0].config(), err)? else {
            return Ok(Err(Refusal::Said(1)));
        };
        let scenario = known_jobs(args, &defs, &states)
            .and_then(|()| pauses_apart(args))
            .and_then(|()| span(args, store.is_some()))
            .and_then(|(from, until)| inside(args, from, until).map(|()| (from, until)))
            .map(|(from, until)| Scenario {
                from,
                until,
                down: merge(&args.down),
                pauses: args.pause.clone(),
                jumps: args.clock_jump.clone(),
                durations: args.durations.iter().cloned().collect(),
            });
        Ok(scenario.map_err(Refusal::Usage).map(|scenario| Plan {
            states,
            store,
            defs,
            scenario,
        }))
    }
}

/// One partition's part of a plan: its state, the file's definitions of the jobs that live
/// there, and the scenario with only the pauses of those jobs.
pub(super) struct Part {
    pub(super) state: State,
    pub(super) defs: Vec<JobDef>,
    pub(super) scenario: Scenario,
}

impl Plan {
    /// The plan split by partition, as a daemon's seats step a store of several: each job
    /// where it lives (a job the store does not hold yet where it routes). A job whose
    /// concurrency key the file changes stays where it lives: the move a daemon would make
    /// changes which seat steps it, not its due times.
    pub(super) fn parts(self) -> Vec<Part> {
        let count = duetime_loop::PartitionCount::new(self.states.len() as u64)
            .unwrap_or(duetime_loop::PartitionCount::ONE);
        // A job that runs after others routes with its chain, as the daemon places it.
        let routes = duetime_host::store::parts::routes(&self.defs, count);
        let home = |def: &JobDef, route: duetime_loop::Partition| {
            self.states
                .iter()
                .position(|s| s.seq_of_name(def.name.as_str()).is_some())
                .unwrap_or(route.0 as usize)
        };
        let mut defs: Vec<Vec<JobDef>> = vec![Vec::new(); self.states.len()];
        for (def, route) in self.defs.into_iter().zip(routes) {
            let p = home(&def, route).min(defs.len() - 1);
            defs[p].push(def);
        }
        self.states
            .into_iter()
            .zip(defs)
            .map(|(state, defs)| {
                let mut scenario = self.scenario.clone();
                scenario.pauses.retain(|p| {
                    state.seq_of_name(p.job.as_str()).is_some()
                        || defs.iter().any(|d| d.name.as_str() == p.job.as_str())
                });
                Part {
                    state,
                    defs,
                    scenario,
                }
            })
            .collect()
    }
}

/// The states a replay starts from (one a partition) and the store's name, if a store's.
type Start = (Vec<State>, Option<String>);

/// The starting states: the store's partitions' (read only) and its name, or a fresh one.
fn start(args: &Args, err: &mut dyn Write) -> io::Result<Result<Start, Refusal>> {
    let Some(path) = &args.store else {
        let tick = args.tick.unwrap_or(Duration::from_secs(30));
        return Ok(match duetime_host::human::check_tick(tick) {
            Ok(tick) => Ok((vec![State::new(Config::with_tick(tick))], None)),
            Err(why) => Err(Refusal::Usage(format!(
                "--tick {tick}: {why}; accepted: a duration of at least 1s, such as 30s"
            ))),
        });
    };
    if !store::is_url(path) && !std::path::Path::new(path).is_file() {
        return Ok(Err(Refusal::Usage(format!(
            "--store {path}: no such store (what-if never creates one); leave \
             --store out to start from a fresh state"
        ))));
    }
    if let Some(t) = args.tick {
        return Ok(Err(Refusal::Usage(format!(
            "--tick {t}: a store keeps its own tick; leave --tick out with --store"
        ))));
    }
    Ok(read_store(path, err)?
        .map(|(states, name)| (states, Some(name)))
        .map_err(Refusal::Said))
}

/// The state of each partition of the store at `path` (read only, in partition order)
/// and the store's name, or the exit code after saying why not (1: the store, or one of
/// its partitions, cannot be read; a part of the store is never passed off as the whole).
fn read_store(path: &str, err: &mut dyn Write) -> io::Result<Result<(Vec<State>, String), u8>> {
    let options = store::Options {
        create: false,
        ..Default::default()
    };
    let read = store::open(path, options).and_then(|mut s| {
        let name = s.describe().to_string();
        let states = s
            .partitions()
            .iter()
            .map(|p| s.state_in(p).cloned())
            .collect::<Result<Vec<State>, _>>()?;
        Ok((states, name))
    });
    match read {
        Ok((mut states, name)) => {
            for s in &mut states {
                s.track_changes(false);
            }
            Ok(Ok((states, name)))
        }
        Err(e) => {
            writeln!(err, "duetime what-if: {e}")?;
            Ok(Err(1))
        }
    }
}

/// Every job named by a flag exists in the file or the store.
fn known_jobs(args: &Args, defs: &[JobDef], states: &[State]) -> Result<(), String> {
    let mut known: BTreeSet<String> = defs.iter().map(|d| d.name.to_string()).collect();
    for state in states {
        known.extend(state.records().map(|(_, r)| r.def().name.to_string()));
    }
    let known_list = || known.iter().cloned().collect::<Vec<_>>().join(", ");
    if let Some(p) = args.pause.iter().find(|p| !known.contains(p.job.as_str())) {
        return Err(format!(
            "--pause {}@…: no job named `{}`; the jobs are: {}",
            p.job,
            p.job,
            known_list()
        ));
    }
    match args.durations.iter().find(|(job, _)| !known.contains(job)) {
        Some((job, _)) => Err(format!(
            "--duration {job}=…: no job named `{job}`; the jobs are: {}",
            known_list()
        )),
        None => Ok(()),
    }
}

/// No two pauses of one job overlap.
fn pauses_apart(args: &Args) -> Result<(), String> {
    let mut by_job: BTreeMap<&str, Vec<Window>> = BTreeMap::new();
    for p in &args.pause {
        let ws = by_job.entry(p.job.as_str()).or_default();
        if ws
            .iter()
            .any(|w| w.from < p.window.to && p.window.from < w.to)
        {
            return Err(format!(
                "--pause {}: two pauses of one job overlap; give each its own time",
                p.job
            ));
        }
        ws.push(p.window);
    }
    Ok(())
}

/// The span replayed, `--from` to `--until` or their defaults, at most `MAX_SPAN`.
fn span(args: &Args, from_store: bool) -> Result<(Timestamp, Timestamp), String> {
    // Every window, pause and jump as (start, end).
    let spans = || {
        let windows = args.down.iter().chain(args.pause.iter().map(|p| &p.window));
        windows
            .map(|w| (w.from, w.to))
            .chain(args.clock_jump.iter().map(|j| (j.at, j.at)))
    };
    let starts = spans().map(|(a, _)| a);
    let ends = spans().map(|(_, b)| b);
    let from = match (args.from, from_store) {
        (Some(t), _) => t,
        (None, true) => super::super::now(),
        (None, false) => starts.min().unwrap_or_else(super::super::now),
    };
    let until = match args.until {
        Some(t) => t,
        None => ends
            .max()
            .unwrap_or(from)
            .max(from)
            .saturating_add(Duration::from_days(1)),
    };
    if until <= from {
        return Err(format!(
            "--until {until} is not after --from {from}; the replay needs a span"
        ));
    }
    if until.saturating_since(from) > MAX_SPAN {
        return Err(format!(
            "--from {from} to --until {until} is over {MAX_SPAN}; replay at most a year"
        ));
    }
    Ok((from, until))
}

/// Every window, pause and jump falls within the span.
fn inside(args: &Args, from: Timestamp, until: Timestamp) -> Result<(), String> {
    let outside = |t: Timestamp| t < from || t > until;
    let fix =
        format!("outside the replayed span {from} .. {until}; move it or change --from/--until");
    if let Some(w) = args.down.iter().find(|w| outside(w.from) || outside(w.to)) {
        return Err(format!("--down {}..{}: {fix}", w.from, w.to));
    }
    let pause = |p: &&PauseWindow| outside(p.window.from) || outside(p.window.to);
    if let Some(p) = args.pause.iter().find(pause) {
        let (job, a, b) = (&p.job, p.window.from, p.window.to);
        return Err(format!("--pause {job}@{a}..{b}: {fix}"));
    }
    match args.clock_jump.iter().find(|j| outside(j.at)) {
        Some(j) => Err(format!("--clock-jump at {}: {fix}", j.at)),
        None => Ok(()),
    }
}

/// Down windows sorted, overlapping or touching ones merged.
fn merge(windows: &[Window]) -> Vec<Window> {
    let mut ws = windows.to_vec();
    ws.sort_by_key(|w| (w.from, w.to));
    let mut out: Vec<Window> = Vec::new();
    for w in ws {
        match out.last_mut() {
            Some(last) if w.from <= last.to => last.to = last.to.max(w.to),
            _ => out.push(w),
        }
    }
    out
}
