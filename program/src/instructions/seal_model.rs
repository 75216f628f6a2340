//! `seal_model`: the last step of an upload. Once every section is sealed
//! and section zero matches the model, the model is sealed: immutable, and
//! runs may open. Sealing records the model's identity.

use curta_core::format::Metadata;
use curta_core::protocol::{
    accounts as roles, model, model_identity_parts, Address, ModelAccountMut,
};

use crate::account::AccountView;
use crate::checks::{authority, model_account, model_config, take, weight_account, writable};
use crate::error::{core_error, CurtaError, ProgramResult};
use crate::syscalls;

/// Accounts: `roles::SEAL_MODEL`, in its order.
pub fn seal_model(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [model_ai, zero_ai, owner] = take::<{ roles::SEAL_MODEL.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    writable(model_ai)?;
    authority(owner, m.owner())?;
    if m.status() != model::WRITING {
        return Err(CurtaError::ModelNotWritable.into());
    }
    // A section is counted once, when its seal completes, and uncounted
    // when its account is closed: all are sealed when the count is full.
    if m.sealed_count() as usize != m.section_count() {
        return Err(CurtaError::SectionsNotSealed.into());
    }
    let zero = weight_account(zero_ai, program_id, model_ai.key(), &m)?;
    if zero.section() != 0 {
        return Err(CurtaError::WrongSection.into());
    }
    let meta = Metadata::new(zero.bytes()).map_err(core_error)?;
    if meta.config != model_config(&m)? {
        return Err(CurtaError::WrongConfig.into());
    }

    // SAFETY: `m`'s borrow ends above; no other view is alive.
    let mut sealed = ModelAccountMut(unsafe { model_ai.data_mut() });
    sealed.set_status(model::SEALED);
    // The identity of the model as sealed, which every run opened on it
    // records and every turn requires.
    let identity = syscalls::sha256(&model_identity_parts(model_ai.key(), sealed.0));
    sealed.set_model_identity(&identity);
    Ok(())
}
