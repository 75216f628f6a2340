//! Run parameters as people type them.

/// A decimal temperature such as `0.8` with 16 fractional bits, rounded to
/// nearest (ties up), in integers so every platform agrees: at most 6 whole
/// digits and 12 decimals; `None` for anything else (a sign, an exponent,
/// no digits). The core refuses a run above 16 (`MAX_TEMPERATURE_Q16`).
pub fn decimal_q16(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = whole
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits
        || whole.len() > 6
        || fraction.len() > 12
    {
        return None;
    }
    // In u128: 18 digits times 2^17 pass u64.
    let scale = 10u128.pow(fraction.len() as u32);
    let numerator =
        whole.parse::<u128>().unwrap_or(0) * scale + fraction.parse::<u128>().unwrap_or(0);
    Some(((numerator * 65_536 * 2 + scale) / (2 * scale)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperatures_round_to_nearest_in_integers() {
        assert_eq!(decimal_q16("0.8"), Some(52_429));
        assert_eq!(decimal_q16("1"), Some(65_536));
        assert_eq!(decimal_q16(".5"), Some(32_768));
        assert_eq!(decimal_q16("16"), Some(16 << 16));
        assert_eq!(decimal_q16("0.000008"), Some(1));
        assert_eq!(decimal_q16("0.000007"), Some(0));
        assert_eq!(decimal_q16("999999.999999999999"), Some(65_536_000_000));
        for bad in [
            "",
            ".",
            "-1",
            "1e3",
            "0.8.1",
            "1234567",
            "0.1234567890123",
            " 1",
        ] {
            assert_eq!(decimal_q16(bad), None, "{bad:?}");
        }
    }
}
