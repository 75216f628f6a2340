//! An instruction's custom error in words, named by the program that
//! raised it: Curta's by its names and `docs/program.md`'s messages (core
//! errors as 256 + n), the System program's by its own, any other's by
//! number. Every client prints these words.

use crate::protocol::{CurtaError, CORE_ERROR_BASE};
use std::format;
use std::string::String;

/// The program an instruction called, as far as a client knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raiser<'a> {
    Curta,
    System,
    /// Another program, by its address.
    Other(&'a str),
    /// The client does not know which program the instruction called.
    Unknown,
}

/// A Curta error's name: `StaleTurn`, `CoreError(ContextExceeded)`.
pub fn name(code: u32) -> Option<String> {
    if let Some(e) = CurtaError::from_code(code) {
        return Some(e.name().into());
    }
    let core = code
        .checked_sub(CORE_ERROR_BASE)
        .and_then(crate::Error::from_code)?;
    Some(format!("CoreError({})", core.name()))
}

/// When a Curta error is raised (`docs/program.md`, "Errors").
pub fn message(code: u32) -> Option<&'static str> {
    if let Some(e) = CurtaError::from_code(code) {
        return Some(e.message());
    }
    let core = code
        .checked_sub(CORE_ERROR_BASE)
        .and_then(crate::Error::from_code)?;
    Some(core.message())
}

/// What to do about the errors a client can act on, after their message.
fn next_step(code: u32) -> Option<&'static str> {
    let core = code
        .checked_sub(CORE_ERROR_BASE)
        .and_then(crate::Error::from_code);
    match (CurtaError::from_code(code), core) {
        (Some(CurtaError::RoyaltyMismatch | CurtaError::ModelChanged), _) => {
            Some("quote the model again; a run opened on the old one can only be closed")
        }
        (_, Some(crate::Error::ContextExceeded | crate::Error::Arithmetic)) => {
            Some("the run can only be closed, which returns its lamports")
        }
        _ => None,
    }
}

/// The System program's errors (`solana_system_interface::error`), by
/// number: its name and what it means to a Curta user.
const SYSTEM_ERRORS: [(&str, &str); 9] = [
    (
        "AccountAlreadyInUse",
        "an account with this address exists already",
    ),
    (
        "ResultWithNegativeLamports",
        "the payer has fewer lamports than the instruction moves",
    ),
    (
        "InvalidProgramId",
        "the account cannot be assigned to that program",
    ),
    (
        "InvalidAccountDataLength",
        "the account's size is out of range",
    ),
    ("MaxSeedLengthExceeded", "a seed is longer than 32 bytes"),
    (
        "AddressWithSeedMismatch",
        "the address does not derive from the seed",
    ),
    (
        "NonceNoRecentBlockhashes",
        "no recent blockhash to advance the nonce to",
    ),
    (
        "NonceBlockhashNotExpired",
        "the nonce's blockhash has not expired",
    ),
    (
        "NonceUnexpectedBlockhashValue",
        "the nonce's blockhash is not the one given",
    ),
];

/// Custom error `code` of instruction `instruction`, in words:
/// `StaleTurn (custom program error 21): A turn whose expected turn count
/// is not the state's (instruction 2)`.
pub fn custom(code: u32, raiser: Raiser, instruction: u32) -> String {
    let at = format!("(instruction {instruction})");
    match raiser {
        Raiser::Curta => match (name(code), message(code)) {
            (Some(name), Some(message)) => {
                let step = next_step(code)
                    .map(|s| format!("; {s}"))
                    .unwrap_or_default();
                format!("{name} (custom program error {code}): {message}{step} {at}")
            }
            _ => format!("custom program error {code}: not an error the curta program raises {at}"),
        },
        // Another program's code may equal one of Curta's: no name.
        Raiser::Unknown => format!("custom program error {code} {at}"),
        Raiser::System => match SYSTEM_ERRORS.get(code as usize) {
            Some((name, meaning)) => {
                format!("the System program's {name} (its error {code}): {meaning} {at}")
            }
            None => format!("the System program's error {code} {at}"),
        },
        Raiser::Other(program) => format!("custom program error {code} of program {program} {at}"),
    }
}

/// The most log lines an error message quotes: the end of the logs, where
/// the failing program's last words and the runtime's verdict are.
pub const LOG_TAIL_LINES: usize = 8;

/// The last `LOG_TAIL_LINES` lines of a transaction's logs, indented under
/// "program log:", for an error message (nothing for no logs).
pub fn log_tail<S: AsRef<str>>(logs: &[S]) -> String {
    if logs.is_empty() {
        return String::new();
    }
    let start = logs.len().saturating_sub(LOG_TAIL_LINES);
    let mut out = String::from("\n  program log:");
    for line in &logs[start..] {
        out.push_str("\n    ");
        out.push_str(line.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_named_by_the_program_that_raised_them() {
        assert_eq!(
            custom(21, Raiser::Curta, 2),
            "StaleTurn (custom program error 21): A turn whose expected turn count is not the \
             state's (instruction 2)"
        );
        assert_eq!(name(263).as_deref(), Some("CoreError(ContextExceeded)"));
        assert!(custom(263, Raiser::Curta, 0).contains("the run can only be closed"));
        assert_eq!(
            custom(1, Raiser::System, 0),
            "the System program's ResultWithNegativeLamports (its error 1): the payer has fewer \
             lamports than the instruction moves (instruction 0)"
        );
        assert_eq!(
            custom(21, Raiser::Other("Prog1"), 1),
            "custom program error 21 of program Prog1 (instruction 1)"
        );
        assert_eq!(
            custom(21, Raiser::Unknown, 1),
            "custom program error 21 (instruction 1)"
        );
        assert_eq!(name(33), None);
        assert_eq!(name(256), None);
        assert!(custom(33, Raiser::Curta, 0).contains("not an error the curta program raises"));
    }

    #[test]
    fn a_log_tail_quotes_the_last_eight_lines() {
        use std::string::ToString;
        use std::vec::Vec;
        assert_eq!(log_tail::<&str>(&[]), "");
        let logs: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
        let tail = log_tail(&logs);
        assert!(
            tail.starts_with("\n  program log:\n    line 3\n    line 4"),
            "{tail}"
        );
        assert!(tail.ends_with("\n    line 10"), "{tail}");
        assert_eq!(tail.matches("\n    ").count(), LOG_TAIL_LINES);
        assert_eq!(
            log_tail(&["only".to_string()]),
            "\n  program log:\n    only"
        );
    }
}
