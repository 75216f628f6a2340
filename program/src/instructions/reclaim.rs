//! `reclaim`: closes an account created for the program but never
//! initialized (an open that never happened), signed by the account itself,
//! so no lamports are ever stranded in one.

use curta_core::protocol::{accounts as roles, Address};

use crate::account::AccountView;
use crate::checks::{close_into, distinct, owned, signer, take, untagged, writable};
use crate::error::{CurtaError, ProgramResult};

/// Accounts: `roles::RECLAIM`, in its order.
pub fn reclaim(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [account, recipient] = take::<{ roles::RECLAIM.len() }>(accounts)?;

    owned(account, program_id)?;
    writable(account)?;
    signer(account)?;
    if !untagged(account) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    writable(recipient)?;
    distinct(account, recipient)?;

    close_into(account, recipient)
}
