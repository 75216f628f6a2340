//! The one System program instruction the storyteller sends.

use curta_program::account::SYSTEM_PROGRAM;
use curta_program::cpi::{invoke_signed, AccountMeta, Instruction, Signer};
use curta_program::{AccountView, Address, ProgramResult};

/// System `create_account`: `to` gets `lamports` from `from`, `space`
/// zero bytes and `owner`. `to` signs by `seeds` (a program-derived
/// address); `from` signed the transaction.
#[inline(always)]
pub fn create_account(
    from: &AccountView,
    to: &AccountView,
    lamports: u64,
    space: u64,
    owner: &Address,
    seeds: Signer,
) -> ProgramResult {
    // bincode of `SystemInstruction::CreateAccount`: the u32 variant 0,
    // lamports, space, owner.
    let mut data = [0u8; 4 + 8 + 8 + 32];
    data[4..12].copy_from_slice(&lamports.to_le_bytes());
    data[12..20].copy_from_slice(&space.to_le_bytes());
    data[20..].copy_from_slice(owner);
    let metas = [
        AccountMeta::new(from.key(), true, true),
        AccountMeta::new(to.key(), true, true),
    ];
    let ix = Instruction {
        program_id: &SYSTEM_PROGRAM,
        accounts: &metas,
        data: &data,
    };
    invoke_signed(&ix, &[from, to], &[seeds])
}
