//! Whose clock judges. Every process reads its own wall clock, and any of them may be wrong:
//! skewed, set forward by days, set back. A lease or a frontier moved by a clock days ahead
//! would hold a job (or skip its due times) until honest clocks catch up, so the core does
//! not take any one process's word for the time.
//!
//! The store keeps its own clock (`State::clock`): the latest time it can vouch for. It is
//! carried forward by what the processes themselves measure between their events (the
//! monotonic clock, or the clock that counts sleep when the host reads one), never by a
//! wall clock's jump. Each event of a process is then judged:
//!
//! - a wall clock within `config.clock_jump` of what the store vouches for is taken as it
//!   reads: skew is normal;
//! - a wall clock further from it, ahead or behind, is **held** (told as `ClockGap`
//!   `held_ahead` or `held_behind`): the process goes on working on the store's time, its
//!   own monotonic clock carrying it from its last event. A clock set forward by days
//!   neither skips the days' due times nor writes leases days long while anyone can
//!   contradict it, and one set back neither stalls the schedule nor makes a lease younger;
//! - a **new incarnation** whose wall clock reads far ahead of the store's cannot be
//!   measured yet: the store's clock may only have stopped while everyone was down. It
//!   **waits**, deciding nothing, until a process the store has heard from before speaks
//!   (the store's clock is alive: it then works on it);
//! - a process held ahead that no one has contradicted for `solitude` (two ticks) of its
//!   own time is **released** (`released`): it is the only witness (a restart after
//!   downtime, a lone host whose clock was set, or every live process agreeing that the
//!   store's clock is behind), so its clock is taken as right and the store's clock moves to
//!   it; the due times it passed are late (`down` for a new incarnation, else
//!   `clock_forward`), and the runs it holds keep the age it measured. Only a process whose
//!   own clock is taken as it reads contradicts a held one, when the held one reads more
//!   than two `clock_jump`s further ahead (`disagreement`); held processes carry their own
//!   estimates of the store's time, so they are no evidence against each other (two
//!   processes restarted after one outage are released together). While anyone waits,
//!   every other process wakes at least once a tick (`State::next_wake_for`), so a process
//!   that hears nobody really is alone; and a held process whose measure could not be
//!   true wakes once a tick itself, so its wall clock's advance is believed whole (see
//!   `believed`, `ClockHold::bounded`);
//! - a process held behind that no one has contradicted for `solitude` (every sane clock
//!   contradicts it, and any held one more than `disagreement` from it) is released
//!   too (`released_behind`): the store's clock was set by a clock that ran fast and has
//!   since been corrected (or this is the only witness left), so the store's clock goes
//!   back to it. Every job's frontier stays where it was, so nothing runs again: the
//!   schedule waits for the clock to reach it. (Held for good, it would run every job
//!   early by its own clock for as long as it lived.) While anyone is held behind, every
//!   process wakes at least once a tick too.
//!
//! - a held process the store has not heard from for longer than a lease (plus
//!   `clock_jump`) is **dormant** (`ClockHold::dormant`): most likely a held incarnation
//!   that crashed. It is left out of the holds (`State::holds`), so no one contradicts it
//!   and no one wakes once a tick for it; when it speaks again it is present again, and its
//!   solitude starts afresh if a process still present contradicts it.
//!
//! The cost: a restart after downtime waits two ticks before it catches up, and a lone
//! process whose clock is wrong is believed (there is no one to say otherwise): ahead, the
//! frontier it moved stays moved; behind, the schedule waits until its clock reaches the
//! frontier.
//!
//! Leases are judged by the store's clock too: a holder the store has not heard from for a
//! lease TTL plus `clock_jump` of store time has lost what it holds, whatever the `until`
//! its own clock wrote (a lease written under a clock since found wrong lapses on time).

use crate::effect::Notice;
use crate::effect::{ClockGapKind, Effect, MissCause};
use crate::event::{Now, ProcessId};
use crate::jobs::JobSeq;
use crate::state::{Activity, ClockHold, Config, HoldCounts, ProcessRec, RunStage, State};
use crate::time::{Duration, Timestamp};

use super::Out;

/// How the core took one event's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judged {
    /// The time the step acts on.
    pub at: Timestamp,
    /// The cause late due times found now get.
    pub late_cause: MissCause,
    /// The process is a new incarnation whose clock is held ahead of the store's, whose
    /// time cannot be measured yet: it decides nothing (visits no job, claims nothing).
    pub waiting: bool,
    /// A process held behind was released: the store's clock goes back to its clock.
    pub back: bool,
    /// A process held ahead was released (`release`): its clock replaces the store's, so
    /// what it holds moves with it. A hold that ends because the clock came back within
    /// `clock_jump` is no release: the process worked on the store's time all along.
    pub ahead: bool,
}

