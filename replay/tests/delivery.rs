//! `deliver` on the SBF VM, Curta beside a test-only callee
//! (`replay/programs/callback-probe`): stories260K runs opened by a wallet
//! with `open_run_with` naming the probe as callback, a refund wallet, a
//! delivery fee and a crank fee, turned to completion, then delivered.
//!
//! - A delivery by a fourth wallet: the probe ran and saw the finished run,
//!   the run is gone, every lamport exact; a second delivery (in the same
//!   transaction or a later one) fails and moves nothing. Its compute units,
//!   Curta's own beside the probe's, against `DELIVER_CU`.
//! - A delivery before the run finished (`RunNotFinished`), of a run without
//!   a callback (`NoCallback`).
//! - Callbacks that fail, burn the budget the plan asks for, reenter Curta
//!   or take a wallet's lamports: each fails the transaction; the run keeps
//!   every lamport, the deliverer pays only the fee, and the opener closes
//!   the run and gets everything back.
//! - A callback that pays into the run: the refund address gets it too. The
//!   refund address delivering its own run gets the fee and the rest.
//! - The accounts `deliver` refuses (`WrongCallback`, `DuplicateAccount`,
//!   `InvalidCranker`, ...) and the records `open_run` refuses
//!   (`InvalidCallback`), nothing created.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use common::{err, spec, Env, ROYALTY};
use curta_client::instructions::{self as ix, Delivery as Funding};
use curta_core::client::budget::COMPUTE_BUDGET_OVERHEAD;
use curta_core::client::delivery::{self, Delivery, DELIVER_CU};
use curta_core::client::receipt::program_units;
use curta_core::client::replay::{initial_state, replay};
use curta_core::planner::CHARGES;
use curta_core::protocol::callback::{self, CallbackAccount, CallbackInit};
use curta_core::protocol::run::{self, CrankFee, Expected};
use curta_core::protocol::{CurtaError, RunAccount};
use curta_core::StateInfo;
use curta_replay::manifest::RunSpec;
use curta_replay::models::{artifact, metadata};
use curta_replay::program_test::{self, Chain, PROGRAM_ID};
use probe::*;
use solana_account::{Account, AccountSharedData};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};

/// The probe's modes and errors (`replay/programs/callback-probe`), which
/// this graph cannot depend on (pinocchio 0.12).
mod probe {
    use solana_pubkey::Pubkey;

    /// Where the tests load the probe.
    pub const PROBE_ID: Pubkey = Pubkey::new_from_array([0xCB; 32]);
    pub const RECORD: u8 = 0;
    pub const FAIL: u8 = 1;
    pub const BURN: u8 = 2;
    pub const REENTER: u8 = 3;
    pub const STEAL: u8 = 4;
    pub const TIP: u8 = 5;
    /// Mode 1's error.
    pub const FAILED: u32 = 7001;
    /// The length of the account mode 0 writes: text length, token count.
    pub const RECORD_LEN: usize = 8;
}

const SOL: u64 = 1_000_000_000;
const PROMPT: &[u8] = b"Once upon a time";
const MAX_TOKENS: u32 = 3;
const CRANK_FEE: u64 = 5_000;
const DELIVERY_FEE: u64 = 25_000;
/// The compute units the records ask for, beside `deliver`'s own.
const CALLBACK_CU: u32 = 30_000;

fn the_spec() -> RunSpec {
    spec(PROMPT, MAX_TOKENS, 0, 0)
}

/// The turns a run of `the_spec` takes: the native replay's.
fn turns() -> u64 {
    let art = artifact("stories260K");
    let start = initial_state(&art, &program_test::run_params(&the_spec())).unwrap();
    replay(&art, &start, CHARGES.allowance).unwrap().steps.len() as u64
}

/// A deposit for every turn and two more, so some is left at the end.
fn crank() -> CrankFee {
    CrankFee::for_turns(CRANK_FEE, turns() + 2)
}

/// A bank with Curta and the probe loaded, a config and a sealed
/// stories260K model preloaded, the opener funded.
async fn bank() -> Env {
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    let art = artifact("stories260K");
    let mut pt = program_test::program_test();
    pt.add_program("curta_callback_probe", PROBE_ID, None);
    let (pt, keys) = program_test::preload(
        pt,
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        (&owner.pubkey(), ROYALTY),
    );
    let mut chain = Chain::start(pt).await;
    chain.fund(&opener.pubkey(), 10 * SOL).await;
    chain.fund(&owner.pubkey(), SOL).await;
    Env {
        chain,
        admin,
        owner,
        opener,
        keys,
        cfg: metadata(&art).config,
    }
}

