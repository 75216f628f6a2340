//! Reading llama2.c's files: the checkpoint and `tokenizer.bin`, every
//! length checked, each refusal saying what is wrong.

use std::vec::Vec;

use super::Refusal;
use crate::format::{ChargeTable, Config, LayerMatrix, MAX_TOKEN_BYTES};
use crate::Error;

/// Reads little-endian 32-bit words from a file, checking every length.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// The next `n` bytes, which hold `what`.
    fn take(&mut self, n: usize, what: &dyn core::fmt::Display) -> Result<&'a [u8], Refusal> {
        let end = self.at.saturating_add(n);
        let out = self.bytes.get(self.at..end).ok_or_else(|| {
            Refusal::format(format!(
                "it is {} bytes, too short for {what} (bytes {} to {end})",
                self.bytes.len(),
                self.at
            ))
        })?;
        self.at = end;
        Ok(out)
    }

    fn i32(&mut self, what: &dyn core::fmt::Display) -> Result<i32, Refusal> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// `n` floats, each finite.
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, Refusal> {
        let start = self.at;
        let b = self.take(n.saturating_mul(4), &what)?;
        let values: Vec<f32> = b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Refusal::format(format!(
                "{what} holds {} at byte {}: weights must be finite",
                values[i],
                start + 4 * i
            )));
        }
        Ok(values)
    }

    /// Refuses bytes left after the last field.
    fn end(&self, what: &str) -> Result<(), Refusal> {
        if self.at == self.bytes.len() {
            return Ok(());
        }
        Err(Refusal::format(format!(
            "it is {} bytes, {} more than {what} ({} bytes)",
            self.bytes.len(),
            self.bytes.len() - self.at,
            self.at
        )))
    }
}

/// A llama2.c checkpoint, read and checked.
pub struct Checkpoint {
    /// Its shape; `config.shared_classifier` when `classifier` is `None`.
    pub config: Config,
    pub embedding: Vec<f32>,
    pub attention_norms: Vec<f32>,
    /// Per layer matrix kind, all layers: llama2.c's wq, wk, wv, wo, w1, w3, w2.
    pub layers: [Vec<f32>; 7],
    pub ffn_norms: Vec<f32>,
    pub final_norm: Vec<f32>,
    pub classifier: Option<Vec<f32>>,
}

/// llama2.c's names of the checkpoint header's seven values.
const HEADER_NAMES: [&str; 7] = [
    "dim",
    "hidden_dim",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "vocab_size",
    "seq_len",
];

impl Checkpoint {
    /// Parses llama2.c's legacy format: seven `i32`, then the `f32` tensors.
    /// A length that does not match the header, or a weight that is not
    /// finite, is `InvalidFormat`; a shape out of range `InvalidConfig`.
    pub fn parse(bytes: &[u8]) -> Result<Checkpoint, Error> {
        Checkpoint::read(bytes).map_err(|r| r.error)
    }

