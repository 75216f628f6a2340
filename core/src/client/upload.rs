//! An upload as a function of what the chain holds: given the artifact and
//! the model and weight accounts as read, the next step. A host reads the
//! accounts, asks `next`, takes the step, and asks again until `Done`, so
//! an interrupted upload resumes by asking. The order: the model's
//! account, a weight account bound to each section that has none, every
//! chunk the weight accounts do not hold yet (a fresh account is zero, so
//! zero chunks are never written), each section sealed, then the model.

use crate::client::base58;
use crate::convert::open_artifact;
use crate::format::header::CONFIG;
use crate::format::Metadata;
use crate::protocol::SEAL_BYTES_PER_CALL;
use crate::protocol::{model, section_digest, weight, Address, ModelAccount, WeightAccount};
use std::format;
use std::string::String;
use std::vec::Vec;

/// The compute units one `seal_section` asks for: two 1 MiB chunks of
/// `sol_sha256` at about 524,000 each (`docs/program.md`).
pub const SEAL_CU: u32 = 1_100_000;

/// How many `seal_section` calls a section of `len` bytes takes.
pub fn seal_calls(len: usize) -> usize {
    len.div_ceil(SEAL_BYTES_PER_CALL).max(1)
}

/// The `call`-th `seal_section`'s compute-unit limit: one unit more each
/// call, so two calls are never the same transaction.
pub fn seal_cu(call: usize) -> u32 {
    SEAL_CU + call as u32
}

/// What a whole upload from nothing sends, and the accounts it pays rent
/// for, when every chunk is written (zero chunks are not, so the figures
/// are at most these): what a client quotes before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The model's account, then a weight account per section.
    pub account_lens: Vec<usize>,
    pub transactions: usize,
    /// Of them, the chunk writes.
    pub writes: usize,
    pub signatures: usize,
}

/// The estimate of an upload of the artifact whose metadata is `m`, with
/// `chunk` weight bytes a write: creating the model and binding each
/// weight account take two signatures (the new account signs); each
/// write, `seal_section` call and `seal_model` one.
pub fn estimate(m: &Metadata, chunk: usize) -> Estimate {
    let count = m.section_count();
    let mut out = Estimate {
        account_lens: Vec::from([model::len(count)]),
        transactions: 2,
        writes: 0,
        signatures: 3,
    };
    for i in 0..count {
        let len = m.section_len(i);
        let (writes, seals) = (len.div_ceil(chunk), seal_calls(len));
        out.account_lens.push(weight::HEADER_LEN + len);
        out.writes += writes;
        out.transactions += 1 + writes + seals;
        out.signatures += 2 + writes + seals;
    }
    out
}

/// One chunk a `write` carries: `len` bytes of `section` at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub section: u32,
    pub offset: usize,
    pub len: usize,
}

/// A section to seal: the `seal_section` calls it takes and the digest
/// each names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seal {
    pub section: u32,
    pub calls: usize,
    pub digest: [u8; 32],
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create the model's account, `len` bytes, and `init_model` it with
    /// the artifact's configuration, flags and section zero's length.
    CreateModel {
        len: usize,
    },
    /// Create and bind a weight account to each of these sections:
    /// (section, the account's length).
    Bind(Vec<(u32, usize)>),
    /// Write these chunks.
    Write(Vec<Chunk>),
    /// Seal these sections.
    Seal(Vec<Seal>),
    SealModel,
    /// The model is sealed with the artifact's weights.
    Done,
}

/// Whose upload it is.
#[derive(Clone, Copy, Debug)]
pub struct Upload<'a> {
    pub artifact: &'a [u8],
    /// The config account the model is bound to.
    pub config: &'a Address,
    /// The signer: the model's owner.
    pub owner: &'a Address,
    pub model: &'a Address,
    /// The most weight bytes one `write` transaction carries.
    pub chunk: usize,
}

