//! Damaged rows (S6): the product promises that a corrupt or damaged store is refused with
//! a typed error naming what is wrong, and loses nothing. A store of rows (`rows.rs`) only
//! ever holds what the core wrote, so nothing it loads needs refusing, and a load check
//! weakened to `Ok(())` or moved by one at its bound would go unseen. So now and then
//! (about one committed step in 200, drawn from a stream of its own) the store damages a
//! row it is about to write, or the globals, in exactly one way from the catalogue below,
//! and offers it to the copy that follows its rows (`State::put_parts`) and, every other
//! time, to a load of all the rows (`State::from_parts`). Each damage knows the
//! `Inconsistency` it must be refused with, fields and all; a refused `put_parts` must
//! leave the copy byte for byte as it was. Where a check has a bound, the damage lies
//! exactly one past it, and its twin exactly at the bound (`bound accepted: ...`) must be
//! taken. Then the store writes the good rows, as if the damage had been caught and
//! repaired, and the world goes on.
//!
//! Damages are made through the public surface only: the row or the globals are
//! serialized to JSON, one field is edited, and the result is decoded again. Every damage
//! here decodes (the stored form carries it); one that did not would mean the stored form
//! changed under the simulator, and is reported as S6 like a wrong answer, never counted
//! as a refusal: what is judged is the load checks.
//!
//! Not reachable this way: the checks of the derived indexes (`NameIndexStale`,
//! `NextDueStale`, `WakeStale`, `MissingFromWakeIndex`, `MissingFromRunIndex`,
//! `RunIndexExtra`, `IndexSizes`, `HeldClockCountStale`, `LaneEntryStale`,
//! `LanesDisagree`): a load builds the indexes from the rows, so no row can make them
//! disagree.

use crate::check::Probe;
use std::collections::BTreeMap;

use duetime::{
    Globals, Inconsistency, JobName, JobRecord, JobSeq, LoadError, MissCause, Schedule, State,
    Timestamp,
};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

/// Committed steps between two damages are drawn up to this (one in about 200 on average:
/// a world of a few thousand steps meets a dozen or more).
const MAX_GAP: u64 = 400;

// The core's bounds that its public surface does not export, as docs/semantics.md gives
// them: a damage one past a bound, and its twin at it, are only as good as these.
/// The most owed segments a record keeps (the core's `MAX_OWED_SEGMENTS`: "the job's line
/// of 32 owed segments").
const MAX_OWED_SEGMENTS: usize = 32;
/// The largest owed segment started whole (the core's `REQUIRED_BATCH`, "batches of at
/// most 1,000 due times"): a larger one is walked in batches and held to its count.
const REQUIRED_BATCH: u64 = 1_000;
/// Hourly missed counts a record keeps (`missed_24h`): a day and the hour it is in.
const MISSED_HOURS: usize = 25;

/// What a load must answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    Refused(LoadError),
    Accepted,
}

fn refused(what: Inconsistency) -> Expect {
    Expect::Refused(LoadError::Inconsistent { what })
}

/// One damage, made: the globals and rows to offer and what each load must answer.
#[derive(Debug, Clone)]
pub(crate) struct Made {
    /// Names the damage; counted as a probe when it is answered as it must be.
    pub(crate) probe: Probe,
    pub(crate) globals: Globals,
    /// Rows that replace the store's rows of those numbers (or stand beside them, under
    /// `twice`).
    pub(crate) rows: Vec<(JobSeq, JobRecord)>,
    /// The rows are given a second time, beside the store's: one sequence number twice.
    pub(crate) twice: bool,
    /// What `put_parts` must answer (the copy before the step, the step's rows).
    pub(crate) put: Expect,
    /// What `from_parts` must answer (all the rows after the step).
    pub(crate) load: Expect,
    /// Offered to `from_parts` too: every other damage, drawn, and always the config at a
    /// bound (whose point is the whole load).
    pub(crate) whole: bool,
}

