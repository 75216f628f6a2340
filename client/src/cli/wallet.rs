//! `curta balance`, `curta airdrop` and `curta keygen`: what a localnet or
//! devnet user needs before the first upload, without the Solana CLI.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use solana_keypair::{write_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_signature::Signature;
use solana_signer::Signer;

use super::Globals;
use crate::bail;
use crate::cli_config;
use crate::errors::{Context, Error, Result};
use crate::output::{sol, Outcome, LAMPORTS_PER_SOL};

/// `2`, `0.5`, `1.000000001` SOL in lamports.
pub fn parse_sol(text: &str) -> Result<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
    {
        bail!("{text:?} is not an amount of SOL such as 2 or 0.5 (at most nine decimals)");
    }
    let too_much = || Error::new(format!("{text} SOL is more than 64 bits of lamports"));
    let whole = match whole {
        "" => 0,
        w => w.parse::<u64>().map_err(|_| too_much())?,
    };
    let lamports = whole
        .checked_mul(LAMPORTS_PER_SOL)
        .and_then(|l| l.checked_add(format!("{fraction:0<9}").parse::<u64>().unwrap_or(0)))
        .ok_or_else(too_much)?;
    Ok(lamports)
}

impl Globals {
    /// A plain RPC connection: no program, no signer needed.
    fn rpc(&self) -> Result<RpcClient> {
        let commitment = cli_config::parse_commitment(&self.commitment)?;
        Ok(RpcClient::new_with_commitment(self.url.clone(), commitment))
    }

    /// An address given, else the signer's.
    fn address_or_signer(&self, given: Option<&str>) -> Result<Pubkey> {
        match given {
            Some(text) => cli_config::address_or_keypair(text, "the address"),
            None => Ok(self.signer()?.pubkey()),
        }
    }
}

struct Balance {
    address: Pubkey,
    lamports: u64,
}

impl Outcome for Balance {
    fn json(&self) -> Value {
        json!({"address": self.address.to_string(), "lamports": self.lamports})
    }

    fn text(&self) -> String {
        format!("{}\n", sol(self.lamports))
    }
}

pub async fn balance(g: &Globals, address: Option<&str>) -> Result<()> {
    let address = g.address_or_signer(address)?;
    let lamports = g
        .rpc()?
        .get_balance(&address)
        .await
        .context(format!("reading the balance of {address} on {}", g.url))?;
    g.print(&Balance { address, lamports });
    Ok(())
}

struct Airdropped {
    to: Pubkey,
    lamports: u64,
    signature: Signature,
    balance: u64,
}

impl Outcome for Airdropped {
    fn json(&self) -> Value {
        json!({
            "to": self.to.to_string(),
            "lamports": self.lamports,
            "signature": self.signature.to_string(),
            "balance": self.balance,
        })
    }

    fn text(&self) -> String {
        format!(
            "requesting airdrop of {}\nsignature: {}\n{} (the balance of {})\n",
            sol(self.lamports),
            self.signature,
            sol(self.balance),
            self.to
        )
    }
}

/// How long an airdrop may take to land before giving up.
const AIRDROP_WAIT: Duration = Duration::from_secs(60);

pub async fn airdrop(g: &Globals, amount: &str, to: Option<&str>) -> Result<()> {
    let lamports = parse_sol(amount)?;
    let to = g.address_or_signer(to)?;
    let rpc = g.rpc()?;
    let signature = rpc.request_airdrop(&to, lamports).await.map_err(|e| {
        Error::from(e).context(format!(
            "asking {} for an airdrop of {} (a cluster's faucet gives a few SOL at a time, and \
             mainnet-beta has none)",
            g.url,
            sol(lamports)
        ))
    })?;
    let started = Instant::now();
    loop {
        let status = rpc
            .get_signature_statuses(&[signature])
            .await
            .context("asking the airdrop's status")?
            .value
            .pop()
            .flatten();
        if let Some(s) = status {
            if let Some(err) = s.err {
                // The faucet's transfer: the System program's custom error 1
                // (ResultWithNegativeLamports) means the faucet holds less.
                let dry = matches!(
                    err,
                    solana_transaction::TransactionError::InstructionError(
                        _,
                        solana_instruction::error::InstructionError::Custom(1)
                    )
                );
                if dry {
                    bail!(
                        "the faucet at {} cannot give {}: it holds less (the airdrop {signature} \
                         failed: the System program's ResultWithNegativeLamports); ask for less",
                        g.url,
                        sol(lamports)
                    );
                }
                bail!("the airdrop {signature} failed: {err}");
            }
            if s.satisfies_commitment(rpc.commitment()) {
                break;
            }
        }
        if started.elapsed() > AIRDROP_WAIT {
            bail!(
                "the airdrop {signature} did not land in {} s: the faucet may be dry or rate \
                 limited; try again later, or a smaller amount",
                AIRDROP_WAIT.as_secs()
            );
        }
        tokio::time::sleep(crate::cluster::POLL).await;
    }
    let balance = rpc
        .get_balance(&to)
        .await
        .context(format!("reading the balance of {to}"))?;
    g.print(&Airdropped {
        to,
        lamports,
        signature,
        balance,
    });
    Ok(())
}

struct Generated {
    address: Pubkey,
    path: String,
}

impl Outcome for Generated {
    fn json(&self) -> Value {
        json!({"address": self.address.to_string(), "path": self.path})
    }

    fn text(&self) -> String {
        format!(
            "wrote a new keypair to {}\npubkey: {}\nKeep the file secret: whoever holds it can \
             spend what the address holds.\n",
            self.path, self.address
        )
    }
}

pub fn keygen(g: &Globals, outfile: Option<&Path>, force: bool) -> Result<()> {
    let path = outfile.unwrap_or(&g.keypair);
    if path.exists() && !force {
        bail!(
            "{} exists: give --force to replace it (its keypair would be lost), or -o for \
             another file",
            path.display()
        );
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    let keypair = Keypair::new();
    write_keypair_file(&keypair, path)
        .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
    g.print(&Generated {
        address: keypair.pubkey(),
        path: path.display().to_string(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_of_sol() {
        assert_eq!(parse_sol("2").unwrap(), 2_000_000_000);
        assert_eq!(parse_sol("0.5").unwrap(), 500_000_000);
        assert_eq!(parse_sol(".5").unwrap(), 500_000_000);
        assert_eq!(parse_sol("1.000000001").unwrap(), 1_000_000_001);
        for bad in ["", ".", "-1", "1e9", "0.0000000001", "99999999999999999999"] {
            assert!(parse_sol(bad).is_err(), "{bad}");
        }
    }
}
