//! The checker: reads the journal (ledger and history records, including each run's start)
//! and the oracle's due times, never the core's state (but for V1's views), and holds the safety
//! invariants S1-S5 and the liveness promises L1-L3 of DESIGN.md; fed the alerts too, A1
//! (an incident told once); fed the owner lease's changes under `single_owner`, O1 (one
//! owner dispatches at a time); U1 (a one-shot starts its instant once and ends once) and P2
//! (a parked run is settled by approval, result or expiry, never expired early, never left
//! parked past its bound); B1 (a backfill reaches no accounted time, and its due times are
//! accounted exactly once). And what must happen, not only what must not: R1 (a result
//! reported with a run's current fence settles or parks it in its step), R2 (a retry covers
//! exactly what the run that failed before it covered), O2 (an owner lease is not taken
//! again within a lease of its taking: a renewal keeps its fence). And V1, the one place
//! it looks at the core's state, through its public views only: every so many steps, what
//! `job()` tells of each job (exists, paused, held for confirmation, running, awaiting
//! approval, quota hold) must agree with the journal.

use duetime::Notice;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use duetime::{
    Alert, AlertKind, ClockGapKind, Effect, Entry, Fence, History, Incident, JobName, LedgerKind,
    MissAction, MissCause, MissedRule, Outcome, ProcessId, Record, RunId,
};

use crate::oracle::Spec;

mod admission;
// Judges the world feeds with what only it knows (true time, every host's clock): told
// gaps (`gaps`), the witnesses a held process must wake (`witness`), whether clocks that
// agree are believed (`consensus`); and E1's silences counted from the journal (`silence`).
mod catch_up;
mod chains;
pub(crate) mod consensus;
mod forgotten;
pub mod gaps;
mod history;
mod invariant;
mod journal_time;
mod lease;
mod ledger;
mod line;
mod live;
mod logs;
mod observe;
mod one_shot;
mod pause_told;
mod probe;
mod replies;
mod retries;
pub(crate) mod silence;
mod stall;
mod timeouts;
mod views;
pub(crate) mod witness;

pub use invariant::Invariant;
pub use observe::Observation;
pub use probe::{Probe, ProbeCounts};

/// A broken promise, with the entries that show it.
#[derive(Debug, Clone)]
pub struct Violation {
    pub invariant: Invariant,
    pub job: String,
    pub detail: String,
    /// Something that should have happened did not by the end (`L1`, `L3`, the coverage
    /// half of `L2`), as opposed to something forbidden that did happen (every `S`, and a
    /// `required` job's skip, the other half of `L2`): only the latter can be shrunk,
    /// since dropping events only makes more of the former.
    pub liveness: bool,
}

impl Violation {
    pub fn is_liveness(&self) -> bool {
        self.liveness
    }

    /// S6: a committed state that fails its own load check or its serde round trip.
    pub fn state(detail: String) -> Violation {
        Violation {
            invariant: Invariant::S6,
            job: "(state)".to_string(),
            detail,
            liveness: false,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} broken for {}: {}",
            self.invariant, self.job, self.detail
        )
    }
}

/// What the checker needs to know about a job beyond the journal.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JobFacts {
    pub safe_to_repeat: bool,
    pub missed: MissedRule,
    /// The job's `pause_after_failures`: after that many failed runs in a row it must be
    /// paused before anything but a manual run starts again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_failures: Option<u32>,
    /// The job's `alert_throttle` in ms: two alerts it tells are at least this far apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_throttle: Option<i64>,
    /// Oracle specs by the schedule text the core recorded in `defined`.
    pub specs: BTreeMap<String, Spec>,
    /// The job's concurrency key and its `concurrency_limit` (C1: a lane's width is the
    /// smallest its jobs ask for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<u32>,
    /// The job's jitter (only for the Probe::JitteredStart probe: due times are the oracle's
    /// whatever the jitter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    /// The job requires confirmation (H1: its definition changes only by a `confirmed`
    /// line, whatever field changed, the command a host runs included).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_confirmation: bool,
    /// The job's `expect_success_within` in ms (E1: the dead-man's switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_success_within: Option<i64>,
    /// The job's `stall_after` in ms (V1: a run open that long shows the job stalled).
    /// Absent in regressions saved before it was a fact: V1 then holds no status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_after: Option<i64>,
    /// The job's overlap policy in force (M1: what its rule may owe). Absent in regressions
    /// saved before it was a fact: M1 then bounds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<duetime::Overlap>,
    /// The job's `retries`, its backoff's `initial` and `max` in ms, and its wait budget in
    /// ms (R4). Absent in regressions saved before they were facts: R4 then holds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<(i64, i64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_budget_ms: Option<i64>,
    /// The job's `catch_up_window` in ms (M1: due times recorded too late for it are older
    /// than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_window_ms: Option<i64>,
    /// The jobs it waits for (`JobDef::after`; the chain's checks, and M1 bounds nothing
    /// for it: its on-time due times wait in its line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<JobName>,
}

/// The moments the liveness checks are judged at.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Horizon {
    /// Wall time at the end of the run.
    pub end: i64,
    /// Due times at or before `end - settle_bound` must be accounted (L1).
    pub settle_bound: i64,
    /// Runs started before `end - run_bound` must be settled or recorded lost (L3).
    pub run_bound: i64,
    pub check_liveness: bool,
}

/// One registration of a job (a job removed and defined again is a new one).
struct Track {
    name: JobName,
    registration: u32,
    /// From the job's facts, looked up once (the facts never change while the checker
    /// runs: the concurrency key is asked of every job after every tick, C4).
    safe_to_repeat: bool,
    facts_key: Option<String>,
    pause_after_failures: Option<u32>,
    alert_throttle: Option<i64>,
    /// When the job last told an alert (T1).
    last_alert: Option<i64>,
    /// Epochs: each schedule of the job's life, with the ranges of it backfilled.
    epochs: Vec<Epoch>,
    /// Whether any epoch holds a backfill (only then do starts look for one).
    backfilled: bool,
    removed_at: Option<i64>,
    paused: bool,
    /// The latest start of each due time covered so far: disjoint covers, ascending (so
    /// ascending in `to` too). Starts mostly come in due-time order: a new one is pushed.
    covers: Vec<Cover>,
    /// The process of the job's latest start.
    last_process: Option<duetime::ProcessId>,
    /// Failed runs since the last success, and whether a pause is owed for them.
    failures_in_a_row: u32,
    pause_owed: bool,
    entries: Vec<(i64, i64, u64, LedgerKind)>,
    /// The alert kinds told since the job's last success or resume (A1: each once).
    told: Vec<Incident>,
    /// A quota hold's end while it holds (Q1: nothing of the job starts until it is
    /// lifted), and whether one was lifted since the job's last start (for a probe).
    held_until: Option<i64>,
    lifted: bool,
    /// The digest of the definition held for confirmation, if any (H1).
    held: Option<String>,
    /// From the job's facts (H1).
    requires_confirmation: bool,
    /// A `confirmed` line was read and the definition it applies is still to come (H1).
    confirmed: bool,
    jitter_ms: Option<u64>,
    /// The current epoch's instant when it is a one-shot (`at ...`), and what U1 has seen
    /// of it: the ledger entry that settled it, its end line.
    one_shot: Option<OneShot>,
    /// Runs of this track parked awaiting approval now.
    parked: u32,
    /// The dead-man's switch, when the job sets one (E1).
    silence: Option<crate::check::silence::Silence>,
    /// The latest run of the job that settled failed or timed out, and what it covered
    /// (R2: its retry covers exactly that).
    last_failed: Option<(RunId, duetime::Covers)>,
    /// What the job's view must say (V1).
    seen: views::Seen,
    /// Its starts on schedule, and how many came a tick or more after the due time (G1).
    jittered: (u32, u32),
    /// What it owes, by the journal (N1, M1).
    line: line::Line,
    /// What people's commands and the journal said of it (R3, H2).
    said: replies::Said,
    /// What M2 knows: the newest due time skipped as late, and the newest accounted.
    catch_up: catch_up::Newest,
}

/// One schedule of a job's life, from its `defined` line: the schedule's text (the oracle's
/// spec is found by it), the instant after which it accounts due times, and the ranges of
/// its due times backfilled before that instant, in the order they were accepted.
struct Epoch {
    text: String,
    from: i64,
    backfills: Vec<Backfill>,
}

impl Epoch {
    /// The start of the span this schedule accounts (B1: a backfill must end before it):
    /// the first backfilled due time, else just after the definition instant (due times
    /// are those after it, so a due time at the instant itself may be backfilled).
    fn accounted_start(&self) -> i64 {
        self.backfills
            .last()
            .map_or(self.from.saturating_add(1), |b| b.from)
    }
}

/// An accepted backfill: its first and last due times and their count, as its `backfill`
/// line told them, and how many ledger entries the job had then. Entries after that within
/// its range are its own: the core lets a backfill reach no due time still owed, retrying or
/// running, so every earlier schedule's entry there was written before it.
#[derive(Clone, Copy)]
struct Backfill {
    from: i64,
    to: i64,
    count: u64,
    after: usize,
}

#[derive(Clone, Copy)]
struct OneShot {
    instant: i64,
    /// The entry that settled the instant, until the end line that must follow it.
    end_owed: Option<LedgerKind>,
    ended: bool,
    /// How the journal's end line said the instant ended, and when (U1 holds the store's
    /// `JobRecord::ended` to it: `check/one_shot.rs`).
    end: Option<duetime::OneShotEnd>,
}

/// The instant of a one-shot schedule's text (`at 2025-...Z`), as the core prints it.
fn one_shot_instant(text: &str) -> Option<i64> {
    let t = text.strip_prefix("at ")?;
    t.parse::<duetime::Timestamp>().ok().map(|t| t.as_millis())
}

impl Track {
    /// The parts of a start's cover `a..=b` S2 judges apart (`line::Line::cover_parts`);
    /// the whole cover when the job was never backfilled.
    fn cover_parts(&mut self, a: i64, b: i64) -> Vec<(i64, i64)> {
        if !self.backfilled {
            return vec![(a, b)];
        }
        self.line.cover_parts(a, b)
    }

