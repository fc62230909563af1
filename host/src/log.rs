//! Where the host's words go: a daemon's log lines and every command's messages on stderr.
//!
//! Writing to stderr must never stop the host. A daemon's stderr is often a pipe
//! (`duetime run ... 2>&1 | head`, a log shipper that restarts) and a pipe that closes
//! makes every write fail with `EPIPE`; tracing-subscriber then reports its own failure
//! with `eprintln!`, which panics on that same closed stderr. A panic there falls between a
//! commit and its effects (the `Start`s committed, the commands never launched), so the
//! next daemon would find the runs lost. Hence `Lenient`: a writer that takes every byte
//! and drops what the stream refuses, and a subscriber told not to report write failures.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;

/// A writer that never fails: what the inner stream refuses (a closed pipe, a full disk)
/// is dropped, because no log line is worth stopping for.
#[derive(Debug)]
pub struct Lenient<W>(pub W);

impl<W: Write> Write for Lenient<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A partial write is finished by `write_all` calling again; an error drops the rest.
        Ok(self.0.write(buf).unwrap_or(buf.len()))
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// `duetime run --log-format`: how each log line is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `message` and the event's fields at
    /// the top level), for log shippers that would otherwise parse the text.
    Json,
}

/// `duetime run --log-level`: the least severe level written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn directive(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Which lines are written: `--log-level` when given (a flag typed for this start beats
/// the environment), else `RUST_LOG` (tracing's directives, such as
/// `warn,duetime_host::alerts=debug`), else `info`. A `RUST_LOG` that does not parse is no
/// reason to refuse to schedule: its problem is returned to be logged, and `info` used.
fn filter(level: Option<LogLevel>) -> (EnvFilter, Option<String>) {
    if let Some(level) = level {
        return (EnvFilter::new(level.directive()), None);
    }
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Ok(text) if !text.trim().is_empty() => match EnvFilter::try_new(&text) {
            Ok(f) => (f, None),
            Err(e) => (
                EnvFilter::new("info"),
                Some(format!(
                    "RUST_LOG `{}` is not a log filter ({e}); logging at info",
                    text.chars().take(80).collect::<String>()
                )),
            ),
        },
        _ => (EnvFilter::new("info"), None),
    }
}

/// The daemon's log: one line per decision on stderr, as text (coloured on a terminal) or
/// JSON lines, filtered by `level` or `RUST_LOG` (see `filter`), and never a reason to
/// stop (see the module's doc).
pub fn init_daemon_log(level: Option<LogLevel>, format: LogFormat) {
    use std::io::IsTerminal;
    let (filter, problem) = filter(level);
    let builder = tracing_subscriber::fmt()
        .with_writer(|| Lenient(io::stderr()))
        .with_env_filter(filter)
        .with_target(false)
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(io::stderr().is_terminal()).try_init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn a_closed_stream_takes_every_write_without_an_error() {
        let mut w = Lenient(Closed);
        assert!(writeln!(w, "a line nobody reads").is_ok());
        assert!(w.write_all(&[b'x'; 100_000]).is_ok());
        assert!(w.flush().is_ok());
    }
}
