//! Which partition of a store a job lives in.
//!
//! A store on PostgreSQL holds its jobs in `P` partitions, each a core `State` of its own
//! (its own globals row, version, jobs and part of the journal), so daemons can step
//! several at once. A job lives in exactly one: a job with a concurrency key by its key, so
//! every job of one lane (and so its cap and its waiters) is decided inside one state as
//! before; a job without one by its name. The daemon, the commands and the simulator all
//! route through [`route`], so they agree on where a job is.

use std::fmt;

use duetime::JobDef;

/// One partition of a store, numbered from 0 (`p7` in messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition(pub u32);

impl Partition {
    /// The partition every store has; a store of one partition has only it.
    pub const FIRST: Partition = Partition(0);
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// How many partitions a store has: 1 to [`PartitionCount::MAX`], fixed when the store is
/// made (the hash that routes jobs depends on it, so changing it would move jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionCount(u32);

impl PartitionCount {
    /// The most partitions a store may have: far more than daemons one database serves,
    /// and few enough that a status page lists them all.
    pub const MAX: u32 = 1024;

    /// One partition: every SQLite store, and a PostgreSQL store made before partitions.
    pub const ONE: PartitionCount = PartitionCount(1);

    /// The count meant for a new PostgreSQL store (docs/scale-out.md: enough that a store
    /// rarely outgrows it, few enough that each partition's globals row stays cheap).
    pub const POSTGRES_DEFAULT: PartitionCount = PartitionCount(64);

    /// `n` partitions, or why not.
    ///
    /// # Errors
    ///
    /// `PartitionCountError` when `n` is 0 or above [`PartitionCount::MAX`].
    pub fn new(n: u64) -> Result<PartitionCount, PartitionCountError> {
        match u32::try_from(n) {
            Ok(n) if (1..=PartitionCount::MAX).contains(&n) => Ok(PartitionCount(n)),
            _ => Err(PartitionCountError::OutOfRange { given: n }),
        }
    }

    /// The number of partitions.
    pub fn get(self) -> u32 {
        self.0
    }

    /// Every partition, in order.
    pub fn iter(self) -> impl Iterator<Item = Partition> {
        (0..self.0).map(Partition)
    }

    /// Whether `p` is one of this count's partitions.
    pub fn holds(self, p: Partition) -> bool {
        p.0 < self.0
    }
}

impl fmt::Display for PartitionCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::str::FromStr for PartitionCount {
    type Err = PartitionCountError;

    /// A decimal count; anything else is refused, naming the text (cut to 40 characters).
    fn from_str(s: &str) -> Result<PartitionCount, PartitionCountError> {
        match s.trim().parse::<u64>() {
            Ok(n) => PartitionCount::new(n),
            Err(_) => Err(PartitionCountError::NotANumber {
                text: s.chars().take(40).collect(),
            }),
        }
    }
}

/// A partition count refused: outside 1..=1024, or not a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionCountError {
    /// A count outside 1..=1024.
    OutOfRange {
        /// The count asked for.
        given: u64,
    },
    /// Text that is not a whole number.
    NotANumber {
        /// The text given (its first 40 characters).
        text: String,
    },
}

impl fmt::Display for PartitionCountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionCountError::OutOfRange { given } => write!(f, "partitions: {given}")?,
            PartitionCountError::NotANumber { text } => {
                write!(f, "partitions: `{text}` is not a number")?;
            }
        }
        write!(
            f,
            "; accepted: a whole number from 1 to {}",
            PartitionCount::MAX
        )
    }
}

impl std::error::Error for PartitionCountError {}

/// The partition `def` lives in among `count`: by its concurrency key when it has one,
/// else by its name.
pub fn route(def: &JobDef, count: PartitionCount) -> Partition {
    route_of(def.concurrency_key.as_deref(), def.name.as_str(), count)
}

/// [`route`] from the parts: `key` (a concurrency key) if any, else `name`.
pub fn route_of(key: Option<&str>, name: &str, count: PartitionCount) -> Partition {
    let text = key.unwrap_or(name);
    // The remainder is below `count`, which fits a u32.
    Partition((fnv1a64(text.as_bytes()) % u64::from(count.0)) as u32)
}

/// FNV-1a, 64 bits, over `bytes`. Written out rather than taken from a crate, and never
/// to be changed: every stored job sits in the partition this hash chose, so another hash
/// (or another crate's version of this one) would strand every job of every store where
/// no lookup by route finds it. The test vectors below pin it.
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::name;
    use duetime::{Duration, Schedule};

    fn count(n: u64) -> PartitionCount {
        PartitionCount::new(n).unwrap()
    }

    #[test]
    fn the_hash_is_fnv1a_64_as_published() {
        // The reference vectors of the FNV specification (draft-eastlake-fnv).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn routes_are_pinned_forever() {
        // Changing any of these moves stored jobs out of reach: see `fnv1a64`.
        let p = |text: &str, n: u64| route_of(None, text, count(n)).0;
        assert_eq!(p("backup", 64), 63);
        assert_eq!(p("db", 64), 35);
        assert_eq!(p("", 64), (0xcbf2_9ce4_8422_2325u64 % 64) as u32);
        assert_eq!(p("a", 64), (0xaf63_dc4c_8601_ec8cu64 % 64) as u32);
        assert_eq!(p("a", 64), 12);
        assert_eq!(p("foobar", 7), 6);
        assert_eq!(p("anything", 1), 0);
    }

    #[test]
    fn a_key_routes_before_a_name() {
        let c = count(64);
        let mut def = duetime::JobDef::new(
            name("nightly"),
            Schedule::every(Duration::from_secs(60), Duration::ZERO).unwrap(),
        );
        assert_eq!(route(&def, c), route_of(None, "nightly", c));
        def.concurrency_key = Some("db".to_string());
        assert_eq!(route(&def, c), route_of(None, "db", c));
        assert_eq!(route(&def, c), route_of(Some("db"), "other", c));
    }

    #[test]
    fn counts_outside_one_to_1024_are_refused_by_name() {
        assert!(PartitionCount::new(0).is_err());
        assert!(PartitionCount::new(1025).is_err());
        assert_eq!(count(1024).get(), 1024);
        let e = "0".parse::<PartitionCount>().unwrap_err().to_string();
        assert_eq!(e, "partitions: 0; accepted: a whole number from 1 to 1024");
        let e = "x".parse::<PartitionCount>().unwrap_err().to_string();
        assert_eq!(
            e,
            "partitions: `x` is not a number; accepted: a whole number from 1 to 1024"
        );
        let e = PartitionCount::new(u64::MAX).unwrap_err().to_string();
        assert!(e.starts_with(&format!("partitions: {};", u64::MAX)), "{e}");
        assert_eq!(Partition(7).to_string(), "p7");
        assert_eq!(
            count(3).iter().collect::<Vec<_>>(),
            [Partition(0), Partition(1), Partition(2)]
        );
        assert!(count(3).holds(Partition(2)) && !count(3).holds(Partition(3)));
    }
}
