//! The dead-man's switch (`JobDef::expect_success_within`): a job that has had no
//! successful run for that long alerts `NoSuccess`, once, whatever kept it from
//! succeeding: no due time, a pause, failures, lost runs, or no host running at all (the
//! first tick after the gap tells it). The silence is counted from `watched_since`: the
//! latest success, or when the switch was set. Only a success ends the incident; a
//! person's resume does not, since the job has still not succeeded.

use crate::effect::{AlertKind, Incident};
use crate::jobs::JobSeq;
use crate::state::{JobRecord, State};
use crate::time::Timestamp;

use super::Out;

impl JobRecord {
    /// When the switch next has something to tell: the end of the job's allowed silence,
    /// or, for a throttled job, the end of its throttle if later (so the alert is told
    /// then rather than held and retried at every visit). `None` once told, or unset.
    pub(crate) fn silence_alarm(&self) -> Option<Timestamp> {
        let within = self.def.expect_success_within?;
        let since = self.watched_since?;
        if self.incidents.contains(&Incident::NoSuccess) {
            return None;
        }
        let throttled = match (self.def.alert_throttle, self.last_alert) {
            (Some(throttle), Some(last)) => last.saturating_add(throttle),
            _ => Timestamp::MIN,
        };
        Some(since.saturating_add(within).max(throttled))
    }

    /// Keeps the switch in step with the definition just put in force: set, it counts
    /// from now unless it was counting already; unset, it is forgotten with its incident.
    pub(crate) fn rewatch(&mut self, now: Timestamp) {
        if self.def.expect_success_within.is_none() {
            self.watched_since = None;
            self.incidents.retain(|&i| i != Incident::NoSuccess);
        } else if self.watched_since.is_none() {
            self.watched_since = Some(now);
        }
    }

    /// A run succeeded at `now`: the silence starts again from here.
    pub(crate) fn succeeded(&mut self, now: Timestamp) {
        if self.def.expect_success_within.is_some() {
            self.watched_since = Some(now);
        }
    }
}

impl State {
    /// Tells `NoSuccess` when the job's silence has lasted its `expect_success_within`
    /// (a job held for its first confirmation is not watched yet).
    pub(crate) fn watch_silence(&mut self, seq: JobSeq, now: Timestamp, out: &mut Out) {
        let Some(job) = self.jobs.get_mut(&seq) else {
            return;
        };
        if job.is_unconfirmed() || job.silence_alarm().is_none_or(|t| t > now) {
            return;
        }
        let (Some(since), Some(within)) = (job.watched_since, job.def.expect_success_within) else {
            return;
        };
        out.alert(job.alert_log(), AlertKind::NoSuccess { since, within });
    }
}
