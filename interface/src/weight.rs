//! A weight account: one section's bytes after a header that binds it to
//! its model and keeps the seal's progress over those bytes. The constants
//! are the header's offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{tag_is, Address, Mismatch, WEIGHT_TAG};
use crate::bytes::read_u64;

pub const TAG: usize = 0;
pub const HEADER_LEN: usize = crate::format::WEIGHT_HEADER_LEN;

/// A view of a weight account's data.
#[derive(Clone, Copy)]
pub struct WeightAccount<'a>(pub &'a [u8]);

impl<'a> WeightAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &WEIGHT_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() < HEADER_LEN || read_u64(data, LENGTH) != (data.len() - HEADER_LEN) as u64 {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    /// Whether `seal_section` has hashed and matched every byte.
    #[inline(always)]
    pub fn sealed(&self) -> bool {
        self.hashed() == self.bytes().len() as u64
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        &self.0[HEADER_LEN..]
    }
}

/// The writer of a weight account's data.
pub struct WeightAccountMut<'a>(pub &'a mut [u8]);

impl WeightAccountMut<'_> {
    /// Writes the whole header of a new weight account, section `section`
    /// of `model` with nothing hashed yet; the section's bytes are left to
    /// `write` (they are zero in a new account).
    #[inline(always)]
    pub fn init(&mut self, model: &Address, section: u32) {
        let length = (self.0.len() - HEADER_LEN) as u64;
        self.0[..HEADER_LEN].fill(0);
        self.0[TAG..TAG + 8].copy_from_slice(&WEIGHT_TAG);
        self.set_model(model);
        self.set_section(section);
        self.set_length(length);
    }
    /// Moves the seal's cursor: `hashed` bytes whose chained digest is `chain`.
    #[inline(always)]
    pub fn set_seal(&mut self, hashed: u64, chain: &Address) {
        self.set_hashed(hashed);
        self.set_chain(chain);
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0[HEADER_LEN..]
    }
}

fields! {
    WeightAccount, WeightAccountMut, FIELDS;
    MODEL = 8, "model", address, model, set_model,
        "The model the section belongs to.";
    SECTION = 40, "section", u32, section, set_section,
        "The section index.";
    LENGTH = 48, "length", u64, length, set_length,
        "The section's length in bytes.";
    HASHED = 56, "hashed", u64, hashed, set_hashed,
        "Seal progress: bytes hashed so far; equal to the length once sealed.";
    CHAIN = 64, "chain", address as Ty::Bytes(32), chain, set_chain,
        "The chained digest of the bytes hashed so far.";
    @rest [Field {
        at: HEADER_LEN,
        name: "bytes",
        ty: Ty::Rest,
        docs: &["The section, as in the artifact, from offset 128 to the end."],
    }]
}

/// The IDL's account.
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "weight",
    tag: WEIGHT_TAG,
    len: None,
    docs: &["A weight account (`CURTAWT1`, 128 + the section's length): one section's bytes after a header binding it to its model and keeping the seal's progress."],
    fields: FIELDS,
};
