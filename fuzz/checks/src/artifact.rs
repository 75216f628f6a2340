//! Target `artifact`: section zero and the converter on untrusted bytes.
//!
//! Four forms of input, chosen by the first byte:
//! 0. raw bytes as section zero, at any alignment;
//! 1. a real section zero (TINY's or SMALL's) with a few bytes patched,
//!    then, when it still parses as its model's, a short run on it;
//! 2. raw bytes split into a checkpoint and a tokenizer for the converter;
//! 3. a checkpoint and a tokenizer of a small fuzzed shape, with fuzzed
//!    weights, scores and tokens, then a run on what converts.
//!
//! Every reader of section zero is called on what `Metadata::new` accepts:
//! an `Error` or a value, never a panic or a read out of bounds. What the
//! converter accepts must open as an artifact (`open_artifact`), convert the
//! same way twice, and run without a panic.

use curta_core::convert::{convert, open_artifact, synthetic_tokenizer};
use curta_core::format::{read_u64, Config, LayerMatrix, Metadata, SECTION_TABLE, TABLE_LEN};
use curta_core::inference::{self, plan_sections, TurnInput};
use curta_core::planner::{self, CHARGES};
use curta_core::state::{StateBuffer, NO_TOKEN};
use curta_core::tokenizer::{BOS, EOS};
use curta_core::{state_size, Error, StateInfo};

use crate::models;
use crate::source::Source;

pub fn check(data: &[u8]) {
    let mut s = Source::new(data);
    match s.u8() % 4 {
        0 => {
            let shift = s.below(8);
            let bytes = s.rest();
            let buffer = at_alignment(bytes, shift);
            read_section_zero(&buffer[shift..], &mut Source::new(bytes));
        }
        1 => patched_section_zero(&mut s),
        2 => {
            let split = s.u16() as usize;
            let rest = s.rest();
            let (checkpoint, tokenizer) = rest.split_at(split.min(rest.len()));
            converted(convert(checkpoint, tokenizer), &mut Source::new(&[]));
        }
        _ => shaped_conversion(&mut s),
    }
}

/// `bytes` copied `shift` bytes past an 8-aligned address.
fn at_alignment(bytes: &[u8], shift: usize) -> StateBuffer {
    let mut buffer = StateBuffer::new(shift + bytes.len());
    buffer[shift..].copy_from_slice(bytes);
    buffer
}

