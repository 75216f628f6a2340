//! The instruction processor: one handler per instruction, every account
//! check explicit, in the order the accounts are listed (see
//! `docs/program.md` and `curta_core::protocol`).

use curta_core::format::{Config, Layout, Metadata, MAX_SECTION_LEN};
use curta_core::inference::{self, RunParams, StateMemory, TurnInput, TurnSections, WeightSection};
use curta_core::planner;
use curta_core::protocol::{
    self, config, model, run, weight, Address, ConfigAccount, Instruction, Mismatch, ModelAccount,
    RunAccount, WeightAccount, CONFIG_TAG, HASH_CHUNK, INIT_MODEL_ENTRY_LEN, MODEL_TAG, RUN_TAG,
    SEAL_BYTES_PER_CALL, WEIGHT_TAG,
};
use curta_core::StateInfo;

use crate::account::AccountView;
use crate::entrypoint::InstructionInput;
use crate::error::{core_error, CurtaError, ProgramError, ProgramResult};
use crate::{log, sysvar};

pub fn process_instruction(ix: &InstructionInput) -> ProgramResult {
    let instruction = Instruction::decode(ix.data).ok_or(CurtaError::InvalidInstruction)?;
    let accounts = ix.accounts;
    let program_id = ix.program_id;
    match instruction {
        Instruction::InitConfig { allowance } => init_config(program_id, accounts, allowance),
        Instruction::SetAllowance { allowance } => set_allowance(program_id, accounts, allowance),
        Instruction::InitModel {
            royalty,
            config,
            sections,
        } => {
            let params = ModelParams {
                royalty,
                config,
                sections,
            };
            init_model(program_id, accounts, &params)
        }
        Instruction::Write { offset, bytes } => write(program_id, accounts, offset, bytes),
        Instruction::SealModel => seal_model(program_id, accounts),
        Instruction::OpenRun {
            max_tokens,
            temperature_q16,
            seed,
            prompt,
        } => {
            let params = RunParams {
                prompt,
                max_tokens,
                temperature_q16,
                seed,
            };
            open_run(program_id, accounts, &params)
        }
        Instruction::Turn => turn(program_id, accounts),
        Instruction::CloseRun => close_run(program_id, accounts),
    }
}

// ---- Account checks --------------------------------------------------------

/// The first `N` accounts; an instruction given fewer fails.
#[inline(always)]
fn take<const N: usize>(accounts: &[AccountView]) -> Result<&[AccountView; N], ProgramError> {
    accounts
        .get(..N)
        .and_then(|a| a.try_into().ok())
        .ok_or(CurtaError::NotEnoughAccounts.into())
}

#[inline(always)]
fn owned(a: &AccountView, program_id: &Address) -> ProgramResult {
    if a.owner() == program_id {
        Ok(())
    } else {
        Err(CurtaError::WrongOwner.into())
    }
}

#[inline(always)]
fn signer(a: &AccountView) -> ProgramResult {
    if a.is_signer() {
        Ok(())
    } else {
        Err(CurtaError::MissingSigner.into())
    }
}

#[inline(always)]
fn writable(a: &AccountView) -> ProgramResult {
    if a.is_writable() {
        Ok(())
    } else {
        Err(CurtaError::NotWritable.into())
    }
}

/// A program-owned, writable account whose data is still all zero where a
/// tag would be: created for this program and not yet initialized.
fn fresh(a: &AccountView, program_id: &Address) -> ProgramResult {
    owned(a, program_id)?;
    writable(a)?;
    if a.data().len() >= 8 && a.data()[..8] != [0; 8] {
        return Err(CurtaError::AlreadyInitialized.into());
    }
    Ok(())
}

/// `fresh`, and exactly `len` bytes long.
fn fresh_sized(a: &AccountView, program_id: &Address, len: usize) -> ProgramResult {
    fresh(a, program_id)?;
    if a.data_len() != len {
        return Err(CurtaError::InvalidAccountSize.into());
    }
    Ok(())
}

#[inline(always)]
fn mismatch(m: Mismatch) -> ProgramError {
    match m {
        Mismatch::Kind => CurtaError::WrongAccountKind.into(),
        Mismatch::Size => CurtaError::InvalidAccountSize.into(),
    }
}

// The readers below are inlined: a view is a slice, and a non-inlined SBF
// function cannot return a `Result` of one (an aggregate).

#[inline(always)]
fn config_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
) -> Result<ConfigAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    ConfigAccount::read(a.data()).map_err(mismatch)
}

