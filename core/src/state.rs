//! The resumable state (`CURTAST2`): the header and its checks, the phases
//! and the cursor, where each buffer lies, and the readers of a state's
//! output. Everything a run has computed lives in one buffer; on chain it is
//! the run account after its 256-byte header. `docs/state.md` describes the
//! same bytes and every cursor rule.

use crate::bytes::{align8, cast, read_u32, read_u64, write_u32, write_u64};
use crate::format::{Config, LayerMatrix, MAX_TOKEN_BYTES};
use crate::Error;

/// The first eight bytes of every state.
pub const STATE_TAG: [u8; 8] = *b"CURTAST2";
/// The state header's length.
pub const HEADER_LEN: usize = 128;
/// The longest prompt, in bytes.
pub const MAX_PROMPT_BYTES: usize = 1024;
/// The highest temperature, 16 with 16 fractional bits.
pub const MAX_TEMPERATURE_Q16: u32 = 16 << 16;
/// The generator's first state for a seed of zero.
pub const ZERO_SEED: u64 = 0x9E37_79B9_7F4A_7C15;
/// "No token" in a token field: a lookup that found nothing, a merge scan
/// that found no pair, a draw that has not landed.
pub const NO_TOKEN: u32 = u32::MAX;

/// Byte offsets of the state header's fields.
pub mod field {
    pub const TAG: usize = 0;
    pub const PHASE: usize = 8;
    pub const LAYER: usize = 12;
    pub const ROW: usize = 16;
    pub const POSITION: usize = 20;
    pub const TOKEN: usize = 24;
    pub const PROMPT_LEN: usize = 28;
    pub const PROMPT_TOKENS: usize = 32;
    pub const MAX_TOKENS: usize = 36;
    pub const TEMPERATURE: usize = 40;
    pub const GENERATED: usize = 44;
    pub const TEXT_LEN: usize = 48;
    pub const TOK_BYTE: usize = 52;
    pub const TOK_PAIR: usize = 56;
    pub const TOK_BEST_POS: usize = 60;
    pub const TOK_BEST_KEY: usize = 64;
    pub const TOK_BEST_ID: usize = 68;
    pub const SEED: usize = 72;
    pub const TURNS: usize = 80;
    pub const MAX: usize = 88;
    pub const CHOSEN: usize = 96;
    pub const PASS: usize = 100;
    pub const SUM: usize = 104;
    pub const REMAINDER: usize = 112;
    pub const STAGE: usize = 120;
    pub const INDEX: usize = 124;
}

/// Where a run stands in the forward pass, in order (`docs/spec.md`, "The
/// forward pass"). The state keeps it as its `u32` number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum Phase {
    /// The opening token, and the space before a prompt's text.
    #[default]
    Open = 0,
    /// The prompt, a character at a time.
    Characters = 1,
    /// Merging pairs of tokens, the best score first.
    Merges = 2,
    Embedding = 3,
    AttentionNorm = 4,
    Query = 5,
    Key = 6,
    Value = 7,
    Rotary = 8,
    Attention = 9,
    AttentionOutput = 10,
    /// The attention residual, then the feed-forward normalization.
    FfnNorm = 11,
    Gate = 12,
    Up = 13,
    Silu = 14,
    Down = 15,
    /// The feed-forward residual.
    Residual = 16,
    FinalNorm = 17,
    Classifier = 18,
    Sampling = 19,
    /// The run is complete.
    Done = 20,
}

impl Phase {
    /// The phase numbered `n`, if any.
    #[inline(always)]
    pub const fn from_u32(n: u32) -> Option<Phase> {
        use Phase::*;
        Some(match n {
            0 => Open,
            1 => Characters,
            2 => Merges,
            3 => Embedding,
            4 => AttentionNorm,
            5 => Query,
            6 => Key,
            7 => Value,
            8 => Rotary,
            9 => Attention,
            10 => AttentionOutput,
            11 => FfnNorm,
            12 => Gate,
            13 => Up,
            14 => Silu,
            15 => Down,
            16 => Residual,
            17 => FinalNorm,
            18 => Classifier,
            19 => Sampling,
            20 => Done,
            _ => return None,
        })
    }

    /// The phase after this one in the table (`Done` stays `Done`).
    #[inline(always)]
    pub const fn next(self) -> Phase {
        match Phase::from_u32(self as u32 + 1) {
            Some(p) => p,
            None => Phase::Done,
        }
    }

    /// Phases 0 to 2, which read the tokenizer and no matrix section.
    #[inline(always)]
    pub fn is_tokenizing(self) -> bool {
        self < Phase::Embedding
    }

