//! The checkpoint converter: llama2.c's checkpoint and `tokenizer.bin` into a
//! `CURTAW01` artifact, exactly as `docs/spec.md` ("Conversion") prescribes.
//! The only code in the crate that uses floating point.
//!
//! `exp`, `sin` and `cos` are computed here from `+ - * /` alone, which IEEE
//! 754 rounds the same way on every target, so a native and a WebAssembly
//! conversion give the same bytes whatever their math libraries do.

use std::vec::Vec;

use crate::format::{
    align8, header, matrix_len, read_u64, ChargeTable, Config, LayerMatrix, Layout, Metadata,
    ZeroArrays, FLAG_SHARED_CLASSIFIER, MAGIC, MAX_SECTION_LEN, MAX_TOKEN_BYTES, SECTION_ENTRY_LEN,
    SECTION_TABLE, TABLE_LEN, VERSION,
};
use crate::Error;

/// `round` as `docs/spec.md` defines it: nearest, ties away from zero.
fn round(v: f64) -> f64 {
    v.round()
}

/// `e^x`: range reduction by ln 2, then a Taylor series on |r| <= ln(2)/2.
pub fn exp(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    if x < -745.0 {
        return 0.0;
    }
    let k = round(x / core::f64::consts::LN_2);
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for n in 1..=18 {
        term = term * r / n as f64;
        sum += term;
    }
    let k = k as i64;
    // 2^k as a bit pattern; the ranges used here keep k inside the normals.
    sum * f64::from_bits(((1023 + k) as u64) << 52)
}

/// `sin` and `cos` of `x >= 0`: Cody-Waite reduction by pi/2 in three parts
/// (fdlibm's), then Taylor series on |r| <= pi/4.
pub fn sin_cos(x: f64) -> (f64, f64) {
    const PIO2_1: f64 = 1.570_796_326_734_125_6;
    const PIO2_2: f64 = 6.077_100_506_303_966e-11;
    const PIO2_2T: f64 = 2.022_266_248_795_950_6e-21;
    let k = round(x / core::f64::consts::FRAC_PI_2);
    let r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_2T;
    let r2 = r * r;
    let (mut s, mut c) = (r, 1.0);
    let (mut ts, mut tc) = (r, 1.0);
    for n in 1..=12 {
        let n = n as f64;
        ts = -ts * r2 / ((2.0 * n) * (2.0 * n + 1.0));
        tc = -tc * r2 / ((2.0 * n - 1.0) * (2.0 * n));
        s += ts;
        c += tc;
    }
    match (k as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// `round(v * 2^bits)` as an `i32`, or `InvalidFormat` when it does not fit.
fn fixed_i32(v: f64, bits: i32) -> Result<i32, Error> {
    let r = round(v * (2f64).powi(bits));
    if r.is_nan() || r < i32::MIN as f64 || r > i32::MAX as f64 {
        return Err(Error::InvalidFormat);
    }
    Ok(r as i32)
}

/// A float score's key: a `u32` that sorts as the float does, -0.0 as +0.0.
pub fn score_key(score: f32) -> Result<u32, Error> {
    if score.is_nan() {
        return Err(Error::InvalidFormat);
    }
    let bits = if score == 0.0 { 0 } else { score.to_bits() };
    Ok(if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    })
}

/// A conversion input refused: the core error, and why in words, for people
/// (`convert_explained`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub error: Error,
    pub reason: String,
}

impl Refusal {
    fn format(reason: String) -> Refusal {
        Refusal {
            error: Error::InvalidFormat,
            reason,
        }
    }
}

