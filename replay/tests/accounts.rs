//! The account lifecycle on the SBF VM, tried as an attacker would: no
//! account can be initialized without its own signature, a run that cannot
//! advance is cancelled with its funds, a failed seal is recovered, a model
//! is retired and closed, a config is closed with every other account
//! still closable, a closed account cannot be revived in the same
//! transaction, and a model with more sections than one transaction could
//! carry is bound and sealed a section at a time. Every transaction is
//! checked to conserve lamports (`Chain::send`).

mod common;

use common::{core, env, err, spec, Env, ROYALTY};
use curta_client::instructions as ix;
use curta_core::convert::{convert, synthetic_tokenizer};
use curta_core::format::{Layout, FLAG_SHARED_CLASSIFIER};
use curta_core::planner::CHARGES;
use curta_core::protocol::{
    self, config, model, run, weight, CurtaError, ModelAccount, RunAccount, WeightAccount,
    HASH_CHUNK, SEAL_BYTES_PER_CALL,
};
use curta_core::{Config, StateInfo};
use curta_replay::models::{artifact, metadata, section};
use curta_replay::program_test::{self, PROGRAM_ID};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_system_interface::instruction::transfer;

#[tokio::test]
async fn initialization_needs_the_new_accounts_signature() {
    let mut e = env().await;
    let attacker = Keypair::new();
    e.chain.fund(&attacker.pubkey(), 1_000_000_000).await;

    // A config account its creator funded in one transaction and meant to
    // initialize in the next: the attacker cannot take the admin.
    let victim_config = e.chain.create(config::LEN, 0).await;
    let mut take = ix::init_config(
        &PROGRAM_ID,
        &victim_config.pubkey(),
        &attacker.pubkey(),
        CHARGES.allowance,
    );
    take.accounts[0].is_signer = false;
    e.refused(&[take], &[&attacker], err(CurtaError::MissingSigner))
        .await;
    let admin = Keypair::new();
    let init = ix::init_config(
        &PROGRAM_ID,
        &victim_config.pubkey(),
        &admin.pubkey(),
        CHARGES.allowance,
    );
    e.ok(&[init], &[&victim_config, &admin]).await;

    // A model account: the attacker cannot make it theirs.
    let art = artifact("stories260K");
    let m = metadata(&art);
    let params = program_test::model_params(&m, ROYALTY);
    let sections = m.section_count();
    let victim_model = e.chain.create(model::len(sections), 0).await;
    let mut take = ix::init_model(
        &PROGRAM_ID,
        &e.config(),
        &victim_model.pubkey(),
        &attacker.pubkey(),
        &params,
    );
    take.accounts[1].is_signer = false;
    e.refused(&[take], &[&attacker], err(CurtaError::MissingSigner))
        .await;

    // A weight account: the attacker cannot bind it to a junk model of
    // their own (which would lock its rent).
    let (junk_kp, create_junk) = e.chain.create_ix(model::len(sections), 0).await;
    let init_junk = ix::init_model(
        &PROGRAM_ID,
        &e.config(),
        &junk_kp.pubkey(),
        &attacker.pubkey(),
        &params,
    );
    e.ok(&[create_junk, init_junk], &[&junk_kp, &attacker])
        .await;
    let victim_weight = e
        .chain
        .create(weight::HEADER_LEN + m.section_len(1), 0)
        .await;
    let mut bind = ix::bind_weight(
        &PROGRAM_ID,
        &junk_kp.pubkey(),
        &victim_weight.pubkey(),
        &attacker.pubkey(),
        1,
    );
    bind.accounts[1].is_signer = false;
    e.refused(&[bind], &[&attacker], err(CurtaError::MissingSigner))
        .await;

    // A funded run account: the attacker cannot open it as its own opener
    // (and so can never close it to themselves).
    let s = spec(b"Once upon a time", 4, 0, 0);
    let size = curta_core::state_size(e.cfg, s.prompt.len(), s.max_tokens).unwrap();
    let victim_run = e.chain.create(run::HEADER_LEN + size, ROYALTY * 4).await;
    let mut take = program_test::open_run_ix(&e.keys, &victim_run.pubkey(), &attacker.pubkey(), &s);
    take.accounts[2].is_signer = false;
    e.refused(&[take], &[&attacker], err(CurtaError::MissingSigner))
        .await;
    // Its creator opens it, and could instead have reclaimed it.
    let opener = e.opener.insecure_clone();
    let open = program_test::open_run_ix(&e.keys, &victim_run.pubkey(), &opener.pubkey(), &s);
    e.ok(&[open], &[&victim_run, &opener]).await;
    let data = e.chain.data(&victim_run.pubkey()).await;
    assert_eq!(
        RunAccount::read(&data).unwrap().opener(),
        opener.pubkey().as_array()
    );
}

