//! A turn's compute budget: the compute-unit limit it asks for and the
//! priority fee it pays (`docs/client.md`, "Cranking", says why and what
//! was measured).

use std::vec::Vec;

use super::replay::Step;

/// What a turn's two compute-budget instructions cost (150 each).
pub const COMPUTE_BUDGET_OVERHEAD: u32 = 300;
/// The most compute units one transaction may ask for.
pub const MAX_TRANSACTION_CU: u32 = 1_400_000;

/// The margin a recommended crank fee adds to a turn's own fee, in
/// quarters: a sender's priority fee and fee changes between the quote and
/// the turns are covered by a quarter more.
pub const CRANK_FEE_MARGIN_QUARTERS: u64 = 1;

/// The crank fee to offer for turns whose transactions the cluster prices
/// at `turn_message_fee` lamports each (`getFeeForMessage` of a turn's
/// message, its compute-budget instructions included, so the cluster's own
/// schedule decides: 5,000 a signature plus the priority fee today, under
/// SIMD-0553 2,500 plus half a lamport per requested unit): that fee plus
/// the margin, so a cranker sending it at that price earns the margin.
pub fn recommended_crank_fee(turn_message_fee: u64) -> u64 {
    turn_message_fee.saturating_add(
        turn_message_fee
            .saturating_mul(CRANK_FEE_MARGIN_QUARTERS)
            .div_ceil(4),
    )
}

/// The crank fee to offer for turns of `turn_fee` lamports each, and what
/// it is based on, in the words every client prints: the cluster's price
/// of a turn's message when the host asked it (`priced_by_cluster`), else
/// today's schedule, a signature plus the turn's priority fee.
pub fn crank_fee_advice(turn_fee: u64, priced_by_cluster: bool) -> (u64, std::string::String) {
    let basis = match priced_by_cluster {
        true => "the cluster's fee for a turn's message",
        false => "a signature plus the turn's priority fee",
    };
    let margin = CRANK_FEE_MARGIN_QUARTERS * 25;
    let words = std::format!("{basis}, {turn_fee} lamports, plus {margin}%");
    (recommended_crank_fee(turn_fee), words)
}

/// The compute-unit limit a turn asks for: a bound of the program's use
/// (the plan's estimate, or the measured price of its chunks) plus the
/// compute-budget instructions, at most what a transaction may use.
pub fn turn_limit(bound_cu: u32) -> u32 {
    bound_cu
        .saturating_add(COMPUTE_BUDGET_OVERHEAD)
        .min(MAX_TRANSACTION_CU)
}

/// What compute-unit limit each turn asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// One limit for every turn of the run: the largest plan's `turn_limit`.
    Uniform,
    /// Each turn the `turn_limit` of the measured price of its own chunks
    /// (`Step::bound_cu`; the default: a block's scheduler reserves what a
    /// turn asks for, and under SIMD-0553 every unit asked is paid for).
    Exact,
    /// The same given limit for every turn, 1 to `MAX_TRANSACTION_CU`.
    Fixed(u32),
}

impl LimitPolicy {
    /// `uniform`, `exact` or a number of compute units, as every client's
    /// `--cu-limit` and `cuLimit` take it; the error says what it takes.
    pub fn parse(s: &str) -> Result<LimitPolicy, std::string::String> {
        match s {
            "uniform" => Ok(LimitPolicy::Uniform),
            "exact" => Ok(LimitPolicy::Exact),
            n => match n.parse::<u32>() {
                Ok(v) if (1..=MAX_TRANSACTION_CU).contains(&v) => Ok(LimitPolicy::Fixed(v)),
                _ => Err(std::format!(
                    "the compute-unit limit {s:?} is not uniform, exact or a number of compute \
                     units from 1 to {MAX_TRANSACTION_CU}"
                )),
            },
        }
    }

    /// The limit of every step.
    pub fn limits(self, steps: &[Step]) -> Vec<u32> {
        let uniform = steps
            .iter()
            .map(|s| turn_limit(s.estimated_cu))
            .max()
            .unwrap_or(0);
        steps
            .iter()
            .map(|s| match self {
                LimitPolicy::Uniform => uniform,
                LimitPolicy::Exact => turn_limit(s.bound_cu),
                LimitPolicy::Fixed(n) => n,
            })
            .collect()
    }
}

