//! `curta quote`: what a run costs, offline from an artifact or on the
//! cluster from a model (then against the signer's balance).

use std::path::Path;

use serde_json::{json, Value};

use super::args::{CrankArgs, RunArgs};
use super::Globals;
use crate::artifact::Artifact;
use crate::cli_config;
use crate::errors::{Error, Result};
use crate::model;
use crate::output::{sol, thousands, Outcome};
use crate::params::{self, Params};
use crate::quote::{self, Needs, Quote, QuoteInputs};
use crate::settings;

/// A quote, what it prices, the crank fee it recommends (with what that
/// is based on) and (for a model) the signer's balance.
struct Quoted {
    quote: Quote,
    what: String,
    params: Params,
    recommended_crank_fee: (u64, String),
    balance: Option<u64>,
}

impl Outcome for Quoted {
    fn json(&self) -> Value {
        let q = &self.quote;
        let mut v = json!({
            "turns": q.turns,
            "turns_at_most": q.turns_at_most,
            "tokens": q.tokens,
            "transactions": q.transactions,
            "open_transactions": q.open_transactions,
            "signatures": q.signatures,
            "cu_requested": q.cu_requested,
            "cu_estimated": q.cu_estimated,
            "cu_limit": q.cu_limit_max,
            "base_fees": q.base_fees,
            "priority_fees": q.priority_fees,
            "fees": q.fees(),
            "account_len": q.account_len,
            "rent": q.rent,
            "escrow": q.escrow,
            "royalty_paid": q.royalty_paid,
            "crank_fee": q.crank.fee,
            "crank_deposit": q.crank.deposit,
            "recommended_crank_fee": self.recommended_crank_fee.0,
            "recommended_crank_fee_basis": self.recommended_crank_fee.1,
            "needed": q.needed().total(),
            "text": String::from_utf8_lossy(&q.text),
        });
        if let Some(b) = self.balance {
            v["balance"] = b.into();
        }
        v
    }

    fn text(&self) -> String {
        let q = &self.quote;
        let mut out = format!(
            "{}, {} tokens at temperature {}:\n",
            self.what,
            self.params.max_tokens,
            params::temperature_text(self.params.temperature_q16)
        );
        out += &format!(
            "turns: {} ({} at most, without an early end token)\n",
            q.turns, q.turns_at_most
        );
        out += &format!(
            "transactions: {} ({} to open, {} turns, 1 to close)\n",
            q.transactions, q.open_transactions, q.turns
        );
        out += &format!(
            "compute units: {} asked ({} per turn at most), {} estimated\n",
            thousands(q.cu_requested),
            thousands(q.cu_limit_max as u64),
            thousands(q.cu_estimated)
        );
        out += &format!(
            "fees: {} ({} signatures; priority {})\n",
            sol(q.fees()),
            q.signatures,
            sol(q.priority_fees)
        );
        out += &format!(
            "rent deposit: {} for the {}-byte run account, returned when it closes\n",
            sol(q.rent),
            thousands(q.account_len as u64)
        );
        out += &format!(
            "royalty: {} escrowed, {} paid for {} tokens\n",
            sol(q.escrow),
            sol(q.royalty_paid),
            q.tokens
        );
        let (recommended, basis) = &self.recommended_crank_fee;
        out += &match q.crank.fee {
            0 => format!(
                "crank fee: none (you send the turns); to have crankers send them, \
                 --crank-fee {recommended} is recommended ({basis})\n"
            ),
            fee => format!(
                "crank fee: {} a turn, {} deposited, the rest returned when it closes \
                 (recommended: {recommended}, {basis})\n",
                thousands(fee),
                sol(q.crank.deposit)
            ),
        };
        if let Some(b) = self.balance {
            let needed = q.needed().total();
            out += &format!(
                "the signer has {}: {}\n",
                sol(b),
                if b >= needed {
                    format!("enough for the {} it needs", sol(needed))
                } else {
                    format!("{} short of the {} it needs", sol(needed - b), sol(needed))
                }
            );
        }
        out
    }
}

pub async fn run(
    g: &Globals,
    target: &str,
    run: &RunArgs,
    royalty: u64,
    allowance: u32,
    crank: &CrankArgs,
) -> Result<()> {
    let params = run.params()?;
    let path = Path::new(target);
    let prices = |allowance, royalty, lamports_per_signature| QuoteInputs {
        allowance,
        royalty,
        lamports_per_signature,
        limits: crank.cu_limit,
        priority_ramp: !crank.no_priority_ramp,
        window: crank.window,
        crank_fee: run.crank_fee,
    };
    let quoted = if path.is_file() {
        let a = Artifact::load(path, None)?;
        settings::check(allowance)?;
        params.check(&a.metadata().config)?;
        let rent = quote::default_rent(quote::account_len(&a, &params.as_run_params())?);
        let q = quote::quote(
            &a,
            &params.as_run_params(),
            &prices(allowance, royalty, 5_000),
            rent,
        )?;
        Quoted {
            recommended_crank_fee: quote::recommended_crank_fee(&q, 5_000, None),
            quote: q,
            what: format!("artifact {target}"),
            params,
            balance: None,
        }
    } else {
        let key = cli_config::parse_address(target, "the quote's target").map_err(|_| {
            Error::new(format!(
                "{target:?} is neither a file nor a model's address"
            ))
        })?;
        let c = g.connect_for(&key, "model").await?;
        let m = model::read_model(c, &key).await?;
        let a = model::fetch_artifact(c, &m).await?;
        params.check(&m.config)?;
        let allowance = model::read_config(c, &m.keys.config_account)
            .await?
            .allowance;
        let p = prices(allowance, m.royalty, c.lamports_per_signature().await?);
        let rent = c
            .rent(quote::account_len(&a, &params.as_run_params())?)
            .await?;
        let q = quote::quote(&a, &params.as_run_params(), &p, rent)?;
        let turn = quote::turn_message(&c.program_id, &m.keys, &c.payer_key(), &q);
        let turn_fee = c.fee_for(&turn).await?;
        Quoted {
            recommended_crank_fee: quote::recommended_crank_fee(
                &q,
                p.lamports_per_signature,
                Some(turn_fee),
            ),
            quote: q,
            what: format!("model {key}"),
            params,
            balance: Some(c.balance(&c.payer_key()).await?),
        }
    };
    g.print(&quoted);
    Ok(())
}
