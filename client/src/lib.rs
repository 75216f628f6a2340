//! The curta client: instruction builders, transactions over JSON-RPC, and
//! the `curta` command line.
pub mod instructions;
pub mod packing;