/// A new wallet holding `lamports`.
async fn wallet(e: &mut Env, lamports: u64) -> Keypair {
    let k = Keypair::new();
    e.chain.fund(&k.pubkey(), lamports).await;
    k
}

/// An account of `owner`'s at `key` holding `lamports` and `len` zero bytes.
fn plant(e: &mut Env, key: &Pubkey, owner: &Pubkey, lamports: u64, len: usize) {
    e.chain.ctx.set_account(
        key,
        &AccountSharedData::from(Account {
            lamports,
            data: vec![0; len],
            owner: *owner,
            executable: false,
            // What the runtime writes back for a rent-exempt account.
            rent_epoch: u64::MAX,
        }),
    );
}

/// The probe's own account, rent-exempt plus `extra`, for it to write.
async fn probe_account(e: &mut Env, extra: u64) -> Pubkey {
    let key = Pubkey::new_unique();
    let rent = e.chain.rent(RECORD_LEN).await;
    plant(e, &key, &PROBE_ID, rent + extra, RECORD_LEN);
    key
}

/// A callback record naming the probe.
fn record(refund: &Pubkey, accounts: &[(Pubkey, bool)], data: &[u8]) -> Vec<u8> {
    record_of(&PROBE_ID, refund, accounts, data)
}

fn record_of(
    program: &Pubkey,
    refund: &Pubkey,
    accounts: &[(Pubkey, bool)],
    data: &[u8],
) -> Vec<u8> {
    let keys: Vec<[u8; 32]> = accounts.iter().map(|(k, _)| k.to_bytes()).collect();
    let named: Vec<CallbackAccount> = keys
        .iter()
        .zip(accounts)
        .map(|(address, (_, writable))| CallbackAccount {
            address,
            writable: *writable,
        })
        .collect();
    let init = CallbackInit {
        program: program.as_array(),
        refund: refund.as_array(),
        compute_units: CALLBACK_CU,
        accounts: &named,
        data,
    };
    let mut out = vec![0u8; init.encoded_len()];
    assert_eq!(init.encode_into(&mut out), Some(out.len()));
    out
}

/// Mode 0's data: what the probe checks the run against.
fn record_data(e: &Env) -> Vec<u8> {
    let mut d = vec![RECORD];
    d.extend_from_slice(PROGRAM_ID.as_ref());
    d.extend_from_slice(&e.keys.identity);
    d.extend_from_slice(e.opener.pubkey().as_ref());
    d
}

/// What a transaction did, and what it cost its fee payer.
struct Sent {
    result: Result<(), TransactionError>,
    logs: Vec<String>,
    fee: u64,
    /// The transaction's compute units, its compute-budget instructions'
    /// included.
    units: u64,
}

impl Sent {
    /// The error of the instruction that failed, if one did.
    fn error(&self) -> Option<&InstructionError> {
        match &self.result {
            Err(TransactionError::InstructionError(_, e)) => Some(e),
            _ => None,
        }
    }
}

/// Makes every transaction unique (its own data-size limit), so one sent
/// again is not a duplicate.
static NONCE: AtomicU32 = AtomicU32::new(0);

/// Sends `ixs` in one transaction paid for by `payer`, signed by it and
/// `signers`.
async fn send_as(e: &mut Env, payer: &Keypair, ixs: &[Instruction], signers: &[&Keypair]) -> Sent {
    let nonce = NONCE.fetch_add(1, Ordering::Relaxed) + 1;
    let mut all = vec![
        ComputeBudgetInstruction::set_loaded_accounts_data_size_limit(64 * 1024 * 1024 - nonce),
    ];
    all.extend_from_slice(ixs);
    let mut keys = vec![payer];
    keys.extend_from_slice(signers);
    loop {
        let blockhash = e.chain.ctx.last_blockhash;
        let tx = Transaction::new_signed_with_payer(&all, Some(&payer.pubkey()), &keys, blockhash);
        let banks = &mut e.chain.ctx.banks_client;
        let fee = banks
            .get_fee_for_message(tx.message.clone())
            .await
            .expect("banks client")
            .expect("a fee for a fresh blockhash");
        let out = banks
            .process_transaction_with_metadata(tx)
            .await
            .expect("banks client");
        if out.result == Err(TransactionError::BlockhashNotFound) {
            e.chain.ctx.last_blockhash = banks.get_latest_blockhash().await.unwrap();
            continue;
        }
        let meta = out.metadata.expect("metadata");
        return Sent {
            result: out.result,
            logs: meta.log_messages,
            fee,
            units: meta.compute_units_consumed,
        };
    }
}

