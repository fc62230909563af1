//! The keys a jobs file accepts: one enum of a job's fields, read by the reader, offered by
//! the suggestions and named by the errors, so no list of names can drift from another.

/// Declares [`Field`] from one list of variants and the names the file writes them with.
macro_rules! job_fields {
    ($($variant:ident = $name:literal,)*) => {
        /// A key of a `[[job]]` table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Field {
            $($variant,)*
        }

        impl Field {
            /// Every field, in the order the docs list them.
            pub const ALL: &'static [Field] = &[$(Field::$variant,)*];
            /// Their names as the file writes them, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($name,)*];

            /// The name as the file writes it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Field::$variant => $name,)*
                }
            }
        }
    };
}

job_fields! {
    Name = "name",
    Title = "title",
    Cron = "cron",
    Tz = "tz",
    Dst = "dst",
    Every = "every",
    Offset = "offset",
    At = "at",
    Exclude = "exclude",
    BusinessDay = "business_day",
    Roll = "roll",
    Command = "command",
    Workdir = "workdir",
    Env = "env",
    EnvFile = "env_file",
    User = "user",
    Group = "group",
    Missed = "missed",
    Overlap = "overlap",
    Retries = "retries",
    Backoff = "backoff",
    Timeout = "timeout",
    StallAfter = "stall_after",
    CatchUpWindow = "catch_up_window",
    SafeToRepeat = "safe_to_repeat",
    LegalDuty = "legal_duty",
    ConcurrencyKey = "concurrency_key",
    PauseAfterFailures = "pause_after_failures",
    WaitBudget = "wait_budget",
    AlertThrottle = "alert_throttle",
    ConcurrencyLimit = "concurrency_limit",
    Jitter = "jitter",
    RequiresConfirmation = "requires_confirmation",
    ExpectSuccessWithin = "expect_success_within",
    After = "after",
    Alerts = "alerts",
}

impl Field {
    /// The field a key names, if the file accepts it.
    pub fn from_name(key: &str) -> Option<Field> {
        Field::ALL.iter().copied().find(|f| f.name() == key)
    }

    /// The keys of a table-valued field (`dst`, `backoff`); empty for the others, whose
    /// inner keys are free (`env`) or checked elsewhere (`alerts`).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Field::Dst => &["gap", "fold"],
            Field::Backoff => &["initial", "max"],
            _ => &[],
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The keys a `[[job]]` table accepts, in the order the docs list them.
pub const JOB_FIELDS: &[&str] = Field::NAMES;
/// The keys accepted at the top of the file.
pub const TOP_FIELDS: &[&str] = &["user", "group", "alerts", "calendars", "job"];
/// The schedule keys: a job has exactly one.
pub(super) const SCHEDULE_FIELDS: [Field; 3] = [Field::Cron, Field::Every, Field::At];

/// Where in a job an error points: one of its fields, a key inside one (`dst.gap`,
/// `env.LANG`, `alerts.webhook`), or a key the file does not know, kept as written since no
/// `Field` names it. `K` is how such a key is held: borrowed from the TOML while the reader
/// works (`At`, copied around freely), owned by the error that outlives the text
/// (`JobsFileError::Field`), so the two cannot name a key differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldKey<K = String> {
    Field(Field),
    Inner(Field, K),
    Unknown(K),
}

/// A key as the reader points at it, borrowed from the TOML.
pub(super) type At<'k> = FieldKey<&'k str>;

impl<K: AsRef<str>> FieldKey<K> {
    /// The job's key whose line an error takes (`dst` for `dst.gap`).
    pub fn key(&self) -> &str {
        match self {
            FieldKey::Field(f) | FieldKey::Inner(f, _) => f.name(),
            FieldKey::Unknown(key) => key.as_ref(),
        }
    }

    /// The job's field, when the file accepts the key.
    pub fn field(&self) -> Option<Field> {
        match self {
            FieldKey::Field(f) | FieldKey::Inner(f, _) => Some(*f),
            FieldKey::Unknown(_) => None,
        }
    }

    /// The same key, owned: what an error keeps.
    pub fn to_owned_key(&self) -> FieldKey {
        match self {
            FieldKey::Field(f) => FieldKey::Field(*f),
            FieldKey::Inner(f, key) => FieldKey::Inner(*f, key.as_ref().to_string()),
            FieldKey::Unknown(key) => FieldKey::Unknown(key.as_ref().to_string()),
        }
    }
}

/// The key as written (`dst.gap` for a nested one): how errors name it.
impl<K: AsRef<str>> std::fmt::Display for FieldKey<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldKey::Field(field) => f.write_str(field.name()),
            FieldKey::Inner(field, key) => write!(f, "{field}.{}", key.as_ref()),
            FieldKey::Unknown(key) => f.write_str(key.as_ref()),
        }
    }
}

impl<K> From<Field> for FieldKey<K> {
    fn from(f: Field) -> Self {
        FieldKey::Field(f)
    }
}
