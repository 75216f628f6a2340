//! The cursor for callers outside the core, why a complete run stopped,
//! the output's readers, and an aligned state buffer.

use super::*;
use crate::format::Config;
use crate::Error;

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
    /// Why the run completed; `None` while it runs.
    pub reason: Option<FinishReason>,
}

/// Why a complete run stopped, derived from its state alone (no byte of
/// the state records it): see `FinishReason::of`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// The last token generated is an end token, 1 or 2 (llama2's opening
    /// and closing tokens), which ends a run early.
    EndToken,
    /// The run generated max tokens.
    MaxTokens,
    /// The run reached the model's context (`seq_len` positions): the
    /// last token was sampled at the last position, or the prompt's tokens
    /// alone passed the context and no token was generated.
    Context,
}

impl FinishReason {
    /// Why the run of `h` completed, or `None` while it runs: with no token
    /// generated, the context (only a prompt past it completes so); else an
    /// end token when the last token generated (the header's current token
    /// at completion) is 1 or 2; else max tokens when `generated` reached
    /// them; else the context. In that order: a run that samples an end
    /// token as its last allowed one ended on the end token.
    #[inline]
    pub fn of(h: &Header) -> Option<FinishReason> {
        if h.phase != Phase::Done {
            return None;
        }
        Some(if h.generated == 0 {
            FinishReason::Context
        } else if h.token == 1 || h.token == 2 {
            FinishReason::EndToken
        } else if h.generated >= h.max_tokens {
            FinishReason::MaxTokens
        } else {
            FinishReason::Context
        })
    }

    /// The reason's name in JSON (`curta-core run --json`): `end_token`,
    /// `max_tokens` or `context`.
    pub const fn name(self) -> &'static str {
        match self {
            FinishReason::EndToken => "end_token",
            FinishReason::MaxTokens => "max_tokens",
            FinishReason::Context => "context",
        }
    }

    /// The reason in words: "an end token", "max tokens", "the context".
    pub const fn words(self) -> &'static str {
        match self {
            FinishReason::EndToken => "an end token",
            FinishReason::MaxTokens => "max tokens",
            FinishReason::Context => "the context",
        }
    }
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
            reason: FinishReason::of(&h),
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
#[cfg(any(feature = "std", test))]
#[derive(Clone)]
pub struct StateBuffer {
    words: std::vec::Vec<u64>,
    len: usize,
}

#[cfg(any(feature = "std", test))]
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

#[cfg(any(feature = "std", test))]
impl core::ops::Deref for StateBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the u64 storage viewed as bytes, within its length.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
}

#[cfg(any(feature = "std", test))]
impl core::ops::DerefMut for StateBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}
