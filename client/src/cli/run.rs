//! `curta run`: open, crank, show, close, list; and the crank's progress and
//! figures, which `generate` prints too.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use curta_core::client::fleet;
use serde_json::{json, Value};
use solana_pubkey::Pubkey;

use super::args::{CrankArgs, RunCommand};
use super::cranker::Fleet;
use super::{addr, Globals};
use crate::artifact::Artifact;
use crate::cluster::Cluster;
use crate::crank::{self, Cranked, TurnRecord};
use crate::deliver;
use crate::errors::{Error, Result};
use crate::model;
use crate::output::{count, hex, sol, thousands, Outcome};
use crate::params;
use crate::progress::{self, Progress};
use crate::runs::{self, Opened, RunView};

pub async fn run(g: &Globals, cmd: &RunCommand) -> Result<()> {
    // A run or a model names its program; a list needs one given.
    let c = match cmd {
        RunCommand::Open { model, .. } => g.connect_for(&addr(model, "--model")?, "model").await?,
        RunCommand::Crank { run, .. } | RunCommand::Show { run } | RunCommand::Close { run } => {
            g.connect_for(&addr(run, "run")?, "run").await?
        }
        RunCommand::List => g.connect().await?,
    };
    match cmd {
        RunCommand::Open { model, run, label } => {
            let m = model::read_model(c, &addr(model, "--model")?).await?;
            let params = run.params()?;
            // A deposit of the fee for each turn: the turns come from the
            // replay, over the model's weights.
            let crank = match params.crank_fee {
                0 => Default::default(),
                _ => {
                    let a = model::fetch_artifact(c, &m).await?;
                    let crank_args = CrankArgs::default();
                    super::generate::price(c, &m, &a, &params, &crank_args)
                        .await?
                        .1
                        .crank
                }
            };
            let o = runs::open(c, &m, &params, &crank, label, 0).await?;
            g.print(&o);
        }
        RunCommand::Crank {
            run,
            crank,
            artifact,
        } => {
            let key = addr(run, "run")?;
            let local = artifact
                .artifact
                .as_deref()
                .map(|p| Artifact::load(p, None))
                .transpose()?;
            let ctx = crank::context(c, &key, local).await?;
            let mut out = crank_with_progress(c, &ctx, crank, false)
                .await
                .map_err(|e| stays_open(e, &key, "its deposit to its opener"))?;
            if let Some(stopped) = &out.stopped {
                // Ctrl-C: what it did, the turns that landed while it
                // stopped included, then what it leaves (exit 130).
                g.print(&out);
                crate::interrupt::say(format!(
                    "interrupted: {}",
                    stays_open_words(&key, "its deposit to its opener")
                ));
                if stopped.in_flight.is_empty() {
                    c.journal.close();
                }
                return Ok(());
            }
            // A run that names a callback is delivered once finished.
            if let Some(d) = deliver::plan(c, &key).await? {
                out.delivered = Some(deliver::send(c, &d).await?);
            }
            g.print(&out);
        }
        RunCommand::Show { run } => {
            let (v, _) = runs::show(c, &addr(run, "run")?).await?;
            g.print(&v);
        }
        RunCommand::List => {
            let opener = c.payer_key();
            g.print(&Listed {
                opener,
                runs: runs::opened_by(c, &opener).await?,
            });
        }
        RunCommand::Close { run } => {
            let key = addr(run, "run")?;
            let (recovered, _) = runs::close(c, &key).await?;
            g.print(&ClosedRun {
                run: key,
                recovered,
            });
        }
    }
    Ok(())
}

/// `e`, then that the run stays open, how to resume it, and that closing
/// it returns `returned`: the last words of a command that stopped a run
/// midway, on the error's line.
pub(super) fn stays_open(e: Error, run: &Pubkey, returned: &str) -> Error {
    e.then(stays_open_words(run, returned))
}

/// That the run stays open, how to resume it, and what closing returns.
pub(super) fn stays_open_words(run: &Pubkey, returned: &str) -> String {
    format!(
        "the run {run} stays open: running the same command again resumes it, and `curta run \
         close {run}` returns {returned}"
    )
}

