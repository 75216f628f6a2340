//! A weight account: one section's bytes after a header that binds it to
//! its model and keeps the seal's progress over those bytes. The constants
//! are the header's offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{address, tag_is, Address, Mismatch, WEIGHT_TAG};
use crate::bytes::{read_u32, read_u64, write_u32, write_u64};

pub const TAG: usize = 0;
pub const MODEL: usize = 8;
pub const SECTION: usize = 40;
pub const LENGTH: usize = 48;
/// Bytes hashed so far by `seal_section` (the seal's cursor); equal to
/// the length once the section is sealed. A write below it resets it.
pub const HASHED: usize = 56;
/// The chained digest of the bytes hashed so far.
pub const CHAIN: usize = 64;
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
    #[inline(always)]
    pub fn model(&self) -> &'a Address {
        address(self.0, MODEL)
    }
    #[inline(always)]
    pub fn section(&self) -> u32 {
        read_u32(self.0, SECTION)
    }
    #[inline(always)]
    pub fn hashed(&self) -> u64 {
        read_u64(self.0, HASHED)
    }
    #[inline(always)]
    pub fn chain(&self) -> &'a Address {
        address(self.0, CHAIN)
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
        let d = &mut *self.0;
        let length = (d.len() - HEADER_LEN) as u64;
        d[..HEADER_LEN].fill(0);
        d[TAG..TAG + 8].copy_from_slice(&WEIGHT_TAG);
        d[MODEL..MODEL + 32].copy_from_slice(model);
        write_u32(d, SECTION, section);
        write_u64(d, LENGTH, length);
    }
    /// Moves the seal's cursor: `hashed` bytes whose chained digest is `chain`.
    #[inline(always)]
    pub fn set_seal(&mut self, hashed: u64, chain: &Address) {
        write_u64(self.0, HASHED, hashed);
        self.0[CHAIN..CHAIN + 32].copy_from_slice(chain);
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0[HEADER_LEN..]
    }
}

/// The IDL's account: each field at its offset (the gaps are zero).
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "weight",
    tag: WEIGHT_TAG,
    len: None,
    docs: &["A weight account (`CURTAWT1`, 128 + the section's length): one section's bytes after a header binding it to its model and keeping the seal's progress."],
    fields: &[
        Field {
            at: MODEL,
            name: "model",
            ty: Ty::Address,
            docs: &["The model the section belongs to."],
        },
        Field {
            at: SECTION,
            name: "section",
            ty: Ty::U32,
            docs: &["The section index."],
        },
        Field {
            at: LENGTH,
            name: "length",
            ty: Ty::U64,
            docs: &["The section's length in bytes."],
        },
        Field {
            at: HASHED,
            name: "hashed",
            ty: Ty::U64,
            docs: &["Seal progress: bytes hashed so far; equal to the length once sealed."],
        },
        Field {
            at: CHAIN,
            name: "chain",
            ty: Ty::Bytes(32),
            docs: &["The chained digest of the bytes hashed so far."],
        },
        Field {
            at: HEADER_LEN,
            name: "bytes",
            ty: Ty::Rest,
            docs: &["The section, as in the artifact, from offset 128 to the end."],
        },
    ],
};
