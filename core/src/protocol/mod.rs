//! The curta program's accounts, instructions and events: curta-interface's
//! (the crate a program or client adds to talk to Curta), re-exported here
//! under the names the core, the program and the clients have always used,
//! and `idl`, which writes them out as a Codama IDL. `docs/program.md`
//! describes the same bytes.

pub use curta_interface::{
    accounts, callback, catalog, config, digest, event, instruction, model, prompt, run, schema,
    weight,
};
pub use curta_interface::{
    chain_step, model_identity, model_identity_parts, section_digest, tag, AccountRole, Address,
    Callback, CallbackAccount, CallbackInit, ConfigAccount, ConfigAccountMut, CurtaError,
    Instruction, Mismatch, ModelAccount, ModelAccountMut, ModelInit, PromptStage, RunAccount,
    RunAccountMut, RunInit, TurnEvent, WeightAccount, WeightAccountMut, CONFIG_TAG,
    CORE_ERROR_BASE, HASH_CHUNK, MAX_ACCOUNT_LEN, MODEL_TAG, OPEN_RUN_FIXED_LEN, RUN_HEADER_LEN,
    RUN_TAG, SEAL_BYTES_PER_CALL, WEIGHT_HEADER_LEN, WEIGHT_TAG,
};

/// The program's own errors (`CurtaError`) and the base above which a core
/// error is reported.
pub mod error {
    pub use curta_interface::error::{CurtaError, CORE_ERROR_BASE};
}

#[cfg(feature = "std")]
pub mod idl;
#[cfg(feature = "std")]
pub mod layout_js;
