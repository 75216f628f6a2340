//! Programs and paid crankers on a real validator: `curta-localnet` with
//! Curta deployed by `curta deploy` and the example consumer
//! (`examples/storyteller`) preloaded.
//!
//! A user asks the storyteller for a story in one transaction (the run's
//! creation and the storyteller's `request`, which opens the run by CPI with
//! a crank fee and its deposit). `curta crank` run by another key, as a
//! separate process, finishes the run and earns the fee; anyone then has
//! the storyteller take the text, equal to the native replay's, and close
//! the run. Every signer's balance change is its fees, fees earned,
//! royalty and rent, exactly. Then two crankers race over two more
//! requests: each is paid for exactly the turns it landed, and no lamport
//! is lost.
//!
//! Needs `target/debug/curta` and `make build-sbf`'s two programs
//! (`make test-e2e` builds them).

use std::collections::BTreeMap;

use curta_client::instructions::ModelKeys;
use curta_core::client::replay::{initial_state, replay, Replay};
use curta_core::inference::RunParams;
use curta_core::planner::CHARGES;
use curta_core::protocol::run::CrankFee;
use curta_harness::curta::Curta;
use curta_harness::localnet::Localnet;
use curta_replay::models::artifact;
use curta_replay::storyteller::Storyteller;
use curta_storyteller::state::Request as RequestAccount;
use serde_json::Value;
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
const MIN_FEE: &str = "6000";

fn balance(rpc: &RpcClient, key: &Pubkey) -> u64 {
    rpc.get_balance(key).expect("balance")
}

/// A story asked for, and what asking cost its user.
struct Asked {
    run: Pubkey,
    request: Pubkey,
    user: Keypair,
    replay: Replay,
    crank: CrankFee,
    /// The request transaction's fee.
    fee: u64,
}

struct Net {
    /// The validator, stopped when the test ends.
    _node: Localnet,
    rpc: RpcClient,
    story: Storyteller,
    keys: ModelKeys,
    config: curta_core::Config,
}

impl Net {
    /// The user's one transaction: create the run, and the storyteller's
    /// `request` (which opens it by CPI), its crank deposit the fee for
    /// each of the native replay's turns.
    fn ask(&self, user: Keypair, prompt: &'static [u8], temperature_q16: u32, seed: u64) -> Asked {
        let p = RunParams {
            prompt,
            max_tokens: 12,
            temperature_q16,
            seed,
        };
        let art = artifact("stories260K");
        let start = initial_state(&art, &p).expect("a run");
        let replay = replay(&art, &start, CHARGES.allowance).expect("the replay");
        let crank = CrankFee::for_turns(FEE, replay.steps.len() as u64);
        let len = Storyteller::run_len(&self.config, &p);
        let rent = self
            .rpc
            .get_minimum_balance_for_rent_exemption(len)
            .expect("rent");
        let held = rent + ROYALTY * 12 + crank.deposit;
        let run = Keypair::new();
        let create = solana_system_interface::instruction::create_account(
            &user.pubkey(),
            &run.pubkey(),
            held,
            len as u64,
            &self.story.curta,
        );
        let request = self
            .story
            .request(&user.pubkey(), &run.pubkey(), &self.keys, &p, &crank, 0);
        let fee = self.send(&[create, request], &user, &[&run]);
        Asked {
            run: run.pubkey(),
            request: self.story.request_address(&run.pubkey()),
            user,
            replay,
            crank,
            fee,
        }
    }

    /// Sends and confirms a transaction paid by `payer`: its fee.
    fn send(
        &self,
        ixs: &[solana_instruction::Instruction],
        payer: &Keypair,
        others: &[&Keypair],
    ) -> u64 {
        let blockhash = self.rpc.get_latest_blockhash().expect("blockhash");
        let mut signers = vec![payer];
        signers.extend_from_slice(others);
        let tx =
            Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &signers, blockhash);
        let fee = self.rpc.get_fee_for_message(&tx.message).expect("fee");
        self.rpc
            .send_and_confirm_transaction(&tx)
            .unwrap_or_else(|e| panic!("{e}"));
        fee
    }

    /// Has `by` send the storyteller's `fulfill`; checks the text is the
    /// replay's and the run is closed, and that the user's balance moved by
    /// exactly the request's fee, the request account's rent, the royalty
    /// and the crank fees paid: the rest of its deposits came back.
    fn fulfill(&self, a: &Asked, by: &Keypair, user_before: u64) {
        let before_run = self.rpc.get_account(&a.run).expect("the run");
        let data = before_run.data.clone();
        let r = curta_core::protocol::RunAccount(&data);
        let (paid, crank_paid) = (r.paid(), r.crank_paid());
        self.send(
            &[self.story.fulfill(&a.request, &a.run, &a.user.pubkey())],
            by,
            &[],
        );
        assert!(self.rpc.get_account(&a.run).is_err(), "the run is closed");
        let request = self.rpc.get_account(&a.request).expect("the request");
        let text: Vec<u8> = a.replay.steps.iter().flat_map(|s| s.text.clone()).collect();
        let story = RequestAccount::read(&request.data).expect("a request");
        assert_eq!(story.text(), &text[..], "the story is the native replay's");
        let rent = self
            .rpc
            .get_minimum_balance_for_rent_exemption(request.data.len())
            .expect("rent");
        assert_eq!(request.lamports, rent, "the request keeps only its rent");
        let generated = a.replay.steps.last().map_or(0, |s| s.generated) as u64;
        assert_eq!(paid, ROYALTY * generated);
        assert_eq!(crank_paid, a.crank.deposit, "every turn was paid");
        assert_eq!(
            user_before - balance(&self.rpc, &a.user.pubkey()),
            a.fee + rent + paid + crank_paid,
            "the user paid its fee, the request's rent, the royalty and the crank fees"
        );
        eprintln!(
            "story {:?}: {} turns, the user paid {} lamports ({} fee, {rent} rent, {paid} royalty, \
             {crank_paid} crank fees)",
            String::from_utf8_lossy(&text),
            a.replay.steps.len(),
            a.fee + rent + paid + crank_paid,
            a.fee
        );
    }
}

