//! Warnings about a valid jobs file: things the core accepts that will not do what a
//! person expects (a schedule that never fires, an `at` already past, a program that is
//! not there, a missing workdir, a cron step that matches only one value). `duetime check`
//! prints them with each job (and, for what is about the whole file, once above them);
//! they do not make the file invalid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use duetime::{Schedule, Timestamp};
use duetime_host::jobs_file::HostJob;
use serde::Serialize;

/// One warning: the field it is about and what to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub field: &'static str,
    pub text: String,
}

/// Every warning about `job`, looking from `from`.
pub fn warnings(job: &HostJob, from: Timestamp) -> Vec<Warning> {
    let mut out = Vec::new();
    schedule(&job.def.schedule, from, &mut out);
    command(job, &mut out);
    env_file(job, &mut out);
    out
}

/// Below this many jobs a crowded key is no burden worth a warning.
const CROWD_MIN_JOBS: usize = 8;

/// Warnings about the file as a whole: a concurrency key shared by more than half the jobs
/// (of at least `CROWD_MIN_JOBS`). A job with a key lives in the key's partition
/// (docs/scale-out.md), so such a key puts most of the work in one partition, stepped by
/// one daemon at a time, however many partitions and daemons the store has.
pub fn file_warnings(jobs: &[HostJob]) -> Vec<Warning> {
    let mut by_key: BTreeMap<&str, usize> = BTreeMap::new();
    for j in jobs {
        if let Some(k) = &j.def.concurrency_key {
            *by_key.entry(k.as_str()).or_default() += 1;
        }
    }
    let total = jobs.len();
    if total < CROWD_MIN_JOBS {
        return Vec::new();
    }
    by_key
        .into_iter()
        .filter(|&(_, n)| n * 2 > total)
        .map(|(key, n)| Warning {
            field: "concurrency_key",
            text: format!(
                "{n} of the {total} jobs share concurrency key `{key}`: a key's jobs all live \
                 in one partition (docs/scale-out.md), so one daemon at a time steps most of \
                 the work; give unrelated jobs keys of their own, or none"
            ),
        })
        .collect()
}

/// An env file that this machine cannot use: the run would fail to start. Its values are
/// never shown, only what is wrong with it.
fn env_file(job: &HostJob, out: &mut Vec<Warning>) {
    let Some(path) = &job.command.env_file else {
        return;
    };
    if let Err(e) = duetime_host::runner::env_file::read(path) {
        out.push(Warning {
            field: "env_file",
            text: format!("{e}; the run would fail to start"),
        });
    }
}

fn schedule(s: &Schedule, from: Timestamp, out: &mut Vec<Warning>) {
    match s {
        Schedule::At { instant } if *instant <= from => out.push(Warning {
            field: "at",
            text: format!(
                "{instant} is not after {from}: a job's ledger begins where it is defined, \
                 so this one never runs"
            ),
        }),
        Schedule::Cron(c) => {
            if s.next_after(from).is_none() {
                out.push(Warning {
                    field: "cron",
                    text: format!(
                        "`{}` has no due time after {from}: it never fires (a day that no \
                         month has, such as 31 February?)",
                        c.expr()
                    ),
                });
            }
            for w in duetime::wide_steps(c.expr()) {
                out.push(Warning {
                    field: "cron",
                    text: w.to_string(),
                });
            }
        }
        _ => {}
    }
}

fn command(job: &HostJob, out: &mut Vec<Warning>) {
    let workdir = job.command.workdir.as_deref();
    if let Some(w) = workdir.filter(|w| !w.is_dir()) {
        out.push(Warning {
            field: "workdir",
            text: format!(
                "{} is not a directory here; the run would fail to start",
                w.display()
            ),
        });
    }
    let Some(program) = job.command.argv.first() else {
        return;
    };
    if program.contains('/') {
        let path = match workdir {
            Some(w) if !Path::new(program).is_absolute() => w.join(program),
            _ => PathBuf::from(program),
        };
        if !executable(&path) {
            out.push(Warning {
                field: "command",
                text: format!("{} is not an executable file here", path.display()),
            });
        }
    } else if !on_path(program) {
        out.push(Warning {
            field: "command",
            text: format!("`{program}` is not found on PATH here; the run would fail to start"),
        });
    }
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| executable(&dir.join(program))))
}
