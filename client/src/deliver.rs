//! Delivering a finished run that names a callback (`deliver`): the client
//! core plans it from the run account (`curta_core::client::delivery`);
//! this sends it. The node simulates it first (preflight), so a callback
//! that fails costs the deliverer nothing: it is refused before it is
//! sent, and the run stays for its opener to read and close.

use curta_core::client::delivery::{self, Delivery};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_pubkey::Pubkey;
use solana_signature::Signature;

use crate::bail;
use crate::cluster::Cluster;
use crate::errors::Result;
use crate::instructions;

/// A delivery that landed.
#[derive(Clone, Debug)]
pub struct Delivered {
    pub run: Pubkey,
    pub signature: Signature,
    pub slot: u64,
    /// The transaction's fee.
    pub fee: u64,
    /// The delivery fee the run paid the deliverer.
    pub earned: u64,
    pub compute_units: u64,
}

/// The run's delivery, read from the chain: `None` when the run names no
/// callback (its opener reads and closes it) or is gone (delivered, or
/// closed by its opener).
pub async fn plan(cluster: &Cluster, run: &Pubkey) -> Result<Option<Delivery>> {
    let Some(account) = cluster.account(run).await? else {
        return Ok(None);
    };
    if account.owner != cluster.program_id {
        return Ok(None);
    }
    match delivery::plan(run.as_array(), &account.data) {
        Ok(d) => Ok(Some(d)),
        Err(delivery::NotDeliverable::NoCallback) => Ok(None),
        Err(e) => bail!("{}", e.words(&run.to_string())),
    }
}

/// Sends `d` and waits for it to land, the payer signing as the deliverer.
pub async fn send(cluster: &Cluster, d: &Delivery) -> Result<Delivered> {
    let run = Pubkey::new_from_array(d.run);
    let ixs = [
        ComputeBudgetInstruction::set_compute_unit_limit(d.compute_units),
        instructions::deliver(&cluster.program_id, d, &cluster.payer_key()),
    ];
    let what = format!(
        "delivering run {run} to {}",
        Pubkey::new_from_array(d.program)
    );
    let landed = cluster.send_and_confirm(&what, &ixs, &[], true).await?;
    let info = cluster.transaction(&landed.signature).await?;
    Ok(Delivered {
        run,
        signature: landed.signature,
        slot: landed.slot,
        fee: info.fee,
        earned: d.fee,
        compute_units: info.compute_units,
    })
}

/// What a delivery of `d` costs its sender: the cluster's fee for it.
pub async fn cost(cluster: &Cluster, d: &Delivery) -> Result<u64> {
    let ixs = [
        ComputeBudgetInstruction::set_compute_unit_limit(d.compute_units),
        instructions::deliver(&cluster.program_id, d, &cluster.payer_key()),
    ];
    cluster.fee_for(&ixs).await
}
