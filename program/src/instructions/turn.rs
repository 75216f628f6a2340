//! `turn`: advances a run by one turn. Permissionless: the plan comes from
//! the state, so whoever sends it, the turn does the same work. It pays the
//! model's owner for the tokens generated, its sender the run's crank fee,
//! and logs a receipt.

use curta_core::inference::{self, TurnInput, TurnSections, WeightSection};
use curta_core::protocol::{
    accounts as roles, event, model, Address, RunAccount, RunAccountMut, TurnEvent,
};
use curta_core::state::{Header, StateInfo, StateLayout};

use crate::account::{AccountView, SYSTEM_PROGRAM};
use crate::checks::{
    config_account, distinct, model_account, model_config, owned, signer, take, weight_account,
    writable,
};
use crate::error::{core_error, CurtaError, ProgramError, ProgramResult};
#[cfg(feature = "cost-probe")]
use crate::probe;
use crate::{log, sysvar};

/// Accounts: `roles::TURN`, then the weight accounts of the sections
/// the turn's plan names, in any order (`roles::TURN_WEIGHT`).
///
/// The program does not plan the turn itself: the core cuts it where the
/// planner does in one walk, and the escrow always covers the tokens left
/// (royalty x (max tokens - generated)), so a turn can never owe more.
pub fn turn(
    program_id: &Address,
    accounts: &[AccountView],
    expected_turns: Option<u64>,
) -> ProgramResult {
    let [config_ai, model_ai, run_ai, owner, zero_ai, cranker] =
        take::<{ roles::TURN.len() }>(accounts)?;
    let named = &accounts[roles::TURN.len()..];
    #[cfg(feature = "cost-probe")]
    let (named, mut probe) = match named.split_last() {
        // SAFETY: the probe account is no other account of this turn's.
        Some((p, named)) => (named, probe::ComputeProbe::new(unsafe { p.data_mut() })),
        None => return Err(CurtaError::NotEnoughAccounts.into()),
    };

    // A stale or reordered turn fails here, before any work.
    owned(run_ai, program_id)?;
    writable(run_ai)?;
    let r = RunAccount::read(run_ai.data()).map_err(crate::checks::mismatch)?;
    let before = StateInfo::read(r.state()).map_err(core_error)?;
    if expected_turns.is_some_and(|t| t != before.turns) {
        return Err(CurtaError::StaleTurn.into());
    }
    config_account(config_ai, program_id)?;
    let m = model_account(model_ai, program_id)?;
    if m.config_account() != config_ai.key() {
        return Err(CurtaError::WrongConfig.into());
    }
    if m.status() != model::SEALED {
        return Err(CurtaError::ModelNotSealed.into());
    }
    if r.model() != model_ai.key() {
        return Err(CurtaError::WrongModel.into());
    }
    // The model the run was opened on, not another created at its address
    // since: such a run can only be closed.
    if r.model_identity() != m.model_identity() {
        return Err(CurtaError::ModelChanged.into());
    }
    if owner.key() != m.owner() {
        return Err(CurtaError::Unauthorized.into());
    }
    writable(owner)?;
    distinct(run_ai, owner)?;
    // The fee goes to the turn's signer, so no one who did not send the
    // turn can collect it, and to a wallet, so none of the program's
    // accounts ever receives one.
    signer(cranker)?;
    writable(cranker)?;
    if cranker.owner() != &SYSTEM_PROGRAM {
        return Err(CurtaError::InvalidCranker.into());
    }
    // When a fee is due: the owner, paid by royalty, is not its recipient
    // (each payment has one), and the cranker holds its rent-exempt minimum
    // already, so it stays rent-exempt (it only gains).
    let crank_fee = r.next_crank_payment();
    if crank_fee > 0 {
        distinct(cranker, owner)?;
        let mut rent = 0;
        sysvar::minimum_balance(cranker.data_len(), &mut rent)?;
        if cranker.lamports() < rent {
            return Err(CurtaError::InvalidCranker.into());
        }
    }
    let zero = weight_account(zero_ai, program_id, model_ai.key(), &m)?;
    if zero.section() != 0 {
        return Err(CurtaError::WrongSection.into());
    }

    let config = model_config(&m)?;
    // The run's allowance, recorded at opening: a config's later
    // `set_allowance` never changes a run's turns (0, a run opened before
    // it was recorded, fails the core's check: such a run can only close).
    let allowance = r.allowance();
    // The core walks the turn once and reads the sections as it reaches
    // them: each account given must be the model's own for its section, and
    // one it needs but was not given fails the turn (MissingWeights).
    if named.len() > TurnSections::MAX {
        return Err(CurtaError::WrongAccountCount.into());
    }
    let sections = TurnSections::collect(named.len(), |i| {
        let w = weight_account(&named[i], program_id, model_ai.key(), &m)?;
        Ok::<_, ProgramError>(WeightSection {
            index: w.section(),
            bytes: w.bytes(),
        })
    })?;
    let royalty = r.royalty();
    let escrow = r.escrow();
    let paid_before = r.paid();
    let crank_paid_before = r.crank_paid();
    #[cfg(feature = "cost-probe")]
    probe.mark();

    let input = TurnInput {
        config,
        metadata: zero.bytes(),
        sections: &sections,
        allowance,
    };
    // SAFETY: `r`'s borrow of the run's data ends above; the weight
    // accounts are other accounts (their tags are not a run's).
    let (mut header, state) = RunAccountMut(unsafe { run_ai.data_mut() }).split();
    #[cfg(not(feature = "cost-probe"))]
    let result = inference::turn_with(&input, None, state).map_err(core_error)?;
    #[cfg(feature = "cost-probe")]
    let result = {
        let result = inference::turn_probed(&input, None, state, &mut probe);
        probe.mark();
        result.map_err(core_error)?
    };
    // No more weight accounts than the turn read.
    if named.len() > result.sections_read as usize {
        return Err(CurtaError::WrongAccountCount.into());
    }

    // The owner is paid where the lamports move, from the escrow alone.
    let pay = result.generated_this_turn as u64 * royalty;
    if pay > escrow || pay > run_ai.lamports() {
        return Err(CurtaError::EscrowTooSmall.into());
    }
    let to_owner = owner
        .lamports()
        .checked_add(pay)
        .ok_or(CurtaError::EscrowTooSmall)?;
    header.set_payments(escrow - pay, paid_before + pay);
    run_ai.set_lamports(run_ai.lamports() - pay);
    owner.set_lamports(to_owner);

    // The sender is paid from the crank deposit while it lasts.
    if crank_fee > 0 {
        if crank_fee > run_ai.lamports() {
            return Err(CurtaError::EscrowTooSmall.into());
        }
        let to_cranker = cranker
            .lamports()
            .checked_add(crank_fee)
            .ok_or(CurtaError::EscrowTooSmall)?;
        header.set_crank_paid(crank_paid_before + crank_fee);
        run_ai.set_lamports(run_ai.lamports() - crank_fee);
        cranker.set_lamports(to_cranker);
    }

    let after = Header::read(state).map_err(core_error)?;
    let receipt = TurnEvent {
        run: *run_ai.key(),
        model: *model_ai.key(),
        turns: after.turns,
        paid: pay,
        generated: after.generated,
        generated_this_turn: result.generated_this_turn,
        charged: result.work,
        phase: after.phase as u32,
        text_len: after.text_len,
        crank_paid: crank_fee,
    };
    let mut record = [0u8; event::LEN];
    receipt.encode(&mut record);
    // The new tokens and text, where the core just wrote them.
    let layout = StateLayout::new(&config, after.prompt_len as usize, after.max_tokens)
        .map_err(core_error)?;
    let tokens = layout.output_tokens..layout.output_tokens + 4 * after.generated as usize;
    let text = layout.output_text..layout.output_text + after.text_len as usize;
    log::log_data(&[
        &record,
        &state[tokens.start + 4 * before.generated as usize..tokens.end],
        &state[text.start + before.text_len as usize..text.end],
    ]);
    #[cfg(feature = "cost-probe")]
    {
        probe.mark();
        probe.finish();
    }
    Ok(())
}
