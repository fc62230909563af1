//! M2: `catch_up_once` catches up the newest. Its rule records every due time found late
//! and runs one catch-up for the newest of them (DESIGN: "record all, one catch-up run
//! covers the newest"). M1 bounds what it owes from above; this holds it from below: when
//! the ledger of a `catch_up_once` job skips due times as late (its processes down or
//! asleep, the clock set forward, the job paused, a quota hold), a newer due time is
//! caught up by the end of that step. It is owed (by the store's count, which N1 holds to
//! the journal at views), held by a run or a retry (by the journal), or was already
//! accounted by an entry other than such a skip (ran, failed, lost, caught up, or given
//! up for a reason of its own: too late for the window, rescheduled, removed).
//!
//! A new definition starts the judgment over (its rule may differ, and what the old
//! schedule owed is measured apart), and so do the steps that define.
//!
//! Here too, M1's window when a person pauses a `catch_up_once` job: the retry the pause
//! clears goes to the rule, and one already older than the catch-up window is given up in
//! that step, never owed (`window_at_pause`).

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{LedgerKind, MissAction, MissCause, MissedRule, State};

use super::{ts, Checker};

/// What M2 knows of one job since its latest definition.
#[derive(Default)]
pub(super) struct Newest {
    /// The newest due time its ledger skipped as late.
    skipped_late: Option<i64>,
    /// The newest due time accounted by an entry other than a skip as late.
    accounted: Option<i64>,
}

/// Whether a skip for `cause` is one the rule must answer with a newer catch-up.
fn late(cause: MissCause) -> bool {
    matches!(
        cause,
        MissCause::Down
            | MissCause::Asleep
            | MissCause::ClockForward
            | MissCause::Paused
            | MissCause::QuotaHold
    )
}

impl Checker {
    /// A ledger entry of track `idx` through due time `to`.
    pub(super) fn catch_up_entry(&mut self, idx: usize, to: i64, kind: LedgerKind) {
        let skipped_late = matches!(
            kind,
            LedgerKind::Missed { cause, action: MissAction::Skipped } if late(cause)
        );
        if !skipped_late {
            let newest = &mut self.tracks[idx].catch_up.accounted;
            *newest = Some(newest.map_or(to, |n| n.max(to)));
            return;
        }
        let rule = self.facts.get(&self.tracks[idx].name).map(|f| f.missed);
        if self.defining || rule != Some(MissedRule::CatchUpOnce) {
            return;
        }
        let newest = &mut self.tracks[idx].catch_up.skipped_late;
        *newest = Some(newest.map_or(to, |n| n.max(to)));
        if !self.skipped_late.contains(&idx) {
            self.skipped_late.push(idx);
        }
    }

    /// After a step: each `catch_up_once` job that skipped due times as late in it has a
    /// newer one caught up.
    pub(super) fn caught_up_newest(&mut self, state: &State) {
        for idx in std::mem::take(&mut self.skipped_late) {
            let t = &self.tracks[idx];
            let Some(skipped) = t.catch_up.skipped_late else {
                continue;
            };
            let owes = state
                .seq_of_name(t.name.as_str())
                .and_then(|seq| state.record(seq))
                .is_some_and(|r| r.owed() > 0);
            let accounted = t.catch_up.accounted.is_some_and(|a| a > skipped);
            if owes || accounted || t.line.holds_after(skipped) {
                self.probe(Probe::CatchUpOnceSkippedLateDueTimesForANewerCatchUp);
                continue;
            }
            let detail = format!(
                "a `catch_up_once` job skipped due times through {} as late, and no newer due time is owed, held or accounted",
                ts(skipped)
            );
            let name = t.name.clone();
            self.violation(Invariant::M2, &name, detail);
        }
    }

    /// M1's window when a person pauses a `catch_up_once` job: a retry the pause clears
    /// goes to the rule, and a cover already older than the job's catch-up window (its
    /// last due time before the pause's time less the window) is given up in that step
    /// (recorded `too_late`, or skipped for a newer catch-up owed), never owed.
    pub(super) fn window_at_pause(&mut self, idx: usize, at: i64, handed: &[(i64, i64)]) {
        let Some(f) = self.facts.get(&self.tracks[idx].name) else {
            return;
        };
        let Some(window) = f
            .catch_up_window_ms
            .filter(|_| f.missed == MissedRule::CatchUpOnce)
        else {
            return;
        };
        let entries = self.tracks[idx].entries.len();
        for &(_, to) in handed {
            if to < at.saturating_sub(window) {
                self.given_up_at_pause.push((idx, to, entries));
            }
        }
    }

    /// After a step: each cover `window_at_pause` found too old was accounted in it.
    pub(super) fn given_up_at_pause_judged(&mut self) {
        for (idx, to, entries) in std::mem::take(&mut self.given_up_at_pause) {
            let t = &self.tracks[idx];
            if t.entries[entries..]
                .iter()
                .any(|&(from, until, _, _)| from <= to && to <= until)
            {
                self.probe(Probe::RetryOlderThanTheWindowGivenUpAtAPause);
                continue;
            }
            let detail = format!(
                "a pause handed a retry through {} to `catch_up_once`, older than its catch-up window, and the step did not give it up",
                ts(to)
            );
            let name = t.name.clone();
            self.violation(Invariant::M1, &name, detail);
        }
    }
}
