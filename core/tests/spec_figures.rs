//! Every figure `docs/spec.md` gives: state sizes, encodings, quotes and
//! "One position, added up", under the specification's table and the
//! measured one.

mod common;

use common::*;
use curta_core::convert::STORIES15M;
use curta_core::format::{ChargeTable, Layout};
use curta_core::inference::quote_turns;
use curta_core::planner::{Walker, CHARGES, MEASURED_CHARGES};
use curta_core::protocol::RUN_HEADER_LEN;
use curta_core::state::{Cursor, Phase, RunShape};
use curta_core::{output_tokens, state_size, Config};

const PROMPT: &[u8] = b"Once upon a time";

fn stories260k_config() -> Config {
    metadata(stories260k()).config
}

#[test]
fn run_account_sizes() {
    let s260 = stories260k_config();
    let account =
        |c: Config, prompt: usize, max: u32| state_size(c, prompt, max).unwrap() + RUN_HEADER_LEN;
    assert_eq!(account(s260, 16, 12), 48_304);
    assert_eq!(account(STORIES15M, 16, 8), 624_832);
    assert_eq!(account(s260, 0, 512), 736_328);
    assert_eq!(account(STORIES15M, 0, 256), 3_852_680);
}

fn prompt_tokens_after_tokenizing(artifact: &[u8], prompt: &[u8]) -> Vec<u32> {
    let m = metadata(artifact);
    let mut state = new_state(m.config, prompt, 1, 0, 0);
    while StateInfo::read(&state).unwrap().phase < Phase::Embedding {
        step(artifact, &m, &mut state);
    }
    u32s(curta_core::state::prompt_tokens(m.config, &state))
}

use curta_core::StateInfo;

#[test]
fn reference_prompt_encodes_as_llama2c() {
    assert_eq!(
        prompt_tokens_after_tokenizing(stories260k(), PROMPT),
        [1, 403, 407, 261, 378]
    );
    assert_eq!(
        prompt_tokens_after_tokenizing(stories15m(), PROMPT),
        [1, 9038, 2501, 263, 931]
    );
}

#[test]
fn empty_prompt_is_the_opening_token_alone() {
    assert_eq!(prompt_tokens_after_tokenizing(stories260k(), b""), [1]);
    assert_eq!(prompt_tokens_after_tokenizing(stories15m(), b""), [1]);
}

#[test]
fn characters_without_a_token_fall_back_to_bytes() {
    // "漢" (e6 bc a2) is not among stories260K's 512 tokens: three byte
    // tokens, id byte + 3, after the opening token and the space.
    let tokens = prompt_tokens_after_tokenizing(stories260k(), "漢".as_bytes());
    let m = metadata(stories260k());
    assert_eq!(tokens, [1, m.lookup(b" "), 0xe6 + 3, 0xbc + 3, 0xa2 + 3]);
    // "€" is one of them.
    let tokens = prompt_tokens_after_tokenizing(stories260k(), "€".as_bytes());
    assert_eq!(m.token(tokens[2]), "€".as_bytes());
    // llama2's vocabulary merges the space and "é" into one token.
    let tokens = prompt_tokens_after_tokenizing(stories15m(), "é".as_bytes());
    let m15 = metadata(stories15m());
    assert_eq!(tokens.len(), 2);
    assert_eq!(m15.token(tokens[1]), " é".as_bytes());
}

fn quote(artifact: &[u8], prompt: &[u8], max: u32) -> u64 {
    let m = metadata(artifact);
    let mut scratch = Aligned::new(state_size(m.config, prompt.len(), max).unwrap());
    quote_turns(m.config, m.bytes, prompt, max, 0, &mut scratch).unwrap()
}

#[test]
fn quotes_match_the_specification() {
    assert_eq!(quote(stories260k(), PROMPT, 12), 20);
    assert_eq!(quote(stories15m(), PROMPT, 8), 530);
}

#[test]
fn quotes_under_the_measured_table() {
    assert_eq!(quote(stories260k_measured(), PROMPT, 12), 16);
    assert_eq!(quote(stories15m_measured(), PROMPT, 8), 396);
    assert_eq!(quote(stories260k_measured(), b"", 512), 1_122);
}

/// The same run under the two tables ends in the same state, byte for byte,
/// but the count of turns: the tables move the cuts, never the work.
#[test]
fn both_tables_give_the_same_state_but_the_turn_count() {
    use curta_core::state::field;
    for (spec, measured, max_tokens, temperature_q16, seed) in [
        (stories260k(), stories260k_measured(), 12, 0, 0),
        (stories260k(), stories260k_measured(), 24, 52_429, 1),
        (stories15m(), stories15m_measured(), 8, 0, 0),
    ] {
        let run = |artifact: &[u8]| {
            let m = metadata(artifact);
            let mut state = new_state(m.config, PROMPT, max_tokens, temperature_q16, seed);
            let turns = run_to_end(artifact, &m, &mut state);
            state[field::TURNS..field::TURNS + 8].fill(0);
            (state, turns)
        };
        let ((a, spec_turns), (b, measured_turns)) = (run(spec), run(measured));
        assert!(
            a[..] == b[..],
            "the final states differ at T={temperature_q16}"
        );
        assert!(
            measured_turns < spec_turns,
            "{measured_turns} vs {spec_turns}"
        );
    }
}

