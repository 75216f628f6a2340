//! Errors in words. Every failure says what was being done, with the value
//! and the limit where there is one; a program error is named as
//! `docs/program.md` names it, with its number, so a user can look it up.

use std::fmt;

use curta_core::client::errors::{self as client_errors, Raiser};
use solana_instruction::error::InstructionError;
use solana_pubkey::Pubkey;
use solana_transaction::TransactionError;

/// A failure, as the message the user reads, and whether it ends a
/// cranker going over many runs too (the signer cannot pay a fee: no other
/// run would fare better).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String, bool);

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error(message.into(), false)
    }

    /// The same failure, which ends a cranker too, not only its run.
    pub fn ends_cranker(self) -> Error {
        Error(self.0, true)
    }

    /// Whether it ends a cranker, not only its run (`ends_cranker`).
    pub fn is_for_every_run(&self) -> bool {
        self.1
    }

    /// The same failure, after `what` (the step that failed).
    pub fn context(self, what: impl fmt::Display) -> Error {
        Error(format!("{what}: {}", self.0), self.1)
    }

    /// The same failure, then on the same line what the user can do next
    /// (`next` as a sentence of its own): an error is one line.
    pub fn then(self, next: impl fmt::Display) -> Error {
        let next = next.to_string();
        let mut chars = next.chars();
        let next: String = match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => return self,
        };
        let stop = match self.0.ends_with(['.', '?', '!']) {
            true => " ",
            false => ". ",
        };
        Error(format!("{}{stop}{next}", self.0), self.1)
    }

    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<solana_rpc_client_api::client_error::Error> for Error {
    fn from(e: solana_rpc_client_api::client_error::Error) -> Error {
        Error(rpc_error(&e), false)
    }
}

impl From<curta_core::Error> for Error {
    fn from(e: curta_core::Error) -> Error {
        Error(format!("{} (core error {})", e.name(), e.code()), false)
    }
}

/// `Err(Error::new(format!(...)))`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::errors::Error::new(format!($($arg)*)))
    };
}

/// Adds the step that failed to any error that converts to [`Error`].
pub trait Context<T> {
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(what))
    }
}

/// The custom program error a transaction failed with, if that is how it failed.
pub fn custom_code(err: &TransactionError) -> Option<u32> {
    match err {
        TransactionError::InstructionError(_, InstructionError::Custom(code)) => Some(*code),
        _ => None,
    }
}

/// The custom code of an error Curta's own instruction raised (`programs`:
/// each instruction's program).
pub fn curta_code(err: &TransactionError, programs: &[Pubkey], curta: &Pubkey) -> Option<u32> {
    match err {
        TransactionError::InstructionError(i, InstructionError::Custom(code))
            if programs.get(*i as usize) == Some(curta) =>
        {
            Some(*code)
        }
        _ => None,
    }
}

/// The program each of a message's instructions calls, in order.
pub fn instruction_programs(message: &solana_message::Message) -> Vec<Pubkey> {
    message
        .instructions
        .iter()
        .map(|ix| message.account_keys[ix.program_id_index as usize])
        .collect()
}

/// A transaction error in words. An instruction's error is decoded as the
/// error of the program that raised it (`programs`: each instruction's
/// program, in order): curta's by name and meaning, the System program's
/// by its own names, any other's by number and program.
pub fn transaction_error(err: &TransactionError, programs: &[Pubkey], curta: &Pubkey) -> String {
    let TransactionError::InstructionError(i, e) = err else {
        return err.to_string();
    };
    let program = programs.get(*i as usize);
    let system = solana_sdk_ids::system_program::id();
    let other = program.map(Pubkey::to_string);
    let raiser = match program {
        Some(p) if p == curta => Raiser::Curta,
        Some(p) if *p == system => Raiser::System,
        Some(_) => Raiser::Other(other.as_deref().unwrap_or_default()),
        None => Raiser::Unknown,
    };
    match (e, raiser) {
        (InstructionError::Custom(code), raiser) => client_errors::custom(*code, raiser, *i as u32),
        (e, Raiser::Curta) => format!("instruction {i} (curta): {e}"),
        (e, Raiser::System) => format!("instruction {i} (the System program): {e}"),
        (e, Raiser::Other(p)) => format!("instruction {i} (program {p}): {e}"),
        (e, Raiser::Unknown) => format!("instruction {i}: {e}"),
    }
}

