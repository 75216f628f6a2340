//! The curta program's instructions as Solana `Instruction`s: the accounts
//! of each in the order and with the flags of its table
//! (`curta_core::protocol::accounts`), and its data from
//! `Instruction::encode`. The harness and the `curta`
//! command build every transaction from these.

use curta_core::format::Config;
use curta_core::inference::RunParams;
use curta_core::planner;
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{accounts, AccountRole, Instruction as Ix, ModelAccount};
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;

fn meta(role: &AccountRole, key: Pubkey) -> AccountMeta {
    AccountMeta {
        pubkey: key,
        is_signer: role.signer,
        is_writable: role.writable,
    }
}

/// An instruction's accounts: `keys` in its table's order, each with its
/// table's signer and writable flags.
fn metas(roles: &[AccountRole], keys: &[Pubkey]) -> Vec<AccountMeta> {
    debug_assert_eq!(roles.len(), keys.len(), "{roles:?}");
    roles.iter().zip(keys).map(|(r, k)| meta(r, *k)).collect()
}

fn instruction(program_id: &Pubkey, ix: Ix, accounts: Vec<AccountMeta>) -> Instruction {
    Instruction {
        program_id: *program_id,
        accounts,
        data: ix.encode(),
    }
}

/// `init_config`: `config` is new and signs.
pub fn init_config(
    program_id: &Pubkey,
    config: &Pubkey,
    admin: &Pubkey,
    allowance: u32,
) -> Instruction {
    instruction(
        program_id,
        Ix::InitConfig { allowance },
        metas(&accounts::INIT_CONFIG, &[*config, *admin]),
    )
}

pub fn set_allowance(
    program_id: &Pubkey,
    config: &Pubkey,
    admin: &Pubkey,
    allowance: u32,
) -> Instruction {
    instruction(
        program_id,
        Ix::SetAllowance { allowance },
        metas(&accounts::SET_ALLOWANCE, &[*config, *admin]),
    )
}

pub fn set_admin(
    program_id: &Pubkey,
    config: &Pubkey,
    admin: &Pubkey,
    new_admin: &Pubkey,
) -> Instruction {
    instruction(
        program_id,
        Ix::SetAdmin,
        metas(&accounts::SET_ADMIN, &[*config, *admin, *new_admin]),
    )
}

/// What `init_model` takes besides its accounts.
#[derive(Clone, Copy, Debug)]
pub struct ModelParams {
    pub royalty: u64,
    pub config: Config,
    pub flags: u32,
    pub zero_len: u64,
}

/// `init_model`: `model` is new and signs.
pub fn init_model(
    program_id: &Pubkey,
    config_account: &Pubkey,
    model: &Pubkey,
    owner: &Pubkey,
    p: &ModelParams,
) -> Instruction {
    let config = p.config.to_bytes();
    instruction(
        program_id,
        Ix::InitModel {
            royalty: p.royalty,
            config: &config,
            flags: p.flags,
            zero_len: p.zero_len,
        },
        metas(&accounts::INIT_MODEL, &[*config_account, *model, *owner]),
    )
}

/// `bind_weight`: `weight` is new and signs.
pub fn bind_weight(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    owner: &Pubkey,
    section: u32,
) -> Instruction {
    instruction(
        program_id,
        Ix::BindWeight { section },
        metas(&accounts::BIND_WEIGHT, &[*model, *weight, *owner]),
    )
}

pub fn write(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    owner: &Pubkey,
    offset: u64,
    bytes: &[u8],
) -> Instruction {
    instruction(
        program_id,
        Ix::Write { offset, bytes },
        metas(&accounts::WRITE, &[*model, *weight, *owner]),
    )
}

pub fn seal_section(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    owner: &Pubkey,
    digest: &[u8; 32],
) -> Instruction {
    instruction(
        program_id,
        Ix::SealSection { digest },
        metas(&accounts::SEAL_SECTION, &[*model, *weight, *owner]),
    )
}

pub fn seal_model(
    program_id: &Pubkey,
    model: &Pubkey,
    zero: &Pubkey,
    owner: &Pubkey,
) -> Instruction {
    instruction(
        program_id,
        Ix::SealModel,
        metas(&accounts::SEAL_MODEL, &[*model, *zero, *owner]),
    )
}

pub fn close_weight(
    program_id: &Pubkey,
    model: &Pubkey,
    weight: &Pubkey,
    owner: &Pubkey,
) -> Instruction {
    instruction(
        program_id,
        Ix::CloseWeight,
        metas(&accounts::CLOSE_WEIGHT, &[*model, *weight, *owner]),
    )
}

pub fn close_model(program_id: &Pubkey, model: &Pubkey, owner: &Pubkey) -> Instruction {
    instruction(
        program_id,
        Ix::CloseModel,
        metas(&accounts::CLOSE_MODEL, &[*model, *owner]),
    )
}

/// `open_run`: `run` is new and signs. The first `staged` bytes of the
/// prompt must already be in the account (`write_prompt`); the rest travel
/// with the instruction. The royalty and model identity are `keys`' (as
/// read from the model account): the program refuses the open if the model
/// has changed since. `crank` is what each turn pays its sender, from a
/// deposit the run account must hold beside its rent and escrow.
pub fn open_run(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    p: &RunParams,
    crank: &CrankFee,
    staged: usize,
) -> Instruction {
    open_run_with(
        program_id,
        keys,
        run,
        opener,
        p,
        crank,
        staged,
        &Delivery::NONE,
    )
}

