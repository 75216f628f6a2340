//! `fulfill` (tag 1): anyone may send it once the run is finished, for a
//! run no one delivered. The story is copied into the request account
//! (`story::store`), where it stays readable; the run is closed through
//! Curta, its lamports coming to the request (its opener); and every
//! lamport the request does not need to stay rent-exempt goes to the user.
//!
//! Accounts: 0 request (writable), 1 run (writable), 2 user (writable),
//! 3 the Curta program.

use curta_interface::cpi::CloseRun;
use pinocchio::cpi::{Seed, Signer};
use pinocchio::{AccountView, Address, ProgramResult};

use super::story;
use crate::error::StoryError;
use crate::state::{Request, SEED};

pub fn fulfill(program_id: &Address, accounts: &mut [AccountView]) -> ProgramResult {
    let [request, run, user, curta, ..] = accounts else {
        return Err(StoryError::NotEnoughAccounts.into());
    };
    if !run.is_writable() {
        return Err(StoryError::NotWritable.into());
    }
    let (len, bump) = story::store(program_id, request, run, user)?;
    // The Curta program the request recorded, which the run is closed by.
    if Request::read(&request.try_borrow()?)
        .is_none_or(|r| r.curta_program() != curta.address().as_array())
    {
        return Err(StoryError::WrongCurtaProgram.into());
    }

    // Curta's `close_run`, the request signing as the run's opener: all the
    // run's lamports (its rent, unspent escrow, crank deposit and delivery
    // fee) come to the request, and the run is gone.
    let bump_seed = [bump];
    let seeds = [
        Seed::from(SEED),
        Seed::from(run.address().as_ref()),
        Seed::from(&bump_seed),
    ];
    CloseRun {
        program_id: curta.address(),
        run,
        opener: request,
    }
    .invoke_signed(&[Signer::from(&seeds)])?;
    story::refund(request, user, len)
}
