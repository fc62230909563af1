//! `duetime`: the reference host's command line.
//!
//! Each subcommand is a variant of `Command` whose arguments and `run` live in
//! `cmd/<name>.rs`; `run` writes to the streams it is given and returns the exit code, so
//! the subcommands stay testable and adding one touches this file in two lines.
//!
//! Exit codes: 0 success, 1 the input was refused (an invalid jobs file, a bad expression),
//! 2 a usage error (clap's). `sim` has its own (duetime-sim's): see `cmd/sim.rs`; `what-if`
//! exits 64 on usage errors: see `cmd/what_if/`; so does `run` for flag values the core
//! refuses and config flags that contradict the store's: see `cmd/run.rs`.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use duetime_host::log::Lenient;

mod cmd;

/// `duetime --version`: the crate's version and the commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("DUETIME_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "duetime",
    version = VERSION,
    about = "The duetime reference host: check jobs files and see when schedules are due"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a jobs file: list every error, or show each job and its next due times
    Check(cmd::check::Args),
    /// Show the next due times of a cron expression, with daylight-saving notes
    Next(cmd::next::Args),
    /// Run the daemon: keep the jobs' schedules, start their commands, record everything
    Run(cmd::run::Args),
    /// List the jobs in the store, attention first
    List(cmd::ops::ListArgs),
    /// Show one job: its state, next due times and recent journal
    Show(cmd::ops::ShowArgs),
    /// Which daemons run on the store: alive or not, their pids, the owner, last heard
    Status(cmd::ops::StatusArgs),
    /// Print what a job's run printed (the newest, or --run rN); --follow until it ends
    Logs(cmd::ops::LogsArgs),
    /// Pause a job (due times meanwhile meet its missed rule when it resumes)
    Pause(cmd::ops::PauseArgs),
    /// Resume a paused job
    Resume(cmd::ops::ResumeArgs),
    /// Run a job once now (jobs safe to repeat only)
    RunNow(cmd::ops::RunNowArgs),
    /// Apply a job's definition held for confirmation (`--digest`, as `show` prints it)
    Confirm(cmd::ops::ConfirmArgs),
    /// Approve a job's run parked awaiting approval (its command wrote $DUETIME_APPROVAL)
    Approve(cmd::ops::ApproveArgs),
    /// Run a job's past due times from before its ledger begins (`show` prints where), as
    /// catch-ups
    Backfill(cmd::ops::BackfillArgs),
    /// Remove a job from the store (take it out of the jobs file too, or the next daemon
    /// to start defines it again)
    Remove(cmd::ops::RemoveArgs),
    /// Simulate a jobs file through crashes, clock jumps and racing processes, and check
    /// every promise (exit 0 held, 1 safety, 2 liveness, 3 crash, 64 usage)
    Sim(cmd::sim::Args),
    /// Replay a future you describe (downtime, pauses, clock jumps) through the core and
    /// show what would run, be caught up or skipped, and why; touches no store (exit 64 usage)
    WhatIf(cmd::what_if::Args),
    /// The core alone, for any language: newline-delimited JSON requests on stdin, one
    /// response line each on stdout (docs/wire-format.md)
    Core(cmd::core::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(cmd::generate::CompletionsArgs),
    /// Print the manual page (roff), or write one per subcommand with --dir
    Man(cmd::generate::ManArgs),
    /// Internal: supervise one run's command (started by the daemon)
    #[command(name = "_supervise", hide = true)]
    Supervise { dir: std::path::PathBuf },
}

