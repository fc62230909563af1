//! The requests of the wire format, one JSON object a line, named by `op`, and their
//! decoding from one line into a typed `Request` or a `WireError`.

use duetime::{Config, Event, Globals, JobRecord, Now, ProcessId, State, Status, Timestamp};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::decode::decode;
use crate::error::{ErrorKind, WireError};

/// One request. `op` is the tag; the other fields are the operation's. Unknown fields of a
/// request are refused (a misspelt `nwo` is an error, not a missing `now`); unknown fields
/// inside the core's types are ignored as the core ignores them (see docs/wire-format.md).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(tag = "op", rename_all = "snake_case"))]
#[cfg_attr(feature = "schema", derive(serde::Serialize))]
pub enum Request {
    /// The wire version and the state format this core speaks.
    Version {},
    /// Start from an empty state with this config (absent: `Config::default()`).
    New {
        #[cfg_attr(feature = "schema", serde(default))]
        config: Option<Config>,
    },
    /// Replace the state with a stored one (what `save` answered).
    Load { state: Box<State> },
    /// The state, to store.
    Save {},
    /// `State::step`: the effects, in order.
    Step { now: Now, event: Box<Event> },
    /// `State::next_wake`.
    NextWake {},
    /// `State::next_wake_for(process)`.
    NextWakeFor { process: ProcessId },
    /// One job's view as of `now` (absent: the store's clock, `State::clock`).
    Job {
        name: String,
        #[cfg_attr(feature = "schema", serde(default))]
        now: Option<Timestamp>,
    },
    /// A page of job views, ranked attention first.
    Jobs {
        #[cfg_attr(feature = "schema", serde(default))]
        filter: Option<JobsFilter>,
        /// The previous page's `next`.
        #[cfg_attr(feature = "schema", serde(default))]
        after: Option<String>,
        /// At most this many views (absent: `DEFAULT_PAGE`; 0 is read as 1).
        #[cfg_attr(feature = "schema", serde(default))]
        limit: Option<u32>,
        #[cfg_attr(feature = "schema", serde(default))]
        now: Option<Timestamp>,
    },
}

/// A page's size when a `jobs` request names none.
pub const DEFAULT_PAGE: u32 = 100;

/// Which jobs `jobs` lists (`duetime::Filter` on the wire).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, serde::Serialize))]
#[serde(deny_unknown_fields)]
pub struct JobsFilter {
    #[serde(default)]
    pub status: Option<Status>,
    #[serde(default)]
    pub name_prefix: Option<String>,
}

/// The operations, as `op` names them.
pub const OPS: [&str; 9] = [
    "version",
    "new",
    "load",
    "save",
    "step",
    "next_wake",
    "next_wake_for",
    "job",
    "jobs",
];

/// Decodes one line. Never panics: any text is a `Request` or a `WireError`.
pub fn parse_line(line: &str) -> Result<Request, WireError> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        WireError::new(
            ErrorKind::BadLine,
            None,
            format!("expected one JSON object on the line: {e}"),
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(WireError::new(
            ErrorKind::BadLine,
            None,
            "expected a JSON object such as {\"op\":\"next_wake\"}",
        ));
    };
    let op = match fields.remove("op") {
        Some(Value::String(op)) => op,
        Some(_) => return Err(bad("op", "expected a string naming the operation")),
        None => {
            return Err(bad(
                "op",
                "missing field `op`: every request names its operation",
            ))
        }
    };
    parse_op(&op, fields)
}

/// The request `op` names, from the line's other fields.
fn parse_op(op: &str, fields: Map<String, Value>) -> Result<Request, WireError> {
    let mut f = Fields(fields);
    let request = match op {
        "version" => Request::Version {},
        "new" => Request::New {
            config: f.optional("config")?,
        },
        "load" => Request::Load {
            state: Box::new(load_state(&f.required_raw("state")?)?),
        },
        "save" => Request::Save {},
        "step" => Request::Step {
            now: f.required("now")?,
            event: Box::new(f.required("event")?),
        },
        "next_wake" => Request::NextWake {},
        "next_wake_for" => Request::NextWakeFor {
            process: f.required("process")?,
        },
        "job" => Request::Job {
            name: f.required("name")?,
            now: f.optional("now")?,
        },
        "jobs" => Request::Jobs {
            filter: f.optional("filter")?,
            after: f.optional("after")?,
            limit: f.optional("limit")?,
            now: f.optional("now")?,
        },
        other => {
            return Err(WireError::new(
                ErrorKind::UnknownOp,
                Some("op".to_string()),
                format!(
                    "unknown operation `{}`, expected one of {}",
                    clip(other),
                    OPS.map(|o| format!("`{o}`")).join(", ")
                ),
            ))
        }
    };
    f.finish(op)?;
    Ok(request)
}

/// A request's fields, taken one by one; what is left at the end was not asked for.
struct Fields(Map<String, Value>);

impl Fields {
    fn required_raw(&mut self, name: &str) -> Result<Value, WireError> {
        self.0
            .remove(name)
            .ok_or_else(|| bad(name, &format!("missing field `{name}`")))
    }

    fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, WireError> {
        decode(&self.required_raw(name)?, name)
    }

    /// Absent and `null` are both "not given".
    fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, WireError> {
        match self.0.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => decode(&v, name).map(Some),
        }
    }

    fn finish(self, op: &str) -> Result<(), WireError> {
        match self.0.keys().next() {
            None => Ok(()),
            Some(extra) => Err(bad(
                extra,
                &format!("unknown field `{}` for `{op}`", clip(extra)),
            )),
        }
    }
}

/// A stored state, through the core's own checks (`State::from_parts`, the path every
/// load takes), so a state that breaks the core's rules is a typed `LoadError`, not a
/// message inside a serde error.
fn load_state(value: &Value) -> Result<State, WireError> {
    let globals: Globals = decode(value, "state")?;
    let jobs: std::collections::BTreeMap<u64, JobRecord> = match value.get("jobs") {
        Some(jobs) => decode(jobs, "state.jobs")?,
        None => return Err(bad("state.jobs", "missing field `jobs`")),
    };
    State::from_parts(globals, jobs).map_err(|e| {
        let kind = match e {
            duetime::LoadError::NewerFormat { .. } => ErrorKind::NewerFormat,
            duetime::LoadError::Inconsistent { .. } => ErrorKind::InconsistentState,
        };
        WireError::new(kind, Some("state".to_string()), e.to_string())
    })
}

fn bad(field: &str, message: &str) -> WireError {
    WireError::new(ErrorKind::BadField, Some(clip(field).to_string()), message)
}

/// At most 80 characters of a name echoed back, as the core cuts the texts it echoes.
fn clip(text: &str) -> &str {
    match text.char_indices().nth(80) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The config a `new` request gives must pass the core's own check.
pub(crate) fn checked_config(config: Option<Config>) -> Result<Config, WireError> {
    let config = config.unwrap_or_default();
    config
        .check()
        .map_err(|what| bad("config", &what.to_string()))?;
    Ok(config)
}
