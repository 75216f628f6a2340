//! The storyteller (`examples/storyteller`), another program that asks
//! Curta for a story by CPI and reads the finished run, on the SBF VM
//! beside Curta: a user requests in one transaction, a second key cranks
//! every turn for its fee, a third fulfills; every lamport is accounted
//! for, exactly, and the text is the native replay's. Then what the
//! storyteller and Curta refuse, each refusal leaving every account as it
//! was: a run not finished, opened by someone else or of another model, a
//! request that is not the storyteller's, a request at another address or
//! unsigned by its run, a model identity Curta does not have, and a run
//! opened in the storyteller's name by anyone but the storyteller. Then a
//! request address someone prefunded, and `cancel`: the user taking back
//! every lamport of a run not finished, of one whose model was retired
//! and of one already gone, and nobody else able to.

use std::sync::Arc;

use curta_client::instructions::{self as ix, ModelKeys};
use curta_core::client::receipt::program_units;
use curta_core::client::replay::{initial_state, replay};
use curta_core::inference::RunParams;
use curta_core::planner::CHARGES;
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{run, CurtaError, RunAccount};
use curta_core::{Config, StateInfo};
use curta_replay::models::{artifact, metadata};
use curta_replay::program_test::{self, Chain, CU_LIMIT, PROGRAM_ID};
use curta_replay::storyteller::Storyteller;
use curta_storyteller::state::{self as story, SEED};
use curta_storyteller::StoryError;
use solana_account::{Account, AccountSharedData};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};

/// Where the tests load the storyteller.
const STORYTELLER_ID: Pubkey = Pubkey::new_from_array([0x57; 32]);
/// Lamports per generated token, and per turn to its cranker.
const ROYALTY: u64 = 1_000;
const CRANK_FEE: u64 = 10_000;
/// What each request offers its deliverer.
const DELIVERY_FEE: u64 = 20_000;
const PROMPT: &[u8] = b"Once upon a time";
const MAX_TOKENS: u32 = 4;
const SOL: u64 = 1_000_000_000;

/// A bank with Curta and the storyteller loaded, a config and two sealed
/// models preloaded: stories260K at two addresses, so two identities.
struct Bank {
    chain: Chain,
    keys: ModelKeys,
    other: ModelKeys,
    cfg: Config,
    art: Arc<Vec<u8>>,
    owner: Pubkey,
    /// The models' owner's key: it retires a model (`close_weight`).
    owner_key: Keypair,
    /// Makes every transaction unique (a compute-unit limit of its own),
    /// so one refused and then sent again is not a duplicate.
    nonce: u32,
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
    fn custom_error(&self) -> Option<u32> {
        match &self.result {
            Err(TransactionError::InstructionError(
                _,
                solana_instruction::error::InstructionError::Custom(c),
            )) => Some(*c),
            _ => None,
        }
    }

    /// The units `program` reported ("consumed N of M"): a caller's
    /// include those of the programs it invoked.
    fn units_of(&self, program: &Pubkey) -> u64 {
        program_units(&self.logs, &program.to_string())
    }
}

/// A request sent: its accounts and what the native replay says of its run.
struct Requested {
    run: Pubkey,
    request: Pubkey,
    bump: u8,
    /// The run account's lamports: rent, royalty escrow, crank deposit.
    funding: u64,
    turns: u64,
    generated: u64,
    text: Vec<u8>,
    sent: Sent,
}

impl Bank {
    async fn start() -> Bank {
        let admin = Pubkey::new_unique();
        let owner_key = Keypair::new();
        let owner = owner_key.pubkey();
        let art = artifact("stories260K");
        let mut pt = program_test::program_test();
        pt.add_program("curta_storyteller", STORYTELLER_ID, None);
        let (mut pt, keys) =
            program_test::preload(pt, &admin, CHARGES.allowance, &art, (&owner, ROYALTY));
        let (other, accounts) =
            program_test::preloaded_model(&keys.config_account, &art, &owner, ROYALTY);
        for (k, a) in accounts {
            pt.add_account(k, a);
        }
        assert_ne!(keys.identity, other.identity);
        let cfg = metadata(&art).config;
        let mut chain = Chain::start(pt).await;
        // Rent-exempt, so a royalty can be paid to it.
        chain.fund(&owner, SOL).await;
        Bank {
            chain,
            keys,
            other,
            cfg,
            art,
            owner,
            owner_key,
            nonce: 0,
        }
    }

    /// A new key holding `lamports`.
    async fn funded(&mut self, lamports: u64) -> Keypair {
        let k = Keypair::new();
        self.chain.fund(&k.pubkey(), lamports).await;
        k
    }

    async fn balance(&mut self, key: &Pubkey) -> u64 {
        self.chain.lamports(key).await
    }

