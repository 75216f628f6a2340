//! `receive` (tag 1): the callback Curta's `deliver` invokes once the run
//! is finished, none of its accounts signing. Anyone may also call it: it
//! reads only a finished run of the recorded Curta program, model identity
//! and opener (this answer), and once the text is written it does nothing.
//!
//! Accounts: 0 answer (writable), 1 run, 2 user (writable: gets back what
//! `ask` set aside for text the run did not produce).

use curta_interface::run::{read_finished, Expected};
use pinocchio::{AccountView, Address, ProgramResult, Resize};

use crate::{rent, Error, CURTA, HEADER_LEN, MODEL_IDENTITY, RUN, TAG, TEXT_LEN, USER, WRITTEN};

pub fn receive(program_id: &Address, accounts: &mut [AccountView]) -> ProgramResult {
    let [answer, run, user, ..] = accounts else {
        return Err(Error::NotEnoughAccounts.into());
    };
    if !answer.owned_by(program_id) {
        return Err(Error::NotAnAnswer.into());
    }
    if !answer.is_writable() || !user.is_writable() {
        return Err(Error::NotWritable.into());
    }
    let (mut curta, mut identity) = ([0u8; 32], [0u8; 32]);
    {
        let d = answer.try_borrow()?;
        if d.len() < HEADER_LEN || d[..8] != TAG {
            return Err(Error::NotAnAnswer.into());
        }
        if d[RUN..RUN + 32] != *run.address().as_ref() {
            return Err(Error::WrongRun.into());
        }
        if d[USER..USER + 32] != *user.address().as_ref() {
            return Err(Error::WrongUser.into());
        }
        // Written already (by a direct call): `deliver` still succeeds.
        if d[WRITTEN] != 0 {
            return Ok(());
        }
        curta.copy_from_slice(&d[CURTA..CURTA + 32]);
        identity.copy_from_slice(&d[MODEL_IDENTITY..MODEL_IDENTITY + 32]);
    }
    let run_data = run.try_borrow()?;
    let expected = Expected {
        program_id: &curta,
        model_identity: &identity,
        opener: answer.address().as_array(),
    };
    let text = read_finished(run.owner().as_array(), &run_data, &expected)
        .map_err(Error::from)?
        .text;

    // `ask` funded this growth (at most 10 KiB: its MAX_TOKENS).
    let len = HEADER_LEN + text.len();
    answer.resize(len)?;
    {
        let mut d = answer.try_borrow_mut()?;
        d[HEADER_LEN..].copy_from_slice(text);
        d[TEXT_LEN..TEXT_LEN + 4].copy_from_slice(&(text.len() as u32).to_le_bytes());
        d[WRITTEN] = 1;
    }
    drop(run_data);
    // The answer keeps its rent; the rest goes back to the user.
    let surplus = answer.lamports().saturating_sub(rent(len)?);
    answer.set_lamports(answer.lamports() - surplus);
    user.set_lamports(user.lamports() + surplus);
    Ok(())
}
