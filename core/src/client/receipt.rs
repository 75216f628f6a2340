//! Turn receipts: the `Program data:` event every successful `turn` logs
//! (`docs/program.md`, "The turn receipt"), read from a transaction's logs
//! and checked field by field against the replay's step.
//!
//! A line counts only when Curta's own invocation logged it: the runtime
//! writes `Program <id> invoke [n]` when a program starts and `Program <id>
//! success` or `... failed: ...` when it ends, so the program running when
//! a `Program data:` line is written is the innermost one not yet ended.
//! Another program in the same transaction, top-level or called by Curta,
//! cannot log a line that passes for a receipt.

use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use super::replay::Step;
use super::{base58, base64};
use crate::protocol::{run, Address, TurnEvent};

/// A turn's receipt: the fixed record, the tokens and the text it added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub event: TurnEvent,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
}

/// Decodes one `Program data:` line's fields; `None` when it is not a turn
/// receipt.
fn decode(fields: &str) -> Option<Receipt> {
    let fields: Vec<Vec<u8>> = fields
        .split(' ')
        .map(base64::decode)
        .collect::<Option<_>>()?;
    let [fixed, tokens, text] = &fields[..] else {
        return None;
    };
    let event = TurnEvent::decode(fixed)?;
    if !tokens.len().is_multiple_of(4) {
        return None;
    }
    Some(Receipt {
        event,
        tokens: tokens
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        text: text.clone(),
    })
}

/// The turn receipts that the program `program_id` (base58, as the logs
/// spell it) logged in a transaction's logs, in order.
pub fn from_logs<S: AsRef<str>>(logs: &[S], program_id: &str) -> Vec<Receipt> {
    let mut running: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in logs {
        let line = line.as_ref();
        if let Some(data) = line.strip_prefix("Program data: ") {
            if running.last() == Some(&program_id) {
                out.extend(decode(data));
            }
        } else if let Some(rest) = line.strip_prefix("Program ") {
            let mut words = rest.splitn(2, ' ');
            let (id, what) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            if what.starts_with("invoke [") {
                running.push(id);
            } else if (what == "success" || what.starts_with("failed"))
                && running.last() == Some(&id)
            {
                running.pop();
            }
        }
    }
    out
}

/// The compute units the program `program_id` reported in a transaction's
/// logs ("Program X consumed N of M compute units"), summed over its
/// invocations; 0 when it reported none.
pub fn program_units<S: AsRef<str>>(logs: &[S], program_id: &str) -> u64 {
    let prefix = format!("Program {program_id} consumed ");
    logs.iter()
        .filter_map(|line| line.as_ref().strip_prefix(&prefix))
        .filter_map(|rest| rest.split(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// One field in which a receipt and the replay differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field's name, as every client prints it.
    pub field: &'static str,
    pub receipt: String,
    pub replay: String,
}

impl core::fmt::Display for Difference {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        let (field, got, want) = (self.field, &self.receipt, &self.replay);
        write!(f, "{field}: the receipt has {got}, the replay {want}")
    }
}

/// What a receipt is checked against beyond the step: the run, its model,
/// the royalty per token its opener escrowed and its crank fee and deposit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub run: Address,
    pub model: Address,
    pub royalty: u64,
    pub crank_fee: u64,
    pub crank_deposit: u64,
}

fn quoted(text: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(text))
}