#[inline(always)]
fn model_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
) -> Result<ModelAccount<'a>, ProgramError> {
    owned(a, program_id)?;
    ModelAccount::read(a.data()).map_err(mismatch)
}

/// The model the weight and run accounts must belong to.
struct ModelRef<'a> {
    key: &'a Address,
    view: ModelAccount<'a>,
}

impl<'a> core::ops::Deref for ModelRef<'a> {
    type Target = ModelAccount<'a>;
    fn deref(&self) -> &ModelAccount<'a> {
        &self.view
    }
}

/// The weight account of `section` of the model, as the model records it.
#[inline(always)]
fn weight_account<'a>(
    a: &'a AccountView,
    program_id: &Address,
    m: &ModelRef,
    section: usize,
) -> Result<WeightAccount<'a>, ProgramError> {
    check_weight(a, program_id, m, section)?;
    Ok(WeightAccount(a.data()))
}

fn check_weight(
    a: &AccountView,
    program_id: &Address,
    m: &ModelRef,
    section: usize,
) -> ProgramResult {
    owned(a, program_id)?;
    let w = WeightAccount::read(a.data()).map_err(mismatch)?;
    if w.model() != m.key {
        return Err(CurtaError::WrongModel.into());
    }
    let v = &m.view;
    if section >= v.section_count()
        || w.section() as usize != section
        || a.key() != v.section_address(section)
    {
        return Err(CurtaError::WrongSection.into());
    }
    Ok(())
}

/// The model's own configuration.
#[inline(always)]
fn model_config(m: &ModelAccount) -> Result<Config, ProgramError> {
    Config::read(m.model_config()).map_err(core_error)
}

// ---- Config ----------------------------------------------------------------

/// Accounts: config (writable, uninitialized), admin (signer).
fn init_config(program_id: &Address, accounts: &[AccountView], allowance: u32) -> ProgramResult {
    let [config_ai, admin] = take::<2>(accounts)?;
    fresh_sized(config_ai, program_id, config::LEN)?;
    signer(admin)?;
    planner::check_allowance(allowance).map_err(core_error)?;
    // SAFETY: no other view of this account's data is alive.
    let data = unsafe { config_ai.data_mut() };
    data[config::TAG..config::TAG + 8].copy_from_slice(&CONFIG_TAG);
    data[config::ADMIN..config::ADMIN + 32].copy_from_slice(admin.key());
    data[config::ALLOWANCE..config::ALLOWANCE + 4].copy_from_slice(&allowance.to_le_bytes());
    Ok(())
}

/// Accounts: config (writable), admin (signer).
fn set_allowance(program_id: &Address, accounts: &[AccountView], allowance: u32) -> ProgramResult {
    let [config_ai, admin] = take::<2>(accounts)?;
    let c = config_account(config_ai, program_id)?;
    writable(config_ai)?;
    signer(admin)?;
    if admin.key() != c.admin() {
        return Err(CurtaError::Unauthorized.into());
    }
    planner::check_allowance(allowance).map_err(core_error)?;
    // SAFETY: `c`'s borrow of the data ends above; no other view is alive.
    let data = unsafe { config_ai.data_mut() };
    data[config::ALLOWANCE..config::ALLOWANCE + 4].copy_from_slice(&allowance.to_le_bytes());
    Ok(())
}

// ---- Models and weights ----------------------------------------------------

struct ModelParams<'a> {
    royalty: u64,
    config: &'a [u8],
    sections: &'a [u8],
}

