//! What a run will cost, before it is opened: the native replay gives its
//! exact turns (a run may end early on an end token), their weight
//! accounts and compute units; the transaction sizes give the opening's
//! transactions; the fee schedule and rent give the lamports.

use curta_core::inference::{self, RunParams};
use curta_core::planner::CHARGES;
use curta_core::protocol::run;
use curta_core::state::StateBuffer;
use solana_pubkey::Pubkey;

use crate::artifact::Artifact;
use crate::crank::{limits, ramp_lamports, ramp_period, ramp_price, LimitPolicy};
use crate::errors::Result;
use crate::funds::Needed;
use crate::instructions::ModelKeys;
use crate::packing;
use crate::replay;
use crate::rpc::priority_fee;

/// A run's cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    /// Turns the run takes (the replay's).
    pub turns: u64,
    /// Turns it takes without an early end token (the planner's bound).
    pub turns_at_most: u64,
    pub tokens: u32,
    /// Transactions to open the run (1, or more with a long prompt).
    pub open_transactions: u64,
    /// Open, every turn, close.
    pub transactions: u64,
    pub signatures: u64,
    /// The compute units the turns ask for (their limits), and the
    /// planner's estimates of what they use.
    pub cu_requested: u64,
    pub cu_estimated: u64,
    pub cu_limit_max: u32,
    pub base_fees: u64,
    pub priority_fees: u64,
    /// The run account's size and rent (returned when it is closed).
    pub account_len: usize,
    pub rent: u64,
    /// Royalty: escrowed at opening (per token times max tokens), and paid
    /// for the tokens the run generates.
    pub escrow: u64,
    pub royalty_paid: u64,
    pub text: Vec<u8>,
}

/// A run account's length for these parameters.
pub fn account_len(artifact: &Artifact, params: &RunParams) -> Result<usize> {
    let config = artifact.metadata().config;
    Ok(run::HEADER_LEN + curta_core::state_size(config, params.prompt.len(), params.max_tokens)?)
}

impl Quote {
    pub fn fees(&self) -> u64 {
        self.base_fees + self.priority_fees
    }

    /// The opening transactions' fees: the payer and the run sign each.
    pub fn open_fees(&self, lamports_per_signature: u64) -> u64 {
        2 * self.open_transactions * lamports_per_signature
    }

    /// What opening and running it takes from the opener: the rent and the
    /// escrow (returned at close, less the royalty paid) and the fees.
    pub fn needed(&self) -> Needed {
        Needed::new()
            .with("rent", self.rent)
            .with("escrow", self.escrow)
            .with("fees", self.fees())
    }
}

/// What pricing a run needs besides its parameters.
#[derive(Clone, Copy, Debug)]
pub struct Prices {
    pub allowance: u32,
    pub royalty: u64,
    pub lamports_per_signature: u64,
    pub limits: LimitPolicy,
    /// The crank's priority ramp, and its window (which sets its period).
    pub priority_ramp: bool,
    pub window: usize,
}

/// The default rent (3,480 lamports per byte-year, two years, plus 128
/// bytes of account overhead), as a cluster with default rent charges.
pub fn default_rent(len: usize) -> u64 {
    solana_rent::Rent::default().minimum_balance(len)
}

/// Prices a run; `rent` is the rent of its account (`Quote::account_len`
/// bytes, which `account_len` gives beforehand).
pub fn quote(artifact: &Artifact, params: &RunParams, prices: &Prices, rent: u64) -> Result<Quote> {
    let m = artifact.metadata();
    crate::params::check_context(m.config, m.bytes, params)?;
    let start = replay::initial_state(artifact, params)?;
    let r = replay::replay(artifact, &start, prices.allowance)?;
    let n = r.steps.len() as u64;
    // The bound: tokenizing turns, then the planner's count to max tokens
    // (the core counts it under the default allowance only).
    let mut scratch = StateBuffer::new(start.len());
    let turns_at_most = if prices.allowance == CHARGES.allowance {
        inference::quote_turns(
            m.config,
            m.bytes,
            params.prompt,
            params.max_tokens,
            params.temperature_q16,
            &mut scratch,
        )?
    } else {
        n
    };
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
    let account_len = run::HEADER_LEN + start.len();
    let create = solana_system_interface::instruction::create_account(
        &payer,
        &run_key,
        1,
        account_len as u64,
        &program,
    );
    let open =
        packing::open_run_transactions(&program, &keys, &run_key, &payer, &payer, params, create);
    let open_transactions = open.len() as u64;
    let limits = limits(&r.steps, prices.limits);
    let priority_fees: u64 = limits
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            let lamports = ramp_lamports(r.steps[i].turns_before, ramp_period(prices.window));
            match prices.priority_ramp {
                true => priority_fee(ramp_price(lamports, l), l),
                false => 0,
            }
        })
        .sum();
    // Each opening transaction: the payer and the run sign; each turn and
    // the close: the payer alone.
    let signatures = 2 * open_transactions + n + 1;
    let generated = r.steps.last().map_or(0, |s| s.generated);
    Ok(Quote {
        turns: n,
        turns_at_most,
        tokens: generated,
        open_transactions,
        transactions: open_transactions + n + 1,
        signatures,
        cu_requested: limits.iter().map(|&l| l as u64).sum(),
        cu_estimated: r.steps.iter().map(|s| s.estimated_cu as u64).sum(),
        cu_limit_max: limits.iter().copied().max().unwrap_or(0),
        base_fees: signatures * prices.lamports_per_signature,
        priority_fees,
        account_len,
        rent,
        escrow: prices.royalty * params.max_tokens as u64,
        royalty_paid: prices.royalty * generated as u64,
        text: r.steps.iter().flat_map(|s| s.text.clone()).collect(),
    })
}
