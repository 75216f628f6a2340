//! Base64 (RFC 4648, the standard alphabet, padded), which the runtime uses
//! for `Program data:` log fields.

use std::vec::Vec;

fn value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Decodes padded base64; `None` for anything else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let quads = bytes.len() / 4;
    for (i, quad) in bytes.chunks_exact(4).enumerate() {
        let pad = match (quad[2], quad[3]) {
            (b'=', b'=') => 2,
            (_, b'=') => 1,
            _ => 0,
        };
        if pad > 0 && i + 1 != quads {
            return None;
        }
        let mut word = 0u32;
        for &c in &quad[..4 - pad] {
            word = word << 6 | value(c)?;
        }
        word <<= 6 * pad as u32;
        let three = [(word >> 16) as u8, (word >> 8) as u8, word as u8];
        // Bits the padding drops must be zero: one encoding per value.
        if three[3 - pad..].iter().any(|&b| b != 0) {
            return None;
        }
        out.extend_from_slice(&three[..3 - pad]);
    }
    Some(out)
}

/// Encodes padded base64.
pub fn encode(bytes: &[u8]) -> std::string::String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = std::string::String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let word = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_base64() {
        for n in 0..40u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ 0xA5).collect();
            assert_eq!(decode(&encode(&bytes)).as_deref(), Some(&bytes[..]), "{n}");
        }
        assert_eq!(encode(b"Curta"), "Q3VydGE=");
        assert_eq!(decode("Q3VydGE=").as_deref(), Some(&b"Curta"[..]));
        for bad in ["Q3VydGE", "Q3Vy*GE=", "Q3VydGF=", "Q3==dGE=", "===="] {
            assert_eq!(decode(bad), None, "{bad}");
        }
        assert_eq!(decode("").as_deref(), Some(&[][..]));
    }
}
