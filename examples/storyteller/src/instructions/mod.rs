//! One file per instruction, each in the same shape: the accounts by name,
//! the checks written out in order, then the work.

mod cancel;
mod fulfill;
mod receive;
mod request;
mod story;

pub use cancel::cancel;
pub use fulfill::fulfill;
pub use receive::receive;
pub use request::request;