/// What the process measured since its previous event: its monotonic clock, or the clock
/// that counts sleep when it reads one and that moved more.
fn elapsed(rec: &ProcessRec, now: Now) -> Duration {
    let ms =
        |a: Timestamp, b: Timestamp| u64::try_from(a.as_millis().saturating_sub(b.as_millis()));
    let mono = ms(now.mono, rec.last_mono).unwrap_or(0);
    let boot = match (now.boot, rec.last_boot) {
        (Some(b), Some(last)) => ms(b, last).unwrap_or(0),
        _ => 0,
    };
    Duration::from_millis(mono.max(boot))
}

/// What the store believes of the process's measure since its previous event (`elapsed`,
/// bounded by `believed` when it cannot be true), and whether it was bounded.
fn believed_elapsed(config: &Config, rec: &ProcessRec, now: Now) -> (Duration, bool) {
    let wall = now
        .wall
        .as_millis()
        .saturating_sub(rec.last_wall.as_millis());
    let wall = u64::try_from(wall).unwrap_or(0);
    let measured = elapsed(rec, now).as_millis();
    let believed = believed(config, measured, wall);
    (Duration::from_millis(believed), believed != measured)
}

/// How much of a measure of `measured` ms between two events of a process is believed, its
/// wall clock having moved `wall` ms (0 when it went back) meanwhile. A monotonic clock
/// that moved further than the wall clock by more than a lease plus `clock_jump` cannot be
/// trusted: a reading in the wrong unit (nanoseconds, as Python's `time.monotonic_ns()`
/// gives them, moves it a million times faster than the wall clock) or at the end of time
/// would carry the store's clock, which never goes back, and every frontier with it, years
/// ahead (issue 48: a "missed, count 999998" line per job and a run 694 days early). Of two
/// measures that disagree, the smaller is believed, and no more than `clock_jump`: the wall
/// clock's advance (so a host that always reads nanoseconds works on its wall clock, its
/// holds measured and released as anyone's), never a jump of it. Any more would let a
/// jump pass for time elapsed: believing up to a lease plus `clock_jump`, a held host
/// reading nanoseconds whose wall clock was set two and a half minutes on between two
/// ticks kept its lead, and was released by that very event (swarm seed 26663, J2); with
/// no more than `clock_jump`, a jump of over two `clock_jump`s always moves the lead by over
/// one, so its solitude starts again. Such a process, held, wakes within `clock_jump` as
/// well as a tick (`State::next_wake_for`, `ClockHold::bounded`), so that its wall clock's
/// advance is believed whole. Its gap is told as any
/// other (`clock_backward`: the wall clock moved that much less). The cost: a process
/// frozen longer than the bound while its wall clock was set back carries the store's
/// clock by nothing for the freeze (due times found late, not early): a delay the clocks
/// that speak next undo, where a leap ahead could never be undone.
fn believed(config: &Config, measured: u64, wall: u64) -> u64 {
    let bound = config
        .lease_ttl
        .saturating_add(config.clock_jump)
        .as_millis();
    if measured <= wall.saturating_add(bound) {
        measured
    } else {
        wall.min(config.clock_jump.as_millis())
    }
}

/// A held process's solitude is counted on its monotonic clock (`ClockHold::alone_since`
/// is a reading of it). When that clock moved otherwise than what is believed of it (read
/// behind its last reading, or further than `believed` takes), the mark moves with the
/// readings so that the solitude counted so far grows by what is believed, no more: a mark
/// taken in nanoseconds would otherwise release a held clock at its next reading, and one
/// taken before the host read milliseconds again would never be reached (light seed 1371:
/// a clock held ahead after a host's nanosecond readings stayed held, the store's clock
/// minutes behind clocks that all agreed, J4).
fn rebase_solitude(rec: &mut ProcessRec, now: Now, believed: Duration) {
    let moved = i128::from(now.mono.as_millis()) - i128::from(rec.last_mono.as_millis());
    if (0..=i128::from(believed.as_millis())).contains(&moved) {
        return;
    }
    let last = rec.last_mono;
    if let Some(since) = rec.hold.as_mut().and_then(|h| h.alone_since.as_mut()) {
        let so_far = last.saturating_since(*since);
        *since = now.mono.saturating_sub(so_far.saturating_add(believed));
    }
}