impl Outcome for Opened {
    fn json(&self) -> Value {
        json!({
            "run": self.run.to_string(),
            "opened_now": self.opened_now,
            "account_len": self.account_len,
            "deposit": self.deposit,
            "rent": self.deposit - self.escrow - self.crank.deposit,
            "escrow": self.escrow,
            "crank_fee": self.crank.fee,
            "crank_deposit": self.crank.deposit,
            "transactions": self.summary.transactions,
            "fees": self.summary.fees,
        })
    }

    fn text(&self) -> String {
        format!(
            "run: {}{}\ndeposit: {} of rent, {} of royalty escrow{}, back to the opener (less \
             what turns paid) with `curta run close {}`\nfees: {} ({})\n",
            self.run,
            if self.opened_now {
                ""
            } else {
                " (open already)"
            },
            sol(self.deposit - self.escrow - self.crank.deposit),
            sol(self.escrow),
            match self.crank.fee {
                0 => String::new(),
                fee => format!(
                    " and {} for crankers ({} a turn)",
                    sol(self.crank.deposit),
                    thousands(fee)
                ),
            },
            self.run,
            sol(self.summary.fees),
            count(self.summary.transactions, "transaction", "transactions"),
        )
    }
}

impl Outcome for RunView {
    fn json(&self) -> Value {
        json!({
            "run": self.run.to_string(),
            "model": self.model.to_string(),
            "opener": self.opener.to_string(),
            "lamports": self.lamports,
            "royalty": self.royalty,
            "deposited": self.deposited,
            "escrow": self.escrow,
            "paid": self.paid,
            "crank_fee": self.crank.fee,
            "crank_deposit": self.crank.deposit,
            "crank_paid": self.crank_paid,
            "prompt": String::from_utf8_lossy(&self.prompt),
            "max_tokens": self.max_tokens,
            "temperature_q16": self.temperature_q16,
            "temperature": params::temperature_text(self.temperature_q16),
            "seed": self.seed,
            "allowance": self.allowance,
            "phase": self.info.phase as u32,
            "turns": self.info.turns,
            "generated": self.info.generated,
            "complete": self.info.complete,
            "text": String::from_utf8_lossy(&self.text),
            "text_hex": hex(&self.text),
        })
    }

    fn text(&self) -> String {
        format!(
            "run: {}\nmodel: {}\nopener: {}\n{}: {}, {} of {} tokens\nprompt: {:?}\n\
             temperature: {}, seed: {}\nturn allowance: {}\ntext: {:?}\nroyalty: {} lamports per \
             token; {} paid, {} escrowed\n{}",
            self.run,
            self.model,
            self.opener,
            if self.info.complete {
                "complete"
            } else {
                "in progress"
            },
            count(self.info.turns, "turn", "turns"),
            self.info.generated,
            self.max_tokens,
            String::from_utf8_lossy(&self.prompt),
            params::temperature_text(self.temperature_q16),
            self.seed,
            match self.allowance {
                0 => "none recorded (opened by an older program): the run cannot turn, only close"
                    .to_string(),
                a => format!("{} compute units, fixed at opening", thousands(a as u64)),
            },
            String::from_utf8_lossy(&self.text),
            self.royalty,
            sol(self.paid),
            sol(self.escrow),
            match self.crank.fee {
                0 => String::new(),
                fee => format!(
                    "crank fee: {} lamports a turn; {} paid of {} deposited\n",
                    thousands(fee),
                    sol(self.crank_paid),
                    sol(self.crank.deposit)
                ),
            }
        )
    }
}

/// The signer's open runs.
struct Listed {
    opener: Pubkey,
    runs: Vec<runs::Held>,
}

impl Outcome for Listed {
    fn json(&self) -> Value {
        let runs: Vec<Value> = self
            .runs
            .iter()
            .map(|r| {
                json!({
                    "run": r.run.to_string(),
                    "model": r.model.to_string(),
                    "turns": r.turns,
                    "generated": r.generated,
                    "complete": r.complete,
                    "lamports": r.lamports,
                })
            })
            .collect();
        json!({"opener": self.opener.to_string(), "runs": runs})
    }

