//! `write_prompt`: stages prompt bytes in a run account before `open_run`,
//! for a prompt longer than one transaction can carry beside the opening
//! (a transaction is at most 1,232 bytes; a prompt up to 1,024).

use curta_core::protocol::{accounts as roles, Address, PromptStage};
use curta_core::state::MAX_PROMPT_BYTES;
use curta_core::Error;

use crate::account::AccountView;
use crate::checks::{owned, signer, take, untagged, writable};
use crate::error::{core_error, CurtaError, ProgramResult};

/// Accounts: `roles::WRITE_PROMPT`, in its order.
pub fn write_prompt(
    program_id: &Address,
    accounts: &[AccountView],
    offset: u32,
    bytes: &[u8],
) -> ProgramResult {
    let [run_ai] = take::<{ roles::WRITE_PROMPT.len() }>(accounts)?;

    owned(run_ai, program_id)?;
    writable(run_ai)?;
    // Only the run's own key stages its prompt, and only before it opens.
    signer(run_ai)?;
    if !untagged(run_ai) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    if offset as usize + bytes.len() > MAX_PROMPT_BYTES {
        return Err(core_error(Error::InvalidPrompt));
    }

    // SAFETY: no other view of the run's data is alive.
    let mut stage = PromptStage(unsafe { run_ai.data_mut() });
    if !stage.write(offset as usize, bytes) {
        return Err(CurtaError::InvalidAccountSize.into());
    }
    Ok(())
}
