//! curta-interface: what a program or client needs to talk to Curta, and
//! nothing of its inference. The program's accounts, instructions and
//! events (sizes, tags, zero-copy readers and the writers that mirror them,
//! the instruction encoding, each instruction's accounts), the reader of a
//! finished run (`run::read_finished`), a run account's size for given
//! parameters (`run::account_size`, a `const fn`), and the model shape and
//! state layout those need. `docs/program.md` describes the same bytes;
//! `docs/consumers.md` shows a program built on this crate.
//!
//! `no_std`, no dependencies and no unstable features: it builds with
//! stable Rust for the host and for SBF with whatever toolchain a program
//! uses (`cargo build-sbf` or `bpfel-unknown-none`). The optional
//! `pinocchio` feature adds `cpi`, builders that invoke Curta's
//! instructions from a program, as `pinocchio-system` does for the System
//! program. curta-core (the inference) and the program build on this crate.
//!
//! Every integer is little-endian. Every account opens with an eight-byte
//! tag naming its kind, so one kind can never be passed for another.
//!
//! The modules are layers; each imports only those listed before it:
//!
//! | Module | Holds |
//! |---|---|
//! | `error`, `sha256`, `bytes` | The core's and the program's errors; SHA-256; little-endian readers and alignment |
//! | `format` | The model's `Config`, the section `Layout`, the artifact's constants |
//! | `state` | The core state's header, `Phase`, `Cursor`, `StateLayout`, `StateInfo` |
//! | `tag`, `accounts` | Each instruction's tag; each instruction's accounts, one table each |
//! | `schema`, `fields` | The types the IDL's tables are made of; `fields!`, which declares an account's field once and derives its offset, reader, writer and IDL entry |
//! | `callback` | A run's callback record: what `deliver` invokes |
//! | `config`, `model`, `weight`, `run` | One module per account kind: its offsets, reader and writer |
//! | `prompt`, `digest`, `event` | A long prompt's staging; section digests and the model identity; the turn receipt |
//! | `instruction` | The instruction codec and each instruction's arguments in the IDL |
//! | `catalog` | Every account kind and defined type in the IDL's order (the tables `curta-core idl` reads) |
//! | `cpi` (feature `pinocchio`) | Invoking Curta from a program |

#![cfg_attr(not(any(feature = "std", test)), no_std)]

pub mod bytes;
pub mod error;
pub mod sha256;

pub mod format;

pub mod state;

pub mod accounts;
pub mod schema;
pub mod tag;
#[macro_use]
mod fields;

pub mod callback;
pub mod catalog;
pub mod config;
pub mod digest;
pub mod event;
pub mod instruction;
pub mod model;
pub mod prompt;
pub mod run;
pub mod weight;

#[cfg(feature = "pinocchio")]
pub mod cpi;

pub use crate::format::MAX_ACCOUNT_LEN;
pub use accounts::AccountRole;
pub use callback::{Callback, CallbackAccount, CallbackInit};
pub use config::{ConfigAccount, ConfigAccountMut};
pub use digest::{chain_step, model_identity, model_identity_parts, section_digest};
pub use error::{CurtaError, Error, CORE_ERROR_BASE};
pub use event::TurnEvent;
pub use instruction::{Instruction, OPEN_RUN_FIXED_LEN};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Layout;

    #[test]
    fn initializers_write_every_field() {
        let config = crate::format::Config {
            dim: 8,
            hidden_dim: 16,
            n_layers: 1,
            n_heads: 2,
            n_kv_heads: 2,
            vocab_size: 260,
            seq_len: 8,
            charges: crate::format::ChargeTable::Specification,
            shared_classifier: true,
        };
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
            crank_deposit: 7,
            tokens_at: 8,
            text_at: 9,
            seed: 10,
            allowance: 11,
            callback_at: 12,
            delivery_fee: 13,
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
            // Every field reads back what `init` was given.
            let v = RunAccount(&r);
            assert_eq!(
                (v.model(), v.model_identity(), v.opener()),
                (&[1; 32], &[2; 32], &[3; 32])
            );
            assert_eq!(
                (v.royalty(), v.deposited(), v.escrow(), v.paid()),
                (4, 5, 5, 0)
            );
            assert_eq!(
                (v.crank_fee(), v.crank_deposit(), v.crank_paid()),
                (6, 7, 0)
            );
            assert_eq!((v.tokens_at(), v.text_at()), (8, 9));
            assert_eq!((v.seed(), v.allowance()), (10, 11));
            assert_eq!((v.callback_at(), v.delivery_fee()), (12, 13));
        }
    }
}
