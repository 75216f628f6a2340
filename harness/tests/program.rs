//! The curta program on the SBF VM (solana-program-test 4.0.0, the built
//! `.so`): the reference run through the real upload path, turn by turn
//! against the native core; compute units; every error with the wrong
//! input that causes it, leaving every account unchanged; lamports conserved.
//!
//! Run with `make test-program` (builds the `.so` first).

use curta_core::convert::{convert, overflowing_checkpoint, synthetic_tokenizer, TINY};
use curta_core::inference::quote_turns;
use curta_core::planner::CHARGES;
use curta_core::protocol::{self, model, run, Instruction as Ix};
use curta_core::{output_text, output_tokens, Config};
use curta_harness::chain::{self, Chain, ModelKeys, Outcome, CU_LIMIT};
use curta_harness::manifest::RunSpec;
use curta_harness::models::{artifact, metadata};
use curta_harness::native;
use curta_program::error::{CurtaError, CORE_ERROR_BASE};
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

const ROYALTY: u64 = 1_000;

fn spec(prompt: &[u8], max_tokens: u32, temperature_q16: u32, seed: u64) -> RunSpec {
    RunSpec {
        name: "test".into(),
        model: "stories260K".into(),
        prompt: prompt.to_vec(),
        max_tokens,
        temperature_q16,
        seed,
    }
}

#[tokio::test]
async fn reference_run_through_the_upload_path_matches_native_turn_by_turn() {
    let art = artifact("stories260K");
    let m = metadata(&art);
    let cfg = m.config;
    let mut chain = Chain::start(chain::program_test()).await;
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    chain.fund(&opener.pubkey(), 1_000_000_000).await;
    // Royalties go to an existing, rent-exempt account.
    chain.fund(&owner.pubkey(), 1_000_000_000).await;
    let config = chain.init_config(&admin, CHARGES.allowance).await;
    let keys = chain.upload_model(&config, &art, &owner, ROYALTY).await;

    let s = spec(b"Once upon a time", 12, 0, 0);
    let escrow = ROYALTY * s.max_tokens as u64;
    let (run_key, out) = chain
        .open_run(&config, &keys, &cfg, &s, &opener, escrow)
        .await;
    assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
    let run_lamports = chain.lamports(&run_key).await;
    let run_len = chain.data(&run_key).await.len();
    let rent = chain.rent(run_len).await;
    assert_eq!(run_lamports, rent + escrow);

    let mut scratch =
        native::Aligned::new(curta_core::state_size(cfg, s.prompt.len(), s.max_tokens).unwrap());
    let quoted = quote_turns(cfg, m.bytes, &s.prompt, s.max_tokens, 0, &mut scratch).unwrap();
    let mut state = native::open(&m, &s);
    assert_eq!(
        &chain.data(&run_key).await[run::HEADER_LEN..],
        &state[..],
        "state after open_run"
    );

    let owner_before = chain.lamports(&owner.pubkey()).await;
    let mut turns = 0u64;
    let mut units = vec![];
    while !curta_core::StateInfo::read(&state).unwrap().complete {
        let expected = native::step(&art, &m, &mut state);
        let out = chain
            .turn(&config, &keys, &run_key, &cfg, CHARGES.allowance)
            .await;
        assert_eq!(out.result, Ok(()), "turn {}: {:#?}", turns + 1, out.logs);
        turns += 1;
        let data = chain.data(&run_key).await;
        if let Some(d) =
            curta_harness::diff::first_difference(&cfg, &state, &data[run::HEADER_LEN..])
        {
            panic!("turn {turns}: SBF state differs from native: {d}");
        }
        // The receipt: run, turn number, tokens this turn, work charged.
        let receipt = &out.data()[0];
        assert_eq!(receipt[0], run_key.to_bytes());
        assert_eq!(receipt[1], turns.to_le_bytes());
        assert_eq!(receipt[2], expected.generated_this_turn.to_le_bytes());
        assert_eq!(receipt[3], expected.work.to_le_bytes());
        // The compute budget instruction's 150 plus the program's own.
        assert!(
            out.program_cu + 300 <= CU_LIMIT as u64,
            "turn {turns}: {} CU",
            out.program_cu
        );
        units.push(out.program_cu);
    }
    assert_eq!(turns, 20);
    assert_eq!(turns, quoted);
    println!("program compute units per turn: {units:?}");
    println!("peak {} CU", units.iter().max().unwrap());

    let data = chain.data(&run_key).await;
    let onchain = &data[run::HEADER_LEN..];
    assert_eq!(
        output_text(cfg, onchain),
        b", there was a little girl named Lily. She"
    );
    assert_eq!(output_tokens(cfg, onchain), output_tokens(cfg, &state));

    // Lamports: the owner was paid per token; closing refunds the rest.
    let r = protocol::RunAccount(&data);
    assert_eq!(
        (r.deposited(), r.paid(), r.escrow()),
        (escrow, 12 * ROYALTY, 0)
    );
    assert_eq!(
        chain.lamports(&owner.pubkey()).await - owner_before,
        r.paid()
    );
    let opener_before = chain.lamports(&opener.pubkey()).await;
    let out = chain
        .send(
            &[chain::close_run_ix(&run_key, &opener.pubkey())],
            &[&opener],
        )
        .await;
    assert_eq!(out.result, Ok(()), "close_run: {:#?}", out.logs);
    let refunded = chain.lamports(&opener.pubkey()).await - opener_before;
    assert_eq!(refunded, rent + r.escrow());
    assert_eq!(
        r.escrow() + r.paid() + (refunded - rent),
        r.deposited() + r.escrow()
    );
    assert_eq!(chain.account(&run_key).await, None);
}