#[test]
fn a_quote_counts_the_turns_a_run_takes() {
    let artifact = stories260k();
    let m = metadata(artifact);
    let mut state = new_state(m.config, PROMPT, 12, 0, 0);
    assert_eq!(run_to_end(artifact, &m, &mut state), 20);
    assert_eq!(u32s(output_tokens(m.config, &state)).len(), 12);
}

/// The charges of one generating position, summed per phase, from a state
/// put at phase 3 of `position` at temperature zero, under the table
/// `config.charges` chooses.
fn one_position(config: &Config, position: u32) -> ([u64; 20], u64) {
    let run = RunShape {
        prompt_tokens: 1,
        max_tokens: position + 1,
        temperature_q16: 0,
    };
    let mut cursor = Cursor {
        phase: Phase::Embedding,
        position,
        generated: position,
        ..Cursor::default()
    };
    let mut per_phase = [0u64; 20];
    let mut turns = 0;
    while cursor.phase != Phase::Done {
        let shape = (config, &Layout::new(config).unwrap());
        let mut walker = Walker::new(shape, &run, &cursor, CHARGES.allowance).unwrap();
        while let Some(step) = walker.next_step() {
            per_phase[walker.cursor.phase as usize] += step.cost as u64;
            walker.advance(&step);
        }
        cursor = walker.cursor;
        turns += 1;
    }
    (per_phase, turns)
}

#[test]
fn one_position_added_up() {
    // Rows of docs/spec.md's table: phases, then the two columns.
    let rows: [(&[u32], u64, u64); 17] = [
        (&[3], 1_696, 5_280),
        (&[4], 23_660, 92_904),
        (&[5], 110_070, 2_373_876),
        (&[6], 58_550, 2_392_176),
        (&[7], 58_550, 2_392_176),
        (&[8], 18_720, 86_976),
        (&[9], 4_083_080, 8_403_448),
        (&[10], 110_070, 2_378_352),
        (&[11], 26_220, 106_728),
        (&[12], 288_270, 6_321_384),
        (&[13], 288_270, 6_316_908),
        (&[14], 24_000, 114_624),
        (&[15], 279_012, 6_247_788),
        (&[16], 4_000, 15_552),
        (&[17], 4_732, 15_484),
        (&[18], 169_854, 43_785_854),
        (&[19], 10_142, 357_020),
    ];
    let (s260, t260) = one_position(&stories260k_config(), 511);
    let (s15, t15) = one_position(&STORIES15M, 255);
    for (phases, a, b) in rows {
        let sum = |s: &[u64; 20]| phases.iter().map(|&p| s[p as usize]).sum::<u64>();
        assert_eq!((sum(&s260), sum(&s15)), (a, b), "phase {phases:?}");
    }
    assert_eq!((t260, t15), (5, 62));
    let fixed = |turns: u64| turns * CHARGES.turn as u64;
    assert_eq!((fixed(t260), fixed(t15)), (90_000, 1_116_000));
    let total = |s: &[u64; 20], t: u64| s.iter().sum::<u64>() + fixed(t);
    assert_eq!(total(&s260, t260), 5_648_896);
    assert_eq!(total(&s15, t15), 82_522_530);
}

/// The plan takes whole heads in one step; its cuts and charges must be the
/// chunk walk's, for every turn of whole runs.
#[test]
fn plans_equal_the_chunk_walk() {
    use curta_core::planner::plan_cursor;
    for (config, prompt_tokens, max_tokens, temperature_q16) in [
        (stories260k_config(), 5, 507, 0),
        (STORIES15M, 5, 252, 0),
        (stories260k_config(), 1, 512, 52_429),
        (
            stories260k_config().with_charges(ChargeTable::Measured),
            5,
            507,
            0,
        ),
        (STORIES15M.with_charges(ChargeTable::Measured), 5, 252, 0),
        (
            stories260k_config().with_charges(ChargeTable::Measured),
            1,
            512,
            52_429,
        ),
    ] {
        let run = RunShape {
            prompt_tokens,
            max_tokens,
            temperature_q16,
        };
        let mut cursor = Cursor {
            phase: Phase::Embedding,
            ..Cursor::default()
        };
        let mut turns = 0;
        while cursor.phase != Phase::Done && turns < 3000 {
            let plan = plan_cursor(&config, &run, &cursor, CHARGES.allowance).unwrap();
            let shape = (&config, &Layout::new(&config).unwrap());
            let mut walker = Walker::new(shape, &run, &cursor, CHARGES.allowance).unwrap();
            while let Some(step) = walker.next_step() {
                walker.advance(&step);
            }
            assert_eq!(
                (plan.end, plan.estimated_cu),
                (walker.cursor, walker.used),
                "turn {turns}"
            );
            assert_eq!(
                &plan.sections[..plan.section_count],
                &walker.sections[..walker.section_count]
            );
            assert_eq!(plan.max_generated, walker.max_generated);
            cursor = plan.end;
            turns += 1;
        }
    }
}

