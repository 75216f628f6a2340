//! Run parameters as people type them, and the checks they pass before
//! anything is sent, in the words every client prints.

use crate::format::{Config, MAX_ACCOUNT_LEN};
use crate::inference::{self, RunParams, TurnInput};
use crate::state::{StateBuffer, MAX_PROMPT_BYTES, MAX_TEMPERATURE_Q16};
use crate::StateInfo;
use std::format;
use std::string::{String, ToString};

/// A decimal temperature such as `0.8` with 16 fractional bits, rounded to
/// nearest (ties up), in integers so every platform agrees: at most 6 whole
/// digits and 12 decimals; `None` for anything else (a sign, an exponent,
/// no digits). The core refuses a run above 16 (`MAX_TEMPERATURE_Q16`).
pub fn decimal_q16(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = whole
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits
        || whole.len() > 6
        || fraction.len() > 12
    {
        return None;
    }
    // In u128: 18 digits times 2^17 pass u64.
    let scale = 10u128.pow(fraction.len() as u32);
    let numerator =
        whole.parse::<u128>().unwrap_or(0) * scale + fraction.parse::<u128>().unwrap_or(0);
    Some(((numerator * 65_536 * 2 + scale) / (2 * scale)) as u64)
}

/// A temperature as typed, with 16 fractional bits: 0 to 16.
pub fn temperature(text: &str) -> Result<u32, Refusal> {
    if text.starts_with('-') {
        return Err(Refusal::NegativeTemperature(text.into()));
    }
    let q16 = decimal_q16(text).ok_or_else(|| Refusal::NotDecimal(text.into()))?;
    if q16 > MAX_TEMPERATURE_Q16 as u64 {
        return Err(Refusal::Temperature(text.into()));
    }
    Ok(q16 as u32)
}

/// A temperature with 16 fractional bits, as a decimal with at most four
/// places (52,429 is `0.8`).
pub fn temperature_text(q16: u32) -> String {
    let text = format!("{:.4}", q16 as f64 / 65_536.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What a run's parameters must be for a model's configuration, checked
/// without its weights: the prompt's bytes, max tokens and the
/// temperature (the program refuses the rest with `InvalidPrompt`).
pub fn check(config: &Config, p: &RunParams) -> Result<(), Refusal> {
    if p.prompt.len() > MAX_PROMPT_BYTES {
        return Err(Refusal::PromptTooLong(p.prompt.len()));
    }
    if let Some(at) = p.prompt.iter().position(|&b| b == 0) {
        return Err(Refusal::ZeroByte(at));
    }
    if core::str::from_utf8(p.prompt).is_err() {
        return Err(Refusal::NotUtf8);
    }
    if p.max_tokens == 0 || p.max_tokens > config.seq_len {
        let (given, context) = (p.max_tokens, config.seq_len);
        return Err(Refusal::MaxTokens { given, context });
    }
    if p.temperature_q16 > MAX_TEMPERATURE_Q16 {
        return Err(Refusal::Temperature(temperature_text(p.temperature_q16)));
    }
    fits_account(config, p)
}

/// The run account's length for these parameters: its header and state.
fn run_account_len(config: &Config, prompt_len: usize, max_tokens: u32) -> Result<usize, Refusal> {
    let size = crate::state_size(*config, prompt_len, max_tokens).map_err(Refusal::Core)?;
    Ok(crate::protocol::run::HEADER_LEN + size)
}

/// Whether the run's account fits the most an account may hold
/// (`MAX_ACCOUNT_LEN`): the key/value cache grows with every position, so
/// a large model's run must be short.
fn fits_account(config: &Config, p: &RunParams) -> Result<(), Refusal> {
    let len = run_account_len(config, p.prompt.len(), p.max_tokens)?;
    if len <= MAX_ACCOUNT_LEN {
        return Ok(());
    }
    // The most max tokens that fit, by bisection: the length grows with them.
    let fits = |m: u32| run_account_len(config, p.prompt.len(), m).map(|l| l <= MAX_ACCOUNT_LEN);
    let (mut lo, mut hi) = (0, p.max_tokens);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match fits(mid)? {
            true => lo = mid,
            false => hi = mid - 1,
        }
    }
    Err(Refusal::AccountTooLarge {
        len,
        prompt_len: p.prompt.len(),
        max_tokens_that_fit: lo,
    })
}

/// `check`, then the prompt tokenized with section zero as the run's first
/// turns will: refuses a prompt section zero cannot tokenize. The context
/// refuses nothing: a run that reaches it completes there, its finish
/// reason the context (a prompt whose tokens alone pass it, with no token
/// generated), so every run `check` passes opens and finishes. The turns
/// are planned with the charge table section zero's flags name.
pub fn fits_context(config: Config, zero: &[u8], p: &RunParams) -> Result<(), Refusal> {
    check(&config, p)?;
    let config = config.with_flags(crate::format::flags_of(zero));
    let tokenize = || -> Result<(), crate::Error> {
        let size = crate::state_size(config, p.prompt.len(), p.max_tokens)?;
        let mut state = StateBuffer::new(size);
        let (t, seed) = (p.temperature_q16, p.seed);
        crate::init_state(config, &mut state, p.prompt, p.max_tokens, t, seed)?;
        let input = TurnInput {
            config,
            metadata: zero,
            sections: &[],
            allowance: crate::planner::CHARGES.allowance,
        };
        while StateInfo::read(&state)?.phase.is_tokenizing() {
            inference::turn_with(&input, None, &mut state)?;
        }
        Ok(())
    };
    tokenize().map_err(Refusal::Core)
}

/// Why a run's parameters are refused, before anything is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The prompt's length in bytes, above `MAX_PROMPT_BYTES`.
    PromptTooLong(usize),
    /// The offset of a zero byte in the prompt.
    ZeroByte(usize),
    NotUtf8,
    /// Max tokens outside 1 to the model's context.
    MaxTokens {
        given: u32,
        context: u32,
    },
    /// A temperature above 16, as typed.
    Temperature(String),
    NegativeTemperature(String),
    NotDecimal(String),
    /// The run account would be `len` bytes, past `MAX_ACCOUNT_LEN`; at
    /// most `max_tokens_that_fit` (0: none) fit beside the prompt.
    AccountTooLarge {
        len: usize,
        prompt_len: usize,
        max_tokens_that_fit: u32,
    },
    /// Section zero could not tokenize the prompt.
    Core(crate::Error),
}