    /// Sends `ixs` in one transaction paid for by `payer`, signed by it and
    /// `signers`.
    async fn send_as(
        &mut self,
        payer: &Keypair,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Sent {
        self.nonce += 1;
        let mut all = vec![
            ComputeBudgetInstruction::set_loaded_accounts_data_size_limit(
                64 * 1024 * 1024 - self.nonce,
            ),
        ];
        all.extend_from_slice(ixs);
        let mut keys = vec![payer];
        keys.extend_from_slice(signers);
        loop {
            let blockhash = self.chain.ctx.last_blockhash;
            let tx =
                Transaction::new_signed_with_payer(&all, Some(&payer.pubkey()), &keys, blockhash);
            let banks = &mut self.chain.ctx.banks_client;
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
                self.chain.ctx.last_blockhash = banks.get_latest_blockhash().await.unwrap();
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

    /// Sends a transaction that must fail with `code`: no account it names
    /// changes, but its payer's, by exactly the fee.
    async fn refused(
        &mut self,
        payer: &Keypair,
        ixs: &[Instruction],
        signers: &[&Keypair],
        code: u32,
    ) -> Sent {
        let watch: Vec<Pubkey> = ixs
            .iter()
            .flat_map(|ix| ix.accounts.iter().map(|a| a.pubkey))
            .filter(|k| *k != payer.pubkey())
            .collect();
        let mut before = vec![];
        for k in &watch {
            before.push(self.chain.account(k).await);
        }
        let paid_before = self.balance(&payer.pubkey()).await;
        let sent = self.send_as(payer, ixs, signers).await;
        assert_eq!(
            sent.custom_error(),
            Some(code),
            "expected error {code}: {:?} {:#?}",
            sent.result,
            sent.logs
        );
        for (k, b) in watch.iter().zip(before) {
            let after = self.chain.account(k).await;
            assert!(after == b, "account {k} changed by a refused transaction");
        }
        let paid_after = self.balance(&payer.pubkey()).await;
        assert_eq!(
            paid_before - paid_after,
            sent.fee,
            "the payer paid only the fee"
        );
        sent
    }

    /// The native replay of a run of `PROMPT`: its turns, tokens and text.
    fn replay(&self) -> (u64, u64, Vec<u8>) {
        let start = initial_state(&self.art, &params()).expect("initial state");
        let r = replay(&self.art, &start, CHARGES.allowance).expect("replay");
        let info = StateInfo::read(&r.final_state).expect("final state");
        let text = curta_core::output_text(self.cfg, &r.final_state).to_vec();
        (r.steps.len() as u64, info.generated as u64, text)
    }

    /// A run the storyteller opens: its state and its callback record.
    fn run_len(&self) -> usize {
        Storyteller::run_len(&self.cfg, &params())
    }

    /// The same run opened directly, naming no callback.
    fn plain_run_len(&self) -> usize {
        run::account_size(&self.cfg, PROMPT.len(), MAX_TOKENS, 0).unwrap()
    }

    /// The user's one transaction: System `create_account` of the run (a
    /// new key, funded with rent + royalty x max tokens + fee x turns, owned
    /// by Curta), then the storyteller's `request`, signed by the user and
    /// the run.
    async fn request(
        &mut self,
        user: &Keypair,
        keys: &ModelKeys,
        identity: &[u8; 32],
    ) -> Requested {
        self.request_run(user, keys, identity, Keypair::new()).await
    }

    /// `request` with the run's key given.
    async fn request_run(
        &mut self,
        user: &Keypair,
        keys: &ModelKeys,
        identity: &[u8; 32],
        run_kp: Keypair,
    ) -> Requested {
        let (turns, generated, text) = self.replay();
        let run_len = self.run_len();
        let crank = CrankFee::for_turns(CRANK_FEE, turns);
        let funding = self.chain.rent(run_len).await
            + ROYALTY * MAX_TOKENS as u64
            + crank.deposit
            + DELIVERY_FEE;
        let (request, bump) =
            Pubkey::find_program_address(&[SEED, run_kp.pubkey().as_ref()], &STORYTELLER_ID);
        let create = solana_system_interface::instruction::create_account(
            &user.pubkey(),
            &run_kp.pubkey(),
            funding,
            run_len as u64,
            &PROGRAM_ID,
        );
        let req = request_ix(
            &user.pubkey(),
            &request,
            &run_kp.pubkey(),
            keys,
            identity,
            &crank,
        );
        let sent = self.send_as(user, &[create, req], &[&run_kp]).await;
        Requested {
            run: run_kp.pubkey(),
            request,
            bump,
            funding,
            turns,
            generated,
            text,
            sent,
        }
    }

    /// Turns until the run is complete, each signed and paid for by
    /// `cranker`: the turns and the fees they cost it.
    async fn crank(&mut self, cranker: &Keypair, keys: &ModelKeys, run_key: &Pubkey) -> (u64, u64) {
        self.crank_turns(cranker, keys, run_key, u64::MAX).await
    }

    /// `crank`, stopping after at most `most` turns.
    async fn crank_turns(
        &mut self,
        cranker: &Keypair,
        keys: &ModelKeys,
        run_key: &Pubkey,
        most: u64,
    ) -> (u64, u64) {
        let (mut turns, mut fees) = (0, 0);
        loop {
            let data = self.chain.data(run_key).await;
            let state = RunAccount::read(&data).expect("a run").state();
            let info = StateInfo::read(state).unwrap();
            if info.complete || turns == most {
                return (turns, fees);
            }
            let weights = keys.turn_weights(self.cfg, state, CHARGES.allowance);
            let turn = ix::turn(
                &PROGRAM_ID,
                keys,
                run_key,
                &cranker.pubkey(),
                &weights,
                Some(info.turns),
            );
            let limit = ComputeBudgetInstruction::set_compute_unit_limit(CU_LIMIT);
            let sent = self.send_as(cranker, &[limit, turn], &[]).await;
            assert_eq!(sent.result, Ok(()), "turn {}: {:#?}", info.turns, sent.logs);
            turns += 1;
            fees += sent.fee;
        }
    }

    /// Replaces an account's data (and owner) in the bank: a request the
    /// storyteller could never have written, to show `fulfill` refuses it.
    async fn forge(&mut self, key: &Pubkey, owner: &Pubkey, data: Vec<u8>) {
        let account = Account {
            lamports: self.chain.rent(data.len()).await,
            data,
            owner: *owner,
            executable: false,
            rent_epoch: 0,
        };
        self.chain
            .ctx
            .set_account(key, &AccountSharedData::from(account));
    }
}

fn params() -> RunParams<'static> {
    RunParams {
        prompt: PROMPT,
        max_tokens: MAX_TOKENS,
        temperature_q16: 0,
        seed: 0,
    }
}

fn code(e: StoryError) -> u32 {
    e as u32
}

/// The storyteller as loaded here, over Curta.
const STORY: Storyteller = Storyteller {
    program: STORYTELLER_ID,
    curta: PROGRAM_ID,
};

/// The storyteller's `request` of the tests' run, naming `request` as its
/// request account and `identity` as the model's (either may be wrong).
fn request_ix(
    user: &Pubkey,
    request: &Pubkey,
    run: &Pubkey,
    keys: &ModelKeys,
    identity: &[u8; 32],
    crank: &CrankFee,
) -> Instruction {
    let named = ModelKeys {
        identity: *identity,
        ..keys.clone()
    };
    let mut ix = STORY.request(user, run, &named, &params(), crank, DELIVERY_FEE);
    ix.accounts[1].pubkey = *request;
    ix
}

fn fulfill_ix(request: &Pubkey, run: &Pubkey, user: &Pubkey) -> Instruction {
    STORY.fulfill(request, run, user)
}

fn cancel_ix(user: &Pubkey, request: &Pubkey, run: &Pubkey) -> Instruction {
    STORY.cancel(user, request, run)
}

/// The user signs once: the request names the storyteller's `receive` as
/// the run's callback, a cranker sends the turns and then Curta's
/// `deliver`, which invokes `receive` (the story into the request) and
/// gives the user every lamport not spent; the cranker is paid a fee per
/// turn and the delivery fee. No one else acts.
#[tokio::test]
async fn a_story_delivered_to_its_request() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let cranker = b.funded(SOL).await;
    let owner = b.owner;
    let user_0 = b.balance(&user.pubkey()).await;
    let cranker_0 = b.balance(&cranker.pubkey()).await;
    let owner_0 = b.balance(&owner).await;
    let keys = b.keys.clone();
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);

