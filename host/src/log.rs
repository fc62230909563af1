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

/// The daemon's log: one line per decision on stderr, coloured on a terminal, and never
/// a reason to stop (see the module's doc).
pub fn init_daemon_log() {
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_writer(|| Lenient(io::stderr()))
        .with_ansi(io::stderr().is_terminal())
        .with_target(false)
        .log_internal_errors(false)
        .try_init();
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
