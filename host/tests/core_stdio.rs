//! `duetime core --stdio`: one response line per request line, errors answered and the
//! process going on, logs on stderr only; and the Python example of docs/wire-format.md
//! run as written.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_duetime");

/// Feeds `lines` to one `duetime core --stdio` and returns (stdout lines, stderr text).
fn converse(lines: &[String]) -> (Vec<Value>, String) {
    let mut child = Command::new(BIN)
        .args(["core", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for line in lines {
        // One at a time: each answer must come before the next request is sent (a host
        // that waits for its answer must not hang).
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        answers.push(serde_json::from_str(&answer).expect("every stdout line is JSON"));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exits 0 when stdin ends");
    assert!(out.stdout.is_empty(), "nothing after the last answer");
    (answers, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn each_line_gets_one_answer_and_bad_lines_do_not_stop_the_process() {
    let t = 1_750_000_020_000_i64;
    let def = json!({"name": "hello", "schedule": {"kind": "every", "period": 60000, "offset": 0}});
    let lines = [
        json!({"op": "version"}).to_string(),
        "this is not json".to_string(),
        json!({"op": "fly"}).to_string(),
        json!({"op": "step", "now": {"wall": t, "mono": 0},
               "event": {"event": "upsert", "def": def, "actor": "me"}})
        .to_string(),
        json!({"op": "step", "now": {"wall": t}, "event": {"event": "tick"}}).to_string(),
        json!({"op": "load", "state": {"format": 999}}).to_string(),
        format!("{}\r", json!({"op": "job", "name": "hello", "now": t})),
        json!({"op": "save"}).to_string(),
    ];
    let (answers, stderr) = converse(&lines);
    assert_eq!(answers.len(), lines.len());
    let kinds: Vec<Value> = answers.iter().map(|a| a["error"]["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [
            Value::Null,
            json!("bad_line"),
            json!("unknown_op"),
            Value::Null,
            json!("bad_field"),
            json!("bad_field"),
            Value::Null,
            Value::Null
        ]
    );
    assert_eq!(answers[4]["error"]["field"], "now.mono");
    assert_eq!(
        answers[6]["job"]["name"], "hello",
        "a \\r\\n line end is fine"
    );
    assert_eq!(answers[7]["state"]["jobs"]["0"]["def"]["name"], "hello");
    // Every refusal is logged, with its line number, on stderr.
    for n in [2, 3, 5, 6] {
        assert!(stderr.contains(&format!("line {n} refused")), "{stderr}");
    }
    assert_eq!(stderr.lines().count(), 4, "{stderr}");
}

#[test]
fn a_line_that_is_not_utf8_is_a_bad_line() {
    let mut child = Command::new(BIN)
        .args(["core", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"op\":\"\xff\"}\n{\"op\":\"next_wake\"}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["error"]["kind"], "bad_line");
    assert_eq!(lines[1], json!({"ok": true, "wake": null}));
}

#[test]
fn without_stdio_it_is_a_usage_error() {
    let out = Command::new(BIN).arg("core").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The ten-line Python host of docs/wire-format.md, run as the doc shows it.
#[test]
fn the_docs_python_example_runs_and_prints_what_the_doc_says() {
    let doc = include_str!("../../docs/wire-format.md");
    let code = doc
        .split_once("<!-- example: begin -->\n```python\n")
        .and_then(|(_, rest)| rest.split_once("```\n<!-- example: end -->"))
        .map(|(code, _)| code)
        .expect("the doc has its example");
    let run = Command::new("python3")
        .arg("-c")
        .arg(code)
        .env("DUETIME", BIN)
        .output();
    let Ok(run) = run else {
        eprintln!("skipped: no python3 on this machine");
        return;
    };
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        printed,
        "run hello 1\nrun hello 2\nrun hello 3\nunknown_op 240000\n"
    );
}
