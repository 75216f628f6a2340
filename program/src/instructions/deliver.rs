//! `deliver`: anyone sends it once a run that names a callback is finished.
//! The callback is invoked with the accounts and data its opener named,
//! none of them signing; then the sender is paid the run's delivery fee,
//! the callback's refund address gets every other lamport of the run, and
//! the run is closed, so it is delivered once.
//!
//! The lamports move only after the callback returns: the runtime checks
//! that an instruction's accounts keep their lamports' sum when it invokes
//! another program, and the callee reads the run as the turns left it.
//! A callback cannot call Curta back (the runtime refuses reentrancy), and
//! it gets no signature: the sender is none of its accounts.

use curta_core::protocol::{accounts as roles, Address, CurtaError};
use curta_core::state::StateInfo;

use crate::account::{AccountView, SYSTEM_PROGRAM};
use crate::checks::{distinct, run_account, signer, take, writable};
use crate::cpi::{invoke_each, AccountMeta, Instruction, MAX_INVOKE_ACCOUNTS};
use crate::error::{core_error, ProgramError, ProgramResult};
use crate::sysvar;

/// Accounts: `roles::DELIVER`, then the callback's accounts in its order
/// (`roles::DELIVER_CALLBACK`).
pub fn deliver(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [run_ai, refund, deliverer, callback_program] = take::<{ roles::DELIVER.len() }>(accounts)?;
    let named = &accounts[roles::DELIVER.len()..];

    let r = run_account(run_ai, program_id)?;
    writable(run_ai)?;
    if !StateInfo::read(r.state()).map_err(core_error)?.complete {
        return Err(CurtaError::RunNotFinished.into());
    }
    let callback = match r.callback() {
        None => return Err(CurtaError::NoCallback.into()),
        Some(c) => c.map_err(|_| CurtaError::InvalidCallback)?,
    };
    // The refund address the opener named, never the run itself.
    if refund.key() != callback.refund() {
        return Err(CurtaError::WrongCallback.into());
    }
    writable(refund)?;
    distinct(run_ai, refund)?;
    // The fee goes to the delivery's signer, a wallet, which the callback
    // never sees (so none of its signature reaches the callee).
    signer(deliverer)?;
    writable(deliverer)?;
    if deliverer.owner() != &SYSTEM_PROGRAM {
        return Err(CurtaError::InvalidCranker.into());
    }
    distinct(deliverer, run_ai)?;
    // The program and every account the callback names, in its order, and
    // writable wherever the callback writes.
    if callback_program.key() != callback.program() || named.len() != callback.account_count() {
        return Err(CurtaError::WrongCallback.into());
    }
    for (i, a) in named.iter().enumerate() {
        if a.key() != callback.account(i) {
            return Err(CurtaError::WrongCallback.into());
        }
        if callback.is_writable(i) && !a.is_writable() {
            return Err(CurtaError::WrongCallback.into());
        }
        distinct(a, deliverer)?;
    }
    // As for a crank fee: a recipient already rent-exempt stays so.
    let fee = r.delivery_fee();
    if fee > 0 {
        let mut rent = 0;
        sysvar::minimum_balance(deliverer.data_len(), &mut rent)?;
        if deliverer.lamports() < rent {
            return Err(CurtaError::InvalidCranker.into());
        }
    }
    if fee > run_ai.lamports() {
        return Err(CurtaError::EscrowTooSmall.into());
    }

    // The callback: its accounts as named, none signing.
    let mut metas = [AccountMeta::new(&SYSTEM_PROGRAM, false, false); MAX_INVOKE_ACCOUNTS];
    for (i, (meta, a)) in metas.iter_mut().zip(named).enumerate() {
        *meta = AccountMeta::new(a.key(), callback.is_writable(i), false);
    }
    let ix = Instruction {
        program_id: callback.program(),
        accounts: &metas[..named.len()],
        data: callback.data(),
    };
    invoke_each(&ix, named)?;

    // Then the lamports, and the run is gone. Each balance is read after
    // the callback, which may have credited any account it was given
    // writable (the run among them, which only gains), and after the write
    // before it: the refund address may be the deliverer itself (one view
    // of one account), which then gets the fee and the rest.
    let rest = run_ai.lamports() - fee;
    let to_deliverer = deliverer
        .lamports()
        .checked_add(fee)
        .ok_or(ProgramError::INVALID_ARGUMENT)?;
    deliverer.set_lamports(to_deliverer);
    let to_refund = refund
        .lamports()
        .checked_add(rest)
        .ok_or(ProgramError::INVALID_ARGUMENT)?;
    refund.set_lamports(to_refund);
    run_ai.close();
    Ok(())
}