/// What Agave's scheduler charges for the loaded-accounts allowance no turn
/// lowers (64 MiB): reserved while the turn runs, replaced by what it
/// loaded once it has.
pub const LOADED_ACCOUNTS_COST: u64 = 16_384;
/// What Agave's scheduler adds to a turn's compute-unit limit when it
/// costs the transaction (`solana-cost-model`), besides its write locks: a
/// signature (720) and the loaded-accounts allowance.
const SCHEDULER_FIXED_COST: u64 = 720 + LOADED_ACCOUNTS_COST;
/// A write lock's cost.
const WRITE_LOCK_COST: u64 = 300;
/// The accounts a turn writes: the run, the model's owner and the cranker;
/// two when the cranker is the owner (one account, one lock).
pub const TURN_WRITES: u64 = 3;
pub const TURN_WRITES_BY_OWNER: u64 = 2;

/// A turn's cost to the scheduler at `cu_limit`: the fixed part, its
/// `writes` write locks, its instruction data (the turn's 9 bytes, the
/// limit's 5, the price's 9) at one unit per 4 bytes, and the limit.
pub fn scheduler_cost(cu_limit: u32, priced: bool, writes: u64) -> u64 {
    let data = 9 + 5 + if priced { 9 } else { 0 };
    SCHEDULER_FIXED_COST + writes * WRITE_LOCK_COST + data / 4 + cu_limit as u64
}

/// The order Agave's scheduler takes conflicting transactions in:
/// highest `reward x 1,000,000 / (cost + 1)` first, where the reward is
/// what the leader keeps (half the signature fee, all the priority fee).
pub fn scheduler_priority(reward: u64, cost: u64) -> u64 {
    reward.saturating_mul(1_000_000) / cost.saturating_add(1)
}

/// The most priority fee a turn of the ramp pays: a ramp ends (and the
/// crank waits for its last turn to run before sending the next, about a
/// slot) rather than charge more. At about 2 lamports a step, a ramp is
/// about 480 full turns, a dozen blocks.
pub const RAMP_MOST_LAMPORTS: u64 = 1_000;

/// One turn's compute budget: its limit, its price, the priority fee the
/// price pays at the limit, and whether it begins a ramp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnBudget {
    pub cu_limit: u32,
    /// Micro-lamports per compute unit (0: no price instruction).
    pub micro_lamports: u64,
    pub priority_fee: u64,
    /// The crank sends this turn only once the one before has run: the
    /// scheduler would take it before any earlier turn still waiting.
    pub starts_ramp: bool,
}

/// Each turn's budget for turns asking `limits`, with a priority ramp
/// when `ramp`, for turns writing `writes` accounts (`TURN_WRITES`). The
/// ramp gives each turn the least priority fee that puts it before the
/// next in the scheduler's order by a whole priority unit before rounding,
/// so the two never tie even where the cost model's fixed part is not
/// this one's, whatever the two limits (a short turn has the higher
/// priority at equal fees, so the turn before it pays for the difference):
/// computed from the last turn back, the last paying nothing. Where that
/// would cost more than `RAMP_MOST_LAMPORTS`, a new ramp begins.
/// `base_reward` is the leader's half of a signature's fee (2,500 lamports
/// today).
pub fn turn_budgets(limits: &[u32], ramp: bool, base_reward: u64, writes: u64) -> Vec<TurnBudget> {
    let mut out: Vec<TurnBudget> = limits
        .iter()
        .map(|&cu_limit| TurnBudget {
            cu_limit,
            micro_lamports: 0,
            priority_fee: 0,
            starts_ramp: false,
        })
        .collect();
    if !ramp {
        return out;
    }
    // The reward and the cost + 1 of the turn after this one (none after
    // a ramp's last).
    let mut after: Option<(u128, u128)> = None;
    for i in (0..out.len()).rev() {
        let limit = out[i].cu_limit;
        let cost = scheduler_cost(limit, true, writes) as u128 + 1;
        let fee = match after {
            None => 0,
            Some((reward, next_cost)) => {
                // reward_i / cost_i >= reward / next_cost + 1 / 1,000,000.
                let least = (reward * 1_000_000 + next_cost) * cost;
                let least = least.div_ceil(1_000_000 * next_cost);
                (least as u64).saturating_sub(base_reward)
            }
        };
        let (price, fee) = match fee {
            0 => (0, 0),
            f => {
                let price = least_price(f, limit);
                (price, priority_fee(price, limit))
            }
        };
        let cost = scheduler_cost(limit, price > 0, writes) as u128 + 1;
        if fee > RAMP_MOST_LAMPORTS {
            // Too dear: this turn ends a ramp, and the next begins one.
            out[i + 1].starts_ramp = true;
            let cost = scheduler_cost(limit, false, writes) as u128 + 1;
            after = Some((base_reward as u128, cost));
            continue;
        }
        out[i].micro_lamports = price;
        out[i].priority_fee = fee;
        after = Some(((base_reward + fee) as u128, cost));
    }
    if let Some(first) = out.first_mut() {
        first.starts_ramp = true;
    }
    out
}

