//! Crankers as a fleet (`curta crank`): which open runs are worth a
//! cranker's turns, and in which order a cranker takes them, so that
//! crankers with different keys spread over the open runs instead of all
//! racing for the same one (`docs/client.md`, "Running a cranker").
//!
//! - **Worth it**: a run whose next turn pays its sender (the crank fee, or
//!   the rest of the deposit when that is less) at least what a turn costs
//!   the signer, and of the run only the turns that do
//!   (`Options::min_payment`). That cost is the cluster's fee for the
//!   dearest turn's message a crank of the run sends (`dearest_turn`: the
//!   run's largest compute-unit limit and the ramp's highest priority
//!   fee), as `curta quote` asks it; or a floor the cranker names
//!   (`--min-fee`, 0 for any run).
//! - **Order**: by `order_key`, a hash of the signer's key and the run's
//!   address: the same for a signer from pass to pass, a different
//!   shuffle for each signer. Two crankers started together take
//!   different runs first, and meet only where their orders cross.

use std::vec::Vec;

use super::budget::{least_price, turn_limit, LimitPolicy, RAMP_MOST_LAMPORTS};
use super::crank::Options;
use crate::protocol::Address;
use crate::sha256::Sha256;

/// What `order_key` hashes first, so the order is no other hash's.
pub const ORDER_DOMAIN: &[u8] = b"curta-fleet/v1/order";

/// A run's place in a signer's order: `sha256(ORDER_DOMAIN || 0 || signer
/// || run)`, compared as bytes.
pub fn order_key(signer: &Address, run: &Address) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(ORDER_DOMAIN);
    h.update(&[0]);
    h.update(signer);
    h.update(run);
    h.finish()
}

/// Sorts `runs` into `signer`'s order (`order_key`, then the address).
pub fn order<T>(signer: &Address, runs: &mut [T], run_of: impl Fn(&T) -> Address) {
    runs.sort_by_cached_key(|r| {
        let run = run_of(r);
        (order_key(signer, &run), run)
    });
}

/// The dearest turn a crank under `options` sends for a run opened with
/// `allowance`: its compute-unit limit (the largest any turn of the run
/// asks: its first, tokenizing turn is planned at the allowance) and its
/// compute-unit price (the most a ramp's turn pays, `RAMP_MOST_LAMPORTS`;
/// 0 without the ramp). The cluster's fee for a turn's message at these is the most
/// one turn costs its sender.
pub fn dearest_turn(allowance: u32, options: &Options) -> (u32, u64) {
    let cu_limit = match options.limits {
        LimitPolicy::Fixed(n) => n,
        LimitPolicy::Uniform | LimitPolicy::Exact => turn_limit(allowance),
    };
    let price = match options.priority_ramp {
        true => least_price(RAMP_MOST_LAMPORTS, cu_limit),
        false => 0,
    };
    (cu_limit, price)
}

/// The least a turn must pay a fleet's cranker: `min_fee` when one is
/// given (0 takes any run), else `turn_cost`, what a turn costs the
/// signer. A run is worth cranking while its next turn pays that
/// (`Options::min_payment` ends a crank where its turns stop paying it).
pub fn floor(turn_cost: u64, min_fee: Option<u64>) -> u64 {
    min_fee.unwrap_or(turn_cost)
}

