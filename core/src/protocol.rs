//! The curta program's accounts, instructions and events: sizes, tags,
//! zero-copy readers and the writers that mirror them, and the instruction
//! encoding. The program, the harness and every client use this module, so
//! no one writes an account field by raw offset anywhere else.
//! `docs/program.md` describes the same bytes.
//!
//! Every integer is little-endian. Every account opens with an eight-byte
//! tag naming its kind, so one kind can never be passed for another.

use crate::bytes::{read_u32, read_u64, write_u32, write_u64};
pub use crate::format::MAX_ACCOUNT_LEN;
use crate::format::{ChargeTable, Config, Layout};

/// A 32-byte address.
pub type Address = [u8; 32];

pub const CONFIG_TAG: [u8; 8] = *b"CURTACF1";
pub const MODEL_TAG: [u8; 8] = *b"CURTAMD1";
pub const WEIGHT_TAG: [u8; 8] = *b"CURTAWT1";
pub const RUN_TAG: [u8; 8] = *b"CURTARN1";

/// Sections are hashed in chunks of this size (see `section_digest`).
pub const HASH_CHUNK: usize = 1 << 20;
/// The most section bytes one `seal_section` instruction hashes: two chunks,
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

// ---- Config ----------------------------------------------------------------

/// The program's settings: who administers them and the turn allowance.
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

/// The writer of a Config account's data (exactly `config::LEN` bytes).
pub struct ConfigAccountMut<'a>(pub &'a mut [u8]);

impl ConfigAccountMut<'_> {
    /// Writes every field of a new config.
    #[inline(always)]
    pub fn init(&mut self, admin: &Address, allowance: u32) {
        self.0.fill(0);
        self.0[config::TAG..config::TAG + 8].copy_from_slice(&CONFIG_TAG);
        self.set_admin(admin);
        self.set_allowance(allowance);
    }
    #[inline(always)]
    pub fn set_admin(&mut self, admin: &Address) {
        self.0[config::ADMIN..config::ADMIN + 32].copy_from_slice(admin);
    }
    #[inline(always)]
    pub fn set_allowance(&mut self, allowance: u32) {
        write_u32(self.0, config::ALLOWANCE, allowance);
    }
}

// ---- Model -----------------------------------------------------------------

/// A model: its owner, royalty, configuration, and one entry per section
/// naming the weight account bound to it and, once sealed, its digest.
pub mod model {
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
    /// The model's configuration, read and checked, planned with the charge
    /// table its flags choose: what every turn of its runs plans with.
    #[inline(always)]
    pub fn config(&self) -> Result<Config, crate::Error> {
        let config = Config::read(self.model_config())?;
        Ok(config.with_charges(ChargeTable::from_flags(self.flags())))
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
    pub fn flags(&self) -> u32 {
        read_u32(self.0, model::FLAGS)
    }
    #[inline(always)]
    pub fn bound(&self) -> u32 {
        read_u32(self.0, model::BOUND)
    }
    #[inline(always)]
    pub fn sealed_count(&self) -> u32 {
        read_u32(self.0, model::SEALED_COUNT)
    }
    /// The weight account bound to `section`, zero while none is (the
    /// caller checks the index against `section_count`).
    #[inline(always)]
    pub fn section_address(&self, section: usize) -> &'a Address {
        address(self.0, entry(section) + model::ENTRY_ADDRESS)
    }
    #[inline(always)]
    pub fn section_len(&self, section: usize) -> u64 {
        read_u64(self.0, entry(section) + model::ENTRY_LENGTH)
    }
    /// The section's digest (`section_digest`), zero until it is sealed.
    #[inline(always)]
    pub fn section_digest(&self, section: usize) -> &'a Address {
        address(self.0, entry(section) + model::ENTRY_DIGEST)
    }
    /// The identity `seal_model` recorded (`model_identity`), zero before.
    #[inline(always)]
    pub fn identity(&self) -> &'a Address {
        address(self.0, model::IDENTITY)
    }
}

/// A sealed model's identity: `sha256(address || data)`, the data being the
/// Model account's as `seal_model` leaves it but with the identity field's
/// 32 bytes zero. It covers everything a run depends on (the config account,
/// owner, royalty, configuration, flags, and every section's weight account,
/// length and digest), so a model closed and created again at the same
/// address with any change has another identity. `seal_model` computes it
/// with `sol_sha256` over `model_identity_parts`; off chain, this function.
pub fn model_identity(address: &Address, data: &[u8]) -> [u8; 32] {
    let mut sha = crate::sha256::Sha256::new();
    for part in model_identity_parts(address, data) {
        sha.update(part);
    }
    sha.finish()
}

