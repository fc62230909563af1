//! People's mistakes in definitions (issue 17): the rules a valid `JobDef` keeps, as the
//! docs state them (`docs/semantics.md`'s table of `DefError`s, the field docs of `JobDef`
//! and `DefError`) with the public bounds (`MAX_TITLE`, `MAX_RETRIES`, `MAX_JITTER`,
//! `MAX_PAYLOAD`, `MAX_CONCURRENCY_LIMIT`) and the store's tick, never by asking the core's
//! `validate`. Each rule carries the ways a person breaks it (each breaks that rule and no
//! other) and the values exactly at its bound, which must be accepted, so a `>` written as
//! `>=` shows as surely as a check left out. The world draws from this table; the checker
//! (R3) judges every definition people send by the same rules.

use std::sync::OnceLock;

use duetime::{DefError, Duration, JobDef, MissedRule, Overlap, Schedule};

// The public bounds as `docs/semantics.md`'s table of `DefError`s states them, not as the
// core's constants say: a bound the core moved (its `MAX_PAYLOAD` of `64 * 1024` written
// `64 + 1024`) then breaks R3 instead of moving the checker with it.
/// Longest title, and pause note, in characters.
pub const MAX_TITLE: usize = 200;
/// Most retries after the first attempt.
pub const MAX_RETRIES: u32 = 100;
/// Longest jitter.
pub const MAX_JITTER: Duration = Duration::from_hours(1);
/// Widest lane.
pub const MAX_CONCURRENCY_LIMIT: u32 = 1_000;
/// Longest payload, in bytes (64 KiB).
pub const MAX_PAYLOAD: usize = 65_536;
/// Most upstream jobs one job may wait for (`after`).
pub const MAX_UPSTREAMS: usize = 8;

/// Changes a definition; `false` when the change does not apply to it (the definition is
/// then left as it was).
pub type Change = fn(&mut JobDef, Duration) -> bool;

/// One rule of a valid definition.
pub struct Rule {
    /// The field it is about, as the docs name it.
    pub field: &'static str,
    /// The error a definition breaking it must be refused with, its fields the values given
    /// (`None`: the definition keeps the rule). The tick is the store's.
    pub broken: fn(&JobDef, Duration) -> Option<DefError>,
    /// Ways a person breaks it: each makes a valid definition break this rule alone.
    pub wrong: &'static [Change],
    /// Values exactly at the rule's bound: each leaves a valid definition valid.
    pub at_bound: &'static [Change],
}

/// The longest key the docs allow, in characters.
const MAX_KEY: usize = 128;
const MS: Duration = Duration::from_millis(1);
/// Written with a two-byte character, so a length counted in bytes rather than characters
/// (or the reverse, for the payload) shows.
const WIDE: char = 'é';

fn wide(chars: usize) -> String {
    std::iter::repeat_n(WIDE, chars).collect()
}

/// The payloads at and just over `MAX_PAYLOAD` bytes (made once: 64 KiB each).
fn payload(over: bool) -> String {
    static AT: OnceLock<String> = OnceLock::new();
    static OVER: OnceLock<String> = OnceLock::new();
    let make = |extra: usize| {
        // Two bytes a character: half as many characters as bytes, so a count of
        // characters would take even the longer one for short.
        let mut s = wide(MAX_PAYLOAD / 2);
        s.push_str(&"x".repeat(extra));
        s
    };
    if over {
        OVER.get_or_init(|| make(1)).clone()
    } else {
        AT.get_or_init(|| make(0)).clone()
    }
}

/// The most jitter the docs allow for this schedule: an hour, and no more than an
/// `every` period (a calendar's base included: its due times are the period's, some left
/// out).
fn jitter_bound(def: &JobDef) -> Duration {
    match *def.schedule.base() {
        Schedule::Every { period, .. } => period.min(MAX_JITTER),
        _ => MAX_JITTER,
    }
}

fn title(d: &JobDef, _: Duration) -> Option<DefError> {
    let len = d.title.chars().count();
    (len > MAX_TITLE).then_some(DefError::TitleTooLong { len })
}

fn duty_needs_required(d: &JobDef, _: Duration) -> Option<DefError> {
    (d.legal_duty && d.missed != MissedRule::Required).then_some(DefError::LegalDutyNeedsRequired)
}

