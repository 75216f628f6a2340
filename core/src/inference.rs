//! The resumable forward pass: the state layout, `init_state`, `turn`, the
//! arithmetic kernels and the readers of a state's output. `docs/state.md`
//! describes the state byte for byte, with every cursor rule.

use crate::format::{
    read_u32, read_u64, write_u32, write_u64, Config, MatrixRef, Metadata, MAX_TOKEN_BYTES,
};
use crate::kernel::{dot_values, for_row, matvec, scores, Rows};
use crate::planner::{self, phase, Chunk, Cursor, RunShape, TurnPlan, Walker, CHARGES};
use crate::tokenizer::{self, BOS, EOS, NO_TOKEN};
use crate::Error;

#[cfg(target_endian = "big")]
compile_error!("curta-core's state is little-endian in memory on every target");

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
/// xorshift64*'s output multiplier.
const DRAW_MULTIPLIER: u64 = 0x2545_F491_4F6C_DD1D;
/// RMS normalization's epsilon, 0.00001 with 32 fractional bits.
const RMS_EPSILON: u64 = 42_950;

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

/// The state header, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub phase: u32,
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
    /// Decodes a header; `InvalidState` for a short buffer or a wrong tag.
    pub fn read(state: &[u8]) -> Result<Header, Error> {
        if state.len() < HEADER_LEN || state[..8] != STATE_TAG {
            return Err(Error::InvalidState);
        }
        let u = |at| read_u32(state, at);
        Ok(Header {
            phase: u(field::PHASE),
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
            (field::PHASE, self.phase),
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

    fn set_cursor(&mut self, c: &Cursor) {
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
    /// can be indexed anywhere its cursor points without a bounds failure.
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
        let tokenizing = h.phase < phase::EMBEDDING;
        let capacity = layout.prompt_len as u32 + 2;
        let in_sequence = h.position < h.prompt_tokens + h.generated
            && (h.generated == 0 || h.position + 1 == h.prompt_tokens + h.generated);
        let ok = planner::cursor_in_range(config, &layout, &h.run_shape(), &h.cursor())
            && h.prompt_tokens <= capacity
            && h.text_len as usize <= h.generated as usize * MAX_TOKEN_BYTES
            && h.tok_byte <= h.prompt_len
            && (tokenizing
                || (h.prompt_tokens >= 1
                    && h.token < config.vocab_size
                    && (h.phase == phase::DONE || (in_sequence && h.generated < h.max_tokens))))
            && (h.phase != phase::OPEN || h.prompt_tokens == 0)
            // Each remaining prompt byte adds at most one token.
            && (h.phase != phase::CHARACTERS || h.prompt_tokens + (h.prompt_len - h.tok_byte) <= capacity)
            && (h.phase != phase::SAMPLING
                || h.row == 0
                || h.chosen < config.vocab_size
                || (h.pass == 2 && h.chosen == NO_TOKEN))
            && (h.phase != phase::MERGES
                || (h.tok_pair < h.prompt_tokens.max(1)
                    && (h.tok_best_id == NO_TOKEN
                        || (h.tok_best_id < config.vocab_size && h.tok_best_pos + 1 < h.prompt_tokens))));
        if !ok {
            return Err(Error::InvalidState);
        }
        let vocab = config.vocab_size;
        let tokens =
            &state[layout.prompt_tokens..layout.prompt_tokens + 4 * h.prompt_tokens as usize];
        if tokens.chunks_exact(4).any(|t| read_u32(t, 0) >= vocab) {
            return Err(Error::InvalidState);
        }
        Ok(h)
    }
}

/// Where each buffer of a state starts, from the configuration, the
/// prompt's length and max tokens. Every buffer starts at a multiple of 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateLayout {
    pub prompt_len: usize,
    pub max_tokens: u32,
    pub cache_positions: usize,
    pub prompt: usize,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub output_text: usize,
    pub x: usize,
    pub xb: usize,
    pub xb2: usize,
    pub q: usize,
    pub hb: usize,
    pub hb2: usize,
    pub logits: usize,
    pub scores: usize,
    pub keys: usize,
    pub values: usize,
    /// The whole state's size.
    pub size: usize,
}

impl StateLayout {
    /// The layout; `InvalidConfig` for a configuration out of range,
    /// `InvalidPrompt` for a prompt over 1,024 bytes or max tokens outside
    /// 1 to the context length.
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
            at = crate::format::align8(at + bytes);
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
        // Every target must agree on every size: keep them within 32 bits.
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
}

/// The size of a state for a prompt of `prompt_len` bytes and `max_tokens`.
#[inline(always)]
pub fn state_size(config: Config, prompt_len: usize, max_tokens: u32) -> Result<usize, Error> {
    Ok(StateLayout::new(&config, prompt_len, max_tokens)?.size)
}

/// A run's parameters, as `init_state` takes them.
#[derive(Clone, Copy, Debug)]
pub struct RunParams<'p> {
    pub prompt: &'p [u8],
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
}

