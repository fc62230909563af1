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

/// Where in a job an error points: a field, a key inside one (`dst.gap`, `env.LANG`), or a
/// key the file does not know.
#[derive(Debug, Clone, Copy)]
pub(super) enum At<'k> {
    Field(Field),
    Inner(Field, &'k str),
    Unknown(&'k str),
}

impl At<'_> {
    /// The job's key whose line the error takes.
    pub(super) fn key(&self) -> &str {
        match self {
            At::Field(f) | At::Inner(f, _) => f.name(),
            At::Unknown(key) => key,
        }
    }

    /// The field as errors name it: the key as written (`dst.gap` for a nested one).
    pub(super) fn text(&self) -> String {
        match self {
            At::Field(f) => f.name().to_string(),
            At::Inner(f, key) => format!("{f}.{key}"),
            At::Unknown(key) => key.to_string(),
        }
    }

    /// The job's field, when the file accepts the key.
    pub(super) fn field(&self) -> Option<Field> {
        match self {
            At::Field(f) | At::Inner(f, _) => Some(*f),
            At::Unknown(_) => None,
        }
    }
}

impl From<Field> for At<'_> {
    fn from(f: Field) -> Self {
        At::Field(f)
    }
}
