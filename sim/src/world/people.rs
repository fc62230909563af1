//! The world's people: their commands (pauses, runs now, backfills, redefinitions,
//! approvals), their mistakes, bursts of trouble, and the end of the faults (`heal`).

use super::*;
use crate::check::Probe;

impl World {
    /// Someone redefines a job (a burst of redefinitions while its runs are out).
    pub(super) fn redefine(&mut self, job: usize) {
        if let Some(event) = self.redefinition(job, Actor::new("bo")) {
            let now = Now::at(Timestamp::from_millis(self.t));
            self.transact(None, now, event);
        }
    }

    /// Someone approves a run parked awaiting approval (sometimes late, sometimes twice).
    pub(super) fn approve(&mut self, job: JobName, run: RunId) {
        let now = Now::at(Timestamp::from_millis(self.t));
        let actor = Actor::new(["ana", "bo", "cy"][self.rng.gen_range(0..3)]);
        self.transact(None, now, Event::ApprovalGiven { job, run, actor });
    }

    /// Someone presses "run now".
    pub(super) fn run_now(&mut self, job: JobName) {
        let now = Now::at(Timestamp::from_millis(self.t));
        let actor = Actor::new(["ana", "bo", "cy"][self.streams.slips.gen_range(0..3)]);
        *self.faults.entry("command").or_default() += 1;
        self.transact(None, now, Event::RunNow { job, actor });
    }

    /// A run parked awaiting approval: a person may approve it (sometimes after its ttl,
    /// sometimes twice), or its host may finish it another way with a result under its
    /// fence; else it expires. Now and then someone asks to run the job meanwhile (refused
    /// `awaiting_approval`: R3).
    pub(super) fn parked(&mut self, job: &JobName, run: RunId, until: Timestamp, wall: Timestamp) {
        let ttl = until
            .as_millis()
            .saturating_sub(wall.as_millis())
            .max(1_000);
        if self.streams.slips.gen_bool(0.2) {
            // Someone who has not seen that it waits for a sign-off asks to run it now.
            let t = self.t + self.streams.slips.gen_range(0..ttl);
            self.at(t, Action::RunNow { job: job.clone() });
        }
        let roll: f64 = self.rng.gen_range(0.0..1.0);
        if roll < 0.55 {
            let t = self.t + self.rng.gen_range(0..ttl + ttl / 3);
            let job = job.clone();
            self.at(
                t,
                Action::Approve {
                    job: job.clone(),
                    run,
                },
            );
            if self.rng.gen_bool(0.2) {
                // A second person approves it too: refused, it is settled already.
                let t2 = t + self.rng.gen_range(1_000..600_000);
                self.at(t2, Action::Approve { job, run });
            }
        } else if roll < 0.7 {
            let fence = self
                .state
                .seq_of_name(job.as_str())
                .and_then(|seq| self.state.record(seq))
                .and_then(|r| r.run())
                .filter(|r| r.id() == run)
                .map(|r| (r.fence(), r.holder()));
            if let Some((fence, process)) = fence {
                let outcome = if self.rng.gen_bool(0.7) {
                    Outcome::Ok
                } else {
                    Outcome::failed("rejected")
                };
                let t = self.t + self.rng.gen_range(0..ttl);
                let job = job.clone();
                self.at(
                    t,
                    Action::Deliver {
                        process,
                        run,
                        job,
                        fence,
                        outcome,
                    },
                );
            }
        }
    }

    /// In a third of the worlds of late draws, someone runs one job by hand again and again:
    /// 40 presses of "run now", 30 s to 2 min apart, from a time in the safety phase, on
    /// the job safe to repeat whose runs are shortest. Enough of them are queued (not in
    /// flight) to meet `manual_per_hour`, and R3 holds each answer to the cap. From a
    /// stream of its own.
    pub(super) fn schedule_presses(&mut self, t0: i64) {
        let mut presses = stream_rng(self.cfg.seed, Stream::Presses);
        if !presses.gen_ratio(1, 3) {
            return;
        }
        let Some(job) = self
            .jobs
            .iter()
            .filter(|j| j.def.safe_to_repeat && !j.def.requires_confirmation)
            .min_by_key(|j| j.behaviour.duration_ms.1)
            .map(|j| j.def.name.clone())
        else {
            return;
        };
        let mut t = t0 + presses.gen_range(0..self.cfg.safety_ms.max(1));
        for _ in 0..40 {
            self.at(t, Action::RunNow { job: job.clone() });
            t += presses.gen_range(30_000..120_000);
        }
    }

