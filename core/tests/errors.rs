//! Each of the eight core errors, raised by each condition `docs/spec.md`
//! lists for it (`ContextExceeded`, kept for its number, by none); a turn
//! refused for a bad state, missing weights or an allowance too small
//! writes nothing.

mod common;

use curta_core::convert::{synthetic_tokenizer, TINY};

use common::*;
use curta_core::convert::convert;
use curta_core::format::{header, SECTION_TABLE};
use curta_core::inference::{turn_with, TurnInput};
use curta_core::planner::{plan_turn_with, CHARGES};
use curta_core::state::{field, Phase, StateLayout};
use curta_core::{
    init_state, planner, state_size, turn, Config, Error, Metadata, StateInfo, WeightSection,
};

const PROMPT: &[u8] = b"Once upon a time";

/// Runs a turn that must fail and checks it wrote nothing.
fn refused(input: &TurnInput, state: &mut [u8]) -> Error {
    let before = state.to_vec();
    let e = turn_with(input, None, state).unwrap_err();
    assert!(before == state, "a refused turn ({e:?}) changed the state");
    e
}

fn input<'a>(m: &Metadata<'a>, sections: &'a [WeightSection<'a>], allowance: u32) -> TurnInput<'a> {
    TurnInput {
        config: m.config,
        metadata: m.bytes,
        sections,
        allowance,
    }
}

/// A stories260K state that has run `turns` turns.
fn state_after(turns: usize) -> Aligned {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, PROMPT, 12, 0, 0);
    for _ in 0..turns {
        step(artifact, &m, &mut state);
    }
    state
}

#[test]
fn invalid_config() {
    let good = metadata(stories260k()).config;
    let variants: [fn(&mut Config); 9] = [
        |c| c.dim = 0,
        |c| c.hidden_dim = 0,
        |c| c.n_layers = 0,
        |c| c.n_heads = 3,      // does not divide 64
        |c| c.n_kv_heads = 3,   // does not divide 8 heads
        |c| c.n_kv_heads = 16,  // more than the heads
        |c| c.n_heads = 64,     // head size 1: no rotary pairs
        |c| c.vocab_size = 258, // no room for the byte tokens
        |c| c.seq_len = 0,
    ];
    for change in variants {
        let mut c = good;
        change(&mut c);
        assert_eq!(state_size(c, 16, 12), Err(Error::InvalidConfig), "{c:?}");
        assert_eq!(Config::read(&c.to_bytes()), Err(Error::InvalidConfig));
    }
    assert_eq!(
        Config::read(&good.to_bytes()[..27]),
        Err(Error::InvalidConfig)
    );

    // A turn allowance outside 22,096..=1,350,000.
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = state_after(1);
    let sections = plan_sections(artifact, &m, &state);
    for allowance in [0, 22_095, 1_350_001, u32::MAX] {
        assert_eq!(
            refused(&input(&m, &sections, allowance), &mut state),
            Error::InvalidConfig
        );
        assert_eq!(
            plan_turn_with(m.config, &state, allowance),
            Err(Error::InvalidConfig)
        );
    }
    // Metadata of another configuration.
    let mut other = input(&m, &sections, CHARGES.allowance);
    other.config.seq_len = 256;
    assert_eq!(refused(&other, &mut state), Error::InvalidConfig);
}

#[test]
fn an_allowance_that_cannot_fit_one_chunk_fails_clearly() {
    // At the smallest allowance, finishing the maximum pass (4,521 units
    // with its chunk) never fits: the run goes as far as it can, then stops
    // with InvalidConfig instead of succeeding without progress.
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, PROMPT, 2, 0, 0);
    let mut turns = 0;
    // Attention normalization, 4,732 units with its chunk, is the first
    // chunk that does not fit the 4,096 left after the turn's 18,000.
    let error = loop {
        let plan = planner::plan_turn_with(m.config, &state, CHARGES.min_allowance);
        let sections = match plan {
            Ok(plan) => plan.sections[..plan.section_count]
                .iter()
                .map(|&i| {
                    let o = m.section_offset(i as usize);
                    WeightSection {
                        index: i,
                        bytes: &artifact[o..o + m.section_len(i as usize)],
                    }
                })
                .collect(),
            Err(_) => vec![],
        };
        let before = state.to_vec();
        match turn_with(
            &input(&m, &sections, CHARGES.min_allowance),
            None,
            &mut state,
        ) {
            Ok(r) => assert!(r.work <= CHARGES.min_allowance),
            Err(e) => {
                assert!(before == *state);
                break e;
            }
        }
        turns += 1;
    };
    assert_eq!(error, Error::InvalidConfig);
    assert!(turns >= 2);
    assert_eq!(StateInfo::read(&state).unwrap().phase, Phase::AttentionNorm);
}