fn duty_has_window(d: &JobDef, _: Duration) -> Option<DefError> {
    (d.legal_duty && d.catch_up_window.is_some()).then_some(DefError::LegalDutyHasWindow)
}

fn required_overlap(d: &JobDef, _: Duration) -> Option<DefError> {
    let drops = matches!(d.overlap, Some(Overlap::Skip | Overlap::BufferOne));
    (d.missed == MissedRule::Required && drops).then_some(DefError::RequiredCannotSkipOverlap)
}

fn every_period(d: &JobDef, tick: Duration) -> Option<DefError> {
    match *d.schedule.base() {
        Schedule::Every { period, .. } if period < tick => {
            Some(DefError::EveryShorterThanTick { period, tick })
        }
        _ => None,
    }
}

fn timeout(d: &JobDef, _: Duration) -> Option<DefError> {
    // "timeout: zero; a timeout is at least 1s" (`DefError::ZeroTimeout`'s message).
    (d.timeout < Duration::from_secs(1)).then_some(DefError::ZeroTimeout)
}

fn retries(d: &JobDef, _: Duration) -> Option<DefError> {
    (d.retries > MAX_RETRIES).then_some(DefError::TooManyRetries { retries: d.retries })
}

fn backoff(d: &JobDef, _: Duration) -> Option<DefError> {
    let b = d.backoff;
    (b.initial.is_zero() || b.initial > b.max).then_some(DefError::BadBackoff)
}

fn key(d: &JobDef, _: Duration) -> Option<DefError> {
    let key = d.concurrency_key.as_ref()?;
    let bad = key.is_empty() || key.chars().count() > MAX_KEY || key.chars().any(char::is_control);
    bad.then(|| DefError::BadConcurrencyKey {
        key: key.chars().take(130).collect(),
    })
}

fn failure_streak(d: &JobDef, _: Duration) -> Option<DefError> {
    (d.pause_after_failures == Some(0)).then_some(DefError::ZeroFailureStreak)
}

fn limit(d: &JobDef, _: Duration) -> Option<DefError> {
    let limit = d.concurrency_limit?;
    (limit == 0 || limit > MAX_CONCURRENCY_LIMIT).then_some(DefError::BadConcurrencyLimit { limit })
}

fn jitter(d: &JobDef, _: Duration) -> Option<DefError> {
    let (jitter, max) = (d.jitter?, jitter_bound(d));
    (jitter > max).then_some(DefError::JitterTooLong { jitter, max })
}

fn payload_len(d: &JobDef, _: Duration) -> Option<DefError> {
    let len = d.payload.as_ref()?.len();
    (len > MAX_PAYLOAD).then_some(DefError::PayloadTooLong { len })
}

fn switch(d: &JobDef, tick: Duration) -> Option<DefError> {
    let within = d.expect_success_within?;
    (within < tick).then_some(DefError::ExpectSuccessTooSoon { within, tick })
}

