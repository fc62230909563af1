//! `duetime run --jobs JOBS.toml`: the daemon. Upserts the definitions, starts an
//! incarnation, and runs until SIGTERM drains it (or a second SIGINT stops it at once).
//!
//! Exit codes: 0 drained, 1 an invalid jobs file or a store that cannot be used, 64 a usage
//! error that retrying cannot fix (a flag value the core refuses, or config flags that
//! contradict the store's config: see `duetime_host::config`), 130 interrupted twice.

use std::io::{self, Write};
use std::path::PathBuf;

use duetime::{Config, Coordination, Duration};
use duetime_host::config::{ConfigFlags, ConfigMismatch};
use duetime_host::daemon::{self, preflight, Daemon, Opener, Partitioned, Setup, Stopped};
use duetime_host::http::{self, Listen};
use duetime_host::jobs_file::{self, JobsFileError};
use duetime_host::log::{LogFormat, LogLevel};
use duetime_host::runner::Runs;
use duetime_host::store::{self, AnyStore, Connections, Metered, Options, Store, StoreError};
use duetime_host::telemetry::Telemetry;
use duetime_loop::PartitionCount;

use super::StoreArgs;

/// Usage errors (exit 64), as `what-if` and `sim` use.
const USAGE: u8 = 64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The jobs file
    #[arg(long, value_name = "JOBS.toml")]
    pub jobs: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The tick of a new store (default 30s). A store keeps the config it was made with:
    /// left out, the store's is used; given and different, the daemon refuses to start
    #[arg(long, value_name = "DURATION", value_parser = duetime_host::human::parse_duration)]
    pub tick: Option<Duration>,
    /// Who may start runs, for a new store: every daemon (`shared`, the default) or only
    /// the holder of the owner lease (`single_owner`; the others stand by). Kept for life,
    /// like --tick
    #[arg(long, value_name = "MODE")]
    pub coordination: Option<CoordinationArg>,
    /// Most runs one daemon may have open at once, for a new store (default: no cap).
    /// Kept for life, like --tick
    #[arg(long, value_name = "N")]
    pub max_runs_per_process: Option<u32>,
    /// How many partitions a new store has (1 to 1024; kept for life, like --tick). Left
    /// out, a new PostgreSQL store has 64 and an existing one keeps its own; given and
    /// different from an existing store's, the daemon refuses to start. SQLite has exactly
    /// one. On a store of several, each daemon claims its share and steps it
    /// (docs/scale-out.md)
    #[arg(long, value_name = "N")]
    pub partitions: Option<PartitionCount>,
    /// The most connections this daemon opens to a PostgreSQL store of several partitions
    /// (2 to 1000): one its owner keeps (heartbeats, claims, lease renewals), the rest
    /// shared by the partitions it steps, each taking one for a transaction. Not the
    /// page's (--http opens one more). A store of one partition uses one
    #[arg(long, value_name = "N", default_value_t = Connections::DEFAULT)]
    pub pg_connections: Connections,
    /// How many finished run directories (output and exit status) to keep per job; older
    /// ones are removed once reported. A run not yet reported is always kept
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub keep_runs: usize,
    /// Serve GET /metrics (Prometheus), / and /jobs/NAME (the pages) and /api/jobs (JSON)
    /// on this address, such as 127.0.0.1:9464. Off by default; loopback only unless
    /// --http-public
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// Let --http listen on an address other machines can reach (the pages and metrics
    /// have no authentication: put a firewall or a proxy in front)
    #[arg(long, requires = "http")]
    pub http_public: bool,
    /// The least severe log line written (default: `RUST_LOG` if set, else info). Each
    /// run's start and end are info; routine detail is debug
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<LogLevel>,
    /// `text` (default) or `json`: one JSON object a line, for log shippers
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
}

/// `--coordination`, spelled as the core spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CoordinationArg {
    #[value(name = "shared")]
    Shared,
    #[value(name = "single_owner")]
    SingleOwner,
}

impl From<CoordinationArg> for Coordination {
    fn from(c: CoordinationArg) -> Coordination {
        match c {
            CoordinationArg::Shared => Coordination::Shared,
            CoordinationArg::SingleOwner => Coordination::SingleOwner,
        }
    }
}

/// Why the daemon could not start (beyond a store to wait for).
enum NotStarted {
    Store(StoreError),
    Config(ConfigMismatch),
    Jobs(Vec<JobsFileError>),
    /// The runs directory could not be made.
    Runs(String),
}

/// The daemon started: of a store of one partition, or of several (`Partitioned`: it
/// claims its share of the partitions and steps each on a seat of its own).
enum Running {
    One(Box<Daemon<Metered<AnyStore>>>),
    Several(Box<Partitioned<Metered<AnyStore>>>),
}