/// What a run delivers when it finishes: its callback record
/// (`curta_core::protocol::CallbackInit::encode_into`) and the fee its
/// delivery pays; `NONE` for a run its opener reads itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<'a> {
    pub callback: &'a [u8],
    pub fee: u64,
}

impl Delivery<'_> {
    pub const NONE: Delivery<'static> = Delivery {
        callback: &[],
        fee: 0,
    };
}

/// `open_run` naming a callback: the run account must hold the record
/// after the state (`run::account_size`) and the fee beside its deposits.
#[allow(clippy::too_many_arguments)]
pub fn open_run_with(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    p: &RunParams,
    crank: &CrankFee,
    staged: usize,
    delivery: &Delivery,
) -> Instruction {
    instruction(
        program_id,
        Ix::OpenRun {
            max_tokens: p.max_tokens,
            temperature_q16: p.temperature_q16,
            seed: p.seed,
            royalty: keys.royalty,
            model_identity: &keys.identity,
            crank_fee: crank.fee,
            crank_deposit: crank.deposit,
            staged: staged as u32,
            delivery_fee: delivery.fee,
            callback: delivery.callback,
            prompt: &p.prompt[staged..],
        },
        metas(
            &accounts::OPEN_RUN,
            &[keys.config_account, keys.model, *run, *opener],
        ),
    )
}

/// What a run's instructions name, read from its model account: the
/// accounts its turns take, and the royalty and identity it opens at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelKeys {
    pub config_account: Pubkey,
    pub model: Pubkey,
    pub owner: Pubkey,
    /// The weight account of each section, in section order.
    pub weights: Vec<Pubkey>,
    /// Lamports per generated token.
    pub royalty: u64,
    /// The model's identity (`protocol::model_identity`), zero until sealed.
    pub identity: [u8; 32],
}

impl ModelKeys {
    /// From a model account's data and address.
    pub fn read(model: &Pubkey, m: &ModelAccount) -> ModelKeys {
        ModelKeys {
            config_account: Pubkey::new_from_array(*m.config_account()),
            model: *model,
            owner: Pubkey::new_from_array(*m.owner()),
            weights: (0..m.section_count())
                .map(|i| Pubkey::new_from_array(*m.section_address(i)))
                .collect(),
            royalty: m.royalty(),
            identity: *m.model_identity(),
        }
    }

    /// The weight accounts a turn from `state` reads after section zero:
    /// the sections `plan_turn` names under `allowance` (none for a turn
    /// that tokenizes, or for a state that does not plan).
    pub fn turn_weights(&self, config: Config, state: &[u8], allowance: u32) -> Vec<Pubkey> {
        match planner::plan_turn_with(config, state, allowance) {
            Ok(plan) => plan.sections[..plan.section_count]
                .iter()
                .map(|&s| self.weights[s as usize])
                .collect(),
            Err(_) => vec![],
        }
    }
}

/// `turn`: section zero's weight account, the cranker (who signs and is
/// paid the run's crank fee), then `weights` (the plan's). With
/// `expected_turns`, the program refuses the turn unless the state has run
/// exactly that many turns.
pub fn turn(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    cranker: &Pubkey,
    weights: &[Pubkey],
    expected_turns: Option<u64>,
) -> Instruction {
    let fixed = [
        keys.config_account,
        keys.model,
        *run,
        keys.owner,
        keys.weights[0],
        *cranker,
    ];
    let mut named = metas(&accounts::TURN, &fixed);
    named.extend(weights.iter().map(|w| meta(&accounts::TURN_WEIGHT, *w)));
    instruction(program_id, Ix::Turn { expected_turns }, named)
}

pub fn close_run(program_id: &Pubkey, run: &Pubkey, opener: &Pubkey) -> Instruction {
    instruction(
        program_id,
        Ix::CloseRun,
        metas(&accounts::CLOSE_RUN, &[*run, *opener]),
    )
}

/// `close_config`: the admin receives the config's lamports.
pub fn close_config(program_id: &Pubkey, config: &Pubkey, admin: &Pubkey) -> Instruction {
    instruction(
        program_id,
        Ix::CloseConfig,
        metas(&accounts::CLOSE_CONFIG, &[*config, *admin]),
    )
}

/// `reclaim`: `account` signs for itself.
pub fn reclaim(program_id: &Pubkey, account: &Pubkey, recipient: &Pubkey) -> Instruction {
    instruction(
        program_id,
        Ix::Reclaim,
        metas(&accounts::RECLAIM, &[*account, *recipient]),
    )
}

/// `write_prompt`: `run` signs for itself, before it is opened.
pub fn write_prompt(program_id: &Pubkey, run: &Pubkey, offset: usize, bytes: &[u8]) -> Instruction {
    instruction(
        program_id,
        Ix::WritePrompt {
            offset: offset as u32,
            bytes,
        },
        metas(&accounts::WRITE_PROMPT, &[*run]),
    )
}

/// `deliver`: the run's delivery as the client core plans it
/// (`curta_core::client::delivery::plan`), sent and paid by `deliverer`.
pub fn deliver(
    program_id: &Pubkey,
    d: &curta_core::client::delivery::Delivery,
    deliverer: &Pubkey,
) -> Instruction {
    let mut accounts = metas(
        &accounts::DELIVER,
        &[
            Pubkey::new_from_array(d.run),
            Pubkey::new_from_array(d.refund),
            *deliverer,
            Pubkey::new_from_array(d.program),
        ],
    );
    accounts.extend(d.accounts.iter().map(|(key, writable)| AccountMeta {
        pubkey: Pubkey::new_from_array(*key),
        is_signer: false,
        is_writable: *writable,
    }));
    instruction(program_id, Ix::Deliver, accounts)
}
