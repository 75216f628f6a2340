//! `make bench`: native tokens per second and matrix multiply-accumulates
//! per second, turn by turn exactly as the chain runs them, for stories260K
//! (the longest run its context allows) and the stories15M shape (synthetic
//! weights, llama2's tokenizer). A benchmark that prints numbers, not a test.

use std::time::Instant;

use curta_core::convert::{convert, synthetic_checkpoint, STORIES15M};
use curta_core::format::{Config, LayerMatrix, Metadata, SECTION_TABLE};
use curta_core::inference::plan_sections;
use curta_core::state::StateBuffer;
use curta_core::{init_state, planner, read_u64, state_size, turn, StateInfo};

/// `CURTA_MODELS`, else the `models/` folder `scripts/fetch-models.sh` fills.
fn models_dir() -> std::path::PathBuf {
    match std::env::var("CURTA_MODELS") {
        Ok(dir) => dir.into(),
        Err(_) => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"),
    }
}

fn read(name: &str) -> Vec<u8> {
    let path = models_dir().join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models.sh)", path.display()))
}

/// Matrix multiply-accumulates of one position, with or without the classifier.
fn matrix_macs(c: &Config, classifier: bool) -> u64 {
    let layer: u64 = LayerMatrix::ALL
        .iter()
        .map(|m| {
            let (r, k) = m.shape(c);
            r as u64 * k as u64
        })
        .sum();
    c.n_layers as u64 * layer
        + if classifier {
            c.vocab_size as u64 * c.dim as u64
        } else {
            0
        }
}

fn bench(name: &str, artifact: &[u8], prompt: &[u8], max_tokens: u32) {
    let zero = read_u64(artifact, SECTION_TABLE + 8) as usize;
    let m = Metadata::new(&artifact[..zero]).unwrap();
    let size = state_size(m.config, prompt.len(), max_tokens).unwrap();
    let mut state = StateBuffer::new(size);
    let state = &mut state[..];
    init_state(m.config, state, prompt, max_tokens, 0, 0).unwrap();
    let start = Instant::now();
    let mut turns = 0u64;
    while !StateInfo::read(state).unwrap().complete {
        let plan = planner::plan_turn(m.config, state).unwrap();
        let sections = plan_sections(artifact, &m, &plan);
        turn(m.config, state, m.bytes, &sections).unwrap();
        turns += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    let info = StateInfo::read(state).unwrap();
    let positions = info.prompt_tokens as u64 + info.generated as u64 - 1;
    let c = &m.config;
    let macs = positions * matrix_macs(c, false)
        + info.generated as u64 * c.vocab_size as u64 * c.dim as u64;
    // Attention: at position p, scores and weighted values over p + 1
    // positions, for every head element of every layer.
    let attention: u64 = (0..positions)
        .map(|p| 2 * (p + 1) * c.dim as u64 * c.n_layers as u64)
        .sum();
    println!(
        "{name}: {} tokens, {positions} positions, {turns} turns in {seconds:.3} s\n  {:.1} tokens/s, {:.3} G MAC/s ({:.3} G in matrices, {:.3} G in attention)",
        info.generated,
        info.generated as f64 / seconds,
        (macs + attention) as f64 / seconds / 1e9,
        macs as f64 / seconds / 1e9,
        attention as f64 / seconds / 1e9,
    );
}

fn main() {
    let s260 = convert(&read("stories260K.bin"), &read("tok512.bin")).unwrap();
    bench(
        "stories260K, empty prompt, 512 tokens (full context)",
        &s260,
        b"",
        512,
    );
    let s15 = convert(
        &synthetic_checkpoint(&STORIES15M, 1).unwrap(),
        &read("tokenizer.bin"),
    )
    .unwrap();
    bench(
        "stories15M shape, \"Once upon a time\", 252 tokens (full context)",
        &s15,
        b"Once upon a time",
        252,
    );
}