/// What a result's reading measured since its process's last event, if the reading is the
/// process's own: its wall clock moved as much as its monotonic (or sleep-counting) clock,
/// within `clock_jump`. A reading from another hand counts from another origin (a
/// monotonic clock half a day off would time the result, and the runs its step starts,
/// half a day ahead of the store's clock), so it is taken as no time passed.
fn own_elapsed(config: &Config, rec: &ProcessRec, now: Now) -> Duration {
    let measured = elapsed(rec, now);
    let wall = i128::from(now.wall.as_millis()) - i128::from(rec.last_wall.as_millis());
    let apart = (wall - i128::from(measured.as_millis())).unsigned_abs();
    if apart <= u128::from(config.clock_jump.as_millis()) {
        measured
    } else {
        Duration::ZERO
    }
}

/// `wall`, unless it reads further behind `vouched` than `jump`: then `vouched`, since the
/// store can vouch for a later time than that clock reads (results and people's commands:
/// a clock within `jump` is taken as it reads, as a tick's is).
fn not_behind(wall: Timestamp, vouched: Timestamp, jump: Duration) -> Timestamp {
    if wall < vouched.saturating_sub(jump) {
        vouched
    } else {
        wall
    }
}

impl State {
    /// Judges the time of a result `process` reports, as its other events are (measured
    /// from its last event by the reading the result carries), but notes nothing of its
    /// clocks: a result may be delivered late or by another hand, with a reading that is
    /// not its process's own, so it must not hold or release anyone, and at worst such a
    /// reading is taken as no time passed. What its own measure vouches for carries the
    /// store's clock, as that process's tick would: the step acts at the judged time (a
    /// run it starts is leased from it), and a lease written ahead of the store's clock
    /// would not lapse when its holder dies until the clock caught up (a result with a
    /// reading of true time from a process whose clocks were hours behind did that).
    /// A reading further behind than `clock_jump` is held as a tick would be: the step acts
    /// on the store's time. Taken as it read, the run it starts would be timed from hours
    /// back, and the next tick, on the store's time, would find it stalled and past its
    /// deadline at once (and a release behind would move it back once more).
    pub(crate) fn judge_result_clock(&mut self, process: ProcessId, now: Now) -> Timestamp {
        let Some(clock) = self.clock else {
            return now.wall;
        };
        let vouched = match self.processes.get(&process) {
            Some(rec) => clock.max(
                rec.base()
                    .saturating_add(own_elapsed(&self.config, rec, now)),
            ),
            None => clock,
        };
        let jump = self.config.clock_jump;
        let at = not_behind(now.wall, vouched, jump).min(vouched.saturating_add(jump));
        self.clock = Some(clock.max(at.min(vouched)));
        at
    }

    /// Judges the clock a person's command carries (a definition, a removal, a pause, an
    /// approval...): whoever sent it, from whatever machine, with no process's measure
    /// behind it and none to hold. The store's clock is the latest time it can vouch for,
    /// so a command read further behind it than `clock_jump` acts on the store's clock:
    /// taken as it read, a command from a machine hours slow would date what it records
    /// hours before what the ticks record, and time from there what it settles or sets
    /// going (an approval settling a run before it started, a pause begun before the due
    /// times it is said to hold). Ahead, it is taken as it reads: the store's clock stands
    /// still while no process speaks (every one down, or asleep until its next wake), so
    /// nothing can say such a clock is wrong.
    pub(crate) fn judge_person_clock(&self, now: Now) -> Timestamp {
        match self.clock {
            Some(clock) => not_behind(now.wall, clock, self.config.clock_jump),
            None => now.wall,
        }
    }

