//! `duetime logs JOB [--run rN] [--follow]`: what a run's command printed (its `out.log`),
//! read from this machine's run directories. The newest run of the job by default;
//! `--follow` keeps printing until the run ends.

use std::io::{self, Read, Write};
use std::time::Duration;

use duetime::RunId;
use duetime_host::runner::{RunState, Runs};

use super::{parse_run, StoreArgs};

#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The job
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// This run (`r7` or `7`) instead of the job's newest
    #[arg(long, value_name = "RUN", value_parser = parse_run)]
    pub run: Option<RunId>,
    /// Keep printing what the run writes until it ends
    #[arg(long, short = 'f')]
    pub follow: bool,
}

/// How often `--follow` looks for more output.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

pub fn logs(args: &LogsArgs, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
    let dir = args.store.runs_dir();
    let job = crate::cmd::cut(&args.job);
    let known: Vec<_> = Runs::all_at(&dir)
        .iter()
        .flat_map(|r| r.runs_of(&args.job))
        .collect();
    let run = match args.run {
        Some(r) if known.iter().any(|f| f.run == r.0) => r,
        Some(r) => {
            writeln!(
                err,
                "duetime logs: no directory of {r} of job {job:?} in {} (another machine's \
                 daemon ran it, or it was pruned: `duetime run --keep-runs`); runs kept here: {}",
                dir.display(),
                kept(&known)
            )?;
            return Ok(1);
        }
        None => match known.last() {
            Some(f) => f.id(),
            None => {
                writeln!(
                    err,
                    "duetime logs: no run of job {job:?} in {} (give --runs DIR for another \
                     daemon's run directories)",
                    dir.display()
                )?;
                return Ok(1);
            }
        },
    };
    let runs = Runs::holding(&dir, &args.job, run);
    let mut file = match std::fs::File::open(runs.log_path(run)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            writeln!(err, "duetime logs: {run} has printed nothing yet")?;
            if !args.follow {
                return Ok(0);
            }
            return follow_from_start(&runs, run, out);
        }
        Err(e) => {
            writeln!(err, "duetime logs: {}: {e}", runs.log_path(run).display())?;
            return Ok(1);
        }
    };
    io::copy(&mut file, out)?;
    if args.follow {
        follow(&runs, run, &mut file, out)?;
    }
    Ok(0)
}

/// The run ids kept, for an error message.
fn kept(files: &[duetime_host::runner::RunFile]) -> String {
    if files.is_empty() {
        return "none".into();
    }
    let ids: Vec<String> = files.iter().map(|f| f.id().to_string()).collect();
    ids.join(", ")
}

/// Waits for the log to appear, then follows it.
fn follow_from_start(runs: &Runs, run: RunId, out: &mut dyn Write) -> io::Result<u8> {
    loop {
        if let Ok(mut file) = std::fs::File::open(runs.log_path(run)) {
            io::copy(&mut file, out)?;
            follow(runs, run, &mut file, out)?;
            return Ok(0);
        }
        if !matches!(runs.state(run), RunState::Running) {
            return Ok(0);
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// Prints what is appended to `file` until the run has ended and all of it is printed.
fn follow(
    runs: &Runs,
    run: RunId,
    file: &mut std::fs::File,
    out: &mut dyn Write,
) -> io::Result<()> {
    loop {
        let ended = !matches!(runs.state(run), RunState::Running);
        let mut more = Vec::new();
        file.read_to_end(&mut more)?;
        out.write_all(&more)?;
        out.flush()?;
        if ended {
            return Ok(());
        }
        // The next read goes on from where this one stopped.
        std::thread::sleep(FOLLOW_POLL);
    }
}