    /// A failed run waits `wait` ms for its retry: in the worlds of late draws, a person
    /// pauses the job meanwhile one time in four (most often late in the wait, when the
    /// due times it covers are oldest), and resumes it minutes later.
    pub(super) fn retry_waits(&mut self, job: JobName, wait: i64) {
        if !self.cfg.late_draws || wait < 2 || !self.streams.waits.gen_ratio(1, 4) {
            return;
        }
        let t = self.t + self.streams.waits.gen_range(wait / 2..wait);
        self.at(
            t,
            Action::PauseWaiting {
                job: job.clone(),
                resume: false,
            },
        );
        let back = t + self.streams.waits.gen_range(1_000..3_600_000);
        self.at(back, Action::PauseWaiting { job, resume: true });
    }

    /// A person pauses (or resumes) `job`, reading the true time.
    pub(super) fn pause_waiting(&mut self, job: JobName, resume: bool) {
        let actor = Actor::new("dee");
        let event = if resume {
            Event::Resume { job, actor }
        } else {
            self.probes.add(Probe::PausedWhileARetryWaits, 1);
            Event::Pause {
                job,
                actor,
                note: "retry on hold".into(),
            }
        };
        self.transact(None, Now::at(Timestamp::from_millis(self.t)), event);
    }

    /// A burst of trouble around one host: a crash loop (three to six crashes, each within
    /// seconds of the restart before, often in the middle of a catch-up), a run of three to
    /// five redefinitions of one job within minutes while its runs are out, or a drain
    /// seconds after a clock jump.
    pub(super) fn burst(&mut self, host: usize) {
        match self.rng.gen_range(0..3) {
            0 => {
                *self.faults.entry("burst: crash loop").or_default() += 1;
                self.hosts[host].crash_loop = self.rng.gen_range(2..=5);
                self.crash(host);
            }
            1 => {
                let i = self.rng.gen_range(0..self.jobs.len());
                if self.jobs[i].alternatives.is_empty() || self.removed[i] {
                    return;
                }
                *self.faults.entry("burst: redefinitions").or_default() += 1;
                let mut t = self.t;
                for _ in 0..self.rng.gen_range(3..=5) {
                    t += self.rng.gen_range(1_000..90_000);
                    self.at(t, Action::Redefine { job: i });
                }
            }
            _ => {
                *self
                    .faults
                    .entry("burst: drain during a clock jump")
                    .or_default() += 1;
                self.jump(host);
                let t = self.t + self.rng.gen_range(1_000..10_000);
                self.at(t, Action::DrainNow { host });
            }
        }
    }

    /// Job `i`'s definition is about to change: a person may later confirm the digest
    /// they read before (a stale confirmation). Only a job that requires confirmation is
    /// ever confirmed, and a digest is a SHA-256 over the whole definition, so only those
    /// note it.
    pub(super) fn note_prev_digest(&mut self, i: usize) {
        if self.jobs[i].def.requires_confirmation {
            self.prev_digests[i] = Some(self.jobs[i].def.digest().to_string());
        }
    }

    /// Job `i` moves to one of its other schedules: the `Upsert` a person sends (none when
    /// it has no other schedule).
    pub(super) fn redefinition(&mut self, i: usize, actor: Actor) -> Option<Event> {
        if self.jobs[i].alternatives.is_empty() {
            return None;
        }
        let alt = self.rng.gen_range(0..self.jobs[i].alternatives.len());
        let (schedule, spec) = self.jobs[i].alternatives[alt].clone();
        self.note_prev_digest(i);
        let old = (self.jobs[i].def.schedule.clone(), self.jobs[i].spec.clone());
        self.jobs[i].alternatives[alt] = old;
        self.jobs[i].def.schedule = schedule;
        self.jobs[i].spec = spec;
        *self.faults.entry("schedule change").or_default() += 1;
        self.move_lane(i);
        Some(Event::Upsert {
            def: Box::new(self.jobs[i].def.clone()),
            actor,
        })
    }

