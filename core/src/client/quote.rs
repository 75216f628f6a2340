//! What a run will cost before it is opened: the replay gives its exact
//! turns (a run may end early on an end token) and their compute units;
//! the crank's budget gives each turn's limit and priority fee; the
//! opening's transaction count (from the host's packing), the fee
//! schedule and the rent give the lamports.

use std::vec::Vec;

use super::budget::{turn_budgets, TURN_WRITES};
use super::crank::Options;
use super::replay::{initial_state, replay, ReplayError};
use crate::convert::open_artifact;
use crate::inference::{self, RunParams};
use crate::planner::CHARGES;
use crate::protocol::run::{self, CrankFee};
use crate::state::StateBuffer;
use crate::{Config, Error};

/// A run's cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    /// Turns the run takes (the replay's).
    pub turns: u64,
    /// Turns it takes without an early end token: the planner's bound
    /// under the default allowance, the replay's under another.
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
    /// Each turn's plan estimate, in order.
    pub cu_per_turn: Vec<u32>,
    pub base_fees: u64,
    pub priority_fees: u64,
    /// The most priority fee one turn pays (the ramp's first turn), and
    /// its price in micro-lamports per compute unit: with `cu_limit_max`,
    /// the costliest turn's message, which a host prices on its cluster.
    pub turn_priority_fee_max: u64,
    pub turn_price_max: u64,
    /// The run account's size and rent (returned when it is closed).
    pub account_len: usize,
    pub rent: u64,
    /// Royalty: escrowed at opening (per token times max tokens), and paid
    /// for the tokens the run generates.
    pub escrow: u64,
    pub royalty_paid: u64,
    /// What each turn pays its sender, and the deposit for every turn's
    /// (returned at close as far as turns did not take it).
    pub crank: CrankFee,
    pub text: Vec<u8>,
}

impl Quote {
    pub fn fees(&self) -> u64 {
        self.base_fees + self.priority_fees
    }

    /// What opening puts in the run: the rent, the escrow and the crank
    /// deposit.
    pub fn deposit(&self) -> u64 {
        self.rent + self.escrow + self.crank.deposit
    }
}

/// What pricing a run needs besides its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prices {
    /// The config account's turn allowance, which the run will record at
    /// opening and be planned under.
    pub allowance: u32,
    /// Lamports per token the model's owner asks.
    pub royalty: u64,
    pub lamports_per_signature: u64,
    /// How the turns will be cranked (limits, priority ramp, window).
    pub crank: Options,
    /// The opening's transactions, as the host packs them.
    pub open_transactions: u64,
    /// The rent of the run account (`account_len` bytes).
    pub rent: u64,
    /// Lamports each turn pays its sender (0: the opener cranks).
    pub crank_fee: u64,
}

/// A run account's length for these parameters.
pub fn account_len(config: Config, prompt_len: usize, max_tokens: u32) -> Result<usize, Error> {
    Ok(run::HEADER_LEN + crate::state_size(config, prompt_len, max_tokens)?)
}