    /// Judges the clock of an event of `process` (see the module doc), noting its clocks
    /// and telling the host of any gap or hold. `fresh`: a new incarnation, with no earlier
    /// event to measure from.
    pub(crate) fn judge_clock(
        &mut self,
        process: ProcessId,
        now: Now,
        fresh: bool,
        out: &mut Out,
    ) -> Judged {
        let config = self.config;
        let seen = self.clock;
        let (rec, known) = match self.processes.entry(process) {
            std::collections::btree_map::Entry::Occupied(e) if !fresh => (e.into_mut(), true),
            e => {
                let rec = e.or_insert_with(|| ProcessRec::new(now));
                *rec = ProcessRec::new(now);
                (rec, false)
            }
        };
        if known && rec.hold.is_some_and(|h| h.dormant) {
            // Rare: back from a silence longer than a lease; judged as present from here.
            self.wake_from_silence(process);
            return self.judge_clock(process, now, false, out);
        }
        let gap_cause = if known {
            observe_gap(&config, process, rec, now, out)
        } else {
            MissCause::Down
        };
        // (A monotonic clock read behind its last reading is a host's anomaly: nothing
        // elapsed, and the readings start again from here.)
        let measure = known.then(|| believed_elapsed(&config, rec, now));
        let measured = measure.map(|(believed, _)| believed);
        if let Some(believed) = measured {
            rebase_solitude(rec, now, believed);
        }
        rec.last_wall = now.wall;
        rec.last_mono = now.mono;
        rec.last_boot = now.boot;
        // What the store vouches for now: its clock, carried by this process's own measure
        // since its previous event. Before any process has spoken, the first one's word.
        let Some(seen) = seen else {
            rec.base = Some(now.wall);
            self.clock = Some(now.wall);
            return Judged {
                at: now.wall,
                late_cause: gap_cause,
                waiting: false,
                back: false,
                ahead: false,
            };
        };
        let vouched = measured.map_or(seen, |e| seen.max(rec.base().saturating_add(e)));
        let lead = now.wall.as_millis().saturating_sub(vouched.as_millis());
        let before = rec.hold;
        let judged = judge_lead(
            &config,
            process,
            rec,
            now,
            (vouched, lead, known),
            gap_cause,
            out,
        );
        if let Some(hold) = rec.hold.as_mut() {
            hold.bounded = measure.is_some_and(|(_, bounded)| bounded);
        }
        let after = rec.hold;
        let base = rec.base();
        // The store's clock only goes back when a lone clock held behind is released.
        self.clock = Some(if judged.back { base } else { seen.max(base) });
        let kind = |h: Option<ClockHold>| h.map(|h| (h.lead > 0, h.waiting));
        if kind(before) != kind(after) || !known {
            self.holds = HoldCounts::of(&self.processes);
        }
        if judged.back {
            // The store's clock went back: every instant it wrote on the fast time base
            // (when each process was last heard, leases, deadlines) goes back with it.
            self.reanchor_store(process, lead);
        } else if judged.ahead && known {
            // Released ahead: what it holds was timed on the store's clock, which its own
            // clock now replaces, `lead` ahead; its runs and its owner lease are as old as
            // it measured them (its lease does not lapse for the move).
            self.reanchor_runs(Some(process), lead);
            if let Some(owner) = self.owner.as_mut().filter(|o| o.holder == process) {
                owner.until = owner
                    .until
                    .saturating_add(Duration::from_millis(lead.unsigned_abs()));
            }
        }
        self.contradict_holds(process, lead, known, after.is_none());
        judged
    }

    /// The store's clock went back by `-lead` ms to the clock of `released`: when every
    /// other process was last heard from, every open run's instants and the owner lease
    /// go back as much, and so do the waits measured from an event (a retry's backoff, a
    /// quota hold, a parked run's approval window): nothing looks younger (a lease held
    /// for a day by a clock a day fast) or older than it is, and nothing waits longer than
    /// it was asked to. Due times are the schedule's: every job's frontier stays, and waits
    /// for the clock to reach it.
    fn reanchor_store(&mut self, released: ProcessId, lead: i64) {
        let by = Duration::from_millis(lead.unsigned_abs());
        for (p, rec) in &mut self.processes {
            if *p != released {
                rec.base = rec.base.map(|b| b.saturating_sub(by));
            }
        }
        if let Some(owner) = &mut self.owner {
            owner.until = owner.until.saturating_sub(by);
        }
        self.reanchor_runs(None, lead);
        // Waits measured from an event (a retry's backoff, a quota hold, a parked run's
        // approval window) are as long as they were asked to be.
        let waiting: Vec<JobSeq> = self
            .jobs
            .iter()
            .filter(|(_, j)| {
                j.activity.as_deref().is_some_and(|a| {
                    a.retry().is_some()
                        || a.quota_hold.is_some()
                        || a.run().is_some_and(|r| r.parked().is_some())
                })
            })
            .map(|(seq, _)| *seq)
            .collect();
        for seq in waiting {
            let Some(a) = self
                .jobs
                .get_mut(&seq)
                .and_then(|j| j.activity.as_deref_mut())
            else {
                continue;
            };
            if let Some(retry) = a.retry_mut() {
                retry.at = retry.at.saturating_sub(by);
            }
            a.quota_hold = a.quota_hold.map(|t| t.saturating_sub(by));
            if let Some(run) = a.run_mut() {
                if let RunStage::Parked { until } = &mut run.stage {
                    *until = until.saturating_sub(by);
                }
            }
            self.reindex(seq);
        }
    }