/// Writes a fresh header and the prompt into `state`, a buffer of exactly
/// `state_size` bytes, aligned to eight, and clears everything else.
#[inline(always)]
pub fn init_state(
    config: Config,
    state: &mut [u8],
    prompt: &[u8],
    max_tokens: u32,
    temperature_q16: u32,
    seed: u64,
) -> Result<(), Error> {
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    };
    init_state_with(&config, &params, state, true)
}

/// `init_state` for a caller that guarantees `state` is all zero, such as a
/// freshly allocated account (`clear` false skips clearing it; the bytes
/// written are the same).
pub fn init_state_with(
    config: &Config,
    params: &RunParams,
    state: &mut [u8],
    clear: bool,
) -> Result<(), Error> {
    config.validate()?;
    let prompt = params.prompt;
    if prompt.len() > MAX_PROMPT_BYTES
        || prompt.contains(&0)
        || core::str::from_utf8(prompt).is_err()
        || params.temperature_q16 > MAX_TEMPERATURE_Q16
    {
        return Err(Error::InvalidPrompt);
    }
    let layout = StateLayout::new(config, prompt.len(), params.max_tokens)?;
    if state.len() != layout.size {
        return Err(Error::BufferTooSmall);
    }
    if !(state.as_ptr() as usize).is_multiple_of(8) {
        return Err(Error::InvalidState);
    }
    if clear {
        state.fill(0);
    }
    let header = Header {
        prompt_len: prompt.len() as u32,
        max_tokens: params.max_tokens,
        temperature: params.temperature_q16,
        seed: if params.seed == 0 {
            ZERO_SEED
        } else {
            params.seed
        },
        ..Header::default()
    };
    header.write(state);
    state[layout.prompt..layout.prompt + prompt.len()].copy_from_slice(prompt);
    Ok(())
}

/// One matrix section a turn reads: its index and its bytes.
#[derive(Clone, Copy, Debug)]
pub struct WeightSection<'a> {
    pub index: u32,
    pub bytes: &'a [u8],
}

/// The sections a plan names, sliced from a whole artifact whose section
/// zero `m` reads: what a native caller passes to `turn`.
pub fn plan_sections<'a>(
    artifact: &'a [u8],
    m: &Metadata,
    plan: &TurnPlan,
) -> [WeightSection<'a>; 2] {
    let mut sections = [WeightSection {
        index: 0,
        bytes: &[],
    }; 2];
    for (slot, &index) in sections
        .iter_mut()
        .zip(&plan.sections[..plan.section_count])
    {
        let offset = m.section_offset(index as usize);
        let bytes = artifact
            .get(offset..offset + m.section_len(index as usize))
            .unwrap_or(&[]);
        *slot = WeightSection { index, bytes };
    }
    sections
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

/// What a turn did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnResult {
    pub complete: bool,
    /// Tokens generated so far.
    pub generated: u32,
    pub generated_this_turn: u32,
    /// The last token this turn sampled, if any.
    pub token: Option<u32>,
    /// The compute units the planner charged.
    pub work: u32,
}

/// Everything a turn takes besides the state.
#[derive(Clone, Copy, Debug)]
pub struct TurnInput<'a> {
    pub config: Config,
    pub metadata: &'a [u8],
    pub sections: &'a [WeightSection<'a>],
    pub allowance: u32,
}

/// Runs one turn with the default allowance.
#[inline(always)]
pub fn turn(
    config: Config,
    state: &mut [u8],
    metadata: &[u8],
    sections: &[WeightSection],
) -> Result<TurnResult, Error> {
    let input = TurnInput {
        config,
        metadata,
        sections,
        allowance: CHARGES.allowance,
    };
    turn_with(&input, state)
}

/// Runs one turn: checks the state, the metadata and the sections the plan
/// needs before it writes anything, then walks the planner's chunks.
#[inline(always)]
pub fn turn_with(input: &TurnInput, state: &mut [u8]) -> Result<TurnResult, Error> {
    turn_planned(input, None, state)
}

