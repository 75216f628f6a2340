//! `set_allowance`: the admin changes the turn allowance, for the runs
//! opened after it (each run records its config's at opening).

use curta_core::planner;
use curta_core::protocol::{accounts as roles, Address, ConfigAccountMut};

use crate::account::AccountView;
use crate::checks::{authority, config_account, take, writable};
use crate::error::{core_error, ProgramResult};

/// Accounts: `roles::SET_ALLOWANCE`, in its order.
pub fn set_allowance(
    program_id: &Address,
    accounts: &[AccountView],
    allowance: u32,
) -> ProgramResult {
    let [config_ai, admin] = take::<{ roles::SET_ALLOWANCE.len() }>(accounts)?;

    let config = config_account(config_ai, program_id)?;
    writable(config_ai)?;
    authority(admin, config.admin())?;
    // Runs already open keep theirs. A run opened under one too low for
    // its model cannot advance: its opener can still close it (`close_run`).
    planner::check_allowance(allowance).map_err(core_error)?;

    // SAFETY: `config`'s borrow ends above; no other view is alive.
    ConfigAccountMut(unsafe { config_ai.data_mut() }).set_allowance(allowance);
    Ok(())
}
