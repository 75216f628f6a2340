//! Reading and writing files, and opening an artifact with a message that
//! says what is wrong with a file that is not one.

use curta_core::convert::open_artifact;
use curta_core::format::{header, Metadata, MAGIC, SECTION_TABLE, VERSION};
use curta_core::{read_u32, read_u64, Config};

use crate::failure::{refused, Failure};

pub fn read(path: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::Io(format!("cannot read {path}: {e}")))
}

pub fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes)
        .map_err(|e| Failure::Io(format!("cannot write {}: {e}", path.display())))
}

/// Opens an artifact, saying what is wrong with a file that is not one.
pub fn open<'a>(path: &str, artifact: &'a [u8]) -> Result<Metadata<'a>, Failure> {
    open_artifact(artifact).map_err(|e| {
        let not = |why: String| refused(e, format!("{path} is not a Curta artifact: {why}"));
        let zero = read_u64(artifact, SECTION_TABLE + 8);
        if artifact.len() < SECTION_TABLE || artifact[..8] != MAGIC {
            not(format!(
                "it does not open with {}",
                String::from_utf8_lossy(&MAGIC)
            ))
        } else if read_u32(artifact, header::VERSION) != VERSION {
            not(format!(
                "format version {}: this build reads version {VERSION}",
                read_u32(artifact, header::VERSION)
            ))
        } else if let Some(problem) = Config::read(&artifact[header::CONFIG..])
            .err()
            .and_then(|_| config_at(artifact).out_of_range())
        {
            not(format!("its configuration has {problem}"))
        } else if zero > artifact.len() as u64 {
            not(format!(
                "it is {} bytes, shorter than its section zero ({zero} bytes)",
                artifact.len()
            ))
        } else {
            match Metadata::new(&artifact[..zero as usize]) {
                Ok(m) if m.artifact_len() != artifact.len() => not(format!(
                    "it is {} bytes; its section table describes {}",
                    artifact.len(),
                    m.artifact_len()
                )),
                Ok(_) => not("its tokenizer does not check".into()),
                Err(_) => not("its header, section table or tables do not check".into()),
            }
        }
    })
}

/// The configuration in an artifact's header, unchecked (for its ranges).
fn config_at(artifact: &[u8]) -> Config {
    let word = |i: usize| read_u32(artifact, header::CONFIG + 4 * i);
    Config {
        dim: word(0),
        hidden_dim: word(1),
        n_layers: word(2),
        n_heads: word(3),
        n_kv_heads: word(4),
        vocab_size: word(5),
        seq_len: word(6),
        charges: curta_core::format::ChargeTable::Specification,
        shared_classifier: true,
    }
}
