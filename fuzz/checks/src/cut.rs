//! Target `cut_invariance`: wherever turns cut a run, it computes the same.
//!
//! A run's parameters (prompt bytes, max tokens, temperature, seed) and a
//! sequence of allowances from the smallest legal one up come from the
//! input. The run goes once at the full allowance and once with each turn
//! under the next allowance of the sequence (a turn whose allowance is too
//! small for its next step is refused with `InvalidConfig`, changes
//! nothing, and is taken again under the next allowance). Both end alike:
//! the same output tokens, text, caches and every other byte of the state
//! but its turn count; or the same error, at the same point. Every turn
//! also spends at most its allowance, past tokenizing exactly what its plan
//! charged, and a run that generates all its tokens takes the turns
//! `quote_turns` counts. The cut run may plan with the other charge table
//! (the model's measured twin): the tables move the cuts, never the work.

use curta_core::inference::{self, plan_sections, TurnInput};
use curta_core::planner::{self, CHARGES};
use curta_core::state::{field, StateBuffer, StateLayout};
use curta_core::tokenizer::{BOS, EOS};
use curta_core::{output_text, output_tokens, Error, StateInfo};

use crate::models::{self, Model};
use crate::runs;
use crate::source::Source;

/// Turns are counted until this many, past which a run is cut short (no
/// model here needs nearly as many at the smallest allowance).
const MAX_TURNS: u64 = 20_000;

/// How a run ended: its final state, or its error and the turn that
/// raised it, with the state then.
struct Ended {
    state: StateBuffer,
    error: Option<Error>,
    turns: u64,
}

pub fn check(data: &[u8]) {
    reach(data);
}

/// How far an input went: the turns of the run at the full allowance and
/// of the cut run, and their error; `None` for parameters that do not
/// start a run.
pub fn reach(data: &[u8]) -> Option<(u64, u64, Option<Error>)> {
    let mut s = Source::new(data);
    let model = models::pick(s.u8());
    let config = model.config;
    let p = runs::params(&config, &mut s);
    let mut allowances: Vec<u32> = (0..1 + s.below(6))
        .map(|_| runs::allowance(&mut s))
        .collect();
    if s.bool() {
        allowances.sort_unstable();
    }
    let give_plan = s.u8();
    let cut_model = if s.bool() {
        models::measured(model)
    } else {
        model
    };
    let state = p.open(config)?;
    let whole = run(model, state.clone(), &[CHARGES.allowance], give_plan);
    let cut = run(
        cut_model,
        state.clone(),
        &allowances,
        give_plan.rotate_left(3),
    );
    assert_eq!(whole.error, cut.error, "the runs' errors");
    let reached = Some((whole.turns, cut.turns, whole.error));
    if whole.error.is_some() {
        return reached;
    }
    let (a, b) = (&whole.state, &cut.state);
    assert_eq!(
        output_tokens(config, a),
        output_tokens(config, b),
        "output tokens"
    );
    assert_eq!(
        output_text(config, a),
        output_text(config, b),
        "output text"
    );
    let layout = StateLayout::new(&config, p.prompt.len(), p.max_tokens).unwrap();
    assert!(
        a[layout.keys..layout.values] == b[layout.keys..layout.values],
        "the key cache"
    );
    assert!(a[layout.values..] == b[layout.values..], "the value cache");
    // Everything else but the turn count.
    let turns = field::TURNS..field::TURNS + 8;
    assert!(
        a[..turns.start] == b[..turns.start] && a[turns.end..] == b[turns.end..],
        "the states"
    );
    // A run that generated every token took the turns its quote counts.
    let info = StateInfo::read(a).unwrap();
    if info.generated == p.max_tokens {
        let mut scratch = StateBuffer::new(state.len());
        let quoted = inference::quote_turns(
            config,
            model.zero(),
            &p.prompt,
            p.max_tokens,
            p.temperature_q16,
            &mut scratch,
        );
        assert_eq!(quoted, Ok(whole.turns), "quote_turns and the run's turns");
    }
    reached
}

/// Runs a state to its end, turn `i` under allowance `i` of the sequence
/// (which cycles), or the first after it under which the next step fits
/// (the full allowance when none does); `give_plan`'s bits say which turns
/// are given their plan.
fn run(model: &Model, mut state: StateBuffer, allowances: &[u32], give_plan: u8) -> Ended {
    let config = model.config;
    let m = model.metadata();
    let mut next = 0usize;
    let mut turns = 0u64;
    while turns < MAX_TURNS {
        let info = StateInfo::read(&state).unwrap();
        if info.complete {
            break;
        }
        // The next allowance under which the next step fits; the full one
        // if none in the sequence does.
        let mut taken = None;
        for k in 0..=allowances.len() {
            let allowance = if k < allowances.len() {
                allowances[(next + k) % allowances.len()]
            } else {
                CHARGES.allowance
            };
            let before = state.clone();
            let plan = planner::plan_turn_with(config, &state, allowance);
            let plan = match plan {
                Ok(plan) => plan,
                Err(Error::InvalidConfig) => continue,
                Err(e) => panic!("a plan in the middle of a run: {e}"),
            };
            let sections = plan_sections(&model.artifact, &m, &plan);
            let input = TurnInput {
                config,
                metadata: m.bytes,
                sections: &sections,
                allowance,
            };
            let given = (give_plan >> (turns % 8) & 1 == 1).then_some(&plan);
            match inference::turn_with(&input, given, &mut state) {
                Ok(r) => {
                    assert!(
                        r.work <= allowance,
                        "a turn charged {} of {allowance}",
                        r.work
                    );
                    let ended_early = r.complete && matches!(r.token, Some(BOS | EOS));
                    if !info.phase.is_tokenizing() && !ended_early {
                        assert_eq!(r.work, plan.estimated_cu);
                    }
                    assert!(
                        r.generated_this_turn <= plan.max_generated || info.phase.is_tokenizing()
                    );
                    taken = Some(Ok(()));
                }
                Err(Error::InvalidConfig) => {
                    // Too small for the next tokenizing step: nothing changed.
                    assert!(*before == *state, "a turn refused for its allowance wrote");
                    continue;
                }
                Err(e) => taken = Some(Err(e)),
            }
            break;
        }
        turns += 1;
        next += 1;
        match taken {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                return Ended {
                    state,
                    error: Some(e),
                    turns,
                }
            }
            None => panic!("no allowance fits the next step, not even the full one"),
        }
    }
    assert!(turns < MAX_TURNS, "the run did not end");
    Ended {
        state,
        error: None,
        turns,
    }
}