/// Sends `close_run` and checks the opener got back everything the run
/// held: its rent and unspent escrow; royalties paid stay paid.
async fn cancel(e: &mut Env, run_key: &Pubkey) {
    let opener = e.opener.insecure_clone();
    let data = e.chain.data(run_key).await;
    let r = RunAccount::read(&data).unwrap();
    let held = e.chain.lamports(run_key).await;
    let rent = e.chain.rent(data.len()).await;
    assert_eq!(held, rent + r.escrow());
    assert_eq!(r.escrow() + r.paid(), r.deposited());
    let before = e.chain.lamports(&opener.pubkey()).await;
    e.ok(
        &[program_test::close_run_ix(run_key, &opener.pubkey())],
        &[&opener],
    )
    .await;
    assert_eq!(e.chain.lamports(&opener.pubkey()).await - before, held);
    assert_eq!(e.chain.account(run_key).await, None);
}

#[tokio::test]
async fn a_run_that_cannot_advance_is_cancelled_with_its_funds() {
    let mut e = env().await;

    // Its prompt's tokens plus max tokens pass the context: no longer a
    // run that cannot advance (it completes when the context is full,
    // `ContextExceeded` is never raised). Tokenized, then cancelled
    // partway like any run.
    let wide = spec(b"The cat sat on the mat.", 512, 0, 0);
    let run_key = e.open(&wide).await;
    while StateInfo::read(&e.state(&run_key).await)
        .unwrap()
        .phase
        .is_tokenizing()
    {
        let ix = e.turn_ix(&run_key).await;
        e.ok(&[ix], &[]).await;
    }
    cancel(&mut e, &run_key).await;

    // A run partway through, after its model's owner was paid for some
    // tokens: cancelled, what was paid stays paid.
    let s = spec(b"Once upon a time", 12, 0, 0);
    let run_key = e.open(&s).await;
    while StateInfo::read(&e.state(&run_key).await).unwrap().generated < 2 {
        let ix = e.turn_ix(&run_key).await;
        e.ok(&[ix], &[]).await;
    }
    let data = e.chain.data(&run_key).await;
    assert!(RunAccount::read(&data).unwrap().paid() >= 2 * ROYALTY);
    cancel(&mut e, &run_key).await;

    // The allowance lowered below the model's largest step (a
    // normalization): a run opened under it stops where that step comes.
    // (A run opened before keeps the allowance it opened with.)
    let admin = e.admin.insecure_clone();
    let lower = ix::set_allowance(
        &PROGRAM_ID,
        &e.config(),
        &admin.pubkey(),
        CHARGES.min_allowance,
    );
    e.ok(&[lower], &[&admin]).await;
    let run_key = e.open(&s).await;
    let data = e.chain.data(&run_key).await;
    assert_eq!(
        RunAccount::read(&data).unwrap().allowance(),
        CHARGES.min_allowance
    );
    let mut stuck = false;
    for _ in 0..1000 {
        let keys = e.keys.clone();
        let ix = e
            .chain
            .turn_ix(&keys, &run_key, &e.cfg.clone(), CHARGES.min_allowance)
            .await;
        let out = e.chain.send(&[ix], &[]).await;
        if out.custom_error() == Some(core(curta_core::Error::InvalidConfig)) {
            stuck = true;
            break;
        }
        assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    }
    assert!(stuck, "the run never met a step above the allowance");
    cancel(&mut e, &run_key).await;

    // A run that never turned is cancelled whole.
    let run_key = e.open(&s).await;
    cancel(&mut e, &run_key).await;
}