/// The least compute-unit price (micro-lamports per unit) whose priority
/// fee at `cu_limit`, rounded up as the runtime rounds it, is at least
/// `lamports` (it is `lamports` or one more).
pub fn least_price(lamports: u64, cu_limit: u32) -> u64 {
    if cu_limit == 0 || lamports == 0 {
        return 0;
    }
    (lamports - 1).saturating_mul(1_000_000) / cu_limit as u64 + 1
}

/// The priority fee a price pays at a limit, in lamports, rounded up as the
/// runtime rounds it.
pub fn priority_fee(micro_lamports_per_cu: u64, cu_limit: u32) -> u64 {
    (micro_lamports_per_cu as u128 * cu_limit as u128).div_ceil(1_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recommended_crank_fee_is_a_turns_fee_and_a_quarter() {
        // Today: a signature and the ramp's first priority fee.
        assert_eq!(recommended_crank_fee(5_256), 6_570);
        // SIMD-0553: 2,500 and half a lamport per requested unit.
        assert_eq!(recommended_crank_fee(2_500 + 1_350_300 / 2 + 256), 847_383);
        assert_eq!(recommended_crank_fee(u64::MAX), u64::MAX);
        assert_eq!(
            crank_fee_advice(5_256, true),
            (
                6_570,
                "the cluster's fee for a turn's message, 5256 lamports, plus 25%".into()
            )
        );
    }

    #[test]
    fn limits_ask_for_the_estimate_plus_the_budget_instructions() {
        assert_eq!(turn_limit(1_000), 1_300);
        assert_eq!(turn_limit(1_350_000), 1_350_300);
        assert_eq!(turn_limit(1_399_999), 1_400_000);
        assert_eq!(turn_limit(u32::MAX), 1_400_000);
    }

    #[test]
    fn a_limit_policy_is_parsed_or_refused_in_words() {
        assert_eq!(LimitPolicy::parse("uniform"), Ok(LimitPolicy::Uniform));
        assert_eq!(LimitPolicy::parse("exact"), Ok(LimitPolicy::Exact));
        assert_eq!(
            LimitPolicy::parse("1400000"),
            Ok(LimitPolicy::Fixed(1_400_000))
        );
        assert_eq!(
            LimitPolicy::parse("1400001"),
            Err(
                "the compute-unit limit \"1400001\" is not uniform, exact or a number of \
                 compute units from 1 to 1400000"
                    .into()
            )
        );
        assert!(LimitPolicy::parse("0").is_err());
    }

    /// The scheduler's priority of each budget, as Agave computes it, for
    /// turns writing `writes` accounts.
    fn priorities(budgets: &[TurnBudget], writes: u64) -> Vec<u64> {
        budgets
            .iter()
            .map(|b| {
                let cost = scheduler_cost(b.cu_limit, b.micro_lamports > 0, writes);
                scheduler_priority(2_500 + b.priority_fee, cost)
            })
            .collect()
    }

    /// Within each ramp, every turn strictly before the next: also where
    /// the scheduler's fixed cost is not the one the ramp was priced at (a
    /// write lock more or less).
    fn falls_within_ramps(budgets: &[TurnBudget]) {
        for writes in [TURN_WRITES_BY_OWNER, TURN_WRITES, TURN_WRITES + 1] {
            let p = priorities(budgets, writes);
            for i in 1..budgets.len() {
                if !budgets[i].starts_ramp {
                    assert!(p[i - 1] > p[i], "turn {i}: {} after {}", p[i], p[i - 1]);
                }
            }
        }
    }

    #[test]
    fn the_ramp_orders_turns_of_equal_limits_for_a_few_lamports() {
        let budgets = turn_budgets(&[1_350_300; 1_200], true, 2_500, TURN_WRITES);
        falls_within_ramps(&budgets);
        let fees: Vec<u64> = budgets.iter().map(|b| b.priority_fee).collect();
        assert!(budgets[0].starts_ramp);
        assert_eq!(fees[1_199], 0, "a ramp's last turn pays nothing");
        assert!(fees.iter().all(|&f| f <= RAMP_MOST_LAMPORTS));
        let starts: Vec<usize> = (0..1_200).filter(|&i| budgets[i].starts_ramp).collect();
        // About 2 lamports a step at this cost (a whole priority unit, 1.37
        // lamports, and the fee's and the price's roundings): ramps of
        // about 480 turns.
        assert_eq!(starts, [0, 236, 718]);
        // Each price pays at least its fee, rounded as the runtime rounds.
        for b in &budgets {
            assert_eq!(priority_fee(b.micro_lamports, b.cu_limit), b.priority_fee);
        }
        assert_eq!(
            turn_budgets(&[1_350_300; 3], false, 2_500, TURN_WRITES),
            [TurnBudget {
                cu_limit: 1_350_300,
                micro_lamports: 0,
                priority_fee: 0,
                starts_ramp: false,
            }; 3]
        );
    }

    #[test]
    fn a_short_turn_after_long_ones_begins_a_ramp_instead_of_taxing_them() {
        // A short turn's priority at no fee is far above a long one's.
        let limits = [
            1_350_300, 1_350_300, 1_200_000, 1_350_300, 250_000, 1_350_300,
        ];
        let budgets = turn_budgets(&limits, true, 2_500, TURN_WRITES);
        falls_within_ramps(&budgets);
        let starts: Vec<bool> = budgets.iter().map(|b| b.starts_ramp).collect();
        assert_eq!(starts, [true, false, false, false, true, false]);
        // The 1,200,000-unit turn is put after the longer one before it.
        assert!(budgets[1].priority_fee > budgets[2].priority_fee + 100);
        assert!(budgets.iter().all(|b| b.priority_fee <= RAMP_MOST_LAMPORTS));
        assert_eq!(
            scheduler_cost(1_350_300, true, TURN_WRITES),
            1_350_300 + 720 + 900 + 16_384 + 5
        );
        assert_eq!(
            scheduler_cost(1_350_300, false, TURN_WRITES_BY_OWNER),
            1_350_300 + 720 + 600 + 16_384 + 3
        );
        assert_eq!(scheduler_priority(2_500, 1_368_308), 1_827);
        assert_eq!(least_price(5, 0), 0);
        for (fee, limit) in [(1, 1_350_300), (700, 1_350_300), (3, 99_668), (1_000, 7)] {
            let price = least_price(fee, limit);
            assert!((fee..=fee + 1).contains(&priority_fee(price, limit)));
            assert!(priority_fee(price - 1, limit) < fee);
        }
    }

    #[test]
    fn one_uniform_limit_or_each_turns_own() {
        // Each step's measured price a tenth under its estimate.
        let step = |estimated_cu: u32| Step {
            turns_before: 0,
            sections: std::vec![],
            estimated_cu,
            bound_cu: estimated_cu - estimated_cu / 10,
            charged: 0,
            generated: 0,
            generated_this_turn: 0,
            phase: 0,
            text_len: 0,
            tokens: std::vec![],
            text: std::vec![],
            state_sha256: [0; 32],
        };
        let steps: Vec<Step> = [1_350_000, 249_080, 1_349_900].map(step).into();
        assert_eq!(LimitPolicy::Uniform.limits(&steps), [1_350_300; 3]);
        assert_eq!(
            LimitPolicy::Exact.limits(&steps),
            [1_215_300, 224_472, 1_215_210]
        );
        assert_eq!(LimitPolicy::Exact.limits(&[step(u32::MAX)]), [1_400_000]);
        assert_eq!(LimitPolicy::Fixed(7).limits(&steps), [7; 3]);
    }
}
