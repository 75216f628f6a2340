//! The program's settings (a config account): creating the signer's own,
//! changing its turn allowance, handing it to another admin, closing it.

use curta_core::planner::{check_allowance, CHARGES};
use curta_core::protocol;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::bail;
use crate::cluster::Cluster;
use crate::errors::Result;
use crate::instructions as ix;
use crate::keys;
use crate::model::{read_config, ConfigInfo};

/// The signer's own config account (`keys::config`).
pub fn default_config(cluster: &Cluster) -> Pubkey {
    keys::config(&cluster.payer, &cluster.program_id).pubkey()
}

/// Refuses an allowance the program would refuse, naming its range.
pub fn check(allowance: u32) -> Result<()> {
    if check_allowance(allowance).is_err() {
        bail!(
            "the allowance {allowance} is out of range: {} to {} compute units",
            CHARGES.min_allowance,
            CHARGES.allowance
        );
    }
    Ok(())
}

/// Creates the signer's config with `allowance`, unless it exists; returns
/// it and whether this call created it.
pub async fn init(cluster: &Cluster, allowance: u32) -> Result<(ConfigInfo, bool)> {
    check(allowance)?;
    let config = keys::config(&cluster.payer, &cluster.program_id);
    let address = config.pubkey();
    if cluster.account(&address).await?.is_some() {
        return Ok((read_config(cluster, &address).await?, false));
    }
    let lamports = cluster.rent(protocol::config::LEN).await?;
    let create = solana_system_interface::instruction::create_account(
        &cluster.payer_key(),
        &address,
        lamports,
        protocol::config::LEN as u64,
        &cluster.program_id,
    );
    let init = ix::init_config(
        &cluster.program_id,
        &address,
        &cluster.payer_key(),
        allowance,
    );
    cluster
        .send_and_confirm("creating the config", &[create, init], &[&config], true)
        .await?;
    Ok((read_config(cluster, &address).await?, true))
}

fn check_admin(cluster: &Cluster, c: &ConfigInfo) -> Result<()> {
    if c.admin != cluster.payer_key() {
        bail!(
            "config {} is administered by {}, not the signer {}",
            c.address,
            c.admin,
            cluster.payer_key()
        );
    }
    Ok(())
}

pub async fn set_allowance(
    cluster: &Cluster,
    config: &Pubkey,
    allowance: u32,
) -> Result<ConfigInfo> {
    check(allowance)?;
    let c = read_config(cluster, config).await?;
    check_admin(cluster, &c)?;
    let i = ix::set_allowance(&cluster.program_id, config, &cluster.payer_key(), allowance);
    cluster
        .send_and_confirm("setting the allowance", &[i], &[], true)
        .await?;
    read_config(cluster, config).await
}

pub async fn set_admin(
    cluster: &Cluster,
    config: &Pubkey,
    new_admin: &Keypair,
) -> Result<ConfigInfo> {
    let c = read_config(cluster, config).await?;
    check_admin(cluster, &c)?;
    let i = ix::set_admin(
        &cluster.program_id,
        config,
        &cluster.payer_key(),
        &new_admin.pubkey(),
    );
    cluster
        .send_and_confirm("handing the config over", &[i], &[new_admin], true)
        .await?;
    read_config(cluster, config).await
}

/// Closes a config the signer administers; returns the lamports it held,
/// which the signer got back.
pub async fn close(cluster: &Cluster, config: &Pubkey) -> Result<u64> {
    let c = read_config(cluster, config).await?;
    check_admin(cluster, &c)?;
    let held = cluster.account(config).await?.map_or(0, |a| a.lamports);
    let i = ix::close_config(&cluster.program_id, config, &cluster.payer_key());
    cluster
        .send_and_confirm("closing the config", &[i], &[], true)
        .await?;
    Ok(held)
}
