//! Read-only access to the state's records for hosts. The fields stay private so that only
//! `step` changes a record and the derived caches (`next_due`, the wake time, the lane
//! entry) can never disagree with what they are derived from; what a host, its store or
//! the simulator reads of them is here, by value or by shared reference.

use std::collections::BTreeMap;

use super::{
    Activity, Globals, HeldDef, JobRecord, LastRun, OneShotEnd, OpenRun, ProcessRec, RunStage,
};
use crate::effect::{Incident, MissCause, WaitReason};
use crate::event::{Fence, ProcessId, RunId};
use crate::job::JobDef;
use crate::state::{Config, OwnerLease};
use crate::time::Timestamp;

impl JobRecord {
    /// The definition in force (a changed one waiting for confirmation is `held`).
    pub fn def(&self) -> &JobDef {
        &self.def
    }

    /// Every due time at or before it has been looked at: in the ledger, covered by the
    /// open run or the retry, or owed. It only moves forward.
    pub fn frontier(&self) -> Timestamp {
        self.frontier
    }

    /// How the latest run ended, for views.
    pub fn last(&self) -> Option<LastRun> {
        self.last
    }

    /// The incidents alerted and not yet seen to end, in the order told: an alert of one
    /// of these kinds is held back until a success or a person's resume clears it.
    pub fn incidents(&self) -> &[Incident] {
        &self.incidents
    }

    /// How a one-shot's instant ended, once it has.
    pub fn ended(&self) -> Option<OneShotEnd> {
        self.ended
    }

    /// The instant after which the ledger accounts the current schedule's due times (its
    /// definition, moved back by each backfill); `None` for a job from a state older than
    /// the field, which cannot be backfilled until it is redefined.
    pub fn accounted_from(&self) -> Option<Timestamp> {
        self.accounted_from
    }

    /// Where the dead-man's switch (`JobDef::expect_success_within`) counts from: the
    /// latest success, or when the switch was set. `Some` exactly while it is set, except
    /// for a new job still waiting for its first confirmation: its switch counts from the
    /// confirmation, since nothing can succeed before it.
    pub fn watched_since(&self) -> Option<Timestamp> {
        if self.is_unconfirmed() {
            return None;
        }
        self.watched_since
    }

    /// The schedule's next due time after the frontier (derived, never stored).
    pub fn next_due(&self) -> Option<Timestamp> {
        self.next_due
    }

    /// The oldest due time neither started nor settled, while the job is not paused: its
    /// first owed due time (a catch-up, a buffered overlap, a backfill, or one waiting for
    /// room), or its next due time when that is older. Once `now` is past it, the job is
    /// late by the difference: a store's partition that nobody steps, or a full lane, shows
    /// here (`State::oldest_waiting`, a partition's lag in `duetime status`). A paused job
    /// is held by a person, not late; an open run's and a retry's due times have started.
    pub fn waiting_since(&self) -> Option<Timestamp> {
        if self.paused().is_some() {
            return None;
        }
        let owed = self.act().and_then(|a| a.pending.front()).map(|o| o.from);
        [owed, self.next_due].into_iter().flatten().min()
    }

    /// The earliest instant a `Tick` can change anything for this job: its next due time,
    /// retry, owed run, or its open run's lease lapse, stall, deadline or approval window
    /// (`None`: nothing to wait for). `State::next_wake` is the least of these.
    pub fn wake(&self) -> Option<Timestamp> {
        self.wake
    }

    /// A changed definition waiting for a person's `Confirm` of its digest.
    pub fn held(&self) -> Option<&HeldDef> {
        self.act().and_then(Activity::held)
    }

    /// How many due times are owed (catch-ups, buffered overlaps, backfills) and not yet
    /// started.
    pub fn owed(&self) -> u64 {
        self.act()
            .map_or(0, |a| a.pending.iter().map(|o| o.count).sum())
    }

    /// Since when, and for what, the job waits for room (its lane full, or its process at
    /// the cap): waiters are let in oldest first, by this instant.
    pub fn waits_for_room(&self) -> Option<(Timestamp, WaitReason)> {
        self.act()
            .and_then(Activity::waiting)
            .map(|w| (w.since, w.reason))
    }
}

impl OpenRun {
    /// The run's id, which its `RunFinished` must carry.
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The fence it was started under, which its `RunFinished` must carry too.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// The process holding its lease (it still names the last one while parked).
    pub fn holder(&self) -> ProcessId {
        self.holder
    }

    /// When it started (its first attempt's start for a retry is a run of its own).
    pub fn started(&self) -> Timestamp {
        self.started
    }

    /// Its lease lapses for events whose time is past this (unless renewed).
    pub fn lease_until(&self) -> Timestamp {
        self.lease_until
    }

    /// Until when it is parked awaiting approval; `None` while its command runs.
    pub fn parked(&self) -> Option<Timestamp> {
        match self.stage {
            RunStage::Parked { until } => Some(until),
            RunStage::Running { .. } => None,
        }
    }

    /// When `Cancel { timeout }` went out to its process, if it has.
    pub(crate) fn cancel_sent(&self) -> Option<Timestamp> {
        match self.stage {
            RunStage::Running { cancel_sent } => cancel_sent,
            RunStage::Parked { .. } => None,
        }
    }

    /// Why the due times it covers were late (`None`: on time, or a manual run): a host
    /// tells a backfill (`MissCause::Backfill`) to the command it runs.
    pub fn late(&self) -> Option<MissCause> {
        self.cover.and_then(|c| c.late)
    }
}

impl ProcessRec {
    /// Its wall clock at its last event: when the store last heard from it.
    pub fn last_wall(&self) -> Timestamp {
        self.last_wall
    }

    /// Its clocks' readings at its last event (a result's notes none): what the store
    /// measures the time of its next event from, a result's included.
    pub fn last_reading(&self) -> crate::Now {
        crate::Now {
            wall: self.last_wall,
            mono: self.last_mono,
            boot: self.last_boot,
        }
    }

    /// Whether it is draining: it claims nothing new and finishes what it holds.
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// The store's time at its last event: its wall clock when that was taken as it read,
    /// else what the store vouched for (`State::clock`). The leases it renewed then run to
    /// this plus the lease TTL, and once the store's clock passes this by a lease TTL and a
    /// `clock_jump` without hearing from it again, what it holds is lost.
    pub fn heard_at(&self) -> Timestamp {
        self.base()
    }

    /// Whether it is a new incarnation whose wall clock read far ahead of the store's
    /// before the store could measure it: it decides nothing (visits no job, claims
    /// nothing) until the store's clock shows itself alive or it is released.
    pub fn waits_for_clock(&self) -> bool {
        self.waiting()
    }
}

impl Globals {
    /// The state format the parts were written in (`FORMAT_VERSION` when taken from a
    /// state).
    pub fn format(&self) -> u32 {
        self.format
    }

    /// The config, fixed for a store's life.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The processes the state knows, by id.
    pub fn processes(&self) -> &BTreeMap<ProcessId, ProcessRec> {
        &self.processes
    }

    /// The owner lease (`single_owner` coordination only).
    pub fn owner(&self) -> Option<OwnerLease> {
        self.owner
    }
}

impl super::State {
    /// The processes holding open runs, in process order: every process `open_runs_of`
    /// answers other than 0 for is among them (the count is kept for these alone, and
    /// looked up among them), so a reader comparing every process's count needs to look
    /// up only these and the ones it counts runs on itself.
    pub fn processes_holding_runs(&self) -> impl Iterator<Item = ProcessId> + '_ {
        self.lanes.holders()
    }
}
