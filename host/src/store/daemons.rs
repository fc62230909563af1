//! Which daemons run on a store, for `duetime status`: each incarnation writes who it is
//! (its operating-system pid, its machine, its jobs file and run directories) beside the
//! core's state, in the `meta` table under `daemon:<process>`. The core knows the same
//! processes only by id and by when it last heard from them; together they say which
//! daemons are alive. Not an event: nothing the core decides depends on it.

use duetime::{ProcessId, Timestamp};
use serde::{Deserialize, Serialize};

/// The `meta` key prefix of a daemon's record.
pub const META_PREFIX: &str = "daemon:";

/// One daemon incarnation, as it described itself when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub process: ProcessId,
    /// Its operating-system process id, on `host`.
    pub pid: u32,
    pub host: String,
    pub started: Timestamp,
    pub jobs_file: String,
    pub runs: String,
    /// The duetime version it runs.
    pub version: String,
}

impl DaemonInfo {
    /// This process, started now.
    pub fn of_this_process(
        process: ProcessId,
        jobs_file: &std::path::Path,
        runs: &std::path::Path,
    ) -> DaemonInfo {
        let absolute = |p: &std::path::Path| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.to_path_buf())
                .display()
                .to_string()
        };
        DaemonInfo {
            process,
            pid: std::process::id(),
            host: host_name(),
            started: Timestamp::from_millis(chrono::Utc::now().timestamp_millis()),
            jobs_file: absolute(jobs_file),
            runs: absolute(runs),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// The `meta` key it is kept under.
    pub fn key(&self) -> String {
        format!("{META_PREFIX}{}", self.process)
    }
}

/// This machine's name (`gethostname`), or `unknown`.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid and writable for its length; the name is NUL-terminated
    // when it fits, and the last byte stays 0 otherwise.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return "unknown".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// How long a row of a process the core does not know is kept: a daemon writes its row
/// before its `ProcessStarted` reaches the core, so another daemon registering in that
/// moment would otherwise take it for a forgotten process's and delete it (issue 42). An
/// hour also covers clocks of different machines that disagree.
pub const UNKNOWN_KEPT_MS: i64 = 3600 * 1000;

/// The `meta` keys of the rows to delete when `info` registers: processes the core no
/// longer knows (forgotten), whose rows are older than `UNKNOWN_KEPT_MS`. `state` and
/// `rows` are read in the registering transaction, not from a cache.
pub(crate) fn to_forget(
    state: &duetime::State,
    rows: &[DaemonInfo],
    info: &DaemonInfo,
) -> Vec<String> {
    let globals = state.globals();
    let known = globals.processes();
    forget_unknown(|p| known.contains_key(&p), rows, info)
}

/// `to_forget` where `known` says which processes are still known: on a store of several
/// partitions, the daemons whose heartbeat is in `members` (a daemon there is no process
/// of any partition's state; its incarnations in the partitions are).
pub(crate) fn forget_unknown(
    known: impl Fn(ProcessId) -> bool,
    rows: &[DaemonInfo],
    info: &DaemonInfo,
) -> Vec<String> {
    let before = info.started.as_millis().saturating_sub(UNKNOWN_KEPT_MS);
    rows.iter()
        .filter(|d| d.process != info.process && !known(d.process))
        .filter(|d| d.started.as_millis() < before)
        .map(DaemonInfo::key)
        .collect()
}

/// One `meta` row of a daemon record.
pub fn parse_daemon(store: &str, key: &str, value: &str) -> Result<DaemonInfo, super::StoreError> {
    serde_json::from_str(value).map_err(|e| super::StoreError::Corrupt {
        store: store.to_string(),
        detail: format!("meta {key}: {e}"),
    })
}
