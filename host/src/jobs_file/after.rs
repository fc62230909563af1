//! `after = ["extract", "load"]`: the jobs of this file a job runs after, for the same due
//! time (the core's `JobDef::after`). The entry's reader checks the list itself (an array
//! of names, not the job, each once, at most `MAX_UPSTREAMS`); the file-wide checks come
//! once every job is read (`resolve`): each upstream is a job of the file, the chains come
//! back to no job, and a job has its upstreams' schedule, taking it when it has none of
//! its own. The core refuses the same (`Refusal::Upstream`), but only one definition at a
//! time, by the order it is given them: the file says it all at once, with lines.
//!
//! `upsert_order` is the order the host gives the core a file's definitions in: upstreams
//! before their downstreams, else the core refuses the downstream's upstream as unknown.

use std::collections::{BTreeMap, BTreeSet};

use duetime::{Config, JobDef, JobName, Schedule, MAX_UPSTREAMS};
use toml::Value;

use super::errors::{AfterProblem, FieldProblem, JobRef, JobsFileError, NAME_RULE};
use super::fields::{Field, FieldKey};
use super::reader::{get, JobReader, Names};
use super::spans::Lines;
use super::HostJob;

impl JobReader<'_> {
    /// The upstreams `after` names, checked on their own; none after an error (recorded).
    pub(super) fn after(&mut self, t: &toml::Table, name: Option<&JobName>) -> Vec<JobName> {
        let Some(v) = get(t, Field::After) else {
            return Vec::new();
        };
        let accepted = "an array of names of this file's jobs, such as [\"extract\", \"load\"]";
        let Value::Array(items) = v else {
            self.wrong_type(Field::After, v, accepted);
            return Vec::new();
        };
        let mut upstreams: Vec<JobName> = Vec::new();
        for item in items {
            let Value::String(s) = item else {
                self.wrong_type(Field::After, item, accepted);
                return Vec::new();
            };
            let problem = match JobName::new(s) {
                Err(_) => FieldProblem::BadValue {
                    text: s.clone(),
                    what: "a job name",
                    accepted: NAME_RULE.to_string(),
                },
                Ok(n) if Some(&n) == name => FieldProblem::After(AfterProblem::Itself),
                Ok(n) if upstreams.contains(&n) => FieldProblem::After(AfterProblem::Twice {
                    upstream: s.clone(),
                }),
                Ok(n) => {
                    upstreams.push(n);
                    continue;
                }
            };
            self.field_error(Field::After, problem);
            return Vec::new();
        }
        if upstreams.len() > MAX_UPSTREAMS {
            let count = upstreams.len();
            self.field_error(
                Field::After,
                FieldProblem::After(AfterProblem::TooMany { count }),
            );
            return Vec::new();
        }
        upstreams
    }
}

/// The order to upsert `defs` in: each after the ones of them it names in `after`, ties
/// (and what no order fits, a cycle the core refuses anyway) in the given order. Upstreams
/// not among `defs` do not hold a job back: the core knows them or refuses them.
pub fn upsert_order<'a>(defs: impl IntoIterator<Item = &'a JobDef>) -> Vec<usize> {
    let defs: Vec<&JobDef> = defs.into_iter().collect();
    let (mut order, stuck) = duetime_loop::upstreams_first(&defs);
    order.extend(stuck);
    order
}

/// What the file-wide checks need of the file.
pub(super) struct FileCtx<'a> {
    pub(super) file: &'a str,
    pub(super) lines: &'a Lines<'a>,
    pub(super) defaults: &'a super::top::RunAsDefaults,
    pub(super) calendars: &'a duetime::Calendars,
    pub(super) config: &'a Config,
    /// Every name a job of the file claimed, read cleanly or not.
    pub(super) names: &'a Names,
}

/// A job read cleanly: its entry's index, whether it takes its upstreams' schedule, and it.
pub(super) struct Read {
    pub(super) index: usize,
    pub(super) inherits: bool,
    pub(super) job: HostJob,
}

/// The file-wide checks of `after` over the jobs read cleanly (a job with errors of its
/// own is not checked again, nor its downstreams: its errors are reported already); gives
/// each job that has no schedule its upstreams', and returns every error.
pub(super) fn resolve(ctx: &FileCtx, jobs: &mut [Read]) -> Vec<JobsFileError> {
    let mut errors = Vec::new();
    let mut failed: BTreeSet<usize> = BTreeSet::new();
    for (at, read) in jobs.iter().enumerate() {
        for upstream in &read.job.def.after {
            if !ctx.names.contains_key(upstream.as_str()) {
                errors.push(unknown(ctx, read, upstream));
                failed.insert(at);
            }
        }
    }
    let defs: Vec<&JobDef> = jobs.iter().map(|r| &r.job.def).collect();
    let (order, stuck) = duetime_loop::upstreams_first(&defs);
    errors.extend(cycles(ctx, jobs, &stuck));
    let by_name: BTreeMap<String, usize> = jobs
        .iter()
        .enumerate()
        .map(|(at, r)| (r.job.def.name.to_string(), at))
        .collect();
    for at in order {
        let ups: Option<Vec<usize>> = jobs[at]
            .job
            .def
            .after
            .iter()
            .map(|u| {
                by_name
                    .get(u.as_str())
                    .copied()
                    .filter(|u| !failed.contains(u))
            })
            .collect();
        let Some(ups) = ups.filter(|_| !failed.contains(&at)) else {
            failed.insert(at);
            continue;
        };
        if let Err(mut e) = take_schedule(ctx, jobs, at, &ups) {
            errors.append(&mut e);
            failed.insert(at);
        }
    }
    errors
}

