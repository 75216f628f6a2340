//! What each fuzz target checks, one module per target, in one copy: the
//! targets in `fuzz/fuzz_targets/` call these functions under libFuzzer,
//! and this crate's `tests/regressions.rs` calls them on stable Rust over
//! every committed corpus entry and crash reproducer.
//!
//! Each `check` takes the fuzzer's bytes and panics on a finding: a panic
//! of the code under test, or an invariant the target asserts.

pub mod artifact;
pub mod cut;
pub mod models;
pub mod program;
pub mod protocol;
pub mod runs;
pub mod seeds;
pub mod source;
pub mod state;
pub mod wasm;

/// A target's check.
pub type Check = fn(&[u8]);

/// The targets: their names (the files in `fuzz/fuzz_targets/`, the folders
/// of `fuzz/corpus/` and `fuzz/regressions/`) and their checks.
pub const TARGETS: [(&str, Check); 6] = [
    ("artifact", artifact::check),
    ("state", state::check),
    ("protocol", protocol::check),
    ("wasm_exports", wasm::check),
    ("cut_invariance", cut::check),
    ("program", program::check),
];
