//! The Config account: the program's settings, who administers them and
//! the turn allowance. The constants are its fields' offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{address, tag_is, Address, Mismatch, CONFIG_TAG};
use crate::bytes::{read_u32, write_u32};

pub const LEN: usize = 128;
pub const TAG: usize = 0;
pub const ADMIN: usize = 8;
pub const ALLOWANCE: usize = 40;

/// A view of a Config account's data.
#[derive(Clone, Copy)]
pub struct ConfigAccount<'a>(pub &'a [u8]);

impl<'a> ConfigAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &CONFIG_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() != LEN {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn admin(&self) -> &'a Address {
        address(self.0, ADMIN)
    }
    #[inline(always)]
    pub fn allowance(&self) -> u32 {
        read_u32(self.0, ALLOWANCE)
    }
}

/// The writer of a Config account's data (exactly `config::LEN` bytes).
pub struct ConfigAccountMut<'a>(pub &'a mut [u8]);

impl ConfigAccountMut<'_> {
    /// Writes every field of a new config.
    #[inline(always)]
    pub fn init(&mut self, admin: &Address, allowance: u32) {
        self.0.fill(0);
        self.0[TAG..TAG + 8].copy_from_slice(&CONFIG_TAG);
        self.set_admin(admin);
        self.set_allowance(allowance);
    }
    #[inline(always)]
    pub fn set_admin(&mut self, admin: &Address) {
        self.0[ADMIN..ADMIN + 32].copy_from_slice(admin);
    }
    #[inline(always)]
    pub fn set_allowance(&mut self, allowance: u32) {
        write_u32(self.0, ALLOWANCE, allowance);
    }
}

/// The IDL's account: each field at its offset (the gaps are zero).
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "config",
    tag: CONFIG_TAG,
    len: Some(LEN),
    docs: &["The program's settings (`CURTACF1`, 128 bytes): who administers them and the turn allowance every run of its models uses."],
    fields: &[
        Field {
            at: ADMIN,
            name: "admin",
            ty: Ty::Address,
            docs: &["The only signer who may change the settings."],
        },
        Field {
            at: ALLOWANCE,
            name: "allowance",
            ty: Ty::U32,
            docs: &["Turn allowance in compute units (default 1,350,000; 22,096 to 1,350,000)."],
        },
    ],
};