/// The four byte strings `model_identity` hashes, in order: the address, the
/// data before the identity field, 32 zero bytes, the data after it.
#[inline(always)]
pub fn model_identity_parts<'a>(address: &'a Address, data: &'a [u8]) -> [&'a [u8]; 4] {
    const ZERO: [u8; 32] = [0; 32];
    let (before, rest) = data.split_at(model::IDENTITY.min(data.len()));
    let after = rest.get(32..).unwrap_or(&[]);
    [address, before, &ZERO, after]
}

#[inline(always)]
fn entry(section: usize) -> usize {
    model::HEADER_LEN + model::ENTRY_LEN * section
}

/// What `init_model` records, besides the accounts' addresses.
#[derive(Clone, Copy, Debug)]
pub struct ModelInit<'a> {
    pub royalty: u64,
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
            let shared = self.flags & crate::format::FLAG_SHARED_CLASSIFIER != 0;
            self.layout.section_len(self.config, section, shared)
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
        d[model::TAG..model::TAG + 8].copy_from_slice(&MODEL_TAG);
        d[model::CONFIG_ACCOUNT..model::CONFIG_ACCOUNT + 32].copy_from_slice(config_account);
        d[model::OWNER..model::OWNER + 32].copy_from_slice(owner);
        write_u64(d, model::ROYALTY, m.royalty);
        d[model::MODEL_CONFIG..model::MODEL_CONFIG + Config::LEN]
            .copy_from_slice(&m.config.to_bytes());
        let count = m.layout.section_count();
        write_u32(d, model::SECTION_COUNT, count);
        write_u32(d, model::STATUS, model::WRITING);
        write_u32(d, model::FLAGS, m.flags);
        for section in 0..count {
            write_u64(
                d,
                entry(section as usize) + model::ENTRY_LENGTH,
                m.section_len(section),
            );
        }
    }
    #[inline(always)]
    pub fn set_status(&mut self, status: u32) {
        write_u32(self.0, model::STATUS, status);
    }
    /// Records `weight` as the account of `section`, or unbinds it (zero).
    #[inline(always)]
    pub fn set_section_address(&mut self, section: usize, weight: &Address) {
        let at = entry(section) + model::ENTRY_ADDRESS;
        self.0[at..at + 32].copy_from_slice(weight);
    }
    /// Records a sealed section's digest, or clears it (zero).
    #[inline(always)]
    pub fn set_section_digest(&mut self, section: usize, digest: &Address) {
        let at = entry(section) + model::ENTRY_DIGEST;
        self.0[at..at + 32].copy_from_slice(digest);
    }
    #[inline(always)]
    pub fn set_bound(&mut self, bound: u32) {
        write_u32(self.0, model::BOUND, bound);
    }
    #[inline(always)]
    pub fn set_sealed_count(&mut self, sealed: u32) {
        write_u32(self.0, model::SEALED_COUNT, sealed);
    }
    /// Records the identity `seal_model` computed (`model_identity`).
    #[inline(always)]
    pub fn set_identity(&mut self, identity: &Address) {
        self.0[model::IDENTITY..model::IDENTITY + 32].copy_from_slice(identity);
    }
}

// ---- Weight ----------------------------------------------------------------

/// A weight account: one section's bytes after a header that binds it to
/// its model and keeps the seal's progress over those bytes.
pub mod weight {
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
    #[inline(always)]
    pub fn hashed(&self) -> u64 {
        read_u64(self.0, weight::HASHED)
    }
    #[inline(always)]
    pub fn chain(&self) -> &'a Address {
        address(self.0, weight::CHAIN)
    }
    /// Whether `seal_section` has hashed and matched every byte.
    #[inline(always)]
    pub fn sealed(&self) -> bool {
        self.hashed() == self.bytes().len() as u64
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        &self.0[weight::HEADER_LEN..]
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
        let length = (d.len() - weight::HEADER_LEN) as u64;
        d[..weight::HEADER_LEN].fill(0);
        d[weight::TAG..weight::TAG + 8].copy_from_slice(&WEIGHT_TAG);
        d[weight::MODEL..weight::MODEL + 32].copy_from_slice(model);
        write_u32(d, weight::SECTION, section);
        write_u64(d, weight::LENGTH, length);
    }
    /// Moves the seal's cursor: `hashed` bytes whose chained digest is `chain`.
    #[inline(always)]
    pub fn set_seal(&mut self, hashed: u64, chain: &Address) {
        write_u64(self.0, weight::HASHED, hashed);
        self.0[weight::CHAIN..weight::CHAIN + 32].copy_from_slice(chain);
    }
    /// The section's bytes.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0[weight::HEADER_LEN..]
    }
}

