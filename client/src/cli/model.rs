//! `curta model`: upload (resumable), show, list, close.

use serde_json::{json, Value};
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use super::args::ModelCommand;
use super::{addr, Globals};
use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::Cluster;
use crate::errors::Result;
use crate::funds;
use crate::interrupt::LeavesOpen;
use crate::keys;
use crate::model::{self, ModelInfo};
use crate::output::{count, hex, sol, thousands, Outcome};
use crate::settings;
use crate::upload::{self, Uploaded};

pub async fn run(g: &Globals, cmd: &ModelCommand) -> Result<()> {
    match cmd {
        ModelCommand::Upload {
            artifact,
            tokenizer,
            charges,
            royalty,
            config,
            send,
        } => {
            // The artifact is read (and checked) before anything else.
            let a = Artifact::load_with(artifact, tokenizer.as_deref(), *charges)?;
            let c = g.connect().await?;
            let config = match config {
                Some(text) => Some(addr(text, "--config")?),
                None => None,
            };
            let u = upload_model(c, &a, config, *royalty, send.in_flight.max(1)).await?;
            g.print(&u);
        }
        ModelCommand::Show { model } => {
            let key = addr(model, "model")?;
            let c = g.connect_for(&key, "model").await?;
            g.print(&model::read_model(c, &key).await?);
        }
        ModelCommand::List => {
            let c = g.connect().await?;
            let owner = c.payer_key();
            g.print(&Owned {
                models: model::owned_by(c, &owner).await?,
                owner,
            });
        }
        ModelCommand::Close { model } => {
            let key = addr(model, "model")?;
            let c = g.connect_for(&key, "model").await?;
            let closed = close(c, &key).await?;
            g.print(&closed);
        }
    }
    Ok(())
}

/// An upload, with what it cost the signer.
struct UploadOutcome {
    upload: Uploaded,
    artifact_sha256: String,
    /// Rent of the signer's config account, when this command created it.
    config_rent: u64,
    config_fees: u64,
    balance_change: i128,
}

async fn upload_model(
    c: &Cluster,
    a: &Artifact,
    config: Option<Pubkey>,
    royalty: u64,
    in_flight: usize,
) -> Result<UploadOutcome> {
    let before = c.balance(&c.payer_key()).await?;
    let config_key = config.unwrap_or_else(|| settings::default_config(c));
    let model_key = keys::model(&c.payer, &c.program_id, &config_key, &a.sha256, royalty);
    let creates_config = config.is_none() && c.account(&config_key).await?.is_none();
    // A first upload pays for everything at once: checked before any of it.
    if c.account(&model_key.pubkey()).await?.is_none() {
        let mut needed = upload::estimate(c, a).await?;
        if creates_config {
            let rent = c.rent(curta_core::protocol::config::LEN).await?;
            needed = needed.with("config rent", rent);
        }
        funds::ensure(c, "this upload", &needed).await?;
    }
    let (mut config_rent, mut config_fees) = (0, 0);
    if config.is_none() {
        let (info, created) = settings::init(c, curta_core::planner::CHARGES.allowance).await?;
        if created {
            config_rent = c.balance(&info.address).await?;
            config_fees = 2 * c.lamports_per_signature().await?;
            crate::interrupt::say(format!(
                "created the signer's config {} (allowance {}, rent {})",
                info.address,
                thousands(info.allowance as u64),
                sol(config_rent)
            ));
        }
    }
    let unsealed = format!(
        "the model {} is not sealed: running the same command again resumes the upload, writing \
         only what is missing",
        model_key.pubkey()
    );
    let _leaves_open = LeavesOpen::say(unsealed.clone());
    let upload = upload::upload(c, a, &config_key, royalty, in_flight)
        .await
        .map_err(|e| e.then(&unsealed))?;
    let after = c.balance(&c.payer_key()).await?;
    Ok(UploadOutcome {
        upload,
        artifact_sha256: a.sha256_hex(),
        config_rent,
        config_fees,
        balance_change: after as i128 - before as i128,
    })
}

impl Outcome for UploadOutcome {
    fn json(&self) -> Value {
        let u = &self.upload;
        json!({
            "model": u.model.to_string(),
            "config": u.config.to_string(),
            "artifact_sha256": self.artifact_sha256,
            "artifact_len": u.artifact_len,
            "sections": u.sections,
            "already_sealed": u.already,
            "bytes_written": u.bytes_written,
            "transactions": u.summary.transactions,
            "fees": u.summary.fees,
            "rent": u.rent,
            "weight_accounts": u.weight_accounts,
            "config_rent": self.config_rent,
            "config_fees": self.config_fees,
            "balance_change": self.balance_change,
            "seconds": u.seconds,
        })
    }

    fn text(&self) -> String {
        let u = &self.upload;
        let mut out = format!(
            "model: {}\n{} ({} bytes in {}; {} bytes written in {}, fees {}, {:.1} s)\n",
            u.model,
            if u.already {
                "already sealed"
            } else {
                "sealed"
            },
            thousands(u.artifact_len as u64),
            count(u.sections as u64, "section", "sections"),
            thousands(u.bytes_written),
            count(u.summary.transactions, "transaction", "transactions"),
            sol(u.summary.fees),
            u.seconds
        );
        out += &format!(
            "rent: {} held by the model and its {} (`curta model close` returns it)\n",
            sol(u.rent),
            count(
                u.weight_accounts as u64,
                "weight account",
                "weight accounts"
            ),
        );
        if self.config_rent > 0 {
            out += &format!("config rent: {}\n", sol(self.config_rent));
        }
        out += &format!("balance change: {}\n", signed_sol(self.balance_change));
        out
    }
}