    fn new(name: JobName, registration: u32, facts: &BTreeMap<JobName, JobFacts>) -> Track {
        let f = facts.get(&name);
        Track {
            safe_to_repeat: f.is_some_and(|f| f.safe_to_repeat),
            facts_key: f.and_then(|f| f.concurrency_key.clone()),
            pause_after_failures: f.and_then(|f| f.pause_after_failures),
            alert_throttle: f.and_then(|f| f.alert_throttle),
            last_alert: None,
            name,
            registration,
            epochs: Vec::new(),
            backfilled: false,
            removed_at: None,
            paused: false,
            covers: Vec::new(),
            last_process: None,
            failures_in_a_row: 0,
            pause_owed: false,
            entries: Vec::new(),
            told: Vec::new(),
            held_until: None,
            lifted: false,
            held: None,
            requires_confirmation: f.is_some_and(|f| f.requires_confirmation),
            confirmed: false,
            jitter_ms: f.and_then(|f| f.jitter_ms),
            one_shot: None,
            parked: 0,
            last_failed: None,
            silence: crate::check::silence::Silence::of(f.and_then(|f| f.expect_success_within)),
            seen: views::Seen::default(),
            jittered: (0, 0),
            line: line::Line::default(),
            said: replies::Said::default(),
            catch_up: catch_up::Newest::default(),
        }
    }