// ---- Run -------------------------------------------------------------------

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
    /// The identity of the model as the run was opened on it
    /// (`model_identity`); every turn requires the model's to be the same.
    pub const MODEL_IDENTITY: usize = 104;
    pub const HEADER_LEN: usize = 256;
    /// Where the state keeps the prompt (its first buffer), and where
    /// `write_prompt` stages it before `open_run`.
    pub const PROMPT: usize = HEADER_LEN + crate::state::HEADER_LEN;
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
    /// The identity of the model the run was opened on.
    #[inline(always)]
    pub fn model_identity(&self) -> &'a Address {
        address(self.0, run::MODEL_IDENTITY)
    }
    /// The core state.
    #[inline(always)]
    pub fn state(&self) -> &'a [u8] {
        &self.0[run::HEADER_LEN..]
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
        let d = &mut self.0[..run::HEADER_LEN];
        d.fill(0);
        d[run::TAG..run::TAG + 8].copy_from_slice(&RUN_TAG);
        d[run::MODEL..run::MODEL + 32].copy_from_slice(r.model);
        d[run::MODEL_IDENTITY..run::MODEL_IDENTITY + 32].copy_from_slice(r.model_identity);
        let (opener, royalty, deposited) = (r.opener, r.royalty, r.deposited);
        d[run::OPENER..run::OPENER + 32].copy_from_slice(opener);
        write_u64(d, run::ROYALTY, royalty);
        write_u64(d, run::DEPOSITED, deposited);
        write_u64(d, run::ESCROW, deposited);
    }
    /// Records a payment to the model's owner: the escrow and the paid
    /// total after it.
    #[inline(always)]
    pub fn set_payments(&mut self, escrow: u64, paid: u64) {
        write_u64(self.0, run::ESCROW, escrow);
        write_u64(self.0, run::PAID, paid);
    }
    /// The header and the core state, apart.
    #[inline(always)]
    pub fn split(self) -> (RunAccountMut<'a>, &'a mut [u8]) {
        let (header, state) = self.0.split_at_mut(run::HEADER_LEN);
        (RunAccountMut(header), state)
    }
}

/// The prompt `write_prompt` stages in a run account not yet opened, at its
/// place in the state to come (`run::PROMPT`), for `open_run` to take.
pub struct PromptStage<'a>(pub &'a mut [u8]);

impl PromptStage<'_> {
    /// The most prompt bytes that can be staged, and the end of the room
    /// staging may write in this account.
    #[inline(always)]
    fn end(&self) -> usize {
        self.0.len().min(Self::END)
    }

    /// Copies `bytes` to prompt offset `offset`; `false` when they do not
    /// fit the account or the longest prompt.
    #[inline(always)]
    pub fn write(&mut self, offset: usize, bytes: &[u8]) -> bool {
        let at = run::PROMPT + offset;
        match at.checked_add(bytes.len()) {
            Some(end) if end <= self.end() => {
                self.0[at..end].copy_from_slice(bytes);
                true
            }
            _ => false,
        }
    }

    /// The first `len` staged bytes, if the account holds them.
    #[inline(always)]
    pub fn prompt(&self, len: usize) -> Option<&[u8]> {
        self.0.get(run::PROMPT..run::PROMPT + len)
    }

    /// The end of the room staging can write in any account: an account
    /// not yet initialized is zero past it, whatever its creator staged.
    pub const END: usize = run::PROMPT + crate::state::MAX_PROMPT_BYTES;

    /// Zeroes everything staging may have written, as a new account is.
    #[inline(always)]
    pub fn clear(&mut self) {
        let end = self.end();
        if let Some(room) = self.0.get_mut(run::PROMPT..end) {
            room.fill(0);
        }
    }
}

// ---- Section digests -------------------------------------------------------

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

// ---- The turn event --------------------------------------------------------

/// The receipt every `turn` logs with `sol_log_data` ("Program data: ..."
/// in the transaction's logs): three fields, each base64 in the log line.
/// Field 0 is this fixed record; field 1 the ids of the tokens the turn
/// generated (u32 each); field 2 the text bytes those tokens added. A
/// client can follow a run, text included, from these events alone.
pub mod event {
    /// Field 0 opens with this discriminator.
    pub const TURN_TAG: [u8; 8] = *b"CURTATN1";
    pub const TAG: usize = 0;
    pub const RUN: usize = 8;
    pub const MODEL: usize = 40;
    /// The state's turn count after this turn (the first turn logs 1).
    pub const TURNS: usize = 72;
    /// Lamports paid to the model's owner by this turn.
    pub const PAID: usize = 80;
    /// Tokens generated by the run so far, and by this turn.
    pub const GENERATED: usize = 88;
    pub const GENERATED_THIS_TURN: usize = 92;
    /// The compute units the planner charged for the turn.
    pub const CHARGED: usize = 96;
    /// The state's phase after the turn (20: the run is complete).
    pub const PHASE: usize = 100;
    /// Output text bytes so far.
    pub const TEXT_LEN: usize = 104;
    pub const LEN: usize = 108;
}

