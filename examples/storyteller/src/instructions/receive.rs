//! `receive` (tag 3): the callback the request names, which Curta's
//! `deliver` invokes once the run is finished (`docs/program.md`,
//! "Delivery"): the story is copied into the request (`story::store`) and
//! the deposit it was created with for the text's rent, less what the text
//! needs, goes to the user. Curta then gives the user the run's own
//! lamports (the user is the callback's refund address) and closes the
//! run: the user signed once, and the story is delivered.
//!
//! No signature comes with a callback and Curta cannot be called back from
//! inside it, so it closes nothing and moves only the request's lamports.
//! Anyone may send it directly as well: it changes nothing a delivery
//! would not, and the story is stored once.
//!
//! Accounts: 0 request (writable), 1 run, 2 user (writable).

use pinocchio::{AccountView, Address, ProgramResult};

use super::story;
use crate::error::StoryError;

pub fn receive(program_id: &Address, accounts: &mut [AccountView]) -> ProgramResult {
    let [request, run, user, ..] = accounts else {
        return Err(StoryError::NotEnoughAccounts.into());
    };
    let (len, _) = story::store(program_id, request, run, user)?;
    story::refund(request, user, len)
}
