//! `duetime run --http ADDR`: a read-only HTTP server on its own thread. `GET /metrics`
//! (Prometheus), `GET /` (the jobs, ranked as `duetime list` ranks them), `GET /jobs/NAME`
//! (a job's ledger as a timeline), `GET /api/jobs` and `GET /api/jobs/NAME` (exactly what
//! `list --json` and `show --json` print). No command is accepted over HTTP.
//!
//! The thread has its own store handle, opened on the first request (the daemon makes the
//! store first), so a slow scrape never holds the daemon's loop and the daemon's
//! transactions never wait for a page; with SQLite in WAL mode its reads do not block the
//! writer. Requests are answered one at a time: a page is milliseconds.

pub mod expo;
pub mod metrics;
pub mod page;
pub mod query;
pub mod tally;
pub mod timeline;

use std::fmt;
use std::net::SocketAddr;

use duetime::Timestamp;
use tracing::{info, warn};

use crate::store::{self, AnyStore, Options, Store, StoreError};
use crate::telemetry::Telemetry;
use crate::views;
use tally::Tally;

/// Where `--http` listens, checked: loopback unless `--http-public` says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen {
    pub addr: SocketAddr,
}

/// Why the HTTP server cannot start.
#[derive(Debug)]
pub enum HttpError {
    /// An address other machines can reach, without `--http-public`.
    NotLoopback { addr: SocketAddr },
    /// The address could not be bound (in use, not this machine's, no permission).
    Bind { addr: SocketAddr, detail: String },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::NotLoopback { addr } => write!(
                f,
                "--http {addr}: not a loopback address; the page and metrics show every job's \
                 name, schedule and history to whoever can reach it, without authentication. \
                 Accepted: a loopback address such as 127.0.0.1:9464 or [::1]:9464, or add \
                 --http-public to listen on {addr} anyway (behind a firewall or a proxy)"
            ),
            HttpError::Bind { addr, detail } => write!(f, "--http {addr}: cannot listen: {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl Listen {
    /// `addr` if it is loopback, or if `public` allows any.
    pub fn check(addr: SocketAddr, public: bool) -> Result<Listen, HttpError> {
        if addr.ip().is_loopback() || public {
            Ok(Listen { addr })
        } else {
            Err(HttpError::NotLoopback { addr })
        }
    }
}

/// An answer to one request, before it meets the socket (tests and benches read it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Answer {
    fn new(status: u16, content_type: &'static str, body: String) -> Answer {
        Answer {
            status,
            content_type,
            body,
        }
    }
}

/// What the server reads: its own store handle, the journal tally, this process's counters.
pub struct Source {
    location: String,
    /// This machine's run directories, for a failed run's output on its job page.
    runs: Option<std::path::PathBuf>,
    /// The handle, and whether it was opened with the daemon's options (`StoreOptions`).
    store: Option<(AnyStore, bool)>,
    options: StoreOptions,
    tally: Tally,
    telemetry: Telemetry,
}

impl Source {
    pub fn new(location: &str, telemetry: Telemetry) -> Source {
        Source {
            location: location.to_string(),
            runs: None,
            store: None,
            options: StoreOptions::default(),
            tally: Tally::default(),
            telemetry,
        }
    }

    /// Reads failed runs' output from the run directories under `root`.
    pub fn with_runs(mut self, root: std::path::PathBuf) -> Source {
        self.runs = Some(root);
        self
    }

    /// Opens its handles with the options the daemon settles (`StoreOptions::settle`).
    pub fn with_options(mut self, options: StoreOptions) -> Source {
        self.options = options;
        self
    }

    fn store(&mut self) -> Result<&mut AnyStore, StoreError> {
        lazily(&mut self.store, &self.location, &self.options)
    }

    /// Answers `GET path?query`. A store error answers 503 and drops the handle, so the
    /// next request opens a fresh one.
    pub fn get(&mut self, path: &str, query: &str, now: Timestamp) -> Answer {
        match self.route(path, query, now) {
            Ok(a) => a,
            Err(e) => {
                self.store = None;
                Answer::new(503, TEXT, format!("the store cannot be read: {e}\n"))
            }
        }
    }