    /// Moves the instants of the runs `process` holds (every open run for `None`: start,
    /// deadline, lease, a pending cancel) by `lead` ms (later when positive): the time base
    /// moved by that much when a process was released, and a run measured as a minute old
    /// must not look older or younger for it.
    fn reanchor_runs(&mut self, process: Option<ProcessId>, lead: i64) {
        let by = Duration::from_millis(lead.unsigned_abs());
        let shift = |t: Timestamp| {
            if lead >= 0 {
                t.saturating_add(by)
            } else {
                t.saturating_sub(by)
            }
        };
        let held: Vec<JobSeq> = self
            .runs
            .values()
            .copied()
            .filter(|seq| {
                process.is_none() || self.jobs.get(seq).and_then(|j| j.run_holder()) == process
            })
            .collect();
        for seq in held {
            let Some(run) = self
                .jobs
                .get_mut(&seq)
                .and_then(|j| j.activity.as_deref_mut())
                .and_then(Activity::run_mut)
            else {
                continue;
            };
            run.started = shift(run.started);
            run.deadline = shift(run.deadline);
            run.lease_until = shift(run.lease_until);
            if let RunStage::Running { cancel_sent } = &mut run.stage {
                *cancel_sent = cancel_sent.map(shift);
            }
            self.reindex(seq);
        }
    }

    /// An event of `process` whose wall clock leads the store's by `lead` ms: whom it
    /// contradicts (their solitude starts again; see `contradicts`). And when `process`
    /// is one the store has heard from before, the store's clock is alive, so a waiting
    /// one starts working on it.
    fn contradict_holds(&mut self, process: ProcessId, lead: i64, vouches: bool, sane: bool) {
        let silence = self.silence_bound();
        let clock = self.clock;
        let HoldCounts { ahead, behind, .. } = &self.holds;
        if !ahead.iter().chain(behind).any(|p| *p != process) {
            return;
        }
        let disagree = disagreement(&self.config).as_millis();
        let mut changed = false;
        for p in ahead.iter().chain(behind).filter(|p| **p != process) {
            let Some(rec) = self.processes.get_mut(p) else {
                continue;
            };
            let silent = silent_for(clock, silence, rec);
            let Some(hold) = rec.hold.as_mut() else {
                continue;
            };
            if silent {
                // Gone quiet for longer than a lease: left out until it speaks again.
                hold.dormant = true;
                changed = true;
                continue;
            }
            if contradicts(sane, lead, hold.lead, disagree) {
                hold.alone_since = None;
            }
            if vouches && hold.waiting {
                hold.waiting = false;
                changed = true;
            }
        }
        if changed {
            self.holds = HoldCounts::of(&self.processes);
        }
    }

    /// A dormant hold's process speaks again (`ClockHold::dormant`): its hold is present
    /// again, and its solitude starts afresh if a process still present contradicts it
    /// (taken as speaking now: no one looked at it while it was left out, though a sane
    /// clock may have spoken meanwhile). Costs a pass over the processes, only on such a
    /// return.
    fn wake_from_silence(&mut self, process: ProcessId) {
        let Some(held) = self
            .processes
            .get(&process)
            .and_then(|r| r.hold)
            .filter(|h| h.dormant)
        else {
            return;
        };
        let disagree = disagreement(&self.config).as_millis();
        let last_heard = self.processes.get(&process).map(ProcessRec::base);
        let contradicted = self.processes.iter().any(|(p, r)| {
            // Present, or heard after this process last spoke: the store's clock may have
            // been carried far ahead since by a held process's measure (a time base a
            // sane clock had just set back), so a process that spoke a moment ago can
            // already look silent; it spoke meanwhile all the same. Heard at the same
            // store time counts (a sane clock a moment behind the store's, speaking just
            // after it, is vouched the store's time): the wrong way round it only keeps
            // the hold a while longer, where missing it may release a clock behind.
            let heard_since = last_heard.is_some_and(|b| r.base() >= b);
            let present = r.hold.is_none_or(|h| !h.dormant) && (!self.is_silent(r) || heard_since);
            present
                && *p != process
                && contradicts(!r.held(), r.hold.map_or(0, |h| h.lead), held.lead, disagree)
        });
        if let Some(hold) = self
            .processes
            .get_mut(&process)
            .and_then(|r| r.hold.as_mut())
        {
            hold.dormant = false;
            if contradicted {
                hold.alone_since = None;
            }
        }
        self.holds = HoldCounts::of(&self.processes);
    }

