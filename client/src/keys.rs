//! The keypairs of the accounts the client creates, derived from the
//! signer's secret key and what the account is for, so that running a
//! command again finds the accounts of the first attempt without any file:
//! that is how an interrupted `model upload`, `run crank` or `deploy`
//! resumes. `docs/client.md` lists the derivations.
//!
//! Each secret is `sha256(domain || signer's secret || what it is for)`:
//! only the signer can derive it (the program makes every new account sign
//! its own initialization), and the domain keeps one kind from ever
//! colliding with another.

use curta_core::sha256::Sha256;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;

fn derive(domain: &str, signer: &Keypair, parts: &[&[u8]]) -> Keypair {
    let mut sha = Sha256::new();
    sha.update(b"curta-client/v1/");
    sha.update(domain.as_bytes());
    sha.update(&[0]);
    sha.update(signer.secret_bytes());
    for part in parts {
        // Length-prefixed, so no two lists of parts hash alike.
        sha.update(&(part.len() as u64).to_le_bytes());
        sha.update(part);
    }
    Keypair::new_from_array(sha.finish())
}

/// The signer's config account for a program (`curta config init`).
pub fn config(signer: &Keypair, program_id: &Pubkey) -> Keypair {
    derive("config", signer, &[program_id.as_ref()])
}

/// A model: one per artifact, config account and royalty, so uploading the
/// same artifact again finds the same model.
pub fn model(
    signer: &Keypair,
    program_id: &Pubkey,
    config: &Pubkey,
    artifact_sha256: &[u8; 32],
    royalty: u64,
) -> Keypair {
    derive(
        "model",
        signer,
        &[
            program_id.as_ref(),
            config.as_ref(),
            artifact_sha256,
            &royalty.to_le_bytes(),
        ],
    )
}

/// The weight account of a model's section.
pub fn weight(signer: &Keypair, model: &Pubkey, section: u32) -> Keypair {
    derive("weight", signer, &[model.as_ref(), &section.to_le_bytes()])
}

/// What makes a run: the same parameters give the same text, so they give
/// the same account (until it is closed); `label` tells apart runs that
/// should coexist.
#[derive(Clone, Copy, Debug)]
pub struct RunSeed<'a> {
    pub model: &'a Pubkey,
    pub prompt: &'a [u8],
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    pub label: &'a str,
}

/// A run account.
pub fn run(signer: &Keypair, r: &RunSeed) -> Keypair {
    derive(
        "run",
        signer,
        &[
            r.model.as_ref(),
            r.prompt,
            &r.max_tokens.to_le_bytes(),
            &r.temperature_q16.to_le_bytes(),
            &r.seed.to_le_bytes(),
            r.label.as_bytes(),
        ],
    )
}

/// The loader's buffer for one build of the program, so an interrupted
/// deploy finds the bytes it wrote.
pub fn buffer(signer: &Keypair, program_id: &Pubkey, so_sha256: &[u8; 32]) -> Keypair {
    derive("buffer", signer, &[program_id.as_ref(), so_sha256])
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_signer::Signer;

    #[test]
    fn derivations_are_stable_and_distinct() {
        let a = Keypair::new_from_array([7; 32]);
        let b = Keypair::new_from_array([8; 32]);
        let program = Pubkey::new_from_array([1; 32]);
        assert_eq!(config(&a, &program).pubkey(), config(&a, &program).pubkey());
        assert_ne!(config(&a, &program).pubkey(), config(&b, &program).pubkey());
        let cfg = config(&a, &program).pubkey();
        let m = model(&a, &program, &cfg, &[3; 32], 0).pubkey();
        assert_ne!(m, model(&a, &program, &cfg, &[3; 32], 1).pubkey());
        assert_ne!(m, model(&a, &program, &cfg, &[4; 32], 0).pubkey());
        assert_ne!(weight(&a, &m, 0).pubkey(), weight(&a, &m, 1).pubkey());
        let seed = RunSeed {
            model: &m,
            prompt: b"Once upon a time",
            max_tokens: 12,
            temperature_q16: 0,
            seed: 0,
            label: "",
        };
        let r = run(&a, &seed).pubkey();
        assert_eq!(r, run(&a, &seed).pubkey());
        assert_ne!(r, run(&a, &RunSeed { label: "2", ..seed }).pubkey());
        assert_ne!(
            r,
            run(
                &a,
                &RunSeed {
                    max_tokens: 13,
                    ..seed
                }
            )
            .pubkey()
        );
        // Pinned: a rerun on another machine, or with another version of
        // the client, must find the same accounts.
        assert_eq!(
            config(&a, &program).pubkey().to_string(),
            "EgHV6ymgo3Paj5LJMZhekJqDuLqu3xncZpG3kjnd9YYG"
        );
    }
}
