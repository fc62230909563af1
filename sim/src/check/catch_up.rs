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
                self.probe("catch_up_once skipped late due times for a newer catch-up");
                continue;
            }
            let detail = format!(
                "a `catch_up_once` job skipped due times through {} as late, and no newer due time is owed, held or accounted",
                ts(skipped)
            );
            let name = t.name.clone();
            self.violation("M2", &name, detail);
        }
    }
}
