//! `set_admin`: the admin hands the config to a new admin, who co-signs so
//! that a mistyped address can never take it.

use curta_core::protocol::{accounts as roles, Address, ConfigAccountMut};

use crate::account::AccountView;
use crate::checks::{authority, config_account, signer, take, writable};
use crate::error::ProgramResult;

/// Accounts: `roles::SET_ADMIN`, in its order.
pub fn set_admin(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [config_ai, admin, new_admin] = take::<{ roles::SET_ADMIN.len() }>(accounts)?;

    let config = config_account(config_ai, program_id)?;
    writable(config_ai)?;
    authority(admin, config.admin())?;
    signer(new_admin)?;

    // SAFETY: `config`'s borrow ends above; no other view is alive.
    ConfigAccountMut(unsafe { config_ai.data_mut() }).set_admin(new_admin.key());
    Ok(())
}
