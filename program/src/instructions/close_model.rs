//! `close_model`: the owner closes a model whose weight accounts are all
//! closed, and takes back its rent.

use curta_core::protocol::{accounts as roles, Address};

use crate::account::AccountView;
use crate::checks::{authority, close_into, distinct, model_account, take, writable};
use crate::error::{CurtaError, ProgramResult};

/// Accounts: `roles::CLOSE_MODEL`, in its order.
pub fn close_model(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [model_ai, owner] = take::<{ roles::CLOSE_MODEL.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    writable(model_ai)?;
    authority(owner, m.owner())?;
    writable(owner)?;
    distinct(model_ai, owner)?;
    // A weight account left bound would have no model to close it through.
    if m.bound() != 0 {
        return Err(CurtaError::WeightsStillBound.into());
    }

    close_into(model_ai, owner)
}
