//! What the tests on a real validator share (`e2e`, `faults`): a
//! `curta-localnet` and a work folder per test, the golden runs' specs,
//! receipts and arguments, a crank's turns checked against its receipt, and
//! the validator's transaction history, decoded.

#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;
use std::time::{Duration, Instant};

use curta_core::protocol::Instruction as CurtaIx;
use curta_harness::curta::Curta;
use curta_harness::localnet::Localnet;
use curta_replay::manifest::{self, RunSpec};
use curta_replay::receipt::Receipt;
use serde_json::{json, Value};
use solana_commitment_config::CommitmentConfig;
use solana_keypair::{read_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::{GetConfirmedSignaturesForAddress2Config, RpcClient};
use solana_rpc_client_api::request::RpcRequest;
use solana_signature::Signature;
use solana_transaction::{Transaction, TransactionError};

/// Agave's validator's smallest `--limit-ledger-size`; far more shreds
/// than any of these tests writes.
const KEEP_ALL_SHREDS: &str = "50000000";

pub fn start() -> Localnet {
    start_with(&[])
}

/// A `curta-localnet` with these flags besides its defaults.
///
/// It keeps its whole history: these tests read every transaction of a
/// run after it ends ([`history`]), and at the default 10,000 shreds the
/// ledger's cleanup deletes the oldest slots once RocksDB flushes
/// (README, "History").
pub fn start_with(args: &[&std::ffi::OsStr]) -> Localnet {
    let net = args
        .iter()
        .fold(
            Localnet::builder()
                .binary(env!("CARGO_BIN_EXE_curta-localnet"))
                .arg("--limit-ledger-size")
                .arg(KEEP_ALL_SHREDS),
            |b, a| b.arg(a),
        )
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
    let dir = curta_replay::root()
        .join("target/e2e")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("target/e2e");
    dir
}

/// A signer of its own for `curta`, made and funded with curta alone, and
/// its keypair.
pub fn funded(curta: &Curta, dir: &std::path::Path, name: &str, sol: &str) -> (Curta, Keypair) {
    let path = dir.join(format!("{name}.json"));
    ok(curta.json(&["keygen", "-o", &path.to_string_lossy()]));
    let c = Curta {
        keypair: path.clone(),
        state_dir: dir.join(format!("state-{name}")),
        ..curta.clone()
    };
    ok(c.json(&["airdrop", sol]));
    (
        c,
        read_keypair_file(&path).expect("a keypair curta keygen wrote"),
    )
}

pub fn rpc(net: &Localnet) -> RpcClient {
    RpcClient::new_with_commitment(net.rpc_url().to_string(), CommitmentConfig::confirmed())
}

/// The program's build: SBPF v3, `make build-sbf`'s.
pub fn so() -> PathBuf {
    built(
        curta_replay::deploy_dir().join("curta_program.so"),
        "build-sbf",
    )
}

/// The SBPF v0 fallback, `make build-sbf-v0`'s.
pub fn so_v0() -> PathBuf {
    built(
        curta_replay::root().join("target/deploy-v0/curta_program.so"),
        "build-sbf-v0",
    )
}

fn built(so: PathBuf, target: &str) -> PathBuf {
    assert!(
        so.is_file(),
        "{} is missing: run `make {target}`",
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

/// `curta ARGS --output json` by `c`, started (with others, to race).
pub fn spawn_json(c: &Curta, args: &[&str]) -> std::process::Child {
    let mut cmd = c.command(args);
    cmd.args(["--output", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("curta")
}

/// What a `spawn_json` command printed, once it has succeeded: one JSON
/// object.
pub fn json_of(child: std::process::Child) -> Value {
    let out = child.wait_with_output().expect("curta");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}{stdout}");
    serde_json::from_str(stdout.trim()).expect("one JSON object")
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
    pub slot: u64,
    pub tx: Transaction,
    pub fee: u64,
    /// The compute units it consumed (the program's and the builtins').
    pub cu: u64,
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
    // A signature listed twice (seen in two slots) is one transaction: it
    // is kept at its newest listing, with every slot it was listed in.
    // Newest first, within a slot by falling position: reversed, oldest
    // first.
    let mut listed: Vec<(String, Vec<u64>)> = vec![];
    for s in sigs {
        match listed.iter_mut().find(|(sig, _)| *sig == s.signature) {
            Some((_, slots)) => slots.push(s.slot),
            None => listed.push((s.signature, vec![s.slot])),
        }
    }
    listed.reverse();
    listed
        .iter()
        .filter_map(|(signature, slots)| {
            let v = listed_transaction(rpc, signature, slots)?;
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(v["transaction"][0].as_str().expect("base64 transaction"))
                .expect("base64");
            let tx: Transaction = bincode::deserialize(&raw).expect("a legacy transaction");
            Some(Landed {
                signature: signature.parse().expect("signature"),
                slot: v["slot"].as_u64().expect("slot"),
                tx,
                fee: v["meta"]["fee"].as_u64().expect("fee"),
                cu: v["meta"]["computeUnitsConsumed"].as_u64().unwrap_or(0),
                err: serde_json::from_value(v["meta"]["err"].clone()).expect("err"),
            })
        })
        .collect()
}

/// `getTransaction` at `confirmed` (null when the node has none).
pub fn get_transaction(rpc: &RpcClient, signature: &str, encoding: &str) -> Value {
    rpc.send(
        RpcRequest::GetTransaction,
        json!([signature, {"encoding": encoding, "commitment": "confirmed",
               "maxSupportedTransactionVersion": 0}]),
    )
    .expect("getTransaction")
}

/// A transaction `getSignaturesForAddress` listed in `slots`, as
/// `getTransaction` gives it (base64), or as the block it is in gives it,
/// or `None` when it is in none of them.
///
/// A validator SIGKILLed mid-slot can leave behind the status and address
/// listing its bank wrote for a transaction whose block never reached the
/// ledger; restarted, it builds a new block at that slot number, which is
/// rooted. The index then names a transaction the block does not hold, and
/// `getTransaction`, finding the stale status first, answers null, even when
/// the transaction, sent again, landed in a later slot (seen in CI twice,
/// a status finalized at the slot of the crash and no transaction; Agave
/// writes a bank's statuses before its shreds are all stored, and nothing
/// deletes them when the bank is lost). The blocks are the ledger, so each block it was listed in is searched: found, it is taken
/// from there; found nowhere, it never landed (it paid nothing) and is left
/// out, said on stderr.
fn listed_transaction(rpc: &RpcClient, signature: &str, slots: &[u64]) -> Option<Value> {
    let v = get_transaction(rpc, signature, "base64");
    if !v.is_null() {
        return Some(v);
    }
    for &slot in slots {
        let block: Value = match rpc.send(
            RpcRequest::GetBlock,
            json!([slot, {"encoding": "base64", "transactionDetails": "full",
                   "rewards": false, "commitment": "confirmed",
                   "maxSupportedTransactionVersion": 0}]),
        ) {
            Ok(block) => block,
            Err(e) => {
                eprintln!("history: no block {slot} to look for {signature} in: {e}");
                continue;
            }
        };
        // A transaction's first signature, after its one-byte count, is
        // its name, whatever its version.
        let wanted: Signature = signature.parse().expect("signature");
        let found = block["transactions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| {
                use base64::Engine;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(t["transaction"][0].as_str().expect("base64 transaction"))
                    .expect("base64");
                raw.get(1..65) == Some(wanted.as_ref())
            });
        if let Some(t) = found {
            let mut t = t.clone();
            t["slot"] = json!(slot);
            return Some(t);
        }
    }
    eprintln!(
        "history: {signature}, listed in slots {slots:?}, is in none of their blocks (a \
         transaction of a block lost when the validator died): left out"
    );
    None
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

/// Whether an upload's progress line ("writing weights: D/T ...") says a
/// third of the weights or more are written.
pub fn a_third_written(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("writing weights: ") else {
        return false;
    };
    let (done, total) = rest.split_once('/').unwrap_or(("0", "1"));
    let total: u64 = total
        .split(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    3 * done.parse::<u64>().unwrap_or(0) >= total
}

/// Ctrl-C to a running `curta` (SIGINT, as a terminal sends it); waits for
/// it to end.
pub fn interrupt(child: &mut std::process::Child) -> std::process::ExitStatus {
    let sigint = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sigint.success());
    child.wait().expect("wait")
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

/// The receipt of a run without a golden one: the native replay's, turn
/// by turn (each state's SHA-256 and tokens so far), then its text.
pub fn native_receipt(spec: &RunSpec) -> Receipt {
    use curta_replay::{models, native};
    let art = models::artifact(&spec.model);
    let m = models::metadata(&art);
    let mut state = native::open(&m, spec);
    let mut turns = vec![];
    for turn in 0u64.. {
        let info = curta_core::StateInfo::read(&state).expect("a checked state");
        turns.push(curta_replay::receipt::TurnRecord {
            turn,
            state_sha256: curta_replay::sha256_hex(&state),
            generated: info.generated,
            planner_cu: 0,
            program_cu: 0,
        });
        if info.complete {
            break;
        }
        native::step(&art, &m, &mut state);
    }
    Receipt {
        name: spec.name.clone(),
        model: spec.model.clone(),
        artifact_sha256: curta_replay::sha256_hex(&art),
        turns,
        tokens: curta_core::output_tokens(m.config, &state)
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        text: curta_core::output_text(m.config, &state).to_vec(),
    }
}

/// A run's turns as its history shows them.
#[derive(Clone, Debug, Default)]
pub struct TurnHistory {
    /// Turns that landed: each expected turn count once, in order.
    pub done: u64,
    /// Turns that failed with `StaleTurn`, each sent early (never for a
    /// turn already done).
    pub stale: u64,
    /// The fees of the transactions carrying a turn.
    pub turn_fees: u64,
    /// The fees of every transaction naming the run (open, turns, close).
    pub all_fees: u64,
    pub transactions: u64,
    /// Slot and compute units of each landed turn.
    pub landed: Vec<(u64, u64)>,
}

/// Reads a run's history and checks that every turn landed exactly once,
/// in order, and that a failed turn only ever ran early.
pub fn turn_history(rpc: &RpcClient, run: &Pubkey, program: &Pubkey) -> TurnHistory {
    use curta_core::protocol::CurtaError;
    use solana_instruction::error::InstructionError;
    let mut h = TurnHistory::default();
    for l in history(rpc, run) {
        h.all_fees += l.fee;
        h.transactions += 1;
        for (ix, _) in curta_ixs(&l.tx, program) {
            let CurtaIx::Turn { expected_turns } = ix else {
                continue;
            };
            let expected = expected_turns.expect("the client sends expected turn counts");
            h.turn_fees += l.fee;
            match &l.err {
                None => {
                    assert_eq!(
                        expected,
                        h.done,
                        "{run}: turn {} out of order",
                        expected + 1
                    );
                    h.done += 1;
                    h.landed.push((l.slot, l.cu));
                }
                Some(TransactionError::InstructionError(_, InstructionError::Custom(code))) => {
                    assert_eq!(
                        *code,
                        CurtaError::StaleTurn as u32,
                        "{run}: {}",
                        l.signature
                    );
                    assert!(
                        expected > h.done,
                        "{run}: turn {} was paid for again after it was done ({})",
                        expected + 1,
                        l.signature
                    );
                    h.stale += 1;
                }
                Some(e) => panic!("{run}: turn {} failed: {e:?}", expected + 1),
            }
        }
    }
    h
}

/// Checks a sealed model's upload in the history: each chunk of each
/// section written exactly once, no transaction failed, and no signature
/// beyond an uninterrupted upload's. Returns the writes, the transactions
/// and their fees.
pub fn check_upload_once(
    rpc: &RpcClient,
    model: &Pubkey,
    program: &Pubkey,
    m: &Value,
) -> (u64, u64, u64) {
    use std::collections::BTreeMap;
    let sections: Vec<(Pubkey, usize)> = m["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .map(|s| {
            let weight = s["weight"]
                .as_str()
                .expect("weight")
                .parse()
                .expect("address");
            (weight, s["length"].as_u64().expect("length") as usize)
        })
        .collect();
    let mut offsets: Vec<BTreeMap<u64, usize>> = vec![BTreeMap::new(); sections.len()];
    let (mut fees, mut signatures, mut transactions) = (0, 0, 0);
    for l in history(rpc, model) {
        assert_eq!(l.err, None, "a failed transaction {}", l.signature);
        for (ix, accounts) in curta_ixs(&l.tx, program) {
            if let CurtaIx::Write { offset, .. } = ix {
                let i = sections
                    .iter()
                    .position(|(w, _)| *w == accounts[1])
                    .expect("a write to one of the model's sections");
                *offsets[i].entry(offset).or_default() += 1;
            }
        }
        fees += l.fee;
        signatures += l.tx.signatures.len() as u64;
        transactions += 1;
    }
    let chunk = 986;
    let mut writes = 0;
    for (i, ((_, len), offsets)) in sections.iter().zip(&offsets).enumerate() {
        let want: Vec<u64> = (0..len.div_ceil(chunk))
            .map(|k| (k * chunk) as u64)
            .collect();
        assert_eq!(
            offsets.keys().copied().collect::<Vec<_>>(),
            want,
            "section {i}: chunks"
        );
        assert!(
            offsets.values().all(|&n| n == 1),
            "section {i}: a chunk written twice: {offsets:?}"
        );
        writes += want.len() as u64;
    }
    assert_eq!(fees, 5_000 * signatures, "every fee is a signature's");
    // The model's creation and three bindings (two signatures each), the
    // writes, three seals and the model's seal.
    assert_eq!(
        signatures,
        2 * 4 + writes + 3 + 1,
        "transactions beyond an uninterrupted upload's"
    );
    (writes, transactions, fees)
}
