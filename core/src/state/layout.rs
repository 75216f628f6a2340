//! Where each buffer of a state lies, and a state carved into them.

use super::*;
use crate::bytes::{align8, cast};
use crate::format::{Config, MAX_TOKEN_BYTES};
use crate::Error;

/// Where each buffer of a state starts, in bytes from the state's start,
/// and the shape of its elements (as `RunState` in llama2.c's `run.c`).
/// Every buffer starts at a multiple of eight. Vectors of the forward pass
/// hold 16 fractional bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateLayout {
    /// The prompt's length in bytes.
    pub prompt_len: usize,
    pub max_tokens: u32,
    /// Positions the run can reach: `min(prompt_len + max_tokens + 1, seq_len)`.
    pub cache_positions: usize,
    /// The prompt, UTF-8: u8 (prompt_len,)
    pub prompt: usize,
    /// The prompt's token ids, at most one per byte, the opening token and
    /// the space: u32 (prompt_len + 2,)
    pub prompt_tokens: usize,
    /// The sampled token ids: u32 (max_tokens,)
    pub output_tokens: usize,
    /// The sampled tokens' text: u8 (max_tokens * 128,)
    pub output_text: usize,
    /// The activations at the current position: i64 (dim,)
    pub x: usize,
    /// x normalized, then attention's heads, then the down matrix's output: i64 (dim,)
    pub xb: usize,
    /// Key and value rows on their way to the cache, then the attention
    /// output matrix's result: i64 (dim,)
    pub xb2: usize,
    /// The query: i64 (dim,)
    pub q: usize,
    /// The feed-forward gate, then the hidden vector: i64 (hidden_dim,)
    pub hb: usize,
    /// The feed-forward up vector: i64 (hidden_dim,)
    pub hb2: usize,
    /// The classifier's output: i64 (vocab_size,)
    pub logits: usize,
    /// One head's scores, then exponentials, then probabilities (24
    /// fractional bits): i64 (cache_positions,)
    pub scores: usize,
    /// The key cache: i32 (n_layers, cache_positions, kv_dim)
    pub keys: usize,
    /// The value cache: i32 (n_layers, cache_positions, kv_dim)
    pub values: usize,
    /// The whole state's size.
    pub size: usize,
}

impl StateLayout {
    /// The layout; `InvalidConfig` for a configuration out of range or a
    /// state past 32 bits, `InvalidPrompt` for a prompt over 1,024 bytes or
    /// max tokens outside 1 to the context length.
    pub fn new(config: &Config, prompt_len: usize, max_tokens: u32) -> Result<StateLayout, Error> {
        config.validate()?;
        if prompt_len > MAX_PROMPT_BYTES || max_tokens == 0 || max_tokens > config.seq_len {
            return Err(Error::InvalidPrompt);
        }
        let cache_positions =
            (prompt_len as u64 + max_tokens as u64 + 1).min(config.seq_len as u64);
        let d = config.dim as u64;
        let mut at = HEADER_LEN as u64;
        let mut place = |bytes: u64| {
            let start = at;
            at = align8(at + bytes);
            start as usize
        };
        let prompt = place(prompt_len as u64);
        let prompt_tokens = place(4 * (prompt_len as u64 + 2));
        let output_tokens = place(4 * max_tokens as u64);
        let output_text = place(MAX_TOKEN_BYTES as u64 * max_tokens as u64);
        let x = place(8 * d);
        let xb = place(8 * d);
        let xb2 = place(8 * d);
        let q = place(8 * d);
        let hb = place(8 * config.hidden_dim as u64);
        let hb2 = place(8 * config.hidden_dim as u64);
        let logits = place(8 * config.vocab_size as u64);
        let scores = place(8 * cache_positions);
        let cache = 4 * config.n_layers as u64 * cache_positions * config.kv_dim() as u64;
        let keys = place(cache);
        let values = place(cache);
        // Every target must agree on every size, 32-bit WebAssembly too, and
        // a run account adds its 256-byte header.
        if at > u32::MAX as u64 - 256 {
            return Err(Error::InvalidConfig);
        }
        Ok(StateLayout {
            prompt_len,
            max_tokens,
            cache_positions: cache_positions as usize,
            prompt,
            prompt_tokens,
            output_tokens,
            output_text,
            x,
            xb,
            xb2,
            q,
            hb,
            hb2,
            logits,
            scores,
            keys,
            values,
            size: at as usize,
        })
    }

