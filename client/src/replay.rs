//! The replay of a run, as the client core does it
//! (`curta_core::client::replay`), on a checked `Artifact`, with its
//! errors in the client's words.

pub use curta_core::client::budget::{turn_limit, COMPUTE_BUDGET_OVERHEAD, MAX_TRANSACTION_CU};
pub use curta_core::client::replay::{Replay, Step};
use curta_core::inference::RunParams;
use curta_core::state::StateBuffer;

use crate::artifact::Artifact;
use crate::errors::{Error, Result};

/// A fresh state for a run's parameters, as `open_run` writes it.
pub fn initial_state(artifact: &Artifact, params: &RunParams) -> Result<StateBuffer> {
    Ok(curta_core::client::replay::initial_state(
        &artifact.bytes,
        params,
    )?)
}

/// Every turn from `state` to the end of the run, under `allowance`.
pub fn replay(artifact: &Artifact, state: &[u8], allowance: u32) -> Result<Replay> {
    curta_core::client::replay::replay(&artifact.bytes, state, allowance).map_err(|e| {
        match e.turn {
            0 => Error::from(e.error),
            t => Error::from(e.error).context(format!("the native replay of turn {t}")),
        }
    })
}
