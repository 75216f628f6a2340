//! `curta crank` as a person runs it: progress while it cranks (a bar on a
//! terminal, plain lines otherwise), a line each idle pass, each pass's
//! summary with the totals since it started, and Ctrl-C (or a closed
//! output) ending it within a second, printing totals that are the
//! signer's balance change. The fleet logic (which runs, in what order)
//! stays in `run::crank_all`; this is its printing and its stopping.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use serde_json::{json, Value};
use solana_pubkey::Pubkey;

use super::run::Pass;
use super::Globals;
use curta_core::client::delivery::Delivery;

use crate::cluster::Cluster;
use crate::crank::{self, Cranked, TurnRecord};
use crate::deliver;
use crate::errors::Result;
use crate::output::{count, sol, Outcome};
use crate::progress::Ticker;

/// What a cranker did since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Totals {
    pub passes: u64,
    pub runs: u64,
    pub landed: u64,
    pub failed: u64,
    pub in_flight: u64,
    pub deliveries: u64,
    pub earned: u64,
    pub spent: u64,
}

impl Totals {
    fn add(&mut self, pass: &Pass) {
        self.runs += pass.cranked.len() as u64;
        self.landed += pass.landed();
        self.failed += pass.cranked.iter().map(Cranked::failed_turns).sum::<u64>();
        self.in_flight += pass.in_flight();
        self.deliveries += pass.delivered.len() as u64;
        self.earned += pass.earned();
        self.spent += pass.fees();
    }

    fn plus(mut self, pass: &Pass) -> Totals {
        self.add(pass);
        self
    }

    /// Earned less spent.
    pub fn profit(&self) -> i128 {
        self.earned as i128 - self.spent as i128
    }

    pub fn json(&self) -> Value {
        json!({
            "passes": self.passes,
            "runs": self.runs,
            "turns": self.landed,
            "failed": self.failed,
            "in_flight": self.in_flight,
            "deliveries": self.deliveries,
            "earned": self.earned,
            "fees": self.spent,
            "profit": self.profit() as i64,
            "profit_per_turn": profit_per_turn(self.profit(), self.landed),
        })
    }

    /// `in all: 2 passes, 3 runs, 54 turns landed, 0 failed; earned X,
    /// spent Y: profit Z (N lamports a turn)`.
    pub fn text(&self) -> String {
        format!(
            "in all: {}, {}, {} landed, {} failed{}{}; earned {}, spent {} in fees: {}{}",
            count(self.passes, "pass", "passes"),
            count(self.runs, "run", "runs"),
            count(self.landed, "turn", "turns"),
            self.failed,
            match self.in_flight {
                0 => String::new(),
                n => format!(", {n} in flight (not counted)"),
            },
            match self.deliveries {
                0 => String::new(),
                n => format!(", {}", count(n, "delivery", "deliveries")),
            },
            sol(self.earned),
            sol(self.spent),
            profit_words(self.profit()),
            match profit_per_turn(self.profit(), self.landed) {
                Some(p) => format!(" ({p} lamports a turn)"),
                None => String::new(),
            }
        )
    }
}

/// Profit or loss, in SOL.
pub(super) fn profit_words(profit: i128) -> String {
    match profit >= 0 {
        true => format!("profit {}", sol(profit as u64)),
        false => format!("loss {}", sol(profit.unsigned_abs() as u64)),
    }
}

/// Profit per turn landed, in whole lamports (rounded toward zero).
pub(super) fn profit_per_turn(profit: i128, landed: u64) -> Option<i64> {
    (landed > 0).then(|| (profit / landed as i128) as i64)
}

/// A pass as `curta crank` prints it: its runs and figures, then the
/// totals since the cranker started, and whether Ctrl-C ended it.
struct Printed<'a> {
    pass: &'a Pass,
    totals: Totals,
    interrupted: bool,
}

