//! Target `state`: a valid artifact (TINY, SMALL or the overflowing TINY)
//! and a state that is arbitrary bytes or a real state, some turns into its
//! run, with bytes changed: through `Header::read_checked`, the readers,
//! `plan_turn_with` and `turn_with`.
//!
//! Checked: an `Error` or a success, never a panic; a turn refused before
//! its work changes nothing, and one failed by its work (`Arithmetic`, a
//! prompt token past the vocabulary, a section missing from a turn not
//! given its plan) leaves the header as it was; a turn that succeeds
//! started from a state that checks, leaves one that checks, spends at
//! most its allowance and, past tokenizing, ends where its plan said at
//! the plan's price; a turn that completes the run does so for its reason
//! (an end token, max tokens, or the context: the last position sampled,
//! or a prompt whose tokens alone pass it). `ContextExceeded` is never
//! raised.

use curta_core::format::Config;
use curta_core::inference::{self, plan_sections, TurnInput, WeightSection};
use curta_core::planner::{self, TurnPlan};
use curta_core::state::{
    self, field, FinishReason, Header, Phase, StateBuffer, StateLayout, HEADER_LEN, STATE_TAG,
};
use curta_core::tokenizer::{BOS, EOS};
use curta_core::{output_text, output_tokens, Error, StateInfo};

use crate::models::{self, Model};
use crate::runs;
use crate::source::Source;

pub fn check(data: &[u8]) {
    let mut s = Source::new(data);
    let model = models::pick(s.u8());
    let mut state = if s.one_in(4) {
        raw_state(&model.config, &mut s)
    } else {
        match mutated_state(model, &mut s) {
            Some(state) => state,
            None => return,
        }
    };
    check_turn(model, &mut state, &mut s);
}

/// A state of header and bytes from the input, its tag mostly right and
/// its size mostly the one its header's prompt length and max tokens give.
fn raw_state(config: &Config, s: &mut Source) -> StateBuffer {
    let prompt_len = s.below(16);
    let max_tokens = 1 + s.below(config.seq_len as usize) as u32;
    let size = match state::state_size(*config, prompt_len, max_tokens) {
        Ok(size) if !s.one_in(8) => size,
        _ => s.below(4096),
    };
    let mut state = StateBuffer::new(size);
    let header = s.bytes(HEADER_LEN);
    let n = header.len().min(size);
    state[..n].copy_from_slice(&header[..n]);
    if size >= HEADER_LEN {
        if !s.one_in(16) {
            state[..8].copy_from_slice(&STATE_TAG);
        }
        if !s.one_in(8) {
            state[field::PHASE..field::PHASE + 4]
                .copy_from_slice(&(s.below(21) as u32).to_le_bytes());
            put(&mut state, field::PROMPT_LEN, prompt_len as u32);
            put(&mut state, field::MAX_TOKENS, max_tokens);
        }
    }
    let rest = s.rest();
    if !rest.is_empty() && size > HEADER_LEN {
        for (i, b) in state[HEADER_LEN..].iter_mut().enumerate() {
            *b = rest[i % rest.len()];
        }
    }
    state
}

fn put(state: &mut [u8], at: usize, v: u32) {
    state[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// The header fields a mutation aims at, with their offsets.
const FIELDS: [usize; 26] = [
    field::PHASE,
    field::LAYER,
    field::ROW,
    field::POSITION,
    field::TOKEN,
    field::PROMPT_LEN,
    field::PROMPT_TOKENS,
    field::MAX_TOKENS,
    field::TEMPERATURE,
    field::GENERATED,
    field::TEXT_LEN,
    field::TOK_BYTE,
    field::TOK_PAIR,
    field::TOK_BEST_POS,
    field::TOK_BEST_KEY,
    field::TOK_BEST_ID,
    field::SEED,
    field::TURNS,
    field::MAX,
    field::CHOSEN,
    field::PASS,
    field::SUM,
    field::REMAINDER,
    field::STAGE,
    field::INDEX,
    field::SEED + 4,
];

/// A real run some turns in (under fuzzed allowances), then changed.
fn mutated_state(model: &Model, s: &mut Source) -> Option<StateBuffer> {
    let config = model.config;
    let p = runs::params(&config, s);
    let mut state = p.open(config)?;
    let m = model.metadata();
    let allowance = runs::allowance(s);
    for _ in 0..s.below(64) {
        let Ok(plan) = planner::plan_turn_with(config, &state, allowance) else {
            break;
        };
        let sections = plan_sections(&model.artifact, &m, &plan);
        let input = TurnInput {
            config,
            metadata: m.bytes,
            sections: &sections,
            allowance,
        };
        match inference::turn_with(&input, Some(&plan), &mut state) {
            Ok(r) if !r.complete => {}
            _ => break,
        }
    }
    for _ in 0..s.below(5) {
        let value = match s.below(6) {
            0 => 0,
            1 => u32::MAX,
            2 => s.u8() as u32,
            3 => (s.u8() as u32).wrapping_sub(128),
            _ => s.u32(),
        };
        match s.below(4) {
            0 | 1 => {
                let at = FIELDS[s.below(FIELDS.len())];
                put(&mut state, at, value);
            }
            2 => {
                let at = s.below(state.len());
                state[at] = value as u8;
            }
            _ => {
                let at = s.below(state.len());
                state[at] ^= 1 << s.below(8);
            }
        }
    }
    Some(state)
}

/// The sections a turn is given: those its plan names (mostly), every
/// matrix section, or a wrong set (one missing, one short, one mislabeled).
fn sections<'a>(
    model: &'a Model,
    plan: Option<&TurnPlan>,
    s: &mut Source,
) -> Vec<WeightSection<'a>> {
    let mut all = model.matrix_sections();
    let mut named: Vec<WeightSection> = match plan {
        Some(plan) if !s.one_in(4) => {
            plan_sections(&model.artifact, &model.metadata(), plan).to_vec()
        }
        _ => all.clone(),
    };
    match s.below(8) {
        4 if !named.is_empty() => {
            named.remove(s.below(named.len()));
        }
        5 if !named.is_empty() => {
            let i = s.below(named.len());
            let len = named[i].bytes.len();
            named[i].bytes = &named[i].bytes[..s.below(len)];
        }
        6 if !named.is_empty() => {
            let i = s.below(named.len());
            named[i].index = s.below(model.section_count() + 1) as u32;
        }
        7 => {
            all.reverse();
            named = all;
        }
        _ => {}
    }
    named
}

