//! Drawing a run's parameters: prompts from the golden runs or the input,
//! max tokens, temperatures and seeds, mostly in range.

use curta_core::format::Config;
use curta_core::inference;
use curta_core::planner::CHARGES;
use curta_core::state::{self, StateBuffer, MAX_TEMPERATURE_Q16};

use crate::source::Source;

/// Prompts of the golden runs (golden/manifest.json), and pieces that
/// SMALL's tokenizer merges.
pub const PROMPTS: [&str; 8] = [
    "",
    "Once upon a time",
    "Lily saw a café, a naïve cat, 漢字 and ü!",
    "the and",
    " the",
    "a",
    "ü漢",
    "Once",
];

/// A run's parameters.
#[derive(Clone, Debug)]
pub struct Params {
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
}

impl Params {
    /// A new run's state with these parameters, or `None` where the core
    /// refuses them.
    pub fn open(&self, config: Config) -> Option<StateBuffer> {
        let size = state::state_size(config, self.prompt.len(), self.max_tokens).ok()?;
        let mut state = StateBuffer::new(size);
        inference::init_state(
            config,
            &mut state,
            &self.prompt,
            self.max_tokens,
            self.temperature_q16,
            self.seed,
        )
        .ok()?;
        Some(state)
    }
}

/// A prompt: a golden one (cut at a fuzzed length, which may split a
/// character), or the input's bytes.
pub fn prompt(s: &mut Source) -> Vec<u8> {
    match s.below(4) {
        0 | 1 => {
            let p = PROMPTS[s.below(PROMPTS.len())].as_bytes();
            let cut = if s.bool() {
                p.len()
            } else {
                s.below(p.len() + 1)
            };
            p[..cut].to_vec()
        }
        2 => s.string(12).to_vec(),
        _ => s.string(40).to_vec(),
    }
}

/// Parameters for `config`: max tokens mostly inside the context, the
/// temperature mostly zero or in range.
pub fn params(config: &Config, s: &mut Source) -> Params {
    let prompt = prompt(s);
    params_for(prompt, config, s)
}

/// `params`, for a prompt drawn already.
pub fn params_for(prompt: Vec<u8>, config: &Config, s: &mut Source) -> Params {
    let max_tokens = match s.below(8) {
        6 => s.u32(),
        7 => 0,
        _ => 1 + s.below(config.seq_len as usize) as u32,
    };
    let temperature_q16 = match s.below(8) {
        0..=2 => 0,
        3 => 52_429,
        4 => s.u32(),
        _ => s.u32() % (MAX_TEMPERATURE_Q16 + 1),
    };
    let seed = if s.bool() { s.u8() as u64 } else { s.u64() };
    Params {
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    }
}

/// A legal allowance: the largest (the default), the smallest, or one
/// between.
pub fn allowance(s: &mut Source) -> u32 {
    let (lo, hi) = (CHARGES.min_allowance, CHARGES.allowance);
    match s.below(4) {
        0 => hi,
        1 => lo,
        _ => lo + s.u32() % (hi - lo + 1),
    }
}
