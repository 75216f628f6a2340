//! The forward pass, phases 3 to 18, one chunk at a time: llama2.c's
//! `forward()` cut where the planner cuts it, in `docs/spec.md`'s table
//! order. A chunk is a run of rows of one matrix, or one whole vector
//! operation; attention (phase 9) is in `attention.rs` and sampling
//! (phase 19) in `sample.rs`. Which buffer each phase reads and writes is
//! `docs/spec.md`'s "Which buffer holds what".

use crate::fixed::{normalize, rms, rotate, silu, to_cache};
use crate::format::{read_u32, MatrixRef, Metadata};
use crate::kernel::{for_row, matvec, Rows};
use crate::planner::Chunk;
use crate::state::{Buffers, Cursor, Header, Phase};
use crate::Error;

/// Runs chunks against one state's buffers.
pub(super) struct Forward<'e, 's> {
    pub m: &'e Metadata<'e>,
    /// The matrix sections given, by index (`u32::MAX` for an empty slot).
    pub sections: [(u32, &'e [u8]); 2],
    pub b: Buffers<'s>,
    pub cache_positions: usize,
    /// The token the last chunk sampled, or `NO_TOKEN`.
    pub sampled: u32,
}

impl<'e, 's> Forward<'e, 's> {
    /// The bytes of the section holding a matrix, if it was given.
    #[inline(always)]
    fn section(&self, m: &MatrixRef) -> Result<&'e [u8], Error> {
        match self.sections {
            [(i, bytes), _] | [_, (i, bytes)] if i == m.section => Ok(bytes),
            _ => Err(Error::MissingWeights),
        }
    }

    /// The matrix a chunk at `at` reads and its section's bytes; for a
    /// phase that reads none, the embedding's place and no bytes.
    #[inline(always)]
    fn matrix(&self, at: &Cursor) -> Result<(MatrixRef, &'e [u8]), Error> {
        let m = self.m;
        let mat = match at.phase {
            Phase::Embedding => Some(m.embedding()),
            Phase::Classifier => Some(m.classifier()),
            p => p.layer_matrix().map(|which| m.matrix(at.layer, which)),
        };
        match mat {
            Some(mat) => Ok((mat, self.section(&mat)?)),
            None => Ok((m.embedding(), &[][..])),
        }
    }

    /// Where the cache keeps `layer`'s key or value at `position`.
    pub(super) fn cache_at(&self, layer: u32, position: u32) -> usize {
        let kv_dim = self.m.config.kv_dim();
        (layer as usize * self.cache_positions + position as usize) * kv_dim
    }

    /// Runs one chunk, whose cursor is `chunk.at`.
    pub(super) fn run(&mut self, h: &mut Header, chunk: &Chunk) -> Result<(), Error> {
        let m = self.m;
        let at = chunk.at;
        let (start, end) = (at.row as usize, (at.row + chunk.count) as usize);
        let (mat, section) = self.matrix(&at)?;
        let here = self.cache_at(at.layer, at.position);
        let b = &mut self.b;
        match at.phase {
            // 3: the current token's row of the embedding, into x.
            Phase::Embedding => {
                if at.position < h.prompt_tokens {
                    h.token = b.prompt_tokens[at.position as usize];
                }
                embed(section, &mat, h.token, b.x);
            }
            // 4: x normalized with the layer's attention weights, into xb.
            Phase::AttentionNorm => rms_norm(b.x, m.norm(m.attention_norm(at.layer)), b.xb),
            // 5: q = Wq xb.
            Phase::Query => multiply(section, &mat, at.row, b.xb, &mut b.q[start..end]),
            // 6: k = Wk xb, through xb2 (free until phase 10) into the cache.
            Phase::Key => {
                let (rows, cache) = (&mut b.xb2[start..end], &mut b.keys[here + start..]);
                multiply(section, &mat, at.row, b.xb, rows);
                store(rows, cache)?;
            }
            // 7: v = Wv xb, the same way.
            Phase::Value => {
                let (rows, cache) = (&mut b.xb2[start..end], &mut b.values[here + start..]);
                multiply(section, &mat, at.row, b.xb, rows);
                store(rows, cache)?;
            }
            // 8: q's pairs and this position's cached key's pairs, rotated.
            Phase::Rotary => {
                let key = &mut b.keys[here..here + m.config.kv_dim()];
                rotate_query_and_key(m, at.position, b.q, key)?;
            }
            // 9: one stage of one head (attention.rs).
            Phase::Attention => self.attention(h, chunk),
            // 10: xb2 = Wo xb.
            Phase::AttentionOutput => {
                multiply(section, &mat, at.row, b.xb, &mut b.xb2[start..end]);
            }
            // 11: x += xb2, then x normalized with the feed-forward weights into xb.
            Phase::FfnNorm => {
                add(b.x, b.xb2);
                rms_norm(b.x, m.norm(m.ffn_norm(at.layer)), b.xb);
            }
            // 12: hb = W1 xb, the gate.
            Phase::Gate => multiply(section, &mat, at.row, b.xb, &mut b.hb[start..end]),
            // 13: hb2 = W3 xb, the up projection.
            Phase::Up => multiply(section, &mat, at.row, b.xb, &mut b.hb2[start..end]),
            // 14: hb = silu(hb) * hb2.
            Phase::Silu => {
                for (g, &u) in b.hb.iter_mut().zip(b.hb2.iter()) {
                    *g = silu(*g, |i| m.silu_entry(i)).wrapping_mul(u) >> 16;
                }
            }
            // 15: xb = W2 hb, the down projection.
            Phase::Down => multiply(section, &mat, at.row, b.hb, &mut b.xb[start..end]),
            // 16: x += xb.
            Phase::Residual => add(b.x, b.xb),
            // 17: x normalized in place with the final weights.
            Phase::FinalNorm => rms_norm_in_place(b.x, m.norm(m.final_norm())),
            // 18: logits = Wcls x.
            Phase::Classifier => {
                multiply(section, &mat, at.row, b.x, &mut b.logits[start..end]);
            }
            // 19: one chunk of one sampling pass (sample.rs). The walker
            // yields no chunk in phases 0 to 2 and 20.
            _ => self.sample(h, chunk),
        }
        Ok(())
    }
}

/// Row `token` of the embedding into `x`: `((byte - 128) * scale) >> 8`.
#[inline(always)]
fn embed(section: &[u8], mat: &MatrixRef, token: u32, x: &mut [i64]) {
    let scale = read_u32(section, mat.offset + 4 * token as usize) as i64;
    let weights = &section[mat.weights_offset()..];
    let (rows, cols) = (mat.rows as usize, mat.cols as usize);
    for_row(weights, rows, cols, token as usize, |j, byte| {
        x[j] = (byte as i64 - 128).wrapping_mul(scale) >> 8;
    });
}

/// One normalization weight (24 fractional bits) of a weight vector.
#[inline(always)]
fn weight(weights: &[u8], i: usize) -> i64 {
    read_u32(weights, 4 * i) as i32 as i64
}

/// `x` normalized with `weights` into `out`.
#[inline(always)]
fn rms_norm(x: &[i64], weights: &[u8], out: &mut [i64]) {
    let r = rms(x);
    for (i, (o, &v)) in out.iter_mut().zip(x.iter()).enumerate() {
        *o = normalize(v, weight(weights, i), r);
    }
}

/// `x` normalized with `weights` in place.
#[inline(always)]
fn rms_norm_in_place(x: &mut [i64], weights: &[u8]) {
    let r = rms(x);
    for (i, v) in x.iter_mut().enumerate() {
        *v = normalize(*v, weight(weights, i), r);
    }
}

/// `x += r`, element by element.
#[inline(always)]
fn add(x: &mut [i64], r: &[i64]) {
    for (x, &r) in x.iter_mut().zip(r.iter()) {
        *x = x.wrapping_add(r);
    }
}

/// Stores `rows` into the cache's first slots, each checked to fit 32 bits.
#[inline(always)]
fn store(rows: &[i64], cache: &mut [i32]) -> Result<(), Error> {
    for (slot, &v) in cache.iter_mut().zip(rows.iter()) {
        *slot = to_cache(v)?;
    }
    Ok(())
}

/// Rotates every pair of the query and of this position's key by the
/// position's cosine and sine: pair `i` of every head uses table pair `i`.
#[inline(always)]
fn rotate_query_and_key(
    m: &Metadata,
    position: u32,
    q: &mut [i64],
    key: &mut [i32],
) -> Result<(), Error> {
    let half = m.config.head_size() / 2;
    for (i, pair) in q.chunks_exact_mut(2).enumerate() {
        let (cos, sin) = m.rope(position, i % half);
        let (a, c) = rotate(pair[0], pair[1], cos, sin);
        pair[0] = a;
        pair[1] = c;
    }
    for (i, pair) in key.chunks_exact_mut(2).enumerate() {
        let (cos, sin) = m.rope(position, i % half);
        let (a, c) = rotate(pair[0] as i64, pair[1] as i64, cos, sin);
        pair[0] = to_cache(a)?;
        pair[1] = to_cache(c)?;
    }
    Ok(())
}

/// Multiplies the rows of a matrix from `start` by `x` into `out`, which
/// holds exactly those rows: one matrix chunk, its setup (the sum of `x`
/// the row kernel's correction needs) included.
#[inline(always)]
fn multiply(section: &[u8], m: &MatrixRef, start: u32, x: &[i64], out: &mut [i64]) {
    let (rows, cols) = (m.rows as usize, m.cols as usize);
    let scales = &section[m.offset..m.offset + 4 * rows];
    let weights = &section[m.weights_offset()..m.weights_offset() + rows * cols];
    let mut sum = 0i64;
    for &v in x {
        sum = sum.wrapping_add(v);
    }
    let chunk = Rows {
        weights,
        scales,
        rows,
        start: start as usize,
        x,
        bias: sum.wrapping_mul(128),
    };
    matvec(&chunk, out);
}