    fn text(&self) -> String {
        if self.runs.is_empty() {
            return format!("{} has no open run\n", self.opener);
        }
        let mut out = String::new();
        for r in &self.runs {
            let state = match r.complete {
                true => "complete".to_string(),
                false => format!("{} turns, {} tokens so far", r.turns, r.generated),
            };
            out += &format!(
                "{}  model {}  {state}  holds {}\n",
                r.run,
                r.model,
                sol(r.lamports)
            );
        }
        let held: u64 = self.runs.iter().map(|r| r.lamports).sum();
        out += &format!(
            "{}: {} that `curta run close RUN` returns\n",
            count(self.runs.len() as u64, "open run", "open runs"),
            sol(held)
        );
        out
    }
}

struct ClosedRun {
    run: Pubkey,
    recovered: u64,
}

impl Outcome for ClosedRun {
    fn json(&self) -> Value {
        json!({"run": self.run.to_string(), "recovered": self.recovered})
    }

    fn text(&self) -> String {
        format!(
            "closed run {}: {} back to the opener\n",
            self.run,
            sol(self.recovered)
        )
    }
}

/// Cranks with a progress bar (or a line per turn when stderr is not a
/// terminal); `stream` prints the text to stdout as it arrives instead.
pub(super) async fn crank_with_progress(
    c: &Cluster,
    ctx: &crank::RunContext,
    args: &CrankArgs,
    stream: bool,
) -> Result<Cranked> {
    let machine = crank::machine(c, ctx, args.options()).await?;
    let total = machine.steps().len() as u64;
    let first = machine.summary().turns_before;
    let bar = (!stream && progress::interactive()).then(|| Progress::new("turns", total, "turns"));
    // A line a turn when stderr is not a terminal, unless the text itself
    // streams (the lines would cut it up where both go to one place).
    let plain = !progress::interactive() && !stream;
    let mut machine = machine;
    crank::drive(c, ctx, &mut machine, |t: &TurnRecord| {
        if let Some(b) = &bar {
            b.inc(1);
        }
        if plain {
            crate::interrupt::say(format!(
                "turn {} ({}/{}) landed in slot {}: {} compute units",
                t.turn,
                t.turn - first,
                total,
                t.slot,
                thousands(t.program_cu)
            ));
        }
        if stream {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(&t.text).and_then(|()| out.flush()) {
                crate::interrupt::wrote(&e);
            }
        }
    })
    .await
}

impl Outcome for Cranked {
    fn json(&self) -> Value {
        let turns: Vec<Value> = self
            .turns
            .iter()
            .map(|t| {
                json!({
                    "turn": t.turn,
                    "signature": t.signature.to_string(),
                    "slot": t.slot,
                    "cu_limit": t.cu_limit,
                    "estimated_cu": t.estimated_cu,
                    "charged": t.charged,
                    "program_cu": t.program_cu,
                    "consumed_cu": t.consumed_cu,
                    "fee": t.fee,
                    "generated": t.generated,
                    "tokens": t.tokens,
                    "text": String::from_utf8_lossy(&t.text),
                    "text_hex": hex(&t.text),
                    "state_sha256": hex(&t.state_sha256),
                })
            })
            .collect();
        let failed: Vec<Value> = self
            .failed
            .iter()
            .map(|f| {
                json!({
                    "turn": f.turn, "signature": f.signature.to_string(), "slot": f.slot,
                    "fee": f.fee, "error": f.error,
                })
            })
            .collect();
        json!({
            "run": self.run.to_string(),
            "model": self.model.to_string(),
            "turns_before": self.turns_before,
            "turns": turns,
            "failed": failed,
            "failed_resent": self.failed_resent(),
            "failed_to_others": self.failed_to_others(),
            "turns_by_others": self.turns_by_others,
            "backed_off": self.backoffs > 0,
            "backoffs": self.backoffs,
            "in_flight_most": self.in_flight_most,
            "transactions": self.transactions(),
            "fees": self.fees(),
            "program_cu": self.program_cu(),
            "turns_per_slot": self.turns_per_slot().iter().map(|(s, n)| json!([s, n])).collect::<Vec<_>>(),
            "final_state_sha256": hex(&self.final_state_sha256),
            "text": String::from_utf8_lossy(&self.text),
            "text_hex": hex(&self.text),
            "seconds": self.seconds,
            "delivery": self.delivered.as_ref().map(delivery_json),
            "landed": self.landed(),
            "earned": self.all_earned(),
            "spent": self.all_fees(),
            "stopped": self.stopped.as_ref().map(stopped_json),
        })
    }

