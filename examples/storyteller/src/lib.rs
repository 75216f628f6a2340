//! The storyteller: an example Solana program that asks Curta for a story
//! by cross-program invocation and reads the finished run safely.
//!
//! - `request` (`instructions/request.rs`) records a request in an account
//!   of the storyteller's own, at the address derived from the run's, and
//!   opens the Curta run with that address as its opener, signing for it.
//! - Anyone cranks the run's turns on Curta, each paid the run's crank fee.
//! - `fulfill` (`instructions/fulfill.rs`) reads the finished run with
//!   `curta_core::protocol::run::read_finished` (owner, tag, complete,
//!   model identity, opener), copies the text into the request, closes the
//!   run through Curta and gives the user back every lamport the request
//!   does not need to stay rent-exempt.
//!
//! Built on Curta's program crate as a library (its `no-entrypoint`
//! feature): the input buffer's parser, account views, syscalls, rent and
//! CPI. No Solana crate: the SBF build is Debian's rustc for
//! `bpfel-unknown-none` (`docs/sbf.md`), as Curta's.

#![no_std]

#[cfg(not(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf")))]
extern crate std;

pub mod error;
pub mod instruction;
pub mod instructions;
pub mod state;
pub mod system;

use curta_program::{AccountView, Address, ProgramResult};

pub use error::StoryError;

/// Decodes the tag and hands the instruction to its handler.
pub fn process_instruction(
    program_id: &Address,
    accounts: &[AccountView],
    data: &[u8],
) -> ProgramResult {
    match data.split_first() {
        Some((&instruction::REQUEST, rest)) => {
            let args = instruction::Request::decode(rest).ok_or(StoryError::InvalidInstruction)?;
            instructions::request(program_id, accounts, &args)
        }
        Some((&instruction::FULFILL, [])) => instructions::fulfill(program_id, accounts),
        _ => Err(StoryError::InvalidInstruction.into()),
    }
}

/// The symbol the SBF loader calls with the input buffer.
///
/// # Safety
/// Called by the runtime only, with its input buffer.
#[cfg(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf"))]
#[no_mangle]
pub unsafe extern "C" fn entrypoint(input: *mut u8) -> u64 {
    use core::mem::MaybeUninit;
    use curta_program::entrypoint::{deserialize, MAX_ACCOUNTS};
    let mut accounts = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
    // SAFETY: the runtime's buffer is in the expected format.
    let ix = unsafe { deserialize(input, &mut accounts) };
    let result = process_instruction(ix.program_id, ix.accounts, ix.data);
    curta_program::error::to_return_code(result)
}

// The panic handler is Curta's (`curta_program`, kept under its
// `no-entrypoint` feature): cargo builds the dependency's cdylib too, which
// needs one, and a program may have only one.
