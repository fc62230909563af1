//! `env_file`: variables for a job's command kept outside the jobs file (which is often
//! shared) and outside the store (which keeps only its path). Read by the supervisor when
//! each run starts, so a rotated secret needs no redefinition; never written anywhere.
//!
//! The format is systemd's `EnvironmentFile` at its plainest: one `NAME=value` per line,
//! the value verbatim to the end of the line (no quotes, no expansion: nothing in a secret
//! is interpreted), blank lines and lines starting with `#` skipped.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Longest env file read, in bytes: a file of secrets, not a data set.
pub const MAX_ENV_FILE: u64 = 1024 * 1024;

/// Why an env file cannot be used. Never holds a value from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFileError {
    Read {
        path: String,
        detail: String,
    },
    Line {
        path: String,
        line: usize,
        problem: &'static str,
    },
}

impl fmt::Display for EnvFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvFileError::Read { path, detail } => write!(f, "env_file {path}: {detail}"),
            EnvFileError::Line {
                path,
                line,
                problem,
            } => write!(
                f,
                "env_file {path}:{line}: {problem}; accepted: NAME=value lines, # comments and blank lines"
            ),
        }
    }
}

impl std::error::Error for EnvFileError {}

/// Reads and parses the env file at `path`, refusing one another user could write (it
/// decides what the command sees: `PATH`, `LD_PRELOAD`).
pub fn read(path: &Path) -> Result<Vec<(String, String)>, EnvFileError> {
    let shown = path.display().to_string();
    let failed = |detail: String| EnvFileError::Read {
        path: shown.clone(),
        detail,
    };
    crate::private::refuse_exposed(path, "the env file").map_err(|e| failed(e.to_string()))?;
    let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_ENV_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed(format!("not readable as UTF-8 text: {e}")))?;
    if text.len() as u64 > MAX_ENV_FILE {
        return Err(failed(format!("longer than {MAX_ENV_FILE} bytes")));
    }
    parse(&text, &shown)
}

/// The variables of an env file's text; `path` names it in errors.
pub fn parse(text: &str, path: &str) -> Result<Vec<(String, String)>, EnvFileError> {
    let mut vars = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let problem = |problem| EnvFileError::Line {
            path: path.to_string(),
            line: i + 1,
            problem,
        };
        let (name, value) = trimmed
            .split_once('=')
            .ok_or_else(|| problem("no `=` on this line"))?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(problem(
                "the name before `=` is not a variable name (letters, digits and _)",
            ));
        }
        if value.contains('\0') {
            return Err(problem("the value holds a NUL character"));
        }
        vars.push((name.to_string(), value.to_string()));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_errors_that_never_show_a_value() {
        let vars = parse("# db\nPGPASSWORD=s3cr=t\n\n  API_TOKEN=abc def\n", "e").unwrap();
        assert_eq!(
            vars,
            [
                ("PGPASSWORD".to_string(), "s3cr=t".to_string()),
                ("API_TOKEN".to_string(), "abc def".to_string())
            ]
        );
        let e = parse("OK=1\nexport X hunter2\n", "/etc/x.env").unwrap_err();
        assert_eq!(
            e.to_string(),
            "env_file /etc/x.env:2: no `=` on this line; accepted: NAME=value lines, # comments and blank lines"
        );
        let e = parse("BAD-NAME=hunter2\n", "e").unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
