//! The digest a person confirms a held definition by: SHA-256 over a canonical encoding of
//! every field of a `JobDef`, so that no field can change unseen and no definition can be
//! crafted to match the digest of another (64-bit FNV-1a, the form before it, could be).
//!
//! The encoding destructures `JobDef` without `..`: a field added to the struct does not
//! compile until it is written here, so the digest can never silently leave one out.
//! Fields added after the encoding's first form are written only when set (behind their
//! own tag, so still no two definitions share an encoding): a definition that does not use
//! them keeps the digest a person may already have copied.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::{Backoff, JobDef, MissedRule, Overlap};
use crate::schedule::dst::{Fold, Gap};
use crate::schedule::{CalendarSchedule, Schedule};
use crate::time::Duration;

/// Written first, so a digest of a definition can never equal a digest of anything else
/// hashed the same way, and a future encoding can say it is another (`v2`).
const DOMAIN: &[u8] = b"duetime job definition v1\0";

/// How many hex digits a digest has (SHA-256: 32 bytes).
pub const DIGEST_HEX_LEN: usize = 64;

/// A definition's digest (`JobDef::digest`): 64 lower-case hex digits of SHA-256, what a
/// person reads beside a held definition and confirms it by. Written as its bare text.
///
/// Made only by hashing a definition; read back from a journal or a wire as the text it
/// was written as (a person's `Confirm` carries the text they typed, compared with it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
#[cfg_attr(feature = "schema", schemars(transparent))]
pub struct Digest(String);

impl Digest {
    /// Its hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A digest reads as its text (a person compares, copies and prints it as such).
impl std::ops::Deref for Digest {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Digest {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Digest {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// A definition's digest: 64 lower-case hex digits.
pub(super) fn digest(def: &JobDef) -> Digest {
    let mut canon = Canon(Sha256::new());
    canon.0.update(DOMAIN);
    canon.def(def);
    // Hex digits written straight into one string (a `format!` for each byte was half of
    // a digest's cost: benches/README.md, issue 46).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(DIGEST_HEX_LEN);
    for b in canon.0.finalize() {
        hex.push(char::from(HEX[usize::from(b >> 4)]));
        hex.push(char::from(HEX[usize::from(b & 15)]));
    }
    Digest(hex)
}

/// The canonical writer: every value behind a tag byte naming its field, integers as eight
/// little-endian bytes, text as its length then its bytes, an option as a presence byte
/// then its value. Each field is written whatever its value, so no two definitions share
/// an encoding.
struct Canon(Sha256);

impl Canon {
    fn def(&mut self, def: &JobDef) {
        let JobDef {
            name,
            title,
            schedule,
            missed,
            catch_up_window,
            overlap,
            retries,
            backoff,
            timeout,
            safe_to_repeat,
            legal_duty,
            stall_after,
            concurrency_key,
            pause_after_failures,
            wait_budget,
            alert_throttle,
            concurrency_limit,
            jitter,
            requires_confirmation,
            payload,
            expect_success_within,
            after,
        } = def;
        self.text(1, name.as_str());
        self.text(2, title);
        self.schedule(3, schedule);
        self.int(4, missed_code(*missed));
        self.duration_opt(5, *catch_up_window);
        self.opt(6, overlap.map(overlap_code));
        self.int(7, u64::from(*retries));
        let Backoff { initial, max } = backoff;
        self.duration(8, *initial);
        self.duration(9, *max);
        self.duration(10, *timeout);
        self.int(11, u64::from(*safe_to_repeat));
        self.int(12, u64::from(*legal_duty));
        self.duration(13, *stall_after);
        self.text_opt(14, concurrency_key.as_deref());
        self.opt(15, pause_after_failures.map(u64::from));
        self.duration_opt(16, *wait_budget);
        self.duration_opt(17, *alert_throttle);
        self.opt(18, concurrency_limit.map(u64::from));
        self.duration_opt(19, *jitter);
        self.int(20, u64::from(*requires_confirmation));
        self.text_opt(21, payload.as_deref());
        // Added later: written only when set (see the module's doc).
        if let Some(within) = expect_success_within {
            self.duration(22, *within);
        }
        if !after.is_empty() {
            self.int(23, after.len() as u64);
            for upstream in after {
                self.text(24, upstream.as_str());
            }
        }
    }

    fn schedule(&mut self, tag: u8, schedule: &Schedule) {
        self.tag(tag);
        match schedule {
            Schedule::Cron(c) => {
                self.text(1, "cron");
                self.text(2, c.expr());
                self.text(3, c.zone().name());
                let policy = c.explicit_policy().map(|p| {
                    let gap = match p.gap {
                        Gap::RunAtGapEnd => 1,
                        Gap::Skip => 2,
                    };
                    let fold = match p.fold {
                        Fold::First => 1,
                        Fold::Last => 2,
                        Fold::Both => 3,
                    };
                    gap * 16 + fold
                });
                self.opt(4, policy);
            }
            Schedule::Every { period, offset } => {
                self.text(1, "every");
                self.duration(2, *period);
                self.duration(3, *offset);
            }
            Schedule::At { instant } => {
                self.text(1, "at");
                self.int(2, instant.as_millis() as u64);
            }
            Schedule::Calendar(c) => self.calendar_schedule(c),
        }
    }

    /// A calendar schedule: its base (tagged as a schedule of its own), then every
    /// calendar's name, recurrence and spans with their labels (a label is what people see
    /// as the reason, so it is confirmed too), then the business day and the roll.
    fn calendar_schedule(&mut self, c: &CalendarSchedule) {
        self.text(1, "calendar");
        self.schedule(2, c.base());
        self.int(3, c.exclude().len() as u64);
        for cal in c.exclude() {
            self.text(4, cal.name().as_str());
            self.int(5, u64::from(cal.yearly()));
            self.int(6, cal.spans().len() as u64);
            for span in cal.spans() {
                self.text(7, &span.to_string());
                self.text_opt(8, span.label());
            }
        }
        // The business day as its offset from -23, so it is a plain non-negative number.
        self.opt(9, c.business_day().map(|b| (b.get() + 23) as u64));
        self.text(10, c.roll().name());
    }

    fn tag(&mut self, tag: u8) {
        self.0.update([tag]);
    }

    fn int(&mut self, tag: u8, n: u64) {
        self.tag(tag);
        self.0.update(n.to_le_bytes());
    }

    fn duration(&mut self, tag: u8, d: Duration) {
        self.int(tag, d.as_millis());
    }

    fn opt(&mut self, tag: u8, n: Option<u64>) {
        self.tag(tag);
        match n {
            Some(n) => self.int(1, n),
            None => self.tag(0),
        }
    }

    fn duration_opt(&mut self, tag: u8, d: Option<Duration>) {
        self.opt(tag, d.map(|d| d.as_millis()));
    }

    fn text(&mut self, tag: u8, s: &str) {
        self.int(tag, s.len() as u64);
        self.0.update(s.as_bytes());
    }

    fn text_opt(&mut self, tag: u8, s: Option<&str>) {
        self.tag(tag);
        match s {
            Some(s) => self.text(1, s),
            None => self.tag(0),
        }
    }
}

fn missed_code(m: MissedRule) -> u64 {
    match m {
        MissedRule::Skip => 1,
        MissedRule::CatchUpOnce => 2,
        MissedRule::Required => 3,
    }
}

fn overlap_code(o: Overlap) -> u64 {
    match o {
        Overlap::Skip => 1,
        Overlap::BufferOne => 2,
        Overlap::BufferAll => 3,
    }
}
