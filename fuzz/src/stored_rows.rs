//! The `stored_rows` target: what the host's store reads back from SQLite or PostgreSQL, as
//! text, damaged. The store keeps the core's state as rows (the globals, one JSON row per
//! job), the journal as lines (`at`, job name, entry JSON) and each daemon's description as
//! a `meta` row. This target drives the store's own loaders on those rows: the `Cache`
//! of `store/cache.rs` (a whole load, and the partial `sync` a handle does after another
//! process committed) over in-memory tables (`Tables`, the `Rows` a backend's
//! transaction offers), `cache::parse_line` and `daemons::parse_daemon`.
//!
//! What it asserts: damaged input is refused with a typed error that names the row
//! (`StoreError::Corrupt` saying `globals`, `job SEQ`, `journal line ID` or `meta KEY`) or
//! gives the core's reason (`StoreError::Load`), never a panic, and a refusal leaves the
//! handle's state as it was. Accepted rows give a state that passes its self-check
//! (`State::self_check`), round-trips through serde and takes a tick. A partial sync ends
//! where a fresh handle's whole load of the same tables ends: the same state, or a refusal
//! too. The core's `State::put_parts`, called directly, leaves the state byte for byte as
//! it was when it refuses. An accepted journal line or daemon row writes back to an equal
//! value.
//!
//! Inputs are structured damage of real rows (the state fixtures split as the store splits
//! them, the journal lines of a conformance trace: `json_edit`), or text, one row a line
//! (`globals JSON`, `job SEQ JSON`, `gone SEQ`, `line AT JOB JSON`, `daemon KEY JSON`, and
//! `partial` to offer the job rows to `put_parts` instead of a whole load), which is what
//! the seeds are.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use duetime::{Entry, Event, Globals, JobRecord, JobSeq, Now, ProcessId, State};
use duetime_host::store::cache::{self, Cache, Rows, Writes};
use duetime_host::store::daemons::{parse_daemon, DaemonInfo, META_PREFIX};
use duetime_host::store::StoreError;
use serde_json::Value;

use crate::json_edit::{self, Edit, Vocab};
use crate::step_sequence::{check_round_trip, check_step};

/// States whose rows are damaged: every committed format fixture.
const FIXTURES: [&str; 8] = [
    include_str!("../../tests/fixtures/state-v8.json"),
    include_str!("../../tests/fixtures/state-v7.json"),
    include_str!("../../tests/fixtures/state-v6.json"),
    include_str!("../../tests/fixtures/state-v5.json"),
    include_str!("../../tests/fixtures/state-v4.json"),
    include_str!("../../tests/fixtures/state-v3.json"),
    include_str!("../../tests/fixtures/state-v2.json"),
    include_str!("../../tests/fixtures/state-v1.json"),
];

/// Journal lines come from a conformance trace's answers (every `record` effect).
const ANSWERS: &str = include_str!("../../tests/wire/seed-0.answers.jsonl");

const MAX_ROWS: usize = 12;
const MAX_LINES: usize = 8;

/// The rows a store holds for one state.
#[derive(Debug, Clone)]
pub struct BaseRows {
    pub state: State,
    pub globals: String,
    pub jobs: Vec<(JobSeq, String)>,
}

/// One journal line as the tables keep it.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: i64,
    pub job: String,
    pub json: String,
}

fn rows_of(state: State) -> BaseRows {
    let globals = serde_json::to_string(&state.globals()).expect("globals serialize");
    let jobs = state
        .records()
        .map(|(seq, r)| (seq, serde_json::to_string(r).expect("records serialize")))
        .collect();
    BaseRows {
        state,
        globals,
        jobs,
    }
}

fn bases() -> &'static [BaseRows] {
    static BASES: OnceLock<Vec<BaseRows>> = OnceLock::new();
    BASES.get_or_init(|| {
        FIXTURES
            .iter()
            .map(|f| rows_of(serde_json::from_str(f).expect("fixtures load")))
            .collect()
    })
}

fn lines() -> &'static [Line] {
    static LINES: OnceLock<Vec<Line>> = OnceLock::new();
    LINES.get_or_init(|| {
        let mut out = Vec::new();
        for answer in ANSWERS.lines() {
            let v: Value = serde_json::from_str(answer).expect("answers are JSON");
            for e in v["effects"].as_array().into_iter().flatten() {
                if e["effect"] == "record" && out.len() < 400 {
                    out.push(Line {
                        at: e["at"].as_i64().unwrap_or(0),
                        job: e["job"].as_str().unwrap_or_default().to_string(),
                        json: e["entry"].to_string(),
                    });
                }
            }
        }
        out
    })
}

