//! Loads the SBF build of curta-program (`make build-sbf` writes
//! target/deploy/curta_program.so) into solana-program-test and checks that
//! it runs: a ping succeeds, an unknown instruction fails, and the spin loop
//! shows what one int8 multiply-add costs in compute units.
//!
//! Run with `make test-sbf-smoke`, or `cargo test -p curta-harness` after
//! `make build-sbf`.

use std::sync::Once;

use curta_program::processor::{PING, SPIN};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_program_test::{ProgramTest, ProgramTestContext};
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::{Instruction, InstructionError, Transaction, TransactionError};

const PROGRAM_ID: Pubkey = Pubkey::new_from_array([0xC7; 32]);
const CU_LIMIT: u32 = 1_400_000;

/// Points solana-program-test at the `.so` unless the caller already did.
/// Once, before any test starts a bank: `set_var` races with readers.
fn sbf_out_dir() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dir = std::env::var_os("SBF_OUT_DIR")
            .map(Into::into)
            .unwrap_or_else(curta_harness::deploy_dir);
        let so = dir.join("curta_program.so");
        assert!(
            so.exists(),
            "{} is missing: run `make build-sbf`",
            so.display()
        );
        std::env::set_var("SBF_OUT_DIR", &dir);
    });
}

struct Outcome {
    result: Result<(), TransactionError>,
    /// The whole transaction's units (the ComputeBudget instruction included).
    tx_units: u64,
    /// The program's units, from its "consumed N of M" log line.
    program_units: Option<u64>,
    logs: Vec<String>,
}

/// A fresh bank per transaction, so no test sees another's state.
async fn start() -> ProgramTestContext {
    sbf_out_dir();
    let mut pt = ProgramTest::default();
    // The .so, never a native build of the crate.
    pt.prefer_bpf(true);
    pt.add_program("curta_program", PROGRAM_ID, None);
    pt.start_with_context().await
}

async fn run(data: Vec<u8>) -> Outcome {
    let ctx = start().await;
    let ixs = [
        ComputeBudgetInstruction::set_compute_unit_limit(CU_LIMIT),
        Instruction::new_with_bytes(PROGRAM_ID, &data, vec![]),
    ];
    let tx = Transaction::new_signed_with_payer(
        &ixs,
        Some(&ctx.payer.pubkey()),
        &[&ctx.payer],
        ctx.last_blockhash,
    );
    let out = ctx
        .banks_client
        .process_transaction_with_metadata(tx)
        .await
        .expect("banks client");
    let meta = out.metadata.expect("metadata");
    let prefix = format!("Program {PROGRAM_ID} consumed ");
    let program_units = meta
        .log_messages
        .iter()
        .find_map(|l| l.strip_prefix(&prefix)?.split(' ').next()?.parse().ok());
    Outcome {
        result: out.result,
        tx_units: meta.compute_units_consumed,
        program_units,
        logs: meta.log_messages,
    }
}

fn spin_data(count: u32) -> Vec<u8> {
    let mut d = vec![SPIN];
    d.extend_from_slice(&count.to_le_bytes());
    d.extend((0..27u8).map(|i| i.wrapping_mul(37))); // 32 bytes in all
    d
}

#[tokio::test]
async fn ping_succeeds() {
    let o = run(vec![PING]).await;
    println!(
        "ping: program {:?} CU, transaction {} CU",
        o.program_units, o.tx_units
    );
    assert_eq!(o.result, Ok(()), "logs: {:#?}", o.logs);
    assert!(
        o.logs.iter().any(|l| l == "Program log: curta: ping"),
        "logs: {:#?}",
        o.logs
    );
    assert!(o.program_units.is_some(), "logs: {:#?}", o.logs);
}

#[tokio::test]
async fn unknown_instruction_fails() {
    for data in [vec![0xEE], vec![], vec![PING, 0]] {
        let o = run(data.clone()).await;
        assert_eq!(
            o.result,
            Err(TransactionError::InstructionError(
                1,
                InstructionError::InvalidInstructionData
            )),
            "data {data:?}, logs: {:#?}",
            o.logs
        );
    }
}

#[tokio::test]
async fn spin_scales_linearly() {
    let counts = [0u32, 1_000, 10_000];
    let mut units = Vec::new();
    for &n in &counts {
        let o = run(spin_data(n)).await;
        assert_eq!(o.result, Ok(()), "logs: {:#?}", o.logs);
        let u = o.program_units.expect("consumed line");
        println!("spin {n}: program {u} CU, transaction {} CU", o.tx_units);
        units.push(u);
    }
    let per_iter =
        |a: usize, b: usize| (units[b] - units[a]) as f64 / f64::from(counts[b] - counts[a]);
    println!(
        "spin: {:.3} CU per iteration (0..1k), {:.3} (1k..10k)",
        per_iter(0, 1),
        per_iter(1, 2)
    );
    assert!(units[0] < units[1] && units[1] < units[2]);
}