impl Made {
    /// One row damaged, answered alike by both loads.
    fn row(probe: Probe, site: &Site, seq: JobSeq, rec: JobRecord, expect: Expect) -> Made {
        Made {
            probe,
            globals: site.globals.clone(),
            rows: vec![(seq, rec)],
            twice: false,
            put: expect.clone(),
            load: expect,
            whole: false,
        }
    }

    /// The globals damaged, answered alike by both loads.
    fn globals(probe: Probe, globals: Globals, expect: Expect) -> Made {
        Made {
            probe,
            globals,
            rows: Vec::new(),
            twice: false,
            put: expect.clone(),
            load: expect,
            whole: false,
        }
    }
}

/// What a damage is made from: the store after the step, and what the step wrote.
pub(crate) struct Site<'a> {
    pub(crate) globals: &'a Globals,
    /// Every row, as the step left them.
    pub(crate) rows: &'a BTreeMap<JobSeq, JobRecord>,
    /// The rows the step wrote (`None`: removed), which `put_parts` takes with the damage.
    pub(crate) changed: &'a BTreeMap<JobSeq, Option<JobRecord>>,
}

/// One row, with its stored form to read what the accessors do not show (encoded when a
/// damage first reads it: most makers pass over most rows by what the accessors show, and
/// encoding every row offered was most of a damage's cost).
struct Row<'a> {
    seq: JobSeq,
    rec: &'a JobRecord,
    json: std::cell::OnceCell<Value>,
}

impl<'a> Row<'a> {
    fn new(seq: JobSeq, rec: &'a JobRecord) -> Row<'a> {
        Row {
            seq,
            rec,
            json: std::cell::OnceCell::new(),
        }
    }

    /// Its stored form.
    fn json(&self) -> &Value {
        self.json.get_or_init(|| encode(self.rec))
    }
}

impl Row<'_> {
    fn name(&self) -> JobName {
        self.rec.def().name.clone()
    }

    /// A field of its activity, when set.
    fn act(&self, field: &str) -> Option<&Value> {
        self.json()
            .get("activity")
            .and_then(|a| a.get(field))
            .filter(|v| !v.is_null())
    }

    fn pending(&self) -> &[Value] {
        self.act("pending")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// Neither an ended one-shot (whose instant the covers and owed segments must not
    /// hold) nor unconfirmed (which owes and runs nothing): a row whose activity can take
    /// one damage without breaking a check before the one aimed at.
    fn plain(&self) -> bool {
        self.rec.ended().is_none() && !self.rec.is_unconfirmed()
    }

    fn frontier(&self) -> i64 {
        self.rec.frontier().as_millis()
    }

    /// The row with `edit` applied to its stored form.
    fn with(&self, edit: impl FnOnce(&mut Map<String, Value>)) -> Result<JobRecord, String> {
        let mut json = self.json().clone();
        edit(json.as_object_mut().ok_or("a row is not an object")?);
        decode(json, "row")
    }
}

impl Row<'_> {
    /// A damage no job record can hold (its phase is a type that refuses it on reading):
    /// `Err` unless reading the damaged row refuses it saying `says`. Answered so, nothing
    /// of it reaches a load; the step's rows are offered as they are.
    fn unreadable(
        &self,
        probe: Probe,
        site: &Site,
        edit: impl FnOnce(&mut Map<String, Value>),
        says: &str,
    ) -> Result<Option<Made>, String> {
        let mut json = self.json().clone();
        edit(json.as_object_mut().ok_or("a row is not an object")?);
        match serde_json::from_value::<JobRecord>(json) {
            Ok(_) => Err(format!(
                "a damaged row ({probe}) was read as a job record; reading must refuse it"
            )),
            Err(e) if e.to_string().contains(says) => Ok(Some(Made::globals(
                probe,
                site.globals.clone(),
                Expect::Accepted,
            ))),
            Err(e) => Err(format!(
                "a damaged row ({probe}) was refused on reading with `{e}`; it must say `{says}`"
            )),
        }
    }
}

