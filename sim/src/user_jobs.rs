//! The user's own job definitions as a world's fixed job set (`duetime sim JOBS.toml`).
//!
//! A jobs file says when jobs are due and what the core should do about misses and
//! overlaps, but not how long their runs take or how often they fail: that is what decides
//! whether a schedule can keep up, so the caller passes it as hints (`--duration`,
//! `--fail-rate`), and jobs without one get a duration that fits their schedule. The oracle
//! specs come from `cron_text`, never from the core's parser.

use crate::check::Probe;
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
        Spec::Cron(_) | Spec::Calendar(_) => {
            let from = 1_740_787_200_000; // 2025-03-01T00:00:00Z
            let due = spec.due_in(from, from + 35 * 86_400_000);
            due.windows(2).map(|w| w[1].at - w[0].at).min()
        }
    }
}

/// The fewest runs a person's backfill burst asks of a `required` job: the world's
/// `backfill_burst` asks `BURST_RANGES_FEWEST` (28) to `BURST_RANGES` (36) separate ranges
/// of one to three due times, about one in five right against the next (a pair the core
/// merges), and each range the core cannot merge is a catch-up run of its own.
pub const BURST_RUNS: i64 = crate::world::BURST_RANGES_FEWEST as i64 * 4 / 5;

/// A failing seed's broken promises that the file's own settings cannot keep by design: a
/// person backfilled many separate ranges of a `required` job whose runs take so long that
/// the runs the ranges need cannot all end within the world's fault-free end. A verdict
/// about the simulator's backfill, not about the file: in production such a backfill takes
/// as long.
#[derive(Debug, Clone, PartialEq)]
pub struct Undrainable {
    pub job: String,
    /// Broken promises (L1) of the job at the end: backfilled ranges, and its own due
    /// times queued behind them.
    pub owed: usize,
    /// The mean of the run durations the world drew from.
    pub mean_run_ms: i64,
    /// The world's fault-free end, when the backlog had to drain.
    pub liveness_ms: i64,
    /// Set for a job whose promises waited behind that `required` job's backlog, in a
    /// world that runs one run at a time (`single_owner`, one run per process).
    pub behind: Option<String>,
}

impl fmt::Display for Undrainable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = |ms: i64| ms as f64 / 3_600_000.0;
        if let Some(other) = &self.behind {
            return write!(
                f,
                "job `{}`: {} promise(s) still owed at the end waited behind `{other}`'s \
                 backlog in a world that runs one run at a time (single_owner, one run per \
                 process); nothing to change for this job",
                self.job, self.owed
            );
        }
        write!(
            f,
            "job `{}`: a person's backfill of many separate ranges of this `required` job needs \
             a run for each range (at least {BURST_RUNS}), and its runs take {:.1} h on average: \
             about {:.0} h of runs, more than the world's fault-free end of {:.1} h ({} \
             promise(s) still owed at the end). What to change: --duration {}=TIME with how \
             long its runs really take; in production, backfill a `required` job in few \
             ranges (one range of up to 1,000 due times is one run)",
            self.job,
            h(self.mean_run_ms),
            h(self.mean_run_ms * BURST_RUNS),
            h(self.liveness_ms),
            self.owed,
            self.job,
        )
    }
}

/// The jobs whose backlog broke the seed by design (see `Undrainable`), when every broken
/// promise of the seed is one of those: a liveness (L1) promise of a `required` job, in a
/// world that drew a backfill burst, whose mean run times `BURST_RUNS` exceeds the world's
/// fault-free end; or, in a world that runs one run at a time, an L1 promise of another
/// job queued behind such a backlog. `None` for any other failure, which stays a failure.
pub fn undrainable_backfills(
    r: &crate::SeedReport,
    jobs: &[SimJob],
    overrides: &crate::Overrides,
) -> Option<Vec<Undrainable>> {
    use rand::SeedableRng;
    let burst = r
        .probes
        .get(Probe::BackfillBurst.name())
        .copied()
        .unwrap_or(0)
        > 0;
    if !burst || r.verdict != crate::Verdict::Liveness || r.violations.is_empty() {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(r.seed);
    let liveness_ms = crate::gen::draw_world(r.seed, &mut rng, overrides).liveness_ms;
    let mean = |j: &SimJob| (j.behaviour.duration_ms.0 + j.behaviour.duration_ms.1) / 2;
    let undrainable = |j: &SimJob| {
        j.def.missed == duetime::MissedRule::Required && mean(j) * BURST_RUNS > liveness_ms
    };
    let one_at_a_time = r.single_owner && r.max_runs_per_process == Some(1);
    let mut owed: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &r.violations {
        let job = jobs.iter().find(|j| j.def.name.as_str() == v.job)?;
        if v.invariant != "L1" || !(undrainable(job) || one_at_a_time) {
            return None;
        }
        *owed.entry(job.def.name.as_str()).or_default() += 1;
    }
    let first = jobs
        .iter()
        .find(|j| undrainable(j) && owed.contains_key(j.def.name.as_str()))?;
    let found = owed.into_iter().map(|(name, owed)| {
        let job = jobs.iter().find(|j| j.def.name.as_str() == name);
        Undrainable {
            job: name.to_string(),
            owed,
            mean_run_ms: job.map_or(0, mean),
            liveness_ms,
            behind: job
                .filter(|j| !undrainable(j))
                .map(|_| first.def.name.to_string()),
        }
    });
    Some(found.collect())
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
