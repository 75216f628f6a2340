//! Assembly: a parsed checkpoint and vocabulary laid out as an artifact,
//! its header, section table, tables, tokenizer and matrices.

use std::vec::Vec;

use super::quantize::{fixed_i32, push_matrix, round};
use super::tables::{exp_table, rope_table, score_key, silu_table};
use super::{Checkpoint, Refusal, Vocabulary};
use crate::format::{
    align8, header, read_u64, Config, LayerMatrix, Layout, MatrixRef, Metadata, ZeroArrays, MAGIC,
    MAX_SECTION_LEN, SECTION_ENTRY_LEN, SECTION_TABLE, VERSION,
};

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
    let layout = Layout::new(&config).map_err(|error| Refusal {
        error,
        reason: format!("no section holds four rows of a matrix of this shape ({config})"),
    })?;
    let count = layout.section_count() as usize;

    // Section zero.
    let mut zero = vec![0u8; align8((SECTION_TABLE + count * SECTION_ENTRY_LEN) as u64) as usize];
    zero[..8].copy_from_slice(&MAGIC);
    let put = |z: &mut Vec<u8>, at: usize, v: u32| z[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut zero, header::VERSION, VERSION);
    put(&mut zero, header::SECTION_COUNT, count as u32);
    zero[header::CONFIG..header::CONFIG + Config::LEN].copy_from_slice(&config.to_bytes());
    put(&mut zero, header::FLAGS, config.flags());
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
        return Err(Refusal::format(format!(
            "section zero (tables, norms, tokenizer) would be {} bytes: a section holds at most {MAX_SECTION_LEN}",
            zero.len()
        )));
    }

    // The matrix sections: every matrix, piece by piece, in the order of
    // the layout, which places each piece after the one before it in its
    // section.
    let mut sections: Vec<Vec<u8>> = (1..count as u32)
        .map(|s| Vec::with_capacity(layout.section_len(&config, s) as usize))
        .collect();
    let mut place = |piece: MatrixRef, whole: &[f32], what: &dyn Fn() -> String| {
        let out = &mut sections[piece.section as usize - 1];
        debug_assert_eq!(out.len(), piece.offset);
        let cols = piece.cols as usize;
        let rows = &whole[piece.first_row as usize * cols..piece.end_row() as usize * cols];
        push_matrix(out, rows, piece.rows, piece.cols, &what())
    };
    for layer in 0..config.n_layers {
        for (k, which) in LayerMatrix::ALL.iter().enumerate() {
            let (rows, cols) = which.shape(&config);
            let per = rows as usize * cols as usize;
            let w = &ck.layers[k][layer as usize * per..(layer as usize + 1) * per];
            let mut row = 0;
            while row < rows {
                let piece = layout.matrix(&config, layer, *which, row);
                place(piece, w, &|| format!("layer {layer}'s {which:?}"))?;
                row = piece.end_row();
            }
        }
    }
    let tables = [(&ck.embedding, "the embedding")].into_iter();
    let classifier = ck.classifier.as_ref().map(|c| (c, "the classifier"));
    for (i, (table, name)) in tables.chain(classifier).enumerate() {
        let mut row = 0;
        while row < config.vocab_size {
            let piece = match i {
                0 => layout.embedding(&config, row),
                _ => layout.classifier(&config, row),
            };
            place(piece, table, &|| name.to_string())?;
            row = piece.end_row();
        }
    }

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