impl From<StoreError> for NotStarted {
    fn from(e: StoreError) -> Self {
        NotStarted::Store(e)
    }
}

pub fn run(args: &Args, _out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let flags = ConfigFlags {
        tick: args.tick,
        coordination: args.coordination.map(Coordination::from),
        max_runs_per_process: args.max_runs_per_process,
    };
    if let Err(why) = flags.check() {
        writeln!(err, "duetime run: {why}")?;
        return Ok(USAGE);
    }
    let listen = match args
        .http
        .map(|a| Listen::check(a, args.http_public))
        .transpose()
    {
        Ok(l) => l,
        Err(why) => {
            writeln!(err, "duetime run: {why}")?;
            return Ok(USAGE);
        }
    };
    let config = flags.new_store_config();
    // The file is read before the store is reached, so its errors come at once even while
    // a database is still starting. Only the tick bounds a definition (`every` at least a
    // tick), and the store's tick is not known yet (an existing store keeps its own, and a
    // --tick that differs is refused first, as the root cause): the smallest tick any store
    // may have stands in, and the file is checked again against the store's config.
    let lenient = Config::with_tick(Duration::from_secs(1));
    let file = match jobs_file::load_with(&args.jobs, &lenient) {
        Ok(file) => file,
        Err(errors) => return jobs_errors(err, errors),
    };
    let options = Options {
        config,
        partitions: args.partitions,
        ..Options::default()
    };
    // Only checks until the store has been opened and accepted: a refused store (not a
    // duetime store, a port in use) is left exactly as it was, with no runs directory
    // made beside it and no mode changed (issue 42).
    if let Some(code) = refuse_exposed(args, &file, err)? {
        return Ok(code);
    }
    daemon::install_signal_handlers();
    let telemetry = Telemetry::default();
    let page_store = http::StoreOptions::default();
    if let Some(listen) = listen {
        // Bound before the store is reached, so a port in use is said at once; the
        // server's own store handle opens at its first request.
        if let Err(why) = http::serve(
            listen,
            &args.store.store,
            args.store.runs_dir(),
            telemetry.clone(),
            page_store.clone(),
        ) {
            writeln!(err, "duetime run: {why}")?;
            return Ok(1);
        }
    }
    let stopped = match start_daemon(args, &flags, &options, &telemetry, &page_store, err)? {
        Ok(Running::One(mut d)) => d.run(),
        Ok(Running::Several(mut d)) => d.run(),
        Err(code) => return Ok(code),
    };
    Ok(match stopped {
        Stopped::Drained => 0,
        Stopped::Interrupted => 130,
        // Only a seat ends so; a daemon's owner never does.
        Stopped::Lost => 1,
    })
}

/// Opens the store and starts the daemon on it. A store that cannot be reached yet (a
/// database still starting, a network down) is waited for, as systemd would restart us
/// anyway; anything else is a real error, returned as the exit code.
fn start_daemon(
    args: &Args,
    flags: &ConfigFlags,
    options: &Options,
    telemetry: &Telemetry,
    page_store: &http::StoreOptions,
    err: &mut dyn Write,
) -> io::Result<Result<Running, u8>> {
    let exe = std::env::current_exe()?;
    let mut waited = 0u32;
    let daemon = loop {
        let started = store::open(&args.store.store, options.clone())
            .map_err(NotStarted::from)
            .and_then(|mut store| {
                let count = store.partitions();
                let file = agreed_jobs(&mut store, flags, &args.jobs)?;
                let runs = prepare_runs(args, err)?;
                let setup = Setup {
                    runs,
                    jobs: file.jobs,
                    alerts: file.alerts,
                    jobs_file: args.jobs.clone(),
                    exe: exe.clone(),
                    keep_runs: args.keep_runs,
                    telemetry: telemetry.clone(),
                    courier: None,
                };
                if count == PartitionCount::ONE {
                    page_store.settle(options.clone());
                    let store = Metered::new(store, telemetry.clone());
                    return Ok(Running::One(Box::new(Daemon::start(store, setup)?)));
                }
                let seats = seat_options(&mut store, options, args.pg_connections)?;
                // The page's handle takes its connections from the seats' pool too.
                page_store.settle(seats.clone());
                let store = Metered::new(store, telemetry.clone());
                let open = opener(&args.store.store, &seats, telemetry);
                Ok(Running::Several(Box::new(Partitioned::start(
                    store, setup, open,
                )?)))
            });
        match started {
            Ok(d) => break d,
            Err(NotStarted::Store(
                e @ (StoreError::Unreachable { .. } | StoreError::Locked { .. }),
            )) => {
                if daemon::signalled() {
                    return Ok(Err(0));
                }
                if waited.is_multiple_of(10) {
                    writeln!(err, "duetime run: {e}; waiting")?;
                }
                waited += 1;
                std::thread::sleep(daemon::backoff(waited));
            }
            Err(why) => return not_started(why, err).map(Err),
        }
    };
    Ok(Ok(daemon))
}

