//! The weight artifact's shape (`CURTAW01`): its header's offsets, the
//! model `Config`, the section layout and the flags. The reader of section
//! zero (`Metadata`) is curta-core's. `docs/format.md` describes the same
//! bytes.
//!
//! Where every matrix lives is a function of the `Config` alone, so that the
//! planner, which sees no weights, names the same sections as the artifact.
//!
//! `config` holds the model's shape and its checks, `layout` where each
//! matrix and section lies, this file the format's constants, its flags and the charge table they pick,
//! and the header's offsets.

mod config;
mod layout;

pub use config::{Config, OutOfRange};
pub use layout::{matrix_len, LayerMatrix, Layout, MatrixRef};

pub use crate::bytes::{align8, read_u32, read_u64};
use crate::Error;

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"CURTAW01";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Where the section table starts: entry `i` is `(u64 offset, u64 length)`.
pub const SECTION_TABLE: usize = 128;
/// Bytes per section table entry.
pub const SECTION_ENTRY_LEN: usize = 16;
/// Entries in the exponential and SiLU tables.
pub const TABLE_LEN: usize = 4097;
/// The longest token text an artifact may hold (the output buffer reserves
/// this much per generated token).
pub const MAX_TOKEN_BYTES: usize = 128;
/// The most data one Solana account may hold (10 MiB): on chain each
/// section lives in one account.
pub const MAX_ACCOUNT_LEN: usize = 10 * 1024 * 1024;
/// What a weight account keeps before its section's bytes.
pub const WEIGHT_HEADER_LEN: usize = 128;
/// The most bytes one section may hold: an account less its header.
pub const MAX_SECTION_LEN: usize = MAX_ACCOUNT_LEN - WEIGHT_HEADER_LEN;
/// Header flag: the classifier is the token embedding (llama2.c's shared weights).
pub const FLAG_SHARED_CLASSIFIER: u32 = 1;
/// Header flag: the model's turns are planned with the measured charge
/// table (`planner::MEASURED_CHARGES`) rather than the specification's.
pub const FLAG_MEASURED_CHARGES: u32 = 2;
/// Every flag an artifact may set; the other bits are zero.
pub const KNOWN_FLAGS: u32 = FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES;

/// The table a model's turns are planned with, chosen when the model is made
/// (`FLAG_MEASURED_CHARGES`) and the same on every target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChargeTable {
    /// The specification's table (`planner::CHARGES`), sized for a kernel of
    /// about five compute units per multiply-accumulate.
    #[default]
    Specification,
    /// Curta's own program, measured, with margin (`planner::MEASURED_CHARGES`).
    Measured,
}

impl ChargeTable {
    /// The table an artifact's or a Model account's flags word chooses.
    #[inline(always)]
    pub const fn from_flags(flags: u32) -> ChargeTable {
        if flags & FLAG_MEASURED_CHARGES != 0 {
            ChargeTable::Measured
        } else {
            ChargeTable::Specification
        }
    }

    /// Its flag bit: 0 for the specification's table.
    #[inline(always)]
    pub const fn flag(self) -> u32 {
        match self {
            ChargeTable::Specification => 0,
            ChargeTable::Measured => FLAG_MEASURED_CHARGES,
        }
    }

    /// Its name, as `--charges` takes it: `specification` or `measured`.
    pub const fn name(self) -> &'static str {
        match self {
            ChargeTable::Specification => "specification",
            ChargeTable::Measured => "measured",
        }
    }

    /// Both tables, the default first.
    pub const ALL: [ChargeTable; 2] = [ChargeTable::Specification, ChargeTable::Measured];

    /// The table `name` names (`name`'s inverse), if any.
    pub fn from_name(name: &str) -> Option<ChargeTable> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// Section zero's flags word, read without parsing the rest
/// (`Config::with_flags` takes it): llama2.c's default, a shared classifier
/// and the specification's table, for bytes too short to hold it (which
/// `Metadata::new` then refuses).
#[inline(always)]
pub fn flags_of(metadata: &[u8]) -> u32 {
    if metadata.len() < header::FLAGS + 4 {
        return FLAG_SHARED_CLASSIFIER;
    }
    read_u32(metadata, header::FLAGS)
}

/// Byte offsets of the header's fields. All integers are little-endian.
pub mod header {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const SECTION_COUNT: usize = 12;
    pub const CONFIG: usize = 16;
    pub const FLAGS: usize = 44;
    pub const INV_SQRT_HEAD: usize = 48;
    pub const MAX_TOKEN_LEN: usize = 52;
    pub const EXP_TABLE: usize = 56;
    pub const SILU_TABLE: usize = 60;
    pub const ROPE_TABLE: usize = 64;
    pub const NORMS: usize = 68;
    pub const TOKEN_OFFSETS: usize = 72;
    pub const TOKEN_SCORES: usize = 76;
    pub const TOKEN_SORTED: usize = 80;
    pub const TOKEN_BYTES: usize = 84;
    pub const TOKEN_BYTES_LEN: usize = 88;
    /// Bytes 92..128 are reserved and zero.
    pub const RESERVED: usize = 92;
    pub const LEN: usize = 128;
}
