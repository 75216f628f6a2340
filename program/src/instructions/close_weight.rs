//! `close_weight`: the owner closes a weight account and takes back its
//! rent. Closing any section of a sealed model retires the model: its runs
//! can then only be cancelled.

use curta_core::protocol::{accounts as roles, model, Address, ModelAccountMut};

use crate::account::AccountView;
use crate::checks::{
    authority, close_into, distinct, model_account, take, weight_account, writable,
};
use crate::error::ProgramResult;

/// Accounts: `roles::CLOSE_WEIGHT`, in its order.
pub fn close_weight(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [model_ai, weight_ai, owner] = take::<{ roles::CLOSE_WEIGHT.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    writable(model_ai)?;
    authority(owner, m.owner())?;
    writable(owner)?;
    writable(weight_ai)?;
    let w = weight_account(weight_ai, program_id, model_ai.key(), &m)?;
    distinct(weight_ai, owner)?;
    let section = w.section() as usize;
    let was_sealed = w.sealed();
    let status = if m.status() == model::SEALED {
        model::RETIRED
    } else {
        m.status()
    };
    let bound = m.bound() - 1;
    let sealed = m.sealed_count() - u32::from(was_sealed);

    // SAFETY: the views' borrows end above; no other view is alive.
    let mut m = ModelAccountMut(unsafe { model_ai.data_mut() });
    m.set_status(status);
    m.set_section_address(section, &[0; 32]);
    m.set_section_digest(section, &[0; 32]);
    m.set_bound(bound);
    m.set_sealed_count(sealed);
    close_into(weight_ai, owner)
}
