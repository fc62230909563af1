//! `duetime run --jobs JOBS.toml`: the daemon. Upserts the definitions, starts an
//! incarnation, and runs until SIGTERM drains it (or a second SIGINT stops it at once).

use std::io::{self, Write};
use std::path::PathBuf;

use duetime::{Config, Duration};
use duetime_host::daemon::{self, Daemon, Stopped};
use duetime_host::jobs_file;
use duetime_host::runner::Runs;
use duetime_host::store::{self, Options, StoreError};

use super::StoreArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The jobs file
    #[arg(long, value_name = "JOBS.toml")]
    pub jobs: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The tick of a new store (a store keeps the config it was created with)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub tick: Duration,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    text.parse::<Duration>().map_err(|e| e.to_string())
}

pub fn run(args: &Args, _out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let config = Config::with_tick(args.tick);
    if let Err(why) = config.check() {
        writeln!(err, "duetime run: --tick {}: {why}", args.tick)?;
        return Ok(64);
    }
    let jobs = match jobs_file::load_with(&args.jobs, &config) {
        Ok(j) => j.jobs,
        Err(errors) => {
            for e in errors {
                writeln!(err, "{e}")?;
            }
            return Ok(1);
        }
    };
    let options = Options {
        config,
        ..Options::default()
    };
    let runs = match Runs::open(args.store.runs_dir()) {
        Ok(r) => r,
        Err(e) => {
            writeln!(err, "duetime run: {}: {e}", args.store.runs_dir().display())?;
            return Ok(1);
        }
    };
    let exe = std::env::current_exe()?;
    daemon::install_signal_handlers();
    // A store that cannot be reached yet (a database still starting, a network down) is
    // waited for, as systemd would restart us anyway; anything else is a real error.
    let mut waited = 0u32;
    let mut d = loop {
        let started = store::open(&args.store.store, options.clone())
            .and_then(|store| Daemon::start(store, runs.clone(), jobs.clone(), exe.clone()));
        match started {
            Ok(d) => break d,
            Err(e @ (StoreError::Unreachable { .. } | StoreError::Locked { .. })) => {
                if daemon::signalled() {
                    return Ok(0);
                }
                if waited.is_multiple_of(10) {
                    writeln!(err, "duetime run: {e}; waiting")?;
                }
                waited += 1;
                std::thread::sleep(daemon::backoff(waited));
            }
            Err(e) => {
                writeln!(err, "duetime run: {e}")?;
                return Ok(1);
            }
        }
    };
    Ok(match d.run() {
        Stopped::Drained => 0,
        Stopped::Interrupted => 130,
    })
}