    /// Whether the store has not heard from `holder` for a lease TTL plus `clock_jump` of
    /// its own clock: whatever the `until` of its leases says, they have lapsed. (The slack
    /// is the most a sane clock may push the store's clock ahead in one event.)
    pub(crate) fn holder_silent(&self, holder: ProcessId) -> bool {
        self.processes
            .get(&holder)
            .is_some_and(|rec| self.is_silent(rec))
    }

    pub(crate) fn is_silent(&self, rec: &ProcessRec) -> bool {
        silent_for(self.clock, self.silence_bound(), rec)
    }

    /// How long the store may not hear from a process, by its own clock, before what it
    /// holds has lapsed (`holder_silent`) and its clock hold goes dormant: a lease TTL plus
    /// the most a sane clock may push the store's clock ahead in one event.
    fn silence_bound(&self) -> Duration {
        self.config.lease_ttl.saturating_add(self.config.clock_jump)
    }

    /// The jobs whose open run is held by a process the store has not heard from for
    /// longer than a lease (`holder_silent`): a tick visits them whatever their wake time
    /// says, since a lease written under a clock far ahead would not wake them for days.
    /// Costs a look per process holding runs; a pass over the open runs only when one of
    /// them has fallen silent (after which it holds none).
    pub(crate) fn jobs_of_silent_holders(&self) -> Vec<JobSeq> {
        if !self.lanes.holders().any(|p| self.holder_silent(p)) {
            return Vec::new();
        }
        let silent: Vec<ProcessId> = self
            .lanes
            .holders()
            .filter(|p| self.holder_silent(*p))
            .collect();
        self.runs
            .values()
            .copied()
            .filter(|seq| {
                self.jobs
                    .get(seq)
                    .and_then(|j| j.run_holder())
                    .is_some_and(|h| silent.contains(&h))
            })
            .collect()
    }
}

/// Whether the store, its clock at `clock`, has not heard from the process of `rec` for
/// longer than `silence` (`State::holder_silent`).
fn silent_for(clock: Option<Timestamp>, silence: Duration, rec: &ProcessRec) -> bool {
    clock.is_some_and(|clock| clock > rec.base().saturating_add(silence))
}

/// Whether an event whose clock leads the store's by `lead` (taken as it reads when
/// `sane`) contradicts a process held with `held_lead`. A process held ahead is
/// contradicted only by a sane clock more than `disagree` behind it: each held process
/// carries its own estimate of the store's time, so two restarted after one outage are
/// released together. A process held behind is contradicted by every sane clock (one
/// that vouches for the store's time lives: going back would skip forward again when it
/// is heard, and two hosts a minute and a half apart would trade the store's clock every
/// two ticks), and by any held clock further from it than `disagree`: the store's clock
/// goes back only when every process that speaks agrees (two hosts corrected back
/// together are released together).
fn contradicts(sane: bool, lead: i64, held_lead: i64, disagree: u64) -> bool {
    // (Leads are any i64 a clock can read: their difference may not fit one.)
    let apart = (i128::from(held_lead) - i128::from(lead)).unsigned_abs();
    let beyond = apart > u128::from(disagree);
    if held_lead < 0 {
        sane || beyond
    } else {
        sane && beyond
    }
}

/// The verdict on one event's wall clock, `lead` ms ahead of what the store vouches for
/// (`vouched`), from a process the store has heard from before (`known`) or a new
/// incarnation: taken, held, or released (see the module doc).
fn judge_lead(
    config: &Config,
    process: ProcessId,
    rec: &mut ProcessRec,
    now: Now,
    (vouched, lead, known): (Timestamp, i64, bool),
    gap_cause: MissCause,
    out: &mut Out,
) -> Judged {
    if lead.unsigned_abs() <= config.clock_jump.as_millis() {
        rec.hold = None;
        rec.base = Some(vouched.max(now.wall));
        return Judged {
            at: now.wall,
            late_cause: gap_cause,
            waiting: false,
            back: false,
            ahead: false,
        };
    }
    let ahead = lead > 0;
    let by = Duration::from_millis(lead.unsigned_abs());
    if rec.hold.is_none_or(|h| (h.lead > 0) != ahead) {
        rec.hold = Some(ClockHold {
            alone_since: None,
            lead,
            waiting: ahead && !known,
            dormant: false,
            bounded: false,
        });
        let kind = if ahead {
            ClockGapKind::HeldAhead
        } else {
            ClockGapKind::HeldBehind
        };
        out.effects.push(clock_gap(now.wall, process, kind, by));
    }
    let hold = rec.hold.as_mut().expect("set above");
    if hold.lead.abs_diff(lead) > config.clock_jump.as_millis() {
        // The clock jumped again while held: no one has had a chance to contradict the
        // new lead (a clock 2 minutes ahead, which no sane clock contradicts, set a day
        // on would otherwise be released at once), so its solitude starts again.
        hold.alone_since = None;
    }
    hold.lead = lead;
    let since = *hold.alone_since.get_or_insert(now.mono);
    if now.mono.saturating_since(since) >= solitude(config) {
        return release(process, rec, now, by, ahead, out);
    }
    let waiting = hold.waiting;
    rec.base = Some(vouched);
    Judged {
        at: vouched,
        // Its wall clock's jump passed no due time: the store's time is what it works on.
        late_cause: MissCause::Down,
        waiting,
        back: false,
        ahead: false,
    }
}

