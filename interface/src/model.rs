//! The Model account: its owner, royalty, configuration, and one entry per
//! section naming the weight account bound to it and, once sealed, its
//! digest. The constants are its fields' offsets and its statuses.

use super::schema::{AccountSchema, Field, Shape, Ty, TypeDef};
use super::{address, tag_is, Address, Mismatch, MODEL_TAG};
use crate::bytes::{read_u32, read_u64, write_u32, write_u64};
use crate::format::{Config, Layout};

pub const TAG: usize = 0;
pub const CONFIG_ACCOUNT: usize = 8;
pub const OWNER: usize = 40;
pub const ROYALTY: usize = 72;
pub const MODEL_CONFIG: usize = 80;
pub const SECTION_COUNT: usize = 108;
pub const STATUS: usize = 112;
/// The artifact's flags (`format::FLAG_SHARED_CLASSIFIER`).
pub const FLAGS: usize = 116;
/// How many sections have a weight account bound.
pub const BOUND: usize = 120;
/// How many sections are sealed.
pub const SEALED_COUNT: usize = 124;
/// The model's identity (`model_identity`), written by `seal_model`;
/// zero while the model is being written.
pub const IDENTITY: usize = 128;
pub const HEADER_LEN: usize = 160;
/// Per section: the weight account's address (zero while unbound), the
/// section's length (u64) and its digest (zero until sealed).
pub const ENTRY_LEN: usize = 72;
pub const ENTRY_ADDRESS: usize = 0;
pub const ENTRY_LENGTH: usize = 32;
pub const ENTRY_DIGEST: usize = 40;

/// Sections are being bound, written and sealed; no run may open.
pub const WRITING: u32 = 0;
/// Immutable; runs may open and turn.
pub const SEALED: u32 = 1;
/// A weight account of a sealed model was closed: runs can only be
/// cancelled, and the rest of the model closed.
pub const RETIRED: u32 = 2;

/// The Model account's length for `sections` sections.
pub const fn len(sections: usize) -> usize {
    HEADER_LEN + ENTRY_LEN * sections
}

/// A view of a Model account's data.
#[derive(Clone, Copy)]
pub struct ModelAccount<'a>(pub &'a [u8]);

impl<'a> ModelAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &MODEL_TAG) {
            return Err(Mismatch::Kind);
        }
        let sections = read_u32(data, SECTION_COUNT) as usize;
        if data.len() < HEADER_LEN || data.len() != len(sections) {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn config_account(&self) -> &'a Address {
        address(self.0, CONFIG_ACCOUNT)
    }
    #[inline(always)]
    pub fn owner(&self) -> &'a Address {
        address(self.0, OWNER)
    }
    #[inline(always)]
    pub fn royalty(&self) -> u64 {
        read_u64(self.0, ROYALTY)
    }
    /// The model's configuration, as recorded (`Config::read` checks it).
    #[inline(always)]
    pub fn model_config(&self) -> &'a [u8] {
        &self.0[MODEL_CONFIG..MODEL_CONFIG + Config::LEN]
    }
    /// The model's configuration, read and checked, planned with the charge
    /// table its flags choose: what every turn of its runs plans with.
    #[inline(always)]
    pub fn config(&self) -> Result<Config, crate::Error> {
        let config = Config::read(self.model_config())?;
        Ok(config.with_flags(self.flags()))
    }
    #[inline(always)]
    pub fn section_count(&self) -> usize {
        read_u32(self.0, SECTION_COUNT) as usize
    }
    #[inline(always)]
    pub fn status(&self) -> u32 {
        read_u32(self.0, STATUS)
    }
    #[inline(always)]
    pub fn flags(&self) -> u32 {
        read_u32(self.0, FLAGS)
    }
    #[inline(always)]
    pub fn bound(&self) -> u32 {
        read_u32(self.0, BOUND)
    }
    #[inline(always)]
    pub fn sealed_count(&self) -> u32 {
        read_u32(self.0, SEALED_COUNT)
    }
    /// The weight account bound to `section`, zero while none is (the
    /// caller checks the index against `section_count`).
    #[inline(always)]
    pub fn section_address(&self, section: usize) -> &'a Address {
        address(self.0, entry(section) + ENTRY_ADDRESS)
    }
    #[inline(always)]
    pub fn section_len(&self, section: usize) -> u64 {
        read_u64(self.0, entry(section) + ENTRY_LENGTH)
    }
    /// The section's digest (`section_digest`), zero until it is sealed.
    #[inline(always)]
    pub fn section_digest(&self, section: usize) -> &'a Address {
        address(self.0, entry(section) + ENTRY_DIGEST)
    }
    /// The identity `seal_model` recorded (`model_identity`), zero before.
    #[inline(always)]
    pub fn identity(&self) -> &'a Address {
        address(self.0, IDENTITY)
    }
}