    // The run names the callback: the storyteller's `receive`, with the
    // request, the run and the user; the user is the refund address.
    let data = b.chain.data(&q.run).await;
    let early = curta_core::client::delivery::plan(q.run.as_array(), &data);
    assert_eq!(
        early,
        Err(curta_core::client::delivery::NotDeliverable::NotFinished)
    );
    let (turns, turn_fees) = b.crank(&cranker, &keys, &q.run).await;
    let data = b.chain.data(&q.run).await;
    let plan = curta_core::client::delivery::plan(q.run.as_array(), &data).expect("deliverable");
    assert_eq!(plan.program, STORYTELLER_ID.to_bytes());
    assert_eq!(plan.refund, user.pubkey().to_bytes());
    assert_eq!(
        plan.accounts,
        vec![
            (q.request.to_bytes(), true),
            (q.run.to_bytes(), false),
            (user.pubkey().to_bytes(), true),
        ]
    );
    assert_eq!(plan.fee, DELIVERY_FEE);
    let deliver = vec![
        ComputeBudgetInstruction::set_compute_unit_limit(plan.compute_units),
        ix::deliver(&PROGRAM_ID, &plan, &cranker.pubkey()),
    ];
    let sent = b.send_as(&cranker, &deliver, &[]).await;
    assert_eq!(sent.result, Ok(()), "deliver: {:#?}", sent.logs);
    println!(
        "deliver: transaction {} compute units (asked {}), Curta's {} (of which the storyteller's \
         receive, by CPI, {}); {} bytes of text",
        sent.units,
        plan.compute_units,
        sent.units_of(&PROGRAM_ID),
        sent.units_of(&STORYTELLER_ID),
        q.text.len()
    );

