//! Job definitions: what people declare about a job, with defaults a production scheduler
//! would choose, and the checks that refuse a definition the core could not honour.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::schedule::Schedule;
use crate::state::Config;
use crate::time::{Duration, Timestamp};

mod digest;

pub use digest::{Digest, DIGEST_HEX_LEN};

/// A job's name: a lower-case letter, then at most 63 of `a-z0-9_`. Shared, because every
/// effect names its job and a clone must not allocate.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobName(Arc<str>);

impl JobName {
    /// Checks the name's shape, so that a name is safe in a file name, a log line and a URL
    /// without quoting.
    ///
    /// # Errors
    ///
    /// `DefError::BadName` (with the text cut to 80 characters) for anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::JobName;
    ///
    /// let name = JobName::new("nightly_backup")?;
    /// assert_eq!(name.as_str(), "nightly_backup");
    /// assert!(JobName::new("Nightly-Backup").is_err()); // upper case and `-` are refused
    /// # Ok::<(), duetime::DefError>(())
    /// ```
    pub fn new(name: &str) -> Result<JobName, DefError> {
        let bytes = name.as_bytes();
        let ok = !bytes.is_empty()
            && bytes.len() <= 64
            && bytes[0].is_ascii_lowercase()
            && bytes[1..]
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
        if ok {
            Ok(JobName(Arc::from(name)))
        } else {
            Err(DefError::BadName {
                name: name.chars().take(80).collect(),
            })
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for JobName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JobName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        JobName::new(&s).map_err(serde::de::Error::custom)
    }
}

/// What happens to due times that could not start on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MissedRule {
    /// Record them skipped.
    #[default]
    Skip,
    /// Record them; one catch-up run covers the newest.
    CatchUpOnce,
    /// Every one is covered by a run, oldest first, in batches of at most 1,000 due times.
    Required,
}

/// What happens to a due time that arrives while the job's previous run is still going.
/// Every choice is recorded in the ledger; none drops a due time silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Record it skipped.
    Skip,
    /// Keep the newest one to run next; an older buffered one is recorded skipped.
    BufferOne,
    /// Keep them all and run them in order.
    BufferAll,
}

/// Retry delay: `initial`, doubling each attempt, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Backoff {
    /// The delay before the first retry.
    pub initial: Duration,
    /// The longest delay, however many attempts failed.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(30),
            max: Duration::from_mins(10),
        }
    }
}

impl Backoff {
    /// The delay before attempt `failed + 1`, after `failed` failed attempts (1-based).
    pub fn delay(&self, failed: u32) -> Duration {
        let doublings = failed.saturating_sub(1).min(62);
        self.initial.saturating_mul(1u64 << doublings).min(self.max)
    }
}

/// Most due times one `required` catch-up run covers; the settlement of a batch owes the next.
pub(crate) const REQUIRED_BATCH: u64 = 1_000;
/// Longest title and pause note, in characters.
pub const MAX_TITLE: usize = 200;
/// Most retries a job may ask for: past that a failing job should stop and ask a person.
pub const MAX_RETRIES: u32 = 100;

