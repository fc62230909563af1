//! U1, what the store shows of a one-shot's end: a one-shot job's `JobRecord::ended`,
//! what a host reads to tell a finished one-shot from one still to come, is exactly what
//! the journal's end line said, `completed` (by which run) or `expired` (for which cause),
//! at the line's time; and nothing before that line or after a new definition. The
//! accessor answering `None` (a survivor of shard 12) would show every finished one-shot
//! as still to come.

use crate::check::Invariant;
use crate::check::Probe;
use duetime::{History, OneShotEnd, State, Timestamp};

use super::Checker;

/// The end the journal's line `h`, written at `at`, tells.
pub(super) fn end_told(h: &History, at: Timestamp) -> Option<OneShotEnd> {
    match h {
        History::Completed { run } => Some(OneShotEnd::Completed { run: *run, at }),
        History::Expired { cause } => Some(OneShotEnd::Expired { cause: *cause, at }),
        _ => None,
    }
}

impl Checker {
    /// U1 at the step's end: each one-shot's end in the store against the journal's.
    /// Walks the tracks ever defined as one-shots (`one_shots`, in track order), not every
    /// track: a track never so defined has no `one_shot` and was passed over here anyway.
    pub(super) fn one_shot_ends_shown(&mut self, state: &State) {
        let (mut wrong, mut ended) = (Vec::new(), false);
        for t in self.one_shots.iter().map(|&idx| &self.tracks[idx]) {
            // A removed registration's name may be another's now.
            let Some(os) = t.one_shot.filter(|_| t.removed_at.is_none()) else {
                continue;
            };
            let Some(record) = state
                .seq_of_name(t.name.as_str())
                .and_then(|seq| state.record(seq))
            else {
                continue;
            };
            let shown = record.ended();
            if shown != os.end {
                wrong.push((t.name.clone(), shown, os.end));
            }
            ended |= os.end.is_some();
        }
        if ended && wrong.is_empty() {
            self.probe(Probe::OneShotsEndShownAsTheJournalSays);
        }
        for (job, shown, told) in wrong {
            let detail = format!(
                "the store shows its instant's end as {shown:?}; the journal said {told:?}"
            );
            self.violation(Invariant::U1, &job, detail);
        }
    }
}