    /// Marks the end of `run` on the covers it still holds within `cover`, if any.
    fn end_cover(&mut self, cover: Option<(i64, i64)>, run: RunId, end: RunEnd) {
        let Some((from, to)) = cover else { return };
        // Most often the run settling holds the latest cover.
        let i = match self.covers.last() {
            Some(c) if c.from == from => self.covers.len() - 1,
            _ => self.covers.partition_point(|c| c.from < from),
        };
        for c in self.covers[i..].iter_mut().take_while(|c| c.from <= to) {
            if c.run == run {
                c.end = Some(end);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Cover {
    from: i64,
    to: i64,
    run: RunId,
    end: Option<RunEnd>,
}

/// C1 and C2: the runs open in the core's accounting (started, not yet settled, lost or
/// removed with their job), by the store's order, per concurrency key and per process;
/// C3: the jobs waiting for room.
#[derive(Default)]
struct Concurrency {
    /// Jobs that wrote a `waiting` line and have not started, paused or gone since
    /// (tracks), with their key. A wait can also end unseen (nothing left to start), so
    /// this may hold a job no longer waiting: C3 only ever lets more waits pass for it.
    waiting: Vec<(usize, Option<String>)>,
    /// C4: the starts of this step: the job, its key (if any), since when it waited (its
    /// start, if it did not wait), and whether it waited.
    started_now: Vec<(JobName, Option<String>, i64, bool)>,
    /// C4: the process whose tick the step is.
    ticked: Option<duetime::ProcessId>,
    cap: Option<u32>,
    /// Each key's width: the smallest `concurrency_limit` of its jobs (1 when unset).
    widths: BTreeMap<String, u32>,
    /// Open runs: their key, process and track.
    open: BTreeMap<RunId, (Option<String>, duetime::ProcessId, usize)>,
    per_key: BTreeMap<String, u32>,
    /// Open runs on each process by the journal, a process kept (at 0) once it held one.
    per_process: BTreeMap<duetime::ProcessId, u32>,
    /// The processes of `per_process` whose count is not 0 (V1's counts look these up,
    /// with the store's holders, and no other: `views.rs::counts_shown`).
    holding: BTreeSet<duetime::ProcessId>,
    /// C4: the store's jobs whose record waits for room (`JobRecord::waits_for_room`),
    /// followed step by step through the jobs each step touched; `None` until read whole
    /// (`admission.rs::waiters_followed`).
    store_waiting: Option<BTreeSet<duetime::JobSeq>>,
}

impl Concurrency {
    fn close(&mut self, run: RunId) {
        let Some((key, process, _)) = self.open.remove(&run) else {
            return;
        };
        if let Some(k) = key {
            if let Some(n) = self.per_key.get_mut(&k) {
                *n = n.saturating_sub(1);
            }
        }
        self.run_off(process);
    }

    /// One more run open on `process`.
    fn run_on(&mut self, process: duetime::ProcessId) {
        *self.per_process.entry(process).or_insert(0) += 1;
        self.holding.insert(process);
    }

    /// One run fewer open on `process` (none fewer than 0; a process never counted stays
    /// uncounted).
    fn run_off(&mut self, process: duetime::ProcessId) {
        if let Some(n) = self.per_process.get_mut(&process) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.holding.remove(&process);
            }
        }
    }
}

/// A started run not yet settled (L3 judges those left at the end).
#[derive(Clone, Copy)]
struct Start {
    track: usize,
    /// Journal order of the start, so L3 reads in a stable order.
    seq: u64,
    run: RunId,
    at: i64,
    /// Its cover's first and last due times (the cover's key while it is the latest start
    /// there; a cover judged in parts, `Track::cover_parts`, is kept in parts).
    cover: Option<(i64, i64)>,
    end: Option<RunEnd>,
}

/// What the checker holds of a run until it settles: its start and the results reported
/// for it (each distinct outcome once).
#[derive(Default)]
struct OpenRun {
    start: Option<Start>,
    /// The fence it was started with, and what it covers (R1, R2).
    fence: Option<Fence>,
    covers: Option<duetime::Covers>,
    /// The first result reported, then any others that differ from it (most runs have
    /// one, sent once or more).
    reported: Option<Outcome>,
    more: Vec<Outcome>,
}

impl OpenRun {
    fn reported(&self) -> impl Iterator<Item = &Outcome> {
        self.reported.iter().chain(&self.more)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    Done,
    Failed,
    Lost,
    /// Parked and not approved in time: its due times are closed, never run again.
    Expired,
}

/// A run parked awaiting approval (P2), until it settles.
#[derive(Clone, Copy)]
struct Parked {
    track: usize,
    until: i64,
}

/// Run ids are counters: a multiplicative hash spreads them. Only looked up, never
/// iterated, so no hash order can reach a verdict.
#[derive(Default, Clone, Copy)]
struct RunHasher(u64);

impl std::hash::Hasher for RunHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type RunMap<V> = std::collections::HashMap<RunId, V, std::hash::BuildHasherDefault<RunHasher>>;

/// A set of run ids: a bit each for the counters a state hands out (dense from 1), a hash
/// set for any beyond.
#[derive(Default)]
struct RunSet {
    bits: Vec<u64>,
    far: RunMap<()>,
}

const DENSE_RUNS: u64 = 1 << 24;

impl RunSet {
    /// Adds `run`; whether it was there already.
    fn insert(&mut self, run: RunId) -> bool {
        if run.0 >= DENSE_RUNS {
            return self.far.insert(run, ()).is_some();
        }
        let (w, b) = ((run.0 / 64) as usize, run.0 % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        let was = self.bits[w] >> b & 1 == 1;
        self.bits[w] |= 1 << b;
        was
    }

    fn contains(&self, run: RunId) -> bool {
        if run.0 >= DENSE_RUNS {
            return self.far.contains_key(&run);
        }
        self.bits
            .get((run.0 / 64) as usize)
            .is_some_and(|w| w >> (run.0 % 64) & 1 == 1)
    }
}

/// Counts of rare situations the journal shows; the simulator adds its own.
pub type Probes = BTreeMap<&'static str, u64>;

/// The results processes sent (the world's ground truth, or the `RunFinished` inputs of a
/// replay): a settlement must be one of them, or the core's own timeout.
pub type Reported = BTreeMap<duetime::RunId, Vec<Outcome>>;

/// Checks a whole journal at once: every reported result is known from the start.
pub fn check(
    journal: &[Record],
    facts: &BTreeMap<JobName, JobFacts>,
    reported: &Reported,
    horizon: Horizon,
    probes: &mut Probes,
) -> Vec<Violation> {
    check_capped(journal, facts, reported, horizon, None, probes)
}

/// `check` for a state with `max_runs_per_process` (C2).
pub fn check_capped(
    journal: &[Record],
    facts: &BTreeMap<JobName, JobFacts>,
    reported: &Reported,
    horizon: Horizon,
    cap: Option<u32>,
    probes: &mut Probes,
) -> Vec<Violation> {
    let mut c = Checker::new(facts.clone());
    c.set_cap(cap);
    for (run, outcomes) in reported {
        for outcome in outcomes {
            c.observe(Observation::Sent { run: *run, outcome });
        }
    }
    for rec in journal {
        c.observe(Observation::Line(rec));
    }
    c.finish(horizon, probes)
}

/// The checker as the journal streams: told each thing seen (`observe`, in the order
/// `Observation` states), then `finish` at the end. It keeps
/// no journal: per job, its epochs with the ranges backfilled in each, the ledger entries
/// (S1, B1 and L1 judge them against the oracle at the end) and the latest start of each
/// covered due time (S2); per run, only while it is open, its start and its reported
/// results (S3, L3); a bit per run settled and per run lost (S3, S5).
pub struct Checker {
    facts: BTreeMap<JobName, JobFacts>,
    /// W1: the line each effect renders to (one buffer, reused), and how many lines of
    /// each kind went by (`logs.rs`).
    log_buf: String,
    log_seen: Vec<(u64, u32)>,
    tracks: Vec<Track>,
    /// Each name's current registration (an index into `tracks`), in first-seen order.
    current: Vec<usize>,
    last_hit: Option<usize>,
    open: RunMap<OpenRun>,
    /// Starts that can no longer end (their run was started again, or settled under another
    /// job's name): only L3 looks at them.
    stranded: Vec<Start>,
    starts: u64,
    settled: RunSet,
    lost: RunSet,
    /// Why each started run's due times were late, as its `Start` told the host
    /// (`Start::late`), until the ledger entry that settles them says (N1).
    told_late: RunMap<Option<MissCause>>,
    /// Runs parked awaiting approval and not yet settled (P2).
    parked: RunMap<Parked>,
    /// The latest wall time any record was written at.
    latest: Option<i64>,
    violations: Vec<Violation>,
    /// How often each probe was reached (counted at almost every step: an array add).
    probes: ProbeCounts,
    /// The store runs `single_owner` coordination: O1 is held.
    single_owner: bool,
    /// The run of the latest `settled` line, and whether it settled `skipped`.
    last_settled: Option<(RunId, bool)>,
    /// The owner lease as the core's `Owner` and `OwnerReleased` effects told it, in the
    /// store's order: its holder (`None` once released) and the highest owner fence told.
    owner: Option<ProcessId>,
    owner_fence: Option<Fence>,
    /// The lease was last released by a drain (and not taken since).
    released: bool,
    /// When the owner lease was last taken (its `until` less the TTL) and the TTL (O2).
    owner_taken: Option<i64>,
    lease_ttl_ms: i64,
    /// Runs a result with their current fence was delivered for in this step (R1), and
    /// whether that result parks.
    to_settle: Vec<(RunId, bool)>,
    /// A result delivered in this step for an open run under a fence it no longer holds
    /// (S3: it must settle nothing).
    stale_delivered: Option<(RunId, Fence)>,
    /// Its `stale_result` line was read.
    stale_told: bool,
    /// The open runs by the journal: run, holder (moved by adoption), track (D1).
    holders: Vec<(RunId, ProcessId, usize)>,
    /// The processes told `Drained` (D1: once each).
    drained: Vec<ProcessId>,
    /// The processes a committed step asked to drain (D1: they start nothing more).
    draining: std::collections::BTreeSet<ProcessId>,
    /// The step being fed is a definition or a confirmation (whose definition may carry
    /// another catch-up window than the job's facts: a mistake at a bound, set back).
    defining: bool,
    lanes: Concurrency,
    /// Steps seen by `views` (V1 looks every `VIEW_EVERY`th).
    view_steps: u64,
    /// J1's clock.
    journal_time: journal_time::JournalTime,
    /// Tracks whose line has a failure this step may still retry (N1: see `step_done`).
    line_dirty: Vec<usize>,
    /// Each open run's lease by the checker's rule (K1, L3).
    leases: lease::Leases,
    /// At a process's start, what the store may forget (D2).
    forgetting: Option<forgotten::Forgetting>,
    /// Tracks of `catch_up_once` jobs whose ledger skipped due times as late this step
    /// (M2: see `caught_up_newest`).
    skipped_late: Vec<usize>,
    /// U1: the tracks that were ever defined as one-shots, ascending (the only ones whose
    /// end `one_shot_ends_shown` compares, walked without the others).
    one_shots: BTreeSet<usize>,
    /// Retries a person's pause handed to `catch_up_once`, older than the job's window:
    /// the track, the cover's last due time, and how many entries it had (M1: see
    /// `window_at_pause`).
    given_up_at_pause: Vec<(usize, i64, usize)>,
    /// The step's system pauses and the alerts that told them (A3).
    pauses_told: pause_told::PausesTold,
    /// The process whose event (or result) the step is (C3: whose cap a wait is for).
    stepper: Option<ProcessId>,
    /// Runs whose stall was noticed (A2: their wake is no longer owed).
    stalls_noticed: RunSet,
    /// The run and fence of the `Adopt` being stepped (K1: only the fence the run holds
    /// adopts it).
    adopting: Option<(RunId, Fence)>,
    /// Whether the checker is told the events behind the journal (`Observation::Stepping`),
    /// not the journal alone, as a host's end-to-end test tells it: a record's event is
    /// judged against it only then (K1's adoption fence).
    events_seen: bool,
    /// The run the journal just recorded lost, and whether its job is paused for it (not
    /// safe to repeat, and the run covered due times): what its alert must say (A1).
    lost_told: Option<(RunId, bool)>,
    /// The failures settled in the step being fed (R4).
    retries: retries::Retries,
    timeouts: timeouts::Timeouts,
    /// The store's grace in ms (G1), when its config is known.
    grace_ms: Option<i64>,
    /// F1 holds: no process of this world crashes, stalls or loses its store (`live.rs`).
    live_hosts: bool,
    /// People's commands and their replies (R3, H2).
    replies: replies::Replies,
    /// Jobs that wait for others (Y1).
    chains: chains::Chains,
}

/// How often V1 compares the views with the journal: every so many steps (a view of every
/// job at every step would double the simulator's cost).
const VIEW_EVERY: u64 = 64;

impl Checker {
    pub fn new(facts: BTreeMap<JobName, JobFacts>) -> Checker {
        let mut widths: BTreeMap<String, u32> = BTreeMap::new();
        for f in facts.values() {
            if let Some(k) = &f.concurrency_key {
                let w = f.concurrency_limit.unwrap_or(1);
                let e = widths.entry(k.clone()).or_insert(w);
                *e = (*e).min(w);
            }
        }
        Checker {
            lanes: Concurrency {
                widths,
                ..Concurrency::default()
            },
            chains: chains::Chains::new(&facts),
            facts,
            log_buf: String::new(),
            log_seen: Vec::new(),
            tracks: Vec::new(),
            current: Vec::new(),
            last_hit: None,
            open: RunMap::default(),
            stranded: Vec::new(),
            starts: 0,
            settled: RunSet::default(),
            lost: RunSet::default(),
            told_late: RunMap::default(),
            parked: RunMap::default(),
            latest: None,
            violations: Vec::new(),
            probes: ProbeCounts::default(),
            single_owner: false,
            last_settled: None,
            owner: None,
            owner_fence: None,
            released: false,
            owner_taken: None,
            lease_ttl_ms: 0,
            to_settle: Vec::new(),
            stale_delivered: None,
            stale_told: false,
            holders: Vec::new(),
            drained: Vec::new(),
            draining: std::collections::BTreeSet::new(),
            defining: false,
            view_steps: 0,
            journal_time: Default::default(),
            line_dirty: Vec::new(),
            leases: Default::default(),
            forgetting: None,
            skipped_late: Vec::new(),
            one_shots: BTreeSet::new(),
            given_up_at_pause: Vec::new(),
            pauses_told: Default::default(),
            stepper: None,
            adopting: None,
            stalls_noticed: RunSet::default(),
            events_seen: false,
            lost_told: None,
            retries: Default::default(),
            timeouts: Default::default(),
            grace_ms: None,
            live_hosts: false,
            replies: replies::Replies::default(),
        }
    }

    /// Holds O1 from now on: the store runs `single_owner` coordination, and the caller
    /// tells every owner effect in the store's order (`Checker::for_store`).
    fn hold_single_owner(&mut self, lease_ttl_ms: i64) {
        self.single_owner = true;
        self.lease_ttl_ms = lease_ttl_ms;
    }

    /// An effect about processes rather than jobs (others are ignored): the owner lease's
    /// changes (O1: owner fences only grow; the starts that follow are held to the holder
    /// told here) and drains (D1: a process is told `Drained` once, and only when the
    /// journal shows it holding no open run).
    fn coordination(&mut self, effect: &Effect) {
        match effect {
            Effect::Notice(Notice::Drained { process }) => self.drained_told(*process),
            Effect::Notice(Notice::Owner {
                process,
                fence,
                from,
                until,
            }) => self.owner_lease_taken(*process, *fence, *from, *until),
            Effect::Notice(Notice::OwnerReleased { process, .. })
                if self.owner == Some(*process) =>
            {
                self.owner = None;
                self.released = true;
            }
            Effect::Notice(Notice::ClockGap {
                kind: ClockGapKind::ReleasedBehind,
                by,
                process,
                ..
            }) => self.store_clock_back(*process, *by),
            Effect::Notice(Notice::ClockGap {
                kind: ClockGapKind::HeldAhead,
                process,
                ..
            }) => self.leases_moved(ClockGapKind::HeldAhead, *process, 0),
            Effect::Notice(Notice::ClockGap {
                kind: ClockGapKind::Released,
                process,
                ..
            }) => {
                // Its runs keep the age it measured, on a time base moved by its lead.
                self.leases_moved(ClockGapKind::Released, *process, 0);
                self.timeouts_released(*process);
                for &(_, holder, idx) in &self.holders {
                    if holder == *process {
                        self.tracks[idx].seen.age_unknown();
                    }
                }
            }
            _ => {}
        }
    }

    /// D1: a process is told `Drained` once, and only when it holds no open run.
    fn drained_told(&mut self, process: ProcessId) {
        if self.drained.contains(&process) {
            self.violation_of(
                Invariant::D1,
                "(drain)".to_string(),
                format!("{process} told drained twice"),
            );
        }
        self.drained.push(process);
        if let Some(&(run, _, idx)) = self.holders.iter().find(|(_, p, _)| *p == process) {
            let job = self.tracks[idx].name.clone();
            self.violation(
                Invariant::D1,
                &job,
                format!("{process} told drained while it holds the open {run}"),
            );
        }
    }

    /// O1 and O2 at an owner lease's taking: its fence grows, and it is not taken again
    /// within a lease of its last taking.
    fn owner_lease_taken(
        &mut self,
        process: ProcessId,
        fence: Fence,
        from: Option<ProcessId>,
        until: duetime::Timestamp,
    ) {
        // O2: a lease lasts its TTL from its taking unless it is renewed, so it is
        // never taken again within a TTL of being taken (a renewal keeps its fence).
        let taken = until.as_millis() - self.lease_ttl_ms;
        if self
            .owner_taken
            .is_some_and(|t| from.is_some() && taken - t < self.lease_ttl_ms)
        {
            let detail = format!(
                "{process} took the owner lease with {fence} within a lease of its last taking"
            );
            self.violation_of(Invariant::O2, "(owner lease)".to_string(), detail);
        }
        self.owner_taken = Some(taken);
        if self.owner_fence.is_some_and(|f| fence <= f) {
            let detail = format!(
                "{process} took the owner lease with {fence}, not above the {} told before",
                self.owner_fence.expect("checked above")
            );
            self.violation_of(Invariant::O1, "(owner lease)".to_string(), detail);
        }
        match from {
            Some(p) if p == process => self.probe(Probe::OwnerLeaseTakenBackAfterItLapsed),
            Some(_) => self.probe(Probe::OwnerLeaseTakenOverAfterItLapsed),
            None if self.released => self.probe(Probe::DrainHandedTheLeaseOver),
            None => {}
        }
        self.owner = Some(process);
        self.owner_fence = Some(fence);
        self.released = false;
    }

    /// The store's clock went back `by`, and the instants measured on it with it: the
    /// owner lease's taking, quota holds' and approval windows' ends, leases. (Every
    /// parked run alike: no order of the map reaches a verdict.)
    fn store_clock_back(&mut self, process: ProcessId, by: duetime::Duration) {
        // The store's clock went back `by`, and the instants measured on it with
        // it: the owner lease's taking, quota holds' and approval windows' ends,
        // leases. (Every parked run alike: no order of the map reaches a verdict.)
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.leases_moved(ClockGapKind::ReleasedBehind, process, by);
        self.timeouts_back(by);
        self.owner_taken = self.owner_taken.map(|t| t.saturating_sub(by));
        for t in &mut self.tracks {
            t.held_until = t.held_until.map(|h| h.saturating_sub(by));
        }
        for p in self.parked.values_mut() {
            p.until = p.until.saturating_sub(by);
        }
        for t in &mut self.tracks {
            t.seen.clock_back(by);
        }
        self.journal_time_back(by);
    }

    /// R1, with `step_done`: a result the world delivers for a run the journal shows open
    /// under that very fence must settle it (or park it) in its step: a current result is
    /// never taken for a stale one. (A parked run asked to park again is a repeat.)
    fn delivered(&mut self, run: RunId, fence: Fence, outcome: &Outcome) {
        if self.settled.contains(run) || self.lost.contains(run) {
            return;
        }
        // (A run whose job was removed is closed with it: its result finds nobody.)
        let current = self.open.get(&run).is_some_and(|o| {
            o.fence == Some(fence)
                && o.start
                    .is_some_and(|s| self.tracks[s.track].removed_at.is_none())
        });
        let repeat =
            self.parked.contains_key(&run) && matches!(outcome, Outcome::AwaitingApproval { .. });
        // (A removed job's run is closed with it: its result, stale or not, finds nobody.)
        let stale = self.open.get(&run).is_some_and(|o| {
            o.fence.is_some_and(|f| f != fence)
                && o.start
                    .is_some_and(|s| self.tracks[s.track].removed_at.is_none())
        });
        if stale {
            self.stale_delivered = Some((run, fence));
        }
        if current && !repeat {
            self.to_settle
                .push((run, matches!(outcome, Outcome::AwaitingApproval { .. })));
        }
    }

    /// The end of a step: every result `delivered` for it has settled or parked its run;
    /// a failure no `retry at` followed has no retry waiting (N1).
    fn step_done(&mut self) {
        self.judge_reply();
        self.pauses_judged();
        for idx in std::mem::take(&mut self.line_dirty) {
            self.tracks[idx].line.step_done();
        }
        self.retries_judged();
        if let Some((run, fence)) = self.stale_delivered.take() {
            // S3: a result carrying a fence the run does not hold settles nothing, and
            // the journal says it was refused as stale.
            let told = std::mem::take(&mut self.stale_told);
            if self.settled.contains(run) {
                let detail = format!("{run} was settled by a result carrying the stale {fence}");
                self.violation_of(Invariant::S3, String::new(), detail);
            } else if !told {
                let detail =
                    format!("{run}'s result carrying the stale {fence} was not told stale");
                self.violation_of(Invariant::S3, String::new(), detail);
            } else {
                self.probe(Probe::ResultWithAStaleFenceSettledNothing);
            }
        }
        for (run, parks) in std::mem::take(&mut self.to_settle) {
            let settled = self.settled.contains(run) || self.lost.contains(run);
            let parked = parks && self.parked.contains_key(&run);
            if settled || parked {
                self.probe(Probe::CurrentResultSettledItsRun);
                continue;
            }
            let job = self
                .open
                .get(&run)
                .and_then(|o| o.start)
                .map_or_else(String::new, |s| self.tracks[s.track].name.to_string());
            self.violation_of(
                Invariant::R1,
                job,
                format!(
                    "{run} was reported with its current fence and is still open after the step"
                ),
            );
        }
    }

    /// R2: a retry covers exactly what the run that failed before it covered.
    fn retry_covers(
        &mut self,
        idx: usize,
        rec: &Record,
        run: RunId,
        covers: Option<&duetime::Covers>,
        trigger: duetime::Trigger,
    ) {
        if trigger != duetime::Trigger::Retry {
            return;
        }
        match self.tracks[idx].last_failed {
            Some((_, failed)) if covers == Some(&failed) => {
                self.probe(Probe::RetryCoveredWhatFailed)
            }
            last => {
                let detail = format!(
                    "{run} retried {} but the run that failed before it covered {}",
                    covers.map_or("nothing".to_string(), |c| c.to_string()),
                    last.map_or("nothing (no run failed)".to_string(), |(r, c)| format!(
                        "{c} ({r})"
                    ))
                );
                self.violation(Invariant::R2, &rec.job, detail);
            }
        }
    }

    /// The event of the step whose effects come next, and the state it is about to step
    /// (R3 reads a job's definitions from it before an `Upsert`).
    fn stepping(&mut self, event: &duetime::Event, state: &duetime::State, now: duetime::Now) {
        self.asking(event, state);
        self.events_seen = true;
        use duetime::Event as E;
        self.stepper = match event {
            E::Tick { process, .. }
            | E::ProcessStarted { process }
            | E::ProcessDraining { process }
            | E::Adopt { process, .. }
            | E::RunFinished { process, .. } => Some(*process),
            _ => None,
        };
        if let E::ProcessDraining { process } = event {
            self.draining.insert(*process);
        }
        self.lost_told = None;
        self.adopting = match event {
            E::Adopt { run, fence, .. } => Some((*run, *fence)),
            _ => None,
        };
        self.defining = matches!(event, E::Upsert { .. } | E::Confirm { .. });
        self.lanes.ticked = match event {
            E::Tick { process, .. } => Some(*process),
            _ => None,
        };
        self.forgetting(event, state);
        self.leases_stepping(event, state);
        self.journal_time_stepping(event, state, now);
    }

    /// The state's `max_runs_per_process` (C2).
    fn set_cap(&mut self, cap: Option<u32>) {
        self.lanes.cap = cap;
    }

    /// What the checker knows of the jobs besides the journal.
    pub fn facts(&self) -> &BTreeMap<JobName, JobFacts> {
        &self.facts
    }

    /// A result a process sent for `run` (its settlement must be one of them). Results
    /// for a run already settled are not kept: a second settlement is an S5 violation
    /// whatever it says.
    fn reported(&mut self, run: RunId, outcome: &Outcome) {
        if self.settled.contains(run) {
            return;
        }
        let o = self.open.entry(run).or_default();
        if o.reported.is_none() {
            o.reported = Some(outcome.clone());
        } else if !o.reported().any(|r| r == outcome) {
            o.more.push(outcome.clone());
        }
    }

    fn probe(&mut self, probe: Probe) {
        self.probes.add(probe, 1);
    }

    fn probe_n(&mut self, probe: Probe, n: u64) {
        self.probes.add(probe, n);
    }

    /// `Observation::WorldSaw`: a liveness finding under "(world)", never shrunk.
    fn world_saw(&mut self, inv: Invariant, detail: String) {
        self.violations.push(Violation {
            invariant: inv,
            job: "(world)".to_string(),
            detail,
            liveness: true,
        });
    }

    /// A broken promise; a liveness one when its id is an `L`.
    fn violation(&mut self, inv: Invariant, job: &JobName, detail: String) {
        self.violation_of(inv, job.to_string(), detail);
    }

    /// `violation` for what is not one job (a drain, the owner lease).
    fn violation_of(&mut self, inv: Invariant, job: String, detail: String) {
        self.violations.push(Violation {
            invariant: inv,
            job,
            detail,
            liveness: inv.is_liveness(),
        });
    }

    /// A broken promise that is a forbidden act whatever its id (a `required` job's skip
    /// under `L2`): it shows in any prefix of the world, so it is shrunk like safety.
    fn forbidden(&mut self, inv: Invariant, job: &JobName, detail: String) {
        self.violation(inv, job, detail);
        if let Some(v) = self.violations.last_mut() {
            v.liveness = false;
        }
    }

    /// The current registration of `job`, made on first sight. The core hands out clones
    /// of one name, so names are compared by address first; a name found by its text (the
    /// state was deserialized since) is kept as the one to compare with next time.
    fn track_of(&mut self, job: &JobName) -> usize {
        let same = |t: &Track| std::ptr::eq(t.name.as_str(), job.as_str());
        if let Some(i) = self.last_hit {
            if same(&self.tracks[i]) {
                return i;
            }
        }
        let tracks = &self.tracks;
        let found = match self.current.iter().find(|&&i| same(&tracks[i])) {
            Some(&i) => Some(i),
            None => {
                let by_text = self
                    .current
                    .iter()
                    .find(|&&i| tracks[i].name.as_str() == job.as_str())
                    .copied();
                if let Some(i) = by_text {
                    self.tracks[i].name = job.clone();
                }
                by_text
            }
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.tracks.push(Track::new(job.clone(), 0, &self.facts));
                let i = self.tracks.len() - 1;
                self.current.push(i);
                i
            }
        };
        self.last_hit = Some(i);
        i
    }

    /// An alert the core told (A1: a job tells each kind of incident once until a success
    /// or a person's resume ends it). The kinds are named here, not by the core.
    fn alert(&mut self, alert: &Alert) {
        // The checker's own grouping, not `AlertKind::incident`: a core that grouped two
        // kinds as one incident would hide the second alert, and A1 must see that.
        let kind = match alert.kind {
            AlertKind::FailedOut { .. } => Incident::FailedOut,
            AlertKind::PausedBySystem { .. } => Incident::PausedBySystem,
            AlertKind::RunLost { .. } => Incident::RunLost,
            AlertKind::Stalled { .. } => Incident::Stalled,
            AlertKind::PendingConfirmation { .. } => Incident::PendingConfirmation,
            AlertKind::ApprovalExpired { .. } => Incident::ApprovalExpired,
            AlertKind::NoSuccess { .. } => Incident::NoSuccess,
        };
        self.stall_told(&alert.kind);
        let idx = self.track_of(&alert.job);
        self.pause_alert(idx, &alert.kind);
        if let AlertKind::NoSuccess { since, within } = alert.kind {
            self.no_success(idx, alert, since.as_millis(), within.as_millis() as i64);
        }
        if let AlertKind::RunLost { run, paused } = alert.kind {
            self.loss_told(alert, run, paused);
        }
        let at = alert.at.as_millis();
        let t = &mut self.tracks[idx];
        if let (Some(throttle), Some(last)) = (t.alert_throttle, t.last_alert) {
            if at < last.saturating_add(throttle) {
                // T1: a job with a throttle tells at most one alert per throttle.
                self.violation(
                    Invariant::T1,
                    &alert.job,
                    format!(
                        "\"{kind}\" told at {} within the throttle of the alert at {last}",
                        alert.at
                    ),
                );
            }
        }
        self.tracks[idx].last_alert = Some(at);
        if self.tracks[idx].told.contains(&kind) {
            self.violation(
                Invariant::A1,
                &alert.job,
                format!(
                    "\"{kind}\" told again at {} with no success or resume since",
                    alert.at
                ),
            );
        } else {
            self.tracks[idx].told.push(kind);
        }
    }

    /// T1's other side: an alert is held back only within its job's throttle, counted from
    /// the last alert the job told (one at the throttle's very end is told).
    fn held_by_throttle(&mut self, idx: usize, rec: &Record) {
        let t = &self.tracks[idx];
        let at = rec.at.as_millis();
        let within = match (t.alert_throttle, t.last_alert) {
            (Some(throttle), Some(last)) => at < last.saturating_add(throttle),
            _ => false,
        };
        if within {
            self.probe(Probe::AlertHeldByTheThrottle);
            return;
        }
        let detail = match t.last_alert {
            Some(last) => format!(
                "an alert held at {} though the job's last was told at {}, a throttle ago or more",
                rec.at,
                ts(last)
            ),
            None => format!("an alert held at {} though the job had told none", rec.at),
        };
        self.violation(Invariant::T1, &rec.job, detail);
    }

    /// A1, what a loss's alert tells: the job paused exactly when it is not safe to repeat
    /// and the run covered due times (else it runs them again, or the run was a manual
    /// one), as the `lost` line of the same step says of the run. (An alert told later, one
    /// a throttle held, is judged by A1's count alone.)
    fn loss_told(&mut self, alert: &Alert, run: RunId, paused: bool) {
        let Some((_, expected)) = self.lost_told.take().filter(|(lost, _)| *lost == run) else {
            return;
        };
        if expected == paused {
            self.probe(Probe::LostRunsAlertTellsThePauseAsItIs);
            return;
        }
        let not = if expected { "" } else { "not " };
        let detail =
            format!("{run} lost told with paused {paused}, though the job is {not}paused for it");
        self.violation(Invariant::A1, &alert.job, detail);
    }

    /// E1: a `no_success` alert is the switch of a job that has one, told at the end of
    /// the silence the journal shows.
    fn no_success(&mut self, idx: usize, alert: &Alert, since: i64, within: i64) {
        let wrong = match self.tracks[idx].silence.as_mut() {
            None => Some("no_success told by a job that expects no success".to_string()),
            Some(s) => s.told(alert.at.as_millis(), since, within),
        };
        match wrong {
            Some(detail) => self.violation(Invariant::E1, &alert.job, detail),
            None => self.probe(Probe::NoSuccessToldByTheDeadMansSwitch),
        }
    }

    /// A success: the silence restarts (E1) and the incidents end (A1).
    fn succeeded(&mut self, idx: usize, at: i64) {
        let t = &mut self.tracks[idx];
        t.told.clear();
        let Some(s) = t.silence.as_mut() else {
            return;
        };
        let was_told = s.is_told();
        s.succeeded(at);
        if was_told {
            self.probe(Probe::SuccessAfterANoSuccessAlert);
        }
    }

    /// One journal record, in journal order.
    fn record(&mut self, rec: &Record) {
        let at = rec.at.as_millis();
        self.latest = Some(self.latest.map_or(at, |l| l.max(at)));
        let mut idx = self.track_of(&rec.job);
        if matches!(
            rec.entry,
            Entry::History(History::Defined { .. } | History::PendingConfirmation { .. })
        ) && self.tracks[idx].removed_at.is_some()
        {
            // Defined again after removal (or held for confirmation, before its first
            // definition): a new registration.
            let reg = self.tracks[idx].registration + 1;
            self.tracks
                .push(Track::new(rec.job.clone(), reg, &self.facts));
            let new = self.tracks.len() - 1;
            if let Some(c) = self.current.iter_mut().find(|c| **c == idx) {
                *c = new;
            }
            idx = new;
            self.last_hit = Some(idx);
        }
        self.lease_record(rec);
        self.one_shot_end(idx, rec);
        self.tracks[idx].seen.record(rec);
        self.note_said(idx, rec);
        self.journal_time(rec);
        self.live_record(rec);
        match &rec.entry {
            Entry::History(h) => self.history(idx, rec, h),
            Entry::Ledger(e) => self.ledger(idx, rec, e),
        }
        self.chain_record(idx, rec);
    }

    /// U1: the entry that settled a one-shot's instant is followed by its end line,
    /// `completed` when a run settled it (that run), `expired` when it was recorded missed
    /// (that cause); a new definition or a removal in the same step supersedes it.
    fn one_shot_end(&mut self, idx: usize, rec: &Record) {
        let Some(os) = self.tracks[idx].one_shot else {
            return;
        };
        let Entry::History(h) = &rec.entry else {
            if let Some(kind) = os.end_owed {
                self.violation(
                    Invariant::U1,
                    &rec.job,
                    format!("the entry settling its instant ({kind}) has no end line after it"),
                );
                self.tracks[idx].one_shot.as_mut().expect("some").end_owed = None;
            }
            return;
        };
        let is_end = matches!(h, History::Completed { .. } | History::Expired { .. });
        let detail = match (os.end_owed, h) {
            (_, _) if is_end && os.ended => Some(format!("ended twice: {h}")),
            (None, _) if is_end => Some(format!("{h} before its instant was settled")),
            (Some(kind), History::Completed { run }) => match kind {
                LedgerKind::Ran { run: r, .. }
                | LedgerKind::FailedOut { run: r }
                | LedgerKind::Lost { run: r }
                | LedgerKind::ApprovalExpired { run: r }
                | LedgerKind::Missed {
                    action: MissAction::CaughtUp { run: r },
                    ..
                } if r == *run => None,
                _ => Some(format!("{h} after the entry {kind}")),
            },
            (Some(kind), History::Expired { cause }) => match kind {
                LedgerKind::Missed {
                    cause: c,
                    action: MissAction::Skipped,
                } if c == *cause => None,
                _ => Some(format!("{h} after the entry {kind}")),
            },
            (Some(_), History::Defined { .. } | History::Removed { .. }) => None,
            (Some(kind), _) => Some(format!(
                "the entry settling its instant ({kind}) is followed by {h}, not its end line"
            )),
            (None, _) => None,
        };
        let os = self.tracks[idx].one_shot.as_mut().expect("some");
        if is_end {
            os.ended = true;
            os.end_owed = None;
            os.end = one_shot::end_told(h, rec.at);
        } else if os.end_owed.is_some() {
            os.end_owed = None;
        }
        if is_end {
            self.probe(if matches!(h, History::Completed { .. }) {
                Probe::OneShotCompleted
            } else {
                Probe::OneShotExpired
            });
        }
        if let Some(detail) = detail {
            self.violation(Invariant::U1, &rec.job, detail);
        }
    }

    /// H1: a job that requires confirmation takes a definition (`defined`, `updated`)
    /// only right after a `confirmed` line: a change of any field, the host's command
    /// included, that is applied without one broke the hold.
    fn applied_only_by_confirmation(&mut self, idx: usize, rec: &Record, line: &str) {
        let t = &mut self.tracks[idx];
        let confirmed = std::mem::take(&mut t.confirmed);
        if t.requires_confirmation && !confirmed {
            self.violation(
                Invariant::H1,
                &rec.job,
                format!(
                    "a definition was applied at {} ({line}) without a confirmation",
                    rec.at
                ),
            );
        }
    }

    /// B1: an accepted backfill reaches no due time the job's schedule in force accounts
    /// already (it ends before the accounted start: the definition instant, moved back by
    /// each earlier backfill) and none an earlier start still holds open. Its due times are
    /// its schedule's own: earlier starts of another schedule at those instants, ended,
    /// no longer bear on them (S2). `judge` holds the range to the oracle and to being
    /// accounted exactly once.
    fn backfill(&mut self, idx: usize, rec: &Record, from: i64, to: i64, count: u64) {
        self.probe(Probe::BackfillAccepted);
        let t = &self.tracks[idx];
        let detail = match t.epochs.last() {
            _ if t.removed_at.is_some() => Some("accepted after the job was removed".into()),
            None => Some("accepted with no definition in force".into()),
            Some(_) if from > to || count == 0 => Some(format!(
                "of {count} due times from {} to {}",
                ts(from),
                ts(to)
            )),
            Some(e) if to >= e.accounted_start() => Some(format!(
                "of {}..{} reaches into the span accounted from {}",
                ts(from),
                ts(to),
                ts(e.accounted_start())
            )),
            Some(_) => None,
        };
        let t = &mut self.tracks[idx];
        let after = t.entries.len();
        let range = Backfill {
            from,
            to,
            count,
            after,
        };
        if let Some(detail) = detail {
            // Kept all the same (when there is a schedule to keep it with), so its entries
            // are judged as its own.
            if let Some(e) = t.epochs.last_mut() {
                e.backfills.push(range);
                t.backfilled = true;
                t.line.backfill(from, to);
            }
            self.violation(Invariant::B1, &rec.job, format!("backfill {detail}"));
            return;
        }
        let lo = t.covers.partition_point(|c| c.to < from);
        let hi = t.covers.partition_point(|c| c.from <= to);
        let mut kept = Vec::with_capacity(hi - lo + 2);
        let mut open = Vec::new();
        let earlier = hi > lo;
        for c in &t.covers[lo..hi] {
            if c.end.is_none() {
                open.push(c.run);
                kept.push(*c);
                continue;
            }
            if c.from < from {
                kept.push(Cover { to: from - 1, ..*c });
            }
            if c.to > to {
                kept.push(Cover { from: to + 1, ..*c });
            }
        }
        t.covers.splice(lo..hi, kept);
        t.epochs
            .last_mut()
            .expect("checked above")
            .backfills
            .push(range);
        t.backfilled = true;
        t.line.backfill(from, to);
        if earlier {
            self.probe(Probe::BackfillOverAnEarlierSchedulesRuns);
        }
        for run in open {
            self.violation(
                Invariant::B1,
                &rec.job,
                format!(
                    "backfill of {}..{} reaches due times {run} still holds open",
                    ts(from),
                    ts(to)
                ),
            );
        }
    }

    /// C1: a run starts only while its key has fewer runs open than the lane is wide; C2:
    /// only while its process holds fewer than the cap. H1: a job never confirmed starts
    /// nothing.
    fn concurrency(&mut self, idx: usize, rec: &Record, run: RunId, process: duetime::ProcessId) {
        if self.tracks[idx].epochs.is_empty() && self.tracks[idx].held.is_some() {
            self.violation(
                Invariant::H1,
                &rec.job,
                format!("{run} started before the job's definition was confirmed"),
            );
        }
        let key = self.key_in_force(idx);
        if let Some(k) = &key {
            let open = self.lanes.per_key.get(k).copied().unwrap_or(0);
            let width = self.lanes.widths.get(k).copied().unwrap_or(1);
            if open >= width {
                self.violation(
                    Invariant::C1,
                    &rec.job,
                    format!("{run} started at {} while {open} runs of key {k} were open (width {width})", rec.at),
                );
            }
            *self.lanes.per_key.entry(k.clone()).or_insert(0) += 1;
        }
        let held = self.lanes.per_process.get(&process).copied().unwrap_or(0);
        if let Some(cap) = self.lanes.cap.filter(|cap| held >= *cap) {
            self.violation(
                Invariant::C2,
                &rec.job,
                format!(
                    "{run} started at {} on {process}, which held {held} runs (cap {cap})",
                    rec.at
                ),
            );
        }
        self.lanes.run_on(process);
        self.lanes.open.insert(run, (key, process, idx));
    }

    /// C3: a job waits for its lane only while the lane is full by the checker's count (or
    /// another job of its key waits ahead of it), and for the process cap only while the
    /// stepping process holds the cap (or, keyless, another keyless job waits ahead).
    fn wait_for_room(&mut self, idx: usize, rec: &Record, reason: duetime::WaitReason) {
        let key = self.key_in_force(idx);
        let lanes = &self.lanes;
        let ahead = lanes.waiting.iter().any(|(i, k)| *i != idx && *k == key);
        let wrong = match reason {
            duetime::WaitReason::LaneBusy => match &key {
                None => Some("waited for a lane, though it has no concurrency key".to_string()),
                Some(k) => {
                    let open = lanes.per_key.get(k).copied().unwrap_or(0);
                    let width = lanes.widths.get(k).copied().unwrap_or(1);
                    (open < width && !ahead).then(|| {
                        format!("waited for lane {k} at {} with {open} of its {width} runs open and no job of it waiting", rec.at)
                    })
                }
            },
            duetime::WaitReason::ConcurrencyCap => {
                let process = self.stepper;
                let held = process.map_or(0, |p| lanes.per_process.get(&p).copied().unwrap_or(0));
                let room = lanes.cap.is_none_or(|cap| held < cap);
                (room && !(key.is_none() && ahead) && process.is_some()).then(|| {
                    format!(
                        "waited for the process cap at {} though {} held {held} runs (cap {:?})",
                        rec.at,
                        process.map_or("no process".to_string(), |p| p.to_string()),
                        lanes.cap
                    )
                })
            }
        };
        if !self.lanes.waiting.iter().any(|(i, _)| *i == idx) {
            self.lanes.waiting.push((idx, key));
        }
        match wrong {
            Some(detail) => self.violation(Invariant::C3, &rec.job, detail),
            None => self.probe(Probe::WaitHeldToAFullLaneOrCap),
        }
    }

    /// The run is closed: what the checker held of it goes (a start under another
    /// registration or name stays open for L3, as it never ended).
    fn end_open(&mut self, idx: usize, run: RunId, end: RunEnd) {
        let Some(start) = self.open.remove(&run).and_then(|o| o.start) else {
            return;
        };
        if start.track == idx {
            self.tracks[idx].end_cover(start.cover, run, end);
        } else if start.end.is_none() {
            self.stranded.push(start);
        }
    }

    /// Forgets a parked run; what it was.
    fn unpark(&mut self, run: RunId) -> Option<Parked> {
        let p = self.parked.remove(&run)?;
        let t = &mut self.tracks[p.track];
        t.parked = t.parked.saturating_sub(1);
        Some(p)
    }

    /// A settlement that is not a process's result (an approval, an expiry): S5 and the
    /// run's cover end as the core says.
    fn close(&mut self, idx: usize, rec: &Record, run: RunId, end: RunEnd) {
        if self.settled.insert(run) {
            self.violation(Invariant::S5, &rec.job, format!("{run} settled twice"));
        }
        if self.lost.contains(run) {
            self.violation(
                Invariant::S3,
                &rec.job,
                format!("{run} settled after it was recorded lost"),
            );
        }
        if end == RunEnd::Done {
            self.succeeded(idx, rec.at.as_millis());
            self.tracks[idx].failures_in_a_row = 0;
        }
        self.end_open(idx, run, end);
    }

    /// What a start in the journal is held to, family by family: the rules that say
    /// whether it may start at all (Q1, P1, O1), U1's ended one-shot, the probes of its
    /// trigger, S2 over each part of its cover, then the start is kept for what follows.
    fn started(
        &mut self,
        idx: usize,
        rec: &Record,
        run: RunId,
        covers: Option<&duetime::Covers>,
        trigger: duetime::Trigger,
        process: duetime::ProcessId,
    ) {
        self.start_allowed(idx, rec, run, trigger, process);
        let covers = covers.map(|c| (c.from.as_millis(), c.to.as_millis()));
        // U1: nothing covering a one-shot's instant starts after it ended. (Before that,
        // a start again is the same chain after a failure or a loss, which S2 judges.)
        if let (Some(os), Some((a, b))) = (self.tracks[idx].one_shot, covers) {
            if os.ended && a <= os.instant && os.instant <= b {
                self.violation(
                    Invariant::U1,
                    &rec.job,
                    format!("{run} started its instant after it ended"),
                );
            }
        }
        self.start_probes(idx, rec, trigger, covers);
        let parts = covers.map(|(a, b)| self.tracks[idx].cover_parts(a, b));
        for (a, b) in parts.into_iter().flatten() {
            self.no_cover_twice(idx, rec, run, a, b);
        }
        let start = Start {
            track: idx,
            seq: self.starts,
            run,
            at: rec.at.as_millis(),
            cover: covers,
            end: None,
        };
        self.starts += 1;
        let o = self.open.entry(run).or_default();
        if let Some(old) = o.start.replace(start) {
            // The same run started again: the older start can no longer end.
            if old.end.is_none() {
                self.stranded.push(old);
            }
        }
    }

    /// Q1 (no start inside a quota hold), P1 (no start but a manual one after a streak of
    /// failures with no pause), O1 (only the owner lease's holder starts).
    fn start_allowed(
        &mut self,
        idx: usize,
        rec: &Record,
        run: RunId,
        trigger: duetime::Trigger,
        process: duetime::ProcessId,
    ) {
        let t = &mut self.tracks[idx];
        let crossing =
            trigger == duetime::Trigger::Retry && t.last_process.is_some_and(|p| p != process);
        t.last_process = Some(process);
        let owed = t.pause_owed && trigger != duetime::Trigger::Manual;
        if owed {
            t.pause_owed = false;
        }
        let in_a_row = t.failures_in_a_row;
        if let Some(until) = t.held_until {
            // Q1: a quota hold keeps every run of the job from starting until it is lifted.
            self.violation(
                Invariant::Q1,
                &rec.job,
                format!(
                    "{run} started at {} inside a quota hold until {until}",
                    rec.at
                ),
            );
        } else if std::mem::take(&mut self.tracks[idx].lifted) {
            self.probe(match trigger {
                duetime::Trigger::Retry => Probe::RetryAfterAQuotaHold,
                _ => Probe::StartedAfterAQuotaHold,
            });
        }
        if crossing {
            self.probe(Probe::RetryCrossingARestart);
        }
        if owed {
            // P1: after `pause_after_failures` failed runs in a row the job must be paused
            // before anything but a manual run starts.
            self.violation(
                Invariant::P1,
                &rec.job,
                format!("{run} started after {in_a_row} failed runs in a row, with no pause"),
            );
        }
        if self.single_owner && self.owner != Some(process) {
            // O1: by the store's order, every start is made by the owner lease's holder.
            let owner = self.owner.map_or("nobody".to_string(), |p| p.to_string());
            self.violation(
                Invariant::O1,
                &rec.job,
                format!("{run} started by {process} while the owner lease was {owner}'s"),
            );
        }
    }

    /// The probes a start reaches: its trigger, a jittered or backfilled start.
    fn start_probes(
        &mut self,
        idx: usize,
        rec: &Record,
        trigger: duetime::Trigger,
        covers: Option<(i64, i64)>,
    ) {
        match trigger {
            duetime::Trigger::Repeat => self.probe(Probe::LostRunOfASafeJobRepeated),
            duetime::Trigger::Retry => self.probe(Probe::RetryStarted),
            duetime::Trigger::Manual => self.probe(Probe::ManualRun),
            duetime::Trigger::Buffered => self.probe(Probe::BufferedOverlapRun),
            duetime::Trigger::CatchUp => self.probe(Probe::CatchUpRun),
            duetime::Trigger::Schedule => {
                let jitter = self.tracks[idx].jitter_ms.unwrap_or(0);
                if covers.is_some_and(|(a, _)| jitter > 0 && rec.at.as_millis() - a > 1_000) {
                    self.probe(Probe::JitteredStart);
                }
            }
        }
        if let (true, Some((a, b))) = (self.tracks[idx].backfilled, covers) {
            let backfilled = self.tracks[idx]
                .epochs
                .iter()
                .flat_map(|e| &e.backfills)
                .any(|bf| bf.from <= a && b <= bf.to);
            if backfilled {
                self.probe(Probe::BackfillRan);
            }
        }
    }

    /// S2 for one part `a..=b` of a start's cover (see `Track::cover_parts`), which then
    /// replaces the covers it overlaps.
    fn no_cover_twice(&mut self, idx: usize, rec: &Record, run: RunId, a: i64, b: i64) {
        // S2: every earlier start covering any of these due times must have ended
        // known-failed (or lost, for a job safe to repeat). Covers are kept disjoint:
        // the newest start of any due time replaces the older ones it overlaps, so only
        // the neighbours just before `b` need looking at. A catch-up of backfills a
        // full line merged is judged backfill by backfill, and one merged with its
        // schedule's own due times due time by due time: the instants between them are
        // no due times of theirs.
        let t = &self.tracks[idx];
        let safe = t.safe_to_repeat;
        let hi = match t.covers.last() {
            // Most often the newest cover is the latest.
            Some(c) if c.from <= b => t.covers.len(),
            _ => t.covers.partition_point(|c| c.from <= b),
        };
        let mut lo = hi;
        while lo > 0 && t.covers[lo - 1].to >= a {
            lo -= 1;
        }
        let mut broken = Vec::new();
        for s in t.covers[lo..hi].iter().rev() {
            let ok = match s.end {
                Some(RunEnd::Failed) => true,
                Some(RunEnd::Lost) => safe,
                _ => false,
            };
            if !ok {
                broken.push(format!(
                    "{run} started at {} covering {}..{} while {} (covering {}..{}) had not failed{}",
                    rec.at,
                    ts(a),
                    ts(b),
                    s.run,
                    ts(s.from),
                    ts(s.to),
                    if s.end == Some(RunEnd::Lost) { " (it was lost; the job is not safe to repeat)" } else { "" }
                ));
            }
        }
        for detail in broken {
            self.violation(Invariant::S2, &rec.job, detail);
        }
        let cover = Cover {
            from: a,
            to: b,
            run,
            end: None,
        };
        let t = &mut self.tracks[idx];
        if lo == t.covers.len() {
            t.covers.push(cover);
        } else {
            t.covers.splice(lo..hi, [cover]);
        }
    }

    /// K1, who may adopt: a run moves to an adopting process only when the `Adopt` carries
    /// the fence the run was started with, and never while it is parked (a person, not a
    /// process, holds it then). Fed a journal alone (a host's end-to-end test), the checker
    /// never saw the `Adopt` event, so it judges the parked half only.
    fn adoption_held_to_its_fence(&mut self, job: &JobName, run: RunId) {
        let held = self.open.get(&run).and_then(|o| o.fence);
        let asked = self.adopting.filter(|(r, _)| *r == run).map(|(_, f)| f);
        let detail = if self.events_seen && held.is_some() && asked != held {
            format!("{run} adopted under {asked:?}, though it was started with {held:?}")
        } else if self.parked.contains_key(&run) {
            format!("{run} adopted while parked awaiting approval")
        } else {
            self.probe(Probe::AdoptionUnderTheRunsOwnFence);
            return;
        };
        self.violation(Invariant::K1, job, detail);
    }

    fn settled(&mut self, idx: usize, rec: &Record, run: RunId, outcome: &Outcome) {
        self.lanes.close(run);
        self.last_settled = Some((run, *outcome == Outcome::Skipped));
        if !matches!(outcome, Outcome::Ok | Outcome::Skipped) {
            let covers = self.open.get(&run).and_then(|o| o.covers);
            self.tracks[idx].last_failed = covers.map(|c| (run, c));
        }
        if self.unpark(run).is_some() {
            self.probe(Probe::ParkedRunSettledByItsResult);
        }
        if self.settled.insert(run) {
            self.violation(Invariant::S5, &rec.job, format!("{run} settled twice"));
        } else {
            // S3: a run is settled only by a result reported for that very run (or by the
            // core's own timeout), never by someone else's stale result.
            let sent = self
                .open
                .get(&run)
                .is_some_and(|o| o.reported().any(|o| outcome_matches(o, outcome)));
            if !sent && *outcome != Outcome::TimedOut {
                self.violation(
                    Invariant::S3,
                    &rec.job,
                    format!("{run} settled {outcome} though no such result was reported for it"),
                );
            }
        }
        if self.lost.contains(run) {
            self.violation(
                Invariant::S3,
                &rec.job,
                format!("{run} settled after it was recorded lost"),
            );
        }
        if matches!(outcome, Outcome::Ok | Outcome::Skipped) {
            self.succeeded(idx, rec.at.as_millis());
        }
        let end = if matches!(outcome, Outcome::Ok | Outcome::Skipped) {
            RunEnd::Done
        } else {
            RunEnd::Failed
        };
        if matches!(outcome, Outcome::TimedOut) {
            self.probe(Probe::RunTimedOut);
        }
        self.end_open(idx, run, end);
        // P1: `pause_after_failures` failed runs in a row pause the job (unless it is
        // paused already).
        let t = &mut self.tracks[idx];
        if end == RunEnd::Done {
            t.failures_in_a_row = 0;
        } else {
            t.failures_in_a_row += 1;
            if t.pause_after_failures
                .is_some_and(|n| t.failures_in_a_row >= n)
                && !t.paused
            {
                t.pause_owed = true;
            }
        }
    }

    /// M1 for the catch-up window: due times up to `to` recorded too late for it at
    /// `rec.at` are older than the window then (whatever found them late: a tick, a
    /// pause clearing a retry, a full line giving up its oldest debts).
    fn too_late(&mut self, idx: usize, rec: &Record, to: i64) {
        let window = self
            .facts
            .get(&self.tracks[idx].name)
            .and_then(|f| f.catch_up_window_ms);
        let Some(window) = window.filter(|_| !self.defining) else {
            return;
        };
        let at = rec.at.as_millis();
        if to >= at - window {
            let detail = format!(
                "due times through {} recorded too late at {}, within the catch-up window of {window} ms",
                ts(to),
                rec.at
            );
            self.violation(Invariant::M1, &rec.job, detail);
        } else {
            self.probe(Probe::TooLateOnlyPastTheCatchUpWindow);
        }
    }

    /// G1's other half: a due time is missed as late (no process looked in time, the
    /// machine slept, the clock was set forward) only once its start is older than the
    /// grace, by the time of the step that found it. Held for `skip` jobs, whose late due
    /// times are recorded in the step that finds them: a job that owes keeps a segment's
    /// first cause for what a full line merges into it (an overlap 30 s old under `down`,
    /// swarm 10258), and `catch_up_once` records an owed segment skipped when a newer one
    /// replaces it, later.
    fn late_by_grace(&mut self, idx: usize, rec: &Record, to: i64, cause: MissCause) {
        // (The cause first: most skips are not for lateness, and need no lookup.)
        let late = matches!(
            cause,
            MissCause::Down | MissCause::Asleep | MissCause::ClockForward
        ) && self
            .facts
            .get(&self.tracks[idx].name)
            .is_some_and(|f| f.missed == MissedRule::Skip);
        let Some(grace) = self.grace_ms.filter(|_| late && !self.defining) else {
            return;
        };
        let at = rec.at.as_millis();
        if to.saturating_add(grace) >= at {
            let detail = format!(
                "due times through {} recorded missed ({cause:?}) at {}, within the grace of {grace} ms",
                ts(to),
                rec.at
            );
            self.violation(Invariant::G1, &rec.job, detail);
        } else if to.saturating_add(grace).saturating_add(1_000) >= at {
            self.probe(Probe::MissedAsLateWithinASecondOfTheGrace);
        } else {
            self.probe(Probe::MissedAsLatePastTheGrace);
        }
    }

    /// S1, what the entry says: a run's entry tells whether it reported `skipped` (it
    /// follows the run's `settled` line in the same step).
    fn ran_as_settled(&mut self, rec: &Record, run: RunId, skipped: bool) {
        match self.last_settled {
            Some((r, s)) if r == run && s != skipped => {
                let detail = format!(
                    "{run}'s entry says skipped: {skipped}, but it settled {}",
                    if s { "skipped" } else { "ok" }
                );
                self.violation(Invariant::S1, &rec.job, detail);
            }
            Some((r, true)) if r == run => {
                self.probe(Probe::RunThatFoundNothingToDoRecordedSkipped)
            }
            _ => {}
        }
    }

    /// A ledger entry, family by family: S1's `ran` against its settlement, M2's catch-up,
    /// G1's skips, U1's one-shot end, M1's windows, the probes of its kind, S3 (no entry
    /// for a lost run), then the entry joins the job's ledger and N1's line.
    fn ledger(&mut self, idx: usize, rec: &Record, e: &duetime::LedgerEntry) {
        let (from, to) = (e.from.as_millis(), e.to.as_millis());
        if let LedgerKind::Ran { run, skipped } = e.kind {
            self.ran_as_settled(rec, run, skipped);
        }
        self.late_as_told(rec, e.kind);
        self.catch_up_entry(idx, to, e.kind);
        if let LedgerKind::Missed {
            cause,
            action: MissAction::Skipped,
        } = e.kind
        {
            self.late_by_grace(idx, rec, to, cause);
        }
        self.one_shot_entry(idx, e);
        if matches!(
            e.kind,
            LedgerKind::Missed {
                cause: MissCause::TooLate,
                action: MissAction::Skipped
            }
        ) {
            self.too_late(idx, rec, to);
        }
        self.entry_probes(idx, e);
        self.no_entry_after_loss(rec, e);
        self.backfill_never_given_up(idx, rec, e);
        self.tracks[idx].entries.push((from, to, e.count, e.kind));
        self.tracks[idx].line.account(from, to);
    }

    /// U1: an entry for a one-shot's instant owes the line that ends it.
    fn one_shot_entry(&mut self, idx: usize, e: &duetime::LedgerEntry) {
        let (from, to) = (e.from.as_millis(), e.to.as_millis());
        // A removal or a new definition closes the instant with the job's old life: no end
        // line follows (the removal's other entries or the `defined` line do).
        let superseded = matches!(
            e.kind,
            LedgerKind::Missed {
                cause: MissCause::Removed | MissCause::Rescheduled,
                action: MissAction::Skipped,
            }
        );
        // An instant before the schedule's accounted start is not its due time: an
        // earlier schedule's entry whose range holds it does not settle it.
        let accounted_start = self.tracks[idx]
            .epochs
            .last()
            .map_or(i64::MIN, Epoch::accounted_start);
        if let Some(os) = self.tracks[idx].one_shot.as_mut() {
            if from <= os.instant
                && os.instant <= to
                && os.instant >= accounted_start
                && !os.ended
                && !superseded
            {
                os.end_owed = Some(e.kind);
            }
        }
    }

    /// The probes an entry reaches, by its kind and cause.
    fn entry_probes(&mut self, idx: usize, e: &duetime::LedgerEntry) {
        if self.tracks[idx].parked > 0
            && matches!(
                e.kind,
                LedgerKind::Missed {
                    cause: MissCause::Overlap,
                    action: MissAction::Skipped
                }
            )
        {
            self.probe(Probe::DueTimeSkippedWhileParked);
        }
        match e.kind {
            LedgerKind::Missed { cause, action } => {
                self.probe(match (cause, action) {
                    (MissCause::Overlap, _) => Probe::OverlapRecorded,
                    (MissCause::ClockForward, MissAction::CaughtUp { .. }) => {
                        Probe::CatchUpAfterTheClockWasSetForward
                    }
                    (MissCause::ClockForward, _) => Probe::ClockSetForwardSkippedDueTimes,
                    (MissCause::Asleep, MissAction::CaughtUp { .. }) => Probe::CatchUpAfterSleep,
                    (MissCause::Asleep, _) => Probe::SleepSkippedDueTimes,
                    (MissCause::Down, MissAction::CaughtUp { .. }) => Probe::CatchUpAfterDowntime,
                    (MissCause::Down, _) => Probe::DowntimeSkippedDueTimes,
                    (MissCause::Paused, _) => Probe::PausedDueTimes,
                    (MissCause::TooLate, _) => Probe::TooLateForTheCatchUpWindow,
                    (MissCause::Removed, _) => Probe::RemovedWithDueTimes,
                    (MissCause::Rescheduled, _) => Probe::RescheduledDueTimes,
                    (MissCause::QuotaHold, MissAction::CaughtUp { .. }) => {
                        Probe::CatchUpAfterAQuotaHold
                    }
                    (MissCause::QuotaHold, _) => Probe::QuotaHoldSkippedDueTimes,
                    (MissCause::LaneBusy, _) => Probe::DueTimeWaitedForItsLane,
                    (MissCause::ConcurrencyCap, _) => Probe::DueTimeWaitedForTheProcessCap,
                    (MissCause::Backfill, MissAction::CaughtUp { .. }) => Probe::BackfillCaughtUp,
                    (MissCause::Backfill, _) => Probe::BackfillSkipped,
                    (MissCause::Upstream, MissAction::CaughtUp { .. }) => {
                        Probe::DownstreamRanAfterItsUpstreams
                    }
                    (MissCause::Upstream, _) => Probe::DownstreamSkippedForItsUpstream,
                });
                if e.count >= 1000 {
                    self.probe(Probe::RequiredBatchOf1000);
                }
            }
            LedgerKind::FailedOut { run } => {
                self.probe(Probe::FailedOut);
                self.retry_followed(run, retries::Followed::FailedOut);
            }
            LedgerKind::Lost { .. } => self.probe(Probe::LostRunOfAJobNotSafeToRepeat),
            LedgerKind::Ran { .. } | LedgerKind::ApprovalExpired { .. } => {}
        }
    }

    /// N1: a run's `Start` told the host why its due times were late (`Start::late`, which
    /// a host turns into the trigger its command reads, `backfill` among them): the cause
    /// the entry settling them records, or none for a run on time.
    fn late_as_told(&mut self, rec: &Record, kind: LedgerKind) {
        let (run, recorded) = match kind {
            LedgerKind::Ran { run, .. } => (run, None),
            LedgerKind::Missed {
                cause,
                action: MissAction::CaughtUp { run },
            } => (run, Some(cause)),
            LedgerKind::FailedOut { run }
            | LedgerKind::Lost { run }
            | LedgerKind::ApprovalExpired { run } => {
                self.told_late.remove(&run);
                return;
            }
            LedgerKind::Missed { .. } => return,
        };
        let Some(told) = self.told_late.remove(&run) else {
            return;
        };
        if told == recorded {
            self.probe(Probe::StartToldWhyItsDueTimesWereLate);
            return;
        }
        let detail = format!(
            "{run}'s start told the host its due times were late for {told:?}, where the entry settling them records {recorded:?}"
        );
        self.violation(Invariant::N1, &rec.job, detail);
    }

    /// S3: no entry names a run after it was recorded lost.
    fn no_entry_after_loss(&mut self, rec: &Record, e: &duetime::LedgerEntry) {
        if let LedgerKind::Ran { run, .. }
        | LedgerKind::FailedOut { run }
        | LedgerKind::ApprovalExpired { run }
        | LedgerKind::Missed {
            action: MissAction::CaughtUp { run },
            ..
        } = e.kind
        {
            if self.lost.contains(run) {
                self.violation(
                    Invariant::S3,
                    &rec.job,
                    format!("ledger names {run} after it was recorded lost"),
                );
            }
        }
    }

    /// M1: due times a person's backfill owes are never recorded too late for the
    /// catch-up window.
    fn backfill_never_given_up(&mut self, idx: usize, rec: &Record, e: &duetime::LedgerEntry) {
        let (from, to) = (e.from.as_millis(), e.to.as_millis());
        let given_up = matches!(
            e.kind,
            LedgerKind::Missed {
                cause: MissCause::TooLate,
                ..
            }
        );
        if given_up && self.tracks[idx].line.backfill_owed_in(from, to) {
            let detail = format!(
                "due times {}..{} a person's backfill owes were recorded too late for the catch-up window, which never gives up a backfill",
                ts(from),
                ts(to)
            );
            self.violation(Invariant::M1, &rec.job, detail);
        }
    }

    /// The judgements that need the whole run: S1 against the oracle, L1-L3 at the
    /// horizon. Adds this run's probe counts to `probes`.
    pub fn finish(mut self, horizon: Horizon, probes: &mut Probes) -> Vec<Violation> {
        // Processes whose clocks ran ahead account due times beyond the true end; no entry
        // can lie beyond the latest wall time any record was written at.
        let latest = self.latest.unwrap_or(horizon.end).max(horizon.end);
        // Starts never closed, by registration, in journal order (L3).
        let mut open: Vec<Start> = self
            .open
            .values()
            .filter_map(|o| o.start)
            .chain(self.stranded.iter().copied())
            .filter(|s| s.end.is_none())
            .collect();
        open.sort_by_key(|s| (s.track, s.seq));
        let mut order: Vec<usize> = (0..self.tracks.len()).collect();
        // Judged in (name, registration) order, so violations read in a stable order.
        order.sort_by(|&a, &b| {
            let (a, b) = (&self.tracks[a], &self.tracks[b]);
            (&a.name, a.registration).cmp(&(&b.name, b.registration))
        });
        // P2: a parked run expires by its until; once the world has healed, no parked run
        // is left long past it. U1: no settled instant waits for its end line.
        let mut late: Vec<(RunId, Parked)> = self
            .parked
            .iter()
            .map(|(r, p)| (*r, *p))
            .filter(|(_, p)| p.until < horizon.end - horizon.run_bound)
            .filter(|(_, p)| self.tracks[p.track].removed_at.is_none())
            .collect();
        late.sort_by_key(|(r, _)| *r);
        if horizon.check_liveness {
            for (run, p) in late {
                let name = self.tracks[p.track].name.clone();
                self.violation(
                    Invariant::P2,
                    &name,
                    format!(
                        "{run} still parked at the end {}, its until was {}",
                        ts(horizon.end),
                        ts(p.until)
                    ),
                );
            }
        }
        for i in 0..self.tracks.len() {
            if let Some(kind) = self.tracks[i].one_shot.and_then(|o| o.end_owed) {
                let name = self.tracks[i].name.clone();
                self.violation(
                    Invariant::U1,
                    &name,
                    format!("the entry settling its instant ({kind}) has no end line after it"),
                );
            }
        }
        let held = self.held_by_a_pause();
        let mut tracks = std::mem::take(&mut self.tracks);
        let facts = std::mem::take(&mut self.facts);
        for i in order {
            let Some(f) = facts.get(&tracks[i].name) else {
                continue;
            };
            let t = &mut tracks[i];
            let starts = {
                let lo = open.partition_point(|s| s.track < i);
                let hi = open.partition_point(|s| s.track <= i);
                &open[lo..hi]
            };
            let held = t.removed_at.is_none() && held.contains(&t.name);
            self.judge(t, f, starts, latest, horizon, held);
        }
        self.probes.drain_into(probes);
        self.violations
    }

    /// The jobs that wait (`after`, through any chain) for a job paused at the end: a
    /// paused job has not looked at its due times since its pause (it settles them when
    /// resumed, `missed` deciding), so the same due times of each job waiting for it have
    /// no fate to go by and wait too (`step/after.rs`: the gate is shut while an upstream
    /// still holds a due time); L1 holds them no more than the paused job itself.
    fn held_by_a_pause(&self) -> std::collections::BTreeSet<JobName> {
        let mut held: std::collections::BTreeSet<JobName> = self
            .current
            .iter()
            .map(|&i| &self.tracks[i])
            .filter(|t| t.removed_at.is_none() && t.paused)
            .map(|t| t.name.clone())
            .collect();
        let paused = held.clone();
        loop {
            let more: Vec<JobName> = self
                .facts
                .iter()
                .filter(|(name, f)| {
                    !held.contains(*name) && f.after.iter().any(|u| held.contains(u))
                })
                .map(|(name, _)| name.clone())
                .collect();
            if more.is_empty() {
                break;
            }
            held.extend(more);
        }
        held.retain(|n| !paused.contains(n));
        held
    }

    /// E1's liveness half: a healed world has told every silence that ended a settling
    /// bound before its end (a removed job owes nothing).
    fn judge_silence(&mut self, t: &Track, horizon: Horizon) {
        if !horizon.check_liveness || t.removed_at.is_some() {
            return;
        }
        let throttle_end = t
            .alert_throttle
            .zip(t.last_alert)
            .map(|(th, last)| last + th);
        let bound = horizon.end - horizon.settle_bound;
        if let Some(detail) = t.silence.and_then(|s| s.overdue(throttle_end, bound)) {
            self.violation(Invariant::E1, &t.name, detail);
            if let Some(v) = self.violations.last_mut() {
                v.liveness = true;
            }
        }
    }
}

pub(crate) fn ts(ms: i64) -> duetime::Timestamp {
    duetime::Timestamp::from_millis(ms)
}

/// The core keeps at most 64 characters of a failure's kind.
fn outcome_matches(sent: &Outcome, settled: &Outcome) -> bool {
    match (sent, settled) {
        (
            Outcome::Failed {
                kind: a,
                retry_after: ra,
            },
            Outcome::Failed {
                kind: b,
                retry_after: rb,
            },
        ) => ra == rb && a.chars().take(64).eq(b.chars()),
        _ => sent == settled,
    }
}