    // The story is in the request, the run gone.
    assert!(b.chain.account(&q.run).await.is_none(), "the run is closed");
    let account = b.chain.account(&q.request).await.unwrap();
    let r = story::Request::read(&account.data).expect("a request");
    assert_eq!(r.text(), &q.text[..], "the native replay's text");
    assert!(r.fulfilled());
    let final_rent = b.chain.rent(account.data.len()).await;
    assert_eq!(account.lamports, final_rent);

    // Every lamport: the user paid its one transaction, the request's rent
    // at its final size, the royalties, the crank fees and the delivery
    // fee, and got back all the rest in the delivery.
    let royalties = ROYALTY * q.generated;
    assert_eq!(
        user_0 - b.balance(&user.pubkey()).await,
        q.sent.fee + final_rent + royalties + CRANK_FEE * turns + DELIVERY_FEE
    );
    assert_eq!(
        b.balance(&cranker.pubkey()).await,
        cranker_0 + CRANK_FEE * turns + DELIVERY_FEE - turn_fees - sent.fee
    );
    assert_eq!(b.balance(&owner).await, owner_0 + royalties);

    // Delivered once: the run is gone, so a second delivery is refused
    // (Curta no longer owns the account) and moves nothing but its fee.
    let again = b.send_as(&cranker, &deliver, &[]).await;
    assert!(
        again.result.is_err(),
        "a second delivery: {:#?}",
        again.logs
    );
    assert_eq!(
        b.balance(&user.pubkey()).await,
        user_0 - (q.sent.fee + final_rent + royalties + CRANK_FEE * turns + DELIVERY_FEE)
    );
    // The story stays; `receive` sent again by anyone changes nothing.
    let data = b.chain.data(&q.request).await;
    assert_eq!(story::Request::read(&data).unwrap().text(), &q.text[..]);
}

#[tokio::test]
async fn a_story_requested_cranked_and_fulfilled() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let cranker = b.funded(SOL).await;
    let fulfiller = b.funded(SOL).await;
    let owner = b.owner;
    let user_0 = b.balance(&user.pubkey()).await;
    let cranker_0 = b.balance(&cranker.pubkey()).await;
    let fulfiller_0 = b.balance(&fulfiller.pubkey()).await;
    let owner_0 = b.balance(&owner).await;
    let config_0 = b.chain.account(&b.keys.config_account).await;
    let model_0 = b.chain.account(&b.keys.model).await;

    // One transaction: the run created, the request recorded, the run
    // opened by CPI with the request as its opener.
    let keys = b.keys.clone();
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
    let request_rent = b.chain.rent(story::funded_len(MAX_TOKENS)).await;
    assert_eq!(b.balance(&q.request).await, request_rent);
    assert_eq!(b.balance(&q.run).await, q.funding);
    assert_eq!(
        user_0 - b.balance(&user.pubkey()).await,
        q.sent.fee + request_rent + q.funding
    );
    let account = b.chain.account(&q.request).await.unwrap();
    assert_eq!(account.owner, STORYTELLER_ID);
    let r = story::Request::read(&account.data).expect("a request");
    assert_eq!(account.data.len(), story::HEADER_LEN);
    assert_eq!(r.user(), user.pubkey().as_array());
    assert_eq!(r.run(), q.run.as_array());
    assert_eq!(r.curta_program(), PROGRAM_ID.as_array());
    assert_eq!(r.model_identity(), &keys.identity);
    assert_eq!(r.bump(), q.bump);
    assert_eq!(r.text(), b"");
    let data = b.chain.data(&q.run).await;
    let run_account = RunAccount::read(&data).expect("a run");
    assert_eq!(run_account.opener(), q.request.as_array());
    assert_eq!(run_account.model_identity(), &keys.identity);
    assert_eq!(run_account.crank_fee(), CRANK_FEE);
    assert_eq!(run_account.crank_deposit(), CRANK_FEE * q.turns);
    println!(
        "request: transaction {} compute units, the storyteller {} (of which Curta's open_run by CPI {}); \
         the request's bump {} ({} tries); run account {} bytes, {} turns to crank",
        q.sent.units,
        q.sent.units_of(&STORYTELLER_ID),
        q.sent.units_of(&PROGRAM_ID),
        q.bump,
        256 - q.bump as u32,
        b.run_len(),
        q.turns
    );

    // Too early: the run is not finished.
    let fulfill = fulfill_ix(&q.request, &q.run, &user.pubkey());
    let early = b
        .refused(
            &fulfiller,
            std::slice::from_ref(&fulfill),
            &[],
            code(StoryError::RunNotFinished),
        )
        .await;

    // A second key cranks every turn, paid the fee each time.
    let (turns, turn_fees) = b.crank(&cranker, &keys, &q.run).await;
    assert_eq!(turns, q.turns, "the replay's turns");
    assert_eq!(
        b.balance(&cranker.pubkey()).await,
        cranker_0 + CRANK_FEE * turns - turn_fees,
        "the cranker earned the fee per turn and paid its transactions"
    );
    let royalties = ROYALTY * q.generated;
    assert_eq!(b.balance(&owner).await, owner_0 + royalties);

    // A third key fulfills: the text into the request, the run closed.
    let sent = b.send_as(&fulfiller, &[fulfill], &[]).await;
    assert_eq!(sent.result, Ok(()), "fulfill: {:#?}", sent.logs);
    println!(
        "fulfill: transaction {} compute units, the storyteller {} (of which Curta's close_run by CPI {}); \
         {} bytes of text",
        sent.units,
        sent.units_of(&STORYTELLER_ID),
        sent.units_of(&PROGRAM_ID),
        q.text.len()
    );
    assert!(b.chain.account(&q.run).await.is_none(), "the run is closed");
    let account = b.chain.account(&q.request).await.unwrap();
    let r = story::Request::read(&account.data).expect("a request");
    assert_eq!(r.text(), &q.text[..], "the native replay's text");
    assert_eq!(account.data.len(), story::HEADER_LEN + q.text.len());
    let final_rent = b.chain.rent(account.data.len()).await;
    assert_eq!(account.lamports, final_rent);
    println!("the story: {:?}", String::from_utf8_lossy(r.text()));

    // Every lamport: the user paid its transaction, the request's rent,
    // the royalties and the crank fees, and got back all the rest.
    assert_eq!(
        user_0 - b.balance(&user.pubkey()).await,
        q.sent.fee + final_rent + royalties + CRANK_FEE * turns
    );
    assert_eq!(
        fulfiller_0 - b.balance(&fulfiller.pubkey()).await,
        early.fee + sent.fee
    );
    assert_eq!(
        b.balance(&cranker.pubkey()).await,
        cranker_0 + CRANK_FEE * turns - turn_fees
    );
    assert_eq!(b.balance(&owner).await, owner_0 + royalties);
    assert!(b.chain.account(&b.keys.config_account).await == config_0);
    assert!(b.chain.account(&b.keys.model).await == model_0);

    // A fulfilled request keeps its story: the user cannot cancel it.
    let ixs = [cancel_ix(&user.pubkey(), &q.request, &q.run)];
    b.refused(&user, &ixs, &[], code(StoryError::AlreadyFulfilled))
        .await;
}

