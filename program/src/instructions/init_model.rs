//! `init_model`: creates a model, its section lengths fixed from its
//! configuration; weight accounts are bound one at a time afterwards.

use curta_core::format::{Config, Layout, KNOWN_FLAGS, MAX_SECTION_LEN};
use curta_core::protocol::{accounts as roles, model, Address, ModelAccountMut, ModelInit};
use curta_core::Error;

use crate::account::AccountView;
use crate::checks::{config_account, signer, take, uninitialized};
use crate::error::{core_error, CurtaError, ProgramResult};

/// The instruction's data.
pub struct InitModel<'a> {
    pub royalty: u64,
    pub config: &'a [u8],
    pub flags: u32,
    pub zero_len: u64,
}

/// Accounts: `roles::INIT_MODEL`, in its order.
pub fn init_model(program_id: &Address, accounts: &[AccountView], ix: &InitModel) -> ProgramResult {
    let [config_ai, model_ai, owner] = take::<{ roles::INIT_MODEL.len() }>(accounts)?;

    config_account(config_ai, program_id)?;
    signer(owner)?;
    // As `Metadata::new` will check section zero: known flags only (the
    // classifier's and the charge table's), which fix the layout with the
    // configuration.
    if ix.flags & !KNOWN_FLAGS != 0 {
        return Err(core_error(Error::InvalidFormat));
    }
    let config = Config::read(ix.config)
        .map_err(core_error)?
        .with_flags(ix.flags);
    let layout = Layout::new(&config).map_err(core_error)?;
    if ix.zero_len == 0 || ix.zero_len > MAX_SECTION_LEN as u64 {
        return Err(CurtaError::SectionLengthMismatch.into());
    }
    let sections = layout.section_count() as usize;
    uninitialized(model_ai, program_id, Some(model::len(sections)))?;

    let init = ModelInit {
        royalty: ix.royalty,
        config: &config,
        layout: &layout,
        flags: ix.flags,
        zero_len: ix.zero_len,
    };
    // SAFETY: no other view of the model's data is alive.
    ModelAccountMut(unsafe { model_ai.data_mut() }).init(config_ai.key(), owner.key(), &init);
    Ok(())
}
