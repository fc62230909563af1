//! A daemon over a partitioned store: each round it beats its heart in the daemons table,
//! takes the steps its `Ownership` asks for (claim, leave, release, drop what is lost),
//! takes a turn on each partition it holds (an incarnation of its own there: `Startup`,
//! then the reports of what ended and a tick, in one transaction) and carries out the
//! moves it owes. Its faults: crashes, stalls, clean stops.

use std::collections::BTreeMap;

use duetime::{Effect, Event, Outcome, ProcessId, RunId};
use duetime_loop::{
    owner_round, Incarnation, Member, Order, OwnerIo, Ownership, Partition, PartitionCount, Roster,
    Startup, BATCH_MAX,
};
use rand::Rng;

use super::{ts, Act, PartsWorld, MAX_MOVES};

/// One daemon slot: its incarnation up (or last up), its partitions.
pub(super) struct Daemon {
    pub(super) up: bool,
    /// Stalled: no rounds, no heartbeat, until woken.
    pub(super) frozen: bool,
    /// Names the current plan of rounds (a stall or a crash cancels the rounds planned).
    gen: u64,
    /// Names the incarnation: a run's result comes back to the incarnation that ran it.
    life: u64,
    pub(super) me: ProcessId,
    pub(super) own: Ownership,
    presences: BTreeMap<Partition, Presence>,
}

/// What the daemon runs in one partition it holds: an incarnation of its own there, with a
/// fresh process id at every claim (a partition handed back and claimed again is a new
/// incarnation in that partition's state, never one the state knows as draining).
struct Presence {
    inc: Incarnation,
    startup: Option<Startup>,
    /// Runs whose command ended, reported in the next turn.
    ended: BTreeMap<RunId, Outcome>,
    /// The partition is being handed back: its turns drain the incarnation.
    leaving: bool,
}

impl Daemon {
    /// Whether a collect is due: some partition has runs that ended unreported.
    fn has_ended(&self) -> bool {
        self.presences.values().any(|x| !x.ended.is_empty())
    }
}

impl Daemon {
    pub(super) fn down(count: PartitionCount) -> Daemon {
        Daemon {
            up: false,
            frozen: false,
            gen: 0,
            life: 0,
            me: ProcessId(0),
            own: Ownership::new(ProcessId(0), count, MAX_MOVES),
            presences: BTreeMap::new(),
        }
    }

    /// Whether it counts for taking partitions over: up, awake and not stopping.
    pub(super) fn serves(&self) -> bool {
        self.up && !self.frozen && !self.own.is_stopping()
    }
}

impl PartsWorld {
    fn fresh_process(&mut self) -> ProcessId {
        self.next_process += 1;
        ProcessId(self.next_process)
    }

    fn plan_round(&mut self, d: usize, after: i64) {
        let jitter = self.rng.gen_range(0..500);
        let gen = self.daemons[d].gen;
        self.at(self.t + after + jitter, Act::Round { d, gen });
    }

    /// A daemon starts: a fresh incarnation, heard from at once.
    pub(super) fn restart(&mut self, d: usize) {
        if self.daemons[d].up {
            return;
        }
        let me = self.fresh_process();
        let daemon = &mut self.daemons[d];
        daemon.up = true;
        daemon.frozen = false;
        daemon.gen += 1;
        daemon.life += 1;
        daemon.me = me;
        daemon.own = Ownership::new(me, self.cfg.partitions, MAX_MOVES);
        daemon.presences.clear();
        self.members.push(Member {
            process: me,
            alive_until: ts(self.t + self.cfg.ttl_ms),
            stopping: false,
        });
        self.serving_changed();
        self.plan_round(d, 0);
    }

    /// `kill -9`: its runs go on as orphans nobody reports (their leases lapse, the core
    /// runs them again), its partitions' leases run out.
    pub(super) fn crash(&mut self, d: usize) {
        if !self.daemons[d].up {
            return;
        }
        self.probe("daemon crashed");
        let me = self.daemons[d].me;
        let daemon = &mut self.daemons[d];
        daemon.up = false;
        daemon.frozen = false;
        daemon.gen += 1;
        daemon.life += 1;
        daemon.presences.clear();
        self.check.owner_gone(me, self.t, &self.lease_owners());
        self.serving_changed();
        let back = self.rng.gen_range(5_000..180_000);
        self.at(self.t + back, Act::Restart { d });
    }

    /// Frozen for one to three lease times: no heartbeat, no rounds.
    pub(super) fn stall(&mut self, d: usize) {
        let daemon = &mut self.daemons[d];
        if !daemon.up || daemon.frozen {
            return;
        }
        daemon.frozen = true;
        daemon.gen += 1;
        self.probe("daemon stalled");
        let me = self.daemons[d].me;
        self.check.owner_gone(me, self.t, &self.lease_owners());
        self.serving_changed();
        let ttl = self.cfg.ttl_ms;
        let long = self.rng.gen_range(ttl..3 * ttl);
        self.at(self.t + long, Act::Wake { d });
    }

