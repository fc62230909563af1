//! State parts on the wire (issue 48): a store that keeps a row per job writes, after each
//! step, only the jobs the step touched and the small globals, instead of the whole state
//! (31 MB an event at 100,000 jobs). The Rust API's `State::track_changes`,
//! `take_touched`, `globals`, `from_parts` and `put_parts` (docs/host-contract.md), as
//! requests (`track_changes`, `take_parts`, `save_parts`, `load_parts`, `put_parts`) and
//! as text for the packages, which hand each record to the host as the text to store.

use std::collections::BTreeMap;

use duetime::{Globals, JobRecord, JobSeq, LoadError, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decode::decode;
use crate::error::{ErrorKind, WireError};

/// Parts as a request gives them (`load_parts`, `put_parts`): the globals, and records by
/// sequence number (`null`: the job was removed; `put_parts` only).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, Serialize))]
pub struct PartsIn {
    pub globals: Globals,
    pub jobs: BTreeMap<JobSeq, Option<JobRecord>>,
}

/// Parts as `take_parts` and `save_parts` answer them: the globals and, by sequence number,
/// each job's record (`null`: removed since the last `take_parts`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PartsOut<'a> {
    pub globals: Globals,
    pub jobs: BTreeMap<JobSeq, Option<&'a JobRecord>>,
}

/// Parts as text, each piece the text to store: the globals, and each job's record by
/// sequence number (`None`: removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartsText {
    pub globals: String,
    pub jobs: Vec<(JobSeq, Option<String>)>,
}

/// The jobs a step touched since the last take, with their records now (`None`: removed);
/// refused while changes are not tracked, since an empty answer would tell a host that
/// forgot to turn tracking on that nothing changed, and its store would fall behind.
pub(crate) fn touched(state: &mut State) -> Result<Vec<JobSeq>, WireError> {
    if !state.tracks_changes() {
        return Err(WireError::new(
            ErrorKind::BadField,
            Some("op".to_string()),
            "changes are not tracked, so the touched jobs are not known: send \
             {\"op\":\"track_changes\",\"on\":true} after `new` or a load (and store \
             `save_parts` once, whole); accepted then: `take_parts` after every step",
        ));
    }
    Ok(state.take_touched())
}

/// `seqs`' records as `PartsOut`.
pub(crate) fn parts_out<'a>(state: &'a State, seqs: &[JobSeq]) -> PartsOut<'a> {
    PartsOut {
        globals: state.globals(),
        jobs: seqs.iter().map(|&seq| (seq, state.record(seq))).collect(),
    }
}

/// `seqs`' records as text, one JSON text each.
pub(crate) fn parts_text(state: &State, seqs: &[JobSeq]) -> Result<PartsText, WireError> {
    let jobs = seqs
        .iter()
        .map(|&seq| {
            let text = state.record(seq).map(serde_json::to_string).transpose();
            text.map(|t| (seq, t)).map_err(unwritable)
        })
        .collect::<Result<_, _>>()?;
    let globals = serde_json::to_string(&state.globals()).map_err(unwritable)?;
    Ok(PartsText { globals, jobs })
}

fn unwritable(e: serde_json::Error) -> WireError {
    WireError::new(
        ErrorKind::BadLine,
        None,
        format!("a part could not be written as JSON ({e}); this is a bug in duetime"),
    )
}

/// `parts` of a `load_parts` request: every record present (`null` is refused: there is
/// nothing to remove from a state being made).
pub(crate) fn load_parts(parts: PartsIn) -> Result<State, WireError> {
    let mut jobs = Vec::with_capacity(parts.jobs.len());
    for (seq, record) in parts.jobs {
        let Some(record) = record else {
            return Err(WireError::new(
                ErrorKind::BadField,
                Some(format!("parts.jobs.{seq}")),
                "null: a job to load needs its record; accepted: the record `save_parts` or \
                 `take_parts` gave (null is for `put_parts`: a job removed)",
            ));
        };
        jobs.push((seq, record));
    }
    State::from_parts(parts.globals, jobs).map_err(load_error)
}

/// A part's decode from a request line's value, its errors under `parts`.
pub(crate) fn parts_in(value: &Value) -> Result<PartsIn, WireError> {
    decode(value, "parts")
}

/// A `LoadError` of parts, as a load's is told, under field `parts`.
pub(crate) fn load_error(e: LoadError) -> WireError {
    let kind = match e {
        LoadError::NewerFormat { .. } => ErrorKind::NewerFormat,
        LoadError::Inconsistent { .. } => ErrorKind::InconsistentState,
    };
    WireError::new(kind, Some("parts".to_string()), e.to_string())
}

/// The globals from their own text.
pub(crate) fn globals_of(text: &str) -> Result<Globals, WireError> {
    serde_json::from_str(text).map_err(|e| text_error("parts.globals", &e))
}

/// Records from their own texts (`None`: removed).
pub(crate) fn records_of(
    jobs: Vec<(JobSeq, Option<String>)>,
) -> Result<Vec<(JobSeq, Option<JobRecord>)>, WireError> {
    jobs.into_iter()
        .map(|(seq, text)| {
            let record = text.as_deref().map(serde_json::from_str::<JobRecord>);
            match record.transpose() {
                Ok(record) => Ok((seq, record)),
                Err(e) => Err(text_error(&format!("parts.jobs.{seq}"), &e)),
            }
        })
        .collect()
}

fn text_error(field: &str, e: &serde_json::Error) -> WireError {
    WireError::new(
        ErrorKind::BadField,
        Some(field.to_string()),
        format!("{e} (of this part's own text); accepted: the text `take_parts` or `save_parts` gave for it"),
    )
}