#[test]
fn invalid_format() {
    let artifact = stories260k();
    let zero = metadata(artifact).bytes.to_vec();
    let broken = |at: usize, bytes: &[u8]| {
        let mut z = zero.clone();
        z[at..at + bytes.len()].copy_from_slice(bytes);
        Metadata::new(&z).err()
    };
    assert_eq!(broken(0, b"CURTAW02"), Some(Error::InvalidFormat)); // tag
    assert_eq!(
        broken(header::VERSION, &2u32.to_le_bytes()),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        broken(header::SECTION_COUNT, &4u32.to_le_bytes()),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        broken(SECTION_TABLE + 8, &1u64.to_le_bytes()),
        Some(Error::InvalidFormat)
    ); // section zero's length
    assert_eq!(
        broken(SECTION_TABLE + 24, &7u64.to_le_bytes()),
        Some(Error::InvalidFormat)
    ); // a section's length
    assert_eq!(
        broken(header::EXP_TABLE, &u32::MAX.to_le_bytes()),
        Some(Error::InvalidFormat)
    ); // offset past the end
    assert_eq!(
        broken(header::TOKEN_SORTED, &4u32.to_le_bytes()),
        Some(Error::InvalidFormat)
    ); // inside the header
    assert_eq!(
        broken(header::TOKEN_BYTES_LEN, &u32::MAX.to_le_bytes()),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        broken(header::FLAGS, &2u32.to_le_bytes()),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        broken(header::MAX_TOKEN_LEN, &129u32.to_le_bytes()),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        Metadata::new(&zero[..100]).err(),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        Metadata::new(&zero[..zero.len() - 8]).err(),
        Some(Error::InvalidFormat)
    );

    // A turn given broken metadata refuses before writing.
    let m = metadata(artifact);
    let mut state = state_after(1);
    let sections = plan_sections(artifact, &m, &state);
    let mut bad = zero.clone();
    bad[0] = b'X';
    let bad_input = TurnInput {
        config: m.config,
        metadata: &bad,
        sections: &sections,
        allowance: CHARGES.allowance,
    };
    assert_eq!(refused(&bad_input, &mut state), Error::InvalidFormat);

    // Checkpoints and tokenizers that do not match their formats.
    let checkpoint = model_file("stories260K.bin");
    let tokenizer = model_file("tok512.bin");
    assert_eq!(
        convert(&checkpoint[..checkpoint.len() - 4], &tokenizer).err(),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        convert(&[&checkpoint[..], &[0; 4]].concat(), &tokenizer).err(),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        convert(&checkpoint[..20], &tokenizer).err(),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        convert(&checkpoint, &tokenizer[..tokenizer.len() - 1]).err(),
        Some(Error::InvalidFormat)
    );
    assert_eq!(
        convert(&checkpoint, &[&tokenizer[..], b"x"].concat()).err(),
        Some(Error::InvalidFormat)
    );
    let mut nan_score = tokenizer.clone();
    nan_score[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        convert(&checkpoint, &nan_score).err(),
        Some(Error::InvalidFormat)
    );
    let mut nan_weight = checkpoint.clone();
    nan_weight[28..32].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        convert(&nan_weight, &tokenizer).err(),
        Some(Error::InvalidFormat)
    );
    let mut negative_dim = checkpoint.clone();
    negative_dim[0..4].copy_from_slice(&(-64i32).to_le_bytes());
    assert_eq!(
        convert(&negative_dim, &tokenizer).err(),
        Some(Error::InvalidFormat)
    );
    // The tokenizer of another vocabulary size.
    assert_eq!(
        convert(&checkpoint, &model_file("tokenizer.bin")).err(),
        Some(Error::InvalidFormat)
    );
}