/// A turn receipt's fixed record, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnEvent {
    pub run: Address,
    pub model: Address,
    pub turns: u64,
    pub paid: u64,
    pub generated: u32,
    pub generated_this_turn: u32,
    pub charged: u32,
    pub phase: u32,
    pub text_len: u32,
}

impl TurnEvent {
    /// The fixed record (field 0).
    #[inline(always)]
    pub fn encode(&self, out: &mut [u8; event::LEN]) {
        out[event::TAG..event::TAG + 8].copy_from_slice(&event::TURN_TAG);
        out[event::RUN..event::RUN + 32].copy_from_slice(&self.run);
        out[event::MODEL..event::MODEL + 32].copy_from_slice(&self.model);
        write_u64(out, event::TURNS, self.turns);
        write_u64(out, event::PAID, self.paid);
        write_u32(out, event::GENERATED, self.generated);
        write_u32(out, event::GENERATED_THIS_TURN, self.generated_this_turn);
        write_u32(out, event::CHARGED, self.charged);
        write_u32(out, event::PHASE, self.phase);
        write_u32(out, event::TEXT_LEN, self.text_len);
    }

    /// Decodes field 0; `None` for another event or a wrong length.
    pub fn decode(field: &[u8]) -> Option<TurnEvent> {
        if field.len() != event::LEN || !tag_is(field, &event::TURN_TAG) {
            return None;
        }
        Some(TurnEvent {
            run: *address(field, event::RUN),
            model: *address(field, event::MODEL),
            turns: read_u64(field, event::TURNS),
            paid: read_u64(field, event::PAID),
            generated: read_u32(field, event::GENERATED),
            generated_this_turn: read_u32(field, event::GENERATED_THIS_TURN),
            charged: read_u32(field, event::CHARGED),
            phase: read_u32(field, event::PHASE),
            text_len: read_u32(field, event::TEXT_LEN),
        })
    }
}

// ---- Errors ----------------------------------------------------------------

/// The program's own errors, reported as `InstructionError::Custom(code)`.
/// `docs/program.md` lists when each is raised. A core error `n` inside
/// an instruction is reported as `CORE_ERROR_BASE + n` (`CoreError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum CurtaError {
    InvalidInstruction = 1,
    NotEnoughAccounts = 2,
    WrongOwner = 3,
    MissingSigner = 4,
    NotWritable = 5,
    WrongAccountKind = 6,
    InvalidAccountSize = 7,
    AlreadyInitialized = 8,
    Unauthorized = 9,
    WrongConfig = 10,
    WrongModel = 11,
    WrongSection = 12,
    WrongAccountCount = 13,
    DuplicateAccount = 14,
    SectionLengthMismatch = 15,
    ModelNotWritable = 16,
    ModelNotSealed = 17,
    WriteOutOfBounds = 18,
    HashMismatch = 19,
    EscrowTooSmall = 20,
    StaleTurn = 21,
    UnsupportedRent = 22,
    SectionSealed = 23,
    SectionsNotSealed = 24,
    WeightsStillBound = 25,
    ModelChanged = 26,
    RoyaltyMismatch = 27,
}

impl CurtaError {
    /// Every error, in code order.
    pub const ALL: [CurtaError; 27] = [
        CurtaError::InvalidInstruction,
        CurtaError::NotEnoughAccounts,
        CurtaError::WrongOwner,
        CurtaError::MissingSigner,
        CurtaError::NotWritable,
        CurtaError::WrongAccountKind,
        CurtaError::InvalidAccountSize,
        CurtaError::AlreadyInitialized,
        CurtaError::Unauthorized,
        CurtaError::WrongConfig,
        CurtaError::WrongModel,
        CurtaError::WrongSection,
        CurtaError::WrongAccountCount,
        CurtaError::DuplicateAccount,
        CurtaError::SectionLengthMismatch,
        CurtaError::ModelNotWritable,
        CurtaError::ModelNotSealed,
        CurtaError::WriteOutOfBounds,
        CurtaError::HashMismatch,
        CurtaError::EscrowTooSmall,
        CurtaError::StaleTurn,
        CurtaError::UnsupportedRent,
        CurtaError::SectionSealed,
        CurtaError::SectionsNotSealed,
        CurtaError::WeightsStillBound,
        CurtaError::ModelChanged,
        CurtaError::RoyaltyMismatch,
    ];

