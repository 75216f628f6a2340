//! Base58 in Bitcoin's alphabet: how every Solana client spells an address
//! or a signature.

use std::format;
use std::string::String;
use std::vec::Vec;

const ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Encodes bytes; each leading zero byte is a leading `1`.
pub fn encode(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    // Base-58 digits, least significant first.
    let mut digits: Vec<u8> = Vec::with_capacity(bytes.len() * 138 / 100 + 1);
    for &byte in &bytes[zeros..] {
        let mut carry = byte as u32;
        for d in digits.iter_mut() {
            carry += (*d as u32) << 8;
            *d = (carry % 58) as u8;
            carry /= 58;
        }
        while carry > 0 {
            digits.push((carry % 58) as u8);
            carry /= 58;
        }
    }
    let mut out = String::with_capacity(zeros + digits.len());
    out.extend(core::iter::repeat_n('1', zeros));
    out.extend(digits.iter().rev().map(|&d| ALPHABET[d as usize] as char));
    out
}

/// `what`'s value `text` checked as an address: `None` when it is one, else
/// why not in a sentence that names the value, the words every client
/// gives (the CLI for a flag, the page for a field).
pub fn address_refusal(what: &str, text: &str) -> Option<String> {
    if decode::<32>(text).is_some() {
        return None;
    }
    let mut foreign: Vec<char> = Vec::new();
    for c in text.chars() {
        if (!c.is_ascii() || !ALPHABET.contains(&(c as u8))) && !foreign.contains(&c) {
            foreign.push(c);
        }
    }
    let chars = text.chars().count();
    let why = match foreign.len() {
        0 if !(32..=44).contains(&chars) => format!("it is {chars} characters long"),
        0 => "its base58 is not 32 bytes".into(),
        n => {
            let named: Vec<String> = foreign
                .iter()
                .map(|&c| match c {
                    ' ' => "a space".into(),
                    c => format!("\"{c}\""),
                })
                .collect();
            let verb = if n == 1 { "is" } else { "are" };
            format!("{} {verb} not base58", named.join(", "))
        }
    };
    Some(format!(
        "{what} \"{text}\" is not a Solana address: {why} (an address is 32 to 44 base58 \
         characters, 1-9 and letters but 0, O, I and l, for 32 bytes)"
    ))
}

/// Decodes base58 into exactly `N` bytes; `None` for another length or a
/// character outside the alphabet.
pub fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let ones = text.bytes().take_while(|&c| c == b'1').count();
    // Bytes, least significant first.
    let mut bytes: Vec<u8> = Vec::with_capacity(N);
    for c in text.bytes().skip(ones) {
        let mut carry = ALPHABET.iter().position(|&a| a == c)? as u32;
        for b in bytes.iter_mut() {
            carry += *b as u32 * 58;
            *b = carry as u8;
            carry >>= 8;
        }
        while carry > 0 {
            bytes.push(carry as u8);
            carry >>= 8;
        }
        if ones + bytes.len() > N {
            return None;
        }
    }
    if ones + bytes.len() != N {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, b) in out[ones..].iter_mut().zip(bytes.iter().rev()) {
        *slot = *b;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_as_solana_spells_them() {
        assert_eq!(encode(&[0; 32]), "11111111111111111111111111111111");
        let mut id = [0u8; 32];
        id[31] = 1;
        assert_eq!(encode(&id), "11111111111111111111111111111112");
        assert_eq!(decode::<32>("11111111111111111111111111111112"), Some(id));
        // The compute-budget program's address.
        let budget = "ComputeBudget111111111111111111111111111111";
        let bytes = decode::<32>(budget).unwrap();
        assert_eq!(bytes[0], 3);
        assert_eq!(encode(&bytes), budget);
        for n in 0..=64u8 {
            let b: Vec<u8> = (0..n).map(|i| i.wrapping_mul(91).wrapping_add(n)).collect();
            let mut fixed = [0u8; 64];
            fixed[64 - b.len()..].copy_from_slice(&b);
            assert_eq!(decode::<64>(&encode(&fixed)), Some(fixed), "{n}");
        }
        assert_eq!(decode::<32>("0OIl"), None);
        assert_eq!(decode::<32>("1111"), None);
        assert_eq!(decode::<32>(&encode(&[255; 33])), None);
    }

    #[test]
    fn an_address_that_is_not_one_is_said_why() {
        let tail = "(an address is 32 to 44 base58 characters, 1-9 and letters but 0, O, I \
                    and l, for 32 bytes)";
        assert_eq!(
            address_refusal("run", "11111111111111111111111111111111"),
            None
        );
        assert_eq!(
            address_refusal("--model", "notanaddress").as_deref(),
            Some(&*format!(
                "--model \"notanaddress\" is not a Solana address: it is 12 characters long {tail}"
            ))
        );
        assert_eq!(
            address_refusal("The model address", "not-an-address").as_deref(),
            Some(&*format!(
                "The model address \"not-an-address\" is not a Solana address: \"-\" is not \
                 base58 {tail}"
            ))
        );
        let words = address_refusal("x", "a b0").unwrap();
        assert!(words.contains("a space, \"0\" are not base58"), "{words}");
        let long = "z".repeat(44);
        assert!(address_refusal("x", &long)
            .unwrap()
            .contains("its base58 is not 32 bytes"));
    }
}
