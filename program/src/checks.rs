//! The checks instructions share, each in one place. Every handler in
//! `instructions/` calls them in the order its accounts are listed.
//!
//! The readers are inlined: a view is a slice, and a non-inlined SBF
//! function cannot return a `Result` of one (an aggregate).

use curta_core::format::Config;
use curta_core::protocol::{
    run, Address, ConfigAccount, Mismatch, ModelAccount, PromptStage, RunAccount, WeightAccount,
};

use crate::account::AccountView;
use crate::error::{core_error, CurtaError, ProgramError, ProgramResult};

/// The accounts an instruction lists, or `NotEnoughAccounts`. Extra
/// accounts after them stay available to the caller.
#[inline(always)]
pub fn take<const N: usize>(accounts: &[AccountView]) -> Result<&[AccountView; N], ProgramError> {
    accounts
        .get(..N)
        .and_then(|a| a.try_into().ok())
        .ok_or(CurtaError::NotEnoughAccounts.into())
}

#[inline(always)]
pub fn owned(a: &AccountView, program_id: &Address) -> ProgramResult {
    if a.owner() == program_id {
        Ok(())
    } else {
        Err(CurtaError::WrongOwner.into())
    }
}

#[inline(always)]
pub fn signer(a: &AccountView) -> ProgramResult {
    if a.is_signer() {
        Ok(())
    } else {
        Err(CurtaError::MissingSigner.into())
    }
}

#[inline(always)]
pub fn writable(a: &AccountView) -> ProgramResult {
    if a.is_writable() {
        Ok(())
    } else {
        Err(CurtaError::NotWritable.into())
    }
}

/// Two roles that must be different accounts: lamports move from one to
/// the other, or one's record names the other.
#[inline(always)]
pub fn distinct(a: &AccountView, b: &AccountView) -> ProgramResult {
    if a.key() != b.key() {
        Ok(())
    } else {
        Err(CurtaError::DuplicateAccount.into())
    }
}

/// The signer who must be `expected` (an admin, owner or opener).
#[inline(always)]
pub fn authority(a: &AccountView, expected: &Address) -> ProgramResult {
    signer(a)?;
    if a.key() == expected {
        Ok(())
    } else {
        Err(CurtaError::Unauthorized.into())
    }
}

/// Whether the account's data is still all zero where a tag would be.
#[inline(always)]
pub fn untagged(a: &AccountView) -> bool {
    a.data().get(..8).is_none_or(|tag| tag == [0; 8])
}

/// Whether `bytes` are all zero, a word at a time.
#[inline(always)]
fn all_zero(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    let zero_words = words
        .by_ref()
        .all(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) == 0);
    zero_words && words.remainder().iter().all(|&b| b == 0)
}

/// An account this instruction initializes: created for the program,
/// writable, signing the instruction (so no one but its creator can
/// initialize it: a front-runner cannot sign for it), and all zero.
/// `len`, when given, is the exact size its kind needs.
///
/// All zero is checked up to `PromptStage::END`: before an account is
/// initialized only `write_prompt` can write to it, and only below that
/// point, so past it every byte is still the zero `create_account` left.
pub fn uninitialized(a: &AccountView, program_id: &Address, len: Option<usize>) -> ProgramResult {
    new_account(a, program_id, PromptStage::END)?;
    match len {
        Some(len) if a.data_len() != len => Err(CurtaError::InvalidAccountSize.into()),
        _ => Ok(()),
    }
}

/// A new run for `open_run`: as `uninitialized`, but the prompt its creator
/// staged (`write_prompt`, from `run::PROMPT`) may be there; `open_run`
/// clears it.
pub fn unopened_run(a: &AccountView, program_id: &Address) -> ProgramResult {
    new_account(a, program_id, run::PROMPT)
}

/// Created for the program, writable, signing, and zero below `zero_to`.
fn new_account(a: &AccountView, program_id: &Address, zero_to: usize) -> ProgramResult {
    owned(a, program_id)?;
    writable(a)?;
    signer(a)?;
    let data = a.data();
    if !all_zero(&data[..data.len().min(zero_to)]) {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    Ok(())
}

#[inline(always)]
pub fn mismatch(m: Mismatch) -> ProgramError {
    match m {
        Mismatch::Kind => CurtaError::WrongAccountKind.into(),
        Mismatch::Size => CurtaError::InvalidAccountSize.into(),
    }
}

#[inline(always)]
pub fn config_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
) -> Result<ConfigAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    ConfigAccount::read(a.data()).map_err(mismatch)
}

#[inline(always)]
pub fn model_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
) -> Result<ModelAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    ModelAccount::read(a.data()).map_err(mismatch)
}

#[inline(always)]
pub fn run_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
) -> Result<RunAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    RunAccount::read(a.data()).map_err(mismatch)
}

/// A weight account bound to `model` (at `model_key`): its header names
/// the model and a section whose entry names this account.
#[inline(always)]
pub fn weight_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
    model_key: &Address,
    model: &ModelAccount,
) -> Result<WeightAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    let w = WeightAccount::read(a.data()).map_err(mismatch)?;
    bound_to(a, &w, model_key, model)?;
    Ok(w)
}

fn bound_to(
    a: &AccountView,
    w: &WeightAccount,
    model_key: &Address,
    model: &ModelAccount,
) -> ProgramResult {
    if w.model() != model_key {
        return Err(CurtaError::WrongModel.into());
    }
    let section = w.section() as usize;
    if section >= model.section_count() || model.section_address(section) != a.key() {
        return Err(CurtaError::WrongSection.into());
    }
    Ok(())
}

/// The model's own configuration, planned with the table its flags choose.
#[inline(always)]
pub fn model_config(m: &ModelAccount) -> Result<Config, ProgramError> {
    m.config().map_err(core_error)
}

/// Moves all of `from`'s lamports to `to` and closes `from`. The two are
/// distinct (checked by the caller), so the sum is conserved.
#[inline(always)]
pub fn close_into(from: &AccountView, to: &AccountView) -> ProgramResult {
    let lamports = from.lamports();
    let total = to
        .lamports()
        .checked_add(lamports)
        .ok_or(ProgramError::INVALID_ARGUMENT)?;
    to.set_lamports(total);
    from.close();
    Ok(())
}