/// `curta crank --once --min-fee` by `c`: its pass, as JSON (`json_of`).
fn crank_once(c: &Curta) -> std::process::Child {
    spawn_json(
        c,
        &["crank", "--once", "--min-fee", MIN_FEE, "--window", "8"],
    )
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn a_program_asks_for_a_story_and_paid_crankers_finish_it() {
    let story_so = curta_replay::deploy_dir().join("curta_storyteller.so");
    assert!(
        story_so.is_file(),
        "{} is missing: run `make build-sbf`",
        story_so.display()
    );
    let story_id = Pubkey::new_unique();
    let node = start_with(&[
        "--bpf-program".as_ref(),
        story_id.to_string().as_ref(),
        story_so.as_os_str(),
    ]);
    let dir = workdir("paid-crank");
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
    let model: Pubkey = u["model"]
        .as_str()
        .expect("model")
        .parse()
        .expect("address");
    let program = read_keypair_file(&curta.program).expect("program").pubkey();
    let rpc = rpc(&node);
    let info = curta_client::model::parse_model(&model, &rpc.get_account_data(&model).unwrap())
        .expect("the model");
    let owner = info.keys.owner;
    let net = Net {
        rpc,
        story: Storyteller {
            program: story_id,
            curta: program,
        },
        keys: info.keys.clone(),
        config: info.config,
        _node: node,
    };
    let (cranker_a, a_key) = funded(&curta, &dir, "cranker-a", "10");
    let (cranker_b, b_key) = funded(&curta, &dir, "cranker-b", "10");
    let (_, fulfiller) = funded(&curta, &dir, "fulfiller", "10");

    // A run that pays no fee, which --min-fee skips.
    let free = ok(curta.json(&[
        "run",
        "open",
        "--model",
        &model.to_string(),
        "--prompt",
        "Once",
        "--max-tokens",
        "2",
    ]));
    let free_run = free["run"].as_str().expect("run").to_string();

    // A run opened from the command line for crankers to finish.
    let (cli_user, cli_key) = funded(&curta, &dir, "cli-user", "10");
    let cli_before = balance(&net.rpc, &cli_key.pubkey());
    let fee = FEE.to_string();
    let opened = ok(cli_user.json(&[
        "generate",
        "--no-crank",
        "--model",
        &model.to_string(),
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "8",
        "--temperature",
        "0.8",
        "--seed",
        "3",
        "--crank-fee",
        &fee,
    ]));
    let cli_run: Pubkey = opened["run"].as_str().expect("run").parse().unwrap();
    // What the opener chose, not the sampler's running state.
    let shown = ok(curta.json(&["run", "show", &cli_run.to_string()]));
    assert_eq!(
        (n(&shown, "seed"), n(&shown, "crank_fee")),
        (3, FEE),
        "{shown}"
    );
    assert_eq!(n(&opened, "crank_fee"), FEE, "{opened}");
    let cli_turns = n(&opened, "crank_deposit") / FEE;

    // One user, one transaction; one cranker, a separate process.
    let (_, user) = funded(&curta, &dir, "user", "10");
    let user_before = balance(&net.rpc, &user.pubkey());
    let asked = net.ask(user, b"Once upon a time", 0, 0);
    assert_eq!(
        user_before - balance(&net.rpc, &asked.user.pubkey()),
        asked.fee
            + net.rpc.get_balance(&asked.request).unwrap()
            + net.rpc.get_balance(&asked.run).unwrap(),
        "one transaction funded the request and the run"
    );
    let owner_before = balance(&net.rpc, &owner);
    let a_before = balance(&net.rpc, &a_key.pubkey());
    let pass = json_of(crank_once(&cranker_a));
    eprintln!("cranker A: {pass}");
    assert_eq!(pass["refused"].as_array().map(Vec::len), Some(0), "{pass}");
    assert_eq!(
        n(&pass, "skipped_below_min_fee"),
        1,
        "the fee-less run: {pass}"
    );
    let turns = asked.replay.steps.len() as u64;
    assert_eq!(n(&pass, "turns"), turns + cli_turns, "{pass}");
    assert_eq!(n(&pass, "earned"), FEE * (turns + cli_turns), "{pass}");
    let (earned, fees) = (n(&pass, "earned"), n(&pass, "fees"));
    assert_eq!(
        balance(&net.rpc, &a_key.pubkey()) as i128 - a_before as i128,
        earned as i128 - fees as i128,
        "the cranker's change is what it earned less its fees"
    );
    eprintln!(
        "cranker A: {} turns, earned {earned}, spent {fees} in fees: {} a turn",
        turns + cli_turns,
        (earned as i128 - fees as i128) / (turns + cli_turns) as i128
    );
    // The command line's run, closed by its opener: it paid its two
    // transactions' fees, the royalty and the crank fees, no more.
    let data = net.rpc.get_account_data(&cli_run).expect("the run");
    let r = curta_core::protocol::RunAccount(&data);
    assert!(curta_core::StateInfo::read(r.state()).unwrap().complete);
    let (royalty_paid, crank_paid) = (r.paid(), r.crank_paid());
    let shown = ok(curta.json(&["run", "show", &cli_run.to_string()]));
    assert_eq!(n(&shown, "seed"), 3, "after its turns too: {shown}");
    assert_eq!(n(&shown, "crank_paid"), crank_paid, "{shown}");
    assert_eq!(crank_paid, FEE * cli_turns);
    ok(cli_user.json(&["run", "close", &cli_run.to_string()]));
    // A one-signature message's fee: what closing cost the opener.
    let blockhash = net.rpc.get_latest_blockhash().expect("blockhash");
    let mut one = Transaction::new_with_payer(&[], Some(&cli_key.pubkey())).message;
    one.recent_blockhash = blockhash;
    let close_fee = net.rpc.get_fee_for_message(&one).expect("fee");
    assert_eq!(
        cli_before - balance(&net.rpc, &cli_key.pubkey()),
        n(&opened, "fees") + close_fee + royalty_paid + crank_paid,
        "the command line's opener paid its fees, the royalty and the crank fees"
    );
    net.fulfill(&asked, &fulfiller, user_before);
    let generated = asked.replay.steps.last().unwrap().generated as u64;
    assert_eq!(
        balance(&net.rpc, &owner) - owner_before,
        ROYALTY * generated + royalty_paid,
        "the owner was paid the royalty of both runs"
    );
    let s = ok(curta.json(&["run", "show", &free_run]));
    assert_eq!(s["turns"], 0, "the fee-less run was left alone: {s}");

    // Two crankers race over two requests: each is paid for the turns it
    // landed, and nothing is lost.
    let mut asks = vec![];
    for (seed, who) in [(1, "user-1"), (2, "user-2")] {
        let (_, user) = funded(&curta, &dir, who, "10");
        let before = balance(&net.rpc, &user.pubkey());
        asks.push((net.ask(user, b"Once upon a time", 52_429, seed), before));
    }
    let befores = [&a_key, &b_key].map(|k| balance(&net.rpc, &k.pubkey()));
    let racers = [crank_once(&cranker_a), crank_once(&cranker_b)];
    let passes = racers.map(json_of);
    let mut landed: BTreeMap<String, u64> = BTreeMap::new();
    for ((who, pass), (key, before)) in ["A", "B"]
        .iter()
        .zip(&passes)
        .zip([&a_key, &b_key].iter().zip(befores))
    {
        let (earned, fees, turns) = (n(pass, "earned"), n(pass, "fees"), n(pass, "turns"));
        assert_eq!(
            earned,
            FEE * turns,
            "{who} is paid for each turn it landed: {pass}"
        );
        assert_eq!(
            balance(&net.rpc, &key.pubkey()) as i128 - before as i128,
            earned as i128 - fees as i128,
            "{who}: earned less fees, exactly"
        );
        eprintln!(
            "racing cranker {who}: {turns} turns landed, {} failed, earned {earned}, spent {fees}",
            n(pass, "failed")
        );
        for r in pass["runs"].as_array().expect("runs") {
            *landed.entry(r["run"].as_str().unwrap().into()).or_default() += n(r, "turns");
        }
    }
    for (a, before) in &asks {
        assert_eq!(
            landed.get(&a.run.to_string()).copied(),
            Some(a.replay.steps.len() as u64),
            "each turn landed once"
        );
        net.fulfill(a, &fulfiller, *before);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
