//! `duetime completions SHELL` and `duetime man [--dir DIR]`: shell completions and manual
//! pages generated from the clap definitions at the moment they are asked for, so they
//! name exactly the subcommands and flags this binary has (clap_complete, clap_mangen).

use std::io::{self, Write};
use std::path::PathBuf;

use clap_complete::Shell;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `duetime.1` and a page per subcommand (`duetime-run.1`, ...) into this
    /// directory (which must exist) instead of printing `duetime.1` on stdout
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` (see docs/cli.md for where each shell
/// looks for it).
pub fn completions(
    args: &CompletionsArgs,
    cli: clap::Command,
    out: &mut dyn Write,
) -> io::Result<u8> {
    let mut cli = visible(&cli);
    let name = cli.get_name().to_string();
    clap_complete::generate(args.shell, &mut cli, name, out);
    Ok(0)
}

/// The command line without its hidden subcommands: clap_complete offers them like any
/// other (`_supervise`, which only the daemon starts, would be completed for people). The
/// top level has no arguments of its own beyond `--help` and `--version`, which clap adds
/// again, so a new command with the same name, version, about and visible subcommands is
/// the same command line as people see it.
fn visible(cli: &clap::Command) -> clap::Command {
    let mut top = clap::Command::new(cli.get_name().to_string())
        .subcommand_required(cli.is_subcommand_required_set())
        .subcommands(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    if let Some(version) = cli.get_version() {
        top = top.version(version.to_string());
    }
    if let Some(about) = cli.get_about() {
        top = top.about(about.clone());
    }
    top
}

/// Prints the top manual page, or writes every page into `--dir`. A directory that cannot
/// be written is the caller's error (exit 1 with the reason), never a panic.
pub fn man(
    args: &ManArgs,
    cli: clap::Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    match &args.dir {
        None => clap_mangen::Man::new(visible(&cli)).render(out).map(|()| 0),
        Some(dir) => match clap_mangen::generate_to(visible(&cli), dir) {
            Ok(()) => Ok(0),
            Err(e) => {
                writeln!(err, "duetime man: cannot write into {}: {e}", dir.display())?;
                Ok(1)
            }
        },
    }
}
