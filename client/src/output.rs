//! How results are printed: every command's outcome as text or as one
//! JSON object (`--output json|json-compact`, as Agave's CLI; `--json` is
//! `json-compact`), SOL amounts, thousands separators, hex, plurals.

use std::io::Write;

use serde_json::Value;

/// How a command's outcome is printed on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Lines a person reads.
    Display,
    /// One JSON object, indented.
    Json,
    /// One JSON object on one line.
    JsonCompact,
}

impl OutputFormat {
    pub fn is_json(self) -> bool {
        self != OutputFormat::Display
    }
}

/// What a command did, in both forms: the JSON object carries every figure
/// the text says (and the text, where there is one).
pub trait Outcome {
    fn json(&self) -> Value;
    /// The lines a person reads, each ending in a newline.
    fn text(&self) -> String;
}

/// The one printer of outcomes.
pub fn print(format: OutputFormat, outcome: &dyn Outcome) {
    let mut out = std::io::stdout().lock();
    let written = match format {
        OutputFormat::Display => out.write_all(outcome.text().as_bytes()),
        OutputFormat::Json => writeln!(out, "{:#}", outcome.json()),
        OutputFormat::JsonCompact => writeln!(out, "{}", outcome.json()),
    };
    // A closed pipe stops the process (`interrupt::output_closed`), as
    // Ctrl-C does; it never panics.
    if let Err(e) = written.and_then(|()| out.flush()) {
        crate::interrupt::wrote(&e);
    }
}

/// `1 slot`, `2 slots`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// Lamports in one SOL.
pub const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// `0.000105000 SOL` style: lamports as SOL with all nine decimals, as the
/// core writes them for every client.
pub use curta_core::client::crank::sol;

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

#[cfg(test)]
mod tests {
    use super::*;

    // The SDK's formatSol and formatCount print the same (sdk/test/units.test.js).
    #[test]
    fn amounts() {
        assert_eq!(sol(0), "0.000000000 SOL");
        assert_eq!(sol(1), "0.000000001 SOL");
        assert_eq!(sol(105_000), "0.000105000 SOL");
        assert_eq!(sol(1_000_000_000), "1.000000000 SOL");
        assert_eq!(sol(1_500_000_000), "1.500000000 SOL");
        assert_eq!(sol(2_500_000_001), "2.500000001 SOL");
        assert_eq!(sol(u64::MAX), "18446744073.709551615 SOL");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(6_572), "6,572");
        assert_eq!(thousands(1_350_300), "1,350,300");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
        assert_eq!(count(1, "slot", "slots"), "1 slot");
        assert_eq!(count(0, "slot", "slots"), "0 slots");
        assert_eq!(count(1_200, "turn", "turns"), "1,200 turns");
    }
}
