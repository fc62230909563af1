//! The responses of the wire format: `{"ok":true, <one field>}` for a request that was
//! carried out, `{"ok":false,"error":{...}}` for one that was refused.

use duetime::{Effect, JobView, Refusal, State, Timestamp, FORMAT_VERSION};
use serde::Serialize;

use crate::effects::StepEffects;
use crate::error::WireError;
use crate::version::{WireVersion, WIRE_VERSIONS};

/// The JSON `true` (every answer's `ok`), so the schema can say it is always true.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yes;

impl Serialize for Yes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

/// The JSON `false` of a refusal's `ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct No;

impl Serialize for No {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(false)
    }
}

/// What `version` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Versions {
    /// The wire version this answer is written in: the request's `wire` (absent: 1).
    pub wire: WireVersion,
    /// The newest stored-state format this core reads and the one it writes
    /// (`duetime::FORMAT_VERSION`).
    pub state_format: u32,
    /// Every wire version this core answers, oldest first: a host sending
    /// `{"op":"version"}` (version 1, which every core answers) learns which it may name.
    /// Added within version 1 (a new field of an answer).
    pub wire_versions: &'static [WireVersion],
}

impl Versions {
    /// What `version` answers to a line of wire version `wire`.
    pub fn of(wire: WireVersion) -> Versions {
        Versions {
            wire,
            state_format: FORMAT_VERSION,
            wire_versions: &WIRE_VERSIONS,
        }
    }
}

/// One page of `jobs`.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PageOut<'a> {
    pub items: &'a [JobView],
    /// Pass as `after` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<&'a str>,
}

/// An answer, borrowing what it shows from the core, so a step's effects are written out
/// without a copy. Untagged: the one field beside `ok` says which it is.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Response<'a> {
    /// `version`.
    Version { ok: Yes, version: Versions },
    /// `new`, `load`: done.
    Done { ok: Yes },
    /// `save`.
    State { ok: Yes, state: &'a State },
    /// `step`. `refused`: the refusal of the command the step carried, when the core
    /// refused it (the same as its `reply` effect's refusal), so a host that reads no reply
    /// still sees that its definition or command was not taken (issue 48); absent
    /// otherwise. `effects` as the line's wire version writes them (`StepEffects`).
    Effects {
        ok: Yes,
        effects: StepEffects<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<&'a Refusal>,
    },
    /// `next_wake`, `next_wake_for`: the instant, or `null` when there is none.
    Wake { ok: Yes, wake: Option<Timestamp> },
    /// `job`: the view, or `null` when no job has the name.
    Job { ok: Yes, job: Option<&'a JobView> },
    /// `jobs`.
    Page { ok: Yes, page: PageOut<'a> },
    /// `take_parts`, `save_parts`.
    Parts {
        ok: Yes,
        parts: &'a crate::parts::PartsOut<'a>,
    },
    /// Any request refused.
    Error { ok: No, error: &'a WireError },
}

/// The refusal among a step's effects: the `Err` of its reply, if any (a step answers at
/// most one command).
pub fn refused(effects: &[Effect]) -> Option<&Refusal> {
    effects.iter().find_map(|e| match e {
        Effect::Reply {
            result: Err(refusal),
            ..
        } => Some(refusal),
        _ => None,
    })
}

#[cfg(feature = "schema")]
mod schema {
    use std::borrow::Cow;

    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

    impl JsonSchema for super::Yes {
        fn schema_name() -> Cow<'static, str> {
            "True".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({ "const": true })
        }
    }

    impl JsonSchema for super::No {
        fn schema_name() -> Cow<'static, str> {
            "False".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({ "const": false })
        }
    }
}
