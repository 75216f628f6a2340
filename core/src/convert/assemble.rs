//! Assembly: a parsed checkpoint and vocabulary laid out as an artifact,
//! its header, section table, tables, tokenizer and matrices.

use std::vec::Vec;

use super::quantize::{fixed_i32, push_matrix, round};
use super::tables::{exp_table, rope_table, score_key, silu_table};
use super::{Checkpoint, Refusal, Vocabulary};
use crate::format::{
    align8, header, matrix_len, read_u64, Config, LayerMatrix, Layout, Metadata, ZeroArrays,
    FLAG_SHARED_CLASSIFIER, MAGIC, MAX_SECTION_LEN, SECTION_ENTRY_LEN, SECTION_TABLE, VERSION,
};
use crate::Error;

fn push_u32s(out: &mut Vec<u8>, values: impl IntoIterator<Item = u32>) -> u32 {
    let start = out.len();
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.resize(align8(out.len() as u64) as usize, 0);
    start as u32
}

/// `build`, saying why it refuses.
pub(super) fn assemble(ck: &Checkpoint, vocab: &Vocabulary) -> Result<Vec<u8>, Refusal> {
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
