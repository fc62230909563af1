//! `duetime core --stdio`: the core as a long-running process speaking the wire format
//! (docs/wire-format.md) on its standard streams, so a program in any language can embed
//! it with a pipe. One request line in, one response line out, flushed at once; a bad
//! line is answered with a typed error and the process goes on. Logs go to stderr only.

use std::io::{self, BufRead, Write};

use duetime_wire::{error_line, Core, ErrorKind, WireError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Speak newline-delimited JSON on stdin and stdout (the one transport there is)
    #[arg(long, required = true)]
    pub stdio: bool,
}

pub fn run(_args: &Args, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    serve(io::stdin().lock(), out, err)
}

/// Answers every line of `input` until it ends, then exits 0. Only a stream that fails
/// (stdout closed) stops it early.
pub fn serve(
    mut input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut core = Core::default();
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let answer = match std::str::from_utf8(trim_newline(&buf)) {
            Ok(line) => core.handle_line(line),
            Err(e) => error_line(&WireError::new(
                ErrorKind::BadLine,
                None,
                format!("the line is not UTF-8 ({e}); the wire format is UTF-8 JSON"),
            )),
        };
        out.write_all(answer.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
        if answer.starts_with(r#"{"ok":false"#) {
            let _ = writeln!(err, "duetime core: line {number} refused: {answer}");
        }
    }
    Ok(0)
}

/// The line without its `\n` or `\r\n`.
fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}
