//! `write`: copies bytes into a bound section that is not sealed.

use curta_core::protocol::{accounts as roles, model, Address, WeightAccountMut};

use crate::account::AccountView;
use crate::checks::{authority, model_account, take, weight_account, writable};
use crate::error::{CurtaError, ProgramResult};

/// Accounts: `roles::WRITE`, in its order.
pub fn write(
    program_id: &Address,
    accounts: &[AccountView],
    offset: u64,
    bytes: &[u8],
) -> ProgramResult {
    let [model_ai, weight_ai, owner] = take::<{ roles::WRITE.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    authority(owner, m.owner())?;
    if m.status() != model::WRITING {
        return Err(CurtaError::ModelNotWritable.into());
    }
    writable(weight_ai)?;
    let w = weight_account(weight_ai, program_id, model_ai.key(), &m)?;
    if w.sealed() {
        return Err(CurtaError::SectionSealed.into());
    }
    let end = offset
        .checked_add(bytes.len() as u64)
        .ok_or(CurtaError::WriteOutOfBounds)?;
    if end > w.bytes().len() as u64 {
        return Err(CurtaError::WriteOutOfBounds.into());
    }
    // Bytes the seal has already hashed are changing: it starts over.
    let restart_seal = offset < w.hashed();

    // SAFETY: `w`'s borrow ends above; no other view of the data is alive.
    let mut w = WeightAccountMut(unsafe { weight_ai.data_mut() });
    let at = offset as usize;
    w.bytes_mut()[at..at + bytes.len()].copy_from_slice(bytes);
    if restart_seal {
        w.set_seal(0, &[0; 32]);
    }
    Ok(())
}
