//! JSON Schema for the types whose serde form is written by hand (feature `schema`, used
//! only to generate `docs/wire-format.schema.json`): each says what its `Serialize` writes.
//! (Left out of mutation testing, `.cargo/mutants.toml`: the core's judge builds without
//! this feature; `wire/schema/tests/checked_in.rs` is what catches a mistake here, by
//! comparing what these generate with the checked-in schema.)

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::job::JobName;
use crate::jobs::{JobSeq, Jobs};
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
        <BTreeMap<JobSeq, JobRecord>>::json_schema(generator)
    }
}

/// A held definition is stored as the bare definition (its digest is derived on load).
impl JsonSchema for crate::state::HeldDef {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "HeldDef".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<crate::job::JobDef>()
    }
}

/// A system pause's reason is stored as the sentence it prints.
impl JsonSchema for crate::effect::SystemPause {
    fn schema_name() -> Cow<'static, str> {
        "SystemPause".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Why the core paused a job: \"retries exhausted\", \"a run was lost and the job is not safe to repeat\", or \"<n> failed runs in a row\".",
            "pattern": "^(retries exhausted|a run was lost and the job is not safe to repeat|(0|[1-9][0-9]*) failed runs in a row)$"
        })
    }
}

/// An incident is stored by its snake_case name.
impl JsonSchema for crate::effect::Incident {
    fn schema_name() -> Cow<'static, str> {
        "Incident".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = crate::effect::Incident::ALL
            .iter()
            .map(|i| i.name())
            .collect();
        json_schema!({
            "type": "string",
            "enum": names,
            "description": "The kind of an alert: two alerts of one kind are one incident."
        })
    }
}

/// The stored form is `StateData`'s.
impl JsonSchema for crate::state::State {
    fn schema_name() -> Cow<'static, str> {
        "State".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        crate::state::StateData::json_schema(generator)
    }
}

/// `Activity` is written in its stored form, field for field (`ActivityIn`).
impl JsonSchema for crate::state::Activity {
    fn schema_name() -> Cow<'static, str> {
        crate::state::ActivityIn::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        crate::state::ActivityIn::json_schema(generator)
    }
}

/// `OpenRun` is written in its stored form, field for field (`OpenRunIn`).
impl JsonSchema for crate::state::OpenRun {
    fn schema_name() -> Cow<'static, str> {
        crate::state::OpenRunIn::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        crate::state::OpenRunIn::json_schema(generator)
    }
}
