//! The portable kernel: the primitives of `kernel` in plain Rust. Every
//! target but SBF runs them, and every target's results equal theirs; the
//! SBF backend falls back to them where its assembly does not apply.

use super::{BLOCK_COLS, TILE_ROWS};

/// The largest of `max` and `values`, and its index (see `kernel::argmax`).
#[inline(always)]
pub fn argmax(values: &[i64], first: usize, max: &mut i64, chosen: &mut u32) {
    for (i, &v) in values.iter().enumerate() {
        if v > *max {
            *max = v;
            *chosen = (first + i) as u32;
        }
    }
}

/// `sum(byte * x)` over whole blocks: block `k`'s eight bytes at
/// `bytes[k * stride..]`, times `x[8k..8k + 8]`.
#[inline(always)]
pub fn dot_row_blocks(bytes: &[u8], stride: usize, x: &[i64]) -> u64 {
    let mut acc = 0u64;
    for (k, xs) in x.chunks_exact(BLOCK_COLS).enumerate() {
        for (c, &x) in xs.iter().enumerate() {
            let b = bytes[k * stride + c];
            acc = acc.wrapping_add((b as u64).wrapping_mul(x as u64));
        }
    }
    acc
}

/// The whole blocks of a tile: `blocks` holds `x.len() / 8` blocks of 32
/// bytes, four rows of eight bytes each, added to the four rows' `acc`.
#[inline(always)]
pub fn dot_blocks(blocks: &[u8], x: &[i64], acc: &mut [u64; TILE_ROWS]) {
    let [mut a0, mut a1, mut a2, mut a3] = *acc;
    for (b, xs) in blocks
        .chunks_exact(TILE_ROWS * BLOCK_COLS)
        .zip(x.chunks_exact(BLOCK_COLS))
    {
        for c in 0..BLOCK_COLS {
            let x = xs[c] as u64;
            a0 = a0.wrapping_add((b[c] as u64).wrapping_mul(x));
            a1 = a1.wrapping_add((b[BLOCK_COLS + c] as u64).wrapping_mul(x));
            a2 = a2.wrapping_add((b[2 * BLOCK_COLS + c] as u64).wrapping_mul(x));
            a3 = a3.wrapping_add((b[3 * BLOCK_COLS + c] as u64).wrapping_mul(x));
        }
    }
    *acc = [a0, a1, a2, a3];
}

/// `kernel::scores` once its checks pass, each position's dot product by
/// `dot` (the SBF backend passes its own).
#[inline(always)]
pub fn scores_with(
    q: &[i64],
    keys: &[i32],
    stride: usize,
    inv: i64,
    out: &mut [i64],
    mut max: i64,
    dot: impl Fn(&[i64], &[i32]) -> i64,
) -> i64 {
    let hs = q.len();
    for (t, score) in out.iter_mut().enumerate() {
        let dot = dot(q, &keys[t * stride..t * stride + hs]);
        *score = (dot >> 16).wrapping_mul(inv) >> 24;
        if *score > max {
            max = *score;
        }
    }
    max
}

/// `kernel::scores` once its checks pass.
#[inline(always)]
pub fn scores(q: &[i64], keys: &[i32], stride: usize, inv: i64, out: &mut [i64], max: i64) -> i64 {
    scores_with(q, keys, stride, inv, out, max, dot_key)
}

/// `sum(a[i] * b[i])`, i64 by i32, wrapping, over slices of one length.
#[inline(always)]
pub fn dot_key(a: &[i64], b: &[i32]) -> i64 {
    let mut acc = 0i64;
    for (&x, &y) in a.iter().zip(b) {
        acc = acc.wrapping_add(x.wrapping_mul(y as i64));
    }
    acc
}

/// `sum(p[t] * v[t * stride])` where `v` holds every `v[t * stride]` (the
/// caller's check).
#[inline(always)]
pub fn dot_values(p: &[i64], v: &[i32], stride: usize) -> i64 {
    let mut acc = 0i64;
    for (t, &x) in p.iter().enumerate() {
        acc = acc.wrapping_add(x.wrapping_mul(v[t * stride] as i64));
    }
    acc
}
