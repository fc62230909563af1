//! A step's effects as each wire version writes them. Version 1 writes the core's own serde
//! form, where a command's reply carries a Rust `Result`:
//! `{"effect":"reply","job":"x","result":{"Ok":view}}` or `{"result":{"Err":refusal}}`.
//! A host in JavaScript or Python had to know Rust's `Ok`/`Err` keys to read it (issue 48,
//! item 5). Version 2 writes the reply as a union tagged by `outcome`, like every other
//! tagged value of the format:
//!
//! - `{"effect":"reply","outcome":"done","job":"x","view":JobView|null}`: carried out;
//!   `view` is the job after the command (`null` for a command about no one job,
//!   `forget_actor`, or a job moved out), as the `job` request answers `null` for no job;
//! - `{"effect":"reply","outcome":"refused","job":"x","refusal":Refusal}`: not carried out,
//!   `refusal` tagged by `refusal` as before.
//!
//! A tag, not two optional fields (`view`?, `refusal`?): a reader switches on one string,
//! and TypeScript and mypy narrow the union on it, as they do on `effect`. `outcome`: how
//! the command ended, as a run's `outcome` says how a run ended. Every other effect is
//! written the same in both versions.

use duetime::{Effect, JobName, JobView, Refusal};
use serde::ser::SerializeSeq;
use serde::Serialize;

use crate::version::WireVersion;

/// A step's effects in the wire version `wire`: the field `effects` of a step's answer.
#[derive(Debug, Clone, Copy)]
pub struct StepEffects<'a> {
    pub wire: WireVersion,
    pub effects: &'a [Effect],
}

impl Serialize for StepEffects<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.wire {
            WireVersion::V1 => self.effects.serialize(s),
            WireVersion::V2 => {
                let mut seq = s.serialize_seq(Some(self.effects.len()))?;
                for effect in self.effects {
                    seq.serialize_element(&EffectV2(effect))?;
                }
                seq.end()
            }
        }
    }
}

/// One effect as wire version 2 writes it: a reply as `ReplyEffect`, any other effect as
/// version 1 does.
#[derive(Debug, Clone, Copy)]
pub struct EffectV2<'a>(pub &'a Effect);

impl Serialize for EffectV2<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Effect::Reply { job, result } => {
                let reply = match result {
                    Ok(view) => Reply::Done {
                        job: job.as_ref(),
                        view: view.as_deref(),
                    },
                    Err(refusal) => Reply::Refused {
                        job: job.as_ref(),
                        refusal,
                    },
                };
                ReplyEffect::Reply(reply).serialize(s)
            }
            other => other.serialize(s),
        }
    }
}

/// The `reply` effect of wire version 2: the tag `effect` and the fields of a `Reply`.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum ReplyEffect<'a> {
    /// The answer to a command (wire version 2): tagged by `outcome`.
    Reply(Reply<'a>),
}

/// The answer to a command in wire version 2, tagged by `outcome`: `done` with the job's
/// view, or `refused` with why. `job` and `view` are always written (`null` when none).
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Reply<'a> {
    /// The command was carried out.
    Done {
        /// The job the command was about, if one.
        job: Option<&'a JobName>,
        /// The job's view after the command (`null`: a command about no one job,
        /// `forget_actor`, or a job moved out).
        view: Option<&'a JobView>,
    },
    /// The command was refused: nothing it asked was done.
    Refused {
        /// The job the command was about, if one.
        job: Option<&'a JobName>,
        /// Why, tagged by `refusal`.
        refusal: &'a Refusal,
    },
}

#[cfg(feature = "schema")]
mod schema {
    use std::borrow::Cow;

    use duetime::Effect;
    use schemars::{JsonSchema, Schema, SchemaGenerator};
    use serde_json::Value;

    /// Version 1's form: the core's `Effect`s.
    impl JsonSchema for super::StepEffects<'_> {
        fn schema_name() -> Cow<'static, str> {
            "StepEffects".into()
        }
        fn inline_schema() -> bool {
            true
        }
        fn json_schema(generator: &mut SchemaGenerator) -> Schema {
            <Vec<Effect>>::json_schema(generator)
        }
    }

    /// `Effect`'s alternatives with the `reply` one replaced by `ReplyEffect`'s: the
    /// other effects are written alike in both versions, so their schemas are the same.
    impl JsonSchema for super::EffectV2<'_> {
        fn schema_name() -> Cow<'static, str> {
            "EffectV2".into()
        }
        fn json_schema(generator: &mut SchemaGenerator) -> Schema {
            let mut effect = Effect::json_schema(generator).to_value();
            let reply = super::ReplyEffect::json_schema(generator).to_value();
            let reply = reply
                .get("oneOf")
                .and_then(|alts| alts.get(0))
                .unwrap_or(&reply)
                .clone();
            let is_reply =
                |alt: &Value| alt.pointer("/properties/effect/const") == Some(&"reply".into());
            if let Some(alts) = effect.get_mut("oneOf").and_then(Value::as_array_mut) {
                for alt in alts.iter_mut().filter(|alt| is_reply(alt)) {
                    *alt = reply.clone();
                }
            }
            effect["description"] = "An effect as wire version 2 writes it: a command's `reply` tagged by `outcome` (`done` with the job's `view`, `refused` with the `refusal`); every other effect as `Effect`.".into();
            Schema::try_from(effect).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use duetime::{Effect, JobName, Refusal};

    use super::StepEffects;
    use crate::version::WireVersion;

    fn written(wire: WireVersion, effects: &[Effect]) -> String {
        serde_json::to_string(&StepEffects { wire, effects }).unwrap_or_default()
    }

    #[test]
    fn a_refused_reply_in_each_version() {
        let name = JobName::new("nightly").ok();
        let refusal = Refusal::NotFound {
            job: "nightly".to_string(),
        };
        let effects = [Effect::Reply {
            job: name,
            result: Err(refusal),
        }];
        assert_eq!(
            written(WireVersion::V1, &effects),
            r#"[{"effect":"reply","job":"nightly","result":{"Err":{"refusal":"not_found","job":"nightly"}}}]"#
        );
        assert_eq!(
            written(WireVersion::V2, &effects),
            r#"[{"effect":"reply","outcome":"refused","job":"nightly","refusal":{"refusal":"not_found","job":"nightly"}}]"#
        );
    }

    #[test]
    fn a_reply_with_no_view_in_each_version() {
        let effects = [Effect::Reply {
            job: None,
            result: Ok(None),
        }];
        assert_eq!(
            written(WireVersion::V1, &effects),
            r#"[{"effect":"reply","job":null,"result":{"Ok":null}}]"#
        );
        assert_eq!(
            written(WireVersion::V2, &effects),
            r#"[{"effect":"reply","outcome":"done","job":null,"view":null}]"#
        );
    }

    #[test]
    fn no_effects_are_an_empty_list_in_each_version() {
        assert_eq!(written(WireVersion::V1, &[]), "[]");
        assert_eq!(written(WireVersion::V2, &[]), "[]");
    }
}
