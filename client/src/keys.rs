//! The keypairs of the accounts the client creates, derived from the
//! signer's secret key and what the account is for
//! (`curta_core::client::keys`, the rule the SDK runs too), so that running
//! a command again finds the accounts of the first attempt without any
//! file: that is how an interrupted `model upload`, `run crank` or `deploy`
//! resumes. `docs/client.md` lists the derivations.

use curta_core::client::keys::Derivation;
pub use curta_core::client::keys::RunSeed;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;

fn derive(signer: &Keypair, what: Derivation) -> Keypair {
    Keypair::new_from_array(what.seed(signer.secret_bytes()))
}

/// The signer's config account for a program (`curta config init`).
pub fn config(signer: &Keypair, program_id: &Pubkey) -> Keypair {
    derive(signer, Derivation::config(program_id.as_array()))
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
    let what = Derivation::model(
        program_id.as_array(),
        config.as_array(),
        artifact_sha256,
        royalty,
    );
    derive(signer, what)
}

/// The weight account of a model's section.
pub fn weight(signer: &Keypair, model: &Pubkey, section: u32) -> Keypair {
    derive(signer, Derivation::weight(model.as_array(), section))
}

/// A run account.
pub fn run(signer: &Keypair, r: &RunSeed) -> Keypair {
    derive(signer, Derivation::run(r))
}

/// The loader's buffer for one build of the program, so an interrupted
/// deploy finds the bytes it wrote.
pub fn buffer(signer: &Keypair, program_id: &Pubkey, so_sha256: &[u8; 32]) -> Keypair {
    derive(signer, Derivation::buffer(program_id.as_array(), so_sha256))
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
            model: m.as_array(),
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
        // The SDK's test pins the same (sdk/test/chain/units.test.js).
        assert_eq!(m.to_string(), "gaYbjMFREZXYhka5wvdm7gApRtumtgwrQbhrCS8Ynwa");
        let w = weight(&a, &m, 1).pubkey();
        assert_eq!(
            w.to_string(),
            "FoZECoLw1rLMfj1nHy953C6toHqSNBxzXfMhVnzqxPVG"
        );
        assert_eq!(
            r.to_string(),
            "FL4jpgZ35RabMLcfDgMymaDkELRzsKFTnpmbg89CTUD6"
        );
    }
}
