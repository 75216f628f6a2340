//! One file per instruction, each in the same shape: the accounts by name,
//! the checks written out in order, then the work.

mod fulfill;
mod request;

pub use fulfill::fulfill;
pub use request::request;

use crate::error::StoryError;
use curta_core::protocol::AccountRole;
use curta_program::cpi::AccountMeta;
use curta_program::{AccountView, ProgramError};

/// The accounts an instruction lists, or `NotEnoughAccounts`.
#[inline(always)]
fn take<const N: usize>(accounts: &[AccountView]) -> Result<&[AccountView; N], ProgramError> {
    accounts
        .get(..N)
        .and_then(|a| a.try_into().ok())
        .ok_or(StoryError::NotEnoughAccounts.into())
}

/// The metas of a Curta instruction, each account with the flags Curta's
/// table gives its place (`curta_core::protocol::accounts`).
#[inline(always)]
fn curta_metas<'a, const N: usize>(
    roles: &[AccountRole; N],
    accounts: [&'a AccountView; N],
) -> [AccountMeta<'a>; N] {
    core::array::from_fn(|i| {
        AccountMeta::new(accounts[i].key(), roles[i].writable, roles[i].signer)
    })
}
