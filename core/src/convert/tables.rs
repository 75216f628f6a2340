//! The artifact's tables (exponential, SiLU, rotary) and the tokenizer's
//! score keys, from `exp` and `sin_cos` computed with `+ - * /` alone so
//! every target gives the same bytes.

use std::vec::Vec;

use super::quantize::{fixed_i32, round};
use crate::format::{Config, TABLE_LEN};
use crate::Error;

/// `e^x`: range reduction by ln 2, then a Taylor series on |r| <= ln(2)/2.
pub fn exp(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    if x < -745.0 {
        return 0.0;
    }
    let k = round(x / core::f64::consts::LN_2);
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for n in 1..=18 {
        term = term * r / n as f64;
        sum += term;
    }
    let k = k as i64;
    // 2^k as a bit pattern; the ranges used here keep k inside the normals.
    sum * f64::from_bits(((1023 + k) as u64) << 52)
}

/// `sin` and `cos` of `x >= 0`: Cody-Waite reduction by pi/2 in three parts
/// (fdlibm's), then Taylor series on |r| <= pi/4.
pub fn sin_cos(x: f64) -> (f64, f64) {
    const PIO2_1: f64 = 1.570_796_326_734_125_6;
    const PIO2_2: f64 = 6.077_100_506_303_966e-11;
    const PIO2_2T: f64 = 2.022_266_248_795_950_6e-21;
    let k = round(x / core::f64::consts::FRAC_PI_2);
    let r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_2T;
    let r2 = r * r;
    let (mut s, mut c) = (r, 1.0);
    let (mut ts, mut tc) = (r, 1.0);
    for n in 1..=12 {
        let n = n as f64;
        ts = -ts * r2 / ((2.0 * n) * (2.0 * n + 1.0));
        tc = -tc * r2 / ((2.0 * n - 1.0) * (2.0 * n));
        s += ts;
        c += tc;
    }
    match (k as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// A float score's key: a `u32` that sorts as the float does, -0.0 as +0.0.
pub fn score_key(score: f32) -> Result<u32, Error> {
    if score.is_nan() {
        return Err(Error::InvalidFormat);
    }
    let bits = if score == 0.0 { 0 } else { score.to_bits() };
    Ok(if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    })
}

/// The exponential table: entry k is `round(e^(-k/256) * 2^30)`.
pub fn exp_table() -> Vec<u32> {
    (0..TABLE_LEN)
        .map(|k| round(exp(-(k as f64) / 256.0) * 1_073_741_824.0) as u32)
        .collect()
}

/// The SiLU table: entry k is `round(silu(-16 + k/128) * 2^16)`.
pub fn silu_table() -> Vec<i32> {
    (0..TABLE_LEN)
        .map(|k| {
            let x = -16.0 + k as f64 / 128.0;
            round(x / (1.0 + exp(-x)) * 65_536.0) as i32
        })
        .collect()
}

/// The rotary table: for each position and pair, cosine then sine, 24 bits.
pub fn rope_table(config: &Config) -> Result<Vec<i32>, Error> {
    const LN_10000: f64 = 9.210_340_371_976_184;
    let hs = config.head_size();
    let mut out = Vec::with_capacity(config.seq_len as usize * hs);
    for p in 0..config.seq_len {
        for i in 0..hs / 2 {
            let f = exp(-(2.0 * i as f64 / hs as f64) * LN_10000);
            let (sin, cos) = sin_cos(p as f64 * f);
            out.push(fixed_i32(cos, 24)?);
            out.push(fixed_i32(sin, 24)?);
        }
    }
    Ok(out)
}
