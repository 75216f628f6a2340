//! The curta client: the `curta` command line and everything it is made
//! of, usable as a library (the harness's tests build transactions with
//! `instructions` and `transaction_fit`).
//!
//! | Module | Holds |
//! |---|---|
//! | `instructions`, `transaction_fit` | Every instruction's builder; fitting 1,232-byte transactions, staging long prompts |
//! | `plans` | The flows' transactions (upload, turns), built without I/O, which the client and the harness's SBF-VM executor both send |
//! | `errors` | Errors in words, program errors by name and number |
//! | `funds` | The signer's balance against what a command spends |
//! | `cli_config`, `cluster`, `transport` | `--url`, `--keypair`, `--commitment` and the Solana CLI's config file; the connection to a cluster (`Cluster`): accounts, blockhashes, signing, sending until landed; every request retried with backoff on a missing or unusable answer |
//! | `journal`, `keys` | What makes a rerun safe: in-flight transactions journaled, account keys derived |
//! | `sender`, `progress`, `interrupt` | Many transactions in flight at once; progress bars or lines; Ctrl-C during a crank |
//! | `artifact`, `model`, `params` | Weights held whole; models and configs on chain; a run's parameters |
//! | `replay`, `receipts` | The native replay of a run; turn receipts from the logs |
//! | `deploy`, `settings`, `upload`, `runs`, `crank`, `deliver`, `quote` | The commands' work |
//! | `cli`, `output` | The command line, a module per command family; outcomes printed as text or JSON |

pub mod artifact;
pub mod cli;
pub mod cli_config;
pub mod cluster;
pub mod crank;
pub mod deliver;
pub mod deploy;
pub mod errors;
pub mod funds;
pub mod instructions;
pub mod interrupt;
pub mod journal;
pub mod keys;
pub mod model;
pub mod output;
pub mod params;
pub mod plans;
pub mod progress;
pub mod quote;
pub mod receipts;
pub mod replay;
pub mod runs;
pub mod sender;
pub mod settings;
pub mod transaction_fit;
pub mod transport;
pub mod upload;
