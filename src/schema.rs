//! JSON Schema for the types whose serde form is written by hand (feature `schema`, used
//! only to generate `docs/wire-format.schema.json`): each says what its `Serialize` writes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::job::JobName;
use crate::jobs::Jobs;
use crate::state::JobRecord;

/// `JobName` is a plain string, checked by `JobName::new`.
impl JsonSchema for JobName {
    fn schema_name() -> Cow<'static, str> {
        "JobName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]{0,63}$",
            "description": "A job's name: a lower-case letter, then at most 63 of a-z, 0-9 and _."
        })
    }
}

/// The job table serializes as a map from sequence number (a decimal string key) to record.
impl JsonSchema for Jobs {
    fn schema_name() -> Cow<'static, str> {
        "Jobs".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <BTreeMap<u64, JobRecord>>::json_schema(generator)
    }
}
