//! Turn receipts, as the client core reads and checks them
//! (`curta_core::client::receipt`): only lines Curta's own invocation
//! logged count.

pub use curta_core::client::receipt::{differences, program_units, Difference, Expected, Receipt};

/// The turn receipts the program `program_id` logged, in order.
pub fn from_logs(logs: &[String], program_id: &str) -> Vec<Receipt> {
    curta_core::client::receipt::from_logs(logs, program_id)
}