    /// `parse`, saying why it refuses.
    pub fn read(bytes: &[u8]) -> Result<Checkpoint, Refusal> {
        let mut r = Reader { bytes, at: 0 };
        let mut h = [0i32; 7];
        for v in &mut h {
            *v = r.i32(&"the 28-byte header")?;
        }
        // vocab_size alone may be negative: an unshared classifier.
        for (i, &v) in h.iter().enumerate() {
            if v <= 0 && !(i == 5 && v < 0 && v != i32::MIN) {
                return Err(Refusal::format(format!(
                    "its header gives {} {v}",
                    HEADER_NAMES[i]
                )));
            }
        }
        let config = Config {
            dim: h[0] as u32,
            hidden_dim: h[1] as u32,
            n_layers: h[2] as u32,
            n_heads: h[3] as u32,
            n_kv_heads: h[4] as u32,
            vocab_size: h[5].unsigned_abs(),
            seq_len: h[6] as u32,
            charges: ChargeTable::Specification,
            shared_classifier: h[5] > 0,
        };
        if let Some(limit) = config.out_of_range() {
            return Err(Refusal {
                error: Error::InvalidConfig,
                reason: format!("its header's {limit}"),
            });
        }
        let (d, l, v) = (
            config.dim as usize,
            config.n_layers as usize,
            config.vocab_size as usize,
        );
        let per_layer = |m: LayerMatrix| {
            let (rows, cols) = m.shape(&config);
            l * rows as usize * cols as usize
        };
        let embedding = r.f32s(v * d, "the token embedding")?;
        let attention_norms = r.f32s(l * d, "the attention norms")?;
        let wq = r.f32s(per_layer(LayerMatrix::Query), "wq")?;
        let wk = r.f32s(per_layer(LayerMatrix::Key), "wk")?;
        let wv = r.f32s(per_layer(LayerMatrix::Value), "wv")?;
        let wo = r.f32s(per_layer(LayerMatrix::AttentionOutput), "wo")?;
        let ffn_norms = r.f32s(l * d, "the feed-forward norms")?;
        let w1 = r.f32s(per_layer(LayerMatrix::Gate), "w1")?;
        let w2 = r.f32s(per_layer(LayerMatrix::Down), "w2")?;
        let w3 = r.f32s(per_layer(LayerMatrix::Up), "w3")?;
        let final_norm = r.f32s(d, "the final norm")?;
        // The two legacy rotary blocks, which the artifact recomputes.
        let rotary = 2 * 4 * config.seq_len as usize * config.head_size() / 2;
        r.take(rotary, &"the two legacy rotary blocks")?;
        let classifier = if config.shared_classifier {
            None
        } else {
            Some(r.f32s(v * d, "the classifier")?)
        };
        r.end(&format!("a checkpoint of this shape ({config})"))?;
        Ok(Checkpoint {
            config,
            embedding,
            attention_norms,
            layers: [wq, wk, wv, wo, w1, w3, w2],
            ffn_norms,
            final_norm,
            classifier,
        })
    }
}

/// llama2.c's `tokenizer.bin`: the declared longest token, then per token a
/// score, a length and the bytes.
pub struct Vocabulary {
    pub max_token_length: u32,
    pub tokens: Vec<Vec<u8>>,
    pub scores: Vec<f32>,
}

impl Vocabulary {
    /// Parses a tokenizer of `vocab_size` tokens: `InvalidFormat` for a
    /// length that does not match, a token over 128 bytes, a NaN score or
    /// two tokens of the same bytes.
    pub fn parse(bytes: &[u8], vocab_size: u32) -> Result<Vocabulary, Error> {
        Vocabulary::read(bytes, vocab_size).map_err(|r| r.error)
    }

    /// `parse`, saying why it refuses.
    pub fn read(bytes: &[u8], vocab_size: u32) -> Result<Vocabulary, Refusal> {
        let mut r = Reader { bytes, at: 0 };
        let max_token_length = r.i32(&"the longest token's length")?;
        if max_token_length < 0 {
            return Err(Refusal::format(format!(
                "it gives the longest token as {max_token_length} bytes"
            )));
        }
        let mut tokens = Vec::with_capacity(vocab_size as usize);
        let mut scores = Vec::with_capacity(vocab_size as usize);
        for id in 0..vocab_size {
            let what = || format!("token {id} of {vocab_size}");
            let b = r.take(4, &format_args!("{}'s score", what()))?;
            let score = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if score.is_nan() {
                return Err(Refusal::format(format!("{} scores NaN", what())));
            }
            let len = r.i32(&format_args!("{}'s length", what()))?;
            if !(0..=MAX_TOKEN_BYTES as i32).contains(&len) {
                return Err(Refusal::format(format!(
                    "{} is {len} bytes long: a token is 0 to {MAX_TOKEN_BYTES}",
                    what()
                )));
            }
            tokens.push(r.take(len as usize, &format_args!("{}", what()))?.to_vec());
            scores.push(score);
        }
        r.end(&format!(
            "a tokenizer of {vocab_size} tokens, the checkpoint's vocabulary"
        ))?;
        let mut sorted: Vec<u32> = (0..vocab_size).collect();
        sorted.sort_by(|&a, &b| tokens[a as usize].cmp(&tokens[b as usize]));
        if let Some(pair) = sorted
            .windows(2)
            .find(|p| tokens[p[0] as usize] == tokens[p[1] as usize])
        {
            let (a, b) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
            return Err(Refusal::format(format!(
                "tokens {a} and {b} are the same bytes: lookups need distinct tokens"
            )));
        }
        Ok(Vocabulary {
            max_token_length: max_token_length as u32,
            tokens,
            scores,
        })
    }
}
