//! The smallest Curta consumer: a user `ask`s for text in one transaction;
//! crankers finish the run and Curta's `deliver` calls `receive`, which
//! stores the text in the answer account. The run's rent and unspent
//! deposits go back to the user in that same delivery (the callback's
//! refund address), so nobody has to come back for anything.
//!
//! The answer account (`ANSWER01`), at `["answer", run]`:
//!
//! | Offset | Type | Field |
//! |---|---|---|
//! | 0 | 8 bytes | Tag |
//! | 8 | 32 bytes | User: who asked and paid |
//! | 40 | 32 bytes | Run |
//! | 72 | 32 bytes | The Curta program the run belongs to |
//! | 104 | 32 bytes | The model identity asked for |
//! | 136 | u8 | The address's bump |
//! | 137 | u8 | 1 once `receive` has written the text |
//! | 140 | u32 | Text length |
//! | 144 | bytes | The text |

#![no_std]

#[cfg(not(any(target_os = "solana", target_arch = "bpf")))]
extern crate std;

pub mod ask;
pub mod receive;

use curta_interface::run::Refusal;
use pinocchio::error::ProgramError;
use pinocchio::{AccountView, Address, ProgramResult};

pub const ASK: u8 = 0;
pub const RECEIVE: u8 = 1;

pub const TAG: [u8; 8] = *b"ANSWER01";
pub const SEED: &[u8] = b"answer";
pub const USER: usize = 8;
pub const RUN: usize = 40;
pub const CURTA: usize = 72;
pub const MODEL_IDENTITY: usize = 104;
pub const BUMP: usize = 136;
pub const WRITTEN: usize = 137;
pub const TEXT_LEN: usize = 140;
pub const HEADER_LEN: usize = 144;

/// Errors (`Custom`), from 6000 so none reads as one of Curta's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    InvalidInstruction = 6000,
    NotEnoughAccounts,
    MissingSigner,
    NotWritable,
    WrongSystemProgram,
    WrongAnswerAddress,
    /// A prompt over 1,024 bytes, or more tokens than `ask::MAX_TOKENS`.
    TooLong,
    AnswerExists,
    NotAnAnswer,
    WrongRun,
    WrongUser,
    UnsupportedRent,
    /// `read_finished`'s refusals, in its order.
    RunNotCurta,
    RunNotARun,
    RunNotFinished,
    RunOtherModel,
    RunOtherOpener,
}

impl From<Error> for ProgramError {
    fn from(e: Error) -> Self {
        ProgramError::Custom(e as u32)
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotCurta => Error::RunNotCurta,
            Refusal::NotARun => Error::RunNotARun,
            Refusal::NotFinished => Error::RunNotFinished,
            Refusal::OtherModel => Error::RunOtherModel,
            Refusal::OtherOpener => Error::RunOtherOpener,
        }
    }
}

pub fn process_instruction(
    program_id: &Address,
    accounts: &mut [AccountView],
    data: &[u8],
) -> ProgramResult {
    match data.split_first() {
        Some((&ASK, rest)) => ask::ask(program_id, accounts, rest),
        Some((&RECEIVE, [])) => receive::receive(program_id, accounts),
        _ => Err(Error::InvalidInstruction.into()),
    }
}

/// The rent-exempt minimum from the Rent sysvar's rate and threshold (2.0
/// before SIMD-0194, 1.0 after; pinocchio 0.12's `Rent` reads the rate alone).
pub fn rent(data_len: usize) -> Result<u64, ProgramError> {
    let mut s = [0u8; 16];
    pinocchio::sysvars::get_sysvar(&mut s, &pinocchio::sysvars::rent::RENT_ID, 0)?;
    let [rate, threshold] = [0, 8].map(|i| {
        u64::from_le_bytes([
            s[i],
            s[i + 1],
            s[i + 2],
            s[i + 3],
            s[i + 4],
            s[i + 5],
            s[i + 6],
            s[i + 7],
        ])
    });
    let times = match threshold {
        0x4000_0000_0000_0000 => 2,
        0x3ff0_0000_0000_0000 => 1,
        _ => return Err(Error::UnsupportedRent.into()),
    };
    Ok((128 + data_len as u64) * rate * times)
}

#[cfg(any(target_os = "solana", target_arch = "bpf"))]
mod entrypoint {
    pinocchio::program_entrypoint!(crate::process_instruction, 7);
    pinocchio::no_allocator!();
    pinocchio::nostd_panic_handler!();
}
