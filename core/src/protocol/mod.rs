//! The curta program's accounts, instructions and events: sizes, tags,
//! zero-copy readers and the writers that mirror them, and the instruction
//! encoding. The program, the harness and every client use this module, so
//! no one writes an account field by raw offset anywhere else.
//! `docs/program.md` describes the same bytes.
//!
//! Every integer is little-endian. Every account opens with an eight-byte
//! tag naming its kind, so one kind can never be passed for another.
//!
//! One module per account kind (`config`, `model`, `weight`, `run`), each
//! holding its fields' offsets, its reader and its writer; `prompt` the
//! staging of a long prompt; `digest` the section digest and the model
//! identity; `event` the turn receipt; `error` the program's errors;
//! `instruction` the instruction codec; `accounts` each instruction's
//! accounts, one table each. Everything is re-exported here,
//! so `protocol::X` names each item as it did when this was one file.

pub mod accounts;
pub mod config;
pub mod digest;
pub mod error;
pub mod event;
#[cfg(feature = "std")]
pub mod idl;
pub mod instruction;
pub mod model;
pub mod prompt;
pub mod run;
pub mod schema;
pub mod weight;

pub use crate::format::MAX_ACCOUNT_LEN;
pub use accounts::AccountRole;
pub use config::{ConfigAccount, ConfigAccountMut};
pub use digest::{chain_step, model_identity, model_identity_parts, section_digest};
pub use error::{CurtaError, CORE_ERROR_BASE};
pub use event::TurnEvent;
pub use instruction::{tag, Instruction, OPEN_RUN_FIXED_LEN};
pub use model::{ModelAccount, ModelAccountMut, ModelInit};
pub use prompt::PromptStage;
pub use run::{RunAccount, RunAccountMut, RunInit};
pub use weight::{WeightAccount, WeightAccountMut};

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

/// The weight account's header, before its section's bytes.
pub const WEIGHT_HEADER_LEN: usize = weight::HEADER_LEN;
/// The run account's header, before the core state.
pub const RUN_HEADER_LEN: usize = run::HEADER_LEN;

#[inline(always)]
pub(crate) fn address(data: &[u8], at: usize) -> &Address {
    // The readers check the length before reading.
    data[at..at + 32].try_into().unwrap_or(&[0; 32])
}

#[inline(always)]
pub(crate) fn tag_is(data: &[u8], tag: &[u8; 8]) -> bool {
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

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::format::Layout;

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
            crank_fee: 6,
            crank_deposited: 7,
            tokens_at: 8,
            text_at: 9,
            seed: 10,
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
}
