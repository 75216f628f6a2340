//! Crank fees on the SBF VM: each turn pays its sender from the run's
//! deposit while it lasts, every balance change exact; the cranker the
//! program refuses; deposits that overflow; and a finished run read through
//! the documented interface (`protocol::run::read_finished`).

mod common;

use common::{env, err, spec, Env, ROYALTY};
use curta_client::instructions as ix;
use curta_core::client::replay::{initial_state, replay};
use curta_core::planner::CHARGES;
use curta_core::protocol::run::{self, CrankFee, Expected, Refusal};
use curta_core::protocol::{CurtaError, RunAccount};
use curta_core::{output_text, output_tokens, StateInfo};
use curta_replay::manifest::RunSpec;
use curta_replay::models::artifact;
use curta_replay::program_test::{self, PROGRAM_ID};
use solana_account::Account;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

const FEE: u64 = 7_000;

/// The turns a run takes: the native replay's.
fn turns_of(s: &RunSpec) -> u64 {
    let art = artifact("stories260K");
    let start = initial_state(&art, &program_test::run_params(s)).unwrap();
    replay(&art, &start, CHARGES.allowance).unwrap().steps.len() as u64
}

/// Creates and opens a run paying `crank`, escrowing every token's royalty.
async fn open_paying(e: &mut Env, s: &RunSpec, crank: &CrankFee) -> Pubkey {
    open_measured(e, s, crank).await.0
}

/// `open_paying`, and the compute units `open_run` took.
async fn open_measured(e: &mut Env, s: &RunSpec, crank: &CrankFee) -> (Pubkey, u64) {
    let opener = e.opener.insecure_clone();
    let (keys, cfg) = (e.keys.clone(), e.cfg);
    let escrow = ROYALTY * s.max_tokens as u64;
    let (run_key, out) = e
        .chain
        .open_run(&keys, &cfg, s, &opener, escrow, crank)
        .await;
    assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
    (run_key, out.program_cu)
}

/// A funded wallet to crank with.
async fn wallet(e: &mut Env) -> Keypair {
    let k = Keypair::new();
    e.chain.fund(&k.pubkey(), 1_000_000_000).await;
    k
}

#[tokio::test]
async fn each_turn_pays_its_sender_until_the_deposit_runs_out() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 4, 0, 0);
    let turns = turns_of(&s);
    assert!(turns > 4, "{turns} turns");
    // Enough for all but the last two turns and part of one more.
    let crank = CrankFee {
        fee: FEE,
        deposit: FEE * (turns - 3) + 3_000,
    };
    let run_key = open_paying(&mut e, &s, &crank).await;
    let cranker = wallet(&mut e).await;
    let (keys, cfg) = (e.keys.clone(), e.cfg);
    let owner = keys.owner;
    let rent = e.chain.lamports(&run_key).await - ROYALTY * 4 - crank.deposit;

    let mut earned = 0;
    for t in 0..turns {
        let before = [
            e.chain.lamports(&run_key).await,
            e.chain.lamports(&owner).await,
            e.chain.lamports(&cranker.pubkey()).await,
        ];
        let out = e
            .chain
            .turn_by(&keys, &run_key, &cfg, CHARGES.allowance, &cranker)
            .await;
        assert_eq!(out.result, Ok(()), "turn {}: {:#?}", t + 1, out.logs);
        let want = run::crank_payment(crank.fee, crank.deposit, t);
        let receipt = &out.receipts()[0];
        assert_eq!(receipt.event.crank_paid, want, "turn {}", t + 1);
        let royalty = receipt.event.paid;
        let after = [
            e.chain.lamports(&run_key).await,
            e.chain.lamports(&owner).await,
            e.chain.lamports(&cranker.pubkey()).await,
        ];
        // The payer paid the transaction's fee: the run loses exactly what
        // the owner and the cranker gain.
        assert_eq!(before[0] - after[0], royalty + want, "run, turn {}", t + 1);
        assert_eq!(after[1] - before[1], royalty, "owner, turn {}", t + 1);
        assert_eq!(after[2] - before[2], want, "cranker, turn {}", t + 1);
        earned += want;
        let data = e.chain.data(&run_key).await;
        assert_eq!(RunAccount(&data).crank_paid(), earned);
    }
    // The last two turns went unpaid; the deposit is spent exactly.
    assert_eq!(earned, crank.deposit);
    assert_eq!(run::crank_payment(crank.fee, crank.deposit, turns - 1), 0);
    let data = e.chain.data(&run_key).await;
    let r = RunAccount(&data);
    assert!(StateInfo::read(r.state()).unwrap().complete);
    // What closing returns: the rent and the unspent escrow, no more.
    assert_eq!(
        e.chain.lamports(&run_key).await,
        rent + r.escrow(),
        "the run holds its rent and escrow"
    );
}

