//! The specification's example program, as written there, against
//! stories260K (converted into a temporary file first).

mod common;

use curta_core::{
    format::SECTION_TABLE, init_state, output_text, planner, read_u64, state_size, turn, Metadata,
    StateInfo, WeightSection,
};

/// The example's `main`, reading the artifact from `path`; its loop is
/// kept as the specification writes it.
#[allow(clippy::needless_range_loop)]
fn example(path: &std::path::Path) -> Vec<u8> {
    let artifact = std::fs::read(path).unwrap();
    // Section zero's length is the second field of the first section table entry.
    let zero = read_u64(&artifact, SECTION_TABLE + 8) as usize;
    let m = Metadata::new(&artifact[..zero]).unwrap();
    let prompt = b"Once upon a time";
    let mut state = common::Aligned::new(state_size(m.config, prompt.len(), 32).unwrap());
    init_state(m.config, &mut state, prompt, 32, 0, 42).unwrap();
    while !StateInfo::read(&state).unwrap().complete {
        let plan = planner::plan_turn(m.config, &state).unwrap();
        let mut sections = [WeightSection {
            index: 0,
            bytes: &[],
        }; 2];
        for i in 0..plan.section_count {
            let index = plan.sections[i] as usize;
            let offset = m.section_offset(index);
            sections[i] = WeightSection {
                index: index as u32,
                bytes: &artifact[offset..offset + m.section_len(index)],
            };
        }
        turn(
            m.config,
            &mut state,
            m.bytes,
            &sections[..plan.section_count],
        )
        .unwrap();
    }
    output_text(m.config, &state).to_vec()
}

#[test]
fn the_specification_example_runs() {
    let path =
        std::env::temp_dir().join(format!("curta-spec-example-{}.curta", std::process::id()));
    std::fs::write(&path, common::stories260k()).unwrap();
    let text = example(&path);
    std::fs::remove_file(&path).ok();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
    );
}
