//! The user's own job definitions as a world's fixed job set (`duetime sim JOBS.toml`).
//!
//! A jobs file says when jobs are due and what the core should do about misses and
//! overlaps, but not how long their runs take or how often they fail: that is what decides
//! whether a schedule can keep up, so the caller passes it as hints (`--duration`,
//! `--fail-rate`), and jobs without one get a duration that fits their schedule. The oracle
//! specs come from `cron_text`, never from the core's parser.

use std::collections::BTreeMap;
use std::fmt;

use duetime::{Duration, JobDef};

use crate::cron_text::{self, CronTextError};
use crate::gen::{Behaviour, SimJob};
use crate::oracle::Spec;

/// What the user told us about their runs.
#[derive(Debug, Clone, Default)]
pub struct RunHints {
    /// Run durations by job name, as a range in milliseconds (`lo == hi` for one value).
    pub durations: BTreeMap<String, (i64, i64)>,
    /// The chance a run fails (exit 1), for every job.
    pub fail_rate: f64,
}

/// Why the job set cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserJobError {
    /// The oracle cannot check this job's schedule.
    Schedule { job: String, error: CronTextError },
    /// A `--duration` hint names no job of the file.
    UnknownJob { name: String },
    /// A world needs at least one job.
    NoJobs,
}

impl fmt::Display for UserJobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserJobError::Schedule { job, error } => write!(f, "job `{job}`: {error}"),
            UserJobError::UnknownJob { name } => {
                write!(
                    f,
                    "--duration names `{name}`, which is not a job of the file"
                )
            }
            UserJobError::NoJobs => f.write_str("the file has no jobs to simulate"),
        }
    }
}

impl std::error::Error for UserJobError {}

/// `JOB=90s` or `JOB=30s..2m` (a range drawn from uniformly per run).
pub fn parse_duration_hint(text: &str) -> Result<(String, (i64, i64)), String> {
    let err = |why: &str| format!("--duration `{text}`: {why}; accepted: JOB=90s or JOB=30s..2m");
    let (job, value) = text.split_once('=').ok_or_else(|| err("no `=`"))?;
    if job.is_empty() {
        return Err(err("no job name"));
    }
    let ms = |v: &str| -> Result<i64, String> {
        let d: Duration = v.parse().map_err(|_| err("not a duration"))?;
        i64::try_from(d.as_millis())
            .ok()
            .filter(|&ms| ms > 0)
            .ok_or_else(|| err("a run lasts at least 1ms and at most a few years"))
    };
    let (lo, hi) = match value.split_once("..") {
        Some((a, b)) => (ms(a)?, ms(b)?),
        None => {
            let v = ms(value)?;
            (v, v)
        }
    };
    if lo > hi {
        return Err(err("the range runs backwards"));
    }
    // Runs beyond ten years cannot finish inside any simulated world anyway, and keeping
    // them bounded keeps the world's time arithmetic far from overflow.
    const CAP: i64 = 10 * 365 * 86_400_000;
    Ok((job.to_string(), (lo.min(CAP), hi.min(CAP))))
}

