//! The program's entrypoint and the parser of the runtime's input buffer;
//! its writer, for hosts that build such buffers, is [`input`] (in tests,
//! and with the `input-writer` feature).
//!
//! The buffer (loader v2/v3, aligned serialization):
//! - `u64` number of accounts, then per account either
//!   - a duplicate: `u8` index of the earlier account it repeats, 7 bytes of
//!     padding; or
//!   - `u8` `NON_DUP_MARKER`, `u8` is_signer, `u8` is_writable, `u8`
//!     executable, 4 bytes of padding, 32-byte key, 32-byte owner, `u64`
//!     lamports, `u64` data length, the data, 10 KiB of room to grow it,
//!     padding to a multiple of 8, `u64` rent epoch;
//! - `u64` instruction data length, the instruction data;
//! - the 32-byte program id.

use core::mem::{size_of, MaybeUninit};

use curta_core::protocol::Instruction;

use crate::account::{
    AccountView, Address, RuntimeAccount, DATA_ALIGN, MAX_PERMITTED_DATA_INCREASE, NON_DUP_MARKER,
};
use crate::error::{CurtaError, ProgramResult};
use crate::instructions::{self as ix, InitModel, OpenRun};

#[cfg(any(test, feature = "input-writer"))]
pub mod input;

/// Accounts beyond this many are skipped (still walked over). Each costs 8
/// bytes of the entrypoint's stack frame, which SBF caps at 4 KiB.
pub const MAX_ACCOUNTS: usize = 64;

/// One instruction's input, borrowed from the runtime's buffer.
pub struct InstructionInput<'a> {
    pub program_id: &'a Address,
    /// The first `MAX_ACCOUNTS` accounts, duplicates resolved.
    pub accounts: &'a [AccountView],
    /// How many accounts the instruction had, including skipped ones.
    pub total_accounts: usize,
    pub data: &'a [u8],
}

/// Parses the input buffer into views, without copying account data.
///
/// Inlined because a non-inlined SBF function cannot return an aggregate
/// (docs/sbf.md, trap 6).
///
/// # Safety
/// `input` is a buffer in the format above, 8-byte aligned, valid and not
/// moved while the result is in use.
#[inline(always)]
pub unsafe fn deserialize<'a>(
    input: *mut u8,
    accounts: &'a mut [MaybeUninit<AccountView>; MAX_ACCOUNTS],
) -> InstructionInput<'a> {
    unsafe {
        let mut p = input;
        let total = *(p as *const u64) as usize;
        p = p.add(size_of::<u64>());
        for i in 0..total {
            let view = if *p == NON_DUP_MARKER {
                let raw = p as *mut RuntimeAccount;
                let data_len = (*raw).data_len as usize;
                p = p.add(size_of::<RuntimeAccount>() + data_len + MAX_PERMITTED_DATA_INCREASE);
                // Align by address: the runtime's buffer starts 8-aligned.
                p = p.add((p as usize).wrapping_neg() & (DATA_ALIGN - 1));
                p = p.add(size_of::<u64>()); // rent epoch
                AccountView::new_unchecked(raw)
            } else {
                // A duplicate names an earlier index, so one below `i`: it is
                // stored whenever `i` is.
                let original = usize::from(*p);
                p = p.add(size_of::<u64>());
                if i < MAX_ACCOUNTS {
                    accounts[original].assume_init()
                } else {
                    continue;
                }
            };
            if i < MAX_ACCOUNTS {
                accounts[i].write(view);
            }
        }
        let data_len = *(p as *const u64) as usize;
        p = p.add(size_of::<u64>());
        let data = core::slice::from_raw_parts(p as *const u8, data_len);
        p = p.add(data_len);
        let program_id = &*(p as *const Address);
        let stored = total.min(MAX_ACCOUNTS);
        InstructionInput {
            program_id,
            // SAFETY: the first `stored` entries were written above.
            accounts: core::slice::from_raw_parts(accounts.as_ptr() as *const AccountView, stored),
            total_accounts: total,
            data,
        }
    }
}

/// The symbol the SBF loader calls with the input buffer; returns 0 or an
/// error code.
///
/// # Safety
/// Called by the runtime only, with its input buffer.
#[cfg(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf"))]
#[no_mangle]
pub unsafe extern "C" fn entrypoint(input: *mut u8) -> u64 {
    let mut accounts = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
    // SAFETY: the runtime's buffer is in the expected format.
    let ix = unsafe { deserialize(input, &mut accounts) };
    crate::error::to_return_code(process_instruction(&ix))
}

