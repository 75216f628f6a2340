//! Random and mutated artifacts, tokenizers, checkpoints and states give an
//! error or a valid result, never a panic; a turn refused for a bad state
//! writes nothing.

mod common;

use common::*;
use curta_core::convert::{convert, open_artifact};
use curta_core::inference::{turn_with, TurnInput};
use curta_core::planner::CHARGES;
use curta_core::{init_state, planner, state_size, Error, Metadata, StateInfo};

#[test]
fn random_bytes_are_never_an_artifact() {
    let mut rng = Rng(1);
    for i in 0..500 {
        let len = rng.below(4096);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if i % 2 == 0 && len >= 8 {
            bytes[..8].copy_from_slice(b"CURTAW01");
        }
        assert!(Metadata::new(&bytes).is_err());
        assert!(open_artifact(&bytes).is_err());
    }
}

#[test]
fn mutated_metadata_never_panics_a_turn() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let zero = m.bytes.to_vec();
    let mut rng = Rng(2);
    let mut accepted = 0;
    for _ in 0..400 {
        let mut z = zero.clone();
        for _ in 0..1 + rng.below(4) {
            // Mostly the header and tables, sometimes anywhere.
            let at = if rng.below(2) == 0 {
                rng.below(512)
            } else {
                rng.below(z.len())
            };
            z[at] = rng.next() as u8;
        }
        let Ok(mm) = Metadata::new(&z) else { continue };
        accepted += 1;
        let _ = mm.check_tokenizer();
        let mut state = new_state(m.config, b"Once upon a time", 3, 1 << 16, 5);
        for _ in 0..4 {
            let sections = plan_sections(artifact, &m, &state);
            let input = TurnInput {
                config: m.config,
                metadata: &z,
                sections: &sections,
                allowance: CHARGES.allowance,
            };
            if turn_with(&input, None, &mut state).is_err()
                || StateInfo::read(&state).unwrap().complete
            {
                break;
            }
        }
    }
    assert!(
        accepted > 50,
        "too few mutations parsed ({accepted}) to exercise turns"
    );
}

#[test]
fn mutated_checkpoints_and_tokenizers_never_panic() {
    let checkpoint = model_file("stories260K.bin");
    let tokenizer = model_file("tok512.bin");
    let mut rng = Rng(3);
    for _ in 0..40 {
        let cut = rng.below(checkpoint.len());
        assert_eq!(
            convert(&checkpoint[..cut], &tokenizer).err(),
            Some(Error::InvalidFormat)
        );
        let cut = rng.below(tokenizer.len());
        assert_eq!(
            convert(&checkpoint, &tokenizer[..cut]).err(),
            Some(Error::InvalidFormat)
        );
    }
    for _ in 0..60 {
        let mut c = checkpoint.clone();
        let at = rng.below(28);
        c[at] = rng.next() as u8;
        let mut t = tokenizer.clone();
        let at = rng.below(t.len());
        t[at] = rng.next() as u8;
        if let Ok(artifact) = convert(&c, &t) {
            open_artifact(&artifact).unwrap();
        }
        for len in [0, 3, 28, 29] {
            let noise: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            assert!(convert(&noise, &tokenizer).is_err());
            assert!(convert(&checkpoint, &noise).is_err());
        }
    }
}

#[test]
fn mutated_states_never_panic_and_refusals_write_nothing() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut rng = Rng(4);
    // States at several points of a run at temperature 0.8: tokenizing,
    // prompt positions, attention, sampling.
    let mut checkpoints = vec![];
    let mut state = new_state(m.config, "Once upon a time ü".as_bytes(), 6, 52_429, 9);
    checkpoints.push(state.to_vec());
    while !StateInfo::read(&state).unwrap().complete {
        step(artifact, &m, &mut state);
        checkpoints.push(state.to_vec());
    }
    let all_sections: Vec<_> = (1..m.section_count() as u32)
        .map(|i| {
            let o = m.section_offset(i as usize);
            curta_core::WeightSection {
                index: i,
                bytes: &artifact[o..o + m.section_len(i as usize)],
            }
        })
        .collect();
    for _ in 0..3000 {
        let base = &checkpoints[rng.below(checkpoints.len())];
        let mut s = Aligned::from_bytes(base);
        for _ in 0..1 + rng.below(3) {
            let at = if rng.below(3) > 0 {
                rng.below(128)
            } else {
                rng.below(s.len())
            };
            s[at] = match rng.below(3) {
                0 => 0,
                1 => 0xff,
                _ => rng.next() as u8,
            };
        }
        let _ = StateInfo::read(&s);
        let _ = planner::plan_turn(m.config, &s);
        let before = s.to_vec();
        let input = TurnInput {
            config: m.config,
            metadata: m.bytes,
            sections: &all_sections,
            allowance: CHARGES.allowance,
        };
        if let Err(Error::InvalidState | Error::MissingWeights | Error::InvalidConfig) =
            turn_with(&input, None, &mut s)
        {
            assert!(before == *s)
        }
    }
}

#[test]
fn random_run_parameters_never_panic() {
    let c = metadata(stories260k()).config;
    let mut rng = Rng(5);
    for _ in 0..300 {
        let prompt: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
        let max = rng.below(600) as u32;
        let temperature = rng.next() as u32 >> rng.below(32);
        let len = state_size(c, prompt.len(), max).unwrap_or(rng.below(1000));
        let mut buffer = Aligned::new(len);
        let _ = init_state(c, &mut buffer, &prompt, max, temperature, rng.next());
    }
}
