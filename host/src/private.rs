//! Files only the daemon's user may touch. The store decides what runs, the runs
//! directory holds what runs printed (often secrets) and what the next daemon adopts and
//! reports, the jobs file and env files say what runs: each is created private (files
//! 0600, directories 0700, whatever the umask), and the daemon refuses to start on one that
//! another user could write, naming the path and the fix.

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of the files the host creates.
pub const FILE_MODE: u32 = 0o600;
/// Mode of the directories it creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` and its missing parents, each 0700.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Options that create a file 0600 (the mode applies only when it is created).
pub fn file_options() -> fs::OpenOptions {
    let mut o = fs::OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// A path another user could change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposed {
    /// What it is to the daemon: "the store", "the runs directory", ...
    pub what: String,
    pub path: PathBuf,
    pub problem: Exposure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Its group or everyone may write it.
    Writable { mode: u32 },
    /// Owned by a user who is neither root nor the daemon's (an owner may chmod it).
    Owner { uid: u32, ours: u32 },
}

impl fmt::Display for Exposed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, path) = (&self.what, self.path.display());
        match self.problem {
            Exposure::Writable { mode } => write!(
                f,
                "{what} {path} can be written by other users (mode {:04o}): whoever can \
                 write it can change what the daemon runs; fix: chmod go-w {path}",
                mode & 0o7777
            ),
            Exposure::Owner { uid, ours } => write!(
                f,
                "{what} {path} belongs to uid {uid}, neither root nor this daemon's user \
                 (uid {ours}): its owner can change what the daemon runs; fix: chown {ours} {path}"
            ),
        }
    }
}

impl std::error::Error for Exposed {}

/// Refuses `path` if a user other than root and the daemon's could write it. A path that
/// does not exist is no exposure (it will be created private).
pub fn refuse_exposed(path: &Path, what: &str) -> Result<(), Exposed> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    let exposed = |problem| Exposed {
        what: what.to_string(),
        path: path.to_path_buf(),
        problem,
    };
    if meta.mode() & 0o022 != 0 {
        return Err(exposed(Exposure::Writable { mode: meta.mode() }));
    }
    let ours = effective_uid();
    if meta.uid() != 0 && meta.uid() != ours {
        return Err(exposed(Exposure::Owner {
            uid: meta.uid(),
            ours,
        }));
    }
    Ok(())
}

/// Takes read access away from others on a file or directory of ours made before files
/// were private (a store made by an older version at the umask's 0644). True if changed.
pub fn tighten(path: &Path) -> io::Result<bool> {
    let meta = fs::metadata(path)?;
    let mode = meta.mode() & 0o7777;
    // A file others may write is refused (`refuse_exposed`), never quietly fixed: someone
    // may have changed it already.
    if mode & 0o077 == 0 || mode & 0o022 != 0 || meta.uid() != effective_uid() {
        return Ok(false);
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode & !0o077))?;
    Ok(true)
}

/// The daemon's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_files_and_directories_are_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        create_dir_all(&sub).unwrap();
        let f = sub.join("f");
        file_options().write(true).create(true).open(&f).unwrap();
        assert_eq!(fs::metadata(&sub).unwrap().mode() & 0o777, DIR_MODE);
        assert_eq!(
            fs::metadata(dir.path().join("a")).unwrap().mode() & 0o777,
            DIR_MODE
        );
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, FILE_MODE);
    }

    #[test]
    fn a_file_others_can_write_is_refused_naming_path_and_fix() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("store.db");
        fs::write(&f, b"").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o666)).unwrap();
        let e = refuse_exposed(&f, "the store").unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&f.display().to_string()), "{text}");
        assert!(
            text.contains("mode 0666") && text.contains("chmod go-w"),
            "{text}"
        );
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(refuse_exposed(&f, "the store"), Ok(()));
        assert!(tighten(&f).unwrap());
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, 0o600);
    }
}
