//! The curta program on the SBF VM (solana-program-test 4.0.0, the built
//! `.so`): the reference run through the real upload path, turn by turn
//! against the native core, with its receipts; compute units; every error
//! with the wrong input that causes it, leaving every account unchanged.
//! Every transaction is checked to conserve lamports (`Chain::send`).
//! The account lifecycle and its attacks are in `accounts.rs`.
//!
//! Run with `make test-program` (builds the `.so` first).

mod common;

use common::{core, env, err, spec, Env, ROYALTY};
use curta_client::instructions as ix;
use curta_core::convert::{convert, overflowing_checkpoint, synthetic_tokenizer, TINY};
use curta_core::inference::quote_turns;
use curta_core::planner::CHARGES;
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{self, run, CurtaError, Instruction as Ix, TurnEvent};
use curta_core::{output_text, output_tokens};
use curta_replay::manifest::RunSpec;
use curta_replay::models::{artifact, metadata};
use curta_replay::native;
use curta_replay::program_test::{self, Chain, CU_LIMIT, PROGRAM_ID};
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

#[tokio::test]
async fn reference_run_through_the_upload_path_matches_native_turn_by_turn() {
    let art = artifact("stories260K");
    let m = metadata(&art);
    let cfg = m.config;
    let mut chain = Chain::start(program_test::program_test()).await;
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    chain.fund(&opener.pubkey(), 1_000_000_000).await;
    // Royalties go to an existing, rent-exempt account.
    chain.fund(&owner.pubkey(), 1_000_000_000).await;
    let config = chain.init_config(&admin, CHARGES.allowance).await;
    let keys = chain
        .upload_model(&Keypair::new(), &config, &art, &owner, ROYALTY)
        .await;

    let s = spec(b"Once upon a time", 12, 0, 0);
    let escrow = ROYALTY * s.max_tokens as u64;
    let (run_key, out) = chain
        .open_run(&keys, &cfg, &s, &opener, escrow, &Default::default())
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
    let (mut followed_tokens, mut followed_text) = (vec![], vec![]);
    while !curta_core::StateInfo::read(&state).unwrap().complete {
        let expected = native::step(&art, &m, &mut state);
        let out = chain.turn(&keys, &run_key, &cfg, CHARGES.allowance).await;
        assert_eq!(out.result, Ok(()), "turn {}: {:#?}", turns + 1, out.logs);
        turns += 1;
        let data = chain.data(&run_key).await;
        if let Some(d) =
            curta_core::state::diff::first_difference(&cfg, &state, &data[run::HEADER_LEN..])
        {
            panic!("turn {turns}: SBF state differs from native: {d}");
        }
        // The receipt: its record, then the turn's tokens and text.
        let receipt = &out.receipts()[0];
        let info = curta_core::StateInfo::read(&state).unwrap();
        assert_eq!(
            receipt.event,
            TurnEvent {
                run: run_key.to_bytes(),
                model: keys.model.to_bytes(),
                turns,
                paid: expected.generated_this_turn as u64 * ROYALTY,
                generated: info.generated,
                generated_this_turn: expected.generated_this_turn,
                charged: expected.work,
                phase: info.phase as u32,
                text_len: info.text_len,
                crank_paid: 0,
            }
        );
        assert_eq!(receipt.tokens.len(), expected.generated_this_turn as usize);
        followed_tokens.extend(receipt.tokens.iter().flat_map(|t| t.to_le_bytes()));
        followed_text.extend_from_slice(&receipt.text);
        // The compute budget instructions' 300 plus the program's own.
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
    // The receipts alone give the same tokens and text.
    assert_eq!(followed_tokens, output_tokens(cfg, onchain));
    assert_eq!(followed_text, output_text(cfg, onchain));

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
            &[program_test::close_run_ix(&run_key, &opener.pubkey())],
            &[&opener],
        )
        .await;
    assert_eq!(out.result, Ok(()), "close_run: {:#?}", out.logs);
    let refunded = chain.lamports(&opener.pubkey()).await - opener_before;
    assert_eq!(refunded, rent + r.escrow());
    assert_eq!(chain.account(&run_key).await, None);
}