impl Outcome for Printed<'_> {
    fn json(&self) -> Value {
        let mut v = self.pass.json();
        v["totals"] = self.totals.json();
        v["interrupted"] = json!(self.interrupted);
        v
    }

    fn text(&self) -> String {
        let mut out = self.pass.text();
        out += &self.totals.text();
        out.push('\n');
        if self.interrupted {
            out += "interrupted: the cranker stopped; every figure above is what the signer's \
                    balance moved by";
            if self.totals.in_flight > 0 {
                out += ", but for the turns in flight, which may still land";
            }
            out.push('\n');
        }
        out
    }
}

/// The cranker's state: the totals of its passes, the pass under way, the
/// delivery being sent, and its progress.
pub(super) struct Fleet<'a> {
    g: &'a Globals,
    c: &'a Cluster,
    ticker: Ticker,
    done: Cell<Totals>,
    current: RefCell<Option<Pass>>,
    /// Runs of the pass under way that ended in an error, with what they
    /// did (the pass lists them as refused).
    partial: RefCell<Vec<Cranked>>,
    delivering: Cell<Option<Pubkey>>,
    /// A crank ended in an error: what it had in flight is unknown.
    errored: Cell<bool>,
    _cranker: crate::interrupt::Running,
}

impl<'a> Fleet<'a> {
    pub fn new(g: &'a Globals, c: &'a Cluster) -> Fleet<'a> {
        Fleet {
            g,
            c,
            ticker: Ticker::new(),
            done: Cell::new(Totals::default()),
            current: RefCell::new(None),
            partial: RefCell::new(vec![]),
            delivering: Cell::new(None),
            errored: Cell::new(false),
            _cranker: crate::interrupt::cranker(),
        }
    }

    /// Runs the cranker's passes until they end or Ctrl-C stops them: a
    /// crank running then stops itself (and `passes` returns at once);
    /// between cranks the passes are dropped where they are. Either way
    /// the pass under way and the totals are printed.
    pub async fn run(&self, passes: impl std::future::Future<Output = Result<()>>) -> Result<()> {
        let outcome = tokio::select! {
            biased;
            outcome = passes => outcome,
            _ = crate::interrupt::stopped_between_cranks() => Ok(()),
        };
        if !crate::interrupt::happened() {
            return outcome;
        }
        self.ticker.clear();
        let pass = self.with_partial(&self.current.take().unwrap_or_default());
        let mut totals = self.done.get().plus(&pass);
        totals.passes += 1;
        if let Some(run) = self.delivering.get() {
            totals.in_flight += 1;
            crate::interrupt::say(format!(
                "the delivery of run {run} was being sent: it may land (not counted)"
            ));
        }
        self.g.print(&Printed {
            pass: &pass,
            totals,
            interrupted: true,
        });
        // Nothing of this signer's can land any more: no later command
        // need settle this process's journal.
        if totals.in_flight == 0 && !self.errored.get() {
            self.c.journal.close();
        }
        Ok(())
    }

    /// Cranks a run, its bar counting its turns.
    pub async fn crank(&self, ctx: &crank::RunContext, opts: crank::Options) -> Result<Cranked> {
        let mut machine = crank::machine(self.c, ctx, opts).await?;
        let total = machine.steps().len() as u64;
        let short = ctx.run.to_string();
        self.ticker.run(format!("run {}…", &short[..8]), total);
        let before = self.figures();
        let (mut landed, mut earned, mut spent) = (0u64, 0u64, 0u64);
        let out = crank::drive(self.c, ctx, &mut machine, |t: &TurnRecord| {
            landed += 1;
            earned += t.crank_paid;
            spent += t.fee;
            let profit = before.profit() + earned as i128 - spent as i128;
            let turns = before.landed + landed;
            let figures = format!(
                "{}, {} landed, earned {}, spent {}{}",
                count(before.runs + 1, "run", "runs"),
                count(turns, "turn", "turns"),
                sol(before.earned + earned),
                sol(before.spent + spent),
                match profit_per_turn(profit, turns) {
                    Some(p) => format!(", {p} lamports profit a turn"),
                    None => String::new(),
                }
            );
            self.ticker
                .turn(landed, format!("turn {} | {figures}", t.turn), || {
                    format!(
                        "run {}: turn {} landed ({landed}/{total}) | {figures}",
                        ctx.run, t.turn
                    )
                });
        })
        .await;
        // A run that ended in an error still paid for what it did: counted.
        if out.is_err() {
            self.errored.set(true);
        }
        if out.is_err() && machine.summary().transactions() > 0 {
            self.partial
                .borrow_mut()
                .push(Cranked::partial(ctx, &machine));
        }
        out
    }

    /// Sends a finished run's delivery (counted as in flight if Ctrl-C
    /// comes while it is sent).
    pub async fn deliver(&self, d: &Delivery) -> Result<deliver::Delivered> {
        self.delivering.set(Some(Pubkey::new_from_array(d.run)));
        let sent = deliver::send(self.c, d).await;
        self.delivering.set(None);
        if sent.is_err() {
            self.errored.set(true);
        }
        sent
    }

    /// What the pass under way has done so far.
    pub fn ran(&self, pass: &Pass) {
        *self.current.borrow_mut() = Some(pass.clone());
    }

    /// The totals so far, the pass under way included.
    fn figures(&self) -> Totals {
        let current = self.current.borrow().clone().unwrap_or_default();
        self.done.get().plus(&self.with_partial(&current))
    }

    /// A pass with the runs that ended in an error in it.
    fn with_partial(&self, pass: &Pass) -> Pass {
        let mut pass = pass.clone();
        pass.cranked.extend(self.partial.borrow().iter().cloned());
        pass
    }

    /// Prints a pass with the totals since the start, and counts it.
    pub fn print(&self, pass: &Pass) {
        let pass = &self.with_partial(pass);
        self.partial.borrow_mut().clear();
        let mut done = self.done.get().plus(pass);
        done.passes += 1;
        self.ticker.suspend(|| {
            self.g.print(&Printed {
                pass,
                totals: done,
                interrupted: false,
            })
        });
        self.done.set(done);
        *self.current.borrow_mut() = None;
    }

    /// A pass is over and the cranker waits `pause`: a line saying so
    /// (each pass), and the pass counted (when it was not printed).
    pub fn idle(&self, pass: &Pass, printed: bool, pause: Duration) {
        if !printed {
            let pass = &self.with_partial(pass);
            self.partial.borrow_mut().clear();
            let mut done = self.done.get().plus(pass);
            done.passes += 1;
            self.done.set(done);
            *self.current.borrow_mut() = None;
        }
        let t = self.done.get();
        let what = match pass.cranked.is_empty() && pass.delivered.is_empty() {
            true => "no run to crank".to_string(),
            false => format!(
                "pass {}: {} cranked",
                t.passes,
                count(pass.cranked.len() as u64, "run", "runs")
            ),
        };
        self.ticker.status(
            format!(
                "{what}; {} skipped below --min-fee; waiting {} s | {}",
                pass.underpaid,
                pause.as_secs_f64(),
                t.text()
            ),
            true,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_in_words_and_profit_per_turn() {
        let t = Totals {
            passes: 2,
            runs: 1,
            landed: 54,
            failed: 1,
            in_flight: 2,
            deliveries: 0,
            earned: 540_000,
            spent: 275_000,
        };
        assert_eq!(
            t.text(),
            "in all: 2 passes, 1 run, 54 turns landed, 1 failed, 2 in flight (not counted); \
             earned 0.000540000 SOL, spent 0.000275000 SOL in fees: profit 0.000265000 SOL \
             (4907 lamports a turn)"
        );
        assert_eq!(t.json()["profit_per_turn"], 4907);
        assert_eq!(profit_per_turn(-10_000, 4), Some(-2_500));
        assert_eq!(profit_per_turn(10, 0), None);
        assert_eq!(profit_words(-5), "loss 0.000000005 SOL");
    }
}