/// A usage error, with every long word of clap's message (a pasted value) cut. `duetime
/// sim` keeps duetime-sim's exit codes, where 2 is a liveness violation: its usage errors
/// exit 64 instead of clap's 2; `what-if` uses 64 for usage too, so its flag errors and its
/// own checks of them exit alike. With --json the error is the JSON error object.
fn usage_error(e: &clap::Error) -> ExitCode {
    let text: String = e
        .render()
        .to_string()
        .split_inclusive(char::is_whitespace)
        .map(|w| {
            let cut = cmd::cut(w.trim_end());
            let tail = &w[w.trim_end().len()..];
            format!("{cut}{tail}")
        })
        .collect();
    let code = match std::env::args().nth(1).as_deref() {
        Some("sim" | "what-if") => cmd::sim::USAGE,
        _ => 2,
    };
    if std::env::args().any(|a| a == "--json") {
        let first = text.lines().next().unwrap_or("");
        let v = cmd::json::error(
            cmd::json::ErrorKind::Usage,
            first.trim_start_matches("error: "),
        );
        let _ = writeln!(io::stdout(), "{v:#}");
    } else {
        let _ = write!(Lenient(io::stderr()), "{text}");
    }
    ExitCode::from(code)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => return usage_error(&e),
    };
    if let Command::Supervise { dir } = &cli.command {
        return ExitCode::from(duetime_host::runner::supervise(dir).clamp(0, 255) as u8);
    }
    if let Command::Run(args) = &cli.command {
        duetime_host::log::init_daemon_log(args.log_level, args.log_format);
    }
    let mut out = io::stdout().lock();
    // Not locked for the whole command: `sim`'s progress bar draws on stderr from another
    // thread, which a lock held here would block forever. And lenient: a message nobody
    // can read (a closed stderr) is no reason to fail or to stop.
    let mut err = Lenient(io::stderr());
    let result = match &cli.command {
        Command::Check(args) => cmd::check::run(args, &mut out, &mut err),
        Command::Next(args) => cmd::next::run(args, &mut out, &mut err),
        Command::Run(args) => cmd::run::run(args, &mut out, &mut err),
        Command::List(args) => cmd::ops::list(args, &mut out, &mut err),
        Command::Show(args) => cmd::ops::show(args, &mut out, &mut err),
        Command::Status(args) => cmd::ops::status(args, &mut out, &mut err),
        Command::Logs(args) => cmd::ops::logs(args, &mut out, &mut err),
        Command::Pause(args) => cmd::ops::pause(args, &mut out, &mut err),
        Command::Resume(args) => cmd::ops::resume(args, &mut out, &mut err),
        Command::RunNow(args) => cmd::ops::run_now(args, &mut out, &mut err),
        Command::Confirm(args) => cmd::ops::confirm(args, &mut out, &mut err),
        Command::Approve(args) => cmd::ops::approve(args, &mut out, &mut err),
        Command::Backfill(args) => cmd::ops::backfill(args, &mut out, &mut err),
        Command::Remove(args) => cmd::ops::remove(args, &mut out, &mut err),
        Command::Sim(args) => cmd::sim::run(args, &mut out, &mut err),
        Command::WhatIf(args) => cmd::what_if::run(args, &mut out, &mut err),
        Command::Core(args) => cmd::core::run(args, &mut out, &mut err),
        Command::Completions(args) => cmd::generate::completions(args, Cli::command(), &mut out),
        Command::Man(args) => cmd::generate::man(args, Cli::command(), &mut out, &mut err),
        Command::Supervise { .. } => Ok(2),
    };
    let result = result.and_then(|code| out.flush().map(|()| code));
    match result {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`duetime next ... | head`) is not an error of ours.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(err, "duetime: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/cli.md is the manual of every command: each subcommand clap knows, and each of
    /// its long flags, is named there, so a flag added to the code cannot go undocumented.
    #[test]
    fn every_command_and_flag_is_in_cli_md() {
        let doc = include_str!("../../docs/cli.md");
        let cli = super::Cli::command();
        let mut missing = Vec::new();
        for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            if !doc.contains(&format!("duetime {name}")) {
                missing.push(format!("duetime {name}"));
            }
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let Some(long) = arg.get_long() else { continue };
                if long == "help" || long == "version" {
                    continue;
                }
                if !doc.contains(&format!("--{long}")) {
                    missing.push(format!("duetime {name} --{long}"));
                }
            }
        }
        assert!(missing.is_empty(), "not in docs/cli.md: {missing:?}");
    }
}