    /// The error with this code, if any.
    pub fn from_code(code: u32) -> Option<CurtaError> {
        CurtaError::ALL.iter().copied().find(|e| *e as u32 == code)
    }

    /// The error's name, as `docs/program.md` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            CurtaError::InvalidInstruction => "InvalidInstruction",
            CurtaError::NotEnoughAccounts => "NotEnoughAccounts",
            CurtaError::WrongOwner => "WrongOwner",
            CurtaError::MissingSigner => "MissingSigner",
            CurtaError::NotWritable => "NotWritable",
            CurtaError::WrongAccountKind => "WrongAccountKind",
            CurtaError::InvalidAccountSize => "InvalidAccountSize",
            CurtaError::AlreadyInitialized => "AlreadyInitialized",
            CurtaError::Unauthorized => "Unauthorized",
            CurtaError::WrongConfig => "WrongConfig",
            CurtaError::WrongModel => "WrongModel",
            CurtaError::WrongSection => "WrongSection",
            CurtaError::WrongAccountCount => "WrongAccountCount",
            CurtaError::DuplicateAccount => "DuplicateAccount",
            CurtaError::SectionLengthMismatch => "SectionLengthMismatch",
            CurtaError::ModelNotWritable => "ModelNotWritable",
            CurtaError::ModelNotSealed => "ModelNotSealed",
            CurtaError::WriteOutOfBounds => "WriteOutOfBounds",
            CurtaError::HashMismatch => "HashMismatch",
            CurtaError::EscrowTooSmall => "EscrowTooSmall",
            CurtaError::StaleTurn => "StaleTurn",
            CurtaError::UnsupportedRent => "UnsupportedRent",
            CurtaError::SectionSealed => "SectionSealed",
            CurtaError::SectionsNotSealed => "SectionsNotSealed",
            CurtaError::WeightsStillBound => "WeightsStillBound",
            CurtaError::ModelChanged => "ModelChanged",
            CurtaError::RoyaltyMismatch => "RoyaltyMismatch",
        }
    }
}

/// Core error `n` (`crate::Error`) is reported as custom code `CORE_ERROR_BASE + n`.
pub const CORE_ERROR_BASE: u32 = 256;

// ---- Instructions ----------------------------------------------------------

/// Instruction tags: the first byte of every instruction's data.
pub mod tag {
    pub const INIT_CONFIG: u8 = 0;
    pub const SET_ALLOWANCE: u8 = 1;
    pub const SET_ADMIN: u8 = 2;
    pub const INIT_MODEL: u8 = 3;
    pub const BIND_WEIGHT: u8 = 4;
    pub const WRITE: u8 = 5;
    pub const SEAL_SECTION: u8 = 6;
    pub const SEAL_MODEL: u8 = 7;
    pub const CLOSE_WEIGHT: u8 = 8;
    pub const CLOSE_MODEL: u8 = 9;
    pub const OPEN_RUN: u8 = 10;
    pub const TURN: u8 = 11;
    pub const CLOSE_RUN: u8 = 12;
    pub const RECLAIM: u8 = 13;
    pub const WRITE_PROMPT: u8 = 14;
}