    /// Woken: it writes first, on the partitions it believes it holds (a process that
    /// keeps writing after losing them: each write is refused by its epoch), then goes
    /// back to its rounds.
    pub(super) fn wake(&mut self, d: usize) {
        let daemon = &mut self.daemons[d];
        if !daemon.up || !daemon.frozen {
            return;
        }
        daemon.frozen = false;
        daemon.gen += 1;
        let held: Vec<Partition> = daemon.presences.keys().copied().collect();
        for p in held {
            self.turn(d, p);
        }
        self.serving_changed();
        self.plan_round(d, 0);
    }

    /// SIGTERM: every partition left at once, drained, released; then it exits.
    pub(super) fn stop(&mut self, d: usize) {
        if !self.daemons[d].serves() {
            return;
        }
        self.probe("daemon stopping");
        self.daemons[d].own.stop();
        let me = self.daemons[d].me;
        if let Some(m) = self.members.iter_mut().find(|m| m.process == me) {
            m.stopping = true;
        }
        self.serving_changed();
    }

    /// One round of daemon `d`.
    pub(super) fn round(&mut self, d: usize, gen: u64) {
        let daemon = &self.daemons[d];
        if !daemon.up || daemon.frozen || daemon.gen != gen {
            return;
        }
        if self.trace.is_some() {
            let daemon = &self.daemons[d];
            let held: Vec<String> = daemon
                .own
                .held()
                .map(|(p, e, _)| format!("{p}@{e}"))
                .collect();
            let members: Vec<String> = self
                .members
                .iter()
                .map(|m| format!("{}{}", m.process, if m.stopping { "s" } else { "" }))
                .collect();
            let line = format!(
                "round d{d} {} holds [{}] members [{}]",
                daemon.me,
                held.join(" "),
                members.join(" ")
            );
            self.note(|| line);
        }
        // The owner's round as the daemon runs it (`duetime_loop::owner_round`), over this
        // world's store and incarnations; a commit whose answer is lost ends it there.
        let placeholder = Ownership::new(ProcessId(0), self.cfg.partitions, MAX_MOVES);
        let mut own = std::mem::replace(&mut self.daemons[d].own, placeholder);
        let _answer_lost = owner_round(&mut own, &mut SimOwner { w: self, d });
        self.daemons[d].own = own;
        let held: Vec<Partition> = self.daemons[d].presences.keys().copied().collect();
        for p in held {
            self.turn(d, p);
        }
        self.owed_moves(d);
        if self.daemons[d].own.is_done() {
            self.exit(d);
            return;
        }
        self.plan_round(d, self.cfg.tick_ms);
    }

    /// The daemon's poll between rounds: the partitions with runs that ended report them,
    /// each in one transaction with a tick (a group commit).
    pub(super) fn collect(&mut self, d: usize, gen: u64) {
        let daemon = &self.daemons[d];
        if !daemon.up || daemon.frozen || daemon.gen != gen || !daemon.has_ended() {
            return;
        }
        let ready: Vec<Partition> = daemon
            .presences
            .iter()
            .filter(|(_, x)| !x.ended.is_empty() && x.startup.is_none())
            .map(|(&p, _)| p)
            .collect();
        for p in ready {
            self.turn(d, p);
        }
    }

    fn heartbeat(&mut self, d: usize, stopping: bool) {
        let me = self.daemons[d].me;
        let until = ts(self.t + self.cfg.ttl_ms);
        // An upsert of its row (a row forgotten while it stalled comes back), and the
        // rows of daemons gone a lease ago are forgotten.
        let now = ts(self.t);
        self.members
            .retain(|m| m.alive_until > now && m.process != me);
        self.members.push(Member {
            process: me,
            alive_until: until,
            stopping,
        });
    }

    /// A clean stop completed: every partition handed back.
    fn exit(&mut self, d: usize) {
        self.probe("daemon stopped cleanly");
        let me = self.daemons[d].me;
        self.members.retain(|m| m.process != me);
        let daemon = &mut self.daemons[d];
        daemon.up = false;
        daemon.gen += 1;
        daemon.life += 1;
        self.serving_changed();
        let back = self.rng.gen_range(5_000..120_000);
        self.at(self.t + back, Act::Restart { d });
    }

