//! `open_run`: opens a run of a sealed model in a new account that holds
//! its rent, the royalty for every token it may generate and a deposit for
//! its crankers' fees. The opener names the royalty and the model identity
//! it accepts, and the run is bound to that identity: no other model can
//! ever turn it, and it records the config's turn allowance, which every
//! turn of the run is planned under. The opener may be a program's PDA,
//! signing by CPI.

use curta_core::inference::{self, RunParams, StateMemory};
use curta_core::protocol::{
    accounts as roles, model, run, Address, Callback, PromptStage, RunAccountMut, RunInit,
};
use curta_core::state::{StateLayout, MAX_PROMPT_BYTES};
use curta_core::Error;

use crate::account::AccountView;
use crate::checks::{
    config_account, distinct, model_account, model_config, signer, take, unopened_run,
};
use crate::error::{core_error, CurtaError, ProgramResult};
use crate::sysvar;

/// The instruction's data: the run's parameters, the royalty and model
/// identity the opener accepts, the crank fee and its deposit, and its prompt as the `staged` bytes
/// `write_prompt` left in the account followed by `inline`.
pub struct OpenRun<'a> {
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    pub royalty: u64,
    pub model_identity: &'a [u8; 32],
    pub crank_fee: u64,
    pub crank_deposit: u64,
    pub staged: u32,
    /// What `deliver` pays its sender, and the callback record it invokes
    /// (empty: none).
    pub delivery_fee: u64,
    pub callback: &'a [u8],
    pub inline: &'a [u8],
}

/// Accounts: `roles::OPEN_RUN`, in its order.
pub fn open_run(program_id: &Address, accounts: &[AccountView], ix: &OpenRun) -> ProgramResult {
    let [config_ai, model_ai, run_ai, opener] = take::<{ roles::OPEN_RUN.len() }>(accounts)?;

    // Its allowance is the run's: every turn is planned and cut under it,
    // whatever the config's admin sets later.
    let allowance = config_account(config_ai, program_id)?.allowance();
    let m = model_account(model_ai, program_id)?;
    if m.config_account() != config_ai.key() {
        return Err(CurtaError::WrongConfig.into());
    }
    if m.status() != model::SEALED {
        return Err(CurtaError::ModelNotSealed.into());
    }
    // What the opener signed for is what it gets, and what it pays.
    if m.model_identity() != ix.model_identity {
        return Err(CurtaError::ModelChanged.into());
    }
    if m.royalty() != ix.royalty {
        return Err(CurtaError::RoyaltyMismatch.into());
    }
    let config = model_config(&m)?;
    // The core checks the state's size (BufferTooSmall) with the prompt.
    unopened_run(run_ai, program_id)?;
    signer(opener)?;
    // The run pays the opener back when it closes: never itself.
    distinct(run_ai, opener)?;
    let staged = ix.staged as usize;
    let prompt_len = staged + ix.inline.len();
    if prompt_len > MAX_PROMPT_BYTES {
        return Err(core_error(Error::InvalidPrompt));
    }
    if run_ai.data_len() < run::PROMPT + prompt_len {
        return Err(CurtaError::InvalidAccountSize.into());
    }
    // The callback, if any: a record that reads, never Curta itself (a
    // delivery must not run Curta's instructions as the run's), kept after
    // the state, which ends where it starts; a delivery fee only with one.
    let state_end = match ix.callback {
        [] if ix.delivery_fee > 0 => return Err(CurtaError::InvalidCallback.into()),
        [] => run_ai.data_len(),
        record => {
            let c = Callback::read(record).map_err(|_| CurtaError::InvalidCallback)?;
            if c.program() == program_id {
                return Err(CurtaError::InvalidCallback.into());
            }
            match run_ai.data_len().checked_sub(record.len()) {
                Some(end) if end >= run::PROMPT + prompt_len => end,
                _ => return Err(CurtaError::InvalidAccountSize.into()),
            }
        }
    };
    // Checked by division (SBF has no overflow-checked multiply), hidden from
    // LLVM, which would turn the comparison back into one.
    let most = core::hint::black_box(u64::MAX / ix.max_tokens.max(1) as u64);
    if m.royalty() > most {
        return Err(CurtaError::EscrowTooSmall.into());
    }
    let escrow = m.royalty() * ix.max_tokens as u64;
    let mut rent = 0;
    sysvar::minimum_balance(run_ai.data_len(), &mut rent)?;
    // Refused, not saturated, when the sum overflows: no account holds it.
    let needed = rent
        .checked_add(escrow)
        .and_then(|n| n.checked_add(ix.crank_deposit))
        .and_then(|n| n.checked_add(ix.delivery_fee))
        .ok_or(CurtaError::EscrowTooSmall)?;
    if run_ai.lamports() < needed {
        return Err(CurtaError::EscrowTooSmall.into());
    }

    // SAFETY: `m`'s borrow is of another account; no other view of the
    // run's data is alive.
    let data = unsafe { run_ai.data_mut() };
    // The prompt: what was staged, then what came with the instruction.
    let mut prompt = [0u8; MAX_PROMPT_BYTES];
    let mut stage = PromptStage(data);
    let staged_bytes = stage.prompt(staged).ok_or(CurtaError::InvalidAccountSize)?;
    prompt[..staged].copy_from_slice(staged_bytes);
    prompt[staged..prompt_len].copy_from_slice(ix.inline);
    // The account was created zeroed and only staging wrote to it: cleared
    // again, the state needs no other clearing.
    stage.clear();
    let params = RunParams {
        prompt: &prompt[..prompt_len],
        max_tokens: ix.max_tokens,
        temperature_q16: ix.temperature_q16,
        seed: ix.seed,
    };

    let (mut header, state, record) = RunAccountMut(stage.0).split_at(state_end);
    inference::init_state_with(&config, &params, state, StateMemory::Zeroed).map_err(core_error)?;
    record.copy_from_slice(ix.callback);
    // The output's place, so a reader needs no model to find the text.
    let layout = StateLayout::new(&config, prompt_len, ix.max_tokens).map_err(core_error)?;
    header.init(&RunInit {
        model: model_ai.key(),
        model_identity: m.model_identity(),
        opener: opener.key(),
        royalty: m.royalty(),
        deposited: escrow,
        crank_fee: ix.crank_fee,
        crank_deposit: ix.crank_deposit,
        tokens_at: (run::HEADER_LEN + layout.output_tokens) as u32,
        text_at: (run::HEADER_LEN + layout.output_text) as u32,
        seed: ix.seed,
        allowance,
        callback_at: if ix.callback.is_empty() {
            0
        } else {
            state_end as u32
        },
        delivery_fee: ix.delivery_fee,
    });
    Ok(())
}