#[tokio::test]
async fn fulfill_refuses_runs_it_did_not_open() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let cranker = b.funded(SOL).await;
    let fulfiller = b.funded(SOL).await;
    let stranger = b.funded(10 * SOL).await;
    let keys = b.keys.clone();
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
    b.crank(&cranker, &keys, &q.run).await;
    let genuine = b.chain.account(&q.request).await.unwrap();

    // A run opened directly by someone else, of the same model and
    // prompt, finished; and a request naming it, at the storyteller's
    // own address for that run.
    let run_len = b.plain_run_len();
    let funding = b.chain.rent(run_len).await + ROYALTY * MAX_TOKENS as u64;
    let run_kp = Keypair::new();
    let create = solana_system_interface::instruction::create_account(
        &stranger.pubkey(),
        &run_kp.pubkey(),
        funding,
        run_len as u64,
        &PROGRAM_ID,
    );
    let open = ix::open_run(
        &PROGRAM_ID,
        &keys,
        &run_kp.pubkey(),
        &stranger.pubkey(),
        &params(),
        &CrankFee::default(),
        0,
    );
    let sent = b.send_as(&stranger, &[create, open], &[&run_kp]).await;
    assert_eq!(sent.result, Ok(()), "open_run: {:#?}", sent.logs);
    b.crank(&cranker, &keys, &run_kp.pubkey()).await;
    let (forged_key, _) =
        Pubkey::find_program_address(&[SEED, run_kp.pubkey().as_ref()], &STORYTELLER_ID);
    let mut forged = genuine.data.clone();
    forged[story::RUN..story::RUN + 32].copy_from_slice(run_kp.pubkey().as_ref());
    b.forge(&forged_key, &STORYTELLER_ID, forged).await;
    let ixs = [fulfill_ix(&forged_key, &run_kp.pubkey(), &user.pubkey())];
    b.refused(&fulfiller, &ixs, &[], code(StoryError::RunOtherOpener))
        .await;

    // A request naming the other model, its run of the first.
    let mut forged = genuine.data.clone();
    let at = story::MODEL_IDENTITY;
    forged[at..at + 32].copy_from_slice(&b.other.identity);
    b.forge(&q.request, &STORYTELLER_ID, forged).await;
    let ixs = [fulfill_ix(&q.request, &q.run, &user.pubkey())];
    b.refused(&fulfiller, &ixs, &[], code(StoryError::RunOtherModel))
        .await;

    // A request that is not the storyteller's: the same bytes, owned by
    // another program.
    let elsewhere = Pubkey::new_unique();
    b.forge(&elsewhere, &Pubkey::new_unique(), genuine.data.clone())
        .await;
    let ixs = [fulfill_ix(&elsewhere, &q.run, &user.pubkey())];
    b.refused(&fulfiller, &ixs, &[], code(StoryError::NotStoryteller))
        .await;

    // The genuine request, with another user or another run named.
    b.chain
        .ctx
        .set_account(&q.request, &AccountSharedData::from(genuine.clone()));
    let ixs = [fulfill_ix(&q.request, &q.run, &stranger.pubkey())];
    b.refused(&fulfiller, &ixs, &[], code(StoryError::WrongUser))
        .await;
    let ixs = [fulfill_ix(&q.request, &run_kp.pubkey(), &user.pubkey())];
    b.refused(&fulfiller, &ixs, &[], code(StoryError::WrongRun))
        .await;

    // Then fulfilled, as it was all along.
    let sent = b
        .send_as(
            &fulfiller,
            &[fulfill_ix(&q.request, &q.run, &user.pubkey())],
            &[],
        )
        .await;
    assert_eq!(sent.result, Ok(()), "fulfill: {:#?}", sent.logs);
    let data = b.chain.data(&q.request).await;
    assert_eq!(story::Request::read(&data).unwrap().text(), &q.text[..]);
}

