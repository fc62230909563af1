//! The requests of the wire format, one JSON object a line, named by `op`, and their
//! decoding from one line into a typed `Request` or a `WireError`.

use duetime::{
    Config, ConfigError, Coordination, Duration, Event, Globals, JobRecord, Now, ProcessId,
    Schedule, State, Status, Timestamp, MAX_GRACE, MIN_TICK,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::decode::decode;
use crate::error::{ErrorKind, WireError};
use crate::parts::{parts_in, PartsIn};
use crate::version::{wire_of, WireVersion};

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
    /// Start from an empty state with this config (absent: `Config::default()`; a field
    /// left out: see `ConfigIn`).
    New {
        #[cfg_attr(feature = "schema", serde(default))]
        config: Option<ConfigIn>,
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
    /// `State::track_changes(on)`: note the jobs each step touches, for `take_parts`. Off
    /// in a state made by `new`, `load` or `load_parts`.
    TrackChanges { on: bool },
    /// The jobs touched since the last `take_parts` (or since tracking was turned on), each
    /// with its record now (`null`: removed), and the globals: what a store keeping a row
    /// per job writes after a step. Refused while changes are not tracked.
    TakeParts {},
    /// Every job's record and the globals: the whole state as parts, to store once (it
    /// clears what `take_parts` would answer, when tracking).
    SaveParts {},
    /// Replace the state with one made from stored parts (`State::from_parts`).
    LoadParts { parts: Box<PartsIn> },
    /// Bring the state up to date with parts another process wrote to the store: the
    /// globals as the store holds them and each changed job's record (`null`: removed)
    /// (`State::put_parts`).
    PutParts { parts: Box<PartsIn> },
    /// A page of job views, ranked attention first.
    Jobs {
        #[cfg_attr(feature = "schema", serde(default))]
        filter: Option<JobsFilter>,
        /// The previous page's `next`.
        #[cfg_attr(feature = "schema", serde(default))]
        after: Option<String>,
        /// At most this many views (absent: `DEFAULT_PAGE`; 0 is refused).
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

/// `new`'s config, every field optional (issue 48: a host had to spell out all eight).
///
/// A field left out takes the value `Config::with_tick(tick)` gives it, `tick` being the
/// one given or else 30 s: so `{}` is `Config::default()`, and `{"tick":5000}` is
/// `Config::with_tick(5 s)` (leases and grace of two ticks, never under 10 s), not
/// `Config::default()` with a 5 s tick, whose minute-long leases and grace were sized for a
/// 30 s tick. That is the Rust API's own rule: the defaults are a function of the tick.
/// Unknown fields are refused, naming the ones there are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, serde::Serialize))]
#[serde(deny_unknown_fields)]
pub struct ConfigIn {
    #[serde(default)]
    pub tick: Option<Duration>,
    #[serde(default)]
    pub lease_ttl: Option<Duration>,
    #[serde(default)]
    pub grace: Option<Duration>,
    #[serde(default)]
    pub cancel_grace: Option<Duration>,
    #[serde(default)]
    pub manual_per_hour: Option<u32>,
    #[serde(default)]
    pub clock_jump: Option<Duration>,
    /// Unset (absent or `null`): no cap.
    #[serde(default)]
    pub max_runs_per_process: Option<u32>,
    #[serde(default)]
    pub coordination: Option<Coordination>,
}

impl ConfigIn {
    /// The whole config: what is given, the rest from `Config::with_tick`.
    pub fn config(&self) -> Config {
        let base = self.tick.map_or_else(Config::default, Config::with_tick);
        Config {
            tick: base.tick,
            lease_ttl: self.lease_ttl.unwrap_or(base.lease_ttl),
            grace: self.grace.unwrap_or(base.grace),
            cancel_grace: self.cancel_grace.unwrap_or(base.cancel_grace),
            manual_per_hour: self.manual_per_hour.unwrap_or(base.manual_per_hour),
            clock_jump: self.clock_jump.unwrap_or(base.clock_jump),
            max_runs_per_process: self.max_runs_per_process,
            coordination: self.coordination.unwrap_or(base.coordination),
        }
    }
}

/// The operations, as `op` names them.
pub const OPS: [&str; 14] = [
    "version",
    "new",
    "load",
    "save",
    "step",
    "next_wake",
    "next_wake_for",
    "job",
    "jobs",
    "track_changes",
    "take_parts",
    "save_parts",
    "load_parts",
    "put_parts",
];

/// Decodes one line. Never panics: any text is a `Request` or a `WireError`. The line's
/// wire version is checked (an unknown one is refused) and dropped: `parse_versioned_line`
/// keeps it.
pub fn parse_line(line: &str) -> Result<Request, WireError> {
    parse_versioned_line(line).map(|(_, request)| request)
}

/// Decodes one line and the wire version its answer is to be written in (its `wire`
/// field; absent: version 1). The version is read before anything else, so a line of a
/// version this core does not answer gets `unknown_wire_version`, not an error in words
/// of a version it was not written for.
pub fn parse_versioned_line(line: &str) -> Result<(WireVersion, Request), WireError> {
    let value = crate::line::parse_value(line)?;
    let Value::Object(mut fields) = value else {
        return Err(WireError::new(
            ErrorKind::BadLine,
            None,
            "expected a JSON object such as {\"op\":\"next_wake\"}",
        ));
    };
    let wire = wire_of(fields.remove("wire"))?;
    parse_fields(line, fields).map(|request| (wire, request))
}

/// The request the line's fields (but `wire`) make.
fn parse_fields(line: &str, mut fields: Map<String, Value>) -> Result<Request, WireError> {
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
    parse_op(&op, fields).map_err(|mut e| {
        e.message = crate::line::integer_out_of_range(line, e.message);
        e
    })
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
        "step" => {
            let now: Now = f.strict("now")?;
            let event: Event = f.strict("event")?;
            comes_due(&now, &event)?;
            Request::Step {
                now,
                event: Box::new(event),
            }
        }
        "next_wake" => Request::NextWake {},
        "next_wake_for" => Request::NextWakeFor {
            process: f.required("process")?,
        },
        "job" => Request::Job {
            name: f.required("name")?,
            now: f.optional("now")?,
        },
        "track_changes" => Request::TrackChanges {
            on: f.required("on")?,
        },
        "take_parts" => Request::TakeParts {},
        "save_parts" => Request::SaveParts {},
        "load_parts" => Request::LoadParts {
            parts: Box::new(parts_in(&f.required_raw("parts")?)?),
        },
        "put_parts" => Request::PutParts {
            parts: Box::new(parts_in(&f.required_raw("parts")?)?),
        },
        "jobs" => Request::Jobs {
            filter: f.optional("filter")?,
            after: f.optional("after")?,
            limit: page_size(f.optional("limit")?)?,
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

    /// A core type of the request: decoded, and any key its types lack refused (see
    /// `known`).
    fn strict<T: DeserializeOwned + serde::Serialize>(
        &mut self,
        name: &str,
    ) -> Result<T, WireError> {
        let raw = self.required_raw(name)?;
        let value = decode(&raw, name)?;
        crate::known::check(&value, &raw, name)?;
        Ok(value)
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
            // A key that is not a plain name is named as `["key"]` (an empty key would
            // otherwise name no field at all).
            Some(extra) if !crate::decode::is_plain_name(extra) => Err(WireError::new(
                ErrorKind::BadField,
                Some(crate::decode::quoted_key(extra)),
                format!("unknown field `{}` for `{op}`", clip(extra)),
            )),
            Some(extra) => Err(bad(
                extra,
                &format!("unknown field `{}` for `{op}`", clip(extra)),
            )),
        }
    }
}

/// `jobs`' page size. 0 is refused: the core reads it as 1 (a page must hold a view for
/// its `next` cursor to name), and `limit: 0` answering one job surprised a host (issue 48).
fn page_size(limit: Option<u32>) -> Result<Option<u32>, WireError> {
    match limit {
        Some(0) => Err(bad(
            "limit",
            "0 would list nothing; accepted: 1 to 4294967295 views a page (absent: 100)",
        )),
        other => Ok(other),
    }
}

/// An upsert whose schedule never comes due is refused (issue 48: `0 0 30 2 *`, or
/// `every` with a period of 2^63 ms, were taken, and the job sat with `next_due: null`
/// forever). A one-shot `at` in the past is the core's to judge (it ends the job), so only
/// `cron` and `every` are held to it here.
fn comes_due(now: &Now, event: &Event) -> Result<(), WireError> {
    let Event::Upsert { def, .. } = event else {
        return Ok(());
    };
    if matches!(def.schedule, Schedule::At { .. }) || def.schedule.next_after(now.wall).is_some() {
        return Ok(());
    }
    let why = match &def.schedule {
        Schedule::Every { .. } => format!(
            "{} has no due time after {}: the next one is past the last instant a \
             timestamp holds ({}); accepted: a period and offset that come due",
            def.schedule,
            now.wall,
            Timestamp::MAX
        ),
        _ => format!(
            "{} has no due time after {}: no date it names ever comes (such as February \
             30); accepted: an expression that comes due",
            def.schedule, now.wall
        ),
    };
    Err(bad("event.def.schedule", &why))
}

/// A stored state, through the core's own checks (`State::from_parts`, the path every
/// load takes), so a state that breaks the core's rules is a typed `LoadError`, not a
/// message inside a serde error.
pub(crate) fn load_state(value: &Value) -> Result<State, WireError> {
    let globals: Globals = decode(value, "state")?;
    let jobs: std::collections::BTreeMap<duetime::JobSeq, JobRecord> = match value.get("jobs") {
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

/// The config a `new` request gives must pass the core's own check. A failure names the
/// field at fault (`config.grace`) and says the bound, once: the core's `ConfigError`
/// text starts `config: `, which the field already says.
pub(crate) fn checked_config(config: Option<ConfigIn>) -> Result<Config, WireError> {
    let given = config.unwrap_or_default();
    let config = given.config();
    config.check().map_err(|e| {
        let (field, message) = match e {
            ConfigError::TickTooShort { tick } => (
                "tick",
                format!(
                    "{tick} is under {MIN_TICK}; accepted: at least {MIN_TICK}, in milliseconds"
                ),
            ),
            ConfigError::GraceTooLong { grace } => (
                "grace",
                format!(
                    "{grace}{} is over {MAX_GRACE}; accepted: at most {MAX_GRACE}, in milliseconds",
                    if given.grace.is_none() {
                        " (two ticks: `grace` was not given)"
                    } else {
                        ""
                    }
                ),
            ),
            ConfigError::NoRunsPerProcess => (
                "max_runs_per_process",
                "0 would start nothing; accepted: at least 1, or unset for no cap".to_string(),
            ),
        };
        bad(&format!("config.{field}"), &message)
    })?;
    Ok(config)
}