/// The options of the seats' handles: the daemon's, and on PostgreSQL the pool of
/// connections they share (every one of `connections` but the owner's, which `store`
/// keeps), each seat waiting for one at most `daemon::pool_wait` of the store's lease.
fn seat_options(
    store: &mut AnyStore,
    options: &Options,
    connections: Connections,
) -> Result<Options, StoreError> {
    let AnyStore::Postgres(pg) = store else {
        return Ok(options.clone());
    };
    let lease = pg.state()?.config().lease_ttl;
    Ok(Options {
        pool: Some(pg.pool(connections, daemon::pool_wait(lease))),
        ..options.clone()
    })
}

/// How the seats of a store of several partitions open their handles: the store the
/// daemon opened, each handle metered into this process's telemetry.
fn opener(location: &str, options: &Options, telemetry: &Telemetry) -> Opener<Metered<AnyStore>> {
    let (location, options, telemetry) = (location.to_string(), options.clone(), telemetry.clone());
    std::sync::Arc::new(move || {
        let store = store::open(&location, options.clone())?;
        Ok(Metered::new(store, telemetry.clone()))
    })
}

/// Says why the daemon did not start; the exit code: 64 for flags that contradict the
/// store (retrying cannot mend them), else 1.
fn not_started(why: NotStarted, err: &mut dyn Write) -> io::Result<u8> {
    match why {
        NotStarted::Store(
            e @ (StoreError::PartitionsDiffer { .. } | StoreError::OnePartitionOnly { .. }),
        ) => {
            writeln!(err, "duetime run: {e}")?;
            Ok(USAGE)
        }
        NotStarted::Store(e) => {
            writeln!(err, "duetime run: {e}")?;
            Ok(1)
        }
        NotStarted::Config(mismatch) => {
            writeln!(err, "duetime run: {mismatch}")?;
            Ok(USAGE)
        }
        NotStarted::Jobs(errors) => jobs_errors(err, errors),
        NotStarted::Runs(why) => {
            writeln!(err, "duetime run: {why}")?;
            Ok(1)
        }
    }
}

/// Refuses to start (exit 1) on files other users could write or jobs this daemon cannot
/// run as their user, every reason at once. Only reads: nothing is made or changed.
fn refuse_exposed(
    args: &Args,
    file: &jobs_file::JobsFile,
    err: &mut dyn Write,
) -> io::Result<Option<u8>> {
    let store_file = (!store::is_url(&args.store.store)).then(|| PathBuf::from(&args.store.store));
    let runs = args.store.runs_dir();
    let refusals = preflight::refusals(&args.jobs, file, &runs, store_file.as_deref());
    for r in &refusals {
        writeln!(err, "duetime run: {r}")?;
    }
    Ok((!refusals.is_empty()).then_some(1))
}

/// Once the store is open and accepted: makes the runs directory, and takes read access
/// away from others on a store or runs directory an older version left readable.
fn prepare_runs(args: &Args, err: &mut dyn Write) -> Result<Runs, NotStarted> {
    let root = args.store.runs_dir();
    let runs =
        Runs::open(&root).map_err(|e| NotStarted::Runs(format!("{}: {e}", root.display())))?;
    // Alerts about a run carry its output and how it ended, read from here.
    duetime_host::alerts::context::set_runs_dir(runs.root().to_path_buf());
    let store_file = (!store::is_url(&args.store.store)).then(|| PathBuf::from(&args.store.store));
    for p in preflight::tighten_all(runs.root(), store_file.as_deref()) {
        // A message that cannot be written is no reason not to start.
        let _ = writeln!(
            err,
            "duetime run: {}: made private (others could read it)",
            p.display()
        );
    }
    Ok(runs)
}

/// The store's config against the flags, then the jobs file against the store's config.
fn agreed_jobs(
    store: &mut AnyStore,
    flags: &ConfigFlags,
    jobs: &std::path::Path,
) -> Result<jobs_file::JobsFile, NotStarted> {
    let stored: Config = *store.state()?.config();
    flags
        .agree(store.describe(), &stored)
        .map_err(NotStarted::Config)?;
    jobs_file::load_with(jobs, &stored).map_err(NotStarted::Jobs)
}

fn jobs_errors(err: &mut dyn Write, errors: Vec<JobsFileError>) -> io::Result<u8> {
    for e in errors {
        writeln!(err, "{e}")?;
    }
    Ok(1)
}