#[inline(always)]
fn entry(section: usize) -> usize {
    HEADER_LEN + ENTRY_LEN * section
}

/// What `init_model` records, besides the accounts' addresses.
#[derive(Clone, Copy, Debug)]
pub struct ModelInit<'a> {
    pub royalty: u64,
    /// The configuration with `flags`' classifier (`Config::with_flags`),
    /// and its layout.
    pub config: &'a Config,
    pub layout: &'a Layout,
    pub flags: u32,
    /// Section zero's length; the others follow from the configuration.
    pub zero_len: u64,
}

impl ModelInit<'_> {
    /// The length of `section`: section zero's as given, the matrix
    /// sections' from the layout.
    #[inline(always)]
    pub fn section_len(&self, section: u32) -> u64 {
        if section == 0 {
            self.zero_len
        } else {
            self.layout.section_len(self.config, section)
        }
    }
}

/// The writer of a Model account's data (exactly `model::len(count)` bytes).
pub struct ModelAccountMut<'a>(pub &'a mut [u8]);

impl ModelAccountMut<'_> {
    /// Writes every field of a new model being written: every section's
    /// length, no weight account bound, nothing sealed, no identity.
    pub fn init(&mut self, config_account: &Address, owner: &Address, m: &ModelInit) {
        let d = &mut *self.0;
        d.fill(0);
        d[TAG..TAG + 8].copy_from_slice(&MODEL_TAG);
        d[CONFIG_ACCOUNT..CONFIG_ACCOUNT + 32].copy_from_slice(config_account);
        d[OWNER..OWNER + 32].copy_from_slice(owner);
        write_u64(d, ROYALTY, m.royalty);
        d[MODEL_CONFIG..MODEL_CONFIG + Config::LEN].copy_from_slice(&m.config.to_bytes());
        let count = m.layout.section_count();
        write_u32(d, SECTION_COUNT, count);
        write_u32(d, STATUS, WRITING);
        write_u32(d, FLAGS, m.flags);
        for section in 0..count {
            write_u64(
                d,
                entry(section as usize) + ENTRY_LENGTH,
                m.section_len(section),
            );
        }
    }
    #[inline(always)]
    pub fn set_status(&mut self, status: u32) {
        write_u32(self.0, STATUS, status);
    }
    /// Records `weight` as the account of `section`, or unbinds it (zero).
    #[inline(always)]
    pub fn set_section_address(&mut self, section: usize, weight: &Address) {
        let at = entry(section) + ENTRY_ADDRESS;
        self.0[at..at + 32].copy_from_slice(weight);
    }
    /// Records a sealed section's digest, or clears it (zero).
    #[inline(always)]
    pub fn set_section_digest(&mut self, section: usize, digest: &Address) {
        let at = entry(section) + ENTRY_DIGEST;
        self.0[at..at + 32].copy_from_slice(digest);
    }
    #[inline(always)]
    pub fn set_bound(&mut self, bound: u32) {
        write_u32(self.0, BOUND, bound);
    }
    #[inline(always)]
    pub fn set_sealed_count(&mut self, sealed: u32) {
        write_u32(self.0, SEALED_COUNT, sealed);
    }
    /// Records the identity `seal_model` computed (`model_identity`).
    #[inline(always)]
    pub fn set_identity(&mut self, identity: &Address) {
        self.0[IDENTITY..IDENTITY + 32].copy_from_slice(identity);
    }
}

