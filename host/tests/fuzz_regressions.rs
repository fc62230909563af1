//! Inputs the host's fuzz targets (fuzz/: `jobs_file`, `stored_rows`, `http_query`,
//! `human_input`) keep under fuzz/regressions/<target>/, replayed by `cargo test` without
//! nightly. Each plain input (a structured one starts with a byte below 0x10 and replays
//! only with `cd fuzz && cargo test`) goes through the same door as in the target, held to
//! the door's first promise: no panic, and a refusal that says where or what is accepted.
//! A finding also gets a test of its own below.

use std::path::Path;

use duetime::{Globals, JobRecord, JobSeq, State, Timestamp};
use duetime_host::http::{query, timeline};
use duetime_host::human::{parse_duration, parse_time};
use duetime_host::jobs_file::parse_str;

/// Every plain input kept for `target`.
fn kept(target: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = entries
        .map(|e| e.expect("a readable directory").path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read(&p).expect("readable"),
            )
        })
        .filter(|(_, data)| data.first().is_none_or(|&b| b >= 0x10))
        .map(|(name, data)| (name, String::from_utf8_lossy(&data).into_owned()))
        .collect();
    out.sort();
    out
}

#[test]
fn kept_jobs_file_inputs_replay() {
    for (name, text) in kept("jobs_file") {
        let first = parse_str(&text, "jobs.toml");
        assert_eq!(first, parse_str(&text, "jobs.toml"), "{name}");
        for e in first.err().unwrap_or_default() {
            let lines = text.split('\n').count();
            assert!(
                e.line().is_none_or(|l| (1..=lines).contains(&l)),
                "{name}: {e}"
            );
            assert!(
                e.line().is_some() || e.field().is_some() || e.job().is_some(),
                "{name}: {e}"
            );
        }
    }
}

#[test]
fn kept_human_input_inputs_replay() {
    for (name, text) in kept("human_input") {
        if let Ok(d) = text.parse::<duetime::Duration>() {
            assert_eq!(d.to_string().parse(), Ok(d), "{name}");
        } else {
            assert!(parse_duration(&text).is_err(), "{name}");
        }
        if let Ok(t) = parse_time(&text) {
            let shown = t.to_string();
            assert!(
                shown.starts_with('@') || parse_time(&shown) == Ok(t),
                "{name}"
            );
        }
    }
}

#[test]
fn kept_http_query_inputs_replay() {
    let now: Timestamp = "2025-03-10T12:00:00Z".parse().unwrap();
    let fitted = timeline::Window::fitted(None, now);
    for (name, url) in kept("http_query") {
        let (_, q) = url.split_once('?').unwrap_or((&url, ""));
        assert!(
            query::days(q).is_ok_and(|d| d <= 3660) || query::days(q).is_err(),
            "{name}"
        );
        if let Ok(w) = query::window(q, fitted) {
            assert!(w.from < w.to, "{name}");
        }
    }
}

#[test]
fn kept_stored_rows_inputs_replay() {
    for (name, text) in kept("stored_rows") {
        let mut globals = None;
        let mut jobs = Vec::new();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("globals", json)) => globals = Some(json.to_string()),
                Some(("job", rest)) => {
                    let (seq, json) = rest.split_once(' ').unwrap_or((rest, ""));
                    if let Ok(seq) = seq.parse::<u64>() {
                        jobs.push((JobSeq(seq), json.to_string()));
                    }
                }
                _ => {}
            }
        }
        let Some(Ok(globals)) = globals.map(|g| serde_json::from_str::<Globals>(&g)) else {
            continue;
        };
        let Ok(rows) = jobs
            .iter()
            .map(|(s, j)| serde_json::from_str::<JobRecord>(j).map(|r| (*s, r)))
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        if let Ok(state) = State::from_parts(globals, rows) {
            assert_eq!(state.self_check(), Ok(()), "{name}");
        }
    }
}
