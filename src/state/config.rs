//! Timing the whole scheduler shares (`Config`) and how processes coordinate
//! (`Coordination`, the owner's lease): what `State::new` is given and the store keeps
//! in the globals.

use serde::{Deserialize, Serialize};

use crate::event::{Fence, ProcessId};
use crate::inconsistency::ConfigError;
use crate::time::{Duration, Timestamp};

/// Timing the whole scheduler shares. Defaults: a 30 s tick; leases, lateness grace and the
/// wait after a timeout's `Cancel` of two ticks each; 20 manual runs per job per hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Config {
    /// How often each process ticks; the unit other timings default to.
    pub tick: Duration,
    /// How long a run's lease lasts without renewal; a process renews the leases it holds at
    /// every tick.
    pub lease_ttl: Duration,
    /// A due time started within this after it is on time; later, the missed rule applies.
    pub grace: Duration,
    /// After `Cancel { timeout }`, how long to wait for the result before settling the run
    /// as timed out without it.
    pub cancel_grace: Duration,
    /// Most manual runs per job in any hour.
    pub manual_per_hour: u32,
    /// A wall clock that moves this much more than the monotonic clock between two events
    /// of one process has jumped.
    pub clock_jump: Duration,
    /// Most runs one process may have open at once (unset: no cap). A due run that would
    /// go over waits (`concurrency_cap`) until a run of that process ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs_per_process: Option<u32>,
    /// Who may claim: any live process (`shared`), or only the holder of the owner lease
    /// (`single_owner`). Absent from the stored form when shared, so states written before
    /// it existed load and re-serialize unchanged.
    #[serde(default, skip_serializing_if = "Coordination::is_shared")]
    pub coordination: Coordination,
}

/// How the processes sharing a store divide the work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Coordination {
    /// Every live process that is not draining claims what is due.
    #[default]
    Shared,
    /// One process at a time holds the owner lease (`OwnerLease`) and alone visits jobs and
    /// claims; the others stand by, renewing only the runs they hold, and take the lease
    /// over when it lapses. For hosts whose runs must not interleave across machines, or
    /// that want one place to read the schedule's decisions from.
    SingleOwner,
}

impl Coordination {
    /// Whether it is `Shared` (the stored form leaves the default out).
    pub fn is_shared(&self) -> bool {
        *self == Coordination::Shared
    }
}

/// The owner lease of `single_owner` coordination. Each taking draws a fence from the
/// state's fence counter, so a later owner always holds a higher fence than any earlier
/// one; renewing keeps the fence and only ever moves `until` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OwnerLease {
    /// The process holding it.
    pub holder: ProcessId,
    /// Its fence, drawn when it was taken.
    pub fence: Fence,
    /// The lease lapses for events whose wall time is past this.
    pub until: Timestamp,
}

impl Default for Config {
    fn default() -> Self {
        Config::with_tick(Duration::from_secs(30))
    }
}

/// Bounds on a stored config. A tick looks at every due time within the grace one by one
/// (each is started or given to the overlap policy, and a skipped one is a ledger line), so
/// the grace over the densest schedule (one due time a second, or an `every` of one tick)
/// bounds a tick's work: at most a day of seconds.
pub const MIN_TICK: Duration = Duration::from_secs(1);
/// The shortest lease and grace `Config::with_tick` makes, whatever the tick: ten seconds,
/// the time a host's turn may take on a busy store before it renews its leases (see
/// `Config::with_tick`). A lease also bounds how long a crashed holder's run waits to be
/// taken over (L3), so it stays short.
pub const MIN_LEASE: Duration = Duration::from_secs(10);
/// The longest grace accepted (see `MIN_TICK`).
pub const MAX_GRACE: Duration = Duration::from_days(1);

impl Config {
    /// What a stored state's config must satisfy to load: a tick of at least `MIN_TICK`, a
    /// grace of at most `MAX_GRACE`.
    ///
    /// # Errors
    ///
    /// The first bound broken, as a `ConfigError`.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.tick < MIN_TICK {
            return Err(ConfigError::TickTooShort { tick: self.tick });
        }
        if self.grace > MAX_GRACE {
            return Err(ConfigError::GraceTooLong { grace: self.grace });
        }
        if self.max_runs_per_process == Some(0) {
            return Err(ConfigError::NoRunsPerProcess);
        }
        Ok(())
    }

    /// The defaults scaled to a tick: lease and grace of two ticks each but never under
    /// `MIN_LEASE`, a cancel grace of two ticks, 20 manual runs an hour, a clock jump of a
    /// minute, shared coordination.
    ///
    /// The floor is for short ticks: a host whose turn takes longer than the tick (a busy
    /// store, a machine at full load) must start its runs late, not lose them. Two ticks of
    /// one second would lapse a lease during a three-second turn (the run recorded lost, a
    /// job not safe to repeat paused) and make its due times late, recorded missed.
    pub fn with_tick(tick: Duration) -> Config {
        let two = tick.saturating_mul(2);
        let lease = two.max(MIN_LEASE);
        Config {
            tick,
            lease_ttl: lease,
            grace: lease,
            cancel_grace: two,
            manual_per_hour: 20,
            clock_jump: Duration::from_secs(60),
            coordination: Coordination::Shared,
            max_runs_per_process: None,
        }
    }
}
