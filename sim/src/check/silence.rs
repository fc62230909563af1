//! E1, the dead-man's switch held to the journal (`JobDef::expect_success_within`). The
//! checker counts each job's silence itself, from the journal alone: from the `defined`
//! line that starts a registration, then from each success (a run settled `ok` or
//! `skipped`, or approved). Then:
//!
//! - a `no_success` alert names the job's `within` and the very instant the checker counts
//!   from, and comes no sooner than that silence's end (told early, or counted from a
//!   success the core forgot, is a violation);
//! - once the world has healed, a silence that ended more than the settling bound before
//!   the end (or the job's throttle, if later) has been told (liveness: a switch that never
//!   fires is the mistake a dead-man's switch exists to catch).

/// One registration's switch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Silence {
    within: i64,
    since: Option<i64>,
    told: bool,
}

impl Silence {
    /// The switch of a job whose facts set it.
    pub(crate) fn of(within: Option<i64>) -> Option<Silence> {
        within.map(|within| Silence {
            within,
            since: None,
            told: false,
        })
    }

    /// A `defined` line: the silence starts here unless it is counting already (a new
    /// schedule of the same registration keeps counting).
    pub(crate) fn defined(&mut self, at: i64) {
        self.since.get_or_insert(at);
    }

    /// A success at `at`: the silence starts again, and the incident is over.
    pub(crate) fn succeeded(&mut self, at: i64) {
        self.since = Some(at);
        self.told = false;
    }

    /// A `no_success` alert at `at` naming `since` and `within`: what is wrong with it, if
    /// anything.
    pub(crate) fn told(&mut self, at: i64, since: i64, within: i64) -> Option<String> {
        self.told = true;
        let Some(counted) = self.since else {
            return Some(format!(
                "no_success told at {} before the job was defined",
                crate::check::ts(at)
            ));
        };
        if within != self.within {
            return Some(format!(
                "no_success names a silence of {within} ms, the job expects a success within {} ms",
                self.within
            ));
        }
        if since != counted {
            return Some(format!(
                "no_success counts from {}, the journal's latest success (or definition) is {}",
                crate::check::ts(since),
                crate::check::ts(counted)
            ));
        }
        let end = counted.saturating_add(self.within);
        (at < end).then(|| {
            format!(
                "no_success told at {}, before the silence ends at {}",
                crate::check::ts(at),
                crate::check::ts(end)
            )
        })
    }

    /// At the end of a healed world: the untold silence that should have been told by
    /// `bound` (its end, or `throttle_end` if later), if any.
    pub(crate) fn overdue(&self, throttle_end: Option<i64>, bound: i64) -> Option<String> {
        let since = self.since.filter(|_| !self.told)?;
        let end = since
            .saturating_add(self.within)
            .max(throttle_end.unwrap_or(i64::MIN));
        (end <= bound).then(|| {
            format!(
                "no success since {} and none expected after {} ms, yet no no_success alert by the end",
                crate::check::ts(since),
                self.within
            )
        })
    }

    /// Where the silence counts from (the journal's latest success, or the definition).
    pub(crate) fn since(&self) -> Option<i64> {
        self.since
    }

    pub(crate) fn is_told(&self) -> bool {
        self.told
    }
}
