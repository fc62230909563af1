//! A3: a system pause is told as its cause asks. A pause for failures in a row
//! (`pause_after_failures`) is news: its step tells a `paused_by_system` alert naming that
//! reason (or holds it, within the job's throttle, as an `alert held` line). A pause for a
//! lost run or for retries run out follows an incident told already (`run_lost`,
//! `failed_out`), so it tells no second alert; and no step tells a system pause it did
//! not make. A1 holds that nothing is told twice; this holds that what must be told is.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{AlertKind, SystemPause};

use super::Checker;

/// What one step paused by the system and told of it, per track.
#[derive(Default)]
pub(super) struct PausesTold {
    /// The system pauses the step's journal made: the track and why.
    paused: Vec<(usize, SystemPause)>,
    /// The `paused_by_system` alerts the step told or held: the track and the reason.
    told: Vec<(usize, SystemPause)>,
}

impl Checker {
    /// The journal says the system paused track `idx` for `reason`.
    pub(super) fn system_paused(&mut self, idx: usize, reason: SystemPause) {
        self.pauses_told.paused.push((idx, reason));
    }

    /// An alert of track `idx` was told or held by the throttle.
    pub(super) fn pause_alert(&mut self, idx: usize, kind: &AlertKind) {
        if let AlertKind::PausedBySystem { reason } = kind {
            self.pauses_told.told.push((idx, *reason));
        }
    }

    /// At the step's end: each system pause told exactly as its cause asks.
    pub(super) fn pauses_judged(&mut self) {
        let PausesTold { paused, told } = std::mem::take(&mut self.pauses_told);
        for &(idx, reason) in &paused {
            let news = matches!(reason, SystemPause::FailureStreak { .. });
            let alerts = told.iter().filter(|&&(i, _)| i == idx).count();
            let detail = match (news, alerts) {
                (true, 1) if told.contains(&(idx, reason)) => {
                    self.probe(Probe::PauseAfterFailuresInARowTold);
                    continue;
                }
                (false, 0) => continue,
                (true, 0) => format!("paused by the system ({reason}), and no alert told it"),
                (true, _) => format!(
                    "paused by the system ({reason}), told {alerts} time(s) or for another reason"
                ),
                (false, _) => format!(
                    "paused by the system ({reason}), an incident told already, and told again as a pause"
                ),
            };
            let name = self.tracks[idx].name.clone();
            self.violation(Invariant::A3, &name, detail);
        }
        for &(idx, reason) in &told {
            if !paused.iter().any(|&(i, _)| i == idx) {
                let detail =
                    format!("a system pause ({reason}) told in a step that paused nothing");
                let name = self.tracks[idx].name.clone();
                self.violation(Invariant::A3, &name, detail);
            }
        }
    }
}
