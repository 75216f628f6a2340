//! The curta program's accounts and instructions: sizes, tags, zero-copy
//! readers and the instruction encoding, shared by the program, the harness
//! and clients. `docs/program.md` describes the same bytes.
//!
//! Every integer is little-endian. Every account opens with an eight-byte
//! tag naming its kind, so one kind can never be passed for another.

pub use crate::format::MAX_ACCOUNT_LEN;
use crate::format::{read_u32, read_u64, Config};

/// A 32-byte address.
pub type Address = [u8; 32];

pub const CONFIG_TAG: [u8; 8] = *b"CURTACF1";
pub const MODEL_TAG: [u8; 8] = *b"CURTAMD1";
pub const WEIGHT_TAG: [u8; 8] = *b"CURTAWT1";
pub const RUN_TAG: [u8; 8] = *b"CURTARN1";

/// Sections are hashed in chunks of this size (see `section_digest`).
pub const HASH_CHUNK: usize = 1 << 20;
/// The most section bytes one `seal_model` instruction hashes: two chunks,
/// about 1.05 million compute units of `sol_sha256`.
pub const SEAL_BYTES_PER_CALL: usize = 2 * HASH_CHUNK;

#[inline(always)]
fn address(data: &[u8], at: usize) -> &Address {
    // The readers check the length before reading.
    data[at..at + 32].try_into().unwrap_or(&[0; 32])
}

#[inline(always)]
fn tag_is(data: &[u8], tag: &[u8; 8]) -> bool {
    data.len() >= 8 && data[..8] == *tag
}

/// Why an account's data is not the kind asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The tag is another kind's, or zero.
    Kind,
    /// The tag is right but the length is not.
    Size,
}

/// The program's settings.
pub mod config {
    pub const LEN: usize = 128;
    pub const TAG: usize = 0;
    pub const ADMIN: usize = 8;
    pub const ALLOWANCE: usize = 40;
}

/// A view of a Config account's data.
#[derive(Clone, Copy)]
pub struct ConfigAccount<'a>(pub &'a [u8]);

impl<'a> ConfigAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &CONFIG_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() != config::LEN {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn admin(&self) -> &'a Address {
        address(self.0, config::ADMIN)
    }
    #[inline(always)]
    pub fn allowance(&self) -> u32 {
        read_u32(self.0, config::ALLOWANCE)
    }
}

/// A model: its owner, royalty, configuration, weight sections and seal.
pub mod model {
    pub const TAG: usize = 0;
    pub const CONFIG_ACCOUNT: usize = 8;
    pub const OWNER: usize = 40;
    pub const ROYALTY: usize = 72;
    pub const MODEL_CONFIG: usize = 80;
    pub const SECTION_COUNT: usize = 108;
    pub const STATUS: usize = 112;
    /// The seal's cursor: the section and byte it has hashed up to, and
    /// the chained digest so far.
    pub const SEAL_SECTION: usize = 116;
    pub const SEAL_OFFSET: usize = 120;
    pub const SEAL_CHAIN: usize = 128;
    pub const HEADER_LEN: usize = 192;
    /// Per section: the weight account's address, the section's length
    /// (u64) and its digest.
    pub const ENTRY_LEN: usize = 72;
    pub const ENTRY_ADDRESS: usize = 0;
    pub const ENTRY_LENGTH: usize = 32;
    pub const ENTRY_DIGEST: usize = 40;

    /// Written by its owner; no run may open.
    pub const WRITING: u32 = 0;
    /// Being hashed by `seal_model`; writes are refused.
    pub const SEALING: u32 = 1;
    /// Immutable; runs may open.
    pub const SEALED: u32 = 2;

    /// The Model account's length for `sections` sections.
    pub const fn len(sections: usize) -> usize {
        HEADER_LEN + ENTRY_LEN * sections
    }
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
        let sections = read_u32(data, model::SECTION_COUNT) as usize;
        if data.len() < model::HEADER_LEN || data.len() != model::len(sections) {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn config_account(&self) -> &'a Address {
        address(self.0, model::CONFIG_ACCOUNT)
    }
    #[inline(always)]
    pub fn owner(&self) -> &'a Address {
        address(self.0, model::OWNER)
    }
    #[inline(always)]
    pub fn royalty(&self) -> u64 {
        read_u64(self.0, model::ROYALTY)
    }
    /// The model's configuration, as recorded (`Config::read` checks it).
    #[inline(always)]
    pub fn model_config(&self) -> &'a [u8] {
        &self.0[model::MODEL_CONFIG..model::MODEL_CONFIG + Config::LEN]
    }
    #[inline(always)]
    pub fn section_count(&self) -> usize {
        read_u32(self.0, model::SECTION_COUNT) as usize
    }
    #[inline(always)]
    pub fn status(&self) -> u32 {
        read_u32(self.0, model::STATUS)
    }
    #[inline(always)]
    pub fn seal_section(&self) -> u32 {
        read_u32(self.0, model::SEAL_SECTION)
    }
    #[inline(always)]
    pub fn seal_offset(&self) -> u64 {
        read_u64(self.0, model::SEAL_OFFSET)
    }
    #[inline(always)]
    pub fn seal_chain(&self) -> &'a Address {
        address(self.0, model::SEAL_CHAIN)
    }
    #[inline(always)]
    fn entry(&self, section: usize) -> usize {
        model::HEADER_LEN + model::ENTRY_LEN * section
    }
    /// The weight account of `section` (the caller checks the index).
    #[inline(always)]
    pub fn section_address(&self, section: usize) -> &'a Address {
        address(self.0, self.entry(section) + model::ENTRY_ADDRESS)
    }
    #[inline(always)]
    pub fn section_len(&self, section: usize) -> u64 {
        read_u64(self.0, self.entry(section) + model::ENTRY_LENGTH)
    }
    #[inline(always)]
    pub fn section_digest(&self, section: usize) -> &'a Address {
        address(self.0, self.entry(section) + model::ENTRY_DIGEST)
    }
}

