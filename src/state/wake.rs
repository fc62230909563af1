//! When the state next needs a tick: the earliest wake of any job (a due time, a lease, a
//! retry, a timeout, a parked run's expiry), kept in an index so a host asks in O(log n).

use crate::event::ProcessId;
use crate::time::{Duration, Timestamp};

use super::{Activity, Config, Coordination, JobRecord, OpenRun, State};

impl State {
    /// The earliest instant a `Tick` can change anything; `None` when nothing is scheduled.
    pub fn next_wake(&self) -> Option<Timestamp> {
        self.wake.first().map(|(t, _)| *t)
    }

    /// The earliest instant a `Tick` from `process` can change anything, by that process's
    /// wall clock; `None` when it has nothing to wait for (it is draining: it claims
    /// nothing, and only its heartbeats for the runs it holds matter). Under shared
    /// coordination that is `next_wake` (read by the process's own clock: off by its lead
    /// when its clock is held); a new incarnation waiting for its clock to be judged wakes
    /// two ticks after its last event, to be released if it is alone, and while one waits
    /// every other wakes within a tick to show that it is not. Under `single_owner` the owner wakes for the jobs
    /// and to renew its lease halfway through it; a standby only when the lease can lapse
    /// (a tick before then does nothing but renew its runs), and at once when none is held.
    ///
    /// A host sleeps until then (or its heartbeat, whichever is sooner: its leases need
    /// renewing every tick while it holds runs), so an idle scheduler costs nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Actor, Config, Event, JobDef, JobName, Now, ProcessId, Schedule, State};
    ///
    /// let mut state = State::new(Config::default());
    /// let t0 = "2025-06-01T08:00:00Z".parse()?;
    /// let def = JobDef::new(JobName::new("digest")?, Schedule::cron("30 9 * * *", None)?);
    /// state.step(Now::at(t0), Event::Upsert { def: Box::new(def), actor: Actor::new("ana") }, &mut Vec::new());
    /// let process = ProcessId(7);
    /// state.step(Now::at(t0), Event::ProcessStarted { process }, &mut Vec::new());
    /// assert_eq!(state.next_wake_for(process), Some("2025-06-01T09:30:00Z".parse()?));
    ///
    /// // A draining process claims nothing, so it has nothing to wake for.
    /// state.step(Now::at(t0), Event::ProcessDraining { process }, &mut Vec::new());
    /// assert_eq!(state.next_wake_for(process), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_wake_for(&self, process: ProcessId) -> Option<Timestamp> {
        let rec = self.processes.get(&process);
        if rec.is_some_and(|p| p.draining) {
            return None;
        }
        let hold = rec.and_then(|p| p.hold);
        if let Some(rec) = rec.filter(|p| p.waiting()) {
            // Waiting (`step/clock.rs`): it decides nothing, so only its release matters,
            // by its own clock.
            return Some(
                rec.last_wall
                    .saturating_add(crate::step::solitude(&self.config)),
            );
        }
        // A held process works on the store's time: its wakes, read by its own clock, are
        // off by its lead.
        let lead = hold.map_or(0, |h| h.lead);
        let shift = |t: Timestamp| Timestamp::from_millis(t.as_millis().saturating_add(lead));
        let wake = self.next_wake_for_work(process).map(shift);
        // While a new incarnation waits or a clock is held behind, every process shows
        // itself once a tick, so that a held one is released only when it really is alone
        // (and one held behind, which runs early by its own clock, is released promptly).
        // A held process whose measure could not be true shows itself once a tick too, and
        // once a `clock_jump` (`ClockHold::bounded`): so near, its wall clock's advance is
        // believed whole (`step/clock.rs`, `believed`).
        let bounded = rec.and_then(|r| r.hold).is_some_and(|h| h.bounded);
        let witness = rec
            .filter(|_| bounded || self.holds.waiting > 0 || !self.holds.behind.is_empty())
            .map(|r| {
                let every = if bounded {
                    self.config.tick.min(self.config.clock_jump)
                } else {
                    self.config.tick
                };
                r.last_wall.saturating_add(every)
            });
        match (wake, witness) {
            (Some(w), Some(v)) => Some(w.min(v)),
            (w, v) => w.or(v),
        }
    }

    /// `next_wake_for` of a process whose clock is not held: when it next has work.
    fn next_wake_for_work(&self, process: ProcessId) -> Option<Timestamp> {
        if self.config.coordination == Coordination::Shared {
            return self.next_wake();
        }
        match self.owner {
            None => Some(Timestamp::MIN),
            Some(o) if o.holder == process => {
                let half = Duration::from_millis(self.config.lease_ttl.as_millis() / 2);
                let renew = o.until.saturating_sub(half);
                Some(self.next_wake().map_or(renew, |w| w.min(renew)))
            }
            Some(o) => {
                // It can lapse at `until`, or sooner when the store stops hearing from its
                // holder (a lease written under a clock far ahead: `step/clock.rs`).
                let silent_from = self.processes.get(&o.holder).map(|h| {
                    h.base()
                        .saturating_add(self.config.lease_ttl)
                        .saturating_add(self.config.clock_jump)
                });
                let lapse = silent_from.map_or(o.until, |s| s.min(o.until));
                Some(lapse.saturating_add(Duration::from_millis(1)))
            }
        }
    }
}

