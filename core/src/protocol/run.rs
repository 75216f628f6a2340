//! A Run account: a 256-byte header, then the core state. The constants
//! are the header's offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{address, tag_is, Address, Mismatch, RUN_TAG};
use crate::bytes::{read_u64, write_u64};

pub const TAG: usize = 0;
pub const MODEL: usize = 8;
pub const OPENER: usize = 40;
/// The royalty per token, fixed when the run opens.
pub const ROYALTY: usize = 72;
/// Lamports escrowed at opening: royalty times max tokens.
pub const DEPOSITED: usize = 80;
/// Lamports still escrowed.
pub const ESCROW: usize = 88;
/// Lamports paid to the model's owner.
pub const PAID: usize = 96;
/// The identity of the model as the run was opened on it
/// (`model_identity`); every turn requires the model's to be the same.
pub const MODEL_IDENTITY: usize = 104;
pub const HEADER_LEN: usize = 256;
/// Where the state keeps the prompt (its first buffer), and where
/// `write_prompt` stages it before `open_run`.
pub const PROMPT: usize = HEADER_LEN + crate::state::HEADER_LEN;

/// A view of a Run account's data.
#[derive(Clone, Copy)]
pub struct RunAccount<'a>(pub &'a [u8]);

impl<'a> RunAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &RUN_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() < HEADER_LEN + crate::state::HEADER_LEN {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn model(&self) -> &'a Address {
        address(self.0, MODEL)
    }
    #[inline(always)]
    pub fn opener(&self) -> &'a Address {
        address(self.0, OPENER)
    }
    #[inline(always)]
    pub fn royalty(&self) -> u64 {
        read_u64(self.0, ROYALTY)
    }
    #[inline(always)]
    pub fn deposited(&self) -> u64 {
        read_u64(self.0, DEPOSITED)
    }
    #[inline(always)]
    pub fn escrow(&self) -> u64 {
        read_u64(self.0, ESCROW)
    }
    #[inline(always)]
    pub fn paid(&self) -> u64 {
        read_u64(self.0, PAID)
    }
    /// The identity of the model the run was opened on.
    #[inline(always)]
    pub fn model_identity(&self) -> &'a Address {
        address(self.0, MODEL_IDENTITY)
    }
    /// The core state.
    #[inline(always)]
    pub fn state(&self) -> &'a [u8] {
        &self.0[HEADER_LEN..]
    }
}

/// The writer of a Run account's data.
pub struct RunAccountMut<'a>(pub &'a mut [u8]);

/// What `open_run` records in a run's header.
#[derive(Clone, Copy, Debug)]
pub struct RunInit<'a> {
    pub model: &'a Address,
    pub model_identity: &'a Address,
    pub opener: &'a Address,
    pub royalty: u64,
    /// The escrow: royalty times max tokens.
    pub deposited: u64,
}

impl<'a> RunAccountMut<'a> {
    /// Writes every field of a new run's header (exactly `run::HEADER_LEN`
    /// bytes, or more); the state is written separately.
    #[inline(always)]
    pub fn init(&mut self, r: &RunInit) {
        let d = &mut self.0[..HEADER_LEN];
        d.fill(0);
        d[TAG..TAG + 8].copy_from_slice(&RUN_TAG);
        d[MODEL..MODEL + 32].copy_from_slice(r.model);
        d[MODEL_IDENTITY..MODEL_IDENTITY + 32].copy_from_slice(r.model_identity);
        let (opener, royalty, deposited) = (r.opener, r.royalty, r.deposited);
        d[OPENER..OPENER + 32].copy_from_slice(opener);
        write_u64(d, ROYALTY, royalty);
        write_u64(d, DEPOSITED, deposited);
        write_u64(d, ESCROW, deposited);
    }
    /// Records a payment to the model's owner: the escrow and the paid
    /// total after it.
    #[inline(always)]
    pub fn set_payments(&mut self, escrow: u64, paid: u64) {
        write_u64(self.0, ESCROW, escrow);
        write_u64(self.0, PAID, paid);
    }
    /// The header and the core state, apart.
    #[inline(always)]
    pub fn split(self) -> (RunAccountMut<'a>, &'a mut [u8]) {
        let (header, state) = self.0.split_at_mut(HEADER_LEN);
        (RunAccountMut(header), state)
    }
}

/// The IDL's account: each field at its offset (the gaps are zero).
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "run",
    tag: RUN_TAG,
    len: None,
    docs: &["A run (`CURTARN1`, 256 + `state_size`): a 256-byte header, then the core state (`state.md`)."],
    fields: &[
        Field {
            at: MODEL,
            name: "model",
            ty: Ty::Address,
            docs: &["The model the run was opened on."],
        },
        Field {
            at: OPENER,
            name: "opener",
            ty: Ty::Address,
            docs: &["Who funded the run and gets the rest back."],
        },
        Field {
            at: ROYALTY,
            name: "royalty",
            ty: Ty::U64,
            docs: &["Royalty per token, fixed at opening."],
        },
        Field {
            at: DEPOSITED,
            name: "deposited",
            ty: Ty::U64,
            docs: &["The escrow at opening: royalty x max tokens."],
        },
        Field {
            at: ESCROW,
            name: "escrow",
            ty: Ty::U64,
            docs: &["Escrow still held (deposited = escrow + paid)."],
        },
        Field {
            at: PAID,
            name: "paid",
            ty: Ty::U64,
            docs: &["Lamports paid to the model's owner."],
        },
        Field {
            at: MODEL_IDENTITY,
            name: "modelIdentity",
            ty: Ty::Bytes(32),
            docs: &["The identity of the model the run was opened on; every turn requires the same."],
        },
        Field {
            at: HEADER_LEN,
            name: "state",
            ty: Ty::Rest,
            docs: &["The core state (`state.md`), from offset 256 to the end."],
        },
    ],
};