#[test]
fn one_position_added_up_under_the_measured_table() {
    // docs/spec.md, "The measured table": the same rows as above.
    let rows: [(&[u32], u64, u64); 17] = [
        (&[3], 1_088, 3_776),
        (&[4], 15_820, 74_088),
        (&[5], 82_880, 1_788_864),
        (&[6], 47_360, 1_825_280),
        (&[7], 47_360, 1_825_280),
        (&[8], 14_920, 74_352),
        (&[9], 3_586_904, 7_775_376),
        (&[10], 82_880, 1_788_864),
        (&[11], 17_740, 84_456),
        (&[12], 211_940, 4_749_184),
        (&[13], 213_220, 4_749_184),
        (&[14], 18_200, 93_360),
        (&[15], 222_680, 4_753_984),
        (&[16], 2_880, 11_520),
        (&[17], 3_164, 12_348),
        (&[18], 123_648, 32_824_000),
        (&[19], 4_332, 193_260),
    ];
    let measured = ChargeTable::Measured;
    let (s260, t260) = one_position(&stories260k_config().with_charges(measured), 511);
    let (s15, t15) = one_position(&STORIES15M.with_charges(measured), 255);
    for (phases, a, b) in rows {
        let sum = |s: &[u64; 20]| phases.iter().map(|&p| s[p as usize]).sum::<u64>();
        assert_eq!((sum(&s260), sum(&s15)), (a, b), "phase {phases:?}");
    }
    assert_eq!((t260, t15), (4, 47));
    let fixed = |turns: u64| turns * MEASURED_CHARGES.turn as u64;
    assert_eq!((fixed(t260), fixed(t15)), (24_000, 282_000));
    let total = |s: &[u64; 20], t: u64| s.iter().sum::<u64>() + fixed(t);
    assert_eq!(total(&s260, t260), 4_721_016);
    assert_eq!(total(&s15, t15), 62_909_176);
}

/// `docs/spec.md`, "Conversion": the measured table sets the flags' bit 1,
/// and nothing else in the artifact changes.
#[test]
fn a_measured_artifact_differs_in_its_flag_alone() {
    use curta_core::format::{header, FLAG_MEASURED_CHARGES};
    let (spec, measured) = (stories260k(), stories260k_measured());
    assert_eq!(spec.len(), measured.len());
    let flags = header::FLAGS..header::FLAGS + 4;
    let word = |a: &[u8]| u32::from_le_bytes(a[flags.clone()].try_into().unwrap());
    assert_eq!(word(measured), word(spec) | FLAG_MEASURED_CHARGES);
    assert_eq!(spec[..flags.start], measured[..flags.start]);
    assert_eq!(spec[flags.end..], measured[flags.end..]);
    assert_eq!(metadata(measured).config.charges, ChargeTable::Measured);
    assert_eq!(metadata(spec).config.charges, ChargeTable::Specification);
}

/// What a client asks for a turn (docs/client.md, "Compute-unit limits"):
/// the measured table's price of the chunks the model's own table cut. A
/// measured-planned turn's price is its plan, a tokenizing turn's the
/// allowance, and a specification-planned turn's about three quarters of
/// its plan: stories260K's reference run's second turn, 1,349,821 charged,
/// is priced 1,043,787 (as `curta-core plan` prints it).
#[test]
fn a_turn_is_priced_at_the_measured_table() {
    use curta_core::planner::measured_price;
    for (artifact, measured, second_turn) in [
        (stories260k(), false, Some((1_349_821, 1_043_787))),
        (stories260k_measured(), true, None),
        (stories15m(), false, None),
    ] {
        let m = metadata(artifact);
        let mut state = new_state(m.config, PROMPT, 8, 0, 0);
        let (mut priced, mut planned) = (0u64, 0u64);
        for turn in 1.. {
            let plan = curta_core::planner::plan_turn(m.config, &state).unwrap();
            let price = measured_price(m.config, &state, CHARGES.allowance).unwrap();
            match (turn, measured) {
                (1, _) => assert_eq!(price, CHARGES.allowance, "a tokenizing turn"),
                (_, true) => assert_eq!(price, plan.estimated_cu, "turn {turn}"),
                (_, false) => assert!(price < plan.estimated_cu, "turn {turn}"),
            }
            if let (2, Some(figures)) = (turn, second_turn) {
                assert_eq!((plan.estimated_cu, price), figures);
            }
            (priced, planned) = (priced + price as u64, planned + plan.estimated_cu as u64);
            if step(artifact, &m, &mut state).complete {
                break;
            }
        }
        if !measured {
            assert!(priced * 100 < planned * 80, "{priced} of {planned}");
        }
    }
}