#[tokio::test]
async fn run_and_turn_errors() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 2, 0, 0);
    let run_key = e.open(&s).await;
    let (config, keys, opener) = (e.config(), e.keys.clone(), e.opener.insecure_clone());

    // Instruction data.
    let bad = Instruction {
        program_id: PROGRAM_ID,
        accounts: vec![],
        data: vec![0xEE],
    };
    e.refused(&[bad], &[], err(CurtaError::InvalidInstruction))
        .await;
    let short = Instruction {
        program_id: PROGRAM_ID,
        accounts: vec![AccountMeta::new_readonly(config, false)],
        data: Ix::Turn {
            expected_turns: None,
        }
        .encode(),
    };
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
    let mut wrong = good.clone();
    wrong.accounts[3].pubkey = run_key; // the run paying itself
    wrong.accounts[3].is_writable = true;
    e.refused(&[wrong], &[], err(CurtaError::Unauthorized))
        .await;

    // A stale turn (the count it expects is not the state's) does nothing.
    let cranker = e.chain.payer().pubkey();
    let stale = ix::turn(&PROGRAM_ID, &keys, &run_key, &cranker, &[], Some(1));
    e.refused(&[stale], &[], err(CurtaError::StaleTurn)).await;

    // Tokenize; the next turn needs section 1 (layers) and 2 (output).
    e.ok(std::slice::from_ref(&good), &[]).await;
    // The same turn again (it expects 0 turns) is now stale.
    e.refused(&[good], &[], err(CurtaError::StaleTurn)).await;
    let good = e.turn_ix(&run_key).await;
    assert_eq!(good.accounts.len(), 8);
    let mut missing = good.clone();
    missing.accounts.pop();
    e.refused(&[missing], &[], core(curta_core::Error::MissingWeights))
        .await;
    let mut swapped = good.clone();
    swapped.accounts[7].pubkey = keys.weights[0]; // section zero where 2 goes
    e.refused(&[swapped], &[], core(curta_core::Error::MissingWeights))
        .await;
    // The plan's two weight accounts in the other order: the same turn.
    let mut reordered = good.clone();
    reordered.accounts.swap(6, 7);
    let mut extra = good.clone();
    extra
        .accounts
        .push(AccountMeta::new_readonly(keys.weights[1], false));
    e.refused(&[extra], &[], err(CurtaError::WrongAccountCount))
        .await;
    let mut kind = good.clone();
    kind.accounts[6].pubkey = config; // a config where a weight goes
    e.refused(&[kind], &[], err(CurtaError::WrongAccountKind))
        .await;

    // Weight accounts of another model and another section.
    let other_owner = Keypair::new();
    let (other, accounts) = program_test::preloaded_model(
        &config,
        &artifact("stories260K"),
        &other_owner.pubkey(),
        ROYALTY,
    );
    for (k, a) in accounts {
        e.chain.ctx.set_account(&k, &a.into());
    }
    let mut foreign = good.clone();
    foreign.accounts[6].pubkey = other.weights[1];
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
    e.ok(&[reordered], &[]).await;

    // Run to the end; then a turn is refused by the core.
    e.run_to_end(&run_key).await;
    let done = ix::turn(&PROGRAM_ID, &keys, &run_key, &cranker, &[], None);
    e.refused(&[done], &[], core(curta_core::Error::InvalidState))
        .await;

    // Closing: only the opener, signing.
    let stranger = Keypair::new();
    e.chain.fund(&stranger.pubkey(), 1_000_000_000).await;
    e.refused(
        &[program_test::close_run_ix(&run_key, &stranger.pubkey())],
        &[&stranger],
        err(CurtaError::Unauthorized),
    )
    .await;
    let mut unsigned = program_test::close_run_ix(&run_key, &opener.pubkey());
    unsigned.accounts[1].is_signer = false;
    e.refused(&[unsigned], &[], err(CurtaError::MissingSigner))
        .await;
    let mut readonly = program_test::close_run_ix(&run_key, &opener.pubkey());
    readonly.accounts[1].is_writable = false;
    e.refused(&[readonly], &[&opener], err(CurtaError::NotWritable))
        .await;
}

