//! `init_config`: creates the program's settings.

use curta_core::planner;
use curta_core::protocol::{config, Address, ConfigAccountMut};

use crate::account::AccountView;
use crate::checks::{signer, take, uninitialized};
use crate::error::{core_error, ProgramResult};

/// Accounts: 0 config (writable, signer, new), 1 admin (signer).
pub fn init_config(
    program_id: &Address,
    accounts: &[AccountView],
    allowance: u32,
) -> ProgramResult {
    let [config_ai, admin] = take::<2>(accounts)?;

    uninitialized(config_ai, program_id, Some(config::LEN))?;
    signer(admin)?;
    planner::check_allowance(allowance).map_err(core_error)?;

    // SAFETY: no other view of the config's data is alive.
    ConfigAccountMut(unsafe { config_ai.data_mut() }).init(admin.key(), allowance);
    Ok(())
}
