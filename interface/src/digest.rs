//! The digests the program records and checks: a section's chained
//! SHA-256 and a sealed model's identity.

use super::{model, Address, HASH_CHUNK};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelAccountMut;

    #[test]
    fn model_identity_covers_every_byte_but_its_own() {
        let data: std::vec::Vec<u8> = (0..model::len(3)).map(|i| i as u8).collect();
        let id = model_identity(&[1; 32], &data);
        let mut written = data.clone();
        ModelAccountMut(&mut written).set_model_identity(&id);
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
}
