//! The native replay of a run with curta-core: from any state (the chain's,
//! or a fresh one), every turn the program will take, with what it plans
//! (the weight sections, the compute units) and what it must produce (the
//! receipt's fields, tokens and text, and the state itself).

use curta_core::inference::{self, plan_sections, RunParams, StateMemory, TurnInput};
use curta_core::planner;
use curta_core::sha256::sha256;
use curta_core::state::StateBuffer;
use curta_core::{output_text, output_tokens, Metadata, StateInfo};

use crate::artifact::Artifact;
use crate::errors::{Error, Result};

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
    /// The state after the last step (the start, when there are none).
    pub final_state: StateBuffer,
}

/// A fresh state for a run's parameters, as `open_run` writes it.
pub fn initial_state(artifact: &Artifact, params: &RunParams) -> Result<StateBuffer> {
    let m = artifact.metadata();
    let size = curta_core::state_size(m.config, params.prompt.len(), params.max_tokens)?;
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

/// Every turn from `state` to the end of the run, under `allowance`.
pub fn replay(artifact: &Artifact, state: &[u8], allowance: u32) -> Result<Replay> {
    let m: Metadata = artifact.metadata();
    let config = m.config;
    let mut state = StateBuffer::from_bytes(state);
    let mut steps = vec![];
    loop {
        let before = StateInfo::read(&state)?;
        if before.complete {
            break;
        }
        let plan = planner::plan_turn_with(config, &state, allowance)?;
        let sections = plan_sections(&artifact.bytes, &m, &plan);
        let input = TurnInput {
            config,
            metadata: m.bytes,
            sections: &sections[..plan.section_count],
            allowance,
        };
        let result = inference::turn_with(&input, Some(&plan), &mut state).map_err(|e| {
            Error::from(e).context(format!("the native replay of turn {}", before.turns + 1))
        })?;
        let after = StateInfo::read(&state)?;
        let tokens = u32s(&output_tokens(config, &state)[4 * before.generated as usize..]);
        let text = output_text(config, &state)[before.text_len as usize..].to_vec();
        steps.push(Step {
            turns_before: before.turns,
            sections: plan.sections[..plan.section_count].to_vec(),
            estimated_cu: plan.estimated_cu,
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
        final_state: state,
    })
}

/// The compute-unit limit a turn asks for: the planner's estimate plus
/// the two compute-budget instructions (`docs/program.md`), at most what a
/// transaction may use.
pub fn turn_limit(estimated_cu: u32) -> u32 {
    (estimated_cu + COMPUTE_BUDGET_OVERHEAD).min(MAX_TRANSACTION_CU)
}

/// What the compute-budget instructions of a turn cost (150 each).
pub const COMPUTE_BUDGET_OVERHEAD: u32 = 300;
/// The most compute units one transaction may ask for.
pub const MAX_TRANSACTION_CU: u32 = 1_400_000;

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
    use curta_core::planner::CHARGES;

    fn tiny() -> Artifact {
        let ck = synthetic_checkpoint(&TINY, 3).unwrap();
        Artifact::new(convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap()).unwrap()
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
        assert!(StateInfo::read(&whole.final_state).unwrap().complete);
        // Each step's turn count follows the last, and the tokens and text
        // of the steps make the run's output.
        for (i, s) in whole.steps.iter().enumerate() {
            assert_eq!(s.turns_before, i as u64);
        }
        let cfg = a.metadata().config;
        let tokens: Vec<u32> = whole.steps.iter().flat_map(|s| s.tokens.clone()).collect();
        assert_eq!(tokens, u32s(output_tokens(cfg, &whole.final_state)));
        let text: Vec<u8> = whole.steps.iter().flat_map(|s| s.text.clone()).collect();
        assert_eq!(text, output_text(cfg, &whole.final_state));
        // Resumed from the state after the first turn: the same steps.
        let mut state = StateBuffer::from_bytes(&start);
        let one = replay(&a, &start, CHARGES.allowance).unwrap().steps[0].clone();
        let m = a.metadata();
        let plan = planner::plan_turn_with(cfg, &state, CHARGES.allowance).unwrap();
        let sections = plan_sections(&a.bytes, &m, &plan);
        curta_core::turn(cfg, &mut state, m.bytes, &sections).unwrap();
        assert_eq!(sha256(&state), one.state_sha256);
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
    fn limits_ask_for_the_estimate_plus_the_budget_instructions() {
        assert_eq!(turn_limit(1_000), 1_300);
        assert_eq!(turn_limit(1_350_000), 1_350_300);
        assert_eq!(turn_limit(1_399_999), 1_400_000);
    }
}