/// Accounts: config, model (writable, uninitialized), owner (signer), then
/// one weight account (writable, uninitialized) per section, in order.
fn init_model(program_id: &Address, accounts: &[AccountView], p: &ModelParams) -> ProgramResult {
    let [config_ai, model_ai, owner] = take::<3>(accounts)?;
    config_account(config_ai, program_id)?;
    let count = p.sections.len() / INIT_MODEL_ENTRY_LEN;
    fresh_sized(model_ai, program_id, model::len(count))?;
    signer(owner)?;
    let cfg = Config::read(p.config).map_err(core_error)?;
    let layout = Layout::new(&cfg).map_err(core_error)?;
    if count != layout.section_count() as usize {
        return Err(CurtaError::SectionCountMismatch.into());
    }
    let weights = &accounts[3..];
    if weights.len() != count {
        return Err(CurtaError::NotEnoughAccounts.into());
    }
    for (i, w) in weights.iter().enumerate() {
        let entry = &p.sections[i * INIT_MODEL_ENTRY_LEN..];
        let length = u64::from_le_bytes(entry[..8].try_into().unwrap_or([0; 8]));
        if length == 0 || length > MAX_SECTION_LEN as u64 {
            return Err(CurtaError::SectionLengthMismatch.into());
        }
        fresh_sized(w, program_id, weight::HEADER_LEN + length as usize)?;
        // SAFETY: each weight account is distinct (a repeat would have been
        // initialized by its first appearance and fail `fresh`).
        let data = unsafe { w.data_mut() };
        data[weight::TAG..weight::TAG + 8].copy_from_slice(&WEIGHT_TAG);
        data[weight::MODEL..weight::MODEL + 32].copy_from_slice(model_ai.key());
        data[weight::SECTION..weight::SECTION + 4].copy_from_slice(&(i as u32).to_le_bytes());
        data[weight::LENGTH..weight::LENGTH + 8].copy_from_slice(&length.to_le_bytes());
    }
    // SAFETY: no other view of the model's data is alive.
    let data = unsafe { model_ai.data_mut() };
    data[model::TAG..model::TAG + 8].copy_from_slice(&MODEL_TAG);
    data[model::CONFIG_ACCOUNT..model::CONFIG_ACCOUNT + 32].copy_from_slice(config_ai.key());
    data[model::OWNER..model::OWNER + 32].copy_from_slice(owner.key());
    data[model::ROYALTY..model::ROYALTY + 8].copy_from_slice(&p.royalty.to_le_bytes());
    data[model::MODEL_CONFIG..model::MODEL_CONFIG + 28].copy_from_slice(p.config);
    data[model::SECTION_COUNT..model::SECTION_COUNT + 4]
        .copy_from_slice(&(count as u32).to_le_bytes());
    for (i, w) in weights.iter().enumerate() {
        let at = model::HEADER_LEN + i * model::ENTRY_LEN;
        let entry = &p.sections[i * INIT_MODEL_ENTRY_LEN..(i + 1) * INIT_MODEL_ENTRY_LEN];
        data[at..at + 32].copy_from_slice(w.key());
        data[at + model::ENTRY_LENGTH..at + model::ENTRY_LEN].copy_from_slice(entry);
    }
    Ok(())
}

/// Accounts: model, weight (writable), owner (signer).
fn write(
    program_id: &Address,
    accounts: &[AccountView],
    offset: u64,
    bytes: &[u8],
) -> ProgramResult {
    let [model_ai, weight_ai, owner] = take::<3>(accounts)?;
    let m = ModelRef {
        key: model_ai.key(),
        view: model_account(model_ai, program_id)?,
    };
    signer(owner)?;
    if owner.key() != m.owner() {
        return Err(CurtaError::Unauthorized.into());
    }
    if m.status() != model::WRITING {
        return Err(CurtaError::ModelNotWritable.into());
    }
    writable(weight_ai)?;
    let section = WeightAccount::read(weight_ai.data())
        .map_err(mismatch)?
        .section() as usize;
    let w = weight_account(weight_ai, program_id, &m, section)?;
    let end = offset
        .checked_add(bytes.len() as u64)
        .ok_or(CurtaError::WriteOutOfBounds)?;
    if end > w.bytes().len() as u64 {
        return Err(CurtaError::WriteOutOfBounds.into());
    }
    // SAFETY: `w`'s borrow ends here; no other view of the data is alive.
    let data = unsafe { weight_ai.data_mut() };
    let at = weight::HEADER_LEN + offset as usize;
    data[at..at + bytes.len()].copy_from_slice(bytes);
    Ok(())
}

