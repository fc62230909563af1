//! What is never printed: the values of variables whose names say they are secrets, and
//! passwords in store URLs (`store::postgres` redacts those). A jobs file is often shared
//! and a terminal often recorded, so `check`, `show`, `confirm` and the daemon's log show
//! such a value as `***`.

/// The endings (upper case) of a variable name that holds a secret: `PGPASSWORD`,
/// `API_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `SSH_KEY`. Generous on purpose: hiding a value
/// that was not secret costs a look at the jobs file; showing one that was cannot be undone.
const SECRET_ENDINGS: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "PASS",
    "TOKEN",
    "KEY",
    "SECRET",
    "CREDENTIALS",
    "PASSPHRASE",
];

/// How a hidden value is shown.
pub const HIDDEN: &str = "***";

/// Whether a variable of this name holds a secret (by its name alone).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_ENDINGS.iter().any(|end| upper.ends_with(end))
}

/// The value as it may be shown: itself, or `***` for a secret's.
pub fn shown<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_name(name) {
        HIDDEN
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_say_secret_are_hidden_and_others_shown() {
        for name in [
            "PGPASSWORD",
            "DB_PASSWORD",
            "api_token",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_KEY",
            "X_SECRET",
        ] {
            assert_eq!(shown(name, "hunter2"), HIDDEN, "{name}");
        }
        for name in ["LANG", "PGHOST", "PGUSER", "MODE"] {
            assert_eq!(shown(name, "C"), "C", "{name}");
        }
    }
}
