//! Turn receipts: the `Program data:` event every successful `turn` logs
//! (`docs/program.md`, "The turn receipt"), read from a transaction's logs
//! and checked field by field against the native replay's step.

use base64::Engine;
use curta_core::protocol::TurnEvent;
use solana_pubkey::Pubkey;

use crate::replay::Step;

/// A turn's receipt: the fixed record, the tokens and the text it added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub event: TurnEvent,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
}

/// The turn receipts in a transaction's logs, in order.
pub fn from_logs(logs: &[String]) -> Vec<Receipt> {
    let b64 = base64::engine::general_purpose::STANDARD;
    logs.iter()
        .filter_map(|line| line.strip_prefix("Program data: "))
        .filter_map(|fields| {
            let f: Vec<Vec<u8>> = fields
                .split(' ')
                .map(|x| b64.decode(x))
                .collect::<Result<_, _>>()
                .ok()?;
            let event = TurnEvent::decode(f.first()?)?;
            let tokens = f.get(1)?;
            if tokens.len() % 4 != 0 {
                return None;
            }
            Some(Receipt {
                event,
                tokens: tokens
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                text: f.get(2)?.clone(),
            })
        })
        .collect()
}

/// How a receipt differs from the replay's step, field by field; empty
/// when it matches.
pub fn differences(
    receipt: &Receipt,
    step: &Step,
    run: &Pubkey,
    model: &Pubkey,
    royalty: u64,
) -> Vec<String> {
    let e = &receipt.event;
    let mut out = vec![];
    let mut check = |name: &str, got: String, want: String| {
        if got != want {
            out.push(format!("{name}: the receipt has {got}, the replay {want}"));
        }
    };
    check(
        "run",
        Pubkey::new_from_array(e.run).to_string(),
        run.to_string(),
    );
    check(
        "model",
        Pubkey::new_from_array(e.model).to_string(),
        model.to_string(),
    );
    check(
        "turns",
        e.turns.to_string(),
        (step.turns_before + 1).to_string(),
    );
    check(
        "paid",
        e.paid.to_string(),
        (royalty * step.generated_this_turn as u64).to_string(),
    );
    check(
        "generated",
        e.generated.to_string(),
        step.generated.to_string(),
    );
    check(
        "generated this turn",
        e.generated_this_turn.to_string(),
        step.generated_this_turn.to_string(),
    );
    check("charged", e.charged.to_string(), step.charged.to_string());
    check("phase", e.phase.to_string(), step.phase.to_string());
    check(
        "text length",
        e.text_len.to_string(),
        step.text_len.to_string(),
    );
    check(
        "tokens",
        format!("{:?}", receipt.tokens),
        format!("{:?}", step.tokens),
    );
    check(
        "text",
        format!("{:?}", String::from_utf8_lossy(&receipt.text)),
        format!("{:?}", String::from_utf8_lossy(&step.text)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::protocol::event;

    fn step() -> Step {
        Step {
            turns_before: 6,
            sections: vec![1],
            estimated_cu: 1_349_878,
            charged: 1_349_878,
            generated: 1,
            generated_this_turn: 1,
            phase: 3,
            text_len: 1,
            tokens: vec![432],
            text: b",".to_vec(),
            state_sha256: [0; 32],
        }
    }

    #[test]
    fn a_receipt_is_read_from_the_logs_and_checked_field_by_field() {
        let (run, model) = (
            Pubkey::new_from_array([1; 32]),
            Pubkey::new_from_array([2; 32]),
        );
        let e = TurnEvent {
            run: run.to_bytes(),
            model: model.to_bytes(),
            turns: 7,
            paid: 1_000,
            generated: 1,
            generated_this_turn: 1,
            charged: 1_349_878,
            phase: 3,
            text_len: 1,
        };
        let mut fixed = [0u8; event::LEN];
        e.encode(&mut fixed);
        let b64 = base64::engine::general_purpose::STANDARD;
        let line = format!(
            "Program data: {} {} {}",
            b64.encode(fixed),
            b64.encode(432u32.to_le_bytes()),
            b64.encode(b",")
        );
        let logs = vec!["Program log: hello".to_string(), line];
        let receipts = from_logs(&logs);
        assert_eq!(receipts.len(), 1);
        assert_eq!(receipts[0].tokens, vec![432]);
        assert!(differences(&receipts[0], &step(), &run, &model, 1_000).is_empty());
        let mut other = step();
        other.tokens = vec![433];
        other.turns_before = 7;
        assert_eq!(
            differences(&receipts[0], &other, &run, &model, 1_000),
            vec![
                "turns: the receipt has 7, the replay 8".to_string(),
                "tokens: the receipt has [432], the replay [433]".to_string(),
            ]
        );
        // Not a receipt: another event, or fields that are not base64.
        assert!(from_logs(&["Program data: AAAA".to_string()]).is_empty());
        assert!(from_logs(&["Program data: !!".to_string()]).is_empty());
    }
}
