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

/// The compute-unit limit a turn asks for: the planner's estimate plus the
/// compute-budget instructions, at most what a transaction may use.
pub fn turn_limit(estimated_cu: u32) -> u32 {
    estimated_cu
        .saturating_add(COMPUTE_BUDGET_OVERHEAD)
        .min(MAX_TRANSACTION_CU)
}

/// What compute-unit limit each turn asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// One limit for every turn of the run: the largest plan's `turn_limit`
    /// (the default: one limit makes every turn cost the scheduler the
    /// same, so the priority ramp orders them).
    Uniform,
    /// Each turn its own plan's `turn_limit`.
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
                LimitPolicy::Exact => turn_limit(s.estimated_cu),
                LimitPolicy::Fixed(n) => n,
            })
            .collect()
    }
}

/// The turns of one priority ramp: twice the window, so a ramp's first
/// turn (the dearest) is never in flight with the previous ramp's last
/// (the cheapest) but after it has landed (the crank waits at the
/// boundary).
pub fn ramp_period(window: usize) -> u64 {
    2 * window.max(1) as u64
}

/// A turn's priority fee in the ramp: 4 lamports for each turn left in its
/// period. The scheduler orders by `(fee rewarded) / (cost)`, and with one
/// uniform limit every turn's cost is the same, so the earlier turn always
/// goes first: 4 lamports a step keep two neighbours' priorities apart
/// after the rounding of the price to micro-lamports per unit and of the
/// priority to a whole number. Without a ramp all turns tie, and the
/// scheduler breaks ties by its own slot numbers, often last first.
pub fn ramp_lamports(turns_before: u64, period: u64) -> u64 {
    4 * (period - turns_before % period)
}

/// The compute-unit price (micro-lamports per unit) that pays at least
/// `lamports` at `cu_limit`.
pub fn ramp_price(lamports: u64, cu_limit: u32) -> u64 {
    if cu_limit == 0 {
        return 0;
    }
    (lamports.saturating_mul(1_000_000)).div_ceil(cu_limit as u64)
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

    #[test]
    fn the_ramp_falls_by_four_lamports_a_turn_and_prices_round_up() {
        let period = ramp_period(32);
        assert_eq!(period, 64);
        assert_eq!(ramp_lamports(0, period), 256);
        assert_eq!(ramp_lamports(63, period), 4);
        assert_eq!(ramp_lamports(64, period), 256);
        assert_eq!(ramp_price(256, 1_000_300), 256);
        assert_eq!(priority_fee(ramp_price(256, 1_000_300), 1_000_300), 257);
        assert_eq!(ramp_price(5, 0), 0);
        assert_eq!(priority_fee(1, 1), 1);
        // Neighbours stay apart after both roundings, at a full turn's limit.
        let fee = |t| priority_fee(ramp_price(ramp_lamports(t, period), 1_350_300), 1_350_300);
        for t in 1..period {
            assert!(
                fee(t) < fee(t - 1),
                "turn {t}: {} after {}",
                fee(t),
                fee(t - 1)
            );
        }
        assert!(fee(0) >= 256);
    }

    #[test]
    fn one_uniform_limit_or_each_turns_own() {
        let step = |estimated_cu| Step {
            turns_before: 0,
            sections: std::vec![],
            estimated_cu,
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
            [1_350_300, 249_380, 1_350_200]
        );
        assert_eq!(LimitPolicy::Exact.limits(&[step(1_399_900)]), [1_400_000]);
        assert_eq!(LimitPolicy::Fixed(7).limits(&steps), [7; 3]);
    }
}
