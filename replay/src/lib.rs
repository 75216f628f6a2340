//! The replay: every run of `golden/manifest.json` turn by turn on the SBF
//! VM (solana-program-test, metered), natively with curta-core and through
//! the WebAssembly module, each turn's state checked against the golden
//! receipts; and what the program's tests on that VM share. No validator:
//! the local validator and the end-to-end tests are `curta-harness`'s.
//!
//! - `models`: the artifacts the runs use, converted once per process.
//! - `manifest`: the runs, read from `golden/manifest.json`.
//! - `receipt`: golden receipts, one small text file per run.
//! - `native`, `wasm`: the native replay and the module's.
//! - `program_test`: the solana-program-test driver: accounts, upload, turns.
//! - `replay`: the three replays of a run, turn by turn, compared.
//! - `costs`, `cu_report`, `slope`: what each chunk and turn cost on the VM.
//! - `storyteller`: the example consumer's instructions, for its tests.

pub mod costs;
pub mod cu_report;
pub mod manifest;
pub mod models;
pub mod native;
pub mod program_test;
pub mod receipt;
pub mod replay;
pub mod slope;
pub mod storyteller;
pub mod wasm;

use std::path::PathBuf;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder `make build-sbf` leaves `curta_program.so` in, or
/// `SBF_OUT_DIR` when set (the Makefile sets it to that folder, and the v0
/// fallback's targets to `target/deploy-v0`).
pub fn deploy_dir() -> PathBuf {
    match std::env::var_os("SBF_OUT_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target/deploy"),
    }
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = curta_core::sha256::sha256(bytes);
    String::from_utf8(curta_core::sha256::hex(&digest).to_vec()).expect("hex is ASCII")
}
