//! People's commands as they land: `duetime pause`, `resume`, `run-now`, `confirm`,
//! `approve`, `backfill` and `remove` write to the store in their own transactions, so the
//! daemon learns of them only from the journal. It reads the lines added since it last
//! looked and logs those a person caused, so its log tells why a job stopped or ran.

use duetime::{Effect, Entry, History, PausedBy};
use tracing::info;

use super::Daemon;
use crate::store::{Store, StoreError};

/// The journal kinds only a person's command writes (a pause may also be the system's,
/// which the daemon that paused logs among its own effects).
pub(super) const PEOPLE_KINDS: &[&str] = &[
    "history.paused",
    "history.resumed",
    "history.manual_queued",
    "history.confirmed",
    "history.approved",
    "history.backfill",
    "history.removed",
    "history.actor_forgotten",
];

impl<S: Store> Daemon<S> {
    /// Logs the people's commands written since the last look.
    pub(super) fn log_people(&mut self) -> Result<(), StoreError> {
        log_people_in(&mut self.store, &mut self.journal_seen)
    }
}

/// Logs the people's commands written to `store` after line `seen`, and moves `seen` on.
pub(super) fn log_people_in<S: Store>(store: &mut S, seen: &mut i64) -> Result<(), StoreError> {
    {
        let lines = store.journal_after(*seen, PEOPLE_KINDS)?;
        for (id, record) in lines {
            *seen = (*seen).max(id);
            let by_system = matches!(
                &record.entry,
                Entry::History(History::Paused {
                    by: PausedBy::System { .. },
                    ..
                })
            );
            if !by_system {
                let line = Effect::Journal(record.clone()).to_string();
                info!(job = %record.job, "command: {line}");
            }
        }
        Ok(())
    }
}