    /// The layer matrix the phase multiplies by, if any.
    #[inline(always)]
    pub const fn layer_matrix(self) -> Option<LayerMatrix> {
        match self {
            Phase::Query => Some(LayerMatrix::Query),
            Phase::Key => Some(LayerMatrix::Key),
            Phase::Value => Some(LayerMatrix::Value),
            Phase::AttentionOutput => Some(LayerMatrix::AttentionOutput),
            Phase::Gate => Some(LayerMatrix::Gate),
            Phase::Up => Some(LayerMatrix::Up),
            Phase::Down => Some(LayerMatrix::Down),
            _ => None,
        }
    }
}

/// Where a run stands: the part of the header the planner reads and moves.
/// `row` is the next matrix row, the head in attention or the next
/// vocabulary entry in sampling; `index` is the next position (stages 0 to
/// 2) or output element (stage 3) of the head in attention; `pass` is the
/// sampling pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub phase: Phase,
    pub layer: u32,
    pub row: u32,
    pub position: u32,
    pub stage: u32,
    pub index: u32,
    pub pass: u32,
    pub generated: u32,
}

/// Sampling's passes over the vocabulary, the header's `pass`: the maximum
/// (0), the sum of exponentials (1) and the draw (this one).
pub const DRAW_PASS: u32 = 2;

/// What the planner needs of a run besides its cursor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunShape {
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub temperature_q16: u32,
}

impl RunShape {
    /// The sampling pass that finishes a token: at temperature zero the
    /// maximum (pass 0) is the token; above it the draw (pass 2) is.
    #[inline(always)]
    pub fn last_pass(&self) -> u32 {
        if self.temperature_q16 == 0 {
            0
        } else {
            DRAW_PASS
        }
    }
}

/// The state header, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub phase: Phase,
    pub layer: u32,
    pub row: u32,
    pub position: u32,
    pub token: u32,
    pub prompt_len: u32,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub temperature: u32,
    pub generated: u32,
    pub text_len: u32,
    pub tok_byte: u32,
    pub tok_pair: u32,
    pub tok_best_pos: u32,
    pub tok_best_key: u32,
    pub tok_best_id: u32,
    pub seed: u64,
    pub turns: u64,
    pub max: i64,
    pub chosen: u32,
    pub pass: u32,
    pub sum: u64,
    pub remainder: u64,
    pub stage: u32,
    pub index: u32,
}

impl Header {
    /// Decodes a header; `InvalidState` for a short buffer, a wrong tag or
    /// a phase past 20.
    pub fn read(state: &[u8]) -> Result<Header, Error> {
        if state.len() < HEADER_LEN || state[..8] != STATE_TAG {
            return Err(Error::InvalidState);
        }
        let u = |at| read_u32(state, at);
        Ok(Header {
            phase: Phase::from_u32(u(field::PHASE)).ok_or(Error::InvalidState)?,
            layer: u(field::LAYER),
            row: u(field::ROW),
            position: u(field::POSITION),
            token: u(field::TOKEN),
            prompt_len: u(field::PROMPT_LEN),
            prompt_tokens: u(field::PROMPT_TOKENS),
            max_tokens: u(field::MAX_TOKENS),
            temperature: u(field::TEMPERATURE),
            generated: u(field::GENERATED),
            text_len: u(field::TEXT_LEN),
            tok_byte: u(field::TOK_BYTE),
            tok_pair: u(field::TOK_PAIR),
            tok_best_pos: u(field::TOK_BEST_POS),
            tok_best_key: u(field::TOK_BEST_KEY),
            tok_best_id: u(field::TOK_BEST_ID),
            seed: read_u64(state, field::SEED),
            turns: read_u64(state, field::TURNS),
            max: read_u64(state, field::MAX) as i64,
            chosen: u(field::CHOSEN),
            pass: u(field::PASS),
            sum: read_u64(state, field::SUM),
            remainder: read_u64(state, field::REMAINDER),
            stage: u(field::STAGE),
            index: u(field::INDEX),
        })
    }

