//! **Unstable**: what this repository's own tests and fuzz targets need of the internals, behind the
//! non-default `internals` feature. No semver promise: anything here may change or go in
//! any release, and a host needs none of it (the public accessors read everything a host
//! uses). It exists so that tests can build records and parts no event sequence produces
//! (a run held twice, counters behind a run, a stale cache) and check that loading refuses
//! or repairs them.

/// A cron expression's compiled form (`CronSchedule::fields`), opaque.
pub use crate::schedule::cron::Fields as CronFields;
pub use crate::state::Activity;
use crate::state::{Globals, JobRecord};
use crate::time::Timestamp;
use crate::{Config, OwnerLease};

impl JobRecord {
    /// Its activity, absent for a job that has never needed any.
    pub fn activity(&self) -> Option<&Activity> {
        self.activity.as_deref()
    }

    /// Replaces its activity as is, with no check: loading the record checks it.
    pub fn set_activity(&mut self, activity: Option<Activity>) {
        self.activity = activity.map(Box::new);
    }

    /// Sets its cached wake time, which loading must recompute (a record taken from a live
    /// state carries one).
    pub fn set_wake(&mut self, wake: Option<Timestamp>) {
        self.wake = wake;
    }
}

impl Globals {
    /// Sets the format the parts claim to be written in.
    pub fn set_format(&mut self, format: u32) {
        self.format = format;
    }

    /// The config, to break it.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The owner lease, to move its fence.
    pub fn owner_mut(&mut self) -> Option<&mut OwnerLease> {
        self.owner.as_mut()
    }

    /// The next fence the counter will hand out.
    pub fn next_fence(&self) -> u64 {
        self.next_fence
    }

    /// Sets the next job sequence number, with no check.
    pub fn set_next_seq(&mut self, next_seq: u64) {
        self.next_seq = next_seq;
    }

    /// Sets the next run id, with no check.
    pub fn set_next_run(&mut self, next_run: u64) {
        self.next_run = next_run;
    }

    /// Sets the next fence, with no check.
    pub fn set_next_fence(&mut self, next_fence: u64) {
        self.next_fence = next_fence;
    }
}