/// One turn of a state, and every reader of it.
pub fn check_turn(model: &Model, state: &mut StateBuffer, s: &mut Source) {
    let config = model.config;
    let checked = Header::read_checked(&config, state);
    let info = StateInfo::read(state);
    if let Ok(h) = &checked {
        assert_eq!(info.map(|i| i.phase), Ok(h.phase));
        let layout = StateLayout::new(&config, h.prompt_len as usize, h.max_tokens).unwrap();
        assert_eq!(layout.size, state.len());
        assert_eq!(output_tokens(config, state).len(), 4 * h.generated as usize);
        assert_eq!(output_text(config, state).len(), h.text_len as usize);
        assert_eq!(
            state::prompt_tokens(config, state).len(),
            4 * h.prompt_tokens as usize
        );
    } else {
        assert!(output_tokens(config, state).is_empty());
        assert!(output_text(config, state).is_empty());
    }
    let allowance = if s.one_in(16) {
        s.u32()
    } else {
        runs::allowance(s)
    };
    let plan = planner::plan_turn_with(config, state, allowance);
    if checked.is_err() {
        assert!(plan.is_err(), "a plan for a state that does not check");
    }
    let given = plan.as_ref().ok().filter(|_| s.bool());
    let given_plan = given.is_some();
    let sections = sections(model, plan.as_ref().ok(), s);
    let m = model.metadata();
    let input = TurnInput {
        config,
        metadata: m.bytes,
        sections: &sections,
        allowance,
    };
    let before = state.clone();
    // The errors found only by doing the work; among them a section missing
    // from a turn not given its plan (the program's single walk).
    // A prompt token past the vocabulary is found where it is used
    // (InvalidState from a state that checks).
    let found_by_work = |e: Error| match e {
        Error::Arithmetic => true,
        Error::MissingWeights => !given_plan,
        Error::InvalidState => checked.is_ok(),
        _ => false,
    };
    match inference::turn_with(&input, given, state) {
        Err(e) if found_by_work(e) => {
            assert!(checked.is_ok(), "{e} from a state that does not check");
            assert_eq!(
                before[..HEADER_LEN],
                state[..HEADER_LEN],
                "the header after a failed turn"
            );
        }
        Err(e) => {
            let given: Vec<(u32, usize)> =
                sections.iter().map(|x| (x.index, x.bytes.len())).collect();
            assert!(
                *before == **state,
                "a turn refused ({e}) wrote to the state: {checked:?}, plan {plan:?} given {}, sections {given:?}",
                given_plan
            );
        }
        Ok(r) => {
            let h = checked.expect("a turn on a state that does not check");
            let after = match Header::read_checked(&config, state) {
                Ok(after) => after,
                Err(e) => panic!(
                    "a turn leaves a state that does not check ({e}): {h:?} to {:?}",
                    Header::read(state)
                ),
            };
            assert_eq!(after.turns, h.turns.wrapping_add(1));
            assert!(
                r.work <= allowance,
                "a turn charged {} of {allowance}",
                r.work
            );
            assert_eq!(r.generated, after.generated);
            assert_eq!(r.complete, after.phase == Phase::Done);
            // A run completes for its reason: with no token generated only
            // a prompt past the context; else an end token, max tokens, or
            // the context's last position sampled.
            match FinishReason::of(&after) {
                None => assert!(!r.complete),
                Some(FinishReason::Context) if after.generated == 0 => {
                    assert!(after.prompt_tokens > config.seq_len, "{after:?}")
                }
                Some(FinishReason::Context) => {
                    assert_eq!(after.position + 1, config.seq_len, "{after:?}")
                }
                Some(FinishReason::EndToken) => assert!(matches!(r.token, Some(BOS | EOS))),
                Some(FinishReason::MaxTokens) => assert_eq!(after.generated, after.max_tokens),
            }
            assert!(after.generated >= h.generated);
            assert!(after.generated <= after.max_tokens);
            if !h.phase.is_tokenizing() {
                let plan = plan.expect("a turn past tokenizing without a plan");
                assert!(r.generated_this_turn <= plan.max_generated);
                let early = r.complete
                    && matches!(r.token, Some(BOS | EOS))
                    && after.generated < after.max_tokens;
                if !early {
                    assert_eq!(
                        r.work, plan.estimated_cu,
                        "the turn's charge and its plan's"
                    );
                    assert_eq!(after.cursor(), plan.end, "where the turn and its plan end");
                }
            }
            // The tokens this turn generated are in the vocabulary (those
            // before it are whatever the state held).
            let vocab = config.vocab_size;
            let new = &output_tokens(config, state)[4 * h.generated as usize..];
            assert!(
                new.chunks_exact(4)
                    .all(|t| u32::from_le_bytes(t.try_into().unwrap()) < vocab),
                "a token past the vocabulary generated"
            );
        }
    }
}