    fn text(&self) -> String {
        if self.turns.is_empty() && self.failed.is_empty() && self.stopped.is_none() {
            let by_others = match self.turns_by_others {
                0 => String::new(),
                n => format!(" ({} landed by others)", count(n, "turn", "turns")),
            };
            return format!(
                "run {} is complete after {}{by_others}: no turn to send\n",
                self.run,
                count(self.turns_before + self.turns_by_others, "turn", "turns")
            );
        }
        let per_slot = self.turns_per_slot();
        let slots = match (self.turns.first(), self.turns.last()) {
            (Some(a), Some(b)) => b.slot - a.slot + 1,
            _ => 0,
        };
        let most = per_slot.iter().map(|(_, n)| *n as u64).max().unwrap_or(0);
        let landed_in = match slots {
            0 => String::new(),
            _ => format!(
                " in {} ({}; at most {most} in one)",
                count(slots, "slot", "slots"),
                count(per_slot.len() as u64, "block", "blocks"),
            ),
        };
        let mut out = format!(
            "turns: {}{landed_in}, at most {} in flight, {:.2} s\n",
            turn_counts(self),
            self.in_flight_most,
            self.seconds
        );
        out += &format!(
            "compute units: {} used by the program ({} asked)\n",
            thousands(self.program_cu()),
            thousands(self.turns.iter().map(|t| t.cu_limit as u64).sum())
        );
        out += &format!(
            "fees: {} ({})\n",
            sol(self.fees()),
            count(self.transactions(), "transaction", "transactions")
        );
        if self.backoffs > 0 {
            out += &format!(
                "another cranker moved the run ({} theirs): this one went on a turn at a time, \
                 reading the run before each\n",
                count(self.turns_by_others, "turn", "turns")
            );
        }
        if let Some(d) = &self.delivered {
            out += &format!(
                "delivered to its callback in {}: fee {}, earned {}\n",
                d.signature,
                sol(d.fee),
                sol(d.earned)
            );
        }
        if let Some(s) = &self.stopped {
            out += &stopped_text(s);
            out += &format!(
                "in all: {} landed, {} failed; earned {}, spent {} in fees: {}\n",
                count(self.landed(), "turn", "turns"),
                self.failed_turns(),
                sol(self.all_earned()),
                sol(self.all_fees()),
                super::cranker::profit_words(self.all_earned() as i128 - self.all_fees() as i128)
            );
        }
        out
    }
}