#[tokio::test]
async fn a_failed_seal_leaves_the_model_writable_and_a_fix_seals_it() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let config = e.config();
    let art = artifact("stories260K");
    let m = metadata(&art);
    let keys = e
        .chain
        .init_model(&Keypair::new(), &config, &m, &owner, ROYALTY)
        .await;
    let sections = program_test::sections_of(&art);
    // Section 1 with one byte wrong, section zero not an artifact at all.
    let mut wrong = sections[1].to_vec();
    wrong[100] ^= 1;
    let mut not_zero = sections[0].to_vec();
    not_zero[0] = b'X';
    e.chain.write_section(&keys, 0, &not_zero, &owner).await;
    e.chain.write_section(&keys, 1, &wrong, &owner).await;
    e.chain.write_section(&keys, 2, sections[2], &owner).await;
    let seal = |i: usize, bytes: &[u8]| {
        ix::seal_section(
            &PROGRAM_ID,
            &keys.model,
            &keys.weights[i],
            &keys.owner,
            &protocol::section_digest(bytes),
        )
    };

    // Nothing sealed yet: the model cannot be.
    e.refused(
        &[program_test::seal_model_ix(&keys)],
        &[&owner],
        err(CurtaError::SectionsNotSealed),
    )
    .await;
    // The bytes are not what the owner means: the seal fails, and the
    // section and the model stay as they were.
    e.refused(
        &[seal(1, sections[1])],
        &[&owner],
        err(CurtaError::HashMismatch),
    )
    .await;
    // Section zero hashes to its digest but is no artifact.
    e.refused(
        &[seal(0, &not_zero)],
        &[&owner],
        core(curta_core::Error::InvalidFormat),
    )
    .await;
    let data = e.chain.data(&keys.model).await;
    let mm = ModelAccount::read(&data).unwrap();
    assert_eq!((mm.status(), mm.sealed_count()), (model::WRITING, 0));
    assert_eq!(mm.section_digest(1), &[0; 32]);

    // Fix both and seal.
    let byte = &sections[1][100..101];
    let fix = ix::write(
        &PROGRAM_ID,
        &keys.model,
        &keys.weights[1],
        &keys.owner,
        100,
        byte,
    );
    e.ok(&[fix], &[&owner]).await;
    let fix = ix::write(
        &PROGRAM_ID,
        &keys.model,
        &keys.weights[0],
        &keys.owner,
        0,
        &sections[0][..1],
    );
    e.ok(&[fix], &[&owner]).await;
    // A digest the owner got wrong fails too; the right one then seals.
    e.refused(
        &[seal(2, b"another section")],
        &[&owner],
        err(CurtaError::HashMismatch),
    )
    .await;
    for (i, bytes) in sections.iter().enumerate() {
        e.ok(&[seal(i, bytes)], &[&owner]).await;
    }
    // A sealed section is immutable.
    e.refused(
        &[seal(1, sections[1])],
        &[&owner],
        err(CurtaError::SectionSealed),
    )
    .await;
    let write = ix::write(
        &PROGRAM_ID,
        &keys.model,
        &keys.weights[1],
        &keys.owner,
        0,
        &[1],
    );
    e.refused(
        std::slice::from_ref(&write),
        &[&owner],
        err(CurtaError::SectionSealed),
    )
    .await;
    e.ok(&[program_test::seal_model_ix(&keys)], &[&owner]).await;
    e.refused(&[write], &[&owner], err(CurtaError::ModelNotWritable))
        .await;
    let data = e.chain.data(&keys.model).await;
    let mm = ModelAccount::read(&data).unwrap();
    assert_eq!(mm.status(), model::SEALED);
    for (i, bytes) in sections.iter().enumerate() {
        assert_eq!(mm.section_digest(i), &protocol::section_digest(bytes));
    }

    // The recovered model runs (at the identity sealing recorded).
    e.keys = e.chain.model_keys(&keys.model).await;
    let run_key = e.open(&spec(b"Once upon a time", 2, 0, 0)).await;
    e.run_to_end(&run_key).await;
}

#[tokio::test]
async fn a_model_is_retired_and_closed_and_its_runs_only_cancelled() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let keys = e.keys.clone();
    let s = spec(b"Once upon a time", 12, 0, 0);
    let run_key = e.open(&s).await;
    let ix0 = e.turn_ix(&run_key).await;
    e.ok(&[ix0], &[]).await;

    let close_weight = |i: usize, signer: &Pubkey| {
        ix::close_weight(&PROGRAM_ID, &keys.model, &keys.weights[i], signer)
    };
    let close_model = |signer: &Pubkey| ix::close_model(&PROGRAM_ID, &keys.model, signer);
    e.refused(
        &[close_model(&owner.pubkey())],
        &[&owner],
        err(CurtaError::WeightsStillBound),
    )
    .await;
    let stranger = Keypair::new();
    e.chain.fund(&stranger.pubkey(), 1_000_000_000).await;
    e.refused(
        &[close_weight(1, &stranger.pubkey())],
        &[&stranger],
        err(CurtaError::Unauthorized),
    )
    .await;

    // Closing one section retires the model: no run opens or turns.
    let before = e.chain.lamports(&owner.pubkey()).await;
    let mut reclaimed = 0;
    for k in keys.weights.iter().chain([&keys.model]) {
        reclaimed += e.chain.lamports(k).await;
    }
    e.ok(&[close_weight(1, &owner.pubkey())], &[&owner]).await;
    let data = e.chain.data(&keys.model).await;
    assert_eq!(ModelAccount::read(&data).unwrap().status(), model::RETIRED);
    let ix1 = e.turn_ix(&run_key).await;
    e.refused(&[ix1], &[], err(CurtaError::ModelNotSealed))
        .await;
    let opener = e.opener.insecure_clone();
    let (run_kp, create) = e
        .chain
        .create_ix(
            run::HEADER_LEN + curta_core::state_size(e.cfg, 16, 12).unwrap(),
            12 * ROYALTY,
        )
        .await;
    let open = program_test::open_run_ix(&keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.refused(
        &[create, open],
        &[&run_kp, &opener],
        err(CurtaError::ModelNotSealed),
    )
    .await;

    // The rest of the weights, then the model: all their rent comes back.
    e.ok(
        &[
            close_weight(0, &owner.pubkey()),
            close_weight(2, &owner.pubkey()),
        ],
        &[&owner],
    )
    .await;
    e.ok(&[close_model(&owner.pubkey())], &[&owner]).await;
    assert_eq!(e.chain.lamports(&owner.pubkey()).await - before, reclaimed);
    for k in keys.weights.iter().chain([&keys.model]) {
        assert_eq!(e.chain.account(k).await, None);
    }

    // The run of a closed model can only be cancelled.
    let ix2 = e.turn_ix(&run_key).await;
    e.refused(&[ix2], &[], err(CurtaError::WrongOwner)).await;
    cancel(&mut e, &run_key).await;
}