#[test]
fn invalid_state() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let base = state_after(3);
    let sections = plan_sections(artifact, &m, &base);
    let run = |mutate: &dyn Fn(&mut [u8])| {
        let mut state = Aligned::from_bytes(&base);
        mutate(&mut state);
        refused(&input(&m, &sections, CHARGES.allowance), &mut state)
    };
    let put =
        |at: usize, v: u32| move |s: &mut [u8]| s[at..at + 4].copy_from_slice(&v.to_le_bytes());
    assert_eq!(run(&|s| s[0] = b'X'), Error::InvalidState); // tag
    assert_eq!(run(&put(field::PHASE, 21)), Error::InvalidState);
    assert_eq!(run(&put(field::LAYER, 5)), Error::InvalidState);
    assert_eq!(run(&put(field::POSITION, 29)), Error::InvalidState);
    assert_eq!(run(&put(field::TOKEN, 512)), Error::InvalidState);
    assert_eq!(run(&put(field::MAX_TOKENS, 13)), Error::InvalidState); // size no longer matches
    assert_eq!(run(&put(field::PROMPT_LEN, 2000)), Error::InvalidState);
    assert_eq!(
        run(&put(field::TEMPERATURE, (16 << 16) + 1)),
        Error::InvalidState
    );
    assert_eq!(run(&put(field::GENERATED, 13)), Error::InvalidState);
    assert_eq!(run(&put(field::PROMPT_TOKENS, 19)), Error::InvalidState);
    let heads = m.config.n_heads;
    let attention_past_the_heads = |s: &mut [u8]| {
        put(field::PHASE, Phase::Attention as u32)(s);
        put(field::ROW, heads)(s);
    };
    assert_eq!(run(&attention_past_the_heads), Error::InvalidState);
    let stage_past_three = |s: &mut [u8]| {
        put(field::PHASE, Phase::Attention as u32)(s);
        put(field::ROW, 0)(s);
        put(field::STAGE, 4)(s);
    };
    assert_eq!(run(&stage_past_three), Error::InvalidState);
    // A prompt token past the vocabulary, refused where its position is
    // embedded (here the turn's first chunk, so nothing is written).
    let prompt_token_past_the_vocabulary = |s: &mut [u8]| {
        let at = StateLayout::new(&m.config, 16, 12).unwrap().prompt_tokens;
        put(at + 4, 512)(s);
        put(field::PHASE, Phase::Embedding as u32)(s);
        put(field::POSITION, 1)(s);
        put(field::LAYER, 0)(s);
        put(field::ROW, 0)(s);
    };
    assert_eq!(run(&prompt_token_past_the_vocabulary), Error::InvalidState);

    // The wrong size, and a buffer not aligned to eight.
    let mut longer = Aligned::new(base.len() + 8);
    longer[..base.len()].copy_from_slice(&base);
    assert_eq!(
        refused(&input(&m, &sections, CHARGES.allowance), &mut longer),
        Error::InvalidState
    );
    let mut shifted = Aligned::new(base.len() + 1);
    shifted[1..].copy_from_slice(&base);
    assert_eq!(
        refused(&input(&m, &sections, CHARGES.allowance), &mut shifted[1..]),
        Error::InvalidState
    );
    assert_eq!(
        planner::plan_turn(m.config, &shifted[1..]),
        Err(Error::InvalidState)
    );

    // A complete run.
    let mut done = new_state(m.config, PROMPT, 12, 0, 0);
    run_to_end(artifact, &m, &mut done);
    assert_eq!(
        refused(&input(&m, &sections, CHARGES.allowance), &mut done),
        Error::InvalidState
    );
    assert_eq!(
        planner::plan_turn(m.config, &done),
        Err(Error::InvalidState)
    );
    assert_eq!(StateInfo::read(&done[..100]), Err(Error::InvalidState));
}

#[test]
fn buffer_too_small() {
    let c = metadata(stories260k()).config;
    let size = state_size(c, PROMPT.len(), 12).unwrap();
    for len in [0, size - 1, size + 8] {
        let mut buffer = Aligned::new(len);
        assert_eq!(
            init_state(c, &mut buffer, PROMPT, 12, 0, 0),
            Err(Error::BufferTooSmall)
        );
        assert!(buffer.iter().all(|&b| b == 0));
    }
}