#[tokio::test]
async fn a_run_without_a_fee_pays_no_one() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 2, 0, 0);
    let run_key = open_paying(&mut e, &s, &CrankFee::default()).await;
    let cranker = wallet(&mut e).await;
    let (keys, cfg) = (e.keys.clone(), e.cfg);
    let before = e.chain.lamports(&cranker.pubkey()).await;
    let out = e
        .chain
        .turn_by(&keys, &run_key, &cfg, CHARGES.allowance, &cranker)
        .await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    assert_eq!(out.receipts()[0].event.crank_paid, 0);
    assert_eq!(e.chain.lamports(&cranker.pubkey()).await, before);
    // With no fee due, the model's owner may send turns too.
    let owner = e.owner.insecure_clone();
    let out = e
        .chain
        .turn_by(&keys, &run_key, &cfg, CHARGES.allowance, &owner)
        .await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
}

#[tokio::test]
async fn the_cranker_is_a_signing_wallet_other_than_the_owner() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 2, 0, 0);
    let crank = CrankFee::for_turns(FEE, turns_of(&s));
    let run_key = open_paying(&mut e, &s, &crank).await;
    let good = e.turn_ix(&run_key).await;
    const CRANKER: usize = 5;

    // Not signing: the run named as its own fee's recipient.
    let mut wrong = good.clone();
    wrong.accounts[CRANKER].pubkey = run_key;
    wrong.accounts[CRANKER].is_signer = false;
    e.refused(&[wrong], &[], err(CurtaError::MissingSigner))
        .await;
    // Read-only (a wallet other than the fee payer, which is writable in
    // every message).
    let other = wallet(&mut e).await;
    let mut wrong = good.clone();
    wrong.accounts[CRANKER].pubkey = other.pubkey();
    wrong.accounts[CRANKER].is_writable = false;
    e.refused(&[wrong], &[&other], err(CurtaError::NotWritable))
        .await;
    // An account of the program's (as the run, the model, the config and
    // the weight accounts are), signing.
    let held = Keypair::new();
    e.chain.ctx.set_account(
        &held.pubkey(),
        &Account {
            lamports: 1_000_000_000,
            data: vec![],
            owner: PROGRAM_ID,
            executable: false,
            rent_epoch: 0,
        }
        .into(),
    );
    let mut wrong = good.clone();
    wrong.accounts[CRANKER].pubkey = held.pubkey();
    e.refused(&[wrong], &[&held], err(CurtaError::InvalidCranker))
        .await;
    // The model's owner: it is paid the royalty already.
    let owner = e.owner.insecure_clone();
    let mut wrong = good.clone();
    wrong.accounts[CRANKER].pubkey = owner.pubkey();
    e.refused(&[wrong], &[&owner], err(CurtaError::DuplicateAccount))
        .await;
    // A wallet with nothing, which a fee would leave below its rent.
    let empty = Keypair::new();
    let mut wrong = good.clone();
    wrong.accounts[CRANKER].pubkey = empty.pubkey();
    e.refused(&[wrong], &[&empty], err(CurtaError::InvalidCranker))
        .await;
    // The payer, as every client sends it.
    e.ok(&[good], &[]).await;
}

#[tokio::test]
async fn deposits_that_overflow_are_refused_at_opening() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 4, 0, 0);
    let size = curta_core::state_size(e.cfg, s.prompt.len(), s.max_tokens).unwrap();
    for deposit in [u64::MAX, u64::MAX - ROYALTY * 4 + 1] {
        let (run_kp, create) = e.chain.create_ix(run::HEADER_LEN + size, ROYALTY * 4).await;
        let open = ix::open_run(
            &PROGRAM_ID,
            &e.keys,
            &run_kp.pubkey(),
            &e.opener.pubkey(),
            &program_test::run_params(&s),
            &CrankFee { fee: 1, deposit },
            0,
        );
        let opener = e.opener.insecure_clone();
        e.refused(
            &[create, open],
            &[&run_kp, &opener],
            err(CurtaError::EscrowTooSmall),
        )
        .await;
    }
    // A deposit the account does not hold.
    let (run_kp, create) = e
        .chain
        .create_ix(run::HEADER_LEN + size, ROYALTY * 4 + 999)
        .await;
    let open = ix::open_run(
        &PROGRAM_ID,
        &e.keys,
        &run_kp.pubkey(),
        &e.opener.pubkey(),
        &program_test::run_params(&s),
        &CrankFee {
            fee: 500,
            deposit: 1_000,
        },
        0,
    );
    let opener = e.opener.insecure_clone();
    e.refused(
        &[create, open],
        &[&run_kp, &opener],
        err(CurtaError::EscrowTooSmall),
    )
    .await;
}