#[tokio::test]
async fn a_closed_account_cannot_be_revived_in_the_same_transaction() {
    let mut e = env().await;
    let opener = e.opener.insecure_clone();
    let payer = e.chain.payer().pubkey();
    let s = spec(b"Once upon a time", 4, 0, 0);
    let size = run::HEADER_LEN + curta_core::state_size(e.cfg, s.prompt.len(), 4).unwrap();
    let (run_kp, create) = e.chain.create_ix(size, 4 * ROYALTY).await;
    let open = program_test::open_run_ix(&e.keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.ok(&[create, open.clone()], &[&run_kp, &opener]).await;
    let ix0 = e.turn_ix(&run_kp.pubkey()).await;
    e.ok(&[ix0], &[]).await;

    // Close, refund, reopen over the old buffers: the closed account is
    // the System program's, empty, and can be nothing else.
    let close = program_test::close_run_ix(&run_kp.pubkey(), &opener.pubkey());
    let held = e.chain.lamports(&run_kp.pubkey()).await;
    let refund = transfer(&payer, &run_kp.pubkey(), held);
    e.refused(
        &[close.clone(), refund, open.clone()],
        &[&run_kp, &opener],
        err(CurtaError::WrongOwner),
    )
    .await;
    e.refused(
        &[close.clone(), open],
        &[&run_kp, &opener],
        err(CurtaError::WrongOwner),
    )
    .await;

    // The same for a model: closed, it cannot be initialized again.
    let owner = e.owner.insecure_clone();
    let art = artifact("stories260K");
    let params = program_test::model_params(&metadata(&art), ROYALTY);
    let (model_kp, create) = e.chain.create_ix(model::len(3), 0).await;
    let init = ix::init_model(
        &PROGRAM_ID,
        &e.config(),
        &model_kp.pubkey(),
        &owner.pubkey(),
        &params,
    );
    e.ok(&[create, init.clone()], &[&model_kp, &owner]).await;
    let rent = e.chain.lamports(&model_kp.pubkey()).await;
    let close_model = ix::close_model(&PROGRAM_ID, &model_kp.pubkey(), &owner.pubkey());
    let refund = transfer(&payer, &model_kp.pubkey(), rent);
    e.refused(
        &[close_model.clone(), refund, init],
        &[&model_kp, &owner],
        err(CurtaError::WrongOwner),
    )
    .await;

    // Closed for real, both are gone.
    e.ok(&[close], &[&opener]).await;
    e.ok(&[close_model], &[&owner]).await;
    assert_eq!(e.chain.account(&run_kp.pubkey()).await, None);
    assert_eq!(e.chain.account(&model_kp.pubkey()).await, None);
}

#[tokio::test]
async fn a_run_is_never_its_own_opener_and_unopened_accounts_are_reclaimed() {
    let mut e = env().await;
    let opener = e.opener.insecure_clone();
    let s = spec(b"Once upon a time", 4, 0, 0);
    let size = run::HEADER_LEN + curta_core::state_size(e.cfg, s.prompt.len(), 4).unwrap();

    // Opened by itself, a run would pay itself back on closing and be left
    // funded and untagged: refused.
    let (run_kp, create) = e.chain.create_ix(size, 4 * ROYALTY).await;
    let own = program_test::open_run_ix(&e.keys, &run_kp.pubkey(), &run_kp.pubkey(), &s);
    e.refused(
        &[create, own],
        &[&run_kp],
        err(CurtaError::DuplicateAccount),
    )
    .await;
    // Opened properly, it cannot be closed into itself either.
    let run_key = e.open(&s).await;
    let mut into_itself = program_test::close_run_ix(&run_key, &run_key);
    into_itself.accounts[1].is_signer = false;
    e.refused(&[into_itself], &[], err(CurtaError::MissingSigner))
        .await;

    // An account created for the program and never initialized is reclaimed
    // by its own signature, and by nothing else.
    let stray = e.chain.create(size, 4 * ROYALTY).await;
    let recipient = opener.pubkey();
    let mut unsigned = ix::reclaim(&PROGRAM_ID, &stray.pubkey(), &recipient);
    unsigned.accounts[0].is_signer = false;
    e.refused(&[unsigned], &[], err(CurtaError::MissingSigner))
        .await;
    e.refused(
        &[ix::reclaim(&PROGRAM_ID, &stray.pubkey(), &stray.pubkey())],
        &[&stray],
        err(CurtaError::DuplicateAccount),
    )
    .await;
    let held = e.chain.lamports(&stray.pubkey()).await;
    let before = e.chain.lamports(&recipient).await;
    e.ok(
        &[ix::reclaim(&PROGRAM_ID, &stray.pubkey(), &recipient)],
        &[&stray],
    )
    .await;
    assert_eq!(e.chain.lamports(&recipient).await - before, held);
    assert_eq!(e.chain.account(&stray.pubkey()).await, None);
    // An initialized account is not reclaimable, even by its own key.
    let (run_kp, create) = e.chain.create_ix(size, 4 * ROYALTY).await;
    let open = program_test::open_run_ix(&e.keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.ok(&[create, open], &[&run_kp, &opener]).await;
    e.refused(
        &[ix::reclaim(&PROGRAM_ID, &run_kp.pubkey(), &recipient)],
        &[&run_kp],
        err(CurtaError::AlreadyInitialized),
    )
    .await;
}

/// A model no transaction could bind or seal whole: seven layers of about
/// 10 MB, one section each, nine sections and over 64 MiB in all (the most
/// account data one transaction may load).
const WIDE: Config = Config {
    dim: 1024,
    hidden_dim: 2000,
    n_layers: 7,
    n_heads: 8,
    n_kv_heads: 8,
    vocab_size: 512,
    seq_len: 16,
    charges: curta_core::format::ChargeTable::Specification,
    shared_classifier: true,
};

/// A llama2.c checkpoint of `c` whose every weight is zero.
fn zero_checkpoint(c: &Config) -> Vec<u8> {
    let (d, h, l, v) = (
        c.dim as usize,
        c.hidden_dim as usize,
        c.n_layers as usize,
        c.vocab_size as usize,
    );
    let head = d / c.n_heads as usize;
    let floats = v * d + l * (2 * d + 4 * d * d + 3 * d * h) + d + c.seq_len as usize * head;
    let mut out = Vec::with_capacity(28 + 4 * floats);
    for x in [
        c.dim,
        c.hidden_dim,
        c.n_layers,
        c.n_heads,
        c.n_kv_heads,
        c.vocab_size,
        c.seq_len,
    ] {
        out.extend_from_slice(&(x as i32).to_le_bytes());
    }
    out.resize(28 + 4 * floats, 0);
    out
}

#[tokio::test]
async fn a_model_with_more_sections_than_one_transaction_can_hold() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let config = e.config();
    let layout = Layout::new(&WIDE).unwrap();
    assert_eq!(layout.section_count(), 9);
    let art = convert(
        &zero_checkpoint(&WIDE),
        &synthetic_tokenizer(WIDE.vocab_size),
    )
    .unwrap();
    let m = metadata(&art);
    let total: usize = (0..m.section_count()).map(|i| m.section_len(i)).sum();
    assert!(total > 64 << 20, "{total} bytes of weights");

    // Bound one section per transaction (each within 1,232 bytes and the
    // loaded-data limit: `Chain::send` checks both).
    let keys = e
        .chain
        .init_model(&Keypair::new(), &config, &m, &owner, 0)
        .await;
    // Section zero is written; the matrix sections keep their zeros, and
    // are sealed as such.
    let zero = section(&art, &m, 0).to_vec();
    e.chain.write_section(&keys, 0, &zero, &owner).await;
    let big = layout.layer_section(0) as usize;
    let len = m.section_len(big);
    let seal_big = ix::seal_section(
        &PROGRAM_ID,
        &keys.model,
        &keys.weights[big],
        &keys.owner,
        &protocol::section_digest(&vec![0; len]),
    );
    // The seal goes on across calls, and a write below its progress
    // starts it over.
    e.ok(&[seal_big], &[&owner]).await;
    let hashed = |data: &[u8]| WeightAccount::read(data).unwrap().hashed();
    assert_eq!(
        hashed(&e.chain.data(&keys.weights[big]).await),
        SEAL_BYTES_PER_CALL as u64
    );
    let write = |offset: u64, byte: u8| {
        ix::write(
            &PROGRAM_ID,
            &keys.model,
            &keys.weights[big],
            &keys.owner,
            offset,
            &[byte],
        )
    };
    e.ok(&[write(3 * HASH_CHUNK as u64, 0)], &[&owner]).await;
    assert_eq!(
        hashed(&e.chain.data(&keys.weights[big]).await),
        SEAL_BYTES_PER_CALL as u64
    );
    e.ok(&[write(HASH_CHUNK as u64, 0)], &[&owner]).await;
    assert_eq!(hashed(&e.chain.data(&keys.weights[big]).await), 0);
    for i in 0..m.section_count() {
        let bytes = if i == 0 {
            zero.clone()
        } else {
            vec![0; m.section_len(i)]
        };
        e.chain.seal_section(&keys, i, &bytes, &owner).await;
    }
    e.ok(&[program_test::seal_model_ix(&keys)], &[&owner]).await;
    let data = e.chain.data(&keys.model).await;
    let mm = ModelAccount::read(&data).unwrap();
    assert_eq!((mm.status(), mm.section_count()), (model::SEALED, 9));
    assert_eq!(mm.flags() & FLAG_SHARED_CLASSIFIER, FLAG_SHARED_CLASSIFIER);

    // Its runs turn with at most two matrix sections each.
    e.keys = e.chain.model_keys(&keys.model).await;
    e.cfg = WIDE;
    let run_key = e.open(&spec(b"a", 1, 0, 0)).await;
    for _ in 0..3 {
        let ix = e.turn_ix(&run_key).await;
        assert!(ix.accounts.len() <= protocol::accounts::TURN.len() + 2);
        e.ok(&[ix], &[]).await;
    }
}

/// The stories260K artifact with one weight of section 1 changed: the same
/// shape and price, other weights.
fn other_weights(art: &[u8]) -> Vec<u8> {
    let m = metadata(art);
    let mut other = art.to_vec();
    other[m.section_offset(1) + 40] ^= 0x55;
    other
}

/// Closes every weight account of a model, then the model, as its owner.
async fn close_whole_model(e: &mut Env, keys: &ix::ModelKeys, owner: &Keypair) {
    for w in &keys.weights {
        let close = ix::close_weight(&PROGRAM_ID, &keys.model, w, &owner.pubkey());
        e.ok(&[close], &[owner]).await;
    }
    let close = ix::close_model(&PROGRAM_ID, &keys.model, &owner.pubkey());
    e.ok(&[close], &[owner]).await;
    assert_eq!(e.chain.account(&keys.model).await, None);
}

#[tokio::test]
async fn a_model_created_again_at_its_address_never_turns_an_older_run() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let config = e.config();
    let art = artifact("stories260K");
    let model_kp = Keypair::new();
    let keys = e
        .chain
        .upload_model(&model_kp, &config, &art, &owner, ROYALTY)
        .await;
    let data = e.chain.data(&keys.model).await;
    let sealed = ModelAccount::read(&data).unwrap();
    assert_eq!(
        sealed.model_identity(),
        &protocol::model_identity(keys.model.as_array(), &data)
    );
    assert_eq!(keys.identity, *sealed.model_identity());

    // A victim opens a run, and it turns once.
    e.keys = keys.clone();
    let s = spec(b"Once upon a time", 12, 0, 0);
    let size = curta_core::state_size(e.cfg, s.prompt.len(), s.max_tokens).unwrap();
    let opener = e.opener.insecure_clone();
    let (run_kp, create) = e
        .chain
        .create_ix(run::HEADER_LEN + size, ROYALTY * 12)
        .await;
    let open = program_test::open_run_ix(&keys, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.ok(&[create, open], &[&run_kp, &opener]).await;
    let run_key = run_kp.pubkey();
    let data = e.chain.data(&run_key).await;
    assert_eq!(
        RunAccount::read(&data).unwrap().model_identity(),
        &keys.identity
    );
    let first = e.turn_ix(&run_key).await;
    e.ok(&[first], &[]).await;

    // The model's key holder closes it and creates it again at the same
    // address, with other weights, and seals it.
    close_whole_model(&mut e, &keys, &owner).await;
    let swapped = e
        .chain
        .upload_model(&model_kp, &config, &other_weights(&art), &owner, ROYALTY)
        .await;
    assert_eq!(swapped.model, keys.model);
    assert_ne!(swapped.identity, keys.identity);

    // The victim's run never turns on them, whoever sends the turn and
    // whatever weight accounts it names; it can only be closed, with every
    // lamport back.
    e.keys = swapped.clone();
    let turn = e.turn_ix(&run_key).await;
    e.refused(&[turn], &[], err(CurtaError::ModelChanged)).await;
    let state = e.state(&run_key).await;
    assert_eq!(StateInfo::read(&state).unwrap().turns, 1);
    cancel(&mut e, &run_key).await;

    // An opener who quoted the old model cannot open on the new one, nor
    // at a higher royalty: the owner raised it when creating it again.
    close_whole_model(&mut e, &swapped, &owner).await;
    let pricier = e
        .chain
        .upload_model(&model_kp, &config, &art, &owner, 2 * ROYALTY)
        .await;
    for (seen, code) in [
        (keys.clone(), CurtaError::ModelChanged),
        (
            ix::ModelKeys {
                identity: pricier.identity,
                ..keys.clone()
            },
            CurtaError::RoyaltyMismatch,
        ),
    ] {
        let (run_kp, create) = e
            .chain
            .create_ix(run::HEADER_LEN + size, 2 * ROYALTY * 12)
            .await;
        let open = program_test::open_run_ix(&seen, &run_kp.pubkey(), &opener.pubkey(), &s);
        e.refused(&[create, open], &[&run_kp, &opener], err(code))
            .await;
    }
    // What it sees now is what it pays.
    let (run_kp, create) = e
        .chain
        .create_ix(run::HEADER_LEN + size, 2 * ROYALTY * 12)
        .await;
    let open = program_test::open_run_ix(&pricier, &run_kp.pubkey(), &opener.pubkey(), &s);
    e.ok(&[create, open], &[&run_kp, &opener]).await;
    let data = e.chain.data(&run_kp.pubkey()).await;
    let r = RunAccount::read(&data).unwrap();
    assert_eq!(
        (r.royalty(), r.deposited()),
        (2 * ROYALTY, 2 * ROYALTY * 12)
    );
    assert_eq!(r.model_identity(), &pricier.identity);
}

#[tokio::test]
async fn the_opener_states_the_royalty_and_the_model_it_accepts() {
    let mut e = env().await;
    let opener = e.opener.insecure_clone();
    let s = spec(b"Once upon a time", 4, 0, 0);
    let size = curta_core::state_size(e.cfg, s.prompt.len(), s.max_tokens).unwrap();
    let mut other_identity = e.keys.identity;
    other_identity[31] ^= 1;
    for (seen, code) in [
        (
            ix::ModelKeys {
                royalty: ROYALTY - 1,
                ..e.keys.clone()
            },
            CurtaError::RoyaltyMismatch,
        ),
        (
            ix::ModelKeys {
                royalty: ROYALTY + 1,
                ..e.keys.clone()
            },
            CurtaError::RoyaltyMismatch,
        ),
        (
            ix::ModelKeys {
                identity: other_identity,
                ..e.keys.clone()
            },
            CurtaError::ModelChanged,
        ),
    ] {
        let (run_kp, create) = e
            .chain
            .create_ix(run::HEADER_LEN + size, 4 * (ROYALTY + 1))
            .await;
        let open = program_test::open_run_ix(&seen, &run_kp.pubkey(), &opener.pubkey(), &s);
        e.refused(&[create, open], &[&run_kp, &opener], err(code))
            .await;
    }
}

#[tokio::test]
async fn an_account_with_a_stray_byte_is_never_initialized() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let art = artifact("stories260K");
    let m = metadata(&art);
    // Bytes its creator staged (`write_prompt` writes any untagged account
    // of the program's, from offset 384) in what becomes a weight account.
    let keys = e
        .chain
        .init_model(&Keypair::new(), &e.config(), &m, &owner, ROYALTY)
        .await;
    let close = ix::close_weight(&PROGRAM_ID, &keys.model, &keys.weights[1], &owner.pubkey());
    e.ok(&[close], &[&owner]).await;
    let len = weight::HEADER_LEN + m.section_len(1);
    for offset in [0, 1_023] {
        let (w, create) = e.chain.create_ix(len, 0).await;
        let stray = ix::write_prompt(&PROGRAM_ID, &w.pubkey(), offset, &[7]);
        e.ok(&[create, stray], &[&w]).await;
        let bind = ix::bind_weight(&PROGRAM_ID, &keys.model, &w.pubkey(), &owner.pubkey(), 1);
        e.refused(&[bind], &[&w, &owner], err(CurtaError::AlreadyInitialized))
            .await;
        // Its creator gets its lamports back.
        let recover = ix::reclaim(&PROGRAM_ID, &w.pubkey(), &owner.pubkey());
        e.ok(&[recover], &[&w]).await;
    }
    // A clean one binds.
    let (w, create) = e.chain.create_ix(len, 0).await;
    let bind = ix::bind_weight(&PROGRAM_ID, &keys.model, &w.pubkey(), &owner.pubkey(), 1);
    e.ok(&[create, bind], &[&w, &owner]).await;

    // A model account large enough to stage into (9 sections: 160 + 72 x 9
    // bytes) with a stray byte among its section entries.
    let big = WIDE;
    let sections = Layout::new(&big).unwrap().section_count() as usize;
    assert!(model::len(sections) > run::PROMPT);
    let params = ix::ModelParams {
        royalty: ROYALTY,
        config: big,
        flags: FLAG_SHARED_CLASSIFIER,
        zero_len: 4_096,
    };
    let (model_kp, create) = e.chain.create_ix(model::len(sections), 0).await;
    let stray = ix::write_prompt(&PROGRAM_ID, &model_kp.pubkey(), 100, &[1]);
    e.ok(&[create, stray], &[&model_kp]).await;
    let config = e.config();
    let init =
        |model: &Pubkey| ix::init_model(&PROGRAM_ID, &config, model, &owner.pubkey(), &params);
    let take = init(&model_kp.pubkey());
    e.refused(
        &[take],
        &[&model_kp, &owner],
        err(CurtaError::AlreadyInitialized),
    )
    .await;
    let (clean, create) = e.chain.create_ix(model::len(sections), 0).await;
    let ok = init(&clean.pubkey());
    e.ok(&[create, ok], &[&clean, &owner]).await;
    let data = e.chain.data(&clean.pubkey()).await;
    let mm = ModelAccount::read(&data).unwrap();
    assert_eq!((mm.bound(), mm.sealed_count()), (0, 0));
    assert!(data[model::HEADER_LEN..]
        .chunks(model::ENTRY_LEN)
        .all(|entry| entry[..32] == [0; 32] && entry[40..] == [0; 32]));
}

