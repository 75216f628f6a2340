//! The forward pass, phases 3 to 18, one chunk at a time: llama2.c's
//! `forward()` cut where the planner cuts it, in `docs/spec.md`'s table
//! order. A chunk is a run of rows of one matrix, or one whole vector
//! operation; attention (phase 9) is in `attention.rs` and sampling
//! (phase 19) in `sample.rs`. Which buffer each phase reads and writes is
//! `docs/spec.md`'s "Which buffer holds what".

use crate::fixed::{normalize, rms, rotate, silu, to_cache};
use crate::format::{read_u32, MatrixRef, Metadata};
use crate::kernel::{for_row, matvec, sum, Rows};
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
    /// The attention heads' shape, worked out once a turn.
    pub heads: Heads<'e>,
    /// The token the last chunk sampled, or `NO_TOKEN`.
    pub sampled: u32,
}

/// What every attention chunk reads of the configuration and section zero.
pub(super) struct Heads<'e> {
    /// Elements per head and per cached key or value.
    pub size: usize,
    pub kv_dim: usize,
    /// Heads that share one key-value head.
    pub group: usize,
    /// One over the square root of the head size, 24 fractional bits.
    pub inv_sqrt: i64,
    /// The exponential table as words, when section zero aligns it.
    pub exp: Option<&'e [u32]>,
}

impl<'e> Heads<'e> {
    pub fn new(m: &'e Metadata<'e>) -> Heads<'e> {
        let c = m.config;
        Heads {
            size: c.head_size(),
            kv_dim: c.kv_dim(),
            group: (c.n_heads / c.n_kv_heads) as usize,
            inv_sqrt: m.inv_sqrt_head as i64,
            exp: m.exp_words(),
        }
    }
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

    /// The matrix piece a chunk at `at` reads (the classifier's or a
    /// layer's, holding the chunk's first row) and its section's bytes.
    #[inline(always)]
    fn matrix(&self, at: &Cursor) -> Result<(MatrixRef, &'e [u8]), Error> {
        let m = self.m;
        let mat = match at.phase {
            Phase::Classifier => m.classifier(at.row),
            p => match p.layer_matrix() {
                Some(which) => m.matrix(at.layer, which, at.row),
                None => return Err(Error::InvalidState),
            },
        };
        Ok((mat, self.section(&mat)?))
    }

    /// The position's token, its prompt token if it has one, and its row
    /// of the embedding into x. Apart from `run`, which it would only make
    /// longer: it runs once a position.
    #[inline(never)]
    fn embedding(&mut self, h: &mut Header, position: u32) -> Result<(), Error> {
        if position < h.prompt_tokens {
            let token = self.b.prompt_tokens[position as usize];
            if token >= self.m.config.vocab_size {
                return Err(Error::InvalidState);
            }
            h.token = token;
        }
        let mat = self.m.embedding(h.token);
        let section = self.section(&mat)?;
        embed(section, &mat, h.token - mat.first_row, self.b.x);
        Ok(())
    }

    /// Where the cache keeps `layer`'s key or value at `position`.
    pub(super) fn cache_at(&self, layer: u32, position: u32) -> usize {
        let kv_dim = self.heads.kv_dim;
        (layer as usize * self.cache_positions + position as usize) * kv_dim
    }

    /// Runs one chunk, whose cursor is `chunk.at`. Each arm looks up only
    /// what it reads: this runs for every chunk.
    pub(super) fn run(&mut self, h: &mut Header, chunk: &Chunk<'_>) -> Result<(), Error> {
        let m = self.m;
        let at = chunk.at;
        let rows = at.row as usize..(at.row + chunk.count) as usize;
        match at.phase {
            // 3: the current token's row of the embedding, into x.
            Phase::Embedding => self.embedding(h, at.position)?,
            // 4: x normalized with the layer's attention weights, into xb.
            Phase::AttentionNorm => {
                let b = &mut self.b;
                rms_norm(b.x, m.norm(m.attention_norm(at.layer)), b.xb)
            }
            // 5: q = Wq xb.
            Phase::Query => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.xb, &mut b.q[rows]);
            }
            // 6: k = Wk xb, through xb2 (free until phase 10) into the cache.
            Phase::Key => {
                let (mat, w) = self.matrix(at)?;
                let here = self.cache_at(at.layer, at.position);
                let b = &mut self.b;
                let cache = &mut b.keys[here + rows.start..];
                let rows = &mut b.xb2[rows];
                multiply(w, &mat, at.row, b.xb, rows);
                store(rows, cache)?;
            }
            // 7: v = Wv xb, the same way.
            Phase::Value => {
                let (mat, w) = self.matrix(at)?;
                let here = self.cache_at(at.layer, at.position);
                let b = &mut self.b;
                let cache = &mut b.values[here + rows.start..];
                let rows = &mut b.xb2[rows];
                multiply(w, &mat, at.row, b.xb, rows);
                store(rows, cache)?;
            }
            // 8: q's pairs and this position's cached key's pairs, rotated.
            Phase::Rotary => {
                let here = self.cache_at(at.layer, at.position);
                let b = &mut self.b;
                let key = &mut b.keys[here..here + m.config.kv_dim()];
                rotate_query_and_key(m, at.position, b.q, key)?;
            }
            // 9: one stage of one head (attention.rs).
            Phase::Attention => self.attention(h, chunk),
            // 10: xb2 = Wo xb.
            Phase::AttentionOutput => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.xb, &mut b.xb2[rows]);
            }
            // 11: x += xb2, then x normalized with the feed-forward weights into xb.
            Phase::FfnNorm => {
                let b = &mut self.b;
                add(b.x, b.xb2);
                rms_norm(b.x, m.norm(m.ffn_norm(at.layer)), b.xb);
            }
            // 12: hb = W1 xb, the gate.
            Phase::Gate => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.xb, &mut b.hb[rows]);
            }
            // 13: hb2 = W3 xb, the up projection.
            Phase::Up => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.xb, &mut b.hb2[rows]);
            }
            // 14: hb = silu(hb) * hb2.
            Phase::Silu => {
                let b = &mut self.b;
                match m.silu_words() {
                    Some(t) => silu_gate(b.hb, b.hb2, t),
                    None => {
                        for (g, &u) in b.hb.iter_mut().zip(b.hb2.iter()) {
                            *g = silu(*g, |i| m.silu_entry(i)).wrapping_mul(u) >> 16;
                        }
                    }
                }
            }
            // 15: xb = W2 hb, the down projection.
            Phase::Down => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.hb, &mut b.xb[rows]);
            }
            // 16: x += xb.
            Phase::Residual => {
                let b = &mut self.b;
                add(b.x, b.xb)
            }
            // 17: x normalized in place with the final weights.
            Phase::FinalNorm => rms_norm_in_place(self.b.x, m.norm(m.final_norm())),
            // 18: logits = Wcls x.
            Phase::Classifier => {
                let (mat, w) = self.matrix(at)?;
                let b = &mut self.b;
                multiply(w, &mat, at.row, b.x, &mut b.logits[rows]);
            }
            // 19: one chunk of one sampling pass (sample.rs). The walker
            // yields no chunk in phases 0 to 2 and 20.
            _ => self.sample(h, chunk),
        }
        Ok(())
    }
}

