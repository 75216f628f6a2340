//! curta-core: fixed-point int8 inference of llama2-style models, resumable
//! turn by turn, bit-exact on SBF, native and WebAssembly targets.
//!
//! `no_std` by default, for the curta program; the `std` feature adds the
//! checkpoint converter and the `curta-core` binary.

#![cfg_attr(not(feature = "std"), no_std)]
// The SBF row kernel is inline assembly (`kernel::dot_blocks`).
#![cfg_attr(target_arch = "bpf", feature(asm_experimental_arch))]

pub mod error;
pub mod format;
pub mod inference;
pub mod kernel;
pub mod planner;
pub mod protocol;
pub mod sha256;
pub mod tokenizer;

#[cfg(feature = "std")]
pub mod convert;
#[cfg(all(feature = "std", target_arch = "wasm32"))]
pub mod wasm;

pub use error::Error;
pub use format::{read_u32, read_u64, Config, Metadata};
pub use inference::{
    init_state, output_text, output_tokens, state_size, turn, StateInfo, TurnResult, WeightSection,
};
pub use planner::TurnPlan;
