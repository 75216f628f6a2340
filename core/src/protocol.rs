//! Sizes, tags and zero-copy readers of the curta program's accounts.

/// The most data one Solana account may hold (10 MiB).
pub const MAX_ACCOUNT_LEN: usize = 10 * 1024 * 1024;
/// The weight account's header, before its section's bytes.
pub const WEIGHT_HEADER_LEN: usize = 128;
/// The run account's header, before the core state.
pub const RUN_HEADER_LEN: usize = 256;
