//! The harness: Curta on a real validator. A `curta-localnet` as a child
//! process, the `curta` command line against it, a fault-injecting RPC proxy
//! in front of it, and the client's end-to-end tests (`tests/`). The golden
//! replay on the SBF VM and the program's tests there are `curta-replay`'s,
//! which builds no validator.
//!
//! - `localnet`: a `curta-localnet` validator as a child process, for tests.
//! - `curta`: the `curta` command line as a process, against a validator.
//! - `proxy`: a fault-injecting JSON-RPC proxy in front of a validator.

pub mod curta;
pub mod localnet;
pub mod proxy;
