//! The native replay: the same run, turn by turn, with curta-core.

use curta_core::inference::plan_sections;
use curta_core::{init_state, planner, state_size, turn, Metadata, TurnResult};

use crate::manifest::RunSpec;

pub use curta_core::state::StateBuffer as Aligned;

/// A fresh state for a run.
pub fn open(m: &Metadata, spec: &RunSpec) -> Aligned {
    let size =
        state_size(m.config, spec.prompt.len(), spec.max_tokens).expect("run parameters in range");
    let mut state = Aligned::new(size);
    init_state(
        m.config,
        &mut state,
        &spec.prompt,
        spec.max_tokens,
        spec.temperature_q16,
        spec.seed,
    )
    .expect("init_state");
    state
}

/// One turn, with the sections its plan names.
pub fn step(artifact: &[u8], m: &Metadata, state: &mut [u8]) -> TurnResult {
    let plan = planner::plan_turn(m.config, state).expect("plan");
    let sections = plan_sections(artifact, m, &plan);
    turn(m.config, state, m.bytes, &sections[..plan.section_count]).expect("native turn")
}