/// A weight account: one section's bytes after a small header.
pub mod weight {
    pub const TAG: usize = 0;
    pub const MODEL: usize = 8;
    pub const SECTION: usize = 40;
    pub const LENGTH: usize = 48;
    pub const HEADER_LEN: usize = crate::format::WEIGHT_HEADER_LEN;
}

/// The weight account's header, before its section's bytes.
pub const WEIGHT_HEADER_LEN: usize = weight::HEADER_LEN;

/// A view of a weight account's data.
#[derive(Clone, Copy)]
pub struct WeightAccount<'a>(pub &'a [u8]);

impl<'a> WeightAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &WEIGHT_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() < weight::HEADER_LEN
            || read_u64(data, weight::LENGTH) != (data.len() - weight::HEADER_LEN) as u64
        {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn model(&self) -> &'a Address {
        address(self.0, weight::MODEL)
    }
    #[inline(always)]
    pub fn section(&self) -> u32 {
        read_u32(self.0, weight::SECTION)
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        &self.0[weight::HEADER_LEN..]
    }
}

/// A run: a 256-byte header, then the core state.
pub mod run {
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
    pub const HEADER_LEN: usize = 256;
}

/// The run account's header, before the core state.
pub const RUN_HEADER_LEN: usize = run::HEADER_LEN;

/// A view of a Run account's data.
#[derive(Clone, Copy)]
pub struct RunAccount<'a>(pub &'a [u8]);

impl<'a> RunAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &RUN_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() < run::HEADER_LEN + crate::state::HEADER_LEN {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn model(&self) -> &'a Address {
        address(self.0, run::MODEL)
    }
    #[inline(always)]
    pub fn opener(&self) -> &'a Address {
        address(self.0, run::OPENER)
    }
    #[inline(always)]
    pub fn royalty(&self) -> u64 {
        read_u64(self.0, run::ROYALTY)
    }
    #[inline(always)]
    pub fn deposited(&self) -> u64 {
        read_u64(self.0, run::DEPOSITED)
    }
    #[inline(always)]
    pub fn escrow(&self) -> u64 {
        read_u64(self.0, run::ESCROW)
    }
    #[inline(always)]
    pub fn paid(&self) -> u64 {
        read_u64(self.0, run::PAID)
    }
    /// The core state.
    #[inline(always)]
    pub fn state(&self) -> &'a [u8] {
        &self.0[run::HEADER_LEN..]
    }
}

/// The digest the model records for a section: a chain over its 1 MiB
/// chunks, `h = sha256(h || chunk)` from 32 zero bytes, so that sealing
/// can hash a large section over several instructions.
pub fn section_digest(bytes: &[u8]) -> [u8; 32] {
    let mut chain = [0u8; 32];
    for chunk in bytes.chunks(HASH_CHUNK) {
        chain = chain_step(&chain, chunk);
    }
    chain
}

/// One link of `section_digest`, off chain (the program uses `sol_sha256`).
pub fn chain_step(chain: &[u8; 32], chunk: &[u8]) -> [u8; 32] {
    let mut sha = crate::sha256::Sha256::new();
    sha.update(chain);
    sha.update(chunk);
    sha.finish()
}

