//! A run that reaches the model's context completes there, with the
//! context as its finish reason (`docs/state.md`, "The cursor"): after
//! sampling at position p the run is complete when p + 1 reaches the
//! context, and a prompt whose tokens alone pass it completes with
//! tokenizing, no token generated. Quotes, plans and turns agree on it;
//! `run::read_finished` gives each reason.

mod common;

use common::*;
use curta_core::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
use curta_core::inference::quote_turns;
use curta_core::planner;
use curta_core::protocol::run::{self, Expected, FinishReason, Refusal};
use curta_core::protocol::RUN_TAG;
use curta_core::state::{Header, Phase, StateLayout};
use curta_core::{output_text, output_tokens, state_size, turn, Error, Metadata, StateInfo};

const PROMPT: &[u8] = b"Once upon a time";
const PROGRAM: [u8; 32] = [1; 32];
const IDENTITY: [u8; 32] = [2; 32];
const OPENER: [u8; 32] = [3; 32];

/// The TINY shape (context 8) with synthetic weights and tokenizer: a
/// prompt of n bytes is n + 2 tokens (the opening token, the space and a
/// byte token for each byte; the tokenizer has no merges to make).
fn tiny() -> Vec<u8> {
    let checkpoint = synthetic_checkpoint(&TINY, 3).unwrap();
    convert(&checkpoint, &synthetic_tokenizer(TINY.vocab_size)).unwrap()
}

/// `quote_turns` of a run.
fn quote(m: &Metadata, prompt: &[u8], max_tokens: u32) -> u64 {
    let mut scratch = Aligned::new(state_size(m.config, prompt.len(), max_tokens).unwrap());
    quote_turns(m.config, m.bytes, prompt, max_tokens, 0, &mut scratch).unwrap()
}

/// Runs a state to its end, checking that every turn past tokenizing ends
/// where its plan said, at the plan's price; returns the count of turns.
fn run_as_planned(artifact: &[u8], m: &Metadata, state: &mut [u8]) -> u64 {
    let mut turns = 0;
    while !StateInfo::read(state).unwrap().complete {
        let before = Header::read_checked(&m.config, state).unwrap();
        let plan = planner::plan_turn(m.config, state).unwrap();
        let r = step(artifact, m, state);
        turns += 1;
        let after = Header::read_checked(&m.config, state).unwrap();
        let early = matches!(r.token, Some(1 | 2));
        if !before.phase.is_tokenizing() && !early {
            assert_eq!(after.cursor(), plan.end, "turn {turns}: where it ends");
            assert_eq!(r.work, plan.estimated_cu, "turn {turns}: its charge");
        }
    }
    turns
}

/// A run account holding `state`, opened by `OPENER` on `IDENTITY`.
fn run_account(config: &curta_core::Config, state: &[u8]) -> Vec<u8> {
    let h = Header::read(state).unwrap();
    let layout = StateLayout::new(config, h.prompt_len as usize, h.max_tokens).unwrap();
    let mut data = vec![0u8; run::HEADER_LEN + state.len()];
    data[run::TAG..run::TAG + 8].copy_from_slice(&RUN_TAG);
    data[run::MODEL_IDENTITY..run::MODEL_IDENTITY + 32].copy_from_slice(&IDENTITY);
    data[run::OPENER..run::OPENER + 32].copy_from_slice(&OPENER);
    let at = |offset: usize| ((run::HEADER_LEN + offset) as u32).to_le_bytes();
    data[run::TOKENS_AT..run::TOKENS_AT + 4].copy_from_slice(&at(layout.output_tokens));
    data[run::TEXT_AT..run::TEXT_AT + 4].copy_from_slice(&at(layout.output_text));
    data[run::HEADER_LEN..].copy_from_slice(state);
    data
}