    /// Encodes the header into the first 128 bytes of `state`.
    pub fn write(&self, state: &mut [u8]) {
        state[..8].copy_from_slice(&STATE_TAG);
        let fields32 = [
            (field::PHASE, self.phase as u32),
            (field::LAYER, self.layer),
            (field::ROW, self.row),
            (field::POSITION, self.position),
            (field::TOKEN, self.token),
            (field::PROMPT_LEN, self.prompt_len),
            (field::PROMPT_TOKENS, self.prompt_tokens),
            (field::MAX_TOKENS, self.max_tokens),
            (field::TEMPERATURE, self.temperature),
            (field::GENERATED, self.generated),
            (field::TEXT_LEN, self.text_len),
            (field::TOK_BYTE, self.tok_byte),
            (field::TOK_PAIR, self.tok_pair),
            (field::TOK_BEST_POS, self.tok_best_pos),
            (field::TOK_BEST_KEY, self.tok_best_key),
            (field::TOK_BEST_ID, self.tok_best_id),
            (field::CHOSEN, self.chosen),
            (field::PASS, self.pass),
            (field::STAGE, self.stage),
            (field::INDEX, self.index),
        ];
        for (at, v) in fields32 {
            write_u32(state, at, v);
        }
        write_u64(state, field::SEED, self.seed);
        write_u64(state, field::TURNS, self.turns);
        write_u64(state, field::MAX, self.max as u64);
        write_u64(state, field::SUM, self.sum);
        write_u64(state, field::REMAINDER, self.remainder);
    }

    /// The planner's view of the cursor.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            phase: self.phase,
            layer: self.layer,
            row: self.row,
            position: self.position,
            stage: self.stage,
            index: self.index,
            pass: self.pass,
            generated: self.generated,
        }
    }

    /// Moves the cursor to where the planner left it.
    pub fn set_cursor(&mut self, c: &Cursor) {
        self.phase = c.phase;
        self.layer = c.layer;
        self.row = c.row;
        self.position = c.position;
        self.stage = c.stage;
        self.index = c.index;
        self.pass = c.pass;
        self.generated = c.generated;
    }

    /// What the planner needs of the run besides its cursor.
    pub fn run_shape(&self) -> RunShape {
        RunShape {
            prompt_tokens: self.prompt_tokens,
            max_tokens: self.max_tokens,
            temperature_q16: self.temperature,
        }
    }

    /// Decodes and checks a header against its configuration: the size,
    /// alignment, parameters and every cursor field. A state that passes
    /// can be indexed anywhere its cursor points without a bounds failure
    /// (a prompt token is checked when its position is embedded).
    pub fn read_checked(config: &Config, state: &[u8]) -> Result<Header, Error> {
        let h = Header::read(state)?;
        if !(state.as_ptr() as usize).is_multiple_of(8) {
            return Err(Error::InvalidState);
        }
        let layout =
            StateLayout::new(config, h.prompt_len as usize, h.max_tokens).map_err(|e| match e {
                Error::InvalidConfig => Error::InvalidConfig,
                _ => Error::InvalidState,
            })?;
        if layout.size != state.len() || h.temperature > MAX_TEMPERATURE_Q16 {
            return Err(Error::InvalidState);
        }
        let tokenizing = h.phase.is_tokenizing();
        let capacity = layout.prompt_len as u32 + 2;
        // In u64: the fields are any u32 until the checks below bound them.
        let (position, reached) = (
            h.position as u64,
            h.prompt_tokens as u64 + h.generated as u64,
        );
        // The position that generates next is the last one reached; before
        // the first token the prompt's earlier positions run too, up to
        // their residual (a prompt position before the last one never gets
        // to the final normalization, the classifier or sampling).
        let in_sequence = position + 1 == reached
            || (h.generated == 0 && position < reached && h.phase < Phase::FinalNorm);
        let ok = cursor_in_range(config, &layout, &h.run_shape(), &h.cursor())
            && h.prompt_tokens <= capacity
            && h.text_len as usize <= h.generated as usize * MAX_TOKEN_BYTES
            && h.tok_byte <= h.prompt_len
            && if tokenizing {
                // Tokens are generated only after tokenizing.
                h.generated == 0
            } else {
                h.prompt_tokens >= 1
                    // Every position the run can reach has its place in
                    // the cache, as tokenizing's context check left it.
                    && h.prompt_tokens as u64 + h.max_tokens as u64 <= layout.cache_positions as u64 + 1
                    && h.token < config.vocab_size
                    && (h.phase == Phase::Done || (in_sequence && h.generated < h.max_tokens))
            }
            // Open adds the first prompt token: every later phase has one.
            && (h.phase == Phase::Open) == (h.prompt_tokens == 0)
            // Each remaining prompt byte adds at most one token.
            && (h.phase != Phase::Characters || h.prompt_tokens + (h.prompt_len - h.tok_byte) <= capacity)
            && (h.phase != Phase::Sampling
                || h.row == 0
                || h.chosen < config.vocab_size
                || (h.pass == DRAW_PASS && h.chosen == NO_TOKEN))
            && (h.phase != Phase::Merges
                || (h.tok_pair < h.prompt_tokens.max(1)
                    && (h.tok_best_id == NO_TOKEN
                        || (h.tok_best_id < config.vocab_size && h.tok_best_pos < h.prompt_tokens.saturating_sub(1)))));
        if !ok {
            return Err(Error::InvalidState);
        }
        // A prompt token is checked against the vocabulary where it is
        // used (its position's embedding), not here: checking every one on
        // every turn would cost a long prompt's turns 10,000 compute units.
        Ok(h)
    }
}