/// A daemon's `meta` row as `DaemonInfo::of_this_process` writes it.
const DAEMON: &str = r#"{"process":3,"pid":4242,"host":"db-1","started":1741503600000,"jobs_file":"/etc/duetime/jobs.toml","runs":"/var/lib/duetime/runs","version":"0.1.0"}"#;

const WORDS: [&str; 24] = [
    "required",
    "skip",
    "down",
    "paused",
    "clock_forward",
    "ledger",
    "history",
    "ran",
    "missed",
    "lost",
    "started",
    "settled",
    "defined",
    "ok",
    "failed",
    "cron",
    "every",
    "UTC",
    "*/15 * * * *",
    "job0",
    "a",
    "",
    "Bad Name",
    "\u{0}",
];

const KEYS: [&str; 24] = [
    "format",
    "next_seq",
    "next_run",
    "next_fence",
    "processes",
    "clock",
    "owner",
    "def",
    "frontier",
    "activity",
    "pending",
    "run",
    "retry",
    "from",
    "to",
    "count",
    "cause",
    "type",
    "what",
    "covers",
    "process",
    "pid",
    "started",
    "name",
];

const VOCAB: Vocab = Vocab {
    words: &WORDS,
    keys: &KEYS,
};

#[derive(Arbitrary, Debug, Clone)]
pub enum RowOp {
    Edit {
        row: u8,
        edits: Vec<Edit>,
    },
    /// The row missing from a whole load.
    Drop {
        row: u8,
    },
    /// The row given twice.
    Twice {
        row: u8,
    },
    /// The row under another sequence number.
    Renumber {
        row: u8,
        /// Drawn as the bare number (`JobSeq` is not `Arbitrary`).
        seq: u64,
    },
    /// A tombstone for the row (a partial load's `None`).
    Gone {
        row: u8,
    },
    /// Arbitrary text as the row.
    Text {
        row: u8,
        text: String,
    },
}

#[derive(Arbitrary, Debug, Clone)]
pub struct LineOp {
    pub line: u16,
    pub at: Option<i64>,
    pub job: Option<String>,
    pub edits: Vec<Edit>,
}

#[derive(Arbitrary, Debug, Clone)]
pub struct RowsInput {
    pub base: u8,
    pub globals: Vec<Edit>,
    pub rows: Vec<RowOp>,
    pub partial: bool,
    pub lines: Vec<LineOp>,
    pub daemon: Vec<Edit>,
}

/// Rows as offered to a load: the globals' text, job rows (`None`: a tombstone).
#[derive(Debug, Clone, Default)]
pub struct Offer {
    pub globals: Option<String>,
    pub jobs: Vec<(JobSeq, Option<String>)>,
    pub partial: bool,
    pub lines: Vec<Line>,
    pub daemons: Vec<(String, String)>,
}

fn edited(json: &str, edits: &[Edit]) -> String {
    let mut doc: Value = serde_json::from_str(json).expect("stored rows are JSON");
    json_edit::apply(&mut doc, edits, &VOCAB);
    doc.to_string()
}