#[tokio::test]
async fn open_run_errors() {
    let mut e = env().await;
    let (keys, opener) = (e.keys.clone(), e.opener.insecure_clone());
    let ok = spec(b"Once upon a time", 4, 0, 0);
    let funded = ROYALTY * 4;

    // Each refusal sends the run's creation and its opening together, as a
    // client does, so the whole transaction fails and nothing is created.
    async fn try_open(e: &mut Env, s: &RunSpec, escrow: u64, extra_len: usize, code: u32) {
        let size =
            curta_core::state_size(e.cfg, s.prompt.len().min(1024), s.max_tokens.clamp(1, 512))
                .unwrap();
        let (run_kp, create) = e
            .chain
            .create_ix(run::HEADER_LEN + size + extra_len, escrow)
            .await;
        let opener = e.opener.insecure_clone();
        let open = program_test::open_run_ix(&e.keys, &run_kp.pubkey(), &opener.pubkey(), s);
        e.refused(&[create, open], &[&run_kp, &opener], code).await;
    }
    try_open(&mut e, &ok, funded - 1, 0, err(CurtaError::EscrowTooSmall)).await;
    try_open(
        &mut e,
        &ok,
        funded,
        8,
        core(curta_core::Error::BufferTooSmall),
    )
    .await;
    let zero_byte = spec(b"Once\0upon a time", 4, 0, 0);
    try_open(
        &mut e,
        &zero_byte,
        funded,
        0,
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let no_tokens = spec(b"Once upon a time", 0, 0, 0);
    try_open(
        &mut e,
        &no_tokens,
        funded,
        0,
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let hot = spec(b"Once upon a time", 4, (16 << 16) + 1, 0);
    try_open(
        &mut e,
        &hot,
        funded,
        0,
        core(curta_core::Error::InvalidPrompt),
    )
    .await;

    // A prompt over 1,024 bytes: 1,000 staged, 25 with the opening.
    let long = spec(&[b'a'; 1025], 4, 0, 0);
    let size = curta_core::state_size(e.cfg, 1024, 4).unwrap();
    let run_kp = e.chain.create(run::HEADER_LEN + size, funded).await;
    for at in [0, 500] {
        let stage = ix::write_prompt(
            &PROGRAM_ID,
            &run_kp.pubkey(),
            at,
            &long.prompt[at..at + 500],
        );
        e.ok(&[stage], &[&run_kp]).await;
    }
    let open = ix::open_run(
        &PROGRAM_ID,
        &keys,
        &run_kp.pubkey(),
        &opener.pubkey(),
        &program_test::run_params(&long),
        &CrankFee::default(),
        1000,
    );
    e.refused(
        &[open],
        &[&run_kp, &opener],
        core(curta_core::Error::InvalidPrompt),
    )
    .await;
    let past = ix::write_prompt(&PROGRAM_ID, &run_kp.pubkey(), 1000, &[b'a'; 25]);
    e.refused(&[past], &[&run_kp], core(curta_core::Error::InvalidPrompt))
        .await;
    // Staging is the run's own: unsigned, or once opened, it is refused.
    let mut unsigned = ix::write_prompt(&PROGRAM_ID, &run_kp.pubkey(), 0, b"x");
    unsigned.accounts[0].is_signer = false;
    e.refused(&[unsigned], &[], err(CurtaError::MissingSigner))
        .await;

    // Signers, kind, reuse.
    let mut unsigned = program_test::open_run_ix(&keys, &run_kp.pubkey(), &opener.pubkey(), &ok);
    unsigned.accounts[3].is_signer = false;
    e.refused(&[unsigned], &[&run_kp], err(CurtaError::MissingSigner))
        .await;
    let mut kind = program_test::open_run_ix(&keys, &run_kp.pubkey(), &opener.pubkey(), &ok);
    kind.accounts[1].pubkey = keys.weights[0];
    e.refused(
        &[kind],
        &[&run_kp, &opener],
        err(CurtaError::WrongAccountKind),
    )
    .await;
    // Staged bytes past the prompt that opens are cleared: the state is the
    // one `init_state` writes. Once open, the run takes no more staging.
    let size = curta_core::state_size(e.cfg, ok.prompt.len(), ok.max_tokens).unwrap();
    let run_kp = e.chain.create(run::HEADER_LEN + size, funded).await;
    let stage = ix::write_prompt(&PROGRAM_ID, &run_kp.pubkey(), 0, &[b'z'; 40]);
    e.ok(std::slice::from_ref(&stage), &[&run_kp]).await;
    let open = program_test::open_run_ix(&keys, &run_kp.pubkey(), &opener.pubkey(), &ok);
    e.ok(&[open], &[&run_kp, &opener]).await;
    let art = artifact("stories260K");
    let native = native::open(&metadata(&art), &ok);
    assert_eq!(e.state(&run_kp.pubkey()).await, &native[..]);
    e.refused(&[stage], &[&run_kp], err(CurtaError::AlreadyInitialized))
        .await;
    // Without its key, an opened run cannot even be named as a new one.
    let opened = e.open(&ok).await;
    let mut again = program_test::open_run_ix(&keys, &opened, &opener.pubkey(), &ok);
    again.accounts[2].is_signer = false;
    e.refused(&[again], &[&opener], err(CurtaError::MissingSigner))
        .await;
}

#[tokio::test]
async fn config_errors_and_admin_rotation() {
    let mut e = env().await;
    let (config, owner, admin) = (
        e.config(),
        e.owner.insecure_clone(),
        e.admin.insecure_clone(),
    );
    let set = |allowance: u32, signer: &Keypair| {
        ix::set_allowance(&PROGRAM_ID, &config, &signer.pubkey(), allowance)
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
    // Initializing it again would take its own signature; without it:
    let mut again = ix::init_config(&PROGRAM_ID, &config, &admin.pubkey(), CHARGES.allowance);
    again.accounts[0].is_signer = false;
    e.refused(&[again], &[&admin], err(CurtaError::MissingSigner))
        .await;
    let (small, create) = e.chain.create_ix(64, 0).await;
    let init_small = ix::init_config(
        &PROGRAM_ID,
        &small.pubkey(),
        &admin.pubkey(),
        CHARGES.allowance,
    );
    e.refused(
        &[create, init_small],
        &[&small, &admin],
        err(CurtaError::InvalidAccountSize),
    )
    .await;
    e.ok(&[set(1_000_000, &admin)], &[&admin]).await;
    assert_eq!(
        protocol::ConfigAccount(&e.chain.data(&config).await).allowance(),
        1_000_000
    );

    // Rotation needs both the admin and the new admin.
    let next = Keypair::new();
    let mut one_signer = ix::set_admin(&PROGRAM_ID, &config, &admin.pubkey(), &next.pubkey());
    one_signer.accounts[2].is_signer = false;
    e.refused(&[one_signer], &[&admin], err(CurtaError::MissingSigner))
        .await;
    e.refused(
        &[ix::set_admin(
            &PROGRAM_ID,
            &config,
            &owner.pubkey(),
            &next.pubkey(),
        )],
        &[&owner, &next],
        err(CurtaError::Unauthorized),
    )
    .await;
    e.ok(
        &[ix::set_admin(
            &PROGRAM_ID,
            &config,
            &admin.pubkey(),
            &next.pubkey(),
        )],
        &[&admin, &next],
    )
    .await;
    e.refused(
        &[set(CHARGES.allowance, &admin)],
        &[&admin],
        err(CurtaError::Unauthorized),
    )
    .await;
    e.ok(&[set(CHARGES.allowance, &next)], &[&next]).await;
    assert_eq!(
        protocol::ConfigAccount(&e.chain.data(&config).await).admin(),
        next.pubkey().as_array()
    );
}

/// A run's terms are fixed when it opens: its allowance too. The admin
/// lowers the config's allowance mid-run; the run still takes exactly the
/// turns it was quoted (and its crank deposit bought) under the allowance
/// it opened with, each paying the crank fee, while a run opened after the
/// change takes the new allowance's turns. A run with no recorded
/// allowance (opened by an older program) cannot turn.
#[tokio::test]
async fn a_runs_allowance_is_fixed_at_opening() {
    use curta_core::client::replay::{initial_state, replay};
    const FEE: u64 = 7_000;
    const LOWER: u32 = 400_000;
    let mut e = env().await;
    let (keys, cfg, admin) = (e.keys.clone(), e.cfg, e.admin.insecure_clone());
    let art = artifact("stories260K");
    let s = spec(b"Once upon a time", 4, 0, 0);
    let start = initial_state(&art, &program_test::run_params(&s)).unwrap();
    let quoted = replay(&art, &start, CHARGES.allowance).unwrap();
    let lower = replay(&art, &start, LOWER).unwrap();
    let turns = quoted.steps.len() as u64;
    assert!(
        lower.steps.len() as u64 > turns,
        "the lower allowance must take more turns: {} against {turns}",
        lower.steps.len()
    );

    // Opened under the config's allowance, with a crank deposit of the fee
    // for each of the turns it was quoted.
    let opener = e.opener.insecure_clone();
    let crank = CrankFee::for_turns(FEE, turns);
    let escrow = ROYALTY * s.max_tokens as u64;
    let (run_key, out) = e
        .chain
        .open_run(&keys, &cfg, &s, &opener, escrow, &crank)
        .await;
    assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
    let allowance_of = |data: &[u8]| protocol::RunAccount(data).allowance();
    assert_eq!(
        allowance_of(&e.chain.data(&run_key).await),
        CHARGES.allowance
    );
    let cranker = Keypair::new();
    e.chain.fund(&cranker.pubkey(), 1_000_000_000).await;

    // One turn, then the admin lowers the allowance.
    let mut receipts = vec![];
    let out = e
        .chain
        .turn_by(&keys, &run_key, &cfg, CHARGES.allowance, &cranker)
        .await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    receipts.push(out.receipts()[0].event);
    let set = ix::set_allowance(&PROGRAM_ID, &e.config(), &admin.pubkey(), LOWER);
    e.ok(&[set], &[&admin]).await;
    assert_eq!(
        protocol::ConfigAccount(&e.chain.data(&e.config()).await).allowance(),
        LOWER
    );

    // The rest of the run: every turn planned under the run's allowance,
    // read from its header, as a client does.
    loop {
        let data = e.chain.data(&run_key).await;
        if curta_core::StateInfo::read(&data[run::HEADER_LEN..])
            .unwrap()
            .complete
        {
            break;
        }
        assert!(
            receipts.len() < quoted.steps.len(),
            "more turns than quoted"
        );
        let allowance = allowance_of(&data);
        assert_eq!(allowance, CHARGES.allowance, "the run's allowance changed");
        let out = e
            .chain
            .turn_by(&keys, &run_key, &cfg, allowance, &cranker)
            .await;
        assert_eq!(
            out.result,
            Ok(()),
            "turn {}: {:#?}",
            receipts.len() + 1,
            out.logs
        );
        receipts.push(out.receipts()[0].event);
    }
    // Exactly the quoted turns, each the replay's under the run's allowance
    // (some charging more than the config now allows), each paid the fee:
    // the deposit is spent exactly, no turn went unpaid.
    assert_eq!(receipts.len() as u64, turns);
    for (r, step) in receipts.iter().zip(&quoted.steps) {
        assert_eq!(
            (r.charged, r.generated, r.crank_paid),
            (step.charged, step.generated, FEE),
            "turn {}",
            r.turns
        );
    }
    assert!(receipts.iter().any(|r| r.charged > LOWER));
    let data = e.chain.data(&run_key).await;
    let r = protocol::RunAccount(&data);
    assert_eq!(
        (r.crank_paid(), r.crank_deposit()),
        (FEE * turns, FEE * turns)
    );
    assert_eq!(r.state(), &quoted.final_state[..]);

    // A run opened after the change takes the new allowance's turns.
    let after = e.open(&s).await;
    assert_eq!(allowance_of(&e.chain.data(&after).await), LOWER);
    let mut charged = vec![];
    while !curta_core::StateInfo::read(&e.state(&after).await)
        .unwrap()
        .complete
    {
        let out = e.chain.turn(&keys, &after, &cfg, LOWER).await;
        assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
        charged.push(out.receipts()[0].event.charged);
    }
    let want: Vec<u32> = lower.steps.iter().map(|t| t.charged).collect();
    assert_eq!(charged, want);
    assert_eq!(e.state(&after).await, &lower.final_state[..]);

    // A run whose header records no allowance (0, as an older program
    // left it) cannot turn: the core refuses the allowance.
    let old = e.open(&s).await;
    let mut account = e.chain.account(&old).await.unwrap();
    account.data[run::ALLOWANCE..run::ALLOWANCE + 4].fill(0);
    e.chain.ctx.set_account(&old, &account.into());
    let ix = e.chain.turn_ix(&keys, &old, &cfg, LOWER).await;
    e.refused(&[ix], &[], core(curta_core::Error::InvalidConfig))
        .await;
}

#[tokio::test]
async fn arithmetic_overflow_and_rent_read_exactly() {
    let mut e = env().await;
    let (config, owner) = (e.config(), e.owner.insecure_clone());
    // A model with keys past 32 bits: its first position raises Arithmetic.
    let tiny = convert(
        &overflowing_checkpoint(),
        &synthetic_tokenizer(TINY.vocab_size),
    )
    .unwrap();
    let (keys, accounts) = program_test::preloaded_model(&config, &tiny, &owner.pubkey(), 1);
    for (k, a) in accounts {
        e.chain.ctx.set_account(&k, &a.into());
    }
    let s = spec(b"a", 2, 0, 0);
    let opener = e.opener.insecure_clone();
    let (run_key, out) = e
        .chain
        .open_run(&keys, &TINY, &s, &opener, 2, &Default::default())
        .await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    let out = e
        .chain
        .turn(&keys, &run_key, &TINY, CHARGES.allowance)
        .await;
    assert_eq!(out.result, Ok(()), "tokenizing: {:#?}", out.logs);
    let ix = e
        .chain
        .turn_ix(&keys, &run_key, &TINY, CHARGES.allowance)
        .await;
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
    let ix = program_test::open_run_ix(&e.keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.refused(&[ix], &[&run_kp, &opener], err(CurtaError::UnsupportedRent))
        .await;
    let _: Pubkey = run_key;
}

/// What the instructions around a run cost, against the default limit of
/// 200,000 compute units a transaction gets without `SetComputeUnitLimit`
/// (docs/program.md gives these figures): binding the largest section
/// (its zero check), sealing the model (its identity), and opening a run
/// with the longest prompt, staged (clearing the stage).
#[tokio::test]
async fn setup_instructions_fit_the_default_compute_limit() {
    const DEFAULT_LIMIT: u64 = 200_000;
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let art = artifact("stories260K");
    let m = metadata(&art);
    let params = program_test::model_params(&m, ROYALTY);
    let (model_kp, create) = e
        .chain
        .create_ix(protocol::model::len(m.section_count()), 0)
        .await;
    let init = ix::init_model(
        &PROGRAM_ID,
        &e.config(),
        &model_kp.pubkey(),
        &owner.pubkey(),
        &params,
    );
    let init_cu = e.ok(&[create, init], &[&model_kp, &owner]).await.program_cu;
    let mut bind_cu = 0;
    let mut weights = vec![];
    for i in 0..m.section_count() {
        let len = protocol::weight::HEADER_LEN + m.section_len(i);
        let (w, create) = e.chain.create_ix(len, 0).await;
        let bind = ix::bind_weight(
            &PROGRAM_ID,
            &model_kp.pubkey(),
            &w.pubkey(),
            &owner.pubkey(),
            i as u32,
        );
        bind_cu = bind_cu.max(e.ok(&[create, bind], &[&w, &owner]).await.program_cu);
        weights.push(w.pubkey());
    }
    let keys = e.chain.model_keys(&model_kp.pubkey()).await;
    for (i, bytes) in program_test::sections_of(&art).iter().enumerate() {
        e.chain.write_section(&keys, i, bytes, &owner).await;
        e.chain.seal_section(&keys, i, bytes, &owner).await;
    }
    let seal_cu = e
        .ok(&[program_test::seal_model_ix(&keys)], &[&owner])
        .await
        .program_cu;

    let keys = e.chain.model_keys(&model_kp.pubkey()).await;
    let opener = e.opener.insecure_clone();
    let long = spec(&[b'a'; 1024], 4, 0, 0);
    let size = curta_core::state_size(e.cfg, 1024, 4).unwrap();
    let run_kp = e.chain.create(run::HEADER_LEN + size, 4 * ROYALTY).await;
    let stage = ix::write_prompt(&PROGRAM_ID, &run_kp.pubkey(), 0, &long.prompt[..700]);
    let stage_cu = e.ok(&[stage], &[&run_kp]).await.program_cu;
    let open = ix::open_run(
        &PROGRAM_ID,
        &keys,
        &run_kp.pubkey(),
        &opener.pubkey(),
        &program_test::run_params(&long),
        &CrankFee::default(),
        700,
    );
    let open_cu = e.ok(&[open], &[&run_kp, &opener]).await.program_cu;

    let figures = [
        ("init_model", init_cu),
        ("bind_weight", bind_cu),
        ("seal_model", seal_cu),
        ("write_prompt", stage_cu),
        ("open_run", open_cu),
    ];
    for (name, cu) in figures {
        println!("{name}: {cu} compute units");
        assert!(cu > 0 && cu < DEFAULT_LIMIT, "{name} took {cu}");
    }
}
