//! How results are printed: SOL amounts, thousands separators, hex, and
//! one JSON object on stdout for `--json`.

use serde_json::Value;

/// Lamports in one SOL.
pub const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// `0.000105000 SOL` style: lamports as SOL with all nine decimals.
pub fn sol(lamports: u64) -> String {
    format!(
        "{}.{:09} SOL",
        lamports / LAMPORTS_PER_SOL,
        lamports % LAMPORTS_PER_SOL
    )
}

/// `1,350,300`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Prints a JSON value as one line on stdout.
pub fn print_json(v: &Value) {
    println!("{v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts() {
        assert_eq!(sol(0), "0.000000000 SOL");
        assert_eq!(sol(105_000), "0.000105000 SOL");
        assert_eq!(sol(2_500_000_001), "2.500000001 SOL");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_350_300), "1,350,300");
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
    }
}