/// `-2.330000000 SOL`, `+0.000000000 SOL`.
pub(super) fn signed_sol(change: i128) -> String {
    let sign = if change < 0 { '-' } else { '+' };
    format!("{sign}{}", sol(change.unsigned_abs() as u64))
}

impl Outcome for ModelInfo {
    fn json(&self) -> Value {
        let sections: Vec<Value> = self
            .sections
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "index": i,
                    "weight": s.weight.map(|w| w.to_string()),
                    "length": s.len,
                    "digest": s.digest.map(|d| hex(&d)),
                })
            })
            .collect();
        let c = self.config;
        json!({
            "model": self.keys.model.to_string(),
            "config_account": self.keys.config_account.to_string(),
            "owner": self.keys.owner.to_string(),
            "royalty": self.royalty,
            "status": self.status_name(),
            "config": {
                "dim": c.dim, "hidden_dim": c.hidden_dim, "n_layers": c.n_layers,
                "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads,
                "vocab_size": c.vocab_size, "seq_len": c.seq_len,
            },
            "shared_classifier": self.flags & curta_core::format::FLAG_SHARED_CLASSIFIER != 0,
            "charges": c.charges.name(),
            "bound": self.bound,
            "sealed_sections": self.sealed_count,
            "sections": sections,
        })
    }

    fn text(&self) -> String {
        let cfg = self.config;
        let mut out = format!(
            "model: {}\nstatus: {}\nowner: {}\nconfig account: {}\nroyalty: {} lamports per \
             token\nconfiguration: dim {} hidden {} layers {} heads {} kv heads {} vocab {} \
             context {}\ncharges: the {} table\n",
            self.keys.model,
            self.status_name(),
            self.keys.owner,
            self.keys.config_account,
            thousands(self.royalty),
            cfg.dim,
            cfg.hidden_dim,
            cfg.n_layers,
            cfg.n_heads,
            cfg.n_kv_heads,
            cfg.vocab_size,
            cfg.seq_len,
            cfg.charges.name()
        );
        for (i, s) in self.sections.iter().enumerate() {
            out += &format!(
                "section {i}: {} bytes, {}, {}\n",
                thousands(s.len),
                s.weight.map_or("unbound".to_string(), |w| w.to_string()),
                s.digest
                    .map_or("not sealed".to_string(), |d| format!("sealed {}", hex(&d)))
            );
        }
        out
    }
}

/// The signer's models.
struct Owned {
    owner: Pubkey,
    models: Vec<model::HeldModel>,
}

impl Outcome for Owned {
    fn json(&self) -> Value {
        let models: Vec<Value> = self
            .models
            .iter()
            .map(|h| {
                json!({
                    "model": h.model.keys.model.to_string(),
                    "status": h.model.status_name(),
                    "sections": h.model.sections.len(),
                    "sealed_sections": h.model.sealed_count,
                    "royalty": h.model.royalty,
                    "weight_accounts": h.weight_accounts,
                    "lamports": h.lamports,
                })
            })
            .collect();
        json!({"owner": self.owner.to_string(), "models": models})
    }

    fn text(&self) -> String {
        if self.models.is_empty() {
            return format!("{} owns no model\n", self.owner);
        }
        let mut out = String::new();
        for h in &self.models {
            let m = &h.model;
            out += &format!(
                "{}  {}  {} of {} sections sealed  {} weight accounts  holds {}\n",
                m.keys.model,
                m.status_name(),
                m.sealed_count,
                m.sections.len(),
                h.weight_accounts,
                sol(h.lamports)
            );
        }
        out += "`curta model close MODEL` returns what a model holds\n";
        out
    }
}

/// A closed model.
struct Closed {
    model: Pubkey,
    recovered: u64,
    transactions: u64,
}

impl Outcome for Closed {
    fn json(&self) -> Value {
        json!({
            "model": self.model.to_string(),
            "recovered": self.recovered,
            "transactions": self.transactions,
        })
    }

    fn text(&self) -> String {
        format!(
            "closed model {}: {} back to the owner\n",
            self.model,
            sol(self.recovered)
        )
    }
}

/// Closes each weight account, then the model: their rent back to the owner.
async fn close(c: &Cluster, key: &Pubkey) -> Result<Closed> {
    let m = model::read_model(c, key).await?;
    if m.keys.owner != c.payer_key() {
        bail!("model {key} is owned by {}, not the signer", m.keys.owner);
    }
    let mut out = Closed {
        model: *key,
        recovered: 0,
        transactions: 0,
    };
    for (i, s) in m.sections.iter().enumerate() {
        let Some(w) = s.weight else { continue };
        out.recovered += c.account(&w).await?.map_or(0, |a| a.lamports);
        let ix = crate::instructions::close_weight(&c.program_id, key, &w, &c.payer_key());
        let what = format!("closing section {i}'s weight account");
        c.send_and_confirm(&what, &[ix], &[], true).await?;
        out.transactions += 1;
    }
    out.recovered += c.account(key).await?.map_or(0, |a| a.lamports);
    let ix = crate::instructions::close_model(&c.program_id, key, &c.payer_key());
    c.send_and_confirm("closing the model", &[ix], &[], true)
        .await?;
    out.transactions += 1;
    Ok(out)
}
