//! `fulfill` (tag 1): anyone may send it once the run is finished. The
//! story is copied into the request account, where it stays readable; the
//! run is closed through Curta, its lamports coming to the request (its
//! opener); and every lamport the request does not need to stay
//! rent-exempt goes to the user.
//!
//! Accounts: 0 request (writable), 1 run (writable), 2 user (writable),
//! 3 the Curta program.

use curta_core::protocol::run::{read_finished, Expected};
use curta_core::protocol::{accounts as roles, Instruction as CurtaInstruction};
use curta_program::account::MAX_PERMITTED_DATA_INCREASE;
use curta_program::cpi::{invoke_signed, Instruction};
use curta_program::sysvar::minimum_balance;
use curta_program::{AccountView, Address, ProgramError, ProgramResult};

use super::{curta_metas, take};
use crate::error::StoryError;
use crate::state::{self, Request, HEADER_LEN, SEED};

pub fn fulfill(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [request, run, user, curta] = take::<4>(accounts)?;

    // The request: the storyteller's own account (only the storyteller
    // writes one, and only at its address for the run it names), tagged.
    if request.owner() != program_id {
        return Err(StoryError::NotStoryteller.into());
    }
    let r = Request::read(request.data()).ok_or(StoryError::NotARequest)?;
    if r.run() != run.key() {
        return Err(StoryError::WrongRun.into());
    }
    // The user it names, so the lamports go back to who paid (and is never
    // the request itself, which no one signs for at the top level).
    if r.user() != user.key() {
        return Err(StoryError::WrongUser.into());
    }
    if r.curta_program() != curta.key() {
        return Err(StoryError::WrongCurtaProgram.into());
    }
    if !request.is_writable() || !run.is_writable() || !user.is_writable() {
        return Err(StoryError::NotWritable.into());
    }
    // The run: Curta's, finished, of the model the user asked for, and
    // opened by this request, so its prompt and settings are the ones the
    // request sent. The one reader of a run's text, not offsets of our own.
    let expected = Expected {
        program_id: r.curta_program(),
        model_identity: r.model_identity(),
        opener: request.key(),
    };
    let text = read_finished(run.owner(), run.data(), &expected)
        .map_err(StoryError::from)?
        .text;
    let bump_seed = [r.bump()];

    // The text into the request: its data grows by the text's length, at
    // most the room the runtime left after it.
    let len = HEADER_LEN + text.len();
    if len > request.data_len() + MAX_PERMITTED_DATA_INCREASE {
        return Err(StoryError::TextTooLong.into());
    }
    // SAFETY: within the room (just checked); `r`, the only view of the
    // request's data, is not used from here on. `text` is the run's.
    unsafe { request.resize(len) };
    let data = unsafe { request.data_mut() };
    state::set_text(data, text);

    // Curta's `close_run`, the request signing as the run's opener: all the
    // run's lamports (its rent, unspent escrow and crank deposit) come to
    // the request, and the run is gone.
    let mut close = [0u8; 1];
    CurtaInstruction::CloseRun
        .encode_into(&mut close)
        .ok_or(StoryError::InvalidInstruction)?;
    let metas = curta_metas(&roles::CLOSE_RUN, [run, request]);
    let ix = Instruction {
        program_id: curta.key(),
        accounts: &metas,
        data: &close,
    };
    let seeds: [&[u8]; 3] = [SEED, run.key(), &bump_seed];
    invoke_signed(&ix, &[run, request], &[&seeds])?;

    // The request keeps its rent at its new size; the rest is the user's.
    let mut rent = 0;
    minimum_balance(len, &mut rent)?;
    let surplus = request
        .lamports()
        .checked_sub(rent)
        .ok_or(ProgramError::INVALID_ARGUMENT)?;
    let total = user
        .lamports()
        .checked_add(surplus)
        .ok_or(ProgramError::INVALID_ARGUMENT)?;
    request.set_lamports(rent);
    user.set_lamports(total);
    Ok(())
}
