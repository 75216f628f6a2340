//! `ask` (tag 0): the user asks for text. Creates the answer account at
//! `["answer", run]` (paid by the user) and opens the Curta run by CPI with
//! the answer as opener and a callback to `receive`.
//!
//! Data: max tokens u32, temperature u32 (q16), seed u64, royalty u64,
//! model identity (32 bytes), crank fee u64, crank deposit u64, delivery
//! fee u64, callback compute units u32, then the prompt.
//!
//! Accounts: 0 user (signs, writable), 1 answer (writable), 2 run (signs,
//! writable: created by the user's `create_account` just before, 256 +
//! state size + the callback record's 172 bytes), 3 Curta's config, 4 the
//! model, 5 the Curta program, 6 the System program.

use curta_interface::bytes::{read_u32, read_u64};
use curta_interface::callback::{self, CallbackAccount, CallbackInit};
use curta_interface::cpi::OpenRun;
use curta_interface::format::MAX_TOKEN_BYTES;
use curta_interface::state::MAX_PROMPT_BYTES;
use pinocchio::account::MAX_PERMITTED_DATA_INCREASE;
use pinocchio::cpi::{Seed, Signer};
use pinocchio::{AccountView, Address, ProgramResult};
use pinocchio_system::instructions::{Allocate, Assign, CreateAccount, Transfer};

use crate::{rent, Error, BUMP, CURTA, HEADER_LEN, MODEL_IDENTITY, RECEIVE, RUN, SEED, TAG, USER};

/// The fields before the prompt.
pub const FIXED_LEN: usize = 84;
/// The most tokens: `receive` grows the answer by the text, at most 128
/// bytes a token, and an instruction may grow an account by 10 KiB.
pub const MAX_TOKENS: u32 = (MAX_PERMITTED_DATA_INCREASE / MAX_TOKEN_BYTES) as u32;

pub fn ask(program_id: &Address, accounts: &mut [AccountView], data: &[u8]) -> ProgramResult {
    let [user, answer, run, config, model, curta, system_program, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    if data.len() < FIXED_LEN {
        return Err(Error::InvalidInstruction.into());
    }
    let max_tokens = read_u32(data, 0);
    let identity: &[u8; 32] = data[24..56]
        .try_into()
        .map_err(|_| Error::InvalidInstruction)?;
    let prompt = &data[FIXED_LEN..];

    // Checks, in order.
    if !user.is_signer() || !run.is_signer() {
        return Err(Error::MissingSigner.into());
    }
    if !user.is_writable() || !answer.is_writable() || !run.is_writable() {
        return Err(Error::NotWritable.into());
    }
    if system_program.address() != &pinocchio_system::ID {
        return Err(Error::WrongSystemProgram.into());
    }
    if prompt.len() > MAX_PROMPT_BYTES || max_tokens > MAX_TOKENS {
        return Err(Error::TooLong.into());
    }
    let (address, bump) = find_program_address(&[SEED, run.address().as_ref()], program_id)
        .ok_or(Error::WrongAnswerAddress)?;
    if answer.address() != &address {
        return Err(Error::WrongAnswerAddress.into());
    }
    // Lamports alone may be there already (anyone can send some).
    if !answer.owned_by(&pinocchio_system::ID) || !answer.is_data_empty() {
        return Err(Error::AnswerExists.into());
    }

    // The answer: its header, funded for the longest text the run can
    // produce, so `receive` can always grow it (and returns the rest).
    let bump_seed = [bump];
    let seeds = [
        Seed::from(SEED),
        Seed::from(run.address().as_ref()),
        Seed::from(&bump_seed),
    ];
    let signer = [Signer::from(&seeds)];
    let funded = rent(HEADER_LEN + MAX_TOKEN_BYTES * max_tokens as usize)?;
    // An address someone sent lamports to first cannot be created: it is
    // topped up, given its space and its owner instead.
    let held = answer.lamports();
    if held == 0 {
        CreateAccount {
            from: user,
            to: answer,
            lamports: funded,
            space: HEADER_LEN as u64,
            owner: program_id,
        }
        .invoke_signed(&signer)?;
    } else {
        if held < funded {
            Transfer {
                from: user,
                to: answer,
                lamports: funded - held,
            }
            .invoke()?;
        }
        Allocate {
            account: answer,
            space: HEADER_LEN as u64,
        }
        .invoke_signed(&signer)?;
        Assign {
            account: answer,
            owner: program_id,
        }
        .invoke_signed(&signer)?;
    }
    {
        let mut d = answer.try_borrow_mut()?;
        d[..8].copy_from_slice(&TAG);
        d[USER..USER + 32].copy_from_slice(user.address().as_ref());
        d[RUN..RUN + 32].copy_from_slice(run.address().as_ref());
        d[CURTA..CURTA + 32].copy_from_slice(curta.address().as_ref());
        d[MODEL_IDENTITY..MODEL_IDENTITY + 32].copy_from_slice(identity);
        d[BUMP] = bump;
    }

    // The run, the answer its opener; delivered to `receive`, the rest of
    // the run's lamports to the user.
    let named = [
        CallbackAccount {
            address: answer.address().as_array(),
            writable: true,
        },
        CallbackAccount {
            address: run.address().as_array(),
            writable: false,
        },
        CallbackAccount {
            address: user.address().as_array(),
            writable: true,
        },
    ];
    let mut record = [0u8; callback::len(3, 1)];
    CallbackInit {
        program: program_id.as_array(),
        refund: user.address().as_array(),
        compute_units: read_u32(data, 80),
        accounts: &named,
        data: &[RECEIVE],
    }
    .encode_into(&mut record)
    .ok_or(Error::InvalidInstruction)?;
    OpenRun {
        program_id: curta.address(),
        config,
        model,
        run,
        opener: answer,
        max_tokens,
        temperature_q16: read_u32(data, 4),
        seed: read_u64(data, 8),
        royalty: read_u64(data, 16),
        model_identity: identity,
        crank_fee: read_u64(data, 56),
        crank_deposit: read_u64(data, 64),
        staged: 0,
        delivery_fee: read_u64(data, 72),
        callback: &record,
        prompt,
    }
    .invoke_signed(&signer)
}

#[cfg(any(target_os = "solana", target_arch = "bpf"))]
fn find_program_address(seeds: &[&[u8]], program_id: &Address) -> Option<(Address, u8)> {
    Address::try_find_program_address(seeds, program_id)
}

/// The host library never runs an instruction.
#[cfg(not(any(target_os = "solana", target_arch = "bpf")))]
fn find_program_address(_: &[&[u8]], _: &Address) -> Option<(Address, u8)> {
    None
}
