//! TLS to PostgreSQL against real servers: the TLS-only one `scripts/pg start-tls` starts
//! (a throwaway CA, a certificate for `localhost` only) and the plain one. `verify-full`
//! connects; a wrong CA, a wrong host name and `require` against a server without TLS are
//! refused at once, as errors of the setting (not outages to wait out), and no message
//! shows the password.

#[path = "support/pg.rs"]
mod pg;

use duetime_host::store::{PostgresStore, Store, StoreError};

/// The refusal of opening `url`, as people read it.
fn refused(url: &str) -> String {
    match PostgresStore::open(url) {
        Ok(_) => panic!("{url}: connected"),
        Err(e @ StoreError::Database { .. }) => e.to_string(),
        Err(e) => panic!("{url}: refused, but as {e:?}, which the daemon would wait out"),
    }
}

#[test]
fn verify_full_connects_to_the_tls_server() {
    let Some(url) = pg::tls_server("verify_full_connects_to_the_tls_server") else {
        return;
    };
    assert!(url.contains("sslmode=verify-full"), "{url}");
    let mut store = PostgresStore::open(&url).expect("verify-full connects");
    store.state().expect("and reads the store");
    // The server takes nothing but TLS, so the connection above was one.
    let plain = url.replace("sslmode=verify-full", "sslmode=disable");
    let text = PostgresStore::open(&plain).err().map(|e| e.to_string());
    assert!(
        text.as_deref().is_some_and(|t| t.contains("no encryption")),
        "the server is TLS-only: {text:?}"
    );
}

#[test]
fn a_certificate_from_another_ca_is_refused() {
    let Some(url) = pg::tls_server("a_certificate_from_another_ca_is_refused") else {
        return;
    };
    let wrong = url.replace("/ca.crt", "/other-ca.crt");
    let text = refused(&wrong.replace("postgres@", "postgres:hunter2@"));
    assert!(
        text.contains("TLS refused") && text.contains("UnknownIssuer"),
        "{text}"
    );
    assert!(
        !text.contains("hunter2"),
        "the message shows the password: {text}"
    );
    // verify-ca checks the chain too.
    let text = refused(&wrong.replace("verify-full", "verify-ca"));
    assert!(text.contains("UnknownIssuer"), "{text}");
}

#[test]
fn a_certificate_for_another_host_name_is_refused_by_verify_full_only() {
    let Some(url) = pg::tls_server("a_certificate_for_another_host_name_is_refused") else {
        return;
    };
    // The certificate names `localhost`; the same server reached as 127.0.0.1.
    let by_ip = url.replace("@localhost:", "@127.0.0.1:");
    let text = refused(&by_ip);
    assert!(
        text.contains("TLS refused") && text.contains("not valid for name"),
        "{text}"
    );
    let ca_only = by_ip.replace("verify-full", "verify-ca");
    PostgresStore::open(&ca_only).expect("verify-ca does not check the name");
}

#[test]
fn require_refuses_a_server_without_tls_and_prefer_falls_back() {
    let Some(url) = pg::server("require_refuses_a_server_without_tls") else {
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let text = refused(&format!("{url}{sep}sslmode=require"));
    assert!(text.contains("does not offer TLS"), "{text}");
    PostgresStore::open(&format!("{url}{sep}sslmode=prefer")).expect("prefer goes on without TLS");
}

#[test]
fn verifying_modes_without_a_ca_and_unknown_modes_are_refused_naming_what_is_accepted() {
    let text = refused("postgres://u:hunter2@localhost:1/db?sslmode=verify-full");
    assert!(
        text.contains("add sslrootcert=PATH") && !text.contains("hunter2"),
        "{text}"
    );
    let text = refused("postgres://u:hunter2@localhost:1/db?sslmode=allow");
    assert!(
        text.contains("accepted: disable, prefer, require, verify-ca, verify-full"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}
