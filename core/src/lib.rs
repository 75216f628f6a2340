//! curta-core: fixed-point int8 inference of llama2-style models, resumable
//! turn by turn, bit-exact on SBF, native and WebAssembly targets.
//! `docs/spec.md` describes what it computes.
//!
//! `no_std` by default, for the curta program; the `std` feature adds the
//! checkpoint converter, the client core (`client`) and the `curta-core`
//! binary.
//!
//! The modules are layers; each imports only those listed before it:
//!
//! | Module | Holds |
//! |---|---|
//! | `error`, `sha256`, `bytes` | The eight errors; SHA-256; little-endian readers and alignment (curta-interface's) |
//! | `format` | The weight artifact: `Config` and the section `Layout` (curta-interface's), `Metadata` |
//! | `fixed` | The fixed-point arithmetic: every rounding and check |
//! | `kernel` | The row kernel and the attention dot products |
//! | `state` | The state: header, `Phase`, `Cursor`, `StateLayout`, `StateInfo`, output readers (curta-interface's); `diff` |
//! | `planner`, `tokenizer` | The compute charges and `plan_turn`; the tokenizing phases and decoding |
//! | `inference` | `init_state`, `turn`, `quote_turns`, and the forward pass |
//! | `protocol`, `convert` | The program's accounts, instructions and events (curta-interface's) and the IDL; the converter |
//! | `client` | What every client does, with no I/O: replay, receipts, the crank's state machine |
//! | `wasm` | The WebAssembly interface |

#![cfg_attr(not(feature = "std"), no_std)]
// The SBF row kernel is inline assembly (`kernel/sbf.rs`), on every SBF
// target (`cfg(sbf)`, set by build.rs; `kernel` chooses it): without it a
// matrix-heavy turn would cost more than the planner charges and fail on
// chain.
#![cfg_attr(sbf, feature(asm_experimental_arch))]

// The protocol's foundations are curta-interface's, re-exported under the
// names the core has always used.
pub use curta_interface::{bytes, error, sha256};

pub mod format;

pub mod fixed;

pub mod kernel;

pub mod state;

pub mod planner;
pub mod tokenizer;

pub mod inference;

pub mod protocol;

/// A small JSON reader and writer: the client wire and the IDL.
#[cfg(feature = "std")]
pub mod json;

#[cfg(feature = "std")]
pub mod convert;

#[cfg(feature = "std")]
pub mod client;
// Natively with `native-wasm`: the same interface, for its fuzz target and
// tests (`wasm::memory::set_native` stands in for the linear memory).
#[cfg(all(feature = "std", any(target_arch = "wasm32", feature = "native-wasm")))]
pub mod wasm;

pub use error::Error;
pub use format::{read_u32, read_u64, Config, Metadata};
pub use inference::{init_state, turn, TurnResult, WeightSection};
pub use planner::TurnPlan;
pub use state::{output_text, output_tokens, state_size, Phase, StateInfo};
