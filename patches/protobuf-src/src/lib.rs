//! The one function of crates.io's `protobuf-src` that Agave calls, without
//! its build: solana-storage-proto's build script (under the local
//! validator) asks it for a `protoc` to generate its Rust from three
//! `.proto` files, and the real crate compiles libprotobuf 21.5 from C++
//! source for that, five CPU-minutes of every cold build. Debian's
//! protobuf-compiler (3.21.12, the same 21.x line; installed by
//! scripts/setup-host.sh) does that job: protoc only parses the `.proto`
//! files into descriptors, from which tonic-build writes the Rust.

use std::path::PathBuf;

/// `protoc` as found on `PATH` (Debian puts it in `/usr/bin`), unless
/// `PROTOC` names another, which solana-storage-proto then uses itself.
pub fn protoc() -> PathBuf {
    PathBuf::from("protoc")
}
