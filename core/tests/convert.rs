//! The converter against `docs/spec.md` ("Conversion"): tables within 1 of
//! the exact values, score keys that sort as the floats, and deterministic
//! bytes.

mod common;

use curta_core::convert::{synthetic_tokenizer, TINY};

use common::*;
use curta_core::convert::{convert, exp_table, rope_table, score_key, silu_table, STORIES15M};
use curta_core::format::TABLE_LEN;
use curta_core::tokenizer::MERGE_FLOOR_KEY;

/// Every entry within 1 of the exact value (here: the platform's libm).
fn close(entry: i64, exact: f64) -> bool {
    (entry as f64 - exact).abs() <= 1.0
}

#[test]
fn tables_are_within_one_of_the_exact_values() {
    let exp = exp_table();
    assert_eq!(exp.len(), TABLE_LEN);
    assert_eq!(exp[0], 1 << 30);
    for (k, &e) in exp.iter().enumerate() {
        assert!(
            close(e as i64, (-(k as f64) / 256.0).exp() * 2f64.powi(30)),
            "exp {k}"
        );
    }
    for (k, &s) in silu_table().iter().enumerate() {
        let x = -16.0 + k as f64 / 128.0;
        assert!(
            close(s as i64, x / (1.0 + (-x).exp()) * 65536.0),
            "silu {k}"
        );
    }
    for config in [STORIES15M, metadata(stories260k()).config] {
        let rope = rope_table(&config).unwrap();
        let hs = config.head_size();
        for p in 0..config.seq_len as usize {
            for i in 0..hs / 2 {
                let f = 10000f64.powf(-2.0 * i as f64 / hs as f64);
                let at = 2 * (p * hs / 2 + i);
                assert!(
                    close(rope[at] as i64, (p as f64 * f).cos() * 2f64.powi(24)),
                    "cos {p} {i}"
                );
                assert!(
                    close(rope[at + 1] as i64, (p as f64 * f).sin() * 2f64.powi(24)),
                    "sin {p} {i}"
                );
            }
        }
    }
}

#[test]
fn score_keys_sort_as_the_floats() {
    let scores = [
        f32::NEG_INFINITY,
        -1e10,
        -3.5,
        -1.0,
        -0.0,
        0.0,
        1e-30,
        2.0,
        1e10,
        f32::INFINITY,
    ];
    let keys: Vec<u32> = scores.iter().map(|&s| score_key(s).unwrap()).collect();
    for w in keys.windows(2) {
        assert!(w[0] <= w[1]);
    }
    assert_eq!(score_key(-0.0), score_key(0.0));
    assert!(score_key(f32::NAN).is_err());
    assert_eq!(score_key(-1e10).unwrap(), MERGE_FLOOR_KEY);
}

#[test]
fn conversion_is_deterministic() {
    let a = convert(&model_file("stories260K.bin"), &model_file("tok512.bin")).unwrap();
    assert_eq!(a, stories260k());
    let m = metadata(&a);
    assert_eq!(m.artifact_len(), a.len());
    m.check_tokenizer().unwrap();
    // The embedding of a shared model is its classifier, in the last section.
    assert!(m.config.shared_classifier);
    assert_eq!(m.classifier(7), m.embedding(7));
    assert_eq!(m.embedding(511).section as usize, m.section_count() - 1);
}

#[test]
fn an_unshared_classifier_follows_the_embedding() {
    let mut checkpoint = curta_core::convert::synthetic_checkpoint(&TINY, 5).unwrap();
    checkpoint[20..24].copy_from_slice(&(-(TINY.vocab_size as i32)).to_le_bytes());
    let classifier = vec![0u8; 4 * (TINY.vocab_size * TINY.dim) as usize];
    checkpoint.extend_from_slice(&classifier);
    let artifact = convert(&checkpoint, &synthetic_tokenizer(TINY.vocab_size)).unwrap();
    let m = metadata(&artifact);
    assert!(!m.config.shared_classifier);
    assert_eq!(m.classifier(0).offset, m.embedding(0).byte_len());
    // An all-zero classifier: every logit is zero and token 0 is sampled.
    let mut state = new_state(m.config, b"a", 1, 0, 0);
    run_to_end(&artifact, &m, &mut state);
    assert_eq!(u32s(curta_core::output_tokens(m.config, &state)), [0]);
}

#[test]
fn sha256_matches_known_digests() {
    use curta_core::sha256::{hex, sha256, Sha256};
    let hexed = |d| String::from_utf8(hex(&d).to_vec()).unwrap();
    assert_eq!(
        hexed(sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hexed(sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let long: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let mut s = Sha256::new();
    for part in long.chunks(37) {
        s.update(part);
    }
    assert_eq!(s.finish(), sha256(&long));
    // The real stories260K checkpoint, against its published digest.
    assert_eq!(
        hexed(sha256(&model_file("stories260K.bin"))),
        "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696"
    );
}
