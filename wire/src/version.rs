//! Which wire version a line is answered in. A request line names it with `"wire": 2`;
//! a line without `wire` (or with `"wire": null`) is version 1, answered byte for byte as
//! before version 2 existed, so every host written for version 1 goes on unchanged.
//!
//! Per line, not per core or per session: a line's answer follows from the line alone (a
//! replayed or logged line reads the same anywhere), a restarted `duetime core --stdio`
//! needs no greeting sent again, and a host adds one field to the lines it writes. The
//! versions differ only in how a command's `reply` effect is written (see `effects`).

use serde::Serialize;
use serde_json::Value;

use crate::error::{ErrorKind, WireError};

/// A wire version this core answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum WireVersion {
    /// The first: a command's reply is serde's form of a Rust `Result`
    /// (`"result":{"Ok":view}` / `{"Err":refusal}`). A line without `wire` is this one.
    #[default]
    V1,
    /// A reply tagged by `outcome` (`"outcome":"done","view":...` /
    /// `"outcome":"refused","refusal":...`), no Rust `Ok`/`Err` keys (issue 48, item 5).
    V2,
}

/// Every wire version this core answers, oldest first.
pub const WIRE_VERSIONS: [WireVersion; 2] = [WireVersion::V1, WireVersion::V2];

/// The newest wire version this core answers (what the Node and Python packages speak).
/// Raised only by a change an existing host would misread (see "What is stable" in
/// docs/wire-format.md); the older versions stay answered.
pub const WIRE_VERSION: u32 = WireVersion::NEWEST.number();

impl WireVersion {
    /// The newest version.
    pub const NEWEST: WireVersion = WireVersion::V2;

    /// The version's number, as `wire` names it.
    pub const fn number(self) -> u32 {
        match self {
            WireVersion::V1 => 1,
            WireVersion::V2 => 2,
        }
    }

    /// The version numbered `n`, if this core answers it.
    pub fn from_number(n: u64) -> Option<WireVersion> {
        WIRE_VERSIONS
            .into_iter()
            .find(|v| u64::from(v.number()) == n)
    }
}

impl Serialize for WireVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.number())
    }
}

/// The version a request line's `wire` field names (absent or `null`: version 1). Anything
/// else, a version this core does not answer or a value that is no version at all, is
/// `unknown_wire_version`, naming the versions there are: the host learns at its first
/// line that this core is older than it expected, instead of misreading its answers.
pub(crate) fn wire_of(field: Option<Value>) -> Result<WireVersion, WireError> {
    let given = match field {
        None | Some(Value::Null) => return Ok(WireVersion::V1),
        Some(value) => value,
    };
    if let Some(version) = given.as_u64().and_then(WireVersion::from_number) {
        return Ok(version);
    }
    let mut shown = given.to_string();
    if let Some((cut, _)) = shown.char_indices().nth(40) {
        shown.truncate(cut);
    }
    let accepted: Vec<String> = WIRE_VERSIONS
        .iter()
        .map(|v| v.number().to_string())
        .collect();
    Err(WireError::new(
        ErrorKind::UnknownWireVersion,
        Some("wire".to_string()),
        format!(
            "this core does not answer wire version {shown}; accepted: {} (absent: 1)",
            accepted.join(", ")
        ),
    ))
}

#[cfg(feature = "schema")]
mod schema {
    use std::borrow::Cow;

    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

    impl JsonSchema for super::WireVersion {
        fn schema_name() -> Cow<'static, str> {
            "WireVersion".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            let numbers: Vec<u32> = super::WIRE_VERSIONS.iter().map(|v| v.number()).collect();
            json_schema!({
                "description": "A wire version this core answers: a request line names it in `wire` (absent: 1); 2 writes a command's reply tagged by `outcome` instead of Rust's `Ok`/`Err` keys.",
                "enum": numbers,
                "type": "integer",
            })
        }
    }
}
