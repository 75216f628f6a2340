//! The client core: what every Curta client does, with no I/O. The `curta`
//! CLI calls it natively and `@curta/sdk` through the WebAssembly module
//! (`wasm`, which marshals `wire`'s JSON), so each rule exists once; the
//! clients keep the I/O: RPC, signing, storage, timers and printing.
//!
//! | Module | Holds |
//! |---|---|
//! | `artifact` | Whether a local artifact is a model's; an artifact put back together from its weight accounts' sections |
//! | `base58`, `base64` | How addresses, signatures and log fields are spelled |
//! | `params` | Run parameters as people type them: a decimal temperature |
//! | `errors` | An instruction's custom error in words, by the program that raised it |
//! | `packing` | A transaction's size from its shape; how many bytes a write carries; how an opening stages a long prompt |
//! | `keys` | The keypairs of the accounts a client creates, derived from the signer's secret |
//! | `replay` | A run's remaining turns from any state: plans, receipts' fields, states |
//! | `budget` | A turn's compute-unit limit and priority fee |
//! | `receipt` | Turn receipts from a transaction's logs (Curta's own invocation only), checked field by field |
//! | `batch` | Many independent transactions landed as a state machine: the window, resends, the first failure |
//! | `crank` | The crank as a state machine: events in, actions out |
//! | `fleet` | Which open runs a cranker takes (they pay what a turn costs), in its own order |
//! | `delivery` | A finished run's delivery (`deliver`): its accounts, compute units and fee |
//! | `opening` | Opening and closing a run as functions of what the chain holds: the next step, the deposit |
//! | `upload` | An upload as a function of what the chain holds: the next step |
//! | `quote` | What a run will cost before it is opened |
//! | `session_key` | What a wallet funds a session key with, and what the key sends back |
//! | `wire` | Just enough JSON; the crank's and the batch's setups, events, actions and summaries and the receipts in them, for hosts across the WebAssembly interface |

pub mod artifact;
pub mod base58;
pub mod base64;
pub mod batch;
pub mod budget;
pub mod crank;
pub mod delivery;
pub mod errors;
pub mod fleet;
pub mod keys;
pub mod opening;
pub mod packing;
pub mod params;
pub mod quote;
pub mod receipt;
pub mod replay;
pub mod session_key;
pub mod upload;
pub mod wire;