/// Instruction tags: the first byte of every instruction's data.
pub mod tag {
    /// `[allowance u32]`; accounts: config (writable), admin (signer).
    pub const INIT_CONFIG: u8 = 0;
    /// `[allowance u32]`; accounts: config (writable), admin (signer).
    pub const SET_ALLOWANCE: u8 = 1;
    /// `[royalty u64, config 28 bytes, count u32, count x (length u64,
    /// digest 32)]`; accounts: config, model (writable), owner (signer),
    /// one weight account (writable) per section, in order.
    pub const INIT_MODEL: u8 = 2;
    /// `[offset u64, bytes..]`; accounts: model, weight (writable), owner (signer).
    pub const WRITE: u8 = 3;
    /// `[]`; accounts: model (writable), owner (signer), every weight account in order.
    pub const SEAL_MODEL: u8 = 4;
    /// `[max_tokens u32, temperature_q16 u32, seed u64, prompt..]`; accounts:
    /// config, model, run (writable), opener (signer).
    pub const OPEN_RUN: u8 = 5;
    /// `[]`; accounts: config, model, run (writable), model owner
    /// (writable), section zero's weight account, then the weight accounts
    /// of the sections the turn's plan names, in the plan's order.
    pub const TURN: u8 = 6;
    /// `[]`; accounts: run (writable), opener (signer, writable).
    pub const CLOSE_RUN: u8 = 7;
}

/// A decoded instruction, borrowing its variable parts from the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instruction<'a> {
    InitConfig {
        allowance: u32,
    },
    SetAllowance {
        allowance: u32,
    },
    /// `sections` holds `count` entries of 40 bytes: length u64, digest.
    InitModel {
        royalty: u64,
        config: &'a [u8],
        sections: &'a [u8],
    },
    Write {
        offset: u64,
        bytes: &'a [u8],
    },
    SealModel,
    OpenRun {
        max_tokens: u32,
        temperature_q16: u32,
        seed: u64,
        prompt: &'a [u8],
    },
    Turn,
    CloseRun,
}

/// Bytes of one section entry in `InitModel`'s data.
pub const INIT_MODEL_ENTRY_LEN: usize = 40;

impl<'a> Instruction<'a> {
    /// Decodes instruction data; `None` for an unknown tag or a wrong length.
    pub fn decode(data: &'a [u8]) -> Option<Instruction<'a>> {
        let (&t, rest) = data.split_first()?;
        let exact = |n: usize| rest.len() == n;
        Some(match t {
            tag::INIT_CONFIG if exact(4) => Instruction::InitConfig {
                allowance: read_u32(rest, 0),
            },
            tag::SET_ALLOWANCE if exact(4) => Instruction::SetAllowance {
                allowance: read_u32(rest, 0),
            },
            tag::INIT_MODEL if rest.len() >= 40 => {
                // Compared by division: SBF has no overflow-checked multiply.
                let count = read_u32(rest, 36) as usize;
                let sections = &rest[40..];
                if sections.len() % INIT_MODEL_ENTRY_LEN != 0
                    || sections.len() / INIT_MODEL_ENTRY_LEN != count
                {
                    return None;
                }
                Instruction::InitModel {
                    royalty: read_u64(rest, 0),
                    config: &rest[8..36],
                    sections,
                }
            }
            tag::WRITE if rest.len() >= 8 => Instruction::Write {
                offset: read_u64(rest, 0),
                bytes: &rest[8..],
            },
            tag::SEAL_MODEL if exact(0) => Instruction::SealModel,
            tag::OPEN_RUN if rest.len() >= 16 => Instruction::OpenRun {
                max_tokens: read_u32(rest, 0),
                temperature_q16: read_u32(rest, 4),
                seed: read_u64(rest, 8),
                prompt: &rest[16..],
            },
            tag::TURN if exact(0) => Instruction::Turn,
            tag::CLOSE_RUN if exact(0) => Instruction::CloseRun,
            _ => return None,
        })
    }

    /// Encodes the instruction's data.
    #[cfg(feature = "std")]
    pub fn encode(&self) -> std::vec::Vec<u8> {
        let mut out = std::vec::Vec::new();
        match *self {
            Instruction::InitConfig { allowance } => {
                out.push(tag::INIT_CONFIG);
                out.extend_from_slice(&allowance.to_le_bytes());
            }
            Instruction::SetAllowance { allowance } => {
                out.push(tag::SET_ALLOWANCE);
                out.extend_from_slice(&allowance.to_le_bytes());
            }
            Instruction::InitModel {
                royalty,
                config,
                sections,
            } => {
                out.push(tag::INIT_MODEL);
                out.extend_from_slice(&royalty.to_le_bytes());
                out.extend_from_slice(config);
                out.extend_from_slice(
                    &((sections.len() / INIT_MODEL_ENTRY_LEN) as u32).to_le_bytes(),
                );
                out.extend_from_slice(sections);
            }
            Instruction::Write { offset, bytes } => {
                out.push(tag::WRITE);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Instruction::SealModel => out.push(tag::SEAL_MODEL),
            Instruction::OpenRun {
                max_tokens,
                temperature_q16,
                seed,
                prompt,
            } => {
                out.push(tag::OPEN_RUN);
                out.extend_from_slice(&max_tokens.to_le_bytes());
                out.extend_from_slice(&temperature_q16.to_le_bytes());
                out.extend_from_slice(&seed.to_le_bytes());
                out.extend_from_slice(prompt);
            }
            Instruction::Turn => out.push(tag::TURN),
            Instruction::CloseRun => out.push(tag::CLOSE_RUN),
        }
        out
    }
}