/// A job as people declare it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobDef {
    /// Its name, unique among the jobs.
    pub name: JobName,
    /// A line for people (at most `MAX_TITLE` characters).
    #[serde(default)]
    pub title: String,
    /// When it is due.
    pub schedule: Schedule,
    /// What happens to due times found late.
    #[serde(default)]
    pub missed: MissedRule,
    /// Due times older than this (at the moment they are found late) are recorded
    /// `too_late` instead of being caught up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_window: Option<Duration>,
    /// `None` means the rule's natural choice: `buffer_all` for `required`, `skip` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    /// How many times a failed run is tried again before its due times fail out (default 5,
    /// at most `MAX_RETRIES`).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// How long to wait between attempts.
    #[serde(default)]
    pub backoff: Backoff,
    /// Longest a run may go; past it the host is asked to cancel it (default 10 min).
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    /// Whether running a due time twice is harmless: then a lost run is run again and manual
    /// runs are allowed; otherwise a lost run pauses the job, since running twice is worse than
    /// not knowing.
    #[serde(default)]
    pub safe_to_repeat: bool,
    /// The job discharges a legal duty: every due time must be covered, so it needs the
    /// missed rule `required` and no catch-up window.
    #[serde(default)]
    pub legal_duty: bool,
    /// A run going longer than this is alerted as stalled, once (default 15 min).
    #[serde(default = "default_stall_after")]
    pub stall_after: Duration,
    /// Jobs sharing a key share a lane: at most `concurrency_limit` of their runs are open at
    /// once, across every process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    /// Pause the job (by the system, with an alert) after this many failed runs in a row; a
    /// success resets the count. A job failing every time should stop and ask for a person
    /// before its retries and catch-ups pile up failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_failures: Option<u32>,
    /// The longest a failed run's `retry_after` may ask the job to wait and still be an
    /// ordinary retry (unset: the backoff's maximum). A longer ask is a quota hold: nothing
    /// of the job starts until it passes, and the due times it passes meet the missed rule
    /// (cause `quota_hold`) instead of piling up as overlaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_budget: Option<Duration>,
    /// At most one alert per this much time for the job: a noisy job's further alerts
    /// (new incidents; one incident is told once anyway) go to the journal instead of a
    /// person's pager until it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_throttle: Option<Duration>,
    /// How many runs of this job's `concurrency_key` may be open at once (unset: 1). Jobs
    /// sharing a key that disagree get the smallest of their widths, so no job can widen a
    /// lane another job relies on being narrow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<u32>,
    /// The most a start may be delayed after its due time, so jobs due together do not all
    /// start in the same second. The delay is a pure function of (job, due time)
    /// (`jitter_delay`); the due time keeps its identity in the ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Duration>,
    /// A changed definition is held, and the old one keeps running, until a person confirms
    /// its `digest()`; a new job is held with no schedule running until then.
    #[serde(default, skip_serializing_if = "is_false")]
    pub requires_confirmation: bool,
    /// What the host runs for the job, in the host's own encoding (the reference host: the
    /// canonical JSON of its command, workdir, env, env file, user and group), at most
    /// `MAX_PAYLOAD` bytes. The core never reads it; it is part of the definition so that
    /// changing what runs is a change of definition like any other: held for a person under
    /// `requires_confirmation`, covered by the digest, and the definition in force (not the
    /// held one) is what a host runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// A dead-man's switch: alert (`AlertKind::NoSuccess`, once until the next success)
    /// when the job has had no successful run for this long, whatever the reason: not
    /// due, paused, failing, lost, or no host running at all. Counted from the last
    /// success, or from when the job was first defined with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_success_within: Option<Duration>,
    /// Upstream jobs (by name) whose run for the same due time must settle `ok` before
    /// this job's run for it starts. The job's schedule must be theirs (`Event::Upsert`
    /// refuses one that differs, an unknown upstream, and a chain that comes back to the
    /// job). When an upstream's due time ends otherwise (failed out, lost, skipped,
    /// expired), this job's due time is recorded skipped with cause `upstream`, after a
    /// history line naming the upstream and its fate: nothing is silently missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<JobName>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Longest jitter a job may ask for: a start delayed longer than this is a different
/// schedule, not a spread.
pub const MAX_JITTER: Duration = Duration::from_hours(1);
/// Widest lane a job may ask for.
pub const MAX_CONCURRENCY_LIMIT: u32 = 1_000;
/// Longest payload (what the host runs), in bytes: the state keeps it per job.
pub const MAX_PAYLOAD: usize = 64 * 1024;
/// Most upstream jobs one job may wait for (`after`).
pub const MAX_UPSTREAMS: usize = 8;

fn default_retries() -> u32 {
    5
}
fn default_timeout() -> Duration {
    Duration::from_mins(10)
}
fn default_stall_after() -> Duration {
    Duration::from_mins(15)
}

