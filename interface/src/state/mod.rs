//! The resumable state (`CURTAST2`): the header and its checks, the phases
//! and the cursor, where each buffer lies, and the readers of a state's
//! output. Everything a run has computed lives in one buffer; on chain it is
//! the run account after its 256-byte header. `docs/state.md` describes the
//! same bytes and every cursor rule.
//!
//! `header` holds the header's reader and writer and its checks, `layout`
//! where each buffer lies and the carving of a state into them, `info` the
//! cursor for callers outside the core, why a complete run stopped
//! (`FinishReason`), the output's readers and an aligned state buffer
//! (curta-core adds `diff`, where two states first differ); this file the
//! constants, the header's fields, the phases and the cursor.

mod header;
mod info;
mod layout;

pub use header::Header;
#[cfg(any(feature = "std", test))]
pub use info::StateBuffer;
pub use info::{output_text, output_tokens, prompt_tokens, FinishReason, StateInfo};
#[doc(hidden)]
pub use layout::Buffers;
pub use layout::{state_size, Region, StateLayout, BUFFER_COUNT, WORD_NAMES};

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

/// Declares the header's fields once: each one's offset constant, width
/// in bytes and name, and `field::ALL`, which a state diff names them by.
macro_rules! header_fields {
    ($($field:ident: $offset:literal, $width:literal, $name:literal;)*) => {
        /// Byte offsets of the state header's fields.
        pub mod field {
            $(pub const $field: usize = $offset;)*
            /// Every field, in offset order: its name, offset and width.
            pub const ALL: [(&str, usize, usize); [$($offset),*].len()] =
                [$(($name, $offset, $width)),*];
        }
    };
}

header_fields! {
    TAG: 0, 8, "tag";
    PHASE: 8, 4, "phase";
    LAYER: 12, 4, "layer";
    ROW: 16, 4, "row";
    POSITION: 20, 4, "position";
    TOKEN: 24, 4, "token";
    PROMPT_LEN: 28, 4, "prompt length";
    PROMPT_TOKENS: 32, 4, "prompt tokens";
    MAX_TOKENS: 36, 4, "max tokens";
    TEMPERATURE: 40, 4, "temperature";
    GENERATED: 44, 4, "generated";
    TEXT_LEN: 48, 4, "text length";
    TOK_BYTE: 52, 4, "tokenizer byte";
    TOK_PAIR: 56, 4, "tokenizer pair";
    TOK_BEST_POS: 60, 4, "tokenizer best position";
    TOK_BEST_KEY: 64, 4, "tokenizer best key";
    TOK_BEST_ID: 68, 4, "tokenizer best id";
    SEED: 72, 8, "seed";
    TURNS: 80, 8, "turns";
    MAX: 88, 8, "max";
    CHOSEN: 96, 4, "chosen";
    PASS: 100, 4, "pass";
    SUM: 104, 8, "sum";
    REMAINDER: 112, 8, "remainder";
    STAGE: 120, 4, "attention stage";
    INDEX: 124, 4, "attention index";
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

/// Sampling's passes over the vocabulary, the header's `pass`: the maximum,
/// the sum of exponentials and the draw.
pub const MAX_PASS: u32 = 0;
pub const SUM_PASS: u32 = 1;
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
            MAX_PASS
        } else {
            DRAW_PASS
        }
    }
}