/// The world's jobs for `defs`: every schedule checked by the oracle, every run behaving
/// as hinted. All problems are reported at once.
pub fn sim_jobs(defs: &[JobDef], hints: &RunHints) -> Result<Vec<SimJob>, Vec<UserJobError>> {
    let mut errors = Vec::new();
    if defs.is_empty() {
        errors.push(UserJobError::NoJobs);
    }
    for name in hints.durations.keys() {
        if !defs.iter().any(|d| d.name.as_str() == name) {
            errors.push(UserJobError::UnknownJob { name: name.clone() });
        }
    }
    let fail = if hints.fail_rate.is_finite() {
        hints.fail_rate.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut jobs = Vec::new();
    for def in defs {
        let spec = match cron_text::spec_of(&def.schedule) {
            Ok(s) => s,
            Err(error) => {
                errors.push(UserJobError::Schedule {
                    job: def.name.to_string(),
                    error,
                });
                continue;
            }
        };
        let duration_ms = match hints.durations.get(def.name.as_str()) {
            Some(&(lo, hi)) => (lo, hi),
            None => default_duration(def, &spec),
        };
        jobs.push(SimJob {
            def: def.clone(),
            spec,
            behaviour: Behaviour {
                duration_ms,
                fail,
                fail_retry_after: 0.0,
                hang: 0.0,
                park: 0.0,
                park_ttl_ms: (0, 0),
            },
            // Nobody switches the user's jobs to other schedules: the world's schedule
            // changes need alternatives and skip jobs without any.
            alternatives: Vec::new(),
        });
    }
    if errors.is_empty() {
        Ok(jobs)
    } else {
        Err(errors)
    }
}

/// 1 s up to the smaller of the timeout and 80% of the schedule's shortest spacing: runs
/// that fit, so a job without a hint shows the core's handling of faults, not a backlog
/// nobody asked about.
fn default_duration(def: &JobDef, spec: &Spec) -> (i64, i64) {
    let timeout = i64::try_from(def.timeout.as_millis()).unwrap_or(i64::MAX);
    let hi = match shortest_spacing(spec) {
        Some(s) => timeout.min(s.saturating_mul(8) / 10),
        None => timeout,
    }
    .max(1);
    (hi.min(1_000), hi)
}

/// The shortest gap between due times over five weeks of March 2025 (two daylight-saving
/// changes), or `None` when there are fewer than two due times there.
fn shortest_spacing(spec: &Spec) -> Option<i64> {
    match spec {
        Spec::Every { period_ms, .. } => Some(*period_ms),
        Spec::At { .. } => None,
        Spec::Cron(_) => {
            let from = 1_740_787_200_000; // 2025-03-01T00:00:00Z
            let due = spec.due_in(from, from + 35 * 86_400_000);
            due.windows(2).map(|w| w[1].at - w[0].at).min()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duetime::{JobName, Schedule};

    fn def(name: &str, schedule: Schedule) -> JobDef {
        JobDef::new(JobName::new(name).expect("valid"), schedule)
    }

    #[test]
    fn hints_parse() {
        assert_eq!(
            parse_duration_hint("slow=90s"),
            Ok(("slow".to_string(), (90_000, 90_000)))
        );
        assert_eq!(
            parse_duration_hint("a=30s..2m"),
            Ok(("a".to_string(), (30_000, 120_000)))
        );
        for bad in [
            "slow",
            "=90s",
            "slow=",
            "slow=fast",
            "a=2m..30s",
            "a=0s",
            "a=1x",
        ] {
            assert!(parse_duration_hint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_fit_the_schedule() {
        let minutely = def("m", Schedule::cron("* * * * *", None).expect("valid"));
        let jobs = sim_jobs(&[minutely], &RunHints::default()).expect("simulable");
        assert_eq!(jobs[0].behaviour.duration_ms, (1_000, 48_000));
        assert!(jobs[0].alternatives.is_empty());
        let mut daily = def("d", Schedule::cron("@daily", None).expect("valid"));
        daily.timeout = Duration::from_millis(600_000);
        let jobs = sim_jobs(&[daily], &RunHints::default()).expect("simulable");
        assert_eq!(jobs[0].behaviour.duration_ms, (1_000, 600_000));
        let mut tiny = def("t", Schedule::cron("* * * * *", None).expect("valid"));
        tiny.timeout = Duration::from_millis(300);
        let jobs = sim_jobs(&[tiny], &RunHints::default()).expect("simulable");
        assert_eq!(jobs[0].behaviour.duration_ms, (300, 300));
    }

    #[test]
    fn hints_and_problems() {
        let slow = def("slow", Schedule::cron("* * * * *", None).expect("valid"));
        let hints = RunHints {
            durations: [("slow".to_string(), (90_000, 90_000))].into(),
            fail_rate: 0.05,
        };
        let jobs = sim_jobs(std::slice::from_ref(&slow), &hints).expect("simulable");
        assert_eq!(jobs[0].behaviour.duration_ms, (90_000, 90_000));
        assert_eq!(jobs[0].behaviour.fail, 0.05);

        let last = def("last", Schedule::cron("0 0 L * *", None).expect("valid"));
        let hints = RunHints {
            durations: [("nope".to_string(), (1, 1))].into(),
            fail_rate: f64::NAN,
        };
        let errors = sim_jobs(&[slow, last], &hints).expect_err("refused");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].to_string().contains("nope"));
        assert!(errors[1].to_string().contains("job `last`"));
        assert_eq!(
            sim_jobs(&[], &RunHints::default()).expect_err("refused"),
            vec![UserJobError::NoJobs]
        );
    }
}
