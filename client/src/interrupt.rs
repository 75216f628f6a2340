//! Ctrl-C, and an output nobody reads any more.
//!
//! While a crank runs (`run crank`, `generate`'s crank, and `curta crank`
//! for its whole life), the first Ctrl-C stops it: it sends nothing more,
//! looks a moment (`GRACE`) for the turns it has in flight, prints what it
//! did, and the process ends with code 130. A watchdog ends the process at
//! `WATCHDOG` after the first Ctrl-C whatever is left undone, and a second
//! Ctrl-C ends it at once: Ctrl-C always ends curta within a second. At
//! any other time Ctrl-C ends the process at once, as it does without a
//! handler (code 130), first saying what the command leaves open when it
//! has said so (`LeavesOpen`).
//!
//! A closed stdout or stderr (the reader of a pipe gone: `| tee log`
//! killed by the same Ctrl-C, `| head` done) is taken the same way: Rust
//! ignores SIGPIPE, so a write fails with `BrokenPipe`, which the writers
//! (`say`, `output::print`, `progress`) report here instead of panicking;
//! the process then ends as Ctrl-C ends it, with code 141 (what SIGPIPE
//! gives a program that does not ignore it) unless Ctrl-C came first.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

static CRANKS: AtomicUsize = AtomicUsize::new(0);
static CRANKERS: AtomicUsize = AtomicUsize::new(0);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Ctrl-C (not a closed output) stopped it.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
static NOTIFY: Notify = Notify::const_new();
static LEFT_OPEN: Mutex<Option<String>> = Mutex::new(None);
static AT: Mutex<Option<Instant>> = Mutex::new(None);

/// How long a stopped crank looks for the statuses of the turns it has in
/// flight (and reads those that landed) before it prints what it did.
pub const GRACE: Duration = Duration::from_millis(400);
/// When the process ends after the first Ctrl-C, whatever is left undone.
pub const WATCHDOG: Duration = Duration::from_millis(950);

/// The exit code of a process Ctrl-C stopped.
pub const SIGINT_CODE: u8 = 130;
/// The exit code of a process whose output was closed.
pub const SIGPIPE_CODE: u8 = 141;

/// Handles Ctrl-C for the rest of the process (the CLI calls it once, in
/// its runtime; a library user that does not keeps the default).
pub fn install() {
    tokio::spawn(async {
        while tokio::signal::ctrl_c().await.is_ok() {
            stop(true);
        }
    });
}

/// A line on stderr that never panics: a closed stderr stops the process
/// as Ctrl-C does.
pub fn say(line: impl std::fmt::Display) {
    let mut err = std::io::stderr().lock();
    if let Err(e) = writeln!(err, "{line}") {
        wrote(&e);
    }
}

/// What a write's error means: a pipe whose reader is gone stops the
/// process (`output_closed`); any other is ignored, as `let _ =` would.
pub fn wrote(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        output_closed();
    }
}

/// Stdout or stderr is a pipe nobody reads any more: stops as Ctrl-C does
/// (once: a stopping process writing its summary to the closed pipe goes
/// on stopping).
pub fn output_closed() {
    if !INTERRUPTED.load(Ordering::SeqCst) {
        stop(false);
    }
}

fn stop(signal: bool) {
    let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
    if signal {
        SIGNALLED.store(true, Ordering::SeqCst);
    }
    if !first && signal {
        quiet("\ninterrupted again: stopping now");
        std::process::exit(exit_code().into());
    }
    if !first {
        return;
    }
    if CRANKS.load(Ordering::SeqCst) + CRANKERS.load(Ordering::SeqCst) == 0 {
        quiet("");
        if let Some(words) = LEFT_OPEN.lock().ok().and_then(|w| w.clone()) {
            quiet(&format!("interrupted: {words}"));
        }
        std::process::exit(exit_code().into());
    }
    if let Ok(mut at) = AT.lock() {
        *at = Some(Instant::now());
    }
    NOTIFY.notify_waiters();
    // Whatever the crank is waiting for, the process ends within a second.
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        quiet("interrupted: stopping now, before the summary was printed");
        std::process::exit(exit_code().into());
    });
}

/// Writes to stderr, ignoring every error (it may be the closed pipe).
fn quiet(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The code the process ends with once stopped: 130 after Ctrl-C, 141
/// after a closed output.
pub fn exit_code() -> u8 {
    match SIGNALLED.load(Ordering::SeqCst) {
        true => SIGINT_CODE,
        false => SIGPIPE_CODE,
    }
}

/// When a stopped crank must be done looking at what it has in flight
/// (`GRACE` after the first Ctrl-C; now when nothing stopped it).
pub fn deadline() -> Instant {
    let at = AT.lock().ok().and_then(|a| *a);
    at.map_or_else(Instant::now, |at| at + GRACE)
}

/// While it lives, Ctrl-C outside a crank says `words` before the process
/// ends: what the interrupted command leaves open, and how to resume or
/// close it.
pub struct LeavesOpen(());

impl LeavesOpen {
    pub fn say(words: String) -> LeavesOpen {
        if let Ok(mut w) = LEFT_OPEN.lock() {
            *w = Some(words);
        }
        LeavesOpen(())
    }
}

impl Drop for LeavesOpen {
    fn drop(&mut self) {
        if let Ok(mut w) = LEFT_OPEN.lock() {
            *w = None;
        }
    }
}

/// Counts a running crank or cranker in `counter` while it lives.
pub struct Running(&'static AtomicUsize);

impl Running {
    fn start(counter: &'static AtomicUsize) -> Running {
        counter.fetch_add(1, Ordering::SeqCst);
        Running(counter)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        NOTIFY.notify_waiters();
    }
}

/// Marks a crank (or a cranker) as running while the guard lives: Ctrl-C
/// then stops it rather than ending the process at once.
pub fn cranking() -> Running {
    Running::start(&CRANKS)
}

/// Marks a cranker going over many runs (`curta crank`) as running while
/// the guard lives: Ctrl-C then stops it, between its cranks too
/// (`stopped_between_cranks`), rather than ending the process at once.
pub fn cranker() -> Running {
    Running::start(&CRANKERS)
}

/// Resolves once Ctrl-C has been pressed (or the output closed) and no
/// crank is running: a crank stops itself and returns what it did; outside
/// one, a cranker stops where it is.
pub async fn stopped_between_cranks() {
    loop {
        let notified = NOTIFY.notified();
        if INTERRUPTED.load(Ordering::SeqCst) && CRANKS.load(Ordering::SeqCst) == 0 {
            return;
        }
        notified.await;
    }
}

/// Whether Ctrl-C has been pressed (or the output closed) during a crank.
pub fn happened() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Resolves once Ctrl-C has been pressed (or the output closed) during a
/// crank (never without `install`).
pub async fn interrupted() {
    loop {
        let notified = NOTIFY.notified();
        if INTERRUPTED.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}
