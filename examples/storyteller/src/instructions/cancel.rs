//! `cancel` (tag 2): the user takes everything back from a request not
//! yet fulfilled, whatever its run's state: not finished, never to finish
//! (its model retired, its config closed), or finished. The run is closed
//! through Curta, the request signing as its opener, so the run's rent,
//! unspent escrow and crank deposit come to the request; then the request
//! account is closed, every lamport of it to the user.
//!
//! Accounts: 0 user (signs, writable), 1 request (writable), 2 run
//! (writable), 3 the Curta program.
//!
//! Who can take what: only the user the request recorded, signing; only
//! from this request (the storyteller's own account) and only the run it
//! recorded, through the Curta program it recorded. If that run account
//! is no longer the Curta program's (it was closed, and its address is an
//! empty System account, or holds lamports someone sent there), it holds
//! no run and nothing of the request's: the close is skipped, and the run
//! account is left as it is.

use curta_interface::cpi::CloseRun;
use pinocchio::cpi::{Seed, Signer};
use pinocchio::error::ProgramError;
use pinocchio::{AccountView, Address, ProgramResult};

use crate::error::StoryError;
use crate::state::{Request, SEED};

pub fn cancel(program_id: &Address, accounts: &mut [AccountView]) -> ProgramResult {
    let [user, request, run, curta, ..] = accounts else {
        return Err(StoryError::NotEnoughAccounts.into());
    };

    // The user, who alone may cancel, signs and is paid.
    if !user.is_signer() {
        return Err(StoryError::MissingSigner.into());
    }
    if !user.is_writable() || !request.is_writable() || !run.is_writable() {
        return Err(StoryError::NotWritable.into());
    }
    // The request: the storyteller's own account, tagged.
    if !request.owned_by(program_id) {
        return Err(StoryError::NotStoryteller.into());
    }
    let request_data = request.try_borrow()?;
    let r = Request::read(&request_data).ok_or(StoryError::NotARequest)?;
    // Its user, its run and its Curta program, and no others.
    if r.user() != user.address().as_array() {
        return Err(StoryError::WrongUser.into());
    }
    if r.run() != run.address().as_array() {
        return Err(StoryError::WrongRun.into());
    }
    if r.curta_program() != curta.address().as_array() {
        return Err(StoryError::WrongCurtaProgram.into());
    }
    // A fulfilled request keeps its story; its run is closed already.
    if r.fulfilled() {
        return Err(StoryError::AlreadyFulfilled.into());
    }
    let bump_seed = [r.bump()];
    drop(request_data);

    // The run, while it is the Curta program's: closed by its opener, the
    // request. Curta closes a run at any point and in any state of its
    // model and config, and checks the opener itself.
    if run.owned_by(curta.address()) {
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
    }

    // The request: every lamport to the user, then closed (no data, no
    // lamports, the System program's), so the runtime removes it.
    let total = user
        .lamports()
        .checked_add(request.lamports())
        .ok_or(ProgramError::ArithmeticOverflow)?;
    user.set_lamports(total);
    request.set_lamports(0);
    request.close()
}
