//! The world's clocks: each host's wall clock skewed, drifting and jumped, every clock set
//! at once, and what the core told of them judged (J2, the witnesses).

use super::*;
use crate::check::Probe;

/// A wall clock: true time, skewed, drifting and jumped; the monotonic clock only freezes
/// while its machine sleeps (it never runs backward).
#[derive(Debug, Clone, Default)]
pub(super) struct Clock {
    pub(super) skew: i64,
    pub(super) drift_ppm: i64,
    pub(super) jumped: i64,
    /// Time slept in sleeps that have ended.
    pub(super) slept: i64,
    /// When the sleep going on now began (true time), if one is.
    pub(super) asleep_since: Option<i64>,
    /// The unit its process reads the monotonic clock in (issue 48).
    pub(super) mono_unit: MonoUnit,
}

/// How a process reads its monotonic clock: right (milliseconds), or wrong as hosts in
/// other languages get it wrong: in microseconds or nanoseconds (Python's
/// `time.monotonic_ns()` given where milliseconds are asked), or stuck at the end of time
/// (a reading that overflowed). The core must not carry its clock by such a reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum MonoUnit {
    #[default]
    Millis,
    Micros,
    Nanos,
    End,
}

impl Clock {
    /// A host's clock as a world draws it: skewed and drifting within the faults' bounds.
    pub(super) fn drawn(rng: &mut ChaCha8Rng, faults: &crate::gen::Faults) -> Clock {
        let (skew, drift) = (faults.max_skew_ms, faults.max_drift_ppm);
        Clock {
            skew: if skew > 0 {
                rng.gen_range(-skew..=skew)
            } else {
                0
            },
            drift_ppm: if drift > 0 {
                rng.gen_range(-drift..=drift)
            } else {
                0
            },
            ..Clock::default()
        }
    }

    pub(super) fn now(&self, t: i64, t0: i64) -> Now {
        // Worlds last days and drift is at most a few hundred ppm: no overflow in i64.
        let drift = (t - t0).saturating_mul(self.drift_ppm) / 1_000_000;
        let sleeping = self.asleep_since.map_or(0, |since| (t - since).max(0));
        let mono = t - self.slept - sleeping;
        let mono = match self.mono_unit {
            MonoUnit::Millis => mono,
            MonoUnit::Micros => mono.saturating_mul(1_000),
            MonoUnit::Nanos => mono.saturating_mul(1_000_000),
            MonoUnit::End => i64::MAX,
        };
        // The boot clock counts true time, sleep included (no world jumps or skews it).
        Now::with_boot(
            Timestamp::from_millis(t + self.skew + drift + self.jumped),
            Timestamp::from_millis(mono),
            Timestamp::from_millis(t),
        )
    }

    /// The machine wakes: the sleep joins the time slept.
    pub(super) fn wake(&mut self, t: i64) {
        if let Some(since) = self.asleep_since.take() {
            self.slept += (t - since).max(0);
        }
    }

    /// The machine falls asleep at `t` (a sleep already going on goes on: its time so far
    /// is kept, so the monotonic clock never leaps ahead of true time).
    pub(super) fn fall_asleep(&mut self, t: i64) {
        self.wake(t);
        self.asleep_since = Some(t);
    }
}

impl World {
    /// The host's wall clock jumps, forward or back: by seconds, hours, or days (up to the
    /// world's `max_jump_ms`).
    pub(super) fn jump(&mut self, host: usize) {
        *self.faults.entry("clock jump").or_default() += 1;
        let max = self.cfg.faults.max_jump_ms.max(6 * 3_600_000 + 1);
        let magnitude = match self.rng.gen_range(0..3) {
            0 => self.rng.gen_range(1_000..120_000),
            1 => self.rng.gen_range(120_000..6 * 3_600_000),
            _ => self.rng.gen_range(6 * 3_600_000..max),
        };
        let sign = if self.rng.gen_bool(0.5) { 1 } else { -1 };
        self.hosts[host].clock.jumped += sign * magnitude;
        self.consensus.moved();
    }