/// How a client names the parameters: the CLI by its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// `--max-tokens`, `--temperature`.
    Flags,
    /// `max tokens`, `temperature`.
    Words,
}

impl Refusal {
    /// The refusal in a sentence.
    pub fn words(&self, spelling: Spelling) -> String {
        let (max_tokens, temperature) = match spelling {
            Spelling::Flags => ("--max-tokens", "--temperature"),
            Spelling::Words => ("max tokens", "temperature"),
        };
        match self {
            Refusal::PromptTooLong(len) => {
                format!("the prompt is {len} bytes: at most {MAX_PROMPT_BYTES}")
            }
            Refusal::ZeroByte(at) => {
                format!("the prompt has a zero byte at offset {at}: prompts cannot hold one")
            }
            Refusal::NotUtf8 => "the prompt is not UTF-8".into(),
            Refusal::MaxTokens { given, context } => {
                format!("{max_tokens} {given} is out of range: 1 to the model's context, {context}")
            }
            Refusal::Temperature(t) => format!("{temperature} {t} is above the most, 16"),
            Refusal::NegativeTemperature(t) => {
                format!("{temperature} {t} is below zero: it is 0 (the likeliest token) to 16")
            }
            Refusal::NotDecimal(t) => {
                format!("{temperature} {t:?} is not a decimal number such as 0.8")
            }
            Refusal::AccountTooLarge {
                len,
                prompt_len,
                max_tokens_that_fit,
            } => {
                let past = format!(
                    "the run's account would be {len} bytes, past the {MAX_ACCOUNT_LEN} an account \
                     may hold (its key/value cache grows with every position)"
                );
                match max_tokens_that_fit {
                    0 => format!(
                        "{past}; even one token does not fit beside a prompt of {prompt_len} \
                         bytes: shorten the prompt (nothing was sent)"
                    ),
                    m => format!(
                        "{past}; {} positions fit with this prompt (its bytes, {max_tokens} and \
                         one): give {max_tokens} {m} at most, or shorten the prompt (nothing was \
                         sent)",
                        *prompt_len as u64 + *m as u64 + 1
                    ),
                }
            }
            Refusal::Core(e) => format!("section zero cannot tokenize the prompt: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::TINY;

    #[test]
    fn temperatures_are_refused_in_words() {
        assert_eq!(temperature("0.8"), Ok(52_429));
        assert_eq!(temperature("16"), Ok(16 << 16));
        let words = |t: &str| temperature(t).unwrap_err().words(Spelling::Flags);
        assert_eq!(words("16.1"), "--temperature 16.1 is above the most, 16");
        assert_eq!(
            words("999999.999999999999"),
            "--temperature 999999.999999999999 is above the most, 16"
        );
        assert!(words("-1").contains("below zero"));
        assert!(words("hot").contains("not a decimal number"));
        assert_eq!(temperature_text(52_429), "0.8");
        assert_eq!(temperature_text(0), "0");
    }

    #[test]
    fn parameters_name_the_limit_they_break() {
        let prompt = b"Once upon a time".to_vec();
        let ok = RunParams {
            prompt: &prompt,
            max_tokens: TINY.seq_len,
            temperature_q16: 0,
            seed: 0,
        };
        assert_eq!(check(&TINY, &ok), Ok(()));
        let too_many = RunParams {
            max_tokens: TINY.seq_len + 1,
            ..ok
        };
        let e = check(&TINY, &too_many).unwrap_err();
        let (given, context) = (TINY.seq_len + 1, TINY.seq_len);
        assert_eq!(
            e.words(Spelling::Flags),
            format!("--max-tokens {given} is out of range: 1 to the model's context, {context}")
        );
        assert_eq!(
            e.words(Spelling::Words),
            format!("max tokens {given} is out of range: 1 to the model's context, {context}")
        );
        let long = vec![b'a'; 1025];
        let e = check(
            &TINY,
            &RunParams {
                prompt: &long,
                ..ok
            },
        )
        .unwrap_err();
        assert_eq!(
            e.words(Spelling::Words),
            "the prompt is 1025 bytes: at most 1024"
        );
        let zero = RunParams {
            prompt: b"a\0b",
            ..ok
        };
        assert_eq!(check(&TINY, &zero), Err(Refusal::ZeroByte(1)));
        let hot = RunParams {
            temperature_q16: MAX_TEMPERATURE_Q16 + 1,
            ..ok
        };
        assert!(matches!(check(&TINY, &hot), Err(Refusal::Temperature(_))));
    }

    #[test]
    fn a_run_must_fit_an_account() {
        use crate::convert::{STORIES110M, STORIES15M, STORIES42M};
        let prompt = b"Once upon a time".to_vec();
        let run = |config: &Config, max_tokens| {
            check(
                config,
                &RunParams {
                    prompt: &prompt,
                    max_tokens,
                    temperature_q16: 0,
                    seed: 0,
                },
            )
        };
        // stories15M's whole context fits.
        assert_eq!(run(&STORIES15M, STORIES15M.seq_len), Ok(()));
        // stories110M's does not: the most that fits, and not one more.
        let Err(Refusal::AccountTooLarge {
            len,
            max_tokens_that_fit: m,
            ..
        }) = run(&STORIES110M, 1_000)
        else {
            panic!("a 1,000-token run of stories110M fits an account");
        };
        assert!(len > MAX_ACCOUNT_LEN);
        // 73,728 bytes of cache a position: 137 positions with this prompt.
        assert_eq!(m, 120);
        assert_eq!(run(&STORIES110M, m), Ok(()));
        let fits_42m = match run(&STORIES42M, 1_000) {
            Err(Refusal::AccountTooLarge {
                max_tokens_that_fit,
                ..
            }) => max_tokens_that_fit,
            other => panic!("stories42M, 1,000 tokens: {other:?}"),
        };
        assert_eq!(fits_42m, 292);
        let over = run(&STORIES110M, m + 1).unwrap_err();
        assert_eq!(
            over.words(Spelling::Flags),
            format!(
                "the run's account would be {} bytes, past the 10485760 an account may hold (its \
                 key/value cache grows with every position); {} positions fit with this prompt \
                 (its bytes, --max-tokens and one): give --max-tokens {m} at most, or shorten \
                 the prompt (nothing was sent)",
                run_account_len(&STORIES110M, prompt.len(), m + 1).unwrap(),
                prompt.len() + m as usize + 1
            )
        );
    }

    #[test]
    fn a_run_past_the_context_is_not_refused() {
        use crate::convert::{convert, open_artifact, synthetic_checkpoint, synthetic_tokenizer};
        let ck = synthetic_checkpoint(&TINY, 3).unwrap();
        let a = convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap();
        let m = open_artifact(&a).unwrap();
        let p = |prompt: &'static [u8], max_tokens| RunParams {
            prompt,
            max_tokens,
            temperature_q16: 0,
            seed: 0,
        };
        // A prompt and the whole context, and a prompt whose tokens alone
        // pass it: both run to the context (`open_run` takes them).
        assert_eq!(
            fits_context(m.config, m.bytes, &p(b"ab", TINY.seq_len)),
            Ok(())
        );
        assert_eq!(
            fits_context(m.config, m.bytes, &p(b"abcdefghijkl", 1)),
            Ok(())
        );
        // What `check` refuses is still refused.
        assert!(matches!(
            fits_context(m.config, m.bytes, &p(b"ab", TINY.seq_len + 1)),
            Err(Refusal::MaxTokens { .. })
        ));
    }

    #[test]
    fn temperatures_round_to_nearest_in_integers() {
        assert_eq!(decimal_q16("0.8"), Some(52_429));
        assert_eq!(decimal_q16("1"), Some(65_536));
        assert_eq!(decimal_q16(".5"), Some(32_768));
        assert_eq!(decimal_q16("16"), Some(16 << 16));
        assert_eq!(decimal_q16("0.000008"), Some(1));
        assert_eq!(decimal_q16("0.000007"), Some(0));
        assert_eq!(decimal_q16("999999.999999999999"), Some(65_536_000_000));
        for bad in [
            "",
            ".",
            "-1",
            "1e3",
            "0.8.1",
            "1234567",
            "0.1234567890123",
            " 1",
        ] {
            assert_eq!(decimal_q16(bad), None, "{bad:?}");
        }
    }
}