/// `turn_with` for a caller that has planned the turn already (the program
/// does, to check its accounts): the plan's sections are checked up front
/// instead of planning a second time. A plan that is not this state's makes
/// the turn fail with `MissingWeights` where a chunk needs a section the plan
/// does not name, having done the chunks before it.
pub fn turn_planned(
    input: &TurnInput,
    plan: Option<&TurnPlan>,
    state: &mut [u8],
) -> Result<TurnResult, Error> {
    let config = input.config;
    planner::check_allowance(input.allowance)?;
    let m = Metadata::new(input.metadata)?;
    if m.config != config {
        return Err(Error::InvalidConfig);
    }
    let mut h = Header::read_checked(&config, state)?;
    if h.phase == phase::DONE {
        return Err(Error::InvalidState);
    }
    let layout = StateLayout::new(&config, h.prompt_len as usize, h.max_tokens)?;
    let generated_before = h.generated;
    let mut result = TurnResult::default();

    if h.phase < phase::EMBEDDING {
        let b = Buffers::carve(state, &layout);
        let used = tokenizer::tokenize(
            &m,
            &mut h,
            b.prompt,
            b.prompt_tokens,
            input.allowance - CHARGES.turn,
        )?;
        if used == 0 {
            return Err(Error::InvalidConfig);
        }
        result.work = CHARGES.turn + used;
    } else {
        let computed;
        let plan = match plan {
            Some(plan) => plan,
            None => {
                computed =
                    planner::plan_cursor(&config, &h.run_shape(), &h.cursor(), input.allowance)?;
                &computed
            }
        };
        let mut found: [&[u8]; 2] = [&[], &[]];
        for (slot, &index) in found.iter_mut().zip(&plan.sections[..plan.section_count]) {
            let need = m.layout.section_len(&config, index, m.shared_classifier) as usize;
            *slot = match input.sections.iter().find(|s| s.index == index) {
                Some(s) if s.bytes.len() >= need => s.bytes,
                _ => return Err(Error::MissingWeights),
            };
        }
        let mut walker = Walker::new(&config, &h.run_shape(), &h.cursor(), input.allowance)?;
        let mut exec = Exec {
            m: &m,
            sections: &plan.sections,
            bytes: found,
            b: Buffers::carve(state, &layout),
            cache_positions: layout.cache_positions,
            sampled: NO_TOKEN,
        };
        let mut ended = false;
        while let Some(chunk) = walker.next_chunk() {
            exec.run(&mut h, &chunk)?;
            if exec.sampled != NO_TOKEN {
                result.token = Some(exec.sampled);
                ended = exec.sampled == BOS || exec.sampled == EOS;
                exec.sampled = NO_TOKEN;
                if ended {
                    break;
                }
            }
        }
        h.set_cursor(&walker.cursor);
        if ended {
            h.phase = phase::DONE;
        }
        result.work = walker.used;
    }
    h.turns += 1;
    h.write(state);
    result.complete = h.phase == phase::DONE;
    result.generated = h.generated;
    result.generated_this_turn = h.generated - generated_before;
    Ok(result)
}

/// A state's buffers as typed slices. Carving relies on the state being
/// aligned to eight (checked by `Header::read_checked`) and on every buffer
/// starting at a multiple of eight (`StateLayout`).
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

/// Views bytes as integers of the machine's (little-endian) order.
#[inline(always)]
fn cast<T: Copy>(bytes: &mut [u8]) -> &mut [T] {
    let size = core::mem::size_of::<T>();
    assert!((bytes.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>()));
    // SAFETY: the pointer is aligned for T (checked above), the length is
    // rounded down to whole elements, every bit pattern is a valid integer,
    // and the borrow of `bytes` is moved into the result.
    unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, bytes.len() / size) }
}

