//! `curta generate`: open a run (checking first that the signer can pay
//! all of it), crank it printing the text as it arrives, close it.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use curta_core::state::diff::first_difference;
use serde_json::{json, Value};

use super::args::CrankArgs;
use super::run::{crank_with_progress, stays_open, stays_open_words};
use super::{addr, Globals};
use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::Cluster;
use crate::crank::{self, Cranked};
use crate::errors::{Error, Result};
use crate::interrupt::LeavesOpen;
use crate::model::{self, ModelInfo};
use crate::output::{count, sol, Outcome};
use crate::params::Params;
use crate::quote::{self, Needs, Quote, QuoteInputs};
use crate::runs::{self, Opened};
use crate::sender::Summary;

pub struct Request<'a> {
    pub model: &'a str,
    pub params: Params,
    pub crank: &'a CrankArgs,
    pub artifact: Option<&'a Path>,
    pub label: &'a str,
    pub keep: bool,
    /// Open and leave the turns to crankers.
    pub no_crank: bool,
}

/// A whole generation: the crank's figures, and the opening's, the
/// closing's and the quote's beside them.
struct Generated {
    crank: Cranked,
    prompt: Vec<u8>,
    opened: Opened,
    closed: Option<(u64, Summary)>,
    quote: Quote,
    all: Summary,
    balance_change: i128,
    wall_seconds: f64,
}

pub async fn run(g: &Globals, r: Request<'_>) -> Result<()> {
    let key = addr(r.model, "--model")?;
    let c = g.connect_for(&key, "model").await?;
    let model = model::read_model(c, &key).await?;
    let artifact = match r.artifact {
        Some(p) => {
            let a = Artifact::load(p, None)?;
            model::check_artifact(&model, &a)?;
            a
        }
        None => model::fetch_artifact(c, &model).await?,
    };
    if r.no_crank {
        let (_, quoted) = price(c, &model, &artifact, &r.params, r.crank).await?;
        let opened = runs::open(c, &model, &r.params, &quoted.crank, r.label, 0).await?;
        g.print(&opened);
        return Ok(());
    }
    let mut streamed = false;
    let out = generate(c, &model, &r, artifact, !g.json(), &mut streamed).await;
    if streamed {
        // The text streamed without a newline: the summary, or the error,
        // starts on a line of its own.
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out).and_then(|()| out.flush()) {
            crate::interrupt::wrote(&e);
        }
    }
    let out = out?;
    g.print(&out);
    Ok(())
}

/// A run of `model` priced on the cluster: its allowance, fee schedule and
/// rent, and the crank fee asked (the deposit is that fee for each turn).
pub(super) async fn price(
    c: &Cluster,
    model: &ModelInfo,
    artifact: &Artifact,
    params: &Params,
    crank: &CrankArgs,
) -> Result<(QuoteInputs, Quote)> {
    params.check(&model.config)?;
    let allowance = model::read_config(c, &model.keys.config_account)
        .await?
        .allowance;
    let prices = QuoteInputs {
        allowance,
        royalty: model.royalty,
        lamports_per_signature: c.lamports_per_signature().await?,
        limits: crank.cu_limit,
        priority_ramp: !crank.no_priority_ramp,
        window: crank.window,
        crank_fee: params.crank_fee,
    };
    let run_params = params.as_run_params();
    let rent = c.rent(quote::account_len(artifact, &run_params)?).await?;
    let quoted = quote::quote(artifact, &run_params, &prices, rent)?;
    Ok((prices, quoted))
}

