//! What the program tests share: a bank with a config and a sealed
//! stories260K model preloaded, and the helpers that send to it.

#![allow(dead_code)] // each test file uses its own part

use curta_client::instructions::ModelKeys;
use curta_core::planner::CHARGES;
use curta_core::protocol::{CurtaError, CORE_ERROR_BASE};
use curta_core::{Config, StateInfo};
use curta_replay::manifest::RunSpec;
use curta_replay::models::{artifact, metadata};
use curta_replay::program_test::{self, Chain, Outcome};
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

/// Lamports per generated token in the tests.
pub const ROYALTY: u64 = 1_000;

pub fn spec(prompt: &[u8], max_tokens: u32, temperature_q16: u32, seed: u64) -> RunSpec {
    RunSpec {
        name: "test".into(),
        model: "stories260K".into(),
        prompt: prompt.to_vec(),
        max_tokens,
        temperature_q16,
        seed,
    }
}

/// The custom error code of a core error inside an instruction.
pub fn core(e: curta_core::Error) -> u32 {
    CORE_ERROR_BASE + e.code()
}

pub fn err(e: CurtaError) -> u32 {
    e as u32
}

/// A bank with a config and a sealed stories260K model preloaded.
pub struct Env {
    pub chain: Chain,
    pub admin: Keypair,
    pub owner: Keypair,
    pub opener: Keypair,
    pub keys: ModelKeys,
    pub cfg: Config,
}

pub async fn env() -> Env {
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    let art = artifact("stories260K");
    let (pt, keys) = program_test::preloaded_bank(
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        &owner.pubkey(),
        ROYALTY,
    );
    let mut chain = Chain::start(pt).await;
    chain.fund(&opener.pubkey(), 10_000_000_000).await;
    chain.fund(&owner.pubkey(), 1_000_000_000).await;
    chain.fund(&admin.pubkey(), 1_000_000_000).await;
    Env {
        chain,
        admin,
        owner,
        opener,
        keys,
        cfg: metadata(&art).config,
    }
}

impl Env {
    pub fn config(&self) -> Pubkey {
        self.keys.config_account
    }

    /// Sends a transaction that must fail with `code`, and checks that no
    /// account it names changed (but the payer's fee).
    pub async fn refused(
        &mut self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        code: u32,
    ) -> Outcome {
        let watch: Vec<Pubkey> = ixs
            .iter()
            .flat_map(|ix| ix.accounts.iter().map(|a| a.pubkey))
            .filter(|k| *k != self.chain.payer().pubkey())
            .collect();
        let mut before = vec![];
        for k in &watch {
            before.push(self.chain.account(k).await);
        }
        let out = self.chain.send(ixs, signers).await;
        assert_eq!(
            out.custom_error(),
            Some(code),
            "expected error {code}: {:?} {:#?}",
            out.result,
            out.logs
        );
        for (k, b) in watch.iter().zip(before) {
            let after = self.chain.account(k).await;
            assert!(after == b, "account {k} changed by a failed transaction");
        }
        out
    }

    /// Sends a transaction that must succeed.
    pub async fn ok(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Outcome {
        let out = self.chain.send(ixs, signers).await;
        assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
        out
    }

    /// Creates and opens a run of the preloaded model, escrowing the
    /// royalty for every token.
    pub async fn open(&mut self, s: &RunSpec) -> Pubkey {
        let escrow = ROYALTY * s.max_tokens as u64;
        let opener = self.opener.insecure_clone();
        let (run_key, out) = self
            .chain
            .open_run(
                &self.keys,
                &self.cfg,
                s,
                &opener,
                escrow,
                &Default::default(),
            )
            .await;
        assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
        run_key
    }

    /// The next turn of a run, with the weight accounts its plan names.
    pub async fn turn_ix(&mut self, run_key: &Pubkey) -> Instruction {
        let keys = self.keys.clone();
        self.chain
            .turn_ix(&keys, run_key, &self.cfg, CHARGES.allowance)
            .await
    }

    /// The run's state.
    pub async fn state(&mut self, run_key: &Pubkey) -> Vec<u8> {
        program_test::state_of(&self.chain.data(run_key).await).to_vec()
    }

    /// Turns until the run is complete.
    pub async fn run_to_end(&mut self, run_key: &Pubkey) {
        while !StateInfo::read(&self.state(run_key).await)
            .unwrap()
            .complete
        {
            let ix = self.turn_ix(run_key).await;
            self.ok(&[ix], &[]).await;
        }
    }
}