/// The runs worth cranking, in `signer`'s order, and how many were not:
/// `runs` with what each one's next turn pays and the signer's `floor`.
pub fn select<T>(
    signer: &Address,
    runs: Vec<T>,
    run_of: impl Fn(&T) -> Address,
    payment_and_floor: impl Fn(&T) -> (u64, u64),
) -> (Vec<T>, u64) {
    let total = runs.len() as u64;
    let mut chosen: Vec<T> = runs
        .into_iter()
        .filter(|r| {
            let (payment, floor) = payment_and_floor(r);
            payment >= floor
        })
        .collect();
    order(signer, &mut chosen, run_of);
    let skipped = total - chosen.len() as u64;
    (chosen, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::budget::priority_fee;

    fn key(b: u8) -> Address {
        [b; 32]
    }

    #[test]
    fn the_order_key_is_the_hash_of_the_signer_and_the_run() {
        let mut bytes = ORDER_DOMAIN.to_vec();
        bytes.push(0);
        bytes.extend_from_slice(&key(1));
        bytes.extend_from_slice(&key(2));
        assert_eq!(order_key(&key(1), &key(2)), crate::sha256::sha256(&bytes));
        assert_ne!(order_key(&key(1), &key(2)), order_key(&key(2), &key(1)));
    }

    #[test]
    fn a_signer_keeps_its_order_and_two_signers_differ() {
        let runs: Vec<Address> = (10..30).map(key).collect();
        let sorted = |signer: &Address, mut r: Vec<Address>| {
            order(signer, &mut r, |a| *a);
            r
        };
        let a = sorted(&key(1), runs.clone());
        // The same whatever order the runs are found in.
        let mut reversed = runs.clone();
        reversed.reverse();
        assert_eq!(sorted(&key(1), reversed), a);
        // A permutation of the runs, by the hash.
        let mut same = a.clone();
        same.sort();
        assert_eq!(same, runs);
        assert!(a
            .windows(2)
            .all(|w| order_key(&key(1), &w[0]) < order_key(&key(1), &w[1])));
        // Another signer: another order, and another first run.
        let b = sorted(&key(2), runs.clone());
        assert_ne!(a, b);
        assert_ne!(a[0], b[0]);
        // Not the address order either (what every cranker took before).
        assert_ne!(a, runs);
        // Pinned: a change to the order is a change to the fleet's spread.
        assert_eq!((a[0], b[0]), (key(15), key(20)));
    }

    #[test]
    fn the_dearest_turn_is_the_allowance_s_limit_at_the_ramp_s_highest_fee() {
        let o = Options::default();
        let (limit, price) = dearest_turn(1_350_000, &o);
        assert_eq!(limit, 1_350_300);
        // No turn of a ramp pays more than RAMP_MOST_LAMPORTS (1,000).
        assert_eq!(price, least_price(1_000, 1_350_300));
        assert_eq!(priority_fee(price, limit), 1_000);
        // The limit a transaction may ask at most, and a fixed one.
        assert_eq!(dearest_turn(1_400_000, &o).0, 1_400_000);
        let fixed = Options {
            limits: LimitPolicy::Fixed(200_000),
            ..o
        };
        assert_eq!(dearest_turn(1_350_000, &fixed).0, 200_000);
        let flat = Options {
            priority_ramp: false,
            ..o
        };
        assert_eq!(dearest_turn(1_350_000, &flat), (1_350_300, 0));
    }

    #[test]
    fn the_floor_is_what_a_turn_costs_or_the_one_named() {
        assert_eq!(floor(5_257, None), 5_257);
        // A floor named: above or below the cost; 0 takes any run.
        assert_eq!(floor(5_257, Some(6_001)), 6_001);
        assert_eq!(floor(5_257, Some(4_000)), 4_000);
        assert_eq!(floor(5_257, Some(0)), 0);
    }

    #[test]
    fn selecting_skips_what_pays_too_little_and_orders_the_rest() {
        // (run, payment, cost)
        let runs: Vec<(Address, u64, u64)> = std::vec![
            (key(10), 20_000, 5_257),
            (key(11), 0, 5_257),
            (key(12), 5_000, 5_257),
            (key(13), 5_257, 5_257),
            (key(14), 900_000, 5_257),
        ];
        let pick = |min_fee| {
            let (chosen, skipped) = select(
                &key(1),
                runs.clone(),
                |r| r.0,
                |r| (r.1, floor(r.2, min_fee)),
            );
            (chosen.iter().map(|r| r.0[0]).collect::<Vec<u8>>(), skipped)
        };
        let mut paying = std::vec![10, 13, 14];
        order(&key(1), &mut paying, |&b| key(b));
        assert_eq!(pick(None), (paying, 2));
        let mut all = std::vec![10, 11, 12, 13, 14];
        order(&key(1), &mut all, |&b| key(b));
        assert_eq!(pick(Some(0)), (all, 0));
        // Not the best paid first: the hash's order.
        let (chosen, _) = pick(None);
        assert_eq!(chosen.len(), 3);
    }
}