/// Why a definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum DefError {
    /// The name is not a lower-case letter then at most 63 of `a-z0-9_`.
    BadName {
        /// The text given, cut to 80 characters.
        name: String,
    },
    /// Two definitions of one batch share a name.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The title is longer than `MAX_TITLE` characters.
    TitleTooLong {
        /// Its length in characters.
        len: usize,
    },
    /// `legal_duty` needs the missed rule `required`.
    LegalDutyNeedsRequired,
    /// `legal_duty` takes no catch-up window: every due time must be covered.
    LegalDutyHasWindow,
    /// `required` buffers overlapping due times; an overlap of `skip` or `buffer_one` would
    /// drop some.
    RequiredCannotSkipOverlap,
    /// An `every` schedule's period is shorter than the tick.
    EveryShorterThanTick {
        /// The period.
        period: Duration,
        /// The tick.
        tick: Duration,
    },
    /// The timeout is zero.
    ZeroTimeout,
    /// More retries than `MAX_RETRIES`.
    TooManyRetries {
        /// The number asked for.
        retries: u32,
    },
    /// The backoff's initial delay is zero or above its maximum.
    BadBackoff,
    /// The concurrency key is empty, too long or not printable.
    BadConcurrencyKey {
        /// The key given.
        key: String,
    },
    /// `pause_after_failures` is zero.
    ZeroFailureStreak,
    /// `concurrency_limit` is zero or above `MAX_CONCURRENCY_LIMIT`.
    BadConcurrencyLimit {
        /// The limit given.
        limit: u32,
    },
    /// The jitter is longer than `MAX_JITTER` or than an `every` schedule's period.
    JitterTooLong {
        /// The jitter given.
        jitter: Duration,
        /// The most accepted for this schedule.
        max: Duration,
    },
    /// The payload (what the host runs) is longer than `MAX_PAYLOAD` bytes.
    PayloadTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// `expect_success_within` is shorter than the tick: the switch could not be honoured
    /// to within its own length.
    ExpectSuccessTooSoon {
        /// The switch's length.
        within: Duration,
        /// The tick.
        tick: Duration,
    },
    /// `after` names the job itself, names one upstream twice, or names more than
    /// `MAX_UPSTREAMS`.
    BadUpstreams {
        /// The upstream named wrongly (`None`: too many were named).
        upstream: Option<JobName>,
        /// How many were named.
        count: usize,
    },
}

impl fmt::Display for DefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefError::BadName { name } => write!(
                f,
                "name: `{name}` is not a job name; a name is a lower-case letter, then at most 63 of a-z, 0-9 and _"
            ),
            DefError::DuplicateName { name } => write!(f, "name: `{name}` is defined twice"),
            DefError::TitleTooLong { len } => {
                write!(f, "title: {len} characters; at most {MAX_TITLE} are accepted")
            }
            DefError::LegalDutyNeedsRequired => {
                f.write_str("legal_duty: a legal duty needs the missed rule `required`")
            }
            DefError::LegalDutyHasWindow => f.write_str(
                "catch_up_window: a legal duty takes no catch-up window; every due time must be covered",
            ),
            DefError::RequiredCannotSkipOverlap => f.write_str(
                "overlap: `required` covers every due time, so overlapping ones are buffered; \
                 accepted: buffer_all (or leave overlap unset)",
            ),
            DefError::EveryShorterThanTick { period, tick } => write!(
                f,
                "schedule: every {period} is shorter than the tick ({tick}); accepted: a period of at least the tick"
            ),
            DefError::ZeroTimeout => f.write_str("timeout: zero; a timeout is at least 1s"),
            DefError::TooManyRetries { retries } => {
                write!(f, "retries: {retries}; accepted: 0-{MAX_RETRIES}")
            }
            DefError::BadBackoff => f.write_str(
                "backoff: the initial delay must be at least 1ms and at most the maximum",
            ),
            DefError::BadConcurrencyKey { key } => write!(
                f,
                "concurrency_key: `{key}`; accepted: 1-128 printable characters"
            ),
            DefError::ZeroFailureStreak => f.write_str(
                "pause_after_failures: 0; accepted: at least 1 (or leave it unset to never pause)",
            ),
            DefError::BadConcurrencyLimit { limit } => write!(
                f,
                "concurrency_limit: {limit}; accepted: 1-{MAX_CONCURRENCY_LIMIT} (or leave it unset for 1)"
            ),
            DefError::JitterTooLong { jitter, max } => write!(
                f,
                "jitter: {jitter}; accepted: at most {max} (an hour, and no more than an `every` schedule's period)"
            ),
            DefError::PayloadTooLong { len } => write!(
                f,
                "payload: {len} bytes of what the host runs; accepted: at most {MAX_PAYLOAD}"
            ),
            DefError::ExpectSuccessTooSoon { within, tick } => write!(
                f,
                "expect_success_within: {within} is shorter than the tick ({tick}); accepted: at least the tick (or leave it unset)"
            ),
            DefError::BadUpstreams {
                upstream: Some(u),
                ..
            } => write!(
                f,
                "after: `{u}` is the job itself or is named twice; accepted: other jobs, each once"
            ),
            DefError::BadUpstreams {
                upstream: None,
                count,
            } => write!(
                f,
                "after: {count} upstream jobs; accepted: at most {MAX_UPSTREAMS}"
            ),
        }
    }
}