/// What a crank stopped by Ctrl-C had in flight, in words.
fn stopped_text(s: &crank::Stopped) -> String {
    let mut out = format!(
        "stopped by Ctrl-C: {} landed and {} failed while it stopped (counted)",
        count(s.landed.len() as u64, "more turn", "more turns"),
        s.failed.len()
    );
    match s.in_flight.len() {
        0 => out += "; nothing left in flight\n",
        n => {
            out += &format!(
                "; {} in flight, not counted: each may land until its blockhash expires (the \
                 signer's next command settles them first): {}\n",
                count(n as u64, "turn", "turns"),
                s.in_flight
                    .iter()
                    .map(|(turn, sig)| format!("turn {turn} {sig}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
    out
}

/// What a crank stopped by Ctrl-C had in flight, as `--output json` gives it.
fn stopped_json(s: &crank::Stopped) -> Value {
    let late = |l: &crank::Late| {
        json!({"turn": l.turn, "signature": l.signature, "slot": l.slot, "fee": l.fee,
               "earned": l.earned})
    };
    json!({
        "landed": s.landed.iter().map(late).collect::<Vec<_>>(),
        "failed": s.failed.iter().map(late).collect::<Vec<_>>(),
        "in_flight": s.in_flight.iter().map(|(turn, sig)| json!({"turn": turn, "signature": sig}))
            .collect::<Vec<_>>(),
    })
}

/// One pass of `curta crank` over the open runs.
#[derive(Clone, Default)]
pub(super) struct Pass {
    pub cranked: Vec<Cranked>,
    /// Finished runs delivered in this pass (those it cranked to their end
    /// included).
    pub delivered: Vec<deliver::Delivered>,
    /// Finished runs whose delivery fee does not cover its cost: left.
    pub underpaid_deliveries: u64,
    /// Runs it could not advance, and why.
    pub refused: Vec<(Pubkey, String)>,
    /// Runs skipped for paying less than `--min-fee` a turn.
    pub underpaid: u64,
}

impl Outcome for Pass {
    fn json(&self) -> Value {
        let turns = self.landed();
        let failed: u64 = self.cranked.iter().map(Cranked::failed_turns).sum();
        json!({
            "runs": self.cranked.iter().map(|c| json!({
                "run": c.run.to_string(),
                "model": c.model.to_string(),
                "turns_before": c.turns_before,
                "turns": c.landed(),
                "failed": c.failed_turns(),
                "failed_resent": c.failed_resent(),
                "failed_to_others": c.failed_to_others(),
                "turns_by_others": c.turns_by_others,
                "left_to_others": c.left_to_others,
                "left_unpaid": c.left_unpaid,
                "backed_off": c.backoffs > 0,
                "backoffs": c.backoffs,
                "transactions": c.turn_transactions(),
                "fees": c.all_fees(),
                "earned": c.all_earned(),
                "final_state_sha256": hex(&c.final_state_sha256),
                "stopped": c.stopped.as_ref().map(stopped_json),
            })).collect::<Vec<_>>(),
            "refused": self.refused.iter().map(|(r, e)| json!({"run": r.to_string(), "error": e})).collect::<Vec<_>>(),
            "turns": turns,
            "failed": failed,
            "turns_by_others": self.cranked.iter().map(|c| c.turns_by_others).sum::<u64>(),
            "left_to_others": self.cranked.iter().filter(|c| c.left_to_others).count(),
            "left_unpaid": self.cranked.iter().filter(|c| c.left_unpaid).count(),
            "deliveries": self.delivered.iter().map(delivery_json).collect::<Vec<_>>(),
            "transactions": self.transactions(),
            "fees": self.fees(),
            "earned": self.earned(),
            "in_flight": self.in_flight(),
            "profit_per_turn": super::cranker::profit_per_turn(
                self.earned() as i128 - self.fees() as i128,
                turns
            ),
            "skipped_below_min_fee": self.underpaid,
            "deliveries_skipped_below_cost": self.underpaid_deliveries,
        })
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.cranked {
            out += &format!(
                "run {}: {}{}; fees {}, earned {}\n",
                c.run,
                turn_counts(c),
                match (c.left_to_others, c.left_unpaid) {
                    (true, _) => "; left to the other cranker",
                    (_, true) => "; left where its turns stop paying what one costs",
                    _ => "",
                },
                sol(c.all_fees()),
                sol(c.all_earned())
            );
            if let Some(s) = &c.stopped {
                out += &format!("run {}: {}", c.run, stopped_text(s));
            }
        }
        for (run, e) in &self.refused {
            out += &format!("run {run}: not cranked: {e}\n");
        }
        for d in &self.delivered {
            out += &format!(
                "run {}: delivered in {} (fee {}, earned {})\n",
                d.run,
                d.signature,
                sol(d.fee),
                sol(d.earned)
            );
        }
        if self.underpaid > 0 {
            out += &format!(
                "{} whose next turn pays less than it costs (or --min-fee): skipped\n",
                count(self.underpaid, "run", "runs")
            );
        }
        if self.underpaid_deliveries > 0 {
            out += &format!(
                "{} whose delivery fee is below the delivery's cost: not delivered\n",
                count(self.underpaid_deliveries, "finished run", "finished runs")
            );
        }
        let landed = self.landed();
        let sent: u64 = self.cranked.iter().map(Cranked::turn_transactions).sum();
        let (fees, earned) = (self.fees(), self.earned());
        out += &format!(
            "{}: {} landed by this cranker in {} ({} per turn landed)\n",
            count(self.cranked.len() as u64, "run", "runs"),
            count(landed, "turn", "turns"),
            count(sent, "transaction", "transactions"),
            match landed {
                0 => "none".to_string(),
                _ => format!("{:.2}", sent as f64 / landed as f64),
            }
        );
        let profit = earned as i128 - fees as i128;
        out += &format!(
            "earned {}, spent {} in fees: {}{}\n",
            sol(earned),
            sol(fees),
            super::cranker::profit_words(profit),
            match super::cranker::profit_per_turn(profit, landed) {
                Some(p) => format!(" ({p} lamports a turn landed)"),
                None => String::new(),
            }
        );
        out
    }
}

impl Pass {
    /// Turns and deliveries that landed.
    fn transactions(&self) -> u64 {
        self.cranked
            .iter()
            .map(Cranked::turn_transactions)
            .sum::<u64>()
            + self.delivered.len() as u64
    }
    /// Fees of every transaction of its that landed.
    pub fn fees(&self) -> u64 {
        self.cranked.iter().map(Cranked::all_fees).sum::<u64>()
            + self.delivered.iter().map(|d| d.fee).sum::<u64>()
    }
    /// Crank fees and delivery fees earned.
    pub fn earned(&self) -> u64 {
        self.cranked.iter().map(Cranked::all_earned).sum::<u64>()
            + self.delivered.iter().map(|d| d.earned).sum::<u64>()
    }
    /// Turns of its own that landed.
    pub fn landed(&self) -> u64 {
        self.cranked.iter().map(Cranked::landed).sum()
    }
    /// Turns sent whose outcome is unknown (after Ctrl-C): not counted.
    pub fn in_flight(&self) -> u64 {
        self.cranked.iter().map(Cranked::in_flight).sum()
    }
}

/// A crank's turns in words: those it landed, its failed ones resent, and
/// those another cranker landed, with this one's that failed on them (paid
/// for, never its own turns).
fn turn_counts(c: &Cranked) -> String {
    let mut out = format!("{} landed", count(c.turns.len() as u64, "turn", "turns"));
    if c.failed_resent() > 0 {
        out += &format!(", {} failed and resent", c.failed_resent());
    }
    if c.turns_by_others > 0 || c.failed_to_others() > 0 {
        out += &format!(", {} landed by another cranker", c.turns_by_others);
    }
    if c.failed_to_others() > 0 {
        out += &format!(
            " ({} of this one's failed: the other's landed first)",
            c.failed_to_others()
        );
    }
    out
}

/// A delivery as `--output json` gives it.
fn delivery_json(d: &deliver::Delivered) -> Value {
    json!({
        "run": d.run.to_string(),
        "signature": d.signature.to_string(),
        "slot": d.slot,
        "fee": d.fee,
        "earned": d.earned,
        "compute_units": d.compute_units,
    })
}

/// `curta crank`: every open run (of `model`, when given) that pays what a
/// turn costs (or `min_fee`) cranked to its end, in the signer's order
/// (`fleet_runs`), pass after pass; a run that cannot be advanced is
/// reported and left, and one another cranker is on is left to it and come
/// back to at the end of the pass (`fleet_options`). With `once`, one pass
/// and its outcome; else a pass's outcome each time one advanced something,
/// until interrupted. Ctrl-C (or a closed output) ends it within a second,
/// printing the pass under way and the totals (`cranker::Fleet::run`); a
/// signer that cannot pay a turn ends it with an error.
pub async fn crank_all(
    g: &Globals,
    model: Option<&str>,
    once: bool,
    interval: f64,
    min_fee: Option<u64>,
    args: &CrankArgs,
) -> Result<()> {
    let c = g.connect().await?;
    let fleet = Fleet::new(g, c);
    let passes = crank_passes(c, &fleet, model, once, interval, min_fee, args);
    fleet.run(passes).await
}

/// `crank_all`'s passes; `fleet` prints them and their progress.
#[allow(clippy::too_many_arguments)]
async fn crank_passes(
    c: &Cluster,
    fleet: &Fleet<'_>,
    model: Option<&str>,
    once: bool,
    interval: f64,
    min_fee: Option<u64>,
    args: &CrankArgs,
) -> Result<()> {
    let model = model.map(|m| addr(m, "--model")).transpose()?;
    let pause = std::time::Duration::from_secs_f64(interval.max(0.1));
    // Each model's weights fetched once; a run refused once is not tried
    // again (it is reported once).
    let mut weights: HashMap<Pubkey, Artifact> = HashMap::new();
    let mut refused: HashSet<Pubkey> = HashSet::new();
    loop {
        let mut pass = Pass {
            cranked: vec![],
            delivered: vec![],
            underpaid_deliveries: 0,
            refused: vec![],
            underpaid: 0,
        };
        let (mut queue, underpaid) = fleet_runs(c, model.as_ref(), min_fee, args).await?;
        pass.underpaid = underpaid;
        let (mut left, mut coming_back) = (vec![], false);
        queue.reverse();
        loop {
            let Some((p, floor)) = queue.pop() else {
                if coming_back || left.is_empty() {
                    break;
                }
                // The runs left to other crankers, if still unfinished.
                coming_back = true;
                let (mut again, _) = fleet_runs(c, model.as_ref(), min_fee, args).await?;
                again.retain(|(p, _)| left.contains(&p.run));
                again.reverse();
                queue = again;
                continue;
            };
            if refused.contains(&p.run) {
                continue;
            }
            let opts = fleet_options(args, coming_back, floor);
            let cranked = match crank::context(c, &p.run, weights.get(&p.model).cloned()).await {
                Ok(ctx) => {
                    weights.insert(p.model, ctx.artifact.clone());
                    fleet.crank(&ctx, opts).await
                }
                Err(e) => Err(e),
            };
            match cranked {
                Ok(out) => {
                    if out.left_to_others {
                        left.push(p.run);
                    }
                    let stopped = out.stopped.is_some();
                    pass.cranked.push(out);
                    fleet.ran(&pass);
                    // Ctrl-C stops the cranker, not just this run: the
                    // fleet prints what it did.
                    if stopped {
                        return Ok(());
                    }
                }
                Err(_) if crate::interrupt::happened() => return Ok(()),
                // A signer that cannot pay cannot crank any other run.
                Err(e) if e.is_for_every_run() => {
                    fleet.print(&pass);
                    return Err(e);
                }
                Err(e) => {
                    refused.insert(p.run);
                    pass.refused.push((p.run, e.to_string()));
                }
            }
        }
        // Then every finished run that names a callback, cranked now or
        // before: delivered when its fee covers what sending it costs.
        for (run, fee) in runs::deliverable(c, model.as_ref()).await? {
            if refused.contains(&run) {
                continue;
            }
            let outcome = match deliver::plan(c, &run).await {
                Ok(Some(d)) => match deliver::cost(c, &d).await {
                    Ok(cost) if fee < cost.max(min_fee.unwrap_or(0)) => {
                        pass.underpaid_deliveries += 1;
                        continue;
                    }
                    Ok(_) => fleet.deliver(&d).await.map(Some),
                    Err(e) => Err(e),
                },
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(Some(d)) => {
                    pass.delivered.push(d);
                    fleet.ran(&pass);
                }
                Ok(None) => {}
                Err(_) if crate::interrupt::happened() => return Ok(()),
                Err(e) => {
                    refused.insert(run);
                    pass.refused.push((run, e.to_string()));
                }
            }
        }
        if once {
            fleet.print(&pass);
            return Ok(());
        }
        let print =
            !pass.cranked.is_empty() || !pass.refused.is_empty() || !pass.delivered.is_empty();
        if print {
            fleet.print(&pass);
        }
        fleet.idle(&pass, print, pause);
        tokio::time::sleep(pause).await;
    }
}

/// The open runs (of `model`, when given) a cranker takes this pass, in its
/// order, each with the least a turn of it must pay, and how many it
/// skipped: those whose next turn pays less than `min_fee`, or without
/// one, less than what a turn of theirs costs the signer
/// (`quote::turn_cost`, asked once for each allowance).
async fn fleet_runs(
    c: &Cluster,
    model: Option<&Pubkey>,
    min_fee: Option<u64>,
    args: &CrankArgs,
) -> Result<(Vec<(runs::Pending, u64)>, u64)> {
    let pending = runs::pending(c, model).await?;
    let mut costs: HashMap<u32, u64> = HashMap::new();
    if min_fee.is_none() {
        for p in &pending {
            if let std::collections::hash_map::Entry::Vacant(e) = costs.entry(p.allowance) {
                e.insert(crate::quote::turn_cost(c, p.allowance, &args.options()).await?);
            }
        }
    }
    let pending = pending
        .into_iter()
        .map(|p| {
            let cost = costs.get(&p.allowance).copied().unwrap_or(0);
            (p, fleet::floor(cost, min_fee))
        })
        .collect();
    Ok(fleet::select(
        &c.payer_key().to_bytes(),
        pending,
        |(p, _)| p.run.to_bytes(),
        |(p, floor)| (p.crank_payment, *floor),
    ))
}

/// How a fleet's cranker cranks a run: it leaves one it finds another
/// cranker on to it; coming back to such a run, it follows whoever moves
/// it, and takes it over once it stands still, as `run crank` does; and it
/// sends only the turns that pay `floor`, ending where the deposit no
/// longer does.
fn fleet_options(args: &CrankArgs, coming_back: bool, floor: u64) -> crank::Options {
    crank::Options {
        leave_to_others: !coming_back,
        follow_first: coming_back,
        min_payment: Some(floor),
        ..args.options()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::client::crank::{FailedTurn, Summary};

    fn cranked(landed: &[u64], failed: &[u64], by_others: u64, left: bool) -> Cranked {
        let turn = |turn| TurnRecord {
            turn,
            signature: String::new(),
            slot: 1,
            cu_limit: 0,
            estimated_cu: 0,
            charged: 0,
            program_cu: 0,
            consumed_cu: 0,
            fee: 5_200,
            crank_paid: 20_000,
            generated: 0,
            tokens: vec![],
            text: vec![],
            state_sha256: [0; 32],
        };
        let failure = |turn| FailedTurn {
            turn,
            signature: String::new(),
            slot: 1,
            fee: 5_200,
            error: "StaleTurn".into(),
        };
        Cranked {
            run: Pubkey::new_from_array([1; 32]),
            model: Pubkey::new_from_array([2; 32]),
            seconds: 1.0,
            done: Summary {
                turns: landed.iter().map(|&t| turn(t)).collect(),
                failed: failed.iter().map(|&t| failure(t)).collect(),
                turns_by_others: by_others,
                left_to_others: left,
                ..Summary::default()
            },
            delivered: None,
            stopped: None,
        }
    }

    /// A turn another cranker landed is the other's, and this one's transaction
    /// that failed on it is not "failed and resent".
    #[test]
    fn the_other_crankers_turns_are_its_own_and_not_resent() {
        let alone = cranked(&[1, 2, 3], &[2], 0, false);
        assert_eq!((alone.failed_resent(), alone.failed_to_others()), (1, 0));
        assert_eq!(turn_counts(&alone), "3 turns landed, 1 failed and resent");
        let raced = cranked(&[1, 2, 5], &[3, 4, 5], 2, false);
        assert_eq!((raced.failed_resent(), raced.failed_to_others()), (1, 2));
        assert_eq!(
            turn_counts(&raced),
            "3 turns landed, 1 failed and resent, 2 landed by another cranker (2 of this one's \
             failed: the other's landed first)"
        );
        let left = cranked(&[], &[1], 1, true);
        let pass = Pass {
            cranked: vec![left],
            delivered: vec![],
            underpaid_deliveries: 0,
            refused: vec![],
            underpaid: 1,
        };
        let text = pass.text();
        assert!(
            text.starts_with(
                "run 4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi: 0 turns landed, 1 landed by \
                 another cranker (1 of this one's failed: the other's landed first); left to the \
                 other cranker; fees 0.000005200 SOL, earned 0.000000000 SOL\n"
            ),
            "{text}"
        );
        let json = pass.json();
        assert_eq!(json["runs"][0]["failed"], 1);
        assert_eq!(json["runs"][0]["failed_to_others"], 1);
        assert_eq!(json["runs"][0]["failed_resent"], 0);
        assert_eq!(json["runs"][0]["turns_by_others"], 1);
        assert_eq!(json["runs"][0]["left_to_others"], true);
        assert_eq!(json["left_to_others"], 1);
        assert_eq!(json["skipped_below_min_fee"], 1);
    }
}
