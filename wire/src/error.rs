//! The typed error every bad request gets: what kind of mistake, which field, and a message
//! that says what was wrong and what is accepted. Never a panic, and the core is unchanged.

use std::fmt;

use serde::Serialize;

/// What kind of mistake a request made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The line is not one JSON object (not UTF-8, not JSON, or JSON of another type).
    BadLine,
    /// `op` names no operation of this wire version.
    UnknownOp,
    /// `wire` names a wire version this core does not answer (or is no version at all);
    /// the message lists the ones it does. Every later line is still answered.
    UnknownWireVersion,
    /// A field is missing, of the wrong type or out of range; `field` names it.
    BadField,
    /// `load`: the state was written by a newer duetime than this one (`LoadError::NewerFormat`).
    NewerFormat,
    /// `load`: the state is well-formed JSON of the right shape but breaks the core's
    /// invariants (`LoadError::Inconsistent`).
    InconsistentState,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::BadLine => "bad_line",
            ErrorKind::UnknownOp => "unknown_op",
            ErrorKind::UnknownWireVersion => "unknown_wire_version",
            ErrorKind::BadField => "bad_field",
            ErrorKind::NewerFormat => "newer_format",
            ErrorKind::InconsistentState => "inconsistent_state",
        }
    }
}

/// A refused request. The state is unchanged by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WireError {
    pub kind: ErrorKind,
    /// The field at fault as a path from the request's top (`event.def.schedule.expr`,
    /// `event.held[0].fence`), when one is to blame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What was wrong and what is accepted, in words.
    pub message: String,
}

impl WireError {
    pub fn new(kind: ErrorKind, field: Option<String>, message: impl Into<String>) -> WireError {
        WireError {
            kind,
            field,
            message: message.into(),
        }
    }
}

/// `field: message` (or the message alone), as a host logs it.
impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {field}: {}", self.kind.name(), self.message),
            None => write!(f, "{}: {}", self.kind.name(), self.message),
        }
    }
}

impl std::error::Error for WireError {}
