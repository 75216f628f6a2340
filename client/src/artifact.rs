//! A model's weights held whole: read from a `.curta` artifact, converted
//! from a llama2.c checkpoint and its tokenizer, or put back together from
//! a model's weight accounts on chain.

use std::path::Path;

use curta_core::convert::{convert_explained, open_artifact, Input};
use curta_core::format::{ChargeTable, MAGIC};
use curta_core::sha256::{hex, sha256};
use curta_core::Metadata;

use crate::bail;
use crate::errors::{Error, Result};

/// A checked artifact.
#[derive(Clone)]
pub struct Artifact {
    pub bytes: Vec<u8>,
    pub sha256: [u8; 32],
}

impl Artifact {
    /// Checks `bytes` as a whole artifact (`format.md`).
    pub fn new(bytes: Vec<u8>) -> Result<Artifact> {
        open_artifact(&bytes).map_err(|e| Error::from(e).context("not a valid artifact"))?;
        let sha256 = sha256(&bytes);
        Ok(Artifact { bytes, sha256 })
    }

    /// A `.curta` file, or a llama2.c checkpoint converted with `tokenizer`.
    pub fn load(path: &Path, tokenizer: Option<&Path>) -> Result<Artifact> {
        Self::load_with(path, tokenizer, None)
    }

    /// `load`, with the charge table the model must be planned with: a
    /// checkpoint is converted with it (the specification's by default), and
    /// an artifact planned with another table is refused, not rewritten.
    pub fn load_with(
        path: &Path,
        tokenizer: Option<&Path>,
        charges: Option<ChargeTable>,
    ) -> Result<Artifact> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| Error::new(format!("cannot read {}: {e}", p.display())))
        };
        let bytes = read(path).map_err(|e| match tokenizer {
            // A newcomer's first upload names a file they do not have yet.
            None => e.then(
                "give a .curta artifact (`curta-core convert CHECKPOINT TOKENIZER -o \
                 MODEL.curta` writes one), or a llama2.c checkpoint with --tokenizer",
            ),
            Some(_) => e,
        })?;
        let is_artifact = bytes.starts_with(&MAGIC);
        let bytes = match (is_artifact, tokenizer) {
            (true, None) => bytes,
            (true, Some(_)) => bail!(
                "{} is already an artifact ({}): --tokenizer is only for a llama2.c checkpoint",
                path.display(),
                String::from_utf8_lossy(&MAGIC)
            ),
            (false, Some(tok)) => {
                let table = charges.unwrap_or_default();
                // The words of `curta-core convert` and the page: which
                // file is refused, what it had to be, and why.
                convert_explained(&bytes, &read(tok)?, table).map_err(|(input, r)| {
                    let refused = match input {
                        Input::Checkpoint => path,
                        Input::Tokenizer => tok,
                    };
                    Error::from(r.error).context(format!(
                        "{} is not a {}: {}",
                        refused.display(),
                        input.kind(),
                        r.reason
                    ))
                })?
            }
            (false, None) => bail!(
                "{} is not a curta artifact (it does not open with {}); to convert a llama2.c \
                 checkpoint give its tokenizer with --tokenizer",
                path.display(),
                String::from_utf8_lossy(&MAGIC)
            ),
        };
        let artifact = Artifact::new(bytes).map_err(|e| e.context(path.display()))?;
        let table = artifact.metadata().config.charges;
        if let Some(wanted) = charges.filter(|&c| c != table) {
            bail!(
                "{} is planned with the {} charge table, not the {} one: convert its checkpoint \
                 again with `curta-core convert --charges {}`, or give the checkpoint here with \
                 --tokenizer",
                path.display(),
                table.name(),
                wanted.name(),
                wanted.name()
            );
        }
        Ok(artifact)
    }

    pub fn metadata(&self) -> Metadata<'_> {
        // Checked in `new`.
        open_artifact(&self.bytes).unwrap_or_else(|_| unreachable!("a checked artifact"))
    }

    /// Section `i`'s bytes.
    pub fn section(&self, i: usize) -> &[u8] {
        self.metadata().section_in(&self.bytes, i)
    }

    pub fn section_count(&self) -> usize {
        self.metadata().section_count()
    }

    /// The flags `init_model` records: section zero's own.
    pub fn flags(&self) -> u32 {
        self.metadata().flags()
    }

    pub fn sha256_hex(&self) -> String {
        String::from_utf8_lossy(&hex(&self.sha256)).into_owned()
    }
}
