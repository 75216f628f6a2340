//! `bind_weight`: binds a new weight account to one section of a model
//! being written. One section per instruction, so no transaction ever needs
//! more than one weight account, whatever the model's section count.

use curta_core::protocol::{
    accounts as roles, model, weight, Address, ModelAccountMut, WeightAccountMut,
};

use crate::account::AccountView;
use crate::checks::{authority, model_account, take, uninitialized, writable};
use crate::error::{CurtaError, ProgramResult};

/// Accounts: `roles::BIND_WEIGHT`, in its order.
pub fn bind_weight(program_id: &Address, accounts: &[AccountView], section: u32) -> ProgramResult {
    let [model_ai, weight_ai, owner] = take::<{ roles::BIND_WEIGHT.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    writable(model_ai)?;
    authority(owner, m.owner())?;
    if m.status() != model::WRITING {
        return Err(CurtaError::ModelNotWritable.into());
    }
    let index = section as usize;
    if index >= m.section_count() {
        return Err(CurtaError::WrongSection.into());
    }
    if m.section_address(index) != &[0; 32] {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    let len = weight::HEADER_LEN + m.section_len(index) as usize;
    uninitialized(weight_ai, program_id, Some(len))?;
    let bound = m.bound() + 1;

    // SAFETY: `m`'s borrow ends above; the two accounts are distinct (one
    // is a model, the other untagged), and no other view is alive.
    WeightAccountMut(unsafe { weight_ai.data_mut() }).init(model_ai.key(), section);
    let mut m = ModelAccountMut(unsafe { model_ai.data_mut() });
    m.set_section_address(index, weight_ai.key());
    m.set_bound(bound);
    Ok(())
}
