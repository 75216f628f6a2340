//! A program asks, Curta delivers: `curta-localnet` with Curta deployed by
//! `curta deploy` and the minimal consumer (`examples/consumer`) preloaded.
//!
//! A user's one transaction creates the run and calls the consumer's `ask`,
//! which opens the run by CPI with a crank fee, a delivery fee and a
//! callback to its `receive`. `curta crank --once` run by another key, as a
//! separate process, sends every turn and then the delivery: Curta calls
//! `receive`, which writes the text (the native replay's) into the answer
//! account, and the run's rent and unspent deposits go back to the user in
//! the same transaction. Every lamport is accounted for: the user paid its
//! fee, the answer's rent, the royalty, the crank fees and the delivery
//! fee; the cranker earned the fees less its transactions'; the model's
//! owner the royalty. Prints the compute units of `ask` and the delivery.
//!
//! Needs `target/debug/curta` and `make build-sbf`'s programs (`make
//! test-e2e` builds them).

use curta_core::client::replay::{initial_state, replay};
use curta_core::inference::RunParams;
use curta_core::planner::CHARGES;
use curta_core::protocol::callback;
use curta_core::protocol::run::{self, CrankFee};
use curta_harness::curta::Curta;
use curta_replay::models::artifact;
use serde_json::Value;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::{read_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::RpcClient;
use solana_signer::Signer;
use solana_transaction::Transaction;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

const ROYALTY: u64 = 1_000;
const FEE: u64 = 10_000;
const DELIVERY_FEE: u64 = 20_000;
const MIN_FEE: &str = "6000";
const MAX_TOKENS: u32 = 12;
const PROMPT: &[u8] = b"Once upon a time";
/// What `ask` is given, and what the run's callback states it needs.
const ASK_CU: u32 = 60_000;
const CALLBACK_CU: u32 = 10_000;

/// The answer account's layout (`examples/consumer/src/lib.rs`).
const ANSWER_TAG: &[u8; 8] = b"ANSWER01";
const WRITTEN: usize = 137;
const TEXT_LEN: usize = 140;
const HEADER_LEN: usize = 144;
/// The most bytes a token's text takes (`ask` funds the answer for them).
const MAX_TOKEN_BYTES: usize = 128;

fn balance(rpc: &RpcClient, key: &Pubkey) -> u64 {
    rpc.get_balance(key).expect("balance")
}

fn rent(rpc: &RpcClient, len: usize) -> u64 {
    rpc.get_minimum_balance_for_rent_exemption(len)
        .expect("rent")
}

/// A landed transaction's fee, compute units and log.
fn landed(rpc: &RpcClient, signature: &str) -> (u64, u64, Vec<String>) {
    let v = shared::get_transaction(rpc, signature, "json");
    let meta = &v["meta"];
    assert_eq!(meta["err"], Value::Null, "{signature} failed: {v}");
    let logs = meta["logMessages"]
        .as_array()
        .expect("logs")
        .iter()
        .map(|l| l.as_str().unwrap_or_default().to_string())
        .collect();
    (
        meta["fee"].as_u64().expect("fee"),
        meta["computeUnitsConsumed"].as_u64().expect("units"),
        logs,
    )
}

/// What `program`'s first invocation in `logs` consumed (its callees'
/// included).
fn consumed(logs: &[String], program: &Pubkey) -> u64 {
    let prefix = format!("Program {program} consumed ");
    logs.iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'consumed' line of {program} in {logs:#?}"))
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// The validator, Curta and the consumer, a model and a cranker.
struct Net {
    _node: curta_harness::localnet::Localnet,
    rpc: RpcClient,
    consumer: Pubkey,
    program: Pubkey,
    keys: curta_client::instructions::ModelKeys,
    config: curta_core::Config,
    cranker: Curta,
    cranker_key: Keypair,
}

impl Net {
    /// One user asks, with `prefund` lamports sent to the answer's address
    /// first by someone else (0: none); the cranker cranks and delivers.
    /// Every check, then the figures.
    fn ask_and_deliver(&self, user: &Keypair, temperature_q16: u32, seed: u64, prefund: u64) {
        let rpc = &self.rpc;
        let (consumer, program, keys) = (self.consumer, self.program, &self.keys);
        // The native replay: the text, the tokens and the turns to pay for.
        let p = RunParams {
            prompt: PROMPT,
            max_tokens: MAX_TOKENS,
            temperature_q16,
            seed,
        };
        let art = artifact("stories260K");
        let start = initial_state(&art, &p).expect("a run");
        let replay = replay(&art, &start, CHARGES.allowance).expect("the replay");
        let turns = replay.steps.len() as u64;
        let text: Vec<u8> = replay.steps.iter().flat_map(|s| s.text.clone()).collect();
        let generated = replay.steps.last().expect("a turn").generated as u64;
        let crank = CrankFee::for_turns(FEE, turns);

        let run_key = Keypair::new();
        let run_addr = run_key.pubkey();
        let answer = Pubkey::find_program_address(&[b"answer", run_addr.as_ref()], &consumer).0;
        if prefund > 0 {
            // Anyone can send lamports to the address before the ask: here
            // the faucet.
            let sol = format!("{}", prefund as f64 / 1e9);
            ok(self.cranker.json(&["airdrop", &sol, &answer.to_string()]));
            assert_eq!(balance(rpc, &answer), prefund);
        }

        // The user's one transaction: [compute budget, create_account(run), ask].
        let run_len =
            run::account_size(&self.config, PROMPT.len(), MAX_TOKENS, callback::len(3, 1)).unwrap();
        let run_rent = rent(rpc, run_len);
        let held = run_rent + ROYALTY * MAX_TOKENS as u64 + crank.deposit + DELIVERY_FEE;
        let create = solana_system_interface::instruction::create_account(
            &user.pubkey(),
            &run_addr,
            held,
            run_len as u64,
            &program,
        );
        let mut data = vec![0u8];
        data.extend_from_slice(&MAX_TOKENS.to_le_bytes());
        data.extend_from_slice(&p.temperature_q16.to_le_bytes());
        data.extend_from_slice(&p.seed.to_le_bytes());
        data.extend_from_slice(&keys.royalty.to_le_bytes());
        data.extend_from_slice(&keys.identity);
        data.extend_from_slice(&crank.fee.to_le_bytes());
        data.extend_from_slice(&crank.deposit.to_le_bytes());
        data.extend_from_slice(&DELIVERY_FEE.to_le_bytes());
        data.extend_from_slice(&CALLBACK_CU.to_le_bytes());
        data.extend_from_slice(PROMPT);
        let ask = Instruction {
            program_id: consumer,
            accounts: vec![
                AccountMeta::new(user.pubkey(), true),
                AccountMeta::new(answer, false),
                AccountMeta::new(run_addr, true),
                AccountMeta::new_readonly(keys.config_account, false),
                AccountMeta::new_readonly(keys.model, false),
                AccountMeta::new_readonly(program, false),
                AccountMeta::new_readonly(Pubkey::default(), false),
            ],
            data,
        };
        let budget = ComputeBudgetInstruction::set_compute_unit_limit(ASK_CU);
        let cranker_key = &self.cranker_key;
        let (user_before, cranker_before, owner_before) = (
            balance(rpc, &user.pubkey()),
            balance(rpc, &cranker_key.pubkey()),
            balance(rpc, &keys.owner),
        );
        let blockhash = rpc.get_latest_blockhash().expect("blockhash");
        let tx = Transaction::new_signed_with_payer(
            &[budget, create, ask],
            Some(&user.pubkey()),
            &[user, &run_key],
            blockhash,
        );
        let ask_sig = rpc
            .send_and_confirm_transaction(&tx)
            .unwrap_or_else(|e| panic!("ask: {e}"));
        let (ask_fee, ask_tx_cu, ask_logs) = landed(rpc, &ask_sig.to_string());
        let ask_cu = consumed(&ask_logs, &consumer);
        let open_cu = consumed(&ask_logs, &program);
        // The answer holds its header, funded for the longest text (a
        // prefund above that stays in it).
        let funded = rent(rpc, HEADER_LEN + MAX_TOKEN_BYTES * MAX_TOKENS as usize);
        assert_eq!(balance(rpc, &answer), funded.max(prefund));
        assert_eq!(balance(rpc, &run_addr), held);
        assert_eq!(
            user_before - balance(rpc, &user.pubkey()),
            ask_fee + funded.saturating_sub(prefund) + held,
            "one transaction funded the answer and the run"
        );

        // Another key cranks every turn and delivers, in one pass.
        let mut cmd = self.cranker.command(&[
            "crank",
            "--once",
            "--min-fee",
            MIN_FEE,
            "--window",
            "8",
            "--output",
            "json",
        ]);
        let out = cmd.output().expect("curta crank");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{stderr}{stdout}");
        let pass: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
        eprintln!("cranker: {pass}");
        assert_eq!(pass["refused"].as_array().map(Vec::len), Some(0), "{pass}");
        assert_eq!(n(&pass, "turns"), turns, "{pass}");
        let deliveries = pass["deliveries"].as_array().expect("deliveries");
        assert_eq!(deliveries.len(), 1, "{pass}");
        let delivery = &deliveries[0];
        assert_eq!(
            delivery["run"].as_str(),
            Some(run_addr.to_string().as_str())
        );
        assert_eq!(n(delivery, "earned"), DELIVERY_FEE);
        assert_eq!(n(&pass, "earned"), FEE * turns + DELIVERY_FEE, "{pass}");

        // The answer: the replay's text, its rent and nothing more.
        let a = rpc.get_account(&answer).expect("the answer");
        assert_eq!(a.owner, consumer);
        assert_eq!(&a.data[..8], ANSWER_TAG);
        assert_eq!(a.data[WRITTEN], 1, "written");
        let len = u32::from_le_bytes(a.data[TEXT_LEN..TEXT_LEN + 4].try_into().unwrap()) as usize;
        assert_eq!(
            &a.data[HEADER_LEN..HEADER_LEN + len],
            &text[..],
            "the answer is the native replay's text: {:?}",
            String::from_utf8_lossy(&a.data[HEADER_LEN..])
        );
        assert_eq!(a.data.len(), HEADER_LEN + text.len());
        let answer_rent = rent(rpc, a.data.len());
        assert_eq!(a.lamports, answer_rent, "the answer keeps only its rent");
        assert!(
            rpc.get_account(&run_addr).is_err() && balance(rpc, &run_addr) == 0,
            "the run is closed"
        );

        // Every lamport: the cranker's transactions read from the chain. A
        // turn the crank sent ahead of its predecessor may fail as stale on
        // a slow machine; `turn_history` checks that is the only failure, and
        // the crank's report counts it and its fee.
        let turns_seen = turn_history(rpc, &run_addr, &program);
        assert_eq!(
            (turns_seen.done, turns_seen.stale),
            (turns, n(&pass, "failed")),
            "{pass}"
        );
        let mut cranker_fees = 0;
        let mut cranker_failed = 0;
        let mut delivery_tx = None;
        for l in history(rpc, &run_addr) {
            if l.tx.message.account_keys[0] == cranker_key.pubkey() {
                cranker_fees += l.fee;
                cranker_failed += u64::from(l.err.is_some());
            } else {
                assert_eq!(l.err, None, "{} failed", l.signature);
                assert_eq!(l.signature, ask_sig, "only the ask is the user's");
            }
            if l.signature.to_string() == delivery["signature"].as_str().unwrap() {
                delivery_tx = Some(l.signature);
            }
        }
        assert_eq!(cranker_failed, turns_seen.stale, "only stale turns failed");
        let delivery_sig = delivery_tx.expect("the delivery in the run's history");
        assert_eq!(cranker_fees, n(&pass, "fees"), "{pass}");
        let royalties = ROYALTY * generated;
        let crank_fees = FEE * turns;
        let user_cost = ask_fee + answer_rent + royalties + crank_fees + DELIVERY_FEE;
        assert_eq!(
            user_before as i128 - balance(rpc, &user.pubkey()) as i128,
            user_cost as i128 - prefund as i128,
            "the user paid its fee, the answer's rent, the royalty, the crank fees and the \
             delivery fee (less what someone sent the answer's address)"
        );
        assert_eq!(
            balance(rpc, &cranker_key.pubkey()) as i128 - cranker_before as i128,
            (crank_fees + DELIVERY_FEE) as i128 - cranker_fees as i128,
            "the cranker earned the crank and delivery fees less its transactions' fees"
        );
        assert_eq!(
            balance(rpc, &keys.owner) - owner_before,
            royalties,
            "the owner was paid the royalty"
        );

        let (delivery_fee, delivery_tx_cu, delivery_logs) = landed(rpc, &delivery_sig.to_string());
        let deliver_cu = consumed(&delivery_logs, &program);
        let receive_cu = consumed(&delivery_logs, &consumer);
        eprintln!(
            "answer {:?}: {turns} turns, {generated} tokens, {} bytes; {prefund} lamports at \
             the answer's address before the ask",
            String::from_utf8_lossy(&text),
            text.len()
        );
        eprintln!(
            "ask: {ask_cu} compute units (Curta's open_run by CPI {open_cu}); its transaction \
             {ask_tx_cu} with create_account and the compute budget, fee {ask_fee}"
        );
        eprintln!(
            "delivery: deliver {deliver_cu} compute units, of which the callback (receive) \
             {receive_cu}; its transaction {delivery_tx_cu}, fee {delivery_fee}"
        );
        eprintln!(
            "the user paid {user_cost} lamports: {ask_fee} fee, {answer_rent} answer rent \
             ({} bytes), {royalties} royalty, {crank_fees} crank fees, {DELIVERY_FEE} delivery \
             fee; the run's {run_rent} rent, its unspent deposits and the answer's unused room \
             came back at delivery",
            a.data.len()
        );
        eprintln!(
            "the cranker earned {} for {cranker_fees} of fees ({} transactions, {} failed)",
            crank_fees + DELIVERY_FEE,
            n(&pass, "transactions"),
            n(&pass, "failed")
        );

        // `receive` once more, directly: the text is there, nothing changes.
        let again = Instruction {
            program_id: consumer,
            accounts: vec![
                AccountMeta::new(answer, false),
                AccountMeta::new_readonly(run_addr, false),
                AccountMeta::new(user.pubkey(), false),
            ],
            data: vec![1],
        };
        let blockhash = rpc.get_latest_blockhash().expect("blockhash");
        let tx =
            Transaction::new_signed_with_payer(&[again], Some(&user.pubkey()), &[user], blockhash);
        rpc.send_and_confirm_transaction(&tx)
            .unwrap_or_else(|e| panic!("receive again: {e}"));
        let after = rpc.get_account(&answer).expect("the answer");
        assert_eq!((after.data, after.lamports), (a.data, a.lamports));
    }
}

#[test]
fn a_program_asks_and_curta_delivers_the_answer() {
    let consumer_so = curta_replay::deploy_dir().join("curta_consumer.so");
    assert!(
        consumer_so.is_file(),
        "{} is missing: run `make build-sbf`",
        consumer_so.display()
    );
    let consumer = Pubkey::new_unique();
    let node = start_with(&[
        "--bpf-program".as_ref(),
        consumer.to_string().as_ref(),
        consumer_so.as_os_str(),
    ]);
    let dir = workdir("consumer");
    let curta = ok(Curta::new(&node, &dir));
    ok(curta.deploy(&so()));
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &artifact("stories260K")[..]).expect("artifact");
    let royalty = ROYALTY.to_string();
    let u = ok(curta.json(&[
        "model",
        "upload",
        &path.to_string_lossy(),
        "--royalty",
        &royalty,
    ]));
    let model: Pubkey = u["model"].as_str().expect("model").parse().unwrap();
    let program = read_keypair_file(&curta.program).expect("program").pubkey();
    let rpc = rpc(&node);
    let info = curta_client::model::parse_model(&model, &rpc.get_account_data(&model).unwrap())
        .expect("the model");
    let (cranker, cranker_key) = funded(&curta, &dir, "cranker", "10");
    let (_, user) = funded(&curta, &dir, "user", "10");
    let net = Net {
        _node: node,
        rpc,
        consumer,
        program,
        keys: info.keys,
        config: info.config,
        cranker,
        cranker_key,
    };
    net.ask_and_deliver(&user, 0, 0, 0);
    // Lamports sent to the answer's address first: `ask` tops them up
    // (transfer, allocate, assign) and they reach the user at delivery.
    net.ask_and_deliver(&user, 52_429, 7, 1_000_000);
    let _ = std::fs::remove_dir_all(&dir);
}