#[tokio::test]
async fn request_refusals() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let keys = b.keys.clone();
    let (turns, _, _) = b.replay();
    let crank = CrankFee::for_turns(CRANK_FEE, turns);
    let run_len = b.run_len();
    let funding =
        b.chain.rent(run_len).await + ROYALTY * MAX_TOKENS as u64 + crank.deposit + DELIVERY_FEE;
    let run_kp = Keypair::new();
    let create = solana_system_interface::instruction::create_account(
        &user.pubkey(),
        &run_kp.pubkey(),
        funding,
        run_len as u64,
        &PROGRAM_ID,
    );
    let (request, _) =
        Pubkey::find_program_address(&[SEED, run_kp.pubkey().as_ref()], &STORYTELLER_ID);

    // A request account at another address than the run's.
    let elsewhere = Pubkey::new_unique();
    let req = request_ix(
        &user.pubkey(),
        &elsewhere,
        &run_kp.pubkey(),
        &keys,
        &keys.identity,
        &crank,
    );
    b.refused(
        &user,
        &[create.clone(), req],
        &[&run_kp],
        code(StoryError::WrongRequestAddress),
    )
    .await;

    // A model identity that is not the model's: Curta refuses the open
    // (ModelChanged) and the whole transaction with it, the request
    // account's creation included.
    let req = request_ix(
        &user.pubkey(),
        &request,
        &run_kp.pubkey(),
        &keys,
        &b.other.identity,
        &crank,
    );
    let sent = b
        .refused(
            &user,
            &[create.clone(), req],
            &[&run_kp],
            CurtaError::ModelChanged as u32,
        )
        .await;
    assert!(
        sent.logs
            .iter()
            .any(|l| l.contains(&format!("Program {PROGRAM_ID} failed"))),
        "refused by Curta: {:#?}",
        sent.logs
    );

    // The run created beforehand, then a request its key does not sign.
    let sent = b.send_as(&user, &[create], &[&run_kp]).await;
    assert_eq!(sent.result, Ok(()), "create_account: {:#?}", sent.logs);
    let mut req = request_ix(
        &user.pubkey(),
        &request,
        &run_kp.pubkey(),
        &keys,
        &keys.identity,
        &crank,
    );
    req.accounts[2].is_signer = false;
    b.refused(&user, &[req], &[], code(StoryError::MissingSigner))
        .await;

    // Nobody but the storyteller opens a run in its name: Curta refuses an
    // opener that is the storyteller's address for the run, unsigned.
    let mut open = ix::open_run(
        &PROGRAM_ID,
        &keys,
        &run_kp.pubkey(),
        &request,
        &params(),
        &crank,
        0,
    );
    open.accounts[3].is_signer = false;
    b.refused(&user, &[open], &[&run_kp], CurtaError::MissingSigner as u32)
        .await;

    // The same run, requested as it should be.
    let req = request_ix(
        &user.pubkey(),
        &request,
        &run_kp.pubkey(),
        &keys,
        &keys.identity,
        &crank,
    );
    let sent = b.send_as(&user, &[req], &[&run_kp]).await;
    assert_eq!(sent.result, Ok(()), "request: {:#?}", sent.logs);
    let data = b.chain.data(&run_kp.pubkey()).await;
    assert_eq!(
        RunAccount::read(&data).unwrap().opener(),
        request.as_array()
    );
}