    /// One schedule change in three also moves the job to another concurrency key of the
    /// world (or off keys, or onto one), with that key's width, whether or not its run is
    /// open: the run keeps counting where it started (C1, V1's counts), its wait and what
    /// it starts next follow the key in force (C3, C4).
    pub(super) fn move_lane(&mut self, i: usize) {
        if self.lane_keys.is_empty() || !self.streams.moves.gen_ratio(1, 3) {
            return;
        }
        let pick = self.streams.moves.gen_range(0..=self.lane_keys.len());
        let (key, width) = self.lane_keys.get(pick).cloned().unzip();
        let def = &mut self.jobs[i].def;
        if def.concurrency_key == key {
            return;
        }
        def.concurrency_key = key;
        def.concurrency_limit = width.flatten();
        *self.faults.entry("concurrency key change").or_default() += 1;
    }

    /// The clock a person's command carries: true time, but one in eight from a machine
    /// read exactly `clock_jump` behind the store's clock (taken as it reads), a millisecond
    /// further (dated on the store's clock) or hours slow (J1 holds each to the rule).
    pub(super) fn person_now(&mut self) -> Now {
        let true_now = Now::at(Timestamp::from_millis(self.t));
        let Some(store) = self.state.clock() else {
            return true_now;
        };
        if !self.streams.slow.gen_ratio(1, 8) {
            return true_now;
        }
        let jump = self.state.config().clock_jump.as_millis() as i64;
        let behind = match self.streams.slow.gen_range(0..3) {
            0 => jump,
            1 => jump + 1,
            _ => self.streams.slow.gen_range(1..=6) * 3_600_000,
        };
        *self.faults.entry("person's clock slow").or_default() += 1;
        Now::at(Timestamp::from_millis(store.as_millis() - behind))
    }

    /// A change of what the host runs (a new command) to job `i`, nothing else: held for a
    /// job that requires confirmation like any other change (H1).
    pub(super) fn command_changed(&mut self, i: usize, actor: Actor) -> Event {
        self.note_prev_digest(i);
        self.commands_changed += 1;
        self.jobs[i].def.payload = Some(format!("command v{}", self.commands_changed));
        *self.faults.entry("command change").or_default() += 1;
        Event::Upsert {
            def: Box::new(self.jobs[i].def.clone()),
            actor,
        }
    }

    /// A person confirms what they were shown of job `i`: mostly the latest definition,
    /// sometimes one they read before it was changed again (stale).
    pub(super) fn confirmation(&mut self, i: usize, job: JobName, actor: Actor) -> Event {
        let stale = self.prev_digests[i]
            .clone()
            .filter(|_| self.rng.gen_bool(0.3));
        let digest = stale.unwrap_or_else(|| self.jobs[i].def.digest().to_string());
        *self.faults.entry("confirm").or_default() += 1;
        Event::Confirm { job, digest, actor }
    }

    /// A person does something to a random job.
    pub(super) fn command(&mut self) {
        let i = self.rng.gen_range(0..self.jobs.len());
        let name = self.jobs[i].def.name.clone();
        let actor = Actor::new(["ana", "bo", "cy"][self.rng.gen_range(0..3)]);
        let now = self.person_now();
        let kind = self.rng.gen_range(0..16);
        if matches!(kind, 8 | 9 | 11) && self.streams.slips.gen_ratio(1, 8) {
            // One definition change in eight is a mistake.
            *self.faults.entry("command").or_default() += 1;
            self.mistake(i, actor);
            return;
        }
        let event = match kind {
            0..=2 => Event::Pause {
                job: name,
                actor,
                note: self.pause_note(),
            },
            3..=5 => Event::Resume { job: name, actor },
            6 | 7 => Event::RunNow { job: name, actor },
            8 | 9 if !self.jobs[i].alternatives.is_empty() => {
                self.redefinition(i, actor).expect("it has alternatives")
            }
            11 => self.command_changed(i, actor),
            10 if !self.removed[i] && self.rng.gen_bool(0.2) => {
                self.removed[i] = true;
                *self.faults.entry("job removed").or_default() += 1;
                Event::Remove { job: name, actor }
            }
            12 | 13 if self.jobs[i].def.requires_confirmation => self.confirmation(i, name, actor),
            14 | 15 if self.streams.bursts.gen_ratio(1, 6) => {
                self.backfill_burst(i, actor, now);
                return;
            }
            14 | 15 => {
                let (from, to) = self.backfill_range(i);
                let from = self.or_from_the_beginning(i, from);
                self.probes.add(Probe::BackfillAsked, 1);
                Event::Backfill {
                    job: name,
                    from: Timestamp::from_millis(from),
                    to: Timestamp::from_millis(to),
                    actor,
                }
            }
            _ => Event::ForgetActor { actor },
        };
        *self.faults.entry("command").or_default() += 1;
        self.transact(None, now, event);
    }

