//! What the daemon refuses to start on, before it touches the store: files another user
//! could write (the jobs file, the env files, the runs directory, an SQLite store and its
//! WAL and SHM), and jobs it could not run as the user they name.

use std::path::{Path, PathBuf};

use crate::jobs_file::{self, JobsFile};
use crate::private::{refuse_exposed, tighten};

/// Every reason not to start, one line each (empty: start).
pub fn refusals(
    jobs_path: &Path,
    jobs: &JobsFile,
    runs: &Path,
    store: Option<&Path>,
) -> Vec<String> {
    let mut paths: Vec<(PathBuf, &str)> = vec![
        (jobs_path.to_path_buf(), "the jobs file"),
        (runs.to_path_buf(), "the runs directory"),
    ];
    if let Some(db) = store {
        paths.push((db.to_path_buf(), "the store"));
        for suffix in ["-wal", "-shm"] {
            paths.push((
                PathBuf::from(format!("{}{suffix}", db.display())),
                "the store's",
            ));
        }
    }
    for job in &jobs.jobs {
        if let Some(f) = &job.command.env_file {
            paths.push((f.clone(), "the env file"));
        }
    }
    let mut out: Vec<String> = paths
        .iter()
        .filter_map(|(p, what)| refuse_exposed(p, what).err())
        .map(|e| e.to_string())
        .collect();
    let file = jobs_path.display().to_string();
    out.extend(
        jobs_file::check_machine(&file, jobs, true)
            .iter()
            .map(ToString::to_string),
    );
    out
}

/// Makes the store's files and the runs directory unreadable by others where an older
/// version left them at the umask's mode; says which.
pub fn tighten_all(runs: &Path, store: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = vec![runs.to_path_buf()];
    if let Some(db) = store {
        paths.push(db.to_path_buf());
        for suffix in ["-wal", "-shm"] {
            paths.push(PathBuf::from(format!("{}{suffix}", db.display())));
        }
    }
    paths
        .into_iter()
        .filter(|p| tighten(p).unwrap_or(false))
        .collect()
}