async fn generate(
    c: &Cluster,
    model: &ModelInfo,
    r: &Request<'_>,
    artifact: Artifact,
    streams: bool,
    streamed: &mut bool,
) -> Result<Generated> {
    let started = Instant::now();
    let params = &r.params;
    let (prices, quoted) = price(c, model, &artifact, params, r.crank).await?;
    let run_params = params.as_run_params();
    let before = c.balance(&c.payer_key()).await?;
    // The turns' and the close's fees, for the balance check at opening.
    let after_open = quoted.fees() - quoted.open_fees(prices.lamports_per_signature);
    let opened = runs::open(c, model, params, &quoted.crank, r.label, after_open).await?;
    let returned = format!("its {} to you", sol(opened.deposit));
    let stays_open = |e: Error| stays_open(e, &opened.run, &returned);
    // Ctrl-C outside the crank (which stops in words itself) says the same.
    let _leaves_open = LeavesOpen::say(stays_open_words(&opened.run, &returned));
    let ctx = crank::context(c, &opened.run, Some(artifact))
        .await
        .map_err(stays_open)?;
    if opened.opened_now {
        // The state open_run wrote must be init_state's, byte for byte.
        let fresh = crate::replay::initial_state(&ctx.artifact, &run_params)?;
        if let Some(d) = first_difference(&model.config, &fresh, &ctx.state) {
            bail!("the opened run's state is not init_state's: {d}");
        }
    }
    if streams {
        *streamed = true;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&params.prompt);
        // Text already generated (a resumed run) comes first.
        let _ = out.write_all(curta_core::output_text(model.config, &ctx.state));
        let _ = out.flush();
    }
    let cranked = crank_with_progress(c, &ctx, r.crank, streams)
        .await
        .map_err(stays_open)?;
    if let Some(s) = &cranked.stopped {
        // Ctrl-C: the run stays open (exit 130).
        let words = format!(
            "the crank was stopped after {} of its own ({} in flight, not counted)",
            count(cranked.landed(), "turn", "turns"),
            s.in_flight.len()
        );
        return Err(stays_open(Error::new(words)));
    }
    let closed = match r.keep {
        true => None,
        false => Some(runs::close(c, &opened.run).await.map_err(stays_open)?),
    };
    let after = c.balance(&c.payer_key()).await?;
    let mut all = opened.summary;
    all.add(&cranked.summary());
    if let Some((_, s)) = &closed {
        all.add(s);
    }
    Ok(Generated {
        crank: cranked,
        prompt: params.prompt.clone(),
        opened,
        closed,
        quote: quoted,
        all,
        balance_change: after as i128 - before as i128,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

impl Outcome for Generated {
    fn json(&self) -> Value {
        let mut v = self.crank.json();
        let slots = match self.all.transactions {
            0 => 0,
            _ => self.all.last_slot - self.all.first_slot + 1,
        };
        let extra = json!({
            "prompt": String::from_utf8_lossy(&self.prompt),
            "open_transactions": self.opened.summary.transactions,
            "opened_now": self.opened.opened_now,
            "rent": self.opened.deposit - self.opened.escrow,
            "escrow": self.opened.escrow,
            "closed": self.closed.is_some(),
            "recovered": self.closed.as_ref().map_or(0, |(l, _)| *l),
            "total_transactions": self.all.transactions,
            "total_fees": self.all.fees,
            "quoted_transactions": self.quote.transactions,
            "quoted_fees": self.quote.fees(),
            "first_slot": self.all.first_slot,
            "last_slot": self.all.last_slot,
            "slots": slots,
            "balance_change": self.balance_change,
            "wall_seconds": self.wall_seconds,
        });
        if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        v
    }

    fn text(&self) -> String {
        let run = self.opened.run;
        let mut out = format!(
            "run: {run}{}\n",
            match &self.closed {
                None => format!(" (kept open: `curta run close {run}` returns its deposit)"),
                Some((l, _)) => format!(" (closed: {} back to you)", sol(*l)),
            }
        );
        out += &self.crank.text();
        let a = &self.all;
        let slots = match a.transactions {
            0 => String::new(),
            _ => format!(
                ", slots {} to {} ({})",
                a.first_slot,
                a.last_slot,
                count(a.last_slot - a.first_slot + 1, "slot", "slots")
            ),
        };
        out += &format!(
            "in all: {}, fees {}{slots}, {:.2} s wall time\n",
            count(a.transactions, "transaction", "transactions"),
            sol(a.fees),
            self.wall_seconds
        );
        let resent = self.crank.failed.len() as u64;
        if self.opened.opened_now {
            out += &format!(
                "quoted: {}, fees {}{}\n",
                count(self.quote.transactions, "transaction", "transactions"),
                sol(self.quote.fees()),
                match resent {
                    0 => String::new(),
                    n => format!(
                        "; {} failed (StaleTurn: landed out of order) and {} sent again",
                        count(n, "turn", "turns"),
                        if n == 1 { "was" } else { "were" }
                    ),
                }
            );
        }
        let tokens = self.crank.turns.last().map_or(0, |t| t.generated);
        if self.crank.turns.len() > 1 && tokens > 0 {
            out += &format!(
                "{:.2} s per token while cranking\n",
                self.crank.seconds / tokens as f64
            );
        }
        out
    }
}