/// Sends a transaction paid for by `payer` that must fail with `want`:
/// no account it names changes, but the payer's, by exactly the fee.
async fn refused_as(
    e: &mut Env,
    payer: &Keypair,
    ixs: &[Instruction],
    signers: &[&Keypair],
    want: InstructionError,
) -> Sent {
    let watch: Vec<Pubkey> = ixs
        .iter()
        .flat_map(|ix| ix.accounts.iter().map(|a| a.pubkey))
        .filter(|k| *k != payer.pubkey())
        .collect();
    let mut before = vec![];
    for k in &watch {
        before.push(e.chain.account(k).await);
    }
    let paid_before = e.chain.lamports(&payer.pubkey()).await;
    let sent = send_as(e, payer, ixs, signers).await;
    assert_eq!(
        sent.error(),
        Some(&want),
        "{:?} {:#?}",
        sent.result,
        sent.logs
    );
    for (k, b) in watch.iter().zip(before) {
        let after = e.chain.account(k).await;
        assert!(after == b, "account {k} changed by a refused transaction");
    }
    let paid_after = e.chain.lamports(&payer.pubkey()).await;
    assert_eq!(
        paid_before - paid_after,
        sent.fee,
        "the payer paid only the fee"
    );
    sent
}

fn custom(c: CurtaError) -> InstructionError {
    InstructionError::Custom(err(c))
}

/// A run opened by `e.opener`, who pays for it: created (`run_kp`, sized
/// for `record`) and opened with `open_run_with` in one transaction. The
/// run's lamports.
async fn open(e: &mut Env, run_kp: &Keypair, record: &[u8], fee: u64, crank: &CrankFee) -> u64 {
    let s = the_spec();
    let size = run::account_size(&e.cfg, PROMPT.len(), MAX_TOKENS, record.len()).unwrap();
    let funding = e.chain.rent(size).await + ROYALTY * MAX_TOKENS as u64 + crank.deposit + fee;
    let opener = e.opener.insecure_clone();
    let create = solana_system_interface::instruction::create_account(
        &opener.pubkey(),
        &run_kp.pubkey(),
        funding,
        size as u64,
        &PROGRAM_ID,
    );
    let open = ix::open_run_with(
        &PROGRAM_ID,
        &e.keys,
        &run_kp.pubkey(),
        &opener.pubkey(),
        &program_test::run_params(&s),
        crank,
        0,
        &Funding {
            callback: record,
            fee,
        },
    );
    let sent = send_as(e, &opener, &[create, open], &[run_kp]).await;
    assert_eq!(sent.result, Ok(()), "open_run: {:#?}", sent.logs);
    funding
}

/// The delivery of a run as its record names it, finished or not.
async fn delivery_of(e: &mut Env, run_key: &Pubkey) -> Delivery {
    let data = e.chain.data(run_key).await;
    let r = RunAccount::read(&data).unwrap();
    let c = r
        .callback()
        .expect("a callback")
        .expect("a record that reads");
    Delivery {
        run: run_key.to_bytes(),
        refund: *c.refund(),
        program: *c.program(),
        accounts: (0..c.account_count())
            .map(|i| (*c.account(i), c.is_writable(i)))
            .collect(),
        compute_units: DELIVER_CU + c.compute_units() + COMPUTE_BUDGET_OVERHEAD,
        fee: r.delivery_fee(),
    }
}

/// `deliver` by `deliverer`, asking for the plan's compute units.
fn deliver_ixs(d: &Delivery, deliverer: &Pubkey) -> Vec<Instruction> {
    vec![
        ComputeBudgetInstruction::set_compute_unit_limit(d.compute_units),
        ix::deliver(&PROGRAM_ID, d, deliverer),
    ]
}

/// What the opener gets back from closing a run: every lamport the run
/// holds, which is its rent, unspent escrow and crank deposit and its
/// delivery fee.
async fn close_gets_everything(e: &mut Env, run_key: &Pubkey, size: usize) {
    let data = e.chain.data(run_key).await;
    let r = RunAccount::read(&data).unwrap();
    let held = e.chain.lamports(run_key).await;
    let rent = e.chain.rent(size).await;
    let unspent = r.escrow() + (r.crank_deposit() - r.crank_paid()) + r.delivery_fee();
    assert_eq!(
        held,
        rent + unspent,
        "the run holds its rent, escrow, deposit and fee"
    );
    assert_eq!(r.delivery_fee(), DELIVERY_FEE);
    let opener = e.opener.insecure_clone();
    let before = e.chain.lamports(&opener.pubkey()).await;
    e.ok(
        &[program_test::close_run_ix(run_key, &opener.pubkey())],
        &[&opener],
    )
    .await;
    assert_eq!(e.chain.lamports(&opener.pubkey()).await - before, held);
    assert_eq!(e.chain.account(run_key).await, None);
}