/// Every reader of section zero, on whatever `Metadata::new` accepts;
/// `s` picks the lookups.
pub fn read_section_zero(bytes: &[u8], s: &mut Source) {
    let Ok(m) = Metadata::new(bytes) else {
        return;
    };
    let config = m.config;
    let count = m.section_count();
    for i in 0..count + 2 {
        let _ = (m.section_offset(i), m.section_len(i));
    }
    let _ = m.artifact_len();
    // Every matrix lies inside its section, as the layout gives its length.
    let section_len = |i: u32| m.layout.section_len(&config, i) as usize;
    let output = m.layout.output_section();
    let row = s.u32();
    for layer in 0..config.n_layers {
        for which in LayerMatrix::ALL {
            let r = m.matrix(layer, which, row % which.shape(&config).0);
            assert!(r.section >= 1 && r.section < output);
            assert!(r.offset + r.byte_len() <= section_len(r.section));
        }
    }
    let row = row % config.vocab_size;
    for r in [m.embedding(row), m.classifier(row)] {
        assert!(r.section >= output && (r.section as usize) < count);
        assert!((r.first_row..r.end_row()).contains(&row));
        assert!(r.offset + r.byte_len() <= section_len(r.section));
    }
    // The tables.
    let words = m.exp_words();
    for i in 0..TABLE_LEN {
        let e = m.exp_entry(i);
        if let Some(w) = words {
            assert_eq!(w[i], e);
        }
        let _ = m.silu_entry(i);
    }
    let half = config.head_size() / 2;
    let position = s.u32() % config.seq_len;
    for p in [0, config.seq_len - 1, position] {
        for pair in 0..half {
            let _ = m.rope(p, pair);
        }
    }
    for layer in 0..config.n_layers {
        assert_eq!(
            m.norm(m.attention_norm(layer)).len(),
            4 * config.dim as usize
        );
        assert_eq!(m.norm(m.ffn_norm(layer)).len(), 4 * config.dim as usize);
    }
    assert_eq!(m.norm(m.final_norm()).len(), 4 * config.dim as usize);
    // The tokenizer: every id, ids out of range, lookups and decoding.
    let vocab = config.vocab_size;
    for id in (0..vocab).chain([vocab, vocab + 1, NO_TOKEN]) {
        let t = m.token(id);
        if id >= vocab {
            assert!(t.is_empty());
        } else {
            let _ = m.score_key(id);
        }
    }
    let checked = m.check_tokenizer().is_ok();
    if checked {
        // Distinct, sorted tokens: every token is found as itself.
        for id in 0..vocab {
            assert_eq!(m.lookup(m.token(id)), id, "token {id}");
        }
    }
    for _ in 0..4 {
        let (a, b) = (s.string(12), s.string(12));
        let joined = m.lookup_joined(a, b);
        assert!(joined == NO_TOKEN || joined < vocab);
        if checked && joined != NO_TOKEN {
            assert_eq!(m.token(joined), [a, b].concat().as_slice());
        }
        let _ = m.lookup(a);
        let previous = if s.bool() { BOS } else { s.u32() };
        let id = if s.bool() {
            s.u32() % (vocab + 2)
        } else {
            s.u32()
        };
        let mut out = vec![0u8; s.below(130)];
        let n = m.decode_into(previous, id, &mut out);
        assert!(n <= out.len());
        if id == BOS || id == EOS {
            assert_eq!(n, 0);
        }
    }
}

/// A real section zero with a few bytes changed, then a short run on it
/// with the model's own matrix sections when it still parses as the model's.
fn patched_section_zero(s: &mut Source) {
    let model = if s.bool() {
        models::tiny()
    } else {
        models::small()
    };
    let mut zero = model.zero().to_vec();
    let table_end = 128 + 16 * model.section_count();
    for _ in 0..1 + s.below(6) {
        let at = match s.below(4) {
            0 => s.below(128),
            1 => s.below(table_end),
            _ => s.below(zero.len()),
        };
        match s.below(4) {
            0 => zero[at] = s.u8(),
            1 => {
                let v = s.u32().to_le_bytes();
                let n = v.len().min(zero.len() - at);
                zero[at..at + n].copy_from_slice(&v[..n]);
            }
            2 => zero[at] ^= 1 << s.below(8),
            _ => zero[at] = if s.bool() { 0 } else { 0xFF },
        }
    }
    if s.one_in(8) {
        let len = s.below(zero.len() + 64);
        zero.resize(len, 0);
    }
    let buffer = at_alignment(&zero, 0);
    read_section_zero(&buffer, s);
    let Ok(m) = Metadata::new(&buffer) else {
        return;
    };
    if m.config == model.config {
        short_run(model.config, &buffer, &model.artifact, s);
    }
}

