//! Whom a run's command runs as: a job's `user` and `group`, looked up in the system's user
//! database, and the drop to them in the supervisor's child before `exec` (supplementary
//! groups, then the group, then the user: once the user is dropped, the groups can no longer
//! be changed, so any other order would leave root's groups behind).

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::jobs_file::Field;

/// A resolved identity to run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups: the user's, as `initgroups` would set them.
    pub groups: Vec<u32>,
    pub home: PathBuf,
}

/// Why a job's `user` or `group` cannot be run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityError {
    NoUser {
        name: String,
    },
    NoGroup {
        name: String,
    },
    /// The daemon is not root, so it cannot switch to another user or group.
    NotRoot {
        user: String,
        uid: u32,
        ours: u32,
    },
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentityError::NoUser { name } => write!(
                f,
                "no user {name:?} on this machine; accepted: a user name or uid from /etc/passwd (getent passwd)"
            ),
            IdentityError::NoGroup { name } => write!(
                f,
                "no group {name:?} on this machine; accepted: a group name or gid from /etc/group (getent group)"
            ),
            IdentityError::NotRoot { user, uid, ours } => write!(
                f,
                "the job runs as {user} (uid {uid}), but this daemon runs as uid {ours} and \
                 only root can switch users; run the daemon as root, or leave user and group out \
                 to run the job as the daemon's user"
            ),
        }
    }
}

impl std::error::Error for IdentityError {}

impl IdentityError {
    /// The jobs file's field the error is about.
    pub fn field(&self) -> Field {
        match self {
            IdentityError::NoGroup { .. } => Field::Group,
            _ => Field::User,
        }
    }
}

/// The identity for `user` and `group` (`None`, `None`: the daemon's own, nothing to do).
/// A group alone keeps the daemon's user; a user alone takes the user's primary group.
pub fn resolve(user: Option<&str>, group: Option<&str>) -> Result<Option<RunAs>, IdentityError> {
    if user.is_none() && group.is_none() {
        return Ok(None);
    }
    let ours = unsafe { libc::geteuid() };
    let entry = match user {
        Some(name) => lookup_user(name).ok_or_else(|| IdentityError::NoUser {
            name: name.to_string(),
        })?,
        None => lookup_user(&ours.to_string()).ok_or_else(|| IdentityError::NoUser {
            name: ours.to_string(),
        })?,
    };
    let gid = match group {
        Some(name) => lookup_group(name).ok_or_else(|| IdentityError::NoGroup {
            name: name.to_string(),
        })?,
        None => entry.gid,
    };
    let mut groups = group_list(&entry.name, entry.gid);
    if !groups.contains(&gid) {
        groups.push(gid);
    }
    Ok(Some(RunAs {
        user: entry.name,
        uid: entry.uid,
        gid,
        groups,
        home: entry.home,
    }))
}

impl RunAs {
    /// Refuses what this process cannot become: anything but itself unless it is root.
    pub fn permitted(&self) -> Result<(), IdentityError> {
        // SAFETY: geteuid(2) and getegid(2) cannot fail and touch no memory.
        let (ours, our_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if ours == 0 || (self.uid == ours && self.gid == our_gid) {
            return Ok(());
        }
        Err(IdentityError::NotRoot {
            user: self.user.clone(),
            uid: self.uid,
            ours,
        })
    }

    /// Makes `cmd` drop to this identity in the child before `exec`, and tells it who it
    /// is (`HOME`, `USER`, `LOGNAME`, as cron and su do) unless the job sets those itself.
    pub fn apply(&self, cmd: &mut Command) {
        let (uid, gid, groups) = (self.uid, self.gid, self.groups.clone());
        let home = self.home.clone();
        cmd.env("HOME", home)
            .env("USER", &self.user)
            .env("LOGNAME", &self.user);
        // SAFETY: the closure runs in the forked child before exec and calls only
        // setgroups(2), setgid(2) and setuid(2), which are async-signal-safe; the group
        // list was allocated before the fork.
        unsafe {
            cmd.pre_exec(move || drop_to(uid, gid, &groups));
        }
    }
}

/// setgroups, setgid, setuid, in that order; any failure stops the exec.
fn drop_to(uid: u32, gid: u32, groups: &[u32]) -> io::Result<()> {
    // SAFETY: plain system calls on values owned by the caller.
    unsafe {
        if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

struct UserEntry {
    name: String,
    uid: u32,
    gid: u32,
    home: PathBuf,
}

/// A user by name, or by uid when `name` is all digits (getpwnam_r / getpwuid_r).
fn lookup_user(name: &str) -> Option<UserEntry> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for the call to fill.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let rc = match name.parse::<u32>() {
        // SAFETY: buffers and out-pointers are valid for the call's duration.
        Ok(uid) => unsafe {
            libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found)
        },
        Err(_) => {
            let c = CString::new(name).ok()?;
            // SAFETY: as above; `c` is NUL-terminated.
            unsafe {
                libc::getpwnam_r(
                    c.as_ptr(),
                    &mut pw,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut found,
                )
            }
        }
    };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: on success the strings point into `buf`, which is alive here.
    let text = |p: *const libc::c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    Some(UserEntry {
        name: text(pw.pw_name),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        home: PathBuf::from(text(pw.pw_dir)),
    })
}

/// A group's gid by name, or the gid itself when `name` is all digits and names a group.
fn lookup_group(name: &str) -> Option<u32> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero group is a valid value for the call to fill.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let rc = match name.parse::<u32>() {
        // SAFETY: buffers and out-pointers are valid for the call's duration.
        Ok(gid) => unsafe {
            libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr().cast(), buf.len(), &mut found)
        },
        Err(_) => {
            let c = CString::new(name).ok()?;
            // SAFETY: as above; `c` is NUL-terminated.
            unsafe {
                libc::getgrnam_r(
                    c.as_ptr(),
                    &mut gr,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut found,
                )
            }
        }
    };
    (rc == 0 && !found.is_null()).then_some(gr.gr_gid)
}

/// The user's groups (getgrouplist), its primary group among them.
fn group_list(user: &str, gid: u32) -> Vec<u32> {
    let Ok(c) = CString::new(user) else {
        return vec![gid];
    };
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        // SAFETY: `groups` has room for `n` entries; getgrouplist writes at most that many
        // and sets `n` to the count (or the count needed when it returns -1).
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n as usize);
            return groups;
        }
        if n as usize <= groups.len() || n > 65_536 {
            return vec![gid];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_nobody_resolve_and_a_missing_user_is_named() {
        let root = resolve(Some("root"), None).unwrap().unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        let by_uid = resolve(Some("0"), None).unwrap().unwrap();
        assert_eq!(by_uid.user, "root");
        let nobody = resolve(Some("nobody"), None).unwrap().unwrap();
        assert_ne!(nobody.uid, 0);
        let e = resolve(Some("no_such_user_here"), None).unwrap_err();
        assert!(
            e.to_string().contains("no user \"no_such_user_here\""),
            "{e}"
        );
        let e = resolve(None, Some("no_such_group_here")).unwrap_err();
        assert!(matches!(e, IdentityError::NoGroup { .. }), "{e}");
        assert_eq!(resolve(None, None), Ok(None));
    }
}