/// The table. Every `DefError` a definition built with `JobName::new` can earn is here
/// (`bad_name` cannot be built; `duplicate_name` is a jobs file's).
pub static RULES: &[Rule] = &[
    Rule {
        field: "title",
        broken: title,
        wrong: &[|d, _| {
            d.title = wide(MAX_TITLE + 1);
            true
        }],
        at_bound: &[|d, _| {
            d.title = wide(MAX_TITLE);
            true
        }],
    },
    Rule {
        field: "legal_duty",
        broken: duty_needs_required,
        wrong: &[|d, _| {
            // (Without a window, which a legal duty may not have either.)
            d.legal_duty = true;
            if d.missed == MissedRule::Required {
                d.missed = MissedRule::CatchUpOnce;
            }
            d.catch_up_window = None;
            true
        }],
        at_bound: &[],
    },
    Rule {
        field: "catch_up_window",
        broken: duty_has_window,
        wrong: &[|d, _| {
            d.legal_duty = true;
            d.missed = MissedRule::Required;
            d.overlap = None;
            d.catch_up_window = Some(Duration::from_hours(1));
            true
        }],
        at_bound: &[],
    },
    Rule {
        field: "overlap",
        broken: required_overlap,
        wrong: &[
            |d, _| {
                d.missed = MissedRule::Required;
                d.overlap = Some(Overlap::Skip);
                true
            },
            |d, _| {
                d.missed = MissedRule::Required;
                d.overlap = Some(Overlap::BufferOne);
                true
            },
        ],
        // `buffer_all` said out loud is what `required` does anyway.
        at_bound: &[|d, _| {
            let required = d.missed == MissedRule::Required;
            if required {
                d.overlap = Some(Overlap::BufferAll);
            }
            required
        }],
    },
    Rule {
        field: "schedule",
        broken: every_period,
        // (Without jitter, which may be no longer than the period. A period of exactly the
        // tick is drawn by the world's own jobs: `every 30s` under the 30 s tick.)
        wrong: &[
            |d, tick| {
                d.schedule = Schedule::every(tick.saturating_sub(MS), Duration::ZERO)
                    .expect("a positive period");
                d.jitter = None;
                true
            },
            |d, _| {
                d.schedule = Schedule::every(MS, Duration::ZERO).expect("a positive period");
                d.jitter = None;
                true
            },
        ],
        at_bound: &[],
    },
    Rule {
        field: "timeout",
        broken: timeout,
        wrong: &[
            |d, _| {
                d.timeout = Duration::ZERO;
                true
            },
            |d, _| {
                d.timeout = Duration::from_millis(999);
                true
            },
        ],
        at_bound: &[|d, _| {
            d.timeout = Duration::from_secs(1);
            true
        }],
    },
    Rule {
        field: "retries",
        broken: retries,
        wrong: &[
            |d, _| {
                d.retries = MAX_RETRIES + 1;
                true
            },
            |d, _| {
                d.retries = u32::MAX;
                true
            },
        ],
        at_bound: &[|d, _| {
            d.retries = MAX_RETRIES;
            true
        }],
    },
    Rule {
        field: "backoff",
        broken: backoff,
        wrong: &[
            |d, _| {
                d.backoff.initial = Duration::ZERO;
                true
            },
            |d, _| {
                d.backoff.initial = d.backoff.max.saturating_add(MS);
                true
            },
        ],
        at_bound: &[
            |d, _| {
                d.backoff.initial = d.backoff.max;
                true
            },
            |d, _| {
                d.backoff.initial = MS;
                true
            },
        ],
    },
    Rule {
        field: "concurrency_key",
        broken: key,
        wrong: &[
            |d, _| {
                d.concurrency_key = Some(String::new());
                true
            },
            |d, _| {
                d.concurrency_key = Some(wide(MAX_KEY + 1));
                true
            },
            |d, _| {
                d.concurrency_key = Some("/data/folder\n1".to_string());
                true
            },
        ],
        // (Only on a job without a key: a keyed job moved to another lane, even for a
        // moment, would leave C1, C3 and V1's counts, which go by the job's own key,
        // counting its open run under the old one.)
        at_bound: &[|d, _| {
            if d.concurrency_key.is_some() {
                return false;
            }
            d.concurrency_key = Some(wide(MAX_KEY));
            true
        }],
    },
    Rule {
        field: "pause_after_failures",
        broken: failure_streak,
        wrong: &[|d, _| {
            d.pause_after_failures = Some(0);
            true
        }],
        at_bound: &[|d, _| {
            d.pause_after_failures = Some(1);
            true
        }],
    },
    Rule {
        field: "concurrency_limit",
        broken: limit,
        wrong: &[
            |d, _| {
                d.concurrency_limit = Some(0);
                true
            },
            |d, _| {
                d.concurrency_limit = Some(MAX_CONCURRENCY_LIMIT + 1);
                true
            },
        ],
        // (Only on a job without a key, whose limit no lane reads: a keyed job's would
        // change its lane's width, which C1 and C3 take from the jobs' own limits.)
        at_bound: &[
            |d, _| {
                if d.concurrency_key.is_some() {
                    return false;
                }
                d.concurrency_limit = Some(1);
                true
            },
            |d, _| {
                if d.concurrency_key.is_some() {
                    return false;
                }
                d.concurrency_limit = Some(MAX_CONCURRENCY_LIMIT);
                true
            },
        ],
    },
    Rule {
        field: "jitter",
        broken: jitter,
        wrong: &[|d, _| {
            d.jitter = Some(jitter_bound(d).saturating_add(MS));
            true
        }],
        at_bound: &[|d, _| {
            d.jitter = Some(jitter_bound(d));
            true
        }],
    },
    Rule {
        field: "payload",
        broken: payload_len,
        wrong: &[|d, _| {
            d.payload = Some(payload(true));
            true
        }],
        at_bound: &[|d, _| {
            d.payload = Some(payload(false));
            true
        }],
    },
    Rule {
        field: "expect_success_within",
        broken: switch,
        wrong: &[
            |d, tick| {
                d.expect_success_within = Some(tick.saturating_sub(MS));
                true
            },
            |d, _| {
                d.expect_success_within = Some(Duration::ZERO);
                true
            },
        ],
        at_bound: &[|d, tick| {
            d.expect_success_within = Some(tick);
            true
        }],
    },
    // Last, and drawn only in worlds with chains (`World::mistake`).
    Rule {
        field: "after",
        broken: upstreams,
        wrong: &[
            |d, _| {
                d.after = vec![d.name.clone()];
                true
            },
            |d, _| {
                let other = upstream_name(0);
                d.after = vec![other.clone(), other];
                true
            },
            |d, _| {
                d.after = (0..=MAX_UPSTREAMS).map(upstream_name).collect();
                true
            },
        ],
        at_bound: &[|d, _| {
            d.after = (0..MAX_UPSTREAMS).map(upstream_name).collect();
            true
        }],
    },
];

