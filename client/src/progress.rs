//! Progress on stderr: a bar on a terminal, plain lines otherwise (a log,
//! a pipe, a test reading the output), so long steps always say how far
//! they are.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A long step: `total` units of something (bytes, transactions, turns).
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    unit: &'static str,
    total: u64,
    plain: Mutex<Plain>,
}

struct Plain {
    done: u64,
    printed_at: Instant,
    printed: u64,
}

/// How often the plain form prints a line: every 2 s, or every
/// `CURTA_PROGRESS_INTERVAL_MS` (0: at every step, for tests that act on
/// progress).
fn plain_every() -> Duration {
    std::env::var("CURTA_PROGRESS_INTERVAL_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(2), Duration::from_millis)
}

/// Whether stderr is a terminal (bars) or not (lines).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

impl Progress {
    pub fn new(label: impl Into<String>, total: u64, unit: &'static str) -> Progress {
        let label = label.into();
        let bar = interactive().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = format!(
                "{{prefix}} [{{bar:32}}] {{pos}}/{{len}} {unit} {{msg}} ({{elapsed}}, eta {{eta}})"
            );
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label.clone());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let p = Progress {
            bar,
            label,
            unit,
            total,
            plain: Mutex::new(Plain {
                done: 0,
                printed_at: Instant::now(),
                printed: u64::MAX,
            }),
        };
        p.plain_line(0, true);
        p
    }

    /// `n` more units done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        let done = {
            let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
            plain.done += n;
            plain.done
        };
        self.plain_line(done, false);
    }

    /// A message beside the bar (or in the next plain line).
    pub fn set_message(&self, message: impl Into<String>) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.into());
        }
    }

    /// A line above the bar, or on its own.
    pub fn println(&self, line: impl AsRef<str>) {
        match &self.bar {
            Some(bar) => bar.println(line.as_ref()),
            None => crate::interrupt::say(line.as_ref()),
        }
    }

    /// Ends the bar and prints its final line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let done = self.plain.lock().unwrap_or_else(|e| e.into_inner()).done;
        self.plain_line(done, true);
    }

    fn plain_line(&self, done: u64, force: bool) {
        if self.bar.is_some() {
            return;
        }
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        let due = plain.printed_at.elapsed() >= plain_every() || done == self.total;
        if (force || due) && plain.printed != done {
            plain.printed_at = Instant::now();
            plain.printed = done;
            crate::interrupt::say(format!(
                "{}: {done}/{} {}",
                self.label, self.total, self.unit
            ));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A long-lived status: a cranker's. On a terminal, one line redrawn in
/// place (a bar while a run is cranked, a spinner while idle); otherwise
/// plain lines on stderr, at most one every 2 s (`CURTA_PROGRESS_INTERVAL_MS`)
/// unless forced.
pub struct Ticker {
    bar: Option<ProgressBar>,
    printed_at: Mutex<Option<Instant>>,
}

impl Default for Ticker {
    fn default() -> Self {
        Ticker::new()
    }
}

impl Ticker {
    pub fn new() -> Ticker {
        let bar = interactive().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let t = Ticker {
            bar,
            printed_at: Mutex::new(None),
        };
        t.idle_style();
        t
    }

    fn idle_style(&self) {
        if let Some(bar) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg}") {
                bar.set_style(style);
            }
        }
    }

    /// A run of `total` turns begins: the bar counts its turns.
    pub fn run(&self, label: String, total: u64) {
        if let Some(bar) = &self.bar {
            if let Ok(style) =
                ProgressStyle::with_template("{prefix} [{bar:24}] {pos}/{len} turns {wide_msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_length(total);
            bar.set_position(0);
            bar.set_prefix(label);
        }
    }

    /// The run's bar at `done` turns, with `beside` beside it; or `line`
    /// when one is due.
    pub fn turn(&self, done: u64, beside: String, line: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            bar.set_message(beside);
            return;
        }
        self.plain(line(), false);
    }

    /// Idle, or between runs: the spinner's message, or a plain line
    /// (always printed when `force`).
    pub fn status(&self, message: String, force: bool) {
        if let Some(bar) = &self.bar {
            self.idle_style();
            bar.set_message(message);
            return;
        }
        self.plain(message, force);
    }

    /// A line above the bar, or on its own.
    pub fn println(&self, line: impl AsRef<str>) {
        match &self.bar {
            Some(bar) => bar.suspend(|| crate::interrupt::say(line.as_ref())),
            None => crate::interrupt::say(line.as_ref()),
        }
    }

    /// Runs `f` (which prints) with the bar out of the way, then draws it
    /// again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Clears the bar for good (before the last summary is printed).
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn plain(&self, line: String, force: bool) {
        let mut at = self.printed_at.lock().unwrap_or_else(|e| e.into_inner());
        let due = at.is_none_or(|t| t.elapsed() >= plain_every());
        if force || due {
            *at = Some(Instant::now());
            crate::interrupt::say(line);
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.clear();
    }
}
