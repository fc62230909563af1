//! `duetime check` and `duetime next` beyond validity: warnings for what will not do what
//! a person expects, the store's own tick, suggestions for typos, long tokens cut, and
//! `duetime sim --tick`.

mod support;
use support::*;

/// Issue 43: a key's jobs all live in one partition, so a key most jobs share crowds one
/// partition; said once for the file, and only past half of at least 8 jobs.
#[test]
fn check_warns_when_one_concurrency_key_holds_most_jobs() {
    let file = |keyed: usize, total: usize| {
        let mut text = String::new();
        for i in 0..total {
            text.push_str(&format!(
                "[[job]]\nname = \"j{i}\"\nevery = \"1h\"\ncommand = [\"true\"]\n"
            ));
            if i < keyed {
                text.push_str("concurrency_key = \"db\"\n");
            }
        }
        with_file("jobs.toml", &text)
    };
    let says = "warning: concurrency_key: 5 of the 8 jobs share concurrency key `db`";
    let dir = file(5, 8);
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.matches(says).count(), 1, "{}", r.stdout);
    let r = duetime_in(dir.path(), &["check", "jobs.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["warnings"][0]["field"], "concurrency_key", "{}", r.stdout);
    for (keyed, total) in [(4, 8), (5, 7)] {
        let dir = file(keyed, total);
        let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
        assert!(
            !r.stdout.contains("concurrency_key:"),
            "{keyed}/{total}: {}",
            r.stdout
        );
        let r = duetime_in(dir.path(), &["check", "jobs.toml", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(v.get("warnings").is_none(), "{}", r.stdout);
    }
}

#[test]
fn check_warns_about_what_never_runs_or_cannot_start() {
    let dir = with_file(
        "jobs.toml",
        r#"
[[job]]
name = "never"
cron = "0 0 31 2 *"
command = ["true"]

[[job]]
name = "past"
at = "2020-01-01T00:00:00Z"
command = ["true"]

[[job]]
name = "missing"
every = "1h"
command = ["no-such-program-anywhere"]
workdir = "/no/such/dir"

[[job]]
name = "wide"
cron = "0 */30 * * *"
command = ["sh", "-c", "true"]
"#,
    );
    let r = duetime_in(
        dir.path(),
        &["check", "jobs.toml", "--from", "2025-03-08T12:00:00Z"],
    );
    assert_eq!(
        r.code, 0,
        "warnings do not make a file invalid: {}",
        r.stderr
    );
    for says in [
        "warning   cron: `0 0 31 2 *` has no due time after 2025-03-08T12:00:00Z: it never fires",
        "warning   at: 2020-01-01T00:00:00Z is not after 2025-03-08T12:00:00Z",
        "warning   workdir: /no/such/dir is not a directory here",
        "warning   command: `no-such-program-anywhere` is not found on PATH here",
        "warning   cron: hour: `*/30` steps past the end of its range, so it matches only 0",
    ] {
        assert!(r.stdout.contains(says), "{says}\n{}", r.stdout);
    }
    let wide = r.stdout.split("\nwide").nth(1).unwrap();
    assert!(!wide.contains("PATH"), "sh is on PATH: {wide}");
    let r = duetime_in(
        dir.path(),
        &[
            "check",
            "jobs.toml",
            "--from",
            "2025-03-08T12:00:00Z",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["jobs"][0]["warnings"][0]["field"], "cron", "{}", r.stdout);
}

#[test]
fn check_with_a_store_uses_the_stores_tick() {
    let dir = with_file(
        "jobs.toml",
        "[[job]]\nname = \"fast\"\nevery = \"1s\"\ncommand = [\"true\"]\n",
    );
    // Under the default 30 s tick an `every 1s` is refused.
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("shorter than the tick (30s)"),
        "{}",
        r.stderr
    );
    // A store made with a 1 s tick accepts it.
    let mut store = duetime_host::store::open(
        &dir.path().join("s.db").display().to_string(),
        duetime_host::store::Options {
            config: duetime::Config::with_tick(duetime::Duration::from_secs(1)),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(duetime_host::store::Store::state(&mut store).is_ok());
    drop(store);
    let r = duetime_in(dir.path(), &["check", "jobs.toml", "--store", "s.db"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = duetime_in(
        dir.path(),
        &["check", "jobs.toml", "--store", "none.db", "--json"],
    );
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["kind"], "no_store", "{}", r.stdout);
    // And `duetime sim --tick 1s` simulates it.
    let r = duetime_in(
        dir.path(),
        &[
            "sim",
            "jobs.toml",
            "--seed",
            "1",
            "--days",
            "0.2",
            "--faults",
            "none",
            "--tick",
            "1s",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn typos_get_suggestions_and_huge_tokens_are_cut() {
    let dir = with_file(
        "jobs.toml",
        r#"
[[job]]
name = "a"
cron = "0 9 * * mon-fir"
command = ["true"]

[[job]]
name = "b"
cron = "0 9 * * *"
tz = "America/New_Yrok"
command = ["true"]
"#,
    );
    let r = duetime_in(dir.path(), &["check", "jobs.toml"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("(did you mean `America/New_York`?)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("(did you mean `mon-fri`?)"),
        "{}",
        r.stderr
    );
    let r = duetime_in(dir.path(), &["next", "0 9 * * mon-fir"]);
    assert!(
        r.stderr.contains("(did you mean `mon-fri`?)"),
        "{}",
        r.stderr
    );
    let r = duetime_in(dir.path(), &["next", "0 */30 * * *", "--count", "1"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.contains("note        hour: `*/30` steps past"),
        "{}",
        r.stdout
    );

    let huge = "9".repeat(100_000);
    for args in [
        vec!["next".to_string(), format!("{huge} * * * *")],
        vec![
            "next".to_string(),
            "@daily".to_string(),
            "--from".to_string(),
            huge.clone(),
        ],
        vec![
            "run".to_string(),
            "--jobs".to_string(),
            "jobs.toml".to_string(),
            "--tick".to_string(),
            huge.clone(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = duetime_in(dir.path(), &args);
        assert_ne!(r.code, 0);
        assert!(
            r.stderr.len() < 2_000,
            "{:?}: {} characters of error",
            &args[..1],
            r.stderr.len()
        );
    }
}