/// `read_finished` of a run account holding `state`: its reason, after
/// checking the output it gives is the state's.
fn read_reason(config: &curta_core::Config, state: &[u8]) -> Result<FinishReason, Refusal> {
    let data = run_account(config, state);
    let expected = Expected {
        program_id: &PROGRAM,
        model_identity: &IDENTITY,
        opener: &OPENER,
    };
    let f = run::read_finished(&PROGRAM, &data, &expected)?;
    assert_eq!(f.tokens, output_tokens(*config, state));
    assert_eq!(f.text, output_text(*config, state));
    assert_eq!(Some(f.reason), StateInfo::read(state).unwrap().reason);
    Ok(f.reason)
}

#[test]
fn a_run_that_reaches_the_context_completes_there() {
    // stories260K's context is 512; "Once upon a time" is 5 tokens, so
    // 512 max tokens would need 516 positions.
    let artifact = stories260k();
    let m = metadata(artifact);
    let context = m.config.seq_len;
    let mut state = new_state(m.config, PROMPT, context, 0, 0);
    let turns = run_as_planned(artifact, &m, &mut state);
    let info = StateInfo::read(&state).unwrap();
    assert_eq!(info.prompt_tokens, 5);
    assert!(info.complete);
    assert_eq!(info.reason, Some(FinishReason::Context));
    // Every position of the context used: the last token sampled at the
    // last position, where the cursor stays.
    assert_eq!(info.generated, context - info.prompt_tokens + 1);
    assert_eq!(info.position, context - 1);
    let h = Header::read_checked(&m.config, &state).unwrap();
    assert_eq!(h.phase, Phase::Done);
    assert_eq!(
        output_tokens(m.config, &state).len(),
        4 * info.generated as usize
    );
    // The quote counts the same turns.
    assert_eq!(turns, quote(&m, PROMPT, context));
    assert_eq!(read_reason(&m.config, &state), Ok(FinishReason::Context));
    // A run of a finished state is refused.
    assert_eq!(
        turn(m.config, &mut state, m.bytes, &[]).unwrap_err(),
        Error::InvalidState
    );

    // The same run asked for exactly the tokens the context holds (it
    // fitted before the context ended runs): the same tokens in the same
    // turns, ended by max tokens.
    let fits = info.generated;
    let mut exact = new_state(m.config, PROMPT, fits, 0, 0);
    assert_eq!(run_as_planned(artifact, &m, &mut exact), turns);
    assert_eq!(
        output_tokens(m.config, &exact),
        output_tokens(m.config, &state)
    );
    let exact_info = StateInfo::read(&exact).unwrap();
    assert_eq!(exact_info.reason, Some(FinishReason::MaxTokens));
    assert_eq!(exact_info.position, info.position);
    assert_eq!(quote(&m, PROMPT, fits), turns);
}

#[test]
fn a_prompt_past_the_context_completes_when_tokenized() {
    let artifact = tiny();
    let m = metadata(&artifact);
    let context = m.config.seq_len;
    // 10 tokens in a context of 8.
    let prompt = b"abcdefgh";
    for max_tokens in [1, context] {
        let mut state = new_state(m.config, prompt, max_tokens, 0, 0);
        let turns = run_as_planned(&artifact, &m, &mut state);
        let info = StateInfo::read(&state).unwrap();
        assert_eq!(info.prompt_tokens, prompt.len() as u32 + 2);
        assert!(info.complete);
        assert_eq!(info.generated, 0);
        assert_eq!(info.reason, Some(FinishReason::Context));
        // The cursor where the first embedding would have been.
        let h = Header::read_checked(&m.config, &state).unwrap();
        assert_eq!(
            (h.phase, h.position, h.layer, h.row),
            (Phase::Done, 0, 0, 0)
        );
        assert_eq!((h.text_len, h.token), (0, 1));
        assert!(output_tokens(m.config, &state).is_empty());
        assert!(output_text(m.config, &state).is_empty());
        assert_eq!(
            curta_core::state::prompt_tokens(m.config, &state).len(),
            4 * info.prompt_tokens as usize
        );
        assert_eq!(turns, quote(&m, prompt, max_tokens));
        assert_eq!(
            planner::plan_turn(m.config, &state).unwrap_err(),
            Error::InvalidState
        );
        assert_eq!(read_reason(&m.config, &state), Ok(FinishReason::Context));
    }
}

