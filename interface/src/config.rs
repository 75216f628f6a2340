//! The Config account: the program's settings, who administers them and
//! the turn allowance. The constants are its fields' offsets.

use super::schema::AccountSchema;
use super::{tag_is, Address, Mismatch, CONFIG_TAG};

pub const LEN: usize = 128;
pub const TAG: usize = 0;

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
}

fields! {
    ConfigAccount, ConfigAccountMut, FIELDS;
    ADMIN = 8, "admin", address, admin, set_admin,
        "The only signer who may change the settings.";
    ALLOWANCE = 40, "allowance", u32, allowance, set_allowance,
        "Turn allowance in compute units (default 1,350,000; 22,096 to 1,350,000).";
    @rest []
}

/// The IDL's account.
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "config",
    tag: CONFIG_TAG,
    len: Some(LEN),
    docs: &["The program's settings (`CURTACF1`, 128 bytes): who administers them and the turn allowance every run of its models uses."],
    fields: FIELDS,
};
