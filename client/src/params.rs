//! A run's parameters from the command line, checked before anything is
//! sent by the client core's rules (`curta_core::client::params`), each
//! refused in words with the limit it breaks, naming the flag.

use curta_core::client::params::{self as core_params, Spelling};
use curta_core::format::Config;
use curta_core::inference::RunParams;

use crate::errors::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    /// Lamports each turn pays its sender (0: none).
    pub crank_fee: u64,
}

impl Params {
    pub fn as_run_params(&self) -> RunParams<'_> {
        RunParams {
            prompt: &self.prompt,
            max_tokens: self.max_tokens,
            temperature_q16: self.temperature_q16,
            seed: self.seed,
        }
    }

    /// The checks that need no weights (`core_params::check`).
    pub fn check(&self, config: &Config) -> Result<()> {
        core_params::check(config, &self.as_run_params()).map_err(refused)
    }
}

fn refused(r: core_params::Refusal) -> Error {
    Error::new(r.words(Spelling::Flags))
}

/// `--temperature` as typed, with 16 fractional bits.
pub fn temperature_q16(text: &str) -> Result<u32> {
    core_params::temperature(text).map_err(refused)
}

/// The parameters' checks, and the prompt tokenized with section zero
/// `zero` as the run's first turns will (the context refuses nothing: a
/// run that reaches it completes there).
pub fn check_context(config: Config, zero: &[u8], params: &RunParams) -> Result<()> {
    core_params::fits_context(config, zero, params).map_err(refused)
}

pub use core_params::temperature_text;