#[test]
fn every_prompt_length_ends_at_max_tokens_or_the_context() {
    // From a prompt that leaves the whole context to one that passes it:
    // the tokens generated are what max tokens and the context leave (or
    // fewer, ended by an end token), and the quote is the run's turns.
    let artifact = tiny();
    let m = metadata(&artifact);
    let context = m.config.seq_len;
    let letters = b"abcdefghij";
    for len in 0..=letters.len() {
        let prompt = &letters[..len];
        for max_tokens in [1, 3, context] {
            let mut state = new_state(m.config, prompt, max_tokens, 0, 0);
            let turns = run_as_planned(&artifact, &m, &mut state);
            let info = StateInfo::read(&state).unwrap();
            let p = info.prompt_tokens;
            let room = (context + 1).saturating_sub(p);
            let want = if p > context { 0 } else { room.min(max_tokens) };
            let tokens = u32s(output_tokens(m.config, &state));
            let what = format!("{len} bytes, {max_tokens} max tokens");
            match info.reason {
                Some(FinishReason::EndToken) => {
                    assert!(info.generated <= want, "{what}");
                    assert!(matches!(tokens.last(), Some(1 | 2)), "{what}");
                    assert!(turns <= quote(&m, prompt, max_tokens), "{what}");
                }
                reason => {
                    assert_eq!(info.generated, want, "{what}");
                    let expected = match info.generated == max_tokens {
                        true => FinishReason::MaxTokens,
                        false => FinishReason::Context,
                    };
                    assert_eq!(reason, Some(expected), "{what}");
                    assert_eq!(turns, quote(&m, prompt, max_tokens), "{what}");
                }
            }
            Header::read_checked(&m.config, &state).unwrap();
        }
    }
}

#[test]
fn a_finished_run_is_read_with_its_reason() {
    let artifact = stories260k();
    let m = metadata(artifact);

    // Max tokens: the reference run.
    let mut state = new_state(m.config, PROMPT, 12, 0, 0);
    step(artifact, &m, &mut state);
    assert_eq!(
        read_reason(&m.config, &state),
        Err(Refusal::NotFinished),
        "a run partway"
    );
    assert_eq!(StateInfo::read(&state).unwrap().reason, None);
    run_to_end(artifact, &m, &mut state);
    assert_eq!(read_reason(&m.config, &state), Ok(FinishReason::MaxTokens));
    // Ended at max tokens, the cursor keeps the last token's position.
    let info = StateInfo::read(&state).unwrap();
    assert_eq!(info.position, info.prompt_tokens + info.generated - 2);

    // An end token: stories260K closes a story with token 1 well inside
    // its context.
    let mut state = new_state(m.config, b"", 400, 1 << 16, 1);
    run_to_end(artifact, &m, &mut state);
    let info = StateInfo::read(&state).unwrap();
    assert!(info.generated < 400);
    assert_eq!(read_reason(&m.config, &state), Ok(FinishReason::EndToken));
    // Ended by an end token, the cursor stands one position on, where the
    // next token would have been embedded (`docs/state.md`).
    assert_eq!(info.position, info.prompt_tokens + info.generated - 1);
    Header::read_checked(&m.config, &state).unwrap();

    // The context: a prompt past it, on the tiny shape.
    let tiny = tiny();
    let t = metadata(&tiny);
    let mut state = new_state(t.config, b"abcdefgh", 4, 0, 0);
    run_to_end(&tiny, &t, &mut state);
    assert_eq!(read_reason(&t.config, &state), Ok(FinishReason::Context));
}