/// Releases a process held `by` ahead of the store's clock (or behind it) that no sane
/// clock has contradicted for `solitude`: its clock is the only witness, and is taken as
/// right. Ahead, the store's clock moves to it (the store's clock stopped while everyone
/// was down, or every process now agrees it is behind) and the due times it passes are
/// late. Behind, the store's clock goes back to it (the store's clock was set by a clock
/// that ran fast, since corrected): every job's frontier stays, so nothing runs again and
/// the schedule waits for the clock to reach it, instead of running early by its clock
/// for as long as the process lives.
fn release(
    process: ProcessId,
    rec: &mut ProcessRec,
    now: Now,
    by: Duration,
    ahead: bool,
    out: &mut Out,
) -> Judged {
    let waited = rec.waiting();
    rec.hold = None;
    rec.base = Some(now.wall);
    let (kind, by, late_cause) = match (ahead, waited) {
        (true, true) => (ClockGapKind::Released, Duration::ZERO, MissCause::Down),
        (true, false) => (
            ClockGapKind::Released,
            Duration::ZERO,
            MissCause::ClockForward,
        ),
        (false, _) => (ClockGapKind::ReleasedBehind, by, MissCause::Down),
    };
    out.effects.push(clock_gap(now.wall, process, kind, by));
    Judged {
        at: now.wall,
        late_cause,
        waiting: false,
        back: !ahead,
        ahead,
    }
}

/// Compares a known process's wall clock with its monotonic (and sleep-counting) clock
/// since its previous event, and tells a gap as `Notice::ClockGap`: forward more than
/// `config.clock_jump` is `asleep` if the sleep explains it, else `clock_forward` (also
/// when the host reads no such clock: a sleep cannot then be told from a step); back as
/// much is `clock_backward`, announced only (nothing is re-run, no lease looks younger).
/// Returns the cause late due times found now get.
fn observe_gap(
    config: &Config,
    process: ProcessId,
    rec: &ProcessRec,
    now: Now,
    out: &mut Out,
) -> MissCause {
    let threshold = i128::from(config.clock_jump.as_millis());
    let ms = |t: Timestamp| i128::from(t.as_millis());
    let wall = ms(now.wall) - ms(rec.last_wall);
    let mono = ms(now.mono) - ms(rec.last_mono);
    let slept = match (now.boot, rec.last_boot) {
        (Some(b), Some(last)) => Some((ms(b) - ms(last) - mono).max(0)),
        _ => None,
    };
    let lead = wall - mono;
    let (kind, cause) = if lead > threshold {
        // Asleep when the sleep explains the lead (up to the threshold).
        if slept.is_some_and(|s| s + threshold >= lead) {
            (ClockGapKind::Asleep, MissCause::Asleep)
        } else {
            (ClockGapKind::ClockForward, MissCause::ClockForward)
        }
    } else if lead < -threshold {
        (ClockGapKind::ClockBackward, MissCause::Down)
    } else {
        return MissCause::Down;
    };
    let by = Duration::from_millis(u64::try_from(lead.unsigned_abs()).unwrap_or(u64::MAX));
    out.effects.push(clock_gap(now.wall, process, kind, by));
    cause
}

/// How much further ahead than a sane process's clock a held one must read to be
/// contradicted by it: two clock jumps (two minutes by default), one for each clock's
/// allowed skew.
pub(crate) fn disagreement(config: &Config) -> Duration {
    config.clock_jump.saturating_mul(2)
}

/// How long a held process must hear from no process with a sane clock before its own
/// clock is taken as right: two ticks, so that every sane process, waking at least once a
/// tick while anyone is held, has spoken at least once in it.
pub(crate) fn solitude(config: &crate::state::Config) -> Duration {
    config.tick.saturating_mul(2)
}

fn clock_gap(at: Timestamp, process: ProcessId, kind: ClockGapKind, by: Duration) -> Effect {
    Effect::Notice(Notice::ClockGap {
        at,
        process,
        kind,
        by,
    })
}