/// Which input of a conversion a `Refusal` is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Checkpoint,
    Tokenizer,
}

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
    pub config: Config,
    pub shared_classifier: bool,
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
        let shared_classifier = h[5] > 0;
        let classifier = if shared_classifier {
            None
        } else {
            Some(r.f32s(v * d, "the classifier")?)
        };
        r.end(&format!("a checkpoint of this shape ({config})"))?;
        Ok(Checkpoint {
            config,
            shared_classifier,
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

/// Quantizes one row: `(scale, bytes)` as `docs/spec.md` ("Conversion")
/// prescribes.
fn quantize_row(row: &[f32], out: &mut [u8]) -> Result<u32, Error> {
    if row.iter().any(|w| !w.is_finite()) {
        return Err(Error::InvalidFormat);
    }
    let m = row.iter().fold(0f64, |m, &w| m.max((w as f64).abs()));
    if m == 0.0 {
        out.fill(128);
        return Ok(0);
    }
    let s = m / 127.0;
    for (o, &w) in out.iter_mut().zip(row) {
        let q = round(w as f64 / s).clamp(-127.0, 127.0) as i32;
        *o = (q + 128) as u8;
    }
    let scale = round(s * 16_777_216.0);
    if scale > u32::MAX as f64 {
        return Err(Error::InvalidFormat);
    }
    Ok(scale as u32)
}

/// Appends a matrix blob: the rows' scales, then their bytes in the row
/// kernel's tiled order (`kernel::tiled_index`), padded to 8.
fn push_matrix(
    out: &mut Vec<u8>,
    w: &[f32],
    rows: u32,
    cols: u32,
    what: &str,
) -> Result<(), Refusal> {
    let (rows, cols) = (rows as usize, cols as usize);
    let start = out.len();
    out.resize(start + matrix_len(rows as u32, cols as u32) as usize, 0);
    let (scales, weights) = out[start..].split_at_mut(4 * rows);
    let mut row = vec![0u8; cols];
    for r in 0..rows {
        let scale = quantize_row(&w[r * cols..(r + 1) * cols], &mut row).map_err(|_| {
            Refusal::format(format!(
                "row {r} of {what} has a weight too large for a 32-bit row scale"
            ))
        })?;
        scales[4 * r..4 * r + 4].copy_from_slice(&scale.to_le_bytes());
        for (j, &b) in row.iter().enumerate() {
            weights[crate::kernel::tiled_index(rows, cols, r, j)] = b;
        }
    }
    Ok(())
}

fn push_u32s(out: &mut Vec<u8>, values: impl IntoIterator<Item = u32>) -> u32 {
    let start = out.len();
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.resize(align8(out.len() as u64) as usize, 0);
    start as u32
}

/// The exponential table: entry k is `round(e^(-k/256) * 2^30)`.
pub fn exp_table() -> Vec<u32> {
    (0..TABLE_LEN)
        .map(|k| round(exp(-(k as f64) / 256.0) * 1_073_741_824.0) as u32)
        .collect()
}

/// The SiLU table: entry k is `round(silu(-16 + k/128) * 2^16)`.
pub fn silu_table() -> Vec<i32> {
    (0..TABLE_LEN)
        .map(|k| {
            let x = -16.0 + k as f64 / 128.0;
            round(x / (1.0 + exp(-x)) * 65_536.0) as i32
        })
        .collect()
}

/// The rotary table: for each position and pair, cosine then sine, 24 bits.
pub fn rope_table(config: &Config) -> Result<Vec<i32>, Error> {
    const LN_10000: f64 = 9.210_340_371_976_184;
    let hs = config.head_size();
    let mut out = Vec::with_capacity(config.seq_len as usize * hs);
    for p in 0..config.seq_len {
        for i in 0..hs / 2 {
            let f = exp(-(2.0 * i as f64 / hs as f64) * LN_10000);
            let (sin, cos) = sin_cos(p as f64 * f);
            out.push(fixed_i32(cos, 24)?);
            out.push(fixed_i32(sin, 24)?);
        }
    }
    Ok(out)
}

/// Converts a llama2.c checkpoint and tokenizer into an artifact planned
/// with the specification's charges.
pub fn convert(checkpoint: &[u8], tokenizer: &[u8]) -> Result<Vec<u8>, Error> {
    convert_explained(checkpoint, tokenizer, ChargeTable::Specification).map_err(|(_, r)| r.error)
}

/// `convert` with the charge table the artifact's flags choose, saying
/// which input it refuses and why.
pub fn convert_explained(
    checkpoint: &[u8],
    tokenizer: &[u8],
    charges: ChargeTable,
) -> Result<Vec<u8>, (Input, Refusal)> {
    let mut ck = Checkpoint::read(checkpoint).map_err(|r| (Input::Checkpoint, r))?;
    ck.config = ck.config.with_charges(charges);
    let vocab =
        Vocabulary::read(tokenizer, ck.config.vocab_size).map_err(|r| (Input::Tokenizer, r))?;
    assemble(&ck, &vocab).map_err(|r| (Input::Checkpoint, r))
}

/// Lays out an artifact from a parsed checkpoint and vocabulary, planned
/// with the checkpoint's `config.charges`.
pub fn build(ck: &Checkpoint, vocab: &Vocabulary) -> Result<Vec<u8>, Error> {
    assemble(ck, vocab).map_err(|r| r.error)
}

/// `build`, saying why it refuses.
fn assemble(ck: &Checkpoint, vocab: &Vocabulary) -> Result<Vec<u8>, Refusal> {
    let config = ck.config;
    let too_large = |what: &str, len: u64| Refusal {
        error: Error::InvalidConfig,
        reason: format!("{what} would be {len} bytes: a section holds at most {MAX_SECTION_LEN}"),
    };
    let layout = Layout::new(&config).map_err(|_| {
        let layer: u64 = LayerMatrix::ALL
            .iter()
            .map(|m| {
                let (rows, cols) = m.shape(&config);
                matrix_len(rows, cols)
            })
            .sum();
        let table = matrix_len(config.vocab_size, config.dim);
        if layer > MAX_SECTION_LEN as u64 {
            too_large("one layer", layer)
        } else {
            too_large("the token embedding", table)
        }
    })?;
    if !ck.shared_classifier && 2 * layout.table_len > MAX_SECTION_LEN as u64 {
        // An unshared classifier shares the output section with the embedding.
        return Err(Refusal {
            error: Error::InvalidFormat,
            ..too_large("the embedding and the classifier", 2 * layout.table_len)
        });
    }
    let count = layout.section_count() as usize;

    // Section zero.
    let mut zero = vec![0u8; align8((SECTION_TABLE + count * SECTION_ENTRY_LEN) as u64) as usize];
    zero[..8].copy_from_slice(&MAGIC);
    let put = |z: &mut Vec<u8>, at: usize, v: u32| z[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut zero, header::VERSION, VERSION);
    put(&mut zero, header::SECTION_COUNT, count as u32);
    zero[header::CONFIG..header::CONFIG + Config::LEN].copy_from_slice(&config.to_bytes());
    let shared = if ck.shared_classifier {
        FLAG_SHARED_CLASSIFIER
    } else {
        0
    };
    put(&mut zero, header::FLAGS, shared | config.charges.flag());
    let inv_sqrt = round(16_777_216.0 / (config.head_size() as f64).sqrt()) as u32;
    put(&mut zero, header::INV_SQRT_HEAD, inv_sqrt);
    let longest = vocab.tokens.iter().map(Vec::len).max().unwrap_or(0) as u32;
    put(&mut zero, header::MAX_TOKEN_LEN, longest);

    let at = push_u32s(&mut zero, exp_table());
    put(&mut zero, header::EXP_TABLE, at);
    let at = push_u32s(&mut zero, silu_table().into_iter().map(|v| v as u32));
    put(&mut zero, header::SILU_TABLE, at);
    let rope = rope_table(&config).map_err(|error| Refusal {
        error,
        reason: "a rotary entry does not fit 32 bits".into(),
    })?;
    let at = push_u32s(&mut zero, rope.into_iter().map(|v| v as u32));
    put(&mut zero, header::ROPE_TABLE, at);
    let mut norms = Vec::with_capacity(ZeroArrays::new(&config).norms as usize / 4);
    for w in ck
        .attention_norms
        .iter()
        .chain(&ck.ffn_norms)
        .chain(&ck.final_norm)
    {
        let fixed = fixed_i32(*w as f64, 24).map_err(|_| {
            Refusal::format(format!(
                "a normalization weight of {w} does not fit 32 bits with 24 fractional bits"
            ))
        })?;
        norms.push(fixed as u32);
    }
    let at = push_u32s(&mut zero, norms);
    put(&mut zero, header::NORMS, at);

    let mut offsets = Vec::with_capacity(vocab.tokens.len() + 1);
    let mut pool = Vec::new();
    offsets.push(0u32);
    for t in &vocab.tokens {
        pool.extend_from_slice(t);
        offsets.push(pool.len() as u32);
    }
    let at = push_u32s(&mut zero, offsets);
    put(&mut zero, header::TOKEN_OFFSETS, at);
    let keys = vocab
        .scores
        .iter()
        .map(|&s| score_key(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| Refusal::format("a token score is NaN".into()))?;
    let at = push_u32s(&mut zero, keys);
    put(&mut zero, header::TOKEN_SCORES, at);
    let mut sorted: Vec<u32> = (0..config.vocab_size).collect();
    sorted.sort_by(|&a, &b| vocab.tokens[a as usize].cmp(&vocab.tokens[b as usize]));
    let at = push_u32s(&mut zero, sorted);
    put(&mut zero, header::TOKEN_SORTED, at);
    let at = zero.len() as u32;
    put(&mut zero, header::TOKEN_BYTES, at);
    put(&mut zero, header::TOKEN_BYTES_LEN, pool.len() as u32);
    zero.extend_from_slice(&pool);
    zero.resize(align8(zero.len() as u64) as usize, 0);
    if zero.len() > MAX_SECTION_LEN {
        return Err(Refusal {
            error: Error::InvalidFormat,
            ..too_large("section zero (tables, norms, tokenizer)", zero.len() as u64)
        });
    }

    // The matrix sections, in the layout's order.
    let mut sections: Vec<Vec<u8>> = Vec::with_capacity(count - 1);
    for s in 1..=layout.layer_sections {
        let mut out =
            Vec::with_capacity(layout.section_len(&config, s, ck.shared_classifier) as usize);
        let first = (s - 1) * layout.layers_per_section;
        let last = (first + layout.layers_per_section).min(config.n_layers);
        for layer in first..last {
            for (k, which) in LayerMatrix::ALL.iter().enumerate() {
                let (rows, cols) = which.shape(&config);
                let per = rows as usize * cols as usize;
                let w = &ck.layers[k][layer as usize * per..(layer as usize + 1) * per];
                push_matrix(
                    &mut out,
                    w,
                    rows,
                    cols,
                    &format!("layer {layer}'s {which:?}"),
                )?;
            }
        }
        sections.push(out);
    }
    let mut output = Vec::new();
    let (vocab_size, dim) = (config.vocab_size, config.dim);
    push_matrix(&mut output, &ck.embedding, vocab_size, dim, "the embedding")?;
    if let Some(cls) = &ck.classifier {
        push_matrix(&mut output, cls, vocab_size, dim, "the classifier")?;
    }
    sections.push(output);

    // The section table, then the whole file.
    let mut offset = zero.len() as u64;
    let entry = |z: &mut Vec<u8>, i: usize, off: u64, len: u64| {
        let at = SECTION_TABLE + i * SECTION_ENTRY_LEN;
        z[at..at + 8].copy_from_slice(&off.to_le_bytes());
        z[at + 8..at + 16].copy_from_slice(&len.to_le_bytes());
    };
    let zero_len = zero.len() as u64;
    entry(&mut zero, 0, 0, zero_len);
    for (i, s) in sections.iter().enumerate() {
        entry(&mut zero, i + 1, offset, s.len() as u64);
        offset = align8(offset + s.len() as u64);
    }
    let mut artifact = zero;
    for s in &sections {
        artifact.extend_from_slice(s);
        artifact.resize(align8(artifact.len() as u64) as usize, 0);
    }
    let zero_len = read_u64(&artifact, SECTION_TABLE + 8) as usize;
    let checked = Metadata::new(&artifact[..zero_len]).and_then(|m| m.check_tokenizer());
    checked.map_err(|error| Refusal {
        error,
        reason: "the artifact built from it does not check".into(),
    })?;
    Ok(artifact)
}

/// Reads and checks a whole artifact: section zero and every section's
/// place in the file.
pub fn open_artifact(artifact: &[u8]) -> Result<Metadata<'_>, Error> {
    let zero = read_u64(artifact, SECTION_TABLE + 8);
    if zero > artifact.len() as u64 {
        return Err(Error::InvalidFormat);
    }
    let m = Metadata::new(&artifact[..zero as usize])?;
    if m.artifact_len() != artifact.len() {
        return Err(Error::InvalidFormat);
    }
    m.check_tokenizer()?;
    Ok(m)
}

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
};

/// A deterministic synthetic llama2.c checkpoint of any shape: weights
/// uniform in `±1/sqrt(columns)` from xorshift64 (so activations keep a
/// sane size), norms of one, a shared classifier. The same seed gives the
/// same bytes on every platform.
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
    for v in ints {
        out.extend_from_slice(&(v as i32).to_le_bytes());
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