/// Job `at`'s schedule against its upstreams' (`ups`, checked already): taken from them
/// when it has none, else compared with each; the core's checks again for a taken one.
fn take_schedule(
    ctx: &FileCtx,
    jobs: &mut [Read],
    at: usize,
    ups: &[usize],
) -> Result<(), Vec<JobsFileError>> {
    let Some(&first) = ups.first() else {
        return Ok(());
    };
    let read = &jobs[at];
    let name = |i: usize| jobs[i].job.def.name.to_string();
    let schedule = |i: usize| schedule_words(&jobs[i].job.def.schedule);
    let problem = if read.inherits {
        ups.iter()
            .find(|&&u| jobs[u].job.def.schedule != jobs[first].job.def.schedule)
            .map(|&u| AfterProblem::UpstreamsDiffer {
                first: name(first),
                first_schedule: schedule(first),
                other: name(u),
                other_schedule: schedule(u),
            })
    } else {
        ups.iter()
            .find(|&&u| jobs[u].job.def.schedule != read.job.def.schedule)
            .map(|&u| AfterProblem::ScheduleDiffers {
                upstream: name(u),
                own: schedule(at),
                theirs: schedule(u),
            })
    };
    if let Some(problem) = problem {
        return Err(vec![after_error(ctx, read, problem)]);
    }
    if !read.inherits {
        return Ok(());
    }
    let (schedule, cron_text) = (
        jobs[first].job.def.schedule.clone(),
        jobs[first].job.cron_text.clone(),
    );
    let read = &mut jobs[at];
    read.job.def.schedule = schedule;
    read.job.cron_text = cron_text;
    let mut reader = JobReader::new(ctx.file, read.index, ctx.lines, ctx.defaults, ctx.calendars)
        .named(read.job.def.name.as_str());
    reader.core_checks(read.job.def.clone(), ctx.config, true);
    match reader.errors.is_empty() {
        true => Ok(()),
        false => Err(reader.errors),
    }
}

/// A schedule as a person reading the file knows it: a cron expression with its zone
/// (`cron 0 2 * * * in Europe/Paris`) and its daylight-saving policy when the file set one,
/// so two schedules told apart are never printed alike.
fn schedule_words(s: &Schedule) -> String {
    match s {
        Schedule::Cron(c) => {
            let mut text = format!("cron {} in {}", c.expr(), c.zone().name());
            if let Some(policy) = c.explicit_policy() {
                text.push_str(&format!(" (dst {policy})"));
            }
            text
        }
        Schedule::Calendar(c) => {
            let whole = c.to_string();
            let rest = whole.strip_prefix(&c.base().to_string()).unwrap_or(&whole);
            format!("{}{rest}", schedule_words(c.base()))
        }
        other => other.to_string(),
    }
}

/// An upstream no job of the file is named, with the closest name that is.
fn unknown(ctx: &FileCtx, read: &Read, upstream: &JobName) -> JobsFileError {
    let max = if upstream.as_str().len() <= 4 { 1 } else { 2 };
    let suggestion = crate::hints::nearest(
        upstream.as_str(),
        ctx.names
            .keys()
            .map(String::as_str)
            .filter(|n| *n != read.job.def.name.as_str()),
        max,
    )
    .map(str::to_string);
    let problem = AfterProblem::Unknown {
        upstream: upstream.to_string(),
        suggestion,
    };
    after_error(ctx, read, problem)
}

/// One error per cycle among the `stuck` jobs (those no order fits), on the cycle's first
/// job in the file, naming the chain from it back to it. A job stuck only because it runs
/// after a cycle gets none: the cycle's error says it.
fn cycles(ctx: &FileCtx, jobs: &[Read], stuck: &[usize]) -> Vec<JobsFileError> {
    let stuck_set: BTreeSet<usize> = stuck.iter().copied().collect();
    let by_name: BTreeMap<&str, usize> = stuck
        .iter()
        .map(|&i| (jobs[i].job.def.name.as_str(), i))
        .collect();
    let mut told: BTreeSet<usize> = BTreeSet::new();
    let mut errors = Vec::new();
    for &start in stuck {
        // Every stuck job waits for a stuck upstream, so following one from any of them
        // comes back to a job already on the path: the cycle is the path from there.
        let mut path = vec![start];
        let cycle = loop {
            let at = *path.last().expect("the path starts with a job");
            let next = jobs[at]
                .job
                .def
                .after
                .iter()
                .find_map(|u| by_name.get(u.as_str()).copied())
                .filter(|n| stuck_set.contains(n));
            let Some(next) = next else { break None };
            if let Some(from) = path.iter().position(|&p| p == next) {
                break Some(path.split_off(from));
            }
            path.push(next);
        };
        let Some(mut cycle) = cycle.filter(|c| c.iter().all(|i| !told.contains(i))) else {
            continue;
        };
        told.extend(cycle.iter().copied());
        let first = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
        cycle.rotate_left(first);
        let mut chain: Vec<String> = cycle
            .iter()
            .map(|&i| jobs[i].job.def.name.to_string())
            .collect();
        chain.push(chain[0].clone());
        errors.push(after_error(
            ctx,
            &jobs[cycle[0]],
            AfterProblem::Cycle { chain },
        ));
    }
    errors
}

/// An error of `read`'s `after`, at its line.
fn after_error(ctx: &FileCtx, read: &Read, problem: AfterProblem) -> JobsFileError {
    JobsFileError::Field {
        file: ctx.file.to_string(),
        line: ctx
            .lines
            .field(read.index, Field::After.name())
            .or_else(|| ctx.lines.job(read.index)),
        job: JobRef::Named(read.job.def.name.to_string()),
        field: FieldKey::Field(Field::After),
        problem: FieldProblem::After(problem),
    }
}
