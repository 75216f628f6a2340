//! `close_config`: the admin closes a config and takes back its rent.

use curta_core::protocol::{accounts as roles, Address};

use crate::account::AccountView;
use crate::checks::{authority, close_into, config_account, distinct, take, writable};
use crate::error::ProgramResult;

/// Accounts: `roles::CLOSE_CONFIG`, in its order.
pub fn close_config(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [config_ai, admin] = take::<{ roles::CLOSE_CONFIG.len() }>(accounts)?;

    let config = config_account(config_ai, program_id)?;
    writable(config_ai)?;
    authority(admin, config.admin())?;
    writable(admin)?;
    distinct(config_ai, admin)?;
    // The models bound to it keep its address: their runs can no longer
    // open or turn (a config of another kind, or none, is refused there),
    // and every run can still be closed by its opener, every weight
    // account and model by its owner, with nothing of theirs held here.

    close_into(config_ai, admin)
}
