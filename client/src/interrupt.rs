//! Ctrl-C. While a crank runs, the first one stops it cleanly: the crank
//! sends nothing more and the command says what it leaves open and how to
//! resume or close it. At any other time Ctrl-C ends the process at once,
//! as it does without a handler (code 130), first saying what the command
//! leaves open when it has said so (`LeavesOpen`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;

static CRANKS: AtomicUsize = AtomicUsize::new(0);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static NOTIFY: Notify = Notify::const_new();
static LEFT_OPEN: Mutex<Option<String>> = Mutex::new(None);

/// Handles Ctrl-C for the rest of the process (the CLI calls it once, in
/// its runtime; a library user that does not keeps the default).
pub fn install() {
    tokio::spawn(async {
        while tokio::signal::ctrl_c().await.is_ok() {
            if CRANKS.load(Ordering::SeqCst) == 0 {
                eprintln!();
                if let Some(words) = LEFT_OPEN.lock().ok().and_then(|w| w.clone()) {
                    eprintln!("interrupted: {words}");
                }
                std::process::exit(130);
            }
            INTERRUPTED.store(true, Ordering::SeqCst);
            NOTIFY.notify_waiters();
        }
    });
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

/// Marks a crank as running while it lives.
pub struct Cranking(());

impl Cranking {
    pub fn start() -> Cranking {
        CRANKS.fetch_add(1, Ordering::SeqCst);
        Cranking(())
    }
}

impl Drop for Cranking {
    fn drop(&mut self) {
        CRANKS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether Ctrl-C has been pressed during a crank.
pub fn happened() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Resolves once Ctrl-C has been pressed during a crank (never without
/// `install`).
pub async fn interrupted() {
    loop {
        let notified = NOTIFY.notified();
        if INTERRUPTED.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}
