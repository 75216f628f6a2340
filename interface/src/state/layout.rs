//! Where each buffer of a state lies, and a state carved into them. The
//! buffers are declared once, in `state_buffers!` below: the layout's
//! fields, where `StateLayout::new` places them, the words `state_layout`
//! writes, the carving into typed slices and the names a state diff prints
//! all come from that one list.

use super::*;
use crate::bytes::{align8, cast};
use crate::format::{Config, MAX_TOKEN_BYTES};
use crate::Error;

/// A buffer of a state: its name, where it starts, its length in bytes
/// and the size of its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub start: usize,
    pub len: usize,
    pub element: usize,
}

/// The numbers a buffer's element count is written in, as `u64` so no
/// product overflows before the size check.
struct Counts {
    prompt_len: u64,
    max_tokens: u64,
    cache_positions: u64,
    dim: u64,
    hidden_dim: u64,
    vocab_size: u64,
    n_layers: u64,
    kv_dim: u64,
}

/// Declares the state's buffers, in state order: each one's field (in
/// `StateLayout` and `Buffers`), element type, element count (in `Counts`)
/// and name.
macro_rules! state_buffers {
    ($n:ident => $( $(#[$doc:meta])* $field:ident: [$element:ty; $count:expr] $name:literal, )*) => {
        /// How many buffers a state has.
        pub const BUFFER_COUNT: usize = [$($name),*].len();

        /// The words `StateLayout::to_words` gives, named, in order.
        pub const WORD_NAMES: [&str; BUFFER_COUNT + 2] =
            [$(stringify!($field),)* "size", "cache_positions"];

        /// Each buffer's index in state order.
        #[allow(non_camel_case_types)]
        enum Slot {
            $($field,)*
        }

        /// Where each buffer of a state starts, in bytes from the state's
        /// start, and the shape of its elements (as `RunState` in llama2.c's
        /// `run.c`). Every buffer starts at a multiple of eight. Vectors of
        /// the forward pass hold 16 fractional bits.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct StateLayout {
            /// The prompt's length in bytes.
            pub prompt_len: usize,
            pub max_tokens: u32,
            /// Positions the run can reach: `min(prompt_len + max_tokens + 1, seq_len)`.
            pub cache_positions: usize,
            $( $(#[$doc])* pub $field: usize, )*
            /// The whole state's size.
            pub size: usize,
            /// Each buffer's length in bytes, in state order.
            lens: [usize; BUFFER_COUNT],
        }

        impl StateLayout {
            /// Places the buffers one after another from the header's end,
            /// each at the next multiple of eight; `None` past 32 bits.
            const fn place(prompt_len: usize, max_tokens: u32, $n: &Counts) -> Option<StateLayout> {
                let mut at = HEADER_LEN as u64;
                let mut lens = [0usize; BUFFER_COUNT];
                $(
                    let $field = at as usize;
                    let bytes = core::mem::size_of::<$element>() as u64 * ($count);
                    lens[Slot::$field as usize] = bytes as usize;
                    at = align8(at + bytes);
                )*
                // Every target must agree on every size, 32-bit WebAssembly
                // too, and a run account adds its 256-byte header.
                if at > u32::MAX as u64 - 256 {
                    return None;
                }
                Some(StateLayout {
                    prompt_len,
                    max_tokens,
                    cache_positions: $n.cache_positions as usize,
                    $( $field, )*
                    size: at as usize,
                    lens,
                })
            }

            /// Every buffer, in state order.
            pub fn regions(&self) -> [Region; BUFFER_COUNT] {
                [$(Region {
                    name: $name,
                    start: self.$field,
                    len: self.lens[Slot::$field as usize],
                    element: core::mem::size_of::<$element>(),
                }),*]
            }

            /// The layout as the WebAssembly export `state_layout` writes it:
            /// the buffers' offsets in state order, then the size and the
            /// cache positions.
            pub fn to_words(&self) -> [u32; BUFFER_COUNT + 2] {
                [$(self.$field as u32,)* self.size as u32, self.cache_positions as u32]
            }
        }

        /// A state's buffers as typed slices, as `StateLayout` places them.
        #[doc(hidden)]
        pub struct Buffers<'s> {
            $( pub $field: &'s mut [$element], )*
        }

        impl<'s> Buffers<'s> {
            /// Carves a state into its buffers. Relies on the state being
            /// aligned to eight (checked by `Header::read_checked`) and on
            /// every buffer starting at a multiple of eight.
            pub fn carve(state: &'s mut [u8], l: &StateLayout) -> Buffers<'s> {
                let mut rest = state;
                let mut cut = 0usize;
                $(
                    let len = l.lens[Slot::$field as usize];
                    let $field = cast(take(&mut rest, &mut cut, l.$field, len));
                )*
                Buffers { $( $field, )* }
            }
        }
    };
}

state_buffers! { n =>
    /// The prompt, UTF-8: u8 (prompt_len,)
    prompt: [u8; n.prompt_len] "prompt",
    /// The prompt's token ids, at most one per byte, the opening token and
    /// the space: u32 (prompt_len + 2,)
    prompt_tokens: [u32; n.prompt_len + 2] "prompt tokens",
    /// The sampled token ids: u32 (max_tokens,)
    output_tokens: [u32; n.max_tokens] "output tokens",
    /// The sampled tokens' text: u8 (max_tokens * 128,)
    output_text: [u8; MAX_TOKEN_BYTES as u64 * n.max_tokens] "output text",
    /// The activations at the current position: i64 (dim,)
    x: [i64; n.dim] "x",
    /// x normalized, then attention's heads, then the down matrix's output: i64 (dim,)
    xb: [i64; n.dim] "xb",
    /// Key and value rows on their way to the cache, then the attention
    /// output matrix's result: i64 (dim,)
    xb2: [i64; n.dim] "xb2",
    /// The query: i64 (dim,)
    q: [i64; n.dim] "q",
    /// The feed-forward gate, then the hidden vector: i64 (hidden_dim,)
    hb: [i64; n.hidden_dim] "hb",
    /// The feed-forward up vector: i64 (hidden_dim,)
    hb2: [i64; n.hidden_dim] "hb2",
    /// The classifier's output: i64 (vocab_size,)
    logits: [i64; n.vocab_size] "logits",
    /// One head's scores, then exponentials, then probabilities (24
    /// fractional bits): i64 (cache_positions,)
    scores: [i64; n.cache_positions] "attention scores",
    /// The key cache: i32 (n_layers, cache_positions, kv_dim)
    keys: [i32; n.n_layers * n.cache_positions * n.kv_dim] "keys",
    /// The value cache: i32 (n_layers, cache_positions, kv_dim)
    values: [i32; n.n_layers * n.cache_positions * n.kv_dim] "values",
}

impl StateLayout {
    /// The layout; `InvalidConfig` for a configuration out of range or a
    /// state past 32 bits, `InvalidPrompt` for a prompt over 1,024 bytes or
    /// max tokens outside 1 to the context length.
    pub const fn new(
        config: &Config,
        prompt_len: usize,
        max_tokens: u32,
    ) -> Result<StateLayout, Error> {
        if config.out_of_range().is_some() {
            return Err(Error::InvalidConfig);
        }
        if prompt_len > MAX_PROMPT_BYTES || max_tokens == 0 || max_tokens > config.seq_len {
            return Err(Error::InvalidPrompt);
        }
        let reachable = prompt_len as u64 + max_tokens as u64 + 1;
        let counts = Counts {
            prompt_len: prompt_len as u64,
            max_tokens: max_tokens as u64,
            cache_positions: if reachable < config.seq_len as u64 {
                reachable
            } else {
                config.seq_len as u64
            },
            dim: config.dim as u64,
            hidden_dim: config.hidden_dim as u64,
            vocab_size: config.vocab_size as u64,
            n_layers: config.n_layers as u64,
            kv_dim: config.kv_dim() as u64,
        };
        match StateLayout::place(prompt_len, max_tokens, &counts) {
            Some(layout) => Ok(layout),
            None => Err(Error::InvalidConfig),
        }
    }
}

/// The size of a state for a prompt of `prompt_len` bytes and `max_tokens`.
#[inline(always)]
pub const fn state_size(
    config: Config,
    prompt_len: usize,
    max_tokens: u32,
) -> Result<usize, Error> {
    match StateLayout::new(&config, prompt_len, max_tokens) {
        Ok(layout) => Ok(layout.size),
        Err(e) => Err(e),
    }
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