/// The next step, from the model account's bytes (`None`: no account
/// yet) and each section's weight account's bytes (`None`: none bound, or
/// not read); or, in words, why the upload cannot go on.
pub fn next(
    u: &Upload,
    model_data: Option<&[u8]>,
    weights: &[Option<&[u8]>],
) -> Result<Step, String> {
    let m = open_artifact(u.artifact).map_err(|e| format!("the artifact does not check: {e}"))?;
    let count = m.section_count();
    let Some(data) = model_data else {
        return Ok(Step::CreateModel {
            len: model::len(count),
        });
    };
    let info = check_model(u, &m, data)?;
    if info.status() == model::SEALED {
        return Ok(Step::Done);
    }
    let unbound: Vec<(u32, usize)> = (0..count)
        .filter(|&i| *info.section_address(i) == [0; 32])
        .map(|i| (i as u32, weight::HEADER_LEN + m.section_len(i)))
        .collect();
    if !unbound.is_empty() {
        return Ok(Step::Bind(unbound));
    }
    let mut chunks = Vec::new();
    let mut unsealed = Vec::new();
    for i in 0..count {
        let bytes = m.section_in(u.artifact, i);
        let address = base58::encode(info.section_address(i));
        let data = weights.get(i).copied().flatten();
        let w = data
            .and_then(|d| WeightAccount::read(d).ok())
            .ok_or_else(|| format!("{address} (section {i}) is not a weight account"))?;
        if w.model() != u.model || w.section() != i as u32 {
            return Err(format!(
                "{address} is bound to section {i} of model {} but says otherwise",
                base58::encode(u.model)
            ));
        }
        if w.sealed() {
            if *info.section_digest(i) != section_digest(bytes) {
                return Err(format!(
                    "section {i} of model {} is sealed with other bytes than the artifact's: close \
                     the model and upload again",
                    base58::encode(u.model)
                ));
            }
            continue;
        }
        unsealed.push(Seal {
            section: i as u32,
            calls: seal_calls(bytes.len()),
            digest: section_digest(bytes),
        });
        chunks.extend(
            missing_chunks(bytes, w.bytes(), u.chunk).map(|(offset, len)| Chunk {
                section: i as u32,
                offset,
                len,
            }),
        );
    }
    Ok(if !chunks.is_empty() {
        Step::Write(chunks)
    } else if !unsealed.is_empty() {
        Step::Seal(unsealed)
    } else {
        Step::SealModel
    })
}

/// The chunks of `data`, `chunk` bytes each (the last may be short), as
/// (offset, length), that `held` does not already hold there.
pub fn missing_chunks<'a>(
    data: &'a [u8],
    held: &'a [u8],
    chunk: usize,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let chunk = chunk.max(1);
    data.chunks(chunk)
        .enumerate()
        .map(move |(k, bytes)| (k * chunk, bytes))
        .filter(move |&(offset, bytes)| held.get(offset..offset + bytes.len()) != Some(bytes))
        .map(|(offset, bytes)| (offset, bytes.len()))
}

/// The model found at the upload's address, if it is this upload's: the
/// signer's, bound to the config, created for this artifact, not retired,
/// and if sealed, sealed with its sections.
fn check_model<'d>(u: &Upload, m: &Metadata, data: &'d [u8]) -> Result<ModelAccount<'d>, String> {
    let at = base58::encode(u.model);
    let info =
        ModelAccount::read(data).map_err(|_| format!("{at} is not a curta model account"))?;
    let owner = info.owner();
    if owner != u.owner {
        let owner = base58::encode(owner);
        return Err(format!("model {at} is owned by {owner}, not the signer"));
    }
    if info.config_account() != u.config {
        let config = base58::encode(info.config_account());
        return Err(format!("model {at} is bound to config {config}"));
    }
    let same = info.model_config() == &u.artifact[CONFIG..CONFIG + crate::format::Config::LEN]
        && info.flags() == m.flags()
        && info.section_count() == m.section_count()
        && info.section_len(0) == m.section_len(0) as u64;
    if !same {
        return Err(format!("model {at} was created for another artifact"));
    }
    if info.status() == model::RETIRED {
        return Err(format!(
            "model {at} is retired (a weight account was closed): close it and upload again"
        ));
    }
    if info.status() == model::SEALED {
        for i in 0..m.section_count() {
            if *info.section_digest(i) != section_digest(m.section_in(u.artifact, i)) {
                return Err(format!("model {at} is sealed with another section {i}"));
            }
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_chunks_are_those_not_held() {
        let data: Vec<u8> = (1..=10).collect();
        // Chunks at 0, 4 and 8; the first one held, the second one half.
        let mut held = std::vec![0u8; 6];
        held[..4].copy_from_slice(&data[..4]);
        held[4..6].copy_from_slice(&data[4..6]);
        let missing: Vec<(usize, usize)> = missing_chunks(&data, &held, 4).collect();
        assert_eq!(missing, std::vec![(4, 4), (8, 2)]);
        assert_eq!(missing_chunks(&data, &data, 4).count(), 0);
        // A fresh account is zero: zero chunks are never sent.
        assert_eq!(missing_chunks(&[0; 8], &[0; 8], 4).count(), 0);
    }

    #[test]
    fn seals_take_a_call_per_two_mib_each_with_its_own_limit() {
        assert_eq!(seal_calls(0), 1);
        assert_eq!(seal_calls(SEAL_BYTES_PER_CALL), 1);
        assert_eq!(seal_calls(SEAL_BYTES_PER_CALL + 1), 2);
        assert_ne!(seal_cu(0), seal_cu(1));
    }
}
