//! Synthetic inputs: the shapes of llama2.c's stories models, TinyLlama's
//! and a tiny test model, and deterministic checkpoints and tokenizers of
//! any shape.

use std::vec::Vec;

use crate::format::{ChargeTable, Config, LayerMatrix};
use crate::Error;

/// The shape of llama2.c's stories15M, whose weights cannot be had here.
pub const STORIES15M: Config = Config {
    dim: 288,
    hidden_dim: 768,
    n_layers: 6,
    n_heads: 6,
    n_kv_heads: 6,
    vocab_size: 32_000,
    seq_len: 256,
    charges: ChargeTable::Specification,
    shared_classifier: true,
};

/// The shape of llama2.c's stories42M.
pub const STORIES42M: Config = Config {
    dim: 512,
    hidden_dim: 1_376,
    n_layers: 8,
    n_heads: 8,
    n_kv_heads: 8,
    vocab_size: 32_000,
    seq_len: 1_024,
    charges: ChargeTable::Specification,
    shared_classifier: true,
};

/// The shape of llama2.c's stories110M.
pub const STORIES110M: Config = Config {
    dim: 768,
    hidden_dim: 2_048,
    n_layers: 12,
    n_heads: 12,
    n_kv_heads: 12,
    vocab_size: 32_000,
    seq_len: 1_024,
    charges: ChargeTable::Specification,
    shared_classifier: true,
};

/// The shape of TinyLlama-1.1B (grouped-query attention: 4 key/value heads).
pub const TINYLLAMA_1_1B: Config = Config {
    dim: 2_048,
    hidden_dim: 5_632,
    n_layers: 22,
    n_heads: 32,
    n_kv_heads: 4,
    vocab_size: 32_000,
    seq_len: 2_048,
    charges: ChargeTable::Specification,
    // Its own classifier (`lm_head`), as the real model has.
    shared_classifier: false,
};

/// The shapes `curta-core synthesize --shape` names.
pub const SHAPES: [(&str, Config); 4] = [
    ("stories15M", STORIES15M),
    ("stories42M", STORIES42M),
    ("stories110M", STORIES110M),
    ("tinyllama-1.1b", TINYLLAMA_1_1B),
];

/// A deterministic synthetic llama2.c checkpoint of any shape: weights
/// uniform in `±1/sqrt(columns)` from xorshift64 (so activations keep a
/// sane size), norms of one, and a classifier of its own after the rest
/// unless the shape's is shared (llama2.c's negative `vocab_size`). The
/// same seed gives the same bytes on every platform.
pub fn synthetic_checkpoint(config: &Config, seed: u64) -> Result<Vec<u8>, Error> {
    config.validate()?;
    let mut x = if seed == 0 {
        crate::state::ZERO_SEED
    } else {
        seed
    };
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // 24 random bits as a float in [-1, 1): exact in f32.
        ((x >> 40) as f32 / 8_388_608.0) - 1.0
    };
    let mut out = Vec::new();
    let ints = [
        config.dim,
        config.hidden_dim,
        config.n_layers,
        config.n_heads,
        config.n_kv_heads,
        config.vocab_size,
        config.seq_len,
    ];
    for (i, v) in ints.into_iter().enumerate() {
        let v = if i == 5 && !config.shared_classifier {
            -(v as i32)
        } else {
            v as i32
        };
        out.extend_from_slice(&v.to_le_bytes());
    }
    let push =
        |out: &mut Vec<u8>, count: usize, amplitude: f32, uniform: &mut dyn FnMut() -> f32| {
            for _ in 0..count {
                let v = if amplitude == 0.0 {
                    1.0
                } else {
                    uniform() * amplitude
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
    let (d, l) = (config.dim as usize, config.n_layers as usize);
    let amplitude = |cols: u32| 1.0 / (cols as f32).sqrt();
    push(&mut out, config.vocab_size as usize * d, 1.0, &mut uniform);
    push(&mut out, l * d, 0.0, &mut uniform);
    // llama2.c's order: the four attention matrices, the feed-forward
    // norms (`None`), then w1, w2, w3.
    let order = [
        Some(LayerMatrix::Query),
        Some(LayerMatrix::Key),
        Some(LayerMatrix::Value),
        Some(LayerMatrix::AttentionOutput),
        None,
        Some(LayerMatrix::Gate),
        Some(LayerMatrix::Down),
        Some(LayerMatrix::Up),
    ];
    for item in order {
        match item {
            Some(which) => {
                let (rows, cols) = which.shape(config);
                let count = l * rows as usize * cols as usize;
                push(&mut out, count, amplitude(cols), &mut uniform);
            }
            None => push(&mut out, l * d, 0.0, &mut uniform),
        }
    }
    push(&mut out, d, 0.0, &mut uniform);
    // The legacy rotary blocks: present in the file, unused.
    out.resize(
        out.len() + 2 * 4 * config.seq_len as usize * config.head_size() / 2,
        0,
    );
    if !config.shared_classifier {
        push(
            &mut out,
            config.vocab_size as usize * d,
            amplitude(config.dim),
            &mut uniform,
        );
    }
    Ok(out)
}

/// A llama2.c `tokenizer.bin` of `vocab` tokens for synthetic models:
/// llama2's three specials, the 256 byte tokens, " ", then " a", " b", ...
/// (scores falling with the id).
pub fn synthetic_tokenizer(vocab: u32) -> Vec<u8> {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec(), b"<s>".to_vec(), b"</s>".to_vec()];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>").into_bytes()));
    tokens.push(b" ".to_vec());
    let mut n = 0u32;
    while tokens.len() < vocab as usize {
        // Distinct tokens: " " then base-26 letters.
        let mut t = vec![b' '];
        let mut k = n;
        loop {
            t.push(b'a' + (k % 26) as u8);
            k /= 26;
            if k == 0 {
                break;
            }
        }
        tokens.push(t);
        n += 1;
    }
    tokens.truncate(vocab as usize);
    let mut out = 8i32.to_le_bytes().to_vec();
    for (i, t) in tokens.iter().enumerate() {
        out.extend_from_slice(&(-(i as f32)).to_le_bytes());
        out.extend_from_slice(&(t.len() as i32).to_le_bytes());
        out.extend_from_slice(t);
    }
    out
}

/// A tiny model shape for tests: dim 8, hidden 16, 1 layer, 2 heads,
/// vocab 260, context 8.
pub const TINY: Config = Config {
    dim: 8,
    hidden_dim: 16,
    n_layers: 1,
    n_heads: 2,
    n_kv_heads: 2,
    vocab_size: 260,
    seq_len: 8,
    charges: ChargeTable::Specification,
    shared_classifier: true,
};

/// A checkpoint of the `TINY` shape whose key weights are all 30,000: on
/// inputs near one its keys are far past the cache's 32 bits, so its first
/// position raises `Arithmetic`.
pub fn overflowing_checkpoint() -> Vec<u8> {
    let mut checkpoint = synthetic_checkpoint(&TINY, 3).expect("valid shape");
    let (d, v) = (TINY.dim as usize, TINY.vocab_size as usize);
    // After the header, the embedding, the attention norms and the query matrix.
    let wk = 28 + 4 * (v * d + d + d * d);
    for i in 0..d * d {
        checkpoint[wk + 4 * i..wk + 4 * i + 4].copy_from_slice(&30_000f32.to_le_bytes());
    }
    checkpoint
}