/// Turns a run until it is complete, each turn sent and cranked by the
/// bank's payer. The state is the run's `state()`, which ends at the
/// callback record (`Env::run_to_end` plans from everything after the
/// header, which a record would make a state of the wrong size).
async fn run_to_end(e: &mut Env, run_key: &Pubkey) {
    loop {
        let data = e.chain.data(run_key).await;
        let state = RunAccount::read(&data).unwrap().state();
        let info = StateInfo::read(state).unwrap();
        if info.complete {
            return;
        }
        let weights = e.keys.turn_weights(e.cfg, state, CHARGES.allowance);
        let cranker = e.chain.payer().pubkey();
        let turn = ix::turn(
            &PROGRAM_ID,
            &e.keys,
            run_key,
            &cranker,
            &weights,
            Some(info.turns),
        );
        e.ok(&[turn], &[]).await;
    }
}

fn run_size(e: &Env, record: &[u8]) -> usize {
    run::account_size(&e.cfg, PROMPT.len(), MAX_TOKENS, record.len()).unwrap()
}

#[tokio::test]
async fn a_finished_run_is_delivered_once_every_lamport_exact() {
    let mut e = bank().await;
    let out = probe_account(&mut e, 0).await;
    let refund = wallet(&mut e, SOL).await;
    let deliverer = wallet(&mut e, SOL).await;
    let run_kp = Keypair::new();
    let run_key = run_kp.pubkey();
    let opener = e.opener.pubkey();
    let rec = record(
        &refund.pubkey(),
        &[(out, true), (run_key, false), (opener, false)],
        &record_data(&e),
    );
    let crank = crank();
    let funding = open(&mut e, &run_kp, &rec, DELIVERY_FEE, &crank).await;
    // The record as the run keeps it, after the state.
    let data = e.chain.data(&run_key).await;
    let r = RunAccount::read(&data).unwrap();
    assert_eq!(r.callback().unwrap().unwrap().bytes(), &rec[..]);
    assert_eq!(r.callback_at(), data.len() - rec.len());
    assert_eq!(r.delivery_fee(), DELIVERY_FEE);
    assert_eq!(data.len(), run_size(&e, &rec));
    assert_eq!(e.chain.lamports(&run_key).await, funding);
    assert_eq!(
        delivery::plan(run_key.as_array(), &data),
        Err(delivery::NotDeliverable::NotFinished)
    );
    // Not finished yet.
    let d = delivery_of(&mut e, &run_key).await;
    refused_as(
        &mut e,
        &deliverer,
        &deliver_ixs(&d, &deliverer.pubkey()),
        &[],
        custom(CurtaError::RunNotFinished),
    )
    .await;

    run_to_end(&mut e, &run_key).await;
    let data = e.chain.data(&run_key).await;
    let d = delivery::plan(run_key.as_array(), &data).expect("a delivery");
    assert_eq!(d, delivery_of(&mut e, &run_key).await);
    assert_eq!(d.fee, DELIVERY_FEE);
    assert_eq!(
        d.compute_units,
        DELIVER_CU + CALLBACK_CU + COMPUTE_BUDGET_OVERHEAD
    );
    let identity = e.keys.identity;
    let finished = run::read_finished(
        PROGRAM_ID.as_array(),
        &data,
        &Expected {
            program_id: PROGRAM_ID.as_array(),
            model_identity: &identity,
            opener: opener.as_array(),
        },
    )
    .expect("a finished run");
    let (text_len, token_count) = (finished.text.len() as u32, finished.token_count() as u32);
    assert!(text_len > 0);

    // Two deliveries in one transaction: the second finds the run closed,
    // and the whole transaction moves nothing.
    let mut twice = deliver_ixs(&d, &deliverer.pubkey());
    twice.push(ix::deliver(&PROGRAM_ID, &d, &deliverer.pubkey()));
    refused_as(
        &mut e,
        &deliverer,
        &twice,
        &[],
        custom(CurtaError::WrongOwner),
    )
    .await;

    let keys = [deliverer.pubkey(), refund.pubkey(), opener, run_key, out];
    let mut before = vec![];
    for k in &keys {
        before.push(e.chain.account(k).await.unwrap());
    }
    let sent = send_as(
        &mut e,
        &deliverer,
        &deliver_ixs(&d, &deliverer.pubkey()),
        &[],
    )
    .await;
    assert_eq!(sent.result, Ok(()), "{:#?}", sent.logs);
    let held = before[3].lamports;
    assert_eq!(
        e.chain.lamports(&deliverer.pubkey()).await,
        before[0].lamports + DELIVERY_FEE - sent.fee,
        "the deliverer: the fee, less its transaction's"
    );
    assert_eq!(
        e.chain.lamports(&refund.pubkey()).await,
        before[1].lamports + held - DELIVERY_FEE,
        "the refund address: every other lamport of the run"
    );
    assert_eq!(
        e.chain.account(&opener).await.unwrap(),
        before[2],
        "the opener"
    );
    assert_eq!(e.chain.account(&run_key).await, None, "the run is closed");
    // The probe ran and saw the finished run: its field, nothing else.
    let probe = e.chain.account(&out).await.unwrap();
    let mut want = before[4].clone();
    want.data[..4].copy_from_slice(&text_len.to_le_bytes());
    want.data[4..8].copy_from_slice(&token_count.to_le_bytes());
    assert_eq!(probe, want, "the probe's account");

    // Its compute units, for the notes.
    let curta = program_units(&sent.logs, &PROGRAM_ID.to_string());
    let probe_cu = program_units(&sent.logs, &PROBE_ID.to_string());
    let own = curta - probe_cu;
    println!(
        "deliver with a callback of {} accounts ({}-byte record, {} bytes of data): \
         {curta} compute units in Curta's instruction, {probe_cu} of them the probe's \
         (read_finished and a write), {own} deliver's own; the transaction {} of the {} \
         asked for; DELIVER_CU = {DELIVER_CU}, {:.1}x deliver's own",
        d.accounts.len(),
        rec.len(),
        rec.len() - callback::len(d.accounts.len(), 0),
        sent.units,
        d.compute_units,
        DELIVER_CU as f64 / own as f64,
    );
    assert!(
        own * 3 / 2 <= DELIVER_CU as u64,
        "DELIVER_CU {DELIVER_CU} leaves less than half again deliver's own {own}"
    );
    assert!(sent.units <= d.compute_units as u64);

    // Delivered once: a later delivery finds no run and moves nothing.
    refused_as(
        &mut e,
        &deliverer,
        &deliver_ixs(&d, &deliverer.pubkey()),
        &[],
        custom(CurtaError::WrongOwner),
    )
    .await;
}

