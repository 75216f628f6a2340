//! The replay of a run: from any state (the chain's, or a fresh one), every
//! turn the program will take, with what it plans (the weight sections, the
//! compute units) and what it must produce (the receipt's fields, tokens and
//! text, and the state itself). Every client checks the chain against it.

use std::vec::Vec;

use crate::convert::open_artifact;
use crate::inference::{self, plan_sections, RunParams, StateMemory, TurnInput};
use crate::planner;
use crate::sha256::sha256;
use crate::state::StateBuffer;
use crate::{output_text, output_tokens, Error, StateInfo};

/// One turn of the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The state's turn count before this turn (the `expected_turns` its
    /// transaction carries); the receipt logs this plus one.
    pub turns_before: u64,
    /// The matrix sections its plan names.
    pub sections: Vec<u32>,
    /// The planner's estimate (an upper bound of the program's own use).
    pub estimated_cu: u32,
    /// The measured table's price of the turn's chunks, at most the
    /// estimate (`planner::measured_price`): the tighter bound, which the
    /// crank asks for.
    pub bound_cu: u32,
    /// The compute units the turn charges (the receipt's `charged`).
    pub charged: u32,
    pub generated: u32,
    pub generated_this_turn: u32,
    pub phase: u32,
    pub text_len: u32,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
    /// The state after the turn.
    pub state_sha256: [u8; 32],
}

/// A run's remaining turns.
#[derive(Clone)]
pub struct Replay {
    pub steps: Vec<Step>,
    /// The state the replay started from.
    pub initial_sha256: [u8; 32],
    /// The state after the last step (the start, when there are none).
    pub final_state: StateBuffer,
}

impl Replay {
    /// The state's hash after `done` of the steps: the initial state's for
    /// none, the final state's for all.
    pub fn sha256_after(&self, done: usize) -> [u8; 32] {
        match done {
            0 => self.initial_sha256,
            d => self.steps[d - 1].state_sha256,
        }
    }
}

/// A fresh state for a run's parameters, as `open_run` writes it.
pub fn initial_state(artifact: &[u8], params: &RunParams) -> Result<StateBuffer, Error> {
    let m = open_artifact(artifact)?;
    let size = crate::state_size(m.config, params.prompt.len(), params.max_tokens)?;
    let mut state = StateBuffer::new(size);
    inference::init_state_with(&m.config, params, &mut state, StateMemory::Any)?;
    Ok(state)
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A turn of the replay that failed: the turn and the core's error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayError {
    /// The run's turn count after the turn that failed; 0 when the
    /// artifact or the starting state did not check.
    pub turn: u64,
    pub error: Error,
}

/// Every turn from `state` to the end of the run, under `allowance`, with
/// the weights of `artifact` (checked whole).
pub fn replay(artifact: &[u8], state: &[u8], allowance: u32) -> Result<Replay, ReplayError> {
    let at = |turn| move |error| ReplayError { turn, error };
    let m = open_artifact(artifact).map_err(at(0))?;
    let config = m.config;
    let mut state = StateBuffer::from_bytes(state);
    let initial_sha256 = sha256(&state);
    let mut steps = Vec::new();
    loop {
        let before = StateInfo::read(&state).map_err(at(0))?;
        if before.complete {
            break;
        }
        let turn = before.turns + 1;
        let plan = planner::plan_turn_with(config, &state, allowance).map_err(at(turn))?;
        let bound_cu = planner::measured_price(config, &state, allowance).map_err(at(turn))?;
        let sections = plan_sections(artifact, &m, &plan);
        let input = TurnInput {
            config,
            metadata: m.bytes,
            sections: &sections[..plan.section_count],
            allowance,
        };
        let result = inference::turn_with(&input, Some(&plan), &mut state).map_err(at(turn))?;
        let after = StateInfo::read(&state).map_err(at(turn))?;
        let tokens = u32s(&output_tokens(config, &state)[4 * before.generated as usize..]);
        let text = output_text(config, &state)[before.text_len as usize..].to_vec();
        steps.push(Step {
            turns_before: before.turns,
            sections: plan.sections[..plan.section_count].to_vec(),
            estimated_cu: plan.estimated_cu,
            bound_cu,
            charged: result.work,
            generated: after.generated,
            generated_this_turn: result.generated_this_turn,
            phase: after.phase as u32,
            text_len: after.text_len,
            tokens,
            text,
            state_sha256: sha256(&state),
        });
    }
    Ok(Replay {
        steps,
        initial_sha256,
        final_state: state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
    use crate::planner::CHARGES;

    fn tiny() -> Vec<u8> {
        let ck = synthetic_checkpoint(&TINY, 3).unwrap();
        convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap()
    }

    #[test]
    fn a_replay_from_any_state_continues_the_same_run() {
        let a = tiny();
        let params = RunParams {
            prompt: b"ab",
            max_tokens: 5,
            temperature_q16: 0,
            seed: 0,
        };
        let start = initial_state(&a, &params).unwrap();
        let whole = replay(&a, &start, CHARGES.allowance).unwrap();
        assert!(!whole.steps.is_empty());
        assert_eq!(whole.initial_sha256, sha256(&start));
        assert_eq!(whole.sha256_after(0), sha256(&start));
        assert!(StateInfo::read(&whole.final_state).unwrap().complete);
        // Each step's turn count follows the last, and the tokens and text
        // of the steps make the run's output.
        for (i, s) in whole.steps.iter().enumerate() {
            assert_eq!(s.turns_before, i as u64);
        }
        let m = open_artifact(&a).unwrap();
        let cfg = m.config;
        let tokens: Vec<u32> = whole.steps.iter().flat_map(|s| s.tokens.clone()).collect();
        assert_eq!(tokens, u32s(output_tokens(cfg, &whole.final_state)));
        let text: Vec<u8> = whole.steps.iter().flat_map(|s| s.text.clone()).collect();
        assert_eq!(text, output_text(cfg, &whole.final_state));
        // Resumed from the state after the first turn: the same steps.
        let mut state = StateBuffer::from_bytes(&start);
        let plan = planner::plan_turn_with(cfg, &state, CHARGES.allowance).unwrap();
        let sections = plan_sections(&a, &m, &plan);
        crate::turn(cfg, &mut state, m.bytes, &sections).unwrap();
        assert_eq!(sha256(&state), whole.steps[0].state_sha256);
        let rest = replay(&a, &state, CHARGES.allowance).unwrap();
        assert_eq!(rest.steps[..], whole.steps[1..]);
        assert_eq!(&rest.final_state[..], &whole.final_state[..]);
        // A complete state has no steps left.
        assert!(replay(&a, &whole.final_state, CHARGES.allowance)
            .unwrap()
            .steps
            .is_empty());
    }

    #[test]
    fn a_bad_artifact_or_state_is_named() {
        let a = tiny();
        let e = replay(&a[..a.len() - 1], &[], CHARGES.allowance)
            .err()
            .unwrap();
        assert_eq!((e.turn, e.error), (0, Error::InvalidFormat));
        let e = replay(&a, &[0; 16], CHARGES.allowance).err().unwrap();
        assert_eq!((e.turn, e.error), (0, Error::InvalidState));
    }
}
