//! The storyteller: an example Solana program that asks Curta for a story
//! by cross-program invocation and reads the finished run safely.
//!
//! - `request` (`instructions/request.rs`) records a request in an account
//!   of the storyteller's own, at the address derived from the run's, and
//!   opens the Curta run with that address as its opener, signing for it.
//! - Anyone cranks the run's turns on Curta, each paid the run's crank fee.
//! - `fulfill` (`instructions/fulfill.rs`) reads the finished run with
//!   `curta_interface::run::read_finished` (owner, tag, complete, model
//!   identity, opener), copies the text into the request, closes the run
//!   through Curta and gives the user back every lamport the request does
//!   not need to stay rent-exempt.
//! - `receive` (`instructions/receive.rs`): the callback the run names, which
//!   Curta's `deliver` invokes once the run is finished, so the story lands
//!   in the request with no one else acting (a cranker delivers it for the
//!   delivery fee); `fulfill` is the same by hand, for a run no one
//!   delivered.
//! - `cancel` (`instructions/cancel.rs`): the user takes everything back
//!   from a request not fulfilled, whatever its run's state: the run
//!   closed through Curta (if it is still there), then the request closed.
//!
//! Written as a stranger to Curta would write it: pinocchio for the
//! entrypoint, the account views and CPI, pinocchio-system for the System
//! program, and `curta-interface` (its `pinocchio` feature) for Curta's
//! instruction builders and the reader of a finished run. Stable Rust, no
//! allocator; `README.md` gives the SBF build.
//!
//! The `program` feature (default) is the program; without it the crate is
//! a client's: `state` (the request account), `instruction` (the
//! encoders) and `error` (the codes), on `curta-interface` alone.

#![no_std]

#[cfg(not(any(target_os = "solana", target_arch = "bpf")))]
extern crate std;

pub mod error;
pub mod instruction;
#[cfg(feature = "program")]
pub mod instructions;
#[cfg(feature = "program")]
pub mod rent;
pub mod state;

#[cfg(feature = "program")]
use pinocchio::{AccountView, Address, ProgramResult};

pub use error::StoryError;

/// The most accounts an instruction lists (`request`'s seven): the
/// entrypoint parses no more.
pub const MAX_ACCOUNTS: usize = 7;

/// Decodes the tag and hands the instruction to its handler.
#[cfg(feature = "program")]
pub fn process_instruction(
    program_id: &Address,
    accounts: &mut [AccountView],
    data: &[u8],
) -> ProgramResult {
    match data.split_first() {
        Some((&instruction::REQUEST, rest)) => {
            let args = instruction::Request::decode(rest).ok_or(StoryError::InvalidInstruction)?;
            instructions::request(program_id, accounts, &args)
        }
        Some((&instruction::FULFILL, [])) => instructions::fulfill(program_id, accounts),
        Some((&instruction::CANCEL, [])) => instructions::cancel(program_id, accounts),
        Some((&instruction::RECEIVE, [])) => instructions::receive(program_id, accounts),
        _ => Err(StoryError::InvalidInstruction.into()),
    }
}

/// The program's entrypoint, allocator and panic handler, as pinocchio
/// documents them for a `no_std` program: only in the SBF build of the
/// program, so the host library has none of them.
#[cfg(all(feature = "program", any(target_os = "solana", target_arch = "bpf")))]
mod entrypoint {
    pinocchio::program_entrypoint!(crate::process_instruction, { crate::MAX_ACCOUNTS });
    pinocchio::no_allocator!();
    pinocchio::nostd_panic_handler!();
}
