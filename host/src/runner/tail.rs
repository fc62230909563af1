//! The last lines a run's command printed (its `out.log`), bounded in lines and bytes, for
//! an alert's payload and a failed run on its job page: enough to see why it failed,
//! never a megabyte of output in a pager message or a page.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// At most this many lines are kept.
pub const TAIL_LINES: usize = 20;
/// At most this many bytes are read from the end of the file.
pub const TAIL_BYTES: u64 = 4096;

/// The end of a run's output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Tail {
    /// The last lines (without their newlines), oldest first; invalid UTF-8 replaced.
    pub lines: Vec<String>,
    /// Whether the output had more than these lines.
    pub truncated: bool,
}

/// The last `TAIL_LINES` lines within the last `TAIL_BYTES` bytes of `path`; `None` when it
/// cannot be read (no such file: a run of another machine, or pruned). A line cut by the
/// byte bound is dropped rather than shown half.
pub fn tail(path: &Path) -> Option<Tail> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::with_capacity(TAIL_BYTES as usize);
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    let mut truncated = false;
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
        truncated = true;
    }
    if lines.len() > TAIL_LINES {
        lines.drain(..lines.len() - TAIL_LINES);
        truncated = true;
    }
    Some(Tail {
        lines: lines.into_iter().map(str::to_string).collect(),
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let t = tail(&path).unwrap();
        assert_eq!(t.lines, ["one", "two"]);
        assert!(!t.truncated);
    }

    #[test]
    fn long_output_keeps_the_last_lines_within_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, &text).unwrap();
        let t = tail(&path).unwrap();
        assert_eq!(t.lines.len(), TAIL_LINES);
        assert_eq!(t.lines.last().unwrap(), "line 99");
        assert_eq!(t.lines[0], "line 80");
        assert!(t.truncated);
        // One enormous line: a whole line is never past the byte bound.
        std::fs::write(&path, format!("{}\nend\n", "x".repeat(100_000))).unwrap();
        let t = tail(&path).unwrap();
        assert_eq!(t.lines, ["end"]);
        assert!(t.truncated);
        assert!(tail(&dir.path().join("none")).is_none());
    }
}