#[tokio::test]
async fn a_run_without_a_callback_is_not_delivered() {
    let mut e = bank().await;
    let run_key = e.open(&the_spec()).await;
    run_to_end(&mut e, &run_key).await;
    let deliverer = wallet(&mut e, SOL).await;
    let data = e.chain.data(&run_key).await;
    assert_eq!(
        delivery::plan(run_key.as_array(), &data),
        Err(delivery::NotDeliverable::NoCallback)
    );
    let d = Delivery {
        run: run_key.to_bytes(),
        refund: e.opener.pubkey().to_bytes(),
        program: PROBE_ID.to_bytes(),
        accounts: vec![],
        compute_units: DELIVER_CU,
        fee: 0,
    };
    refused_as(
        &mut e,
        &deliverer,
        &deliver_ixs(&d, &deliverer.pubkey()),
        &[],
        custom(CurtaError::NoCallback),
    )
    .await;
}

/// A callback that fails in any way fails the delivery: nothing moves but
/// the deliverer's transaction fee, and the opener still closes the run
/// and gets every lamport back.
#[tokio::test]
async fn a_callback_that_fails_moves_nothing() {
    let mut e = bank().await;
    let refund = wallet(&mut e, SOL).await;
    let deliverer = wallet(&mut e, SOL).await;
    let out = probe_account(&mut e, 0).await;
    let opener = e.opener.pubkey();
    let r = refund.pubkey();

    // Each mode: the accounts it is given (`run` stands for the run's own
    // key, known once it is created) and the error the delivery ends in.
    let runs: Vec<(&str, u8, InstructionError)> = vec![
        ("fails", FAIL, InstructionError::Custom(FAILED)),
        (
            "burns the budget",
            BURN,
            // The callee's meter runs out ("exceeded CUs meter", below),
            // which its caller's instruction reports so.
            InstructionError::ProgramFailedToComplete,
        ),
        (
            "reenters Curta",
            REENTER,
            InstructionError::ReentrancyNotAllowed,
        ),
        (
            "takes the refund wallet's lamports",
            STEAL,
            InstructionError::ExternalAccountLamportSpend,
        ),
    ];
    for (what, mode, want) in runs {
        let run_kp = Keypair::new();
        let run_key = run_kp.pubkey();
        let accounts = match mode {
            REENTER => vec![(PROGRAM_ID, false), (run_key, false), (opener, false)],
            STEAL => vec![(out, true), (r, true)],
            _ => vec![(out, true), (run_key, false)],
        };
        let rec = record(&r, &accounts, &[mode]);
        open(&mut e, &run_kp, &rec, DELIVERY_FEE, &crank()).await;
        run_to_end(&mut e, &run_key).await;
        let data = e.chain.data(&run_key).await;
        // Asking for what the plan computes: deliver's own and the record's.
        let d = delivery::plan(run_key.as_array(), &data).expect("a delivery");
        let sent = refused_as(
            &mut e,
            &deliverer,
            &deliver_ixs(&d, &deliverer.pubkey()),
            &[],
            want,
        )
        .await;
        println!(
            "a callback that {what}: {:?}, {} compute units of the {} asked for",
            sent.result, sent.units, d.compute_units
        );
        if mode == BURN {
            let exceeded = format!("Program {PROBE_ID} failed: exceeded CUs meter");
            assert!(
                sent.logs.iter().any(|l| l.starts_with(&exceeded)),
                "{:#?}",
                sent.logs
            );
            assert!(sent.units <= d.compute_units as u64);
            assert!(
                sent.units + 1_000 >= d.compute_units as u64,
                "{}",
                sent.units
            );
        }
        let size = run_size(&e, &rec);
        close_gets_everything(&mut e, &run_key, size).await;
    }
}

