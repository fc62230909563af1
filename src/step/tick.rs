//! A tick, in order: what `Event::Tick` (and a process's registration, which is its first
//! tick) does once `step` has judged the process's clock (`clock.rs::judge_clock`: a
//! reading the store cannot vouch for is held, and a new incarnation waiting for its clock
//! decides nothing):
//!
//! 1. the caller's leases on the runs it holds are renewed (`runs.rs::renew`);
//! 2. under `single_owner`, the owner's lease is held, taken or let go
//!    (`owner.rs::lead`); a process that does not lead stops here;
//! 3. runs waiting for a lane are let in, oldest first (`lanes.rs::admit`);
//! 4. each job whose wake time has come, and each job whose run's holder the store no
//!    longer hears from (`clock.rs::jobs_of_silent_holders`), is visited (`visit`, below):
//!    - its open run watched: lease, deadline, stall (`runs.rs::watch_run`),
//!    - its silence watched: the dead-man's switch (`watch.rs::watch_silence`),
//!    - a quota hold in force hands its due times to the missed rule
//!      (`due.rs::hold_for_quota`),
//!    - the due times that passed while nobody ticked get their fate from the missed rule
//!      (`due.rs::account_late`),
//!    - whatever may start starts, if this process may claim (`runs.rs::try_start`),
//!    - the due times of now get theirs, on time or by the overlap policy
//!      (`due.rs::account_on_time`),
//!    - and the job's record is tidied and reindexed (`State::reindex`);
//! 5. waiters are let in again, for lanes the visits freed (`lanes.rs::admit`).
//!
//! Then, as after every event, `step` ends one-shots whose instant is settled (`mod.rs`).
//! An alert under a job's throttle is held back where it is told (`Out::alert`).

use crate::effect::MissCause;
use crate::event::{Held, ProcessId};
use crate::jobs::JobSeq;
use crate::state::State;
use crate::time::Timestamp;

use super::Out;

impl State {
    /// Renews the caller's leases, then gives every job whose wake time has come its turn
    /// (none when the caller is a new incarnation waiting for its clock to be judged).
    pub(crate) fn tick(
        &mut self,
        judged: super::clock::Judged,
        process: ProcessId,
        held: &[Held],
        out: &mut Out,
    ) {
        let now = judged.at;
        self.renew(now, process, held, out);
        if judged.waiting || !self.lead(now, process, out) {
            return;
        }
        // Waiters first (they are older than anything due now), then again for lanes that
        // runs lost in the visits freed. Runs of holders the store no longer hears from
        // are looked at whatever their leases' `until` says.
        self.admit(now, process, out);
        let mut due: Vec<JobSeq> = self
            .wake
            .range(..=(now, JobSeq(u64::MAX)))
            .map(|&(_, seq)| seq)
            .collect();
        let silent = self.jobs_of_silent_holders();
        if !silent.is_empty() {
            due.extend(silent);
            due.sort_unstable();
            due.dedup();
        }
        for seq in due {
            self.visit(seq, now, process, judged.late_cause, out);
        }
        self.admit(now, process, out);
    }

    /// One job's turn: its open run first (lease, deadline, stall) and its silence (the
    /// dead-man's switch), then the due times that passed, then whatever can start.
    pub(crate) fn visit(
        &mut self,
        seq: JobSeq,
        now: Timestamp,
        process: ProcessId,
        late_cause: MissCause,
        out: &mut Out,
    ) {
        self.watch_run(seq, now, out);
        self.watch_silence(seq, now, out);
        let can_claim = self.can_claim(process, now);
        self.hold_for_quota(seq, now, out);
        self.account_late(seq, now, late_cause, out);
        if can_claim {
            self.try_start(seq, now, process, out);
        }
        self.account_on_time(seq, now, process, can_claim, late_cause, out);
        if let Some(job) = self.jobs.get_mut(&seq) {
            job.tidy();
        }
        self.reindex(seq);
    }
}
