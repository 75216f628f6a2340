//! The Model account: its owner, royalty, configuration, and one entry per
//! section naming the weight account bound to it and, once sealed, its
//! digest. The constants are its fields' offsets and its statuses.

use super::schema::{AccountSchema, Field, Shape, Ty, TypeDef};
use super::{address, tag_is, Address, Mismatch, MODEL_TAG};
use crate::bytes::{read_u32, read_u64, write_u64};
use crate::format::{Config, Layout};

pub const TAG: usize = 0;
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
    /// The model's configuration, read and checked, planned with the charge
    /// table its flags choose: what every turn of its runs plans with.
    #[inline(always)]
    pub fn config(&self) -> Result<Config, crate::Error> {
        let config = Config::read(self.model_config())?;
        Ok(config.with_flags(self.flags()))
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
        self.0.fill(0);
        self.0[TAG..TAG + 8].copy_from_slice(&MODEL_TAG);
        self.set_config_account(config_account);
        self.set_owner(owner);
        self.set_royalty(m.royalty);
        self.set_model_config(&m.config.to_bytes());
        let count = m.layout.section_count();
        self.set_section_count(count);
        self.set_status(WRITING);
        self.set_flags(m.flags);
        for section in 0..count {
            write_u64(
                self.0,
                entry(section as usize) + ENTRY_LENGTH,
                m.section_len(section),
            );
        }
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
}

fields! {
    ModelAccount, ModelAccountMut, FIELDS;
    CONFIG_ACCOUNT = 8, "config", address, config_account, set_config_account,
        "The config account the model is bound to.";
    OWNER = 40, "owner", address, owner, set_owner,
        "Binds, writes and seals weights, closes, receives royalties.";
    ROYALTY = 72, "royalty", u64, royalty, set_royalty,
        "Royalty in lamports per generated token.";
    MODEL_CONFIG = 80, "modelConfig", bytes 28 as Ty::Defined(&MODEL_CONFIG_TYPE), model_config, set_model_config,
        "The model's configuration.";
    SECTION_COUNT = 108, "sectionCount", count, section_count, set_section_count,
        "Section count (`format.md`, \"Sections\": section zero, the layer sections and the output sections).";
    STATUS = 112, "status", u32 as Ty::Defined(&MODEL_STATUS_TYPE), status, set_status,
        "Status: 0 writing, 1 sealed, 2 retired.";
    FLAGS = 116, "flags", u32, flags, set_flags,
        "Flags: bit 0, the classifier is the embedding (shared); bit 1, the model's turns are planned with the measured charge table.";
    BOUND = 120, "boundCount", u32, bound, set_bound,
        "Weight accounts bound.";
    SEALED_COUNT = 124, "sealedCount", u32, sealed_count, set_sealed_count,
        "Sections sealed.";
    IDENTITY = 128, "modelIdentity", address as Ty::Bytes(32), model_identity, set_model_identity,
        "The model's identity (`model_identity`); zero until `sealModel` writes it.";
    @rest [Field {
        at: HEADER_LEN,
        name: "sections",
        ty: Ty::RestOf(&SECTION_ENTRY_TYPE),
        docs: &["The section entries, from offset 160 to the end of the account (`sectionCount` of them)."],
    }]
}

/// The IDL's account.
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "model",
    tag: MODEL_TAG,
    len: None,
    docs: &["A model (`CURTAMD1`, 160 + 72 bytes per section): its owner, royalty, configuration and one entry per section; the entries fill the account, so their count equals `sectionCount`."],
    fields: FIELDS,
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