/// A model's charge table is its section zero's: a model created for the
/// measured table cannot seal a section zero planned with the
/// specification's, and seals the measured one.
#[tokio::test]
async fn a_model_seals_only_the_section_zero_of_its_own_charge_table() {
    let mut e = env().await;
    let owner = e.owner.insecure_clone();
    let config = e.config();
    let (spec, measured) = (artifact("stories260K"), artifact("stories260K+measured"));
    let keys = e
        .chain
        .init_model(
            &Keypair::new(),
            &config,
            &metadata(&measured),
            &owner,
            ROYALTY,
        )
        .await;
    let data = e.chain.data(&keys.model).await;
    let flags = ModelAccount::read(&data).unwrap().flags();
    assert_eq!(flags & curta_core::format::FLAG_MEASURED_CHARGES, 2);
    let zero = program_test::sections_of(&spec)[0].to_vec();
    e.chain.write_section(&keys, 0, &zero, &owner).await;
    let seal = ix::seal_section(
        &PROGRAM_ID,
        &keys.model,
        &keys.weights[0],
        &keys.owner,
        &protocol::section_digest(&zero),
    );
    e.refused(&[seal], &[&owner], err(CurtaError::WrongConfig))
        .await;
    let zero = program_test::sections_of(&measured)[0];
    e.chain.write_section(&keys, 0, zero, &owner).await;
    e.chain.seal_section(&keys, 0, zero, &owner).await;
}

