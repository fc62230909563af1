//! SIGHUP: the daemon rereads its jobs file and makes the store's jobs match it, as at
//! start, without stopping. The new file is read and checked in full (the store's config,
//! this machine's users, files others could write) before anything changes, and the
//! upserts and removals are one transaction that any refused definition aborts: a file
//! with an error changes nothing, every error is logged at once, and the definitions in
//! force stay. What changed is logged by job name.

use std::collections::{BTreeMap, BTreeSet};

use duetime::{Actor, Effect, Entry, Event, History, JobName, Now};
use tracing::{info, warn};

use super::{clock, preflight, Daemon, JOBS_FILE_ACTOR};
use crate::alerts::{Courier, Route};
use crate::jobs_file::{self, HostJob, JobsFile};
use crate::store::{Store, StoreError};

/// Why a reload changed nothing.
enum NotReloaded {
    /// The file is wrong (or the core refused a definition): one line per error. Sending
    /// HUP again after fixing it is the way out.
    File(Vec<String>),
    /// The store could not be read or written: tried again at the next turn.
    Store(StoreError),
}

/// The job names a reload added, changed and removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Changes {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
}

impl<S: Store> Daemon<S> {
    /// Reloads the jobs file if SIGHUP arrived since the last turn. Never fails: a bad
    /// file is logged and the old definitions kept, an unreachable store is retried.
    pub(super) fn reload_if_asked(&mut self) {
        if !clock::take_hup() {
            return;
        }
        let file = self.jobs_file.display().to_string();
        info!(jobs_file = %file, "SIGHUP: reloading the jobs file");
        match self.reload() {
            Ok(c) => info!(
                jobs_file = %file,
                added = %c.added.join(","),
                changed = %c.changed.join(","),
                removed = %c.removed.join(","),
                "reloaded the jobs file"
            ),
            Err(NotReloaded::File(errors)) => {
                for e in &errors {
                    warn!("reload: {e}");
                }
                warn!(
                    jobs_file = %file,
                    errors = errors.len(),
                    "reload refused: the definitions in force are kept; fix the file and send HUP again"
                );
            }
            Err(NotReloaded::Store(e)) => {
                warn!("reload: store: {e}; trying again at the next turn");
                clock::hup_again();
            }
        }
    }

    /// Reads and checks the file, then syncs the store in one transaction, then takes the
    /// new jobs (and alert routes) as the ones this daemon agrees to run.
    fn reload(&mut self) -> Result<Changes, NotReloaded> {
        let config = *self.store.state().map_err(NotReloaded::Store)?.config();
        let file = jobs_file::load_with(&self.jobs_file, &config).map_err(|errors| {
            NotReloaded::File(errors.iter().map(ToString::to_string).collect())
        })?;
        let refusals = preflight::refusals(&self.jobs_file, &file, self.runs.root(), None);
        if !refusals.is_empty() {
            return Err(NotReloaded::File(refusals));
        }
        let now = self.clock.now();
        let effects = match sync_all_or_nothing(&mut self.store, &file.jobs, now) {
            Ok(effects) => effects,
            Err(StoreError::Aborted { reason }) => {
                return Err(NotReloaded::File(
                    reason.split('\n').map(str::to_string).collect(),
                ))
            }
            Err(e) => return Err(NotReloaded::Store(e)),
        };
        let mut changes = diff(&self.jobs, &file.jobs);
        for e in &effects {
            if let Effect::Journal(r) = e {
                let name = r.job.to_string();
                let removed = matches!(r.entry, Entry::History(History::Removed { .. }));
                if removed && !changes.removed.contains(&name) {
                    changes.removed.push(name);
                }
            }
        }
        self.take_jobs(file);
        Ok(changes)
    }