/// A bank with a config and a sealed stories260K model preloaded.
struct Env {
    chain: Chain,
    admin: Keypair,
    owner: Keypair,
    opener: Keypair,
    config: Pubkey,
    keys: ModelKeys,
    cfg: Config,
}

async fn env() -> Env {
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    let art = artifact("stories260K");
    let (pt, config, keys) = chain::preloaded_bank(
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        &owner.pubkey(),
        ROYALTY,
    );
    let mut chain = Chain::start(pt).await;
    chain.fund(&opener.pubkey(), 10_000_000_000).await;
    chain.fund(&owner.pubkey(), 1_000_000_000).await;
    Env {
        chain,
        admin,
        owner,
        opener,
        config,
        keys,
        cfg: metadata(&art).config,
    }
}

impl Env {
    /// Sends a transaction that must fail with `code`, and checks that no
    /// account among `watch` (and the instructions' own) changed.
    async fn refused(&mut self, ixs: &[Instruction], signers: &[&Keypair], code: u32) -> Outcome {
        let mut watch: Vec<Pubkey> = ixs
            .iter()
            .flat_map(|ix| ix.accounts.iter().map(|a| a.pubkey))
            .collect();
        watch.push(self.chain.payer().pubkey());
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
            // Only the payer's fee may move.
            if *k == self.chain.payer().pubkey() {
                continue;
            }
            assert!(after == b, "account {k} changed by a failed transaction");
        }
        out
    }

    async fn open(&mut self, s: &RunSpec) -> Pubkey {
        let escrow = ROYALTY * s.max_tokens as u64;
        let opener = self.opener.insecure_clone();
        let (run_key, out) = self
            .chain
            .open_run(&self.config, &self.keys, &self.cfg, s, &opener, escrow)
            .await;
        assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
        run_key
    }

    async fn turn_ix(&mut self, run_key: &Pubkey) -> Instruction {
        let data = self.chain.data(run_key).await;
        chain::turn_ix(
            &self.config,
            &self.keys,
            run_key,
            &data[run::HEADER_LEN..],
            &self.cfg,
            CHARGES.allowance,
        )
    }
}

fn core(e: curta_core::Error) -> u32 {
    CORE_ERROR_BASE + e.code()
}

fn err(e: CurtaError) -> u32 {
    e as u32
}

