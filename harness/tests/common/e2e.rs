//! What the tests on a real validator share (`e2e.rs`, `rpc_faults.rs`):
//! `curta-localnet` started on free ports, a folder per test, the golden
//! runs' arguments and receipts, and the validator's transaction history
//! read directly, decoded to curta instructions.

#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;
use std::time::{Duration, Instant};

use curta_core::protocol::Instruction as CurtaIx;
use curta_harness::localnet::Localnet;
use curta_harness::manifest::{self, RunSpec};
use curta_harness::receipt::Receipt;
use serde_json::{json, Value};
use solana_commitment_config::CommitmentConfig;
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::{GetConfirmedSignaturesForAddress2Config, RpcClient};
use solana_rpc_client_api::request::RpcRequest;
use solana_signature::Signature;
use solana_transaction::{Transaction, TransactionError};

pub fn start() -> Localnet {
    let net = Localnet::builder()
        .binary(env!("CARGO_BIN_EXE_curta-localnet"))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "curta-localnet at {} ready in {:.1} s",
        net.rpc_url(),
        net.started_in().as_secs_f64()
    );
    net
}

/// A fresh folder under target/e2e for one test.
pub fn workdir(name: &str) -> PathBuf {
    let dir = curta_harness::root()
        .join("target/e2e")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("target/e2e");
    dir
}

pub fn rpc(net: &Localnet) -> RpcClient {
    RpcClient::new_with_commitment(net.rpc_url().to_string(), CommitmentConfig::confirmed())
}

pub fn so() -> PathBuf {
    let so = curta_harness::deploy_dir().join("curta_program.so");
    assert!(
        so.is_file(),
        "{} is missing: run `make build-sbf`",
        so.display()
    );
    so
}

pub fn spec(name: &str) -> RunSpec {
    manifest::load()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} is not in golden/manifest.json"))
}

pub fn golden(name: &str) -> Receipt {
    Receipt::load(name).unwrap_or_else(|| panic!("no golden receipt for {name}"))
}

pub fn ok<T>(r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// The arguments of a run's parameters, temperature as a decimal.
pub fn run_args(spec: &RunSpec) -> Vec<String> {
    let t = spec.temperature_q16;
    // Every manifest temperature is a decimal the client rounds back to
    // exactly this q16 (0.8 is 52,429).
    let temperature = format!("{}", (t as f64 / 65_536.0 * 1e4).round() / 1e4);
    vec![
        "--prompt".into(),
        String::from_utf8(spec.prompt.clone()).expect("UTF-8 prompt"),
        "--max-tokens".into(),
        spec.max_tokens.to_string(),
        "--temperature".into(),
        temperature,
        "--seed".into(),
        spec.seed.to_string(),
    ]
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a crank's turns against the golden receipt: every turn's state
/// hash, in order, and the tokens of each.
pub fn check_turns(name: &str, crank: &Value, receipt: &Receipt) {
    let turns = crank["turns"].as_array().expect("turns");
    for t in turns {
        let n = t["turn"].as_u64().expect("turn") as usize;
        let want = &receipt.turns[n];
        assert_eq!(
            t["state_sha256"].as_str(),
            Some(want.state_sha256.as_str()),
            "{name}: turn {n}'s state differs from the golden receipt"
        );
        assert_eq!(
            t["generated"].as_u64(),
            Some(want.generated as u64),
            "{name}: turn {n}"
        );
    }
    assert_eq!(
        crank["final_state_sha256"].as_str(),
        receipt.turns.last().map(|t| t.state_sha256.as_str()),
        "{name}: final state"
    );
}

/// Every transaction that names `address`, oldest first, with its
/// instructions, fee and error.
pub struct Landed {
    pub signature: Signature,
    pub tx: Transaction,
    pub fee: u64,
    pub err: Option<TransactionError>,
}

pub fn history(rpc: &RpcClient, address: &Pubkey) -> Vec<Landed> {
    let mut sigs = vec![];
    let mut before = None;
    loop {
        let page = rpc
            .get_signatures_for_address_with_config(
                address,
                GetConfirmedSignaturesForAddress2Config {
                    before,
                    until: None,
                    limit: Some(1000),
                    commitment: Some(CommitmentConfig::confirmed()),
                },
            )
            .expect("getSignaturesForAddress");
        let Some(last) = page.last() else { break };
        before = Some(last.signature.parse().expect("signature"));
        let n = page.len();
        sigs.extend(page);
        if n < 1000 {
            break;
        }
    }
    // Newest first, within a slot by falling position: reversed, oldest first.
    sigs.reverse();
    sigs.iter()
        .map(|s| {
            let signature: Signature = s.signature.parse().expect("signature");
            let v: Value = rpc
                .send(
                    RpcRequest::GetTransaction,
                    json!([s.signature, {"encoding": "base64", "commitment": "confirmed",
                           "maxSupportedTransactionVersion": 0}]),
                )
                .expect("getTransaction");
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(v["transaction"][0].as_str().expect("base64 transaction"))
                .expect("base64");
            let tx: Transaction = bincode::deserialize(&raw).expect("a legacy transaction");
            Landed {
                signature,
                tx,
                fee: v["meta"]["fee"].as_u64().expect("fee"),
                err: serde_json::from_value(v["meta"]["err"].clone()).expect("err"),
            }
        })
        .collect()
}

/// The curta instructions of a transaction, decoded, with their accounts.
pub fn curta_ixs<'a>(tx: &'a Transaction, program: &Pubkey) -> Vec<(CurtaIx<'a>, Vec<Pubkey>)> {
    let keys = &tx.message.account_keys;
    tx.message
        .instructions
        .iter()
        .filter(|i| keys[i.program_id_index as usize] == *program)
        .filter_map(|i| {
            let accounts = i.accounts.iter().map(|&a| keys[a as usize]).collect();
            Some((CurtaIx::decode(&i.data)?, accounts))
        })
        .collect()
}

/// Waits for a stderr line that `done` accepts; panics if the process
/// exits first.
pub fn wait_for(
    child: &mut std::process::Child,
    lines: &std::sync::mpsc::Receiver<String>,
    what: &str,
    done: impl Fn(&str) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if done(&line) => return,
            Ok(_) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("curta exited before {what}: {:?}", child.wait())
            }
        }
        assert!(Instant::now() < deadline, "no {what} in 300 s");
    }
}
