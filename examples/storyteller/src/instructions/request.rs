//! `request` (tag 0): a user asks for a story. The storyteller records the
//! request in an account of its own at the program-derived address
//! `[b"request", run]`, then opens the Curta run by CPI with that address
//! as the run's opener, signing for it. Only the storyteller can then close
//! the run, and `fulfill` reads no run but the one its request opened.
//!
//! Accounts: 0 user (signs, writable: pays), 1 request (writable: created
//! here), 2 run (signs, writable), 3 Curta's config, 4 the model, 5 the
//! Curta program, 6 the System program.
//!
//! The request's address is known before it exists, so anyone can send it
//! lamports first. System `create_account` refuses an address that holds
//! any, which would block the request for that run; so a prefunded address
//! is topped up to its rent (`transfer` of the shortfall only) and then
//! given its space and owner (`allocate`, `assign`, signed by its seeds).
//! The lamports someone sent stay in the request, and come to the user
//! when it is cancelled or fulfilled.
//!
//! Why the run is an account the user creates with a key of its own, in a
//! top-level System `create_account` just before this instruction, and not
//! an address of the storyteller's: an account created by CPI can be at
//! most 10 KiB (`MAX_PERMITTED_DATA_INCREASE`, the room the runtime leaves
//! after an account's data for an instruction to grow it), and a run holds
//! the model's whole state: stories260K's for "Once upon a time" is 36,944
//! bytes at 4 tokens, 173,264 at 100. A top-level `create_account` has no
//! such limit (10 MiB). The run's key signs this instruction and the
//! storyteller forwards that signature to Curta, which opens only a new
//! account that signed (so nobody can take an account someone else created
//! and funded).

use curta_interface::callback::{CallbackAccount, CallbackInit};
use curta_interface::cpi::OpenRun;
use curta_interface::state::MAX_PROMPT_BYTES;
use pinocchio::cpi::{Seed, Signer};
use pinocchio::{AccountView, Address, ProgramResult};
use pinocchio_system::instructions::{Allocate, Assign, CreateAccount, Transfer};

use crate::error::StoryError;
use crate::instruction::{Request, CALLBACK_LEN, RECEIVE, RECEIVE_CU};
use crate::rent;
use crate::state::{self, RequestInit, HEADER_LEN, SEED};

pub fn request(
    program_id: &Address,
    accounts: &mut [AccountView],
    args: &Request,
) -> ProgramResult {
    let [user, request, run, config, model, curta, system_program, ..] = accounts else {
        return Err(StoryError::NotEnoughAccounts.into());
    };

    // The user pays for the request account, so signs and is written.
    if !user.is_signer() {
        return Err(StoryError::MissingSigner.into());
    }
    if !user.is_writable() || !request.is_writable() || !run.is_writable() {
        return Err(StoryError::NotWritable.into());
    }
    // The run's signature is forwarded to Curta, which requires it; a
    // missing one would fail the CPI with the runtime's own error.
    if !run.is_signer() {
        return Err(StoryError::MissingSigner.into());
    }
    if system_program.address() != &pinocchio_system::ID {
        return Err(StoryError::WrongSystemProgram.into());
    }
    // One request per run, at the address only the storyteller signs for.
    let (address, bump) = find_program_address(&[SEED, run.address().as_ref()], program_id)
        .ok_or(StoryError::WrongRequestAddress)?;
    if request.address() != &address {
        return Err(StoryError::WrongRequestAddress.into());
    }
    // Curta takes at most this much prompt; refused here, before anything
    // is paid, rather than by Curta after.
    if args.prompt.len() > MAX_PROMPT_BYTES {
        return Err(StoryError::PromptTooLong.into());
    }
    // Lamports alone may be there already; an account may not.
    if !request.owned_by(&pinocchio_system::ID) || !request.is_data_empty() {
        return Err(StoryError::RequestExists.into());
    }

    // The request account: funded by the user to its rent and that of the
    // longest text the run can write (what `receive` needs to grow it,
    // the rest of it going back to the user then), given its space and the
    // storyteller as owner. It signs by its seeds.
    let bump_seed = [bump];
    let seeds = [
        Seed::from(SEED),
        Seed::from(run.address().as_ref()),
        Seed::from(&bump_seed),
    ];
    let signers = [Signer::from(&seeds)];
    let rent = rent::minimum_balance(state::funded_len(args.max_tokens))?;
    let held = request.lamports();
    if held == 0 {
        CreateAccount {
            from: user,
            to: request,
            lamports: rent,
            space: HEADER_LEN as u64,
            owner: program_id,
        }
        .invoke_signed(&signers)?;
    } else {
        // Prefunded: only the shortfall, if any.
        if held < rent {
            Transfer {
                from: user,
                to: request,
                lamports: rent - held,
            }
            .invoke()?;
        }
        Allocate {
            account: request,
            space: HEADER_LEN as u64,
        }
        .invoke_signed(&signers)?;
        Assign {
            account: request,
            owner: program_id,
        }
        .invoke_signed(&signers)?;
    }
    {
        // The CPIs left it `HEADER_LEN` zero bytes.
        let mut data = request.try_borrow_mut()?;
        state::init(
            &mut data,
            &RequestInit {
                user: user.address().as_array(),
                run: run.address().as_array(),
                curta_program: curta.address().as_array(),
                model_identity: args.model_identity,
                bump,
            },
        );
    }

    // The callback Curta's `deliver` invokes once the run is finished: this
    // program's `receive`, with the request, the run and the user, who is
    // also the refund address, so everything unspent comes back to them in
    // the delivery.
    let callback_accounts = [
        CallbackAccount {
            address: request.address().as_array(),
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
    let mut callback = [0u8; CALLBACK_LEN];
    CallbackInit {
        program: program_id.as_array(),
        refund: user.address().as_array(),
        compute_units: RECEIVE_CU,
        accounts: &callback_accounts,
        data: &[RECEIVE],
    }
    .encode_into(&mut callback)
    .ok_or(StoryError::InvalidInstruction)?;

    // Curta's `open_run`, the request as opener: Curta checks the model,
    // its identity and royalty against what the user named, the run's
    // size and funding (rent + royalty x max tokens + crank deposit +
    // delivery fee).
    OpenRun {
        program_id: curta.address(),
        config,
        model,
        run,
        opener: request,
        max_tokens: args.max_tokens,
        temperature_q16: args.temperature_q16,
        seed: args.seed,
        royalty: args.royalty,
        model_identity: args.model_identity,
        crank_fee: args.crank_fee,
        crank_deposit: args.crank_deposit,
        staged: 0,
        delivery_fee: args.delivery_fee,
        callback: &callback,
        prompt: args.prompt,
    }
    .invoke_signed(&signers)
}

/// The program-derived address of `seeds` and its bump: the runtime's
/// `sol_try_find_program_address`, through pinocchio's `Address`.
#[cfg(any(target_os = "solana", target_arch = "bpf"))]
#[inline(always)]
fn find_program_address(seeds: &[&[u8]], program_id: &Address) -> Option<(Address, u8)> {
    Address::try_find_program_address(seeds, program_id)
}

/// Off chain there is no runtime to ask (and the host library never runs
/// an instruction): no address.
#[cfg(not(any(target_os = "solana", target_arch = "bpf")))]
#[inline(always)]
fn find_program_address(_seeds: &[&[u8]], _program_id: &Address) -> Option<(Address, u8)> {
    None
}