    /// The incarnation in `p` drains (the core's `ProcessDraining`); one that never
    /// registered holds nothing and is drained at once.
    fn leave(&mut self, d: usize, p: Partition) {
        self.probe("partition left");
        let Some(x) = self.daemons[d].presences.get_mut(&p) else {
            return;
        };
        if x.startup.is_some() {
            x.inc.drain_committed();
            return;
        }
        // The drain goes with this round's turn there, and with every turn after until its
        // commit is heard: a drain whose answer was lost is sent again, or the incarnation
        // would drain in the store, claim nothing, and never be let go here.
        x.leaving = true;
    }

    /// Whether the answer of a transaction that committed is lost (never once healed).
    fn answer_lost(&mut self) -> bool {
        let lost = !self.healed && self.rng.gen_bool(self.cfg.lost_answer);
        if lost {
            self.probe("commit answer lost");
        }
        lost
    }

    /// One turn on partition `p`: its start-up, or the reports of what ended and a tick,
    /// in one transaction under the daemon's epoch there.
    fn turn(&mut self, d: usize, p: Partition) {
        let me = self.daemons[d].me;
        let epoch = self.daemons[d].own.epoch(p).unwrap_or(0);
        let Some(x) = self.daemons[d].presences.get(&p) else {
            self.note(|| format!("d{d} holds {p} without an incarnation there"));
            return;
        };
        if let Some(startup) = &x.startup {
            let events: Vec<Event> = startup.next_event().into_iter().collect();
            if let Ok(effects) = self.transact(p, me, epoch, events) {
                if !self.answer_lost() {
                    self.heard(d, p, &effects, &[]);
                }
            }
            return;
        }
        if let Some(drain) = x.leaving.then(|| x.inc.drain()).flatten() {
            // A drain commits on its own (docs/host-contract.md: a batch holds reports and
            // a tick only), before the turn's batch.
            let Ok(effects) = self.transact(p, me, epoch, vec![drain]) else {
                return;
            };
            if self.answer_lost() {
                return;
            }
            if let Some(x) = self.daemons[d].presences.get_mut(&p) {
                x.inc.drain_committed();
            }
            self.heard(d, p, &effects, &[]);
        }
        let Some(x) = self.daemons[d].presences.get(&p) else {
            return;
        };
        let ended = x.ended.iter().map(|(&run, o)| (run, o.clone()));
        let mut batch = x.inc.batch(ended, true, BATCH_MAX);
        let Ok(effects) = self.transact(p, me, epoch, batch.take_events()) else {
            return;
        };
        if self.answer_lost() {
            return;
        }
        if let Some(x) = self.daemons[d].presences.get_mut(&p) {
            x.inc.committed(&batch);
        }
        self.heard(d, p, &effects, batch.reports());
    }

    /// What a turn's committed answer means for the incarnation in `p`.
    fn heard(
        &mut self,
        d: usize,
        p: Partition,
        effects: &[Effect],
        reports: &[(RunId, duetime::Fence)],
    ) {
        let life = self.daemons[d].life;
        let Some(x) = self.daemons[d].presences.get_mut(&p) else {
            return;
        };
        if let Some(startup) = &mut x.startup {
            startup.committed(effects);
            if startup.is_done() {
                x.startup = None;
            }
        }
        for (run, _) in reports {
            x.ended.remove(run);
        }
        let process = x.inc.process();
        let mut launches = Vec::new();
        for e in effects {
            match x.inc.take(e) {
                Some(Order::Launch { run, job, .. }) => launches.push((run, Some(job))),
                Some(Order::Stop {
                    run, held: true, ..
                }) => launches.push((run, None)),
                _ => {}
            }
        }
        for (run, job) in launches {
            let (after, outcome) = match job {
                Some(job) => self.drawn_run(&job),
                None => (1_000, Outcome::TimedOut),
            };
            let done = Act::RunDone {
                d,
                life,
                part: p,
                process,
                run,
                outcome,
            };
            self.at(self.t + after, done);
        }
    }

    /// How long a run of `job` takes and how it ends: at most a third of its period, three
    /// seconds in a lane (so a healthy world keeps up), one in ten failing.
    fn drawn_run(&mut self, job: &duetime::JobName) -> (i64, Outcome) {
        let def = self.defs.get(job);
        let period = match def.map(|d| &d.schedule) {
            Some(duetime::Schedule::Every { period, .. }) => period.as_millis() as i64,
            _ => 60_000,
        };
        // A lane is shared: its jobs' runs are short, so that every lane keeps up.
        let keyed = def.is_some_and(|d| d.concurrency_key.is_some());
        let longest = if keyed {
            3_000
        } else {
            (period / 3).clamp(1_001, 60_000)
        };
        let after = self.rng.gen_range(1_000..longest);
        let outcome = if self.rng.gen_bool(0.1) {
            Outcome::failed("exit 1")
        } else {
            Outcome::Ok
        };
        (after, outcome)
    }