/// The IDL's account: each field at its offset (the gaps are zero).
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "model",
    tag: MODEL_TAG,
    len: None,
    docs: &["A model (`CURTAMD1`, 160 + 72 bytes per section): its owner, royalty, configuration and one entry per section; the entries fill the account, so their count equals `sectionCount`."],
    fields: &[
        Field {
            at: CONFIG_ACCOUNT,
            name: "config",
            ty: Ty::Address,
            docs: &["The config account the model is bound to."],
        },
        Field {
            at: OWNER,
            name: "owner",
            ty: Ty::Address,
            docs: &["Binds, writes and seals weights, closes, receives royalties."],
        },
        Field {
            at: ROYALTY,
            name: "royalty",
            ty: Ty::U64,
            docs: &["Royalty in lamports per generated token."],
        },
        Field {
            at: MODEL_CONFIG,
            name: "modelConfig",
            ty: Ty::Defined(&MODEL_CONFIG_TYPE),
            docs: &["The model's configuration."],
        },
        Field {
            at: SECTION_COUNT,
            name: "sectionCount",
            ty: Ty::U32,
            docs: &["Section count (`format.md`: layer sections + 2)."],
        },
        Field {
            at: STATUS,
            name: "status",
            ty: Ty::Defined(&MODEL_STATUS_TYPE),
            docs: &["Status: 0 writing, 1 sealed, 2 retired."],
        },
        Field {
            at: FLAGS,
            name: "flags",
            ty: Ty::U32,
            docs: &["Flags: bit 0, the classifier is the embedding (shared); bit 1, the model's turns are planned with the measured charge table."],
        },
        Field {
            at: BOUND,
            name: "boundCount",
            ty: Ty::U32,
            docs: &["Weight accounts bound."],
        },
        Field {
            at: SEALED_COUNT,
            name: "sealedCount",
            ty: Ty::U32,
            docs: &["Sections sealed."],
        },
        Field {
            at: IDENTITY,
            name: "identity",
            ty: Ty::Bytes(32),
            docs: &["The model's identity (`model_identity`); zero until `sealModel` writes it."],
        },
        Field {
            at: HEADER_LEN,
            name: "sections",
            ty: Ty::RestOf(&SECTION_ENTRY_TYPE),
            docs: &["The section entries, from offset 160 to the end of the account (`sectionCount` of them)."],
        },
    ],
};

/// The model's configuration as the IDL gives it (`format::Config`).
pub const MODEL_CONFIG_TYPE: TypeDef = TypeDef {
    name: "modelConfig",
    tag: None,
    docs: &["A model's configuration (`format.md`): seven u32, 28 bytes."],
    len: Config::LEN,
    shape: Shape::Struct(&[
        Field {
            at: 0,
            name: "dim",
            ty: Ty::U32,
            docs: &["Model width: the size of the embedding and of every residual."],
        },
        Field {
            at: 4,
            name: "hiddenDim",
            ty: Ty::U32,
            docs: &["Width of the feed-forward layers."],
        },
        Field {
            at: 8,
            name: "nLayers",
            ty: Ty::U32,
            docs: &["Number of transformer layers."],
        },
        Field {
            at: 12,
            name: "nHeads",
            ty: Ty::U32,
            docs: &["Number of query heads."],
        },
        Field {
            at: 16,
            name: "nKvHeads",
            ty: Ty::U32,
            docs: &["Number of key/value heads."],
        },
        Field {
            at: 20,
            name: "vocabSize",
            ty: Ty::U32,
            docs: &["Number of tokens in the vocabulary."],
        },
        Field {
            at: 24,
            name: "seqLen",
            ty: Ty::U32,
            docs: &["The context: the most tokens a run holds, prompt included."],
        },
    ]),
};

/// The status field's values, in order from zero.
pub const MODEL_STATUS_TYPE: TypeDef = TypeDef {
    name: "modelStatus",
    tag: None,
    docs: &["A model's status: writing until `sealModel`, then sealed; retired once a weight account of a sealed model is closed."],
    len: 4,
    shape: Shape::Enum(&["writing", "sealed", "retired"]),
};

/// One section's entry.
pub const SECTION_ENTRY_TYPE: TypeDef = TypeDef {
    name: "sectionEntry",
    tag: None,
    docs: &["One section's entry in a Model account, 72 bytes at offset 160 + 72 i."],
    len: ENTRY_LEN,
    shape: Shape::Struct(&[
        Field {
            at: ENTRY_ADDRESS,
            name: "weightAccount",
            ty: Ty::Address,
            docs: &["The weight account bound to the section; zero while none is."],
        },
        Field {
            at: ENTRY_LENGTH,
            name: "length",
            ty: Ty::U64,
            docs: &["The section's length in bytes, fixed when the model is created."],
        },
        Field {
            at: ENTRY_DIGEST,
            name: "digest",
            ty: Ty::Bytes(32),
            docs: &["The section's chained digest; zero until the section is sealed."],
        },
    ]),
};