    fn route(&mut self, path: &str, query: &str, now: Timestamp) -> Result<Answer, StoreError> {
        let json = |v: serde_json::Value| format!("{v:#}\n");
        Ok(match path {
            "/metrics" => Answer::new(200, PROMETHEUS, self.metrics(now)?),
            "/healthz" => self.health()?,
            "/" => {
                let rows = views::all_rows(self.store()?, now)?.rows;
                Answer::new(200, HTML, page::list(&rows, now))
            }
            "/api/jobs" => {
                let rows = views::all_rows(self.store()?, now)?.rows;
                Answer::new(200, JSON, json(views::list_json(&rows, now)))
            }
            _ => {
                if let Some(name) = path.strip_prefix("/api/jobs/") {
                    self.api_job(name, query, now)?
                } else if let Some(name) = path.strip_prefix("/jobs/") {
                    self.job_page(name, query, now)?
                } else {
                    Answer::new(404, TEXT, format!("no page at {}\n", query::cut(path)))
                }
            }
        })
    }

    /// `GET /healthz`: 200 while the daemon turns (its last turn with the store reachable
    /// is recent, `healthy`) and this server reads the store; 503 otherwise (a store error
    /// answers 503 through `get`), with why, as JSON either way.
    fn health(&mut self) -> Result<Answer, StoreError> {
        let tick = self.store()?.state()?.config().tick;
        let me = self.telemetry.snapshot();
        let age = me.last_turn.map(|t| t.elapsed());
        let tick = std::time::Duration::from_millis(tick.as_millis());
        let ok = age.is_some_and(|a| healthy(a, tick));
        let body = serde_json::json!({
            "ok": ok,
            "process": me.process.map(|p| p.to_string()),
            "last_turn_seconds_ago": age.map(|a| a.as_secs_f64()),
            "store": "reachable",
            "why": match age {
                None => Some("the daemon has not turned yet (starting, or waiting for the store)"),
                Some(_) if !ok => Some("the daemon's last turn with the store reachable is too old"),
                Some(_) => None,
            },
        });
        Ok(Answer::new(
            if ok { 200 } else { 503 },
            JSON,
            format!("{body:#}\n"),
        ))
    }

    fn metrics(&mut self, now: Timestamp) -> Result<String, StoreError> {
        let me = self.telemetry.snapshot();
        let store = lazily(&mut self.store, &self.location, &self.options)?;
        self.tally.catch_up(store)?;
        let parts = crate::store::parts::health(store)?;
        let rows = views::all_rows(store, now)?.rows;
        let state = store.state()?;
        let scrape = metrics::Scrape {
            rows: &rows,
            parts: &parts,
        };
        Ok(metrics::render(&self.tally, state, &scrape, &me, now))
    }

    fn api_job(&mut self, name: &str, query: &str, now: Timestamp) -> Result<Answer, StoreError> {
        let days = match query::days(query) {
            Ok(d) => d,
            Err(why) => {
                return Ok(Answer::new(
                    400,
                    JSON,
                    format!(
                        "{:#}\n",
                        crate::json::error(crate::json::ErrorKind::Usage, &why)
                    ),
                ))
            }
        };
        Ok(match views::job_report(self.store()?, name, now, days)? {
            Some(report) => Answer::new(200, JSON, format!("{:#}\n", views::show_json(&report))),
            None => {
                let text = format!("no job named {:?} in the store", query::cut(name));
                Answer::new(
                    404,
                    JSON,
                    format!(
                        "{:#}\n",
                        crate::json::error(crate::json::ErrorKind::NotFound, &text)
                    ),
                )
            }
        })
    }

    fn job_page(&mut self, name: &str, query: &str, now: Timestamp) -> Result<Answer, StoreError> {
        let store = self.store()?;
        let p = crate::store::parts::partition_of(store, name)?;
        let state = store.state_in(p)?;
        let schedule = state
            .seq_of_name(name)
            .and_then(|s| state.record(s))
            .map(|r| r.def().schedule.clone());
        let fitted = timeline::Window::fitted(schedule.as_ref(), now);
        let window = match query::window(query, fitted) {
            Ok(w) => w,
            Err(why) => return Ok(Answer::new(400, TEXT, format!("{why}\n"))),
        };
        match timeline::read(self.store()?, name, window, now)? {
            Some(mut t) => {
                t.failed_output = timeline::FailedOutput::of(&t.row.view, self.runs.as_deref());
                Ok(Answer::new(200, HTML, page::job(&t)))
            }
            None => Ok(Answer::new(404, HTML, page::not_found(name))),
        }
    }
}

