//! A PostgreSQL server for the tests: the one `DUETIME_TEST_POSTGRES` names (CI starts it
//! with `scripts/pg start`). Each test gets a schema of its own, so tests run side by side
//! on one database and a failed one leaves its tables to look at.
//!
//! Without the variable the Postgres tests say so on stderr and pass vacuously, so a
//! newcomer's `cargo test` works without a server; under CI (`CI` set) a missing server is
//! a failure, never a silent skip.

#![allow(dead_code)] // each test file uses what it needs

use std::sync::atomic::{AtomicUsize, Ordering};

pub const VAR: &str = "DUETIME_TEST_POSTGRES";
/// The TLS-only server's `verify-full` URL (`scripts/pg start-tls`).
pub const TLS_VAR: &str = "DUETIME_TEST_POSTGRES_TLS";

/// The server's URL, or `None` (after saying why) when the tests should skip.
pub fn server(test: &str) -> Option<String> {
    named(VAR, "scripts/pg start", test)
}

/// The TLS-only server's `verify-full` URL, or `None` when the tests should skip.
pub fn tls_server(test: &str) -> Option<String> {
    named(TLS_VAR, "scripts/pg start-tls", test)
}

fn named(var: &str, script: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set: CI must start a server ({script}) for {test}")
        }
        _ => {
            eprintln!("{test}: skipped: set {var} (`{script}` prints a URL) to run it");
            None
        }
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A new, empty schema on the server, and a URL whose connections use it.
pub fn fresh(test: &str) -> Option<String> {
    let url = server(test)?;
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    // PostgreSQL cuts names at 63 bytes: keep the unique end.
    let short: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    let schema = format!("t_{short}_{}_{n}", std::process::id());
    let mut admin =
        postgres::Client::connect(&url, postgres::NoTls).expect("the test server answers");
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .expect("a schema");
    Some(in_schema(&url, &schema))
}

/// `url` with every connection's search path set to `schema`.
pub fn in_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-csearch_path%3D{schema}")
}
