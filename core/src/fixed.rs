//! The fixed-point arithmetic of the forward pass and the sampler, in one
//! place: every rounding, wrap and check the targets must agree on
//! (`docs/spec.md`, "Fixed-point arithmetic"). Integers only, and only what
//! SBF has: no 128-bit products, no signed division, no floating point.
//!
//! Every operation wraps at its width, except `to_cache`, the one named check.

use crate::format::TABLE_LEN;
use crate::Error;

/// RMS normalization's epsilon, 0.00001 with 32 fractional bits.
pub const RMS_EPSILON: u64 = 42_950;
/// The last index of the exponential and SiLU tables.
pub const TABLE_LAST: usize = TABLE_LEN - 1;
/// SiLU's table covers inputs from -16 to 16, with 16 fractional bits.
pub const SILU_LIMIT: i64 = 16 << 16;
/// xorshift64*'s output multiplier.
pub const DRAW_MULTIPLIER: u64 = 0x2545_F491_4F6C_DD1D;

/// The floor square root of a `u64`, bit by bit (SBF has no `isqrt`).
pub fn isqrt(n: u64) -> u64 {
    let mut x = n;
    let mut result = 0u64;
    let mut bit = 1u64 << 62;
    while bit > n {
        bit >>= 2;
    }
    while bit != 0 {
        if x >= result + bit {
            x -= result + bit;
            result = (result >> 1) + bit;
        } else {
            result >>= 1;
        }
        bit >>= 2;
    }
    result
}

/// Signed division rounding toward zero by a positive divisor, through
/// unsigned magnitudes (SBF has no signed division instruction).
#[inline(always)]
pub fn div_toward_zero(a: i64, b: u64) -> i64 {
    let q = (a.unsigned_abs() / b) as i64;
    if a < 0 {
        q.wrapping_neg()
    } else {
        q
    }
}

/// RMS normalization's divisor: `isqrt(sum(x * x) / n + epsilon)`, at least
/// 1. The squares and their sum wrap in 64 bits; the sum is then unsigned.
pub fn rms(x: &[i64]) -> u64 {
    let mut sum = 0i64;
    for &v in x {
        sum = sum.wrapping_add(v.wrapping_mul(v));
    }
    isqrt((sum as u64) / x.len() as u64 + RMS_EPSILON).max(1)
}

/// One normalized element: `((x * weight) / rms) >> 8`, where the weight has
/// 24 fractional bits, so 16 go in and 16 come out.
#[inline(always)]
pub fn normalize(x: i64, weight: i64, rms: u64) -> i64 {
    div_toward_zero(x.wrapping_mul(weight), rms) >> 8
}

/// Rotates the pair `(a, b)` by a cosine and sine with 24 fractional bits.
#[inline(always)]
pub fn rotate(a: i64, b: i64, cos: i64, sin: i64) -> (i64, i64) {
    (
        a.wrapping_mul(cos).wrapping_sub(b.wrapping_mul(sin)) >> 24,
        a.wrapping_mul(sin).wrapping_add(b.wrapping_mul(cos)) >> 24,
    )
}

/// A key or value stored into the cache must fit its 32 bits.
#[inline(always)]
pub fn to_cache(v: i64) -> Result<i32, Error> {
    if v < i32::MIN as i64 || v > i32::MAX as i64 {
        Err(Error::Arithmetic)
    } else {
        Ok(v as i32)
    }
}

/// The exponential table's entry for `e^(-d)`, `d >= 0` with 16 fractional
/// bits: a step of 1/256, differences of 16 and more on the last entry.
#[inline(always)]
pub fn exp_index(d: u64) -> usize {
    if d >> 8 > TABLE_LAST as u64 {
        TABLE_LAST
    } else {
        (d >> 8) as usize
    }
}

/// Attention's normalization: an exponential (30 fractional bits) over the
/// head's sum of them, a probability with 24 fractional bits; 0 for an
/// empty sum.
#[inline(always)]
pub fn probability(e: i64, sum: u64) -> i64 {
    ((e as u64) << 24).checked_div(sum).unwrap_or(0) as i64
}

/// `x * sigmoid(x)` with 16 fractional bits in and out: `x` itself from 16
/// up, zero from -16 down, else the table's `entry` at a step of 1/128.
#[inline(always)]
pub fn silu(x: i64, entry: impl FnOnce(usize) -> i64) -> i64 {
    if x >= SILU_LIMIT {
        x
    } else if x <= -SILU_LIMIT {
        0
    } else {
        entry(((x + SILU_LIMIT) >> 9) as usize)
    }
}

/// The difference a sampling weight looks up: `((max - logit) << 16) / t`,
/// with the temperature `t` (16 fractional bits) above zero.
#[inline(always)]
pub fn sampling_difference(max: i64, logit: i64, temperature_q16: u32) -> u64 {
    (max.wrapping_sub(logit) as u64).wrapping_shl(16) / temperature_q16 as u64
}

/// Advances xorshift64* once: the new generator state, which the state keeps.
#[inline(always)]
pub fn next_seed(seed: u64) -> u64 {
    let mut x = seed;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    x
}

/// A draw from the generator state `x` over a total weight `sum`: 0 for an
/// empty sum.
#[inline(always)]
pub fn draw(x: u64, sum: u64) -> u64 {
    x.wrapping_mul(DRAW_MULTIPLIER)
        .checked_rem(sum)
        .unwrap_or(0)
}
