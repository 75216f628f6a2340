//! The state header: its reader, its writer and its checks.

use super::*;
use crate::bytes::{read_u32, read_u64, write_u32, write_u64};
use crate::format::{Config, MAX_TOKEN_BYTES};
use crate::Error;

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
        let cache = layout.cache_positions as u64;
        // Where a run stands against its context (`docs/state.md`, "The
        // cursor"). Running, every position up to the one generating next
        // has its place in the cache: the run completes when max tokens or
        // the context leave no room for the next. Complete with tokens, the
        // last one was never embedded: one position fewer. Complete with
        // none, the prompt's tokens alone passed the context and the cursor
        // stands at position 0, where tokenizing left it.
        let in_context = match (h.phase, h.generated) {
            (Phase::Done, 0) => h.prompt_tokens > config.seq_len && h.position == 0,
            (Phase::Done, _) => reached <= cache + 1,
            _ => in_sequence && h.generated < h.max_tokens && reached <= cache,
        };
        let ok = cursor_in_range(config, &layout, &h.run_shape(), &h.cursor())
            && h.prompt_tokens <= capacity
            && h.text_len as usize <= h.generated as usize * MAX_TOKEN_BYTES
            && h.tok_byte <= h.prompt_len
            && if tokenizing {
                // Tokens are generated only after tokenizing.
                h.generated == 0
            } else {
                h.prompt_tokens >= 1 && h.token < config.vocab_size && in_context
            }
            // Open adds the first prompt token: every later phase has one.
            && (h.phase == Phase::Open) == (h.prompt_tokens == 0)
            // Each remaining prompt byte adds at most one token.
            && (h.phase != Phase::Characters || h.prompt_tokens + (h.prompt_len - h.tok_byte) <= capacity)
            // Pass 0 and the draw set `chosen` at their first chunk; the
            // sum keeps the maximum's, from its first row on.
            && (h.phase != Phase::Sampling
                || (h.row == 0 && h.pass != SUM_PASS)
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

    /// The token whose embedding row the position at the cursor reads: its
    /// prompt token, or the token sampled last; `InvalidState` for one
    /// outside the vocabulary. `state` is the state this header was read
    /// from, checked (`read_checked`).
    pub fn embedding_token(&self, config: &Config, state: &[u8]) -> Result<u32, Error> {
        let token = if self.position < self.prompt_tokens {
            let layout = StateLayout::new(config, self.prompt_len as usize, self.max_tokens)?;
            read_u32(state, layout.prompt_tokens + 4 * self.position as usize)
        } else {
            self.token
        };
        if token >= config.vocab_size {
            return Err(Error::InvalidState);
        }
        Ok(token)
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
