//! What a command can fail with, and the explanation of a run's core
//! errors: the value and the limit behind each.

use curta_core::format::Metadata;
use curta_core::state::{MAX_PROMPT_BYTES, MAX_TEMPERATURE_Q16};
use curta_core::Error;

use crate::args::RunArgs;

/// A failure: a usage mistake, an I/O problem or a core error, which
/// carries what was wrong with which value when the binary can say.
pub enum Failure {
    Usage(String),
    Io(String),
    Core(Error, Option<String>),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e, None)
    }
}

/// A core error with the value and the limit it broke.
pub fn refused(error: Error, reason: String) -> Failure {
    Failure::Core(error, Some(reason))
}

/// Names the value and the limit behind a core error of `quote` or `run`.
pub fn explain_run(failure: Failure, m: &Metadata, run: &RunArgs) -> Failure {
    let e = match failure {
        Failure::Core(e, None) => e,
        other => return other,
    };
    let context = m.config.seq_len;
    let prompt = &run.prompt;
    let reason = match e {
        Error::InvalidPrompt if prompt.len() > MAX_PROMPT_BYTES => format!(
            "a prompt of {} bytes: the longest is {MAX_PROMPT_BYTES}",
            prompt.len()
        ),
        Error::InvalidPrompt if prompt.contains(&0) => format!(
            "the prompt holds a zero byte at byte {}",
            prompt.iter().position(|&b| b == 0).unwrap_or(0)
        ),
        Error::InvalidPrompt if std::str::from_utf8(prompt).is_err() => format!(
            "the prompt is not UTF-8 from byte {}",
            std::str::from_utf8(prompt)
                .err()
                .map_or(0, |u| u.valid_up_to())
        ),
        Error::InvalidPrompt if run.max_tokens == 0 => {
            "max tokens 0: a run generates at least 1 token".into()
        }
        Error::InvalidPrompt if run.max_tokens > context => format!(
            "max tokens {}: the context is {context} positions",
            run.max_tokens
        ),
        Error::InvalidPrompt if run.temperature_q16 > MAX_TEMPERATURE_Q16 => format!(
            "temperature {}: the highest is {}",
            run.temperature,
            MAX_TEMPERATURE_Q16 >> 16
        ),
        Error::InvalidConfig => format!(
            "a state for a prompt of {} bytes and max tokens {} would pass 4 GiB",
            prompt.len(),
            run.max_tokens
        ),
        _ => return e.into(),
    };
    refused(e, reason)
}