#[test]
fn missing_weights() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = state_after(1);
    let sections = plan_sections(artifact, &m, &state);
    assert!(!sections.is_empty());
    assert_eq!(
        refused(&input(&m, &[], CHARGES.allowance), &mut state),
        Error::MissingWeights
    );
    let mut renamed = sections.clone();
    renamed[0].index = 7;
    assert_eq!(
        refused(&input(&m, &renamed, CHARGES.allowance), &mut state),
        Error::MissingWeights
    );
    let mut short = sections.clone();
    short[0].bytes = &short[0].bytes[..short[0].bytes.len() - 1];
    assert_eq!(
        refused(&input(&m, &short, CHARGES.allowance), &mut state),
        Error::MissingWeights
    );
    assert_eq!(
        turn(m.config, &mut state, m.bytes, &sections).map(|_| ()),
        Ok(())
    );
}

#[test]
fn invalid_prompt() {
    let c = metadata(stories260k()).config;
    let mut buffer = Aligned::new(state_size(c, 16, 12).unwrap());
    let init = |prompt: &[u8], max: u32, temperature: u32| {
        let mut buffer =
            Aligned::new(state_size(c, prompt.len().min(1024), max.clamp(1, 512)).unwrap());
        init_state(c, &mut buffer, prompt, max, temperature, 0)
    };
    assert_eq!(init(&[b'a'; 1025], 12, 0), Err(Error::InvalidPrompt));
    assert_eq!(state_size(c, 1025, 12), Err(Error::InvalidPrompt));
    assert_eq!(init(b"Once\0upon", 12, 0), Err(Error::InvalidPrompt));
    assert_eq!(init(b"Once \xff", 12, 0), Err(Error::InvalidPrompt));
    assert_eq!(init(PROMPT, 0, 0), Err(Error::InvalidPrompt));
    assert_eq!(init(PROMPT, 513, 0), Err(Error::InvalidPrompt));
    assert_eq!(state_size(c, 16, 0), Err(Error::InvalidPrompt));
    assert_eq!(init(PROMPT, 12, (16 << 16) + 1), Err(Error::InvalidPrompt));
    assert_eq!(init(PROMPT, 12, 16 << 16), Ok(()));
    assert_eq!(init(&[b'a'; 1024], 12, 0), Ok(()));
    assert_eq!(init_state(c, &mut buffer, PROMPT, 12, 0, 0), Ok(()));
}

#[test]
fn context_exceeded_is_never_raised() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let prompt = "The cat sat on the mat. ".repeat(8);
    // Tokenizes the prompt with `max` tokens to come; returns the header
    // after the turn that finishes tokenizing.
    let tokenize = |max: u32| {
        let mut state = new_state(m.config, prompt.as_bytes(), max, 0, 0);
        while StateInfo::read(&state).unwrap().phase.is_tokenizing() {
            turn(m.config, &mut state, m.bytes, &[]).unwrap();
        }
        StateInfo::read(&state).unwrap()
    };
    let tokenized = tokenize(1);
    // tokens + max - 1 == context fits; past it, the run goes on all the
    // same (it completes when the context is full: tests/context.rs).
    let fits = m.config.seq_len + 1 - tokenized.prompt_tokens;
    for max in [fits, fits + 1, m.config.seq_len] {
        let after = tokenize(max);
        assert_eq!(after.phase, Phase::Embedding, "max tokens {max}");
        assert_eq!(after.prompt_tokens, tokenized.prompt_tokens);
    }
}

#[test]
fn arithmetic() {
    let artifact = convert(
        &curta_core::convert::overflowing_checkpoint(),
        &synthetic_tokenizer(TINY.vocab_size),
    )
    .unwrap();
    let m = metadata(&artifact);
    let mut state = new_state(m.config, b"a", 2, 0, 0);
    step(&artifact, &m, &mut state); // tokenizing
    let sections = plan_sections(&artifact, &m, &state);
    assert_eq!(
        turn(m.config, &mut state, m.bytes, &sections).unwrap_err(),
        Error::Arithmetic
    );
}

#[test]
fn error_numbers_and_names() {
    for (i, e) in Error::ALL.iter().enumerate() {
        assert_eq!(e.code(), i as u32 + 1);
        assert_eq!(Error::from_code(e.code()), Some(*e));
    }
    assert_eq!(Error::from_code(0), None);
    assert_eq!(Error::from_code(9), None);
    assert_eq!(Error::Arithmetic.to_string(), "Arithmetic (core error 8)");
}