/// A callback that pays lamports into the run (any program may credit an
/// account it is given writable): they go to the refund address with the
/// rest.
#[tokio::test]
async fn lamports_a_callback_pays_into_the_run_reach_the_refund_address() {
    let mut e = bank().await;
    let refund = wallet(&mut e, SOL).await;
    let deliverer = wallet(&mut e, SOL).await;
    const TIPPED: u64 = 123_456;
    let out = probe_account(&mut e, TIPPED).await;
    let run_kp = Keypair::new();
    let run_key = run_kp.pubkey();
    let mut data = vec![TIP];
    data.extend_from_slice(&TIPPED.to_le_bytes());
    let rec = record(&refund.pubkey(), &[(out, true), (run_key, true)], &data);
    open(&mut e, &run_kp, &rec, DELIVERY_FEE, &crank()).await;
    run_to_end(&mut e, &run_key).await;
    let d = delivery_of(&mut e, &run_key).await;
    let held = e.chain.lamports(&run_key).await;
    let refund_before = e.chain.lamports(&refund.pubkey()).await;
    let out_before = e.chain.lamports(&out).await;
    let sent = send_as(
        &mut e,
        &deliverer,
        &deliver_ixs(&d, &deliverer.pubkey()),
        &[],
    )
    .await;
    assert_eq!(sent.result, Ok(()), "{:?} {:#?}", sent.result, sent.logs);
    assert_eq!(e.chain.lamports(&out).await, out_before - TIPPED);
    assert_eq!(
        e.chain.lamports(&refund.pubkey()).await,
        refund_before + held + TIPPED - DELIVERY_FEE
    );
    assert_eq!(e.chain.account(&run_key).await, None);
}