/// A row's activity in its stored form, made when it has none.
fn act(row: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let a = row.entry("activity").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    a.as_object_mut().expect("made an object")
}

fn encode<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("the core's types serialize")
}

fn decode<T: serde::de::DeserializeOwned>(json: Value, what: &str) -> Result<T, String> {
    serde_json::from_value(json).map_err(|e| {
        format!(
            "a damaged {what} does not decode ({e}): the stored form changed under the simulator"
        )
    })
}

/// The globals with `edit` applied to their stored form.
fn globals_with(
    g: &Globals,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> Result<Globals, String> {
    let mut json = encode(g);
    edit(
        json.as_object_mut()
            .ok_or("the globals are not an object")?,
    );
    decode(json, "globals")
}

/// One of the counters (`next_seq`, `next_run`, `next_fence`): the globals show them only
/// in their stored form.
fn counter(g: &Globals, name: &str) -> u64 {
    encode(g)[name].as_u64().expect("a counter is a number")
}

/// An owed segment in its stored form; `tag` makes it a segment of another schedule (an
/// `at` schedule whose instant it does not hold), which the counts check only when the
/// segment is walked in pieces.
fn seg(from: i64, to: i64, count: u64, cause: MissCause, tag: Option<i64>) -> Value {
    let mut s = json!({ "from": from, "to": to, "count": count, "cause": encode(&cause) });
    if let Some(at) = tag {
        let at = Schedule::At {
            instant: Timestamp::from_millis(at),
        };
        s["schedule"] = encode(&at);
    }
    s
}

/// `n` segments of one off-schedule due time each, a millisecond apart, the last at `end`:
/// in order, behind the frontier when `end` is, and each exact as far as the checks go.
fn segs(n: usize, end: i64) -> Vec<Value> {
    let tag = Some(end + 86_400_000);
    (0..n)
        .map(|i| {
            let t = end - (n - 1 - i) as i64;
            seg(t, t, 1, MissCause::Down, tag)
        })
        .collect()
}

/// A name no row has, from `name`.
fn other_name(name: &JobName, rows: &BTreeMap<JobSeq, JobRecord>) -> JobName {
    let taken = |n: &JobName| rows.values().any(|r| r.def().name == *n);
    let base: String = name.as_str().chars().take(60).collect();
    (0u32..)
        .map(|i| JobName::new(&format!("{base}x{i}")).expect("a name's shape"))
        .find(|n| !taken(n))
        .expect("a free name")
}

/// A row's copy under another name with no activity: a new job's row.
fn renamed_copy(row: &Row, rows: &BTreeMap<JobSeq, JobRecord>) -> Result<JobRecord, String> {
    let name = other_name(&row.name(), rows);
    row.with(|r| {
        r.remove("activity");
        r["def"]["name"] = encode(&name);
    })
}

type RowMaker = fn(&Site, &Row, &mut ChaCha8Rng) -> Result<Option<Made>, String>;
type GlobalsMaker = fn(&Site, &mut ChaCha8Rng) -> Result<Option<Made>, String>;

/// How a damage is made: from one row, or from the globals.
#[derive(Clone, Copy)]
enum Maker {
    Row(RowMaker),
    Globals(GlobalsMaker),
}

/// The catalogue. Each maker returns `None` when the row or the store has nothing it can
/// damage (no open run, no owed segment, no owner lease...).
const CATALOGUE: &[Maker] = &[
    Maker::Globals(globals::newer_format),
    Maker::Globals(globals::config_out_of_range),
    Maker::Globals(globals::config_at_bound),
    Maker::Globals(globals::owner_under_shared),
    Maker::Globals(globals::owner_fence_ahead),
    Maker::Globals(globals::owner_fence_at_bound),
    Maker::Globals(globals::owner_holder_unknown),
    Maker::Globals(globals::owner_holder_draining),
    Maker::Globals(globals::counters_behind),
    Maker::Globals(globals::counters_at_bound),
    Maker::Row(records::sequence_twice),
    Maker::Row(records::name_twice),
    Maker::Row(records::beyond_sequence_counter),
    Maker::Row(records::new_row_at_bound),
    Maker::Row(records::run_open_twice),
    Maker::Row(records::incident_twice),
    Maker::Row(records::watch_out_of_step),
    Maker::Row(records::ended_not_one_shot),
    Maker::Row(records::ended_unsettled),
    Maker::Row(records::too_many_owed),
    Maker::Row(records::owed_at_bound),
    Maker::Row(records::manual_over_cap),
    Maker::Row(records::missed_over_day),
    Maker::Row(records::owed_out_of_order),
    Maker::Row(records::owed_beyond_frontier),
    Maker::Row(records::run_and_retry),
    Maker::Row(records::waits_while_busy),
    Maker::Row(records::unconfirmed_not_clean),
    Maker::Row(records::holds_other_definition),
    Maker::Row(records::empty_cover),
    Maker::Row(records::run_ahead_of_counters),
    Maker::Row(records::run_fence_at_bound),
    Maker::Row(records::parked_with_cancel),
    Maker::Row(records::owed_miscounted),
    Maker::Row(records::walked_owed_miscounted),
    Maker::Row(records::unwalked_owed_at_bound),
];

/// Draws when to damage and what, from a stream of its own (so the world's other draws
/// stay as they were).
pub(crate) struct Damager {
    rng: ChaCha8Rng,
    /// The committed step at which the next damage is due.
    next: u64,
}

impl Damager {
    pub(crate) fn new(seed: u64) -> Damager {
        let mut rng = crate::gen::stream_rng(seed, crate::gen::Stream::Damage);
        let next = rng.gen_range(1..=MAX_GAP);
        Damager { rng, next }
    }

    /// Whether a damage is due at committed step `step` (`draw` then draws one).
    pub(crate) fn due(&self, step: u64) -> bool {
        step >= self.next
    }

    /// A damage for committed step `step`, when one is due and the store has something a
    /// damage drawn can take; `Err` when a damage does not decode.
    pub(crate) fn draw(&mut self, step: u64, site: &Site) -> Result<Option<Made>, String> {
        if step < self.next {
            return Ok(None);
        }
        for _ in 0..8 {
            let made = match CATALOGUE[self.rng.gen_range(0..CATALOGUE.len())] {
                Maker::Globals(make) => make(site, &mut self.rng)?,
                Maker::Row(make) => self.on_a_row(site, make)?,
            };
            if let Some(mut made) = made {
                made.whole |= self.rng.gen_bool(0.5);
                self.next = step + self.rng.gen_range(1..=MAX_GAP);
                return Ok(Some(made));
            }
        }
        Ok(None)
    }

    /// `make` on the first row it can damage: the rows the step wrote first, then the
    /// others (written again, as a store may rewrite a row it holds), each in a drawn order.
    fn on_a_row(&mut self, site: &Site, make: RowMaker) -> Result<Option<Made>, String> {
        let mut written: Vec<JobSeq> = site
            .changed
            .iter()
            .filter_map(|(s, r)| r.as_ref().map(|_| *s))
            .collect();
        let mut others: Vec<JobSeq> = site
            .rows
            .keys()
            .copied()
            .filter(|s| !site.changed.contains_key(s))
            .collect();
        written.shuffle(&mut self.rng);
        others.shuffle(&mut self.rng);
        for seq in written.into_iter().chain(others) {
            let rec = &site.rows[&seq];
            let row = Row::new(seq, rec);
            if let Some(made) = make(site, &row, &mut self.rng)? {
                return Ok(Some(made));
            }
        }
        Ok(None)
    }
}

/// Offers a damage to the copy following the store (`put_parts`, with the step's other
/// rows) and, when it says so (`whole`), to a load of all the rows (`from_parts`); `Err`
/// names the damage and what went wrong (S6).
pub(crate) fn offer(replica: &mut State, made: &Made, site: &Site) -> Result<(), String> {
    // Kept as a value to compare with after a refusal (two serializations of the whole
    // copy were a fifth of the store of rows' time; benches/README.md, issue 46).
    let before = (made.put != Expect::Accepted).then(|| replica.clone());
    let mut batch: BTreeMap<JobSeq, Option<JobRecord>> = site.changed.clone();
    let mut extra = Vec::new();
    for (seq, rec) in &made.rows {
        if made.twice {
            extra.push((*seq, Some(rec.clone())));
            batch.entry(*seq).or_insert_with(|| Some(rec.clone()));
        } else {
            batch.insert(*seq, Some(rec.clone()));
        }
    }
    let got = replica.put_parts(made.globals.clone(), batch.into_iter().chain(extra));
    judge("put_parts", made, &made.put, got)?;
    if before.is_some_and(|b| !crate::rows::same(&b, replica)) {
        return Err(format!(
            "a damaged row ({}) refused by put_parts changed the copy it was offered to",
            made.probe
        ));
    }
    if made.whole {
        let mut rows: Vec<(JobSeq, JobRecord)> = Vec::with_capacity(site.rows.len() + 1);
        let mut all = site.rows.clone();
        for (seq, rec) in &made.rows {
            if made.twice {
                rows.push((*seq, rec.clone()));
            } else {
                all.insert(*seq, rec.clone());
            }
        }
        rows.extend(all);
        let got = State::from_parts(made.globals.clone(), rows).map(|_| ());
        judge("from_parts", made, &made.load, got)?;
    }
    Ok(())
}

/// The answer `got` of `how` against what the damage must get.
fn judge(
    how: &str,
    made: &Made,
    expect: &Expect,
    got: Result<(), LoadError>,
) -> Result<(), String> {
    let said = match (expect, &got) {
        (Expect::Accepted, Ok(())) => return Ok(()),
        (Expect::Refused(e), Err(g)) if e == g => return says_what(how, made, g),
        (_, Ok(())) => "accepted it".to_string(),
        (_, Err(g)) => format!("refused it with {g:?} ({g})"),
    };
    let wanted = match expect {
        Expect::Accepted => "accepted".to_string(),
        Expect::Refused(e) => format!("refused with {e:?}"),
    };
    Err(format!(
        "a damaged row ({}): {how} {said}; it must be {wanted}",
        made.probe
    ))
}

/// A refusal an operator reads must say what is wrong: its text holds the inconsistency's
/// own (never empty), and names the damaged job when the inconsistency is about it.
fn says_what(how: &str, made: &Made, got: &LoadError) -> Result<(), String> {
    let text = got.to_string();
    let LoadError::Inconsistent { what } = got else {
        return Ok(());
    };
    let inner = what.to_string();
    let about = format!("{what:?}");
    let named = made
        .rows
        .iter()
        .map(|(_, rec)| rec.def().name.as_str())
        .find(|name| {
            about.contains(&format!("job: {name},")) || about.contains(&format!("job: {name} }}"))
        });
    let wrong = if inner.trim().is_empty() {
        Some("its inconsistency's text is empty".to_string())
    } else if !text.contains(&inner) {
        Some(format!("it leaves out the inconsistency (`{inner}`)"))
    } else {
        named
            .filter(|name| !text.contains(name))
            .map(|name| format!("it does not name the job, {name}"))
    };
    match wrong {
        Some(wrong) => Err(format!(
            "a damaged row ({}): {how} refused it as it must, but its message `{text}`: {wrong}",
            made.probe
        )),
        None => Ok(()),
    }
}

mod globals;
mod records;
#[cfg(test)]
mod tests;