/// The store handle, opened on first use.
/// Whether a daemon whose last good turn was `age` ago is alive: it turns at least every
/// second while the store answers, so two ticks (at least a minute) without one is a
/// daemon stuck or cut off from its store.
pub fn healthy(age: std::time::Duration, tick: std::time::Duration) -> bool {
    age <= tick
        .saturating_mul(2)
        .max(std::time::Duration::from_secs(60))
}

/// The options the server opens its store handle with, settled by the daemon once it has
/// opened the store: on PostgreSQL with several partitions they carry the pool its seats
/// share (`--pg-connections`), so the page takes a connection of the pool for each
/// request rather than holding one more of its own. Until they are settled (the server
/// answers before the store is reached), a handle of its own serves and is replaced at
/// the first request after.
#[derive(Clone, Default)]
pub struct StoreOptions(std::sync::Arc<std::sync::OnceLock<Options>>);

impl StoreOptions {
    /// Settles the options (the first settling stands).
    pub fn settle(&self, options: Options) {
        let _ = self.0.set(options);
    }
}

fn lazily<'s>(
    slot: &'s mut Option<(AnyStore, bool)>,
    location: &str,
    options: &StoreOptions,
) -> Result<&'s mut AnyStore, StoreError> {
    let settled = options.0.get();
    if matches!(slot, Some((_, false))) && settled.is_some() {
        *slot = None;
    }
    if slot.is_none() {
        let options = Options {
            create: false,
            ..settled.cloned().unwrap_or_default()
        };
        *slot = Some((store::open(location, options)?, settled.is_some()));
    }
    Ok(&mut slot.as_mut().expect("opened above").0)
}

/// Text from a request or a file as a message may echo it: at most 80 characters.
pub fn cut_text(text: &str) -> String {
    query::cut(text)
}

/// The wall clock, read once per request (never by the core).
fn now() -> Timestamp {
    Timestamp::from_chrono(&chrono::Utc::now())
}

/// Binds `listen` and answers requests on a thread of its own until the process ends.
pub fn serve(
    listen: Listen,
    location: &str,
    runs: std::path::PathBuf,
    telemetry: Telemetry,
    options: StoreOptions,
) -> Result<(), HttpError> {
    let server = tiny_http::Server::http(listen.addr).map_err(|e| HttpError::Bind {
        addr: listen.addr,
        detail: e.to_string(),
    })?;
    info!(addr = %listen.addr, "http: serving /metrics, /, /jobs/NAME, /api/jobs");
    let mut source = Source::new(location, telemetry)
        .with_runs(runs)
        .with_options(options);
    std::thread::Builder::new()
        .name("duetime-http".into())
        .spawn(move || {
            for request in server.incoming_requests() {
                answer(&mut source, request);
            }
        })
        .map_err(|e| HttpError::Bind {
            addr: listen.addr,
            detail: e.to_string(),
        })?;
    Ok(())
}

fn answer(source: &mut Source, request: tiny_http::Request) {
    let url = request.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let answer = match request.method() {
        tiny_http::Method::Get | tiny_http::Method::Head => {
            source.get(&query::decode(path), query, now())
        }
        _ => Answer::new(
            405,
            TEXT,
            "read-only: only GET is answered (no command is accepted over HTTP)\n".into(),
        ),
    };
    let mut response =
        tiny_http::Response::from_string(answer.body).with_status_code(answer.status);
    for (k, v) in [
        ("Content-Type", answer.content_type),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        (
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'",
        ),
    ] {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            response.add_header(h);
        }
    }
    if answer.status == 405 {
        if let Ok(h) = tiny_http::Header::from_bytes(&b"Allow"[..], &b"GET, HEAD"[..]) {
            response.add_header(h);
        }
    }
    if let Err(e) = request.respond(response) {
        warn!("http: answering {}: {e}", query::cut(&url));
    }
}

#[cfg(test)]
mod tests {
    use super::healthy;
    use std::time::Duration;

    #[test]
    fn a_daemon_is_healthy_until_two_ticks_or_a_minute_pass_without_a_turn() {
        let tick = Duration::from_secs(30);
        assert!(healthy(Duration::from_secs(1), tick));
        assert!(healthy(Duration::from_secs(60), tick));
        assert!(!healthy(Duration::from_secs(61), tick));
        assert!(healthy(Duration::from_secs(500), Duration::from_secs(300)));
        assert!(!healthy(Duration::from_secs(601), Duration::from_secs(300)));
    }
}