/// What `deliver` refuses of its accounts, each refusal moving nothing;
/// then the run delivered by its own refund address.
#[tokio::test]
async fn deliver_takes_exactly_the_accounts_the_record_names() {
    let mut e = bank().await;
    let refund = wallet(&mut e, SOL).await;
    let deliverer = wallet(&mut e, SOL).await;
    // A wallet the callback names (read-only): it cannot deliver.
    let named = wallet(&mut e, SOL).await;
    let out = probe_account(&mut e, 0).await;
    let run_kp = Keypair::new();
    let run_key = run_kp.pubkey();
    let data = record_data(&e);
    let rec = record(
        &refund.pubkey(),
        &[(out, true), (run_key, false), (named.pubkey(), false)],
        &data,
    );
    open(&mut e, &run_kp, &rec, DELIVERY_FEE, &crank()).await;
    run_to_end(&mut e, &run_key).await;
    let d = delivery_of(&mut e, &run_key).await;
    let who = deliverer.pubkey();
    let good = ix::deliver(&PROGRAM_ID, &d, &who);
    const REFUND: usize = 1;
    const DELIVERER: usize = 2;
    const PROGRAM: usize = 3;
    const NAMED: usize = 4;
    let limit = ComputeBudgetInstruction::set_compute_unit_limit(d.compute_units);
    let wrong = |f: &dyn Fn(&mut Instruction)| {
        let mut ix = good.clone();
        f(&mut ix);
        vec![limit.clone(), ix]
    };
    let cases: Vec<(&str, Vec<Instruction>, CurtaError)> = vec![
        (
            "another callback program",
            wrong(&|ix| ix.accounts[PROGRAM].pubkey = solana_system_interface::program::ID),
            CurtaError::WrongCallback,
        ),
        (
            "Curta as the callback program",
            wrong(&|ix| ix.accounts[PROGRAM].pubkey = PROGRAM_ID),
            CurtaError::WrongCallback,
        ),
        (
            "an account missing",
            wrong(&|ix| {
                ix.accounts.pop();
            }),
            CurtaError::WrongCallback,
        ),
        (
            "an account more",
            wrong(&|ix| {
                ix.accounts
                    .push(solana_instruction::AccountMeta::new_readonly(
                        Pubkey::new_unique(),
                        false,
                    ))
            }),
            CurtaError::WrongCallback,
        ),
        (
            "two accounts swapped",
            wrong(&|ix| ix.accounts.swap(NAMED + 1, NAMED + 2)),
            CurtaError::WrongCallback,
        ),
        (
            "another account in one's place",
            wrong(&|ix| ix.accounts[NAMED + 2].pubkey = Pubkey::new_unique()),
            CurtaError::WrongCallback,
        ),
        (
            "the written account read-only",
            wrong(&|ix| ix.accounts[NAMED].is_writable = false),
            CurtaError::WrongCallback,
        ),
        (
            "another refund address",
            wrong(&|ix| ix.accounts[REFUND].pubkey = Pubkey::new_unique()),
            CurtaError::WrongCallback,
        ),
        (
            "the refund address read-only",
            wrong(&|ix| ix.accounts[REFUND].is_writable = false),
            CurtaError::NotWritable,
        ),
    ];
    for (what, ixs, want) in cases {
        println!("deliver with {what}: {want:?}");
        refused_as(&mut e, &deliverer, &ixs, &[], custom(want)).await;
    }
    // The deliverer among the callback's accounts.
    let ix = ix::deliver(&PROGRAM_ID, &d, &named.pubkey());
    refused_as(
        &mut e,
        &named,
        &[limit.clone(), ix],
        &[],
        custom(CurtaError::DuplicateAccount),
    )
    .await;
    // A deliverer that is not a System account: an account of the probe's
    // whose key signs, then one of Curta's.
    for owner in [PROBE_ID, PROGRAM_ID] {
        let held = Keypair::new();
        plant(&mut e, &held.pubkey(), &owner, SOL, 0);
        let ixs = deliver_ixs(&d, &held.pubkey());
        refused_as(
            &mut e,
            &deliverer,
            &ixs,
            &[&held],
            custom(CurtaError::InvalidCranker),
        )
        .await;
    }
    // A wallet holding nothing, which the fee would leave below its rent.
    let empty = Keypair::new();
    let ixs = deliver_ixs(&d, &empty.pubkey());
    refused_as(
        &mut e,
        &deliverer,
        &ixs,
        &[&empty],
        custom(CurtaError::InvalidCranker),
    )
    .await;
    // Not signing.
    let mut ix = good.clone();
    ix.accounts[DELIVERER].is_signer = false;
    ix.accounts[DELIVERER].pubkey = Pubkey::new_unique();
    refused_as(
        &mut e,
        &deliverer,
        &[limit.clone(), ix],
        &[],
        custom(CurtaError::MissingSigner),
    )
    .await;

    // The refund address may deliver its own run: it gets the whole run.
    let held = e.chain.lamports(&run_key).await;
    let before = e.chain.lamports(&refund.pubkey()).await;
    let sent = send_as(&mut e, &refund, &deliver_ixs(&d, &refund.pubkey()), &[]).await;
    assert_eq!(sent.result, Ok(()), "{:#?}", sent.logs);
    assert_eq!(
        e.chain.lamports(&refund.pubkey()).await,
        before + held - sent.fee
    );
    assert_eq!(e.chain.account(&run_key).await, None);
    let written = e.chain.data(&out).await;
    assert_ne!(written[..4], [0; 4], "the probe wrote the text's length");
}