#[tokio::test]
async fn a_closed_config_returns_its_rent_and_leaves_every_other_account_closable() {
    let mut e = env().await;
    let (admin, owner) = (e.admin.insecure_clone(), e.owner.insecure_clone());
    let (keys, config_key) = (e.keys.clone(), e.config());
    let s = spec(b"Once upon a time", 12, 0, 0);
    let run_key = e.open(&s).await;
    let turn = e.turn_ix(&run_key).await;
    e.ok(&[turn], &[]).await;

    // Only the admin closes it, and only into itself.
    let close = |to: &Pubkey| ix::close_config(&PROGRAM_ID, &config_key, to);
    e.refused(
        &[close(&owner.pubkey())],
        &[&owner],
        err(CurtaError::Unauthorized),
    )
    .await;
    let held = e.chain.lamports(&config_key).await;
    assert_eq!(held, e.chain.rent(config::LEN).await);
    let before = e.chain.lamports(&admin.pubkey()).await;
    e.ok(&[close(&admin.pubkey())], &[&admin]).await;
    assert_eq!(e.chain.lamports(&admin.pubkey()).await - before, held);
    assert_eq!(e.chain.account(&config_key).await, None);

    // Its model's runs neither turn nor open.
    let turn = e.turn_ix(&run_key).await;
    e.refused(&[turn], &[], err(CurtaError::WrongOwner)).await;
    let (run_kp, create) = e
        .chain
        .create_ix(
            run::HEADER_LEN + curta_core::state_size(e.cfg, 16, 12).unwrap(),
            12 * ROYALTY,
        )
        .await;
    let open = program_test::open_run_ix(&keys, &run_kp.pubkey(), &e.opener.pubkey(), &s);
    let opener = e.opener.insecure_clone();
    e.refused(
        &[create, open],
        &[&run_kp, &opener],
        err(CurtaError::WrongOwner),
    )
    .await;

    // The run is cancelled with its funds; the weights and the model close
    // with theirs.
    cancel(&mut e, &run_key).await;
    let before = e.chain.lamports(&owner.pubkey()).await;
    let mut held = 0;
    for k in keys.weights.iter().chain([&keys.model]) {
        held += e.chain.lamports(k).await;
    }
    close_whole_model(&mut e, &keys, &owner).await;
    assert_eq!(e.chain.lamports(&owner.pubkey()).await - before, held);
}