impl<'s> Buffers<'s> {
    fn carve(state: &'s mut [u8], l: &StateLayout) -> Buffers<'s> {
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

/// RMS normalization's divisor: `isqrt(sum(x * x) / n + epsilon)`, at least 1.
fn rms(x: &[i64]) -> u64 {
    let mut sum = 0i64;
    for &v in x {
        sum = sum.wrapping_add(v.wrapping_mul(v));
    }
    isqrt((sum as u64) / x.len() as u64 + RMS_EPSILON).max(1)
}

/// `((x * weight) / rms) >> 8`: 16 fractional bits in and out.
#[inline(always)]
fn normalize(x: i64, weight: &[u8], i: usize, rms: u64) -> i64 {
    let w = read_u32(weight, 4 * i) as i32 as i64;
    div_toward_zero(x.wrapping_mul(w), rms) >> 8
}

/// Rotates the pair `(a, b)` by a cosine and sine with 24 fractional bits.
#[inline(always)]
fn rotate(a: i64, b: i64, cos: i64, sin: i64) -> (i64, i64) {
    (
        a.wrapping_mul(cos).wrapping_sub(b.wrapping_mul(sin)) >> 24,
        a.wrapping_mul(sin).wrapping_add(b.wrapping_mul(cos)) >> 24,
    )
}

/// A value stored into the cache must fit its 32 bits.
#[inline(always)]
fn to_cache(v: i64) -> Result<i32, Error> {
    if v < i32::MIN as i64 || v > i32::MAX as i64 {
        Err(Error::Arithmetic)
    } else {
        Ok(v as i32)
    }
}

/// Multiplies the rows of a matrix from `start` by `x` into `out`, which
/// holds exactly those rows: one matrix chunk, its setup included.
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

/// Executes chunks against one state's buffers.
struct Exec<'e, 's> {
    m: &'e Metadata<'e>,
    sections: &'e [u32; 2],
    bytes: [&'e [u8]; 2],
    b: Buffers<'s>,
    cache_positions: usize,
    /// The token the last chunk sampled, or `NO_TOKEN`.
    sampled: u32,
}

impl<'e, 's> Exec<'e, 's> {
    /// The bytes of the section holding a matrix, which the plan named.
    #[inline(always)]
    fn section(&self, m: &MatrixRef) -> Result<&'e [u8], Error> {
        if self.sections[0] == m.section && !self.bytes[0].is_empty() {
            Ok(self.bytes[0])
        } else if self.sections[1] == m.section && !self.bytes[1].is_empty() {
            Ok(self.bytes[1])
        } else {
            Err(Error::MissingWeights)
        }
    }

    fn cache_at(&self, layer: u32, position: u32) -> usize {
        let kv_dim = self.m.config.kv_dim();
        (layer as usize * self.cache_positions + position as usize) * kv_dim
    }

    fn run(&mut self, h: &mut Header, chunk: &Chunk) -> Result<(), Error> {
        let m = self.m;
        let config = m.config;
        let at = chunk.at;
        let (start, end) = (at.row as usize, (at.row + chunk.count) as usize);
        // The matrix this chunk reads, if any, and its section's bytes.
        let mat = match at.phase {
            phase::EMBEDDING => Some(m.embedding()),
            phase::CLASSIFIER => Some(m.classifier()),
            p => planner::layer_matrix(p).map(|which| m.matrix(at.layer, which)),
        };
        let (mat, section) = match mat {
            Some(mat) => (mat, self.section(&mat)?),
            None => (m.embedding(), &[][..]),
        };
        let cache_base = self.cache_at(at.layer, at.position);
        let b = &mut self.b;
        match at.phase {
            phase::EMBEDDING => {
                if at.position < h.prompt_tokens {
                    h.token = b.prompt_tokens[at.position as usize];
                }
                let scale = read_u32(section, mat.offset + 4 * h.token as usize) as i64;
                let weights = &section[mat.weights_offset()..];
                let (rows, cols) = (mat.rows as usize, mat.cols as usize);
                let x = &mut *b.x;
                for_row(weights, rows, cols, h.token as usize, |j, byte| {
                    x[j] = (byte as i64 - 128).wrapping_mul(scale) >> 8;
                });
            }
            phase::ATTENTION_NORM | phase::FFN_NORM => {
                if at.phase == phase::FFN_NORM {
                    for (x, r) in b.x.iter_mut().zip(b.xb2.iter()) {
                        *x = x.wrapping_add(*r);
                    }
                }
                let norm = if at.phase == phase::FFN_NORM {
                    m.ffn_norm(at.layer)
                } else {
                    m.attention_norm(at.layer)
                };
                let w = m.norm(norm);
                let r = rms(b.x);
                for (i, (o, &x)) in b.xb.iter_mut().zip(b.x.iter()).enumerate() {
                    *o = normalize(x, w, i, r);
                }
            }
            phase::FINAL_NORM => {
                let w = m.norm(m.final_norm());
                let r = rms(b.x);
                for (i, x) in b.x.iter_mut().enumerate() {
                    *x = normalize(*x, w, i, r);
                }
            }
            phase::QUERY => {
                let (xb, q) = (&*b.xb, &mut b.q[start..end]);
                multiply(section, &mat, at.row, xb, q);
            }
            phase::KEY | phase::VALUE => {
                // The rows go through xb2, free until phase 10, into the cache.
                multiply(section, &mat, at.row, &*b.xb, &mut b.xb2[start..end]);
                let cache = if at.phase == phase::KEY {
                    &mut b.keys
                } else {
                    &mut b.values
                };
                let base = cache_base;
                for (slot, &v) in cache[base + start..base + end]
                    .iter_mut()
                    .zip(b.xb2[start..end].iter())
                {
                    *slot = to_cache(v)?;
                }
            }
            phase::ROTARY => {
                let hs = config.head_size();
                for (i, pair) in b.q.chunks_exact_mut(2).enumerate() {
                    let (cos, sin) = m.rope(at.position, i % (hs / 2));
                    let (a, c) = rotate(pair[0], pair[1], cos, sin);
                    pair[0] = a;
                    pair[1] = c;
                }
                let key = &mut b.keys[cache_base..cache_base + config.kv_dim()];
                for (i, pair) in key.chunks_exact_mut(2).enumerate() {
                    let (cos, sin) = m.rope(at.position, i % (hs / 2));
                    let (a, c) = rotate(pair[0] as i64, pair[1] as i64, cos, sin);
                    pair[0] = to_cache(a)?;
                    pair[1] = to_cache(c)?;
                }
            }
            phase::ATTENTION => self.attention(h, chunk),
            phase::ATTENTION_OUTPUT => {
                let (xb, xb2) = (&*b.xb, &mut b.xb2[start..end]);
                multiply(section, &mat, at.row, xb, xb2);
            }
            phase::GATE | phase::UP => {
                let out = if at.phase == phase::GATE {
                    &mut b.hb
                } else {
                    &mut b.hb2
                };
                let (xb, out) = (&*b.xb, &mut out[start..end]);
                multiply(section, &mat, at.row, xb, out);
            }
            phase::SILU => {
                for (g, &u) in b.hb.iter_mut().zip(b.hb2.iter()) {
                    *g = m.silu(*g).wrapping_mul(u) >> 16;
                }
            }
            phase::DOWN => {
                let (hb, xb) = (&*b.hb, &mut b.xb[start..end]);
                multiply(section, &mat, at.row, hb, xb);
            }
            phase::RESIDUAL => {
                for (x, &r) in b.x.iter_mut().zip(b.xb.iter()) {
                    *x = x.wrapping_add(r);
                }
            }
            phase::CLASSIFIER => {
                let (x, logits) = (&*b.x, &mut b.logits[start..end]);
                multiply(section, &mat, at.row, x, logits);
            }
            _ => self.sample(h, chunk),
        }
        Ok(())
    }

    /// Phase 9: one chunk of one stage of one head.
    fn attention(&mut self, h: &mut Header, chunk: &Chunk) {
        let m = self.m;
        let config = m.config;
        let at = chunk.at;
        let hs = config.head_size();
        let head = at.row as usize;
        let kv_head = head / (config.n_heads / config.n_kv_heads) as usize;
        let kv_dim = config.kv_dim();
        let (start, end) = (at.index as usize, (at.index + chunk.count) as usize);
        let base = self.cache_at(at.layer, 0) + kv_head * hs;
        let b = &mut self.b;
        match at.stage {
            0 => {
                let max = if start == 0 { i64::MIN } else { h.max };
                let q = &b.q[head * hs..(head + 1) * hs];
                let keys = &b.keys[base + start * kv_dim..];
                let inv = m.inv_sqrt_head as i64;
                h.max = scores(q, keys, kv_dim, inv, &mut b.scores[start..end], max);
            }
            1 => {
                let mut sum = if start == 0 { 0 } else { h.sum };
                let max = h.max;
                let table = m.exp_words();
                for s in &mut b.scores[start..end] {
                    let d = max.wrapping_sub(*s) as u64;
                    let e = match table {
                        Some(t) => {
                            t[if d >> 8 > 4096 {
                                4096
                            } else {
                                (d >> 8) as usize
                            }]
                        }
                        None => m.exp(d),
                    };
                    *s = e as i64;
                    sum = sum.wrapping_add(e as u64);
                }
                h.sum = sum;
            }
            2 => {
                let sum = h.sum;
                for s in &mut b.scores[start..end] {
                    *s = ((*s as u64) << 24).checked_div(sum).unwrap_or(0) as i64;
                }
            }
            _ => {
                let positions = at.position as usize + 1;
                let scores = &b.scores[..positions];
                for i in start..end {
                    let column = &b.values[base + i..];
                    b.xb[head * hs + i] = dot_values(scores, column, kv_dim) >> 24;
                }
            }
        }
    }

    /// The exponential of a logit at the run's temperature.
    #[inline(always)]
    fn weight(&self, h: &Header, logit: i64) -> u64 {
        let d = (h.max.wrapping_sub(logit) as u64).wrapping_shl(16) / h.temperature as u64;
        self.m.exp(d) as u64
    }

    /// Phase 19: one chunk of one sampling pass.
    fn sample(&mut self, h: &mut Header, chunk: &Chunk) {
        let at = chunk.at;
        let (start, end) = (at.row as usize, (at.row + chunk.count) as usize);
        match at.pass {
            0 => {
                if start == 0 {
                    h.max = i64::MIN;
                    h.chosen = 0;
                }
                for i in start..end {
                    if self.b.logits[i] > h.max {
                        h.max = self.b.logits[i];
                        h.chosen = i as u32;
                    }
                }
            }
            1 => {
                if start == 0 {
                    h.sum = 0;
                }
                for i in start..end {
                    h.sum = h.sum.wrapping_add(self.weight(h, self.b.logits[i]));
                }
                if chunk.completes {
                    let mut x = h.seed;
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    h.seed = x;
                    h.remainder = x
                        .wrapping_mul(DRAW_MULTIPLIER)
                        .checked_rem(h.sum)
                        .unwrap_or(0);
                }
            }
            _ => {
                if start == 0 {
                    h.chosen = NO_TOKEN;
                }
                // Once the draw has landed the rest of the walk is charged
                // but skipped: the plan, not the data, decides the cuts.
                for i in start..end {
                    if h.chosen != NO_TOKEN {
                        break;
                    }
                    let e = self.weight(h, self.b.logits[i]);
                    if h.remainder < e {
                        h.chosen = i as u32;
                    } else {
                        h.remainder -= e;
                    }
                }
            }
        }
        let last_pass = if h.temperature == 0 { 0 } else { 2 };
        if chunk.completes && at.pass == last_pass {
            if h.chosen == NO_TOKEN {
                h.chosen = self.m.config.vocab_size - 1;
            }
            self.emit(h, at.generated, h.chosen);
        }
    }

    /// Appends a sampled token and its text; it becomes the current token.
    fn emit(&mut self, h: &mut Header, generated: u32, token: u32) {
        self.b.output_tokens[generated as usize] = token;
        let text = &mut self.b.text[h.text_len as usize..];
        let n = self.m.decode_into(h.token, token, text);
        h.text_len += n as u32;
        h.token = token;
        self.sampled = token;
    }
}

/// The header's cursor and counters, for callers outside the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateInfo {
    pub phase: u32,
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
    /// Reads the cursor; `InvalidState` for a short buffer or a wrong tag.
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
            complete: h.phase == phase::DONE,
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

/// The prompt's tokens, four little-endian bytes each.
pub fn prompt_tokens(config: Config, state: &[u8]) -> &[u8] {
    region(&config, state, |l, h| {
        (l.prompt_tokens, 4 * h.prompt_tokens as usize)
    })
}

/// The count of turns a run takes: tokenizes the prompt in `scratch` (a
/// buffer of `state_size` bytes), then steps the planner to max tokens. A
/// run that samples token 1 or 2 early ends in fewer.
#[inline(always)]
pub fn quote_turns(
    config: Config,
    metadata: &[u8],
    prompt: &[u8],
    max_tokens: u32,
    temperature_q16: u32,
    scratch: &mut [u8],
) -> Result<u64, Error> {
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed: 0,
    };
    let input = TurnInput {
        config,
        metadata,
        sections: &[],
        allowance: CHARGES.allowance,
    };
    quote_with(&input, &params, scratch)
}

/// `quote_turns` under `input`'s allowance.
pub fn quote_with(input: &TurnInput, params: &RunParams, scratch: &mut [u8]) -> Result<u64, Error> {
    init_state_with(&input.config, params, scratch, true)?;
    let mut turns = 0u64;
    let mut h = Header::read(scratch)?;
    while h.phase < phase::EMBEDDING {
        turn_with(input, scratch)?;
        turns += 1;
        h = Header::read(scratch)?;
    }
    Ok(turns + planner::count_turns(&input.config, &h.run_shape(), &h.cursor(), input.allowance)?)
}