/// A name no world's job has (they are `jobN`), for an upstream of a broken `after`.
fn upstream_name(i: usize) -> duetime::JobName {
    duetime::JobName::new(&format!("upstream{i}")).expect("a valid name")
}

/// `after` names other jobs, each once, and at most `MAX_UPSTREAMS` of them.
fn upstreams(def: &JobDef, _: Duration) -> Option<DefError> {
    let count = def.after.len();
    if count > MAX_UPSTREAMS {
        return Some(DefError::BadUpstreams {
            upstream: None,
            count,
        });
    }
    let wrong = def
        .after
        .iter()
        .enumerate()
        .find(|(i, u)| **u == def.name || def.after[..*i].contains(u))?;
    Some(DefError::BadUpstreams {
        upstream: Some(wrong.1.clone()),
        count,
    })
}

/// Every rule `def` breaks under `tick`, each with the error it must be refused with. The
/// docs promise the first rule broken, in no stated order: with several broken, any of
/// them is right.
pub fn broken(def: &JobDef, tick: Duration) -> Vec<DefError> {
    RULES.iter().filter_map(|r| (r.broken)(def, tick)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Each way of breaking a rule breaks that rule alone, each bound value keeps a valid
    /// definition valid, over the world's own jobs; and the table reaches every error a
    /// definition can earn.
    #[test]
    fn each_mistake_breaks_one_rule_and_each_bound_none() {
        let tick = Duration::from_secs(30);
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let cfg = crate::gen::draw_world(seed, &mut rng, &Default::default());
            for job in crate::gen::draw_jobs(&mut rng, &cfg, None) {
                assert_eq!(broken(&job.def, tick), vec![], "{:?}", job.def);
                for rule in RULES {
                    for wrong in rule.wrong {
                        let mut d = job.def.clone();
                        if !wrong(&mut d, tick) {
                            continue;
                        }
                        let errors = broken(&d, tick);
                        assert_eq!(errors.len(), 1, "{}: {errors:?}", rule.field);
                        assert_eq!(Some(&errors[0]), (rule.broken)(&d, tick).as_ref());
                        let name = serde_json::to_value(&errors[0]).unwrap()["error"].clone();
                        seen.insert(name.as_str().unwrap().to_string());
                        // The core agrees (here only: the checker never asks it).
                        assert_eq!(
                            d.validate(&duetime::Config::with_tick(tick)),
                            Err(errors[0].clone())
                        );
                    }
                    for at in rule.at_bound {
                        let mut d = job.def.clone();
                        if at(&mut d, tick) {
                            assert_eq!(broken(&d, tick), vec![], "{} at its bound", rule.field);
                            assert_eq!(d.validate(&duetime::Config::with_tick(tick)), Ok(()));
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len(), 15, "{seen:?}");
    }
}