/// How a receipt differs from the replay's step, field by field; empty
/// when it matches.
pub fn differences(receipt: &Receipt, step: &Step, expected: &Expected) -> Vec<Difference> {
    let e = &receipt.event;
    let paid = expected
        .royalty
        .saturating_mul(step.generated_this_turn as u64);
    let crank_paid = run::crank_payment(
        expected.crank_fee,
        expected.crank_deposit,
        step.turns_before,
    );
    let fields: [(&'static str, String, String); 12] = [
        ("run", base58::encode(&e.run), base58::encode(&expected.run)),
        (
            "model",
            base58::encode(&e.model),
            base58::encode(&expected.model),
        ),
        (
            "turns",
            e.turns.to_string(),
            (step.turns_before + 1).to_string(),
        ),
        ("paid", e.paid.to_string(), paid.to_string()),
        (
            "crank paid",
            e.crank_paid.to_string(),
            crank_paid.to_string(),
        ),
        (
            "generated",
            e.generated.to_string(),
            step.generated.to_string(),
        ),
        (
            "generated this turn",
            e.generated_this_turn.to_string(),
            step.generated_this_turn.to_string(),
        ),
        ("charged", e.charged.to_string(), step.charged.to_string()),
        ("phase", e.phase.to_string(), step.phase.to_string()),
        (
            "text length",
            e.text_len.to_string(),
            step.text_len.to_string(),
        ),
        (
            "tokens",
            format!("{:?}", receipt.tokens),
            format!("{:?}", step.tokens),
        ),
        ("text", quoted(&receipt.text), quoted(&step.text)),
    ];
    fields
        .into_iter()
        .filter(|(_, got, want)| got != want)
        .map(|(field, receipt, replay)| Difference {
            field,
            receipt,
            replay,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::event;

    fn step() -> Step {
        Step {
            turns_before: 6,
            sections: std::vec![1],
            estimated_cu: 1_000_000,
            bound_cu: 950_000,
            charged: 999_000,
            generated: 2,
            generated_this_turn: 1,
            phase: 7,
            text_len: 9,
            tokens: std::vec![433],
            text: b" Lily".to_vec(),
            state_sha256: [0; 32],
        }
    }

    fn line(event: &TurnEvent, tokens: &[u32], text: &[u8]) -> String {
        let mut fixed = [0u8; event::LEN];
        event.encode(&mut fixed);
        let tokens: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        let fields = [
            base64::encode(&fixed),
            base64::encode(&tokens),
            base64::encode(text),
        ];
        format!("Program data: {}", fields.join(" "))
    }

    const CURTA: &str = "Curta11111111111111111111111111111111111111";
    const OTHER: &str = "Other11111111111111111111111111111111111111";

    fn event_of(step: &Step) -> TurnEvent {
        TurnEvent {
            run: [1; 32],
            model: [2; 32],
            turns: step.turns_before + 1,
            paid: 1_000,
            generated: step.generated,
            generated_this_turn: step.generated_this_turn,
            charged: step.charged,
            phase: step.phase,
            text_len: step.text_len,
            crank_paid: 2_000,
        }
    }

    #[test]
    fn only_curtas_own_invocation_logs_a_receipt() {
        let s = step();
        let data = line(&event_of(&s), &s.tokens, &s.text);
        let logs = [
            format!("Program {OTHER} invoke [1]"),
            data.clone(),
            format!("Program {OTHER} success"),
            format!("Program {CURTA} invoke [1]"),
            "Program log: turn".into(),
            format!("Program {OTHER} invoke [2]"),
            data.clone(),
            format!("Program {OTHER} failed: custom program error: 0x1"),
            data.clone(),
            format!("Program {CURTA} consumed 951902 of 1400000 compute units"),
            format!("Program {CURTA} success"),
            data.clone(),
        ];
        let found = from_logs(&logs, CURTA);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].tokens, [433]);
        assert_eq!(found[0].text, b" Lily");
        assert_eq!(program_units(&logs, CURTA), 951_902);
        assert_eq!(program_units(&logs, OTHER), 0);
        // A line that is not three base64 fields, or not a turn receipt, is no receipt.
        let logs = [
            format!("Program {CURTA} invoke [1]"),
            "Program data: Q3VydGE=".into(),
            "Program data: !!!! AAAA AAAA".into(),
            format!("{data} AAAA"),
        ];
        assert!(from_logs(&logs, CURTA).is_empty());
    }

    #[test]
    fn differences_name_each_field_that_differs() {
        let s = step();
        let r = Receipt {
            event: event_of(&s),
            tokens: s.tokens.clone(),
            text: s.text.clone(),
        };
        let expected = Expected {
            run: [1; 32],
            model: [2; 32],
            royalty: 1_000,
            crank_fee: 3_000,
            crank_deposit: 20_000,
        };
        assert_eq!(differences(&r, &s, &expected), []);
        // Six turns took 18,000 of the deposit: the seventh pays the rest.
        let spent = Expected {
            crank_deposit: 17_000,
            ..expected
        };
        assert_eq!(
            differences(&r, &s, &spent)[0].to_string(),
            "crank paid: the receipt has 2000, the replay 0"
        );
        let mut other = s.clone();
        other.turns_before = 7;
        other.tokens = std::vec![434];
        let found = differences(&r, &other, &expected);
        let words: Vec<String> = found.iter().map(|d| d.to_string()).collect();
        // A turn later, the deposit would be spent: nothing more is paid.
        assert_eq!(
            words,
            [
                "turns: the receipt has 7, the replay 8",
                "crank paid: the receipt has 2000, the replay 0",
                "tokens: the receipt has [433], the replay [434]"
            ]
        );
        let found = differences(
            &r,
            &s,
            &Expected {
                royalty: 0,
                ..expected
            },
        );
        assert_eq!(
            found[0].to_string(),
            "paid: the receipt has 1000, the replay 0"
        );
    }
}