    /// In a third of the worlds of late draws, every host's wall clock is set at once, one
    /// to three times in the safety phase, from one source: to true time (a time server
    /// back after an outage), or all together minutes to a day off it either way (a
    /// cluster restored from a snapshot, a time server wrong for everyone). No clock is
    /// right then but all agree, so the store's clock must follow them (J4,
    /// `consensus.rs`); set back together, held processes must not contradict each other.
    /// From a stream of its own.
    pub(super) fn schedule_clock_sets(&mut self, t0: i64) {
        let mut sets = stream_rng(self.cfg.seed, Stream::ClockSets);
        if !sets.gen_ratio(1, 3) {
            return;
        }
        for _ in 0..sets.gen_range(1..=3) {
            let t = t0 + sets.gen_range(0..self.cfg.safety_ms.max(1));
            let off = match sets.gen_range(0..4) {
                0 => 0,
                1 => -sets.gen_range(5 * 60_000..6 * 3_600_000),
                2 => sets.gen_range(5 * 60_000..6 * 3_600_000),
                _ => sets.gen_range(-86_400_000..86_400_000),
            };
            self.at(t, Action::SetClocks { off });
        }
    }

    /// In a quarter of the worlds of late draws, one or two hosts' processes start reading
    /// their monotonic clocks in a wrong unit (microseconds, nanoseconds) or at the end of
    /// time (one reading or two), in the safety phase, until they restart or the world heals (issue 48): the
    /// store's clock must not be carried by such a reading (a tick in nanoseconds once
    /// carried it, and every frontier, 694 days ahead), and the healed world must bring
    /// every job back (L1). From a stream of its own.
    pub(super) fn schedule_mono_units(&mut self, t0: i64) {
        let mut units = stream_rng(self.cfg.seed, Stream::MonoUnits);
        if !units.gen_ratio(1, 4) {
            return;
        }
        for _ in 0..units.gen_range(1..=2) {
            let t = t0 + units.gen_range(0..self.cfg.safety_ms.max(1));
            let host = units.gen_range(0..self.hosts.len());
            let unit = match units.gen_range(0..3) {
                0 => MonoUnit::Micros,
                1 => MonoUnit::Nanos,
                _ => MonoUnit::End,
            };
            self.at(t, Action::MonoUnit { host, unit });
        }
    }

    /// Host `host`'s process reads its monotonic clock in `unit` from now on.
    pub(super) fn mono_unit(&mut self, host: usize, unit: MonoUnit) {
        let name = match unit {
            MonoUnit::Millis => {
                self.hosts[host].clock.mono_unit = unit;
                return;
            }
            MonoUnit::Micros => "monotonic clock in microseconds",
            MonoUnit::Nanos => "monotonic clock in nanoseconds",
            MonoUnit::End => "monotonic clock at the end of time",
        };
        *self.faults.entry(name).or_default() += 1;
        self.hosts[host].clock.mono_unit = unit;
        if unit == MonoUnit::End {
            // One absurd reading or two (an overflow), then the clock reads right again.
            let t = self.t + self.cfg.tick_ms.max(1);
            let unit = MonoUnit::Millis;
            self.at(t, Action::MonoUnit { host, unit });
        }
    }

    /// Every host's wall clock is set to true time plus `off` (see `schedule_clock_sets`).
    pub(super) fn set_clocks(&mut self, off: i64) {
        *self.faults.entry("every clock set at once").or_default() += 1;
        let (t, t0) = (self.t, self.cfg.start_ms);
        for h in &mut self.hosts {
            let wall = h.clock.now(t, t0).wall.as_millis();
            h.clock.jumped += t + off - wall;
        }
        self.consensus.moved();
    }

