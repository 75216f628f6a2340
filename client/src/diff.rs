//! Explains where two states first differ: the header field or the buffer
//! (and element) an offset falls in, by the state layout. The client
//! reports a chain state that is not its replay's this way; the harness
//! uses it for its replays.

use curta_core::state::{field, StateLayout};
use curta_core::Config;

const FIELDS: [(&str, usize, usize); 26] = [
    ("tag", field::TAG, 8),
    ("phase", field::PHASE, 4),
    ("layer", field::LAYER, 4),
    ("row", field::ROW, 4),
    ("position", field::POSITION, 4),
    ("token", field::TOKEN, 4),
    ("prompt length", field::PROMPT_LEN, 4),
    ("prompt tokens", field::PROMPT_TOKENS, 4),
    ("max tokens", field::MAX_TOKENS, 4),
    ("temperature", field::TEMPERATURE, 4),
    ("generated", field::GENERATED, 4),
    ("text length", field::TEXT_LEN, 4),
    ("tokenizer byte", field::TOK_BYTE, 4),
    ("tokenizer pair", field::TOK_PAIR, 4),
    ("tokenizer best position", field::TOK_BEST_POS, 4),
    ("tokenizer best key", field::TOK_BEST_KEY, 4),
    ("tokenizer best id", field::TOK_BEST_ID, 4),
    ("seed", field::SEED, 8),
    ("turns", field::TURNS, 8),
    ("max", field::MAX, 8),
    ("chosen", field::CHOSEN, 4),
    ("pass", field::PASS, 4),
    ("sum", field::SUM, 8),
    ("remainder", field::REMAINDER, 8),
    ("attention stage", field::STAGE, 4),
    ("attention index", field::INDEX, 4),
];

/// Where `offset` falls: `(name, start, element size)`.
pub fn locate(config: &Config, state: &[u8], offset: usize) -> (String, usize, usize) {
    if let Some(&(name, at, len)) = FIELDS
        .iter()
        .find(|(_, at, len)| (*at..at + len).contains(&offset))
    {
        return (format!("header field {name}"), at, len);
    }
    let prompt_len = curta_core::read_u32(state, field::PROMPT_LEN) as usize;
    let max_tokens = curta_core::read_u32(state, field::MAX_TOKENS);
    let Ok(l) = StateLayout::new(config, prompt_len, max_tokens) else {
        return (
            "somewhere in a state whose header does not parse".into(),
            offset,
            1,
        );
    };
    let buffers = [
        ("prompt", l.prompt, 1),
        ("prompt tokens", l.prompt_tokens, 4),
        ("output tokens", l.output_tokens, 4),
        ("output text", l.output_text, 1),
        ("x", l.x, 8),
        ("xb", l.xb, 8),
        ("xb2", l.xb2, 8),
        ("q", l.q, 8),
        ("hb", l.hb, 8),
        ("hb2", l.hb2, 8),
        ("logits", l.logits, 8),
        ("attention scores", l.scores, 8),
        ("keys", l.keys, 4),
        ("values", l.values, 4),
    ];
    let (name, start, size) = buffers
        .iter()
        .rev()
        .find(|(_, start, _)| *start <= offset)
        .copied()
        .unwrap_or(("header", 0, 1));
    let element = (offset - start) / size;
    (
        format!("buffer {name}, element {element}"),
        start + element * size,
        size,
    )
}

/// A report of the first difference between two states, or `None`.
pub fn first_difference(config: &Config, expected: &[u8], actual: &[u8]) -> Option<String> {
    if expected.len() != actual.len() {
        return Some(format!(
            "state lengths differ: expected {}, got {}",
            expected.len(),
            actual.len()
        ));
    }
    let offset = expected.iter().zip(actual).position(|(a, b)| a != b)?;
    let (place, start, size) = locate(config, expected, offset);
    let value = |s: &[u8]| {
        let bytes = &s[start..(start + size).min(s.len())];
        let mut v = [0u8; 8];
        v[..bytes.len()].copy_from_slice(bytes);
        let raw = u64::from_le_bytes(v);
        match size {
            8 => format!("{} (0x{raw:016x})", raw as i64),
            4 => format!("{} (0x{:08x})", raw as u32 as i32, raw as u32),
            _ => format!("{raw} (0x{raw:02x})"),
        }
    };
    Some(format!(
        "first difference at offset {offset}: {place}: expected {}, got {}",
        value(expected),
        value(actual)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
    use curta_core::inference::RunParams;

    #[test]
    fn a_difference_is_named_by_the_state_layout() {
        let ck = synthetic_checkpoint(&TINY, 3).unwrap();
        let art = crate::artifact::Artifact::new(
            convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap(),
        )
        .unwrap();
        let params = RunParams {
            prompt: b"ab",
            max_tokens: 4,
            temperature_q16: 0,
            seed: 0,
        };
        let a = crate::replay::initial_state(&art, &params)
            .unwrap()
            .to_vec();
        let cfg = TINY;
        assert_eq!(first_difference(&cfg, &a, &a), None);
        let mut b = a.clone();
        b[field::TURNS] = 7;
        assert_eq!(
            first_difference(&cfg, &a, &b).unwrap(),
            "first difference at offset 80: header field turns: expected 0 \
             (0x0000000000000000), got 7 (0x0000000000000007)"
        );
        let values = StateLayout::new(&cfg, 2, 4).unwrap().values;
        let mut c = a.clone();
        c[values + 4 * 3 + 1] = 1;
        let d = first_difference(&cfg, &a, &c).unwrap();
        assert!(d.contains("buffer values, element 3: expected 0"), "{d}");
        assert!(first_difference(&cfg, &a, &a[..100])
            .unwrap()
            .contains("lengths differ"));
    }
}
