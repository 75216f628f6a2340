//! `seal_section`: hashes a section where its last call stopped, up to
//! `SEAL_BYTES_PER_CALL` bytes, and seals it when every byte is hashed and
//! the chain equals the digest the owner expects. A mismatch fails the
//! instruction and leaves the section as it was: still writable, the seal's
//! progress kept (a `write` below it restarts it), so nothing is stuck.

use curta_core::format::Metadata;
use curta_core::protocol::{
    accounts as roles, model, Address, ModelAccountMut, WeightAccountMut, HASH_CHUNK,
    SEAL_BYTES_PER_CALL,
};

use crate::account::AccountView;
use crate::checks::{authority, model_account, model_config, take, weight_account, writable};
use crate::error::{core_error, CurtaError, ProgramResult};
use crate::syscalls;

/// Accounts: `roles::SEAL_SECTION`, in its order.
pub fn seal_section(
    program_id: &Address,
    accounts: &[AccountView],
    digest: &[u8; 32],
) -> ProgramResult {
    let [model_ai, weight_ai, owner] = take::<{ roles::SEAL_SECTION.len() }>(accounts)?;

    let m = model_account(model_ai, program_id)?;
    writable(model_ai)?;
    authority(owner, m.owner())?;
    if m.status() != model::WRITING {
        return Err(CurtaError::ModelNotWritable.into());
    }
    writable(weight_ai)?;
    let w = weight_account(weight_ai, program_id, model_ai.key(), &m)?;
    if w.sealed() {
        return Err(CurtaError::SectionSealed.into());
    }

    // The chain goes on a chunk at a time (the last one may be short).
    let bytes = w.bytes();
    let mut hashed = w.hashed() as usize;
    let mut chain = *w.chain();
    let mut budget = SEAL_BYTES_PER_CALL;
    while hashed < bytes.len() {
        let chunk = &bytes[hashed..bytes.len().min(hashed + HASH_CHUNK)];
        if chunk.len() > budget {
            break;
        }
        chain = syscalls::sha256(&[&chain, chunk]);
        budget -= chunk.len();
        hashed += chunk.len();
    }
    let complete = hashed == bytes.len();
    let section = w.section() as usize;
    if complete {
        if chain != *digest {
            return Err(CurtaError::HashMismatch.into());
        }
        // Section zero must describe this model: its configuration and
        // flags (hence every section's length) are the ones recorded.
        if section == 0 {
            let meta = Metadata::new(bytes).map_err(core_error)?;
            if meta.config != model_config(&m)? || meta.flags() != m.flags() {
                return Err(CurtaError::WrongConfig.into());
            }
        }
    }
    let sealed = m.sealed_count() + 1;

    // SAFETY: the views' borrows end above; the two accounts are distinct
    // (a model and a weight), and no other view is alive.
    WeightAccountMut(unsafe { weight_ai.data_mut() }).set_seal(hashed as u64, &chain);
    if complete {
        let mut m = ModelAccountMut(unsafe { model_ai.data_mut() });
        m.set_section_digest(section, &chain);
        m.set_sealed_count(sealed);
    }
    Ok(())
}
