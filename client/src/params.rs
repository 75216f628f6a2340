//! A run's parameters from the command line, checked before anything is
//! sent: the prompt, max tokens, the temperature and the seed, each refused
//! in words with the limit it breaks.

use curta_core::format::Config;
use curta_core::inference::{self, RunParams};
use curta_core::state::{MAX_PROMPT_BYTES, MAX_TEMPERATURE_Q16};
use curta_core::StateInfo;

use crate::bail;
use crate::errors::Result;

/// A run's parameters, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
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

    /// Checks the parameters against the model's configuration, as the
    /// program will (`CoreError(InvalidPrompt)`), and says which limit a
    /// value breaks.
    pub fn check(&self, config: &Config) -> Result<()> {
        if self.prompt.len() > MAX_PROMPT_BYTES {
            bail!(
                "the prompt is {} bytes; the most is {MAX_PROMPT_BYTES}",
                self.prompt.len()
            );
        }
        if let Some(at) = self.prompt.iter().position(|&b| b == 0) {
            bail!("the prompt has a zero byte at offset {at}; prompts cannot hold one");
        }
        if std::str::from_utf8(&self.prompt).is_err() {
            bail!("the prompt is not UTF-8");
        }
        if self.max_tokens == 0 || self.max_tokens > config.seq_len {
            bail!(
                "--max-tokens {} is out of range: 1 to the model's context, {}",
                self.max_tokens,
                config.seq_len
            );
        }
        if self.temperature_q16 > MAX_TEMPERATURE_Q16 {
            bail!("the temperature is above the most, 16");
        }
        Ok(())
    }
}

/// A temperature such as `0.8` as a value with 16 fractional bits (the
/// client core's `decimal_q16`); at most 16.
pub fn temperature_q16(text: &str) -> Result<u32> {
    if text.starts_with('-') {
        bail!("--temperature {text} is below zero: it is 0 (the likeliest token) to 16");
    }
    let Some(q16) = curta_core::client::params::decimal_q16(text) else {
        bail!("--temperature {text:?} is not a decimal number such as 0.8");
    };
    if q16 > MAX_TEMPERATURE_Q16 as u64 {
        bail!("--temperature {text} is above the most, 16");
    }
    Ok(q16 as u32)
}

/// Refuses a run whose prompt and max tokens do not fit the model's
/// context, with the numbers: the core's own tokenizer over section zero
/// (`zero`) finds it as the chain would, at the end of tokenizing, after
/// the run's rent and escrow were locked.
pub fn check_context(config: Config, zero: &[u8], params: &RunParams) -> Result<()> {
    // The prompt's tokens once tokenized for a run of `max_tokens`: the
    // core refuses a run past the context at the end of tokenizing.
    let tokenize = |max_tokens: u32| -> Result<u32, curta_core::Error> {
        let size = curta_core::state_size(config, params.prompt.len(), max_tokens)?;
        let mut state = curta_core::state::StateBuffer::new(size);
        let (prompt, t, seed) = (params.prompt, params.temperature_q16, params.seed);
        curta_core::init_state(config, &mut state, prompt, max_tokens, t, seed)?;
        let input = inference::TurnInput {
            config,
            metadata: zero,
            sections: &[],
            allowance: curta_core::planner::CHARGES.allowance,
        };
        while StateInfo::read(&state)?.phase < curta_core::Phase::Embedding {
            inference::turn_with(&input, None, &mut state)?;
        }
        Ok(StateInfo::read(&state)?.prompt_tokens)
    };
    if tokenize(params.max_tokens) != Err(curta_core::Error::ContextExceeded) {
        return Ok(());
    }
    // A run of one token always fits: it gives the count for the message.
    let tokens = tokenize(1)?;
    let context = config.seq_len;
    bail!(
        "the prompt is {tokens} tokens and --max-tokens is {}: {} positions, past the model's \
         context of {context}; give --max-tokens {} at most (nothing was sent)",
        params.max_tokens,
        tokens + params.max_tokens - 1,
        (context + 1).saturating_sub(tokens)
    )
}

/// A temperature with 16 fractional bits, as a decimal for display.
pub fn temperature_text(q16: u32) -> String {
    let value = q16 as f64 / 65_536.0;
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::convert::TINY;

    #[test]
    fn temperatures() {
        assert_eq!(temperature_q16("0").unwrap(), 0);
        assert_eq!(temperature_q16("0.8").unwrap(), 52_429);
        assert_eq!(temperature_q16("1").unwrap(), 65_536);
        assert_eq!(temperature_q16(".5").unwrap(), 32_768);
        assert_eq!(temperature_q16("16").unwrap(), 16 << 16);
        assert!(temperature_q16("16.1")
            .unwrap_err()
            .message()
            .contains("above the most, 16"));
        assert!(temperature_q16("-1").is_err());
        assert!(temperature_q16("hot").is_err());
        assert_eq!(temperature_text(52_429), "0.8");
        assert_eq!(temperature_text(0), "0");
    }

    #[test]
    fn parameters_name_the_limit_they_break() {
        let ok = Params {
            prompt: b"Once upon a time".to_vec(),
            max_tokens: TINY.seq_len,
            temperature_q16: 0,
            seed: 0,
        };
        ok.check(&TINY).unwrap();
        let e = Params {
            max_tokens: TINY.seq_len + 1,
            ..ok.clone()
        }
        .check(&TINY)
        .unwrap_err();
        assert_eq!(
            e.message(),
            format!(
                "--max-tokens {} is out of range: 1 to the model's context, {}",
                TINY.seq_len + 1,
                TINY.seq_len
            )
        );
        let e = Params {
            prompt: vec![b'a'; 1025],
            ..ok.clone()
        }
        .check(&TINY)
        .unwrap_err();
        assert_eq!(e.message(), "the prompt is 1025 bytes; the most is 1024");
        let e = Params {
            prompt: b"a\0b".to_vec(),
            ..ok
        }
        .check(&TINY)
        .unwrap_err();
        assert!(e.message().contains("zero byte at offset 1"));
    }
}