#[tokio::test]
async fn a_finished_run_is_read_through_the_documented_checks() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 6, 0, 0);
    let run_key = open_paying(&mut e, &s, &CrankFee::default()).await;
    let opener = e.opener.pubkey();
    let identity = e.keys.identity;
    let expected = Expected {
        program_id: PROGRAM_ID.as_array(),
        model_identity: &identity,
        opener: opener.as_array(),
    };
    let read = |data: &[u8], owner: &Pubkey| {
        run::read_finished(owner.as_array(), data, &expected)
            .map(|f| (f.tokens.to_vec(), f.text.to_vec()))
    };

    let data = e.chain.data(&run_key).await;
    assert_eq!(read(&data, &PROGRAM_ID), Err(Refusal::NotFinished));
    e.run_to_end(&run_key).await;
    let data = e.chain.data(&run_key).await;
    let state = &data[run::HEADER_LEN..];
    // The output where the state's layout puts it, read without the model.
    let (tokens, text) = read(&data, &PROGRAM_ID).expect("a finished run");
    assert_eq!(tokens, output_tokens(e.cfg, state));
    assert_eq!(text, output_text(e.cfg, state));
    assert!(!text.is_empty());
    // Why it stopped: its 6 tokens, no end token among them.
    let finished = run::read_finished(PROGRAM_ID.as_array(), &data, &expected).unwrap();
    assert_eq!(finished.reason, run::FinishReason::MaxTokens);

    // The checks, each on its own.
    assert_eq!(read(&data, &Pubkey::new_unique()), Err(Refusal::NotCurta));
    let other_opener = Pubkey::new_unique();
    let mut wrong = expected;
    wrong.opener = other_opener.as_array();
    assert_eq!(
        run::read_finished(PROGRAM_ID.as_array(), &data, &wrong).err(),
        Some(Refusal::OtherOpener)
    );
    let mut wrong = expected;
    wrong.model_identity = &[9; 32];
    assert_eq!(
        run::read_finished(PROGRAM_ID.as_array(), &data, &wrong).err(),
        Some(Refusal::OtherModel)
    );
    let config = e.chain.data(&e.keys.config_account).await;
    assert_eq!(read(&config, &PROGRAM_ID), Err(Refusal::NotARun));
    // Offsets that point past the account: not a run, never a panic.
    let mut bent = data.clone();
    bent[run::TEXT_AT..run::TEXT_AT + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(read(&bent, &PROGRAM_ID), Err(Refusal::NotARun));
}

/// What paying a fee costs in compute units, printed for the notes: the
/// same turns of two runs, one paying its sender and one not.
#[tokio::test]
async fn what_a_fee_costs_a_turn_in_compute_units() {
    let mut e = env().await;
    let s = spec(b"Once upon a time", 2, 0, 0);
    let crank = CrankFee::for_turns(FEE, turns_of(&s));
    let (paying, paying_cu) = open_measured(&mut e, &s, &crank).await;
    let free_spec = spec(b"Once upon a time", 2, 0, 1);
    let (free, free_cu) = open_measured(&mut e, &free_spec, &CrankFee::default()).await;
    println!("open_run, a 16-byte prompt and 2 tokens: {paying_cu} compute units with a crank fee, {free_cu} without");
    let cranker = wallet(&mut e).await;
    let (keys, cfg) = (e.keys.clone(), e.cfg);
    let mut added = vec![];
    for _ in 0..3 {
        let mut cu = [0u64; 2];
        for (c, run_key) in cu.iter_mut().zip([paying, free]) {
            let out = e
                .chain
                .turn_by(&keys, &run_key, &cfg, CHARGES.allowance, &cranker)
                .await;
            assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
            *c = out.program_cu;
        }
        added.push(cu[0] as i64 - cu[1] as i64);
    }
    println!("compute units a crank fee adds to a turn: {added:?}");
    // The payment is a rent read and two balance writes: a few hundred.
    assert!(added.iter().all(|&a| (1..2_000).contains(&a)), "{added:?}");
}
