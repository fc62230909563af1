//! What the host runs for a job, and how it travels inside the core's definition.
//!
//! The command, its workdir, environment, env file and the user and group it runs as are
//! written into `JobDef::payload` as canonical JSON (fields in a fixed order, the env
//! sorted, absent parts left out). So the core's digest covers what runs, a change of any
//! of it is a change of definition (held for a person under `requires_confirmation`), and
//! a daemon runs the payload of the definition *in force* in the store, never the jobs
//! file's newer one that waits for confirmation.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use duetime::JobDef;
use serde::{Deserialize, Serialize};

/// What the host starts for a run: a program and its arguments, never a shell line, so
/// nothing in a value is ever interpreted twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// The program (looked up on `PATH` when it has no slash) and its arguments.
    pub argv: Vec<String>,
    /// The directory the program starts in, as written in the file; `None` for the host's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    /// Variables added to the host's environment for the run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A file of `NAME=value` lines read when each run starts (its secrets never enter the
    /// store or the jobs file; only its path does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_file: Option<PathBuf>,
    /// The user the command runs as (a name or a numeric uid); `None`: the daemon's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The group it runs as (a name or a numeric gid); `None`: the user's primary group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// Why a definition in force has no command this host can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// The definition carries no payload: it was confirmed before confirmations covered
    /// what runs (or written by another host), so what a person confirmed is unknown.
    Missing,
    /// The payload is not this host's encoding.
    Unreadable { detail: String },
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::Missing => f.write_str(
                "the definition in force names no command (it was confirmed before \
                 confirmations covered what runs); confirm the held definition \
                 (`duetime show JOB` shows it)",
            ),
            PayloadError::Unreadable { detail } => {
                write!(
                    f,
                    "the definition in force carries a command this host cannot read: {detail}"
                )
            }
        }
    }
}

impl Command {
    /// The canonical JSON the definition carries.
    pub fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The command a definition carries.
    pub fn of(def: &JobDef) -> Result<Command, PayloadError> {
        let text = def.payload.as_deref().ok_or(PayloadError::Missing)?;
        serde_json::from_str(text).map_err(|e| PayloadError::Unreadable {
            detail: e.to_string(),
        })
    }

    /// The argv as a person would type it in a shell.
    pub fn argv_text(&self) -> String {
        self.argv
            .iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The env as `NAME=value` words, secrets' values hidden.
    pub fn env_text(&self) -> String {
        self.env
            .iter()
            .map(|(k, v)| match crate::secret::is_secret_name(k) {
                true => format!("{k}={}", crate::secret::HIDDEN),
                false => format!("{k}={}", shell_word(v)),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A word quoted for a shell when it needs it (so a printed command can be read back).
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_as_the_command_and_is_stable() {
        let mut cmd = Command {
            argv: vec!["backup".into(), "--full".into()],
            workdir: Some("/srv".into()),
            env: BTreeMap::from([("B".into(), "2".into()), ("A".into(), "1".into())]),
            env_file: None,
            user: Some("nobody".into()),
            group: None,
        };
        let payload = cmd.payload();
        assert_eq!(
            payload,
            r#"{"argv":["backup","--full"],"workdir":"/srv","env":{"A":"1","B":"2"},"user":"nobody"}"#
        );
        let mut def = JobDef::new(
            duetime::JobName::new("b").unwrap(),
            duetime::Schedule::cron("@daily", None).unwrap(),
        );
        def.payload = Some(payload);
        assert_eq!(Command::of(&def).unwrap(), cmd);
        cmd.argv.push("x".into());
        assert_ne!(cmd.payload(), def.payload.clone().unwrap());
        def.payload = None;
        assert_eq!(Command::of(&def), Err(PayloadError::Missing));
    }
}