    /// The new file's jobs and `[alerts]` in force in this daemon; the delivery thread
    /// started if alerts now go somewhere and it was not running.
    pub(super) fn take_jobs(&mut self, file: JobsFile) {
        let sends = file.alerts.as_ref().is_some_and(Route::sends)
            || file
                .jobs
                .iter()
                .any(|j| j.alerts.as_ref().is_some_and(Route::sends));
        if sends && self.courier.is_none() {
            match Courier::start(self.telemetry.clone()) {
                Ok(c) => self.courier = Some(c),
                Err(e) => {
                    warn!("alerts: the delivery thread did not start ({e}); alerts are only logged")
                }
            }
        }
        self.alert_route = file.alerts;
        self.jobs = file
            .jobs
            .into_iter()
            .map(|j| (j.def.name.to_string(), j))
            .collect();
    }
}

/// `sync_jobs` (in `mod.rs`) that commits nothing if the core refuses any definition, in
/// one transaction on partition 0: the daemon runs stores of one partition only (`duetime
/// run` refuses others until issue 43's daemon of several), so that is every job. The
/// jobs the store holds that the file lacks are found inside the transaction (fresh, not
/// from a cache), and every refusal is returned at once, one per line, in the abort's
/// reason.
fn sync_all_or_nothing<S: Store>(
    store: &mut S,
    jobs: &[HostJob],
    now: Now,
) -> Result<Vec<Effect>, StoreError> {
    let actor = Actor::new(JOBS_FILE_ACTOR);
    let in_file: BTreeSet<&str> = jobs.iter().map(|j| j.def.name.as_str()).collect();
    store.transact(&mut |state, effects| {
        let gone: Vec<JobName> = state
            .records()
            .map(|(_, r)| r.def().name.clone())
            .filter(|name| !in_file.contains(name.as_str()))
            .collect();
        let from = effects.len();
        // Upstreams first: the core refuses a downstream whose upstream it does not know.
        for j in jobs_file::upsert_order(jobs.iter().map(|j| &j.def))
            .into_iter()
            .map(|i| &jobs[i])
        {
            let def = Box::new(j.def.clone());
            let actor = actor.clone();
            state.step(now, Event::Upsert { def, actor }, effects);
        }
        for job in gone {
            let actor = actor.clone();
            state.step(now, Event::Remove { job, actor }, effects);
        }
        let refused: Vec<String> = effects[from..]
            .iter()
            .filter(|e| matches!(e, Effect::Reply { result: Err(_), .. }))
            .map(|e| format!("definition refused: {e}"))
            .collect();
        match refused.is_empty() {
            true => Ok(()),
            false => Err(StoreError::Aborted {
                reason: refused.join("\n"),
            }),
        }
    })
}

/// Which jobs the new file adds, changes (anything about them: schedule, command, user,
/// alerts) or drops, against the jobs this daemon had.
pub(super) fn diff(old: &BTreeMap<String, HostJob>, new: &[HostJob]) -> Changes {
    let mut c = Changes::default();
    for job in new {
        let name = job.def.name.to_string();
        match old.get(&name) {
            None => c.added.push(name),
            Some(before) if before != job => c.changed.push(name),
            Some(_) => {}
        }
    }
    let names: BTreeSet<&str> = new.iter().map(|j| j.def.name.as_str()).collect();
    c.removed = old
        .keys()
        .filter(|k| !names.contains(k.as_str()))
        .cloned()
        .collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(text: &str) -> Vec<HostJob> {
        jobs_file::parse_str(text, "jobs.toml").unwrap().jobs
    }

    #[test]
    fn diff_names_added_changed_and_removed_jobs() {
        let old: BTreeMap<String, HostJob> = jobs(
            "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = [\"true\"]\n\
             [[job]]\nname = \"b\"\nevery = \"1m\"\ncommand = [\"true\"]\n\
             [[job]]\nname = \"c\"\nevery = \"1m\"\ncommand = [\"true\"]\n",
        )
        .into_iter()
        .map(|j| (j.def.name.to_string(), j))
        .collect();
        let new = jobs(
            "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = [\"true\"]\n\
             [[job]]\nname = \"b\"\nevery = \"1m\"\ncommand = [\"false\"]\n\
             [[job]]\nname = \"d\"\nevery = \"1m\"\ncommand = [\"true\"]\n",
        );
        let c = diff(&old, &new);
        assert_eq!(c.added, ["d"]);
        assert_eq!(c.changed, ["b"]);
        assert_eq!(c.removed, ["c"]);
    }
}
