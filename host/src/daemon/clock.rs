//! What the daemon reads from the world: its clocks and the signals it was sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use duetime::{Now, Timestamp};

/// The wall clock and a monotonic clock, read together for every event.
pub struct Clock {
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            start: Instant::now(),
        }
    }
}

impl Clock {
    pub fn now(&self) -> Now {
        let wall = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
        };
        // CLOCK_MONOTONIC (what `Instant` reads on Linux): it stands still while the machine
        // sleeps; CLOCK_BOOTTIME counts the sleep. Together they tell the core a machine that
        // slept from a wall clock that was set forward (see `duetime::Now`).
        let mono = i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (wall, mono) = (Timestamp::from_millis(wall), Timestamp::from_millis(mono));
        match boot_millis() {
            Some(boot) => Now::with_boot(wall, mono, Timestamp::from_millis(boot)),
            None => Now::new(wall, mono),
        }
    }
}

/// CLOCK_BOOTTIME in milliseconds, where the system has it.
#[cfg(target_os = "linux")]
fn boot_millis() -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    (rc == 0).then(|| ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000)
}

#[cfg(not(target_os = "linux"))]
fn boot_millis() -> Option<i64> {
    None
}

/// Signals received, counted by the handler (the only thing it does).
static TERMS: AtomicUsize = AtomicUsize::new(0);
static INTS: AtomicUsize = AtomicUsize::new(0);
/// SIGHUPs not yet acted on: the daemon rereads its jobs file (`reload.rs`).
static HUPS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_term(_: libc::c_int) {
    TERMS.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn on_int(_: libc::c_int) {
    INTS.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn on_hup(_: libc::c_int) {
    HUPS.fetch_add(1, Ordering::SeqCst);
}

/// Whether a SIGHUP arrived since the last call: several HUPs before the daemon looks are
/// one reload, since each rereads the whole file.
pub(super) fn take_hup() -> bool {
    HUPS.swap(0, Ordering::SeqCst) > 0
}

/// Asks for a reload again, as if HUP had arrived (a store that could not be reached).
pub(super) fn hup_again() {
    HUPS.fetch_add(1, Ordering::SeqCst);
}

/// Whether SIGTERM or SIGINT has arrived.
pub fn signalled() -> bool {
    TERMS.load(Ordering::SeqCst) > 0 || INTS.load(Ordering::SeqCst) > 0
}

/// How long to wait after `failures` failures in a row to reach the store: the turn every
/// host shares (`duetime_loop::backoff`), so the simulator's processes retry as this one.
pub use duetime_loop::backoff;

/// Installs the SIGTERM, SIGINT and SIGHUP handlers. Without the last, HUP (`systemctl
/// reload`, a log rotation) would kill the daemon with no drain.
pub fn install_signal_handlers() {
    // SAFETY: the handlers only touch atomics, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_term as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGINT,
            on_int as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGHUP,
            on_hup as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
    }
}

/// SIGINTs received so far.
pub(super) fn ints() -> usize {
    INTS.load(Ordering::SeqCst)
}