    /// A run's command ended: told to the incarnation that ran it, if it is still there.
    pub(super) fn run_done(
        &mut self,
        d: usize,
        life: u64,
        p: Partition,
        process: ProcessId,
        run: RunId,
        outcome: Outcome,
    ) {
        let daemon = &mut self.daemons[d];
        let here = daemon
            .presences
            .get_mut(&p)
            .filter(|x| x.inc.process() == process);
        match here {
            Some(x) if daemon.life == life && x.inc.holding(run).is_some() => {
                x.ended.insert(run, outcome);
                if !daemon.frozen {
                    let gen = daemon.gen;
                    let poll = self.rng.gen_range(200..1_000);
                    self.at(self.t + poll, Act::Collect { d, gen });
                }
            }
            _ => self.probe("a result no incarnation took"),
        }
    }

    /// The moves this daemon owes: pending definitions of jobs in partitions it holds.
    fn owed_moves(&mut self, d: usize) {
        if self.pending.is_empty() {
            return;
        }
        let me = self.daemons[d].me;
        let owed: Vec<_> = self.pending.values().cloned().collect();
        for def in owed {
            let Some(from) = self.where_is(&def.name) else {
                continue;
            };
            if let Some(epoch) = self.daemons[d].own.epoch(from) {
                self.move_pending(&def, Some((me, epoch)));
            }
        }
    }

    /// Each partition's lease holder, in partition order.
    fn lease_owners(&self) -> Vec<Option<ProcessId>> {
        self.parts.iter().map(|p| p.lease.owner).collect()
    }

    /// Tells the checker whether some daemon serves now (X2's clock starts only then).
    pub(super) fn serving_changed(&mut self) {
        let serving = self.daemons.iter().any(Daemon::serves);
        self.check.serving(serving, self.t);
    }
}

/// A commit whose answer was lost: the daemon does not know it committed, and its round
/// ends there, as on a store error.
struct AnswerLost;

/// The world's side of daemon `d`'s owner round: the store's leases and heartbeats, and an
/// incarnation (`Presence`) per partition it holds.
struct SimOwner<'a> {
    w: &'a mut PartsWorld,
    d: usize,
}

impl OwnerIo for SimOwner<'_> {
    type Error = AnswerLost;

    /// Its heartbeat (an upsert of its row; rows of daemons gone a lease ago forgotten),
    /// then what the store holds, by the store's clock.
    fn beat(&mut self, stopping: bool) -> Result<Roster, AnswerLost> {
        let w = &mut *self.w;
        w.heartbeat(self.d, stopping);
        w.check.overdue(w.t);
        Ok(Roster {
            now: ts(w.t),
            leases: w.parts.iter().map(|p| p.lease).collect(),
            members: w.members.clone(),
        })
    }

    /// The world's seats never end unasked: their incarnations stop only with the daemon.
    fn ended_unasked(&mut self, _: Partition) -> bool {
        false
    }

    fn drained(&mut self, p: Partition) -> bool {
        let presences = &self.w.daemons[self.d].presences;
        presences.get(&p).is_none_or(|x| x.inc.is_drained())
    }

    fn claim(&mut self, p: Partition, seen: u64) -> Result<Option<u64>, AnswerLost> {
        let me = self.w.daemons[self.d].me;
        let Some(epoch) = self.w.claim(p, me, seen) else {
            return Ok(None);
        };
        if self.w.answer_lost() {
            self.w.check.claim_unheard(p, self.w.t);
            return Err(AnswerLost);
        }
        Ok(Some(epoch))
    }

    /// A new incarnation there, with a fresh process id, starting up.
    fn seat(&mut self, p: Partition, _epoch: u64) -> bool {
        let process = self.w.fresh_process();
        self.w.daemons[self.d].presences.insert(
            p,
            Presence {
                inc: Incarnation::new(process),
                startup: Some(Startup::new(process, Vec::new())),
                ended: BTreeMap::new(),
                leaving: false,
            },
        );
        true
    }

    fn release(&mut self, p: Partition, epoch: u64) -> Result<bool, AnswerLost> {
        let me = self.w.daemons[self.d].me;
        let released = self.w.release(p, me, epoch);
        if self.w.answer_lost() {
            return Err(AnswerLost);
        }
        Ok(released)
    }

    fn leave(&mut self, p: Partition) {
        self.w.leave(self.d, p);
    }

    fn unseat(&mut self, p: Partition) {
        self.w.daemons[self.d].presences.remove(&p);
    }

    fn lost(&mut self, p: Partition) {
        self.w.probe("partition found lost");
        self.w.daemons[self.d].presences.remove(&p);
    }
}
