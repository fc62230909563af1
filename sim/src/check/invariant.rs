//! Every promise the simulator holds a world to, one variant each. The name a variant
//! prints (`S1`, `X3`) is the one `docs/invariants.md` states the promise under in full,
//! with the code that upholds it and what checks it; the doc of each variant is its
//! promise in one sentence. A failure file and a bank keep the printed name, so a name
//! never changes meaning.

use std::fmt;

macro_rules! invariants {
    ($($(#[doc = $doc:literal])+ $name:ident,)+) => {
        /// A promise of `docs/invariants.md`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Invariant {
            $($(#[doc = $doc])+ $name,)+
        }

        impl Invariant {
            /// Every invariant, in the order of `docs/invariants.md`.
            pub const ALL: &'static [Invariant] = &[$(Invariant::$name,)+];

            /// The name it is told by (`S1`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Invariant::$name => stringify!($name),)+
                }
            }
        }
    };
}

invariants! {
    /// Every due time between a job's registration and its cursor has exactly one ledger
    /// entry, none twice, none for an instant the schedule did not yield.
    S1,
    /// A due time of a job not safe to repeat is never covered by two started runs.
    S2,
    /// A result with a stale fence changes no job state and is told refused.
    S3,
    /// No due time is settled ok twice.
    S5,
    /// `step` never panics; the state round-trips and loads; a store of touched rows holds
    /// the live state.
    S6,
    /// Every due time of an enabled, unpaused job is accounted within a bound.
    L1,
    /// A `required` job's due times are each covered by an ok run or recorded failed out.
    L2,
    /// A lease whose holder crashed is taken over within lease TTL and one tick.
    L3,
    /// An incident is told once, and a lost run's alert tells the pause as it is.
    A1,
    /// A stall is watched for: a running job's wake is no later than its stall's time.
    A2,
    /// A system pause is told as its cause asks.
    A3,
    /// The dead-man's switch tells every silence past `expect_success_within`, never early.
    E1,
    /// A job tells at most one alert per `alert_throttle`.
    T1,
    /// A job pauses after `pause_after_failures` failed runs in a row.
    P1,
    /// A parked run is settled by approval, its result or expiry, never expired early.
    P2,
    /// A quota hold starts nothing before it ends.
    Q1,
    /// No due time is backfilled twice, and no backfill reaches into accounted time.
    B1,
    /// A run starts only while its lane has room.
    C1,
    /// A run starts only while its process is under `max_runs_per_process`.
    C2,
    /// A job waits only for a full lane or cap.
    C3,
    /// Waiters are let in oldest first, and when room opens.
    C4,
    /// A held definition never applies or runs before its confirmation.
    H1,
    /// A digest names one definition.
    H2,
    /// A one-shot's instant ends once, and the store shows that end.
    U1,
    /// One owner dispatches at a time under `single_owner`.
    O1,
    /// An owner lease is not taken again within a lease of its taking.
    O2,
    /// A drain is told complete once, only when the process holds no open run.
    D1,
    /// Incarnations do not pile up, and none is forgotten early.
    D2,
    /// A result with the run's current fence settles (or parks) it in its step.
    R1,
    /// A retry covers exactly what its failed run covered.
    R2,
    /// A failed run is handled as its job's retry and pause rules say.
    R4,
    /// Every person's command is answered as the journal says it must be.
    R3,
    /// What the views tell of a job agrees with the journal.
    V1,
    /// The journal is written on the store's time.
    J1,
    /// Whose clock judges: only a process the store knew nothing of waits for its clock.
    J2,
    /// A clock's gap is told as what it was.
    J3,
    /// Clocks that agree are believed.
    J4,
    /// Leases as the holder made them; a run is lost only past its lease or its holder's
    /// silence.
    K1,
    /// A run is timed out as its deadline says.
    K2,
    /// A live host's runs are never forfeit: overload starts late, never loses.
    F1,
    /// A start on schedule comes within its jitter and the grace; a skip as late only past
    /// the grace.
    G1,
    /// Nothing is stepped past unrecorded, and the views count the owed exactly.
    N1,
    /// Each missed rule owes what it says.
    M1,
    /// `catch_up_once` catches up the newest.
    M2,
    /// Over years, a cron schedule's due times fall on the dates its day rule allows.
    Z1,
    /// Cron text as people type it is read as `docs/schedules.md` says.
    Z2,
    /// Over weeks, a calendar schedule's due times and counts are the oracle's.
    Z3,
    /// A job that waits for others runs a due time only once each settled it ok, and skips
    /// it only for an upstream's fate as that upstream's ledger tells it.
    Y1,
    /// What a host logs says what happened.
    W1,
    /// A definition as a person writes it reads back as itself.
    W2,
    /// Partitions: at every move and at the end, each job is in exactly one partition.
    X1,
    /// Partitions: a dead or departed owner's partition is stepped again within the lease's
    /// time and two rounds.
    X2,
    /// Partitions: a write commits only under the epoch its daemon claimed, before its
    /// lease ran out.
    X3,
    /// Partitions: a claim never takes a partition another daemon's lease holds, and
    /// raises the epoch.
    X4,
    /// Partitions: after hours without faults, every partition is held where the
    /// assignment says.
    X5,
    /// Partitions: no due time is settled twice across every partition its job lived in.
    X6,
    /// Partitions: every due time of a job, up to half an hour before the end, is in its
    /// ledger.
    X7,
    /// Partitions: a chain (jobs joined by `after`) lives in one partition, moves as one,
    /// and its downstreams run a due time only after every upstream settled it `ok`,
    /// skipping one only for the fate the upstream's own ledger gives it.
    X8,
}

impl Invariant {
    /// A liveness promise: something that should have happened did not by the end (an
    /// `L`), as opposed to something forbidden that did happen.
    pub fn is_liveness(self) -> bool {
        self.name().starts_with('L')
    }

    /// The invariant told by `name`, as a failure file keeps it.
    pub fn named(name: &str) -> Option<Invariant> {
        Invariant::ALL.iter().copied().find(|i| i.name() == name)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for Invariant {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::Invariant;

    #[test]
    fn every_invariant_is_documented_under_its_name() {
        let doc = include_str!("../../../docs/invariants.md");
        for i in Invariant::ALL {
            assert!(
                doc.contains(&format!("| {} |", i.name())),
                "{i} has no row in docs/invariants.md"
            );
            assert_eq!(Invariant::named(i.name()), Some(*i));
        }
    }
}