    /// A pause's note: mostly a word, one in eight a note of exactly `MAX_TITLE`
    /// characters (accepted) or one more (refused `note_too_long`), each character two
    /// bytes, so a length counted in bytes shows.
    pub(super) fn pause_note(&mut self) -> String {
        if !self.streams.slips.gen_ratio(1, 8) {
            return "maintenance".into();
        }
        let len = crate::mistakes::MAX_TITLE + usize::from(self.streams.slips.gen_bool(0.5));
        self.probes.add(Probe::PauseNoteAtOrOverItsBound, 1);
        std::iter::repeat_n('é', len).collect()
    }

    /// A person gets a definition wrong: one change from the table of `crate::mistakes`,
    /// either breaking one rule (refused `invalid`, the job keeps its definition: R3) or
    /// putting one field exactly at its bound (accepted), which the person then sets back
    /// at once, sent until it commits: the world's jobs keep the definitions the checker's
    /// facts describe, and nothing runs in between. (A removed job gets only the former:
    /// a definition it accepted would bring the job back.)
    pub(super) fn mistake(&mut self, i: usize, actor: Actor) {
        use crate::mistakes::RULES;
        let tick = Duration::from_millis(self.cfg.tick_ms as u64);
        // `after`'s rule (the table's last) only in worlds with chains: worlds without them
        // draw as they did before it, so their seeds meet what they met.
        let chained = self.jobs.iter().any(|j| !j.def.after.is_empty());
        let drawn = if chained {
            RULES.len()
        } else {
            RULES.len() - 1
        };
        let rule = &RULES[self.streams.slips.gen_range(0..drawn)];
        let at_bound =
            !rule.at_bound.is_empty() && !self.removed[i] && self.streams.slips.gen_bool(0.5);
        let changes = if at_bound { rule.at_bound } else { rule.wrong };
        let change = changes[self.streams.slips.gen_range(0..changes.len())];
        let mut def = self.jobs[i].def.clone();
        if !change(&mut def, tick) {
            return;
        }
        let probe = if at_bound {
            Probe::DefinitionAtABoundSent
        } else {
            Probe::DefinitionBreakingARuleSent
        };
        self.probes.add(probe, 1);
        let now = Now::at(Timestamp::from_millis(self.t));
        let event = Event::Upsert {
            def: Box::new(def),
            actor: actor.clone(),
        };
        if !self.transact(None, now, event) || !at_bound {
            return;
        }
        loop {
            let def = Box::new(self.jobs[i].def.clone());
            let actor = actor.clone();
            if self.transact(None, now, Event::Upsert { def, actor }) {
                break;
            }
        }
    }

    /// A person's burst of backfills of one job, all at once: up to 36 ranges, newest
    /// first, each of one to three due times of its schedule (the oracle's) before the
    /// job's accounted start, most one or two due times apart (debts the core cannot
    /// merge), one in five right against the range after it (a pair it can). That fills the
    /// owed line of `MAX_OWED_SEGMENTS`, so R3 sees backfills refused `owed_line_full`
    /// exactly when no merge makes room, N1 a line that never needs more, M1 a catch-up
    /// window that never gives a backfill up. Half the time the person then changes the
    /// job: a new schedule (which a `required` job's full line must refuse, and any other's
    /// must take) or a new command (taken whatever the line holds).
    pub(super) fn backfill_burst(&mut self, i: usize, actor: Actor, now: Now) {
        const RANGES: usize = BURST_RANGES;
        let due = self.due_before_accounted(i, RANGES * 5);
        if due.len() < 8 {
            return;
        }
        self.probes.add(Probe::BackfillBurst, 1);
        let ranges = self.streams.bursts.gen_range(BURST_RANGES_FEWEST..=RANGES);
        let mut newest = due.len();
        for _ in 0..ranges {
            let take = self.streams.bursts.gen_range(1..=3).min(newest);
            if take == 0 {
                break;
            }
            let (from, to) = (due[newest - take], due[newest - 1]);
            let apart = if self.streams.bursts.gen_ratio(1, 5) {
                0
            } else {
                self.streams.bursts.gen_range(1..=2)
            };
            newest = newest.saturating_sub(take + apart);
            let event = Event::Backfill {
                job: self.jobs[i].def.name.clone(),
                from: Timestamp::from_millis(from),
                to: Timestamp::from_millis(to),
                actor: actor.clone(),
            };
            self.transact(None, now, event);
        }
        if self.streams.bursts.gen_bool(0.5) {
            self.change_after_burst(i, actor, now);
        }
    }