/// Prices a run of the model `artifact`.
pub fn quote(artifact: &[u8], params: &RunParams, prices: &Prices) -> Result<Quote, ReplayError> {
    let at0 = |error| ReplayError { turn: 0, error };
    let m = open_artifact(artifact).map_err(at0)?;
    let start = initial_state(artifact, params).map_err(at0)?;
    let r = replay(artifact, &start, prices.allowance)?;
    let n = r.steps.len() as u64;
    let turns_at_most = if prices.allowance == CHARGES.allowance {
        let mut scratch = StateBuffer::new(start.len());
        let (prompt, t) = (params.prompt, params.temperature_q16);
        inference::quote_turns(
            m.config,
            m.bytes,
            prompt,
            params.max_tokens,
            t,
            &mut scratch,
        )
        .map_err(at0)?
    } else {
        n
    };
    let limits = prices.crank.limits.limits(&r.steps);
    // Each turn's price (micro-lamports per unit) and priority fee.
    let base_reward = prices.lamports_per_signature / 2;
    // Priced for a cranker that is not the model's owner.
    let ramp = prices.crank.priority_ramp;
    let budgets = turn_budgets(&limits, ramp, base_reward, TURN_WRITES);
    let ramp: Vec<(u64, u64)> = budgets
        .iter()
        .map(|b| (b.micro_lamports, b.priority_fee))
        .collect();
    // Each opening transaction: the payer and the run sign; each turn and
    // the close: the payer alone.
    let signatures = 2 * prices.open_transactions + n + 1;
    let generated = r.steps.last().map_or(0, |s| s.generated);
    let account_len = account_len(m.config, params.prompt.len(), params.max_tokens).map_err(at0)?;
    Ok(Quote {
        turns: n,
        turns_at_most,
        tokens: generated,
        open_transactions: prices.open_transactions,
        transactions: prices.open_transactions + n + 1,
        signatures,
        cu_requested: limits.iter().map(|&l| l as u64).sum(),
        cu_estimated: r.steps.iter().map(|s| s.estimated_cu as u64).sum(),
        cu_limit_max: limits.iter().copied().max().unwrap_or(0),
        cu_per_turn: r.steps.iter().map(|s| s.estimated_cu).collect(),
        base_fees: signatures * prices.lamports_per_signature,
        priority_fees: ramp.iter().map(|&(_, fee)| fee).sum(),
        turn_priority_fee_max: ramp.iter().map(|&(_, fee)| fee).max().unwrap_or(0),
        turn_price_max: ramp.iter().map(|&(price, _)| price).max().unwrap_or(0),
        account_len,
        rent: prices.rent,
        escrow: prices.royalty.saturating_mul(params.max_tokens as u64),
        royalty_paid: prices.royalty.saturating_mul(generated as u64),
        crank: CrankFee::for_turns(prices.crank_fee, n),
        text: r
            .steps
            .iter()
            .flat_map(|s| s.text.iter().copied())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};

    #[test]
    fn a_quote_counts_the_replays_turns_and_prices_them() {
        let ck = synthetic_checkpoint(&TINY, 3).unwrap();
        let a = convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap();
        let params = RunParams {
            prompt: b"ab",
            max_tokens: 5,
            temperature_q16: 0,
            seed: 0,
        };
        let prices = Prices {
            allowance: 100_000,
            royalty: 1_000,
            lamports_per_signature: 5_000,
            crank: Options::default(),
            open_transactions: 1,
            rent: 7,
            crank_fee: 0,
        };
        let q = quote(&a, &params, &prices).unwrap();
        let r = replay(&a, &initial_state(&a, &params).unwrap(), 100_000).unwrap();
        assert_eq!(q.turns, r.steps.len() as u64);
        assert_eq!(
            q.turns_at_most, q.turns,
            "under another allowance, the replay's count"
        );
        assert_eq!(q.transactions, 1 + q.turns + 1);
        assert_eq!(q.signatures, 2 + q.turns + 1);
        assert_eq!(q.base_fees, 5_000 * q.signatures);
        // Each turn asks for the measured price of its own chunks, and pays
        // the ramp's fee.
        let limits: Vec<u32> = r.steps.iter().map(|s| s.bound_cu + 300).collect();
        assert_eq!(q.cu_limit_max, *limits.iter().max().unwrap());
        assert_eq!(
            q.cu_requested,
            limits.iter().map(|&l| l as u64).sum::<u64>()
        );
        let budgets = turn_budgets(&limits, true, 2_500, TURN_WRITES);
        let want: u64 = budgets.iter().map(|b| b.priority_fee).sum();
        assert_eq!(q.priority_fees, want);
        assert!(q.priority_fees > 0);
        assert_eq!((q.escrow, q.royalty_paid), (5_000, 1_000 * q.tokens as u64));
        assert_eq!(q.account_len, account_len(TINY, 2, 5).unwrap());
        assert_eq!(q.deposit(), 7 + 5_000);
        let paid = Prices {
            crank_fee: 6_250,
            ..prices
        };
        let q = quote(&a, &params, &paid).unwrap();
        assert_eq!(q.crank, CrankFee::for_turns(6_250, q.turns));
        assert_eq!(q.deposit(), 7 + 5_000 + 6_250 * q.turns);
        let unramped = Prices {
            crank: Options {
                priority_ramp: false,
                ..Options::default()
            },
            ..prices
        };
        assert_eq!(quote(&a, &params, &unramped).unwrap().priority_fees, 0);
    }
}
