//! Quantizing: `docs/spec.md`'s rounding, a row to int8 bytes and a scale,
//! and a matrix blob in the row kernel's tiled order.

use std::vec::Vec;

use super::Refusal;
use crate::format::matrix_len;
use crate::Error;

/// `round` as `docs/spec.md` defines it: nearest, ties away from zero.
pub(super) fn round(v: f64) -> f64 {
    v.round()
}

/// `round(v * 2^bits)` as an `i32`, or `InvalidFormat` when it does not fit.
pub(super) fn fixed_i32(v: f64, bits: i32) -> Result<i32, Error> {
    let r = round(v * (2f64).powi(bits));
    if r.is_nan() || r < i32::MIN as f64 || r > i32::MAX as f64 {
        return Err(Error::InvalidFormat);
    }
    Ok(r as i32)
}

/// Quantizes one row: `(scale, bytes)` as `docs/spec.md` ("Conversion")
/// prescribes.
pub(super) fn quantize_row(row: &[f32], out: &mut [u8]) -> Result<u32, Error> {
    if row.iter().any(|w| !w.is_finite()) {
        return Err(Error::InvalidFormat);
    }
    let m = row.iter().fold(0f64, |m, &w| m.max((w as f64).abs()));
    if m == 0.0 {
        out.fill(128);
        return Ok(0);
    }
    let s = m / 127.0;
    for (o, &w) in out.iter_mut().zip(row) {
        let q = round(w as f64 / s).clamp(-127.0, 127.0) as i32;
        *o = (q + 128) as u8;
    }
    let scale = round(s * 16_777_216.0);
    if scale > u32::MAX as f64 {
        return Err(Error::InvalidFormat);
    }
    Ok(scale as u32)
}

/// Appends a matrix blob: the rows' scales, then their bytes in the row
/// kernel's tiled order (`kernel::tiled_index`), padded to 8.
pub(super) fn push_matrix(
    out: &mut Vec<u8>,
    w: &[f32],
    rows: u32,
    cols: u32,
    what: &str,
) -> Result<(), Refusal> {
    let (rows, cols) = (rows as usize, cols as usize);
    let start = out.len();
    out.resize(start + matrix_len(rows as u32, cols as u32) as usize, 0);
    let (scales, weights) = out[start..].split_at_mut(4 * rows);
    let mut row = vec![0u8; cols];
    for r in 0..rows {
        let scale = quantize_row(&w[r * cols..(r + 1) * cols], &mut row).map_err(|_| {
            Refusal::format(format!(
                "row {r} of {what} has a weight too large for a 32-bit row scale"
            ))
        })?;
        scales[4 * r..4 * r + 4].copy_from_slice(&scale.to_le_bytes());
        for (j, &b) in row.iter().enumerate() {
            weights[crate::kernel::tiled_index(rows, cols, r, j)] = b;
        }
    }
    Ok(())
}
