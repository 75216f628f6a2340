//! Phase 9, attention: one head at a time, each in four stages over the
//! positions so far, the current one included. Every stage is resumable
//! after any unit, so a chunk is a run of positions (stages 0 to 2) or of
//! output elements (stage 3) of one stage of one head. The score buffer is
//! worked in place: score, then exponential, then probability.

use crate::fixed::{exp_index, probability};
use crate::kernel::{dot_values, scores};
use crate::planner::Chunk;
use crate::state::Header;

use super::forward::Forward;

impl Forward<'_, '_> {
    /// One chunk of one stage of the head `chunk.at.row`.
    pub(super) fn attention(&mut self, h: &mut Header, chunk: &Chunk<'_>) {
        let at = &chunk.at;
        let heads = &self.heads;
        let (hs, kv_dim) = (heads.size, heads.kv_dim);
        let head = at.row as usize;
        let (start, end) = (at.index as usize, (at.index + chunk.count) as usize);
        // This head's first element in the layer's first cached position;
        // with fewer key-value heads than heads, neighbours share one.
        let base = self.cache_at(at.layer, 0) + head / heads.group * hs;
        let b = &mut self.b;
        match at.stage {
            // Scores: q . key >> 16, times 1 / sqrt(head size) >> 24; the
            // largest is kept.
            0 => {
                let max = if start == 0 { i64::MIN } else { h.max };
                let q = &b.q[head * hs..(head + 1) * hs];
                let keys = &b.keys[base + start * kv_dim..];
                h.max = scores(
                    q,
                    keys,
                    kv_dim,
                    heads.inv_sqrt,
                    &mut b.scores[start..end],
                    max,
                );
            }
            // Exponentials: e^-(max - score) from the table; their sum is kept.
            1 => {
                let mut sum = if start == 0 { 0 } else { h.sum };
                let max = h.max;
                for s in &mut b.scores[start..end] {
                    let d = max.wrapping_sub(*s) as u64;
                    let e = match heads.exp {
                        Some(t) => t[exp_index(d)],
                        None => self.m.exp_entry(exp_index(d)),
                    };
                    *s = e as i64;
                    sum = sum.wrapping_add(e as u64);
                }
                h.sum = sum;
            }
            // Normalization: each exponential over the sum, 24 fractional bits.
            2 => {
                let sum = h.sum;
                for s in &mut b.scores[start..end] {
                    *s = probability(*s, sum);
                }
            }
            // Weighted values: each output element, the probabilities times
            // that element of every position's cached value, >> 24.
            _ => {
                let positions = at.position as usize + 1;
                let probabilities = &b.scores[..positions];
                let values = &b.values[base + start..];
                let out = &mut b.xb[head * hs + start..head * hs + end];
                for (i, o) in out.iter_mut().enumerate() {
                    *o = dot_values(probabilities, &values[i..], kv_dim) >> 24;
                }
            }
        }
    }
}