impl RowsInput {
    pub fn offer(&self) -> (usize, Offer) {
        let bases = bases();
        let b = usize::from(self.base) % bases.len();
        let base = &bases[b];
        let mut jobs: Vec<(JobSeq, Option<String>)> = if self.partial {
            Vec::new()
        } else {
            base.jobs
                .iter()
                .map(|(s, j)| (*s, Some(j.clone())))
                .collect()
        };
        let pick = |row: u8| base.jobs.get(usize::from(row) % base.jobs.len().max(1));
        for op in self.rows.iter().take(MAX_ROWS) {
            let (row, change) = match op {
                RowOp::Edit { row, edits } => {
                    (row, pick(*row).map(|(s, j)| (*s, Some(edited(j, edits)))))
                }
                RowOp::Drop { row } => {
                    if let Some((s, _)) = pick(*row) {
                        jobs.retain(|(k, _)| k != s);
                    }
                    continue;
                }
                RowOp::Twice { row } => (row, pick(*row).map(|(s, j)| (*s, Some(j.clone())))),
                RowOp::Renumber { row, seq } => (
                    row,
                    pick(*row).map(|(_, j)| (JobSeq(*seq), Some(j.clone()))),
                ),
                RowOp::Gone { row } => (row, pick(*row).map(|(s, _)| (*s, None))),
                RowOp::Text { row, text } => {
                    (row, pick(*row).map(|(s, _)| (*s, Some(text.clone()))))
                }
            };
            let _ = row;
            let Some((seq, json)) = change else { continue };
            // An edit replaces the row; `Twice` and `Renumber` add one beside it.
            match op {
                RowOp::Twice { .. } | RowOp::Renumber { .. } => jobs.push((seq, json)),
                _ => match jobs.iter_mut().find(|(k, _)| *k == seq) {
                    Some(slot) => slot.1 = json,
                    None => jobs.push((seq, json)),
                },
            }
        }
        let all = lines();
        let lines = self
            .lines
            .iter()
            .take(MAX_LINES)
            .map(|op| {
                let line = &all[usize::from(op.line) % all.len()];
                Line {
                    at: op.at.unwrap_or(line.at),
                    job: op.job.clone().unwrap_or_else(|| line.job.clone()),
                    json: edited(&line.json, &op.edits),
                }
            })
            .collect();
        let daemon = (format!("{META_PREFIX}3"), edited(DAEMON, &self.daemon));
        let offer = Offer {
            globals: Some(edited(&base.globals, &self.globals)),
            jobs,
            partial: self.partial,
            lines,
            daemons: vec![daemon],
        };
        (b, offer)
    }
}

/// Input layout: a first byte below 0x10 selects structured mode (the rest is
/// `RowsInput`); anything else is rows as text, one a line (see the module's documentation).
pub fn stored_rows(data: &[u8]) {
    match data.first() {
        Some(&b) if b < 0x10 => {
            if let Ok(input) = RowsInput::arbitrary_take_rest(Unstructured::new(&data[1..])) {
                let (base, offer) = input.offer();
                check_offer(base, &offer);
            }
        }
        _ => check_offer(0, &parse_text(&String::from_utf8_lossy(data))),
    }
}

