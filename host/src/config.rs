//! The daemon's config flags (`duetime run --tick --coordination --max-runs-per-process`)
//! against the config a store keeps.
//!
//! A store's config is written once, when the store is made, and kept for its life: the
//! core has no event that changes it (`State` holds it, `State::put_parts` refuses a changed
//! one), leases, grace and owed due times were reckoned with it, and a store switched from
//! `single_owner` to `shared` under a held owner lease would fail its own load check. So a
//! flag is what a *new* store is made with, and for an existing store a flag that
//! contradicts what it keeps is refused (`ConfigMismatch`), naming what the store has and
//! how to proceed, instead of being ignored. A flag left out takes the store's value.

use std::fmt;

use duetime::{Config, Coordination, Duration};

/// The tick of a new store when `--tick` is left out.
pub const DEFAULT_TICK: Duration = Duration::from_secs(30);

/// The config flags a daemon was given: `None` for a flag left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConfigFlags {
    pub tick: Option<Duration>,
    pub coordination: Option<Coordination>,
    pub max_runs_per_process: Option<u32>,
}

/// One flag that contradicts the store's config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The flag, as typed (`--tick`).
    pub flag: &'static str,
    /// What the flag asked for.
    pub asked: String,
    /// What the store keeps.
    pub stored: String,
}

/// The store keeps another config than the flags ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMismatch {
    /// The store, as error messages name it.
    pub store: String,
    pub differences: Vec<Difference>,
}

impl ConfigFlags {
    /// The config a new store is made with: the flags, and the core's defaults for the
    /// rest (a 30 s tick, shared coordination, no cap).
    pub fn new_store_config(&self) -> Config {
        let mut config = Config::with_tick(self.tick.unwrap_or(DEFAULT_TICK));
        if let Some(c) = self.coordination {
            config.coordination = c;
        }
        config.max_runs_per_process = self.max_runs_per_process;
        config
    }

    /// The core's `Config::check` over what the flags ask, one flag at a time, so a refusal
    /// names the flag: `--max-runs-per-process 0: config: max_runs_per_process 0 would
    /// start nothing; ...`.
    pub fn check(&self) -> Result<(), String> {
        if let Some(tick) = self.tick {
            Config::with_tick(tick).check().map_err(|why| {
                format!("--tick {tick}: {why}; accepted: a duration of at least 1s, such as 30s")
            })?;
        }
        if let Some(cap) = self.max_runs_per_process {
            let config = Config {
                max_runs_per_process: Some(cap),
                ..Config::default()
            };
            config
                .check()
                .map_err(|why| format!("--max-runs-per-process {cap}: {why}"))?;
        }
        self.new_store_config().check().map_err(|e| e.to_string())
    }

    /// The flags given that differ from `stored`; empty when the store can be run as asked.
    pub fn differences(&self, stored: &Config) -> Vec<Difference> {
        let mut out = Vec::new();
        if let Some(tick) = self.tick.filter(|t| *t != stored.tick) {
            out.push(Difference {
                flag: "--tick",
                asked: tick.to_string(),
                stored: stored.tick.to_string(),
            });
        }
        if let Some(c) = self.coordination.filter(|c| *c != stored.coordination) {
            out.push(Difference {
                flag: "--coordination",
                asked: coordination_name(c).to_string(),
                stored: coordination_name(stored.coordination).to_string(),
            });
        }
        if let Some(cap) = self
            .max_runs_per_process
            .filter(|n| Some(*n) != stored.max_runs_per_process)
        {
            out.push(Difference {
                flag: "--max-runs-per-process",
                asked: cap.to_string(),
                stored: stored
                    .max_runs_per_process
                    .map_or("no cap".to_string(), |n| n.to_string()),
            });
        }
        out
    }

    /// `Ok` when the store's config agrees with every flag given, else the typed refusal.
    pub fn agree(&self, store: &str, stored: &Config) -> Result<(), ConfigMismatch> {
        let differences = self.differences(stored);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(ConfigMismatch {
                store: store.to_string(),
                differences,
            })
        }
    }
}