/// Whether a transaction failed for want of the signer's lamports: the
/// fee, a transfer, or an account's rent.
pub fn is_short_of_lamports(err: &TransactionError, programs: &[Pubkey]) -> bool {
    match err {
        TransactionError::AccountNotFound
        | TransactionError::InsufficientFundsForFee
        | TransactionError::InsufficientFundsForRent { .. } => true,
        TransactionError::InstructionError(i, InstructionError::Custom(1)) => programs
            .get(*i as usize)
            .is_some_and(|p| *p == solana_sdk_ids::system_program::id()),
        _ => false,
    }
}

/// An RPC failure in words: a preflight failure with its program error and
/// the program's last log lines, a transport error with the URL's problem.
pub fn rpc_error(e: &solana_rpc_client_api::client_error::Error) -> String {
    use solana_rpc_client_api::client_error::ErrorKind;
    use solana_rpc_client_api::request::{RpcError, RpcResponseErrorData};
    match e.kind() {
        ErrorKind::RpcError(RpcError::RpcResponseError {
            data: RpcResponseErrorData::SendTransactionPreflightFailure(sim),
            message,
            ..
        }) => {
            let mut out = match &sim.err {
                Some(err) => {
                    let err: TransactionError = err.clone().into();
                    format!(
                        "refused in simulation: {}",
                        transaction_error(&err, &[], &Pubkey::default())
                    )
                }
                None => message.clone(),
            };
            if let Some(logs) = &sim.logs {
                out.push_str(&log_tail(logs));
            }
            out
        }
        ErrorKind::Reqwest(r) if r.is_connect() || r.is_timeout() || r.is_request() => {
            unreachable_rpc(r)
        }
        ErrorKind::Io(io) => unreachable_rpc(io),
        // The retrying transport's own words (`transport::gave_up`).
        ErrorKind::Custom(m) => m.clone(),
        // The RPC client reports any failure of getAccountInfo, a dropped
        // connection included, as "AccountNotFound: pubkey=...: <cause>".
        ErrorKind::RpcError(RpcError::ForUser(m))
            if m.starts_with("AccountNotFound: pubkey=") && m.matches(": ").count() > 1 =>
        {
            let cause = m.splitn(3, ": ").nth(2).unwrap_or(m);
            unreachable_rpc(cause)
        }
        _ => e.to_string(),
    }
}

fn unreachable_rpc(cause: impl fmt::Display) -> String {
    format!("cannot reach the cluster's RPC ({cause}); is the validator running and --url right?")
}

/// The end of a transaction's logs for an error message, as every client quotes it.
pub use curta_core::client::errors::log_tail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_to_do_next_is_a_sentence_on_the_errors_line() {
        let e = Error::new("the RPC at U does not answer: 8 retries over 32 s did not get through");
        assert_eq!(
            e.then("the run R stays open").message(),
            "the RPC at U does not answer: 8 retries over 32 s did not get through. The run R \
             stays open"
        );
        let asked = Error::new("is the validator running and --url right?");
        assert_eq!(
            asked.then("run it again").message(),
            "is the validator running and --url right? Run it again"
        );
        assert_eq!(Error::new("x").then("").message(), "x");
    }

    #[test]
    fn program_errors_by_name_and_number() {
        let curta = Pubkey::new_from_array([9; 32]);
        let budget = solana_sdk_ids::compute_budget::id();
        let system = solana_sdk_ids::system_program::id();
        let stale = TransactionError::InstructionError(2, InstructionError::Custom(21));
        let words = transaction_error(&stale, &[budget, budget, curta], &curta);
        assert!(words.starts_with("StaleTurn (custom program error 21): A turn whose expected"));
        assert!(words.ends_with("(instruction 2)"), "{words}");
        assert_eq!(custom_code(&stale), Some(21));
        // The same number raised by the System program is its error, not curta's.
        let short = TransactionError::InstructionError(0, InstructionError::Custom(1));
        assert_eq!(
            transaction_error(&short, &[system, curta], &curta),
            "the System program's ResultWithNegativeLamports (its error 1): the payer has fewer \
             lamports than the instruction moves (instruction 0)"
        );
        assert!(is_short_of_lamports(&short, &[system, curta]));
        assert!(!is_short_of_lamports(&short, &[curta, system]));
        let other = Pubkey::new_from_array([7; 32]);
        assert_eq!(
            transaction_error(&short, &[other], &curta),
            format!("custom program error 1 of program {other} (instruction 0)")
        );
    }
}