/// The text form: one row a line.
pub fn parse_text(text: &str) -> Offer {
    let mut offer = Offer::default();
    for line in text.lines() {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        match tag {
            "partial" => offer.partial = true,
            "globals" => offer.globals = Some(rest.to_string()),
            "job" | "gone" => {
                let (seq, json) = rest.split_once(' ').unwrap_or((rest, ""));
                let Ok(seq) = seq.parse::<u64>() else {
                    continue;
                };
                let json = (tag == "job").then(|| json.to_string());
                offer.jobs.push((JobSeq(seq), json));
            }
            "line" => {
                let mut parts = rest.splitn(3, ' ');
                let (Some(at), Some(job), Some(json)) = (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let Ok(at) = at.parse::<i64>() else { continue };
                offer.lines.push(Line {
                    at,
                    job: job.to_string(),
                    json: json.to_string(),
                });
            }
            "daemon" => {
                let (key, json) = rest.split_once(' ').unwrap_or((rest, ""));
                offer.daemons.push((key.to_string(), json.to_string()));
            }
            _ => {}
        }
    }
    offer
}

/// What the input decodes to.
pub fn describe(data: &[u8]) -> String {
    match data.first() {
        Some(&b) if b < 0x10 => match RowsInput::arbitrary_take_rest(Unstructured::new(&data[1..]))
        {
            Ok(input) => {
                let (base, offer) = input.offer();
                format!("{input:?}\nbase {base}\n{offer:#?}")
            }
            Err(e) => format!("undecodable: {e}"),
        },
        _ => format!("{:#?}", parse_text(&String::from_utf8_lossy(data))),
    }
}

/// Every row of `offer` through the store's own loaders; `base` is the state a partial
/// load updates.
pub fn check_offer(base: usize, offer: &Offer) {
    if let Some(globals) = &offer.globals {
        if offer.partial {
            let base = &bases()[base % bases().len()];
            sync_changed(base, globals, &offer.jobs);
            put_changed(&base.state, globals, &offer.jobs);
        } else {
            sync_whole(globals, &offer.jobs);
        }
    }
    for (id, line) in (1..).zip(&offer.lines) {
        check_line(id, line);
    }
    for (key, json) in &offer.daemons {
        check_daemon(key, json);
    }
}

const STORE: &str = "fuzz";

/// The store's tables as the `Rows` of one open transaction: the globals and every job
/// row with the version that wrote it (`None` a tombstone). Rows keep the order given,
/// and damage may repeat a sequence number (as a broken index could); a read by sequence
/// number finds its last row, as an upsert would have left it.
struct Tables {
    version: i64,
    globals: String,
    jobs: Vec<(JobSeq, i64, Option<String>)>,
}

impl Rows for Tables {
    fn version(&mut self) -> Result<i64, StoreError> {
        Ok(self.version)
    }
    fn globals(&mut self) -> Result<String, StoreError> {
        Ok(self.globals.clone())
    }
    fn changed_since(&mut self, seen: i64) -> Result<Vec<(JobSeq, Option<String>)>, StoreError> {
        let mut changed: Vec<(JobSeq, Option<String>)> = self
            .jobs
            .iter()
            .filter(|(_, version, _)| *version > seen)
            .map(|(seq, _, json)| (*seq, json.clone()))
            .collect();
        // The backends read them `ORDER BY seq`; `Cache::sync` searches them by it.
        changed.sort_by_key(|(seq, _)| *seq);
        Ok(changed)
    }
    fn job(&mut self, seq: JobSeq) -> Result<Option<String>, StoreError> {
        let last = self.jobs.iter().rev().find(|(s, _, _)| *s == seq);
        Ok(last.and_then(|(_, _, json)| json.clone()))
    }
    fn all_jobs(&mut self) -> Result<Vec<(JobSeq, String)>, StoreError> {
        Ok(self
            .jobs
            .iter()
            .filter_map(|(seq, _, json)| Some((*seq, json.clone()?)))
            .collect())
    }
    fn write(&mut self, _: &Writes<'_>) -> Result<(), StoreError> {
        Err(StoreError::Database {
            store: STORE.to_string(),
            detail: "the fuzz target only reads".to_string(),
        })
    }
}

impl Tables {
    /// Writes `changed` at the next version, replacing a row of the same sequence number
    /// as the backends' upsert does.
    fn commit(&mut self, globals: &str, changed: &[(JobSeq, Option<String>)]) {
        self.version += 1;
        self.globals = globals.to_string();
        for (seq, json) in changed {
            let row = (*seq, self.version, json.clone());
            match self.jobs.iter_mut().find(|(s, _, _)| s == seq) {
                Some(slot) => *slot = row,
                None => self.jobs.push(row),
            }
        }
    }
}

/// A fresh handle's first sync: `Cache::load_whole`.
fn load_whole(tables: &mut Tables) -> (Cache, Result<(), StoreError>) {
    let mut cache = Cache::new(STORE.to_string(), State::default());
    let version = tables.version;
    let result = cache.sync(tables, version);
    (cache, result)
}

/// A whole load of the offered rows: a refusal names the row (or is the core's typed
/// `LoadError`) and leaves the handle's state as it was; an acceptance is a sound state.
fn sync_whole(globals: &str, rows: &[(JobSeq, Option<String>)]) {
    let mut tables = Tables {
        version: 1,
        globals: globals.to_string(),
        jobs: rows.iter().map(|(s, j)| (*s, 1, j.clone())).collect(),
    };
    let (cache, result) = load_whole(&mut tables);
    match result {
        Ok(()) => {
            assert_eq!(cache.loads.whole, 1, "a first sync is a whole load");
            check_loaded(&cache.state);
        }
        Err(e) => {
            check_refusal(&e);
            assert_same(&cache.state, &State::default(), "a refused whole load");
        }
    }
}

/// `Cache::sync`'s partial path: a handle that loaded `base`'s rows reads `changed`,
/// committed by another process. It ends where a fresh handle's whole load of the same
/// tables ends: the same state, or a refusal too (then its own state is untouched).
fn sync_changed(base: &BaseRows, globals: &str, changed: &[(JobSeq, Option<String>)]) {
    let mut tables = Tables {
        version: 1,
        globals: base.globals.clone(),
        jobs: base
            .jobs
            .iter()
            .map(|(s, j)| (*s, 1, Some(j.clone())))
            .collect(),
    };
    let (mut cache, loaded) = load_whole(&mut tables);
    loaded.expect("a fixture's rows load");
    let before = cache.state.clone();
    tables.commit(globals, changed);
    let version = tables.version;
    let synced = cache.sync(&mut tables, version);
    let (fresh, whole) = load_whole(&mut tables);
    match (synced, whole) {
        (Ok(()), Ok(())) => {
            check_loaded(&cache.state);
            assert_same(
                &cache.state,
                &fresh.state,
                "a partial sync and a whole load",
            );
        }
        (Err(e), Err(_)) => {
            check_refusal(&e);
            assert_same(&cache.state, &before, "a refused partial sync");
        }
        (Ok(()), Err(e)) => panic!("a partial sync took rows a whole load refuses: {e}"),
        (Err(e), Ok(())) => panic!("a partial sync refused rows a whole load takes: {e}"),
    }
}

/// The store says which row it could not read, or gives the core's typed reason.
fn check_refusal(e: &StoreError) {
    match e {
        StoreError::Corrupt { detail, .. } => assert!(
            detail.starts_with("globals: ") || detail.starts_with("job "),
            "a refusal that names no row: {detail}"
        ),
        StoreError::Load { .. } => {}
        other => panic!("rows refused with an error of the wrong kind: {other}"),
    }
}

fn assert_same(a: &State, b: &State, what: &str) {
    assert!(
        serde_json::to_value(a).ok() == serde_json::to_value(b).ok(),
        "{what} left different states"
    );
}

/// A state a load accepted: its self-check passes, it round-trips, it takes a tick and a
/// restart.
fn check_loaded(state: &State) {
    if let Err(broken) = state.self_check() {
        panic!("rows accepted, yet the state fails its self-check: {broken}");
    }
    let loaded = check_round_trip(state);
    let wake = state.next_wake().unwrap_or(duetime::Timestamp::EPOCH);
    let (mut s, mut l) = (state.clone(), loaded);
    let tick = Event::Tick {
        process: ProcessId(1),
        held: Vec::new(),
    };
    check_step(&mut s, &mut l, Now::at(wake), tick);
}

/// The core's `State::put_parts`, which any host may call: a refusal leaves the state
/// byte for byte as it was (the store falls back to a whole load, but another host may
/// not).
fn put_changed(base: &State, globals: &str, changed: &[(JobSeq, Option<String>)]) {
    let Ok(parsed) = serde_json::from_str::<Globals>(globals) else {
        return;
    };
    let mut records = Vec::new();
    for (seq, json) in changed {
        match json {
            None => records.push((*seq, None)),
            Some(j) => match serde_json::from_str::<JobRecord>(j) {
                Ok(r) => records.push((*seq, Some(r))),
                Err(_) => return,
            },
        }
    }
    let before = serde_json::to_vec(base).expect("a state serializes");
    let mut state = base.clone();
    if state.put_parts(parsed, records).is_err() {
        assert!(
            serde_json::to_vec(&state).expect("a state serializes") == before,
            "put_parts refused the rows but changed the state"
        );
    }
}

/// `cache::parse_line`: a refusal names the line; what is accepted writes back equal.
fn check_line(id: i64, line: &Line) {
    let record = match cache::parse_line(STORE, id, line.at, &line.job, &line.json) {
        Ok(record) => record,
        Err(StoreError::Corrupt { detail, .. }) => {
            assert!(
                detail.starts_with(&format!("journal line {id}: ")),
                "a refused journal line not named: {detail}"
            );
            return;
        }
        Err(other) => panic!("a journal line refused with an error of the wrong kind: {other}"),
    };
    let json = serde_json::to_string(&record.entry).expect("an entry serializes");
    let back: Entry = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("an entry written back does not load ({e}): {json}"));
    assert_eq!(back, record.entry, "an entry loads back different: {json}");
    let _ = record.to_string();
}

/// `daemons::parse_daemon`: a refusal names the row; what is accepted writes back equal.
fn check_daemon(key: &str, json: &str) {
    let info = match parse_daemon(STORE, key, json) {
        Ok(info) => info,
        Err(StoreError::Corrupt { detail, .. }) => {
            assert!(
                detail.starts_with(&format!("meta {key}: ")),
                "a refused daemon row not named: {detail}"
            );
            return;
        }
        Err(other) => panic!("a daemon row refused with an error of the wrong kind: {other}"),
    };
    let back: DaemonInfo = serde_json::from_str(&serde_json::to_string(&info).expect("writes"))
        .expect("a daemon row written back loads");
    assert_eq!(back, info, "a daemon row loads back different ({key})");
    assert!(info.key().starts_with(META_PREFIX));
}