/// Runs a few turns of a short prompt with section zero `zero` and the
/// sections of `artifact`: errors allowed, panics not. A turn refused
/// before its work leaves the state as it was.
fn short_run(config: Config, zero: &[u8], artifact: &[u8], s: &mut Source) {
    let prompt = s.string(6);
    let max_tokens = 1 + s.below(config.seq_len as usize) as u32;
    let temperature = if s.bool() { 0 } else { s.u32() % (16 << 16) };
    let Ok(size) = state_size(config, prompt.len(), max_tokens) else {
        return;
    };
    let mut state = StateBuffer::new(size);
    if inference::init_state(config, &mut state, prompt, max_tokens, temperature, s.u64()).is_err()
    {
        return;
    }
    // Where the sections lie, as the artifact's own section zero says.
    let real_len = read_u64(artifact, SECTION_TABLE + 8) as usize;
    let real = Metadata::new(&artifact[..real_len.min(artifact.len())]);
    for _ in 0..48 {
        let Ok(plan) = planner::plan_turn(config, &state) else {
            break;
        };
        // The sections as the real artifact places them.
        let sections = match &real {
            Ok(r) => plan_sections(artifact, r, &plan),
            Err(_) => break,
        };
        let input = TurnInput {
            config,
            metadata: zero,
            sections: &sections,
            allowance: CHARGES.allowance,
        };
        let before = state.clone();
        match inference::turn_with(&input, None, &mut state) {
            Ok(r) => {
                if r.complete {
                    break;
                }
            }
            Err(e) => {
                if e != Error::Arithmetic {
                    assert!(*before == *state, "a refused turn ({e}) wrote to the state");
                }
                break;
            }
        }
    }
    let info = StateInfo::read(&state).unwrap();
    assert!(info.generated <= max_tokens);
}

/// What the converter gave: an artifact that opens and runs, or a refusal
/// of the converter's two kinds.
fn converted(result: Result<Vec<u8>, Error>, s: &mut Source) {
    let artifact = match result {
        Ok(a) => a,
        Err(e) => {
            assert!(
                matches!(e, Error::InvalidFormat | Error::InvalidConfig),
                "{e}"
            );
            return;
        }
    };
    let m = open_artifact(&artifact).expect("a converted artifact opens");
    let zero = m.bytes;
    let buffer = at_alignment(zero, 0);
    read_section_zero(&buffer, s);
    short_run(m.config, &buffer, &artifact, s);
}

/// Draws a model shape small enough to convert and run at once, now and
/// then with one value out of range.
fn shape(s: &mut Source) -> Config {
    let dim = [2u32, 4, 6, 8, 12, 16][s.below(6)];
    let heads: Vec<u32> = (1..=dim)
        .filter(|&h| dim.is_multiple_of(h) && (dim / h).is_multiple_of(2))
        .collect();
    let n_heads = heads[s.below(heads.len())];
    let kv: Vec<u32> = (1..=n_heads)
        .filter(|&k| n_heads.is_multiple_of(k))
        .collect();
    let mut c = Config {
        dim,
        hidden_dim: 1 + s.below(24) as u32,
        n_layers: 1 + s.below(3) as u32,
        n_heads,
        n_kv_heads: kv[s.below(kv.len())],
        vocab_size: 259 + s.below(40) as u32,
        seq_len: 1 + s.below(16) as u32,
        charges: curta_core::format::ChargeTable::Specification,
        shared_classifier: true,
    };
    if s.one_in(16) {
        let v = s.u32();
        match s.below(7) {
            0 => c.dim = v,
            1 => c.hidden_dim = v,
            2 => c.n_layers = v,
            3 => c.n_heads = v,
            4 => c.n_kv_heads = v,
            5 => c.vocab_size = v,
            _ => c.seq_len = v,
        }
    }
    c
}

/// A float drawn for a weight: mostly the bulk generator's, sometimes a
/// value the converter must refuse or clamp.
fn special(kind: usize) -> f32 {
    [
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
        f32::MAX,
        f32::MIN_POSITIVE / 4.0,
        1e-30,
        3e9,
        -7.5,
    ][kind % 12]
}

/// The most weights a fuzzed checkpoint carries (a megabyte).
const MOST_FLOATS: usize = 1 << 18;

