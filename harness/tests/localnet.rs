//! `curta-localnet` started through `curta_harness::localnet` on free ports:
//! RPC, faucet, fees and transaction history on a real validator; a program
//! preloaded with `--bpf-program`; the legacy block limits.

use std::time::{Duration, Instant};

use curta_harness::localnet::{BlockLimits, Localnet};
use solana_commitment_config::CommitmentConfig;
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::RpcClient;
use solana_rpc_client_api::config::RpcSendTransactionConfig;
use solana_rpc_client_api::request::RpcRequest;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};

const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

fn start(builder: curta_harness::localnet::LocalnetBuilder) -> Localnet {
    let net = builder
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

fn rpc(net: &Localnet) -> RpcClient {
    RpcClient::new_with_commitment(net.rpc_url().to_string(), CommitmentConfig::confirmed())
}

/// Polls until the signature has a confirmed status and returns it.
fn status(rpc: &RpcClient, sig: &Signature) -> Result<(), TransactionError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(result) = rpc.get_signature_status(sig).expect("getSignatureStatuses") {
            return result;
        }
        assert!(Instant::now() < deadline, "{sig} not confirmed in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn rpc_faucet_fees_and_history() {
    let net = start(Localnet::builder());
    let rpc = rpc(&net);

    let version = rpc.get_version().expect("getVersion");
    assert_eq!(version.solana_core, "4.0.0");
    assert_eq!(
        net.block_limits(),
        Some(BlockLimits {
            block: 100_000_000,
            writable_account: 40_000_000,
            vote: 36_000_000
        })
    );

    let payer = net.payer();
    assert!(rpc.get_balance(&payer.pubkey()).expect("getBalance") >= 1_000_000 * LAMPORTS_PER_SOL);

    busy_ports_are_one_line(&net);

    // The faucet, through the RPC's requestAirdrop.
    let airdropped = Keypair::new();
    let sig = rpc
        .request_airdrop(&airdropped.pubkey(), 2 * LAMPORTS_PER_SOL)
        .expect("requestAirdrop");
    status(&rpc, &sig).expect("airdrop");
    assert_eq!(
        rpc.get_balance(&airdropped.pubkey()).expect("getBalance"),
        2 * LAMPORTS_PER_SOL
    );

    // A transfer paid by the funded payer, with a real fee.
    let to = Pubkey::new_unique();
    let before = rpc.get_balance(&payer.pubkey()).expect("getBalance");
    let tx = Transaction::new_signed_with_payer(
        &[solana_system_interface::instruction::transfer(
            &payer.pubkey(),
            &to,
            LAMPORTS_PER_SOL,
        )],
        Some(&payer.pubkey()),
        &[&payer],
        rpc.get_latest_blockhash().expect("getLatestBlockhash"),
    );
    let sig = rpc.send_and_confirm_transaction(&tx).expect("transfer");
    assert_eq!(rpc.get_balance(&to).expect("getBalance"), LAMPORTS_PER_SOL);
    assert_eq!(
        before - rpc.get_balance(&payer.pubkey()).expect("getBalance"),
        LAMPORTS_PER_SOL + 5_000
    );

    // getTransaction finds it: the validator keeps transaction history.
    let params = serde_json::json!([
        sig.to_string(),
        {"encoding": "json", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let found: serde_json::Value = loop {
        let found: serde_json::Value = rpc
            .send(RpcRequest::GetTransaction, params.clone())
            .expect("getTransaction");
        if !found.is_null() {
            break found;
        }
        assert!(Instant::now() < deadline, "getTransaction found no {sig}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(found["meta"]["err"], serde_json::Value::Null);
    assert_eq!(found["meta"]["fee"], 5_000);
    assert_eq!(found["transaction"]["signatures"][0], sig.to_string());
}

#[test]
fn preloaded_program_refuses_unknown_instruction_under_legacy_limits() {
    let so = curta_replay::deploy_dir().join("curta_program.so");
    assert!(
        so.is_file(),
        "{} is missing: run `make build-sbf`",
        so.display()
    );
    let program_id = Pubkey::new_unique();
    let net = start(
        Localnet::builder()
            .bpf_program(program_id.to_string(), &so)
            .legacy_block_limits(true),
    );
    let rpc = rpc(&net);

    assert_eq!(
        net.block_limits(),
        Some(BlockLimits {
            block: 60_000_000,
            writable_account: 12_000_000,
            vote: 36_000_000
        })
    );
    let gates = [
        agave_feature_set::raise_block_limits_to_100m::id(),
        agave_feature_set::raise_account_cu_limit::id(),
    ];
    let accounts = rpc
        .get_multiple_accounts(&gates)
        .expect("getMultipleAccounts");
    assert!(
        accounts.iter().all(Option::is_none),
        "the block-limit features must not exist"
    );

    let program = rpc.get_account(&program_id).expect("program account");
    assert!(program.executable);

    // Sent without preflight, so it runs in a block and pays its fee.
    let payer = net.payer();
    let tx = Transaction::new_signed_with_payer(
        &[Instruction::new_with_bytes(program_id, &[255], vec![])],
        Some(&payer.pubkey()),
        &[&payer],
        rpc.get_latest_blockhash().expect("getLatestBlockhash"),
    );
    let sig = rpc
        .send_transaction_with_config(
            &tx,
            RpcSendTransactionConfig {
                skip_preflight: true,
                ..RpcSendTransactionConfig::default()
            },
        )
        .expect("sendTransaction");
    assert_eq!(
        status(&rpc, &sig),
        Err(TransactionError::InstructionError(
            0,
            InstructionError::Custom(1)
        )),
        "an unknown instruction is InvalidInstruction (custom error 1)"
    );
}

#[test]
fn failed_starts_say_why() {
    let missing = Localnet::builder()
        .binary("/nonexistent/curta-localnet")
        .start()
        .err()
        .expect("no binary, no validator");
    assert!(
        missing.contains(curta_harness::localnet::BUILD_COMMAND),
        "{missing}"
    );

    let refused = Localnet::builder()
        .binary(env!("CARGO_BIN_EXE_curta-localnet"))
        .bpf_program("nonsense", "/nonexistent/program.so")
        .start()
        .err()
        .expect("a bad flag, no validator");
    assert!(refused.contains("exited during start-up"), "{refused}");
    assert!(
        refused.contains("\"nonsense\" is neither an address nor a keypair file"),
        "{refused}"
    );
}

/// A second validator started on a port `net` holds stops before anything
/// is created, in one line naming the flag that moves it (the library
/// would panic with a backtrace and leave a lock and a log).
fn busy_ports_are_one_line(net: &Localnet) {
    let port = |addr: &str| -> String {
        addr.rsplit(':')
            .next()
            .expect("a port")
            .trim_matches('/')
            .to_string()
    };
    let rpc_port = port(net.rpc_url());
    let faucet_port = net.faucet_addr().port().to_string();
    let gossip = net
        .status()
        .iter()
        .find_map(|l| l.strip_prefix("Gossip Address: "))
        .expect("the status's gossip address");
    let gossip_port = port(gossip);
    let dir = std::env::temp_dir().join(format!("curta-busy-ports-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder");
    let ledger = dir.join("ledger");
    let cases = [
        (
            [
                "--rpc-port",
                &rpc_port,
                "--faucet-port",
                "0",
                "--gossip-port",
                "0",
            ],
            "JSON-RPC",
            "--rpc-port",
        ),
        (
            [
                "--rpc-port",
                "0",
                "--faucet-port",
                &faucet_port,
                "--gossip-port",
                "0",
            ],
            "the faucet",
            "--faucet-port",
        ),
        (
            [
                "--rpc-port",
                "0",
                "--faucet-port",
                "0",
                "--gossip-port",
                &gossip_port,
            ],
            "gossip",
            "--gossip-port",
        ),
    ];
    for (flags, what, flag) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_curta-localnet"))
            .arg("--ledger")
            .arg(&ledger)
            .args(flags)
            .output()
            .expect("curta-localnet runs");
        let said = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert_eq!(lines.len(), 1, "one line: {said}");
        assert!(
            lines[0].starts_with("curta-localnet: error: port ")
                && lines[0].contains(&format!("({what}) is in use"))
                && lines[0].contains(&format!("Choose another with {flag} PORT")),
            "{said}"
        );
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("the folder")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.is_empty(),
            "{flag}: nothing is left behind, found {left:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