/// What `open_run` refuses of a callback: nothing is created.
#[tokio::test]
async fn open_run_refuses_a_bad_callback_and_creates_nothing() {
    let mut e = bank().await;
    let refund = Pubkey::new_unique();
    let out = Pubkey::new_unique();
    let good = record(&refund, &[(out, true)], &[RECORD]);
    let crank = CrankFee::default();
    let mut cases: Vec<(&str, Vec<u8>, u64, CurtaError)> = vec![];
    cases.push((
        "naming the Curta program",
        record_of(&PROGRAM_ID, &refund, &[(out, true)], &[RECORD]),
        DELIVERY_FEE,
        CurtaError::InvalidCallback,
    ));
    let mut short = good.clone();
    short.pop();
    cases.push(("a byte short", short, 0, CurtaError::InvalidCallback));
    let mut long = good.clone();
    long.push(0);
    cases.push(("a byte long", long, 0, CurtaError::InvalidCallback));
    cases.push((
        "shorter than its fixed part",
        good[..callback::FIXED_LEN - 1].to_vec(),
        0,
        CurtaError::InvalidCallback,
    ));
    let mut flags = good.clone();
    flags[callback::FIXED_LEN + 32] = 2;
    cases.push((
        "a flag other than writable",
        flags,
        0,
        CurtaError::InvalidCallback,
    ));
    let mut reserved = good.clone();
    reserved[69] = 1;
    cases.push((
        "its reserved byte set",
        reserved,
        0,
        CurtaError::InvalidCallback,
    ));
    // 17 accounts, the lengths agreeing.
    let mut many = good[..callback::FIXED_LEN].to_vec();
    many[68] = 17;
    many[70..72].copy_from_slice(&0u16.to_le_bytes());
    for i in 0..17u8 {
        many.extend_from_slice(&[i + 1; 32]);
        many.push(0);
    }
    assert_eq!(many.len(), callback::len(17, 0));
    cases.push(("17 accounts", many, 0, CurtaError::InvalidCallback));
    // 257 bytes of data, the lengths agreeing.
    let mut big = good[..callback::FIXED_LEN].to_vec();
    big[68] = 0;
    big[70..72].copy_from_slice(&257u16.to_le_bytes());
    big.extend_from_slice(&[0; 257]);
    cases.push(("257 bytes of data", big, 0, CurtaError::InvalidCallback));
    cases.push((
        "a delivery fee without a record",
        vec![],
        1,
        CurtaError::InvalidCallback,
    ));
    for (what, rec, fee, want) in cases {
        println!("open_run with a record {what}: {want:?}");
        refuse_open(&mut e, &rec, fee, &crank, want).await;
    }
    // A run account without room for the record: the state's room is short
    // by its length (the core's BufferTooSmall); then one without the fee.
    let run_kp = Keypair::new();
    let size = run_size(&e, &[]);
    let funding = e.chain.rent(size).await + ROYALTY * MAX_TOKENS as u64;
    let ixs = open_ixs(&e, &run_kp, &good, 0, size, funding, &crank);
    let opener = e.opener.insecure_clone();
    refused_as(
        &mut e,
        &opener,
        &ixs,
        &[&run_kp],
        InstructionError::Custom(common::core(curta_core::Error::BufferTooSmall)),
    )
    .await;
    let size = run_size(&e, &good);
    let funding = e.chain.rent(size).await + ROYALTY * MAX_TOKENS as u64 + DELIVERY_FEE - 1;
    let ixs = open_ixs(&e, &run_kp, &good, DELIVERY_FEE, size, funding, &crank);
    refused_as(
        &mut e,
        &opener,
        &ixs,
        &[&run_kp],
        custom(CurtaError::EscrowTooSmall),
    )
    .await;
    assert_eq!(e.chain.account(&run_kp.pubkey()).await, None);
    // The good record opens.
    let ixs = open_ixs(&e, &run_kp, &good, DELIVERY_FEE, size, funding + 1, &crank);
    let sent = send_as(&mut e, &opener, &ixs, &[&run_kp]).await;
    assert_eq!(sent.result, Ok(()), "{:#?}", sent.logs);
}

fn open_ixs(
    e: &Env,
    run_kp: &Keypair,
    rec: &[u8],
    fee: u64,
    size: usize,
    funding: u64,
    crank: &CrankFee,
) -> Vec<Instruction> {
    let s = the_spec();
    let create = solana_system_interface::instruction::create_account(
        &e.opener.pubkey(),
        &run_kp.pubkey(),
        funding,
        size as u64,
        &PROGRAM_ID,
    );
    let open = ix::open_run_with(
        &PROGRAM_ID,
        &e.keys,
        &run_kp.pubkey(),
        &e.opener.pubkey(),
        &program_test::run_params(&s),
        crank,
        0,
        &Funding { callback: rec, fee },
    );
    vec![create, open]
}

/// `[create_account, open_run_with]` with room for the record, funded for everything, refused with `want`; the run not created.
async fn refuse_open(e: &mut Env, rec: &[u8], fee: u64, crank: &CrankFee, want: CurtaError) {
    let run_kp = Keypair::new();
    let size = run_size(e, rec);
    let funding = e.chain.rent(size).await + ROYALTY * MAX_TOKENS as u64 + crank.deposit + fee;
    let ixs = open_ixs(e, &run_kp, rec, fee, size, funding, crank);
    let opener = e.opener.insecure_clone();
    refused_as(e, &opener, &ixs, &[&run_kp], custom(want)).await;
    assert_eq!(e.chain.account(&run_kp.pubkey()).await, None);
}
