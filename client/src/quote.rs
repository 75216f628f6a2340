//! What a run will cost, before it is opened: the client core's `quote`
//! (the replay's exact turns, their limits and priority fees), with the
//! opening's transactions as this client packs them and the cluster's fee
//! schedule and rent.

use curta_core::inference::RunParams;
use curta_core::protocol::run::CrankFee;
use solana_pubkey::Pubkey;

use crate::artifact::Artifact;
use crate::cluster::Cluster;
use crate::crank::{LimitPolicy, Options};
use crate::errors::{Error, Result};
use crate::funds::Needed;
use crate::instructions::ModelKeys;
use crate::transaction_fit;

pub use curta_core::client::quote::Quote;

/// What opening and running a quoted run takes from its opener.
pub trait Needs {
    /// The opening transactions' fees: the payer and the run sign each.
    fn open_fees(&self, lamports_per_signature: u64) -> u64;
    /// The rent and the escrow (returned at close, less the royalty paid)
    /// and the fees.
    fn needed(&self) -> Needed;
}

impl Needs for Quote {
    fn open_fees(&self, lamports_per_signature: u64) -> u64 {
        2 * self.open_transactions * lamports_per_signature
    }

    fn needed(&self) -> Needed {
        Needed::new()
            .with("rent", self.rent)
            .with("escrow", self.escrow)
            .with("crank deposit", self.crank.deposit)
            .with("fees", self.fees())
    }
}

/// A run account's length for these parameters.
pub fn account_len(artifact: &Artifact, params: &RunParams) -> Result<usize> {
    let config = artifact.metadata().config;
    Ok(curta_core::client::quote::account_len(
        config,
        params.prompt.len(),
        params.max_tokens,
    )?)
}

/// What the CLI knows of a run's pricing besides its parameters; `quote` adds
/// the opening's transactions and the rent for the client core's `Prices`.
#[derive(Clone, Copy, Debug)]
pub struct QuoteInputs {
    pub allowance: u32,
    pub royalty: u64,
    pub lamports_per_signature: u64,
    pub limits: LimitPolicy,
    /// The crank's priority ramp, and its window (which sets its period).
    pub priority_ramp: bool,
    pub window: usize,
    /// Lamports each turn pays its sender.
    pub crank_fee: u64,
}

/// The default rent (3,480 lamports per byte-year, two years, plus 128
/// bytes of account overhead), as a cluster with default rent charges.
pub fn default_rent(len: usize) -> u64 {
    solana_rent::Rent::default().minimum_balance(len)
}

/// The crank fee to offer and its basis (`budget::crank_fee_advice`): a
/// turn's own fee as the cluster priced its message (`turn_fee`), else
/// today's schedule, a signature plus the turn's priority fee.
pub fn recommended_crank_fee(
    q: &Quote,
    lamports_per_signature: u64,
    turn_fee: Option<u64>,
) -> (u64, String) {
    let fee = turn_fee.unwrap_or(lamports_per_signature + q.turn_priority_fee_max);
    curta_core::client::budget::crank_fee_advice(fee, turn_fee.is_some())
}

/// A turn's message as the crank sends the quoted run's costliest turn
/// (the largest limit and priority price), to ask the cluster its fee; the
/// run's address is a stand-in, which does not change the price.
pub fn turn_message(
    program: &Pubkey,
    keys: &ModelKeys,
    cranker: &Pubkey,
    q: &Quote,
) -> Vec<solana_instruction::Instruction> {
    let run = Pubkey::new_from_array([3; 32]);
    crate::plans::turn(
        crate::instructions::turn(program, keys, &run, cranker, &[], Some(0)),
        q.cu_limit_max,
        q.turn_price_max,
    )
}

/// What a turn of a run opened with `allowance` costs the signer at most,
/// cranked with `opts`: the cluster's fee for the dearest turn's message
/// (`fleet::dearest_turn`: the run's largest compute-unit limit at the
/// ramp's first price), asked as `curta quote` asks it. The accounts are
/// stand-ins, which do not change the price.
pub async fn turn_cost(cluster: &Cluster, allowance: u32, opts: &Options) -> Result<u64> {
    let (cu_limit, price) = curta_core::client::fleet::dearest_turn(allowance, opts);
    let keys = ModelKeys {
        config_account: Pubkey::new_from_array([4; 32]),
        model: Pubkey::new_from_array([5; 32]),
        owner: Pubkey::new_from_array([6; 32]),
        weights: vec![Pubkey::new_from_array([7; 32])],
        royalty: 0,
        identity: [8; 32],
    };
    let run = Pubkey::new_from_array([3; 32]);
    let turn = crate::instructions::turn(
        &cluster.program_id,
        &keys,
        &run,
        &cluster.payer_key(),
        &[],
        Some(0),
    );
    cluster
        .fee_for(&crate::plans::turn(turn, cu_limit, price))
        .await
}

/// Prices a run (the client core's `quote`); `rent` is the rent of its
/// account (`Quote::account_len` bytes, which `account_len` gives
/// beforehand). The opening's transactions are this client's packing.
pub fn quote(
    artifact: &Artifact,
    params: &RunParams,
    prices: &QuoteInputs,
    rent: u64,
) -> Result<Quote> {
    let m = artifact.metadata();
    crate::params::check_context(m.config, m.bytes, params)?;
    // The opening's transactions, sized with stand-in keys.
    let (program, payer, run_key) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
        Pubkey::new_from_array([3; 32]),
    );
    let keys = ModelKeys {
        config_account: Pubkey::new_from_array([4; 32]),
        model: Pubkey::new_from_array([5; 32]),
        owner: Pubkey::new_from_array([6; 32]),
        weights: vec![Pubkey::new_from_array([7; 32]); m.section_count()],
        royalty: 0,
        identity: [8; 32],
    };
    let account_len = account_len(artifact, params)?;
    let create = solana_system_interface::instruction::create_account(
        &payer,
        &run_key,
        1,
        account_len as u64,
        &program,
    );
    // The deposit's size does not change the opening's: a stand-in.
    let crank = CrankFee::for_turns(prices.crank_fee, 1);
    let open = transaction_fit::open_run_transactions(
        &program,
        &keys,
        &run_key,
        &payer,
        &payer,
        (params, &crank),
        create,
    );
    let core_prices = curta_core::client::quote::Prices {
        allowance: prices.allowance,
        royalty: prices.royalty,
        lamports_per_signature: prices.lamports_per_signature,
        crank: Options {
            window: prices.window,
            limits: prices.limits,
            priority_ramp: prices.priority_ramp,
            ..Options::default()
        },
        open_transactions: open.len() as u64,
        rent,
        crank_fee: prices.crank_fee,
    };
    curta_core::client::quote::quote(&artifact.bytes, params, &core_prices).map_err(|e| {
        match e.turn {
            0 => Error::from(e.error),
            t => Error::from(e.error).context(format!("the native replay of turn {t}")),
        }
    })
}