/// llama2.c's checkpoint of a shape, weights from a seeded generator at a
/// fuzzed amplitude, some replaced by special values.
fn checkpoint(c: &Config, shared: bool, s: &mut Source) -> Vec<u8> {
    let mut out = Vec::new();
    let vocab = if shared {
        c.vocab_size as i32
    } else {
        (c.vocab_size as i32).wrapping_neg()
    };
    for v in [
        c.dim as i32,
        c.hidden_dim as i32,
        c.n_layers as i32,
        c.n_heads as i32,
        c.n_kv_heads as i32,
        vocab,
        c.seq_len as i32,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    if c.validate().is_err() {
        // Whatever follows: the header alone is refused.
        out.extend_from_slice(s.string(64));
        return out;
    }
    let (d, h, l, v) = (
        c.dim as usize,
        c.hidden_dim as usize,
        c.n_layers as usize,
        c.vocab_size as usize,
    );
    let kv = c.kv_dim();
    let rope = c.seq_len as usize * c.head_size();
    let floats = v * d
        + l * d
        + l * (2 * d * d + 2 * kv * d)
        + l * d
        + l * 3 * h * d
        + d
        + rope
        + if shared { 0 } else { v * d };
    // A shape with one field fuzzed can ask for gigabytes: its checkpoint
    // is then cut short, which the converter must refuse.
    let floats = floats.min(MOST_FLOATS);
    let amplitude = [1e-3f32, 0.1, 1.0, 30.0, 1e4, 1e8][s.below(6)];
    let mut x = s.u64() | 1;
    let mut weights: Vec<f32> = (0..floats)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / 8_388_608.0 - 1.0) * amplitude
        })
        .collect();
    for _ in 0..s.below(4) {
        let at = s.below(floats.max(1));
        if let Some(w) = weights.get_mut(at) {
            *w = special(s.below(12));
        }
    }
    for w in weights {
        out.extend_from_slice(&w.to_le_bytes());
    }
    if s.one_in(16) {
        let len = out.len() - s.below(8) + s.below(8);
        out.resize(len, 0);
    }
    out
}

/// A tokenizer of `vocab` tokens: the synthetic one, with some tokens,
/// scores and lengths replaced.
fn tokenizer(vocab: u32, s: &mut Source) -> Vec<u8> {
    let base = synthetic_tokenizer(vocab.clamp(259, 400));
    // Parse it back into its tokens to edit them.
    let mut tokens: Vec<(f32, Vec<u8>)> = Vec::new();
    let mut at = 4;
    while at < base.len() {
        let score = f32::from_le_bytes(base[at..at + 4].try_into().unwrap());
        let len = i32::from_le_bytes(base[at + 4..at + 8].try_into().unwrap()) as usize;
        tokens.push((score, base[at + 8..at + 8 + len].to_vec()));
        at += 8 + len;
    }
    for _ in 0..s.below(6) {
        let i = s.below(tokens.len());
        match s.below(4) {
            0 => tokens[i].1 = s.string(10).to_vec(),
            1 => tokens[i].0 = special(s.below(12)),
            2 => tokens[i].0 = f32::from_bits(s.u32()),
            _ => {
                let j = s.below(tokens.len());
                tokens[i].1 = tokens[j].1.clone();
            }
        }
    }
    let longest = if s.one_in(8) { s.u32() as i32 } else { 8 };
    let mut out = longest.to_le_bytes().to_vec();
    let bad_length = if s.one_in(8) {
        Some((s.below(tokens.len()), s.u32() as i32))
    } else {
        None
    };
    for (i, (score, t)) in tokens.iter().enumerate() {
        out.extend_from_slice(&score.to_le_bytes());
        let len = match bad_length {
            Some((j, len)) if j == i => len,
            _ => t.len() as i32,
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(t);
    }
    if s.one_in(16) {
        let len = out.len() - s.below(8) + s.below(8);
        out.resize(len, 0);
    }
    out
}

fn shaped_conversion(s: &mut Source) {
    let c = shape(s);
    let shared = s.bool();
    let checkpoint = checkpoint(&c, shared, s);
    let tokenizer = tokenizer(c.vocab_size, s);
    let result = convert(&checkpoint, &tokenizer);
    if let Ok(first) = &result {
        if s.one_in(4) {
            assert_eq!(
                convert(&checkpoint, &tokenizer).as_ref(),
                Ok(first),
                "conversion is deterministic"
            );
        }
    }
    converted(result, s);
}
