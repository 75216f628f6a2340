//! A model whose embedding and classifier are split by rows across
//! sections (the stories42M shape: 20,320 rows, then 11,680) computes what
//! the whole matrices give. The expected values come from the checkpoint's
//! own floats, quantized here by `docs/spec.md`'s rule and multiplied by its
//! formula, not read through the layout.

mod common;

use common::{metadata, model_file, new_state, step};
use curta_core::convert::{convert, synthetic_checkpoint, STORIES42M};
use curta_core::state::{Header, StateLayout};
use curta_core::Phase;

/// `docs/spec.md`, "Conversion": a row's scale (24 fractional bits) and
/// its bytes.
fn quantize(row: &[f32]) -> (i64, Vec<i64>) {
    let m = row.iter().fold(0f64, |m, &w| m.max((w as f64).abs()));
    if m == 0.0 {
        return (0, vec![128; row.len()]);
    }
    let s = m / 127.0;
    let bytes = row
        .iter()
        .map(|&w| ((w as f64 / s).round().clamp(-127.0, 127.0) + 128.0) as i64)
        .collect();
    (((s * 16_777_216.0).round()) as i64, bytes)
}

fn i64s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_split_embedding_and_classifier_give_the_whole_matrices_values() {
    let c = STORIES42M;
    let checkpoint = synthetic_checkpoint(&c, 1).unwrap();
    let artifact = convert(&checkpoint, &model_file("tokenizer.bin")).unwrap();
    let m = metadata(&artifact);
    assert_eq!(m.layout.table_sections, 2);
    let dim = c.dim as usize;
    // The embedding (the classifier too: shared) is the checkpoint's first
    // table, after its 28-byte header.
    let row = |token: usize| -> Vec<f32> {
        let at = 28 + 4 * token * dim;
        checkpoint[at..at + 4 * dim]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    };

    // "girls bid 漢": tokens 14000 (the first piece), 21000 and 31652 (the
    // second).
    let prompt = "girls bid 漢".as_bytes();
    let mut state = new_state(c, prompt, 1, 0, 0);
    let l = StateLayout::new(&c, prompt.len(), 1).unwrap();
    let x = |state: &[u8]| i64s(&state[l.x..l.x + 8 * dim]);
    let mut embedded = vec![];
    loop {
        let h = Header::read(&state).unwrap();
        if h.phase == Phase::Done {
            break;
        }
        step(&artifact, &m, &mut state);
        // A split embedding starts its turn, which ends inside the query
        // (before anything adds to x): x is the token's row.
        if h.phase == Phase::Embedding {
            let token = Header::read(&state).unwrap().token as usize;
            let (scale, bytes) = quantize(&row(token));
            let want: Vec<i64> = bytes.iter().map(|b| ((b - 128) * scale) >> 8).collect();
            assert_eq!(x(&state), want, "the embedding of token {token}");
            embedded.push(token);
        }
    }
    assert_eq!(embedded, [1, 14000, 21000, 29871, 31652]);

    // Every logit of the last position: ((acc - 128 s) * scale) >> 24 over
    // the final x (the run's one token sampled from them).
    let x = x(&state);
    let s: i64 = x.iter().fold(0i64, |a, &v| a.wrapping_add(v));
    let logits = i64s(&state[l.logits..l.logits + 8 * c.vocab_size as usize]);
    for (token, &logit) in logits.iter().enumerate() {
        let (scale, bytes) = quantize(&row(token));
        let acc = bytes
            .iter()
            .zip(&x)
            .fold(0i64, |a, (&b, &v)| a.wrapping_add(b.wrapping_mul(v)));
        let want = acc.wrapping_sub(128i64.wrapping_mul(s)).wrapping_mul(scale) >> 24;
        assert_eq!(logit, want, "logit {token}");
    }
}