/// When a tick next has something to do for this job.
pub(crate) fn wake_of(job: &JobRecord, config: &Config) -> Option<Timestamp> {
    let a = job.act();
    if a.is_some_and(Activity::is_unconfirmed) {
        return None;
    }
    let paused = a.is_some_and(|a| a.paused.is_some());
    // A waiter is let in by `admit` when room opens, not by the wake index: waking it on
    // every tick would make a tick scan all the waiters.
    let waiting = a.is_some_and(|a| a.waiting().is_some());
    let mut wake = None::<Timestamp>;
    let mut consider = |t: Option<Timestamp>| {
        if let Some(t) = t {
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
    };
    if let Some(a) = a {
        if let Some(until) = a.run().and_then(OpenRun::parked) {
            // A parked run has no lease, deadline or stall to watch: only its expiry.
            consider(Some(until));
        } else if let Some(run) = a.run() {
            consider(Some(
                run.lease_until.saturating_add(Duration::from_millis(1)),
            ));
            if !run.stall_alerted {
                // A holder that keeps renewing never lets the lease lapse, so the stall
                // alert needs its own wake time.
                consider(Some(run.started.saturating_add(job.def.stall_after)));
            }
            match run.cancel_sent() {
                None => consider(Some(run.deadline)),
                Some(sent) => consider(Some(sent.saturating_add(config.cancel_grace))),
            }
        } else if !paused && !waiting {
            consider(a.retry().map(|r| r.at));
            if a.retry().is_none() && !a.pending.is_empty() && job.front_told() {
                // Owed due times start on the next tick, or when a quota hold ends (for a job
                // waiting for upstreams, once they told the front's fate: `step/after.rs`).
                consider(Some(a.quota_hold.unwrap_or(Timestamp::MIN)));
            }
        }
        // A manual run starts on the next tick (or when a quota hold ends), unless a waiting
        // retry goes first (it starts only while paused then): that retry's time is already
        // considered.
        if a.run().is_none() && !waiting && a.manual.is_some() && (paused || a.retry().is_none()) {
            consider(Some(a.quota_hold.unwrap_or(Timestamp::MIN)));
        }
        // The visit at the hold's end clears it.
        consider(a.quota_hold);
    }
    // The dead-man's switch watches a paused job too.
    consider(job.silence_alarm());
    if !paused {
        // A jittered due time is looked at when its start comes.
        consider(
            job.next_due
                .map(|d| d.saturating_add(job.def.jitter_delay(d))),
        );
    }
    wake
}