/// Whether a cursor lies inside its run: every index it holds fits.
fn cursor_in_range(config: &Config, layout: &StateLayout, run: &RunShape, c: &Cursor) -> bool {
    let rows_ok = match (c.phase, c.phase.layer_matrix()) {
        (_, Some(matrix)) => c.row < matrix.shape(config).0,
        (Phase::Attention, _) => {
            // Stages 0 to 2 walk the positions up to this one.
            let index_ok = if c.stage == 3 {
                c.index < config.head_size() as u32
            } else {
                c.index <= c.position
            };
            c.row < config.n_heads && c.stage < 4 && index_ok
        }
        (Phase::Classifier, _) => c.row < config.vocab_size,
        (Phase::Sampling, _) => c.row < config.vocab_size && c.pass <= run.last_pass(),
        _ => c.row == 0,
    };
    // A field its phase does not use is zero, as entering the phase left it.
    let unused_zero = (c.phase == Phase::Attention || (c.stage == 0 && c.index == 0))
        && (c.phase == Phase::Sampling || c.pass == 0);
    rows_ok
        && unused_zero
        && c.layer < config.n_layers
        && (c.phase.is_tokenizing() || (c.position as usize) < layout.cache_positions)
        && c.generated <= run.max_tokens
}

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

/// The header's cursor and counters, for callers outside the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateInfo {
    pub phase: Phase,
    pub layer: u32,
    pub row: u32,
    pub position: u32,
    pub prompt_tokens: u32,
    pub generated: u32,
    pub text_len: u32,
    pub turns: u64,
    pub complete: bool,
}

impl StateInfo {
    /// Reads the cursor; `InvalidState` for a short buffer, a wrong tag or
    /// a phase past 20.
    pub fn read(state: &[u8]) -> Result<StateInfo, Error> {
        let h = Header::read(state)?;
        Ok(StateInfo {
            phase: h.phase,
            layer: h.layer,
            row: h.row,
            position: h.position,
            prompt_tokens: h.prompt_tokens,
            generated: h.generated,
            text_len: h.text_len,
            turns: h.turns,
            complete: h.phase == Phase::Done,
        })
    }
}

/// A region of a checked state, or nothing.
#[inline(always)]
fn region<'s>(
    config: &Config,
    state: &'s [u8],
    pick: fn(&StateLayout, &Header) -> (usize, usize),
) -> &'s [u8] {
    let Ok(h) = Header::read_checked(config, state) else {
        return &[];
    };
    let Ok(layout) = StateLayout::new(config, h.prompt_len as usize, h.max_tokens) else {
        return &[];
    };
    let (start, len) = pick(&layout, &h);
    &state[start..start + len]
}

/// The generated token ids, four little-endian bytes each; empty for a
/// state that does not check.
pub fn output_tokens(config: Config, state: &[u8]) -> &[u8] {
    region(&config, state, |l, h| {
        (l.output_tokens, 4 * h.generated as usize)
    })
}

/// The generated text; empty for a state that does not check.
pub fn output_text(config: Config, state: &[u8]) -> &[u8] {
    region(&config, state, |l, h| (l.output_text, h.text_len as usize))
}

/// The prompt's tokens, four little-endian bytes each; empty for a state
/// that does not check.
pub fn prompt_tokens(config: Config, state: &[u8]) -> &[u8] {
    region(&config, state, |l, h| {
        (l.prompt_tokens, 4 * h.prompt_tokens as usize)
    })
}

/// A zeroed state buffer aligned to eight, as `init_state` and `turn`
/// require: a `Vec<u8>` promises no alignment.
#[cfg(feature = "std")]
#[derive(Clone)]
pub struct StateBuffer {
    words: std::vec::Vec<u64>,
    len: usize,
}

#[cfg(feature = "std")]
impl StateBuffer {
    pub fn new(len: usize) -> StateBuffer {
        StateBuffer {
            words: std::vec![0; len.div_ceil(8)],
            len,
        }
    }

    pub fn from_bytes(bytes: &[u8]) -> StateBuffer {
        let mut state = StateBuffer::new(bytes.len());
        state.copy_from_slice(bytes);
        state
    }
}

#[cfg(feature = "std")]
impl core::ops::Deref for StateBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the u64 storage viewed as bytes, within its length.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
}

#[cfg(feature = "std")]
impl core::ops::DerefMut for StateBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}