#[tokio::test]
async fn run_and_turn_errors() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 2, 0, 0);
    let run_key = e.open(&s).await;
    let (config, keys, opener) = (e.config, e.keys.clone(), e.opener.insecure_clone());

    // Instruction data.
    let bad = Instruction {
        program_id: chain::PROGRAM_ID,
        accounts: vec![],
        data: vec![0xEE],
    };
    e.refused(&[bad], &[], err(CurtaError::InvalidInstruction))
        .await;
    let short = chain::instruction(Ix::Turn, vec![AccountMeta::new_readonly(config, false)]);
    e.refused(&[short], &[], err(CurtaError::NotEnoughAccounts))
        .await;

    // A turn's accounts.
    let good = e.turn_ix(&run_key).await;
    let mut wrong = good.clone();
    wrong.accounts[0].pubkey = keys.model; // a model where the config goes
    e.refused(&[wrong], &[], err(CurtaError::WrongAccountKind))
        .await;
    let mut wrong = good.clone();
    wrong.accounts[2].pubkey = e.chain.payer().pubkey(); // not the program's
    e.refused(&[wrong], &[], err(CurtaError::WrongOwner)).await;
    let mut wrong = good.clone();
    wrong.accounts[2].is_writable = false;
    e.refused(&[wrong], &[], err(CurtaError::NotWritable)).await;
    let other_config = e
        .chain
        .init_config(&Keypair::new(), CHARGES.allowance)
        .await;
    let mut wrong = good.clone();
    wrong.accounts[0].pubkey = other_config; // not the model's config
    e.refused(&[wrong], &[], err(CurtaError::WrongConfig)).await;
    let mut wrong = good.clone();
    wrong.accounts[3].pubkey = opener.pubkey(); // royalties to someone else
    e.refused(&[wrong], &[], err(CurtaError::Unauthorized))
        .await;

    // Tokenize; the next turn needs section 1 (layers) and 2 (output).
    let out = e.chain.send(&[good], &[]).await;
    assert_eq!(out.result, Ok(()));
    let good = e.turn_ix(&run_key).await;
    assert_eq!(good.accounts.len(), 7);
    let mut missing = good.clone();
    missing.accounts.pop();
    e.refused(&[missing], &[], core(curta_core::Error::MissingWeights))
        .await;
    let mut swapped = good.clone();
    swapped.accounts[6].pubkey = keys.weights[0]; // section zero where 2 goes
    e.refused(&[swapped], &[], core(curta_core::Error::MissingWeights))
        .await;
    let mut extra = good.clone();
    extra
        .accounts
        .push(AccountMeta::new_readonly(keys.weights[1], false));
    e.refused(&[extra], &[], err(CurtaError::WrongAccountCount))
        .await;
    let mut kind = good.clone();
    kind.accounts[5].pubkey = config; // a config where a weight goes
    e.refused(&[kind], &[], err(CurtaError::WrongAccountKind))
        .await;

    // Weight accounts of another model and another section.
    let other_owner = Keypair::new();
    let (other, accounts) = chain::preloaded_model(
        &config,
        &artifact("stories260K"),
        &other_owner.pubkey(),
        ROYALTY,
    );
    for (k, a) in accounts {
        e.chain.ctx.set_account(&k, &a.into());
    }
    let mut foreign = good.clone();
    foreign.accounts[5].pubkey = other.weights[1];
    e.refused(&[foreign], &[], err(CurtaError::WrongModel))
        .await;
    let mut zero = good.clone();
    zero.accounts[4].pubkey = keys.weights[1]; // section 1 where zero goes
    e.refused(&[zero], &[], err(CurtaError::WrongSection)).await;
    let mut run_of_other = good.clone();
    run_of_other.accounts[1].pubkey = other.model;
    run_of_other.accounts[3].pubkey = other_owner.pubkey();
    e.refused(&[run_of_other], &[], err(CurtaError::WrongModel))
        .await;

    // Run to the end; then a turn is refused by the core, and closing works.
    loop {
        let ix = e.turn_ix(&run_key).await;
        let out = e.chain.send(&[ix], &[]).await;
        assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
        let data = e.chain.data(&run_key).await;
        if curta_core::StateInfo::read(&data[run::HEADER_LEN..])
            .unwrap()
            .complete
        {
            break;
        }
    }
    let done = chain::turn_ix(&config, &keys, &run_key, &[], &e.cfg, CHARGES.allowance);
    e.refused(&[done], &[], core(curta_core::Error::InvalidState))
        .await;

    // Closing: only the opener, only a finished run.
    let stranger = Keypair::new();
    e.chain.fund(&stranger.pubkey(), 1_000_000_000).await;
    e.refused(
        &[chain::close_run_ix(&run_key, &stranger.pubkey())],
        &[&stranger],
        err(CurtaError::Unauthorized),
    )
    .await;
    let unsigned = Instruction {
        accounts: vec![
            AccountMeta::new(run_key, false),
            AccountMeta::new(opener.pubkey(), false),
        ],
        ..chain::close_run_ix(&run_key, &opener.pubkey())
    };
    e.refused(&[unsigned], &[], err(CurtaError::MissingSigner))
        .await;
    let unfinished = e.open(&spec(b"Once", 4, 0, 0)).await;
    e.refused(
        &[chain::close_run_ix(&unfinished, &opener.pubkey())],
        &[&opener],
        err(CurtaError::RunNotComplete),
    )
    .await;
}

