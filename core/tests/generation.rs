//! Generation on the real stories260K checkpoint: the reference text, runs
//! resumed from their state bytes alone, sampling reproducible from a seed.

mod common;

use common::*;
use curta_core::sha256::sha256;
use curta_core::{output_text, output_tokens, StateInfo};

const PROMPT: &[u8] = b"Once upon a time";

#[test]
fn reference_run_generates_what_float_llama2c_does() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, PROMPT, 12, 0, 0);
    let turns = run_to_end(artifact, &m, &mut state);
    assert_eq!(turns, 20);
    assert_eq!(
        output_text(m.config, &state),
        b", there was a little girl named Lily. She"
    );
    assert_eq!(
        u32s(output_tokens(m.config, &state)),
        [432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338]
    );
    let info = StateInfo::read(&state).unwrap();
    assert!(info.complete);
    assert_eq!((info.generated, info.turns), (12, 20));
}

/// Runs a state to its end, moving it into a fresh buffer before every turn:
/// everything a turn needs must be in the bytes.
fn run_resumed(prompt: &[u8], max: u32, temperature: u32, seed: u64) -> Vec<u8> {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut bytes = new_state(m.config, prompt, max, temperature, seed).to_vec();
    while !StateInfo::read(&bytes).unwrap().complete {
        let mut state = Aligned::from_bytes(&bytes);
        step(artifact, &m, &mut state);
        bytes = state.to_vec();
    }
    bytes
}

fn run_straight(prompt: &[u8], max: u32, temperature: u32, seed: u64) -> Vec<u8> {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, prompt, max, temperature, seed);
    run_to_end(artifact, &m, &mut state);
    state.to_vec()
}

#[test]
fn a_run_resumed_from_its_bytes_ends_in_the_same_bytes() {
    for (max, temperature, seed) in [(12, 0, 0), (24, 52_429, 7)] {
        let straight = run_straight(PROMPT, max, temperature, seed);
        assert_eq!(
            sha256(&run_resumed(PROMPT, max, temperature, seed)),
            sha256(&straight)
        );
    }
}

#[test]
fn sampling_is_reproducible_from_the_seed() {
    let m = metadata(stories260k());
    let t08 = 52_429; // 0.8 with 16 fractional bits
    let a = run_straight(PROMPT, 40, t08, 42);
    let b = run_straight(PROMPT, 40, t08, 42);
    assert_eq!(a, b);
    let c = run_straight(PROMPT, 40, t08, 43);
    assert_ne!(output_tokens(m.config, &a), output_tokens(m.config, &c));
    // Seed zero starts the generator at the golden-ratio constant.
    let zero = run_straight(PROMPT, 40, t08, 0);
    let constant = run_straight(PROMPT, 40, t08, curta_core::state::ZERO_SEED);
    assert_eq!(
        output_tokens(m.config, &zero),
        output_tokens(m.config, &constant)
    );
}

#[test]
fn the_second_real_checkpoint_runs_as_quoted() {
    // aidreams260K: 4 layers, 4 heads of 16, no grouped keys, context 128.
    let artifact = curta_core::convert::convert(
        &model_file("aidreams260K.bin"),
        &model_file("tok512-aidreams.bin"),
    )
    .unwrap();
    let m = metadata(&artifact);
    assert_eq!(
        (m.config.n_heads, m.config.n_kv_heads, m.config.seq_len),
        (4, 4, 128)
    );
    let mut scratch = Aligned::new(curta_core::state_size(m.config, PROMPT.len(), 30).unwrap());
    let quote =
        curta_core::inference::quote_turns(m.config, m.bytes, PROMPT, 30, 0, &mut scratch).unwrap();
    let mut state = new_state(m.config, PROMPT, 30, 0, 0);
    let turns = run_to_end(&artifact, &m, &mut state);
    let generated = StateInfo::read(&state).unwrap().generated;
    assert!(generated == 30 && turns == quote || generated < 30 && turns <= quote);
    assert!(!output_text(m.config, &state).is_empty());
}

#[test]
fn an_opening_or_end_token_completes_the_run_early() {
    // stories260K closes a story with token 1 well inside its context.
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, b"", 400, 1 << 16, 1);
    run_to_end(artifact, &m, &mut state);
    let tokens = u32s(output_tokens(m.config, &state));
    let info = StateInfo::read(&state).unwrap();
    assert!(info.complete);
    assert!(tokens.len() < 400);
    assert!(matches!(tokens.last(), Some(1) | Some(2)));
    assert_eq!(info.generated as usize, tokens.len());
}

#[test]
fn the_space_after_the_opening_token_is_dropped() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, b"", 4, 0, 0);
    run_to_end(artifact, &m, &mut state);
    assert_eq!(output_text(m.config, &state), b"Once upon a time");
}