/// The request's address is known before it exists, so anyone can send it
/// lamports first: the request still goes through, the user paying only
/// what the address lacks of its rent, and cancelling gives the user all
/// of it, what was sent there included.
#[tokio::test]
async fn a_prefunded_request_address_is_still_requested() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let keys = b.keys.clone();
    let request_rent = b.chain.rent(story::funded_len(MAX_TOKENS)).await;
    // Less than the request's rent (the least a System account may hold,
    // and a little more), then more than it.
    let less = b.chain.rent(0).await + 1_000;
    for prefund in [less, 2 * request_rent] {
        let user_0 = b.balance(&user.pubkey()).await;
        let run_kp = Keypair::new();
        let request = STORY.request_address(&run_kp.pubkey());
        b.chain.fund(&request, prefund).await;
        assert_eq!(b.balance(&request).await, prefund);
        let q = b.request_run(&user, &keys, &keys.identity, run_kp).await;
        assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
        assert_eq!(q.request, request);
        println!(
            "request of a prefunded address ({prefund} lamports there): transaction {} compute units, \
             the storyteller {} (of which Curta's open_run by CPI {}); the request's bump {} ({} tries)",
            q.sent.units,
            q.sent.units_of(&STORYTELLER_ID),
            q.sent.units_of(&PROGRAM_ID),
            q.bump,
            256 - q.bump as u32,
        );
        // The request holds its rent, or all that was sent if more; the
        // user paid only the shortfall.
        let held = prefund.max(request_rent);
        let shortfall = held - prefund;
        assert_eq!(b.balance(&request).await, held);
        assert_eq!(b.balance(&q.run).await, q.funding);
        assert_eq!(
            user_0 - b.balance(&user.pubkey()).await,
            q.sent.fee + shortfall + q.funding
        );
        let account = b.chain.account(&request).await.unwrap();
        assert_eq!(account.owner, STORYTELLER_ID);
        assert_eq!(account.data.len(), story::HEADER_LEN);
        let r = story::Request::read(&account.data).expect("a request");
        assert_eq!(r.user(), user.pubkey().as_array());
        assert_eq!(r.run(), q.run.as_array());
        assert_eq!(r.bump(), q.bump);
        let data = b.chain.data(&q.run).await;
        assert_eq!(
            RunAccount::read(&data).unwrap().opener(),
            request.as_array()
        );

        // Cancelled: the run's funding and everything the request held come
        // to the user, the lamports someone sent there included.
        let sent = b
            .send_as(&user, &[cancel_ix(&user.pubkey(), &request, &q.run)], &[])
            .await;
        assert_eq!(sent.result, Ok(()), "cancel: {:#?}", sent.logs);
        assert!(
            b.chain.account(&request).await.is_none(),
            "the request is closed"
        );
        assert!(b.chain.account(&q.run).await.is_none(), "the run is closed");
        assert_eq!(
            b.balance(&user.pubkey()).await,
            user_0 - q.sent.fee - sent.fee + prefund
        );
    }
}

/// `cancel` on a run not finished: the run closed through Curta, the
/// request closed, and every lamport but the fees, the royalties of the
/// tokens made and the crank fees of the turns sent back to the user.
/// Nobody else can cancel, signing as themselves or naming the user.
#[tokio::test]
async fn cancel_returns_every_lamport_of_an_unfinished_run() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let cranker = b.funded(SOL).await;
    let stranger = b.funded(SOL).await;
    let owner = b.owner;
    let keys = b.keys.clone();
    let user_0 = b.balance(&user.pubkey()).await;
    let cranker_0 = b.balance(&cranker.pubkey()).await;
    let owner_0 = b.balance(&owner).await;
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
    let (turns, turn_fees) = b.crank_turns(&cranker, &keys, &q.run, 2).await;
    assert!(turns == 2 && turns < q.turns, "the run is not finished");
    let royalties = b.balance(&owner).await - owner_0;

    // Someone else: as the user it is not, or naming the user unsigned.
    let ixs = [cancel_ix(&stranger.pubkey(), &q.request, &q.run)];
    b.refused(&stranger, &ixs, &[], code(StoryError::WrongUser))
        .await;
    let mut unsigned = cancel_ix(&user.pubkey(), &q.request, &q.run);
    unsigned.accounts[0].is_signer = false;
    b.refused(&stranger, &[unsigned], &[], code(StoryError::MissingSigner))
        .await;
    // The user, naming another run than the request's.
    let other = Pubkey::new_unique();
    let ixs = [cancel_ix(&user.pubkey(), &q.request, &other)];
    let wrong_run = b
        .refused(&user, &ixs, &[], code(StoryError::WrongRun))
        .await;

    let sent = b
        .send_as(&user, &[cancel_ix(&user.pubkey(), &q.request, &q.run)], &[])
        .await;
    assert_eq!(sent.result, Ok(()), "cancel: {:#?}", sent.logs);
    println!(
        "cancel: transaction {} compute units, the storyteller {} (of which Curta's close_run by CPI {})",
        sent.units,
        sent.units_of(&STORYTELLER_ID),
        sent.units_of(&PROGRAM_ID),
    );
    assert!(b.chain.account(&q.run).await.is_none(), "the run is closed");
    assert!(
        b.chain.account(&q.request).await.is_none(),
        "the request is closed"
    );
    // Every lamport: the run's rent, unspent escrow and crank deposit and
    // the request's rent are back.
    assert_eq!(
        user_0 - b.balance(&user.pubkey()).await,
        q.sent.fee + wrong_run.fee + sent.fee + royalties + CRANK_FEE * turns
    );
    assert_eq!(
        b.balance(&cranker.pubkey()).await,
        cranker_0 + CRANK_FEE * turns - turn_fees
    );
    assert_eq!(b.balance(&owner).await, owner_0 + royalties);

    // Once is all: the request is gone.
    let ixs = [cancel_ix(&user.pubkey(), &q.request, &q.run)];
    b.refused(&user, &ixs, &[], code(StoryError::NotStoryteller))
        .await;
}