/// Decodes the instruction and hands it to its handler in `instructions/`.
pub fn process_instruction(input: &InstructionInput) -> ProgramResult {
    let instruction = Instruction::decode(input.data).ok_or(CurtaError::InvalidInstruction)?;
    let (id, accounts) = (input.program_id, input.accounts);
    match instruction {
        Instruction::InitConfig { allowance } => ix::init_config(id, accounts, allowance),
        Instruction::SetAllowance { allowance } => ix::set_allowance(id, accounts, allowance),
        Instruction::SetAdmin => ix::set_admin(id, accounts),
        Instruction::InitModel {
            royalty,
            config,
            flags,
            zero_len,
        } => {
            let data = InitModel {
                royalty,
                config,
                flags,
                zero_len,
            };
            ix::init_model(id, accounts, &data)
        }
        Instruction::BindWeight { section } => ix::bind_weight(id, accounts, section),
        Instruction::Write { offset, bytes } => ix::write(id, accounts, offset, bytes),
        Instruction::SealSection { digest } => ix::seal_section(id, accounts, digest),
        Instruction::SealModel => ix::seal_model(id, accounts),
        Instruction::CloseWeight => ix::close_weight(id, accounts),
        Instruction::CloseModel => ix::close_model(id, accounts),
        Instruction::OpenRun {
            max_tokens,
            temperature_q16,
            seed,
            royalty,
            model_identity,
            crank_fee,
            crank_deposit,
            staged,
            delivery_fee,
            callback,
            prompt,
        } => {
            let data = OpenRun {
                max_tokens,
                temperature_q16,
                seed,
                royalty,
                model_identity,
                crank_fee,
                crank_deposit,
                staged,
                delivery_fee,
                callback,
                inline: prompt,
            };
            ix::open_run(id, accounts, &data)
        }
        Instruction::Turn { expected_turns } => ix::turn(id, accounts, expected_turns),
        Instruction::CloseRun => ix::close_run(id, accounts),
        Instruction::Reclaim => ix::reclaim(id, accounts),
        Instruction::WritePrompt { offset, bytes } => ix::write_prompt(id, accounts, offset, bytes),
        Instruction::CloseConfig => ix::close_config(id, accounts),
        Instruction::Deliver => ix::deliver(id, accounts),
    }
}

#[cfg(test)]
mod tests {
    use super::input::{InputAccount, InputBuffer};
    use super::*;
    use std::vec::Vec;

    #[test]
    fn parses_accounts_duplicates_data_and_program_id() {
        let d0 = [1u8, 2, 3]; // odd length, so alignment padding is exercised
        let d1: Vec<u8> = (0..40).collect();
        let accounts = [
            InputAccount::Full {
                key: [1; 32],
                owner: [2; 32],
                lamports: 5,
                signer: true,
                writable: true,
                data: &d0,
            },
            InputAccount::Full {
                key: [3; 32],
                owner: [4; 32],
                lamports: 6,
                signer: false,
                writable: false,
                data: &d1,
            },
            InputAccount::Dup(0),
        ];
        let mut buf = InputBuffer::new(&accounts, &[9, 8, 7], &[0xAB; 32]);
        let mut views = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
        let ix = unsafe { deserialize(buf.as_mut_ptr(), &mut views) };
        assert_eq!(ix.total_accounts, 3);
        assert_eq!(ix.accounts.len(), 3);
        assert_eq!(ix.data, &[9, 8, 7]);
        assert_eq!(ix.program_id, &[0xAB; 32]);
        let a = &ix.accounts[0];
        assert_eq!((a.key(), a.owner(), a.lamports()), (&[1; 32], &[2; 32], 5));
        assert!(a.is_signer() && a.is_writable() && !a.executable());
        assert_eq!(a.data(), &d0);
        let b = &ix.accounts[1];
        assert_eq!((b.key(), b.lamports(), b.data()), (&[3; 32], 6, &d1[..]));
        assert!(!b.is_signer() && !b.is_writable());
        assert_eq!(ix.accounts[2].key(), &[1; 32]);
        assert_eq!(ix.accounts[2].data(), &d0);
    }

    #[test]
    fn skips_accounts_beyond_the_maximum() {
        let mut accounts: Vec<InputAccount> = (0..MAX_ACCOUNTS + 2)
            .map(|i| InputAccount::Full {
                key: [i as u8; 32],
                owner: [0; 32],
                lamports: i as u64,
                signer: false,
                writable: false,
                data: &[],
            })
            .collect();
        accounts.push(InputAccount::Dup(1));
        let mut buf = InputBuffer::new(&accounts, &[0], &[7; 32]);
        let mut views = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
        let ix = unsafe { deserialize(buf.as_mut_ptr(), &mut views) };
        assert_eq!(ix.total_accounts, MAX_ACCOUNTS + 3);
        assert_eq!(ix.accounts.len(), MAX_ACCOUNTS);
        assert_eq!(
            ix.accounts[MAX_ACCOUNTS - 1].lamports(),
            MAX_ACCOUNTS as u64 - 1
        );
        assert_eq!(ix.data, &[0]);
        assert_eq!(ix.program_id, &[7; 32]);
    }

    #[test]
    fn no_accounts() {
        let mut buf = InputBuffer::new(&[], &[], &[1; 32]);
        let mut views = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
        let ix = unsafe { deserialize(buf.as_mut_ptr(), &mut views) };
        assert_eq!(
            (ix.total_accounts, ix.accounts.len(), ix.data.len()),
            (0, 0, 0)
        );
        assert_eq!(ix.program_id, &[1; 32]);
    }
}
