//! The native replay: the same run, turn by turn, with curta-core.

use curta_core::{init_state, planner, state_size, turn, Metadata, TurnResult, WeightSection};

use crate::manifest::RunSpec;
use crate::models::section;

/// A zeroed byte buffer aligned to eight, as a state must be.
pub struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Aligned {
        Aligned {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }
}

impl std::ops::Deref for Aligned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: u64 storage viewed as bytes within its length.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}

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
    let sections: Vec<WeightSection> = plan.sections[..plan.section_count]
        .iter()
        .map(|&i| WeightSection {
            index: i,
            bytes: section(artifact, m, i as usize),
        })
        .collect();
    turn(m.config, state, m.bytes, &sections).expect("native turn")
}
