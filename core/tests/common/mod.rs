//! Shared by the integration tests: the real model files and the artifacts
//! converted from them, each built once per test binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use curta_core::convert::{convert, convert_explained, synthetic_checkpoint, STORIES15M};
use curta_core::format::ChargeTable;
use curta_core::{planner, state_size, turn, Config, Metadata, StateInfo, WeightSection};

/// `CURTA_MODELS`, else the `models/` folder `scripts/fetch-models.sh` fills.
pub fn models_dir() -> PathBuf {
    match std::env::var("CURTA_MODELS") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"),
    }
}

pub fn model_file(name: &str) -> Vec<u8> {
    let path = models_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `make models` or scripts/fetch-models.sh, or set CURTA_MODELS)",
            path.display()
        )
    })
}

/// stories260K converted with its tokenizer.
pub fn stories260k() -> &'static [u8] {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| convert(&model_file("stories260K.bin"), &model_file("tok512.bin")).unwrap())
}

/// The stories15M shape: synthetic weights (seed 1), llama2's real tokenizer.
pub fn stories15m() -> &'static [u8] {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| {
        let checkpoint = synthetic_checkpoint(&STORIES15M, 1).unwrap();
        convert(&checkpoint, &model_file("tokenizer.bin")).unwrap()
    })
}

/// stories260K planned with the measured charge table.
pub fn stories260k_measured() -> &'static [u8] {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| {
        let (checkpoint, tokenizer) = (model_file("stories260K.bin"), model_file("tok512.bin"));
        convert_explained(&checkpoint, &tokenizer, ChargeTable::Measured).unwrap()
    })
}

/// The stories15M shape planned with the measured charge table.
pub fn stories15m_measured() -> &'static [u8] {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| {
        let checkpoint = synthetic_checkpoint(&STORIES15M, 1).unwrap();
        let tokenizer = model_file("tokenizer.bin");
        convert_explained(&checkpoint, &tokenizer, ChargeTable::Measured).unwrap()
    })
}

pub fn metadata(artifact: &[u8]) -> Metadata<'_> {
    let zero = curta_core::read_u64(artifact, curta_core::format::SECTION_TABLE + 8) as usize;
    Metadata::new(&artifact[..zero]).unwrap()
}

/// A zeroed buffer aligned to eight, as a state must be.
pub use curta_core::state::StateBuffer as Aligned;

/// The sections the next turn's plan names, sliced from the artifact.
pub fn plan_sections<'a>(artifact: &'a [u8], m: &Metadata, state: &[u8]) -> Vec<WeightSection<'a>> {
    let plan = planner::plan_turn(m.config, state).unwrap();
    curta_core::inference::plan_sections(artifact, m, &plan)[..plan.section_count].to_vec()
}

/// A fresh state for a run.
pub fn new_state(
    config: Config,
    prompt: &[u8],
    max_tokens: u32,
    temperature_q16: u32,
    seed: u64,
) -> Aligned {
    let mut state = Aligned::new(state_size(config, prompt.len(), max_tokens).unwrap());
    curta_core::init_state(
        config,
        &mut state,
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    )
    .unwrap();
    state
}

/// Runs one turn with the sections its plan names.
pub fn step(artifact: &[u8], m: &Metadata, state: &mut [u8]) -> curta_core::TurnResult {
    let sections = plan_sections(artifact, m, state);
    turn(m.config, state, m.bytes, &sections).unwrap()
}

/// Runs a state to completion; returns the count of turns.
pub fn run_to_end(artifact: &[u8], m: &Metadata, state: &mut [u8]) -> u64 {
    let mut turns = 0;
    while !StateInfo::read(state).unwrap().complete {
        step(artifact, m, state);
        turns += 1;
    }
    turns
}

pub fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A small deterministic generator for the tests' random inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