#[cfg(test)]
mod tests {
    use super::contradicts;
    use crate::state::{ClockHold, ProcessRec};
    use crate::{Config, Duration, Event, Now, ProcessId, State, Timestamp};

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    /// A state whose store's clock reads `at`, from process 1's start there.
    fn started_at(at: i64) -> State {
        let mut state = State::new(Config::default());
        let process = ProcessId(1);
        state.step(
            Now::at(t(at)),
            Event::ProcessStarted { process },
            &mut Vec::new(),
        );
        assert_eq!(state.clock, Some(t(at)));
        state
    }

    #[test]
    fn a_persons_clock_exactly_clock_jump_behind_is_taken_as_it_reads_and_one_further_is_not() {
        let state = started_at(1_000_000_000);
        let jump = Config::default().clock_jump.as_millis() as i64;
        let judged = |wall: i64| state.judge_person_clock(Now::at(t(wall)));
        assert_eq!(judged(1_000_000_000 - jump), t(1_000_000_000 - jump));
        assert_eq!(judged(1_000_000_000 - jump - 1), t(1_000_000_000));
        let ahead = 1_000_000_000 + Duration::from_days(1).as_millis() as i64;
        assert_eq!(judged(ahead), t(ahead), "ahead: nothing says it is wrong");
    }

    #[test]
    fn a_result_read_exactly_clock_jump_behind_is_taken_as_it_reads_and_one_further_is_held() {
        let jump = Config::default().clock_jump.as_millis() as i64;
        let reading = |wall: i64| Now::new(t(wall), t(1_000_000_000));
        let mut state = started_at(1_000_000_000);
        let at = state.judge_result_clock(ProcessId(1), reading(1_000_000_000 - jump));
        assert_eq!(at, t(1_000_000_000 - jump));
        let mut state = started_at(1_000_000_000);
        let at = state.judge_result_clock(ProcessId(1), reading(1_000_000_000 - jump - 1));
        assert_eq!(
            at,
            t(1_000_000_000),
            "held to the store's time, as a tick would be"
        );
    }

    const BOUND: u64 = 120_000;

    #[test]
    fn clocks_exactly_at_the_disagreement_bound_agree() {
        assert!(
            !contradicts(true, 0, 120_000, BOUND),
            "ahead, by a sane clock"
        );
        assert!(contradicts(true, 0, 120_001, BOUND));
        assert!(
            !contradicts(false, -1_500_000, -1_620_000, BOUND),
            "behind, by a held one"
        );
        assert!(contradicts(false, -1_500_000, -1_620_001, BOUND));
    }

    /// A dormant hold behind that speaks again, with the store's clock carried far past
    /// everyone (so every process looks silent) and one sane process last heard at
    /// `heard_at` (the held one last spoke at 1,000,000,000): its solitude starts afresh
    /// exactly when the sane one was heard at or after that.
    fn solitude_kept_on_waking(heard_at: i64) -> bool {
        let mut state = started_at(1_000_000_000);
        let (held, sane) = (ProcessId(1), ProcessId(2));
        let rec = state.processes.get_mut(&held).expect("started");
        rec.base = Some(t(1_000_000_000));
        rec.hold = Some(ClockHold {
            alone_since: Some(t(1_000_000_000)),
            lead: -3_600_000,
            waiting: false,
            dormant: true,
            bounded: false,
        });
        let mut other = ProcessRec::new(Now::at(t(heard_at)));
        other.base = Some(t(heard_at));
        state.processes.insert(sane, other);
        state.clock = Some(t(1_000_000_000 + Duration::from_days(1).as_millis() as i64));
        state.wake_from_silence(held);
        let hold = state.processes[&held].hold.expect("still held");
        assert!(!hold.dormant, "awake again");
        hold.alone_since.is_some()
    }

    #[test]
    fn a_waking_hold_counts_a_clock_heard_since_it_last_spoke_even_at_the_same_instant() {
        assert!(solitude_kept_on_waking(999_999_999), "heard before: alone");
        assert!(
            !solitude_kept_on_waking(1_000_000_000),
            "heard at the same store time"
        );
        assert!(!solitude_kept_on_waking(1_000_000_001), "heard after");
    }

    #[test]
    fn a_sane_clock_contradicts_every_clock_held_behind_and_a_held_one_none_ahead() {
        assert!(contradicts(true, 0, -61_000, BOUND));
        assert!(!contradicts(false, 0, 9_000_000, BOUND));
        assert!(
            contradicts(false, i64::MAX, i64::MIN, BOUND),
            "no overflow at the ends"
        );
    }
}