/// A decoded instruction, borrowing its variable parts from the data. Each
/// variant lists its accounts in order; "new" marks an account this
/// instruction initializes: created for the program (System
/// `create_account`, owner = the program, exactly the size given), still
/// zero, and signing this instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instruction<'a> {
    /// Creates the program's settings, administered by `admin`.
    ///
    /// 0. `[writable, signer]` config: new, `config::LEN` bytes.
    /// 1. `[signer]` admin.
    InitConfig { allowance: u32 },
    /// Changes the turn allowance (22,096 to 1,350,000 compute units).
    ///
    /// 0. `[writable]` config.
    /// 1. `[signer]` admin.
    SetAllowance { allowance: u32 },
    /// Hands the config to a new admin; both sign.
    ///
    /// 0. `[writable]` config.
    /// 1. `[signer]` admin.
    /// 2. `[signer]` new admin.
    SetAdmin,
    /// Creates a model of `config` owned by `owner`, with no weight account
    /// bound yet. Section lengths follow from the configuration, `flags`
    /// (`format::FLAG_SHARED_CLASSIFIER`) and section zero's length.
    ///
    /// 0. `[]` config account.
    /// 1. `[writable, signer]` model: new, `model::len(sections)` bytes.
    /// 2. `[signer]` owner.
    InitModel {
        royalty: u64,
        /// The model's `Config`, 28 bytes.
        config: &'a [u8],
        flags: u32,
        zero_len: u64,
    },
    /// Binds a weight account to section `section` of a model being written.
    ///
    /// 0. `[writable]` model.
    /// 1. `[writable, signer]` weight: new, `weight::HEADER_LEN` + the
    ///    section's length.
    /// 2. `[signer]` model owner.
    BindWeight { section: u32 },
    /// Copies `bytes` into a bound, unsealed section at `offset`.
    ///
    /// 0. `[]` model.
    /// 1. `[writable]` weight.
    /// 2. `[signer]` model owner.
    Write { offset: u64, bytes: &'a [u8] },
    /// Hashes up to `SEAL_BYTES_PER_CALL` more bytes of a section; when the
    /// last byte is hashed the chain must equal `digest`, and the section
    /// is sealed (immutable).
    ///
    /// 0. `[writable]` model.
    /// 1. `[writable]` weight.
    /// 2. `[signer]` model owner.
    SealSection { digest: &'a [u8; 32] },
    /// Seals the model once every section is: runs may open from then on.
    ///
    /// 0. `[writable]` model.
    /// 1. `[]` section zero's weight account.
    /// 2. `[signer]` model owner.
    SealModel,
    /// Closes a weight account, its lamports to the owner; a sealed model
    /// is retired by it.
    ///
    /// 0. `[writable]` model.
    /// 1. `[writable]` weight.
    /// 2. `[writable, signer]` model owner.
    CloseWeight,
    /// Closes a model with no weight account bound, its lamports to the owner.
    ///
    /// 0. `[writable]` model.
    /// 1. `[writable, signer]` model owner.
    CloseModel,
    /// Opens a run of a sealed model: the state for the prompt,
    /// `max_tokens`, the temperature (16 fractional bits) and the seed. The
    /// prompt is the first `staged` bytes `write_prompt` left in the run
    /// account, then `prompt`. The run holds its rent plus royalty times
    /// max tokens. `royalty` and `model_identity` are what the opener saw
    /// and accepts: refused unless they are the model's.
    ///
    /// 0. `[]` config account.
    /// 1. `[]` model.
    /// 2. `[writable, signer]` run: new, `run::HEADER_LEN` + `state_size`.
    /// 3. `[signer]` opener.
    OpenRun {
        max_tokens: u32,
        temperature_q16: u32,
        seed: u64,
        royalty: u64,
        model_identity: &'a [u8; 32],
        staged: u32,
        prompt: &'a [u8],
    },
    /// Advances a run by one turn; anyone may send it. With
    /// `expected_turns`, refused unless the state has run exactly that many
    /// turns, so a stale or reordered turn fails before any work.
    ///
    /// 0. `[]` config account.
    /// 1. `[]` model.
    /// 2. `[writable]` run.
    /// 3. `[writable]` model owner (receives the royalties).
    /// 4. `[]` section zero's weight account.
    /// 5. `[]` the weight accounts of the matrix sections the turn's plan
    ///    names (`planner::plan_turn`), in any order: none, one or two.
    Turn { expected_turns: Option<u64> },
    /// Closes a run at any point, complete or not: its rent and unspent
    /// escrow go to the opener; royalties paid stay paid.
    ///
    /// 0. `[writable]` run.
    /// 1. `[writable, signer]` opener.
    CloseRun,
    /// Closes an account created for the program but never initialized,
    /// signed by the account itself; its lamports go to `recipient`.
    ///
    /// 0. `[writable, signer]` account.
    /// 1. `[writable]` recipient.
    Reclaim,
    /// Stages prompt bytes at `offset` of the prompt in a run account not
    /// yet opened, for a prompt too long to travel with `open_run`.
    ///
    /// 0. `[writable, signer]` run: created for the program, not opened.
    WritePrompt { offset: u32, bytes: &'a [u8] },
}

/// Fixed data lengths after the tag.
const INIT_MODEL_LEN: usize = 8 + Config::LEN + 4 + 8;
/// `open_run`'s fields before the prompt's bytes.
pub const OPEN_RUN_FIXED_LEN: usize = 4 + 4 + 8 + 8 + 32 + 4;

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
            tag::SET_ADMIN if exact(0) => Instruction::SetAdmin,
            tag::INIT_MODEL if exact(INIT_MODEL_LEN) => Instruction::InitModel {
                royalty: read_u64(rest, 0),
                config: &rest[8..8 + Config::LEN],
                flags: read_u32(rest, 8 + Config::LEN),
                zero_len: read_u64(rest, 12 + Config::LEN),
            },
            tag::BIND_WEIGHT if exact(4) => Instruction::BindWeight {
                section: read_u32(rest, 0),
            },
            tag::WRITE if rest.len() >= 8 => Instruction::Write {
                offset: read_u64(rest, 0),
                bytes: &rest[8..],
            },
            tag::SEAL_SECTION if exact(32) => Instruction::SealSection {
                digest: rest.try_into().ok()?,
            },
            tag::SEAL_MODEL if exact(0) => Instruction::SealModel,
            tag::CLOSE_WEIGHT if exact(0) => Instruction::CloseWeight,
            tag::CLOSE_MODEL if exact(0) => Instruction::CloseModel,
            tag::OPEN_RUN if rest.len() >= OPEN_RUN_FIXED_LEN => Instruction::OpenRun {
                max_tokens: read_u32(rest, 0),
                temperature_q16: read_u32(rest, 4),
                seed: read_u64(rest, 8),
                royalty: read_u64(rest, 16),
                model_identity: rest[24..56].try_into().ok()?,
                staged: read_u32(rest, 56),
                prompt: &rest[OPEN_RUN_FIXED_LEN..],
            },
            tag::TURN if exact(0) => Instruction::Turn {
                expected_turns: None,
            },
            tag::TURN if exact(8) => Instruction::Turn {
                expected_turns: Some(read_u64(rest, 0)),
            },
            tag::CLOSE_RUN if exact(0) => Instruction::CloseRun,
            tag::RECLAIM if exact(0) => Instruction::Reclaim,
            tag::WRITE_PROMPT if rest.len() >= 4 => Instruction::WritePrompt {
                offset: read_u32(rest, 0),
                bytes: &rest[4..],
            },
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
            Instruction::SetAdmin => out.push(tag::SET_ADMIN),
            Instruction::InitModel {
                royalty,
                config,
                flags,
                zero_len,
            } => {
                out.push(tag::INIT_MODEL);
                out.extend_from_slice(&royalty.to_le_bytes());
                out.extend_from_slice(config);
                out.extend_from_slice(&flags.to_le_bytes());
                out.extend_from_slice(&zero_len.to_le_bytes());
            }
            Instruction::BindWeight { section } => {
                out.push(tag::BIND_WEIGHT);
                out.extend_from_slice(&section.to_le_bytes());
            }
            Instruction::Write { offset, bytes } => {
                out.push(tag::WRITE);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Instruction::SealSection { digest } => {
                out.push(tag::SEAL_SECTION);
                out.extend_from_slice(digest);
            }
            Instruction::SealModel => out.push(tag::SEAL_MODEL),
            Instruction::CloseWeight => out.push(tag::CLOSE_WEIGHT),
            Instruction::CloseModel => out.push(tag::CLOSE_MODEL),
            Instruction::OpenRun {
                max_tokens,
                temperature_q16,
                seed,
                royalty,
                model_identity,
                staged,
                prompt,
            } => {
                out.push(tag::OPEN_RUN);
                out.extend_from_slice(&max_tokens.to_le_bytes());
                out.extend_from_slice(&temperature_q16.to_le_bytes());
                out.extend_from_slice(&seed.to_le_bytes());
                out.extend_from_slice(&royalty.to_le_bytes());
                out.extend_from_slice(model_identity);
                out.extend_from_slice(&staged.to_le_bytes());
                out.extend_from_slice(prompt);
            }
            Instruction::Turn { expected_turns } => {
                out.push(tag::TURN);
                if let Some(turns) = expected_turns {
                    out.extend_from_slice(&turns.to_le_bytes());
                }
            }
            Instruction::CloseRun => out.push(tag::CLOSE_RUN),
            Instruction::Reclaim => out.push(tag::RECLAIM),
            Instruction::WritePrompt { offset, bytes } => {
                out.push(tag::WRITE_PROMPT);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
        out
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_round_trips() {
        let config = [7u8; Config::LEN];
        let digest = [9u8; 32];
        let all = [
            Instruction::InitConfig { allowance: 5 },
            Instruction::SetAllowance { allowance: 6 },
            Instruction::SetAdmin,
            Instruction::InitModel {
                royalty: 1,
                config: &config,
                flags: 1,
                zero_len: 60_440,
            },
            Instruction::BindWeight { section: 2 },
            Instruction::Write {
                offset: 3,
                bytes: b"abc",
            },
            Instruction::SealSection { digest: &digest },
            Instruction::SealModel,
            Instruction::CloseWeight,
            Instruction::CloseModel,
            Instruction::OpenRun {
                max_tokens: 12,
                temperature_q16: 0,
                seed: 42,
                royalty: 1_000,
                model_identity: &digest,
                staged: 3,
                prompt: b"Once",
            },
            Instruction::Turn {
                expected_turns: None,
            },
            Instruction::Turn {
                expected_turns: Some(7),
            },
            Instruction::CloseRun,
            Instruction::Reclaim,
            Instruction::WritePrompt {
                offset: 5,
                bytes: b"upon",
            },
        ];
        for ix in all {
            let data = ix.encode();
            assert_eq!(Instruction::decode(&data), Some(ix), "{ix:?}");
            // One byte more or less is refused, except where the tail is
            // free-form (write, open_run) or optional (turn).
            let mut longer = data.clone();
            longer.push(0);
            let free = matches!(
                ix,
                Instruction::Write { .. }
                    | Instruction::OpenRun { .. }
                    | Instruction::Turn { .. }
                    | Instruction::WritePrompt { .. }
            );
            if !free {
                assert_eq!(Instruction::decode(&longer), None, "{ix:?} + 1 byte");
            }
        }
        assert_eq!(Instruction::decode(&[]), None);
        assert_eq!(Instruction::decode(&[15]), None);
        assert_eq!(Instruction::decode(&[tag::TURN, 1, 2, 3]), None);
    }

    /// Every initializer writes every byte it owns: over garbage it leaves
    /// exactly what it leaves over zeros.
    #[test]
    fn initializers_write_every_field() {
        let config = crate::convert::TINY;
        let layout = Layout::new(&config).unwrap();
        let count = layout.section_count() as usize;
        let init = ModelInit {
            royalty: 5,
            config: &config,
            layout: &layout,
            flags: crate::format::FLAG_SHARED_CLASSIFIER,
            zero_len: 64,
        };
        let run = RunInit {
            model: &[1; 32],
            model_identity: &[2; 32],
            opener: &[3; 32],
            royalty: 4,
            deposited: 5,
        };
        for fill in [0u8, 0xff] {
            let mut c = [fill; config::LEN];
            ConfigAccountMut(&mut c).init(&[9; 32], 7);
            let mut m = vec![fill; model::len(count)];
            ModelAccountMut(&mut m).init(&[8; 32], &[7; 32], &init);
            let mut w = vec![fill; weight::HEADER_LEN + 16];
            WeightAccountMut(&mut w).init(&[6; 32], 1);
            let mut r = vec![fill; run::HEADER_LEN + 8];
            RunAccountMut(&mut r).init(&run);
            let zero = |n: usize| vec![0u8; n];
            let mut c0 = zero(config::LEN);
            ConfigAccountMut(&mut c0).init(&[9; 32], 7);
            let mut m0 = zero(model::len(count));
            ModelAccountMut(&mut m0).init(&[8; 32], &[7; 32], &init);
            let mut w0 = zero(weight::HEADER_LEN + 16);
            WeightAccountMut(&mut w0).init(&[6; 32], 1);
            let mut r0 = zero(run::HEADER_LEN + 8);
            RunAccountMut(&mut r0).init(&run);
            assert_eq!(c[..], c0[..]);
            assert_eq!(m, m0);
            assert_eq!(w[..weight::HEADER_LEN], w0[..weight::HEADER_LEN]);
            assert_eq!(r[..run::HEADER_LEN], r0[..run::HEADER_LEN]);
        }
    }

    /// The identity hashes the address and the data with its own field as
    /// zero, so it is the same before and after it is written, and any
    /// other byte changes it.
    #[test]
    fn model_identity_covers_every_byte_but_its_own() {
        let data: std::vec::Vec<u8> = (0..model::len(3)).map(|i| i as u8).collect();
        let id = model_identity(&[1; 32], &data);
        let mut written = data.clone();
        ModelAccountMut(&mut written).set_identity(&id);
        assert_eq!(model_identity(&[1; 32], &written), id);
        assert_ne!(model_identity(&[2; 32], &data), id);
        for at in (0..data.len()).filter(|a| !(model::IDENTITY..model::IDENTITY + 32).contains(a)) {
            let mut other = data.clone();
            other[at] ^= 1;
            assert_ne!(model_identity(&[1; 32], &other), id, "byte {at}");
        }
        let mut whole = crate::sha256::Sha256::new();
        whole.update(&[1; 32]);
        whole.update(&data[..model::IDENTITY]);
        whole.update(&[0; 32]);
        whole.update(&data[model::HEADER_LEN..]);
        assert_eq!(whole.finish(), id);
    }

    #[test]
    fn turn_event_round_trips() {
        let e = TurnEvent {
            run: [1; 32],
            model: [2; 32],
            turns: 3,
            paid: 4,
            generated: 5,
            generated_this_turn: 6,
            charged: 7,
            phase: 8,
            text_len: 9,
        };
        let mut out = [0u8; event::LEN];
        e.encode(&mut out);
        assert_eq!(TurnEvent::decode(&out), Some(e));
        assert_eq!(TurnEvent::decode(&out[..event::LEN - 1]), None);
        out[0] ^= 1;
        assert_eq!(TurnEvent::decode(&out), None);
    }
}