#[tokio::test]
async fn open_run_errors() {
    let mut e = env().await;
    let (config, keys, opener) = (e.config, e.keys.clone(), e.opener.insecure_clone());
    let cfg = e.cfg;
    let open_ix = |run_key: &Pubkey, s: &RunSpec| {
        chain::open_run_ix(&config, &keys, run_key, &opener.pubkey(), s)
    };
    // A run account funded and sized for `s`, not yet opened.
    async fn account_for(e: &mut Env, s: &RunSpec, escrow: u64, extra_len: usize) -> Pubkey {
        let size =
            curta_core::state_size(e.cfg, s.prompt.len().min(1024), s.max_tokens.clamp(1, 512))
                .unwrap();
        e.chain
            .create(run::HEADER_LEN + size + extra_len, escrow)
            .await
            .pubkey()
    }
    let ok = spec(b"Once upon a time", 4, 0, 0);
    let funded = ROYALTY * 4;

    let k = account_for(&mut e, &ok, funded - 1, 0).await;
    e.refused(
        &[open_ix(&k, &ok)],
        &[&opener],
        err(CurtaError::EscrowTooSmall),
    )
    .await;
    let k = account_for(&mut e, &ok, funded, 8).await;
    e.refused(
        &[open_ix(&k, &ok)],
        &[&opener],
        core(curta_core::Error::BufferTooSmall),
    )
    .await;
    let long = spec(&[b'a'; 1025], 4, 0, 0);
    let k = account_for(&mut e, &long, funded, 0).await;
    e.refused(
        &[open_ix(&k, &long)],
        &[&opener],
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let zero_byte = spec(b"Once\0upon a time", 4, 0, 0);
    let k = account_for(&mut e, &zero_byte, funded, 0).await;
    e.refused(
        &[open_ix(&k, &zero_byte)],
        &[&opener],
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let no_tokens = spec(b"Once upon a time", 0, 0, 0);
    let k = account_for(&mut e, &no_tokens, funded, 0).await;
    e.refused(
        &[open_ix(&k, &no_tokens)],
        &[&opener],
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let hot = spec(b"Once upon a time", 4, (16 << 16) + 1, 0);
    let k = account_for(&mut e, &hot, funded, 0).await;
    e.refused(
        &[open_ix(&k, &hot)],
        &[&opener],
        core(curta_core::Error::InvalidPrompt),
    )
    .await;

    // Signer, kind, reuse.
    let k = account_for(&mut e, &ok, funded, 0).await;
    let mut unsigned = open_ix(&k, &ok);
    unsigned.accounts[3].is_signer = false;
    e.refused(&[unsigned], &[], err(CurtaError::MissingSigner))
        .await;
    let mut kind = open_ix(&k, &ok);
    kind.accounts[1].pubkey = keys.weights[0];
    e.refused(&[kind], &[&opener], err(CurtaError::WrongAccountKind))
        .await;
    let opened = e.open(&ok).await;
    e.refused(
        &[open_ix(&opened, &ok)],
        &[&opener],
        err(CurtaError::AlreadyInitialized),
    )
    .await;

    // A prompt whose tokens and max tokens overflow the context: found by
    // the turn that finishes tokenizing.
    let wide = spec(b"The cat sat on the mat.", 512, 0, 0);
    let wide_run = e.open(&wide).await;
    let ix = e.turn_ix(&wide_run).await;
    e.refused(&[ix], &[], core(curta_core::Error::ContextExceeded))
        .await;
    let _ = cfg;
}

#[tokio::test]
async fn model_and_config_errors() {
    let mut e = env().await;
    let (config, keys, owner, admin) = (
        e.config,
        e.keys.clone(),
        e.owner.insecure_clone(),
        e.admin.insecure_clone(),
    );

    // Config.
    let set = |allowance: u32, signer: &Keypair| {
        chain::instruction(
            Ix::SetAllowance { allowance },
            vec![
                AccountMeta::new(config, false),
                AccountMeta::new_readonly(signer.pubkey(), true),
            ],
        )
    };
    e.refused(
        &[set(1_000_000, &owner)],
        &[&owner],
        err(CurtaError::Unauthorized),
    )
    .await;
    e.refused(
        &[set(0, &admin)],
        &[&admin],
        core(curta_core::Error::InvalidConfig),
    )
    .await;
    let init_again = chain::instruction(
        Ix::InitConfig {
            allowance: CHARGES.allowance,
        },
        vec![
            AccountMeta::new(config, false),
            AccountMeta::new_readonly(admin.pubkey(), true),
        ],
    );
    e.refused(
        &[init_again],
        &[&admin],
        err(CurtaError::AlreadyInitialized),
    )
    .await;
    let small = e.chain.create(64, 0).await;
    let init_small = chain::instruction(
        Ix::InitConfig {
            allowance: CHARGES.allowance,
        },
        vec![
            AccountMeta::new(small.pubkey(), false),
            AccountMeta::new_readonly(admin.pubkey(), true),
        ],
    );
    e.refused(
        &[init_small],
        &[&admin],
        err(CurtaError::InvalidAccountSize),
    )
    .await;
    let out = e.chain.send(&[set(1_000_000, &admin)], &[&admin]).await;
    assert_eq!(out.result, Ok(()));
    assert_eq!(
        protocol::ConfigAccount(&e.chain.data(&config).await).allowance(),
        1_000_000
    );

    // Writing to a sealed model.
    e.refused(
        &[chain::write_ix(&keys, 1, 0, &[1, 2, 3])],
        &[&owner],
        err(CurtaError::ModelNotWritable),
    )
    .await;
    e.refused(
        &[chain::seal_ix(&keys)],
        &[&owner],
        err(CurtaError::ModelNotWritable),
    )
    .await;

    // A model being written: its own upload, step by step.
    let art = artifact("stories260K");
    let m = metadata(&art);
    let count = m.section_count();
    let model_kp = e.chain.create(model::len(count), 0).await;
    let mut weights = vec![];
    for i in 0..count {
        weights.push(
            e.chain
                .create(protocol::WEIGHT_HEADER_LEN + m.section_len(i), 0)
                .await,
        );
    }
    let new = ModelKeys {
        model: model_kp.pubkey(),
        owner: owner.pubkey(),
        weights: weights.iter().map(|k| k.pubkey()).collect(),
    };
    let sections = chain::sections_of(&art);
    let init = || chain::init_model_ix(&config, &new, &m.config, &sections, ROYALTY);
    let mut wrong_count = init();
    wrong_count.accounts.pop();
    wrong_count.data[1 + 8 + 28..1 + 8 + 28 + 4].copy_from_slice(&2u32.to_le_bytes());
    wrong_count.data.truncate(wrong_count.data.len() - 40);
    e.refused(
        &[wrong_count],
        &[&owner],
        err(CurtaError::InvalidAccountSize),
    )
    .await;
    // A section count that is not the layout's, on a model account sized for it.
    let two = e.chain.create(model::len(2), 0).await;
    let short = ModelKeys {
        model: two.pubkey(),
        owner: owner.pubkey(),
        weights: new.weights[..2].to_vec(),
    };
    let two_sections = chain::init_model_ix(&config, &short, &m.config, &sections[..2], ROYALTY);
    e.refused(
        &[two_sections],
        &[&owner],
        err(CurtaError::SectionCountMismatch),
    )
    .await;
    let mut zero_length = init();
    zero_length.data[1 + 8 + 28 + 4..1 + 8 + 28 + 12].copy_from_slice(&0u64.to_le_bytes());
    e.refused(
        &[zero_length],
        &[&owner],
        err(CurtaError::SectionLengthMismatch),
    )
    .await;
    let mut bad_config = init();
    bad_config.data[1 + 8..1 + 8 + 4].copy_from_slice(&0u32.to_le_bytes());
    e.refused(
        &[bad_config],
        &[&owner],
        core(curta_core::Error::InvalidConfig),
    )
    .await;
    let out = e.chain.send(&[init()], &[&owner]).await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);

    // Opening a run before sealing; writing out of bounds or as a stranger.
    let s = spec(b"Once", 2, 0, 0);
    let size = curta_core::state_size(e.cfg, 4, 2).unwrap();
    let run_kp = e.chain.create(run::HEADER_LEN + size, ROYALTY * 2).await;
    let opener = e.opener.insecure_clone();
    let open_early = chain::open_run_ix(&config, &new, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.refused(&[open_early], &[&opener], err(CurtaError::ModelNotSealed))
        .await;
    let len = m.section_len(2) as u64;
    e.refused(
        &[chain::write_ix(&new, 2, len - 2, &[1, 2, 3])],
        &[&owner],
        err(CurtaError::WriteOutOfBounds),
    )
    .await;
    let stranger = Keypair::new();
    let mut as_stranger = chain::write_ix(&new, 2, 0, &[1]);
    as_stranger.accounts[2].pubkey = stranger.pubkey();
    e.refused(&[as_stranger], &[&stranger], err(CurtaError::Unauthorized))
        .await;
    let mut into_other = chain::write_ix(&new, 1, 0, &[1]);
    into_other.accounts[1].pubkey = keys.weights[1]; // the sealed model's section
    e.refused(&[into_other], &[&owner], err(CurtaError::WrongModel))
        .await;

    // Write every section but one byte wrong: sealing finds the mismatch.
    for i in 0..count {
        let bytes = curta_harness::models::section(&art, &m, i);
        for (k, chunk) in bytes.chunks(chain::WRITE_CHUNK).enumerate() {
            let mut chunk = chunk.to_vec();
            if i == 1 && k == 0 {
                chunk[0] ^= 1;
            }
            let out = e
                .chain
                .send(
                    &[chain::write_ix(
                        &new,
                        i,
                        (k * chain::WRITE_CHUNK) as u64,
                        &chunk,
                    )],
                    &[&owner],
                )
                .await;
            assert_eq!(out.result, Ok(()));
        }
    }
    e.refused(
        &[chain::seal_ix(&new)],
        &[&owner],
        err(CurtaError::HashMismatch),
    )
    .await;
}

#[tokio::test]
async fn seal_checks_section_zero_and_rent_is_read_exactly() {
    let mut e = env().await;
    let (config, owner) = (e.config, e.owner.insecure_clone());
    // A model whose section zero is not an artifact, with matching digests:
    // sealing hashes it fine, then Metadata::new refuses it.
    let art = artifact("stories260K");
    let mut sections: Vec<Vec<u8>> = chain::sections_of(&art)
        .iter()
        .map(|s| s.to_vec())
        .collect();
    sections[0][0] = b'X';
    let views: Vec<&[u8]> = sections.iter().map(|s| s.as_slice()).collect();
    let keys = e
        .chain
        .upload_sections(&config, &e.cfg, &views, &owner, ROYALTY)
        .await;
    e.refused(
        &[chain::seal_ix(&keys)],
        &[&owner],
        core(curta_core::Error::InvalidFormat),
    )
    .await;

    // A model with keys past 32 bits: its first position raises Arithmetic.
    let tiny = convert(
        &overflowing_checkpoint(),
        &synthetic_tokenizer(TINY.vocab_size),
    )
    .unwrap();
    let (keys, accounts) = chain::preloaded_model(&config, &tiny, &owner.pubkey(), 1);
    for (k, a) in accounts {
        e.chain.ctx.set_account(&k, &a.into());
    }
    let s = spec(b"a", 2, 0, 0);
    let opener = e.opener.insecure_clone();
    let (run_key, out) = e
        .chain
        .open_run(&config, &keys, &TINY, &s, &opener, 2)
        .await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    let out = e
        .chain
        .turn(&config, &keys, &run_key, &TINY, CHARGES.allowance)
        .await;
    assert_eq!(out.result, Ok(()), "tokenizing: {:#?}", out.logs);
    let data = e.chain.data(&run_key).await;
    let ix = chain::turn_ix(
        &config,
        &keys,
        &run_key,
        &data[run::HEADER_LEN..],
        &TINY,
        CHARGES.allowance,
    );
    e.refused(&[ix], &[], core(curta_core::Error::Arithmetic))
        .await;

    // A rent sysvar whose threshold is not a whole number.
    let mut rent = solana_rent::Rent::default();
    #[allow(deprecated)]
    {
        rent.exemption_threshold = 2.5;
    }
    e.chain.ctx.set_sysvar(&rent);
    let s = spec(b"Once", 2, 0, 0);
    let size = curta_core::state_size(e.cfg, 4, 2).unwrap();
    let run_kp = e.chain.create(run::HEADER_LEN + size, 10_000).await;
    let ix = chain::open_run_ix(&config, &e.keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.refused(&[ix], &[&opener], err(CurtaError::UnsupportedRent))
        .await;
}
