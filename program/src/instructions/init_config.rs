//! `init_config`: creates the program's settings.

use curta_core::planner;
use curta_core::protocol::{accounts as roles, config, Address, ConfigAccountMut};

use crate::account::AccountView;
use crate::checks::{signer, take, uninitialized};
use crate::error::{core_error, ProgramResult};

/// Accounts: `roles::INIT_CONFIG`, in its order.
pub fn init_config(
    program_id: &Address,
    accounts: &[AccountView],
    allowance: u32,
) -> ProgramResult {
    let [config_ai, admin] = take::<{ roles::INIT_CONFIG.len() }>(accounts)?;

    uninitialized(config_ai, program_id, Some(config::LEN))?;
    signer(admin)?;
    planner::check_allowance(allowance).map_err(core_error)?;

    // SAFETY: no other view of the config's data is alive.
    ConfigAccountMut(unsafe { config_ai.data_mut() }).init(admin.key(), allowance);
    Ok(())
}
