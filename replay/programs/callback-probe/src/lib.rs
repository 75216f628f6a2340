//! A test-only callee for Curta's `deliver` (`replay/tests/delivery.rs`):
//! one instruction whose first data byte is a mode.
//!
//! | Mode | Accounts | What it does |
//! |---|---|---|
//! | 0 `RECORD` | 0 its own account (**w**, 8 bytes), 1 the run | Reads the run with `read_finished` against the rest of the data (the Curta program id, the model identity, the opener: 32 bytes each) and writes the text's length (u32) and token count (u32) into account 0 |
//! | 1 `FAIL` | any | Fails with `FAILED` |
//! | 2 `BURN` | any | Loops until the compute budget runs out |
//! | 3 `REENTER` | 0 the Curta program, 1 the run, 2 any | Invokes Curta's `close_run` on accounts 1 and 2 (none signing): the runtime must refuse the reentrancy before Curta runs |
//! | 4 `STEAL` | 0 its own account (**w**), 1 a wallet (**w**) | Moves lamports from the wallet, which it does not own, to account 0: the runtime must refuse it |
//! | 5 `TIP` | 0 its own account (**w**), 1 any account (**w**) | Moves the u64 after the mode from account 0 to account 1 (crediting an account is anyone's right) |

#![no_std]

#[cfg(not(any(target_os = "solana", target_arch = "bpf")))]
extern crate std;

use curta_interface::instruction::tag;
use curta_interface::run::{read_finished, Expected, Refusal};
use pinocchio::error::ProgramError;
use pinocchio::instruction::{InstructionAccount, InstructionView};
use pinocchio::{AccountView, Address, ProgramResult};

pub const RECORD: u8 = 0;
pub const FAIL: u8 = 1;
pub const BURN: u8 = 2;
pub const REENTER: u8 = 3;
pub const STEAL: u8 = 4;
pub const TIP: u8 = 5;

/// The length of the account `RECORD` writes: text length, token count.
pub const RECORD_LEN: usize = 8;
/// What `STEAL` tries to take.
pub const STEAL_LAMPORTS: u64 = 1_000_000;

/// Errors (`Custom`), from 7000 so none reads as one of Curta's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    InvalidInstruction = 7000,
    /// Mode 1's error.
    Failed,
    NotEnoughAccounts,
    /// Account 0 is not the probe's, not writable or too short.
    NotOwnAccount,
    /// `read_finished`'s refusals, in its order.
    RunNotCurta,
    RunNotARun,
    RunNotFinished,
    RunOtherModel,
    RunOtherOpener,
}

pub const FAILED: u32 = Error::Failed as u32;

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
        Some((&RECORD, rest)) => record(program_id, accounts, rest),
        Some((&FAIL, _)) => Err(Error::Failed.into()),
        Some((&BURN, _)) => burn(),
        Some((&REENTER, _)) => reenter(accounts),
        Some((&STEAL, _)) => steal(program_id, accounts),
        Some((&TIP, rest)) => tip(program_id, accounts, rest),
        _ => Err(Error::InvalidInstruction.into()),
    }
}

/// Account 0, checked to be the probe's own, writable, `RECORD_LEN` long.
fn own(program_id: &Address, a: &AccountView) -> ProgramResult {
    if !a.owned_by(program_id) || !a.is_writable() || a.data_len() < RECORD_LEN {
        return Err(Error::NotOwnAccount.into());
    }
    Ok(())
}

fn record(program_id: &Address, accounts: &mut [AccountView], rest: &[u8]) -> ProgramResult {
    let [out, run, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    own(program_id, out)?;
    if rest.len() != 96 {
        return Err(Error::InvalidInstruction.into());
    }
    let address = |i: usize| <&[u8; 32]>::try_from(&rest[i..i + 32]).unwrap();
    let expected = Expected {
        program_id: address(0),
        model_identity: address(32),
        opener: address(64),
    };
    let (text, tokens) = {
        let d = run.try_borrow()?;
        let f = read_finished(run.owner().as_array(), &d, &expected).map_err(Error::from)?;
        (f.text.len() as u32, f.token_count() as u32)
    };
    let mut d = out.try_borrow_mut()?;
    d[..4].copy_from_slice(&text.to_le_bytes());
    d[4..8].copy_from_slice(&tokens.to_le_bytes());
    Ok(())
}

fn burn() -> ProgramResult {
    let mut x: u64 = 0;
    loop {
        x = core::hint::black_box(x.wrapping_add(1));
    }
}

fn reenter(accounts: &mut [AccountView]) -> ProgramResult {
    let [curta, run, other, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    // `close_run` with nothing signing and nothing written, so the runtime
    // has no privilege to refuse before it sees Curta already on the stack.
    let metas = [
        InstructionAccount::readonly(run.address()),
        InstructionAccount::readonly(other.address()),
    ];
    let ix = InstructionView {
        program_id: curta.address(),
        data: &[tag::CLOSE_RUN],
        accounts: &metas,
    };
    pinocchio::cpi::invoke(&ix, &[&*run, &*other])
}

fn steal(program_id: &Address, accounts: &mut [AccountView]) -> ProgramResult {
    let [out, victim, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    own(program_id, out)?;
    let amount = victim.lamports().min(STEAL_LAMPORTS);
    victim.set_lamports(victim.lamports() - amount);
    out.set_lamports(out.lamports() + amount);
    Ok(())
}

fn tip(program_id: &Address, accounts: &mut [AccountView], rest: &[u8]) -> ProgramResult {
    let [out, to, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    own(program_id, out)?;
    let amount = <[u8; 8]>::try_from(rest)
        .map(u64::from_le_bytes)
        .map_err(|_| Error::InvalidInstruction)?;
    let left = out
        .lamports()
        .checked_sub(amount)
        .ok_or(ProgramError::InsufficientFunds)?;
    out.set_lamports(left);
    to.set_lamports(to.lamports() + amount);
    Ok(())
}

#[cfg(any(target_os = "solana", target_arch = "bpf"))]
mod entrypoint {
    pinocchio::program_entrypoint!(crate::process_instruction, 8);
    pinocchio::no_allocator!();
    pinocchio::nostd_panic_handler!();
}