/// Accounts: model (writable), owner (signer), every weight account in
/// order. Hashes up to `SEAL_BYTES_PER_CALL` bytes where the last call
/// stopped; when every section matches its digest, checks section zero
/// against the model and seals it.
fn seal_model(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [model_ai, owner] = take::<2>(accounts)?;
    let m = ModelRef {
        key: model_ai.key(),
        view: model_account(model_ai, program_id)?,
    };
    writable(model_ai)?;
    signer(owner)?;
    if owner.key() != m.owner() {
        return Err(CurtaError::Unauthorized.into());
    }
    if m.status() == model::SEALED {
        return Err(CurtaError::ModelNotWritable.into());
    }
    let count = m.section_count();
    let weights = &accounts[2..];
    if weights.len() != count {
        return Err(CurtaError::NotEnoughAccounts.into());
    }
    for (i, w) in weights.iter().enumerate() {
        weight_account(w, program_id, &m, i)?;
    }
    let mut section = m.seal_section() as usize;
    let mut offset = m.seal_offset() as usize;
    let mut chain = *m.seal_chain();
    let mut budget = SEAL_BYTES_PER_CALL;
    while section < count {
        let bytes = &weights[section].data()[weight::HEADER_LEN..];
        let chunk = &bytes[offset..bytes.len().min(offset + HASH_CHUNK)];
        if chunk.len() > budget {
            break;
        }
        chain = crate::syscalls::sha256(&[&chain, chunk]);
        budget -= chunk.len();
        offset += chunk.len();
        if offset == bytes.len() {
            if chain != *m.section_digest(section) {
                return Err(CurtaError::HashMismatch.into());
            }
            section += 1;
            offset = 0;
            chain = [0; 32];
        }
    }
    let status = if section == count {
        let zero = &weights[0].data()[weight::HEADER_LEN..];
        let meta = Metadata::new(zero).map_err(core_error)?;
        if meta.config != model_config(&m)? {
            return Err(CurtaError::WrongConfig.into());
        }
        if (1..count).any(|i| meta.section_len(i) as u64 != m.section_len(i)) {
            return Err(CurtaError::SectionLengthMismatch.into());
        }
        model::SEALED
    } else {
        model::SEALING
    };
    // SAFETY: `m`'s borrow ends here; no other view of the data is alive.
    let data = unsafe { model_ai.data_mut() };
    data[model::STATUS..model::STATUS + 4].copy_from_slice(&status.to_le_bytes());
    data[model::SEAL_SECTION..model::SEAL_SECTION + 4]
        .copy_from_slice(&(section as u32).to_le_bytes());
    data[model::SEAL_OFFSET..model::SEAL_OFFSET + 8]
        .copy_from_slice(&(offset as u64).to_le_bytes());
    data[model::SEAL_CHAIN..model::SEAL_CHAIN + 32].copy_from_slice(&chain);
    Ok(())
}

// ---- Runs ------------------------------------------------------------------

/// Accounts: config, model, run (writable, uninitialized, sized for the
/// state, funded with rent plus royalty times max tokens), opener (signer).
fn open_run(program_id: &Address, accounts: &[AccountView], p: &RunParams) -> ProgramResult {
    let [config_ai, model_ai, run_ai, opener] = take::<4>(accounts)?;
    config_account(config_ai, program_id)?;
    let m = model_account(model_ai, program_id)?;
    if m.config_account() != config_ai.key() {
        return Err(CurtaError::WrongConfig.into());
    }
    if m.status() != model::SEALED {
        return Err(CurtaError::ModelNotSealed.into());
    }
    let cfg = model_config(&m)?;
    // The core checks the state's size (BufferTooSmall) with the prompt.
    fresh(run_ai, program_id)?;
    signer(opener)?;
    if run_ai.data_len() < run::HEADER_LEN {
        return Err(CurtaError::InvalidAccountSize.into());
    }
    // Checked by division (SBF has no overflow-checked multiply), hidden from
    // LLVM, which would turn the comparison back into one.
    let most = core::hint::black_box(u64::MAX / p.max_tokens.max(1) as u64);
    if m.royalty() > most {
        return Err(CurtaError::EscrowTooSmall.into());
    }
    let escrow = m.royalty() * p.max_tokens as u64;
    let mut rent = 0;
    sysvar::minimum_balance(run_ai.data_len(), &mut rent)?;
    if run_ai.lamports() < rent.saturating_add(escrow) {
        return Err(CurtaError::EscrowTooSmall.into());
    }
    // SAFETY: no other view of the run's data is alive.
    let data = unsafe { run_ai.data_mut() };
    let (header, state) = data.split_at_mut(run::HEADER_LEN);
    inference::init_state_with(&cfg, p, state, StateMemory::Zeroed).map_err(core_error)?;
    header[run::TAG..run::TAG + 8].copy_from_slice(&RUN_TAG);
    header[run::MODEL..run::MODEL + 32].copy_from_slice(model_ai.key());
    header[run::OPENER..run::OPENER + 32].copy_from_slice(opener.key());
    header[run::ROYALTY..run::ROYALTY + 8].copy_from_slice(&m.royalty().to_le_bytes());
    header[run::DEPOSITED..run::DEPOSITED + 8].copy_from_slice(&escrow.to_le_bytes());
    header[run::ESCROW..run::ESCROW + 8].copy_from_slice(&escrow.to_le_bytes());
    Ok(())
}