impl std::error::Error for DefError {}

impl JobDef {
    /// A definition with the defaults: missed rule `skip`, 5 retries backing off from 30 s
    /// to 10 min, a 10 min timeout, not safe to repeat, stalled after 15 min. Every other
    /// field is public: set what differs, then `validate` (or let `Event::Upsert` refuse).
    ///
    /// # Examples
    ///
    /// ```
    /// use duetime::{Config, JobDef, JobName, MissedRule, Schedule};
    ///
    /// let mut def = JobDef::new(JobName::new("invoices")?, Schedule::cron("0 2 * * *", Some("Europe/Berlin"))?);
    /// def.missed = MissedRule::Required; // every due time must run, even after downtime
    /// def.legal_duty = true;
    /// def.validate(&Config::default())?;
    ///
    /// def.catch_up_window = Some("1d".parse()?); // a legal duty takes no window
    /// assert!(def.validate(&Config::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(name: JobName, schedule: Schedule) -> JobDef {
        JobDef {
            name,
            title: String::new(),
            schedule,
            missed: MissedRule::Skip,
            catch_up_window: None,
            overlap: None,
            retries: default_retries(),
            backoff: Backoff::default(),
            timeout: default_timeout(),
            safe_to_repeat: false,
            legal_duty: false,
            stall_after: default_stall_after(),
            concurrency_key: None,
            pause_after_failures: None,
            wait_budget: None,
            alert_throttle: None,
            concurrency_limit: None,
            jitter: None,
            requires_confirmation: false,
            payload: None,
            expect_success_within: None,
            after: Vec::new(),
        }
    }

    /// The wait budget in force (see `wait_budget`).
    pub fn wait_budget(&self) -> Duration {
        self.wait_budget.unwrap_or(self.backoff.max)
    }

    /// The lane width this job asks for (`concurrency_limit`, default 1).
    pub fn lane_width(&self) -> u32 {
        self.concurrency_limit.unwrap_or(1)
    }

    /// How long after `due` this job's run for it starts: in `[0, jitter]`, a pure function
    /// of the job's name and the due time (so every replay and every process agrees, and a
    /// retry of the same due time is not re-drawn).
    pub fn jitter_delay(&self, due: Timestamp) -> Duration {
        let Some(max) = self.jitter.filter(|j| !j.is_zero()) else {
            return Duration::ZERO;
        };
        let mut h = Fnv::new();
        h.bytes(self.name.as_str().as_bytes());
        h.bytes(&due.as_millis().to_le_bytes());
        let x = splitmix64(h.0);
        Duration::from_millis(x % (max.as_millis().saturating_add(1)).max(1))
    }

    /// The definition's digest, 64 lower-case hex digits: SHA-256 over a canonical
    /// encoding of every field (`digest.rs`), stable across builds and platforms, so a
    /// person can confirm what they read elsewhere. Any change to any field changes it.
    pub fn digest(&self) -> Digest {
        digest::digest(self)
    }

    /// The overlap policy in force.
    pub fn overlap_policy(&self) -> Overlap {
        self.overlap.unwrap_or(match self.missed {
            MissedRule::Required => Overlap::BufferAll,
            _ => Overlap::Skip,
        })
    }

    /// Refuses what the core could not honour under `config`, before it reaches a state:
    /// the same check `Event::Upsert` makes, for a host that wants to tell a person at
    /// once (a jobs file loaded, a form submitted).
    ///
    /// # Errors
    ///
    /// The first rule broken, as a `DefError` naming the field.
    pub fn validate(&self, config: &Config) -> Result<(), DefError> {
        let title_len = self.title.chars().count();
        if title_len > MAX_TITLE {
            return Err(DefError::TitleTooLong { len: title_len });
        }
        if self.legal_duty && self.missed != MissedRule::Required {
            return Err(DefError::LegalDutyNeedsRequired);
        }
        if self.legal_duty && self.catch_up_window.is_some() {
            return Err(DefError::LegalDutyHasWindow);
        }
        if self.missed == MissedRule::Required && self.overlap_policy() != Overlap::BufferAll {
            return Err(DefError::RequiredCannotSkipOverlap);
        }
        if let Schedule::Every { period, .. } = *self.schedule.base() {
            if period < config.tick {
                return Err(DefError::EveryShorterThanTick {
                    period,
                    tick: config.tick,
                });
            }
        }
        if self.timeout.as_millis() < 1000 {
            return Err(DefError::ZeroTimeout);
        }
        if self.retries > MAX_RETRIES {
            return Err(DefError::TooManyRetries {
                retries: self.retries,
            });
        }
        if self.backoff.initial.is_zero() || self.backoff.initial > self.backoff.max {
            return Err(DefError::BadBackoff);
        }
        if self.pause_after_failures == Some(0) {
            return Err(DefError::ZeroFailureStreak);
        }
        if let Some(limit) = self
            .concurrency_limit
            .filter(|l| *l == 0 || *l > MAX_CONCURRENCY_LIMIT)
        {
            return Err(DefError::BadConcurrencyLimit { limit });
        }
        if let Some(jitter) = self.jitter {
            let max = match *self.schedule.base() {
                Schedule::Every { period, .. } => period.min(MAX_JITTER),
                _ => MAX_JITTER,
            };
            if jitter > max {
                return Err(DefError::JitterTooLong { jitter, max });
            }
        }
        if let Some(len) = self
            .payload
            .as_ref()
            .map(String::len)
            .filter(|l| *l > MAX_PAYLOAD)
        {
            return Err(DefError::PayloadTooLong { len });
        }
        if let Some(within) = self.expect_success_within.filter(|w| *w < config.tick) {
            return Err(DefError::ExpectSuccessTooSoon {
                within,
                tick: config.tick,
            });
        }
        self.validate_after()?;
        if let Some(key) = &self.concurrency_key {
            if key.is_empty() || key.chars().count() > 128 || key.chars().any(char::is_control) {
                return Err(DefError::BadConcurrencyKey {
                    key: key.chars().take(130).collect(),
                });
            }
        }
        Ok(())
    }

    /// `after`: other jobs, each once, at most `MAX_UPSTREAMS`. (Whether they exist, share
    /// the schedule and form no cycle depends on the state: `Event::Upsert` asks.)
    fn validate_after(&self) -> Result<(), DefError> {
        let count = self.after.len();
        if count > MAX_UPSTREAMS {
            return Err(DefError::BadUpstreams {
                upstream: None,
                count,
            });
        }
        for (i, u) in self.after.iter().enumerate() {
            if *u == self.name || self.after[..i].contains(u) {
                return Err(DefError::BadUpstreams {
                    upstream: Some(u.clone()),
                    count,
                });
            }
        }
        Ok(())
    }

    /// Validates a whole set (a jobs file): each definition, and no name twice.
    ///
    /// # Errors
    ///
    /// The index of the first definition refused and why (`DefError::DuplicateName` for
    /// the second of two with one name).
    pub fn validate_all(defs: &[JobDef], config: &Config) -> Result<(), (usize, DefError)> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, def) in defs.iter().enumerate() {
            def.validate(config).map_err(|e| (i, e))?;
            if !seen.insert(def.name.as_str()) {
                return Err((
                    i,
                    DefError::DuplicateName {
                        name: def.name.to_string(),
                    },
                ));
            }
        }
        Ok(())
    }
}

/// FNV-1a, 64 bits: a fixed, documented hash (never std's seeded hasher), for jitter that
/// every build and platform computes alike. (Not for digests: anyone can collide it.)
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// splitmix64's finalizer: spreads FNV's weak low bits before taking a remainder.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
