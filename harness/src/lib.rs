//! Test harness for curta-program's SBF build; the tests live in `tests/`.
//! Run with `make test-sbf-smoke` (builds the `.so` first).

use std::path::PathBuf;

/// The folder `make build-sbf` leaves `curta_program.so` in.
pub fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/deploy")
}