/// Accounts: config, model, run (writable), model owner (writable), section
/// zero's weight account, then the weight accounts of the sections the
/// turn's plan names, in its order. Takes no data: anyone may advance a run.
fn turn(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [config_ai, model_ai, run_ai, owner, zero_ai] = take::<5>(accounts)?;
    let c = config_account(config_ai, program_id)?;
    let m = ModelRef {
        key: model_ai.key(),
        view: model_account(model_ai, program_id)?,
    };
    if m.config_account() != config_ai.key() {
        return Err(CurtaError::WrongConfig.into());
    }
    if m.status() != model::SEALED {
        return Err(CurtaError::ModelNotSealed.into());
    }
    owned(run_ai, program_id)?;
    writable(run_ai)?;
    let r = RunAccount::read(run_ai.data()).map_err(mismatch)?;
    if r.model() != model_ai.key() {
        return Err(CurtaError::WrongModel.into());
    }
    if owner.key() != m.owner() {
        return Err(CurtaError::Unauthorized.into());
    }
    writable(owner)?;
    let zero = weight_account(zero_ai, program_id, &m, 0)?;
    let cfg = model_config(&m)?;
    let allowance = c.allowance();
    let plan = planner::plan_turn_with(cfg, r.state(), allowance).map_err(core_error)?;
    // Each weight account given must be one of the model's; the core then
    // refuses a turn without a section its plan needs (MissingWeights).
    let named = &accounts[5..];
    if named.len() > plan.section_count {
        return Err(CurtaError::WrongAccountCount.into());
    }
    let sections = TurnSections::collect(named.len(), |i| {
        let a = &named[i];
        let index = WeightAccount::read(a.data()).map_err(mismatch)?.section();
        let bytes = weight_account(a, program_id, &m, index as usize)?.bytes();
        Ok::<_, ProgramError>(WeightSection { index, bytes })
    })?;
    let royalty = r.royalty();
    let escrow = r.escrow();
    // max_generated never exceeds the tokens left, which the escrow covers.
    if plan.max_generated as u64 > escrow.checked_div(royalty).unwrap_or(u64::MAX) {
        return Err(CurtaError::EscrowTooSmall.into());
    }
    let input = TurnInput {
        config: cfg,
        metadata: zero.bytes(),
        sections: &sections,
        allowance,
    };
    // SAFETY: `r`'s borrow of the run's data ends above; the weight accounts
    // are other accounts (their addresses are the model's, never the run's).
    let data = unsafe { run_ai.data_mut() };
    let result = inference::turn_with(&input, Some(&plan), &mut data[run::HEADER_LEN..])
        .map_err(core_error)?;
    let pay = result.generated_this_turn as u64 * royalty;
    let paid = protocol::RunAccount(data).paid() + pay;
    data[run::ESCROW..run::ESCROW + 8].copy_from_slice(&(escrow - pay).to_le_bytes());
    data[run::PAID..run::PAID + 8].copy_from_slice(&paid.to_le_bytes());
    if pay > 0 {
        run_ai.set_lamports(run_ai.lamports() - pay);
        owner.set_lamports(owner.lamports() + pay);
    }
    let turns = StateInfo::read(&data[run::HEADER_LEN..])
        .map(|s| s.turns)
        .unwrap_or(0);
    log::log_data(&[
        run_ai.key(),
        &turns.to_le_bytes(),
        &result.generated_this_turn.to_le_bytes(),
        &result.work.to_le_bytes(),
    ]);
    Ok(())
}

/// Accounts: run (writable), opener (signer, writable). A finished run
/// returns its unspent escrow and its rent to the opener.
fn close_run(program_id: &Address, accounts: &[AccountView]) -> ProgramResult {
    let [run_ai, opener] = take::<2>(accounts)?;
    owned(run_ai, program_id)?;
    writable(run_ai)?;
    let r = RunAccount::read(run_ai.data()).map_err(mismatch)?;
    signer(opener)?;
    writable(opener)?;
    if opener.key() != r.opener() {
        return Err(CurtaError::Unauthorized.into());
    }
    if !StateInfo::read(r.state()).map_err(core_error)?.complete {
        return Err(CurtaError::RunNotComplete.into());
    }
    let lamports = run_ai.lamports();
    run_ai.set_lamports(0);
    opener.set_lamports(opener.lamports() + lamports);
    // SAFETY: `r`'s borrow ends here. A closed run can never be read as a run.
    let data = unsafe { run_ai.data_mut() };
    data[run::TAG..run::TAG + 8].copy_from_slice(&[0; 8]);
    Ok(())
}