/// Row `row` of an embedding piece into `x`: `((byte - 128) * scale) >> 8`.
#[inline(always)]
fn embed(section: &[u8], mat: &MatrixRef, row: u32, x: &mut [i64]) {
    let scale = read_u32(section, mat.offset + 4 * row as usize) as i64;
    let weights = &section[mat.weights_offset()..];
    let (rows, cols) = (mat.rows as usize, mat.cols as usize);
    for_row(weights, rows, cols, row as usize, |j, byte| {
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

/// `x += r`, element by element: four at a time, so the loop's own
/// instructions are spread over four (8 units an element are charged).
#[inline(always)]
fn add(x: &mut [i64], r: &[i64]) {
    let mut xs = x.chunks_exact_mut(4);
    let mut rs = r.chunks_exact(4);
    for (x, r) in (&mut xs).zip(&mut rs) {
        x[0] = x[0].wrapping_add(r[0]);
        x[1] = x[1].wrapping_add(r[1]);
        x[2] = x[2].wrapping_add(r[2]);
        x[3] = x[3].wrapping_add(r[3]);
    }
    for (x, &r) in xs.into_remainder().iter_mut().zip(rs.remainder()) {
        *x = x.wrapping_add(r);
    }
}

/// `gate = (silu(gate) * up) >> 16`, element by element, with the SiLU
/// table as words.
#[cfg(not(sbf))]
#[inline(always)]
fn silu_gate(gate: &mut [i64], up: &[i64], table: &[u32]) {
    for (g, &u) in gate.iter_mut().zip(up.iter()) {
        *g = silu(*g, |i| table[i] as i32 as i64).wrapping_mul(u) >> 16;
    }
}

/// On SBF, hand-scheduled: 19 instructions an element in the table's
/// range (24 are charged), whose index `fixed::silu`'s bounds keep inside
/// the table without a check.
#[cfg(sbf)]
#[inline(always)]
fn silu_gate(gate: &mut [i64], up: &[i64], table: &[u32]) {
    let n = gate.len().min(up.len());
    if n == 0 || table.len() < crate::format::TABLE_LEN {
        return;
    }
    // SAFETY: `n` elements of `gate` and `up`; for an input strictly inside
    // (-16, 16) the index `(x + 16) >> 9` (16 fractional bits) is 0 to
    // 4,095, inside the table; writes only `gate` and the named registers.
    unsafe {
        let end = gate.as_mut_ptr().add(n);
        core::arch::asm!(
            "2:",
            "{x} = *(u64 *)({g} + 0)",
            "if {x} s>= {limit} goto 3f",
            "if {x} s<= -{limit} goto 4f",
            "{s} = {x}",
            "{s} += {limit}",
            "{s} s>>= 9",
            "{s} <<= 2",
            "{s} += {table}",
            "{s} = *(u32 *)({s} + 0)",
            "{s} <<= 32",
            "{s} s>>= 32",
            "goto 5f",
            "3:",
            "{s} = {x}",
            "goto 5f",
            "4:",
            "{s} = 0",
            "5:",
            "{x} = *(u64 *)({u} + 0)",
            "{s} *= {x}",
            "{s} s>>= 16",
            "*(u64 *)({g} + 0) = {s}",
            "{g} += 8",
            "{u} += 8",
            "if {g} != {end} goto 2b",
            limit = const crate::fixed::SILU_LIMIT,
            g = inout(reg) gate.as_mut_ptr() => _,
            u = inout(reg) up.as_ptr() => _,
            table = in(reg) table.as_ptr(),
            end = in(reg) end,
            x = out(reg) _,
            s = out(reg) _,
            options(nostack),
        );
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
    let Some(rope) = m.rope_words(position) else {
        // Section zero not aligned in memory: each entry read apart.
        let angle = |i: usize| m.rope(position, i % half);
        for (i, pair) in q.chunks_exact_mut(2).enumerate() {
            let (cos, sin) = angle(i);
            (pair[0], pair[1]) = rotate(pair[0], pair[1], cos, sin);
        }
        for (i, pair) in key.chunks_exact_mut(2).enumerate() {
            let (cos, sin) = angle(i);
            let (a, c) = rotate(pair[0] as i64, pair[1] as i64, cos, sin);
            (pair[0], pair[1]) = (to_cache(a)?, to_cache(c)?);
        }
        return Ok(());
    };
    // Each head's pairs against the position's row of the table.
    let angles = || {
        rope.chunks_exact(2)
            .map(|w| (w[0] as i32 as i64, w[1] as i32 as i64))
    };
    for head in q.chunks_exact_mut(2 * half) {
        for (pair, (cos, sin)) in head.chunks_exact_mut(2).zip(angles()) {
            (pair[0], pair[1]) = rotate(pair[0], pair[1], cos, sin);
        }
    }
    for head in key.chunks_exact_mut(2 * half) {
        for (pair, (cos, sin)) in head.chunks_exact_mut(2).zip(angles()) {
            let (a, c) = rotate(pair[0] as i64, pair[1] as i64, cos, sin);
            (pair[0], pair[1]) = (to_cache(a)?, to_cache(c)?);
        }
    }
    Ok(())
}

/// Multiplies the rows of a matrix piece from `start` (a row of the whole
/// matrix, inside the piece) by `x` into `out`, which holds exactly those
/// rows: one matrix chunk, its setup (the sum of `x` the row kernel's
/// correction needs) included.
#[inline(always)]
fn multiply(section: &[u8], m: &MatrixRef, start: u32, x: &[i64], out: &mut [i64]) {
    let (rows, cols) = (m.rows as usize, m.cols as usize);
    let scales = &section[m.offset..m.offset + 4 * rows];
    let weights = &section[m.weights_offset()..m.weights_offset() + rows * cols];
    let chunk = Rows {
        weights,
        scales,
        rows,
        start: (start - m.first_row) as usize,
        x,
        bias: sum(x).wrapping_mul(128),
    };
    matvec(&chunk, out);
}
