//! F1: a live host's runs are never forfeit. In a world where no process crashes, stalls,
//! sleeps, jumps its clock, drains or loses a commit's answer, and the only trouble is
//! turns slower than the tick and now and then an aborted transaction (`--faults
//! overload`: a slow, loaded store), no run is recorded lost (so no job is paused by the
//! system for it), and no due time is recorded missed as `down`: a host slower than its
//! tick starts its runs late, within the grace, and never loses them; a run whose report
//! aborted stays held, its lease renewed, until the report commits. This asks that the
//! right thing happened where S1-S7 only ask that nothing wrong did: losing every slow
//! host's runs keeps the ledger exact.

use crate::check::Invariant;
use duetime::{Entry, History, LedgerKind, MissCause, Record};

use super::Checker;

impl Checker {
    /// Holds F1 from now on: every process of this world stays live.
    pub fn hold_live_hosts(&mut self) {
        self.live_hosts = true;
    }

    /// F1 over one journal record.
    pub(super) fn live_record(&mut self, rec: &Record) {
        if !self.live_hosts {
            return;
        }
        let detail = match &rec.entry {
            Entry::History(History::Lost { run }) => {
                format!("{run} recorded lost though every process stayed live")
            }
            Entry::Ledger(l) => match l.kind {
                LedgerKind::Missed {
                    cause: MissCause::Down,
                    ..
                } => format!(
                    "{} due time(s) {}..{} recorded missed as down though every process stayed live",
                    l.count, l.from, l.to
                ),
                _ => return,
            },
            _ => return,
        };
        self.violation(Invariant::F1, &rec.job, detail);
    }
}