    /// J3: the gap the rule tells for a judged event of `judged`, when the store's record
    /// of it is the one its previous judged event left (`None` inside: no gap).
    pub(super) fn gap_expected(
        &self,
        event: &Event,
        judged: Option<duetime::ProcessId>,
        now: Now,
    ) -> Option<Option<ClockGapKind>> {
        let p = judged.filter(|_| !matches!(event, Event::ProcessStarted { .. }))?;
        let prev = *self.last_read.get(&p)?;
        let recorded = self.state.process(p).map(|r| r.last_wall());
        let jump = self.state.config().clock_jump.as_millis() as i64;
        (recorded == Some(prev.wall)).then(|| crate::check::gaps::expected(prev, now, jump))
    }

    /// J3 after the step: the gap notices of `p` against what the rule tells.
    pub(super) fn gap_told(
        &mut self,
        p: duetime::ProcessId,
        expected: Option<Option<ClockGapKind>>,
        effects: &[Effect],
        now: Now,
    ) {
        let prev = self.last_read.insert(p, now);
        let Some(expected) = expected else {
            return;
        };
        let told: Vec<ClockGapKind> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Notice(Notice::ClockGap { process, kind, .. })
                    if *process == p && crate::check::gaps::judged(*kind) =>
                {
                    Some(*kind)
                }
                _ => None,
            })
            .collect();
        if told.as_slice() == expected.as_slice() {
            if expected.is_some() {
                self.probes.add(Probe::ClockGapToldAsItWas, 1);
            }
            return;
        }
        let prev = prev.map_or(String::new(), |r| format!("{r:?}"));
        let detail = format!(
            "{p}'s clocks from {prev} to {now:?}: the rule tells {expected:?}, the core told {told:?}"
        );
        self.checker.observe(Observation::WorldSaw {
            invariant: Invariant::J3,
            detail,
        });
    }

    /// J2 (`witness.rs`): `process`, the stepping `host`'s, was released; `before` is
    /// what the world read before the step.
    pub(super) fn judge_release(
        &mut self,
        host: Option<usize>,
        process: ProcessId,
        kind: ClockGapKind,
        before: Option<crate::check::witness::Before>,
    ) {
        let (Some(h), Some(before)) = (host, before) else {
            return;
        };
        if self.hosts[h].inc.process() != process {
            return;
        }
        if let Some(detail) = self.witnesses.released(h, process, kind, self.t, before) {
            self.checker.observe(Observation::WorldSaw {
                invariant: Invariant::J2,
                detail,
            });
        } else {
            self.probes.add(Probe::ReleaseItsRuleAllows, 1);
        }
    }

    /// J4 (`consensus.rs`): every host's wall clock, read before a judged event.
    pub(super) fn read_clocks(&mut self) {
        let (t, t0) = (self.t, self.cfg.start_ms);
        let walls = self
            .hosts
            .iter()
            .map(|h| h.clock.now(t, t0).wall.as_millis());
        self.consensus.read(t, walls);
    }

    /// J4 after host `h`'s `process` was judged at `now`: when every clock agrees, the
    /// store's clock has followed them.
    pub(super) fn clocks_followed(&mut self, h: usize, process: ProcessId, now: Now) {
        let store = self.state.clock().map(|c| c.as_millis());
        let read = (now.wall.as_millis(), now.mono.as_millis());
        let probe = match self.consensus.judged(h, process, read, store) {
            Verdict::Stuck(detail) => {
                let saw = Observation::WorldSaw {
                    invariant: Invariant::J4,
                    detail,
                };
                return self.checker.observe(saw);
            }
            Verdict::Near { after_away: true } => Probe::StoresClockCameToClocksThatAgree,
            Verdict::Away => Probe::StoresClockAwayFromClocksThatAgree,
            _ => return,
        };
        self.probes.add(probe, 1);
    }

    pub(super) fn clock_now(&self, host: usize) -> Now {
        self.hosts[host].clock.now(self.t, self.cfg.start_ms)
    }
}
