//! The keypairs of the accounts a client creates, derived from the
//! signer's secret and what the account is for, so that a rerun finds the
//! accounts of the first attempt with no file to keep (how an interrupted
//! upload, crank or deploy resumes). `docs/client.md` lists them.
//!
//! Each account's ed25519 seed is
//! `sha256("curta-client/v1/" || kind || 0 || secret || parts)`, every part
//! prefixed with its length as a u64, so no two lists of parts hash alike:
//! only the signer can derive it (the program makes every new account sign
//! its own initialization), and the kind keeps one from colliding with
//! another. A host that keeps the secret out of this code (the SDK hashes
//! with WebCrypto) hashes `before_secret`, the secret and `after_secret`.

use crate::sha256::Sha256;
use std::vec::Vec;

const DOMAIN: &[u8] = b"curta-client/v1/";

/// What an account is for: its kind and the parts that tell it apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    kind: &'static str,
    parts: Vec<Vec<u8>>,
}

/// A run's parameters: the same ones give the same text, so they give the
/// same account (until it is closed); `label` tells apart runs meant to
/// coexist.
#[derive(Clone, Copy, Debug)]
pub struct RunSeed<'a> {
    pub model: &'a [u8; 32],
    pub prompt: &'a [u8],
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    pub label: &'a str,
}

impl Derivation {
    /// The signer's config account for a program (`curta config init`).
    pub fn config(program_id: &[u8; 32]) -> Derivation {
        Derivation::of("config", &[program_id])
    }

    /// A model: one per program, config account, artifact and royalty, so
    /// uploading the same artifact again finds the same model.
    pub fn model(
        program_id: &[u8; 32],
        config: &[u8; 32],
        artifact_sha256: &[u8; 32],
        royalty: u64,
    ) -> Derivation {
        let parts: [&[u8]; 4] = [program_id, config, artifact_sha256, &royalty.to_le_bytes()];
        Derivation::of("model", &parts)
    }

    /// The weight account of a model's section.
    pub fn weight(model: &[u8; 32], section: u32) -> Derivation {
        Derivation::of("weight", &[model, &section.to_le_bytes()])
    }

    /// A run account.
    pub fn run(r: &RunSeed) -> Derivation {
        let parts: [&[u8]; 6] = [
            r.model,
            r.prompt,
            &r.max_tokens.to_le_bytes(),
            &r.temperature_q16.to_le_bytes(),
            &r.seed.to_le_bytes(),
            r.label.as_bytes(),
        ];
        Derivation::of("run", &parts)
    }

    /// The loader's buffer for one build of the program, so an interrupted
    /// deploy finds the bytes it wrote.
    pub fn buffer(program_id: &[u8; 32], so_sha256: &[u8; 32]) -> Derivation {
        Derivation::of("buffer", &[program_id, so_sha256])
    }

    fn of(kind: &'static str, parts: &[&[u8]]) -> Derivation {
        let parts = parts.iter().map(|p| p.to_vec()).collect();
        Derivation { kind, parts }
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// What is hashed before the secret: the domain, the kind and a zero.
    pub fn before_secret(&self) -> Vec<u8> {
        [DOMAIN, self.kind.as_bytes(), &[0]].concat()
    }

    /// What is hashed after the secret: each part after its length.
    pub fn after_secret(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.parts {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    /// The account's ed25519 seed (its 32-byte secret key) for a signer
    /// whose own seed is `secret`.
    pub fn seed(&self, secret: &[u8; 32]) -> [u8; 32] {
        let mut sha = Sha256::new();
        sha.update(&self.before_secret());
        sha.update(secret);
        sha.update(&self.after_secret());
        sha.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_parts_never_hash_alike() {
        let secret = [7; 32];
        let seeds = [
            Derivation::config(&[1; 32]).seed(&secret),
            Derivation::buffer(&[1; 32], &[2; 32]).seed(&secret),
            Derivation::weight(&[1; 32], 0).seed(&secret),
            Derivation::weight(&[1; 32], 1).seed(&secret),
            Derivation::model(&[1; 32], &[2; 32], &[3; 32], 0).seed(&secret),
            Derivation::model(&[1; 32], &[2; 32], &[3; 32], 1).seed(&secret),
        ];
        for (i, a) in seeds.iter().enumerate() {
            assert!(seeds[i + 1..].iter().all(|b| a != b), "seed {i}");
        }
        // The length prefixes: moving a byte from one part to the next
        // changes the seed.
        let run = |prompt: &[u8], label: &str| {
            let r = RunSeed {
                model: &[1; 32],
                prompt,
                max_tokens: 2,
                temperature_q16: 3,
                seed: 4,
                label,
            };
            Derivation::run(&r).seed(&secret)
        };
        assert_ne!(run(b"ab", ""), run(b"a", "b"));
        assert_ne!(Derivation::config(&[1; 32]).seed(&[8; 32]), seeds[0]);
    }
}
