//! The curta client: instruction builders, transactions over JSON-RPC, and
//! the `curta` command line.