/// The core's spelling (`shared`, `single_owner`), as the flag takes it.
pub fn coordination_name(c: Coordination) -> &'static str {
    match c {
        Coordination::Shared => "shared",
        Coordination::SingleOwner => "single_owner",
    }
}

impl fmt::Display for ConfigMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "the store {} keeps the config it was made with, and these flags differ from it:",
            self.store
        )?;
        for d in &self.differences {
            writeln!(f, "  {} {}: the store has {}", d.flag, d.asked, d.stored)?;
        }
        write!(
            f,
            "A store's config is fixed for its life (the core cannot change it safely). To run \
             this store, leave these flags out or give the store's values; to run with the new \
             config, start a new store (--store ANOTHER_PATH_OR_URL)."
        )
    }
}

impl std::error::Error for ConfigMismatch {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_takes_the_flags_and_the_defaults_for_the_rest() {
        let flags = ConfigFlags::default();
        assert_eq!(flags.new_store_config(), Config::default());
        let flags = ConfigFlags {
            tick: Some(Duration::from_secs(1)),
            coordination: Some(Coordination::SingleOwner),
            max_runs_per_process: Some(3),
        };
        let c = flags.new_store_config();
        assert_eq!(c.tick, Duration::from_secs(1));
        // Two ticks would be two seconds: the core's floor keeps a short tick's lease long
        // enough for a turn on a busy store.
        assert_eq!(c.lease_ttl, duetime::MIN_LEASE);
        assert_eq!(c.coordination, Coordination::SingleOwner);
        assert_eq!(c.max_runs_per_process, Some(3));
        assert!(flags.check().is_ok());
    }

    #[test]
    fn the_cores_check_names_the_flag() {
        let cap = ConfigFlags {
            max_runs_per_process: Some(0),
            ..Default::default()
        };
        let why = cap.check().unwrap_err();
        assert!(why.starts_with("--max-runs-per-process 0: "), "{why}");
        assert!(why.contains("at least 1"), "{why}");
        let tick = ConfigFlags {
            tick: Some(Duration::from_millis(500)),
            ..Default::default()
        };
        let why = tick.check().unwrap_err();
        assert!(why.starts_with("--tick 500ms: "), "{why}");
    }

    #[test]
    fn flags_left_out_or_equal_agree_and_each_difference_is_named() {
        let stored = ConfigFlags {
            tick: Some(Duration::from_secs(1)),
            coordination: Some(Coordination::SingleOwner),
            max_runs_per_process: Some(2),
        }
        .new_store_config();
        assert!(ConfigFlags::default().agree("s", &stored).is_ok());
        let same = ConfigFlags {
            tick: Some(Duration::from_secs(1)),
            coordination: Some(Coordination::SingleOwner),
            max_runs_per_process: Some(2),
        };
        assert!(same.agree("s", &stored).is_ok());
        let other = ConfigFlags {
            tick: Some(Duration::from_secs(30)),
            coordination: Some(Coordination::Shared),
            max_runs_per_process: Some(5),
        };
        let refusal = other.agree("s.db", &stored).unwrap_err();
        let flags: Vec<&str> = refusal.differences.iter().map(|d| d.flag).collect();
        assert_eq!(
            flags,
            ["--tick", "--coordination", "--max-runs-per-process"]
        );
        let text = refusal.to_string();
        assert!(text.contains("--tick 30s: the store has 1s"), "{text}");
        assert!(
            text.contains("--coordination shared: the store has single_owner"),
            "{text}"
        );
        assert!(
            text.contains("--max-runs-per-process 5: the store has 2"),
            "{text}"
        );
        let uncapped = Config::default();
        let text = other.agree("s.db", &uncapped).unwrap_err().to_string();
        assert!(
            text.contains("--max-runs-per-process 5: the store has no cap"),
            "{text}"
        );
    }
}
