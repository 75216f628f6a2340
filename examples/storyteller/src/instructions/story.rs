//! What `fulfill` and `receive` share: the request checked, the finished
//! run read with `read_finished`, the story copied into the request (once:
//! either may come first, and anyone may send either), and every lamport
//! the request does not need to stay rent-exempt given to the user.

use curta_interface::run::{read_finished, Expected};
use pinocchio::account::MAX_PERMITTED_DATA_INCREASE;
use pinocchio::error::ProgramError;
use pinocchio::{AccountView, Address, Resize};

use crate::error::StoryError;
use crate::rent;
use crate::state::{self, Request, HEADER_LEN};

/// Checks `request` (the storyteller's own, tagged, naming `run` and
/// `user`, all three writable but the run) and the run (Curta's, finished,
/// of the model the user asked for, opened by this request), then copies
/// the story in unless it is there. Returns the request's length after it,
/// and its address's bump.
pub fn store(
    program_id: &Address,
    request: &mut AccountView,
    run: &AccountView,
    user: &AccountView,
) -> Result<(usize, u8), ProgramError> {
    // Only the storyteller writes a request, and only at its address for
    // the run it names.
    if !request.owned_by(program_id) {
        return Err(StoryError::NotStoryteller.into());
    }
    let request_data = request.try_borrow()?;
    let r = Request::read(&request_data).ok_or(StoryError::NotARequest)?;
    if r.run() != run.address().as_array() {
        return Err(StoryError::WrongRun.into());
    }
    // The user it names, so the lamports go back to who paid.
    if r.user() != user.address().as_array() {
        return Err(StoryError::WrongUser.into());
    }
    if !request.is_writable() || !user.is_writable() {
        return Err(StoryError::NotWritable.into());
    }
    // The one reader of a run's text, not offsets of our own: the run is
    // Curta's, finished, of the model asked for, and this request's.
    let run_data = run.try_borrow()?;
    let expected = Expected {
        program_id: r.curta_program(),
        model_identity: r.model_identity(),
        opener: request.address().as_array(),
    };
    let text = read_finished(run.owner().as_array(), &run_data, &expected)
        .map_err(StoryError::from)?
        .text;
    let (bump, stored) = (r.bump(), r.fulfilled());
    drop(request_data);
    let len = HEADER_LEN + text.len();
    if stored {
        return Ok((len, bump));
    }
    // The request grows by the text, at most the room the runtime leaves.
    if len > request.data_len() + MAX_PERMITTED_DATA_INCREASE {
        return Err(StoryError::TextTooLong.into());
    }
    request.resize(len)?;
    state::set_text(&mut request.try_borrow_mut()?, text);
    Ok((len, bump))
}

/// The request keeps its rent at `len` bytes; the rest is the user's.
pub fn refund(
    request: &mut AccountView,
    user: &mut AccountView,
    len: usize,
) -> Result<(), ProgramError> {
    let rent = rent::minimum_balance(len)?;
    let surplus = request
        .lamports()
        .checked_sub(rent)
        .ok_or(ProgramError::InsufficientFunds)?;
    let total = user
        .lamports()
        .checked_add(surplus)
        .ok_or(ProgramError::ArithmeticOverflow)?;
    request.set_lamports(rent);
    user.set_lamports(total);
    Ok(())
}