/// A run that can never finish, its model retired (a weight account
/// closed by the owner): turns are refused, and `cancel` still gives the
/// user every lamport back.
#[tokio::test]
async fn cancel_after_the_model_is_retired() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let cranker = b.funded(SOL).await;
    let owner = b.owner;
    let keys = b.keys.clone();
    let user_0 = b.balance(&user.pubkey()).await;
    let owner_0 = b.balance(&owner).await;
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
    let (turns, _) = b.crank_turns(&cranker, &keys, &q.run, 1).await;
    assert_eq!(turns, 1);
    let royalties = b.balance(&owner).await - owner_0;

    // The owner retires the model: one of its weight accounts closed.
    let owner_key = b.owner_key.insecure_clone();
    let weight = *keys.weights.last().unwrap();
    let close = ix::close_weight(&PROGRAM_ID, &keys.model, &weight, &owner);
    let sent = b.send_as(&owner_key, &[close], &[]).await;
    assert_eq!(sent.result, Ok(()), "close_weight: {:#?}", sent.logs);
    assert!(b.chain.account(&weight).await.is_none());

    // The run cannot go on.
    let data = b.chain.data(&q.run).await;
    let state = RunAccount::read(&data).expect("a run").state();
    let info = StateInfo::read(state).unwrap();
    let turn = ix::turn(
        &PROGRAM_ID,
        &keys,
        &q.run,
        &cranker.pubkey(),
        &[],
        Some(info.turns),
    );
    b.refused(&cranker, &[turn], &[], CurtaError::ModelNotSealed as u32)
        .await;

    let sent = b
        .send_as(&user, &[cancel_ix(&user.pubkey(), &q.request, &q.run)], &[])
        .await;
    assert_eq!(sent.result, Ok(()), "cancel: {:#?}", sent.logs);
    assert!(b.chain.account(&q.run).await.is_none(), "the run is closed");
    assert!(
        b.chain.account(&q.request).await.is_none(),
        "the request is closed"
    );
    assert_eq!(
        user_0 - b.balance(&user.pubkey()).await,
        q.sent.fee + sent.fee + royalties + CRANK_FEE * turns
    );
}

/// A run account that is no longer Curta's (here removed from the bank, as
/// a run closed outside the storyteller would be): `cancel` skips the
/// close and still gives the user the request's lamports; the address,
/// whatever it holds, is left alone.
#[tokio::test]
async fn cancel_when_the_run_is_gone() {
    let mut b = Bank::start().await;
    let user = b.funded(10 * SOL).await;
    let keys = b.keys.clone();
    let q = b.request(&user, &keys, &keys.identity).await;
    assert_eq!(q.sent.result, Ok(()), "request: {:#?}", q.sent.logs);
    b.chain
        .ctx
        .set_account(&q.run, &AccountSharedData::default());
    assert!(b.chain.account(&q.run).await.is_none());
    // Someone sends the empty address lamports: they stay there.
    let stray = b.chain.rent(0).await;
    b.chain.fund(&q.run, stray).await;
    let request_rent = b.balance(&q.request).await;
    let user_0 = b.balance(&user.pubkey()).await;
    let sent = b
        .send_as(&user, &[cancel_ix(&user.pubkey(), &q.request, &q.run)], &[])
        .await;
    assert_eq!(sent.result, Ok(()), "cancel: {:#?}", sent.logs);
    assert!(
        b.chain.account(&q.request).await.is_none(),
        "the request is closed"
    );
    assert_eq!(
        b.balance(&q.run).await,
        stray,
        "the run's address untouched"
    );
    assert_eq!(
        b.balance(&user.pubkey()).await,
        user_0 - sent.fee + request_rent
    );
}
