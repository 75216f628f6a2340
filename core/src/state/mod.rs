//! The resumable state (`CURTAST2`): the header and its checks, the phases
//! and the cursor, where each buffer lies, and the readers of a state's
//! output. Everything a run has computed lives in one buffer; on chain it is
//! the run account after its 256-byte header. `docs/state.md` describes the
//! same bytes and every cursor rule.
//!
//! `header` holds the header's reader and writer and its checks, `layout`
//! where each buffer lies and the carving of a state into them, `info` the
//! cursor for callers outside the core, the output's readers and an aligned
//! state buffer; this file the constants, the header's field offsets, the
//! phases and the cursor.

mod header;
mod info;
mod layout;

pub use header::Header;
#[cfg(feature = "std")]
pub use info::StateBuffer;
pub use info::{output_text, output_tokens, prompt_tokens, StateInfo};
pub(crate) use layout::Buffers;
pub use layout::{state_size, StateLayout};

use crate::format::LayerMatrix;

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
