//! `curta deploy` and `curta program verify`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use solana_keypair::{write_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use super::args::SendArgs;
use super::Globals;
use crate::cli_config;
use crate::deploy::{self, Comparison, Deployed};
use crate::errors::{Error, Result};
use crate::output::{hex, sol, thousands, Outcome};

impl Outcome for Deployed {
    fn json(&self) -> Value {
        json!({
            "program_id": self.program_id.to_string(),
            "sha256": hex(&self.so_sha256),
            "bytes": self.so_len,
            "action": self.action,
            "buffer": self.buffer.map(|b| b.to_string()),
            "bytes_written": self.bytes_written,
            "transactions": self.summary.transactions,
            "fees": self.summary.fees,
            "seconds": self.seconds,
        })
    }

    fn text(&self) -> String {
        format!(
            "program id: {}\nsha256: {}\n{} ({} bytes; {} transactions, fees {}, {:.1} s)\n",
            self.program_id,
            hex(&self.so_sha256),
            self.action,
            thousands(self.so_len as u64),
            self.summary.transactions,
            sol(self.summary.fees),
            self.seconds
        )
    }
}

pub async fn deploy(
    g: &Globals,
    so: Option<&Path>,
    program_keypair: Option<&Path>,
    send: &SendArgs,
) -> Result<()> {
    let so_path = so.map_or_else(|| PathBuf::from(cli_config::PROGRAM_SO), Path::to_path_buf);
    let bytes = std::fs::read(&so_path).map_err(|e| {
        Error::new(format!(
            "cannot read {}: {e} (build it with `make build-sbf`)",
            so_path.display()
        ))
    })?;
    // The signer first: nothing is created for a deploy that cannot be paid.
    g.signer()?;
    let (keypair, id) = program_keypair_for_deploy(g, program_keypair)?;
    let c = g.connect_to(id).await?;
    let d = deploy::deploy(c, &bytes, keypair.as_ref(), send.in_flight.max(1)).await?;
    g.print(&d);
    Ok(())
}

/// The program keypair and id a deploy uses: `--program-keypair`, else
/// the default file (created when missing and no --program-id is given).
fn program_keypair_for_deploy(
    g: &Globals,
    path: Option<&Path>,
) -> Result<(Option<Keypair>, Pubkey)> {
    let path = path.unwrap_or(Path::new(cli_config::PROGRAM_KEYPAIR));
    let keypair = if path.is_file() {
        Some(cli_config::load_keypair(path, "program")?)
    } else if g.program_id.is_none() {
        let k = Keypair::new();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))?;
        }
        write_keypair_file(&k, path)
            .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
        crate::interrupt::say(format!("created the program keypair {}", path.display()));
        Some(k)
    } else {
        None
    };
    let id = match &g.program_id {
        Some(p) => cli_config::address_or_keypair(p, "--program-id")?,
        None => keypair
            .as_ref()
            .map(|k| k.pubkey())
            .ok_or_else(|| Error::new("no program id"))?,
    };
    Ok((keypair, id))
}

/// A deployed program beside a local build.
struct Verified {
    program_id: Pubkey,
    so_path: PathBuf,
    comparison: Comparison,
    program: deploy::Program,
}

impl Outcome for Verified {
    fn json(&self) -> Value {
        let cmp = &self.comparison;
        json!({
            "program_id": self.program_id.to_string(),
            "equal": cmp.equal,
            "deployed_sha256": hex(&cmp.deployed_sha256),
            "local_sha256": hex(&cmp.local_sha256),
            "deployed_capacity": cmp.deployed_capacity,
            "local_len": cmp.local_len,
            "first_difference": cmp.first_difference,
            "differing_bytes": cmp.differing_bytes,
            "upgrade_authority": self.program.authority.map(|a| a.to_string()),
            "last_deployed_slot": self.program.slot,
        })
    }

    fn text(&self) -> String {
        format!(
            "program {} ({}): {}\n",
            self.program_id,
            self.so_path.display(),
            self.comparison.describe()
        )
    }
}

pub async fn verify(g: &Globals, so: Option<&Path>) -> Result<()> {
    let so_path = so.map_or_else(|| PathBuf::from(cli_config::PROGRAM_SO), Path::to_path_buf);
    let bytes = std::fs::read(&so_path)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", so_path.display())))?;
    let c = g.connect().await?;
    let Some(program) = deploy::read_program(c, &c.program_id).await? else {
        crate::bail!("there is no program at {} on {}", c.program_id, c.url);
    };
    let comparison = deploy::compare(&program.bytes, &bytes);
    let equal = comparison.equal;
    g.print(&Verified {
        program_id: c.program_id,
        so_path,
        comparison,
        program,
    });
    if equal {
        Ok(())
    } else {
        Err(Error::new("the deployed program is not the local build"))
    }
}
