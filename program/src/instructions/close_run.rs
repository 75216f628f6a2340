//! `close_run`: the opener closes a run at any point, complete or not, and
//! gets back its rent and unspent escrow; royalties paid stay paid. A run
//! that cannot advance (an overflow, an allowance below its model's needs,
//! or none recorded by an older program, a retired model) is recovered the
//! same way.

use curta_core::protocol::{accounts as roles, Address};

use crate::account::AccountView;
use crate::checks::{authority, close_into, distinct, run_account, take, writable};
use crate::error::ProgramResult;

/// Accounts: `roles::CLOSE_RUN`, in its order.
pub fn close_run(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [run_ai, opener] = take::<{ roles::CLOSE_RUN.len() }>(accounts)?;

    let r = run_account(run_ai, program_id)?;
    writable(run_ai)?;
    authority(opener, r.opener())?;
    writable(opener)?;
    distinct(run_ai, opener)?;

    close_into(run_ai, opener)
}