    /// The layout as the WebAssembly export `state_layout` writes it: the
    /// fourteen buffers' offsets in state order (prompt, prompt tokens,
    /// output tokens, output text, x, xb, xb2, q, hb, hb2, logits, scores,
    /// keys, values), then the size and the cache positions.
    pub fn to_words(&self) -> [u32; 16] {
        [
            self.prompt,
            self.prompt_tokens,
            self.output_tokens,
            self.output_text,
            self.x,
            self.xb,
            self.xb2,
            self.q,
            self.hb,
            self.hb2,
            self.logits,
            self.scores,
            self.keys,
            self.values,
            self.size,
            self.cache_positions,
        ]
        .map(|n| n as u32)
    }
}

/// The size of a state for a prompt of `prompt_len` bytes and `max_tokens`.
#[inline(always)]
pub fn state_size(config: Config, prompt_len: usize, max_tokens: u32) -> Result<usize, Error> {
    Ok(StateLayout::new(&config, prompt_len, max_tokens)?.size)
}

/// A state's buffers as typed slices, as `StateLayout` places them.
pub(crate) struct Buffers<'s> {
    pub prompt: &'s [u8],
    pub prompt_tokens: &'s mut [u32],
    pub output_tokens: &'s mut [u32],
    pub text: &'s mut [u8],
    pub x: &'s mut [i64],
    pub xb: &'s mut [i64],
    pub xb2: &'s mut [i64],
    pub q: &'s mut [i64],
    pub hb: &'s mut [i64],
    pub hb2: &'s mut [i64],
    pub logits: &'s mut [i64],
    pub scores: &'s mut [i64],
    pub keys: &'s mut [i32],
    pub values: &'s mut [i32],
}

/// Splits `len` bytes at state offset `at` off the front of `rest`, whose
/// first byte is at state offset `*cut`.
#[inline(always)]
fn take<'s>(rest: &mut &'s mut [u8], cut: &mut usize, at: usize, len: usize) -> &'s mut [u8] {
    let all = core::mem::take(rest);
    let (_, tail) = all.split_at_mut(at - *cut);
    let (head, tail) = tail.split_at_mut(len);
    *rest = tail;
    *cut = at + len;
    head
}

impl<'s> Buffers<'s> {
    /// Carves a state into its buffers. Relies on the state being aligned
    /// to eight (checked by `Header::read_checked`) and on every buffer
    /// starting at a multiple of eight.
    pub(crate) fn carve(state: &'s mut [u8], l: &StateLayout) -> Buffers<'s> {
        let mut rest = state;
        let mut cut = 0usize;
        let between = |a: usize, b: usize| b - a;
        let prompt = take(&mut rest, &mut cut, l.prompt, l.prompt_len);
        let prompt_tokens = take(&mut rest, &mut cut, l.prompt_tokens, 4 * (l.prompt_len + 2));
        let output_tokens = take(
            &mut rest,
            &mut cut,
            l.output_tokens,
            4 * l.max_tokens as usize,
        );
        let text = take(
            &mut rest,
            &mut cut,
            l.output_text,
            MAX_TOKEN_BYTES * l.max_tokens as usize,
        );
        let x = take(&mut rest, &mut cut, l.x, between(l.x, l.xb));
        let xb = take(&mut rest, &mut cut, l.xb, between(l.xb, l.xb2));
        let xb2 = take(&mut rest, &mut cut, l.xb2, between(l.xb2, l.q));
        let q = take(&mut rest, &mut cut, l.q, between(l.q, l.hb));
        let hb = take(&mut rest, &mut cut, l.hb, between(l.hb, l.hb2));
        let hb2 = take(&mut rest, &mut cut, l.hb2, between(l.hb2, l.logits));
        let logits = take(&mut rest, &mut cut, l.logits, between(l.logits, l.scores));
        let scores = take(&mut rest, &mut cut, l.scores, between(l.scores, l.keys));
        let keys = take(&mut rest, &mut cut, l.keys, between(l.keys, l.values));
        let values = take(&mut rest, &mut cut, l.values, between(l.values, l.size));
        Buffers {
            prompt,
            prompt_tokens: cast(prompt_tokens),
            output_tokens: cast(output_tokens),
            text,
            x: cast(x),
            xb: cast(xb),
            xb2: cast(xb2),
            q: cast(q),
            hb: cast(hb),
            hb2: cast(hb2),
            logits: cast(logits),
            scores: cast(scores),
            keys: cast(keys),
            values: cast(values),
        }
    }
}