    /// Up to `want` due times of job `i`'s schedule before its accounted start (where a
    /// backfill must end), ascending: looked for over an hour back, then twice as far,
    /// up to a year.
    pub(super) fn due_before_accounted(&self, i: usize, want: usize) -> Vec<i64> {
        const HOUR: i64 = 3_600_000;
        let Some(accounted) = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .and_then(|r| r.accounted_from())
            .map(|t| t.as_millis())
        else {
            return Vec::new();
        };
        let mut back = HOUR;
        loop {
            let due: Vec<i64> = self.jobs[i]
                .spec
                .due_in(accounted - back, accounted)
                .iter()
                .map(|d| d.at)
                .collect();
            if due.len() >= want || back > 366 * 24 * HOUR {
                let skip = due.len().saturating_sub(want);
                return due[skip..].to_vec();
            }
            back *= 2;
        }
    }

    /// After a burst, the same person changes the job: a new schedule (when it has another)
    /// or a new command. A change the core did not take (refused: a `required` job's line
    /// with no room for it; or aborted) is taken back, so the world's job stays the one in
    /// force.
    pub(super) fn change_after_burst(&mut self, i: usize, actor: Actor, now: Now) {
        let before = (self.jobs[i].clone(), self.prev_digests[i].clone());
        let event = if self.streams.bursts.gen_bool(0.5) {
            self.redefinition(i, actor.clone())
        } else {
            None
        };
        let event = event.unwrap_or_else(|| {
            self.note_prev_digest(i);
            self.commands_changed += 1;
            self.jobs[i].def.payload = Some(format!("command v{}", self.commands_changed));
            Event::Upsert {
                def: Box::new(self.jobs[i].def.clone()),
                actor: actor.clone(),
            }
        });
        self.probes.add(Probe::ChangeAfterABackfillBurst, 1);
        self.transact(None, now, event);
        let name = self.jobs[i].def.name.as_str();
        let record = self
            .state
            .seq_of_name(name)
            .and_then(|seq| self.state.record(seq));
        let sent = &self.jobs[i].def;
        let taken =
            record.is_some_and(|r| r.def() == sent || r.held().is_some_and(|h| h.def() == sent));
        if !taken {
            self.probes.add(Probe::ChangeAfterABackfillBurstNotTaken, 1);
            (self.jobs[i], self.prev_digests[i]) = before;
        }
    }

    /// The range a person asks to backfill, knowing the job's accounted start (where a
    /// backfill must end; the state's `accounted_from`, which an `already_accounted` refusal
    /// names): mostly a range ending there or a little before, sometimes one reaching into
    /// accounted time, an empty one, a short one months back or all of the months since
    /// (refused as too many for frequent schedules), or the accounted start alone.
    pub(super) fn backfill_range(&mut self, i: usize) -> (i64, i64) {
        const MINUTE: i64 = 60_000;
        const HOUR: i64 = 60 * MINUTE;
        const DAY: i64 = 24 * HOUR;
        let accounted = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .and_then(|r| r.accounted_from())
            .map_or(self.t, |t| t.as_millis());
        let span = [10 * MINUTE, HOUR, 3 * HOUR, 8 * HOUR, DAY][self.rng.gen_range(0..5)];
        match self.rng.gen_range(0..20) {
            0..=11 => {
                let to = if self.rng.gen_bool(0.3) {
                    accounted
                } else {
                    accounted - self.rng.gen_range(0..2 * HOUR)
                };
                (to - span, to)
            }
            12..=14 => {
                let to = accounted + self.rng.gen_range(1_000..6 * HOUR);
                (to - span, to)
            }
            15 => {
                let from = accounted - self.rng.gen_range(0..HOUR);
                (from, from - self.rng.gen_range(1..HOUR))
            }
            16 | 17 => {
                let from = accounted - self.rng.gen_range(30 * DAY..400 * DAY);
                if self.rng.gen_bool(0.5) {
                    (from, from + span)
                } else {
                    (from, accounted)
                }
            }
            _ => (accounted, accounted),
        }
    }

