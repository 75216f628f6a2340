//! The checkpoint converter: llama2.c's checkpoint and `tokenizer.bin` into a
//! `CURTAW01` artifact, exactly as `docs/spec.md` ("Conversion") prescribes.
//! The only code in the crate that uses floating point.
//!
//! `exp`, `sin` and `cos` are computed here from `+ - * /` alone, which IEEE
//! 754 rounds the same way on every target, so a native and a WebAssembly
//! conversion give the same bytes whatever their math libraries do.
//!
//! `checkpoint` reads llama2.c's files, `quantize` turns rows into bytes,
//! `tables` computes the tables, `assemble` lays out the artifact,
//! `synthetic` makes inputs of any shape; the entry points are here.

mod assemble;
mod checkpoint;
mod quantize;
mod synthetic;
mod tables;

pub use checkpoint::{Checkpoint, Vocabulary};
pub use synthetic::{
    overflowing_checkpoint, synthetic_checkpoint, synthetic_tokenizer, SHAPES, STORIES110M,
    STORIES15M, STORIES42M, TINY, TINYLLAMA_1_1B,
};
pub use tables::{exp, exp_table, rope_table, score_key, silu_table, sin_cos};

use std::vec::Vec;

use crate::format::{read_u64, ChargeTable, Metadata, SECTION_TABLE};
use crate::Error;
use assemble::assemble;

/// A conversion input refused: the core error, and why in words, for people
/// (`convert_explained`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub error: Error,
    pub reason: String,
}

impl Refusal {
    fn format(reason: String) -> Refusal {
        Refusal {
            error: Error::InvalidFormat,
            reason,
        }
    }
}

/// Which input of a conversion a `Refusal` is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Checkpoint,
    Tokenizer,
}

impl Input {
    /// The input's name: `checkpoint` or `tokenizer`.
    pub fn name(self) -> &'static str {
        match self {
            Input::Checkpoint => "checkpoint",
            Input::Tokenizer => "tokenizer",
        }
    }

    /// What the input had to be, for a refusal's words: "FILE is not a
    /// {kind}: {reason}", as `curta-core convert` and the page say it.
    pub fn kind(self) -> &'static str {
        match self {
            Input::Checkpoint => "llama2.c checkpoint",
            Input::Tokenizer => "llama2.c tokenizer for this checkpoint",
        }
    }
}

/// Converts a llama2.c checkpoint and tokenizer into an artifact planned
/// with the specification's charges.
pub fn convert(checkpoint: &[u8], tokenizer: &[u8]) -> Result<Vec<u8>, Error> {
    convert_explained(checkpoint, tokenizer, ChargeTable::Specification).map_err(|(_, r)| r.error)
}

/// `convert` with the charge table the artifact's flags choose, saying
/// which input it refuses and why.
pub fn convert_explained(
    checkpoint: &[u8],
    tokenizer: &[u8],
    charges: ChargeTable,
) -> Result<Vec<u8>, (Input, Refusal)> {
    let mut ck = Checkpoint::read(checkpoint).map_err(|r| (Input::Checkpoint, r))?;
    ck.config = ck.config.with_charges(charges);
    let vocab =
        Vocabulary::read(tokenizer, ck.config.vocab_size).map_err(|r| (Input::Tokenizer, r))?;
    assemble(&ck, &vocab).map_err(|r| (Input::Checkpoint, r))
}

/// Lays out an artifact from a parsed checkpoint and vocabulary, planned
/// with the checkpoint's `config.charges`.
pub fn build(ck: &Checkpoint, vocab: &Vocabulary) -> Result<Vec<u8>, Error> {
    assemble(ck, vocab).map_err(|r| r.error)
}

/// Reads and checks a whole artifact: section zero and every section's
/// place in the file.
pub fn open_artifact(artifact: &[u8]) -> Result<Metadata<'_>, Error> {
    let zero = read_u64(artifact, SECTION_TABLE + 8);
    if zero > artifact.len() as u64 {
        return Err(Error::InvalidFormat);
    }
    let m = Metadata::new(&artifact[..zero as usize])?;
    if m.artifact_len() != artifact.len() {
        return Err(Error::InvalidFormat);
    }
    m.check_tokenizer()?;
    Ok(m)
}
