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
//! Why the run is an account the user creates with a key of its own, in a
//! top-level System `create_account` just before this instruction, and not
//! an address of the storyteller's: an account created by CPI can be at
//! most 10 KiB (`MAX_PERMITTED_DATA_INCREASE`, the room the runtime leaves
//! after an account's data for an instruction to grow it), and a run holds
//! the model's whole state: stories260K's for "Once upon a time" is 36,944
//! bytes at 4 tokens, 173,264 at 100. A top-level
//! `create_account` has no such limit (10 MiB). The run's key signs this
//! instruction and the storyteller forwards that signature to Curta, which
//! opens only a new account that signed (so nobody can take an account
//! someone else created and funded).

use curta_core::protocol::{
    accounts as roles, Instruction as CurtaInstruction, OPEN_RUN_FIXED_LEN,
};
use curta_core::state::MAX_PROMPT_BYTES;
use curta_program::account::SYSTEM_PROGRAM;
use curta_program::cpi::{find_program_address, invoke_signed, Instruction};
use curta_program::sysvar::minimum_balance;
use curta_program::{AccountView, Address, ProgramResult};

use super::{curta_metas, take};
use crate::error::StoryError;
use crate::instruction::Request;
use crate::state::{self, RequestInit, HEADER_LEN, SEED};
use crate::system;

pub fn request(program_id: &Address, accounts: &[AccountView], args: &Request) -> ProgramResult {
    let [user, request, run, config, model, curta, system_program] = take::<7>(accounts)?;

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
    if system_program.key() != &SYSTEM_PROGRAM {
        return Err(StoryError::WrongSystemProgram.into());
    }
    // One request per run, at the address only the storyteller signs for.
    let mut address = [0u8; 32];
    let mut bump = 0u8;
    find_program_address(&[SEED, run.key()], program_id, &mut address, &mut bump)?;
    if request.key() != &address {
        return Err(StoryError::WrongRequestAddress.into());
    }
    // Curta takes at most this much prompt; refused here, before anything
    // is paid, rather than by Curta after.
    if args.prompt.len() > MAX_PROMPT_BYTES {
        return Err(StoryError::PromptTooLong.into());
    }

    // The request account: created by the System program, funded by the
    // user with its rent, owned by the storyteller. It signs by its seeds.
    let bump_seed = [bump];
    let seeds: [&[u8]; 3] = [SEED, run.key(), &bump_seed];
    let mut rent = 0;
    minimum_balance(HEADER_LEN, &mut rent)?;
    system::create_account(user, request, rent, HEADER_LEN as u64, program_id, &seeds)?;
    // SAFETY: no other view of the request's data is alive; the CPI above
    // left it `HEADER_LEN` zero bytes.
    let data = unsafe { request.data_mut() };
    state::init(
        data,
        &RequestInit {
            user: user.key(),
            run: run.key(),
            curta_program: curta.key(),
            model_identity: args.model_identity,
            bump,
        },
    );

    // Curta's `open_run`, the request as opener: Curta checks the model,
    // its identity and royalty against what the user named, the run's
    // size and funding (rent + royalty x max tokens + crank deposit).
    let open = CurtaInstruction::OpenRun {
        max_tokens: args.max_tokens,
        temperature_q16: args.temperature_q16,
        seed: args.seed,
        royalty: args.royalty,
        model_identity: args.model_identity,
        crank_fee: args.crank_fee,
        crank_deposit: args.crank_deposit,
        staged: 0,
        prompt: args.prompt,
    };
    let mut buf = [0u8; 1 + OPEN_RUN_FIXED_LEN + MAX_PROMPT_BYTES];
    let len = open
        .encode_into(&mut buf)
        .ok_or(StoryError::PromptTooLong)?;
    let metas = curta_metas(&roles::OPEN_RUN, [config, model, run, request]);
    let ix = Instruction {
        program_id: curta.key(),
        accounts: &metas,
        data: &buf[..len],
    };
    invoke_signed(&ix, &[config, model, run, request], &[&seeds])
}