    /// One backfill in eight of a job on a grid or a one-shot asks from the earliest
    /// instant there is (`Timestamp::MIN`, "from the beginning"): a grid's whole past is
    /// refused `too_many_due_times` with its exact count, a one-shot's instant before the
    /// range's end is taken (R3). (Not a cron or calendar job's: the checker's oracle would
    /// walk its whole past to count it. The schedule in force is the core's: a held definition's
    /// waits for its confirmation.)
    pub(super) fn or_from_the_beginning(&mut self, i: usize, from: i64) -> i64 {
        let cron = self
            .state
            .seq_of_name(self.jobs[i].def.name.as_str())
            .and_then(|seq| self.state.record(seq))
            .is_none_or(|r| {
                matches!(
                    r.def().schedule,
                    duetime::Schedule::Cron(_) | duetime::Schedule::Calendar(_)
                )
            });
        if cron || !self.streams.edges.gen_ratio(1, 8) {
            return from;
        }
        self.probes.add(Probe::BackfillFromTheBeginning, 1);
        i64::MIN
    }

    /// The liveness phase: faults stop, clocks are set right, every host comes up, paused
    /// jobs are resumed, runs stop failing.
    pub(super) fn heal(&mut self) {
        self.healed = true;
        for job in &mut self.jobs {
            if !self.keep_durations {
                // Healed runs of drawn jobs are quick (a second or two), so backlogs built
                // up under faults can drain even in a world that runs one thing at a time
                // (`single_owner` with a cap of one run): the liveness phase asks whether
                // the core catches up, not whether the drawn jobs fit their machines. A
                // user's own jobs keep their durations: whether they can keep up at all is
                // the question being asked.
                let (lo, hi) = job.behaviour.duration_ms;
                let lo = lo.min(1_000);
                job.behaviour.duration_ms = (lo, (hi / 5).clamp(lo, 2_000));
            }
            job.behaviour.fail = 0.0;
            job.behaviour.fail_retry_after = 0.0;
            job.behaviour.hang = 0.0;
            // Runs parked before healing still expire or are approved; no new ones park,
            // so every due time can be accounted within the liveness bound.
            job.behaviour.park = 0.0;
        }
        self.cfg.faults.late_result = 0.0;
        self.cfg.faults.duplicate_result = 0.0;
        self.cfg.faults.abort = 0.0;
        self.cfg.faults.lost_answer = 0.0;
        for host in 0..self.hosts.len() {
            let h = &mut self.hosts[host];
            h.clock.wake(self.t);
            h.clock = Clock {
                slept: h.clock.slept,
                ..Clock::default()
            };
            h.overloaded_until = i64::MIN;
            match h.state {
                HostState::Down => self.at(self.t, Action::Restart { host }),
                HostState::Stalled => self.at(self.t, Action::Wake { host }),
                HostState::Up => {}
            }
        }
        // Every clock is set right at once: any agreement J4 measured starts again.
        self.consensus.moved();
        for i in 0..self.jobs.len() {
            if !self.removed[i] && self.jobs[i].def.requires_confirmation {
                // What is held is confirmed, so every job runs its latest definition.
                let now = Now::at(Timestamp::from_millis(self.t));
                self.transact(
                    None,
                    now,
                    Event::Confirm {
                        job: self.jobs[i].def.name.clone(),
                        digest: self.jobs[i].def.digest().to_string(),
                        actor: Actor::new("healer"),
                    },
                );
            }
            if !self.removed[i] {
                let job = self.jobs[i].def.name.clone();
                let now = Now::at(Timestamp::from_millis(self.t));
                self.transact(
                    None,
                    now,
                    Event::Resume {
                        job,
                        actor: Actor::new("healer"),
                    },
                );
            }
        }
    }
}
